"""Where styleeval keeps what it downloads or builds: one cache root, named by one environment variable.

The root is ``$STYLEEVAL_CACHE``, else ``$XDG_CACHE_HOME/styleeval``, else ``~/.cache/styleeval``. Below it:

- ``corpora/``: corpus files downloaded from their original URLs (checksummed; :mod:`styleeval.corpora`);
- ``scores/``: the scores cache of ``styleeval metaeval`` and ``styleeval reproduce-paper`` (``--cache-dir``);
- ``tiny-random/``: the ``tiny-random`` preset model, built on first use;
- ``gguf/``: GGUF presets' files (fetched on first use, SHA-256 checked) and ``gguf/converted/``: every GGUF file
  converted once into a float32 model folder;
- ``nltk_data/``: WordNet 3.0 and Punkt for METEOR, copied or downloaded on first use;
- ``fingerprints.json``: the file digests behind local model folders' and GGUF files' signatures.

>>> import os
>>> os.environ["STYLEEVAL_CACHE"] = "/data/styleeval-cache"
>>> str(cache_path("scores"))
'/data/styleeval-cache/scores'
>>> del os.environ["STYLEEVAL_CACHE"]
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "STYLEEVAL_CACHE"
"""The environment variable naming the cache root."""


def cache_root() -> Path:
    """``$STYLEEVAL_CACHE``, else ``$XDG_CACHE_HOME/styleeval``, else ``~/.cache/styleeval`` (read when called)."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "styleeval"


def cache_path(*parts: str) -> Path:
    """A path below :func:`cache_root`."""
    return cache_root().joinpath(*parts)
