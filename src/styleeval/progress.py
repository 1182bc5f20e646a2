"""Progress on long work, the same way everywhere: tqdm bars and stage lines on stderr, on by default where stderr
is a terminal (``progress=None``), off with ``progress=False`` (the CLI's ``--no-progress`` / ``-q``).

>>> enabled(False), enabled(True)
(False, True)
>>> with stage("loading nothing", progress=False):
...     pass
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def enabled(progress: bool | None) -> bool:
    """``progress`` itself, or for ``None`` whether stderr is a terminal (a person is watching)."""
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stderr
        return False


def quiet_libraries() -> None:
    """Silence the progress bars of the libraries styleeval calls (huggingface_hub's downloads, transformers'
    "Loading weights"), for ``-q`` / ``--no-progress``: through ``HF_HUB_DISABLE_PROGRESS_BARS`` for those not imported
    yet (they read it when imported), through their own switches for those already imported; nothing is imported."""
    import os

    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def bar(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
        progress: bool | None = None) -> Any:
    """A tqdm bar on stderr (disabled unless :func:`enabled`); it leaves no line behind when done."""
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=False, disable=not enabled(progress))


@contextmanager
def stage(what: str, progress: bool | None = None) -> Iterator[None]:
    """A stage that shows no bar (loading a model, reading a corpus): ``what ...`` on stderr when it starts and
    ``what: 2.4 s`` when it ends, where :func:`enabled`."""
    if not enabled(progress):
        yield
        return
    start = time.perf_counter()
    print(f"{what} ...", file=sys.stderr, flush=True)
    yield
    print(f"{what}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
