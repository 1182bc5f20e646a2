"""One cache root: every file styleeval keeps goes below it, named by one variable (or XDG_CACHE_HOME)."""

from __future__ import annotations

from pathlib import Path

from styleeval import models, paths
from styleeval.corpora import _files
from styleeval.scoring import default_cache_dir

SRC = Path(__file__).resolve().parents[1] / "src" / "styleeval"


def _places() -> dict[str, Path]:
    return {"scores": default_cache_dir(), "corpora": _files.cache_dir(),
            "fingerprints": Path(models._fingerprint_cache_path()).parent}


def test_every_cache_is_below_one_root(monkeypatch, tmp_path):
    monkeypatch.delenv(paths.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "xdg" / "styleeval"
    assert paths.cache_root() == root
    assert _places() == {"scores": root / "scores", "corpora": root / "corpora", "fingerprints": root}
    monkeypatch.setenv(paths.ENV, str(tmp_path / "mine"))  # the one variable wins
    assert set(_places().values()) == {tmp_path / "mine" / "scores", tmp_path / "mine" / "corpora", tmp_path / "mine"}
    monkeypatch.delenv(paths.ENV)
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert paths.cache_root() == Path.home() / ".cache" / "styleeval"


def test_no_module_computes_a_cache_folder_of_its_own():
    """A string literal starting a cache path ("~/.cache...", ".cache") or an old variable: only in paths.py."""
    import re

    pattern = re.compile(r"""["']~/\.cache|["']\.cache["']|STYLEEVAL_CACHE_DIR|STYLEEVAL_SCORES_CACHE""")
    offenders = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
                 if p.name != "paths.py" and pattern.search(p.read_text("utf-8"))]
    assert offenders == []
    assert pattern.search('Path("~/.cache/styleeval")') and pattern.search('os.path.join(home, ".cache")')
