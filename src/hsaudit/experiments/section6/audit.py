"""The audit side of the Section 6 process: the GDP audit of one step's scores of both worlds under the plan's
threshold rule, and the type-I error grid and switch points of the threshold search (fig6c, App. F).

The simulations that feed it and the composition per figure are :mod:`hsaudit.experiments.section6.records`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.audit.auditor import Auditor, Paper
from hsaudit.audit.rules import ThresholdRule
from hsaudit.audit.two_sample import GdpTables, gdp_tables


def paper_tables(
    audit_rule: ThresholdRule, runs: int, *, confidence: float, delta: float, tables: GdpTables | None = None
) -> GdpTables | None:
    """The Clopper–Pearson tables the paper's rule audits R = ``runs`` per world with (``tables`` when given, checked
    to match), None under any other rule."""
    if not isinstance(audit_rule, Paper):
        return None
    if tables is None:
        return gdp_tables(runs, runs, confidence=confidence, delta=delta)
    if (tables.n0, tables.n1, tables.confidence, tables.delta) != (runs, runs, confidence, delta):
        raise ValueError("tables were built for other (n0, n1, confidence, delta)")
    return tables


def audit_pair(
    s: np.ndarray,
    m: np.ndarray,
    *,
    audit_rule: ThresholdRule,
    delta: float,
    confidence: float,
    tables: GdpTables | None,
    seed: object,
) -> dict:
    """The GDP audit of the scores ``s`` (removed world) and ``m`` (inserted world) of one step.

    Under the paper's rule the fast exact audit :meth:`hsaudit.audit.auditor.Auditor.gdp_two_sample` with ``tables``
    (:func:`paper_tables`); under any other rule :meth:`hsaudit.audit.auditor.Auditor.gdp` with the rule seeded by
    ``seed`` (:meth:`~hsaudit.audit.rules.ThresholdRule.seeded`: its selection split).

    Returns:
        epsilon_audit, mu, threshold, fpr, fnr, fpr_upper, fnr_upper, epsilon_assumption_free,
        epsilon_assumption_free_max (NaN outside the paper's rule).
    """
    if isinstance(audit_rule, Paper):
        res = Auditor(delta=delta, confidence=confidence, rule=audit_rule).gdp_two_sample(s, m, tables)
    else:
        res = Auditor(delta=delta, confidence=confidence, rule=audit_rule.seeded(seed)).gdp(s, m)
    return {
        "epsilon_audit": res.epsilon,
        "mu": res.mu,
        "threshold": res.threshold,
        "fpr": res.fpr,
        "fnr": res.fnr,
        "fpr_upper": res.fpr_upper,
        "fnr_upper": res.fnr_upper,
        "epsilon_assumption_free": res.epsilon_assumption_free,
        # Only the two-sample search of the paper's rule maximises the assumption-free bound too.
        "epsilon_assumption_free_max": getattr(res, "epsilon_assumption_free_max", np.nan),
    }


def alpha_grid(*, sigma: float, clip_norm: float, count: int) -> np.ndarray:
    """Type-I error grid of Cebere et al. Algorithm 5: linspace(0, Φ(C/(2σ²)), count)."""
    if int(count) != count or count < 2:
        raise ValueError(f"count must be an integer >= 2, got {count}")
    return np.linspace(0.0, float(special.ndtr(clip_norm / (2.0 * sigma**2))), int(count))


def switch_points(alphas: npt.ArrayLike, *, sigma: float, clip_norm: float) -> np.ndarray:
    """h_i = σC·Φ⁻¹(1 − α_i): the threshold of the level-α_i test of N(0, σ²C²) vs a larger mean (App. F).

    α = 0 gives h = +inf (a constant g, Example 1 of the paper).
    """
    a = np.asarray(alphas, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"alphas must lie in [0, 1], got {a}")
    return sigma * clip_norm * special.ndtri(1.0 - a)
