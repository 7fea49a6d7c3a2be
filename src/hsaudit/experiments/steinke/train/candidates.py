"""Steinke, Nasr et al., Table 2's η candidates [inferred: the paper does not say how η was chosen]: per row (B, σ,
T) and per η of ``steinke.table2.lr_grid``, :func:`train_lr_candidate` trains ``tuning_models`` models of the row's
DP-SGD setting — Poisson batches of expected size B, clipping C, noise σ, T steps, the row's shared θ0, **no
canary** — on the training set less ``validation_size`` held-out examples (:func:`validation_split`) and scores each
final model's accuracy on those. The candidates' q is B/(N − V): the same expected batch B (the update's
normaliser), σ and T as the row, on the examples they train on. Which η a row then trains with is
:mod:`hsaudit.experiments.steinke.train.tuning`'s (:func:`~hsaudit.experiments.steinke.train.tuning.select_lr`).

Every spec comes from :func:`hsaudit.experiments.steinke.plan.plan_table2_candidates`. This module imports the engine,
``util`` and :mod:`hsaudit.experiments.steinke.train.rows` (the θ0 and DP-SGD setting it shares with the rows'
populations) only, and only the candidates' jobs (rule ``train_steinke_lr_candidate``) import it: no other job's
code version covers it, and an edit of the image trainer (:mod:`hsaudit.experiments.steinke.train.images`) retrains
no candidate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from hsaudit.engine.dpsgd import pick_device, train_population
from hsaudit.engine.evaluate import population_accuracy
from hsaudit.engine.models import ModelSpec
from hsaudit.engine.psg import population_engine
from hsaudit.experiments.steinke.train.rows import poisson_config, row_theta0
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
    obs = train_population(
        engine=engine,
        theta0=row_theta0(arch, spec, dev),  # the row's θ0: its audit population's

        X=torch.as_tensor(X[train_idx], dtype=torch.float32, device=dev),
        y=torch.as_tensor(y[train_idx], dtype=torch.int64, device=dev),
        batches=None,
        config=poisson_config(spec, n=n),
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


__all__ = ["train_lr_candidate", "validation_split"]
