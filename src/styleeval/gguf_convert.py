"""A GGUF file de-quantized into a float32 model folder one tensor at a time, so that the memory a conversion needs
stays near the largest shard (:data:`SHARD_BYTES`) instead of two or three copies of the whole model: transformers'
own GGUF loader (``from_pretrained(gguf_file=)``) de-quantizes every tensor into one dictionary, then copies it into
the model (measured on Qwen2.5-Coder-1.5B: a peak of 8.8 GB for 7.1 GB of float32 weights; tensor by tensor: 3.1 GB).

The numbers are transformers' to the bit: the same reader (``gguf.GGUFReader``), the same de-quantization
(``gguf.dequantize``), the same per-architecture tensor processor and name map as its loader
(``transformers.modeling_gguf_pytorch_utils``), and the same refusal of a file that lacks a weight of the model
(transformers would fill it with random values). ``tests/test_gguf.py`` converts files both ways and compares every
tensor's bits.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch
from gguf import GGUFReader, dequantize
from safetensors.torch import save_file
from transformers import AutoConfig, AutoModelForCausalLM
from transformers.modeling_gguf_pytorch_utils import (
    TENSOR_PROCESSORS,
    TensorProcessor,
    get_gguf_hf_weights_map,
    load_gguf_checkpoint,
)

SHARD_BYTES = 256 << 20
"""The most float32 bytes held before they are written as one ``model-NNNNN.safetensors`` shard."""

CHUNK_BYTES = 16 << 20
"""About how many bytes of a quantized tensor are de-quantized at once."""

INDEX = "model.safetensors.index.json"


_READERS: dict[str, GGUFReader] = {}
"""The file read by each conversion under way (:func:`one_reader`), by path as given."""
_READERS_LOCK = threading.Lock()


def _reader(path: Any, *args: Any, **kwargs: Any) -> GGUFReader:
    """``gguf.GGUFReader`` while a conversion runs: the file already read where it is the one being converted."""
    shared = None if args or kwargs else _READERS.get(os.fspath(path))
    return shared if shared is not None else GGUFReader(path, *args, **kwargs)


@contextlib.contextmanager
def one_reader(path: str) -> Iterator[GGUFReader]:
    """The GGUF file ``path`` read once (``gguf.GGUFReader``: its header, every metadata field, the tensors' places)
    for everything a conversion asks of it: the config (``AutoConfig``), the tensor processor's metadata and the
    tensors (:func:`convert_tensors`), the tokenizer (``AutoTokenizer``). transformers' GGUF loader reads the file
    again on each call (its ``load_gguf_checkpoint`` builds a reader; ~6 s of CPU each for the smollm2-135m preset's
    49,152-token vocabulary: four readers, 24 s, for one): within this block ``gguf.GGUFReader`` of that path is this
    reader, which they only read (a memory map, opened read-only); any other path or mode is read as before."""
    path = os.fspath(path)
    with _READERS_LOCK:
        owner = path not in _READERS
        if owner:
            _READERS[path] = GGUFReader(path)
        gguf.GGUFReader = _reader
    try:
        yield _READERS[path]
    finally:
        with _READERS_LOCK:
            if owner:
                del _READERS[path]
            if not _READERS:
                gguf.GGUFReader = GGUFReader


class MissingWeights(ValueError):
    """The file lacks weights the model needs (their names)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self.names = names


def convert_tensors(path: str, folder: str | os.PathLike[str]) -> Any:
    """Write the model of the GGUF file ``path`` into ``folder`` as float32 safetensors shards with their index and
    the model's config and generation config; the config is returned. :class:`MissingWeights` where the file lacks
    one of the model's weights; transformers' own errors where it cannot read the file."""
    directory, filename = os.path.split(path)
    with one_reader(path):
        config = AutoConfig.from_pretrained(directory, gguf_file=filename)
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        with torch.device("meta"):
            skeleton = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        written = _write_shards(path, skeleton, Path(folder))
    needed = set(skeleton.state_dict()) - _tied(skeleton)
    missing = sorted(needed - set(written))
    if missing:
        raise MissingWeights(missing)
    skeleton.config.save_pretrained(folder)
    skeleton.generation_config.save_pretrained(folder)
    return config


def _tied(model: Any) -> set[str]:
    """The parameters that are another one's (a tied LM head): not in the file, not written."""
    names = set()
    keys = getattr(model, "_tied_weights_keys", None) or {}
    if getattr(model.config, "tie_word_embeddings", False):
        names.update(keys if isinstance(keys, (dict, list, tuple, set)) else ())
    return names


def _write_shards(path: str, skeleton: Any, folder: Path) -> dict[str, str]:
    """Every tensor of the file that the model has, de-quantized and processed as transformers' loader does, written
    in shards of at most :data:`SHARD_BYTES` (a larger tensor alone); the weight map (name -> shard file)."""
    parsed = load_gguf_checkpoint(path, return_tensors=False)  # metadata only: the processor's config
    architecture = str(parsed["config"].get("model_type", ""))
    reader = _reader(path)  # the file as read once for the conversion (one_reader)
    original = _architecture(reader) or architecture
    processor = TENSOR_PROCESSORS.get(original, TensorProcessor)(config=parsed["config"])
    names = get_gguf_hf_weights_map(skeleton, processor)
    shards: list[dict[str, torch.Tensor]] = [{}]
    sizes = [0]
    total = 0
    files: list[str] = []
    weight_map: dict[str, str] = {}

    def flush() -> None:
        if shards[-1]:
            name = f"model-{len(files) + 1:05d}.safetensors"
            save_file(shards[-1], str(folder / name), metadata={"format": "pt"})
            files.append(name)
            weight_map.update(dict.fromkeys(shards[-1], name))
            shards[-1] = {}
            sizes[-1] = 0

    for tensor in reader.tensors:
        result = processor.process(weights=_dequantized(tensor), name=tensor.name, tensor_key_mapping=names,
                                   parsed_parameters=parsed)
        if result.name not in names:
            continue
        weights = torch.from_numpy(np.require(result.weights, requirements=("C", "W"))).to(torch.float32)
        if sizes[-1] and sizes[-1] + weights.nbytes > SHARD_BYTES:
            flush()
        shards[-1][names[result.name]] = weights
        sizes[-1] += weights.nbytes
        total += weights.nbytes
        del weights, result
    flush()
    (folder / INDEX).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": dict(
        sorted(weight_map.items()))}, indent=2) + "\n", encoding="utf-8")
    return weight_map


def _dequantized(tensor: Any) -> np.ndarray:
    """``gguf.dequantize`` of a tensor, a slab of rows at a time (its blocks lie within a row: the same numbers) so
    that its temporaries stay near :data:`CHUNK_BYTES` (on the whole 151,936-row embedding of Qwen2.5 they took
    gigabytes)."""
    data = tensor.data
    if data.ndim < 2 or data.nbytes <= CHUNK_BYTES:
        return dequantize(data, tensor.tensor_type)
    rows = max(1, CHUNK_BYTES // max(1, data[0].nbytes * 8))  # up to 8 float32 per byte of a 4-bit quantization
    first = dequantize(data[:rows], tensor.tensor_type)
    out = np.empty((data.shape[0], *first.shape[1:]), dtype=first.dtype)
    out[:rows] = first
    for start in range(rows, data.shape[0], rows):
        out[start:start + rows] = dequantize(data[start:start + rows], tensor.tensor_type)
    return out


def _architecture(reader: GGUFReader) -> str | None:
    field = reader.fields.get("general.architecture")
    return None if field is None else str(field.contents())
