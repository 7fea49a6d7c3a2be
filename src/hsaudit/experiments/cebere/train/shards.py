"""One shard of an audit's population: the adversary's insertion and score on the DP-SGD layer.

What the training jobs of the trained-model experiments run (Housing, CIFAR-10): :func:`train_shard` takes the
adversary's crafted object (:mod:`hsaudit.experiments.cebere.train.adversaries`), turns it into an insertion and a
scorer, and trains the shard's models with :func:`hsaudit.engine.dpsgd.train_population`.

- **Bits** (:func:`shard_bits`): the membership bits of a shard are an exact half split (seeded), so every prefix of
  shards is balanced.
- **Streams** (:func:`noise_key`, :func:`theta0_key`): model ``index·size + i`` of an audit draws the counter-based
  noise (:mod:`hsaudit.engine.noise`) and, with per-model θ0, the initialisation of that global index, so a model's
  result does not depend on the shard size it was trained in.
- **Records** (:func:`save_shard`, :func:`insertion_steps`): the oriented score (higher ⇒ inserted) after every
  insertion step.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.dpsgd import (
    THETA0_SCHEMES,
    DPSGDConfig,
    Observations,
    Setup,
    check_data,
    pick_device,
)
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.workers import population_workers, train_in_groups
from hsaudit.experiments.cebere.train.adversaries import Crafted, insertion_tensors, make_scorer, validate_crafted
from hsaudit.util.io import atomic_savez
from hsaudit.util.seeding import derive_seed, rng_for


def train_shard(
    *,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    crafted: Crafted,
    bits: npt.ArrayLike,
    noise_key: int,
    first_model: int = 0,
    theta0: npt.ArrayLike | None = None,
    known_theta0: bool = True,
    canary_norms: bool = False,
    device: str | None = None,
    progress: bool = True,
    backend: str = "auto",
    workers: int | None = None,
) -> Observations:
    """Train ``len(bits)`` models at once with DP-SGD and the adversary's insertion; record their scores.

    Args:
        spec: the architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
        X, y: training set (float features, integer labels).
        setup: the minibatch schedule (and the shared θ0) of the audit.
        config: DP-SGD hyper-parameters (T, B, η, C, σ, k).
        crafted: the adversary's object (:func:`hsaudit.experiments.cebere.train.adversaries.craft`).
        bits: ``[models]`` in {0, 1}; 1 = inserted (member).
        noise_key: key of the audit's counter-based noise (:mod:`hsaudit.engine.noise`).
        first_model: global index of the shard's first model.
        theta0: per-model initialisations ``[models, p]`` (e.g. :func:`hsaudit.engine.dpsgd.population_theta0`);
            ``None``: every model starts from ``setup.theta0``.
        known_theta0: whether the adversary's score may subtract θ0 (see :func:`hsaudit.experiments.cebere.train.adversaries.make_scorer`).
        canary_norms: also record the canary's unclipped gradient norm at every step (canary adversaries).
        device: ``None``/``"auto"`` = CUDA when available, else CPU. Computation is float32.
        progress: tqdm bar over the steps.
        backend: per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`).
        workers: CPU worker threads, each training a contiguous group of the models with single-threaded ops
            (:func:`hsaudit.engine.workers.population_workers`: ``None`` = ``torch.get_num_threads()`` for the FCNN
            engine on the CPU, else 1). Results do not depend on it (every model keeps its own noise stream).

    Returns:
        :class:`hsaudit.engine.dpsgd.Observations`: ``scores`` float64 ``[models, T // k]`` (the oriented score, higher ⇒
        inserted, after the update of every insertion step) and, if asked, ``grad_norms`` ``[models, T]``.

    Raises:
        ValueError: on inconsistent shapes, bits outside {0, 1}, a crafted object of the wrong dimension, or a
            ``spec`` that is not a :class:`hsaudit.engine.models.ModelSpec`.
    """
    spec = require_spec(spec, "spec")
    X, y = check_data(spec, X, y, setup)
    bits = np.asarray(bits)
    if bits.ndim != 1 or bits.size == 0 or not np.all((bits == 0) | (bits == 1)):
        raise ValueError(f"bits must be a non-empty 1-D array of 0/1, got shape {bits.shape}")
    if setup.batches.shape != (config.steps, config.batch_size):
        raise ValueError(
            f"setup.batches has shape {setup.batches.shape}, config wants ({config.steps}, {config.batch_size})"
        )
    if int(first_model) != first_model or first_model < 0:
        raise ValueError(f"first_model must be a non-negative integer, got {first_model}")
    dev = pick_device(device)
    engine = population_engine(spec, dev, backend=backend)
    m = bits.size
    if theta0 is None:
        if setup.theta0.shape != (engine.p,):
            raise ValueError(f"setup.theta0 has shape {setup.theta0.shape}, {spec.name!r} has {engine.p} parameters")
        start = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    else:
        theta0 = np.asarray(theta0, dtype=np.float32)
        if theta0.shape != (m, engine.p):
            raise ValueError(f"theta0 must have shape ({m}, {engine.p}), got {theta0.shape}")
        start = torch.from_numpy(np.ascontiguousarray(theta0)).to(dev)
    validate_crafted(crafted, p=engine.p, spec=spec)
    gradient, canary = insertion_tensors(crafted, dev)
    if canary_norms and canary is None:
        raise ValueError(f"canary_norms needs a canary adversary, got {crafted.adversary!r}")
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    mask = torch.as_tensor(bits, dtype=torch.float32, device=dev)
    workers = population_workers(workers, engine=engine, device=dev, models=m, name=spec.name)

    def group(rows: range) -> dict[str, Any]:
        theta_rows = start if start.dim() == 1 else start[rows.start : rows.stop]
        scorer = make_scorer(crafted, engine, theta_rows, known_theta0=known_theta0)
        return dict(theta0=theta_rows, mask=mask[rows.start : rows.stop], gradient=gradient, canary=canary,
                    observe=scorer, canary_norms=canary_norms)

    parts = train_in_groups(
        engine=engine, X=Xt, y=yt, batches=setup.batches, config=config, noise_key=noise_key,
        first_model=first_model, models=m, workers=workers, progress=progress,
        desc=f"train {spec.name} x{m}" + (f" ({workers} workers, bar: first)" if workers > 1 else ""),
        group=group, finish=lambda obs, rows: obs,
    )
    if len(parts) == 1:
        return parts[0]
    return Observations(
        scores=np.concatenate([p.scores for p in parts]),
        grad_norms=np.concatenate([p.grad_norms for p in parts]) if canary_norms else None,
    )


# -------------------------------------------------------------------------------------- bits and streams


def shard_bits(*, seed: int, key: str, shard_size: int, index: int, dataset: str) -> np.ndarray:
    """Membership bits of one shard: an exact half split (b = 1 ⇒ inserted), seeded by (key, size, index).

    Every shard is balanced on its own, so the first ``R / shard_size`` shards form a balanced population
    whatever R is (Cebere et al. §1 "exact split" [inferred]).

    >>> int(shard_bits(seed=1, key="k", shard_size=10, index=0, dataset="housing").sum())
    5
    """
    if shard_size < 2 or shard_size % 2:
        raise ValueError(f"shard_size must be even and >= 2, got {shard_size}")
    if index < 0:
        raise ValueError(f"shard index must be >= 0, got {index}")
    half = np.repeat(np.array([0, 1], dtype=np.int64), shard_size // 2)
    return rng_for(seed, f"{dataset}-bits", key, shard_size, index).permutation(half)


THETA0_READINGS = ("known", "unknown", "shared_unknown", "per_run_known")
"""How θ0 relates to the runs and the scorer (Cebere et al. Fig. 12 and its readings):
``known``: one θ0 (the setup's) for every run, known to the scorer (θ_T − θ0); ``unknown``: θ0 re-drawn for every
run, unknown (the score reads θ_T); ``shared_unknown``: the setup's one θ0, unknown; ``per_run_known``: θ0
re-drawn for every run and known."""


def theta0_shared(reading: str) -> bool:
    """Whether every run starts from the setup's one θ0 (else each run draws its own)."""
    if reading not in THETA0_READINGS:
        raise ValueError(f"theta0 must be one of {THETA0_READINGS}, got {reading!r}")
    return reading in ("known", "shared_unknown")


def theta0_known(reading: str) -> bool:
    """Whether the scorer subtracts the run's θ0."""
    if reading not in THETA0_READINGS:
        raise ValueError(f"theta0 must be one of {THETA0_READINGS}, got {reading!r}")
    return reading in ("known", "per_run_known")


def per_run_scheme(setup_scheme: str) -> str:
    """The scheme of the per-run θ0 draws (the readings that re-draw θ0 for every run, :func:`theta0_shared`) for a
    setup drawn with ``setup_scheme``: Xavier-normal where the setup keeps PyTorch's default (the paper's "unknown
    θ0" is Xavier), else the setup's."""
    if setup_scheme not in THETA0_SCHEMES:
        raise ValueError(f"theta0_init must be one of {THETA0_SCHEMES}, got {setup_scheme!r}")
    return "xavier_normal" if setup_scheme == "default" else setup_scheme


def noise_key(*, seed: int, key: str, dataset: str) -> int:
    """The key of the counter-based DP noise of audit ``key`` (:mod:`hsaudit.engine.noise`); model i of the audit
    draws the stream of global index i, whatever shard it is trained in."""
    return derive_seed(seed, f"{dataset}-noise", key)


def theta0_key(*, seed: int, key: str, dataset: str) -> int:
    """The key of the per-model initialisations of audit ``key`` (θ0 unknown:
    :func:`hsaudit.engine.dpsgd.population_theta0`)."""
    return derive_seed(seed, f"{dataset}-theta0", key)


# ------------------------------------------------------------------------------------------------ records


def save_shard(
    path: str | os.PathLike,
    *,
    bits: npt.ArrayLike,
    scores: npt.ArrayLike,
    steps: npt.ArrayLike,
    grad_norms: npt.ArrayLike | None = None,
) -> None:
    """Write one shard (bits [n], scores [n, n_steps], recorded steps [n_steps], optionally the canary's gradient
    norms [n, T]) to ``.npz``, atomically."""
    bits = np.asarray(bits, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.int64)
    if scores.shape != (bits.size, steps.size):
        raise ValueError(f"scores must have shape {(bits.size, steps.size)}, got {scores.shape}")
    arrays = {"bits": bits, "scores": scores, "steps": steps}
    if grad_norms is not None:
        grad_norms = np.asarray(grad_norms, dtype=np.float64)
        if grad_norms.ndim != 2 or grad_norms.shape[0] != bits.size:
            raise ValueError(f"grad_norms must have shape ({bits.size}, T), got {grad_norms.shape}")
        arrays["grad_norms"] = grad_norms
    atomic_savez(path, arrays)


def insertion_steps(*, steps: int, period: int) -> np.ndarray:
    """The 1-based steps t ≤ T with t % k == 0 at which the canary is inserted and the audit recorded.

    >>> insertion_steps(steps=10, period=5).tolist()
    [5, 10]
    """
    if steps < 1 or period < 1:
        raise ValueError(f"steps and period must be >= 1, got steps={steps}, period={period}")
    return np.arange(period, steps + 1, period, dtype=np.int64)
