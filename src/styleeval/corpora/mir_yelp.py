"""Mir et al. (2019), Yelp sentiment transfer: 12 systems x 244 rewrites, released means of 3 raters (1-5).

Source: ``passeul/style-transfer-model-evaluation``. Index k < 122 is line k of ``sentiment.test.0``
(negative -> positive), k >= 122 line k-122 of ``sentiment.test.1`` (positive -> negative). Content
(``content_preservation``) and style (``style_transfer_intensity``) for all 12 systems, fluency
(``naturalness``, absolute) for 9 of them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from datasets import Dataset

from styleeval.corpora._files import CorpusError, Source, resolve
from styleeval.corpora._parsing import read_lines
from styleeval.corpora.schema import rating_dataset, rating_row
from styleeval.corpora.spec import CorpusSpec

NAME = "mir_yelp"
SOURCE = Source(NAME, "passeul/style-transfer-model-evaluation", "4ca376d34d2aa554c4d4aeb35dc0b6246b983213")
HALF = 122

# (model, hyperparameter name, value as written in file names)
SYSTEMS: tuple[tuple[str, str, str], ...] = (
    ("ARAE", "lambda", "1"),
    ("ARAE", "lambda", "5"),
    ("ARAE", "lambda", "10"),
    ("CAAE", "rho", "0_01"),
    ("CAAE", "rho", "0_1"),
    ("CAAE", "rho", "0_5"),
    ("CAAE", "rho", "1"),
    ("CAAE", "rho", "5"),
    ("DAR", "gamma", "0_1"),
    ("DAR", "gamma", "1"),
    ("DAR", "gamma", "15"),
    ("DAR", "gamma", "500"),
)
WITH_NATURALNESS = {"ARAE_lambda_1", "ARAE_lambda_5", "ARAE_lambda_10", "CAAE_rho_0_01", "CAAE_rho_0_1",
                    "CAAE_rho_0_5", "CAAE_rho_1", "CAAE_rho_5", "DAR_gamma_15"}


def system_name(model: str, param: str, value: str) -> str:
    """The system id used in file names, e.g. ``CAAE_rho_0_01``."""
    return f"{model}_{param}_{value}"


def _lines(data_dir: str | os.PathLike[str] | None, path: str) -> list[str]:
    return read_lines(resolve(SOURCE, path, data_dir), SOURCE.url(path), HALF, allow_empty=False)


def _array(data_dir: str | os.PathLike[str] | None, path: str, key: str | None = None) -> np.ndarray:
    local: Path = resolve(SOURCE, path, data_dir)
    url = SOURCE.url(path)
    try:
        # allow_pickle only for the .npz files, whose `relative` array holds Python objects; the file was
        # checked against its pinned SHA-256 before loading.
        array = np.load(local, allow_pickle=key is not None)[key] if key else np.load(local)
    except Exception as err:
        raise CorpusError(f"cannot read array{f' {key!r}' if key else ''}: {err}", file=local, url=url) from err
    if array.shape != (2 * HALF,):
        raise CorpusError(f"array{f' {key!r}' if key else ''} has shape {array.shape}, expected (244,)",
                          file=local, url=url)
    if array.dtype != object:
        bad = np.flatnonzero(~((array >= 1) & (array <= 5)))
        if bad.size:
            raise CorpusError(f"index {bad[0]}: value {array[bad[0]]} outside [1, 5]", file=local, url=url)
    return array


def load(data_dir: str | os.PathLike[str] | None = None) -> Dataset:
    """The 2928 rated rewrites in the long schema, ordered by system (as in :data:`SYSTEMS`) then index."""
    inputs = _lines(data_dir, "data/sentiment.test.0") + _lines(data_dir, "data/sentiment.test.1")
    source_nat = _array(data_dir, "evaluations/human/naturalness/input_texts.npz", "absolute")
    rows = []
    for model, param, value in SYSTEMS:
        system = system_name(model, param, value)
        folder = f"transfer_model_outputs/{model}/{param}_{value}"
        outputs = _lines(data_dir, f"{folder}/sentiment.test.0.tsf") + _lines(
            data_dir, f"{folder}/sentiment.test.1.tsf"
        )
        content = _array(data_dir, f"evaluations/human/content_preservation/{system}.npy")
        style = _array(data_dir, f"evaluations/human/style_transfer_intensity/{system}.npy")
        fluency = relative = None
        if system in WITH_NATURALNESS:
            nat_path = f"evaluations/human/naturalness/{system}.npz"
            fluency = _array(data_dir, nat_path, "absolute")
            relative = _array(data_dir, nat_path, "relative")
            bad = [k for k, v in enumerate(relative) if v not in ("A", "B", None)]
            if bad:
                raise CorpusError(f"index {bad[0]}: 'relative' = {relative[bad[0]]!r}, expected 'A', 'B' or None",
                                  file=resolve(SOURCE, nat_path, data_dir), url=SOURCE.url(nat_path))
        for k in range(2 * HALF):
            rows.append(
                rating_row(
                    id=f"{NAME}/{system}/{k}",
                    dataset=NAME,
                    task="sentiment",
                    target_style="positive" if k < HALF else "negative",
                    source_id=str(k),
                    source=inputs[k],
                    rewrite=outputs[k],
                    reference=None,
                    system=system,
                    is_reference_rewrite=False,
                    content_scores=[float(content[k])],
                    style_scores=[float(style[k])],
                    fluency_scores=None if fluency is None else [float(fluency[k])],
                    n_raters=3,
                    rater_ids=None,
                    scale_min=1,
                    scale_max=5,
                    extra={
                        "model": model,
                        "hyperparameter": f"{param} = {value.replace('_', '.')}",
                        "naturalness_relative": None if relative is None else relative[k],
                        "source_naturalness": float(source_nat[k]),
                    },
                )
            )
    return rating_dataset(rows)


SPEC = CorpusSpec(NAME, "Mir", "rating", 2, load, compares_systems=True)
