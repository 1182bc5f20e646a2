"""The human-rated corpora: counts, hand-checked means against the raw files, schema, and error cases.

Every loader reads the local mirror (``$STYLEEVAL_DATA_DIR``, else ``../shared/data``, set by conftest); nothing
touches the network.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from datasets import concatenate_datasets

from styleeval.corpora import (
    RATING_FEATURES,
    STEL_FEATURES,
    ChecksumError,
    CorpusError,
    MissingFileError,
    _checksums,
    _files,
    corpus_names,
    load_corpus,
    load_rating_corpora,
)
from styleeval.corpora import ziegenbein_appropriateness as zieg


@pytest.fixture(scope="module")
def corpora(data_dir):
    names = ("style_gap_testset", "lai_formality", "mir_yelp", "asset")
    return {name: load_corpus(name, data_dir) for name in names}


def by_id(ds):
    return {row["id"]: row for row in ds}


def read_csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------- counts


def test_corpora_names():
    assert corpus_names() == ("style_gap_testset", "lai_formality", "mir_yelp", "asset", "ziegenbein_appropriateness", "stel")
    with pytest.raises(ValueError, match="unknown corpus"):
        load_corpus("yelp")


def test_style_gap_counts(corpora):
    ds = corpora["style_gap_testset"]
    assert len(ds) == 500
    assert Counter(ds["task"]) == {"sentiment": 50, "detoxification": 50, "catchy": 100, "politeness": 100,
                                   "persuasiveness": 100, "formality": 100}
    assert Counter(ds["target_style"]) == {"positive": 22, "negative": 28, "detoxified": 50, "catchy": 100,
                                           "polite": 100, "persuasive": 100, "formal": 100}
    assert Counter(ds["system"]) == {"style": 250, "substitution": 145, "insertion": 52, "deletion": 53}
    assert len(set(ds["source_id"])) == 250
    assert Counter(Counter(ds["source_id"]).values()) == {2: 250}
    assert set(ds["n_raters"]) == {3}
    assert len({r for ids in ds["rater_ids"] for r in ids}) == 5
    # references only for anno1-2
    assert sum(ref is not None for ref in ds["reference"]) == 100
    assert ds["fluency_mean"] == [None] * 500
    # row order: file by file, rows as in the file (anno3 is not sorted by quest_nr)
    assert ds[0]["id"] == "style_gap_testset/anno1/q1"
    assert ds[100]["id"] == "style_gap_testset/anno3/q68"
    assert len(set(ds["id"])) == 500


def test_lai_counts(corpora):
    ds = corpora["lai_formality"]
    assert len(ds) == 720
    assert Counter(ds["system"]) == {s: 80 for s in ("BART", "HIGH", "IBT", "LUO", "NIU", "RAO", "YI", "ZHOU",
                                                     "reference")}
    assert sum(ds["is_reference_rewrite"]) == 80
    assert Counter(ds["target_style"]) == {"formal": 360, "informal": 360}
    refs = ds.filter(lambda r: r["is_reference_rewrite"])
    assert all(r is None for r in refs["reference"])
    assert set(ds["n_raters"]) == {2} and set(ds["scale_max"]) == {100.0}


def test_lai_four_references(corpora, data_dir):
    from styleeval.corpora import load_corpus

    one = corpora["lai_formality"]
    four = load_corpus("lai_formality", str(data_dir), references=4)
    refs_files = [(data_dir / f"lai_formality/data/xformal/fr.80.ref{k}").read_text(encoding="utf-8").split("\n")
                  for k in range(4)]
    systems = [i for i, r in enumerate(four) if not r["is_reference_rewrite"]]
    assert len(systems) == 640
    for i in systems:
        line = int(four[i]["source_id"])
        got = four[i]["reference"]
        assert len(got) == 4 and got[0] == one[i]["reference"][0]
        assert got[1:] == [refs_files[k][line].strip() for k in (1, 2, 3)]
    # ref0 of data/xformal is not always the rating files' reference (the data README says it is)
    differ = sorted({int(r["source_id"]) + 1 for r in four if r["reference"] and
                     r["reference"][0] != refs_files[0][int(r["source_id"])].strip()})
    assert differ == [22, 23, 35, 46, 50, 51, 60]
    assert all(r is None for r, ref in zip(four["reference"], four["is_reference_rewrite"], strict=True) if ref)
    with pytest.raises(ValueError, match="references must be 1 or 4"):
        load_corpus("lai_formality", str(data_dir), references=2)


def test_mir_counts(corpora):
    ds = corpora["mir_yelp"]
    assert len(ds) == 2928
    assert len(set(ds["system"])) == 12
    assert sum(m is not None for m in ds["fluency_mean"]) == 2196
    assert Counter(ds["target_style"]) == {"positive": 1464, "negative": 1464}
    assert ds["rater_ids"] == [None] * 2928 and set(ds["n_raters"]) == {3}


def test_asset_counts(corpora):
    ds = corpora["asset"]
    assert len(ds) == 100
    assert set(ds["n_raters"]) == {15}
    assert all(len(s) == 15 for s in [*ds["content_scores"], *ds["style_scores"], *ds["fluency_scores"]])
    assert all(len(ref) == 10 for ref in ds["reference"])
    ids = [int(s) for s in ds["source_id"]]
    assert ids == sorted(ids) and len(set(ids)) == 100


def test_stel_counts(data_dir):
    public = load_corpus("stel", data_dir)
    assert public.features == STEL_FEATURES
    assert len(public) == 500
    assert Counter(public["component"]) == {"contraction": 100, "emotives": 200, "nbr_substitution": 100,
                                            "em-subj-pronoun": 100}
    assert public["votes_correct"] == [None] * 500
    full = load_corpus("stel", data_dir, include_dimensions=True)
    assert len(full) == 700
    dims = full.filter(lambda r: r["group"] == "dimensions")
    assert Counter(dims["component"]) == {"formality": 100, "simplicity": 100}
    assert Counter(dims["votes_correct"]) == {5: 78, 4: 66, 3: 56}
    with pytest.raises(ValueError, match="licence-restricted"):
        load_corpus("stel", data_dir, components=["formality"])


def test_ziegenbein_items_only(data_dir):
    ds = load_corpus("ziegenbein_appropriateness", data_dir, ratings=False)
    assert len(ds) == 1350
    assert Counter(ds["system"]) == {s: 225 for s in zieg.SYSTEMS}
    assert sum(ds["is_reference_rewrite"]) == 225
    assert set(ds["n_raters"]) == {0} and ds["style_mean"] == [None] * 1350
    # 10 40a-60ss rewrites and 1 human rewrite equal their source (after stripping)
    same = Counter(r["system"] for r in ds if r["rewrite"] == r["source"])
    assert same == {"40a-60ss": 10, "human": 1}
    row = by_id(ds)["ziegenbein_appropriateness/1_instruct"]
    assert row["reference"] == [by_id(ds)["ziegenbein_appropriateness/1_human"]["rewrite"]]
    assert json.loads(row["extra"]) == {"issue": "Tv is better than books:", "batch": 1}
    assert "\r" not in "".join(ds["rewrite"]) and not any(r != r.strip() for r in ds["rewrite"])


def test_ziegenbein_needs_ratings_file(data_dir):
    with pytest.raises(MissingFileError) as err:
        load_corpus("ziegenbein_appropriateness", data_dir)
    assert "study_abs_results.csv" in str(err.value)
    assert zieg.SOURCE.url(zieg.RATINGS) in str(err.value)


def test_every_target_style_of_the_corpora_is_a_known_style(corpora, data_dir):
    """Issue 61, item 3: a style close to a known one is said (``polyte``: did you mean 'polite'?); every corpus's
    own style, and every word the authors' scripts used for it, must be known, or a meta-evaluation would warn about
    the corpora themselves."""
    from styleeval.corpora import SPECS
    from styleeval.metaeval.data import ANY_CORPUS_STYLE_WORDS
    from styleeval.validation import KNOWN_STYLES, closest_known_style

    styles = {name: set(ds["target_style"]) for name, ds in corpora.items()}
    styles["ziegenbein_appropriateness"] = set(load_corpus("ziegenbein_appropriateness", data_dir,
                                                           ratings=False)["target_style"])
    assert styles["style_gap_testset"] == {"polite", "formal", "positive", "negative", "detoxified", "catchy",
                                           "persuasive"}  # the paper's six tasks
    words = {*ANY_CORPUS_STYLE_WORDS.values(), *(w for spec in SPECS.values() for w in spec.authors_style_words.values())}
    every = set().union(*styles.values(), words)
    assert every <= set(KNOWN_STYLES), every - set(KNOWN_STYLES)
    assert {closest_known_style(s) for s in every} == {None}


# ---------------------------------------------------------------- schema


def test_rating_corpora_share_features(corpora):
    for ds in corpora.values():
        assert ds.features == RATING_FEATURES
    both = load_rating_corpora(data_dir=None)
    assert len(both) == 500 + 720 + 2928 + 100
    assert len(set(both["id"])) == len(both)
    assert len(concatenate_datasets(list(corpora.values()))) == len(both)


def test_rescaled_means(corpora):
    row = corpora["asset"][0]
    assert row["content_rescaled"] == pytest.approx(row["content_mean"] / 100)
    row = corpora["style_gap_testset"][0]
    assert row["content_rescaled"] == pytest.approx((row["content_mean"] - 1) / 4)


# ---------------------------------------------------------------- means checked against the raw files


@pytest.mark.parametrize("n,quest_nrs", [(1, ["1", "2", "50"]), (2, ["7"]), (3, ["68", "1"]), (6, ["59", "100"])])
def test_style_gap_means_from_raw(corpora, data_dir, n, quest_nrs):
    rows = by_id(corpora["style_gap_testset"])
    raw = {r["quest_nr"]: r for r in read_csv_rows(data_dir / f"style_gap_testset/data/syntest_anno{n}.csv")}
    for q in quest_nrs:
        r, got = raw[q], rows[f"style_gap_testset/anno{n}/q{q}"]
        style = [float(r[f"AnswerA_{k}"]) for k in (1, 2, 3)]
        content = [float(r[f"AnswerB_{k}"]) for k in (1, 2, 3)]
        assert got["style_scores"] == style and got["content_scores"] == content
        assert got["style_mean"] == pytest.approx(np.mean(style)) == pytest.approx(float(r["annoA_mean"]))
        assert got["content_mean"] == pytest.approx(np.mean(content)) == pytest.approx(float(r["annoB_mean"]))
        assert got["rewrite"] == r["output"] and got["source"] == r["input"] and got["system"] == r["intention"]
        assert all(rid.startswith("style_gap_testset:rater") for rid in got["rater_ids"])


def test_style_gap_rater_pseudonyms_are_consistent_and_hide_worker_ids(corpora, data_dir):
    """The same Prolific worker gets the same pseudonym in every file, and no worker id appears anywhere."""
    rows = by_id(corpora["style_gap_testset"])
    mapping: dict[str, str] = {}
    for n in range(1, 7):
        for r in read_csv_rows(data_dir / f"style_gap_testset/data/syntest_anno{n}.csv"):
            got = rows[f"style_gap_testset/anno{n}/q{r['quest_nr']}"]["rater_ids"]
            for k, pseudonym in zip((1, 2, 3), got, strict=True):
                assert mapping.setdefault(r[f"prolificID_{k}"], pseudonym) == pseudonym
    assert sorted(mapping.values()) == [f"style_gap_testset:rater{k}" for k in range(1, 6)]
    text = str(corpora["style_gap_testset"].to_list())
    assert not any(worker in text for worker in mapping)


def test_style_gap_readme_examples(corpora):
    rows = by_id(corpora["style_gap_testset"])
    style_row, altered = rows["style_gap_testset/anno1/q1"], rows["style_gap_testset/anno1/q2"]
    assert style_row["style_scores"] == [5, 5, 5] and style_row["content_scores"] == [5, 4, 5]
    assert style_row["content_mean"] == pytest.approx(14 / 3)
    assert altered["system"] == "substitution" and altered["source_id"] == style_row["source_id"] == "anno1/0"
    assert altered["style_mean"] == pytest.approx(11 / 3) and altered["content_mean"] == pytest.approx(4 / 3)
    assert json.loads(altered["extra"]) == {"input_origin": "wikinews", "quest_nr": 2,
                                            "content_expected_preserved": False}
    # anno2 writes sample_id as a float ("213.0")
    assert any(sid == "anno2/213" for sid in corpora["style_gap_testset"]["source_id"])
    # the README's sanity check: content means of style vs substitution rows
    ds = corpora["style_gap_testset"]
    for system, expected in (("style", 4.64), ("substitution", 1.91)):
        means = [m for m, s in zip(ds["content_mean"], ds["system"], strict=True) if s == system]
        assert np.mean(means) == pytest.approx(expected, abs=0.005)


def test_lai_means_from_raw(corpora, data_dir):
    rows = by_id(corpora["lai_formality"])
    # README examples, by hand: BART line 0 and line 40
    r0, r40 = rows["lai_formality/BART/0"], rows["lai_formality/BART/40"]
    assert r0["content_scores"] == [62.4, 77.3] and r0["content_mean"] == pytest.approx(69.85)
    assert r0["style_mean"] == 100 and r0["fluency_mean"] == 100 and r0["target_style"] == "formal"
    assert r40["content_mean"] == pytest.approx(96.3) and r40["style_mean"] == pytest.approx(67.55)
    assert r40["fluency_mean"] == pytest.approx(93.25) and r40["target_style"] == "informal"
    for system, line in (("HIGH", 5), ("REF", 79), ("ZHOU", 41)):
        x = (data_dir / f"lai_formality/data/outputs/{system}.human.txt").read_text("utf-8").split("\n")[line]
        x = x.split("\t")
        got = rows[f"lai_formality/{system}/{line}"]
        assert got["content_mean"] == pytest.approx((float(x[4]) + float(x[7])) / 2)
        assert got["style_mean"] == pytest.approx((float(x[5]) + float(x[8])) / 2)
        assert got["fluency_mean"] == pytest.approx((float(x[6]) + float(x[9])) / 2)
        assert got["rewrite"] == x[2] and got["source"] == x[1]
        assert got["rater_ids"] == [f"lai:survey{x[0]}:r1", f"lai:survey{x[0]}:r2"]
    assert rows["lai_formality/REF/79"]["rewrite"] == rows["lai_formality/HIGH/79"]["reference"][0]


def test_mir_means_from_raw(corpora, data_dir):
    rows = by_id(corpora["mir_yelp"])
    base = data_dir / "mir_yelp/evaluations/human"
    # README examples: ARAE lambda=1, index 0 and 122
    r0, r122 = rows["mir_yelp/ARAE_lambda_1/0"], rows["mir_yelp/ARAE_lambda_1/122"]
    assert r0["content_mean"] == pytest.approx(13 / 3) and r0["style_mean"] == 4.0
    assert r0["fluency_mean"] == pytest.approx(11 / 3)
    assert json.loads(r0["extra"])["naturalness_relative"] is None
    assert (r122["content_mean"], r122["style_mean"], r122["fluency_mean"]) == (3.0, 4.0, 1.0)
    assert json.loads(r122["extra"])["naturalness_relative"] == "A"
    assert r122["target_style"] == "negative" and "_num_ minutes" in r122["rewrite"]
    inputs1 = (data_dir / "mir_yelp/data/sentiment.test.1").read_text("utf-8").split("\n")
    assert r122["source"] == inputs1[0]
    for system, k in (("CAAE_rho_0_01", 17), ("DAR_gamma_500", 200), ("DAR_gamma_15", 243)):
        got = rows[f"mir_yelp/{system}/{k}"]
        assert got["content_mean"] == np.load(base / f"content_preservation/{system}.npy")[k]
        assert got["style_mean"] == np.load(base / f"style_transfer_intensity/{system}.npy")[k]
    assert rows["mir_yelp/DAR_gamma_500/200"]["fluency_mean"] is None
    nat = np.load(base / "naturalness/DAR_gamma_15.npz", allow_pickle=True)
    assert rows["mir_yelp/DAR_gamma_15/243"]["fluency_mean"] == nat["absolute"][243]
    # DAR gamma=15 style has 13 half-point means (even number of ratings behind them)
    dar15 = [m for m, s in zip(corpora["mir_yelp"]["style_mean"], corpora["mir_yelp"]["system"], strict=True) if s == "DAR_gamma_15"]
    assert sum((2 * m) % 1 == 0 and m % 1 != 0 for m in dar15) == 13


def test_asset_means_from_raw(corpora, data_dir):
    rows = by_id(corpora["asset"])
    raw = read_csv_rows(data_dir / "asset/human_ratings/human_ratings.csv")
    refs = [(data_dir / f"asset/dataset/asset.test.simp.{k}").read_text("utf-8").split("\n") for k in range(10)]
    for sid in [s for s in ("7", "100", "350") if f"asset/{s}" in rows] + [corpora["asset"][-1]["source_id"]]:
        got = rows[f"asset/{sid}"]
        for aspect, field in (("meaning", "content"), ("simplicity", "style"), ("fluency", "fluency")):
            ratings = {int(r["worker_id"]): float(r["rating"]) for r in raw
                       if r["original_sentence_id"] == sid and r["aspect"] == aspect}
            assert len(ratings) == 15
            assert got[f"{field}_scores"] == [ratings[w] for w in sorted(ratings)]
            assert got[f"{field}_mean"] == pytest.approx(sum(ratings.values()) / 15)
        assert got["reference"] == [refs[k][int(sid)] for k in range(10)]
    # README example: sentence 7, worker 7 meaning 55, worker 3 fluency 100, another worker fluency 27
    seven = rows["asset/7"]
    workers = [int(w.split(":")[1]) for w in seven["rater_ids"]]
    assert seven["content_scores"][workers.index(7)] == 55
    assert seven["fluency_scores"][workers.index(3)] == 100 and 27 in seven["fluency_scores"]
    assert seven["content_mean"] == pytest.approx(634 / 15)


def test_stel_rows(data_dir):
    ds = by_id(load_corpus("stel", data_dir, include_dimensions=True))
    formal = ds["stel/formality/QQ_i-454-f-454_f-2482-i-2482--1"]
    assert formal["anchor_1"] == "But has a lil slang 2 his walk."
    assert formal["correct_alternative"] == 2 and formal["votes_correct"] == 4
    contraction = ds["stel/contraction/QQ_ction-0-wiki-0_wiki-73-ction-73--1"]
    assert "it'd" in contraction["anchor_1"] and "it had" in contraction["anchor_2"]
    assert "they will" in contraction["sentence_1"] and "they'll" in contraction["sentence_2"]
    assert contraction["correct_alternative"] == 2


# ---------------------------------------------------------------- errors


def copy_source(data_dir: Path, tmp_path: Path, folder: str) -> Path:
    shutil.copytree(data_dir / folder, tmp_path / folder)
    return tmp_path


def test_checksum_mismatch(data_dir, tmp_path):
    mirror = copy_source(data_dir, tmp_path, "lai_formality")
    target = mirror / "lai_formality/data/outputs/NIU.human.txt"
    text = target.read_text("utf-8")
    target.write_text(text.replace("\t100\t", "\t10\t", 1) + "", "utf-8")  # also changes the size
    with pytest.raises(ChecksumError) as err:
        load_corpus("lai_formality", mirror)
    message = str(err.value)
    assert "NIU.human.txt" in message and "expected 14451" in message
    assert "https://raw.githubusercontent.com/laihuiyuan/eval-formality-transfer/" in message
    # same size, one byte changed: the SHA-256 catches it
    target.write_text(text.replace("\t100\t", "\t010\t", 1), "utf-8")
    assert target.stat().st_size == 14451
    with pytest.raises(ChecksumError, match="SHA-256"):
        load_corpus("lai_formality", mirror)
    assert isinstance(err.value, ValueError)


def test_missing_file(data_dir, tmp_path):
    mirror = copy_source(data_dir, tmp_path, "mir_yelp")
    (mirror / "mir_yelp/evaluations/human/style_transfer_intensity/CAAE_rho_1.npy").unlink()
    with pytest.raises(MissingFileError) as err:
        load_corpus("mir_yelp", mirror)
    assert "CAAE_rho_1.npy" in str(err.value)
    assert err.value.url.endswith("/evaluations/human/style_transfer_intensity/CAAE_rho_1.npy")
    assert isinstance(err.value, ValueError)


def test_env_var_points_to_mirror(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("STYLEEVAL_DATA_DIR", str(tmp_path))  # an empty mirror
    with pytest.raises(MissingFileError, match="syntest_anno1.csv"):
        load_corpus("style_gap_testset")


def corrupt_and_repin(monkeypatch, mirror: Path, key: str, old: str, new: str) -> Path:
    """Edit a mirrored file and pin its new checksum, so that the parser (not the checksum) sees the damage."""
    path = mirror / key
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), "utf-8")
    monkeypatch.setitem(_checksums.SHA256, key, (_files.sha256(path), path.stat().st_size))
    return path


def test_malformed_rating_style_gap(data_dir, tmp_path, monkeypatch):
    mirror = copy_source(data_dir, tmp_path, "style_gap_testset")
    # line 3 of anno1 (quest_nr 2): AnswerA_3 "2" -> "x"
    corrupt_and_repin(monkeypatch, mirror, "style_gap_testset/data/syntest_anno1.csv",
                      ",2,5,4,2,2,1,1,", ",2,5,4,x,2,1,1,")
    with pytest.raises(CorpusError) as err:
        load_corpus("style_gap_testset", mirror)
    assert err.value.line == 3
    assert "syntest_anno1.csv, line 3" in str(err.value) and "AnswerA_3" in str(err.value)
    assert err.value.url.endswith("/data/syntest_anno1.csv")


def test_malformed_rating_out_of_scale(data_dir, tmp_path, monkeypatch):
    mirror = copy_source(data_dir, tmp_path, "lai_formality")
    corrupt_and_repin(monkeypatch, mirror, "lai_formality/data/outputs/BART.human.txt", "\t62.4\t", "\t620.4\t")
    with pytest.raises(CorpusError, match=r"content-1.*outside the scale.*BART.human.txt, line 1;"):
        load_corpus("lai_formality", mirror)


def test_malformed_short_row(data_dir, tmp_path, monkeypatch):
    mirror = copy_source(data_dir, tmp_path, "asset")
    key = "asset/human_ratings/human_ratings.csv"
    lines = (mirror / key).read_text("utf-8").split("\n")
    lines[4] = lines[4].rsplit(",", 1)[0]  # drop the rating of the 4th data row (line 5)
    (mirror / key).write_text("\n".join(lines), "utf-8")
    monkeypatch.setitem(_checksums.SHA256, key, (_files.sha256(mirror / key), (mirror / key).stat().st_size))
    with pytest.raises(CorpusError, match=r"human_ratings.csv, line 5; source: https://raw.*asset/9d659"):
        load_corpus("asset", mirror)


def test_malformed_mir_array(data_dir, tmp_path, monkeypatch):
    mirror = copy_source(data_dir, tmp_path, "mir_yelp")
    key = "mir_yelp/evaluations/human/content_preservation/DAR_gamma_1.npy"
    np.save(mirror / key, np.ones(243))
    monkeypatch.setitem(_checksums.SHA256, key, (_files.sha256(mirror / key), (mirror / key).stat().st_size))
    with pytest.raises(CorpusError, match=r"shape \(243,\), expected \(244,\)"):
        load_corpus("mir_yelp", mirror)


def test_download_path_is_cached_and_checksummed(data_dir, tmp_path, monkeypatch):
    """Without a mirror the pinned URL is fetched into the cache (download simulated from the mirror)."""
    fetched: list[str] = []

    def fake_download(url: str, dest: Path) -> None:
        fetched.append(url)
        prefix = "https://raw.githubusercontent.com/facebookresearch/asset/9d659040d0d8942dbc4cd65cf357563b43fd9ab4/"
        assert url.startswith(prefix)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / "asset" / url[len(prefix):], dest)

    monkeypatch.delenv("STYLEEVAL_DATA_DIR")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_files, "download", fake_download)
    assert len(load_corpus("asset")) == 100
    assert len(fetched) == 12
    cached = tmp_path / "cache/corpora/asset/9d659040d0d8942dbc4cd65cf357563b43fd9ab4/human_ratings/human_ratings.csv"
    assert cached.is_file()
    assert len(load_corpus("asset")) == 100 and len(fetched) == 12  # served from the cache
    cached.write_bytes(cached.read_bytes()[:-1])  # a truncated cache entry is rejected and removed
    with pytest.raises(ChecksumError):
        load_corpus("asset")
    assert not cached.exists()


# ---------------------------------------------------------------- Ziegenbein ratings (format from the authors' code)


RATINGS_HEADER = ["a_id", "user_id", "post_id", "post_text", "annotation_date", "result", "issue", "comments"]


def write_ratings(path: Path, rows: list[list]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(RATINGS_HEADER)
        writer.writerows(rows)
    return path


def answer(app: int, sim: int, flu: int) -> str:
    return repr({"otherErrorQuestion1": f"other{app}", "otherErrorQuestion2": f"other{sim + 5}",
                 "otherErrorQuestion3": f"other{flu + 10}"})


def test_ziegenbein_ratings_parser(tmp_path):
    path = write_ratings(tmp_path / "study_abs_results.csv", [
        [1, 7, "1_human", "text\r\nwith a line break", "2023-12-05", answer(5, 4, 3), "Tv is better", ""],
        [2, 3, "1_human", "text", "2023-12-05", answer(2, 1, 5), "Tv is better", ""],
        [3, 1, "1_human", "text", "2023-12-05", answer(1, 1, 1), "Tv is better", "test account: dropped"],
        [4, 12, "1_human", "text", "2023-12-05", answer(1, 1, 1), "Tv is better", "not in 2..11: dropped"],
        [5, 3, "2_instruct", "text", "2023-12-05", answer(3, 5, 4), "x", ""],
    ])
    ratings = zieg.parse_ratings(path)
    assert ratings == {"1_human": [(3, 2.0, 1.0, 5.0), (7, 5.0, 4.0, 3.0)], "2_instruct": [(3, 3.0, 5.0, 4.0)]}


def test_ziegenbein_ratings_bad_rows(tmp_path):
    bad_value = write_ratings(tmp_path / "a.csv", [
        [1, 3, "1_human", "t", "d", answer(5, 4, 3), "i", ""],
        [2, 4, "1_human", "t", "d", repr({"otherErrorQuestion1": "other9", "otherErrorQuestion2": "other6",
                                           "otherErrorQuestion3": "other11"}), "i", ""],
    ])
    with pytest.raises(CorpusError) as err:
        zieg.parse_ratings(bad_value)
    assert err.value.line == 3 and "otherErrorQuestion1" in str(err.value) and "study_abs_results.csv" in err.value.url
    not_literal = write_ratings(tmp_path / "b.csv", [[1, 3, "1_human", "t", "d", "{oops", "i", ""]])
    with pytest.raises(CorpusError, match="not a Python literal.*line 2;"):
        zieg.parse_ratings(not_literal)
    twice = write_ratings(tmp_path / "c.csv", [[1, 3, "1_human", "t", "d", answer(1, 2, 3), "i", ""]] * 2)
    with pytest.raises(CorpusError, match="rated '1_human' twice.*line 3;"):
        zieg.parse_ratings(twice)


def fake_ratings_for_all_items(data_dir: Path, path: Path) -> Path:
    """A ratings file in the documented format: 5 annotators per item (2-6 batch 1, 7-11 batch 2)."""
    items = zieg.parse_items(data_dir / "ziegenbein_appropriateness" / zieg.ITEMS)
    rows, a_id = [], 0
    for i, item in enumerate(items):
        users = range(2, 7) if item["batch"] == 1 else range(7, 12)
        for j, user in enumerate(users):
            a_id += 1
            rows.append([a_id, user, item["id"], item["rewrite"], "2023-12-05",
                         answer(1 + (i + j) % 5, 1 + (i * j) % 5, 1 + j), item["issue"], ""])
    return write_ratings(path, rows)


def test_ziegenbein_full_load_with_ratings_file(data_dir, tmp_path, monkeypatch):
    mirror = copy_source(data_dir, tmp_path, "ziegenbein_appropriateness")
    ratings = mirror / "ziegenbein_appropriateness" / zieg.RATINGS
    ratings.parent.mkdir(parents=True)
    fake_ratings_for_all_items(data_dir, ratings)
    # the real file is pinned by its git blob id; the fake one fails that check ...
    with pytest.raises(ChecksumError, match="git blob SHA-1"):
        load_corpus("ziegenbein_appropriateness", mirror)
    # ... and passes once its own blob id is pinned
    monkeypatch.setitem(_checksums.GIT_BLOB_SHA1, f"ziegenbein_appropriateness/{zieg.RATINGS}",
                        _files.git_blob_sha1(ratings))
    ds = load_corpus("ziegenbein_appropriateness", mirror)
    assert ds.features == RATING_FEATURES
    assert len(ds) == 1350 and set(ds["n_raters"]) == {5}
    row = ds[0]  # 1_human, batch 1, item index 0: app 1+j, sim 1, flu 1+j for j = 0..4
    assert row["id"] == "ziegenbein_appropriateness/1_human" and row["is_reference_rewrite"]
    assert row["rater_ids"] == [f"ziegenbein:{u}" for u in range(2, 7)]
    assert row["style_scores"] == [1, 2, 3, 4, 5] and row["content_scores"] == [1] * 5
    assert row["fluency_mean"] == 3.0
    # an item without ratings is an error, not a silently shorter dataset
    lines = ratings.read_text("utf-8").splitlines(keepends=True)
    kept = [line for line in lines if ",1_instruct," not in line]
    ratings.write_text("".join(kept), "utf-8")
    monkeypatch.setitem(_checksums.GIT_BLOB_SHA1, f"ziegenbein_appropriateness/{zieg.RATINGS}",
                        _files.git_blob_sha1(ratings))
    with pytest.raises(CorpusError, match="no ratings for item '1_instruct'"):
        load_corpus("ziegenbein_appropriateness", mirror)


# ---------------------------------------------------------------- the test set's Hub attempt


def test_style_gap_uses_hub_copy_when_identical(data_dir, tmp_path, monkeypatch):
    """Without a mirror, a Hub snapshot holding the six pinned CSVs is used and nothing else is fetched."""
    import huggingface_hub

    from styleeval.corpora import style_gap_testset as sg

    snapshot = tmp_path / "snapshot"
    shutil.copytree(data_dir / "style_gap_testset/data", snapshot / "csv")
    calls = []

    def fake_snapshot_download(repo_id, **kwargs):
        calls.append((repo_id, kwargs["repo_type"]))
        return str(snapshot)

    def no_download(url, dest):
        raise AssertionError(f"unexpected download of {url}")

    monkeypatch.delenv("STYLEEVAL_DATA_DIR")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setattr(_files, "download", no_download)
    ds = load_corpus("style_gap_testset")
    assert calls == [(sg.HUB_REPO, "dataset")]
    assert len(ds) == 500 and ds["id"] == load_corpus("style_gap_testset", data_dir)["id"]
    # a Hub copy that differs from the pinned files is not used: fall back to the GitHub raw files
    (snapshot / "csv/syntest_anno4.csv").write_text("sample_id\n", "utf-8")
    fetched = []

    def fake_download(url, dest):
        fetched.append(url)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / "style_gap_testset" / url.split(sg.SOURCE.commit + "/")[1], dest)

    monkeypatch.setattr(_files, "download", fake_download)
    assert len(load_corpus("style_gap_testset")) == 500
    assert fetched == [sg.SOURCE.url(sg.file_path(n)) for n in range(1, 7)]


def test_style_gap_offline_hub_falls_back(data_dir, tmp_path, monkeypatch):
    """With the Hub unreachable (HF_HUB_OFFLINE=1 here) the loader goes to the pinned GitHub files."""
    from styleeval.corpora import style_gap_testset as sg

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    assert sg._from_hub() is None


def test_pinned_checksums_match_readme_and_mirror(data_dir):
    """The pins in code are the README's table, and every pinned file of the mirror passes its check."""
    text = (data_dir / "README.md").read_text("utf-8")
    block = text.split("## File checksums")[1].split("```")[1]
    table = {path: (digest, int(size)) for digest, size, path in (line.split() for line in block.strip().splitlines())}
    assert len(table) == 98
    assert _checksums.SHA256 == table
    for key in [*table, *_checksums.EXTRA_SHA256]:
        _files.verify(data_dir / key, key, "https://example.invalid/")
