"""Counter-based DP noise (hsaudit.engine.noise): a pure function of (key, model, step, coordinate)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from hsaudit.engine.noise import CounterNoise, counter_normals, mix64, mix64_int, reference_normals

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_mix64_matches_the_unsigned_reference():
    values = [0, 1, 2**40 + 7, 2**63 - 1, 2**63, 2**64 - 1, 0x9E3779B97F4A7C15]
    signed = torch.tensor([v - 2**64 if v >= 2**63 else v for v in values], dtype=torch.int64)
    got = [int(v) % 2**64 for v in mix64(signed)]
    assert got == [mix64_int(v) for v in values]
    # SplitMix64's first output for seed 0 (state += γ, then the finaliser): 0xE220A8397B1DCDAF
    assert mix64_int(0x9E3779B97F4A7C15) == 0xE220A8397B1DCDAF


def test_normals_equal_the_slow_reference():
    z = counter_normals(123456789, torch.arange(4), 7, 13)
    for i in range(4):
        np.testing.assert_allclose(z[i].numpy(), reference_normals(123456789, i, 7, 13), rtol=2e-5, atol=2e-5)


def test_a_models_noise_does_not_depend_on_its_companions_or_chunking():
    whole = counter_normals(5, torch.arange(100, 120), 3, 101)
    alone = counter_normals(5, torch.tensor([111]), 3, 101)
    assert torch.equal(whole[11], alone[0])
    chunked = CounterNoise(5, range(100, 120), 101, "cpu", budget=16 * 51 * 3)  # chunks of 3 models
    assert chunked.chunk == 3
    assert torch.equal(chunked(3), whole)
    assert torch.equal(counter_normals(5, torch.arange(100, 120), 3, 101), whole)  # rerun: bit-identical


def test_streams_differ_across_key_model_and_step():
    base = counter_normals(1, torch.tensor([0]), 1, 64)
    for other in (counter_normals(2, torch.tensor([0]), 1, 64), counter_normals(1, torch.tensor([1]), 1, 64),
                  counter_normals(1, torch.tensor([0]), 2, 64)):
        assert abs(float(np.corrcoef(base[0], other[0])[0, 1])) < 0.5
        assert not torch.equal(base, other)


def test_noise_is_standard_normal():
    z = counter_normals(99, torch.arange(50), 4, 4001).numpy().ravel()  # 200,050 values
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(stats.kurtosis(z)) < 0.05
    assert stats.kstest(z, "norm").pvalue > 1e-3
    # neighbours (the two halves of one 64-bit word, and consecutive words) are uncorrelated
    pairs = z[: 200_000].reshape(-1, 2)
    assert abs(np.corrcoef(pairs[:, 0], pairs[:, 1])[0, 1]) < 0.01


def test_bad_dimension():
    with pytest.raises(ValueError, match="dim"):
        counter_normals(0, torch.arange(2), 1, 0)
