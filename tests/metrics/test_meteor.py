"""METEOR as the paper computed it (huggingface/evaluate's meteor module: NLTK's single_meteor_score on word_tokenize
tokens, alpha 0.9, beta 3, gamma 0.5), with WordNet 3.0 and Punkt got on first use."""

from __future__ import annotations

import gzip
import math
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from _servers import unavailable
from scipy import stats

from styleeval.cli import main
from styleeval.corpora import load_corpus
from styleeval.metrics import _nltk_data, get_metric
from styleeval.metrics._nltk_data import MissingNLTKDataError
from styleeval.metrics.meteor import word_tokenize

# Pauli et al. (2025), Table 4 (Spearman with the mean human content rating), "*": not significant at 0.05
TABLE4_S_METEOR = {"all": "-0.05*", "sentiment": "-0.6", "detoxification": "-0.44", "catchy": "-0.02*",
                   "politeness": "0.06*", "persuasiveness": "-0.13*", "formality": "-0.03*"}
TABLE4_R_METEOR = {"sentiment": "-0.18*", "detoxification": "-0.43"}

# The evaluate module's scores under NLTK 3.9.2 (its word_tokenize, the same WordNet 3.0 and Punkt files), summed
# over the test set's 500 rows (S-Meteor) and its 100 rows with a reference (R-Meteor): measured once in a separate
# virtualenv (pip install nltk==3.9.2), where every row is also equal to ours.
NLTK392_S_SUM = 261.69891189244487
NLTK392_R_SUM = 61.87382193732261

# NLTK 3.9.2's word_tokenize (pip install nltk==3.9.2, English punkt_tab), pinned: dashes U+2012-U+2015 stay inside
# words, a leading apostrophe is split off only before a one-letter word, curly quotes do not end a Punkt sentence.
NLTK39_TOKENS = {
    "The results were mixed—some good, some bad.":
        ["The", "results", "were", "mixed—some", "good", ",", "some", "bad", "."],
    "Pages 10‒20 cover 1990–1995 ― see the notes.":
        ["Pages", "10‒20", "cover", "1990–1995", "―", "see", "the", "notes", "."],
    "He said 'hello' and 'sup to everyone.":
        ["He", "said", "'hello", "'", "and", "'sup", "to", "everyone", "."],
    "“Stop it.” She left. ‘Fine.’ He stayed.":
        ["“", "Stop", "it.", "”", "She", "left", ".", "‘", "Fine.", "’", "He", "stayed", "."],
    "Well -- that's it... isn't it?": ["Well", "--", "that", "'s", "it", "...", "is", "n't", "it", "?"],
    "I cannot believe it's 'tis the season—again!":
        ["I", "can", "not", "believe", "it", "'s", "'t", "is", "the", "season—again", "!"],
}


def _published(value: str) -> tuple[float, bool]:
    return float(value.rstrip("*")), not value.endswith("*")


@pytest.fixture(scope="module")
def testset(data_dir):
    ds = load_corpus("style_gap_testset")
    return {"source": list(ds["source"]), "rewrite": list(ds["rewrite"]), "reference": list(ds["reference"]),
            "task": np.array(ds["task"]), "human": np.array(ds["content_mean"])}


@pytest.fixture(scope="module")
def paper_scores(testset):
    """S-Meteor on the 500 rows, R-Meteor on the rows with a reference (row indices), the paper's variant."""
    s = get_metric("s_meteor").compute(testset["source"], testset["rewrite"])
    rows = [i for i, refs in enumerate(testset["reference"]) if refs]
    r = get_metric("r_meteor").compute([testset["source"][i] for i in rows], [testset["rewrite"][i] for i in rows],
                                       [testset["reference"][i] for i in rows])
    return np.array(s), rows, np.array(r)


def test_s_and_r_meteor_reproduce_table4(testset, paper_scores):
    s, rows, r = paper_scores
    checked = 0
    for scores, tasks, human, table in ((s, testset["task"], testset["human"], TABLE4_S_METEOR),
                                        (r, testset["task"][rows], testset["human"][rows], TABLE4_R_METEOR)):
        for subset, printed in table.items():
            mask = np.ones(len(tasks), bool) if subset == "all" else tasks == subset
            res = stats.spearmanr(scores[mask], human[mask])
            value, significant = _published(printed)
            assert res.statistic == pytest.approx(value, abs=0.01), (subset, res.statistic, printed)
            assert (res.pvalue < 0.05) == significant, (subset, res.pvalue, printed)
            checked += 1
    assert checked == 9 and len(rows) == 100


def test_the_paper_variant_equals_nltk_3_9_2(paper_scores):
    s, _, r = paper_scores
    assert math.fsum(s) == pytest.approx(NLTK392_S_SUM, abs=1e-9)
    assert math.fsum(r) == pytest.approx(NLTK392_R_SUM, abs=1e-9)


def test_equals_nltk_called_the_evaluate_way_row_by_row(testset, monkeypatch):
    """The installed NLTK's own word_tokenize and default WordNet reader, found in styleeval's NLTK data folder, as
    the evaluate module calls them; ``tok=installed`` is that call."""
    import nltk
    from nltk.translate import meteor_score

    wordnet, punkt = _nltk_data.ensure_meteor_data()
    monkeypatch.setattr(nltk.data, "path", [str(wordnet.parents[1])])
    sources, rewrites = testset["source"], testset["rewrite"]
    ours = get_metric("s_meteor:tok=installed").compute(sources, rewrites)
    theirs = [meteor_score.single_meteor_score(nltk.word_tokenize(src), nltk.word_tokenize(rw), alpha=0.9, beta=3,
                                               gamma=0.5) for src, rw in zip(sources, rewrites, strict=True)]
    assert ours == theirs  # exactly, row by row
    rows = [i for i, refs in enumerate(testset["reference"]) if refs]
    ours = get_metric("r_meteor:tok=installed").compute([sources[i] for i in rows], [rewrites[i] for i in rows],
                                                        [testset["reference"][i] for i in rows])
    theirs = [meteor_score.meteor_score([nltk.word_tokenize(ref) for ref in testset["reference"][i]],
                                        nltk.word_tokenize(rewrites[i]), alpha=0.9, beta=3, gamma=0.5) for i in rows]
    assert ours == theirs
    # the paper's variant is the same call on NLTK 3.9's tokens
    from nltk.translate.meteor_score import single_meteor_score

    paper = get_metric("s_meteor").compute(sources[:50], rewrites[:50])
    assert paper == [single_meteor_score(word_tokenize(src), word_tokenize(rw), alpha=0.9, beta=3, gamma=0.5)
                     for src, rw in zip(sources[:50], rewrites[:50], strict=True)]


def test_the_nltk39_tokenizer_tokenizes_as_nltk_3_9_did():
    for text, tokens in NLTK39_TOKENS.items():
        assert word_tokenize(text) == tokens, text
        assert word_tokenize(text, "nltk3.9") == tokens, text
    from importlib.metadata import version

    if tuple(int(x) for x in version("nltk").split(".")[:2]) >= (3, 10):  # the variant is what keeps them
        assert word_tokenize("The results were mixed—some good.", "installed")[:6] == [
            "The", "results", "were", "mixed", "—", "some"]
    with pytest.raises(ValueError, match="tok must be one of nltk3.9, installed"):
        word_tokenize("x", "nltk3.8")


def test_signature_names_nltk_wordnet_punkt_and_the_tokenizer():
    from importlib.metadata import version

    sig = get_metric("s_meteor").signature
    assert sig.name == "s_meteor"
    assert sig.fields["nltk"] == version("nltk") and sig.fields["tok"] == "nltk3.9"
    assert re.fullmatch(r"3\.0@[0-9a-f]{10}", sig.fields["wordnet"]) and sig.fields["punkt"].startswith("english@")
    assert (sig.fields["alpha"], sig.fields["beta"], sig.fields["gamma"]) == ("0.9", "3", "0.5")
    assert get_metric("s_meteor:tok=installed").signature.fields["tok"] == "installed"
    assert get_metric("r_meteor").signature.fields["multi"] == "max"
    assert get_metric("s_meteor:alpha=0.85").signature.fields["alpha"] == "0.85"
    with pytest.raises(ValueError, match=r"unknown options \['stem'\]"):
        get_metric("s_meteor:stem=1")


def test_concurrent_callers_get_the_numbers_of_one_caller(testset, paper_scores):
    metric = get_metric("s_meteor")
    halves = [(0, 250), (250, 500), (100, 350), (0, 500)]
    results: dict[int, list[float]] = {}

    def run(k: int) -> None:
        a, b = halves[k]
        results[k] = metric.compute(testset["source"][a:b], testset["rewrite"][a:b])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(halves))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, (a, b) in enumerate(halves):
        assert results[k] == paper_scores[0][a:b].tolist()


def _empty_machine(monkeypatch, tmp_path) -> None:
    """No cache, no system WordNet, a downloader that cannot connect."""
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("WNSEARCHDIR", raising=False)
    monkeypatch.delenv("WNHOME", raising=False)
    monkeypatch.setattr(_nltk_data, "SYSTEM_WORDNET", (str(tmp_path / "no-wordnet"),))
    monkeypatch.setattr(_nltk_data, "DOWNLOAD_INDEX_URL", "http://127.0.0.1:9/index.xml")


def test_a_missing_wordnet_is_one_line_before_any_work(monkeypatch, tmp_path, capsys):
    _empty_machine(monkeypatch, tmp_path)
    with pytest.raises(MissingNLTKDataError, match=r"apt-get install wordnet-base wordnet-sense-index") as err:
        _nltk_data.ensure_meteor_data()
    assert len(str(err.value).splitlines()) == 1 and "WordNet 3.0" in str(err.value)
    with pytest.raises(ValueError, match=r"^metric 's_meteor': METEOR needs WordNet 3\.0, which is not in styleeval's "
                                         r"cache .*: apt-get install wordnet-base wordnet-sense-index"):
        get_metric("s_meteor")
    nowhere = str(tmp_path / "nowhere")  # the data are not even there: the metric is reported first
    for argv in (["metaeval", "--metrics", "s_bleu,s_meteor", "--data-dir", nowhere, "--out", str(tmp_path / "m")],
                 ["evaluate", nowhere + ".csv", "--metrics", "r_meteor", "--out", str(tmp_path / "e")]):
        assert main(argv) == 2, argv
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and "apt-get install wordnet-base wordnet-sense-index" in lines[0], (argv, lines)
    assert not (tmp_path / "cache" / "nltk_data" / "corpora" / "wordnet").exists()


def test_a_missing_punkt_is_one_line(monkeypatch, tmp_path):
    import importlib.util

    _empty_machine(monkeypatch, tmp_path)
    monkeypatch.setattr(_nltk_data, "SYSTEM_WORDNET", ("/usr/share/wordnet",))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "punkt" else real(name, *a))
    with pytest.raises(ValueError) as err:
        get_metric("r_meteor")
    assert len(str(err.value).splitlines()) == 1
    assert "Punkt" in str(err.value) and "pip install 'styleeval[meteor]'" in str(err.value)


@pytest.fixture()
def debian_wordnet():
    folder = Path("/usr/share/wordnet")
    if not all((folder / f).is_file() for f in _nltk_data.WORDNET_FILES):
        unavailable("Debian's wordnet-base and wordnet-sense-index are not installed")
    return folder


def test_wordnet_is_copied_from_a_system_install_with_lexnames(monkeypatch, tmp_path, debian_wordnet):
    system = tmp_path / "system"
    system.mkdir()
    for name in _nltk_data.WORDNET_FILES:  # what Debian's two packages install: no lexnames
        shutil.copyfile(debian_wordnet / name, system / name)
    _empty_machine(monkeypatch, tmp_path)
    monkeypatch.setattr(_nltk_data, "SYSTEM_WORDNET", (str(system),))
    wordnet, punkt = _nltk_data.ensure_meteor_data()
    assert wordnet == tmp_path / "cache" / "nltk_data" / "corpora" / "wordnet"
    for name in (*_nltk_data.WORDNET_FILES, "lexnames"):  # copies, not links (NLTK 3.10 refuses links)
        assert (wordnet / name).is_file() and not (wordnet / name).is_symlink()
    assert (wordnet / "data.noun").read_bytes() == (debian_wordnet / "data.noun").read_bytes()
    assert (wordnet / "lexnames").read_text(encoding="utf-8") == _nltk_data.lexnames_text()
    assert _nltk_data.wordnet_version(wordnet) == "3.0"
    assert not [p for p in wordnet.parents[1].iterdir() if p.name.startswith(".staging")]
    assert [p.name for p in wordnet.parent.iterdir()] == ["wordnet"]  # no temporary folder beside it (atomic_dir)
    assert [p.name for p in punkt.parent.iterdir()] == ["english"]
    assert _nltk_data.ensure_meteor_data() == (wordnet, punkt)  # found in the cache now, nothing copied again
    # a WordNet of another version is not taken, and the reason is given
    other = tmp_path / "wn31"
    shutil.copytree(system, other)
    header = (other / "data.adj").read_text(encoding="utf-8").replace("WordNet 3.0 Copyright", "WordNet 3.1 Copyright")
    (other / "data.adj").write_text(header, encoding="utf-8")
    monkeypatch.setattr(_nltk_data, "SYSTEM_WORDNET", (str(other),))
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache2"))
    with pytest.raises(MissingNLTKDataError, match=r"wn31 holds WordNet 3\.1, not 3\.0"):
        _nltk_data.ensure_meteor_data()


def test_lexnames_is_wordnet_3_0s_table():
    page = Path("/usr/share/man/man5/lexnames.5WN.gz")
    if not page.is_file():
        unavailable("the lexnames(5WN) page of Debian's wordnet-base is not installed")
    table = re.findall(r"^(\d\d)\t(\S+)\s*\t", gzip.open(page, "rt", encoding="utf-8").read(), re.M)
    assert len(table) == 45
    lines = _nltk_data.lexnames_text().splitlines()
    assert [tuple(line.split("\t")[:2]) for line in lines] == table
    assert lines[0] == "00\tadj.all\t3" and lines[3] == "03\tnoun.Tops\t1" and lines[44] == "44\tadj.ppl\t3"


def test_punkt_from_the_package_is_its_model_as_nltk_reads_it(monkeypatch, tmp_path):
    import punkt
    from nltk.data import FileSystemPathPointer
    from nltk.tokenize.punkt import load_punkt_params

    _empty_machine(monkeypatch, tmp_path)
    root = _nltk_data.nltk_data_dir()
    _nltk_data.register(root)
    folder = _nltk_data.ensure_punkt(root)
    params, model = load_punkt_params(FileSystemPathPointer(str(folder))), punkt.load_model("english")
    assert params.abbrev_types == model.abbrev_types and params.sent_starters == model.sent_starters
    assert params.collocations == model.collocations and dict(params.ortho_context) == dict(model.ortho_context)
    assert len(params.abbrev_types) > 100 and model.metadata.source == "punkt_tab:english"


def test_an_nltk_older_than_3_9_is_one_line(monkeypatch):
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "3.8.1" if name == "nltk" else real(name))
    with pytest.raises(ValueError, match=r"s_meteor needs nltk >= 3\.9 \(installed: 3\.8\.1\): pip install "
                                         r"'styleeval\[meteor\]'"):
        get_metric("s_meteor")


def _fake_nltk_server(folder: Path, packages: dict[str, tuple[str, dict[str, bytes], bool]]) -> str:
    """A file:// index of NLTK's downloader serving ``packages``: id -> (subdir, zip members, unzip)."""
    import hashlib
    import zipfile

    entries = []
    for package, (subdir, members, unzip) in packages.items():
        archive = folder / f"{package}.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            for name, data in members.items():
                zipped.writestr(name, data)
        data = archive.read_bytes()
        entries.append(f'<package id="{package}" name="{package}" subdir="{subdir}" url="{archive.as_uri()}" '
                       f'size="{len(data)}" unzipped_size="{sum(map(len, members.values()))}" '
                       f'checksum="{hashlib.md5(data).hexdigest()}" '
                       f'sha256_checksum="{hashlib.sha256(data).hexdigest()}" unzip="{int(unzip)}"/>')
    (folder / "index.xml").write_text('<?xml version="1.0"?>\n<nltk_data><packages>' + "".join(entries)
                                      + "</packages><collections/></nltk_data>\n", encoding="utf-8")
    return (folder / "index.xml").as_uri()


def test_online_both_come_from_nltks_downloader(monkeypatch, tmp_path, debian_wordnet):
    """Without a system WordNet or the punkt package, NLTK's downloader fetches them (here from a file:// index laid
    out like NLTK's: wordnet left zipped, punkt_tab unzipped) into the cache."""
    import importlib.util

    import nltk.data
    import punkt

    server = tmp_path / "server"
    server.mkdir()
    wordnet = {f"wordnet/{name}": (debian_wordnet / name).read_bytes() for name in _nltk_data.WORDNET_FILES}
    wordnet["wordnet/lexnames"] = _nltk_data.lexnames_text().encode()
    model = punkt.load_model("english")
    english = tmp_path / "english"
    english.mkdir()
    _nltk_data.write_punkt_tab(english, model.abbrev_types, model.collocations, model.ortho_context,
                               model.sent_starters)
    punkt_tab = {f"punkt_tab/english/{p.name}": p.read_bytes() for p in english.iterdir()}
    url = _fake_nltk_server(server, {"wordnet": ("corpora", wordnet, False),
                                     "punkt_tab": ("tokenizers", punkt_tab, True)})
    _empty_machine(monkeypatch, tmp_path)
    monkeypatch.setattr(_nltk_data, "DOWNLOAD_INDEX_URL", url)
    monkeypatch.setattr(nltk.data, "path", [*nltk.data.path, str(server)])  # NLTK reads files only under its path
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "punkt" else real(name, *a))
    got_wordnet, got_punkt = _nltk_data.ensure_meteor_data()
    root = tmp_path / "cache" / "nltk_data"
    assert (got_wordnet, got_punkt) == (root / "corpora" / "wordnet", root / "tokenizers" / "punkt_tab" / "english")
    assert (got_wordnet / "data.noun").read_bytes() == (debian_wordnet / "data.noun").read_bytes()
    assert _nltk_data.wordnet_version(got_wordnet) == "3.0"
    assert {p.name: p.read_bytes() for p in got_punkt.iterdir()} == {p.name: p.read_bytes() for p in english.iterdir()}
    assert sorted(p.name for p in root.iterdir()) == ["corpora", "tokenizers"]  # no staging folder left
    assert [p.name for p in got_wordnet.parent.iterdir()] == ["wordnet"]  # nor a temporary one, nor the zips
    assert sorted(p.name for p in got_punkt.parent.iterdir()) == ["english"]
    assert ".download" not in {p.name for p in (*got_wordnet.iterdir(), *got_punkt.iterdir())}
