"""ASSET human ratings (Alva-Manchego et al., 2020): 100 simplifications x 15 raters x 3 aspects (0-100).

Source: ``facebookresearch/asset``: ``human_ratings/human_ratings.csv`` (one row per rating) and the 10
reference simplifications ``dataset/asset.test.simp.{0..9}``, line-aligned with ``dataset/asset.test.orig``.
Aspects: ``meaning`` -> content, ``simplicity`` -> style, ``fluency`` -> fluency.
"""

from __future__ import annotations

import os
from collections import defaultdict

from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, resolve
from styleeval.corpora._parsing import RowContext, read_csv, read_lines
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import CorpusSpec

NAME = "asset"
SOURCE = Source(NAME, "facebookresearch/asset", "9d659040d0d8942dbc4cd65cf357563b43fd9ab4")
RATINGS = "human_ratings/human_ratings.csv"
ASPECTS = {"meaning": "content", "simplicity": "style", "fluency": "fluency"}
N_PAIRS, N_RATERS, N_REFERENCES, N_ORIGINALS = 100, 15, 10, 359


def _lines(data_dir: str | os.PathLike[str] | None, path: str) -> list[str]:
    return read_lines(resolve(SOURCE, path, data_dir), SOURCE.url(path), N_ORIGINALS)


def load(data_dir: str | os.PathLike[str] | None = None) -> Dataset:
    """The 100 rated simplifications in the long schema, ordered by ``original_sentence_id``."""
    path = resolve(SOURCE, RATINGS, data_dir)
    url = SOURCE.url(RATINGS)
    required = {"original", "simplification", "original_sentence_id", "aspect", "worker_id", "rating"}
    groups: dict[tuple[int, str], dict] = {}
    for ctx, r in read_csv(path, url, required):
        sid = int(ctx.number(r["original_sentence_id"], "original_sentence_id", 0, N_ORIGINALS - 1))
        aspect = r["aspect"]
        if aspect not in ASPECTS:
            raise ctx.error(f"unknown aspect {aspect!r}")
        worker = int(ctx.number(r["worker_id"], "worker_id", 0, 1e9))
        rating = ctx.number(r["rating"], "rating", 0, 100)
        group = groups.setdefault(
            (sid, ctx.text(r, "simplification")),
            {"original": ctx.text(r, "original"), "ctx": ctx, "ratings": defaultdict(dict)},
        )
        if worker in group["ratings"][aspect]:
            raise ctx.error(f"worker {worker} rated {aspect} of sentence {sid} twice")
        group["ratings"][aspect][worker] = rating
    originals = _lines(data_dir, "dataset/asset.test.orig")
    references = [_lines(data_dir, f"dataset/asset.test.simp.{k}") for k in range(N_REFERENCES)]
    rows = []
    seen: set[int] = set()
    for (sid, simplification), group in sorted(groups.items(), key=lambda item: item[0][0]):
        ctx: RowContext = group["ctx"]
        if sid in seen:
            raise ctx.error(f"sentence {sid} has more than one rated simplification")
        seen.add(sid)
        ratings = group["ratings"]
        workers = sorted(ratings["meaning"])
        for aspect in ASPECTS:
            if sorted(ratings[aspect]) != workers or len(workers) != N_RATERS:
                raise ctx.error(
                    f"sentence {sid}: aspect {aspect!r} rated by workers {sorted(ratings[aspect])}, "
                    f"expected the same {N_RATERS} workers for all aspects"
                )
        scores = {ASPECTS[a]: [ratings[a][w] for w in workers] for a in ASPECTS}
        rows.append(
            rating_row(
                id=f"{NAME}/{sid}",
                dataset=NAME,
                task="simplification",
                target_style="simple",
                source_id=str(sid),
                source=group["original"],
                rewrite=simplification,
                reference=[refs[sid] for refs in references],
                system="unknown",
                is_reference_rewrite=False,
                content_scores=scores["content"],
                style_scores=scores["style"],
                fluency_scores=scores["fluency"],
                n_raters=N_RATERS,
                rater_ids=[f"asset:{w}" for w in workers],
                scale_min=0,
                scale_max=100,
                extra={"orig_line": originals[sid]},
            )
        )
    if len(rows) != N_PAIRS:
        raise CorpusError(f"{len(rows)} rated pairs, expected {N_PAIRS}", file=path, url=url)
    return rating_dataset(rows)


SPEC = CorpusSpec(NAME, "Alv. (ASSET)", "rating", 3, load,
                  authors_style_words={"simple": "simplified"})
