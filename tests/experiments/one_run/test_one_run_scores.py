"""The drift-corrected one-run scores (hsaudit.experiments.one_run.audit.SCORES): median centring over the models,
subtraction of the canary-free, noise-free run, standardisation by the coordinate's median absolute deviation and
the likelihood ratio against canary-free reference models or reference models with their own bits.
Known-mechanism checks: a per-coordinate shift is removed exactly (and a per-coordinate scale, by the standardised
score; the reference score is the closed-form Gaussian log-likelihood ratio), the bits never enter a score, with no canary no score's bound exceeds ε = 0 more often than the audit's
nominal rate, and on coordinates the data never moves the noiseless-subtracted score at σ = 0 is the canaries'
exact contribution."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pandas as pd
import pytest

import hsaudit.experiments.one_run.audit as audit_module
from conftest import housing_like
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup
from hsaudit.engine.models import model_spec
from hsaudit.experiments.one_run.audit import (
    METHODS,
    MAD_SCALE,
    SCORE_REASONS,
    SCORES,
    corrected_scores,
    one_run_rows,
    one_run_table,
)
from hsaudit.experiments.one_run.train import Canaries, train_one_run_shard

pytestmark = pytest.mark.usefixtures("torch_one_thread")

KW = {"variant": "8-3-8-1"}
ROWS = dict(steps=2, guess_fractions=[0.1, 0.5], guess_counts=[1, 3], delta=1e-5, confidence=0.95)


def test_median_centring_removes_a_per_coordinate_shift_exactly():
    rng = np.random.default_rng(0)
    scores = rng.standard_normal((9, 20))
    shift = 100.0 * rng.standard_normal(20)
    np.testing.assert_allclose(corrected_scores(scores + shift[None, :], "median_centred"),
                               corrected_scores(scores, "median_centred"), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.median(corrected_scores(scores, "median_centred"), axis=0), 0.0, atol=1e-12)
    # The noiseless subtraction removes a known per-coordinate offset exactly too.
    np.testing.assert_allclose(corrected_scores(scores + shift[None, :], "noiseless", noiseless=shift), scores,
                               rtol=0, atol=1e-12)
    np.testing.assert_array_equal(corrected_scores(scores, "raw"), scores)


def test_no_score_reads_the_bits(monkeypatch):
    """Both corrections are post-processing of the released models: permuting the bits leaves the scores the audit
    receives unchanged (so the one-run bounds hold for them as for the raw score)."""
    assert "bits" not in inspect.signature(corrected_scores).parameters
    rng = np.random.default_rng(1)
    bits = rng.integers(0, 2, (8, 30))
    scores = rng.standard_normal((8, 30)) + 2.0 * bits + 5.0 * rng.standard_normal(30)[None, :]
    offset = rng.standard_normal(30)
    reference = rng.standard_normal((5, 30)) + offset[None, :]
    calibration = (np.tile([[0], [1]], (4, 30)), rng.standard_normal((8, 30)) + np.tile([[0.0], [2.0]], (4, 30)))
    seen: list[np.ndarray] = []
    real = audit_module.one_run_audit_search

    def spy(s, b, **kw):
        seen.append(np.array(s, copy=True))
        return real(s, b, **kw)

    monkeypatch.setattr(audit_module, "one_run_audit_search", spy)
    for score in SCORES:
        seen.clear()
        one_run_rows(bits, scores, models=[2, 8], score=score, noiseless=offset, reference=reference, shift=2.0,
                     calibration=calibration, **ROWS)
        first = list(seen)
        seen.clear()
        permuted = rng.permutation(bits.ravel()).reshape(bits.shape)
        one_run_rows(permuted, scores, models=[2, 8], score=score, noiseless=offset, reference=reference, shift=2.0,
                     calibration=calibration, **ROWS)
        assert len(first) == len(seen) == 4
        for a, b in zip(first, seen):
            np.testing.assert_array_equal(a, b)


def test_median_centred_is_per_point_and_undefined_at_one_model():
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2, (8, 40))
    scores = rng.standard_normal((8, 40)) + 3.0 * bits + 10.0 * rng.standard_normal(40)[None, :]
    rows = pd.DataFrame(one_run_rows(bits, scores, models=[1, 4, 8], score="median_centred", **ROWS))
    first = rows[rows["models"] == 1]
    assert len(first) == 2 and first["epsilon"].isna().all() and (first["bound"] == SCORE_REASONS["median_centred"]).all()
    assert (rows.loc[rows["models"] > 1, "epsilon"] > 0).all()
    # The median of a point is over its own M models: M = 4 is the raw audit of the first 4 models centred alone.
    raw = one_run_rows(bits[:4], corrected_scores(scores[:4], "median_centred"), models=[4], **ROWS)
    assert [r["epsilon"] for r in raw] == rows.loc[rows["models"] == 4, "epsilon"].tolist()
    with pytest.raises(ValueError, match="at least 2 models"):
        corrected_scores(scores[:1], "median_centred")


def test_standardised_is_invariant_to_a_per_coordinate_shift_and_scale():
    """(s − median) / (1.4826·MAD) per coordinate: an affine map a_j·s + c_j (a_j > 0) of each coordinate's scores
    leaves it unchanged, and on a Gaussian sample it is close to the z-score."""
    rng = np.random.default_rng(4)
    scores = rng.standard_normal((9, 20))
    shift, scale = 100.0 * rng.standard_normal(20), np.exp(3.0 * rng.standard_normal(20))
    base = corrected_scores(scores, "standardised")
    np.testing.assert_allclose(corrected_scores(scale * scores + shift, "standardised"), base, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(np.median(base, axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.median(np.abs(base), axis=0), 1 / MAD_SCALE, rtol=1e-12)
    # Its sign is the median-centred score's sign: it re-weights coordinates, it does not reorder one coordinate.
    np.testing.assert_array_equal(np.sign(base), np.sign(corrected_scores(scores, "median_centred")))
    big = rng.normal(3.0, 2.0, (20_000, 1))
    z = corrected_scores(big, "standardised")
    np.testing.assert_allclose(z, (big - 3.0) / 2.0, atol=0.05 * (1 + np.abs(z)).max())


def test_standardised_is_undefined_where_a_coordinate_mad_is_zero():
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2, (8, 40))
    scores = rng.standard_normal((8, 40)) + 3.0 * bits * rng.uniform(0.2, 5.0, 40)[None, :]
    rows = pd.DataFrame(one_run_rows(bits, scores, models=[1, 2, 8], score="standardised", **ROWS))
    first = rows[rows["models"] == 1]
    assert len(first) == 2 and first["epsilon"].isna().all() and (first["bound"] == SCORE_REASONS["standardised"]).all()
    assert rows.loc[rows["models"] > 1, "epsilon"].notna().all() and (rows.loc[rows["models"] == 8, "epsilon"] > 0).all()
    assert rows["valid"].all()
    with pytest.raises(ValueError, match="MAD"):
        corrected_scores(scores[:1], "standardised")
    # A coordinate constant in more than half of the models has MAD 0: no scale, so the point is undefined.
    flat = scores.copy()
    flat[:5, 7] = 1.25
    with pytest.raises(ValueError, match="MAD"):
        corrected_scores(flat, "standardised")
    rows = pd.DataFrame(one_run_rows(bits, flat, models=[4, 8], score="standardised", **ROWS))
    assert rows.set_index("models")["epsilon"].isna().tolist() == [True, True, True, True]
    assert corrected_scores(flat, "median_centred").shape == flat.shape  # the other scores are still defined


@pytest.mark.parametrize("score", SCORES)
def test_no_canary_no_privacy_loss_at_the_nominal_rate(score):
    """The null: scores that do not depend on the bits (per-coordinate drift and uneven noise, no canary), so every
    score reads nothing about them. Each bound (Bonferroni'd over its guess sizes, confidence 95 %) may report
    ε̂ > 0 in at most ~5 % of trials."""
    rng = np.random.default_rng(24)
    trials, over = 200, {METHODS["counting"]: 0, METHODS["fdp"]: 0}
    for _ in range(trials):
        bits = rng.integers(0, 2, (8, 32))
        drift, spread = 5.0 * rng.standard_normal(32), np.exp(rng.standard_normal(32))
        scores = spread[None, :] * rng.standard_normal((8, 32)) + drift[None, :]
        reference = spread[None, :] * rng.standard_normal((6, 32)) + drift[None, :]
        # Reference models with their own bits and a real canary effect: the audited scores still carry none.
        own = np.tile([[0], [1]], (4, 32))
        calibration = (own, spread[None, :] * rng.standard_normal((8, 32)) + drift[None, :] + own * spread[None, :])
        for row in one_run_rows(bits, scores, models=[8], score=score, noiseless=drift, reference=reference,
                                shift=1.0, calibration=calibration, **ROWS):
            over[row["method"]] += row["epsilon"] > 0
    assert all(n <= 18 for n in over.values()), over  # P[Binomial(200, 0.05) > 18] < 0.01


def test_corrections_recover_canaries_that_drift_hides():
    """Scores dominated by a per-coordinate drift (docs/one_run.md): the corrections lift the bound, the noiseless
    and reference ones from a single model; the noiseless rows count their one canary-free run (T model-steps), the
    reference rows their K reference models (K·T)."""
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2, (16, 64))
    drift = 5.0 * rng.standard_normal(64)
    scores = 0.3 * rng.standard_normal((16, 64)) + 1.0 * bits + drift[None, :]
    reference = 0.3 * rng.standard_normal((4, 64)) + drift[None, :]
    own = np.tile([[0], [1]], (3, 64))
    calibration = (own, 0.3 * rng.standard_normal((6, 64)) + 1.0 * own + drift[None, :])
    pop = pd.DataFrame({"step": [1], "runs": [40], "mu": [0.5], "epsilon": [1.5], "epsilon_free": [0.7],
                        "epsilon_upper": [4.0], "threshold_rule": ["crossing"], "rule_valid": [True], "confidence": [0.95],
                        "delta": [1e-5]})  # fmt: skip
    table = one_run_table(dataset="housing", bits=bits, scores=scores, population=[pop], models=[1, 16],
                          coordinates="random", score_names=SCORES, noiseless=drift, reference=reference, shift=1.0,
                          calibration=calibration, **ROWS)
    fdp = table[table["method"] == METHODS["fdp"]].set_index(["score", "models"])["epsilon"]
    assert fdp["median_centred", 16] > fdp["raw", 16] + 1.0
    assert fdp["noiseless", 1] > fdp["raw", 1] + 1.0 and fdp["reference", 1] > fdp["raw", 1] + 1.0
    assert fdp["calibrated", 1] > fdp["raw", 1] + 1.0
    assert list(dict.fromkeys(table.loc[table["method"] == METHODS["fdp"], "score"])) == list(SCORES)
    steps = table[table["method"] == METHODS["counting"]].set_index(["score", "models"])["model_steps"]
    assert steps["raw", 16] == steps["median_centred", 16] == 32 and steps["noiseless", 16] == 34
    assert steps["reference", 16] == 32 + 4 * 2 and steps["calibrated", 16] == 32 + 6 * 2
    assert table["valid"].all()
    with pytest.raises(ValueError, match="noiseless"):
        one_run_table(dataset="housing", bits=bits, scores=scores, population=[pop], models=[1],
                      coordinates="random", score_names=["noiseless"], **ROWS)
    with pytest.raises(ValueError, match="score_names"):
        one_run_table(dataset="housing", bits=bits, scores=scores, population=[pop], models=[1],
                      coordinates="random", score_names=["raw", "raw"], **ROWS)


def test_noiseless_subtraction_is_the_canary_contribution_at_zero_noise():
    """On coordinates that no data example moves (the first layer's weights of an input that is always 0), with
    σ = 0, the noiseless-subtracted score is exactly the canary's contribution b·η·C·(T/k)/B; on every coordinate a
    model without canaries scores exactly 0 (the canary-free noiseless run is the same deterministic run)."""
    X, y = housing_like(200, 0)
    X = np.array(X, copy=True)
    X[:, 0] = 0.0
    cfg = DPSGDConfig(steps=12, batch_size=20, lr=0.5, clip_norm=1.0, noise_multiplier=0.0, period=3)
    setup = make_setup(spec=model_spec("fcnn", **KW), n_train=200, config=cfg, seed=1)
    # FCNN 8-3-8-1: the first layer's weight is [3, 8], flat index h·8 + f; f = 0 is the zeroed input.
    silent = [0, 8, 16]
    canaries = Canaries(np.array([*silent, 5, 30, 40, 60]), 1.0, "random")
    bits = np.array([[1, 0, 1, 1, 0, 1, 0], [0, 1, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0]])
    kw = dict(spec=model_spec("fcnn", **KW), X=X, y=y, setup=setup, canaries=canaries, noise_key=3)
    scores = train_one_run_shard(config=cfg, bits=bits, **kw)
    # As simulate_one_run_noiseless runs it: the one-run trainer, σ = 0, every bit 0.
    s0 = train_one_run_shard(config=dataclasses.replace(cfg, noise_multiplier=0.0),
                             bits=np.zeros((1, canaries.m), dtype=np.int64), **kw)[0]
    centred = corrected_scores(scores, "noiseless", noiseless=s0)
    exact = cfg.lr * cfg.clip_norm * (cfg.steps // cfg.period) / cfg.batch_size
    np.testing.assert_allclose(centred[:, :3], exact * bits[:, :3], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(centred[2], 0.0, atol=1e-7)
    assert abs(s0[3:]).max() > 10 * exact * 1e-3  # the data does move the other coordinates
    np.testing.assert_allclose(s0[:3], 0.0, atol=1e-7)


def test_reference_score_is_the_gaussian_likelihood_ratio():
    """Δ·(s − μ − Δ/2)/σ² with μ, σ the reference models' mean and sd (ddof 1) per coordinate: the log of the density
    ratio N(μ + Δ, σ²)/N(μ, σ²) at s, checked against scipy's densities; a per-coordinate shift of scores and
    references together leaves it unchanged; it needs K ≥ 2 references of nonzero spread and Δ > 0."""
    from scipy.stats import norm

    rng = np.random.default_rng(6)
    scores = rng.standard_normal((5, 12))
    reference = rng.standard_normal((7, 12)) * np.exp(rng.standard_normal(12))[None, :]
    mu, sd = reference.mean(axis=0), reference.std(axis=0, ddof=1)
    llr = norm.logpdf(scores, mu + 0.7, sd) - norm.logpdf(scores, mu, sd)
    got = corrected_scores(scores, "reference", reference=reference, shift=0.7)
    np.testing.assert_allclose(got, llr, rtol=1e-9, atol=1e-12)
    shift = 50.0 * rng.standard_normal(12)
    np.testing.assert_allclose(corrected_scores(scores + shift, "reference", reference=reference + shift, shift=0.7),
                               got, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="shift"):
        corrected_scores(scores, "reference", reference=reference)
    with pytest.raises(ValueError, match="shape"):
        corrected_scores(scores, "reference", shift=0.7)
    with pytest.raises(ValueError, match="K >= 2"):
        corrected_scores(scores, "reference", reference=reference[:1], shift=0.7)
    flat = reference.copy()
    flat[:, 3] = 2.0
    with pytest.raises(ValueError, match="K >= 2"):
        corrected_scores(scores, "reference", reference=flat, shift=0.7)
    bits = rng.integers(0, 2, scores.shape)
    rows = pd.DataFrame(one_run_rows(bits, scores, models=[1, 5], score="reference", reference=flat, shift=0.7,
                                     **ROWS))
    assert rows["epsilon"].isna().all() and (rows["bound"] == SCORE_REASONS["reference"]).all()


def test_every_corrected_score_has_its_own_series_in_the_figure():
    from hsaudit.experiments.one_run.figures import SCORE_LABELS, SCORE_STYLES

    assert set(SCORE_STYLES) == set(SCORE_LABELS) == set(SCORES) - {"raw"}
    colours = [c for styles in SCORE_STYLES.values() for c in styles.values()]
    assert len(set(colours)) == len(colours)


def test_reference_score_weighs_coordinates_by_their_own_noise():
    """Canaries of one shift on coordinates whose noise differs by 100× (the Housing FCNN's 0.003–0.070,
    docs/one_run.md): the likelihood ratio puts its best guesses on the quiet coordinates, where they are right,
    and beats the median-centred score of the same models at every M; the MAD standardisation, whose scale the
    canary's own in/out split inflates on quiet coordinates, does not reach it either."""
    rng = np.random.default_rng(7)
    m, M, K = 64, 16, 16
    spread = np.geomspace(0.003, 0.07, m)
    drift = 0.25 * rng.standard_normal(m)
    bits = rng.integers(0, 2, (M, m))
    scores = drift + spread * rng.standard_normal((M, m)) + 0.064 * bits
    reference = drift + spread * rng.standard_normal((K, m))
    rows = pd.DataFrame(
        [r for score in ("median_centred", "standardised", "reference")
         for r in one_run_rows(bits, scores, models=[2, 16], score=score, reference=reference, shift=0.064, **ROWS)])
    fdp = rows[rows["method"] == METHODS["fdp"]].set_index(["score", "models"])["epsilon"]
    for M in (2, 16):
        assert fdp["reference", M] > fdp["median_centred", M] and fdp["reference", M] > fdp["standardised", M]
    best = rows[(rows["method"] == METHODS["counting"]) & (rows["score"] == "reference")]
    assert (best["correct"] == best["guesses"]).any()  # the quiet coordinates' guesses are all right


def test_calibrated_score_measures_both_laws_per_coordinate():
    """(μ¹ − μ⁰)·(s − (μ⁰ + μ¹)/2)/σ² from reference models with their own bits: the log density ratio of the two
    Gaussians with the pooled variance (checked against scipy), invariant to a per-coordinate shift of every score;
    on canaries whose shift differs per coordinate, and is ~0 on some (a dead unit), it puts no weight there, where
    the nominal-shift ``reference`` score is confidently wrong."""
    from scipy.stats import norm

    rng = np.random.default_rng(8)
    K, m = 40, 24
    own = rng.integers(0, 2, (K, m))
    sd = np.exp(rng.standard_normal(m))
    ref = rng.standard_normal((K, m)) * sd + 3.0 * own * sd
    scores = rng.standard_normal((5, m)) * sd
    got = corrected_scores(scores, "calibrated", calibration=(own, ref))
    b = own.astype(bool)
    mu1 = np.array([ref[b[:, j], j].mean() for j in range(m)])
    mu0 = np.array([ref[~b[:, j], j].mean() for j in range(m)])
    var = np.array([(((ref[b[:, j], j] - mu1[j]) ** 2).sum() + ((ref[~b[:, j], j] - mu0[j]) ** 2).sum()) / (K - 2)
                    for j in range(m)])
    want = norm.logpdf(scores, mu1, np.sqrt(var)) - norm.logpdf(scores, mu0, np.sqrt(var))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    shift = 30.0 * rng.standard_normal(m)
    np.testing.assert_allclose(corrected_scores(scores + shift, "calibrated", calibration=(own, ref + shift)), got,
                               rtol=1e-7, atol=1e-7)
    # Fewer than 2 reference models on a side of some coordinate's bit: undefined, with the reason.
    few = own.copy()
    few[:, 5] = 0
    few[0, 5] = 1
    with pytest.raises(ValueError, match="fewer than 2"):
        corrected_scores(scores, "calibrated", calibration=(few, ref))
    rows = pd.DataFrame(one_run_rows(rng.integers(0, 2, scores.shape), scores, models=[5], score="calibrated",
                                     calibration=(few, ref), **ROWS))
    assert rows["epsilon"].isna().all() and (rows["bound"] == SCORE_REASONS["calibrated"]).all()
    # Quiet coordinates whose canary barely moves them (true shift 0.002 against the nominal 0.064): the nominal
    # ratio guesses them with confidence and is wrong half the time; the calibrated one does not.
    m, M, K = 64, 16, 64
    spread = np.r_[np.full(8, 0.002), np.full(m - 8, 0.02)]
    effect = np.r_[np.full(8, 0.002), np.full(m - 8, 0.064)]
    bits = rng.integers(0, 2, (M, m))
    own = rng.integers(0, 2, (K, m))
    scores = spread * rng.standard_normal((M, m)) + effect * bits
    free = spread * rng.standard_normal((K, m))
    ref = spread * rng.standard_normal((K, m)) + effect * own
    rows = pd.DataFrame(
        [r for score in ("reference", "calibrated")
         for r in one_run_rows(bits, scores, models=[16], score=score, reference=free, shift=0.064,
                               calibration=(own, ref), **ROWS)])
    fdp = rows[rows["method"] == METHODS["fdp"]].set_index("score")["epsilon"]
    assert fdp["calibrated"] > fdp["reference"] + 0.5
