"""Audits in one training run: the counting bound of Steinke, Nasr & Jagielski (2023, "Privacy auditing with one
(1) training run", Theorem 3.1 and Appendix D).

m canaries are each included independently with probability ½ in a single training run. The auditor scores every
canary (higher ⇒ included), abstains on most of them and guesses only on its ``k_plus`` highest scores ("in")
and its ``k_minus`` lowest ("out"): r = k_plus + k_minus guesses, v of them correct. Under (ε, δ)-DP the number of
correct guesses is stochastically dominated as in randomized response with accuracy q = e^ε/(1 + e^ε), up to a δ
term:

    P[V ≥ v] ≤ P[Binomial(r, q) ≥ v] + 2mδ · max_{1 ≤ i ≤ v} P[v − i ≤ Binomial(r, q) < v] / i.

The right-hand side (:func:`one_run_p_value`) is the p-value of the hypothesis "the run is (ε, δ)-DP"; the audit's
lower bound is the largest ε that it rejects at the given confidence (:func:`one_run_epsilon`, bisection: the
p-value increases with ε). With δ = 0 the bound is the exact randomized-response tail.

Assumptions (docs/audit.md, "Audits in one training run"): canaries are included independently, each with
probability ½ (the randomness the bound is about), and the guesses may depend on the scores in any way — the
bound holds for any auditor. Choosing k after seeing the scores costs a union bound (:func:`one_run_audit_search`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace

import numpy as np
import numpy.typing as npt

from hsaudit.audit.inputs import check_unit

__all__ = [
    "OneRunResult",
    "check_counts",
    "one_run_audit",
    "one_run_audit_search",
    "one_run_delta_term",
    "one_run_epsilon",
    "one_run_guesses",
    "one_run_p_value",
]


def check_counts(canaries: int, guesses: int, correct: int) -> tuple[int, int, int]:
    """(m, r, v) as integers with 0 ≤ v ≤ r ≤ m and m ≥ 1: the counts of a one-run audit (this bound's and the
    f-DP bound's, :mod:`hsaudit.audit.one_run_fdp`)."""
    m, r, v = int(canaries), int(guesses), int(correct)
    if not 0 <= v <= r <= m or m == 0:
        raise ValueError(f"need 0 <= correct <= guesses <= canaries and canaries >= 1, got {v}, {r}, {m}")
    return m, r, v


def _check_delta(delta: float) -> float:
    if not 0.0 <= float(delta) < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta}")
    return float(delta)


def one_run_p_value(*, canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """P-value of ``correct`` right guesses out of ``guesses`` under (ε, δ)-DP with ``canaries`` randomized
    canaries (Steinke et al. 2023, Theorem 3.1; the formula is in the module docstring), capped at 1.

    >>> round(one_run_p_value(canaries=10, guesses=10, correct=10, epsilon=0.0, delta=0.0), 6)  # ½¹⁰
    0.000977
    """
    m, r, v = check_counts(canaries, guesses, correct)
    if not epsilon >= 0.0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    d = _check_delta(delta)
    q = 1.0 / (1.0 + math.exp(-float(epsilon)))
    from scipy import stats  # here: ~1 s to import, and every plan imports this module's callers

    tail = float(stats.binom.sf(v - 1, r, q))  # P[Binomial(r, q) >= v]
    return min(tail + one_run_delta_term(canaries=m, guesses=r, correct=v, epsilon=epsilon, delta=d), 1.0)


def one_run_delta_term(*, canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The δ term of :func:`one_run_p_value` at ``epsilon``: 2mδ · max_i P[v − i ≤ Binomial(r, q) < v] / i (0 at
    δ = 0 or v = 0). It grows with the number m of canaries, so a pooled audit of many canaries pays for δ: where
    it nears 1 − confidence no ε is rejected however many guesses are right.

    >>> one_run_delta_term(canaries=10, guesses=10, correct=10, epsilon=1.0, delta=0.0)
    0.0
    """
    m, r, v = check_counts(canaries, guesses, correct)
    d = _check_delta(delta)
    if d == 0.0 or v == 0:
        return 0.0
    q = 1.0 / (1.0 + math.exp(-float(epsilon)))
    from scipy import stats  # here: ~1 s to import, and every plan imports this module's callers

    # P[v − i ≤ Binomial < v] for i = 1..v, as a cumulative sum of the pmf below v.
    below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, q))
    return float(2.0 * m * d * np.max(below / np.arange(1, v + 1)))


def one_run_epsilon(
    *, canaries: int, guesses: int, correct: int, delta: float, confidence: float = 0.95, tol: float = 1e-6
) -> float:
    """The one-run lower bound: the largest ε whose p-value (:func:`one_run_p_value`) is below 1 − confidence.

    0 when even ε = 0 is not rejected. Bisection to ``tol`` in ε (the p-value is increasing in ε).

    >>> e = one_run_epsilon(canaries=100, guesses=100, correct=100, delta=0.0, confidence=0.95)
    >>> q = 0.05 ** (1 / 100)  # all guesses right: q^r = 1 − confidence
    >>> abs(e - math.log(q / (1 - q))) < 1e-5
    True
    """
    m, r, v = check_counts(canaries, guesses, correct)
    beta = 1.0 - check_unit("confidence", confidence)
    d = _check_delta(delta)

    def rejected(eps: float) -> bool:
        return one_run_p_value(canaries=m, guesses=r, correct=v, epsilon=eps, delta=d) < beta

    if r == 0 or not rejected(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejected(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:  # every guess right on a huge r: the bound is astronomically large; report the bracket
            return lo
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejected(mid) else (lo, mid)
    return lo


def one_run_guesses(scores: npt.ArrayLike, included: npt.ArrayLike, *, k_plus: int, k_minus: int) -> tuple[int, int]:
    """(r, v): guess "in" on the ``k_plus`` highest scores and "out" on the ``k_minus`` lowest, abstain elsewhere.

    Ties are broken by position (a stable sort), so the guesses never depend on the inclusion bits.
    """
    s = np.asarray(scores, dtype=float).ravel()
    b = np.asarray(included).astype(bool).ravel()
    if s.size != b.size:
        raise ValueError(f"scores and included differ in length ({s.size} vs {b.size})")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    kp, km = int(k_plus), int(k_minus)
    if kp < 0 or km < 0 or kp + km > s.size:
        raise ValueError(f"need k_plus, k_minus >= 0 and k_plus + k_minus <= canaries ({s.size}), got {kp}, {km}")
    order = np.argsort(s, kind="stable")
    correct = int(np.count_nonzero(b[order[s.size - kp :]])) if kp else 0
    correct += int(np.count_nonzero(~b[order[:km]]))
    return kp + km, correct


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit: ε lower bound at ``delta`` and ``confidence``, from ``correct`` of ``guesses`` right.

    ``mu`` is the audited μ̂ of the f-DP bound (:mod:`hsaudit.audit.one_run_fdp`, whose ε is that of μ̂-GDP at
    ``delta``); None for the counting bound, which tests (ε, δ)-DP directly (and then absent from :meth:`to_dict`).
    """

    epsilon: float
    canaries: int
    guesses: int
    correct: int
    k_plus: int
    k_minus: int
    delta: float
    confidence: float
    method: str = "steinke2023"
    mu: float | None = None

    def to_dict(self) -> dict:
        out = asdict(self)
        if out["mu"] is None:
            del out["mu"]
        return out


def one_run_audit(
    scores: npt.ArrayLike,
    included: npt.ArrayLike,
    *,
    k_plus: int,
    k_minus: int,
    delta: float,
    confidence: float = 0.95,
) -> OneRunResult:
    """Steinke et al.'s one-run audit of canary ``scores`` (higher ⇒ included) with their inclusion bits, for one
    choice of (k_plus, k_minus) fixed before looking at the scores."""
    r, v = one_run_guesses(scores, included, k_plus=k_plus, k_minus=k_minus)
    m = int(np.asarray(scores).size)
    eps = one_run_epsilon(canaries=m, guesses=r, correct=v, delta=delta, confidence=confidence)
    return OneRunResult(eps, m, r, v, int(k_plus), int(k_minus), float(delta), float(confidence))


def one_run_audit_search(
    scores: npt.ArrayLike,
    included: npt.ArrayLike,
    *,
    ks: Sequence[tuple[int, int]],
    delta: float,
    confidence: float = 0.95,
    audit: Callable[..., OneRunResult] = one_run_audit,
) -> OneRunResult:
    """The best of several (k_plus, k_minus) choices, each tested at confidence 1 − (1 − confidence)/len(ks)
    (Bonferroni), so that the maximum is still a valid bound at ``confidence``; the result records the level each
    try used and ``method = "<the audit's method>, best of N (Bonferroni)"``.

    ``audit`` is the one-choice audit to repeat: :func:`one_run_audit` (Steinke et al., the default) or
    :func:`hsaudit.audit.one_run_fdp.one_run_fdp_audit` (Mahloujifar et al.)."""
    if not ks:
        raise ValueError("ks must name at least one (k_plus, k_minus)")
    level = 1.0 - (1.0 - check_unit("confidence", confidence)) / len(ks)
    best = max(
        (audit(scores, included, k_plus=kp, k_minus=km, delta=delta, confidence=level) for kp, km in ks),
        key=lambda res: res.epsilon,
    )
    return replace(best, method=f"{best.method}, best of {len(ks)} (Bonferroni)")
