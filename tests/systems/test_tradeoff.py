"""The tradeoff figure a paper can use (issue 40, item 9): every system's name readable where it overlaps no other
name, no point, no error bar and no line (checked on the rendered pixels), plain tick labels, axes that say what they
show, and the same figure as PNG, PDF or SVG."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.text import Text

from styleeval.stats import TestSettings
from styleeval.systems import evaluate_systems
from styleeval.systems.report import tradeoff_figure


def assert_names_cover_nothing(fig) -> None:
    """Every name on the figure's axes sits on empty background: drawn without the names' text (their leader lines
    kept), the pixels under each name are all white; no two names touch (2 pixels apart at least); each name is
    inside the axes."""
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = {t.get_text(): Text.get_window_extent(t, renderer) for t in ax.texts}  # the name, not its leader line
    assert len(boxes) == len(ax.texts)
    inside = ax.get_window_extent(renderer)
    colours = {t: t.get_color() for t in ax.texts}
    for t in ax.texts:
        t.set_color((0, 0, 0, 0))  # the text disappears, its leader line stays
    fig.canvas.draw()
    pixels = np.asarray(fig.canvas.buffer_rgba())[..., :3]
    height = pixels.shape[0]
    for t, colour in colours.items():
        t.set_color(colour)
    names = list(boxes)
    for k, (name, box) in enumerate(boxes.items()):
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, name
        under = pixels[height - int(box.y1) + 1: height - int(box.y0) - 1, int(box.x0) + 1: int(box.x1) - 1]
        assert under.size and (under == 255).all(), f"{name} covers something drawn"
        for other in names[k + 1:]:
            assert not box.expanded(1, 1).padded(1).overlaps(boxes[other]), (name, other)


@pytest.fixture(scope="module")
def lai_report(data_dir):
    """The README's worked example: Lai et al.'s 9 systems, S-BLEU, S-chrF, R-chrF and the human ratings."""
    from styleeval.corpora import load_corpus

    rows = [{"source": r["source"], "rewrite": r["rewrite"], "style": r["target_style"], "system": r["system"],
             "source_id": r["source_id"], "reference": r["reference"], "human_content": r["content_mean"],
             "human_style": r["style_mean"]} for r in load_corpus("lai_formality", data_dir=data_dir)]
    return evaluate_systems(rows, ["s_bleu", "s_chrf", "r_chrf"], sort_by="human_content", progress=False)


def test_lai_names_cover_no_name_point_or_error_bar_and_the_axes_say_they_are_human(lai_report):
    """Before: "IBT NIU" ran together, YI and LUO sat on error bars, and nothing said that without LogProb the axes
    are the human ratings."""
    fig = tradeoff_figure(lai_report)
    ax = fig.axes[0]
    # the systems (the copy baseline has no human rating: not on human axes)
    assert sorted(t.get_text() for t in ax.texts) == sorted(lai_report.systems["system"].unique())
    assert ax.get_xlabel() == "content preservation: human content ratings (higher is better)"
    assert ax.get_title().splitlines()[-1] == "axes: the human ratings"  # issue 47: no tool talk in the title
    assert_names_cover_nothing(fig)
    from styleeval.systems.report import to_markdown

    note = ("The figure's axes are the human ratings: this run has no LogProb scores, which the figure shows by "
            "default (add `logprob_content` and `logprob_style` to the metrics to see them).")
    assert note in to_markdown(lai_report, figure="tradeoff.png").splitlines()
    assert "axes are" not in to_markdown(lai_report)  # no figure: nothing to say of its axes


def _crowded_report(scale: float = 1.0, offset: float = 0.0):
    """Systems whose points nearly coincide (NIU / HIGH / referBART, DualRL / StyTrans), error bars crossing them."""
    from styleeval.systems.comparison import compare_systems

    rng = np.random.default_rng(0)
    where = {"NIU": (0.50, 0.30), "HIGH": (0.501, 0.301), "referBART": (0.505, 0.298), "copy": (0.9, 0.05),
             "BART-large": (0.6, 0.25), "DualRL": (0.45, 0.35), "StyTrans": (0.452, 0.352), "DLS": (0.2, 0.6)}
    rows = [{"row": k * 40 + i, "system": name, "source_id": str(i),
             "logprob_content": c + rng.normal(0, 0.01), "s_ter": offset + scale * (-s + rng.normal(0, 0.01))}
            for k, (name, (c, s)) in enumerate(where.items()) for i in range(40)]
    return compare_systems(pd.DataFrame(rows), {"logprob_content": "lc|x", "s_ter": "st|x"},
                           {"logprob_content": True, "s_ter": False},
                           settings=TestSettings(n_boot=200, trials=100)), set(where)


def test_crowded_names_cover_nothing_and_the_axes_are_named():
    report, names = _crowded_report()
    fig = tradeoff_figure(report, style="s_ter")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "content preservation: LogProb content (higher is better)"
    assert ax.get_ylabel() == "style strength: S-TER (lower is better)"
    assert "no LogProb" not in ax.get_title()  # asked for: nothing to say
    assert {t.get_text() for t in ax.texts} == names
    assert_names_cover_nothing(fig)


def test_tick_labels_are_plain_numbers_without_an_offset():
    """Scores around 0.1 that differ by 1e-5 (LogProb style): before, the y axis read "1e-5" and an offset."""
    report, _ = _crowded_report(scale=1e-4, offset=-0.1)
    fig = tradeoff_figure(report, style="s_ter")
    fig.canvas.draw()
    for axis in (fig.axes[0].xaxis, fig.axes[0].yaxis):
        assert axis.get_offset_text().get_text() == ""
        labels = [t.get_text().replace("\u2212", "-") for t in axis.get_ticklabels() if t.get_text()]
        ticks = [v for v, t in zip(axis.get_ticklocs(), axis.get_ticklabels(), strict=True) if t.get_text()]
        assert labels and np.allclose([float(t) for t in labels], ticks, rtol=0, atol=1e-12), labels


@pytest.mark.parametrize("fmt, magic", [("pdf", b"%PDF-"), ("svg", b"<?xml")])
def test_evaluate_writes_its_figure_in_the_format_asked_and_report_md_links_it(tmp_path, fmt, magic):
    """``--figure-format pdf|svg``: tradeoff.pdf / tradeoff.svg (a vector file: PDF fonts embedded as TrueType, not
    Type 3), report.md links that file, and a rerun in another format leaves no figure of the first."""
    from styleeval.cli import main

    table = tmp_path / "in.csv"
    sources = [f"the cat number {i} sat on the mat today" for i in range(6)]
    pd.DataFrame([{"system": name, "source": s, "rewrite": r, "style": "formal", "human_content": float(i % 3),
                   "human_style": float((i + k) % 4)} for k, (name, f) in enumerate((("A", str.upper), ("B", str)))
                  for i, (s, r) in enumerate((s, f(s)) for s in sources)]).to_csv(table, index=False)
    out = tmp_path / "report"
    args = ["evaluate", str(table), "--metrics", "s_bleu", "--out", str(out), "--no-progress"]
    assert main(args) == 0 and (out / "tradeoff.png").is_file()
    assert "![Systems: content preservation vs style strength" in (out / "report.md").read_text(encoding="utf-8")
    assert main([*args, "--figure-format", fmt]) == 0
    data = (out / f"tradeoff.{fmt}").read_bytes()
    assert data.startswith(magic) and not (out / "tradeoff.png").exists()
    report = (out / "report.md").read_text(encoding="utf-8")
    assert f"](tradeoff.{fmt})" in report and "tradeoff.png" not in report
    if fmt == "pdf":
        assert b"/FontFile2" in data and b"/Type3" not in data  # TrueType embedded
        assert "[Systems: content" in report and "![" not in report  # a link: viewers do not show a PDF inline
    else:
        assert b"<svg" in data and b"<image" not in data  # drawn, not a picture inside the file
    assert main([*args, "--no-plots"]) == 0 and not list(out.glob("tradeoff.*"))
    assert "tradeoff" not in (out / "report.md").read_text(encoding="utf-8")


def test_without_a_content_and_a_style_metric_no_figure_is_said_not_silent(tmp_path, capsys):
    """report.plot("tradeoff.png") returned None and wrote nothing, and evaluate wrote no tradeoff.png without a
    word, where the README promised one: now plot() says why and evaluate notes it in report.md and on stderr."""
    from styleeval.cli import main
    from styleeval.errors import UserError

    sources = [f"the cat number {i} sat on the mat today" for i in range(4)]
    rows = [{"system": name, "source": s, "rewrite": f(s), "style": "formal"} for name, f in (("A", str.upper),
                                                                                            ("B", str)) for s in sources]
    report = evaluate_systems(rows, ["s_bleu", "s_chrf"], settings=TestSettings(n_boot=10, trials=10),
                              progress=False)
    with pytest.raises(UserError, match=r"no tradeoff figure: it plots a content metric .* this report has s_bleu, "
                                        r"s_chrf; add one of each"):
        report.plot(tmp_path / "tradeoff.png")
    assert not (tmp_path / "tradeoff.png").exists()
    table = tmp_path / "in.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    out = tmp_path / "report"
    capsys.readouterr()
    assert main(["evaluate", str(table), "--metrics", "s_bleu,s_chrf", "--out", str(out), "--no-progress"]) == 0
    assert "note: no tradeoff.png: it plots a content metric" in capsys.readouterr().err
    assert "No tradeoff figure: it plots a content metric" in (out / "report.md").read_text(encoding="utf-8")
    assert not list(out.glob("tradeoff.*"))
