"""The metrics leaderboard: a constructed case with three clusters in order, and `metaeval --leaderboard` files."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from styleeval.metaeval import run_metaeval
from styleeval.metaeval.leaderboard import COLUMNS, build_leaderboard


def test_small_noise_large_noise_and_random_form_three_clusters(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    human = rng.integers(1, 6, size=n).astype(float)  # 1-5 ratings: many ties
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"source {i}", "rewrite": f"rewrite {i}", "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(h), "style_mean": 1.0, "fluency_mean": None}
            for i, h in enumerate(human)]
    scores = {"small": human + rng.normal(scale=0.3, size=n), "large": human + rng.normal(scale=2.0, size=n),
              "random": rng.normal(size=n)}
    path = tmp_path / "scores.csv"
    path.write_text("id," + ",".join(scores) + "\n" + "".join(
        f"toy/{i}," + ",".join(str(v[i]) for v in scores.values()) + "\n" for i in range(n)), encoding="utf-8")
    specs = [f"precomputed:file={path}:column={c}:as={c}" for c in ("random", "large", "small")]
    result = run_metaeval(["toy"], specs, dimension="content", loader=lambda name: rows, n_boot=0)
    board = build_leaderboard([result], trials=200)
    assert list(board.columns) == COLUMNS
    for statistic in ("acc_eq", "spearman"):
        part = board[board.statistic == statistic].sort_values("rank")
        assert part.metric.tolist() == ["small", "large", "random"]
        assert part.cluster.tolist() == [1, 2, 3]
        assert (part.n == n).all() and (part.corpus == "toy").all()


def test_cli_leaderboard_on_the_mirror(tmp_path, capsys):
    from styleeval.cli import main

    out = tmp_path / "lb"
    assert main(["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleu,s_chrf,r_chrf", "--out", str(out),
                 "--leaderboard", "--no-progress", "--bootstrap", "0", "--no-cache", "--leaderboard-trials", "50",
                 "--leaderboard-bootstrap", "20"]) == 0
    board = pd.read_csv(out / "leaderboard.csv")
    assert set(board.dimension) == {"content", "style", "fluency"}  # Lai rates all three
    assert {"acc_eq", "spearman", "system_pairwise_accuracy", "soft_pairwise_accuracy"} <= set(board.statistic)
    assert "## Lai: content" in (out / "leaderboard.md").read_text()
    # the figure: a corpus x dimension grid, named as in leaderboard.md, a legend for the cluster colours, page width
    png = (out / "leaderboard.png").read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width <= 1300 and height <= width, (width, height)
    from styleeval.metaeval.plots import leaderboard_figure

    fig = leaderboard_figure(board)
    grid = [ax for ax in fig.axes if ax.get_subplotspec() is not None]
    assert len(grid) == 3 and [ax.get_title() for ax in grid] == ["content", "style", "fluency"]
    assert grid[0].get_ylabel() == "Lai" and grid[0].get_xlabel() == "acc_eq (95% CI)"
    assert {t.get_text() for t in grid[0].get_yticklabels()} == {"S-BLEU", "S-chrF", "R-chrF"}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    clusters = sorted({int(c) for c in board[board.statistic == "acc_eq"].cluster})
    assert legend == [f"cluster {c}" + (" (best)" if c == 1 else "") for c in clusters]


def _toy_run(path, human: np.ndarray, scores: dict[str, np.ndarray]):
    """A content run on a one-system toy corpus rated ``human``, the metrics' ``scores`` read from ``path``."""
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"source {i}", "rewrite": f"rewrite {i}", "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(h), "style_mean": 1.0, "fluency_mean": None}
            for i, h in enumerate(human)]
    path.write_text("id," + ",".join(scores) + "\n" + "".join(
        f"toy/{i}," + ",".join(str(v[i]) for v in scores.values()) + "\n" for i in range(len(human))),
        encoding="utf-8")
    return run_metaeval(["toy"], [f"precomputed:file={path}:column={c}:as={c}" for c in scores],
                        dimension="content", loader=lambda name: rows, n_boot=0)


def test_an_undefined_statistic_is_listed_last_and_never_clustered(tmp_path):
    """A constant metric has no Spearman: its NaN must not reorder the column (a NaN sort key does), nor enter the
    clusters; it is listed last as "–"."""
    from styleeval.metaeval.leaderboard import leaderboard_markdown

    rng = np.random.default_rng(1)
    n = 120
    human = rng.integers(1, 6, size=n).astype(float)
    scores = {"random": rng.normal(size=n), "constant": np.ones(n), "small": human + rng.normal(scale=0.3, size=n),
              "large": human + rng.normal(scale=2.0, size=n)}
    result = _toy_run(tmp_path / "scores.csv", human, scores)
    board = build_leaderboard([result], trials=50, n_boot=30)
    rho = board[board.statistic == "spearman"].reset_index(drop=True)
    assert rho.metric.tolist() == ["small", "large", "random", "constant"]
    assert rho["rank"].tolist()[:3] == [1, 2, 3] and np.isnan(rho["rank"].iloc[3])
    assert np.isnan(rho.cluster.iloc[3]) and np.isnan(rho.value.iloc[3])
    acc = board[board.statistic == "acc_eq"]
    assert acc.ci_low.notna().all() and (acc.ci_low <= acc.value).all() and (acc.value <= acc.ci_high).all()
    assert "| constant | " in leaderboard_markdown(board) and "– |" in leaderboard_markdown(board)


def test_cli_leaderboard_computes_only_the_requested_dimensions(tmp_path, capsys):
    from styleeval.cli import main

    out = tmp_path / "lb"
    assert main(["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleu,s_chrf", "--out", str(out),
                 "--leaderboard", "--leaderboard-dimensions", "style", "--no-progress", "--bootstrap", "0",
                 "--no-cache", "--leaderboard-trials", "20", "--leaderboard-bootstrap", "0"]) == 0
    assert set(pd.read_csv(out / "leaderboard.csv").dimension) == {"style"}
    assert main(["metaeval", "--datasets", "lai_formality", "--metrics", "s_bleu", "--out", str(out),
                 "--leaderboard", "--leaderboard-dimensions", "tone"]) == 2
    assert "unknown dimension(s) tone" in capsys.readouterr().err


def test_cached_tables_equal_computed_ones_and_follow_their_inputs(tmp_path):
    rng = np.random.default_rng(2)
    n = 60
    human = rng.integers(1, 6, size=n).astype(float)

    def run(noise: float):
        scores = {"good": human + rng.normal(scale=noise, size=n), "bad": rng.normal(size=n)}
        return _toy_run(tmp_path / f"scores{noise}.csv", human, scores)

    first = run(0.5)
    computed = build_leaderboard([first], trials=30, n_boot=20)
    cache = tmp_path / "lb"
    assert build_leaderboard([first], trials=30, n_boot=20, cache_dir=cache).equals(computed)
    tables = sorted(cache.iterdir())
    assert tables and build_leaderboard([first], trials=30, n_boot=20, cache_dir=cache).equals(computed)
    assert sorted(cache.iterdir()) == tables  # read back, nothing new
    other = build_leaderboard([run(0.6)], trials=30, n_boot=20, cache_dir=cache)  # other scores: other keys
    assert len(list(cache.iterdir())) == 2 * len(tables)
    assert not other["value"].equals(computed["value"])
    assert build_leaderboard([first], trials=31, n_boot=20, cache_dir=cache).shape == computed.shape
    assert len(list(cache.iterdir())) == 3 * len(tables)  # other settings: other keys


def test_every_metric_is_ranked_on_the_rows_all_of_them_score(data_dir):
    """On the test set R-BLEU scores the 100 rows with a reference, S-BLEU and S-TER all 500: every value, CI, rank
    and cluster is on the 100 rows (S-BLEU -0.592 there, below R-BLEU's -0.468; before, S-BLEU's -0.132 on its own
    500 rows was ranked above it), each metric's own-rows value kept apart and named, n in the table and the figure;
    TER's negation said. tasks.png and datasets.png compare like rows too, per column."""
    from scipy.stats import spearmanr

    from styleeval.metaeval.leaderboard import _corpus, _interval, leaderboard_markdown
    from styleeval.metaeval.plots import leaderboard_figure
    from styleeval.metaeval.statistics import STATISTICS

    result = run_metaeval(["style_gap_testset"], ["s_bleu", "r_bleu", "s_ter"], dimension="content",
                          data_dir=data_dir, n_boot=0)
    board = build_leaderboard([result], trials=20, n_boot=10)
    rho = board[board.statistic == "spearman"].set_index("metric")
    human = result.human["style_gap_testset"]
    bleu = result.scores["style_gap_testset", "s_bleu"]
    shared = np.flatnonzero(np.isfinite(result.scores["style_gap_testset", "r_bleu"]) & np.isfinite(human))
    assert len(shared) == 100 and (rho.n == 100).all() and (board.n == 100).all()
    assert rho.loc["s_bleu", "value"] == pytest.approx(spearmanr(human[shared], bleu[shared])[0], abs=1e-12)
    assert round(rho.loc["s_bleu", "value"], 3) == -0.592 and round(rho.loc["r_bleu", "value"], 3) == -0.468
    assert rho.loc["r_bleu", "rank"] < rho.loc["s_bleu", "rank"]
    assert round(rho.loc["s_bleu", "value_own"], 3) == -0.132 and rho.loc["s_bleu", "n_own"] == 500
    assert rho.loc["r_bleu", "value_own"] == rho.loc["r_bleu", "value"] and rho.loc["r_bleu", "n_own"] == 100
    corpus = _corpus(result, "style_gap_testset")
    fn = STATISTICS["spearman"].compute
    assert (rho.loc["s_bleu", "ci_low"], rho.loc["s_bleu", "ci_high"]) == _interval(corpus, fn, human, bleu, shared,
                                                                                    10, 0)
    assert rho.loc["s_ter", "negated"] and not rho.loc["s_bleu", "negated"]
    text = leaderboard_markdown(board)
    assert "Every metric on the same 100 rows" in text and "| S-TER (negated) | " in text
    assert "Lower is better for S-TER: ranked by the negated scores" in text
    own = text[text.index("Each metric on its own rows"):]
    assert "| S-BLEU | 0.390 | -0.132 | 500 |" in own and "| R-BLEU | 0.303 | -0.468 | 100 |" in own
    fig = leaderboard_figure(board)
    assert [ax.get_title(loc="right") for ax in fig.axes if ax.get_subplotspec() is not None] == ["n = 100 rows"]
    # the per-task and per-dataset plots: per column, the metrics that score it on the rows all of them score
    like = result.shared_correlations.set_index(["subset", "metric"])
    assert like.loc[("all", "s_bleu"), "n"] == 100
    assert like.loc[("all", "s_bleu"), "spearman"] == pytest.approx(rho.loc["s_bleu", "value"], abs=1e-12)
    assert like.loc[("catchy", "s_bleu"), "n"] == 100 and ("catchy", "r_bleu") not in like.index  # no reference
    assert like.loc[("sentiment", "s_bleu"), "n"] == like.loc[("sentiment", "r_bleu"), "n"] == 50
    own_rows = result.correlations.set_index(["subset", "metric"])
    assert own_rows.loc[("all", "s_bleu"), "n"] == 500  # the paper's tables: each metric on its own rows, n shown


def test_leaderboard_md_escapes_metric_names_in_every_line(tmp_path):
    """Before: the "Lower is better for ..." line (and the random-weights warning) wrote metric names raw, an
    ``<img ... onerror=...>`` label as HTML, while the tables escaped it."""
    from styleeval.escaping import md_cell
    from styleeval.metaeval.leaderboard import leaderboard_markdown

    rng = np.random.default_rng(0)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": " ".join(rng.choice(words, 6)), "rewrite": " ".join(rng.choice(words, 6)), "reference": None,
             "system": "s", "is_reference_rewrite": False, "content_mean": float(rng.integers(1, 6)),
             "style_mean": 1.0, "fluency_mean": None} for i in range(40)]
    evil = "<img src=x onerror=alert(1)>"
    result = run_metaeval(["toy"], [f"s_ter:as={evil}", "s_chrf"], dimension="content", loader=lambda name: rows,
                          n_boot=0)
    board = build_leaderboard([result], trials=50)
    assert board.loc[board.metric == evil, "negated"].all()  # TER: lower is better
    text = leaderboard_markdown(board)
    assert "<img" not in text
    assert f"Lower is better for {md_cell(evil)}: ranked by the negated scores" in text
    board.loc[board.metric == evil, "signature"] = "logprob|model:tiny-random@local-218570e6b3ba|variant:default"
    warned = leaderboard_markdown(board)  # the random-weights warning names the metric too
    assert "<img" not in warned and f"> **random weights: not for numbers**: {md_cell(evil)} was computed" in warned


def _two_dimension_rows(n: int, rng: np.random.Generator, path) -> tuple[list[dict], list[str]]:
    """A toy corpus rated for content and style (no fluency), with a metric that follows each dimension."""
    content, style = (rng.integers(1, 6, size=n).astype(float) for _ in range(2))
    rows = [{"id": f"toy/{i}", "dataset": "toy", "task": "formality", "target_style": "formal", "source_id": str(i),
             "source": f"source {i}", "rewrite": f"rewrite {i}", "reference": None, "system": "s",
             "is_reference_rewrite": False, "content_mean": float(c), "style_mean": float(s), "fluency_mean": None}
            for i, (c, s) in enumerate(zip(content, style, strict=True))]
    scores = {"meaning": content + rng.normal(scale=0.3, size=n), "styled": style + rng.normal(scale=0.3, size=n)}
    path.write_text("id," + ",".join(scores) + "\n" + "".join(
        f"toy/{i}," + ",".join(str(v[i]) for v in scores.values()) + "\n" for i in range(n)), encoding="utf-8")
    return rows, [f"precomputed:file={path}:column={c}:as={c}" for c in scores]


def test_the_leaderboard_across_dimensions_reruns_the_others_and_notes_what_it_cannot_do(tmp_path):
    import functools

    from styleeval.errors import UserError
    from styleeval.metaeval.leaderboard import leaderboard_across_dimensions, leaderboard_dimensions

    rows, specs = _two_dimension_rows(80, np.random.default_rng(3), tmp_path / "scores.csv")
    run_on = functools.partial(run_metaeval, ["toy"], specs, loader=lambda name: rows, n_boot=0)
    first = run_on(dimension="content")
    asked: list[str] = []

    def rerun(**options):
        asked.append(options["dimension"])
        return run_on(**options)

    notes: list[str] = []
    board = leaderboard_across_dimensions(first, rerun, trials=5, n_boot=0, note=notes.append)
    assert asked == ["style", "fluency"]  # the run's own dimension is not run again
    assert board.equals(build_leaderboard([first, run_on(dimension="style")], trials=5, n_boot=0))
    assert sorted(set(board.dimension)) == ["content", "style"]
    acc = board[board.statistic == "acc_eq"].set_index(["dimension", "rank"])["metric"]
    assert (acc["content", 1], acc["style", 1]) == ("meaning", "styled")  # each dimension's own run
    assert len(notes) == 2 and notes[0].startswith("leaderboard: no fluency ratings (")
    assert notes[1] == ("leaderboard: with 5 permutations no p-value is below 0.167, above alpha = 0.05: no metric "
                        "can be separated from another (every metric in cluster 1); use more trials")
    asked.clear()
    only = leaderboard_across_dimensions(first, rerun, ["style"], trials=5, n_boot=0)
    assert asked == ["style"] and only.equals(board[board.dimension == "style"].reset_index(drop=True))
    assert leaderboard_dimensions(["fluency", "style", "content"], "style") == ["style", "fluency", "content"]
    assert leaderboard_dimensions(None, "style") == ["content", "style", "fluency"]
    for chosen, unknown in ((["tone", "style"], "tone"), ([], "(none)")):
        with pytest.raises(UserError) as caught:
            leaderboard_across_dimensions(first, run_on, chosen)
        assert str(caught.value) == f"dimensions: unknown dimension(s) {unknown}; choose from content, style, fluency"
