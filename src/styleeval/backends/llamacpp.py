"""The llama.cpp backend: log-probabilities and replies from a quantized GGUF file as shipped (Q4_1, Q4_K_M...), through
llama-cpp-python in this process, in a few hundred MB of memory for the 135M model and ~5 GB for an 8B one.

``--backend llamacpp --model file.gguf`` (or the preset ``smollm2-135m``). llama-cpp-python is an optional extra that
compiles llama.cpp when installed (``pip install "styleeval[llamacpp]"``; :data:`CMAKE_ARGS` for a portable build
without AMX: a native build dies with SIGILL on CPUs that report AMX, see docs/real-weights.md); it is imported when a
model is opened, never when the backend is registered.

The tokenizer that renders prompts is the GGUF's own, read by transformers (``gguf_file=``) and kept in styleeval's
cache (``gguf/tokenizer/<16 hex of the file's SHA-256>/``); at every open a probe text with the chat template's control
tokens is tokenized by both it and llama.cpp, and a difference is an error (another reading of the ids would score
other tokens, with no error).

**Exact reuse.** llama.cpp's numbers depend on how tokens are cut into calls: a call of one token takes another
kernel path than a call of several (measured on SmolLM2-135M Q4_1: up to 0.5 nat apart), so a score could depend on
its batch-mates. Here every (prompt, continuation) pair is computed in one fixed layout that depends on the pair
alone (:func:`split_point`): the prompt's first ``m`` tokens in calls of :data:`BLOCK` tokens aligned at position 0
(no logits), then the rest of the prompt and the whole continuation in one call (logits only where a continuation
token is scored), and no call ever holds a single token. A block is evaluated once and its KV cache kept while the
next pairs share it: a block is the same computation (same tokens, same positions, same cache before it) whichever
prompt it belongs to, so the three LogProb instructions share their system turn, a source's rewrites share their
whole prompt, and a score never depends on batch-mates, call order or chunking (``tests/backends/test_llamacpp.py``
checks it bit for bit). Which pairs are computed (each distinct one once), in what order (by prompt: a prompt's blocks
are prefilled once for all its continuations, shared blocks side by side) and which blocks of the cache are kept is
:mod:`~styleeval.backends.planner`'s, the local engine's plan; its token trees and shared passes are not used here:
a prompt's continuations in one call (one sequence each) give other bits than each pair's own layout (measured on
SmolLM2-135M Q4_1, 72 pairs: 33 differ, by up to 0.52 nat per token), so a score would depend on its batch-mates.

llama.cpp's context is not thread-safe: every call holds the backend's lock (a CPU call already uses every thread).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from styleeval.atomic import atomic_dir
from styleeval.backends import planner
from styleeval.backends.base import (
    CANDIDATE_LOGPROBS,
    PREFIX_REUSE,
    Backend,
    BackendError,
    Decoding,
    Identity,
)
from styleeval.errors import UserError
from styleeval.extras import MissingExtraError
from styleeval.gguf_files import PRESETS as GGUF_PRESETS
from styleeval.gguf_files import REAL_WEIGHTS, GGUFInfo, is_gguf_name
from styleeval.gguf_files import label as gguf_label
from styleeval.gguf_files import resolve as resolve_gguf
from styleeval.gguf_header import check_header
from styleeval.hub import ModelLoadError
from styleeval.optiontypes import Option
from styleeval.paths import cache_path
from styleeval.progress import bar, loading
from styleeval.templates import check_template, render_chat

if TYPE_CHECKING:  # imported where a tensor is made: the CLI builds its parser without torch
    import torch

CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF "
              "-DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF")
"""A portable x86-64 build of llama.cpp (AVX2, no AVX-512, no AMX): what CI installs; add ``-DGGML_AVX512=ON`` (and
``_VNNI``, ``_BF16``) where every machine has AVX-512."""
INSTALL = f'CMAKE_ARGS="{CMAKE_ARGS}" pip install "styleeval[llamacpp]"'

BLOCK = 16
"""Prompt tokens per llama.cpp call before the last call of a pair: the unit of KV-cache reuse (measured on the test
set's first 60 rows with SmolLM2: 16 evaluates 5.4k tokens where each sequence alone evaluates 15k; 4 and 8 evaluate
4.7k and 5.1k in more calls, in the same time; 32 and 64 lose the shared system turn's last block: 7.2k, 11k)."""
N_BATCH = 512
"""The most tokens of one llama.cpp call (a longer prompt tail and continuation is cut into calls of this size, the
last one never of a single token)."""
DEFAULT_N_CTX = 4096
"""The context opened when ``n_ctx`` is not given, unless the model's own is shorter: the KV cache is allocated for it
at open (SmolLM2-135M: 23 kB a token; an 8B Llama: 128 kB a token)."""
PROBE_TEXT = "Rewrite it politely: «give me the report now», 3 times!\n\tThanks  — naïve café, 2026."
"""Tokenized by llama.cpp and by the tokenizer that renders prompts, inside a chat turn: both must give the same ids."""


def build_tag(llama_cpp: Any) -> str:
    """llama.cpp's build as a signature records it: llama-cpp-python's version, the widest instruction set its kernels
    were compiled for, and 8 hex of the SHA-256 of its whole system-info line (every compiled-in feature: two builds
    that could compute other numbers never share a tag).

    >>> class Lib:
    ...     __version__ = "0.3.36"
    ...     llama_print_system_info = staticmethod(lambda: b"CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_BF16 = 1 | ")
    >>> build_tag(Lib)
    '0.3.36-avx512_bf16-b4b2663a'
    """
    line = llama_cpp.llama_print_system_info()
    line = line.decode("utf-8", "replace") if isinstance(line, bytes) else str(line)
    enabled = {part.split("=")[0].strip().upper() for part in line.replace("CPU :", "").split("|")
               if part.strip().endswith("= 1")}
    order = ("AMX_INT8", "AVX512_BF16", "AVX512_VNNI", "AVX512", "AVX2", "AVX", "SSE3")
    widest = next((name for name in order if name in enabled), "generic").lower()
    return f"{llama_cpp.__version__}-{widest}-{hashlib.sha256(line.encode()).hexdigest()[:8]}"


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module; a missing install is one line saying how to install it
    (:class:`~styleeval.extras.MissingExtraError`), an install whose library cannot be loaded one line too."""
    try:
        import llama_cpp  # noqa: PLC0415 - optional extra [llamacpp]
    except ImportError:
        raise MissingExtraError(f"the llamacpp backend needs the llama-cpp-python package, which is not installed: "
                                f"{INSTALL} (it compiles llama.cpp: several minutes)") from None
    except (OSError, RuntimeError) as err:  # the shared library did not load (another CPU, a broken build)
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise MissingExtraError(f"the llamacpp backend: llama-cpp-python is installed but its library cannot be "
                                f"loaded ({text}); reinstall it: {INSTALL}") from None
    return llama_cpp


def default_threads() -> int:
    """The CPUs this process may run on (its affinity), else the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def split_point(n_prompt: int, n_extra: int) -> int:
    """Where a pair's prompt is cut: its first ``m`` tokens go in :data:`BLOCK`-token calls (their KV cache may be
    reused), ``prompt[m:]`` and the ``n_extra`` continuation tokens in the last call, which holds at least two tokens
    where the pair has two; no block of the prompt holds a single token either (one-token calls take another kernel
    path in llama.cpp). Depends on the pair's lengths alone.

    >>> [split_point(n, 3) for n in (1, 2, 17, 18, 19, 40)], split_point(40, 0), split_point(19, 0)
    ([0, 0, 16, 16, 18, 39], 38, 16)
    """
    m = max(0, n_prompt - (1 if n_extra > 0 else 2))
    return m - 1 if m % BLOCK == 1 else m


def _calls(n: int) -> list[int]:
    """Sizes of the calls that evaluate ``n`` tokens of a pair's last part: at most :data:`N_BATCH` each, the last
    never a single token (where ``n`` > 1)."""
    sizes = [N_BATCH] * (n // N_BATCH) + ([n % N_BATCH] if n % N_BATCH else [])
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes[-2:] = [N_BATCH - 1, 2]
    return sizes


def _gguf_tokenizer(info: GGUFInfo, cached: bool = True) -> tuple[Any, bool]:
    """The GGUF file's tokenizer as transformers reads it (what :func:`styleeval.models.gguf_folder` saves beside the
    converted weights), kept in styleeval's cache (``gguf/tokenizer/<16 hex of the file's SHA-256>/``): about 10 s
    the first time, a fraction of a second after. Returns it and whether it came from the cache (``cached=False``:
    read from the file again, and kept)."""
    from transformers import AutoTokenizer  # noqa: PLC0415 - heavy (transformers)

    folder = cache_path("gguf", "tokenizer", info.sha256[:16])
    if cached and (folder / "tokenizer.json").is_file():
        try:
            return AutoTokenizer.from_pretrained(str(folder)), True
        except (OSError, ValueError):  # damaged: read from the file again
            pass
    directory, filename = os.path.split(info.path)
    try:
        with loading(f"the tokenizer of {filename}"):
            tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=filename)
    except (ValueError, OSError, KeyError, NotImplementedError, TypeError) as err:
        text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"cannot load model {info.path!r}: transformers cannot read the tokenizer of this GGUF "
                             f"file ({text})") from None
    # What is used is always the tokenizer saved and read back, never the one read from the file: they differ (a
    # Qwen2 tokenizer read from a GGUF has no normalizer; saved and read back, transformers' class gives it NFC, as
    # the Hub's tokenizer has), and the first open of a file must tokenize and sign as every later one (and as the
    # local backend's converted folder, also saved and read back).
    try:  # kept for the next process (a damaged one replaced)
        with atomic_dir(folder) as tmp:
            tokenizer.save_pretrained(tmp)
        return AutoTokenizer.from_pretrained(str(folder)), False
    except OSError:  # a cache that cannot be written: read back from a temporary folder (and the 10 s paid again)
        with tempfile.TemporaryDirectory(prefix="styleeval-tokenizer-") as tmp:
            tokenizer.save_pretrained(tmp)
            return AutoTokenizer.from_pretrained(tmp), False


def _gguf_info(model: Any) -> GGUFInfo:
    """The GGUF file named by ``model`` (a path or a GGUF preset, fetched on first use); anything else is one line."""
    name = REAL_WEIGHTS if model is None else model
    if not isinstance(name, (str, os.PathLike)):
        raise UserError(f"model: the llamacpp backend reads GGUF files; got a {type(name).__name__} (give a .gguf "
                        f"path or the preset {REAL_WEIGHTS})")
    text = os.fspath(name)
    path = os.path.expanduser(text)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF":
                raise ModelLoadError(f"cannot load model {text!r}: not a GGUF file (it does not start with 'GGUF'): "
                                     f"the llamacpp backend reads .gguf files (other weights: --backend local)")
        return resolve_gguf(path)
    if not is_gguf_name(text):
        raise UserError(f"model: the llamacpp backend reads GGUF files, and {text!r} is neither a file nor a GGUF "
                        f"preset: give a .gguf path or the preset {REAL_WEIGHTS} (Hub ids and model folders: "
                        "--backend local)")
    return resolve_gguf(text)


def _close(llm: Any, batch: Any, llama_cpp: Any) -> None:
    """Free the batch and the model (at the latest at exit, before the interpreter tears modules down: llama-cpp-
    python's own finalizer then fails with a traceback on stderr)."""
    llama_cpp.llama_batch_free(batch)
    llm.close()


class LlamaCppBackend(Backend):
    """A GGUF file run by llama.cpp (llama-cpp-python) in this process, its weights as quantized in the file.

    Args:
        model: a ``.gguf`` path or a GGUF preset (default: ``smollm2-135m``).
        n_threads: CPU threads (default: the CPUs this process may use).
        n_ctx: the context (tokens of prompt and continuation or reply) the KV cache is allocated for (default: the
            model's, at most :data:`DEFAULT_N_CTX`).
        progress: a progress bar over the pairs of a call.

    The identity is the file's: ``gguf:<name>:<quantization>@sha256-<16 hex>``, dtype the quantization, kind
    ``llamacpp`` (another signature than the local engine's float32 conversion of the same file: the numbers differ by
    quantization), and the build of llama.cpp (:func:`build_tag`: a portable AVX2 build and an AVX-512 one differ by up
    to 0.024 nat per token on one probe sentence, measured). Neither ``n_threads`` nor ``n_ctx`` changes a number (measured: 1, 2 and 3 threads, contexts of 512
    to 8192 give the same bits), so neither is signed.
    """

    name = "llamacpp"
    options = (
        Option("n_threads", int, "CPU threads of llama.cpp (default: the CPUs this process may use)"),
        Option("n_ctx", int, f"context tokens llama.cpp allocates its KV cache for (default: the model's, at most "
               f"{DEFAULT_N_CTX})"),
    )
    kind = "llamacpp"
    app_model = REAL_WEIGHTS
    capabilities = frozenset({CANDIDATE_LOGPROBS, PREFIX_REUSE})

    def __init__(self, model: Any = None, n_threads: int | None = None, n_ctx: int | None = None,
                 progress: bool = True) -> None:
        llama_cpp = import_llama_cpp()  # before the file: a missing extra is said before any download
        if n_threads is not None and n_threads < 1:
            raise UserError(f"n_threads must be positive, got {n_threads}")
        if n_ctx is not None and n_ctx < 2:
            raise UserError(f"n_ctx must be at least 2, got {n_ctx}")
        info = _gguf_info(model)
        for key, template in check_header(info.path).chat_templates.items():  # llama-cpp-python compiles each
            check_template(template, f"of {info.path!r} ({key})")
        self.info = info
        self.n_threads = int(n_threads or default_threads())
        self.progress = progress
        try:
            self._llm = self._open(llama_cpp, info.path, int(n_ctx or DEFAULT_N_CTX))
            trained = int(llama_cpp.llama_model_n_ctx_train(self._llm.model))
            if n_ctx is None and 0 < trained < DEFAULT_N_CTX:  # a model with a shorter context: its own
                self._llm.close()
                self._llm = self._open(llama_cpp, info.path, trained)
        except ValueError as err:  # llama.cpp could not read the file (another architecture, cut short)
            text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ModelLoadError(f"cannot load model {info.path!r}: llama.cpp cannot load it ({text})") from None
        self._lib = llama_cpp
        self._ctx = self._llm.ctx
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        self._n_vocab = int(self._llm.n_vocab())
        self._n_ctx = int(self._llm.n_ctx())
        self._batch = llama_cpp.llama_batch_init(N_BATCH, 0, 1)
        self._closer = weakref.finalize(self, _close, self._llm, self._batch, llama_cpp)
        self._lock = threading.Lock()
        self._cached: list[int] = []  # the prompt tokens whose KV entries are in cells 0..len-1, in BLOCK calls
        self.tokenizer, from_cache = _gguf_tokenizer(info)
        self.tokenizer.name_or_path = info.path  # what its chat template's errors name (not the cache's folder)
        try:
            self.check_tokenizer()
        except ModelLoadError:
            if not from_cache:
                raise
            self.tokenizer, _ = _gguf_tokenizer(info, cached=False)
            self.tokenizer.name_or_path = info.path
            self.check_tokenizer()

    def _open(self, llama_cpp: Any, path: str, n_ctx: int) -> Any:
        """llama.cpp on ``path``: logits only where a call asks for them, no flash attention, float16 KV cache."""
        return llama_cpp.Llama(path, n_ctx=n_ctx, n_batch=N_BATCH, n_ubatch=N_BATCH, n_threads=self.n_threads,
                               n_threads_batch=self.n_threads, logits_all=False, flash_attn=False, verbose=False)

    # -- what it is ---------------------------------------------------------------------------------------------
    @classmethod
    def model_label(cls, model: Any) -> str:
        """A GGUF preset's label (the default: ``smollm2-135m``'s), a file's name."""
        name = REAL_WEIGHTS if model is None else model
        return gguf_label(name) or str(name)

    @classmethod
    def missing_weights(cls, model: Any) -> str | None:
        """``"<path>: no such GGUF file"``; ``None`` for a file that is there or a GGUF preset (fetched on first
        use). No network request."""
        name = REAL_WEIGHTS if model is None else model
        if str(name).lower() in GGUF_PRESETS or os.path.isfile(os.path.expanduser(str(name))):
            return None
        return f"{name}: no such GGUF file"

    @classmethod
    def weights_error(cls, model: Any, tokenizer: Any = None) -> UserError | None:
        """The missing extra, or the GGUF file that cannot be had (a preset is fetched now), as the error opening
        would end in; ``None`` otherwise."""
        try:
            import_llama_cpp()
            _gguf_info(model)
        except UserError as err:
            return err
        return None

    @property
    def identity(self) -> Identity:
        return Identity(self.info.model_name, self.info.revision, self.info.quantization, self.kind, "float32",
                        build_tag(self._lib))

    @property
    def max_length(self) -> int | None:
        """The context llama.cpp was opened with (``n_ctx``)."""
        return self._n_ctx

    def close(self) -> None:
        """Free llama.cpp's model and context now (otherwise when the backend is collected, or at exit)."""
        self._closer()

    def check_tokenizer(self) -> None:
        """:data:`PROBE_TEXT` in a chat turn (with the template's control tokens), tokenized by llama.cpp and by
        :attr:`tokenizer`: another id anywhere is a :class:`~styleeval.hub.ModelLoadError` naming the first one."""
        text = PROBE_TEXT
        template = getattr(self.tokenizer, "chat_template", None)
        if isinstance(template, dict):  # tokenizers with several named templates
            template = template.get("default")
        if isinstance(template, str) and template:  # rendered within bounds: the file's template is untrusted
            text = render_chat(self.tokenizer, template, [{"role": "system", "content": "Be brief."},
                                                          {"role": "user", "content": PROBE_TEXT}],
                               add_generation_prompt=True, source=f"of {self.info.path!r}")
        mine = list(self.tokenizer.encode(text, add_special_tokens=False))
        theirs = list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        if mine != theirs:
            # the first token where they differ; strict=False: one list may be a prefix of the other (then k = its end)
            k = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b),
                     min(len(mine), len(theirs)))
            raise ModelLoadError(
                f"cannot load model {self.info.path!r} with the llamacpp backend: transformers reads its tokenizer "
                f"otherwise than llama.cpp (token {k} of a probe text: {mine[k : k + 1]} vs {theirs[k : k + 1]})")

    # -- llama.cpp calls (under the lock) -----------------------------------------------------------------------
    def _decode(self, tokens: Sequence[int], start: int, outputs: Sequence[int] = ()) -> np.ndarray | None:
        """Evaluate ``tokens`` at positions ``start...`` in one call; the logits (float32, one row per index of
        ``outputs``, in order) of the tokens at those indices."""
        batch, wanted = self._batch, set(outputs)
        batch.n_tokens = len(tokens)
        for i, token in enumerate(tokens):
            batch.token[i] = int(token)
            batch.pos[i] = start + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = i in wanted
        code = self._lib.llama_decode(self._ctx, batch)
        if code != 0:
            self._forget(0)
            raise BackendError(f"llama.cpp failed to evaluate {len(tokens)} tokens at position {start} (llama_decode "
                               f"returned {code})")
        if not outputs:
            return None
        flat = np.ctypeslib.as_array(self._lib.llama_get_logits(self._ctx), shape=(len(outputs) * self._n_vocab,))
        return flat.reshape(len(outputs), self._n_vocab).copy()

    def _forget(self, keep: int) -> None:
        """Drop the KV entries from position ``keep`` on."""
        self._lib.llama_memory_seq_rm(self._memory, 0, keep, -1)
        del self._cached[keep:]

    def _prefill(self, body: list[int]) -> None:
        """Make the KV cache hold exactly ``body`` (a pair's first ``m`` prompt tokens) as its :data:`BLOCK` calls
        from position 0 compute it: whole blocks already there (same tokens before and in them) are kept, the rest
        is evaluated."""
        if self._cached == body:
            return
        keep = planner.reusable_prefix(self._cached, body, BLOCK)  # whole blocks of both
        self._forget(keep)
        for start in range(keep, len(body), BLOCK):
            self._decode(body[start : start + BLOCK], start)
            self._cached.extend(body[start : start + BLOCK])

    def _evaluate(self, prompt: list[int], extra: list[int], first: int, count: int) -> tuple[np.ndarray, int]:
        """Evaluate ``prompt + extra`` in the pair's layout (:func:`split_point`): the logits after ``count``
        consecutive tokens from index ``first`` (float32 rows), and the split ``m``. The KV cache then holds the whole
        sequence; the caller drops what follows the prompt's blocks (:meth:`_drop_tail`)."""
        m = split_point(len(prompt), len(extra))
        self._prefill(prompt[:m])
        tail = prompt[m:] + extra
        rows, start = [], 0
        for size in _calls(len(tail)):
            want = [i for i in range(size) if first <= m + start + i < first + count]
            logits = self._decode(tail[start : start + size], m + start, want)
            if logits is not None:
                rows.append(logits)
            start += size
        return (np.concatenate(rows) if len(rows) > 1 else rows[0]), m

    def _drop_tail(self) -> None:
        """Drop the KV entries after the prompt's blocks (a pair's last call, a reply)."""
        self._lib.llama_memory_seq_rm(self._memory, 0, len(self._cached), -1)

    def _pair_logits(self, prompt: list[int], extra: list[int], first: int, count: int) -> np.ndarray:
        """:meth:`_evaluate`'s logits; the KV cache is left holding the prompt's blocks."""
        try:
            return self._evaluate(prompt, extra, first, count)[0]
        finally:
            self._drop_tail()

    # -- the interface ------------------------------------------------------------------------------------------
    def _pairs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]], group: int
               ) -> list[tuple[list[int], list[int]]]:
        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        if group < 1:
            raise ValueError(f"group must be positive, got {group}")
        pairs = [([int(t) for t in p], [int(t) for t in c]) for p, c in zip(prompts, continuations, strict=True)]
        for i, (p, c) in enumerate(pairs):
            if not p:
                raise ValueError(f"prompt {i} is empty; every prompt needs at least one token")
            if len(p) + len(c) > self._n_ctx:
                raise BackendError(f"prompt + continuation is {len(p) + len(c)} tokens, more than the context of "
                                   f"{self._n_ctx} llama.cpp was opened with (n_ctx)", row=i // group)
            bad = next((t for t in (*p, *c) if not 0 <= t < self._n_vocab), None)
            if bad is not None:
                raise BackendError(f"token id {bad} is not in the model's vocabulary of {self._n_vocab}",
                                   row=i // group)
        return pairs

    def token_logprobs(self, prompts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]],
                       group: int = 1) -> list[torch.Tensor]:
        import torch  # noqa: PLC0415 - heavy (torch)

        pairs = self._pairs(prompts, continuations, group)
        out: list[torch.Tensor | None] = [None] * len(pairs)
        for i, (_, c) in enumerate(pairs):
            if not c:
                out[i] = torch.empty(0, dtype=torch.float32)
        # each distinct pair once, its value given to every row that asked for it
        todo = planner.rows_by_key([(tuple(p), tuple(c)) for p, c in pairs], [i for i, (_, c) in enumerate(pairs) if c])
        keys = list(todo)
        with self._lock, bar(total=len(todo), desc="llama.cpp", unit="seq", progress=self.progress) as progress:
            # shared prefixes side by side (a prompt's blocks prefilled once for its continuations); the order
            # changes no number
            for p, c in (keys[k] for k in planner.prefix_order(keys)):
                try:
                    logits = self._pair_logits(list(p), list(c), len(p) - 1, len(c))
                except BackendError as err:
                    raise err.at(todo[(p, c)][0] // group) from None
                values = torch.from_numpy(logits).double().log_softmax(-1)
                lp = values.gather(1, torch.tensor(c).view(-1, 1)).view(-1).float()
                for i in todo[(p, c)]:
                    out[i] = lp.clone()
                progress.update(1)
        return out  # type: ignore[return-value]

    def candidate_logprobs(self, prompts: Sequence[Sequence[int]], candidates: Sequence[int],
                           shared_prefixes: bool = False) -> torch.Tensor:
        """One call per distinct prompt: the layout of ``token_logprobs(prompt, [candidates[0]])``, whose logits
        after the prompt are those of any one-token continuation (what follows a token never changes its logits),
        so each value equals the base class's ``token_logprobs`` answer bit for bit."""
        import torch  # noqa: PLC0415 - heavy (torch)

        cands = [int(c) for c in candidates]
        if not cands:
            return torch.empty((len(prompts), 0), dtype=torch.float32)
        pairs = self._pairs(prompts, [cands[:1]] * len(prompts), 1)
        bad = next((c for c in cands if not 0 <= c < self._n_vocab), None)
        if bad is not None:
            raise BackendError(f"candidate token id {bad} is not in the model's vocabulary of {self._n_vocab}")
        out = torch.empty((len(pairs), len(cands)), dtype=torch.float32)
        rows = planner.rows_by_key([tuple(p) for p, _ in pairs])
        prompts_once = list(rows)
        index = torch.tensor(cands)
        with self._lock:
            for p in (prompts_once[k] for k in planner.prefix_order(prompts_once)):
                logits = self._pair_logits(list(p), cands[:1], len(p) - 1, 1)
                values = torch.from_numpy(logits[0]).double().log_softmax(-1)[index].float()
                out[rows[p]] = values
        return out

    def generate(self, prompts: Sequence[Sequence[int]], decoding: Decoding, seeds: Sequence[int],
                 stop_ids: Sequence[int] = ()) -> list[str]:
        """Greedy or nucleus sampling, token by token; a sampled row draws from its own generator seeded with
        ``seeds[i]`` and its prompt is computed in its own layout, so a reply never depends on the other rows."""
        seeds = [int(s) for s in seeds]
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        pairs = self._pairs(prompts, [[] for _ in prompts], 1)
        stops = {int(t) for t in stop_ids}
        if self.tokenizer.eos_token_id is not None:
            stops.add(int(self.tokenizer.eos_token_id))
        replies = [""] * len(pairs)
        order = planner.prefix_order([p for p, _ in pairs])
        with self._lock, bar(total=len(order), desc="generating", unit="row", progress=self.progress) as progress:
            for i in order:
                rng = np.random.default_rng(seeds[i]) if decoding.do_sample else None
                replies[i] = self._generate_one(pairs[i][0], decoding, rng, stops)
                progress.update(1)
        return replies

    def _generate_one(self, prompt: list[int], decoding: Decoding, rng: Any, stops: set[int]) -> str:
        room = min(int(decoding.max_new_tokens), self._n_ctx - len(prompt))
        new: list[int] = []
        if room <= 0:
            return ""
        try:
            logits = self._evaluate(prompt, [], len(prompt) - 1, 1)[0][0]
            while True:
                token = _pick(logits, decoding, rng)
                if token in stops or self._lib.llama_vocab_is_eog(self._vocab, token):
                    break
                new.append(token)
                if len(new) >= room:
                    break
                logits = self._decode([token], len(prompt) + len(new) - 1, [0])[0]  # type: ignore[index]
        finally:
            self._drop_tail()
        return self.tokenizer.decode(new, skip_special_tokens=True)

def _pick(logits: np.ndarray, decoding: Decoding, rng: Any) -> int:
    """The next token: the most likely (ties: the lowest id), or a draw from the nucleus (``top_p``) of the
    distribution at ``temperature``, in float64."""
    if not decoding.do_sample or (decoding.temperature is not None and decoding.temperature <= 0):
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / float(decoding.temperature or 1.0)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    top_p = float(decoding.top_p or 1.0)
    if top_p < 1.0:
        cumulative = np.cumsum(probs[order])
        order = order[: int(np.searchsorted(cumulative, top_p)) + 1]  # the fewest tokens reaching top_p
    kept = probs[order] / probs[order].sum()
    return int(order[int(rng.choice(len(order), p=kept))])

