"""A lock between the jobs of one machine (or of one shared file system): :func:`file_lock`.

Two jobs that prepare data from the same synthetic image copy (``source: synthetic``; e.g. a training and a test
split of Steinke et al.'s fig4, or D and a pre-training set of Yoon et al.) would otherwise both find the copy
missing, or one would read it while the other is still writing it. The data-preparation scripts hold the lock of
their data directory while they check for, write and read the copy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` (created, with its parents, if missing) for the ``with`` block; another
    process asking for the same lock waits until it is released (at the block's end, or when its holder dies).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d, file_lock(Path(d) / "x.lock") as held:
    ...     held.name
    'x.lock'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def data_lock(section: dict) -> Path:
    """The lock file of a dataset section's data directory (``data_dir``, default ``data``)."""
    return Path(section.get("data_dir", "data")) / ".prepare.lock"
