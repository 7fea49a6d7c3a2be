"""Accounting: privacy upper bounds and the curves audits compare against (maths layer: numpy, scipy,
dp-accounting; no torch).

- :mod:`hsaudit.accounting.gaussian` — μ-GDP closed forms, trade-off curves, dp-accounting PLD for (subsampled)
  Gaussians and mixtures, σ calibration, PLD tables.
- :mod:`hsaudit.accounting.rdp` — Rényi DP of Poisson-subsampled Gaussians (dp-accounting's curve) with the classic
  and the improved conversion to (ε, δ), over a stated grid of orders.
- :mod:`hsaudit.accounting.last_iterate` — mixtures of Gaussians and the last-iterate heuristic of Steinke, Nasr
  et al. (Theorem 1), with its baselines.

The names of :mod:`hsaudit.accounting.gaussian` are re-exported here for users (``from hsaudit.accounting import
gdp_epsilon``); package code imports the defining module, so that a job's code version covers only what it runs.
"""

from __future__ import annotations

from hsaudit.accounting.gaussian import (
    DEFAULT_DISCRETIZATION,
    gdp_mu,
    gdp_delta,
    gdp_epsilon,
    gdp_tradeoff,
    gaussian_pld,
    gaussian_epsilon,
    gaussian_delta,
    mixture_gaussian_pld,
    mixture_gaussian_epsilon,
    calibrate_noise,
    epsilon_from_delta_curve,
    tradeoff_from_deltas,
    default_epsilon_grid,
    PldTable,
    sigma_for_epsilon,
    pld_tradeoff,
)

__all__ = [
    "DEFAULT_DISCRETIZATION",
    "PldTable",
    "calibrate_noise",
    "default_epsilon_grid",
    "epsilon_from_delta_curve",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_pld",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_tradeoff",
    "mixture_gaussian_epsilon",
    "mixture_gaussian_pld",
    "pld_tradeoff",
    "sigma_for_epsilon",
    "tradeoff_from_deltas",
]
