"""DP-SGD in NumPy alone (no torch) that hsaudit can audit:

    hsaudit audit-training --entry examples/byo/numpy_dpsgd.py:make --runs 200 --audit-setting

The framework-neutral contract (docs/byo.md, "Without torch"): ``train(data, seed, init_seed=None)`` reads the data
as NumPy arrays (``data.numpy``) and returns its parameters as a dict of arrays; ``loss(params, x, y)`` gives the
per-example loss on NumPy inputs and ``predict(params, x)`` the logits. ``make(setting)`` accepts the audit setting
(``--audit-setting``): its steps, noise multiplier and sampling rate, and the claim for them.

The loop is textbook DP-SGD (Abadi et al. 2016) for softmax regression with Poisson sampling: per-example gradients
in closed form, each clipped to C, summed, Gaussian noise N(0, σ²C²) added, divided by the expected batch size qN.
θ0 comes from ``init_seed`` (hsaudit passes one to every model of an audit), everything else from ``seed``. The claim
is dp-accounting's PLD ε for (σ, q, T).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

N, FEATURES, CLASSES = 240, 10, 2
STEPS, NOISE, RATE, CLIP, LR, DELTA = 20, 1.0, 0.1, 1.0, 0.5, 1e-5


def dataset() -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, N)
    x = rng.normal(size=(N, FEATURES)) + (2.0 * y[:, None] - 1.0) * 0.5
    return x.astype(np.float32), y


def epsilon(noise: float, steps: int, rate: float) -> float:
    """ε at DELTA of `steps` Poisson-subsampled Gaussian steps (dp-accounting's PLD accountant)."""
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(noise)), steps)
    return accountant.get_epsilon(DELTA)


def predict(params, x):
    """The logits, [n, CLASSES]."""
    return np.asarray(x, dtype=np.float64) @ params["w"] + params["b"]


def loss(params, x, y):
    """The per-example cross-entropy, [n]."""
    z = predict(params, x)
    top = z.max(1, keepdims=True)
    log_norm = top[:, 0] + np.log(np.exp(z - top).sum(1))
    return log_norm - z[np.arange(len(z)), np.asarray(y)]


def make(setting=None):
    steps, noise, rate = STEPS, NOISE, RATE
    if setting is not None:  # the audit setting: its steps and noise multiplier, its rate when it names one
        steps, noise = setting.steps, setting.noise_multiplier
        rate = setting.sample_rate if setting.sample_rate is not None else RATE

    def train(data, seed, init_seed=None):
        x, y, *_ = data.numpy
        x = x.astype(np.float64)
        init = np.random.default_rng(1234 if init_seed is None else init_seed)  # θ0: the same for every seed
        params = {"w": 0.01 * init.normal(size=(FEATURES, CLASSES)), "b": np.zeros(CLASSES)}
        rng = np.random.default_rng(seed)  # every other random number of this run comes from `seed`
        for _ in range(steps):
            batch = rng.random(len(x)) < rate  # Poisson sampling
            xb, yb = x[batch], y[batch]
            z = predict(params, xb)
            p = np.exp(z - z.max(1, keepdims=True))
            err = p / p.sum(1, keepdims=True) - np.eye(CLASSES)[yb]  # dloss/dz per example
            norms = np.linalg.norm(xb, axis=1) * np.linalg.norm(err, axis=1)  # ‖x ⊗ err‖ ...
            norms = np.sqrt(norms**2 + (err**2).sum(1))  # ... and the bias' err
            err = err * np.minimum(1.0, CLIP / (norms + 1e-12))[:, None]  # clip each example's gradient to C
            grads = {"w": xb.T @ err, "b": err.sum(0)}
            for k, g in grads.items():
                noisy = g + noise * CLIP * rng.normal(size=g.shape)
                params[k] = params[k] - LR * noisy / (rate * N)
        return params

    claim = dict(epsilon=epsilon(noise, steps, rate), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove",
                 accountant="pld")  # fmt: skip
    return SimpleNamespace(claim=claim, train=train, dataset=dataset, loss=loss, predict=predict)
