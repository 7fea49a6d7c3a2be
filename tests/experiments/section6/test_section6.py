"""The Section 6 process of Cebere et al. (hsaudit.experiments.section6): Monte Carlo, exact law, fast audit, search.

Checks, in the order of STYLE.md: closed forms (one-step μ-GDP ε; the T = 2 density in closed form), a naive
reference (every midpoint threshold) and the audit core against the fast audit, Monte Carlo against the exact
law, and the qualitative properties of docs/section6.md (literal rule mean-reverting, divergent rule not).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from hsaudit.accounting import gdp_epsilon
from hsaudit.audit import Paper, audit_scores
from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.section6.plan import check_config as check_section6_config
from hsaudit.util.normals import Normals
from hsaudit.experiments.section6.process import Process, iter_scores, loss_landscape, simulate_scores, world_rng
from hsaudit.experiments.section6.exact import (
    density_privacy_profile,
    exact_epsilon,
    exact_epsilon_curve,
    exact_laws,
    exact_tradeoff,
)
from hsaudit.audit.two_sample import gdp_audit_two_sample, gdp_tables
from hsaudit.experiments.section6.audit import alpha_grid, switch_points
from hsaudit.experiments.section6.records import (  # noqa: E402
    audit_process,
    exact_records,
    threshold_search,
)

DELTA = 1e-5


# ------------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "word"),
    [
        (dict(sigma=0.0, batch_size=1, steps=2), "sigma"),
        (dict(sigma=1.0, batch_size=0, steps=2), "batch_size"),
        (dict(sigma=1.0, batch_size=1, steps=0), "steps"),
        (dict(sigma=1.0, batch_size=1, steps=2, rule="convex"), "rule"),
        (dict(sigma=1.0, batch_size=1, steps=2, clip_norm=-1.0), "clip_norm"),
    ],
)
def test_bad_process_parameters_are_named(kwargs, word):
    with pytest.raises(ValueError, match=word):
        Process(**kwargs)


def test_section6_cross_checks_name_the_key():
    good = dict(
        sigmas=[1, 8],
        panel_sigmas=[1, 8],
        steps=5,
        tradeoff={"step": 5},
        threshold_search={"sigmas": [2]},
        landscape={"range": [-3, 4]},
    )
    check_section6_config(good)
    with pytest.raises(ValueError, match="section6.panel_sigmas"):
        check_section6_config({**good, "panel_sigmas": [3]})
    with pytest.raises(ValueError, match="section6.tradeoff.step"):
        check_section6_config({**good, "tradeoff": {"step": 6}})
    with pytest.raises(ValueError, match="section6.landscape.range"):
        check_section6_config({**good, "landscape": {"range": [4, -3]}})


# ------------------------------------------------------------------------------------------------ Monte Carlo


def test_first_step_is_the_gaussian_mechanism():
    proc = Process(sigma=2.0, batch_size=4, steps=1)
    r = 200_000
    s = simulate_scores(proc, runs=r, inserted=False, rng=world_rng(1, "a"))[0]
    m = simulate_scores(proc, runs=r, inserted=True, rng=world_rng(1, "b"))[0]
    assert s.dtype == np.float32
    assert stats.kstest(s / 2.0, "norm").pvalue > 1e-3
    assert stats.kstest((m - 1.0) / 2.0, "norm").pvalue > 1e-3


def test_monte_carlo_is_seeded_and_streams_differ():
    proc = Process(sigma=1.0, batch_size=2, steps=4)
    a = simulate_scores(proc, runs=1000, inserted=True, rng=world_rng(7, "x"))
    b = simulate_scores(proc, runs=1000, inserted=True, rng=world_rng(7, "x"))
    c = simulate_scores(proc, runs=1000, inserted=True, rng=world_rng(7, "y"))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_one_step_of_each_rule_matches_its_definition():
    # The chunked in-place update against the formula θ' = θ ± C·sign(θ − h) − Z/B, with ϕ(θ) = 1 iff θ > h.
    for rule, sign in (("divergent", 1.0), ("literal", -1.0)):
        proc = Process(sigma=1.5, batch_size=3, steps=2, clip_norm=2.0, rule=rule, switch_point=0.25)
        runs = 70_000  # more than one chunk
        rng = world_rng(3, rule)
        it = iter_scores(proc, runs=runs, inserted=True, rng=rng)
        first = next(it).copy()
        second = next(it).copy()
        ref = Normals(world_rng(3, rule))
        z1 = np.concatenate([ref.fill(np.empty(n, dtype=np.float32)) for n in _chunks(runs)])
        np.testing.assert_array_equal(first, z1 * np.float32(3.0) + np.float32(2.0))
        z2 = np.concatenate([ref.fill(np.empty(n, dtype=np.float32)) for n in _chunks(runs)])
        drift = np.where(first > np.float32(0.5), sign * 2.0, -sign * 2.0)
        np.testing.assert_allclose(second, first + drift - z2 * (1.5 * 2.0 / 3), rtol=0, atol=1e-5)


def _chunks(runs, size=1 << 16):
    return [min(size, runs - lo) for lo in range(0, runs, size)]


# ------------------------------------------------------------------------------------------------ exact law


@pytest.mark.parametrize(
    ("sigma", "expected"),
    # Cebere et al. Section 6, upper bound: one step, δ = 1e-5 (μ = 1/σ GDP).
    [(1, 4.377), (2, 1.993), (3, 1.271), (4, 0.926), (5, 0.726), (6, 0.594), (7, 0.502), (8, 0.434)],
)
def test_exact_epsilon_at_step_one_is_the_gaussian_closed_form(sigma, expected):
    eps, lost, mu_limit = exact_epsilon_curve(Process(sigma=sigma, batch_size=4, steps=1), delta=DELTA)
    assert eps[0] == pytest.approx(gdp_epsilon(mu=1.0 / sigma, delta=DELTA), abs=2e-4)
    assert eps[0] == pytest.approx(expected, abs=1e-3)
    assert mu_limit[0] == pytest.approx(1.0 / sigma, rel=1e-4)  # every threshold gives μ = 1/σ
    assert lost[0] < 1e-12


@pytest.mark.parametrize("rule", ["divergent", "literal"])
def test_exact_density_has_unit_mass(rule):
    law = exact_laws(Process(sigma=3.0, batch_size=2, steps=25, rule=rule))
    np.testing.assert_allclose(law.p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(law.pbar.sum(axis=1), 1.0, atol=1e-12)
    assert (law.p >= 0).all() and (law.pbar >= 0).all()
    assert law.lost.max() < 1e-12


@pytest.mark.parametrize(("rule", "batch"), [("divergent", 1), ("divergent", 4), ("literal", 2)])
def test_exact_density_at_step_two_matches_its_closed_form(rule, batch):
    # θ2 = θ1 + a·sign(θ1 − h) − Z/B: each side of h is a Gaussian convolution truncated at h, i.e.
    # φ_S(y ∓ a − m)·Φ(±(μ_post − h)/sd_post) (product of two Gaussian densities).
    sigma, c = 1.5, 1.0
    proc = Process(sigma=sigma, batch_size=batch, steps=2, rule=rule)
    law = exact_laws(proc, cells_per_clip=200, cells_per_sd=100)
    s2, t2 = (sigma * c) ** 2, (sigma * c / batch) ** 2
    a = proc.drift_sign * c
    y = law.centers
    for world, m in ((law.p[1], 0.0), (law.pbar[1], c)):
        dens = np.zeros_like(y)
        for side, shift in ((1.0, a), (-1.0, -a)):
            yy = y - shift
            post_mean = (m * t2 + yy * s2) / (s2 + t2)
            post_sd = np.sqrt(s2 * t2 / (s2 + t2))
            dens += stats.norm.pdf(yy, m, np.sqrt(s2 + t2)) * special.ndtr(side * (post_mean - proc.h) / post_sd)
        np.testing.assert_allclose(world / law.dx, dens, atol=2e-4 * dens.max())


def test_exact_law_matches_monte_carlo_quantiles_at_step_five():
    qs = np.array([0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    for rule in ("divergent", "literal"):
        proc = Process(sigma=1.0, batch_size=2, steps=5, rule=rule)
        law = exact_laws(proc)
        for world, inserted in ((law.p[-1], False), (law.pbar[-1], True)):
            mc = simulate_scores(proc, runs=100_000, inserted=inserted, rng=world_rng(11, rule, inserted))[-1]
            cdf = np.cumsum(world)
            exact_q = np.interp(qs, cdf, law.centers + law.dx / 2)
            # the MC quantile's standard error is ~sqrt(q(1-q)/n)/density: a few hundredths here
            np.testing.assert_allclose(np.quantile(mc, qs), exact_q, atol=0.06)


def test_privacy_profile_is_decreasing_and_inverts_exact_epsilon():
    law = exact_laws(Process(sigma=2.0, batch_size=2, steps=6))
    eps = np.linspace(0, 3, 13)
    prof = density_privacy_profile(law.p[-1], law.pbar[-1], eps)
    assert (np.diff(prof) <= 1e-15).all()
    e = exact_epsilon(law.p[-1], law.pbar[-1], delta=1e-3)
    assert density_privacy_profile(law.p[-1], law.pbar[-1], [e])[0] == pytest.approx(1e-3, rel=1e-6)


def test_literal_rule_forgets_and_divergent_rule_does_not():
    # docs/section6.md "Sign decision": the literal reading is mean-reverting, ε decays to ~0; the divergent one keeps
    # (nearly) the one-step ε when B is large relative to σ.
    upper = gdp_epsilon(mu=1.0, delta=DELTA)
    lit, _, _ = exact_epsilon_curve(Process(sigma=1.0, batch_size=16, steps=25, rule="literal"), delta=DELTA)
    div, _, _ = exact_epsilon_curve(Process(sigma=1.0, batch_size=16, steps=25, rule="divergent"), delta=DELTA)
    assert lit[-1] < 0.05 * upper
    assert div[-1] > 0.9 * upper
    assert (np.diff(div) <= 1e-9).all()  # post-processing never increases the exact ε
    assert (np.diff(lit) <= 1e-9).all()


def test_exact_tradeoff_curve_is_monotone_and_spans_the_square():
    law = exact_laws(Process(sigma=2.0, batch_size=1, steps=3))
    fpr, fnr = exact_tradeoff(law.p[-1], law.pbar[-1], max_points=200)
    assert fpr[0] == pytest.approx(1.0) and fnr[0] == pytest.approx(0.0)
    assert fpr[-1] == pytest.approx(0.0) and fnr[-1] == pytest.approx(1.0)
    assert (np.diff(fpr) <= 1e-12).all() and (np.diff(fnr) >= -1e-12).all()


# ------------------------------------------------------------------------------------------------ fast audit


def _naive_audit(s, m, tables):
    """Every midpoint threshold (and below/above all), counts by sorting: the definition."""
    s, m = np.asarray(s, dtype=float), np.asarray(m, dtype=float)  # float64 midpoints of float32 neighbours
    values = np.unique(np.concatenate([s, m]))
    th = np.concatenate([[values[0] - 1], (values[1:] + values[:-1]) / 2, [values[-1] + 1]])
    fp = s.size - np.searchsorted(np.sort(s), th, side="right")
    fn = np.searchsorted(np.sort(m), th, side="right")
    out = []
    for a, b in tables.objectives:
        v = a[fp] - b[fn]
        i = int(np.nanargmax(v))
        out.append((v[i], th[i], fp[i], fn[i]))
    return out


@pytest.mark.parametrize("n", [40, 700, 5000])
def test_fast_audit_equals_the_scan_of_every_midpoint(n):
    rng = np.random.default_rng(n)
    tables = gdp_tables(n, n, confidence=0.95, delta=DELTA)
    for trial in range(12):
        s = rng.standard_normal(n).astype(np.float32)
        m = (rng.standard_normal(n) * rng.uniform(0.5, 2) + rng.uniform(-1, 3)).astype(np.float32)
        if trial % 3 == 0:  # many ties, across and within classes
            s, m = np.round(s, 1), np.round(m, 1)
        got = gdp_audit_two_sample(s, m, tables, bins=int(rng.integers(2, 5000)))
        ref = _naive_audit(s, m, tables)
        assert got.mu == pytest.approx(ref[0][0], abs=1e-12)
        assert (got.fp, got.fn) == (ref[0][2], ref[0][3])
        assert got.threshold == pytest.approx(ref[0][1], abs=1e-6)
        assert got.epsilon_assumption_free_max == pytest.approx(max(0.0, ref[1][0], ref[2][0]), abs=1e-12)


def test_fast_audit_is_exact_far_from_zero_and_with_spread_kept_bins():
    # Scores near 1e4 in float32: a value window's bounds round by more than a bin, so the exact bin check (and
    # its full-pass fallback) decides; wide tails put the bins each objective keeps far apart.
    rng = np.random.default_rng(21)
    n = 3000
    tables = gdp_tables(n, n, confidence=0.95, delta=DELTA)
    for spread, offset in ((0.05, 1e4), (1.0, 1e4), (1.0, -3e3), (1.0, 0.0)):
        s = (offset + spread * rng.standard_t(3, n)).astype(np.float32)
        m = (offset + spread * (rng.standard_t(3, n) + 1.5)).astype(np.float32)
        got = gdp_audit_two_sample(s, m, tables)
        ref = _naive_audit(s, m, tables)
        assert got.mu == pytest.approx(ref[0][0], abs=1e-12)
        assert (got.fp, got.fn) == (ref[0][2], ref[0][3])
        assert got.threshold == pytest.approx(ref[0][1], rel=1e-6)
        assert got.epsilon_assumption_free_max == pytest.approx(max(0.0, ref[1][0], ref[2][0]), abs=1e-12)


def test_binned_selection_falls_back_to_every_score_when_the_window_misses():
    from hsaudit.audit.search import _Binner

    x = np.float32(1e4) + np.random.default_rng(2).standard_normal(5000).astype(np.float32) * np.float32(0.01)
    lo = x.min()
    binner = _Binner(lo, np.float32(1023 / (float(x.max()) - float(lo))), 1024)
    need = np.zeros(1024, dtype=bool)
    need[[3, 500, 501, 900]] = True
    idx = binner.index(x)
    want = np.flatnonzero(need[idx])
    for expected in (want.size, want.size + 1):  # a wrong count forces the full pass: the same answer
        val, bins = binner.select(x, need, expected)
        np.testing.assert_array_equal(val, x[want])
        np.testing.assert_array_equal(bins, idx[want])


def test_fast_audit_agrees_with_the_audit_core():
    rng = np.random.default_rng(5)
    n = 4000
    tables = gdp_tables(n, n, confidence=0.95, delta=DELTA)
    for shift in (0.2, 1.0, 3.0):
        s = rng.standard_normal(n).astype(np.float32)
        m = (rng.standard_normal(n) + shift).astype(np.float32)
        got = gdp_audit_two_sample(s, m, tables)
        ref = audit_scores(np.concatenate([s, m]), np.repeat([0, 1], n), rule=Paper(), delta=DELTA, confidence=0.95)
        assert got.mu == pytest.approx(ref.mu, abs=1e-9)
        assert got.epsilon == pytest.approx(ref.epsilon, abs=1e-9)
        assert got.threshold == pytest.approx(ref.threshold, abs=1e-6)
        assert got.epsilon_assumption_free == pytest.approx(ref.epsilon_assumption_free, abs=1e-9)
        assert got.epsilon_assumption_free_max >= got.epsilon_assumption_free


def test_a_held_out_rule_goes_through_the_audit_core():
    rows = audit_process(
        Process(sigma=1.0, batch_size=4, steps=2), runs_per_world=500, repetitions=1, seed=1,
        audit_rule=parse_rule("held-out"),
    )
    assert [r["threshold_rule"] for r in rows] == ["held-out", "held-out"]
    assert all(np.isfinite(r["epsilon_audit"]) for r in rows)


# ------------------------------------------------------------------------------------------------ audit vs exact


def test_audit_at_step_one_is_tight_and_not_above_the_exact_epsilon():
    # Step 1 is an exact Gaussian pair: the GDP audit is then the right model. Mean over 3 repetitions at
    # R = 2·10⁵ per world: within 0.1 of the exact ε, and not above it beyond that slack.
    for sigma in (1.0, 4.0):
        proc = Process(sigma=sigma, batch_size=1, steps=1)
        rows = audit_process(proc, runs_per_world=200_000, repetitions=3, seed=3, key=("t1", sigma))
        mean = np.mean([r["epsilon_audit"] for r in rows])
        exact = exact_epsilon_curve(proc, delta=DELTA)[0][0]
        assert exact - 0.1 * exact <= mean <= exact + 0.02 * exact


def test_gdp_audit_overshoots_the_exact_epsilon_when_the_law_is_not_gaussian():
    # A finding, documented in docs/section6.md: at σ = 1, B = 1 the last iterate is a two-branch mixture; the
    # GDP conversion of the bulk μ̂ exceeds the exact ε of the last iterate, while the assumption-free bound
    # from the same Clopper–Pearson bounds stays below it.
    proc = Process(sigma=1.0, batch_size=1, steps=8)
    rows = audit_process(proc, runs_per_world=100_000, repetitions=1, seed=4, steps=[8])
    exact = exact_epsilon_curve(proc, delta=DELTA)[0][-1]
    assert rows[0]["epsilon_audit"] > 1.3 * exact
    assert rows[0]["epsilon_assumption_free_max"] < exact


# ------------------------------------------------------------------------------------------------ threshold search


def test_switch_point_grid_contains_h_star_level():
    # h = σC·Φ⁻¹(1 − α) equals C/2 at α* = Φ(−1/(2σ)), inside Algorithm 5's range [0, Φ(C/(2σ²))].
    for sigma in (1.0, 4.0, 8.0):
        grid = alpha_grid(sigma=sigma, clip_norm=1.0, count=11)
        a_star = special.ndtr(-1.0 / (2 * sigma))
        assert grid[0] == 0.0 and grid[-1] >= a_star
        assert switch_points([a_star], sigma=sigma, clip_norm=1.0)[0] == pytest.approx(0.5)
    assert switch_points([0.0], sigma=2.0, clip_norm=1.0)[0] == np.inf


def test_h_star_maximises_the_infinite_sample_audit_at_two_steps():
    # The R → ∞ limit of the audit's μ̂ (threshold tests on the exact laws) over a grid of switch points.
    for sigma in (1.0, 4.0):
        hs = np.linspace(-1.0, 2.0, 13)
        mus = [
            exact_epsilon_curve(Process(sigma=sigma, batch_size=1, steps=2, switch_point=h), delta=DELTA)[2][-1]
            for h in hs
        ]
        assert abs(hs[int(np.argmax(mus))] - 0.5) <= 0.25


def test_threshold_search_records():
    alphas = alpha_grid(sigma=2.0, clip_norm=1.0, count=4)
    rows = threshold_search(
        sigma=2.0,
        batch_size=1,
        steps=2,
        clip_norm=1.0,
        rule="divergent",
        alphas=alphas,
        runs_per_world=3000,
        repetitions=2,
        seed=5,
    )
    assert len(rows) == (4 + 1) * 2
    inf_rows = [r for r in rows if np.isinf(r["h"])]
    # α = 0: constant g, Gaussian law, exact ε from the closed form μ = 1/(σ√2)
    assert inf_rows[0]["epsilon_exact"] == pytest.approx(gdp_epsilon(mu=1 / (2 * np.sqrt(2)), delta=DELTA), rel=1e-9)
    assert {r["candidate"] for r in rows} == {"grid", "h*"}


def test_exact_records_columns():
    rows = exact_records(
        rule="divergent",
        sigmas=[2],
        batch_sizes=[1, 4],
        steps=3,
        clip_norm=1.0,
        switch_point=0.5,
        delta=DELTA,
        grid={},
    )
    assert len(rows) == 6
    assert {"epsilon_exact", "epsilon_gdp_limit", "lost_mass", "epsilon_upper"} <= set(rows[0])


# ------------------------------------------------------------------------------------------------ landscape


@pytest.mark.parametrize("rule", ["divergent", "literal"])
def test_loss_landscape_gradient_gives_the_update(rule):
    proc = Process(sigma=1.0, batch_size=1, steps=2, rule=rule)
    theta = np.array([-2.0, -0.3, 0.2, 0.9, 3.0])
    eps = 1e-6
    grad = (loss_landscape(theta + eps, proc) - loss_landscape(theta - eps, proc)) / (2 * eps)
    # descent step θ − ℓ'(θ) is the drift of the rule
    np.testing.assert_allclose(-grad, proc.drift_sign * np.sign(theta - proc.h), atol=1e-6)


def test_selection_fraction_reaches_the_held_out_audit():

    proc = Process(sigma=2.0, batch_size=4, steps=2, clip_norm=1.0, rule="divergent", switch_point=0.5)
    kw = dict(runs_per_world=4000, repetitions=1, seed=3)
    a = audit_process(proc, audit_rule=parse_rule("held-out", selection_fraction=0.1), **kw)
    b = audit_process(proc, audit_rule=parse_rule("held-out", selection_fraction=0.5), **kw)
    assert [r["epsilon_audit"] for r in a] != [r["epsilon_audit"] for r in b]
    assert {r["threshold_rule"] for r in a} == {"held-out@0.1"}
