"""Annamalai, "It's Our Loss": the audits of the construction's simulated statistics
(:mod:`hsaudit.experiments.annamalai.construction`) and the tables its figures draw.

* :func:`audit_repetitions` — repetitions of the paper's audit (Algorithm 2; no confidence intervals) and its
  Clopper–Pearson variants (every threshold, and the valid held-out rule), through the one auditor
  (:meth:`hsaudit.audit.auditor.Auditor.pld_curve`, i.e. :func:`hsaudit.audit.audit_pld`); the σ̂ audit is
  :func:`hsaudit.audit.pld.pld_sigma_audit`. :func:`calibrate` gives the σ of a fig2 job's ε.
  The linear-loss curve they are compared with is :func:`hsaudit.accounting.last_iterate.linear_tradeoff`
  (Steinke et al.'s mixture of Gaussians).
* :func:`fig1_table` — Figure 1's observed rates beside the PLD and linear-loss curves.

This module imports the audit, accounting and util layers only: it takes the statistics, never simulates them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting.gaussian import PldTable, default_epsilon_grid, sigma_for_epsilon, tradeoff_from_deltas
from hsaudit.accounting.last_iterate import delta_curve, linear_tradeoff
from hsaudit.audit.auditor import Auditor, HeldOut, Paper
from hsaudit.audit.tradeoff import observed_rates
from hsaudit.util.seeding import derive_seed

# ------------------------------------------------------------------------------------------ audit


def calibrate(frame: pd.DataFrame, *, epsilon: float) -> tuple[PldTable, float]:
    """The (q, T) calibration table
    (:func:`hsaudit.experiments.annamalai.construction.pld_table`'s frame) as a :class:`~hsaudit.accounting.PldTable`, and the
    σ at which the all-iterates mechanism is ``epsilon``-DP at the table's δ."""
    table = PldTable.from_frame(frame)
    return table, sigma_for_epsilon(float(epsilon), table)


def audit_repetitions(
    repetitions: Sequence[Any],
    *,
    table: PldTable,
    tail_floors: Sequence[float],
    confidence: float,
    seed: int,
    steps: int,
    key: tuple = (),
) -> pd.DataFrame:
    """Repeat the audit: per repetition, the paper's audit at every tail floor, the Clopper–Pearson one over every
    threshold (``clopper_pearson``: not a valid bound) and the valid held-out one (``clopper_pearson_held_out``).

    Args:
        repetitions: the statistics of each repetition
            (:func:`hsaudit.experiments.annamalai.construction.repeated_statistics`: ``out``, ``inside``,
            ``setting``, ``wraps``, ``ideal``).
        table: the (q, T) calibration table; seed, steps, key: what the held-out rule's split is seeded by.

    Every row also carries the wrap rates of its repetition and the setting (q, T, σ, the update, the
    encoding-base rule and P), the confidence and R. Where a repetition has ideal statistics, a row
    ``method="paper_ideal"`` audits them with the paper's audit at the first tail floor.
    """
    if not repetitions:
        raise ValueError("audit_repetitions needs at least one repetition")
    rows = []
    paper = Auditor(confidence=confidence, rule=Paper())  # every threshold's CP point: a max over thresholds, not valid
    for r, rep in enumerate(repetitions):
        o, o1, wraps = rep.out, rep.inside, dict(rep.wraps)
        for fl in tail_floors:
            rows.append(
                {
                    "repetition": r,
                    "method": "paper",
                    "tail_floor": fl,
                    "epsilon_emp": paper.pld_curve(o, o1, table, bounded=False, tail_floor=fl),
                    **wraps,
                }
            )
        rows.append(
            {
                "repetition": r,
                "method": "clopper_pearson",  # every threshold's CP point: a max over thresholds, not valid
                "tail_floor": math.nan,
                "epsilon_emp": paper.pld_curve(o, o1, table),
                **wraps,
            }
        )
        # The valid rule: one threshold chosen on half of the runs, its CP point from the others.
        rows.append(
            {
                "repetition": r,
                "method": "clopper_pearson_held_out",
                "tail_floor": math.nan,
                "epsilon_emp": Auditor(confidence=confidence, rule=HeldOut(seed=derive_seed(
                    seed, "annamalai-select", *key, steps, r))).pld_curve(o, o1, table),  # fmt: skip
                **wraps,
            }
        )
        if rep.ideal is not None:
            # The same audit on the statistic the construction aims to carry, Σ_k λ(v_k) of the raw per-step values
            # (no encoding, no rounding, no wraps): what the audit gives when the construction loses nothing.
            i0, i1 = rep.ideal
            rows.append(
                {
                    "repetition": r,
                    "method": "paper_ideal",
                    "tail_floor": tail_floors[0],
                    "epsilon_emp": paper.pld_curve(i0, i1, table, bounded=False, tail_floor=tail_floors[0]),
                }
            )
    out = pd.DataFrame(rows)
    for column, value in repetitions[0].setting.items():
        out[column] = value
    out["confidence"] = confidence
    out["runs_per_world"] = len(repetitions[0].out)
    return out


# ------------------------------------------------------------------------------------------ figures' tables


def fig1_table(
    statistics: Sequence[Any],
    *,
    delta: float,
    value_discretization_interval: float = 1e-3,
    curve_points: int = 400,
) -> pd.DataFrame:
    """Figure 1: per setting (σ, q, T), the observed (FPR, FNR) of one audit, the PLD trade-off curve (all
    iterates) and the exact linear-loss curve; with the ε of both at δ in columns.

    Args:
        statistics: one audit's statistics per setting
            (:func:`hsaudit.experiments.annamalai.construction.setting_statistics`).

    Columns ``max_below_se`` / ``max_above_se`` measure how close the observations lie to the PLD curve f:
    the largest (f(α) − β)/se and (β − f(α))/se over the observed points with 0 < f(α) < 1, in binomial standard
    errors se = √(f(α)(1 − f(α))/R) of an FNR estimated from R runs (:func:`curve_gap_se`).
    """
    frames = []
    alpha_grid = np.unique(np.concatenate([np.geomspace(1e-5, 1.0, curve_points), np.linspace(0, 1, curve_points)]))
    eg = default_epsilon_grid()
    for stats in statistics:
        st = stats.setting
        sig, q, t = float(st["noise_multiplier"]), float(st["sampling_rate"]), int(st["steps"])
        o, o1, runs = stats.out, stats.inside, len(stats.out)
        a_obs, b_obs = observed_rates(o, o1)
        deltas = delta_curve(
            steps=t,
            sampling_rate=q,
            noise_multiplier=sig,
            epsilons=eg,
            value_discretization_interval=value_discretization_interval,
        )
        pld_curve = tradeoff_from_deltas(alpha_grid, eg, deltas)
        below, above = curve_gap_se(a_obs, b_obs, tradeoff_from_deltas(a_obs, eg, deltas), runs=runs)
        lin_curve = linear_tradeoff(alpha_grid, steps=t, sampling_rate=q, noise_multiplier=sig)
        meta = {
            "setting": st["name"],
            "noise_multiplier": sig,
            "sampling_rate": q,
            "steps": t,
            "epsilon_all_iterates": H.standard_epsilon(
                delta,
                steps=t,
                sampling_rate=q,
                noise_multiplier=sig,
                value_discretization_interval=value_discretization_interval,
            ),
            "epsilon_linear": H.heuristic_epsilon(delta, steps=t, sampling_rate=q, noise_multiplier=sig),
            "delta": delta,
            "runs_per_world": runs,
            "encoding_base": st["encoding_base"],
            "max_below_se": below,
            "max_above_se": above,
        }
        frames += [
            pd.DataFrame({**meta, "curve": "observed", "fpr": a_obs, "fnr": b_obs}),
            pd.DataFrame({**meta, "curve": "pld_all_iterates", "fpr": alpha_grid, "fnr": pld_curve}),
            pd.DataFrame({**meta, "curve": "linear_loss", "fpr": alpha_grid, "fnr": lin_curve}),
        ]
    return pd.concat(frames, ignore_index=True)


def curve_gap_se(alpha: npt.ArrayLike, beta: npt.ArrayLike, curve: npt.ArrayLike, *, runs: int) -> tuple[float, float]:
    """Largest gaps of observed points (α, β) below and above a trade-off curve f, in binomial standard errors.

    Args:
        alpha: observed FPRs.
        beta: observed FNRs.
        curve: f(α) at the same points.
        runs: R, the number of runs each FNR is estimated from.

    Returns:
        ``(max (f(α) − β)/se, max (β − f(α))/se)`` over the points with 0 < f(α) < 1, se = √(f(α)(1 − f(α))/R);
        NaN when no point qualifies.
    """
    a, b, f = (np.asarray(x, dtype=float) for x in (alpha, beta, curve))
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    keep = (f > 0) & (f < 1) & (a > 0)
    if not keep.any():
        return math.nan, math.nan
    z = (f[keep] - b[keep]) / np.sqrt(f[keep] * (1 - f[keep]) / runs)
    return float(z.max()), float((-z).max())
