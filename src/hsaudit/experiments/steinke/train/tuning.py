"""Steinke, Nasr et al., Table 2 with η tuned per row on a validation split [inferred: the paper compares batch sizes
at one privacy budget but does not say how η was chosen; one η for every row confounds accuracy with the η's fit].

Per row, every η of ``steinke.table2.lr_grid`` has trained its candidates
(:func:`hsaudit.experiments.steinke.train.candidates.train_lr_candidate`: the row's DP-SGD setting without the
canary, scored by accuracy on a held-out validation split). :func:`select_lr` picks the η with the best mean
validation accuracy (ties: the smaller η), and :func:`train_tuned_shard` trains a shard of the row's audit population
(:func:`hsaudit.experiments.steinke.train.images.train_shard`, Dirac canary, the whole training set) with it,
recording the choice and every candidate's validation accuracy in the shard. The tuning is not in the privacy
accounting (the paper names none either).

Every spec comes from :func:`hsaudit.experiments.steinke.plan.plan_table2`. Only the tuned rows' shard jobs (rule
``train_steinke_tuned_shard``) import this module: adding it retrains no other population.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hsaudit.engine.models import ModelSpec
from hsaudit.experiments.steinke.train.images import train_shard


def select_lr(lrs: npt.ArrayLike, accuracies: Sequence[npt.ArrayLike]) -> int:
    """The index of the η with the best mean validation accuracy over its models; ties go to the smaller η, and a
    candidate whose mean is NaN (no finite accuracy) ranks last.

    >>> select_lr([1.0, 0.5, 2.0], [[0.6, 0.8], [0.7, 0.7], [0.1, 0.2]])  # 0.7 = 0.7: the smaller η, 0.5
    1

    Args:
        lrs: the candidates' η (distinct, any order).
        accuracies: per candidate, its models' validation accuracies.

    Returns:
        The index into ``lrs``.

    Raises:
        ValueError: no candidates, η not distinct and positive, lengths that differ, or a candidate with no models.
    """
    lr = np.asarray(lrs, dtype=np.float64).ravel()
    if lr.size == 0 or len(accuracies) != lr.size:
        raise ValueError(f"need one accuracy array per η, got {lr.size} η and {len(accuracies)} arrays")
    if not (lr > 0).all() or np.unique(lr).size != lr.size:
        raise ValueError(f"η values must be distinct and positive, got {lr.tolist()}")
    means = []
    for value, acc in zip(lr, accuracies):
        acc = np.asarray(acc, dtype=np.float64).ravel()
        if acc.size == 0:
            raise ValueError(f"the candidate η = {value:g} has no models")
        mean = float(acc.mean())
        means.append(mean if np.isfinite(mean) else -np.inf)
    # best mean first, then the smaller η (a deterministic tie-break)
    return int(min(range(lr.size), key=lambda i: (-means[i], lr[i])))


def train_tuned_shard(
    spec: Mapping[str, Any],
    shard: int,
    *,
    arch: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    test: tuple[np.ndarray, np.ndarray],
    candidates: Sequence[Mapping[str, np.ndarray]],
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """One shard of a Table 2 row whose η is tuned: :func:`select_lr` over the row's candidates, then
    :func:`hsaudit.experiments.steinke.train.images.train_shard` (Dirac canary, the whole training set) with that η.

    Args:
        spec: the row's population spec (:func:`hsaudit.experiments.steinke.plan.plan_table2`; ``lr`` ``None``,
            ``lr_tuning`` = ``{grid, validation_size, models}``).
        shard, arch, X, y, test, device, progress: as :func:`hsaudit.experiments.steinke.train.images.train_shard`.
        candidates: the outputs of :func:`hsaudit.experiments.steinke.train.candidates.train_lr_candidate`, one per
            η of ``spec["lr_tuning"]["grid"]``.

    Returns:
        The shard (:func:`hsaudit.experiments.steinke.train.images.train_dirac_shard`) with ``lr`` (the chosen η),
        ``lr_grid [k]``, ``validation_accuracy_mean [k]``, ``validation_accuracy_sd [k]`` (ddof 1; NaN for one
        model), ``validation_models`` and ``n_validation``.

    Raises:
        ValueError: candidates that are not the spec's grid.
    """
    grid = [float(v) for v in spec["lr_tuning"]["grid"]]
    got = [float(c["lr"]) for c in candidates]
    if sorted(got) != sorted(grid) or len(got) != len(grid):
        raise ValueError(f"the candidates' η {got} are not the grid {grid}")
    accuracies = [np.asarray(c["validation_accuracy"], dtype=np.float64) for c in candidates]
    lr = got[select_lr(got, accuracies)]
    out = train_shard("dirac", {**spec, "lr": lr}, shard, arch=arch, X=X, y=y, test=test, device=device,
                      progress=progress)
    order = np.argsort(got)
    return {
        **out,
        "lr": np.float64(lr),
        "lr_grid": np.asarray(got, dtype=np.float64)[order],
        "validation_accuracy_mean": np.array([accuracies[i].mean() for i in order]),
        "validation_accuracy_sd": np.array([accuracies[i].std(ddof=1) if accuracies[i].size > 1 else np.nan
                                            for i in order]),
        "validation_models": np.int64(min(a.size for a in accuracies)),
        "n_validation": np.int64(candidates[0]["n_validation"]),
    }


__all__ = ["select_lr", "train_tuned_shard"]
