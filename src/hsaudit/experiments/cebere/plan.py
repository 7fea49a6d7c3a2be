"""The trained-model experiments: plan, audit keys, shards and tables, for every dataset (Housing, CIFAR-10, ...).

Cebere et al. (2025) §5 and Appendices C–E train populations of DP-SGD models: the FCNN on California Housing
(fig1c, fig4, fig7; the ``housing`` config section) and the ConvNet, ResNet18-GN and an AlexNet last layer on
CIFAR-10 (fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13; the ``cifar10`` section). One family of workflow
rules (``workflow/rules/{data,train,scores,audit}.smk``) serves every such section ("family") through this module:

- **Plan** (:func:`plan_experiments`). An audit is a value: one adversary in one repetition with one set of
  values, identified by a short hash (:func:`key_of`) of every parameter that changes its result (dataset and its
  preparation, model, adversary, C, σ, k, T, η, batch size, seed, repetition, r for the noisy simulations, and the
  θ0 scheme / recorded observations where they differ from the default). R and the shard size are not in the key:
  they name the sub-directory ``R{runs}-s{shard_size}`` of the gathered scores, while the shard files
  (``shards/s{size}/{index}.npz``) depend on the shard size and index only, so raising R only adds shards. Two
  figures asking for the same audit share its files. A figure lists its adversaries, optional overrides of the
  section's values, and an optional ``grid`` (lists of values whose Cartesian product gives its series, e.g.
  ``{model: [convnet, resnet18_gn], clip_norm: [1, 2, 4]}``).
- **Shards** (:func:`shard_bits`, :func:`noise_key`): the membership bits of a shard are an exact half split
  (seeded), so every prefix of shards is balanced; model ``index·size + i`` of an audit draws the counter-based
  noise of that global index (:mod:`hsaudit.engine.noise`), so its noise does not depend on the shard size.
- **Tables** (:func:`scores_table`, :func:`audit_table`, :func:`norms_table`): tidy scores (run, shard, bit, step,
  score; higher score ⇒ inserted), per-step audit results with the GDP upper bound, and the canary's gradient
  norms (fig8).

The figures are in :mod:`hsaudit.experiments`; this module is separate so that the training rules' code version
(hsaudit.pipeline.provenance.code_version) does not cover the plotting code: restyling a figure retrains nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hsaudit.data.datasets import configured_identity
from hsaudit.util.io import atomic_savez, write_text_atomic
from hsaudit.util.mapping import deep_merge, grid_points, key_of
from hsaudit.util.seeding import derive_seed, rng_for

FAMILIES = ("housing", "cifar10")
"""Config sections whose figures are trained-model audits (the ``{family}`` of the workflow's paths)."""

# Legend labels, in the paper's notation.
ADVERSARY_LABELS = {
    "gc_r": "A_GC-R",
    "gc_s_noiseless_ps": "A_GC-S (Noiseless-PS)",
    "gc_s_noiseless_fm": "A_GC-S (Noiseless-FM)",
    "gc_s_noisy_ps": "A_GC-S (Noisy-PS)",
    "gc_s_noisy_fm": "A_GC-S (Noisy-FM)",
    "cots": "A_CotS",
    "label_flip": "A_L",
    "gc_s": "A_GC-S",
}

FIGURE_TITLES = {
    "fig1c": "FCNN on Housing (Fig. 1c)",
    "fig4": "FCNN on Housing: A_GC-S variants (Fig. 4)",
    "fig7": "FCNN on Housing: A_GC vs A_CotS vs A_L (Fig. 7)",
}

# The keys of a family's section that are not audit values (every other key may be overridden per figure).
NOT_AUDIT_VALUES = ("data", "resources", "figures")
# Keys of a figure entry that are not overrides.
FIGURE_ENTRY_KEYS = ("adversaries", "grid")
# Models trained on precomputed AlexNet features rather than on images (Cebere et al. Fig. 13).
FEATURE_MODELS = {"alexnet_head": "alexnet"}


# ---------------------------------------------------------------------------------------------------- plan


def figure_values(section: Mapping[str, Any], figure: str, *, family: str = "housing") -> list[dict[str, Any]]:
    """The audit values of each series of ``figure``: the section's values, the figure's overrides merged over,
    then one dict per point of the figure's ``grid`` (one dict when there is no grid).

    Raises:
        ValueError: if the figure is unknown or the merged values are inconsistent (naming the key).
    """
    figures = section.get("figures", {})
    if figure not in figures:
        raise ValueError(f"{family}.figures has no figure {figure!r} (known: {', '.join(figures)})")
    entry = figures[figure]
    base = {k: v for k, v in section.items() if k not in NOT_AUDIT_VALUES}
    override = {k: v for k, v in entry.items() if k not in FIGURE_ENTRY_KEYS}
    merged = deep_merge(base, override)
    grid = entry.get("grid") or {}
    points = grid_points(grid, known=base, where=f"{family}.figures.{figure}")
    out = []
    where = f"{family}.figures.{figure}" if override or grid else family
    for point in points:
        values = {**merged, **point}
        per_model = (values.get("model_shard_sizes") or {}).get(values["model"])
        if per_model and "shard_size" not in override:
            values["shard_size"] = int(per_model)
        if values["runs"] % values["shard_size"] != 0:
            raise ValueError(
                f"{where}: runs ({values['runs']}) must be a multiple of shard_size ({values['shard_size']})"
            )
        if values["shard_size"] % 2 != 0 or values["shard_size"] < 2:
            raise ValueError(f"{where}: shard_size must be even and >= 2, got {values['shard_size']}")
        if values["period"] > total_steps(values):
            raise ValueError(
                f"{where}: period ({values['period']}) must not exceed steps ({total_steps(values)}): no insertion"
            )
        out.append(values)
    return out


def total_steps(values: Mapping[str, Any]) -> int:
    """T: ``steps`` when given, else ``insertions · period`` (Cebere et al. §5: T = 250·k)."""
    if values.get("steps") is not None:
        return int(values["steps"])
    return int(values["insertions"]) * int(values["period"])


def data_identity(data: Mapping[str, Any], *, family: str = "housing", model: str | None = None) -> dict[str, Any]:
    """The parts of a family's ``data`` section that change the prepared arrays (not the cache directory).

    :func:`hsaudit.data.datasets.configured_identity` (Housing's is the one its audit keys were first made with, so they
    never change), plus the feature extractor and its weights for models trained on features (``alexnet_head``).
    """
    identity = configured_identity(family, data)
    if model in FEATURE_MODELS:
        identity["features"] = FEATURE_MODELS[model]
        identity["weights"] = data.get("alexnet_weights") or "torchvision"
    return identity


def dataset_name(family: str, model: str) -> str:
    """The prepared dataset an audit trains on: ``results/data/{name}.npz`` (e.g. ``cifar10_alexnet``)."""
    return f"{family}_{FEATURE_MODELS[model]}" if model in FEATURE_MODELS else family


def model_kwargs(values: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments of :func:`hsaudit.engine.models.build_model` from audit values."""
    if values["model"] == "fcnn":
        return {"variant": values["model_variant"]}
    return {}


def setup_params(
    values: Mapping[str, Any], *, data: Mapping[str, Any], seed: int, rep: int, family: str = "housing"
) -> dict[str, Any]:
    """Parameters of one setup (θ0 and the minibatch schedule, shared by all adversaries of a repetition)."""
    params = {
        "data": data_identity(data, family=family, model=values["model"]),
        "model": values["model"],
        "model_kwargs": model_kwargs(values),
        "dpsgd": dpsgd_values(values),
        "seed": int(seed),
        "rep": int(rep) if values["resample_setup"] else "shared",
    }
    # θ0's initialisation scheme enters the key only when it is not PyTorch's default (existing setups keep theirs).
    if values.get("theta0_init", "default") != "default":
        params["theta0_init"] = values["theta0_init"]
    return params


def dpsgd_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``hsaudit.engine.dpsgd.DPSGDConfig`` from audit values."""
    return {
        "steps": total_steps(values),
        "batch_size": int(values["batch_size"]),
        "lr": float(values["lr"]),
        "clip_norm": float(values["clip_norm"]),
        "noise_multiplier": float(values["noise_multiplier"]),
        "period": int(values["period"]),
    }


def audit_params(
    values: Mapping[str, Any],
    *,
    adversary: str,
    data: Mapping[str, Any],
    seed: int,
    rep: int,
    family: str = "housing",
) -> dict[str, Any]:
    """Every parameter that changes the result of one audit (R and the shard size aside, see module doc).

    Keys that are at their default (θ0 known, no gradient norms recorded) are left out, so that adding such an
    option never changes the keys of existing audits.
    """
    setup = setup_params(values, data=data, seed=seed, rep=rep, family=family)
    params = {
        "setup": setup,
        "setup_key": key_of(setup),
        "adversary": adversary,
        "rep": int(rep),
        # r only matters to the noisy simulations; leaving it out elsewhere keeps those audits' keys stable.
        "simulations": int(values["simulations"]) if adversary.startswith("gc_s_noisy") else None,
    }
    if values.get("theta0", "known") != "known":
        params["theta0"] = values["theta0"]
    if values.get("canary_norms"):
        params["canary_norms"] = True
    return params


@dataclass(frozen=True)
class AuditRef:
    """One audit as a figure uses it: its key, the values that tell its series apart, and the R and shard size."""

    figure: str
    adversary: str
    rep: int
    key: str
    runs: int
    shard_size: int
    model: str = "fcnn"
    clip_norm: float = 1.0
    period: int = 1
    theta0: str = "known"
    family: str = "housing"

    @property
    def run_dir(self) -> str:
        """The sub-directory of the gathered scores and the audit table for this R and shard size."""
        return f"R{self.runs}-s{self.shard_size}"


@dataclass(frozen=True)
class ExperimentPlan:
    """All setups, audits and figure entries of one family's experiments.

    Attributes:
        family: the config section (``housing``, ``cifar10``).
        setups: setup key -> setup parameters.
        audits: audit key -> audit parameters (with ``setup_key``).
        figures: figure name -> its audits, in series order, adversaries in legend order, then repetitions.
        values: figure name -> the merged audit values of each of its series.
    """

    family: str = "housing"
    setups: dict[str, dict[str, Any]] = field(default_factory=dict)
    audits: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: dict[str, list[AuditRef]] = field(default_factory=dict)
    values: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def root(self) -> str:
        """The results directory of the family."""
        return f"results/{self.family}"


HousingPlan = ExperimentPlan  # the name it had when Housing was the only family


def plan_experiments(section: Mapping[str, Any], *, seed: int, family: str = "housing") -> ExperimentPlan:
    """Resolve a family's config section into setups, audits and figure entries (see the module docstring).

    Args:
        section: the family's config section (after the scale preset), e.g. ``config["cifar10"]``.
        seed: the master seed.
        family: the section's name.

    Raises:
        ValueError: if a figure's values are inconsistent (naming the key).
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    plan = ExperimentPlan(family=family)
    for figure, entry in section.get("figures", {}).items():
        series = figure_values(section, figure, family=family)
        plan.values[figure] = series
        refs = []
        for values in series:
            for adversary in entry["adversaries"]:
                for rep in range(values["repetitions"]):
                    params = audit_params(
                        values, adversary=adversary, data=section["data"], seed=seed, rep=rep, family=family
                    )
                    key = key_of(params)
                    plan.audits[key] = params
                    plan.setups[params["setup_key"]] = params["setup"]
                    refs.append(
                        AuditRef(
                            figure,
                            adversary,
                            rep,
                            key,
                            values["runs"],
                            values["shard_size"],
                            model=values["model"],
                            clip_norm=float(values["clip_norm"]),
                            period=int(values["period"]),
                            theta0=values.get("theta0", "known"),
                            family=family,
                        )
                    )
        plan.figures[figure] = refs
    return plan


def plan_housing(housing: Mapping[str, Any], *, seed: int) -> ExperimentPlan:
    """:func:`plan_experiments` of the ``housing`` section."""
    return plan_experiments(housing, seed=seed, family="housing")


def setup_path(plan: ExperimentPlan, key: str, *, root: str | None = None) -> str:
    """The setup file (θ0 + batches) of audit ``key`` under the results directory ``root`` (default: the plan's)."""
    return f"{root or plan.root}/setups/{plan.audits[key]['setup_key']}/setup.npz"


def shard_paths(key: str, *, runs: int, shard_size: int, root: str) -> list[str]:
    """The shard files whose models make up R = ``runs`` models of audit ``key``, in shards of ``shard_size``.

    >>> shard_paths("k", runs=4, shard_size=2, root="r")
    ['r/audits/k/shards/s2/0.npz', 'r/audits/k/shards/s2/1.npz']
    """
    runs, shard_size = int(runs), int(shard_size)
    if shard_size < 1 or runs % shard_size:
        raise ValueError(f"runs ({runs}) must be a multiple of the shard size ({shard_size})")
    return [f"{root}/audits/{key}/shards/s{shard_size}/{index}.npz" for index in range(runs // shard_size)]


def audit_table_paths(plan: ExperimentPlan, figure: str, *, root: str | None = None) -> list[str]:
    """The per-step audit tables of every audit shown in ``figure`` (in the order of ``plan.figures``)."""
    return [f"{root or plan.root}/audits/{ref.key}/{ref.run_dir}/epsilon.csv" for ref in plan.figures[figure]]


def scores_paths(plan: ExperimentPlan, figure: str) -> list[str]:
    """The gathered scores tables of every audit shown in ``figure``."""
    return [f"{plan.root}/audits/{ref.key}/{ref.run_dir}/scores.parquet" for ref in plan.figures[figure]]


def figure_shard_paths(plan: ExperimentPlan, figure: str) -> list[str]:
    """Every shard file of every audit shown in ``figure`` (e.g. for the gradient norms of fig8)."""
    return [
        path
        for ref in plan.figures[figure]
        for path in shard_paths(ref.key, runs=ref.runs, shard_size=ref.shard_size, root=plan.root)
    ]


def write_params_json(params: Mapping[str, Any], path: str | os.PathLike, **extra: Any) -> None:
    """Write ``params`` (plus ``extra`` entries, e.g. the key) as indented JSON, atomically."""
    write_text_atomic(path, json.dumps({**extra, **params}, indent=2, sort_keys=True, default=str) + "\n")


# -------------------------------------------------------------------------------------------------- shards


def shard_bits(*, seed: int, key: str, shard_size: int, index: int, family: str = "housing") -> np.ndarray:
    """Membership bits of one shard: an exact half split (b = 1 ⇒ inserted), seeded by (key, size, index).

    Every shard is balanced on its own, so the first ``R / shard_size`` shards form a balanced population
    whatever R is (Cebere et al. §1 "exact split" [inferred]).

    >>> int(shard_bits(seed=1, key="k", shard_size=10, index=0).sum())
    5
    """
    if shard_size < 2 or shard_size % 2:
        raise ValueError(f"shard_size must be even and >= 2, got {shard_size}")
    if index < 0:
        raise ValueError(f"shard index must be >= 0, got {index}")
    half = np.repeat(np.array([0, 1], dtype=np.int64), shard_size // 2)
    return rng_for(seed, f"{family}-bits", key, shard_size, index).permutation(half)


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


def stream_key(params: Mapping[str, Any]) -> str:
    """The key that seeds an audit's random streams (crafting, membership bits, DP noise, per-run θ0): its key
    without the θ0 reading, so that audits that differ only in θ0 share d, the bits and the noise (a fair fig12).
    For θ0 known (no ``theta0`` entry) it is the audit key itself, so no existing audit's streams change.

    >>> stream_key({"adversary": "gc_r", "theta0": "unknown"}) == stream_key({"adversary": "gc_r"}) == key_of({"adversary": "gc_r"})
    True
    """
    return key_of({k: v for k, v in params.items() if k != "theta0"})


def noise_key(*, seed: int, key: str, family: str = "housing") -> int:
    """The key of the counter-based DP noise of audit ``key`` (:mod:`hsaudit.engine.noise`); model i of the audit draws
    the stream of global index i, whatever shard it is trained in."""
    return derive_seed(seed, f"{family}-noise", key)


def theta0_key(*, seed: int, key: str, family: str = "housing") -> int:
    """The key of the per-model initialisations of audit ``key`` (θ0 unknown: :func:`hsaudit.engine.dpsgd.population_theta0`)."""
    return derive_seed(seed, f"{family}-theta0", key)


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
