"""A new user's first runs, offline (issue 61, item 8): a corpus download that fails names the two ways to a local
mirror; ``reproduce-paper`` says which cell has which status, says METEOR's long set-up message once (not in every
row) and, where the LLM rows need the paper's weights, suggests ``--model smollm2-135m``; the README, the docs and
the CLI say the same of Ziegenbein's ratings."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from styleeval.cli import main
from styleeval.corpora import _files, load_corpus
from styleeval.corpora._files import MissingFileError
from styleeval.metaeval import paper
from styleeval.metrics import _nltk_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    """No corpus mirror named, and every download refused at once (a proxy on a port nothing listens on, no retries),
    in a fresh cache."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    for name in ("STYLEEVAL_DATA_DIR", "no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{port}")
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(_files, "DOWNLOAD_RETRIES", 0)


def test_a_failed_corpus_download_names_data_dir_and_the_variable(no_network, tmp_path, capsys):
    with pytest.raises(MissingFileError) as err:
        load_corpus("asset")
    message = str(err.value)
    assert message.startswith("download failed (") and "--data-dir" in message and "data_dir=" in message
    assert "$STYLEEVAL_DATA_DIR" in message and err.value.url in message
    assert "--data-dir" not in err.value.reason  # the one-line summaries (reproduce-paper's) keep the reason alone
    assert main(["evaluate", "--dataset", "lai_formality", "--metrics", "s_bleu", "--out", str(tmp_path / "e")]) != 0
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("styleeval evaluate: error: download failed") and "--data-dir" in line \
        and "STYLEEVAL_DATA_DIR" in line


def test_a_mirror_that_lacks_a_file_says_so_without_the_download_advice(tmp_path):
    (tmp_path / "asset").mkdir()
    with pytest.raises(MissingFileError, match="missing from the local data mirror") as err:
        load_corpus("asset", data_dir=tmp_path)
    assert "STYLEEVAL_DATA_DIR" not in str(err.value)


def test_the_status_column_says_which_cell_has_which_status():
    columns = [("Mir", "mir_yelp", "all"), ("Lai", "lai_formality", "system"), ("Ze.", "ziegenbein_appropriateness",
               "system"), ("Cao.", None, None)]
    values = {("S-Bleu", "mir_yelp", "all"): (0.51, 0.0), ("S-Bleu", "lai_formality", "system"): (0.55, 0.0)}
    text, counts = paper.render("Table 3", columns, {"S-Bleu": "0.51 0.52 0.63 0.58"}, values, {},
                                {"ziegenbein_appropriateness": "why"})
    row = next(line for line in text.splitlines() if line.startswith("| S-Bleu |"))
    assert row.endswith("| ok: Mir; close: Lai +0.03; not computed (corpus not loaded): Ze.; "
                        "ratings not public / not in the mirror: Cao. |")
    assert counts == {"ok": 1, "close": 1, "differs": 0, "not computed": 2}


def test_reproduce_paper_offline_says_meteors_set_up_once_and_suggests_the_135m_model(monkeypatch, tmp_path,
                                                                                      data_dir, capsys):
    monkeypatch.setenv("STYLEEVAL_CACHE", str(tmp_path / "cache"))  # no WordNet: neither cached, installed nor got
    monkeypatch.delenv("WNSEARCHDIR", raising=False)
    monkeypatch.delenv("WNHOME", raising=False)
    monkeypatch.setattr(_nltk_data, "SYSTEM_WORDNET", (str(tmp_path / "no-wordnet"),))
    monkeypatch.setattr(_nltk_data, "DOWNLOAD_INDEX_URL", "http://127.0.0.1:9/index.xml")
    assert main(["reproduce-paper", "-q", "--data-dir", str(data_dir), "--cache-dir", str(tmp_path / "scores")]) == 0
    out, err = capsys.readouterr()
    long = "apt-get install wordnet-base wordnet-sense-index"
    assert out.count(long) == 1 and err.count(long) == 1  # once below the tables, once on stderr
    meteor_rows = [line for line in out.splitlines() if line.startswith(("| S-Meteor |", "| R-Meteor |"))]
    assert len(meteor_rows) == 4 and all(line.endswith(f"| {paper.METEOR_DATA} |") for line in meteor_rows)
    assert out.count("--model smollm2-135m") == 1 and err.count("--model smollm2-135m") == 1
    llm = [line for line in out.splitlines() if line.startswith(("| LogProb ", "| LLM-as-A "))]
    assert len(llm) == 18 and all("| needs weights (" in line for line in llm)  # 6 rows in each of Tables 3, 4, 5
    s_bleu = next(line for line in out.splitlines() if line.startswith("| S-Bleu |"))  # Table 3's
    assert "ok: Mir (sys), Lai (sys), Lai (ref); close: Alv. (sys) +0.02;" in s_bleu


def test_readme_docs_and_cli_agree_that_ziegenbeins_ratings_are_public_but_not_in_the_mirror(capsys, data_dir):
    pages = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
             for path in [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md"))]}
    assert main(["list", "corpora"]) == 0
    listed = " ".join(capsys.readouterr().out.split())
    for where, text in [*pages.items(), ("styleeval list corpora", listed)]:  # no page says they are not public
        assert not re.search(r"[Zz]iegenbein\S*[^.]{0,40}ratings[^.]{0,20}not public", " ".join(text.split())), where
    # where a user reads about it: `evaluate --dataset` (docs/evaluate.md, the README's until issue 60) and the list
    for where, text in {"docs/evaluate.md": pages["docs/evaluate.md"], "styleeval list corpora": listed}.items():
        text = " ".join(text.split())
        assert text.count("public, in the authors' GitHub repository, but not in this project's mirror") >= (
            2 if where == "docs/evaluate.md" else 1), where
    mirror = " ".join((data_dir / "README.md").read_text(encoding="utf-8").split())  # what the mirror's README says
    assert "Ratings file, **not included here** (must be downloaded): `data/style-transfer/study_results/" in mirror
    assert "https://raw.githubusercontent.com/timonziegenbein/inappropriateness-mitigation/" in mirror


def test_the_browser_tests_offline_route_is_documented_and_is_the_one_they_use():
    """Issue 61, item 9: Playwright is in the test extra, and docs/testing.md (the README's "Tests" until issue 60)
    gives the Debian Chromium route the browser tests and .ci/run use (Playwright's own browser download needs its
    CDN)."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    test_extra = pyproject.split("\ntest = [", 1)[1].split("]", 1)[0]
    assert re.search(r'"playwright>=[\d.]+"', test_extra)
    chromium = re.search(r'^CHROMIUM = "([^"]+)"', (ROOT / "tests" / "apps" / "test_space.py").read_text(
        encoding="utf-8"), re.M).group(1)
    readme = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert f"launch Debian's Chromium at `{chromium}`" in readme
    assert "apt-get install -y chromium chromium-driver" in readme
    assert "apt-get install -y -qq chromium chromium-driver" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
