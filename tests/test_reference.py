"""The vectorised population trainer against the Opacus one-model reference (STYLE.md rule 17).

Both trainers get the same θ0, batches, crafted object and the same explicit noise (hsaudit.train.model_noise),
so they must agree to float32 tolerance, step after step, for every kind of insertion and both bits.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import housing_like
from hsaudit.adversaries import craft
from hsaudit.reference import train_reference
from hsaudit.train import DPSGDConfig, make_setup, model_noise, train_shard


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _housing_like(n=160, seed=0):
    return housing_like(n, seed)


# C small enough that most samples are clipped; σ = 1 so the noise matters; k = 2 so insertion is periodic.
CFG = DPSGDConfig(steps=6, batch_size=24, lr=0.5, clip_norm=0.3, noise_multiplier=1.0, period=2)
BITS = np.array([0, 1, 1, 0])


@pytest.mark.parametrize(
    ("variant", "adversary", "backend"),
    [
        *[(v, a, "mlp") for v in ("8-3-8-1", "8-6-2") for a in ("gc_r", "cots", "label_flip")],
        # the torch.func engine once here; test_train checks it against the hand-derived one in general
        ("8-6-2", "label_flip", "func"),
        ("8-3-8-1", "gc_r", "func"),
    ],
)
def test_population_matches_opacus_fcnn(variant, adversary, backend):
    X, y = _housing_like()
    kwargs = {"variant": variant}
    setup = make_setup(model="fcnn", model_kwargs=kwargs, n_train=len(X), config=CFG, seed=1)
    crafted = craft(adversary, model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=CFG, seed=2)
    scores = train_shard(
        model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=CFG, crafted=crafted, bits=BITS,
        seed=7, progress=False, backend=backend, device="cpu",
    )
    assert scores.shape == (4, 3)
    for i, bit in enumerate(BITS):
        ref, _ = train_reference(
            model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=int(bit),
            noise=model_noise(7, i, CFG.steps, 68),
        )
        np.testing.assert_allclose(scores[i], ref, rtol=1e-4, atol=1e-6)
    # the insertion mattered: the two worlds differ (so agreement is not trivially about b = 0)
    ref0, _ = train_reference(
        model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=0,
        noise=model_noise(7, 1, CFG.steps, 68),
    )
    assert np.abs(ref0 - scores[1]).max() > 1e-4


@pytest.mark.parametrize("adversary", ["gc_r", "label_flip"])
def test_population_matches_opacus_convnet(adversary):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    cfg = DPSGDConfig(steps=2, batch_size=3, lr=0.05, clip_norm=0.5, noise_multiplier=1.0)
    setup = make_setup(model="convnet", model_kwargs={}, n_train=8, config=cfg, seed=0)
    crafted = craft(adversary, model="convnet", model_kwargs={}, X=X, y=y, setup=setup, config=cfg, seed=0)
    bits = np.array([1, 0])
    scores = train_shard(
        model="convnet", model_kwargs={}, X=X, y=y, setup=setup, config=cfg, crafted=crafted, bits=bits, seed=3,
        progress=False, device="cpu",
    )
    for i, bit in enumerate(bits):
        ref, _ = train_reference(
            model="convnet", model_kwargs={}, X=X, y=y, setup=setup, config=cfg, crafted=crafted, bit=int(bit),
            noise=model_noise(3, i, cfg.steps, setup.theta0.size),
        )
        np.testing.assert_allclose(scores[i], ref, rtol=1e-4, atol=1e-6)


def test_reference_rejects_bad_noise():
    X, y = _housing_like()
    setup = make_setup(model="fcnn", model_kwargs={}, n_train=len(X), config=CFG, seed=1)
    crafted = craft("gc_r", model="fcnn", model_kwargs={}, X=X, y=y, setup=setup, config=CFG, seed=2)
    with pytest.raises(ValueError, match="noise"):
        train_reference(
            model="fcnn", model_kwargs={}, X=X, y=y, setup=setup, config=CFG, crafted=crafted, bit=1,
            noise=np.zeros((2, 68)),
        )
