"""``opacus_seeded_auditable.py`` with a bug in its claim: the sampling rate is taken from a table ten times larger
than the one trained on (q = B/N with N = 5,000, not 500), so the stated ε is far below the real one. θ0 from
``init_seed`` (the diff of docs/byo.md, "θ0 first").

MLP 20-32-32-2 on 500 synthetic rows, Poisson sampling with B = 64 (Opacus runs q = 1/len(loader) = 1/8), 3 epochs
(T = 24), σ = 1, C = 1; the claim is the default accountant's (PRV) ε at q = 64/5000, computed once in ``make``.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from torch import nn
from torch.utils.data import DataLoader

N, FEATURES = 500, 20
BATCH, EPOCHS, SIGMA, CLIP, LR, DELTA = 64, 3, 1.0, 1.0, 0.5, 1e-5


def dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, FEATURES, generator=g)
    y = (x[:, :5].sum(1) + 0.5 * torch.randn(N, generator=g) > 0).long()
    return x, y


def train(data, seed, init_seed=None):
    torch.manual_seed(init_seed if init_seed is not None else seed)
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    torch.manual_seed(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(data, batch_size=BATCH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader,
            noise_multiplier=SIGMA, max_grad_norm=CLIP, poisson_sampling=True,
        )  # fmt: skip
    for _ in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model


def make():
    rate = BATCH / (10 * N)  # the bug: q from a table ten times larger (make_private runs 1 / len(loader))
    steps = EPOCHS * -(-N // BATCH)
    accountant = PRVAccountant()
    accountant.history = [(SIGMA, rate, steps)]
    claim = dict(epsilon=accountant.get_epsilon(DELTA), delta=DELTA, noise_multiplier=SIGMA, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove", accountant="opacus prv")
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)
