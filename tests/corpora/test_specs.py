"""Corpora are discovered from their modules' SPEC: every list derives from them, every corpus has its card."""

from __future__ import annotations

from pathlib import Path

from styleeval.corpora import CORPORA, RATING_CORPORA, SPECS
from styleeval.corpora.configs import CONFIGS
from styleeval.labels import DATASET_LABELS
from styleeval.metaeval.runner import DEFAULT_DATASETS

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_derives_from_the_specs():
    assert CORPORA == ("style_gap_testset", "lai_formality", "mir_yelp", "asset", "ziegenbein_appropriateness",
                       "stel")
    assert RATING_CORPORA == DEFAULT_DATASETS == CORPORA[:-1]
    assert set(CONFIGS) == set(DATASET_LABELS) == set(SPECS)
    for name, spec in SPECS.items():
        assert spec.name == name and spec.loader.__module__ == f"styleeval.corpora.{name}"
        card = ROOT / "datasets" / name / "README.md"
        assert card.is_file(), f"corpus {name} has no dataset card at {card}"
        text = card.read_text(encoding="utf-8")
        for config in spec.configs:
            assert config.restricted == (f"config_name: {config.name}\n" not in text), (name, config.name)
