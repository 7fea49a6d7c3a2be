"""Audits in one training run on Cebere et al.'s trained-model settings: plan, canaries and training (what the
training jobs need; the audit table is :mod:`hsaudit.experiments.cebere.one_run_tables`, the figure
:mod:`hsaudit.experiments.cebere.figures.one_run`; docs/one_run.md).

Steinke, Nasr & Jagielski (2023) and Mahloujifar et al. (2024) audit with m canaries inserted independently (each
with probability ½) into one training run. In the hidden-state threat model a canary here is A_GC-R's gradient
canary (Cebere et al. 2025, Algorithm 2) m times over: canary j is ∇*_j = C·e_{d_j} on its own coordinate d_j
(distinct coordinates), and model i includes it with its own bit b_ij ~ Bernoulli(½), independent of everything
else. The DP-SGD layer adds the per-model inserted gradient Σ_j b_ij ∇*_j at every insertion step, exactly where
A_GC-R adds its one ∇* (:func:`hsaudit.engine.dpsgd.run_population` with a ``[models, p]`` gradient). The score
of canary j in model i is A_GC-R's score of its coordinate in the final model, −(θ_T[d_j] − θ0[d_j]) (higher ⇒
included; :func:`hsaudit.experiments.cebere.adversaries.make_scorer`).

This is a study on Cebere et al.'s settings, not a fifth paper: it audits the configurations of the ``housing`` and
``cifar10`` sections (same data, setups, DP-SGD values and gradient canaries) and compares with the population
audit of A_GC-R on the very same configuration, which it takes from the trained-model plan
(:func:`hsaudit.experiments.cebere.plan.audit_params`), so the package lives beside them.

- **Plan** (:func:`plan_one_run`): per family, the one-run audit's key (setup, m, coordinate rule) and the
  population audit's key (A_GC-R, repetition 0: the same setup, θ0 and batches), the numbers of models M of the
  one-run points and the R of the population points.
- **Canaries** (:func:`craft_canaries`): ``random`` (m distinct coordinates drawn uniformly: A_GC-R's draw, m
  times without replacement) or ``least_moving`` (the m coordinates that move least in a noiseless, unclipped
  simulation of training: A_GC-S Noiseless-PS's ranking, Cebere et al. Algorithm 3).
- **Bits** (:func:`canary_bits`): model i's m bits are seeded by (key, i), so they do not depend on the shard size.
- **Training** (:func:`train_one_run_shard`): a shard of models, each with its m canaries; scores ``[models, m]``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.engine.dpsgd import DPSGDConfig, Setup, check_data, pick_device, train_population
from hsaudit.engine.models import model_spec
from hsaudit.engine.psg import MLPPopulation, population_engine
from hsaudit.experiments.cebere.adversaries import craft
from hsaudit.experiments.cebere.plan import audit_params, figure_values
from hsaudit.experiments.cebere.shards import MIN_MODELS_PER_WORKER
from hsaudit.util.io import atomic_savez
from hsaudit.util.mapping import key_of
from hsaudit.util.seeding import derive_seed, rng_for

COORDINATE_RULES = ("random", "least_moving")
"""How the m canary coordinates are chosen (config ``one_run.coordinates``; see the module docstring)."""

POPULATION_ADVERSARY = "gc_r"
"""The one-canary adversary of the population audit that the one-run audit is compared with (A_GC-R)."""

FIGURE = "one_run/fig1"


# ---------------------------------------------------------------------------------------------------- plan


@dataclass(frozen=True)
class OneRunFamily:
    """The one-run and population audits of one family's configuration.

    Attributes:
        family: the config section (``housing``, ``cifar10``).
        key: the one-run audit's key (its files are under ``results/one_run/{family}/{key}/``).
        params: every parameter that changes the one-run audit's result (the key's input).
        canaries: m, canaries per model.
        models: the numbers of models M of the one-run points, ascending.
        shard_size: models per one-run training job.
        population_key: the key of the A_GC-R population audit of the same configuration (a trained-model audit of
            :mod:`hsaudit.experiments.cebere.plan`, trained and audited by the shared rules).
        population_params: its parameters (to register in the family's plan).
        population_runs: the R of the population points (models in both worlds, half of them inserted), ascending.
        population_shard_size: the population's shard size.
        values: the family's merged audit values (model, T, η, B, C, σ, k, ...).
    """

    family: str
    key: str
    params: dict[str, Any]
    canaries: int
    models: tuple[int, ...]
    shard_size: int
    population_key: str
    population_params: dict[str, Any]
    population_runs: tuple[int, ...]
    population_shard_size: int
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def root(self) -> str:
        """The directory of the one-run audit's files."""
        return f"results/one_run/{self.family}/{self.key}"

    @property
    def shards(self) -> int:
        """Number of one-run training shards (enough for the largest M)."""
        return -(-max(self.models) // self.shard_size)

    @property
    def steps(self) -> int:
        """T, the DP-SGD steps of every model (one-run and population)."""
        return int(self.params["setup"]["dpsgd"]["steps"])


def _positive_ints(values: Sequence[Any], where: str) -> tuple[int, ...]:
    out = tuple(int(v) for v in values)
    if not out or any(v < 1 or v != w for v, w in zip(out, values)):
        raise ValueError(f"{where} must be a non-empty list of positive integers, got {list(values)}")
    if list(out) != sorted(set(out)):
        raise ValueError(f"{where} must be strictly increasing, got {list(values)}")
    return out


def plan_one_run(
    section: Mapping[str, Any], families: Mapping[str, Mapping[str, Any]], *, seed: int
) -> dict[str, OneRunFamily]:
    """Resolve the ``one_run`` config section into one :class:`OneRunFamily` per audited family.

    Args:
        section: ``config["one_run"]`` (after the scale preset).
        families: the family sections (``config["housing"]``, ``config["cifar10"]``) whose values are audited: the
            section's base values, with no figure's overrides.
        seed: the master seed.

    Raises:
        ValueError: naming the key: an unknown coordinate rule or family, θ0 not known, a list that is not
            increasing, or a population R that is not a multiple of the family's shard size (m larger than the
            model is caught when the canaries are crafted).
    """
    rule = section["coordinates"]
    if rule not in COORDINATE_RULES:
        raise ValueError(f"one_run.coordinates must be one of {COORDINATE_RULES}, got {rule!r}")
    out = {}
    for family in section["families"]:
        if family not in families:
            raise ValueError(f"one_run.families names {family!r}, which is no trained-model section")
        entry = section[family]
        where = f"one_run.{family}"
        fam = families[family]
        # The family's own values, as its figures see them before their overrides (a pseudo-figure with none).
        values = figure_values({**fam, "figures": {"_one_run": {"adversaries": [POPULATION_ADVERSARY]}}},
                               "_one_run", family=family)[0]
        if values.get("theta0", "known") != "known":
            raise ValueError(f"{where}: one-run audits need {family}.theta0 = known, got {values['theta0']!r}")
        pop = audit_params(values, adversary=POPULATION_ADVERSARY, data=fam["data"], seed=seed, rep=0, family=family)
        canaries = int(entry["canaries"])
        if canaries < 1:
            raise ValueError(f"{where}.canaries must be >= 1, got {entry['canaries']}")
        models = _positive_ints(entry["models"], f"{where}.models")
        shard_size = min(int(entry["shard_size"]), max(models))
        if shard_size < 1 or max(models) % shard_size:
            raise ValueError(f"{where}: the largest of models ({max(models)}) must be a multiple of shard_size "
                             f"({entry['shard_size']})")
        runs = _positive_ints(entry["population_runs"], f"{where}.population_runs")
        size = int(values["shard_size"])
        if any(r % size for r in runs):
            raise ValueError(f"{where}.population_runs ({list(runs)}) must be multiples of {family}.shard_size ({size})")
        params = {
            "setup": pop["setup"],
            "setup_key": pop["setup_key"],
            "canaries": canaries,
            "coordinates": rule,
            "score": POPULATION_ADVERSARY,
        }
        if rule == "least_moving":
            params["simulation"] = "noiseless_ps"
        out[family] = OneRunFamily(
            family=family,
            key=key_of(params),
            params=params,
            canaries=canaries,
            models=models,
            shard_size=shard_size,
            population_key=key_of(pop),
            population_params=pop,
            population_runs=runs,
            population_shard_size=size,
            values=values,
        )
    return out


def one_run_shard_paths(spec: OneRunFamily) -> list[str]:
    """The one-run shard files of a family (enough models for the largest M)."""
    return [f"{spec.root}/shards/s{spec.shard_size}/{i}.npz" for i in range(spec.shards)]


def population_table_paths(spec: OneRunFamily) -> list[str]:
    """The per-step audit tables of the population audit, one per R (shared with any figure that has that audit)."""
    base = f"results/{spec.family}/audits/{spec.population_key}"
    return [f"{base}/R{r}-s{spec.population_shard_size}/epsilon.csv" for r in spec.population_runs]


# ------------------------------------------------------------------------------------------------ canaries


@dataclass(frozen=True)
class Canaries:
    """m gradient canaries on distinct coordinates: ∇*_j = C·e_{d_j}.

    Attributes:
        coordinates: int64 ``[m]``, distinct flat-parameter indices d_j.
        clip_norm: C, the norm of every canary.
        rule: how the coordinates were chosen (:data:`COORDINATE_RULES`).
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
        """The per-model inserted gradients Σ_j b_ij C e_{d_j}, float32 ``[models, p]``, of bits ``[models, m]``."""
        b = np.asarray(bits)
        if b.ndim != 2 or b.shape[1] != self.m or not np.all((b == 0) | (b == 1)):
            raise ValueError(f"bits must be a [models, {self.m}] array of 0/1, got shape {b.shape}")
        d = np.asarray(self.coordinates, dtype=np.int64)
        if d.max() >= p:
            raise ValueError(f"coordinate {int(d.max())} is outside a model with {p} parameters")
        out = np.zeros((b.shape[0], int(p)), dtype=np.float32)
        out[:, d] = np.float32(self.clip_norm) * b.astype(np.float32)
        return out


def craft_canaries(
    rule: str,
    *,
    canaries: int,
    model: str,
    model_kwargs: dict,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    seed: int,
    device: str | None = None,
) -> Canaries:
    """Choose the m canary coordinates (before training, from what the adversary knows: θ0, batches, data).

    Args:
        rule: ``random`` (m distinct coordinates, uniform) or ``least_moving`` (the m smallest S_d of A_GC-S
            Noiseless-PS, :func:`hsaudit.experiments.cebere.adversaries.craft`; ties by index).
        canaries: m.
        model, model_kwargs, X, y, setup, config: as :func:`hsaudit.experiments.cebere.adversaries.craft`.
        seed: the adversary's seed.
        device: of the simulation (``least_moving``).

    Raises:
        ValueError: unknown rule, or m larger than the model's parameter count (naming both).
    """
    if rule not in COORDINATE_RULES:
        raise ValueError(f"rule must be one of {COORDINATE_RULES}, got {rule!r}")
    p = int(np.asarray(setup.theta0).shape[0])
    m = int(canaries)
    if not 1 <= m <= p:
        raise ValueError(f"canaries must be in [1, {p}] (distinct coordinates of a model with {p} parameters), got {m}")
    if rule == "random":
        check_data(model_spec(model, **model_kwargs), X, y, setup)
        d = rng_for(seed, "one_run craft", rule).choice(p, size=m, replace=False)
        return Canaries(np.sort(d).astype(np.int64), float(config.clip_norm), rule)
    crafted = craft("gc_s_noiseless_ps", model=model, model_kwargs=model_kwargs, X=X, y=y, setup=setup,
                    config=config, seed=seed, simulations=1, device=device)
    d = np.argsort(crafted.ranking, kind="stable")[:m]
    return Canaries(np.sort(d).astype(np.int64), float(config.clip_norm), rule, ranking=crafted.ranking)


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


def canary_bits(*, seed: int, key: str, models: range | Sequence[int], canaries: int, family: str = "housing") -> np.ndarray:
    """The inclusion bits ``[models, m]`` (int64): b_ij ~ Bernoulli(½), independent, seeded per global model index.

    >>> b = canary_bits(seed=1, key="k", models=range(2), canaries=3)
    >>> b.shape, bool(np.array_equal(b[1], canary_bits(seed=1, key="k", models=[1], canaries=3)[0]))
    ((2, 3), True)
    """
    m = int(canaries)
    if m < 1:
        raise ValueError(f"canaries must be >= 1, got {canaries}")
    rows = [rng_for(seed, f"{family}-one_run-bits", key, int(i)).integers(0, 2, m) for i in models]
    return np.stack(rows).astype(np.int64) if rows else np.zeros((0, m), dtype=np.int64)


def one_run_noise_key(*, seed: int, key: str, family: str = "housing") -> int:
    """The counter-based noise key of a one-run audit (model i draws the stream of global index i)."""
    return derive_seed(seed, f"{family}-one_run-noise", key)


def craft_seed(*, seed: int, key: str, family: str = "housing") -> int:
    """The seed of a one-run audit's coordinate draw."""
    return derive_seed(seed, f"{family}-one_run-craft", key)


# ------------------------------------------------------------------------------------------------ training


def train_one_run_shard(
    *,
    model: str,
    model_kwargs: dict,
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
        bits: ``[models, m]`` in {0, 1}.
        workers: CPU threads, each training a group of models (as :func:`hsaudit.experiments.cebere.shards.train_shard`);
            results do not depend on it.

    Returns:
        float64 ``[models, m]``: −(θ_T[d_j] − θ0[d_j]), the final model's A_GC-R score of every canary (higher ⇒
        included).
    """
    spec = model_spec(model, **model_kwargs)
    X, y = check_data(spec, X, y, setup)
    if config.sampling is not None:
        raise ValueError("one-run audits use the fixed batch schedule (config.sampling = None)")
    if setup.batches.shape != (config.steps, config.batch_size):
        raise ValueError(f"setup.batches has shape {setup.batches.shape}, config wants ({config.steps}, {config.batch_size})")
    dev = pick_device(device)
    engine = population_engine(spec, dev)
    if setup.theta0.shape != (engine.p,):
        raise ValueError(f"setup.theta0 has shape {setup.theta0.shape}, {model!r} has {engine.p} parameters")
    grads = canaries.gradients(bits, engine.p)
    m = grads.shape[0]
    if m == 0:
        raise ValueError("bits must hold at least one model")
    start = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    d = torch.as_tensor(np.asarray(canaries.coordinates, dtype=np.int64), device=dev)
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    g_all = torch.from_numpy(grads).to(dev)
    if workers is None:
        workers = torch.get_num_threads() if dev.type == "cpu" and isinstance(engine, MLPPopulation) else 1
        workers = min(workers, m // MIN_MODELS_PER_WORKER or 1)
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    if workers > 1 and not isinstance(engine, MLPPopulation):
        raise ValueError(f"workers > 1 needs the FCNN ('mlp') engine, got workers={workers} for {model!r}")
    workers = min(int(workers), m)

    def run_group(rows: range) -> np.ndarray:
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
                progress=progress and rows.start == 0,
                desc=f"one-run {model} x{m}",
            )
        theta = torch.from_numpy(obs.theta)
        return (-(theta[:, d.cpu()].double() - start.cpu()[d.cpu()].double())).numpy()

    if workers == 1:
        return run_group(range(m))
    bounds = np.linspace(0, m, workers + 1).astype(int)
    groups = [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = [f.result() for f in [pool.submit(run_group, g) for g in groups]]
    finally:
        torch.set_num_threads(threads)
    return np.concatenate(parts)


def save_one_run_shard(path: str | os.PathLike, *, bits: npt.ArrayLike, scores: npt.ArrayLike,
                       coordinates: npt.ArrayLike) -> None:
    """Write one shard (bits and scores ``[models, m]``, the coordinates ``[m]``) to ``.npz``, atomically."""
    bits = np.asarray(bits, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != bits.shape:
        raise ValueError(f"scores must have the bits' shape {bits.shape}, got {scores.shape}")
    atomic_savez(path, {"bits": bits, "scores": scores, "coordinates": np.asarray(coordinates, dtype=np.int64)})
