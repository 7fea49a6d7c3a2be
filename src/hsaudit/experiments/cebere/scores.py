"""The trained populations' gathered scores: shard files → tidy tables (numpy and pandas only).

What the scores job runs (``extract_scores``) and what the audit and the figures read, kept apart from the audit
(:mod:`hsaudit.experiments.cebere.audit`) so that editing an estimator, a rule or a result column never changes the
scores job's code version.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["norms_table", "scores_table"]


def scores_table(shard_paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """Gather shard files into a tidy table with columns run, shard, bit, step, score (higher ⇒ inserted).

    Runs are numbered in shard order (shard i holds runs i·n .. i·n + n − 1).
    """
    frames = []
    offset = 0
    steps_ref = None
    for index, path in enumerate(shard_paths):
        with np.load(path) as f:
            bits, scores, steps = f["bits"], f["scores"], f["steps"]
        if steps_ref is None:
            steps_ref = steps
        elif not np.array_equal(steps, steps_ref):
            raise ValueError(f"shard {path} records steps {steps.tolist()}, expected {steps_ref.tolist()}")
        n, m = scores.shape
        frames.append(
            pd.DataFrame(
                {
                    "run": np.repeat(np.arange(offset, offset + n), m),
                    "shard": np.full(n * m, index, dtype=np.int64),
                    "bit": np.repeat(bits, m),
                    "step": np.tile(steps, n),
                    "score": scores.reshape(-1),
                }
            )
        )
        offset += n
    if not frames:
        raise ValueError("scores_table needs at least one shard")
    return pd.concat(frames, ignore_index=True)


def norms_table(shard_paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """Gather the canary's gradient norms of shard files into a tidy table: run, shard, bit, step, norm.

    Steps are 1-based (the norm at θ_t, before step t's update). Raises ``ValueError`` if a shard has none.
    """
    frames, offset = [], 0
    for index, path in enumerate(shard_paths):
        with np.load(path) as f:
            if "grad_norms" not in f.files:
                raise ValueError(f"shard {path} has no grad_norms (train it with canary_norms: true)")
            bits, norms = f["bits"], f["grad_norms"]
        n, steps = norms.shape
        frames.append(
            pd.DataFrame(
                {
                    "run": np.repeat(np.arange(offset, offset + n), steps),
                    "shard": np.full(n * steps, index, dtype=np.int64),
                    "bit": np.repeat(bits, steps),
                    "step": np.tile(np.arange(1, steps + 1), n),
                    "norm": norms.reshape(-1),
                }
            )
        )
        offset += n
    if not frames:
        raise ValueError("norms_table needs at least one shard")
    return pd.concat(frames, ignore_index=True)
