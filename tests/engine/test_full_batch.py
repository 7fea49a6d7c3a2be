"""Full-batch DP-SGD (Yoon, Jeung & No; specs/yoon.md) by the population engine against the Opacus reference.

Every step uses all of D (B = |D|, no sampling): θ ← θ − (η/|D|)(Σ_x clip(∇ℓ(θ; x), C) + N(0, (Cσ)²I)); the models
M′ trained on D ∪ {canary} append the canary to every step's batch (clipped like any sample) and keep the
normaliser |D|. The reference trainer needs no mode of its own for this: a schedule whose every row is all of D,
``batch_size = |D|``, period k = 1 and the canary insertion is exactly that step (hsaudit.engine.reference).
Both trainers get the same θ0 (Yoon's Xavier-normal θ_avg, bias 0.01) and the same noise (model_noise), so their
final models must agree to float32 tolerance (STYLE.md rule 17).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import images_like
from hsaudit.engine.models import input_shape, model_spec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.reference import train_reference
from hsaudit.engine.dpsgd import DPSGDConfig, Setup, init_theta0, model_noise, train_population
from hsaudit.experiments.yoon.train import full_batch_schedule

pytestmark = pytest.mark.usefixtures("torch_one_thread")

NOISE_KEY = 7


@pytest.mark.parametrize(
    ("model", "n", "steps", "models", "backend"),
    [
        ("mnist_cnn", 12, 3, 4, "hooks"),
        ("mnist_cnn", 12, 3, 4, "func"),
        # 550,570 parameters: a tiny D, two steps, one model per world
        ("cifar_cnn", 4, 2, 2, "hooks"),
        ("cifar_cnn", 4, 2, 2, "func"),
    ],
)
def test_full_batch_matches_opacus(model, n, steps, models, backend):
    shape = input_shape(model)
    X, y = images_like(n, shape, seed=0)
    canary_x, canary_y = np.zeros(shape, dtype=np.float32), np.array(9)  # Yoon's blank canary, label 9
    # C small enough that every sample is clipped; σ = 1 so the noise matters; η/|D| as in Yoon's update
    cfg = DPSGDConfig(steps=steps, batch_size=n, lr=2.0, clip_norm=0.5, noise_multiplier=1.0, period=1)
    theta0 = init_theta0(model_spec(model), scheme="xavier_normal", seed=3, bias=0.01)
    batches = full_batch_schedule(n, steps)  # every step is all of D
    bits = np.arange(models) % 2  # half the population trains on D ∪ {canary}
    engine = population_engine(model_spec(model), "cpu", backend=backend)
    Xt, yt, theta0_t = torch.from_numpy(X), torch.from_numpy(y), torch.from_numpy(theta0)
    assert engine.grad_norms(theta0_t[None], Xt, yt).min() > cfg.clip_norm  # clipping is active
    obs = train_population(
        engine=engine, theta0=theta0_t, X=Xt, y=yt, batches=batches, config=cfg, noise_key=NOISE_KEY,
        models=range(models), mask=torch.from_numpy(bits).float(),
        canary=(torch.from_numpy(canary_x)[None], torch.from_numpy(canary_y).reshape(1)), keep_final=True,
    )
    setup = Setup(theta0=theta0, batches=batches)

    def reference(bit: int, index: int) -> np.ndarray:
        return train_reference(
            spec=model_spec(model), X=X, y=y, setup=setup, config=cfg, bit=bit,
            noise=model_noise(NOISE_KEY, index, steps, theta0.size), canary=(canary_x[None], canary_y.reshape(1)),
        )[1]

    for i, bit in enumerate(bits):
        np.testing.assert_allclose(obs.theta[i], reference(int(bit), i), rtol=1e-4, atol=1e-5)
    # the canary mattered: model 1 without it (same noise) ends elsewhere, so agreement is not about D alone
    assert np.abs(reference(0, 1) - obs.theta[1]).max() > 1e-3
