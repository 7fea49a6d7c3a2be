"""Atomic file writes: an interrupted job never leaves a half-written output that a rerun would trust.

Every writer goes through :func:`atomic_path`: write to a temporary name in the same directory, then
``os.replace`` it onto the final name (atomic on POSIX file systems).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``, on error removed.

    The temporary name keeps ``path``'s suffix (some writers, e.g. ``np.savez`` or matplotlib, choose the format
    from it). Parent directories are created.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_savez(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez(path, **arrays)`` atomically (uncompressed)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


# Columns that hold counts: written as integers even when a concatenation with missing values made them float.
_COUNT_COLUMNS = ("step", "rep", "batch_size", "runs", "runs_per_world", "n_members", "n_nonmembers", "steps")


def write_csv_atomic(frame, path: str | os.PathLike) -> None:
    """Write a pandas DataFrame to CSV atomically (temporary name, then rename).

    Count columns (``step``, ``rep``, ``batch_size``, ...) whose values are all whole numbers are written as
    integers (missing values stay empty), so that ``step`` reads ``25`` rather than ``25.0``.
    """
    frame = frame.copy()
    for col in _COUNT_COLUMNS:
        if col in frame.columns and frame[col].dtype.kind == "f":
            values = frame[col].dropna()
            if (values == values.round()).all():
                frame[col] = frame[col].astype("Int64")
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
