"""Clopper–Pearson bounds, their probit tables, and the assumption-free (ε, δ) bound (docs/audit.md, "Conventions").

- :func:`clopper_pearson_upper`: the one-sided Clopper–Pearson upper bound on a binomial proportion (Clopper &
  Pearson 1934), the bound every threshold rule puts on an error rate;
- :func:`probit_table`: T_n[k] = Φ⁻¹(CP_ub(k, n)) for k = 0..n, filled lazily and cached per (n, confidence), the
  tables the threshold search reads μ = −T_n₀[FP] − T_n₁[FN] from (:mod:`hsaudit.audit.threshold`);
- :func:`bonferroni_confidence`: the per-bound level that makes every threshold's two bounds hold jointly;
- :func:`assumption_free_epsilon`: the (ε, δ) lower bound from two error-rate bounds, no GDP assumption (Kairouz
  et al. 2015, Theorem 2.1; Jagielski et al. 2020).

numpy and scipy only.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.audit.inputs import check_unit

__all__ = [
    "ProbitTable",
    "assumption_free_epsilon",
    "bonferroni_confidence",
    "clear_cache",
    "clopper_pearson_upper",
    "cp_probit",
    "probit_table",
]


def clopper_pearson_upper(k: npt.ArrayLike, n: int | npt.ArrayLike, *, confidence: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper confidence bound on a binomial proportion.

    The p with P(Bin(n, p) ≤ k) = 1 − confidence, i.e. the ``confidence`` quantile of Beta(k + 1, n − k)
    (Clopper & Pearson 1934); 1 when k = n. For k = 0 it is 1 − (1 − confidence)^{1/n}.

    Args:
        k: observed counts, 0 ≤ k ≤ n (integers).
        n: numbers of trials (≥ 1), broadcast against ``k``.
        confidence: confidence level in (0, 1).

    Returns:
        The upper bounds, shape of ``k`` broadcast with ``n``.

    Raises:
        ValueError: non-integer or out-of-range counts, confidence outside (0, 1).

    >>> float(clopper_pearson_upper(0, 10, confidence=0.95))  # 1 - 0.05**0.1  # doctest: +ELLIPSIS
    0.2588...
    """
    c = check_unit("confidence", confidence)
    kk = np.asarray(k, dtype=float)
    nn = np.asarray(n, dtype=float)
    kk, nn = np.broadcast_arrays(kk, nn)
    if np.isnan(kk).any() or np.isnan(nn).any() or (kk != np.round(kk)).any() or (nn != np.round(nn)).any():
        raise ValueError("k and n must be integers")
    if (nn < 1).any() or (kk < 0).any() or (kk > nn).any():
        raise ValueError("counts must satisfy 0 <= k <= n and n >= 1")
    out = np.ones(kk.shape)
    lt = kk < nn
    out[lt] = special.betaincinv(kk[lt] + 1.0, nn[lt] - kk[lt], c)
    return out


def cp_probit(k: np.ndarray, n: int, confidence: float) -> np.ndarray:
    """Φ⁻¹(CP_ub(k, n)) for integer k in [0, n], accurate at both ends (inf at k = n)."""
    k = np.asarray(k, dtype=float)
    out = np.full(k.shape, np.inf)
    lt = k < n
    kk = k[lt]
    ub = special.betaincinv(kk + 1.0, n - kk, confidence)
    val = special.ndtri(ub)
    upper_half = ub > 0.5
    if upper_half.any():
        # 1 − ub = betaincinv(n − k, k + 1, 1 − c) (symmetry I_x(a, b) = 1 − I_{1−x}(b, a)), and
        # Φ⁻¹(ub) = −Φ⁻¹(1 − ub): no cancellation near ub = 1.
        ku = kk[upper_half]
        val[upper_half] = -special.ndtri(special.betaincinv(n - ku, ku + 1.0, 1.0 - confidence))
    out[lt] = val
    return out


class ProbitTable:
    """T[k] = Φ⁻¹(CP_ub(k, n)) for k = 0..n, computed on demand and kept (one per (n, confidence))."""

    __slots__ = ("n", "confidence", "values")

    def __init__(self, n: int, confidence: float) -> None:
        self.n = n
        self.confidence = confidence
        self.values = np.full(n + 1, np.nan)
        self.values[n] = np.inf

    def get(self, idx: np.ndarray) -> np.ndarray:
        v = self.values[idx]
        missing = np.isnan(v)
        if missing.any():
            need = np.unique(idx[missing])
            # Concurrent fills (threads) write identical values: harmless.
            self.values[need] = cp_probit(need, self.n, self.confidence)
            v = self.values[idx]
        return v

    def fill(self) -> None:
        """Compute every entry (for benchmarks; audits fill lazily)."""
        self.get(np.arange(self.n + 1))


@functools.lru_cache(maxsize=32)
def probit_table(n: int, confidence: float) -> ProbitTable:
    """The cached :class:`ProbitTable` of (n, confidence) (:func:`clear_cache` forgets them)."""
    return ProbitTable(int(n), float(confidence))


def clear_cache() -> None:
    """Forget the cached Clopper–Pearson tables (benchmarks of the cold path)."""
    probit_table.cache_clear()


def bonferroni_confidence(x0: np.ndarray, x1: np.ndarray, confidence: float) -> float:
    """The per-bound confidence 1 − (1 − c)/(2n) of the bonferroni rule: n = (distinct scores) + 1 candidate
    thresholds, two one-sided bounds each, so that every bound of every threshold holds jointly with probability
    ≥ ``confidence`` (a union bound; thresholds between the same pair of scores are counted once)."""
    n = np.unique(np.concatenate([x0, x1])).size + 1
    return 1.0 - (1.0 - confidence) / (2 * n)


def assumption_free_epsilon(fpr_upper: npt.ArrayLike, fnr_upper: npt.ArrayLike, *, delta: float) -> np.ndarray | float:
    """ε of the (ε, δ)-DP lower bound from error-rate upper bounds, no GDP assumption.

    Any (ε, δ)-DP mechanism satisfies FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ (Kairouz et al.
    2015, Theorem 2.1), hence ε ≥ max(log((1 − δ − FPR_ub)/FNR_ub), log((1 − δ − FNR_ub)/FPR_ub)),
    clipped at 0 (docs/audit.md, "The estimators").

    Args:
        fpr_upper: upper bound(s) on the FPR, in [0, 1].
        fnr_upper: upper bound(s) on the FNR, in [0, 1].
        delta: δ in (0, 1).

    Returns:
        ε ≥ 0 (inf when a bound is 0 and the other below 1 − δ); float for scalar input.

    Raises:
        ValueError: bounds outside [0, 1] or NaN, δ outside (0, 1).
    """
    d = check_unit("delta", delta)
    a = np.asarray(fpr_upper, dtype=float)
    b = np.asarray(fnr_upper, dtype=float)
    for name, x in (("fpr_upper", a), ("fnr_upper", b)):
        if np.isnan(x).any() or (x < 0).any() or (x > 1).any():
            raise ValueError(f"{name} must be in [0, 1]")
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.log(np.maximum(1.0 - d - a, 0.0)) - np.log(b)
        e2 = np.log(np.maximum(1.0 - d - b, 0.0)) - np.log(a)
    e1 = np.where(np.isnan(e1), -np.inf, e1)
    e2 = np.where(np.isnan(e2), -np.inf, e2)
    out = np.maximum(np.maximum(e1, e2), 0.0)
    return float(out) if out.ndim == 0 else out

