"""``opacus_seeded_auditable.py`` with a bug: σ/10 passed to ``make_private`` while the claim is the accountant's ε at
σ (a noise multiplier divided by ten between the config and the engine). θ0 from ``init_seed`` (the diff of
docs/byo.md, "θ0 first").

MLP 20-32-32-2 on 500 synthetic rows, Poisson sampling with B = 64 (Opacus: q = 1/len(loader) = 1/8), 3 epochs
(T = 24), σ = 1 claimed and 0.1 run, C = 1; the claim is the default accountant's (PRV) ε at σ, computed once in
``make``. ``make(setting)`` follows docs/byo.md's Opacus example (the audit setting's steps and σ, one full batch
of N + 1 so that the canary's world keeps q = 1), with the same bug.
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


def make(setting=None):
    """As docs/byo.md's Opacus example: ``make(setting)`` runs the audit setting's steps and σ in one full batch."""
    steps, sigma, batch = EPOCHS * -(-N // BATCH), SIGMA, BATCH
    if setting is not None:
        steps, sigma = setting.steps, setting.noise_multiplier
        batch = getattr(setting, "rows", None) or N + 1  # one batch in every world (rows: a many-canary audit)
    rate = 1 / -(-N // batch)  # what make_private uses: 1 / len(loader)

    def train(data, seed, init_seed=None):
        torch.manual_seed(init_seed if init_seed is not None else seed)
        model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
        torch.manual_seed(seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        loader = DataLoader(data, batch_size=batch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            engine = PrivacyEngine()
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader,
                noise_multiplier=sigma / 10, max_grad_norm=CLIP, poisson_sampling=True,  # the bug: σ/10
            )  # fmt: skip
        done = 0
        while done < steps:
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                done += 1
                if done == steps:
                    break
        return model

    accountant = PRVAccountant()
    accountant.history = [(sigma, rate, steps)]
    claim = dict(epsilon=accountant.get_epsilon(DELTA), delta=DELTA, noise_multiplier=sigma, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove", accountant="opacus prv")
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)
