"""A plain PyTorch DP-SGD loop that hsaudit can audit:

    hsaudit audit-training --entry examples/byo/plain_dpsgd.py:make --runs 200

``make()`` returns what the contract asks for (docs/byo.md): the ``claim`` of this training's accountant, a
``train(data, seed)`` that returns the trained model and draws every random number from ``seed``, and the
``dataset()`` it is meant for. ``make(setting)`` accepts the audit setting (``--audit-setting``): fewer steps, the
noise multiplier and sampling rate it names, and the claim for them.

The loop is textbook DP-SGD (Abadi et al. 2016) with Poisson sampling: per-example gradients (torch.func), each
clipped to C, summed, Gaussian noise N(0, σ²C²) added, divided by the expected batch size qN. Its per-example loss
adds ``w * data.canary_term(params, d)`` when the data carries a third tensor ``w``: that is how a gradient canary (the
Dirac canary) enters, and it is 0 for every other row. ``d`` (``data.k``) is each row's Dirac coordinate, so that one
training can carry M Dirac canaries (``--canary dirac --canaries M``); with one canary ``w * data.canary_term(params)``
is the same term.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from torch.func import functional_call, grad, vmap

N, FEATURES, CLASSES = 240, 10, 2
STEPS, NOISE, RATE, CLIP, LR, DELTA = 20, 1.0, 0.1, 1.0, 0.5, 1e-5


def dataset() -> tuple[torch.Tensor, torch.Tensor]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, CLASSES, (N,), generator=g)
    x = torch.randn(N, FEATURES, generator=g) + (2.0 * y[:, None] - 1.0) * 0.5
    return x, y


def epsilon(noise: float, steps: int, rate: float) -> float:
    """ε at DELTA of `steps` Poisson-subsampled Gaussian steps (dp-accounting's PLD accountant)."""
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(noise)), steps)
    return accountant.get_epsilon(DELTA)


def make(setting=None):
    steps, noise, rate = STEPS, NOISE, RATE
    if setting is not None:  # the audit setting: its steps and noise multiplier, its rate when it names one
        steps, noise = setting.steps, setting.noise_multiplier
        rate = setting.sample_rate if setting.sample_rate is not None else RATE

    def train(data, seed):
        x, y, *rest = data.tensors
        w = rest[0] if rest else torch.zeros(len(x))
        d = data.k if rest else torch.full((len(x),), -1)  # each row's Dirac coordinate (-1: none)
        torch.manual_seed(1234)  # θ0 is the same for every seed (a fixed initialisation makes audits tighter)
        model = torch.nn.Linear(FEATURES, CLASSES)
        params = {k: v.detach() for k, v in model.named_parameters()}
        g = torch.Generator().manual_seed(seed)  # every random number of this run comes from `seed`

        def loss(p, xi, yi, wi, di):
            out = functional_call(model, p, (xi[None],))
            term = wi * data.canary_term(torch.cat([v.reshape(-1) for v in p.values()]), di) if rest else 0.0
            return torch.nn.functional.cross_entropy(out, yi[None]) + term

        for _ in range(steps):
            batch = torch.rand(len(x), generator=g) < rate  # Poisson sampling
            grads = vmap(grad(loss), (None, 0, 0, 0, 0))(params, x[batch], y[batch], w[batch], d[batch])
            norms = torch.sqrt(sum(v.flatten(1).pow(2).sum(1) for v in grads.values()))
            factor = (CLIP / (norms + 1e-6)).clamp(max=1.0)
            for k, v in grads.items():
                summed = torch.einsum("n,n...->...", factor, v)
                noisy = summed + noise * CLIP * torch.randn(v.shape[1:], generator=g)
                params[k] = params[k] - LR * noisy / (rate * N)
        model.load_state_dict(params)
        return model

    claim = dict(epsilon=epsilon(noise, steps, rate), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove",
                 accountant="pld")  # fmt: skip
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)
