"""The Box–Muller normals of hsaudit.util.normals: the transform at its edges, and the law of what it draws
(Kolmogorov–Smirnov, moments, tail frequencies against the normal's closed forms)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from hsaudit.util.normals import CHUNK, Normals, box_muller


def test_transform_matches_its_formula_and_reaches_far_tails():
    u_r = np.array([0.0, 0.5, 1.0 - 2.0**-53, 0.9])
    u_a = np.array([0.0, 0.25, 0.5, 0.125], dtype=np.float32)
    r = np.sqrt(-2.0 * np.log(1.0 - u_r))
    want = np.concatenate([r * np.cos(2 * np.pi * u_a.astype(float)), r * np.sin(2 * np.pi * u_a.astype(float))])
    out = box_muller(u_r.copy(), u_a.copy(), np.empty(8, dtype=np.float32))
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    # u₁ in float64: the largest radius is √(2·53·ln 2) ≈ 8.57, not float32's 5.77
    assert np.abs(out).max() == pytest.approx(np.sqrt(2 * 53 * np.log(2)), rel=1e-6)
    with pytest.raises(ValueError, match="2k outputs"):
        box_muller(u_r.copy(), u_a.copy(), np.empty(7, dtype=np.float32))


def test_draws_have_the_standard_normal_law():
    n = 4_000_000
    z = Normals(np.random.Generator(np.random.SFC64(11))).fill(np.empty(n, dtype=np.float32))
    assert stats.kstest(z[:500_000], "norm").pvalue > 1e-3
    assert abs(z.mean()) < 5 / np.sqrt(n)
    assert abs(z.var() - 1.0) < 5 * np.sqrt(2.0 / n)
    assert abs(stats.skew(z)) < 5 * np.sqrt(6.0 / n)
    # cos and sin halves are independent normals too (a sign or angle slip would show here)
    k = CHUNK // 2
    first, second = z[:k], z[k:CHUNK]
    assert abs(np.corrcoef(first, second)[0, 1]) < 5 / np.sqrt(k)
    assert abs(np.corrcoef(first**2, second**2)[0, 1]) < 5 / np.sqrt(k)
    for t in (2.0, 3.0, 4.0):  # two-sided tail frequency against 2Φ(−t), within 5 binomial sd
        p = 2 * special.ndtr(-t)
        assert abs((np.abs(z) > t).mean() - p) < 5 * np.sqrt(p * (1 - p) / n)


def test_same_seed_same_normals_and_scale_and_odd_lengths():
    a = Normals(np.random.Generator(np.random.SFC64(3))).fill(np.empty(CHUNK + 3, dtype=np.float32))
    b = Normals(np.random.Generator(np.random.SFC64(3))).fill(np.empty(CHUNK + 3, dtype=np.float32), scale=-2.5)
    c = Normals(np.random.Generator(np.random.SFC64(4))).fill(np.empty(CHUNK + 3, dtype=np.float32))
    np.testing.assert_array_equal(a * np.float32(-2.5), b)
    assert not np.array_equal(a, c)
    assert np.isfinite(a).all() and a[-1] != a[-2]
    with pytest.raises(ValueError, match="float32"):
        Normals(np.random.default_rng(0)).fill(np.empty(4))
