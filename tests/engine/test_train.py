"""The vectorised DP-SGD population trainer (Cebere et al. Eq. 2 with insertion; spec §1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import housing_like
from hsaudit.experiments.cebere.train.adversaries import Crafted, craft
from hsaudit.engine.dpsgd import (
    DPSGDConfig,
    Setup,
    load_setup,
    make_setup,
    model_noise,
    run_population,
    save_setup,
)
from hsaudit.experiments.cebere.train.shards import train_shard
from hsaudit.engine.models import model_spec
from hsaudit.engine.psg import population_engine


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def shard_scores(**kw):
    """train_shard's scores, with the old ``seed=`` spelling of the noise key."""
    if "seed" in kw:
        kw["noise_key"] = kw.pop("seed")
    return train_shard(**kw).scores


def _data(n=200, seed=0):
    return housing_like(n, seed)


CFG = DPSGDConfig(steps=6, batch_size=16, lr=0.5, clip_norm=1.0, noise_multiplier=1.0, period=2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"steps": 0},
        {"batch_size": 0},
        {"lr": 0.0},
        {"clip_norm": -1.0},
        {"noise_multiplier": -0.1},
        {"period": 7},
        {"period": 0},
    ],
)
def test_config_validation(kwargs):
    base = {"steps": 6, "batch_size": 4, "lr": 0.1, "clip_norm": 1.0, "noise_multiplier": 1.0, "period": 1}
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        DPSGDConfig(**{**base, **kwargs})


def test_insertion_steps():
    assert CFG.insertion_steps.tolist() == [2, 4, 6]
    assert DPSGDConfig(steps=5, batch_size=1, lr=1, clip_norm=1, noise_multiplier=0, period=2).insertion_steps.tolist() == [2, 4]


def test_setup_schedule_and_round_trip(tmp_path):
    setup = make_setup(spec=model_spec("fcnn"), n_train=50, config=CFG, seed=3)
    assert setup.theta0.shape == (68,) and setup.theta0.dtype == np.float32
    assert setup.batches.shape == (6, 16) and setup.batches.dtype == np.int64
    # 50 // 16 = 3 batches per epoch, each epoch a permutation: no index twice within an epoch.
    for epoch in (setup.batches[:3], setup.batches[3:6]):
        assert len(np.unique(epoch)) == epoch.size
    again = make_setup(spec=model_spec("fcnn"), n_train=50, config=CFG, seed=3)
    np.testing.assert_array_equal(setup.theta0, again.theta0)
    np.testing.assert_array_equal(setup.batches, again.batches)
    other = make_setup(spec=model_spec("fcnn"), n_train=50, config=CFG, seed=4)
    assert not np.array_equal(setup.theta0, other.theta0)
    save_setup(setup, tmp_path / "s.npz")
    loaded = load_setup(tmp_path / "s.npz")
    np.testing.assert_array_equal(loaded.theta0, setup.theta0)
    np.testing.assert_array_equal(loaded.batches, setup.batches)
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]  # no temporary left behind
    with pytest.raises(ValueError, match="n_train"):
        make_setup(spec=model_spec("fcnn"), n_train=10, config=CFG, seed=3)


@pytest.mark.parametrize("variant", ["8-3-8-1", "8-6-2"])
@pytest.mark.parametrize("clip", [0.05, None])
def test_hand_derived_gradients_match_autograd(variant, clip):
    """Hand-derived FCNN clipped sums (mlp engine) against per-sample autograd (torch.func engine)."""
    X, y = _data(30)
    kwargs = {"variant": variant}
    spec = model_spec("fcnn", **kwargs)
    mlp, func = population_engine(spec, backend="mlp"), population_engine(spec, backend="func")
    theta = torch.as_tensor(np.random.default_rng(1).standard_normal((3, 68)), dtype=torch.float32)
    x, yy = torch.from_numpy(X), torch.from_numpy(y)
    weights = torch.ones(3, 30)
    weights[1, -1] = 0.0
    for w in (None, weights):
        torch.testing.assert_close(
            mlp.clipped_sum(theta, x, yy, clip, w), func.clipped_sum(theta, x, yy, clip, w), rtol=1e-5, atol=1e-6
        )
    torch.testing.assert_close(mlp.loss(theta, x[:4], yy[:4]), func.loss(theta, x[:4], yy[:4]), rtol=1e-5, atol=1e-6)
    if clip is not None:  # every clipped per-sample gradient has norm <= C
        for i in range(5):
            w = torch.zeros(3, 30)
            w[:, i] = 1.0
            assert mlp.clipped_sum(theta, x, yy, clip, w).norm(dim=1).max() <= clip * (1 + 1e-5)


def test_crafted_gradient_moves_only_its_coordinate():
    """σ = 0, one step: inserted − not inserted = −(η/B)·C·e_d exactly (same θ0, same batch)."""
    X, y = _data()
    cfg = DPSGDConfig(steps=1, batch_size=16, lr=0.5, clip_norm=2.0, noise_multiplier=0.0)
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=cfg, seed=0)
    engine = population_engine(model_spec("fcnn"))
    d = 17
    gradient = torch.zeros(68)
    gradient[d] = cfg.clip_norm
    theta = run_population(
        engine,
        torch.from_numpy(setup.theta0)[None].expand(2, -1),
        torch.from_numpy(X),
        torch.from_numpy(y),
        setup.batches,
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        clip=cfg.clip_norm,
        sigma=0.0,
        period=1,
        mask=torch.tensor([0.0, 1.0]),
        gradient=gradient,
    )
    diff = (theta[1] - theta[0]).numpy()
    expected = np.zeros(68, dtype=np.float32)
    expected[d] = -cfg.lr * cfg.clip_norm / cfg.batch_size
    np.testing.assert_allclose(diff, expected, rtol=1e-5, atol=1e-7)


def test_models_share_theta0_and_batches():
    """σ = 0 and b = 0: every model of a shard follows the same trajectory (same θ0, same batches)."""
    X, y = _data()
    cfg = DPSGDConfig(steps=5, batch_size=16, lr=0.5, clip_norm=1.0, noise_multiplier=0.0)
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=cfg, seed=0)
    crafted = craft("cots", spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, seed=0)
    scores = shard_scores(
        spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, crafted=crafted,
        bits=np.zeros(4, dtype=int), seed=0, progress=False,
    )
    assert scores.shape == (4, 5) and scores.dtype == np.float64
    np.testing.assert_array_equal(scores, np.broadcast_to(scores[0], scores.shape))


def test_noise_stream_does_not_depend_on_shard_size():
    X, y = _data()
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=CFG, seed=0)
    crafted = craft("gc_r", spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, seed=0)
    kw = dict(spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, crafted=crafted, progress=False)
    small = shard_scores(bits=np.array([0, 1, 0]), seed=9, **kw)
    large = shard_scores(bits=np.array([0, 1, 0, 1, 1]), seed=9, **kw)
    np.testing.assert_array_equal(small, large[:3])
    threaded = shard_scores(bits=np.array([0, 1, 0, 1, 1]), seed=9, workers=2, **kw)
    np.testing.assert_allclose(threaded, large, rtol=1e-6, atol=1e-9)  # worker threads change nothing
    other = shard_scores(bits=np.array([0, 1, 0]), seed=10, **kw)
    assert not np.allclose(small, other)
    # the documented stream: model_noise(seed, i, T, p)
    a = model_noise(9, 2, 6, 68)
    assert a.shape == (6, 68) and a.dtype == np.float32
    np.testing.assert_array_equal(a, model_noise(9, 2, 6, 68))
    assert abs(float(a.std()) - 1.0) < 0.15


@pytest.mark.parametrize("adversary", ["gc_r", "gc_s", "cots", "label_flip"])
def test_scores_are_oriented(adversary):
    """With σ small, inserted runs score higher than non-inserted ones (higher ⇒ member)."""
    X, y = _data(400)
    cfg = DPSGDConfig(steps=20, batch_size=32, lr=0.5, clip_norm=1.0, noise_multiplier=0.01)
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=cfg, seed=2)
    crafted = craft(adversary, spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, seed=2)
    bits = np.array([0, 1] * 8)
    scores = shard_scores(
        spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, crafted=crafted, bits=bits, seed=1,
        progress=False,
    )
    last = scores[:, -1]
    assert last[bits == 1].min() > last[bits == 0].max()


def test_train_shard_rejects_bad_input():
    X, y = _data()
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=CFG, seed=0)
    crafted = craft("gc_r", spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=CFG, seed=0)
    kw = dict(spec=model_spec("fcnn"), setup=setup, config=CFG, seed=0, progress=False)
    with pytest.raises(ValueError, match="bits"):
        shard_scores(X=X, y=y, crafted=crafted, bits=np.array([0, 2]), **kw)
    with pytest.raises(ValueError, match="X must have shape"):
        shard_scores(X=X[:, :7], y=y, crafted=crafted, bits=np.array([0, 1]), **kw)
    with pytest.raises(ValueError, match="y must hold"):
        shard_scores(X=X, y=y + 1, crafted=crafted, bits=np.array([0, 1]), **kw)
    bad = Crafted("gc_r", 3, np.zeros(10, dtype=np.float32), None, None)
    with pytest.raises(ValueError, match="gradient"):
        shard_scores(X=X, y=y, crafted=bad, bits=np.array([0, 1]), **kw)
    with pytest.raises(ValueError, match="workers"):
        shard_scores(X=X, y=y, crafted=crafted, bits=np.array([0, 1]), workers=2, backend="func", **kw)
    with pytest.raises(ValueError, match="workers"):
        shard_scores(X=X, y=y, crafted=crafted, bits=np.array([0, 1]), workers=0, **kw)
    with pytest.raises(ValueError, match="batches"):
        wrong = Setup(theta0=setup.theta0, batches=setup.batches[:3])
        shard_scores(X=X, y=y, crafted=crafted, bits=np.array([0, 1]), **{**kw, "setup": wrong})
    with pytest.raises(ValueError, match=r"spec must be a ModelSpec .*'fcnn'"):  # a name is resolved at the boundary
        shard_scores(X=X, y=y, crafted=crafted, bits=np.array([0, 1]), **{**kw, "spec": "fcnn"})


@pytest.mark.parametrize("model", ["convnet", "resnet18_gn"])
def test_cifar_models_train_at_tiny_size(model):
    """ConvNet / ResNet18-GN through the torch.func engine: 2 models, 2 steps, batches of 2."""
    rng = np.random.default_rng(0)
    side = 32 if model == "convnet" else 8  # ResNet pools adaptively; 8x8 keeps the CPU test quick
    X = rng.standard_normal((6, 3, side, side)).astype(np.float32)
    y = rng.integers(0, 10, 6)
    cfg = DPSGDConfig(steps=2, batch_size=2, lr=0.01, clip_norm=1.0, noise_multiplier=0.0)
    if model == "resnet18_gn":
        cfg = DPSGDConfig(steps=2, batch_size=1, lr=0.01, clip_norm=1.0, noise_multiplier=0.0)
    setup = make_setup(spec=model_spec(model), n_train=6, config=cfg, seed=0)
    crafted = craft("gc_r", spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, seed=0)
    scores = shard_scores(
        spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, crafted=crafted, bits=np.array([0, 1]),
        seed=0, progress=False, device="cpu",
    )
    # σ = 0: the two runs differ exactly by the crafted gradient's 2 steps (−(η/B)·C each) in coordinate d
    # up to how step 2's data gradient reacts to step 1's insertion (tiny at η = 0.01).
    step = cfg.lr * cfg.clip_norm / cfg.batch_size
    np.testing.assert_allclose(scores[1] - scores[0], [step, 2 * step], rtol=1e-2)


def test_population_without_insertion_audits_to_zero():
    """No insertion (b = 0 for every run, labels drawn only for the audit): ε̂ ≈ 0; with insertion it is not."""
    from hsaudit.audit import audit_scores

    X, y = _data(400)
    cfg = DPSGDConfig(steps=5, batch_size=32, lr=0.5, clip_norm=1.0, noise_multiplier=1.0)
    setup = make_setup(spec=model_spec("fcnn"), n_train=len(X), config=cfg, seed=4)
    crafted = craft("gc_r", spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, seed=4)
    members = np.arange(400) % 2
    kw = dict(spec=model_spec("fcnn"), X=X, y=y, setup=setup, config=cfg, crafted=crafted, seed=8,
              progress=False)
    null = shard_scores(bits=np.zeros(400, dtype=int), **kw)
    eps_null = audit_scores(null[:, -1], members, delta=1e-5, confidence=0.95).epsilon
    assert eps_null < 0.3
    inserted = shard_scores(bits=members, **kw)
    # 5 insertions at σ = 1: μ = √5 ≈ 2.24, upper bound ε(δ = 1e-5) = 11.48 (GDP closed form); seeds 0-4 gave 8-10.
    assert audit_scores(inserted[:, -1], members, delta=1e-5, confidence=0.95).epsilon > 1.0
