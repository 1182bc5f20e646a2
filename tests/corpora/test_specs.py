"""Corpora are discovered from their modules' SPEC: every list derives from them, every corpus has its card."""

from __future__ import annotations

from pathlib import Path

from styleeval.corpora import SPECS, corpus_names, rating_corpora
from styleeval.corpora.configs import corpus_configs
from styleeval.labels import dataset_label

ROOT = Path(__file__).resolve().parents[2]


def test_every_list_derives_from_the_specs():
    assert corpus_names() == ("style_gap_testset", "lai_formality", "mir_yelp", "asset", "ziegenbein_appropriateness",
                       "stel")
    assert rating_corpora() == corpus_names()[:-1]
    assert all(corpus_configs(n) == SPECS[n].configs and dataset_label(n) == SPECS[n].label for n in SPECS)
    for name, spec in SPECS.items():
        assert spec.name == name and spec.loader.__module__ == f"styleeval.corpora.{name}"
        card = ROOT / "datasets" / name / "README.md"
        assert card.is_file(), f"corpus {name} has no dataset card at {card}"
        text = card.read_text(encoding="utf-8")
        for config in spec.configs:
            assert config.restricted == (f"config_name: {config.name}\n" not in text), (name, config.name)
