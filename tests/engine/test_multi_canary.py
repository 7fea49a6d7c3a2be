"""Many gradient canaries per model: the per-model inserted gradient ``[models, p]`` of the DP-SGD layer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import housing_like
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, run_population, train_population
from hsaudit.engine.models import model_spec
from hsaudit.engine.noise import CounterNoise
from hsaudit.engine.psg import population_engine

pytestmark = pytest.mark.usefixtures("torch_one_thread")

MODEL, KW = "fcnn", {"variant": "8-3-8-1"}


def _setup(steps, period=1):
    X, y = housing_like(120, 0)
    cfg = DPSGDConfig(steps=steps, batch_size=16, lr=0.5, clip_norm=1.0, noise_multiplier=1.0, period=period)
    setup = make_setup(spec=model_spec(MODEL, **KW), n_train=len(X), config=cfg, seed=3)
    engine = population_engine(model_spec(MODEL, **KW), "cpu")
    return engine, torch.from_numpy(X), torch.from_numpy(y), setup, cfg


def _run(engine, X, y, setup, cfg, models, **insertion):
    theta0 = torch.from_numpy(setup.theta0)[None].expand(models, -1)
    noise = CounterNoise(11, torch.arange(models), engine.p, "cpu")
    return run_population(engine, theta0, X, y, setup.batches, lr=cfg.lr, batch_size=cfg.batch_size,
                          clip=cfg.clip_norm, sigma=cfg.noise_multiplier, period=cfg.period, noise=noise, **insertion)


def test_per_model_gradient_equals_mask_outer_gradient_bit_for_bit():
    engine, X, y, setup, cfg = _setup(steps=6, period=2)
    grad = torch.zeros(engine.p)
    grad[5] = cfg.clip_norm
    mask = torch.tensor([1.0, 0.0, 1.0, 0.0])
    a = _run(engine, X, y, setup, cfg, 4, mask=mask, gradient=grad)
    b = _run(engine, X, y, setup, cfg, 4, gradient=mask[:, None] * grad[None])
    assert torch.equal(a, b)


def test_multi_canary_insertion_is_the_sum_of_single_insertions_in_one_step():
    """One DP-SGD step is linear in the inserted gradient: m canaries with bits b move θ by the sum of what each
    canary alone moves it (same noise, same batch), on distinct coordinates C·η/B each."""
    engine, X, y, setup, cfg = _setup(steps=1)
    p = engine.p
    coords = [0, 7, 30, 67]
    bits = torch.tensor([[1, 0, 1, 1], [0, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.float32)
    multi = torch.zeros(3, p)
    multi[:, coords] = cfg.clip_norm * bits
    base = _run(engine, X, y, setup, cfg, 3)
    moved = _run(engine, X, y, setup, cfg, 3, gradient=multi) - base
    total = torch.zeros_like(moved)
    for j, d in enumerate(coords):
        single = torch.zeros(p)
        single[d] = cfg.clip_norm
        total += _run(engine, X, y, setup, cfg, 3, mask=bits[:, j].contiguous(), gradient=single) - base
    torch.testing.assert_close(moved, total, rtol=0, atol=1e-6)
    step = cfg.lr / cfg.batch_size * cfg.clip_norm
    torch.testing.assert_close(moved[:, coords], -step * bits, rtol=0, atol=1e-6)


def test_per_model_gradient_is_validated():
    engine, X, y, setup, cfg = _setup(steps=2)
    with pytest.raises(ValueError, match="shape"):
        _run(engine, X, y, setup, cfg, 2, gradient=torch.zeros(3, engine.p))
    with pytest.raises(ValueError, match="no mask"):
        _run(engine, X, y, setup, cfg, 2, gradient=torch.zeros(2, engine.p), mask=torch.ones(2))


def test_train_population_takes_a_per_model_gradient():
    engine, X, y, setup, cfg = _setup(steps=4, period=2)
    grad = torch.zeros(engine.p)
    grad[3] = 1.0
    mask = torch.tensor([0.0, 1.0])
    kw = dict(engine=engine, theta0=torch.from_numpy(setup.theta0), X=X, y=y, batches=setup.batches, config=cfg,
              noise_key=5, models=range(2), keep_final=True)
    a = train_population(mask=mask, gradient=grad, **kw).theta
    b = train_population(gradient=mask[:, None] * grad[None], **kw).theta
    np.testing.assert_array_equal(a, b)
