"""Numbers from random weights (the ``tiny-random`` preset) are marked "random weights: not for numbers" wherever they
are shown (report.md, the stdout table, report.json, the CSVs, the plots, the leaderboard, the Space's readings), and
signed by name and content, the same on every machine (issue 36, item 4)."""

from __future__ import annotations

import matplotlib

from styleeval.labels import has_random_weights

matplotlib.use("Agg")

TINY = "tiny-random"
SOURCES = ["give me the report now.", "the food was cold.", "the meeting is on Tuesday.", "send it to me today."]


def test_the_signature_names_the_preset_and_its_content_not_the_cache_folder(tmp_path, monkeypatch):
    """Built in two cache folders (two machines' homes), the preset signs the same: ``model:tiny-random@local-<hash
    of its files>`` (before: ``model:<the folder's absolute path>@local-...``, another signature per machine)."""
    from styleeval import LogProb

    signatures = []
    for home in ("machine-a", "machine-b"):
        monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / home))
        signatures.append(LogProb(TINY, progress=False).signature)
        assert (tmp_path / home / TINY / "config.json").is_file()
    assert signatures[0] == signatures[1]
    assert signatures[0].fields["model"].startswith("tiny-random@local-") and str(tmp_path) not in signatures[0]
    assert has_random_weights(signatures[0]) and not has_random_weights(signatures[0].replace(TINY, "my-model"))
