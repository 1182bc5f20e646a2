"""The run's --data-dir reaches every metric and loader (no STYLEEVAL_DATA_DIR needed)."""

from __future__ import annotations


def test_lai_scores_use_the_runs_data_dir(tmp_path, data_dir, monkeypatch, capsys):
    from styleeval.cli import main
    from styleeval.metrics.precomputed import _lai_scores

    monkeypatch.delenv("STYLEEVAL_DATA_DIR", raising=False)
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "empty-download-cache"))  # nothing downloaded before
    _lai_scores.cache_clear()
    assert main(["metaeval", "--analysis", "lai", "--metrics", "lai:c-gyafc,lai:comet,r_chrf", "--data-dir",
                 str(data_dir), "--out", f"{tmp_path / 'out'}/", "--no-plots", "--no-progress", "--no-cache"]) == 0
    assert (tmp_path / "out" / "lai.csv").stat().st_size > 0
    assert f"-> {tmp_path / 'out' / 'lai.csv'}, {tmp_path / 'out' / 'lai.md'}" in capsys.readouterr().out  # no //


def test_the_default_datasets_are_those_present(data_dir):
    """Ziegenbein et al.'s ratings are not public (absent from the mirror): the default set skips them with a note;
    naming them stays an error."""
    import pytest

    from styleeval.metaeval import run_metaeval

    result = run_metaeval(None, ["s_bleu"], data_dir=str(data_dir), n_boot=0)
    assert "ziegenbein_appropriateness" not in result.dataset_kinds and "lai_formality" in result.dataset_kinds
    assert any("ziegenbein_appropriateness" in n and "not present" in n for n in result.notes)
    with pytest.raises(ValueError, match="dataset ziegenbein_appropriateness cannot be used"):
        run_metaeval(["ziegenbein_appropriateness"], ["s_bleu"], data_dir=str(data_dir), n_boot=0)
