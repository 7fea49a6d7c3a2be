"""What the training jobs of the one-run study run: the m canary coordinates, their bits, and a shard of models
(imports the engine layer only; the plan is :mod:`hsaudit.experiments.one_run.plan`, the audit table
:mod:`hsaudit.experiments.one_run.audit`, the figure :mod:`hsaudit.experiments.one_run.figures`; docs/one_run.md).

In the hidden-state threat model a canary here is A_GC-R's gradient canary (Cebere et al. 2025, Algorithm 2) m
times over, the canary registry's Dirac gradient in its family form: canary j is ∇*_j = C·e_{d_j} on its own
coordinate d_j (distinct coordinates), and model i includes it
with its own bit b_ij ~ Bernoulli(½), independent of everything else. The DP-SGD layer adds the per-model inserted
gradient Σ_j b_ij ∇*_j at every insertion step, exactly where A_GC-R adds its one ∇*
(:func:`hsaudit.engine.dpsgd.run_population` with a ``[models, p]`` gradient). The score of canary j in model i is
A_GC-R's score of its coordinate in the final model, −(θ_T[d_j] − θ0[d_j]) (higher ⇒ included).

- **Canaries** (:func:`craft_canaries`): ``random`` (m distinct coordinates drawn uniformly) or ``least_moving``
  (the m smallest entries of a ranking of the coordinates by their movement in a noiseless, unclipped simulation
  of training: A_GC-S Noiseless-PS's ranking, which the crafting job takes from Cebere et al.'s adversary,
  :func:`hsaudit.experiments.cebere.train.adversaries.craft`).
- **Bits** (:func:`canary_bits`): model i's m bits are seeded by (key, i), so they do not depend on the shard size.
- **Training** (:func:`train_one_run_shard`): a shard of models, each with its m canaries; scores ``[models, m]``.
  The canary-free runs of the corrected scores are the same trainer with every bit 0: the noise-free run of
  ``noiseless`` (σ = 0) and the K reference models of ``reference`` (their own noise, :func:`reference_noise_key`);
  the ``calibrated`` score's K reference models carry canaries with their own bits (:func:`reference_bits`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.canaries import dirac_gradient
from hsaudit.engine.dpsgd import DPSGDConfig, Setup, check_data, pick_device, train_population
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.workers import population_workers, run_in_groups
from hsaudit.util.io import atomic_savez
from hsaudit.util.seeding import derive_seed, rng_for


# ------------------------------------------------------------------------------------------------ canaries


@dataclass(frozen=True)
class Canaries:
    """m gradient canaries on distinct coordinates: ∇*_j = C·e_{d_j}.

    Attributes:
        coordinates: int64 ``[m]``, distinct flat-parameter indices d_j.
        clip_norm: C, the norm of every canary.
        rule: how the coordinates were chosen (:data:`hsaudit.experiments.one_run.plan.COORDINATE_RULES`).
        ranking: ``least_moving`` only: the simulated movement S ``[p]`` the coordinates are the m smallest of.
    """

    coordinates: np.ndarray
    clip_norm: float
    rule: str
    ranking: np.ndarray | None = None

    def __post_init__(self) -> None:
        d = np.asarray(self.coordinates)
        if d.ndim != 1 or d.size == 0 or np.unique(d).size != d.size:
            raise ValueError(f"coordinates must be a non-empty 1-D array of distinct indices, got {d.tolist()}")

    @property
    def m(self) -> int:
        return int(np.asarray(self.coordinates).size)

    def gradients(self, bits: npt.ArrayLike, p: int) -> np.ndarray:
        """The per-model inserted gradients Σ_j b_ij C e_{d_j}, float32 ``[models, p]``, of bits ``[models, m]``: the
        Dirac canary's family form (:func:`hsaudit.engine.canaries.dirac_gradient`)."""
        return dirac_gradient(p, self.coordinates, norm=self.clip_norm, bits=bits)


def craft_canaries(
    rule: str,
    *,
    canaries: int,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    seed: int,
    ranking: npt.ArrayLike | None = None,
) -> Canaries:
    """Choose the m canary coordinates (before training, from what the adversary knows: θ0, batches, data).

    Args:
        rule: ``random`` (m distinct coordinates, uniform) or ``least_moving`` (the m smallest entries of
            ``ranking``; ties by index).
        canaries: m.
        spec, X, y, setup, config: the training the canaries go into (data checked against it); ``spec`` is the
            architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
        seed: the adversary's seed (``random``).
        ranking: ``least_moving`` only: S ``[p]``, each coordinate's movement in a noiseless, unclipped simulation
            of training (A_GC-S Noiseless-PS's ranking: the ``ranking`` of
            :func:`hsaudit.experiments.cebere.train.adversaries.craft`).

    Raises:
        ValueError: unknown rule, m larger than the model's parameter count (naming both), a ranking missing or
            of the wrong shape.
    """
    if rule not in ("random", "least_moving"):
        raise ValueError(f"rule must be 'random' or 'least_moving', got {rule!r}")
    check_data(require_spec(spec, "spec"), X, y, setup)
    p = int(np.asarray(setup.theta0).shape[0])
    m = int(canaries)
    if not 1 <= m <= p:
        raise ValueError(f"canaries must be in [1, {p}] (distinct coordinates of a model with {p} parameters), got {m}")
    if rule == "random":
        d = rng_for(seed, "one_run craft", rule).choice(p, size=m, replace=False)
        return Canaries(np.sort(d).astype(np.int64), float(config.clip_norm), rule)
    if ranking is None or np.shape(ranking) != (p,):
        raise ValueError(f"least_moving needs a ranking of shape ({p},), got {None if ranking is None else np.shape(ranking)}")
    ranking = np.asarray(ranking)
    d = np.argsort(ranking, kind="stable")[:m]
    return Canaries(np.sort(d).astype(np.int64), float(config.clip_norm), rule, ranking=ranking)


def save_canaries(canaries: Canaries, path: str | os.PathLike) -> None:
    """Write ``canaries`` to ``.npz`` atomically."""
    arrays = {
        "coordinates": np.asarray(canaries.coordinates, dtype=np.int64),
        "clip_norm": np.asarray(canaries.clip_norm),
        "rule": np.asarray(canaries.rule),
    }
    if canaries.ranking is not None:
        arrays["ranking"] = np.asarray(canaries.ranking)
    atomic_savez(path, arrays)


def load_canaries(path: str | os.PathLike) -> Canaries:
    """Read :class:`Canaries` written by :func:`save_canaries`."""
    with np.load(path) as f:
        return Canaries(
            coordinates=f["coordinates"].astype(np.int64),
            clip_norm=float(f["clip_norm"]),
            rule=str(f["rule"]),
            ranking=f["ranking"] if "ranking" in f.files else None,
        )


def canary_bits(*, seed: int, key: str, models: range | Sequence[int], canaries: int, dataset: str) -> np.ndarray:
    """The inclusion bits ``[models, m]`` (int64): b_ij ~ Bernoulli(½), independent, seeded per global model index.

    >>> b = canary_bits(seed=1, key="k", models=range(2), canaries=3, dataset="housing")
    >>> b.shape, bool(np.array_equal(b[1], canary_bits(seed=1, key="k", models=[1], canaries=3, dataset="housing")[0]))
    ((2, 3), True)
    """
    m = int(canaries)
    if m < 1:
        raise ValueError(f"canaries must be >= 1, got {canaries}")
    rows = [rng_for(seed, f"{dataset}-one_run-bits", key, int(i)).integers(0, 2, m) for i in models]
    return np.stack(rows).astype(np.int64) if rows else np.zeros((0, m), dtype=np.int64)


def one_run_noise_key(*, seed: int, key: str, dataset: str) -> int:
    """The counter-based noise key of a one-run audit (model i draws the stream of global index i)."""
    return derive_seed(seed, f"{dataset}-one_run-noise", key)


def reference_noise_key(*, seed: int, key: str, dataset: str, own_bits: bool = False) -> int:
    """The noise key of a one-run audit's reference models: the canary-free ones of the ``reference`` score, or
    (``own_bits``) those with their own canary bits of the ``calibrated`` score. Streams apart from the audited
    models' (:func:`one_run_noise_key`) and from each other, so no reference model shares an audited model's noise."""
    parts = (key, "own bits") if own_bits else (key,)
    return derive_seed(seed, f"{dataset}-one_run-reference-noise", *parts)


def reference_bits(*, seed: int, key: str, models: int, canaries: int, dataset: str) -> np.ndarray:
    """The ``calibrated`` score's reference models' own bits ``[models, m]``: fair coins like :func:`canary_bits`,
    from a stream apart from the audited models' bits (so they say nothing about them)."""
    return canary_bits(seed=seed, key=f"{key}/reference", models=range(int(models)), canaries=canaries,
                       dataset=dataset)


# ------------------------------------------------------------------------------------------------ training


def train_one_run_shard(
    *,
    spec: ModelSpec,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    canaries: Canaries,
    bits: npt.ArrayLike,
    noise_key: int,
    first_model: int = 0,
    device: str | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> np.ndarray:
    """Train ``len(bits)`` models, model i with canary j inserted where b_ij = 1; return the canaries' scores.

    Every model starts from ``setup.theta0`` (θ0 known, as in the population audit) and follows the fixed batch
    schedule; at every insertion step its inserted gradient is Σ_j b_ij ∇*_j. Model ``first_model + i`` draws the
    noise of that global index under ``noise_key``.

    Args:
        spec: the architecture, resolved once by the caller (:func:`hsaudit.engine.models.model_spec`).
        bits: ``[models, m]`` in {0, 1}.
        workers: CPU threads, each training a group of models (:func:`hsaudit.engine.workers.population_workers`,
            as :func:`hsaudit.experiments.cebere.train.shards.train_shard`); results do not depend on it.

    Returns:
        float64 ``[models, m]``: −(θ_T[d_j] − θ0[d_j]), the final model's A_GC-R score of every canary (higher ⇒
        included).
    """
    spec = require_spec(spec, "spec")
    X, y = check_data(spec, X, y, setup)
    if config.sampling is not None:
        raise ValueError("one-run audits use the fixed batch schedule (config.sampling = None)")
    if setup.batches.shape != (config.steps, config.batch_size):
        raise ValueError(f"setup.batches has shape {setup.batches.shape}, config wants ({config.steps}, {config.batch_size})")
    dev = pick_device(device)
    engine = population_engine(spec, dev)
    if setup.theta0.shape != (engine.p,):
        raise ValueError(f"setup.theta0 has shape {setup.theta0.shape}, {spec.name!r} has {engine.p} parameters")
    grads = canaries.gradients(bits, engine.p)
    m = grads.shape[0]
    if m == 0:
        raise ValueError("bits must hold at least one model")
    start = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    d = torch.as_tensor(np.asarray(canaries.coordinates, dtype=np.int64), device=dev)
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    g_all = torch.from_numpy(grads).to(dev)
    workers = population_workers(workers, engine=engine, device=dev, models=m, name=spec.name)

    def run_group(rows: range, show: bool) -> np.ndarray:
        with torch.no_grad():
            obs = train_population(
                engine=engine,
                theta0=start,
                X=Xt,
                y=yt,
                batches=setup.batches,
                config=config,
                noise_key=noise_key,
                models=range(first_model + rows.start, first_model + rows.stop),
                gradient=g_all[rows.start : rows.stop],
                keep_final=True,
                progress=show,
                desc=f"one-run {spec.name} x{m}",
            )
        theta = torch.from_numpy(obs.theta)
        return (-(theta[:, d.cpu()].double() - start.cpu()[d.cpu()].double())).numpy()

    return np.concatenate(run_in_groups(run_group, models=m, workers=workers, progress=progress))


def save_one_run_shard(path: str | os.PathLike, *, bits: npt.ArrayLike, scores: npt.ArrayLike,
                       coordinates: npt.ArrayLike) -> None:
    """Write one shard (bits and scores ``[models, m]``, the coordinates ``[m]``) to ``.npz``, atomically."""
    bits = np.asarray(bits, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != bits.shape:
        raise ValueError(f"scores must have the bits' shape {bits.shape}, got {scores.shape}")
    atomic_savez(path, {"bits": bits, "scores": scores, "coordinates": np.asarray(coordinates, dtype=np.int64)})
