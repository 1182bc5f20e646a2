"""Lai et al.'s own per-sentence metric scores for the ``lai_formality`` corpus (``data/outputs`` and ``chatgpt/``).

One value per corpus row (``lai_formality/{SYSTEM}/{line}``), read from the pinned files of
``laihuiyuan/eval-formality-transfer`` (checksummed like the ratings):

- ``{S}.content.src.txt`` / ``{S}.content.ref.txt`` (against the input / the first reference): COMET, COMET-w,
  BLEURT, BERTScore, METEOR, chrF, WMD (lower is better), BLEU, ROUGE-1, ROUGE-2, ROUGE-L. The repository's
  ``data/outputs/README.md`` (and the mirror's README) list WMD before chrF, but the values say otherwise: field 22 is
  1.0 and field 23 is 0.0 wherever output and reference are identical, field 22 equals sacrebleu's sentence chrF / 100
  on all 1440 rows, and both equal the ``chrf`` / ``wmd`` entries of ``chatgpt/*.json`` (tested);
- ``{S}.cls.pt16.txt``, ``{S}.cls.xformal.txt``, ``{S}.reg.pt16.txt``: style: the confidence of "formal" of a
  classifier trained on PT16 (C-PT16) or on GYAFC (C-GYAFC), a formality regressor trained on PT16 (R-PT16);
- ``{S}.ppl.txt``: GPT-2 perplexity of the output (lower is better);
- ``chatgpt/*.json``: the ChatGPT judgements of Lai, Toral & Nissim (2023) per aspect.

Metric names (:data:`SCORES`): ``comet``, ``comet-w``, ``bleurt``, ``bertscore``, ``meteor``, ``chrf``, ``wmd``,
``bleu``, ``rouge-1``, ``rouge-2``, ``rouge-l`` against the source, the same with ``-ref`` against the reference;
``c-pt16``, ``c-gyafc``, ``r-pt16``; ``ppl``; ``chatgpt-content``, ``chatgpt-content-ref``, ``chatgpt-style``,
``chatgpt-fluency``. The classifiers' "formal" confidence is turned into the confidence of the *target* style (1 - c
for formal->informal lines), as Lai's scripts do for the style tables.
"""

from __future__ import annotations

import json
import math
import os

from styleeval.corpora._files import CorpusError, resolve
from styleeval.corpora.lai_formality import LINES, SOURCE, SYSTEMS, _read_lines

CONTENT_METRICS = ("comet", "comet-w", "bleurt", "bertscore", "meteor", "chrf", "wmd", "bleu", "rouge-1", "rouge-2",
                   "rouge-l")  # the order of the fields in content.{src,ref}.txt (chrF before WMD: see above)
LOWER_IS_BETTER = frozenset({"wmd", "wmd-ref", "ppl"})
_CHATGPT = {"chatgpt-content": ("content.src", "chatgpt"), "chatgpt-content-ref": ("content.ref", "chatgpt"),
            "chatgpt-style": ("style", "chatgpt"), "chatgpt-fluency": ("fluency", "chatgpt")}

SCORES: tuple[str, ...] = (*CONTENT_METRICS, *(f"{m}-ref" for m in CONTENT_METRICS), "c-pt16", "c-gyafc", "r-pt16",
                           "ppl", *_CHATGPT)
"""Every precomputed score this module provides."""

DIMENSION = {**{m: "content" for m in CONTENT_METRICS}, **{f"{m}-ref": "content" for m in CONTENT_METRICS},
             "c-pt16": "style", "c-gyafc": "style", "r-pt16": "style", "ppl": "fluency",
             "chatgpt-content": "content", "chatgpt-content-ref": "content", "chatgpt-style": "style",
             "chatgpt-fluency": "fluency"}


def _number(text: str, path, url: str, line: int) -> float:
    try:
        return float(text)
    except ValueError:
        raise CorpusError(f"{text!r} is not a number", file=path, url=url, line=line) from None


def load_lai_scores(data_dir: str | os.PathLike[str] | None = None) -> dict[str, dict[str, float]]:
    """{score name: {corpus row id: value}} for every name of :data:`SCORES`, over the 9 x 80 rows (REF included)."""
    out: dict[str, dict[str, float]] = {name: {} for name in SCORES}
    for system in SYSTEMS:
        for kind, names, fields in (("content.src", CONTENT_METRICS, 27), ("content.ref", CONTENT_METRICS, 27),
                                    ("cls.pt16", ("c-pt16",), 17), ("cls.xformal", ("c-gyafc",), 17),
                                    ("reg.pt16", ("r-pt16",), 17), ("ppl", ("ppl",), 17)):
            rel = f"data/outputs/{system}.{kind}.txt"
            path, url = resolve(SOURCE, rel, data_dir), SOURCE.url(rel)
            for i, (ctx, parts) in enumerate(_read_lines(path, url, fields)):
                values = [ctx.number(v, f"score {k}", -math.inf, math.inf) for k, v in enumerate(parts[16:])]
                row = f"lai_formality/{system}/{i}"
                for name, value in zip(names, values, strict=True):
                    if kind.startswith("cls") and i >= LINES // 2:
                        value = 1.0 - value  # confidence of the target style (informal) on formal->informal lines
                    out[name + ("-ref" if kind == "content.ref" else "")][row] = value
    for name, (aspect, key) in _CHATGPT.items():
        rel = f"chatgpt/{aspect}.json"
        path, url = resolve(SOURCE, rel, data_dir), SOURCE.url(rel)
        lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
        if len(lines) != LINES:
            raise CorpusError(f"{len(lines)} JSON lines, expected {LINES}", file=path, url=url)
        for i, line in enumerate(lines):
            entry = json.loads(line)
            for system in SYSTEMS:
                sys_entry = entry["sys"].get(system.lower())
                if sys_entry is None or key not in sys_entry:
                    continue
                out[name][f"lai_formality/{system}/{i}"] = _number(str(sys_entry[key]), path, url, i + 1)
    return out
