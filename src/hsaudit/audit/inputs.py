"""Checks of an audit's inputs at the public boundaries: scores, membership labels, levels, class sizes, seeds.

Every audit function validates through these, so that bad input gives one ``ValueError`` that names the value
(docs/audit.md, "CLI": missing labels, NaN scores, an empty class, a level outside (0, 1)). numpy only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["as_members", "as_rng", "as_scores", "check_classes", "check_unit"]


def check_unit(name: str, value: float) -> float:
    """``value`` as a float in the open interval (0, 1) (a δ, a confidence, a selection fraction)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}") from None
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value}")
    return v


def as_scores(scores: npt.ArrayLike, ndim: int = 1) -> np.ndarray:
    """Finite numeric scores of ``ndim`` dimensions; float32 is kept (faster sorting), everything else is float64."""
    s = np.asarray(scores)
    if s.dtype == object or not (np.issubdtype(s.dtype, np.number) or s.dtype == bool):
        try:
            s = s.astype(float)
        except (TypeError, ValueError):
            raise ValueError("scores must be numeric") from None
    if s.ndim != ndim:
        raise ValueError(f"scores must be {ndim}-dimensional, got shape {s.shape}")
    if s.dtype != np.float32:
        s = s.astype(np.float64, copy=False)
    bad = ~np.isfinite(s)
    if bad.any():
        n_nan = int(np.isnan(s).sum())
        raise ValueError(
            f"scores must be finite: {n_nan} NaN (missing) and {int(bad.sum()) - n_nan} infinite value(s) found"
        )
    return s


def as_members(members: npt.ArrayLike, n: int) -> np.ndarray:
    """0/1 (or bool) membership labels of ``n`` scores as a bool array (True = member, canary inserted)."""
    m = np.asarray(members)
    if m.ndim != 1 or m.shape[0] != n:
        raise ValueError(f"members must be 1-dimensional with one label per score ({n}), got shape {m.shape}")
    if m.dtype == bool:
        return m
    try:
        mf = m.astype(float)
    except (TypeError, ValueError):
        raise ValueError("members must be 0/1 labels (1 = member), got non-numeric values") from None
    ok = (mf == 0) | (mf == 1)
    if not ok.all():
        bad = np.unique(m[~ok])[:5]
        raise ValueError(f"members must be 0/1 labels (1 = member), found {bad.tolist()}")
    return mf == 1


def check_classes(n0: int, n1: int, minimum: int = 1) -> None:
    """Both classes hold at least ``minimum`` scores (n0 non-members, n1 members)."""
    if n1 < minimum or n0 < minimum:
        which = "members (label 1)" if n1 < minimum else "non-members (label 0)"
        have = n1 if n1 < minimum else n0
        if minimum == 1:
            raise ValueError(f"the audit needs both classes: no {which} found")
        raise ValueError(f"this audit mode needs at least {minimum} {which}, got {have}")


def as_rng(seed: np.random.Generator | int | None) -> np.random.Generator:
    """A Generator from a seed: the Generator itself (its stream is consumed), an integer seed, or None (seed 0)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng(0)
    try:
        return np.random.default_rng(int(seed))
    except (TypeError, ValueError):
        raise ValueError(f"rng must be a numpy Generator, an integer seed or None, got {seed!r}") from None
