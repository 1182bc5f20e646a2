"""Progress on long work, the same way everywhere: tqdm bars and stage lines on stderr, on by default where stderr
is a terminal (``progress=None``), off with ``progress=False`` (the CLI's ``--no-progress`` / ``-q``). The steps of
the longest runs (:func:`steps`: the meta-evaluation's, minutes to hours) are never silent: where no bar shows
(``progress=None``, stderr a file or a pipe), one line per finished step.

>>> enabled(False), enabled(True)
(False, True)
>>> with stage("loading nothing", progress=False):
...     pass
>>> with watched(False), loading("model nothing"):  # what a model loaded deep inside a quiet run shows: nothing
...     pass
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_WATCHED: ContextVar[bool] = ContextVar("styleeval_progress_watched", default=False)


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
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars  # noqa: PLC0415 - heavy (huggingface_hub)

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging  # noqa: PLC0415 - heavy (transformers)

        hf_logging.disable_progress_bar()


def bar(iterable: Iterable[Any] | None = None, *, total: int | None = None, initial: int = 0, desc: str = "",
        unit: str = "it", unit_scale: bool = False, leave: bool = False, progress: bool | None = None) -> Any:
    """A tqdm bar on stderr (disabled unless :func:`enabled`), over ``iterable`` or, without one, moved by hand
    (``.update(n)``, ``.close()``, or as a context manager) from ``initial`` towards ``total``; ``unit_scale``: 1.2M
    rather than 1200000 (bytes); it leaves no line behind when done unless ``leave``. Every bar styleeval shows is
    made here.

    >>> with bar(total=3, initial=1, unit="row", progress=False) as rows:
    ...     rows.update(2)
    >>> rows.total, rows.disable
    (3, True)
    """
    from tqdm.auto import tqdm  # noqa: PLC0415 - heavy (tqdm)

    return tqdm(iterable, total=total, initial=initial, desc=desc, unit=unit, unit_scale=unit_scale, leave=leave,
                disable=not enabled(progress))


def steps(items: Sequence[Any], *, desc: str, unit: str, progress: bool | None = None,
          name: Callable[[Any], str] = str, units: str | None = None) -> Iterator[Any]:
    """``items``, one step each: a :func:`bar` where :func:`enabled`; where ``progress`` is ``None`` and stderr is
    not a terminal (a log file, a pipe: no bar), one line on stderr as each step ends, ``desc: k/n units done
    (name(item)), t s`` (the time since the first step began; ``units``: the plural, default ``unit + "s"``), so that
    a long run written to a log is never silent; nothing with ``progress=False``."""
    if enabled(progress) or progress is not None:
        yield from bar(items, desc=desc, unit=unit, progress=progress)
        return
    start, total = time.perf_counter(), len(items)
    for k, item in enumerate(items, start=1):
        yield item
        plural = unit if total == 1 else units or unit + "s"
        print(f"{desc}: {k}/{total} {plural} done ({name(item)}), {time.perf_counter() - start:.1f} s",
              file=sys.stderr, flush=True)


@contextmanager
def stage(what: str, progress: bool | None = None) -> Iterator[None]:
    """A stage that shows no bar (loading a model, reading a corpus): ``what ...`` on stderr when it starts and
    ``what: 2.4 s`` when it ends, where :func:`enabled`."""
    if not enabled(progress):
        yield
        return
    from tqdm.auto import tqdm  # noqa: PLC0415 - heavy (tqdm)

    start = time.perf_counter()
    tqdm.write(f"{what} ...", file=sys.stderr)  # above a bar that is open (evaluate's metrics)
    yield
    tqdm.write(f"{what}: {time.perf_counter() - start:.1f} s", file=sys.stderr)


@contextmanager
def watched(progress: bool | None) -> Iterator[None]:
    """Within it, :func:`loading` shows its stage where ``progress`` is :func:`enabled`: how a long run (``evaluate``,
    the CLI's ``-q``) passes its choice down to a model loaded through layers that take no progress argument (the
    shared backends, loaded once per process whoever asks first). Per thread and task: concurrent callers are apart."""
    token = _WATCHED.set(enabled(progress))
    try:
        yield
    finally:
        _WATCHED.reset(token)


def loading(what: str) -> Any:
    """``stage("loading " + what)`` inside a :func:`watched` run that shows progress; silent elsewhere."""
    return stage(f"loading {what}", _WATCHED.get())
