"""A GGUF header checked in bounded memory before any library reads it (styleeval.gguf_header, issue 59 item 1): it
agrees with the gguf package's GGUFReader on valid files (the real SmolLM2 file, the tests' tiny GGUF, hand-laid files
of every value type, both byte orders), refuses every corrupted file GGUFReader refuses, and refuses hostile headers
(counts and sizes the file cannot hold, deep nesting) in well under a second and 500 MB, where GGUFReader grew to
gigabytes; a hostile file named to any command is one line."""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import gguf
import pytest
from _gguf import write_gguf

import styleeval.gguf_header as gguf_header
from styleeval.gguf_header import MAX_DEPTH, HeaderError, check_header

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALARS = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q", F64: "d"}


def string(text: str | bytes, order: str = "<") -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack(order + "Q", len(data)) + data


def value(kind: int, payload: object, order: str = "<") -> bytes:
    """A metadata value: a scalar, a string, or ``(item_kind, [items])`` for an array."""
    if kind == STR:
        return string(payload, order)  # type: ignore[arg-type]
    if kind == ARR:
        item, items = payload  # type: ignore[misc]
        return struct.pack(order + "IQ", item, len(items)) + b"".join(value(item, i, order) for i in items)
    return struct.pack(order + SCALARS[kind], payload)


def entry(key: str | bytes, kind: int, payload: object, order: str = "<") -> bytes:
    return string(key, order) + struct.pack(order + "I", kind) + value(kind, payload, order)


def tensor(name: str | bytes, shape: list[int], kind: int, offset: int, order: str = "<") -> bytes:
    return (string(name, order) + struct.pack(order + "I", len(shape)) + struct.pack(order + f"{len(shape)}Q", *shape)
            + struct.pack(order + "IQ", kind, offset))


def gguf_file(path: Path, entries: list[bytes], tensors: list[bytes] = (), data: bytes = b"", version: int = 3,
              order: str = "<", alignment: int = 32, kv_count: int | None = None,
              tensor_count: int | None = None) -> Path:
    """A GGUF file laid out by hand as the specification says (the counts as given, else the lists')."""
    head = b"GGUF" + struct.pack(order + "IQQ", version, len(tensors) if tensor_count is None else tensor_count,
                                 len(entries) if kv_count is None else kv_count)
    head += b"".join(entries) + b"".join(tensors)
    path.write_bytes(head + b"\0" * (-len(head) % alignment) + data if tensors else head)
    return path


def every_type(order: str = "<") -> list[bytes]:
    return [entry("general.architecture", STR, "llama", order), entry("u8", U8, 255, order),
            entry("i8", I8, -1, order), entry("u16", U16, 7, order), entry("i16", I16, -7, order),
            entry("u32", U32, 1 << 31, order), entry("i32", I32, -5, order), entry("f32", F32, 0.5, order),
            entry("bool", BOOL, True, order), entry("u64", U64, 1 << 40, order), entry("i64", I64, -(1 << 40), order),
            entry("f64", F64, 2.5, order), entry("strings", ARR, (STR, ["a", "", "ünï"]), order),
            entry("floats", ARR, (F32, [0.25, 1.5]), order), entry("empty", ARR, (U8, []), order),
            entry("nested", ARR, (ARR, [(I32, [1, 2]), (I32, [])]), order)]


F32_TENSOR, Q4_0 = int(gguf.GGMLQuantizationType.F32), int(gguf.GGMLQuantizationType.Q4_0)


def valid_files(folder: Path) -> list[Path]:
    """Hand-laid valid files: empty, every value type, tensors (plain and quantized, a set alignment), big-endian."""
    tensors = [tensor("w", [4, 2], F32_TENSOR, 0), tensor("q", [64], Q4_0, 64)]
    data = b"\1" * 32 + b"\0" * 32 + b"\2" * 36
    return [gguf_file(folder / "empty.gguf", []),
            gguf_file(folder / "types.gguf", every_type()),
            gguf_file(folder / "tensors.gguf", every_type(), tensors, data),
            gguf_file(folder / "aligned.gguf", [entry("general.alignment", U32, 64)], tensors, data, alignment=64),
            gguf_file(folder / "big.gguf", every_type(">"), [tensor("w", [4], F32_TENSOR, 0, ">")], b"\0" * 16,
                      order=">"),
            gguf_file(folder / "v2.gguf", every_type()[:3], version=2)]


def reader_facts(path: Path, reader: gguf.GGUFReader | None = None) -> tuple[int, int, int, str]:
    """What GGUFReader found: metadata entries (its three pseudo-fields aside), tensors, data offset, byte order."""
    reader = reader or gguf.GGUFReader(str(path))
    order = "little" if (reader.byte_order == "I") == (sys.byteorder == "little") else "big"
    return len(reader.fields) - 3, len(reader.tensors), int(reader.data_offset), order


def test_valid_files_are_read_alike_by_the_check_and_by_gguf_reader(tmp_path, tiny_model, tiny_tokenizer):
    files = [*valid_files(tmp_path), write_gguf(tiny_model, tiny_tokenizer, tmp_path / "tiny.gguf")]
    for path in files:
        header = check_header(path)
        assert (header.metadata, header.tensors, header.data_offset, header.byte_order) == reader_facts(path), path
    types = check_header(tmp_path / "types.gguf")
    assert types.values == 16 + 3 + 2 + 0 + (2 + 2 + 0)  # keys, then every element at every depth
    assert check_header(tmp_path / "big.gguf").byte_order == "big"


def test_the_real_model_file_is_read_alike_by_the_check_and_by_gguf_reader():
    from styleeval.gguf_files import REAL_WEIGHTS, resolve

    path = Path(resolve(REAL_WEIGHTS).path)  # fetched as a user gets it, once per test session (the real weights')
    header, reader = check_header(path), gguf.GGUFReader(str(path))
    assert (header.metadata, header.tensors, header.data_offset, header.byte_order) == reader_facts(path, reader)
    arrays = sum(len(f.data) for f in reader.fields.values() if f.types and f.types[0] == gguf.GGUFValueType.ARRAY)
    assert header.values == header.metadata + arrays == 147_238


def corrupted_files(folder: Path) -> dict[str, Path]:
    """Files GGUFReader refuses, each with one fault."""
    base, good = every_type()[:3], [tensor("w", [4], F32_TENSOR, 0)]
    files = {
        "magic": gguf_file(folder / "magic.gguf", base),
        "version": gguf_file(folder / "version.gguf", base, version=4),
        "value type": gguf_file(folder / "type.gguf", [*base, string("k") + struct.pack("<I", 13)]),
        "element type": gguf_file(folder / "item.gguf", [*base, string("k") + struct.pack("<IIQB", ARR, 13, 1, 0)]),
        "key twice": gguf_file(folder / "twice.gguf", [*base, base[1]]),
        "key not UTF-8": gguf_file(folder / "utf8.gguf", [*base, entry(b"\xff\xfe", U8, 1)]),
        "alignment type": gguf_file(folder / "aligntype.gguf", [entry("general.alignment", U64, 64)]),
        "alignment value": gguf_file(folder / "alignvalue.gguf", [entry("general.alignment", U32, 48)]),
        "tensor type": gguf_file(folder / "ttype.gguf", base, [tensor("w", [4], 200, 0)], b"\0" * 16),
        "tensor twice": gguf_file(folder / "ttwice.gguf", base, good * 2, b"\0" * 16),
        "tensor name": gguf_file(folder / "tname.gguf", base, [tensor(b"\xff", [4], F32_TENSOR, 0)], b"\0" * 16),
        "data cut": gguf_file(folder / "cut.gguf", base, good, b"\0" * 15),
        "whole blocks": gguf_file(folder / "blocks.gguf", base, [tensor("q", [33], Q4_0, 0)], b"\0" * 64),
        "header cut": folder / "headercut.gguf",
    }
    files["magic"].write_bytes(b"GGUX" + files["magic"].read_bytes()[4:])
    whole = gguf_file(folder / "whole.gguf", every_type())
    files["header cut"].write_bytes(whole.read_bytes()[:150])
    return files


@pytest.mark.parametrize("fault", ["magic", "version", "value type", "element type", "key twice", "key not UTF-8",
                                   "alignment type", "alignment value", "tensor type", "tensor twice", "tensor name",
                                   "data cut", "whole blocks", "header cut"])
def test_a_file_gguf_reader_refuses_the_check_refuses(tmp_path, fault):
    path = corrupted_files(tmp_path)[fault]
    with pytest.raises(Exception):  # noqa: B017, PT011 - GGUFReader's own: ValueError, KeyError, IndexError...
        gguf.GGUFReader(str(path))
    with pytest.raises(HeaderError):
        check_header(path)


def hostile_files(folder: Path) -> dict[str, Path]:
    """Headers whose counts and sizes no file can hold, a few kilobytes each (issue 59's, made small)."""
    nested = struct.pack("<IQ", ARR, 1) * 5000 + struct.pack("<IQ", U8, 0)
    strings = string("") * 10_000
    files = {
        "a uint8 array claiming 2^40": gguf_file(folder / "u8.gguf", [string("x") + struct.pack("<IIQ", ARR, U8, 1 << 40)
                                                                     + b"\0" * 80]),
        "arrays nested 5000 deep": gguf_file(folder / "nested.gguf", [string("x") + struct.pack("<I", ARR) + nested]),
        "10,000 empty strings claiming 2^40": gguf_file(
            folder / "strings.gguf", [string("x") + struct.pack("<IIQ", ARR, STR, 1 << 40) + strings]),
        "2^62 metadata entries": gguf_file(folder / "entries.gguf", [entry("x", U8, 1)], kv_count=1 << 62),
        "2^40 tensors": gguf_file(folder / "tensors.gguf", [entry("x", U8, 1)], kv_count=1, tensor_count=1 << 40),
        "a string of 2^63 bytes": gguf_file(folder / "string.gguf", [string("x") + struct.pack("<IQ", STR, 1 << 63)]),
        "a tensor of 2^96 values": gguf_file(folder / "dims.gguf", [entry("x", U8, 1)],
                                             [tensor("w", [1 << 32] * 3, F32_TENSOR, 0)], b"\0" * 64),
        "2^32 - 1 dimensions": gguf_file(folder / "ndims.gguf", [entry("x", U8, 1)],
                                         [string("w") + struct.pack("<I", (1 << 32) - 1)], b"\0" * 64),
    }
    assert all(p.stat().st_size < 100_000 for p in files.values())
    return files


HOSTILE_WHY = {
    "a uint8 array claiming 2^40": "metadata 'x' is an array of 1099511627776 uint8 values: the 80 bytes left in "
                                   "the file hold at most 80",
    "arrays nested 5000 deep": f"nests arrays more than {MAX_DEPTH} deep",
    "10,000 empty strings claiming 2^40": "metadata 'x' is an array of 1099511627776 string values: the 80000 bytes "
                                          "left in the file hold at most 10000",
    "2^62 metadata entries": "the header claims 4611686018427387904 metadata entries",
    "2^40 tensors": "the header claims 1099511627776 tensors, more than 65536",
    "a string of 2^63 bytes": "metadata 'x' claims 9223372036854775808 bytes: 0 are left in the file",
    "a tensor of 2^96 values": "the data of tensor 'w' (79228162514264337593543950336 values of type f32) run past "
                               "the end of the file",
    "2^32 - 1 dimensions": "tensor 'w' claims 4294967295 dimensions",
}


def test_hostile_headers_are_refused_in_a_second_within_500_mb_by_every_reader_of_a_model_file(tmp_path):
    """On main, GGUFReader read the first three for minutes, growing past 5.8 GB (issue 59); here a fresh process
    (its address space capped at 4 GB, so that a regression fails instead of filling the machine) refuses each as one
    ModelLoadError naming the file, in under 5 s each, its peak RSS under 500 MB."""
    files = hostile_files(tmp_path)
    script = textwrap.dedent(f"""
        import json, resource, time
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        from styleeval.gguf_files import read_info
        from styleeval.hub import ModelLoadError
        out = {{}}
        for name, path in {json.dumps({k: str(v) for k, v in files.items()})}.items():
            start = time.perf_counter()
            try:
                read_info(path)
                out[name] = ["accepted", 0]
            except ModelLoadError as err:
                out[name] = [str(err), time.perf_counter() - start]
        # this process's own peak (ru_maxrss would count the parent's, from the fork that started it)
        status = open("/proc/self/status").read()
        out["peak MB"] = int(status.split("VmHWM:")[1].split()[0]) / 1024
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out.pop("peak MB") < 500
    for name, (message, seconds) in out.items():
        assert message.startswith(f"cannot load model {str(files[name])!r}: the GGUF file cannot be read ("), message
        assert HOSTILE_WHY[name] in message and seconds < 5, (name, message, seconds)


def test_the_values_a_header_may_hold_are_bounded(tmp_path, monkeypatch):
    """A header within its file but holding more values than any model's: refused (GGUFReader holds ~1 kB a value)."""
    monkeypatch.setattr(gguf_header, "MAX_ELEMENTS", 1000)
    path = gguf_file(tmp_path / "many.gguf", [entry("x", ARR, (U8, [0] * 999)), entry("y", U8, 1)])
    with pytest.raises(HeaderError, match="the header holds more than 1000 metadata values"):
        check_header(path)
    assert check_header(gguf_file(tmp_path / "fits.gguf", [entry("x", ARR, (U8, [0] * 998))])).values == 999


def _capped() -> None:
    """The child's address space capped at 4 GB: a regression fails instead of filling the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_a_hostile_file_named_to_a_command_is_one_line(tmp_path):
    path = hostile_files(tmp_path)["a uint8 array claiming 2^40"]
    source = tmp_path / "in.jsonl"
    source.write_text('{"source": "a b", "rewrite": "c d", "style": "formal"}\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "styleeval", "score", str(source), "--out", str(tmp_path / "o.jsonl"),
                           "--model", str(path), "-q"], capture_output=True, text=True, timeout=120, env=env,
                          preexec_fn=_capped)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert done.stderr.startswith(f"styleeval score: error: cannot load model {str(path)!r}: the GGUF file cannot be "
                                  f"read ({HOSTILE_WHY['a uint8 array claiming 2^40']})")
