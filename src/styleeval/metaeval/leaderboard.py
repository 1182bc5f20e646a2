"""A metrics leaderboard at the WMT standard: for every corpus and human dimension of a run, every metric's value of
every registered statistic that applies to the corpus (:mod:`styleeval.metaeval.statistics`: acc_eq, Spearman,
system-level pairwise accuracy, soft pairwise accuracy); metrics ranked per statistic and clustered by WMT's rule
(walking down the ranking, a metric opens a new cluster when any metric of the current cluster is significantly
better: PERM-BOTH, one-sided p <= alpha). ``--scores`` files enter like any metric.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from styleeval import progress as shown
from styleeval._version import __version__
from styleeval.atomic import atomic_write
from styleeval.errors import UserError, current_interface
from styleeval.escaping import md_cell, spreadsheet_safe
from styleeval.figures import FIGURE_FORMATS, figure_link, save_figure
from styleeval.labels import (
    RANDOM_WEIGHTS,
    dataset_label,
    metric_label,
    random_weight_metrics,
    random_weights_warning,
    signed_label,
    with_warning,
)
from styleeval.metaeval.data import DIMENSIONS
from styleeval.metaeval.plots import leaderboard_figure
from styleeval.metaeval.runner import MetaevalResult, shared_rows
from styleeval.metaeval.statistics import STATISTICS, Corpus, LeaderboardStatistic
from styleeval.stats import check_settings
from styleeval.stats.clusters import significance_clusters
from styleeval.stats.pairwise import perm_both
from styleeval.stats.resampling import percentile_interval

COLUMNS = ["corpus", "dimension", "statistic", "metric", "value", "ci_low", "ci_high", "rank", "cluster", "n",
           "value_own", "n_own", "negated", "signature"]
"""``value``, its CI, rank and cluster: every metric of a (corpus, dimension) table on the same ``n`` rows, those
every metric and the humans rate (:func:`~styleeval.metaeval.runner.shared_rows`); ``value_own`` / ``n_own``: the
metric on all the rows it scores (not comparable across metrics where ``n_own`` differs from ``n``; not ranked);
``negated``: a lower-is-better metric, ranked by its negated scores."""


def _corpus(result: MetaevalResult, dataset: str) -> Corpus:
    return Corpus(dataset, result.dataset_kinds.get(dataset, ""),
                  np.asarray(result.groups.get(dataset, []), dtype=object),
                  np.asarray(result.systems.get(dataset, []), dtype=object))


def build_leaderboard(results: Sequence[MetaevalResult], trials: int = 200, seed: int = 0,
                      alpha: float = 0.05, n_boot: int = 200, progress: bool | None = None,
                      cache_dir: str | Path | None = None) -> pd.DataFrame:
    """The leaderboard of one or more runs (one per human dimension) as a DataFrame with :data:`COLUMNS`.

    Per corpus, dimension and statistic: every metric on the same rows (those that every metric scoring the corpus and
    the humans rate), ranked by value (NaN values last, rank and cluster empty: they are never clustered),
    clustered by WMT's rule on PERM-BOTH p-values (``trials`` permutations, p <= ``alpha``), with a percentile
    bootstrap CI of ``n_boot`` resamples (sources where the corpus has several rows per source, else rows; the statistic recomputed in full on each, acc_eq's epsilon chosen again). ``n_boot=0``: no CIs.
    ``progress``: a bar over the (corpus, dimension, statistic) tables (``None``: where stderr is a terminal, else
    one line per table done: :func:`styleeval.progress.steps`). ``cache_dir``: each table is kept there
    under a hash of everything it is computed from (the statistic and its code version, the settings, the metrics'
    signatures and scores, the ratings, the corpus's sources and systems), so a rerun on the same scores reads it
    back instead of recomputing its permutations and resamples; any change of input is another key."""
    check_settings(alpha=alpha, trials=trials, n_boot=n_boot, seed=seed)
    tasks = []
    for result in results:
        for dataset in result.dataset_kinds:
            human = result.human.get(dataset)
            names = [m for m in result.metrics if (dataset, m) in result.scores]
            if human is None or not names:
                continue
            corpus = _corpus(result, dataset)
            tasks += [(result, dataset, corpus, statistic, human, names) for statistic in STATISTICS.values()
                      if statistic.applies(corpus)]
    rows = []
    for result, dataset, corpus, statistic, human, names in shown.steps(
            tasks, desc="leaderboard", unit="table", progress=progress,
            name=lambda task: f"{task[1]}, {task[0].dimension}, {task[3].name}"):
        key = _table_key(result, dataset, corpus, statistic, human, names, (trials, seed, alpha, n_boot))
        path = Path(cache_dir) / f"{key}.json" if cache_dir is not None else None
        table = _read_table(path)
        if table is None:
            table = _statistic_rows(result, dataset, corpus, statistic, human, names, trials, seed, alpha, n_boot)
            if path is not None:
                atomic_write(path, lambda f, table=table: json.dump(table, f))
        rows += table
    return pd.DataFrame(rows, columns=COLUMNS)


def leaderboard_across_dimensions(first: MetaevalResult, rerun: Callable[..., MetaevalResult],
                                  dimensions: Sequence[str] | None = None, *, trials: int = 200, seed: int = 0,
                                  n_boot: int = 200, progress: bool | None = None,
                                  cache_dir: str | Path | None = None,
                                  note: Callable[[str], None] | None = None) -> pd.DataFrame:
    """The leaderboard of a run's corpora on every human dimension they rate (``metaeval --leaderboard``).

    ``first`` is the run (one dimension); ``rerun(dimension=...)`` runs the same meta-evaluation on another dimension
    (``run_metaeval`` with the run's other arguments, e.g. a ``functools.partial``; called with ``allow_missing=True``
    and no log). ``dimensions``: only these (:func:`leaderboard_dimensions`; ``None``: every one of
    :data:`~styleeval.metaeval.data.DIMENSIONS`); a dimension that no corpus of the run rates (``rerun`` raises a
    ``UserError``) is left out with a note, as is said when ``trials`` permutations cannot give a p-value at or below
    alpha = 0.05 (every metric in cluster 1). Then :func:`build_leaderboard` of the runs with ``trials``, ``seed``,
    ``n_boot``, ``progress`` and ``cache_dir``. ``note``: a callback for the notes (``"leaderboard: ..."``)."""
    say = note or (lambda message: None)
    chosen = leaderboard_dimensions(dimensions, first.dimension)
    results = [first] if first.dimension in chosen else []
    for dimension in chosen:
        if dimension == first.dimension:
            continue
        try:
            results.append(rerun(dimension=dimension, allow_missing=True, log=lambda msg: None))
        except UserError as err:  # no corpus of the run rates this dimension
            say(f"leaderboard: no {dimension} ratings ({err})")
    floor = 1 / (trials + 1)  # PERM-BOTH's smallest p
    if floor > 0.05:
        option = "--leaderboard-trials" if current_interface() == "cli" else "trials"
        say(f"leaderboard: with {trials} permutations no p-value is below {floor:.3g}, above alpha = 0.05: no metric "
            f"can be separated from another (every metric in cluster 1); use more {option}")
    return build_leaderboard(results, trials=trials, seed=seed, n_boot=n_boot, progress=progress,
                             cache_dir=cache_dir)


def leaderboard_dimensions(chosen: Sequence[str] | None, first: str) -> list[str]:
    """The human dimensions of a leaderboard: every one of :data:`~styleeval.metaeval.data.DIMENSIONS` (``chosen``
    ``None``), or those ``chosen``, the run's own dimension ``first`` first. An unknown or no dimension is a
    ``UserError`` naming the option (``--leaderboard-dimensions`` on the command line)."""
    if chosen is None:
        return list(DIMENSIONS)
    unknown = [d for d in chosen if d not in DIMENSIONS]
    if unknown or not chosen:
        cli = current_interface() == "cli"
        raise UserError(f"{'--leaderboard-dimensions' if cli else 'dimensions'}: unknown dimension(s) "
                        f"{', '.join(unknown) or '(none)'}; choose from {', '.join(DIMENSIONS)}{' or all' if cli else ''}")
    return sorted(chosen, key=lambda d: d != first)


TABLE_VERSION = 2
"""Part of every leaderboard table's cache key: raise it when a statistic's code changes its numbers."""


def _table_key(result: MetaevalResult, dataset: str, corpus: Corpus, statistic: LeaderboardStatistic,
               human: np.ndarray, names: list[str], settings: tuple) -> str:
    digest = hashlib.sha256(json.dumps([TABLE_VERSION, __version__, statistic.name, dataset, result.dimension,
                                        corpus.kind, list(settings), names,
                                        [result.signatures.get(n, "") for n in names]]).encode())
    for array in (human, corpus.sources, corpus.systems, *(result.scores[dataset, n] for n in names)):
        data = np.asarray(array)
        digest.update(data.astype(str).tobytes() if data.dtype == object else data.tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:24]


def _read_table(path: Path | None) -> list[dict] | None:
    """A cached table, or ``None`` (absent or unreadable: recomputed)."""
    if path is None:
        return None
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return table if isinstance(table, list) else None


def _statistic_rows(result: MetaevalResult, dataset: str, corpus: Corpus, statistic: LeaderboardStatistic,
                    human: np.ndarray, names: list[str], trials: int, seed: int, alpha: float,
                    n_boot: int) -> list[dict]:
    fn = statistic.compute
    scores = {name: result.scores[dataset, name] for name in names}
    rows, names = shared_rows(human, scores, np.arange(len(human)))
    values, own = {}, {}
    for name in names:
        values[name] = fn(corpus, human[rows], scores[name][rows], rows) if len(rows) >= 3 else math.nan
        mine = np.flatnonzero(np.isfinite(human) & np.isfinite(scores[name]))
        own[name] = (values[name] if len(mine) == len(rows) else
                     fn(corpus, human[mine], scores[name][mine], mine) if len(mine) >= 3 else math.nan, len(mine))
    finite = [n for n in values if math.isfinite(values[n])]
    ranked = sorted(finite, key=lambda n: -values[n])  # NaN never enters a sort key or a cluster
    pvalues: dict[tuple[str, str], float] = {}

    def better(member: str, item: str) -> bool:
        if (member, item) not in pvalues:
            pvalues[member, item] = perm_both(lambda hh, mm: fn(corpus, hh, mm, rows), human[rows],
                                              scores[member][rows], scores[item][rows], trials=trials, seed=seed)
        return pvalues[member, item] <= alpha

    clusters = significance_clusters(ranked, better) if statistic.clustered else {}
    out = []
    for rank, name in enumerate([*ranked, *[n for n in values if n not in finite]], start=1):
        low, high = (_interval(corpus, fn, human, scores[name], rows, n_boot, seed)
                     if statistic.interval and name in finite else (math.nan, math.nan))
        out.append({"corpus": dataset, "dimension": result.dimension, "statistic": statistic.name, "metric": name,
                    "value": values[name], "ci_low": low, "ci_high": high,
                    "rank": rank if name in finite else math.nan, "cluster": clusters.get(name, math.nan),
                    "n": len(rows), "value_own": own[name][0], "n_own": own[name][1],
                    "negated": name in result.negated, "signature": result.signatures.get(name, "")})
    return out


def _interval(corpus: Corpus, fn, human: np.ndarray, metric: np.ndarray, rows: np.ndarray, n_boot: int,
              seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of ``fn``: sources (with their rows) resampled where a source has several rows, else
    rows; a source drawn twice is two groups (relabelled), so grouped statistics see independent draws."""
    if n_boot <= 0 or len(rows) < 3:
        return math.nan, math.nan
    sources = corpus.sources[rows] if len(corpus.sources) else np.arange(len(rows))
    by_source = corpus.grouped or corpus.has_systems
    units = pd.Series(np.arange(len(rows))).groupby(pd.Series(sources).astype(str)).indices if by_source else \
        {i: np.array([i]) for i in range(len(rows))}
    blocks = list(units.values())
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(n_boot):
        draw = rng.integers(0, len(blocks), len(blocks))
        pick = np.concatenate([blocks[k] for k in draw])
        labels = np.concatenate([np.full(len(blocks[k]), j) for j, k in enumerate(draw)]).astype(object)
        systems = corpus.systems[rows][pick] if len(corpus.systems) else np.array([], dtype=object)
        sample = Corpus(corpus.name, corpus.kind, labels, systems)
        value = fn(sample, human[rows][pick], metric[rows][pick], np.arange(len(pick)))
        if math.isfinite(value):
            values.append(value)
    if not values:
        return math.nan, math.nan
    return percentile_interval(np.asarray(values))


def board_random_weights(board: pd.DataFrame) -> list[str]:
    """The leaderboard's metrics computed with random weights (their signatures say so)."""
    return random_weight_metrics(dict(zip(board["metric"], board["signature"].fillna(""), strict=True)))


def leaderboard_markdown(board: pd.DataFrame) -> str:
    """One table per corpus and dimension: metrics as rows, statistics as columns ("value [CI] (cluster)"; "–" where
    a statistic is undefined, listed last), every metric on the same ``n`` rows; then, where a metric scores more
    rows than those, each metric's value on its own rows (not ranked)."""
    used = list(dict.fromkeys(board["statistic"]))
    warning = random_weights_warning(board_random_weights(board))
    negated = [metric_label(m) for m in dict.fromkeys(board.loc[board["negated"].astype(bool), "metric"])]
    out = ["# Metrics leaderboard", "",
           *([f"> **{RANDOM_WEIGHTS}**: {md_cell(warning.removeprefix(RANDOM_WEIGHTS + ': '))} (marked [random weights]); "
              "they test the pipeline, their values mean nothing.", ""] if warning else []),
           "Each cell: value [95% bootstrap CI] (cluster). In each table every metric is computed on the same rows: "
           "those that every metric of the corpus and the humans rate (`n`); where a metric scores more rows (a "
           "reference-free metric beside a reference-based one), its value on all its own rows follows in a second "
           "table, not ranked and not comparable across metrics with another n. Clusters per statistic, WMT's "
           "rule: walking down the ranking, a metric opens a new cluster when any metric of the current cluster is "
           "significantly better (PERM-BOTH, one-sided p <= 0.05); a metric is never significantly worse than one "
           "of its own cluster, but it need not be indistinguishable from every metric of the next. \"–\": "
           "undefined (e.g. a constant metric), listed last and never clustered. Definitions: docs/metaeval.md.",
           *(["", f"Lower is better for {md_cell(', '.join(negated))}: ranked by the negated scores (higher = better), "
               "labelled (negated)."] if negated else []),
           "", *[f"- {s}: {STATISTICS[s].description}" for s in used if s in STATISTICS], ""]

    def cell(r) -> str:
        if not math.isfinite(r.value):
            return "–"
        cluster = f" ({int(r.cluster)})" if math.isfinite(r.cluster) else ""
        ci = f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if math.isfinite(r.ci_low) else ""
        return f"{r.value:.3f}{ci}{cluster}"

    for (corpus, dimension), part in board.groupby(["corpus", "dimension"], sort=False):
        stats = list(dict.fromkeys(part["statistic"]))
        first = part[part["statistic"] == stats[0]].sort_values("rank")
        by = {(r.statistic, r.metric): r for r in part.itertuples()}
        n = int(first["n"].max())
        out += [f"## {dataset_label(corpus)}: {dimension}", "",
                f"Every metric on the same {n} rows (rated, and scored by every metric).", "",
                "| metric | " + " | ".join(stats) + " | n |", "|" + "---|" * (len(stats) + 2)]
        labels = {r.metric: md_cell(signed_label(str(r.metric), r.signature, bool(r.negated)))
                  for r in first.itertuples()}
        for r in first.itertuples():
            cells = [cell(by[s, r.metric]) if (s, r.metric) in by else "–" for s in stats]
            out.append(f"| {labels[r.metric]} | " + " | ".join(cells) + f" | {int(r.n)} |")
        out.append("")
        if (first["n_own"] != first["n"]).any():
            out += ["Each metric on its own rows (all the rows it scores; not ranked, not comparable across "
                    "different n):", "",
                    "| metric | " + " | ".join(stats) + " | own n |", "|" + "---|" * (len(stats) + 2)]
            for r in first.itertuples():
                cells = [f"{by[s, r.metric].value_own:.3f}" if (s, r.metric) in by
                         and math.isfinite(by[s, r.metric].value_own) else "–" for s in stats]
                out.append(f"| {labels[r.metric]} | " + " | ".join(cells) + f" | {int(r.n_own)} |")
            out.append("")
    return "\n".join(out)


def write_leaderboard(board: pd.DataFrame, out_dir: str | Path, plots: bool = True,
                      figure_format: str = "png") -> dict[str, Path]:
    """``leaderboard.csv``, ``leaderboard.md`` and ``leaderboard.<figure_format>`` (png, pdf or svg: acc_eq per corpus
    and dimension, linked from leaderboard.md)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "leaderboard.csv", "md": out / "leaderboard.md"}
    frame = board.assign(cluster=board["cluster"].astype("Int64"))  # 2, not 2.0; empty: not ranked
    spreadsheet_safe(with_warning(frame, board_random_weights(board))).to_csv(paths["csv"], index=False)
    text = leaderboard_markdown(board)
    if plots and (board["statistic"] == "acc_eq").any():
        import matplotlib.pyplot as plt  # noqa: PLC0415 - heavy (matplotlib)

        fig = leaderboard_figure(board)
        paths["figure"] = save_figure(fig, out / f"leaderboard.{figure_format}", dpi=110)
        plt.close(fig)
        text += "\n" + figure_link(f"leaderboard.{figure_format}", "acc_eq per corpus and human dimension, with "
                                    "95% CIs, coloured by significance cluster") + "\n"
    for fmt in FIGURE_FORMATS:
        if out / f"leaderboard.{fmt}" not in paths.values():
            (out / f"leaderboard.{fmt}").unlink(missing_ok=True)
    paths["md"].write_text(text, encoding="utf-8")
    return paths
