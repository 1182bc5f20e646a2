"""The meta-evaluation's figures a paper can use (issue 40, item 9): a heatmap of the metrics that were computed,
readable and saying what it pools; no empty figure; PNG, PDF or SVG, linked from report.md; integer clusters."""

from __future__ import annotations

import itertools

import pytest

from styleeval.metaeval import run_metaeval, write_report

SOURCES = [f"the cat number {i} sat on the mat today" for i in range(6)]


def _rows(dataset: str) -> list[dict]:
    """A toy corpus of three systems' rewrites with human content ratings, no references (R-BLEU scores nothing)."""
    systems = (("A", lambda s: f"Could you {s}"), ("B", str.upper), ("C", str))
    return [{"id": f"{dataset}/{k}", "dataset": dataset, "task": "politeness", "target_style": "polite",
             "source_id": str(i), "source": s, "rewrite": f(s) if dataset == "toy" else f(s)[::-1],
             "reference": None, "system": name, "is_reference_rewrite": False,
             "content_mean": float((i + k) % 5 + 1), "style_mean": 1.0, "fluency_mean": None}
            for k, (i, s, name, f) in enumerate((i, s, name, f) for i, s in enumerate(SOURCES * 3)
                                                for name, f in systems)]


@pytest.fixture(scope="module")
def toy_result():
    """Two toy corpora; R-BLEU cannot be computed on either (no references)."""
    return run_metaeval(["toy", "yot"], ["s_bleu", "r_bleu", "s_ter", "s_chrf"], dimension="content",
                        loader=_rows, n_boot=20, allow_missing=True)


def test_the_heatmap_shows_the_computed_metrics_readably_and_says_what_it_pools(toy_result):
    """Before: cell numbers at 6 pt, wide empty margins, an empty row and column for R-BLEU, and nothing saying that
    the correlations pool the datasets' rows."""
    from styleeval.metaeval.plots import metric_heatmap_figure

    assert ("toy", "r_bleu") not in toy_result.scores and "r_bleu" in toy_result.metrics
    fig = metric_heatmap_figure(toy_result)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["S-BLEU", "S-TER (negated)", "S-chrF"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["S-BLEU", "S-TER (negated)", "S-chrF"]
    cells = [t for t in ax.texts]
    assert len(cells) == 9 and min(t.get_fontsize() for t in cells) >= 9
    assert min(t.get_fontsize() for t in ax.get_yticklabels()) >= 9
    title = " ".join(ax.get_title().split())
    assert "the rows of 2 datasets pooled: toy, yot" in title and "108 rows per pair" in title


def _white_margins(png) -> tuple[float, ...]:
    """Inches of white around what is drawn in a PNG written at 120 dpi: left, bottom, right, top."""
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(png)[..., :3]
    drawn = (pixels < 0.98).any(axis=2)
    rows, columns = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    height, width = drawn.shape
    return tuple(v / 120 for v in (columns[0], height - 1 - rows[-1], width - 1 - columns[-1], rows[0]))


def test_no_empty_figure_and_report_md_links_what_was_written(toy_result, tmp_path):
    """Without the test set in the run, no tasks figure (before: a PNG saying "no correlations to plot"); report.md
    links the figures written, in the format asked; another format or --no-plots leaves no figure of the first. The
    heatmap's file is cropped to what is drawn (before: up to 0.48 inch of white on a side)."""
    out = tmp_path / "out"
    write_report(toy_result, out)
    assert max(_white_margins(out / "metrics_heatmap.png")) < 0.08
    assert sorted(p.name for p in out.glob("*.png")) == ["datasets.png", "groups.png", "metrics_heatmap.png"]
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "![correlations per dataset](datasets.png)" in report and "tasks" not in report.split("## Figures")[1]
    assert "tasks.png" not in report
    write_report(toy_result, out, figure_format="svg")
    assert sorted(p.name for p in out.glob("*.*g")) == ["datasets.svg", "groups.svg", "metrics_heatmap.svg"]
    assert "](datasets.svg)" in (out / "report.md").read_text(encoding="utf-8")
    write_report(toy_result, out, plots=False)
    assert not list(out.glob("*.svg")) and "## Figures" not in (out / "report.md").read_text(encoding="utf-8")


def test_the_leaderboard_and_lai_figures_follow_the_format(toy_result, tmp_path):
    """leaderboard.pdf linked from leaderboard.md, its clusters written as integers in leaderboard.csv (were 2.0);
    Lai's figures 3 and 4 as SVG."""
    import pandas as pd

    from styleeval.metaeval.leaderboard import build_leaderboard, write_leaderboard

    board = build_leaderboard([toy_result], trials=10, n_boot=5)
    paths = write_leaderboard(board, tmp_path, figure_format="pdf")
    assert paths["figure"].name == "leaderboard.pdf" and paths["figure"].read_bytes().startswith(b"%PDF-")
    assert "[acc_eq per corpus" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    clusters = pd.read_csv(tmp_path / "leaderboard.csv", dtype=str, keep_default_na=False)["cluster"]
    assert clusters.str.fullmatch(r"\d*").all() and (clusters != "").any(), clusters.tolist()
    from styleeval.metaeval.plots import plot_lai_figures

    rows = pd.DataFrame([{"table": "figure 3", "metric": m, "subset": f"{end}-{n}", "level": "segment", "value": v}
                         for m, v in (("c-gyafc", 0.3), ("r_chrf", 0.2)) for end in ("top", "last") for n in (3, 5)]
                        + [{"table": "figure 4", "metric": m, "subset": "all", "level": level, "value": 0.5}
                           for m in ("bleu", "bleu-ref") for level in ("system", "segment")])
    paths = plot_lai_figures(rows, tmp_path, "svg")
    assert [p.name for p in paths] == ["lai_figure3.svg", "lai_figure4.svg"]
    assert all(p.read_bytes().startswith(b"<?xml") for p in paths)


def _ticks(fig) -> list[str]:
    """The x tick labels of a bar figure, each on one line."""
    return [" ".join(t.get_text().split()) for t in fig.axes[0].get_xticklabels()]


def test_a_column_on_fewer_rows_than_all_says_which(cut_result, whole_result):
    """With R-BLEU in the run the like rows of the test set's ALL are its rows with a reference (one task of three):
    the label says so and how many of how many (before: "ALL (n = 8)" and "Test set (n = 8)", as if the whole test
    set; the user's run: "Test set (n = 100)" for 100 of 500 rows, S-BLEU -0.59 there and -0.13 in report.md). The
    bars are the like-rows numbers; without a reference-based metric every column is on all its rows."""
    import matplotlib.pyplot as plt

    from styleeval.metaeval.plots import datasets_figure, tasks_figure

    tasks, datasets = tasks_figure(cut_result), datasets_figure(cut_result)
    assert _ticks(tasks) == ["ALL (sentiment, rows with a reference, n = 8 of 24)", "sentiment (n = 8)",
                             "catchy (n = 8)", "formality (n = 8)"]
    assert _ticks(datasets) == ["Test set (sentiment, rows with a reference, n = 8 of 24)",
                                "toy (rows with a reference, n = 16 of 24)"]
    assert "every metric on the same rows" in " ".join(tasks.axes[0].get_title().split())
    like = cut_result.shared_correlations.set_index(["dataset", "subset", "metric"])["spearman"]
    first_bar = tasks.axes[0].patches[0]  # S-BLEU's ALL bar: the like rows', not its own 24 rows'
    assert first_bar.get_height() == pytest.approx(like["style_gap_testset", "all", "s_bleu"])
    own = cut_result.correlations.set_index(["dataset", "subset", "metric"])["spearman"]
    assert own["style_gap_testset", "all", "s_bleu"] != pytest.approx(first_bar.get_height())
    assert _ticks(tasks_figure(whole_result))[0] == "ALL (n = 24)"
    assert _ticks(datasets_figure(whole_result)) == ["Test set (n = 24)", "toy (n = 24)"]
    plt.close("all")


def test_lai_figure_3_names_the_aspect(tmp_path):
    """lai_figure3 plots the style metrics against the human style ratings: its title says so (before: no title but
    "Top-N systems" / "Last-N systems")."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from styleeval.metaeval.plots import lai_figure3

    rows = pd.DataFrame([{"table": "figure 3", "metric": m, "dimension": "style", "subset": f"{end}-{n}",
                          "level": "segment", "value": v}
                         for m, v in (("c-gyafc", 0.3), ("r-pt16", 0.2)) for end in ("top", "last") for n in (3, 5)])
    fig = lai_figure3(rows)
    assert fig._suptitle is not None and "style" in fig._suptitle.get_text()
    assert "human style ratings" in " ".join(fig._suptitle.get_text().split())
    plt.close(fig)


@pytest.fixture(scope="module")
def real_result(data_dir):
    """The test set (six tasks, long names) and Lai's corpus with the metrics of the issue's figures (issue 47)."""
    return run_metaeval(["style_gap_testset", "lai_formality"], ["s_bleu", "s_chrf", "s_paper_bleu"],
                        dimension="content", data_dir=data_dir, n_boot=20)


def _boxes(texts, renderer) -> list:
    return [t.get_window_extent(renderer) for t in texts if t.get_text()]


@pytest.mark.parametrize("figure", ["tasks_figure", "datasets_figure"])
def test_titles_lie_inside_the_figure_and_tick_labels_apart(real_result, figure):
    """Issue 47: datasets.png's title ran past the right edge; tasks.png's task names ran together
    ("sentimentdetoxification"). Measured on the rendered text: the title inside the figure, no two x tick labels
    touching (1 pixel apart at least)."""
    import matplotlib.pyplot as plt

    from styleeval.metaeval import plots

    fig = getattr(plots, figure)(real_result)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    title, frame = ax.title.get_window_extent(renderer), fig.bbox
    assert frame.x0 <= title.x0 and title.x1 <= frame.x1 and title.y1 <= frame.y1, (title, frame)
    ticks = sorted(_boxes(ax.get_xticklabels(), renderer), key=lambda b: b.x0)
    assert len(ticks) == len(ax.get_xticks()) >= 2
    for left, right in itertools.pairwise(ticks):
        assert left.x1 + 1 <= right.x0, [t.get_text() for t in ax.get_xticklabels()]
    for box in ticks:
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    plt.close(fig)


def test_every_metric_has_a_colour_of_its_own():
    """Issue 47: R-BLEU and S-Paper-BLEU were two near-identical greens (40 apart in RGB). Every two metrics of the
    default run and the LLM metrics, and any two colours of the palette, at least 67 apart (0-255 RGB)."""
    import itertools

    import numpy as np
    from matplotlib.colors import to_rgb

    from styleeval.metaeval.plots import PALETTE, metric_colors
    from styleeval.metrics import DEFAULT_METRICS

    names = [*DEFAULT_METRICS, "logprob_content", "logprob_style", "autorater_meaning", "autorater_style", "s_meteor",
             "s_cosine"]
    colors = metric_colors(names)

    def distance(a, b) -> float:
        return float(np.linalg.norm((np.array(to_rgb(a)) - np.array(to_rgb(b))) * 255))

    assert min(distance(colors[a], colors[b]) for a, b in itertools.combinations(names, 2)) >= 67
    assert min(distance(a, b) for a, b in itertools.combinations(PALETTE, 2)) >= 67
    assert distance(colors["r_bleu"], colors["s_paper_bleu"]) > 100


def test_the_leaderboards_n_lies_off_the_column_titles(data_dir):
    """Issue 47: "n = 100 rows" (the panel's right title) overlapped the column's title (the dimension) in the first
    row (one dimension: a narrow figure). Every panel: its n and its title apart, measured on the rendered text."""
    import matplotlib.pyplot as plt

    from styleeval.metaeval.leaderboard import build_leaderboard
    from styleeval.metaeval.plots import leaderboard_figure

    result = run_metaeval(["style_gap_testset", "lai_formality"], ["s_bleu", "r_bleu", "s_paper_bleu"],
                          dimension="content", data_dir=data_dir, n_boot=0)
    fig = leaderboard_figure(build_leaderboard([result], trials=10, n_boot=0))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    n_label, title = fig.axes[0]._right_title, fig.axes[0].title  # set_title(loc="right") holds the panel's n
    assert n_label.get_text() == "n = 100 rows" and title.get_text() == "content"
    assert not n_label.get_window_extent(renderer).padded(1).overlaps(title.get_window_extent(renderer))
    plt.close(fig)


def test_lai_figures_name_the_metrics_as_reports_do():
    """Issue 47: lai_figure4's metrics were raw ids (``lai:bertscore-ref``, ``r_chrf``); Lai's released scores are named
    as their paper does, against the source S- and the reference R- as ours."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from styleeval.metaeval.plots import lai_figure3, lai_figure4

    rows = pd.DataFrame([{"table": "figure 4", "metric": m, "subset": "all", "level": level, "value": 0.5}
                         for m in ("lai:bertscore-ref", "lai:comet", "r_chrf", "s_bleu") for level in ("system", "segment")]
                        + [{"table": "figure 3", "metric": m, "dimension": "style", "subset": f"{end}-{n}",
                            "level": "segment", "value": 0.2} for m in ("lai:c-gyafc", "lai:r-pt16")
                           for end in ("top", "last") for n in (3, 5)])
    fig = lai_figure4(rows)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["R-BERTScore (Lai)", "S-COMET (Lai)", "R-chrF",
                                                                     "S-BLEU"]
    colours = [bar.get_facecolor() for bar in fig.axes[0].patches]  # still by the id: the reference's in orange
    assert colours[0] == colours[2] != colours[1] == colours[3]
    plt.close(fig)
    fig = lai_figure3(rows)
    assert [t.get_text() for t in fig.axes[1].get_legend().get_texts()] == ["C-GYAFC (Lai)", "R-PT16 (Lai)"]
    plt.close(fig)
