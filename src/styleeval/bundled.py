"""The repository's folders that users need beside the library, found wherever styleeval runs from: the ``evaluate``
modules (``metrics/<name>/``), the Space (``spaces/<name>/``) and the dataset cards (``datasets/<name>/README.md``).

In a source checkout (``<root>/src/styleeval``, an editable install included) they are the checkout's own folders,
the canonical layout; a wheel carries a copy of them in ``styleeval/_bundled/`` (``setup.py`` copies them when it
builds the package), so that ``pip install styleeval`` can do what the README shows::

    import evaluate, styleeval
    logprob = evaluate.load(styleeval.evaluate_module("logprob_style"))
"""

from __future__ import annotations

from pathlib import Path

from styleeval.errors import UserError

PACKAGE = Path(__file__).resolve().parent
BUNDLE = PACKAGE / "_bundled"
"""Where a wheel carries the folders (``_bundled/metrics/<name>/``, ``_bundled/spaces/<name>/``,
``_bundled/datasets/<name>/``)."""
KINDS = {"metrics": "evaluate module", "spaces": "Space", "datasets": "dataset card"}
"""The repository folders a wheel carries, and what one entry of each is."""


def checkout_root() -> Path | None:
    """The source checkout this package runs from (``<root>/src/styleeval`` with ``<root>/pyproject.toml``), or
    ``None`` (an installed wheel)."""
    root = PACKAGE.parent.parent
    return root if PACKAGE.parent.name == "src" and (root / "pyproject.toml").is_file() else None


def base() -> Path:
    """Where the folders are: the checkout's root, else the installed package's ``_bundled/``."""
    root = checkout_root()
    return BUNDLE if root is None else root


def names(kind: str) -> list[str]:
    """The entries of ``kind`` (``"metrics"``, ``"spaces"``, ``"datasets"``) here, sorted."""
    top = base() / kind
    return sorted(p.name for p in top.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) \
        if top.is_dir() else []


def folder(kind: str, name: str) -> Path:
    """The folder of entry ``name`` of ``kind``, in the checkout or the installed package; a
    :class:`~styleeval.errors.UserError` naming the entries there when there is none."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    path = base() / kind / name
    if not path.is_dir():
        raise UserError(f"no {KINDS[kind]} named {name!r} in {base() / kind}; there are: "
                        f"{', '.join(names(kind)) or 'none'}")
    return path


def evaluate_module(name: str) -> str:
    """The folder of the ``evaluate`` module ``name`` (``"logprob_style"``, ``"llm_autorater"``): what
    ``evaluate.load`` takes, from a checkout or from an installed wheel.

    >>> Path(evaluate_module("logprob_style"), "logprob_style.py").is_file()
    True
    """
    path = folder("metrics", name)
    if not (path / f"{name}.py").is_file():
        raise UserError(f"{path} has no {name}.py: not an evaluate module")
    return str(path)


def space_app(name: str = "style_eval_demo") -> Path:
    """The ``app.py`` of the Space ``name`` (what ``styleeval space`` runs)."""
    return folder("spaces", name) / "app.py"


def dataset_card(name: str) -> Path:
    """The dataset card (``README.md``) of corpus ``name`` (what ``styleeval build-datasets`` writes beside the
    data)."""
    return folder("datasets", name) / "README.md"
