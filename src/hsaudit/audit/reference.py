"""The slow reference of the paper rule's GDP audit: a loop over every threshold, as public auditing code does.

It counts the errors at each threshold directly, takes the Clopper–Pearson bounds from ``scipy.stats.binomtest``
and converts every μ to ε by root finding: O(R²), independent of the fast search of
:mod:`hsaudit.audit.threshold` it checks (``tests/audit/test_audit.py``) and the baseline ``hsaudit bench audit``
times it against (docs/audit.md, "Speed").
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.bounds import assumption_free_epsilon, clopper_pearson_upper
from hsaudit.audit.gdp import AuditResult
from hsaudit.audit.inputs import as_members, as_scores, check_classes, check_unit

__all__ = ["reference_audit"]


def reference_audit(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
) -> AuditResult:
    """Slow reference of the paper-mode audit: a loop over every threshold, as public auditing code does.

    For each threshold between consecutive distinct scores (and below/above all), counts the errors
    directly, takes the one-sided Clopper–Pearson bounds from ``scipy.stats.binomtest(...,
    alternative="less").proportion_ci``, computes μ and converts it to ε by root finding, keeping the
    threshold with the largest (ε, μ). O(R²); for tests and the benchmark only.

    Args:
        scores: R finite scores (higher ⇒ member).
        members: 0/1 labels.
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1).

    Returns:
        An :class:`AuditResult` of the paper rule (``threshold_rule`` "paper").
    """
    from scipy import stats

    d = check_unit("delta", delta)
    c = check_unit("confidence", confidence)
    s = as_scores(scores).astype(np.float64)
    m = as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    n0 = s.size - n1
    check_classes(n0, n1)
    values = np.unique(s)
    # Threshold i sits between values[i-1] and values[i]; i = 0 is below everything, i = len above.
    best_key = (-math.inf, -math.inf)
    best = None
    for i in range(values.size + 1):
        if i == 0:
            pred = np.ones(s.size, dtype=bool)
            tau = -math.inf
        else:
            pred = s > values[i - 1]
            tau = values[i - 1] + (values[i] - values[i - 1]) / 2.0 if i < values.size else math.inf
        fp = int(np.sum(pred & ~m))
        fn = int(np.sum(~pred & m))
        fpr_ub = stats.binomtest(fp, n0, alternative="less").proportion_ci(confidence_level=c).high
        fnr_ub = stats.binomtest(fn, n1, alternative="less").proportion_ci(confidence_level=c).high
        with np.errstate(divide="ignore"):
            mu = float(special.ndtri(1.0 - fpr_ub) - special.ndtri(fnr_ub))
        if math.isnan(mu):
            mu = -math.inf
        eps = gdp_epsilon(mu=mu, delta=d)
        if (eps, mu) > best_key:
            best_key = (eps, mu)
            best = (fp, fn, tau, fpr_ub, fnr_ub, mu, eps)
    if best is None:  # every μ = −inf
        fp, fn = n0, 0
        fpr_ub, fnr_ub = 1.0, float(clopper_pearson_upper(0, n1, confidence=c))
        best = (fp, fn, math.nan, fpr_ub, fnr_ub, -math.inf, 0.0)
    fp, fn, tau, fpr_ub, fnr_ub, mu, eps = best
    if not math.isfinite(mu) or not math.isfinite(tau):
        tau = math.nan
    return AuditResult(
        epsilon=eps,
        mu=mu,
        threshold=float(tau),
        fpr_upper=float(fpr_ub),
        fnr_upper=float(fnr_ub),
        fpr=fp / n0,
        fnr=fn / n1,
        epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub, fnr_ub, delta=d)),
        n_members=n1,
        n_nonmembers=n0,
        confidence=c,
        delta=d,
        threshold_rule="paper",
    )
