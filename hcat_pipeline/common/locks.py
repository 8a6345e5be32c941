"""An exclusive lock on a file (``fcntl.flock``): writers that append to shared files take it one at a time.

Between processes and between threads of one process alike (each ``file_lock`` opens the file anew, and flock
locks belong to the open file). Not re-entrant: code holding the lock must not take the same lock again."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["file_lock"]


@contextmanager
def file_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created with its folder when missing) for the ``with`` block."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
