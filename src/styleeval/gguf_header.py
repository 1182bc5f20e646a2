"""A GGUF file's header checked in bounded memory and time, before any library reads it.

The ``gguf`` package's ``GGUFReader`` (what :mod:`styleeval.gguf_files` and transformers' GGUF loader read a file
with) trusts every count and size the header states: it makes one NumPy view per array element, and a view past the
end of the file is an empty array, not an error. A 117-byte file whose one metadata entry is a uint8 array claiming
2^40 elements grew it to 5.8 GB in 87 s; arrays nested 5,000 deep, or 2 M empty strings claiming 2^40, the same
(issue 59). :func:`check_header` reads the header as the GGUF specification lays it out (the library's own types and
tables: ``gguf.constants``) and refuses, before anything is allocated, every count or size that the bytes left in the
file cannot hold, arrays nested deeper than :data:`MAX_DEPTH`, and more than :data:`MAX_ELEMENTS` metadata values or
:data:`MAX_TENSORS` tensors (what the reader would then hold in memory); it refuses what ``GGUFReader`` refuses too (a
wrong magic or version, a value type or tensor type it does not know, a key or tensor name that is not UTF-8 or comes
twice, a bad ``general.alignment``, a quantized row that is not whole blocks, tensor data past the end of the file).
It holds nothing but a few counters and the keys and tensor names (at most the header's size), reads the header
through a memory map and takes about a second per million metadata values (0.1 s for SmolLM2's 49k-token vocabulary).

>>> import tempfile, struct
>>> with tempfile.NamedTemporaryFile(suffix=".gguf") as f:
...     _ = f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"x" + struct.pack("<IIQ", 9, 0, 2**40))
...     f.flush()
...     check_header(f.name)
Traceback (most recent call last):
...
styleeval.gguf_header.HeaderError: metadata 'x' is an array of 1099511627776 uint8 values: the 0 bytes left in the file hold at most 0
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from dataclasses import dataclass, field

MAX_DEPTH = 8
"""Arrays of arrays nested deeper than this are refused (the specification allows nesting; no real file nests)."""
MAX_ELEMENTS = 1 << 21
"""The most metadata values a header may hold in all (2,097,152: keys, and every array element at every depth). The
largest real vocabularies hold under a million (Gemma 3's 262,144 tokens with their scores and types: 786k; Qwen2.5's
151k tokens, merges and types: 455k, which ``GGUFReader`` holds in about 490 MB)."""
MAX_TENSORS = 1 << 16
"""The most tensors a header may declare (65,536: a model of thousands of layers and experts declares a few
thousand)."""


TEMPLATE_KEY = "tokenizer.chat_template"
TOKENS_KEY = "tokenizer.ggml.tokens"
EMBEDDINGS = ("token_embd.weight", "output.weight")
"""The tensors with a row per token (llama.cpp's names): each must have as many rows as the vocabulary has tokens."""


class HeaderError(ValueError):
    """The header of a GGUF file is refused: the message says what and where."""


@dataclass(frozen=True)
class Header:
    """What :func:`check_header` found: the GGUF ``version``, the ``byte_order`` (``"little"`` or ``"big"``), the
    counts of metadata entries, metadata values (keys and array elements) and tensors, where the tensor data start,
    and the chat templates (``tokenizer.chat_template`` and ``tokenizer.chat_template.<name>``, the strings llama.cpp
    hands to llama-cpp-python, which compiles each when it opens the file)."""

    version: int
    byte_order: str
    metadata: int
    values: int
    tensors: int
    data_offset: int
    chat_templates: dict[str, str] = field(default_factory=dict)
    vocabulary: int | None = None
    """How many tokens ``tokenizer.ggml.tokens`` lists (``None``: no such list)."""
    rows: dict[str, int] = field(default_factory=dict)
    """The rows (vocabulary entries) of ``token_embd.weight`` and ``output.weight``, the tensors indexed by token."""


def check_header(path: str | os.PathLike[str]) -> Header:
    """The header of the GGUF file at ``path``, checked as the module docstring says; :class:`HeaderError` naming
    what is wrong otherwise."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 4:
            raise HeaderError(f"the file holds {size} bytes, not a GGUF header")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _Scanner(data, size).header()


class _Scanner:
    """One pass over a header: every read checked against the bytes left before it is made."""

    def __init__(self, data: mmap.mmap, size: int) -> None:
        from gguf.constants import (  # noqa: PLC0415 - heavy (numpy, via gguf)
            GGML_QUANT_SIZES,
            GGUF_DEFAULT_ALIGNMENT,
            GGUF_MAGIC,
            GGMLQuantizationType,
            GGUFValueType,
        )
        from gguf.gguf_reader import READER_SUPPORTED_VERSIONS  # noqa: PLC0415 - heavy (numpy, via gguf)

        self.data, self.size, self.pos = data, size, 0
        self.magic, self.versions, self.alignment = GGUF_MAGIC, READER_SUPPORTED_VERSIONS, GGUF_DEFAULT_ALIGNMENT
        self.value_types, self.tensor_types, self.quant_sizes = GGUFValueType, GGMLQuantizationType, GGML_QUANT_SIZES
        self.scalars = {t: struct.calcsize(c) for t, c in (
            (GGUFValueType.UINT8, "B"), (GGUFValueType.INT8, "b"), (GGUFValueType.UINT16, "H"),
            (GGUFValueType.INT16, "h"), (GGUFValueType.UINT32, "I"), (GGUFValueType.INT32, "i"),
            (GGUFValueType.FLOAT32, "f"), (GGUFValueType.BOOL, "?"), (GGUFValueType.UINT64, "Q"),
            (GGUFValueType.INT64, "q"), (GGUFValueType.FLOAT64, "d"))}
        self.plain = {GGMLQuantizationType.F16, GGMLQuantizationType.F32, GGMLQuantizationType.F64,
                      GGMLQuantizationType.I8, GGMLQuantizationType.I16, GGMLQuantizationType.I32,
                      GGMLQuantizationType.I64}  # the types GGUFReader reads as NumPy numbers, not as blocks
        self.values = 0
        self.order = "<" if sys.byteorder == "little" else ">"  # GGUFReader: the host's order, unless swapped
        self.u32, self.u64 = struct.Struct(self.order + "I"), struct.Struct(self.order + "Q")

    # -- reads ----------------------------------------------------------------------------------------------------
    def left(self) -> int:
        return self.size - self.pos

    def need(self, n: int, what: str) -> None:
        if n > self.left():
            raise HeaderError(f"{what} runs past the end of the file (at byte {self.pos}: {n} bytes needed, "
                              f"{self.left()} left)")

    def read_u32(self, what: str) -> int:
        self.need(4, what)
        value = self.u32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return value

    def read_u64(self, what: str) -> int:
        self.need(8, what)
        value = self.u64.unpack_from(self.data, self.pos)[0]
        self.pos += 8
        return value

    def read_string(self, what: str, text: bool) -> str | None:
        """A string (a u64 length and its bytes): decoded where ``text`` (keys and tensor names, which GGUFReader
        decodes), else skipped."""
        length = self.read_u64(f"the length of {what}")
        if length > self.left():
            raise HeaderError(f"{what} claims {length} bytes: {self.left()} are left in the file")
        start, self.pos = self.pos, self.pos + length
        if not text:
            return None
        try:
            return self.data[start : self.pos].decode("utf-8")
        except UnicodeDecodeError:
            raise HeaderError(f"{what} (at byte {start}) is not UTF-8") from None

    def count_values(self, n: int, what: str) -> None:
        self.values += n
        if self.values > MAX_ELEMENTS:
            raise HeaderError(f"{what}: the header holds more than {MAX_ELEMENTS} metadata values (keys and array "
                              "elements); no model's header holds as many")

    def value_type(self, raw: int, what: str) -> object:
        try:
            return self.value_types(raw)
        except ValueError:
            raise HeaderError(f"{what} has the unknown value type {raw}") from None

    # -- the header -----------------------------------------------------------------------------------------------
    def header(self) -> Header:
        if struct.unpack_from("<I", self.data, 0)[0] != self.magic:
            raise HeaderError("it does not start with GGUF's magic bytes")
        self.pos = 4
        version = self.read_u32("the version")
        if version & 0xFFFF == 0:  # written in the other byte order (GGUFReader's test)
            self.order = ">" if self.order == "<" else "<"
            self.u32, self.u64 = struct.Struct(self.order + "I"), struct.Struct(self.order + "Q")
            version = self.u32.unpack_from(self.data, 4)[0]
        if version not in self.versions:
            raise HeaderError(f"GGUF version {version}: the gguf package reads versions "
                              f"{', '.join(map(str, self.versions))}")
        tensors = self.read_u64("the tensor count")
        entries = self.read_u64("the metadata count")
        if entries * 13 > self.left():  # a key's length, one byte of it, a type, a one-byte value
            raise HeaderError(f"the header claims {entries} metadata entries: the {self.left()} bytes left in the "
                              f"file hold at most {self.left() // 13}")
        self.count_values(entries, "the metadata count")
        if tensors > MAX_TENSORS:
            raise HeaderError(f"the header claims {tensors} tensors, more than {MAX_TENSORS}")
        keys: set[str] = set()
        templates: dict[str, str] = {}
        vocabulary = None
        for k in range(entries):
            key = self.read_string(f"metadata key {k}", text=True)
            assert key is not None
            if key in keys:
                raise HeaderError(f"metadata key {key!r} comes twice")
            keys.add(key)
            kind = self.value_type(self.read_u32(f"the type of metadata {key!r}"), f"metadata {key!r}")
            if key == "general.alignment":
                self.alignment = self.read_alignment(kind)
            elif kind == self.value_types.STRING and (key == TEMPLATE_KEY or key.startswith(TEMPLATE_KEY + ".")):
                start = self.pos + 8
                self.read_string(f"metadata {key!r}", text=False)
                templates[key] = self.data[start : self.pos].decode("utf-8", "replace")
            else:
                if key == TOKENS_KEY and kind == self.value_types.ARRAY:
                    vocabulary = self.u64.unpack_from(self.data, self.pos + 4)[0] if self.left() >= 12 else None
                self.skip_value(kind, f"metadata {key!r}", 0)
        if tensors * 24 > self.left():  # a name's length, a dimension count, a type, an offset
            raise HeaderError(f"the header claims {tensors} tensors: the {self.left()} bytes left in the file hold "
                              f"at most {self.left() // 24}")
        infos = [self.tensor_info(t) for t in range(tensors)]
        data_offset = -(-self.pos // self.alignment) * self.alignment
        self.check_tensors(infos, data_offset)
        rows = {name: shape[1] for name, shape, _, _ in infos if name in EMBEDDINGS and len(shape) >= 2}
        return Header(version, "little" if self.order == "<" else "big", entries, self.values, tensors, data_offset,
                      templates, vocabulary, rows)

    def read_alignment(self, kind: object) -> int:
        if kind != self.value_types.UINT32:
            raise HeaderError(f"metadata 'general.alignment' is a {_name(kind)}, not a uint32")
        alignment = self.read_u32("metadata 'general.alignment'")
        if alignment == 0 or alignment & (alignment - 1):
            raise HeaderError(f"metadata 'general.alignment' is {alignment}, not a power of two")
        return alignment

    def skip_value(self, kind: object, what: str, depth: int) -> None:
        """Past one value of type ``kind``, every count and size checked before it is used."""
        if kind in self.scalars:
            self.need(self.scalars[kind], what)
            self.pos += self.scalars[kind]
        elif kind == self.value_types.STRING:
            self.read_string(what, text=False)
        else:  # an array
            if depth >= MAX_DEPTH:
                raise HeaderError(f"{what} nests arrays more than {MAX_DEPTH} deep")
            item = self.value_type(self.read_u32(f"the element type of {what}"), f"an element of {what}")
            count = self.read_u64(f"the length of {what}")
            smallest = self.scalars.get(item, 8 if item == self.value_types.STRING else 12)  # type + length
            if count * smallest > self.left():
                raise HeaderError(f"{what} is an array of {count} {_name(item)} values: the {self.left()} bytes left "
                                  f"in the file hold at most {self.left() // smallest}")
            self.count_values(count, what)
            if item in self.scalars:
                self.pos += count * smallest
            elif item == self.value_types.STRING:
                pos, end, u64 = self.pos, self.size, self.u64.unpack_from
                for _ in range(count):  # the hot loop of a vocabulary: no call but the unpacking
                    if pos + 8 > end:
                        self.pos = pos
                        self.need(8, f"a string of {what}")
                    size = u64(self.data, pos)[0]
                    pos += 8 + size
                    if pos > end:
                        self.pos = pos - size
                        raise HeaderError(f"a string of {what} claims {size} bytes: {end - self.pos} are left in "
                                          "the file")
                self.pos = pos
            else:
                for _ in range(count):
                    self.skip_value(item, f"an element of {what}", depth + 1)

    def tensor_info(self, t: int) -> tuple[str, list[int], object, int]:
        name = self.read_string(f"the name of tensor {t}", text=True)
        assert name is not None
        dims = self.read_u32(f"the dimension count of tensor {name!r}")
        if dims * 8 > self.left():
            raise HeaderError(f"tensor {name!r} claims {dims} dimensions: the {self.left()} bytes left in the file "
                              f"hold at most {self.left() // 8}")
        shape = [self.read_u64(f"a dimension of tensor {name!r}") for _ in range(dims)]
        raw = self.read_u32(f"the type of tensor {name!r}")
        try:
            kind = self.tensor_types(raw)
        except ValueError:
            raise HeaderError(f"tensor {name!r} has the unknown type {raw}") from None
        if kind not in self.quant_sizes:
            raise HeaderError(f"tensor {name!r} has the type {_name(kind)}, whose size the gguf package does not know")
        offset = self.read_u64(f"the data offset of tensor {name!r}")
        return name, shape, kind, offset

    def check_tensors(self, infos: list[tuple[str, list[int], object, int]], data_offset: int) -> None:
        names: set[str] = set()
        for name, shape, kind, offset in infos:
            if name in names:
                raise HeaderError(f"tensor {name!r} comes twice")
            names.add(name)
            block, type_size = self.quant_sizes[kind]
            if kind not in self.plain and (not shape or shape[0] % block):
                raise HeaderError(f"tensor {name!r} of type {_name(kind)} has rows of {shape[0] if shape else 0} "
                                  f"values, not whole blocks of {block}")
            elements = 1
            for d in shape:
                elements *= d
            end = data_offset + offset + elements * type_size // block
            if end > self.size:
                raise HeaderError(f"the data of tensor {name!r} ({elements} values of type {_name(kind)}) run past "
                                  f"the end of the file (to byte {end} of {self.size})")


def vocabulary_mismatch(header: Header) -> str | None:
    """Why the file's vocabulary does not fit its weights (a tensor indexed by token with another number of rows than
    ``tokenizer.ggml.tokens`` has tokens: llama.cpp refuses such a file; transformers converts it, and a token past the
    rows fails deep inside a forward pass, a token missing breaks the tokenizer), else ``None``."""
    for name, rows in header.rows.items():
        if header.vocabulary is not None and rows != header.vocabulary:
            return (f"its vocabulary (tokenizer.ggml.tokens) holds {header.vocabulary} tokens but {name} has "
                    f"{rows} rows, one per token: the tokenizer does not match the weights")
    return None


def _name(kind: object) -> str:
    return str(getattr(kind, "name", kind)).lower()
