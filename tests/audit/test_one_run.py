"""One-run audits (hsaudit.audit.one_run): Steinke, Nasr & Jagielski (2023) against closed forms, a slow
reference of the p-value, and randomized response (a mechanism whose ε is known exactly)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hsaudit.audit.one_run import (
    one_run_audit,
    one_run_audit_search,
    one_run_epsilon,
    one_run_guesses,
    one_run_p_value,
)


def slow_p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Theorem 3.1 term by term with exact binomial coefficients."""
    q = math.exp(eps) / (1 + math.exp(eps))
    pmf = [math.comb(r, j) * q**j * (1 - q) ** (r - j) for j in range(r + 1)]
    tail = sum(pmf[v:])
    worst = max((sum(pmf[v - i : v]) / i for i in range(1, v + 1)), default=0.0)
    return min(tail + 2 * m * delta * worst, 1.0)


@pytest.mark.parametrize(("m", "r", "v", "eps", "delta"), [
    (100, 40, 30, 0.5, 0.0), (100, 40, 30, 0.5, 1e-5), (1000, 200, 170, 1.2, 1e-5), (50, 50, 41, 2.0, 1e-3),
    (10, 10, 0, 1.0, 1e-5), (500, 100, 100, 3.0, 1e-6),
])  # fmt: skip
def test_p_value_matches_the_slow_reference(m, r, v, eps, delta):
    assert one_run_p_value(canaries=m, guesses=r, correct=v, epsilon=eps, delta=delta) == pytest.approx(
        slow_p_value(m, r, v, eps, delta), rel=1e-9, abs=1e-15)


def test_all_guesses_right_has_a_closed_form():
    """δ = 0, v = r: the p-value is q^r, so the bound solves q^r = 1 − confidence."""
    for r in (5, 20, 200):
        q = 0.05 ** (1 / r)
        expected = math.log(q / (1 - q))
        got = one_run_epsilon(canaries=r, guesses=r, correct=r, delta=0.0, confidence=0.95)
        assert got == pytest.approx(expected, abs=1e-5)


def test_bound_is_monotone_and_delta_only_weakens_it():
    eps = [one_run_epsilon(canaries=1000, guesses=200, correct=v, delta=1e-5) for v in (110, 130, 150, 170)]
    assert eps == sorted(eps) and eps[0] < eps[-1]
    strict = one_run_epsilon(canaries=1000, guesses=200, correct=170, delta=0.0)
    loose = one_run_epsilon(canaries=1000, guesses=200, correct=170, delta=1e-3)
    assert loose < strict
    assert one_run_epsilon(canaries=100, guesses=10, correct=5, delta=1e-5) == 0.0  # chance level: nothing


def test_guesses_count_the_top_and_bottom_scores():
    scores = np.array([0.9, 0.1, 0.8, 0.2, 0.5, 0.7])
    included = np.array([1, 0, 0, 1, 1, 1])
    # top 2: 0.9 (in, right), 0.8 (out, wrong); bottom 2: 0.1 (out, right), 0.2 (in, wrong)
    assert one_run_guesses(scores, included, k_plus=2, k_minus=2) == (4, 2)
    assert one_run_guesses(scores, included, k_plus=1, k_minus=0) == (1, 1)
    with pytest.raises(ValueError, match="k_plus"):
        one_run_guesses(scores, included, k_plus=4, k_minus=3)
    with pytest.raises(ValueError, match="length"):
        one_run_guesses(scores, included[:-1], k_plus=1, k_minus=1)
    with pytest.raises(ValueError, match="confidence"):
        one_run_epsilon(canaries=5, guesses=5, correct=5, delta=0.0, confidence=1.0)
    with pytest.raises(ValueError, match="correct <= guesses"):
        one_run_p_value(canaries=5, guesses=3, correct=4, epsilon=1.0, delta=0.0)


def randomized_response(rng, *, m: int, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """m canaries, each included with probability ½; the score reveals the bit through ε-DP randomized response."""
    included = rng.random(m) < 0.5
    truthful = rng.random(m) < math.exp(eps) / (1 + math.exp(eps))
    reported = np.where(truthful, included, ~included)
    return reported + 0.01 * rng.random(m), included  # ties broken at random, order kept within each report


def test_bound_is_valid_on_randomized_response():
    """An ε0-DP mechanism (per canary) must not be reported above ε0 in more than ~5 % of runs (confidence 0.95)."""
    eps0, trials = 1.0, 200
    rng = np.random.default_rng(2023)
    over = 0
    for _ in range(trials):
        scores, included = randomized_response(rng, m=1000, eps=eps0)
        res = one_run_audit(scores, included, k_plus=100, k_minus=100, delta=0.0, confidence=0.95)
        over += res.epsilon > eps0
    assert over <= 20, over  # P[Binomial(200, 0.05) > 20] < 0.01
    # ... and the bound is informative: close to ε0 when the guesses are all randomized-response answers.
    scores, included = randomized_response(np.random.default_rng(1), m=10_000, eps=eps0)
    assert 0.6 < one_run_audit(scores, included, k_plus=2000, k_minus=2000, delta=0.0).epsilon <= eps0 + 0.1


def test_null_scores_give_no_privacy_loss():
    rng = np.random.default_rng(5)
    zeros = sum(
        one_run_audit(rng.random(400), rng.random(400) < 0.5, k_plus=50, k_minus=50, delta=1e-5).epsilon == 0.0
        for _ in range(50)
    )
    assert zeros >= 45


def test_search_pays_for_its_tries():
    scores, included = randomized_response(np.random.default_rng(3), m=2000, eps=2.0)
    ks = [(k, k) for k in (50, 100, 200, 400)]
    best = one_run_audit_search(scores, included, ks=ks, delta=1e-5, confidence=0.95)
    single = [one_run_audit(scores, included, k_plus=a, k_minus=b, delta=1e-5).epsilon for a, b in ks]
    assert best.epsilon <= max(single) and (best.k_plus, best.k_minus) in ks
    assert best.confidence == pytest.approx(1 - 0.05 / 4) and "Bonferroni" in best.method
    with pytest.raises(ValueError, match="ks"):
        one_run_audit_search(scores, included, ks=[], delta=1e-5)
