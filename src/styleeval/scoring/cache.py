"""On-disk cache of metric scores, one JSON file per (metric signature, dataset fingerprint).

Layout: ``<root>/<metric name>/<sha256(signature)[:16]>/<fingerprint>.json`` holding the signature, the
fingerprint, the number of rows and the scores (NaN where a row could not be scored, e.g. no reference).
Files are written atomically (temporary file + ``os.replace``) as soon as a (metric, dataset) is done, so
an interrupted run resumes where it stopped and a finished table is recomputed without scoring anything.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from styleeval.atomic import atomic_write, write_error
from styleeval.errors import UserError
from styleeval.files.resume import drop_torn_tail
from styleeval.paths import cache_path


def default_cache_dir() -> Path:
    """``scores/`` in styleeval's cache (:mod:`styleeval.paths`: ``$STYLEEVAL_CACHE``, ``~/.cache/styleeval``)."""
    return cache_path("scores")


class ScoresCache:
    """Scores keyed by (signature, fingerprint); ``root=None`` disables caching (every lookup misses)."""

    def __init__(self, root: str | os.PathLike[str] | None) -> None:
        self.root = Path(root).expanduser() if root is not None else None
        self.hits = 0
        self.misses = 0

    def path(self, signature: str, fingerprint: str) -> Path:
        """Where the scores of ``signature`` on the dataset ``fingerprint`` live."""
        if self.root is None:
            raise ValueError("caching is disabled (no cache directory)")
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", signature.split("|", 1)[0])[:60] or "metric"
        digest = hashlib.sha256(signature.encode("utf-8")).hexdigest()[:16]
        return self.root / name / digest / f"{fingerprint}.json"

    def load(self, signature: str, fingerprint: str, n: int) -> list[float] | None:
        """The cached scores, or ``None`` when absent, unreadable or not for ``n`` rows."""
        if self.root is None:
            self.misses += 1
            return None
        path = self.path(signature, fingerprint)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        scores = payload.get("scores") if isinstance(payload, dict) else None
        if (not isinstance(payload, dict) or payload.get("signature") != signature or not isinstance(scores, list)
                or len(scores) != n or not all(_is_score(s) for s in scores)):
            self.misses += 1  # absent, stale or corrupt: recomputed (and overwritten), never trusted
            return None
        self.hits += 1
        return [math.nan if s is None else float(s) for s in scores]

    def partial_path(self, signature: str, fingerprint: str) -> Path:
        """Where the finished rows of an unfinished (signature, dataset) are appended."""
        return self.path(signature, fingerprint).with_suffix(".partial.jsonl")

    def load_partial(self, signature: str, fingerprint: str, n: int) -> dict[int, float]:
        """Row -> score of the rows an interrupted run saved (a torn or corrupt line ends the read)."""
        if self.root is None:
            return {}
        return _read_rows(self.partial_path(signature, fingerprint), n)

    def shard_path(self, signature: str, fingerprint: str, shard: Any) -> Path:
        """Where shard ``K/N`` of a sharded run (``evaluate --shard K/N``) appends its rows."""
        return self.path(signature, fingerprint).with_suffix(f".shard-{shard.index}-of-{shard.count}.jsonl")

    def load_shard(self, signature: str, fingerprint: str, n: int, shard: Any) -> dict[int, float]:
        """Row -> score of the rows shard ``K/N`` has saved."""
        if self.root is None:
            return {}
        return _read_rows(self.shard_path(signature, fingerprint, shard), n)

    def load_shards(self, signature: str, fingerprint: str, n: int) -> tuple[dict[int, float], list[str], int]:
        """The rows every shard file of (signature, dataset) holds, merged: ``(row -> score, the shards found as
        "K/N", N)``; ``({}, [], 0)`` without shard files. Shard files of different N, or one row in two files, raise
        ``ValueError`` naming them."""
        if self.root is None:
            return {}, [], 0
        base = self.path(signature, fingerprint)
        found = []
        for path in sorted(base.parent.glob(f"{fingerprint}.shard-*-of-*.jsonl")):
            match = re.fullmatch(rf"{re.escape(fingerprint)}\.shard-(\d+)-of-(\d+)\.jsonl", path.name)
            if match:
                found.append((int(match[1]), int(match[2]), path))
        if not found:
            return {}, [], 0
        counts = sorted({count for _, count, _ in found})
        if len(counts) > 1:
            raise UserError(f"{base.parent}: shard files of {' and '.join(map(str, counts))} shards; a run is sharded "
                            "one way: remove the files of the other")
        merged: dict[int, float] = {}
        owner: dict[int, Path] = {}
        for _, _, path in found:
            for row, score in _read_rows(path, n).items():
                if row in owner:
                    raise UserError(f"row {row} is in {owner[row]} and in {path}: the shards overlap")
                owner[row] = path
                merged[row] = score
        return merged, [f"{k}/{count}" for k, count, _ in found], counts[0]

    def append_partial(self, signature: str, fingerprint: str, rows: Sequence[int], scores: Sequence[float],
                       shard: Any = None) -> None:
        """Append the scores of finished rows (flushed and synced to disk); to the shard's file with ``shard``."""
        if self.root is None:
            return

        path = self.partial_path(signature, fingerprint) if shard is None else \
            self.shard_path(signature, fingerprint, shard)
        line = json.dumps({"rows": [int(r) for r in rows],
                           "scores": [None if not math.isfinite(s) else float(s) for s in scores]})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists():  # a line torn by a kill is cut off first, so the new line stays readable
                drop_torn_tail(path)
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            raise write_error(path, err) from None

    def save(self, signature: str, fingerprint: str, scores: Sequence[float], dataset: str = "") -> Path | None:
        """Write the scores atomically; returns the path (``None`` when caching is disabled)."""
        if self.root is None:
            return None

        path = self.path(signature, fingerprint)
        payload = {
            "signature": signature,
            "fingerprint": fingerprint,
            "dataset": dataset,
            "n": len(scores),
            "scores": [None if not math.isfinite(s) else float(s) for s in scores],
        }
        atomic_write(path, lambda f: json.dump(payload, f))  # a full disk: one line naming the file
        self.partial_path(signature, fingerprint).unlink(missing_ok=True)
        for shard_file in path.parent.glob(f"{fingerprint}.shard-*-of-*.jsonl"):  # merged into the whole
            shard_file.unlink(missing_ok=True)
        return path


class CacheSink:
    """A :class:`~styleeval.run.ScoringRun`'s sink into a :class:`ScoresCache`: the rows (positions in the dataset)
    of (``signature``, ``fingerprint``) saved by earlier runs (``values``, row -> score: the partial file's, or with ``shard`` the
    shard file's; a caller may add the rows it knows from elsewhere), and each finished chunk appended to that file,
    flushed and synced, before the next one is scored."""

    def __init__(self, cache: ScoresCache, signature: str, fingerprint: str, n: int, shard: Any = None) -> None:
        self.cache, self.signature, self.fingerprint, self.shard = cache, signature, fingerprint, shard
        self.values = cache.load_partial(signature, fingerprint, n) if shard is None else \
            cache.load_shard(signature, fingerprint, n, shard)

    def holds(self, row: int) -> bool:
        return int(row) in self.values

    def write(self, rows: list[int], values: Sequence[float]) -> None:
        rows = [int(r) for r in rows]
        self.cache.append_partial(self.signature, self.fingerprint, rows, list(values), shard=self.shard)
        self.values.update(zip(rows, values, strict=True))


def _read_rows(path: Path, n: int) -> dict[int, float]:
    """Row -> score of a file of appended ``{"rows": [...], "scores": [...]}`` lines (a torn or corrupt line ends
    the read)."""
    out: dict[int, float] = {}
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError:
        return {}
    for line in lines:
        try:
            chunk = json.loads(line)
            rows, scores = chunk["rows"], chunk["scores"]
            if not (len(rows) == len(scores) and all(isinstance(r, int) and 0 <= r < n for r in rows)
                    and all(_is_score(s) for s in scores)):
                break
        except (ValueError, KeyError, TypeError):
            break
        out.update((r, math.nan if s is None else float(s)) for r, s in zip(rows, scores, strict=True))
    return out


def _is_score(value: object) -> bool:
    """A stored score: a number (not a bool) or ``None`` (NaN)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
