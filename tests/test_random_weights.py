"""Numbers from random weights (the ``tiny-random`` preset) are marked "random weights: not for numbers" wherever they
are shown (report.md, the stdout table, report.json, the CSVs, the plots, the leaderboard, the Space's readings), and
signed by name and content, the same on every machine (issue 36, item 4)."""

from __future__ import annotations

import json
import math
import shutil

import matplotlib
import pandas as pd
import pytest

from styleeval.labels import RANDOM_MARK, RANDOM_WEIGHTS, has_random_weights

matplotlib.use("Agg")

TINY = "tiny-random"
SOURCES = ["give me the report now.", "the food was cold.", "the meeting is on Tuesday.", "send it to me today."]


def test_the_signature_names_the_preset_and_its_content_not_the_cache_folder(tmp_path, monkeypatch):
    """Built in two cache folders (two machines' homes), the preset signs the same: ``model:tiny-random@local-<hash
    of its files>`` (before: ``model:<the folder's absolute path>@local-...``, another signature per machine)."""
    from styleeval import LogProb

    signatures = []
    for home in ("machine-a", "machine-b"):
        monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / home))
        signatures.append(LogProb(TINY, progress=False).signature)
        assert (tmp_path / home / TINY / "config.json").is_file()
    assert signatures[0] == signatures[1]
    assert signatures[0].fields["model"].startswith("tiny-random@local-") and str(tmp_path) not in signatures[0]
    assert has_random_weights(signatures[0]) and not has_random_weights(signatures[0].replace(TINY, "my-model"))


def test_the_preset_has_room_for_every_judge_prompt_of_the_bundled_corpora(tmp_path, monkeypatch, data_dir,
                                                                         tiny_tokenizer):
    """`--model tiny-random` gets through the default `evaluate` / `autorate` of every bundled corpus (issue 41: its
    512 positions refused Lai row 111's 449-token judge prompt). Without running the model: a byte-level token
    covers at least one byte, so a prompt's bytes bound its tokens; the bound, plus the longest reply, fits."""
    from styleeval.autorater.prompts import PROMPTS
    from styleeval.chat import ChatFormat
    from styleeval.corpora import CorpusError, load_corpus, rating_corpora
    from styleeval.models import TINY_RANDOM_CONTEXT, tiny_random_dir

    chat = ChatFormat(tiny_tokenizer, end_of_turn=False)  # the preset's tokenizer (build_tokenizer())
    reply = max(64, *(p.decoding.max_new_tokens for p in PROMPTS.values()))  # expected mode reads 64 tokens
    longest, checked = 0, []
    for name in rating_corpora():
        try:
            corpus = load_corpus(name, data_dir)
        except CorpusError:  # not in the local mirror (Ziegenbein)
            continue
        checked.append(name)
        rows = list(zip(corpus["source"], corpus["rewrite"], corpus["target_style"], strict=True))
        for prompt in PROMPTS.values():
            if prompt.per_dimension:  # Mukherjee et al.'s: the task's words depend on the style; each row's bytes
                for dimension in prompt.dimensions:
                    sizes = [(len(chat.render(chat.fold(prompt.messages(*row, dimension)),
                                              add_generation_prompt=True).encode()), row) for row in rows]
                    size, row = max(sizes)
                    assert len(chat.conversation_ids([prompt.messages(*row, dimension)])[0]) <= size
                    longest = max(longest, size)
                continue
            empty = len(chat.render(chat.fold(prompt.messages("", "", "")), add_generation_prompt=True).encode())
            count = {key: prompt.user.count("{" + key + "}") for key in ("source", "rewrite", "style")}
            bound = [empty + sum(count[k] * len(v.encode()) for k, v in zip(count, row, strict=True)) for row in rows]
            top = max(range(len(rows)), key=bound.__getitem__)
            assert len(chat.conversation_ids([prompt.messages(*rows[top])])[0]) <= bound[top]  # a true bound
            longest = max(longest, bound[top])
    assert {"style_gap_testset", "lai_formality", "mir_yelp", "asset"} <= set(checked)
    assert longest + reply <= TINY_RANDOM_CONTEXT, (longest, reply)
    # and the preset is built with it, again where an older build has another context
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path))
    config = tiny_random_dir() / "config.json"
    assert json.loads(config.read_text())["max_position_embeddings"] == TINY_RANDOM_CONTEXT
    config.write_text(config.read_text().replace(f'"max_position_embeddings": {TINY_RANDOM_CONTEXT}',
                                                 '"max_position_embeddings": 512'))
    assert json.loads((tiny_random_dir() / "config.json").read_text())["max_position_embeddings"] == 4096
    assert sorted(p.name for p in tmp_path.iterdir()) == [TINY]


def test_a_build_finished_by_another_process_meanwhile_is_kept(tmp_path, monkeypatch):
    """Two processes building the preset at once: the later one replaced (deleted, then re-created) the folder the
    first had installed and handed out; now it keeps it and drops its own build."""
    import styleeval.models
    from styleeval.models import tiny_random_dir

    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "a"))
    built = tiny_random_dir()  # what the other process installs
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "b"))
    build_model = styleeval.models.build_model  # imported from styleeval.random_weights

    def slow_build(*args, **kwargs):  # while this process builds, the other one finishes
        shutil.copytree(built, tmp_path / "b" / TINY)
        return build_model(*args, **kwargs)

    monkeypatch.setattr(styleeval.models, "build_model", slow_build)
    inode = None
    original = shutil.copytree

    def remember(*args, **kwargs):
        nonlocal inode
        out = original(*args, **kwargs)
        inode = (tmp_path / "b" / TINY).stat().st_ino
        return out

    monkeypatch.setattr(shutil, "copytree", remember)
    root = tiny_random_dir()
    assert root == tmp_path / "b" / TINY and root.stat().st_ino == inode  # the other's folder, untouched
    assert [p.name for p in (tmp_path / "b").iterdir()] == [TINY]  # no temporary build left


@pytest.fixture
def capture_figures(monkeypatch):
    """Every figure saved while the test runs: file name -> the texts written on the figure itself."""
    from matplotlib.figure import Figure

    saved: dict[str, list[str]] = {}
    original = Figure.savefig

    def savefig(self, path, *args, **kwargs):
        saved[str(getattr(path, "name", path)).rsplit("/", 1)[-1]] = [t.get_text() for t in self.texts]
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


def test_evaluate_marks_every_output(tmp_path, capsys, capture_figures):
    from styleeval.cli import main

    table = tmp_path / "outputs.csv"
    pd.DataFrame([{"source": s, "rewrite": r, "style": "polite", "system": name} for s in SOURCES
                  for name, r in (("A", f"Could you {s}"), ("B", s.upper()))]).to_csv(table, index=False)
    out = tmp_path / "report"
    metrics = f"logprob_content:model={TINY},logprob_style:model={TINY},s_bleu"
    assert main(["evaluate", str(table), "--metrics", metrics, "--out", str(out), "--no-progress"]) == 0
    stdout = capsys.readouterr().out.splitlines()
    assert stdout[0].startswith(f"{RANDOM_WEIGHTS}: LogProb content, LogProb style were computed with the tiny-random")
    tables = "\n".join(stdout[stdout.index("") + 1:])  # below the warning (wrapped to the terminal's width)
    assert "LogProb content [random weights] ↑" in tables and "S-BLEU ↑" in tables
    assert "S-BLEU [random weights]" not in tables
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.splitlines()[2].startswith(f"> **{RANDOM_WEIGHTS}**: LogProb content, LogProb style")
    assert "| LogProb style [random weights] ↑ |" in report
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["random_weights"] == ["logprob_content", "logprob_style"]
    assert saved["warnings"][0].startswith(RANDOM_WEIGHTS)
    for name in ("systems.csv", "pairs.csv"):
        frame = pd.read_csv(out / name, keep_default_na=False)
        assert (frame["warning"] == frame["metric"].map(lambda m: RANDOM_WEIGHTS if m.startswith("logprob") else "")
                ).all(), name
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert all(r["random_weights"] == ["logprob_content", "logprob_style"] for r in rows)
    figure = [texts for name, texts in capture_figures.items() if name.startswith(".tradeoff.png.")]  # its temporary
    assert len(figure) == 1 and any(t.startswith(RANDOM_WEIGHTS) for t in figure[0])  # name, renamed tradeoff.png
    # without random weights, nothing of it
    assert main(["evaluate", str(table), "--metrics", "s_bleu", "--out", str(tmp_path / "plain"),
                 "--no-progress"]) == 0
    assert RANDOM_WEIGHTS not in capsys.readouterr().out
    assert "warning" not in pd.read_csv(tmp_path / "plain" / "systems.csv").columns
    plain = json.loads((tmp_path / "plain" / "report.json").read_text(encoding="utf-8"))
    assert plain["random_weights"] == [] and plain["warnings"] == []


def test_metaeval_and_the_leaderboard_mark_every_output(tmp_path, capture_figures):
    from styleeval.metaeval import run_metaeval, write_report
    from styleeval.metaeval.leaderboard import build_leaderboard, write_leaderboard

    rows = [{"id": f"toy/{k}", "dataset": "toy", "task": "politeness", "target_style": "polite",
             "source_id": str(i), "source": s, "rewrite": r, "reference": None, "system": name,
             "is_reference_rewrite": False, "content_mean": float((i + k) % 5 + 1), "style_mean": 1.0,
             "fluency_mean": None}
            for k, (i, s, name, r) in enumerate((i, s, name, r) for i, s in enumerate(SOURCES * 3)
                                                for name, r in (("A", f"Could you {s}"), ("B", s.upper()),
                                                                ("C", s)))]
    result = run_metaeval(["toy"], [f"logprob_content:model={TINY}", "s_bleu", "s_ter"], dimension="content",
                          loader=lambda name: rows, n_boot=20)
    assert result.random_weights == ["logprob_content"]
    write_report(result, tmp_path)
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert report.splitlines()[2].startswith(f"> **{RANDOM_WEIGHTS}**: LogProb content was computed")
    assert "| LogProb content [random weights] |" in report and "| S-TER (negated) |" in report
    for name in ("correlations.csv", "wmt_kendall.csv"):
        frame = pd.read_csv(tmp_path / name, keep_default_na=False)
        assert len(frame) and (frame["warning"] == frame["metric"].map(
            lambda m: RANDOM_WEIGHTS if m == "logprob_content" else "")).all(), name
    for png in ("groups.png", "datasets.png", "metrics_heatmap.png"):
        assert any(t.startswith(RANDOM_WEIGHTS) for t in capture_figures[png]), png
    board = build_leaderboard([result], trials=10, n_boot=5)
    write_leaderboard(board, tmp_path)
    text = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    assert f"> **{RANDOM_WEIGHTS}**" in text and "| LogProb content [random weights] |" in text
    frame = pd.read_csv(tmp_path / "leaderboard.csv", keep_default_na=False)
    assert (frame["warning"] == frame["metric"].map(lambda m: RANDOM_WEIGHTS if m == "logprob_content" else "")).all()
    assert any(t.startswith(RANDOM_WEIGHTS) for t in capture_figures["leaderboard.png"])


def test_the_space_readings_carry_the_warning(tmp_path, data_dir):
    """"LogProb style -0.0003841: about neutral" read like a result; with random weights every reading of the
    model's numbers says what they are."""
    from styleeval.demo import Demo, metaeval_summary

    demo = Demo(model=TINY)
    out = demo.score("give me the report now.", "Could you send me the report?", "polite")
    assert out["warning"] == RANDOM_WEIGHTS
    assert out["style_reading"].startswith(f"{RANDOM_WEIGHTS}: ") and out["content_reading"].startswith(RANDOM_WEIGHTS)
    rows = demo.compare("give me the report now.", "Could you send the report?", "Could you send the invoice?",
                        "polite")
    assert [r[0] for r in rows] == [f"{m}{RANDOM_MARK}" for m in ("LogProb content", "LogProb style",
                                                                  "Autorater meaning", "Autorater style")] + [
        "S-BLEU (vs source)", "S-chrF (vs source)"]
    upload = tmp_path / "batch.csv"
    upload.write_text("source,rewrite,style,system\n" + "".join(
        f'"{s}","Could you {s}",polite,A\n"{s}","{s}",polite,B\n' for s in SOURCES), encoding="utf-8")
    scored, report = demo.batch(str(upload))
    assert all(r["warning"] == RANDOM_WEIGHTS for r in scored)
    assert report.random_weights == ["logprob_content", "logprob_style"]
    assert RANDOM_WEIGHTS in report.to_markdown()
    summary, fig = metaeval_summary(str(data_dir), metrics=("s_bleu",),
                                    extra_metrics=(f"logprob_content:model={TINY}",))
    assert {r[0] for r in summary} == {"S-BLEU", f"LogProb content{RANDOM_MARK}"}
    assert any(t.get_text().startswith(RANDOM_WEIGHTS) for t in fig.texts)
    assert all(math.isfinite(r[3]) for r in summary)
    plain = Demo(model=TINY, autorater=False)  # the reading itself is unchanged after the warning
    assert plain.score("a", "a", "polite")["style_reading"].removeprefix(f"{RANDOM_WEIGHTS}: ").startswith(
        ("about neutral", "the style", "paraphrasing"))


def test_the_file_commands_summaries_and_the_evaluate_modules_results_carry_the_warning(tmp_path, capsys):
    """`styleeval score` / `autorate` printed "mean content -15.12  mean style_strength 8.094e-08 (1 row)" and the
    evaluate modules returned bare numbers: with random weights each says what they are."""
    import evaluate

    from styleeval import evaluate_module
    from styleeval.cli import main

    table = tmp_path / "rows.csv"
    pd.DataFrame([{"source": s, "rewrite": f"Could you {s}", "style": "polite"} for s in SOURCES[:2]]).to_csv(
        table, index=False)
    for command, starts in (("score", "mean content"), ("autorate", "mean meaning")):
        capsys.readouterr()
        assert main([command, str(table), "--out", str(tmp_path / f"{command}.jsonl"), "--model", TINY]) == 0
        err = capsys.readouterr().err
        assert f"{RANDOM_WEIGHTS}: {starts} " in err, err
    kwargs = {"predictions": ["Could you send it?"], "sources": ["send it."], "styles": "polite", "model_id": TINY}
    for module in ("logprob_style", "llm_autorater"):
        result = evaluate.load(str(evaluate_module(module)), keep_in_memory=True).compute(**kwargs)
        assert result["warning"] == RANDOM_WEIGHTS and has_random_weights(result["signature"]), result


def test_the_preset_is_built_by_random_weights_and_no_library_module_imports_the_test_helpers():
    """``styleeval.testing`` holds what only the tests use; the ``tiny-random`` preset, built in production, comes from
    ``styleeval.random_weights`` (issue 48, item 4)."""
    import ast
    from pathlib import Path

    import styleeval

    package = Path(styleeval.__file__).parent
    importers: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in ("styleeval.testing", "styleeval.random_weights"):
                importers.setdefault(node.module, set()).add(path.relative_to(package).as_posix())
    assert importers == {"styleeval.random_weights": {"models.py"}}, importers
