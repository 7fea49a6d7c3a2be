"""What an unknown per-run θ0 costs A_GC-R, in closed form, coordinate by coordinate (docs/cifar10.md, fig12).

With θ0 re-drawn for every run and unknown to the scorer, A_GC-R's score on coordinate d is θ_T[d] instead of
θ_T[d] − θ0[d]: θ0[d]'s own variance v0(d) adds to the DP noise's in both worlds. In the model of the page (the
data gradients' dependence on θ0 left out), with Δ = (T/k)·ηC/B the insertions' shift and s_n = ησC√T/B the noise's
sd of θ_T[d] − θ0[d],

    μ_known = Δ / s_n,      μ_unknown(d) = Δ / √(s_n² + v0(d)) = μ_known / √(1 + v0(d)/s_n²).

A_GC-R draws d uniformly, so what it is expected to reach is the average over the p coordinates. For a small model
(the Housing FCNN, 68 coordinates) :func:`expected_cost` takes that average exactly, over every coordinate, rather
than over sampled d (:func:`sampled_cost` is the sampling, kept as the tests' reference). v0(d) is exact
(:func:`init_variances`): Xavier-normal's gain²·2/(fan_in + fan_out) for a weight, 0 for the coordinates
:func:`hsaudit.engine.dpsgd.init_theta0` fills with a constant (biases, norm offsets and scales).

No job imports this module: ``python scripts/theta0_cost.py`` prints its tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.util.seeding import rng_for

COST_COLUMNS = ("coordinate", "layer", "v0", "mu_known", "mu_unknown", "epsilon_known", "epsilon_unknown")


def init_variances(spec: ModelSpec, *, scheme: str = "xavier_normal") -> np.ndarray:
    """The exact variance ``[p]`` (float64) of every coordinate of θ0 under ``scheme``, in flat parameter order.

    Only ``"xavier_normal"`` (the scheme of the per-run draws): a parameter with ≥ 2 dimensions is N(0,
    2/(fan_in + fan_out)) (fan_in = shape[1]·receptive field, fan_out = shape[0]·receptive field, torch's
    convention); every other parameter is a constant (variance 0).
    """
    spec = require_spec(spec, "spec")
    if scheme != "xavier_normal":
        raise ValueError(f"exact variances are implemented for 'xavier_normal' only, got {scheme!r}")
    out = []
    for param in spec.build().parameters():
        shape = tuple(param.shape)
        if len(shape) >= 2:
            receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
            var = 2.0 / (shape[1] * receptive + shape[0] * receptive)
        else:
            var = 0.0
        out.append(np.full(int(np.prod(shape)), var, dtype=np.float64))
    return np.concatenate(out)


def signal_and_noise(values: Mapping[str, Any]) -> tuple[float, float]:
    """(Δ, s_n) of audit values (``steps`` or ``insertions``·``period``, ``period``, ``lr``, ``clip_norm``,
    ``noise_multiplier``, ``batch_size``): Δ = (T/k)·ηC/B, s_n = ησC√T/B."""
    period = int(values["period"])
    steps = int(values["steps"]) if values.get("steps") is not None else int(values["insertions"]) * period
    lr, clip, sigma, batch = (float(values[k]) for k in ("lr", "clip_norm", "noise_multiplier", "batch_size"))
    return (steps // period) * lr * clip / batch, lr * sigma * clip * np.sqrt(steps) / batch


def per_coordinate_cost(spec: ModelSpec, values: Mapping[str, Any], *, delta: float) -> pd.DataFrame:
    """One row per coordinate d (:data:`COST_COLUMNS`): its layer, v0(d), μ and ε at ``delta`` with θ0 known and
    with an unknown per-run (Xavier-normal) θ0."""
    spec = require_spec(spec, "spec")
    shift, sd = signal_and_noise(values)
    v0 = init_variances(spec)
    names = np.concatenate([np.full(p.numel(), n, dtype=object) for n, p in spec.build().named_parameters()])
    mu_known = shift / sd
    mu_unknown = shift / np.sqrt(sd**2 + v0)
    eps = {m: gdp_epsilon(mu=float(m), delta=delta) for m in np.unique(np.append(mu_unknown, mu_known))}
    return pd.DataFrame({
        "coordinate": np.arange(v0.size), "layer": names, "v0": v0, "mu_known": mu_known, "mu_unknown": mu_unknown,
        "epsilon_known": eps[mu_known], "epsilon_unknown": [eps[m] for m in mu_unknown],
    })  # fmt: skip


def expected_cost(table: pd.DataFrame) -> dict[str, float]:
    """The exact expectation over d uniform on every coordinate of ``table`` (:func:`per_coordinate_cost`): the
    mean μ and ε with θ0 unknown, their known counterparts, and the share of coordinates where the unknown θ0 costs
    nothing (v0 = 0)."""
    return {
        "coordinates": int(len(table)),
        "fixed_share": float((table["v0"] == 0).mean()),
        "mu_known": float(table["mu_known"].mean()),
        "mu_unknown": float(table["mu_unknown"].mean()),
        "epsilon_known": float(table["epsilon_known"].mean()),
        "epsilon_unknown": float(table["epsilon_unknown"].mean()),
    }


def sampled_cost(table: pd.DataFrame, *, draws: int, seed: int = 0) -> dict[str, float]:
    """The same means over ``draws`` coordinates d drawn uniformly (with replacement): what sampling d estimates,
    the reference :func:`expected_cost` replaces."""
    rows = table.iloc[rng_for(seed, "theta0-cost", draws).integers(len(table), size=int(draws))]
    return {k: float(rows[k].mean()) for k in ("mu_known", "mu_unknown", "epsilon_known", "epsilon_unknown")}


def layer_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per layer: its coordinates, v0, μ and ε unknown (one value per layer: v0 is constant within a parameter),
    then a row ``all (exact mean over d)`` of :func:`expected_cost`."""
    rows = table.groupby("layer", sort=False).agg(
        coordinates=("coordinate", "size"), v0=("v0", "first"), mu_known=("mu_known", "first"),
        mu_unknown=("mu_unknown", "mean"), epsilon_known=("epsilon_known", "first"),
        epsilon_unknown=("epsilon_unknown", "mean"),
    ).reset_index()  # fmt: skip
    mean = expected_cost(table)
    total = {"layer": "all (exact mean over d)", "coordinates": mean["coordinates"], "v0": float(table["v0"].mean()),
             **{k: mean[k] for k in ("mu_known", "mu_unknown", "epsilon_known", "epsilon_unknown")}}  # fmt: skip
    return pd.concat([rows, pd.DataFrame([total])], ignore_index=True)
