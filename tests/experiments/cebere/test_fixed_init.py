"""fig12's fixed-initialisation reading: d among the coordinates whose θ0 is the same in every run, where an unknown
per-run θ0 costs nothing (hsaudit.experiments.cebere.train.fixed_init)."""

from __future__ import annotations

import numpy as np
import pytest

from hsaudit.audit.auditor import Auditor
from hsaudit.engine.dpsgd import DPSGDConfig, init_theta0, make_setup, population_theta0
from hsaudit.engine.models import build_model, model_spec
from hsaudit.experiments.cebere.train.fixed_init import (
    craft_fixed_init,
    fixed_init_coordinates,
    fixed_init_mask,
)
from hsaudit.experiments.cebere.train.shards import per_run_scheme, train_shard

pytestmark = pytest.mark.usefixtures("torch_one_thread")

FRESH_SEEDS = (7, 1234, 2**40 + 3)  # not among the seeds the mask was determined from


def _low_dim(model: str) -> np.ndarray:
    """The coordinates of every parameter with fewer than 2 dimensions (what init_theta0 fills with a constant
    under xavier_normal), from the built module."""
    net = build_model(model)
    return np.concatenate([np.full(p.numel(), p.dim() < 2) for p in net.parameters()])


def test_convnet_fixed_coordinates_are_its_biases_at_zero_in_every_draw():
    spec = model_spec("convnet")
    mask = fixed_init_mask(spec, scheme="xavier_normal")
    np.testing.assert_array_equal(mask, _low_dim("convnet"))
    assert mask.sum() == 6 + 16 + 120 + 84 + 10  # the five layers' biases, 0.4 % of the 62,006 coordinates
    draws = [init_theta0(spec, scheme="xavier_normal", seed=seed) for seed in FRESH_SEEDS]
    for theta0 in draws:
        assert np.all(theta0[mask] == 0.0)
    assert np.mean(draws[0][~mask] == draws[1][~mask]) < 1e-3  # every other coordinate is drawn afresh
    # PyTorch's default draws the biases too: none of the ConvNet's coordinates is fixed under it
    assert fixed_init_coordinates(spec, schemes=("default", "xavier_normal")).size == 0


def test_groupnorm_scales_are_fixed_at_one_under_both_schemes():
    """ResNet18-GN: the GroupNorm scales (1) and offsets (0) are fixed under PyTorch's defaults and under Xavier;
    Xavier adds the last layer's bias. Checked against fresh draws, value by value."""
    spec = model_spec("resnet18_gn")
    net = build_model("resnet18_gn")
    norm_scale = np.concatenate([np.full(p.numel(), ".norm" in f".{n}" and n.endswith("weight") or
                                         ("shortcut.1" in n and n.endswith("weight")))
                                 for n, p in net.named_parameters()])  # fmt: skip
    default = fixed_init_mask(spec, scheme="default")
    xavier = fixed_init_mask(spec, scheme="xavier_normal")
    np.testing.assert_array_equal(xavier, _low_dim("resnet18_gn"))
    assert default.sum() < xavier.sum() and np.all(xavier[default])
    for scheme, mask in (("default", default), ("xavier_normal", xavier)):
        first = init_theta0(spec, scheme=scheme, seed=FRESH_SEEDS[0])
        assert np.all(first[norm_scale] == 1.0) and np.all(mask[norm_scale])
        for seed in FRESH_SEEDS[1:]:
            np.testing.assert_array_equal(init_theta0(spec, scheme=scheme, seed=seed)[mask], first[mask])


def test_craft_fixed_init_draws_d_among_the_fixed_coordinates():
    spec = model_spec("convnet")
    config = DPSGDConfig(steps=2, batch_size=4, lr=0.1, clip_norm=2.0, noise_multiplier=1.0)
    setup = make_setup(spec=spec, n_train=8, config=config, seed=1, theta0_init="xavier_normal")
    allowed = set(fixed_init_coordinates(spec, schemes=("xavier_normal",)).tolist())
    dims = set()
    for seed in range(12):
        crafted = craft_fixed_init("gc_r", spec=model_spec("convnet"), setup=setup, clip_norm=2.0, seed=seed,
                                   setup_scheme="xavier_normal")  # fmt: skip
        assert crafted.dim in allowed and crafted.gradient[crafted.dim] == 2.0
        assert np.count_nonzero(crafted.gradient) == 1
        dims.add(crafted.dim)
    assert len(dims) > 1  # uniform over the candidates, not one fixed choice
    again = craft_fixed_init("gc_r", spec=model_spec("convnet"), setup=setup, clip_norm=2.0, seed=3,
                             setup_scheme="xavier_normal")  # fmt: skip
    assert again.dim == craft_fixed_init("gc_r", spec=model_spec("convnet"), setup=setup, clip_norm=2.0,
                                         seed=3, setup_scheme="xavier_normal").dim  # fmt: skip
    with pytest.raises(ValueError, match="restricts A_GC-R"):
        craft_fixed_init("gc_s", spec=model_spec("convnet"), setup=setup, clip_norm=2.0, seed=0)
    with pytest.raises(ValueError, match="no coordinate with a fixed initialisation"):  # default setups: none
        craft_fixed_init("gc_r", spec=model_spec("convnet"), setup=setup, clip_norm=2.0, seed=0)
    assert per_run_scheme("default") == "xavier_normal" and per_run_scheme("xavier_normal") == "xavier_normal"
    with pytest.raises(ValueError, match="theta0_init must be one of"):
        per_run_scheme("xavier")


def _scores(crafted, *, known: bool, setup, theta0, config, X, y):
    bits = np.tile([0, 1], theta0.shape[0] // 2)
    return train_shard(spec=model_spec("convnet"), X=X, y=y, setup=setup, config=config, crafted=crafted,
                       bits=bits, noise_key=11, theta0=theta0, known_theta0=known, device="cpu",
                       progress=False).scores, bits  # fmt: skip


def test_an_unknown_per_run_theta0_costs_nothing_on_a_fixed_coordinate():
    """θ0 re-drawn for every run: on a fixed-initialisation d the scores with θ0 known (θ_T[d] − θ0[d]) and unknown
    (θ_T[d]) are the same numbers, so the audit is the same; on a drawn d (a weight) they differ."""
    spec = model_spec("convnet")
    config = DPSGDConfig(steps=3, batch_size=4, lr=0.1, clip_norm=1.0, noise_multiplier=1.0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((16, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 16)
    setup = make_setup(spec=spec, n_train=16, config=config, seed=2, theta0_init="xavier_normal")
    theta0 = population_theta0(spec, scheme="xavier_normal", key=5, models=range(8))  # per-run draws
    fixed = craft_fixed_init("gc_r", spec=model_spec("convnet"), setup=setup, clip_norm=1.0, seed=4,
                             setup_scheme="xavier_normal")  # fmt: skip
    known, bits = _scores(fixed, known=True, setup=setup, theta0=theta0, config=config, X=X, y=y)
    unknown, _ = _scores(fixed, known=False, setup=setup, theta0=theta0, config=config, X=X, y=y)
    np.testing.assert_array_equal(known, unknown)
    auditor = Auditor()  # the valid default rule
    last = {name: (s[:, -1][bits == 0], s[:, -1][bits == 1]) for name, s in (("known", known), ("unknown", unknown))}
    assert auditor.gdp(*last["known"]).to_dict() == auditor.gdp(*last["unknown"]).to_dict()
    # contrast: a drawn coordinate (the first conv weight) carries θ0[d]'s spread into the unknown score
    drawn = type(fixed)("gc_r", 0, np.eye(1, setup.theta0.size, 0, dtype=np.float32)[0], None, None)
    known_w, _ = _scores(drawn, known=True, setup=setup, theta0=theta0, config=config, X=X, y=y)
    unknown_w, _ = _scores(drawn, known=False, setup=setup, theta0=theta0, config=config, X=X, y=y)
    np.testing.assert_allclose(unknown_w - known_w, -np.repeat(theta0[:, [0]], known_w.shape[1], axis=1), atol=1e-6)
    assert np.abs(unknown_w - known_w).max() > 1e-3
