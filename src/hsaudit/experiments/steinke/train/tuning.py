"""Steinke, Nasr et al., Table 2 with η tuned per row on a validation split [inferred: the paper compares batch sizes
at one privacy budget but does not say how η was chosen; one η for every row confounds accuracy with the η's fit].

Per row (B, σ, T) and per η of ``steinke.table2.lr_grid``, a *candidate* (:func:`train_lr_candidate`) trains
``tuning_models`` models of the row's DP-SGD setting — Poisson batches of expected size B, clipping C, noise σ, T
steps, the row's shared θ0, **no canary** — on the training set less ``validation_size`` held-out examples
(:func:`validation_split`) and scores each final model's accuracy on those. :func:`select_lr` picks the η with the
best mean validation accuracy (ties: the smaller η), and :func:`train_tuned_shard` trains a shard of the row's audit
population (:func:`hsaudit.experiments.steinke.train.images.train_dirac_shard`, the whole training set) with it,
recording the choice and every candidate's validation accuracy in the shard. The tuning is not in the privacy
accounting (as in the paper's, which names none).

The candidates' q is B/(N − V): the same expected batch B (the update's normaliser), σ and T as the row, on the
examples they train on. Every spec comes from :mod:`hsaudit.experiments.steinke.plan`
(:func:`~hsaudit.experiments.steinke.plan.plan_table2_candidates`, :func:`~hsaudit.experiments.steinke.plan.plan_table2`).

This module imports the engine, ``util`` and :mod:`hsaudit.experiments.steinke.train.images` only, and only the tuning
jobs import it: adding it retrains no other population.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.dpsgd import DPSGDConfig, init_theta0, pick_device, train_population
from hsaudit.engine.evaluate import population_accuracy
from hsaudit.engine.models import ModelSpec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.sampling import Poisson
from hsaudit.experiments.steinke.train.images import train_shard
from hsaudit.util.seeding import derive_seed


def validation_split(n: int, size: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The η tuning's split of a training set of ``n`` examples: ``size`` validation indices drawn uniformly without
    replacement with the plan's seed, the rest for training (both ascending). One split per (seed, n, size), shared
    by every row and every η.

    >>> train, val = validation_split(10, 3, seed=0)
    >>> len(train), len(val), sorted(set(train) | set(val)) == list(range(10))
    (7, 3, True)

    Raises:
        ValueError: ``size`` not in [1, n − 1].
    """
    n, size = int(n), int(size)
    if not 1 <= size < n:
        raise ValueError(f"validation_size must be in [1, N - 1 = {n - 1}], got {size}")
    order = np.random.default_rng(derive_seed(seed, "steinke-table2-validation")).permutation(n)
    return np.sort(order[size:]), np.sort(order[:size])


def train_lr_candidate(
    spec: Mapping[str, Any],
    *,
    arch: ModelSpec,
    X: np.ndarray,
    y: np.ndarray,
    device: str | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Train one η candidate of a Table 2 row: ``spec["models"]`` models with the row's DP-SGD setting and
    ``spec["lr"]``, no canary, on the training set less the validation split, and score them on the split.

    Args:
        spec: a candidate's spec (:func:`hsaudit.experiments.steinke.plan.plan_table2_candidates`): ``lr``,
            ``batch_size``, ``noise_multiplier``, ``steps``, ``clip_norm``, ``backend``, ``models``,
            ``validation_size``, ``seed``, ``key``.
        arch: the architecture ``spec["model"]`` names, resolved once by the caller
            (:func:`hsaudit.engine.models.model_spec`).
        X, y: the whole training set (N examples; the split is :func:`validation_split`).
        device: ``None``/``"auto"`` (CUDA when present), ``"cpu"`` or ``"cuda"``.
        progress: a tqdm bar over the steps.

    Returns:
        ``validation_accuracy [models]`` float64, ``lr``, ``sampling_rate`` (B/(N − V)), ``batch_size``,
        ``noise_multiplier``, ``steps``, ``n_train`` (N − V) and ``n_validation`` (V).

    Raises:
        ValueError: a validation split that leaves fewer than B training examples.
    """
    train_idx, val_idx = validation_split(len(y), spec["validation_size"], seed=spec["seed"])
    n, batch = len(train_idx), int(spec["batch_size"])
    if not 1 <= batch <= n:
        raise ValueError(f"batch_size must be in [1, N - validation_size = {n}], got {batch}")
    dev = pick_device(device)
    engine = population_engine(arch, dev, backend=spec["backend"])
    # the row's θ0 (its audit population's, :func:`hsaudit.experiments.steinke.train.images.train_dirac_shard`)
    theta0 = torch.as_tensor(
        init_theta0(arch, scheme="default", seed=derive_seed(spec["seed"], "steinke-fig2-theta0")), device=dev
    )
    config = DPSGDConfig(
        steps=int(spec["steps"]),
        batch_size=batch,
        lr=float(spec["lr"]),
        clip_norm=float(spec["clip_norm"]),
        noise_multiplier=float(spec["noise_multiplier"]),
        sampling=Poisson(batch / n),
    )
    obs = train_population(
        engine=engine,
        theta0=theta0,
        X=torch.as_tensor(X[train_idx], dtype=torch.float32, device=dev),
        y=torch.as_tensor(y[train_idx], dtype=torch.int64, device=dev),
        batches=None,
        config=config,
        noise_key=derive_seed(spec["seed"], "steinke-lr-candidate-noise", spec["key"]),
        sampling_key=derive_seed(spec["seed"], "steinke-lr-candidate-sampling", spec["key"]),
        models=range(int(spec["models"])),
        keep_final=True,
        progress=progress,
        desc=f"lr {spec['lr']:g} candidate",
    )
    accuracy = population_accuracy(arch, torch.as_tensor(obs.theta, device=dev), X[val_idx], y[val_idx])
    return {
        "validation_accuracy": np.asarray(accuracy, dtype=np.float64),
        "lr": np.float64(spec["lr"]),
        "sampling_rate": np.float64(batch / n),
        "batch_size": np.int64(batch),
        "noise_multiplier": np.float64(spec["noise_multiplier"]),
        "steps": np.int64(spec["steps"]),
        "n_train": np.int64(n),
        "n_validation": np.int64(len(val_idx)),
    }


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
        candidates: the outputs of :func:`train_lr_candidate`, one per η of ``spec["lr_tuning"]["grid"]``.

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


__all__ = ["select_lr", "train_lr_candidate", "train_tuned_shard", "validation_split"]
