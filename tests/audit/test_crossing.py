"""Tests of the crossing / rays rules (hsaudit.audit.crossing; docs/audit.md "Tight valid bounds"):
closed forms and slow references first, then validity on null and μ-GDP scores, then properties and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from hsaudit.audit import (
    DEFAULT_RAYS,
    Crossing,
    Rays,
    audit_scores,
    clopper_pearson_upper,
    crossing_cdf,
    crossing_mu_lower,
    first_crossing,
    minimum_calibration_draws,
    ray_path,
    rays_mu_lower,
)
from hsaudit.audit.validation import SCORE_FAMILIES, coverage_study, family_shift, pair_scores
from hsaudit.cli import main

ALPHA = 0.05
RULE = {"crossing": Crossing(), "rays": Rays(draws=99)}


def _brute_first_step(x: np.ndarray, y: np.ndarray, k0s: np.ndarray, k1s: np.ndarray) -> int:
    """First path step at which some threshold (between distinct scores, or outside all) has FP ≤ k0 and
    FN ≤ k1: a loop over every threshold, as the definition reads."""
    values = np.unique(np.concatenate([x, y]))
    cuts = np.concatenate([[values[0] - 1.0], (values[:-1] + values[1:]) / 2.0, [values[-1] + 1.0]])
    fp = np.array([np.sum(x > t) for t in cuts])
    fn = np.array([np.sum(y <= t) for t in cuts])
    for i, (k0, k1) in enumerate(zip(k0s.tolist(), k1s.tolist(), strict=True)):
        if np.any((fp <= k0) & (fn <= k1)):
            return i
    raise AssertionError("the last step admits every threshold")


# ---------------------------------------------------------------------------------------------- paths, crossings
@pytest.mark.parametrize("n0,n1", [(2, 2), (7, 3), (40, 41)])
def test_ray_path_steps(n0, n1):
    path = ray_path(n0, n1, DEFAULT_RAYS)
    assert path.k0.shape == (len(DEFAULT_RAYS), n0 + n1 + 2)
    for p, rho in enumerate(DEFAULT_RAYS):
        k0, k1 = path.k0[p], path.k1[p]
        steps = np.diff(k0) + np.diff(k1)
        assert (np.diff(k0) >= 0).all() and (np.diff(k1) >= 0).all() and (steps == 1).all()
        assert min(k0[0], k1[0]) == -1 and (k0[-1], k1[-1]) == (n0, n1)
        # each step is (⌊n0 t − ½⌋, ⌊ρ n1 t − ½⌋), capped at (n0, n1), at t = max((k0 + ½)/n0, (k1 + ½)/(ρ n1));
        # where both counts grow at the same t the FP step comes first (an intermediate step)
        t = np.maximum((k0 + 0.5) / n0, (k1 + 0.5) / (rho * n1))
        last = np.append(t[1:] > t[:-1], True)
        assert (k0 == np.minimum(np.floor(n0 * t - 0.5 + 1e-9), n0))[last].all()
        assert (k1 == np.minimum(np.floor(rho * n1 * t - 0.5 + 1e-9), n1))[last].all()
        assert (np.diff(t) >= 0).all()
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = -special.ndtri(t) - special.ndtri(rho * t)
        np.testing.assert_allclose(path.mu[p], np.where(np.isnan(mu), -np.inf, mu), rtol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_first_crossing_matches_threshold_loop(seed):
    """The binary search on order statistics equals a loop over every threshold, ties included."""
    rng = np.random.default_rng(seed)
    n0, n1 = int(rng.integers(3, 40)), int(rng.integers(3, 40))
    x = np.sort(np.round(rng.standard_normal(n0) * 2) / 2)  # heavy ties
    y = np.sort(np.round((rng.standard_normal(n1) + rng.uniform(0, 3)) * 2) / 2)
    path = ray_path(n0, n1, DEFAULT_RAYS)
    for p, cross in enumerate(first_crossing(x, y, path)):
        assert cross.index == _brute_first_step(x, y, path.k0[p], path.k1[p])
        if cross.k0 < n0 and cross.k1 < n1:
            assert cross.fp <= cross.k0 and cross.fn <= cross.k1
            assert cross.fp == np.sum(x > cross.threshold) and cross.fn == np.sum(y <= cross.threshold)


# ---------------------------------------------------------------------------------------------- closed form
def _cdf_quadrature(m: float, k0: int, k1: int, n0: int, n1: int) -> float:
    """P(x₍ₙ₀₋ₖ₀₎ < w₍ₖ₁₊₁₎ + m) by adaptive quadrature over A = x₍ₙ₀₋ₖ₀₎ = −Φ⁻¹(B₀), B₀ ~ Beta(k0+1, n0−k0)."""

    def integrand(a: float) -> float:
        dens = stats.beta.pdf(special.ndtr(-a), k0 + 1, n0 - k0) * stats.norm.pdf(a)
        return dens * stats.beta.sf(special.ndtr(a - m), k1 + 1, n1 - k1)

    centre = -special.ndtri((k0 + 1) / (n0 + 1))
    val, _ = integrate.quad(integrand, centre - 12, centre + 12, points=[centre], limit=500, epsabs=1e-12, epsrel=1e-10)
    return val


@pytest.mark.parametrize(
    "k0,k1,n0,n1,m", [(3, 5, 40, 50, 1.5), (60, 60, 2500, 2500, 3.8), (0, 0, 20, 20, 3.0), (10, 2, 30, 25, 0.5)]
)
def test_crossing_cdf_matches_quadrature(k0, k1, n0, n1, m):
    ref = _cdf_quadrature(m, k0, k1, n0, n1)
    got = crossing_cdf(m, k0=k0, k1=k1, n0=n0, n1=n1)
    assert ref - 1e-9 <= got <= ref + 1.0 / 4096  # an upper Riemann bound, at most 1/4096 above


def test_crossing_cdf_is_the_gaussian_pair_probability():
    """Closed form vs simulation: the probability that N(0,1) vs N(m,1) scores have a threshold with FP ≤ k0
    and FN ≤ k1, counted at every threshold of 20,000 simulated pairs."""
    n0, n1, k0, k1, m = 30, 25, 3, 2, 1.6
    rng = np.random.default_rng(0)
    sims = 20_000
    x = rng.standard_normal((sims, n0))
    y = rng.standard_normal((sims, n1)) + m
    cuts = np.sort(np.concatenate([x, y], axis=1), axis=1)
    fp = (x[:, :, None] > cuts[:, None, :]).sum(axis=1)
    fn = (y[:, :, None] <= cuts[:, None, :]).sum(axis=1)
    freq = np.mean(np.any((fp <= k0) & (fn <= k1), axis=1))
    p = crossing_cdf(m, k0=k0, k1=k1, n0=n0, n1=n1)
    assert abs(freq - p) < 4 * math.sqrt(p * (1 - p) / sims) + 1 / 4096


@pytest.mark.parametrize("k0,k1,n0,n1", [(60, 58, 2500, 2500), (5, 9, 200, 150), (0, 0, 50, 50)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_crossing_mu_lower_is_the_alpha_quantile(k0, k1, n0, n1, confidence):
    alpha = 1 - confidence
    mu = crossing_mu_lower(k0=k0, k1=k1, n0=n0, n1=n1, confidence=confidence)
    assert crossing_cdf(mu, k0=k0, k1=k1, n0=n0, n1=n1) == pytest.approx(alpha, abs=1e-7)
    assert _cdf_quadrature(mu, k0, k1, n0, n1) <= alpha + 1e-9  # conservative
    assert _cdf_quadrature(mu + 0.01, k0, k1, n0, n1) > alpha - 1.0 / 4096

    def cp_mu(c):  # the per-rate Clopper–Pearson μ at the same counts
        ub = clopper_pearson_upper([k0, k1], [n0, n1], confidence=c)
        return float(-special.ndtri(ub[0]) - special.ndtri(ub[1]))

    # between the Bonferroni pair (α/2 each) and the √α pair; above the paper's per-rate pair (α each)
    assert cp_mu(1 - alpha / 2) <= mu <= cp_mu(1 - math.sqrt(alpha))
    assert mu >= cp_mu(confidence)


def test_crossing_mu_lower_limits():
    assert crossing_mu_lower(k0=5, k1=5, n0=5, n1=9, confidence=0.95) == -math.inf
    with pytest.raises(ValueError, match="k0"):
        crossing_cdf(0.0, k0=-1, k1=0, n0=5, n1=5)


def test_rays_monte_carlo_with_one_ray_equals_closed_form():
    """With one ray and no ties of t along its path (n0 even, n1 odd), the Monte Carlo bound estimates the
    same α-quantile as the closed form; 19,999 draws put its standard error near 0.005."""
    s, m = pair_scores(family="gaussian", mu=2.0, runs=81, seed=4)
    x, y = np.sort(s[m == 0]), np.sort(s[m == 1])
    assert (x.size, y.size) == (40, 41)
    cross = first_crossing(x, y, ray_path(40, 41))[0]
    exact = crossing_mu_lower(k0=cross.k0, k1=cross.k1, n0=40, n1=41, confidence=0.95)
    mc, _ = rays_mu_lower(x, y, confidence=0.95, rng=np.random.default_rng(1), draws=19_999, rays=(1.0,))
    assert mc == pytest.approx(exact, abs=0.03)


# ---------------------------------------------------------------------------------------------- validity
@pytest.mark.parametrize("mode,family", [("crossing", "gaussian"), ("rays", "laplace")])
def test_null_scores_rarely_give_positive_epsilon(mode, family):
    """μ = 0 (members and non-members from one distribution): ε̂ > 0 in at most 5% of trials up to binomial
    noise (200 seeded trials, s.e. 1.5%: the bound 8% is two standard errors above 5%), and ε̂ ≈ 0."""
    rows = coverage_study(
        mus=(0.0,), trials=200, runs=400, rules=(RULE[mode],), families=(family,), seed=5
    )
    (row,) = rows
    assert row.true_epsilon == 0.0
    assert row.exceed_fraction <= 0.08, row
    assert row.median_epsilon == 0.0


@pytest.mark.parametrize("family,lowest_ratio", [("gaussian", 0.8), ("logistic", 0.75), ("laplace", 0.7)])
def test_valid_on_seeded_mu_gdp_pairs(family, lowest_ratio):
    """μ-GDP pairs (Gaussian, and heavier-tailed location pairs touching G_μ at one point): ε̂ ≤ true ε in
    ≥ 92% of 60 seeded trials per μ (exact 95% tests: ≈ 5% expected, s.e. 2.8%), and not far below it (the
    rays pool over a stretch of the curve where Laplace and logistic lie above G_μ: looser at small μ)."""
    rows = coverage_study(
        mus=(1.0, 3.0), trials=60, runs=800, rules=(Crossing(), Rays(draws=99)), families=(family,), seed=7
    )
    for row in rows:
        assert row.exceed_fraction <= 0.085, row
        assert lowest_ratio < row.mean_ratio < 1.0, row


@pytest.mark.parametrize("family", ["logistic", "laplace"])
@pytest.mark.parametrize("mu", [0.5, 2.0, 3.95, 6.0])
def test_family_shift_makes_the_pair_exactly_mu_gdp(family, mu):
    """The truth of the non-Gaussian families: sup_τ Φ⁻¹(F(τ)) − Φ⁻¹(F(τ − θ)) = μ on a fine grid."""
    theta = family_shift(family, mu)
    dist = {"logistic": stats.logistic, "laplace": stats.laplace}[family]
    tau = np.linspace(-25.0, theta + 25.0, 200_001)
    with np.errstate(all="ignore"):
        curve = -special.ndtri(dist.sf(tau)) - special.ndtri(dist.cdf(tau - theta))
    assert np.nanmax(curve) == pytest.approx(mu, abs=1e-6)
    assert tau[np.nanargmax(curve)] == pytest.approx(theta / 2, abs=1e-3)


# ---------------------------------------------------------------------------------------------- properties
@pytest.mark.parametrize("seed", range(4))
def test_ties_and_lower_member_scores_only_lower_the_bound(seed):
    """The statistic is monotone: rounding scores (ties) or lowering member scores never raises μ̂."""
    s, m = pair_scores(family="gaussian", mu=2.5, runs=600, seed=seed)
    base = audit_scores(s, m, rule=Crossing()).mu
    assert audit_scores(np.round(s, 1), m, rule=Crossing()).mu <= base
    lowered = s - 0.3 * m * np.random.default_rng(seed).uniform(size=s.size)
    assert audit_scores(lowered, m, rule=Crossing()).mu <= base
    assert audit_scores(s * 3.0 + 1.0, m, rule=Crossing()).mu == base  # rank invariance


def test_modes_use_all_scores_and_report_the_diagonal_crossing():
    s, m = pair_scores(family="gaussian", mu=3.0, runs=2000, seed=2)
    for rule in (Crossing(), Rays(seed=3)):
        res = audit_scores(s, m, rule=rule)
        assert (res.n_members, res.n_nonmembers, res.threshold_rule) == (1000, 1000, rule.spec)
        assert math.isnan(res.fpr_upper) and math.isnan(res.epsilon_assumption_free)
        assert abs(res.fpr - res.fnr) < 0.01 and res.fpr == np.mean(s[m == 0] > res.threshold)
        assert 0 < res.mu < 3.0
    rays_a = audit_scores(s, m, rule=Rays(seed=3))
    assert rays_a == audit_scores(s, m, rule=Rays(seed=np.random.default_rng(3)))
    assert rays_a != audit_scores(s, m, rule=Rays(seed=4))


def test_mu_increases_with_lower_confidence():
    s, m = pair_scores(family="logistic", mu=2.0, runs=1000, seed=9)
    mus = [audit_scores(s, m, rule=Crossing(), confidence=c).mu for c in (0.8, 0.9, 0.95, 0.99)]
    assert all(a > b for a, b in zip(mus, mus[1:]))


def test_calibration_draws_validation():
    s, m = pair_scores(family="gaussian", mu=1.0, runs=200, seed=0)
    assert minimum_calibration_draws(0.95) == 19 and minimum_calibration_draws(0.99) == 99
    for bad in (0, 18, 2.5):
        with pytest.raises(ValueError, match="calibration_draws must be an integer >= 19"):
            audit_scores(s, m, rule=Rays(draws=bad))
    res = audit_scores(s, m, rule=Rays(draws=19))
    assert math.isfinite(res.mu)


def test_no_separation_gives_zero():
    s = np.concatenate([np.arange(10.0), np.arange(10.0) - 20.0])  # members all below
    m = np.r_[np.zeros(10), np.ones(10)]
    for rule in (Crossing(), Rays()):
        res = audit_scores(s, m, rule=rule)
        assert res.epsilon == 0.0 and res.mu < 0


# ---------------------------------------------------------------------------------------------- CLI
@pytest.fixture
def scores_csv(tmp_path):
    s, m = pair_scores(family="gaussian", mu=2.0, runs=400, seed=1)
    path = tmp_path / "scores.csv"
    path.write_text("score,member\n" + "\n".join(f"{float(a)!r},{int(b)}" for a, b in zip(s, m)) + "\n")
    return path


@pytest.mark.parametrize("mode", ["crossing", "rays"])
def test_cli_audit_mode(capsys, scores_csv, mode):
    rc = main(["audit", str(scores_csv), "--mode", mode, "--seed", "2", "--calibration-draws", "99", "--json"])
    got = json.loads(capsys.readouterr().out)
    assert rc == 0 and got["threshold_rule"] == mode and got["n_members"] == 200
    assert got["fpr_upper"] is None and got["selection_fraction"] is None
    assert (got["calibration_draws"] == 99) == (mode == "rays")
    rc = main(["audit", str(scores_csv), "--mode", mode, "--calibration-draws", "99"])
    out = capsys.readouterr().out
    assert rc == 0 and "joint, any score distribution" in out


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--mode", "rays", "--calibration-draws", "5"], "calibration_draws must be an integer >= 19"),
        (
            ["--mode", "rays", "--confidence", "0.99", "--calibration-draws", "50"],
            "calibration_draws must be an integer >= 99",
        ),
        (["--mode", "crossing", "--confidence", "1.5"], "confidence must be in (0, 1)"),
    ],
)
def test_cli_audit_rejects_bad_parameters(capsys, scores_csv, argv, match):
    rc = main(["audit", str(scores_csv), *argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("hsaudit audit: error:") and match in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--modes", "rays@0.1"], "rays mode has no selection fraction"),
        (["--families", "cauchy"], "score families"),
        (["--modes", "crossing", "--mus", "-1"], "mus must be finite numbers >= 0"),
    ],
)
def test_cli_validate_rejects_bad_parameters(capsys, argv, match):
    try:
        rc = main(["validate-audit", "--trials", "2", "--runs", "100", *argv])
    except SystemExit as exc:  # argparse type errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and match in err and "Traceback" not in err


def test_cli_validate_new_modes_and_families(capsys):
    rc = main(
        ["validate-audit", "--trials", "3", "--runs", "200", "--mus", "0,2", "--modes", "crossing,rays",
         "--families", "gaussian,logistic", "--calibration-draws", "19", "--json"]
    )  # fmt: skip
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rc == 0
    assert {(r["family"], r["threshold_rule"], r["mu"]) for r in rows} == {
        (f, mo, u) for f in ("gaussian", "logistic") for mo in ("crossing", "rays") for u in (0.0, 2.0)
    }
    assert all((r["mean_ratio"] is None) == (r["mu"] == 0.0) for r in rows)


def test_doctests():
    import doctest

    from hsaudit.audit import crossing

    assert doctest.testmod(crossing).failed == 0
