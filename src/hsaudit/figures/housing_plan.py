"""The Housing/FCNN audits of Cebere et al. (fig1c, fig4, fig7): plan, audit keys, shards and tables.

Cebere et al. (2025) §5 ("Low-dimensional models"), Figure 1c, Figure 4 (Appendix C) and Figure 7
(Appendix C): an FCNN with 68 parameters trained with DP-SGD on California Housing (T = 250, |B| = 400,
C = 1, σ = 4, k = 1, η = 0.1), audited at every step with R = 5,000 models, over 5 repetitions.

The workflow (``workflow/rules/{data,train,scores,audit,figures}.smk``) uses this module in four places:

- **Plan** (:func:`plan_housing`). An audit is a value: one adversary in one repetition, identified by a short
  hash (:func:`key_of`) of every parameter that changes its result (dataset and its preparation, model,
  adversary, C, σ, k, T, η, batch size, seed, repetition, r for the noisy simulations). R and the shard size are
  not in the key: they name the sub-directory ``R{runs}-s{shard_size}`` of the gathered scores, while the shard
  files (``shards/s{size}/{index}.npz``) depend on the shard size and index only, so raising R only adds shards.
  Two figures asking for the same audit share its files.
- **Shards** (:func:`shard_bits`, :func:`shard_seed`): the membership bits of a shard are an exact half split
  (seeded), so every prefix of shards is balanced.
- **Tables** (:func:`scores_table`, :func:`audit_table`): tidy scores (run, shard, bit, step, score; higher
  score ⇒ inserted) and per-step audit results with the GDP upper bound.

The figures themselves are in :mod:`hsaudit.figures.housing`. The two modules are separate so that the
training rules' code version (hsaudit.provenance.code_version) covers this module and not the plotting code:
restyling a figure does not retrain a population.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.config import deep_merge
from hsaudit.seeding import derive_seed, rng_for

FIGURES = ("fig1c", "fig4", "fig7")

# Legend labels, in the paper's notation.
ADVERSARY_LABELS = {
    "gc_r": "A_GC-R",
    "gc_s_noiseless_ps": "A_GC-S (Noiseless-PS)",
    "gc_s_noiseless_fm": "A_GC-S (Noiseless-FM)",
    "gc_s_noisy_ps": "A_GC-S (Noisy-PS)",
    "gc_s_noisy_fm": "A_GC-S (Noisy-FM)",
    "cots": "A_CotS",
    "label_flip": "A_L",
}

FIGURE_TITLES = {
    "fig1c": "FCNN on Housing (Fig. 1c)",
    "fig4": "FCNN on Housing: A_GC-S variants (Fig. 4)",
    "fig7": "FCNN on Housing: A_GC vs A_CotS vs A_L (Fig. 7)",
}

# The keys of the housing section that describe one audit and may be overridden per figure.
AUDIT_VALUE_KEYS = (
    "model",
    "model_variant",
    "steps",
    "period",
    "batch_size",
    "lr",
    "clip_norm",
    "noise_multiplier",
    "runs",
    "shard_size",
    "repetitions",
    "simulations",
    "resample_setup",
    "device",
)


# ---------------------------------------------------------------------------------------------------- plan


def key_of(params: Mapping[str, Any]) -> str:
    """A 12-hex-digit key of ``params`` (canonical JSON, SHA-256): equal parameters, equal keys.

    >>> key_of({"a": 1, "b": [1, 2]}) == key_of({"b": [1, 2], "a": 1})
    True
    >>> len(key_of({}))
    12
    """
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def figure_values(housing: Mapping[str, Any], figure: str) -> dict[str, Any]:
    """The audit values of ``figure``: the housing section's values with ``figures.<figure>`` merged over.

    Raises:
        ValueError: if the figure is unknown or the merged values are inconsistent (naming the key).
    """
    figures = housing.get("figures", {})
    if figure not in figures:
        raise ValueError(f"housing.figures has no figure {figure!r} (known: {', '.join(figures)})")
    base = {k: housing[k] for k in AUDIT_VALUE_KEYS}
    override = {k: v for k, v in figures[figure].items() if k != "adversaries"}
    values = deep_merge(base, override)
    where = f"housing.figures.{figure}" if override else "housing"
    if values["runs"] % values["shard_size"] != 0:
        raise ValueError(
            f"{where}: runs ({values['runs']}) must be a multiple of shard_size ({values['shard_size']})"
        )
    if values["shard_size"] % 2 != 0 or values["shard_size"] < 2:
        raise ValueError(f"{where}: shard_size must be even and >= 2, got {values['shard_size']}")
    if values["period"] > values["steps"]:
        raise ValueError(
            f"{where}: period ({values['period']}) must not exceed steps ({values['steps']}): no insertion"
        )
    return values


def data_identity(data: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of ``housing.data`` that change the prepared arrays (not the cache directory)."""
    return {
        "dataset": "housing",
        "source": data.get("path") or "sklearn",
        "threshold": data["threshold"],
        "standardize": bool(data["standardize"]),
    }


def setup_params(values: Mapping[str, Any], *, data: Mapping[str, Any], seed: int, rep: int) -> dict[str, Any]:
    """Parameters of one setup (θ0 and the minibatch schedule, shared by all adversaries of a repetition)."""
    return {
        "data": data_identity(data),
        "model": values["model"],
        "model_kwargs": {"variant": values["model_variant"]},
        "dpsgd": dpsgd_values(values),
        "seed": int(seed),
        "rep": int(rep) if values["resample_setup"] else "shared",
    }


def dpsgd_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``hsaudit.train.DPSGDConfig`` from audit values."""
    return {
        "steps": int(values["steps"]),
        "batch_size": int(values["batch_size"]),
        "lr": float(values["lr"]),
        "clip_norm": float(values["clip_norm"]),
        "noise_multiplier": float(values["noise_multiplier"]),
        "period": int(values["period"]),
    }


def audit_params(
    values: Mapping[str, Any], *, adversary: str, data: Mapping[str, Any], seed: int, rep: int
) -> dict[str, Any]:
    """Every parameter that changes the result of one audit (R and the shard size aside, see module doc)."""
    setup = setup_params(values, data=data, seed=seed, rep=rep)
    return {
        "setup": setup,
        "setup_key": key_of(setup),
        "adversary": adversary,
        "rep": int(rep),
        # r only matters to the noisy simulations; leaving it out elsewhere keeps those audits' keys stable.
        "simulations": int(values["simulations"]) if adversary.startswith("gc_s_noisy") else None,
    }


@dataclass(frozen=True)
class AuditRef:
    """One audit as a figure uses it: its key, and the R and shard size to gather."""

    figure: str
    adversary: str
    rep: int
    key: str
    runs: int
    shard_size: int

    @property
    def run_dir(self) -> str:
        """The sub-directory of the gathered scores and the audit table for this R and shard size."""
        return f"R{self.runs}-s{self.shard_size}"


@dataclass(frozen=True)
class HousingPlan:
    """All setups, audits and figure entries of the Housing experiments.

    Attributes:
        setups: setup key -> setup parameters.
        audits: audit key -> audit parameters (with ``setup_key``).
        figures: figure name -> its audits, adversaries in legend order, then repetitions.
        values: figure name -> the merged audit values of that figure.
    """

    setups: dict[str, dict[str, Any]] = field(default_factory=dict)
    audits: dict[str, dict[str, Any]] = field(default_factory=dict)
    figures: dict[str, list[AuditRef]] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)


def plan_housing(housing: Mapping[str, Any], *, seed: int) -> HousingPlan:
    """Resolve the housing section into setups, audits and figure entries (see the module docstring).

    Args:
        housing: the ``housing`` config section (after the scale preset).
        seed: the master seed.

    Raises:
        ValueError: if a figure's values are inconsistent (naming the key).
    """
    plan = HousingPlan()
    for figure in housing.get("figures", {}):
        values = figure_values(housing, figure)
        plan.values[figure] = values
        refs = []
        for adversary in housing["figures"][figure]["adversaries"]:
            for rep in range(values["repetitions"]):
                params = audit_params(values, adversary=adversary, data=housing["data"], seed=seed, rep=rep)
                key = key_of(params)
                plan.audits[key] = params
                plan.setups[params["setup_key"]] = params["setup"]
                refs.append(AuditRef(figure, adversary, rep, key, values["runs"], values["shard_size"]))
        plan.figures[figure] = refs
    return plan


def setup_path(plan: HousingPlan, key: str, *, root: str) -> str:
    """The setup file (θ0 + batches) of audit ``key`` under the results directory ``root``."""
    return f"{root}/setups/{plan.audits[key]['setup_key']}/setup.npz"


def shard_paths(key: str, *, runs: int, shard_size: int, root: str) -> list[str]:
    """The shard files whose models make up R = ``runs`` models of audit ``key``, in shards of ``shard_size``.

    >>> shard_paths("k", runs=4, shard_size=2, root="r")
    ['r/audits/k/shards/s2/0.npz', 'r/audits/k/shards/s2/1.npz']
    """
    runs, shard_size = int(runs), int(shard_size)
    if shard_size < 1 or runs % shard_size:
        raise ValueError(f"runs ({runs}) must be a multiple of the shard size ({shard_size})")
    return [f"{root}/audits/{key}/shards/s{shard_size}/{index}.npz" for index in range(runs // shard_size)]


def audit_table_paths(plan: HousingPlan, figure: str, *, root: str) -> list[str]:
    """The per-step audit tables of every audit shown in ``figure`` (in the order of ``plan.figures``)."""
    return [f"{root}/audits/{ref.key}/{ref.run_dir}/epsilon.csv" for ref in plan.figures[figure]]


def write_params_json(params: Mapping[str, Any], path: str | os.PathLike, **extra: Any) -> None:
    """Write ``params`` (plus ``extra`` entries, e.g. the key) as indented JSON, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps({**extra, **params}, indent=2, sort_keys=True, default=str) + "\n")
    os.replace(tmp, path)


# -------------------------------------------------------------------------------------------------- shards


def shard_bits(*, seed: int, key: str, shard_size: int, index: int) -> np.ndarray:
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
    return rng_for(seed, "housing-bits", key, shard_size, index).permutation(half)


def shard_seed(*, seed: int, key: str, shard_size: int, index: int) -> int:
    """The seed of the DP noise of one shard."""
    return derive_seed(seed, "housing-noise", key, shard_size, index)


def save_shard(path: str | os.PathLike, *, bits: npt.ArrayLike, scores: npt.ArrayLike, steps: npt.ArrayLike) -> None:
    """Write one shard (bits [n], scores [n, n_steps], recorded steps [n_steps]) to ``.npz``, atomically."""
    bits = np.asarray(bits, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.int64)
    if scores.shape != (bits.size, steps.size):
        raise ValueError(f"scores must have shape {(bits.size, steps.size)}, got {scores.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.npz")
    np.savez(tmp, bits=bits, scores=scores, steps=steps)
    os.replace(tmp, path)


def insertion_steps(*, steps: int, period: int) -> np.ndarray:
    """The 1-based steps t ≤ T with t % k == 0 at which the canary is inserted and the audit recorded.

    >>> insertion_steps(steps=10, period=5).tolist()
    [5, 10]
    """
    if steps < 1 or period < 1:
        raise ValueError(f"steps and period must be >= 1, got steps={steps}, period={period}")
    return np.arange(period, steps + 1, period, dtype=np.int64)


# -------------------------------------------------------------------------------------------------- tables


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


def scores_matrix(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From a :func:`scores_table`: (steps [m], scores [m, n_runs], members [n_runs] bool)."""
    wide = table.pivot(index="step", columns="run", values="score").sort_index()
    bits = table.drop_duplicates("run").set_index("run")["bit"].reindex(wide.columns)
    return wide.index.to_numpy(), wide.to_numpy(dtype=np.float64), bits.to_numpy().astype(bool)


def audit_table(
    table: pd.DataFrame,
    *,
    delta: float,
    confidence: float,
    mode: str,
    selection_fraction: float = 0.5,
    noise_multiplier: float,
    period: int,
    seed: int = 0,
) -> pd.DataFrame:
    """Audit every recorded step of a scores table (Cebere et al. Algorithm 4 / Appendix A).

    Args:
        table: a :func:`scores_table` (higher score ⇒ inserted).
        delta, confidence, mode: the audit (:func:`hsaudit.audit.audit_steps`).
        noise_multiplier, period: σ and k of the audited training, for the upper bound.
        seed: seed of the held-out split (unused in paper mode).

    Returns:
        One row per recorded step: step, insertions (⌊t/k⌋), runs, mu (μ̂), epsilon (ε̂ at ``delta`` from μ̂),
        epsilon_free (the assumption-free (ε, δ) bound from the same Clopper–Pearson bounds), threshold,
        fpr_upper, fnr_upper, mu_upper = √insertions / σ and epsilon_upper (the μ-GDP upper bound, Cebere et
        al. §1 "Upper bound"), mode, confidence, delta.
    """
    from hsaudit.accounting import gdp_epsilon, gdp_mu
    from hsaudit.audit import audit_steps

    steps, scores, members = scores_matrix(table)
    results = audit_steps(
        scores, members, delta=delta, confidence=confidence, mode=mode, selection_fraction=selection_fraction, rng=seed
    )
    rows = []
    for step, res in zip(steps, results, strict=True):
        insertions = int(step) // int(period)
        mu_upper = gdp_mu(noise_multiplier=noise_multiplier, compositions=insertions)
        rows.append(
            {
                "step": int(step),
                "insertions": insertions,
                "runs": int(members.size),
                "mu": float(res.mu),
                "epsilon": float(res.epsilon),
                "epsilon_free": float(res.epsilon_assumption_free),
                "threshold": float(res.threshold),
                "fpr_upper": float(res.fpr_upper),
                "fnr_upper": float(res.fnr_upper),
                "mu_upper": float(mu_upper),
                "epsilon_upper": float(gdp_epsilon(mu=mu_upper, delta=delta)),
                "mode": res.mode,
                "confidence": float(res.confidence),
                "delta": float(res.delta),
            }
        )
    return pd.DataFrame(rows)
