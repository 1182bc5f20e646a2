"""Ziegenbein et al. (2024), appropriateness rewriting of arguments: 225 sources x 6 systems (incl. human); ratings file public, in the authors' GitHub repository, but not in this project's mirror: downloaded on first use.

Source: ``timonziegenbein/inappropriateness-mitigation``. Items: ``study_pairs.csv`` of the absolute-rating
study app (``id,source,rewrite,issue,batch``). Ratings: ``study_abs_results.csv``, one row per
(annotator, rewrite) exported from the app's ``Annotation`` table (``a_id, user_id, post_id, post_text,
annotation_date, result, issue, comments``); ``result`` is a Python-literal dict of three 1-5 answers
stored as radio values ``other1..15`` (appropriateness, content, fluency). As in the authors' analysis
(``analyze_abs_study``) only annotators ``user_id`` 2..11 are kept.

The ratings file is not in the shared mirror and its format was taken from the authors' code; the parser is
tested on a small file in that format. Checking the counts against the real file is still to be done.
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from pathlib import Path

from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, resolve
from styleeval.corpora._parsing import read_csv
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import CorpusSpec

NAME = "ziegenbein_appropriateness"
SOURCE = Source(NAME, "timonziegenbein/inappropriateness-mitigation", "8d4061d931937597f907bac4ca33215ef4d7cb3d")
ITEMS = "src/annotation-interface/appropriateness-study-abs/data/study_pairs.csv"
RATINGS = "data/style-transfer/study_results/study_abs_results.csv"
SYSTEMS = ("human", "instruct", "10a-00ss", "40a-60ss", "50a-50ss", "60a-40ss")
N_SOURCES = 225
ANNOTATORS = range(2, 12)
# result key -> (aspect, offset of the radio value: other{offset + 1} .. other{offset + 5})
QUESTIONS = {"otherErrorQuestion1": ("style", 0), "otherErrorQuestion2": ("content", 5),
             "otherErrorQuestion3": ("fluency", 10)}


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def parse_items(path: Path, url: str | None = None) -> list[dict]:
    """The 1350 items of ``study_pairs.csv`` (text fields stripped, CRLF -> LF), checked for completeness."""
    url = url or SOURCE.url(ITEMS)
    items = []
    per_source: dict[str, set[str]] = defaultdict(set)
    for ctx, r in read_csv(path, url, {"id", "source", "rewrite", "issue", "batch"}):
        item_id = ctx.text(r, "id")
        source_id, sep, system = item_id.partition("_")
        if not sep or system not in SYSTEMS:
            raise ctx.error(f"id {item_id!r} is not <source id>_<system> with a system in {SYSTEMS}")
        if system in per_source[source_id]:
            raise ctx.error(f"duplicate id {item_id!r}")
        per_source[source_id].add(system)
        batch = int(ctx.number(r["batch"], "batch", 1, 2))
        items.append(
            {
                "id": item_id,
                "source_id": source_id,
                "system": system,
                "source": _clean(ctx.text(r, "source")),
                "rewrite": _clean(ctx.text(r, "rewrite", allow_empty=True)),
                "issue": _clean(r["issue"] or ""),
                "batch": batch,
            }
        )
    incomplete = sorted(s for s, systems in per_source.items() if len(systems) != len(SYSTEMS))
    if incomplete or len(per_source) != N_SOURCES:
        raise CorpusError(
            f"{len(per_source)} sources (expected {N_SOURCES}), incomplete: {incomplete[:5]}", file=path, url=url
        )
    return items


def parse_ratings(path: Path, url: str | None = None) -> dict[str, list[tuple[int, float, float, float]]]:
    """Ratings per item id: ``[(user_id, appropriateness, content, fluency), ...]`` sorted by user id.

    Only annotators 2..11 are kept (the authors' filter). A row whose ``result`` cannot be decoded, a rating
    outside 1-5 or a second rating of the same item by the same annotator raises :class:`CorpusError`.
    """
    url = url or SOURCE.url(RATINGS)
    ratings: dict[str, dict[int, tuple[int, float, float, float]]] = defaultdict(dict)
    for ctx, r in read_csv(path, url, {"user_id", "post_id", "result"}):
        user = int(ctx.number(r["user_id"], "user_id", 0, 1e9))
        if user not in ANNOTATORS:
            continue
        try:
            result = ast.literal_eval(r["result"] or "")
        except (ValueError, SyntaxError):
            raise ctx.error(f"result {r['result']!r} is not a Python literal dict") from None
        if not isinstance(result, dict):
            raise ctx.error(f"result {r['result']!r} is not a dict")
        values: dict[str, float] = {}
        for key, (aspect, offset) in QUESTIONS.items():
            raw = result.get(key)
            if not isinstance(raw, str) or not raw.startswith("other") or not raw[5:].isdigit():
                raise ctx.error(f"result[{key!r}] = {raw!r}, expected 'other{offset + 1}'..'other{offset + 5}'")
            values[aspect] = ctx.number(str(int(raw[5:]) - offset), f"result[{key!r}]", 1, 5)
        post = ctx.text(r, "post_id").strip()
        if user in ratings[post]:
            raise ctx.error(f"annotator {user} rated {post!r} twice")
        ratings[post][user] = (user, values["style"], values["content"], values["fluency"])
    return {post: [by_user[u] for u in sorted(by_user)] for post, by_user in ratings.items()}


def build(
    items: list[dict],
    ratings: dict[str, list[tuple[int, float, float, float]]] | None,
    *,
    ratings_file: Path | None = None,
    url: str | None = None,
) -> Dataset:
    """Harmonize parsed items and ratings (None: items only, scores null) into the long schema."""
    known = {item["id"] for item in items}
    if ratings is not None:
        unknown = sorted(set(ratings) - known)
        if unknown:
            raise CorpusError(f"ratings for unknown items {unknown[:5]}", file=ratings_file or RATINGS,
                              url=url or SOURCE.url(RATINGS))
    human = {item["source_id"]: item["rewrite"] for item in items if item["system"] == "human"}
    rows = []
    for item in items:
        got = None if ratings is None else ratings.get(item["id"])
        if ratings is not None and not got:
            raise CorpusError(f"no ratings for item {item['id']!r}", file=ratings_file or RATINGS,
                              url=url or SOURCE.url(RATINGS))
        is_human = item["system"] == "human"
        rows.append(
            rating_row(
                id=f"{NAME}/{item['id']}",
                dataset=NAME,
                task="appropriateness",
                target_style="appropriate",
                source_id=item["source_id"],
                source=item["source"],
                rewrite=item["rewrite"],
                reference=None if is_human else [human[item["source_id"]]],
                system=item["system"],
                is_reference_rewrite=is_human,
                content_scores=[g[2] for g in got] if got else None,
                style_scores=[g[1] for g in got] if got else None,
                fluency_scores=[g[3] for g in got] if got else None,
                n_raters=len(got) if got else 0,
                rater_ids=[f"ziegenbein:{g[0]}" for g in got] if got else None,
                scale_min=1,
                scale_max=5,
                extra={"issue": item["issue"], "batch": item["batch"]},
            )
        )
    return rating_dataset(rows)


def load(data_dir: str | os.PathLike[str] | None = None, *, ratings: bool = True) -> Dataset:
    """The 1350 rewrites in the long schema, in the order of ``study_pairs.csv``.

    Args:
        data_dir: local mirror (see :func:`styleeval.corpora.load_corpus`).
        ratings: False builds the items only (all score fields null, ``n_raters`` 0), which needs only the
            items file.
    """
    items = parse_items(resolve(SOURCE, ITEMS, data_dir))
    if not ratings:
        return build(items, None)
    ratings_file = resolve(SOURCE, RATINGS, data_dir)
    return build(items, parse_ratings(ratings_file), ratings_file=ratings_file)


SPEC = CorpusSpec(NAME, "Ze.", "rating", 4, load,
                  authors_style_words={"appropriate": "appropriated"}, public_ratings=False,
                  compares_systems=True)
