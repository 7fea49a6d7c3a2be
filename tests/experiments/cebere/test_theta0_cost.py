"""The closed-form cost of an unknown per-run θ0, averaged exactly over A_GC-R's d
(hsaudit.experiments.cebere.theta0_cost)."""

from __future__ import annotations

import numpy as np
import pytest

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.engine.dpsgd import init_theta0
from hsaudit.engine.models import model_spec
from hsaudit.experiments.cebere.theta0_cost import (
    expected_cost,
    init_variances,
    layer_summary,
    per_coordinate_cost,
    sampled_cost,
    signal_and_noise,
)
from hsaudit.experiments.cebere.train.fixed_init import fixed_init_mask

pytestmark = pytest.mark.usefixtures("torch_one_thread")

# Housing's paper values (config/config.yaml, housing): T = 250, k = 1, η = 0.1, C = 1, σ = 4, B = 400.
HOUSING = {"steps": 250, "period": 1, "lr": 0.1, "clip_norm": 1.0, "noise_multiplier": 4.0, "batch_size": 400}


def test_variances_are_xavier_and_match_draws():
    spec = model_spec("fcnn")
    v0 = init_variances(spec)
    assert v0.size == 68
    # 8-3-8-1: 2/(8+3) for the 24 + 24 weights of the first two layers, 2/(8+1) for the last 8; biases fixed
    assert sorted(set(np.round(v0, 12))) == [0.0, round(2 / 11, 12), round(2 / 9, 12)]
    assert np.count_nonzero(v0 == 0) == 3 + 8 + 1
    draws = np.stack([init_theta0(spec, scheme="xavier_normal", seed=s) for s in range(3000)])
    np.testing.assert_array_equal(v0 == 0, fixed_init_mask(spec, scheme="xavier_normal"))
    assert np.all(draws[:, v0 == 0] == draws[0, v0 == 0])
    for value in (2 / 11, 2 / 9):  # pooled over a layer's coordinates: relative sd of the estimate < 1.5 %
        pooled = draws[:, np.isclose(v0, value)].var()
        assert pooled == pytest.approx(value, rel=0.05)
    with pytest.raises(ValueError, match="xavier_normal"):
        init_variances(spec, scheme="default")


def test_convnet_zero_variance_is_the_fixed_init_set():
    spec = model_spec("convnet")
    np.testing.assert_array_equal(init_variances(spec) == 0, fixed_init_mask(spec, scheme="xavier_normal"))


def test_housing_expectation_is_the_exact_mean_over_its_68_coordinates():
    shift, sd = signal_and_noise(HOUSING)
    assert shift == pytest.approx(250 * 0.1 / 400) and sd == pytest.approx(0.1 * 4 * np.sqrt(250) / 400)
    table = per_coordinate_cost(model_spec("fcnn"), HOUSING, delta=1e-5)
    mean = expected_cost(table)
    mu = lambda v: shift / np.sqrt(sd**2 + v)  # noqa: E731
    by_hand = (12 * mu(0.0) + 48 * mu(2 / 11) + 8 * mu(2 / 9)) / 68
    assert mean["mu_unknown"] == pytest.approx(by_hand, rel=1e-12)
    eps = lambda v: gdp_epsilon(mu=float(mu(v)), delta=1e-5)  # noqa: E731
    assert mean["epsilon_unknown"] == pytest.approx((12 * eps(0.0) + 48 * eps(2 / 11) + 8 * eps(2 / 9)) / 68, rel=1e-9)
    assert mean["mu_known"] == pytest.approx(shift / sd) and mean["fixed_share"] == pytest.approx(12 / 68)
    # sampling d estimates it: within 4 standard errors for 200,000 draws, and not exactly
    draws = 200_000
    sampled = sampled_cost(table, draws=draws, seed=1)
    for key in ("mu_unknown", "epsilon_unknown"):
        se = table[key].std(ddof=0) / np.sqrt(draws)
        assert abs(sampled[key] - mean[key]) < 4 * se and sampled[key] != mean[key]
    summary = layer_summary(table)
    assert summary["coordinates"].iloc[:-1].sum() == 68 and summary["layer"].iloc[-1].startswith("all")
    assert summary["mu_unknown"].iloc[-1] == pytest.approx(mean["mu_unknown"])


def test_the_cost_script_prints_both_sections(capsys):
    from conftest import REPO, load_script

    module = load_script("theta0_cost")
    assert module.main(["--config", str(REPO / "config" / "config.yaml"), "--section", "housing"]) == 0
    out = capsys.readouterr().out
    assert "all (exact mean over d) | 68 |" in out and "μ known = 3.953" in out
