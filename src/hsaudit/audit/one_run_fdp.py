"""Audits in one training run under f-DP: the bound of Mahloujifar, Melis & Chaudhuri (2024, "Auditing f-differential
privacy in one run", arXiv:2410.22235; ICML 2025), beside the counting bound of :mod:`hsaudit.audit.one_run`.

Same game as Steinke et al. (2023): m canaries, each included independently with probability ½; the auditor makes
k guesses ("in" on its ``k_plus`` highest scores, "out" on its ``k_minus`` lowest, abstains elsewhere) and V of
them are right. Instead of reducing the run to (ε, δ)-DP randomized response, the bound uses the whole trade-off
curve f of the hypothesis "the run is f-DP" (μ-GDP: f = G_μ).

**The bound** (derived here as we implement it; the same recursion as jax_privacy's ``_epsilon_one_run_fdp``). Let
J be a canary drawn uniformly, and for each level i let R_i = P[V ≥ i, guess on J right] = E[V·1(V ≥ i)]/m and
H_i = P[V ≥ i, guess on J wrong] = E[(k − V)·1(V ≥ i)]/m. The events {V ≥ i + 1, J right} and {V ≥ i, J wrong}
both say "at least i right guesses among the other canaries" (a function of the output and the other bits, which
f-DP in canary J cannot see through), with J right or wrong; f-DP in J, averaged over J by convexity of f, gives

    H_i ≥ g(R_{i+1}),   g(γ) = inf{ζ : f(ζ) ≤ 1 − γ}   (for μ-GDP, g(γ) = Φ(Φ⁻¹(γ) − μ)),

while the probability at level i, P[V = i], adds i/m to R and (k − i)/m to H. If P[V ≥ c] ≥ τ, walking down from
(r_c, h_c) = (cτ/m, (k − c)τ/m) with h_i = max(h_{i+1}, g(r_{i+1})) and r_i = r_{i+1} + i/(k − i)·(h_i − h_{i+1})
gives the least mass the levels below c must carry; when r_0 + h_0 > k/m (= R_0 + H_0, all the guesses) no f-DP
run puts probability τ on V ≥ c. The p-value (:func:`one_run_fdp_p_value`) is the smallest such τ; it equals the
largest P[V ≥ c] of any distribution of V that meets the constraints above (``tests/audit/test_one_run_fdp.py``
checks it against that linear program). The audit (:func:`one_run_fdp_mu`) reports the largest μ whose μ-GDP
hypothesis the observation rejects at the confidence, and its ε at δ through the project's one μ → ε conversion,
:func:`hsaudit.accounting.gdp_epsilon`.

Assumptions: as for the counting bound, independent inclusion with probability ½ and any auditor whose guesses
are fixed by the output (k fixed in advance, or paid for: :func:`hsaudit.audit.one_run.one_run_audit_search`).
The ε reported is that of the μ̂-GDP curve: a lower bound on the run's ε at δ when its privacy curve is Gaussian
(the hypothesis tested is "μ-GDP", not "(ε, δ)-DP"), as for the GDP audit of Nasr et al. (2023).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.inputs import check_unit
from hsaudit.audit.one_run import OneRunResult, check_counts, one_run_guesses

__all__ = [
    "FDP_METHOD",
    "MU_CAP",
    "one_run_fdp_audit",
    "one_run_fdp_epsilon",
    "one_run_fdp_mu",
    "one_run_fdp_p_value",
]

#: The ``method`` of a :class:`~hsaudit.audit.one_run.OneRunResult` from this bound.
FDP_METHOD = "mahloujifar2024 (GDP)"
#: μ̂ is searched in [0, MU_CAP]: beyond it Φ(Φ⁻¹(γ) − μ) underflows and no observation rejects μ-GDP.
MU_CAP = 40.0

Inverse = Callable[[float], float]


def _gdp_inverse(mu: float) -> Inverse:
    """g(γ) = Φ(Φ⁻¹(γ) − μ): the least wrong-guess mass that μ-GDP allows beside right-guess mass γ."""

    def g(gamma: float) -> float:
        return float(special.ndtr(special.ndtri(gamma) - mu))

    return g


def _tradeoff_inverse(tradeoff: Callable[[npt.ArrayLike], npt.ArrayLike]) -> Inverse:
    """g(γ) = inf{ζ ∈ [0, 1] : f(ζ) ≤ 1 − γ} for a trade-off curve f (convex, non-increasing), by bisection.

    The bisection keeps the left end below the infimum, so the g it returns never exceeds the true one (within
    2⁻⁵⁰) — the direction that keeps the bound valid.
    """

    def f(x: float) -> float:
        return float(np.asarray(tradeoff(np.asarray([x], dtype=float)), dtype=float).ravel()[0])

    def g(gamma: float) -> float:
        level = 1.0 - gamma
        if f(0.0) <= level:
            return 0.0
        lo, hi = 0.0, 1.0  # f(lo) > level >= f(hi) (f(1) = 0 for a trade-off curve)
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if f(mid) <= level else (mid, hi)
        return lo

    return g


def _excess_mass(m: int, k: int, c: int, tau: float, g: Inverse) -> float:
    """r_0 + h_0 − k/m of the recursion (module docstring) started from P[V ≥ c] = τ; > 0 ⇒ τ is impossible."""
    r, h = tau * c / m, tau * (k - c) / m
    for i in range(c - 1, -1, -1):
        h_next = max(h, g(min(r, 1.0)))
        if h_next == h:  # neither r nor h can move again
            break
        r, h = r + i / (k - i) * (h_next - h), h_next
    return r + h - k / m


def _p_value(m: int, k: int, c: int, g: Inverse, rtol: float) -> float:
    if c == 0 or _excess_mass(m, k, c, 1.0, g) <= 0.0:
        return 1.0
    # Bisection on log τ: the excess grows with τ; the p-value may be astronomically small (c = k large).
    lo, hi = math.log(1e-300), 0.0
    if _excess_mass(m, k, c, 1e-300, g) > 0.0:
        return 1e-300
    while hi - lo > rtol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _excess_mass(m, k, c, math.exp(mid), g) > 0.0 else (mid, hi)
    return math.exp(hi)


def one_run_fdp_p_value(
    *,
    canaries: int,
    guesses: int,
    correct: int,
    mu: float | None = None,
    tradeoff: Callable[[npt.ArrayLike], npt.ArrayLike] | None = None,
    rtol: float = 1e-9,
) -> float:
    """P-value of ``correct`` right guesses out of ``guesses`` under the hypothesis "the run is f-DP", with
    ``canaries`` randomized canaries: the largest P[V ≥ correct] that f-DP allows (Mahloujifar et al. 2024; the
    recursion is in the module docstring).

    Give either ``mu`` (μ-GDP, closed form) or ``tradeoff`` (any trade-off curve f: a vectorised callable
    α ↦ f(α), convex and non-increasing on [0, 1]; slower: each step inverts f by bisection).

    Args:
        canaries: m ≥ 1.
        guesses: k (0 ≤ k ≤ m).
        correct: c (0 ≤ c ≤ k).
        mu: μ ≥ 0 of the μ-GDP hypothesis.
        tradeoff: f of the f-DP hypothesis.
        rtol: relative precision of the p-value (bisection on log τ).

    Returns:
        The p-value in [1e-300, 1]; 1 when c = 0.

    Raises:
        ValueError: counts out of order, μ negative or NaN, or not exactly one of ``mu`` / ``tradeoff``.

    >>> round(one_run_fdp_p_value(canaries=16, guesses=16, correct=16, mu=1.0), 4)
    0.0578
    """
    m, k, c = check_counts(canaries, guesses, correct)
    if (mu is None) == (tradeoff is None):
        raise ValueError("give exactly one of mu (μ-GDP) and tradeoff (a trade-off curve f)")
    if mu is not None:
        if not float(mu) >= 0.0:
            raise ValueError(f"mu must be >= 0, got {mu}")
        g = _gdp_inverse(float(mu))
    else:
        g = _tradeoff_inverse(tradeoff)
    return _p_value(m, k, c, g, float(rtol))


def one_run_fdp_mu(*, canaries: int, guesses: int, correct: int, confidence: float = 0.95, tol: float = 1e-6) -> float:
    """The one-run GDP audit: the largest μ for which μ-GDP gives P[V ≥ correct] below 1 − confidence.

    0 when even μ = 0 (no leakage: V ~ Binomial(k, ½) at best) is not rejected; :data:`MU_CAP` when every
    μ ≤ MU_CAP is rejected. Bisection to ``tol`` in μ (the excess mass falls as μ grows).

    >>> one_run_fdp_mu(canaries=1000, guesses=100, correct=55)  # chance level
    0.0
    """
    m, k, c = check_counts(canaries, guesses, correct)
    beta = 1.0 - check_unit("confidence", confidence)

    def rejected(mu: float) -> bool:
        return _excess_mass(m, k, c, beta, _gdp_inverse(mu)) > 0.0

    if c == 0 or not rejected(0.0):
        return 0.0
    if rejected(MU_CAP):
        return MU_CAP
    lo, hi = 0.0, 1.0
    while rejected(hi):
        lo, hi = hi, min(2.0 * hi, MU_CAP)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejected(mid) else (lo, mid)
    return lo


def one_run_fdp_epsilon(*, canaries: int, guesses: int, correct: int, delta: float, confidence: float = 0.95) -> float:
    """ε at ``delta`` of the audited μ̂ (:func:`one_run_fdp_mu` then :func:`hsaudit.accounting.gdp_epsilon`)."""
    mu = one_run_fdp_mu(canaries=canaries, guesses=guesses, correct=correct, confidence=confidence)
    return gdp_epsilon(mu=mu, delta=delta)


def one_run_fdp_audit(
    scores: npt.ArrayLike,
    included: npt.ArrayLike,
    *,
    k_plus: int,
    k_minus: int,
    delta: float,
    confidence: float = 0.95,
) -> OneRunResult:
    """Mahloujifar et al.'s one-run GDP audit of canary ``scores`` (higher ⇒ included) with their inclusion bits,
    for one (k_plus, k_minus) fixed before looking at the scores; the result carries μ̂ and its ε at ``delta``.

    Several (k_plus, k_minus) with a Bonferroni correction:
    ``one_run_audit_search(scores, included, ks=..., delta=..., audit=one_run_fdp_audit)``.
    """
    k, c = one_run_guesses(scores, included, k_plus=k_plus, k_minus=k_minus)
    m = int(np.asarray(scores).size)
    mu = one_run_fdp_mu(canaries=m, guesses=k, correct=c, confidence=confidence)
    eps = gdp_epsilon(mu=mu, delta=delta)
    return OneRunResult(eps, m, k, c, int(k_plus), int(k_minus), float(delta), float(confidence), FDP_METHOD, mu)
