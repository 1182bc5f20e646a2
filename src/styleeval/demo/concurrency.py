"""The Space's concurrency: :class:`Later`, a value computed once (in the background or by its first caller), and
:class:`Gate`, requests side by side and one exclusive job alone."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class Later(Generic[T]):
    """A value computed once, when first asked for (:meth:`get`) or in a background thread (:meth:`start`), whichever
    comes first: every caller gets that one value, callers who ask while it is computed wait for it. How the Space
    puts its slow Meta-evaluation tab after its URL (a compute that raises is tried again by the next caller)."""

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._value: T | None = None

    def get(self) -> T:
        """The value, computed now if no one has yet (waiting for a computation under way)."""
        with self._lock:
            if not self._done.is_set():
                self._value = self._compute()
                self._done.set()
        return self._value  # type: ignore[return-value]

    def start(self) -> threading.Thread:
        """Computes the value in a background thread (a daemon: it never holds the process open); returns it."""
        thread = threading.Thread(target=self.get, name="styleeval-later", daemon=True)
        thread.start()
        return thread

    def peek(self) -> T | None:
        """The value where it is computed, else ``None`` (never waits)."""
        return self._value if self._done.is_set() else None


class Gate:
    """Requests run side by side; one exclusive job (the Space's Meta-evaluation tab, computed while the Space is up)
    runs alone: it waits for the requests under way, and requests that come meanwhile wait for it (a job waiting
    goes first). Two threads importing the libraries a first request loads (torch, transformers, matplotlib) break
    them: ``partially initialized module``."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def request(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and not self._active)
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
