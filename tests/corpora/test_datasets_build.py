"""The Hub dataset folders: cards, `styleeval build-datasets` and scripts/push_to_hub.py (dry run), offline."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import datasets
import pytest
from huggingface_hub import DatasetCard

from styleeval.corpora import RATING_FEATURES, STEL_FEATURES, _checksums, _files, corpus_names, load_corpus
from styleeval.corpora import ziegenbein_appropriateness as zieg
from styleeval.corpora.configs import public_configs

ROOT = Path(__file__).resolve().parents[2]

EXPECTED_ROWS = {
    "style_gap_testset": {"all": 500, "sentiment": 50, "detoxification": 50, "catchy": 100, "politeness": 100,
                          "persuasiveness": 100, "formality": 100},
    "lai_formality": {"default": 720},
    "mir_yelp": {"default": 2928},
    "asset": {"default": 100},
    "ziegenbein_appropriateness": {"default": 1350},
    "stel": {"all": 500, "contraction": 100, "emotives": 200, "nbr_substitution": 100, "em-subj-pronoun": 100},
}


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


push_script = load_script("push_to_hub")


def build(argv: list[str]) -> int:
    """``styleeval build-datasets`` with ``argv``."""
    from styleeval.cli import main

    return main(["build-datasets", *argv])


@pytest.fixture(scope="module")
def built(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("hub")
    status = build(["--out", str(out), "--data-dir", str(data_dir),
                                "style_gap_testset", "lai_formality", "mir_yelp", "asset", "stel"])
    assert status == 0
    return out


def card_meta(folder: Path) -> dict:
    return DatasetCard.load(folder / "README.md").data.to_dict()


def test_no_init_in_datasets_folder():
    assert not (ROOT / "datasets" / "__init__.py").exists()  # it would shadow the `datasets` library
    assert datasets.load_dataset.__module__ == "datasets.load"


@pytest.mark.parametrize("name", list(corpus_names()))
def test_cards(name):
    folder = ROOT / "datasets" / name
    meta = card_meta(folder)
    text = (folder / "README.md").read_text("utf-8")
    assert [c["config_name"] for c in meta["configs"]] == [c.name for c in public_configs(name)]
    assert [c["data_files"] for c in meta["configs"]] == [[{"split": "test", "path": c.path}]
                                                          for c in public_configs(name)]
    assert list(EXPECTED_ROWS[name]) == [c.name for c in public_configs(name)]
    assert meta["license"] == {"style_gap_testset": "cc-by-4.0", "lai_formality": "mit", "mir_yelp": "unknown",
                               "asset": "cc-by-nc-4.0", "ziegenbein_appropriateness": "unknown",
                               "stel": "mit"}[name]
    assert meta["language"] == ["en"] and meta["task_categories"] and meta["size_categories"]
    assert meta["pretty_name"]
    for section in ("## Dataset structure", "## Source", "## Annotation", "## Licence", "## Citation", "```bibtex",
                    "## Uses", "## Limitations", "## Bias", "## Personal information"):
        assert section in text, section
    assert f'load_dataset("ORG/{name}", "{meta["configs"][0]["config_name"]}", split="test")' in text
    source = {"style_gap_testset": "1ec3ad9372da39ef8cdf4052285865442ba07ebb",
              "lai_formality": "ac47a0882926902fa79a59bbe3ba0eb4c97176f5",
              "mir_yelp": "4ca376d34d2aa554c4d4aeb35dc0b6246b983213",
              "asset": "9d659040d0d8942dbc4cd65cf357563b43fd9ab4",
              "ziegenbein_appropriateness": "8d4061d931937597f907bac4ca33215ef4d7cb3d",
              "stel": "e52f0521df53bd57c9ecafda16e7f2d6966a9993"}[name]
    assert "raw.githubusercontent.com/" in text and source in text


@pytest.mark.parametrize("name", ["style_gap_testset", "lai_formality", "mir_yelp", "asset", "stel"])
def test_load_dataset_every_config(built, name, tmp_path):
    folder = built / name
    assert (folder / "README.md").read_bytes() == (ROOT / "datasets" / name / "README.md").read_bytes()
    features = STEL_FEATURES if name == "stel" else RATING_FEATURES
    for config, rows in EXPECTED_ROWS[name].items():
        ds = datasets.load_dataset(str(folder), config, split="test", cache_dir=str(tmp_path / "hf"))
        assert len(ds) == rows, config
        assert ds.features == features
        if config in ("all", "default"):
            assert ds["id"] == load_corpus(name)["id"]


def test_built_rows_match_load_corpus(built, tmp_path):
    ds = datasets.load_dataset(str(built / "style_gap_testset"), "politeness", split="test",
                               cache_dir=str(tmp_path / "hf"))
    assert set(ds["task"]) == {"politeness"} and set(ds["target_style"]) == {"polite"}
    original = {r["id"]: r for r in load_corpus("style_gap_testset")}
    for row in ds.select(range(5)):
        assert row == original[row["id"]]
    mir = datasets.load_dataset(str(built / "mir_yelp"), split="test", cache_dir=str(tmp_path / "hf"))
    row = mir[122]
    assert row["id"] == "mir_yelp/ARAE_lambda_1/122" and row["content_mean"] == 3.0
    assert json.loads(row["extra"])["naturalness_relative"] == "A"


def test_stel_restricted_stays_local(data_dir, tmp_path, capsys):
    out = tmp_path / "hub"
    assert build(["--out", str(out), "--data-dir", str(data_dir), "stel", "--include-restricted"]) == 0
    folder = out / "stel"
    assert (folder / "data/restricted/formality.parquet").is_file()
    assert (folder / "data/restricted/simplicity.parquet").is_file()
    assert not (folder / "data/formality.parquet").exists()
    # the card does not list them: the published configs are unchanged
    ds = datasets.load_dataset(str(folder), "all", split="test", cache_dir=str(tmp_path / "hf"))
    assert len(ds) == 500 and set(ds["group"]) == {"characteristics"}
    restricted = datasets.load_dataset("parquet", data_files=str(folder / "data/restricted/formality.parquet"),
                                       split="train", cache_dir=str(tmp_path / "hf"))
    assert len(restricted) == 100 and set(restricted["votes_correct"]) == {3, 4, 5}
    # and push_to_hub never uploads them
    capsys.readouterr()
    assert push_script.main([str(folder), "--repo-id", "someone/stel"]) == 0
    printed = capsys.readouterr().out
    assert "Dry run" in printed and "data/all.parquet" in printed
    uploaded = printed.split("not uploaded:")[0]
    assert "restricted" not in uploaded
    assert "data/restricted/formality.parquet" in printed.split("not uploaded:")[1]
    files, _ = push_script.files_to_upload(folder)
    assert files == ["README.md"] + [c.path for c in public_configs("stel")]


def test_push_dry_run_and_guards(built, tmp_path, capsys):
    assert push_script.main([str(built / "asset")]) == 0
    printed = capsys.readouterr().out
    assert "would upload to https://huggingface.co/datasets/asset (license: cc-by-nc-4.0)" in printed
    assert "dry run: nothing uploaded" in printed
    # no licence: a dry run warns, a push is refused before any network call
    assert push_script.main([str(built / "mir_yelp"), "--repo-id", "someone/mir"]) == 0
    printed = capsys.readouterr().out
    assert "license: unknown" in printed
    assert 'card usage: ds = load_dataset("someone/mir", "default", split="test")' in printed  # repo id filled in
    assert push_script.main([str(built / "mir_yelp"), "--repo-id", "someone/mir", "--push"]) == 2
    # an unbuilt folder is refused
    unbuilt = tmp_path / "lai_formality"
    unbuilt.mkdir()
    (unbuilt / "README.md").write_bytes((ROOT / "datasets/lai_formality/README.md").read_bytes())
    with pytest.raises(SystemExit, match="not built yet"):
        push_script.main([str(unbuilt)])


def test_build_reports_missing_sources(data_dir, tmp_path, capsys):
    # a file absent from the mirror (Ziegenbein's ratings) is a clear note; when nothing asked for could be built the
    # run fails and says what to set (issue 22)
    status = build(["--out", str(tmp_path), "--data-dir", str(data_dir), "ziegenbein_appropriateness"])
    err = capsys.readouterr().err
    assert "note: ziegenbein_appropriateness skipped" in err and "study_abs_results.csv" in err
    assert status == 1 and "nothing was built" in err
    # a corrupt file is a failure
    mirror = tmp_path / "mirror"
    bad = mirror / "asset" / "human_ratings" / "human_ratings.csv"
    bad.parent.mkdir(parents=True)
    bad.write_text("not the file\n", encoding="utf-8")
    status = build(["--out", str(tmp_path / "o2"), "--data-dir", str(mirror), "asset"])
    assert status == 1 and "not built: asset" in capsys.readouterr().err
    assert build(["--out", str(tmp_path), "nonsense"]) == 2
    assert ("build-datasets: error: unknown corpus 'nonsense'; choose from style_gap_testset, "
            in capsys.readouterr().err)


def test_build_datasets_that_skips_a_corpus_fails_unless_allowed(data_dir, tmp_path, capsys):
    """Issue 47: a dataset skipped for missing sources (Ziegenbein's ratings, absent from the mirror) is said and
    fails the command (status 1), the others built, unless --allow-missing (as metaeval and evaluate treat a metric
    that could not be computed)."""
    argv = ["--data-dir", str(data_dir), "ziegenbein_appropriateness", "style_gap_testset"]
    assert build(["--out", str(tmp_path / "a"), *argv]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].startswith("note: ziegenbein_appropriateness skipped: missing from the local data mirror")
    assert err[-1] == (f"styleeval build-datasets: error: ziegenbein_appropriateness not built: its sources are "
                       f"missing (see above). The other datasets are in {tmp_path / 'a'}; get the missing files (from "
                       "their source URLs, or point --data-dir at a mirror that has them), leave it out of the names, "
                       "or pass --allow-missing to accept the folders without it")
    assert (tmp_path / "a" / "style_gap_testset" / "data" / "all.parquet").is_file()  # the others are built
    assert not (tmp_path / "a" / "ziegenbein_appropriateness" / "data").exists()
    assert build(["--out", str(tmp_path / "b"), *argv, "--allow-missing"]) == 0
    err = capsys.readouterr().err
    assert "note: ziegenbein_appropriateness skipped" in err and "error" not in err
    assert (tmp_path / "b" / "style_gap_testset" / "data" / "all.parquet").is_file()


def test_build_ziegenbein_with_ratings_file(data_dir, tmp_path, monkeypatch):
    from test_corpora import fake_ratings_for_all_items

    mirror = tmp_path / "mirror"
    items = mirror / "ziegenbein_appropriateness" / zieg.ITEMS
    items.parent.mkdir(parents=True)
    items.write_bytes((data_dir / "ziegenbein_appropriateness" / zieg.ITEMS).read_bytes())
    ratings = mirror / "ziegenbein_appropriateness" / zieg.RATINGS
    ratings.parent.mkdir(parents=True)
    fake_ratings_for_all_items(data_dir, ratings)
    monkeypatch.setitem(_checksums.GIT_BLOB_SHA1, f"ziegenbein_appropriateness/{zieg.RATINGS}",
                        _files.git_blob_sha1(ratings))
    out = tmp_path / "hub"
    assert build(["--out", str(out), "--data-dir", str(mirror), "ziegenbein_appropriateness"]) == 0
    ds = datasets.load_dataset(str(out / "ziegenbein_appropriateness"), "default", split="test",
                               cache_dir=str(tmp_path / "hf"))
    assert len(ds) == 1350 and ds.features == RATING_FEATURES and set(ds["n_raters"]) == {5}
