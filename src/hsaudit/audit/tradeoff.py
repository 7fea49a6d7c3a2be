"""Empirical trade-off points of two score samples (**higher score ⇒ member**, canary inserted).

- :func:`empirical_tradeoff`: the (FPR, FNR) curve over every threshold between distinct scores (Cebere et al.
  fig6);
- :func:`observed_rates`: (α, β) at every threshold τ ∈ O ∪ O′ ("score ≥ τ"), the points the known-family audits
  compare with a family's curves (:mod:`hsaudit.audit.pld`);
- :func:`clopper_pearson_points` and :func:`held_out_point`: those points replaced by one-sided Clopper–Pearson
  upper bounds, at every threshold (the paper and bonferroni rules) or at one threshold chosen on a held-out
  selection split (the held-out rule): the known-family form of a threshold rule
  (:meth:`hsaudit.audit.rules.HeldOut.points`).

numpy and scipy only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.audit.bounds import clopper_pearson_upper
from hsaudit.audit.inputs import as_members, as_scores, check_classes
from hsaudit.audit.threshold import stratified_split

__all__ = ["clopper_pearson_points", "empirical_tradeoff", "held_out_point", "observed_rates"]


def observed_rates(o_out: npt.ArrayLike, o_in: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(α, β) for every threshold τ ∈ O ∪ O′: α = #{o ∈ O: o ≥ τ}/|O| (FPR), β = #{o′ ∈ O′: o′ < τ}/|O′| (FNR)."""
    o = np.sort(np.asarray(o_out, dtype=float))
    o1 = np.sort(np.asarray(o_in, dtype=float))
    taus = np.unique(np.concatenate([o, o1]))
    alpha = (o.size - np.searchsorted(o, taus, side="left")) / o.size
    beta = np.searchsorted(o1, taus, side="left") / o1.size
    return alpha, beta


def empirical_tradeoff(
    scores: npt.ArrayLike, members: npt.ArrayLike, *, max_points: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Empirical trade-off curve: (FPR, FNR) at every threshold between distinct scores.

    Includes both ends (τ below all scores: FPR = 1, FNR = 0; above all: FPR = 0, FNR = 1); FPR is
    non-increasing and FNR non-decreasing along the curve (thresholds increasing). Cebere et al. fig6.

    Args:
        scores: R finite scores (higher ⇒ member).
        members: 0/1 labels.
        max_points: if given (≥ 2) and the curve has more points, keep about that many, evenly spaced in
            arc length of the curve (both ends kept).

    Returns:
        (fpr, fnr) arrays.

    Raises:
        ValueError: as :func:`hsaudit.audit.auditor.audit_scores` (scores, labels, classes); max_points < 2.
    """
    s = as_scores(scores)
    m = as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    n0 = s.size - n1
    check_classes(n0, n1)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    mm = m[order]
    c1 = np.concatenate(([0], np.cumsum(mm)))  # members among the i lowest
    c0 = np.arange(s.size + 1) - c1
    cut = np.concatenate(([True], ss[1:] != ss[:-1], [True]))  # positions i where a threshold can sit
    fnr = c1[cut] / n1
    fpr = (n0 - c0[cut]) / n0
    if max_points is not None:
        k = int(max_points)
        if k < 2:
            raise ValueError(f"max_points must be >= 2, got {max_points}")
        if fpr.size > k:
            arc = np.concatenate(([0.0], np.cumsum(np.abs(np.diff(fpr)) + np.abs(np.diff(fnr)))))
            targets = np.linspace(0.0, arc[-1], k)
            keep = np.unique(np.clip(np.searchsorted(arc, targets), 0, fpr.size - 1))
            keep = np.union1d(keep, [0, fpr.size - 1])
            fpr, fnr = fpr[keep], fnr[keep]
    return fpr, fnr


def clopper_pearson_points(
    scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper–Pearson upper bounds on (FPR, FNR) at every threshold "score ≥ τ" (higher score ⇒ canary
    present): :func:`hsaudit.audit.clopper_pearson_upper` of the counts behind :func:`hsaudit.audit.observed_rates`."""
    alpha, beta = observed_rates(scores_out, scores_in)
    n0, n1 = np.size(scores_out), np.size(scores_in)
    return (
        clopper_pearson_upper(np.round(alpha * n0), n0, confidence=confidence),
        clopper_pearson_upper(np.round(beta * n1), n1, confidence=confidence),
    )


def held_out_point(
    scores_out: npt.ArrayLike,
    scores_in: npt.ArrayLike,
    *,
    confidence: float,
    selection_fraction: float = 0.5,
    seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The one Clopper–Pearson-bounded (FPR, FNR) point of a valid known-family audit.

    Each world is split at random (``selection_fraction`` of its scores, at least one on each side;
    :func:`hsaudit.audit.threshold.stratified_split` from ``seed``); on the
    selection scores the threshold with the largest Φ⁻¹(1 − ᾱ) − Φ⁻¹(β̄) of its CP upper bounds ᾱ, β̄ is chosen
    (the most revealing point for Gaussian-like curves); on the other scores the one-sided CP upper bounds
    at that threshold are returned (arrays of length 1). Since the estimation scores are independent of the choice,
    the true point lies below both bounds with probability ≥ 1 − 2(1 − confidence) (each bound's level).
    """
    o0, o1 = np.asarray(scores_out, dtype=float), np.asarray(scores_in, dtype=float)
    if o0.size < 2 or o1.size < 2:
        raise ValueError("a held-out split needs at least two scores per world")
    if not 0.0 < selection_fraction < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction}")
    sel0, sel1, est0, est1 = stratified_split(np.random.default_rng(seed), o0, o1, selection_fraction)
    taus = np.unique(np.concatenate([sel0, sel1]))
    s0, s1 = np.sort(sel0), np.sort(sel1)
    alpha = (s0.size - np.searchsorted(s0, taus, side="left")) / s0.size
    beta = np.searchsorted(s1, taus, side="left") / s1.size
    # Rank thresholds by the μ of their selection-set CP bounds (as the GDP audit does): raw rates would favour
    # the extremes, where a rate of 0 or 1 is mostly luck.
    a = clopper_pearson_upper(np.round(alpha * s0.size), s0.size, confidence=confidence)
    b = clopper_pearson_upper(np.round(beta * s1.size), s1.size, confidence=confidence)
    tau = taus[int(np.argmax(-special.ndtri(a) - special.ndtri(b)))]
    fp = np.count_nonzero(est0 >= tau)
    fn = np.count_nonzero(est1 < tau)
    return (
        np.atleast_1d(clopper_pearson_upper(fp, est0.size, confidence=confidence)),
        np.atleast_1d(clopper_pearson_upper(fn, est1.size, confidence=confidence)),
    )
