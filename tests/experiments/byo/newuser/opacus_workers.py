"""A new user's Opacus script, written from README.md and docs/byo.md alone: correct, its DataLoader fetching in two
worker processes (``num_workers=2``); ``make_swapped`` keeps its own shuffled loader after ``make_private`` (no
Poisson), the claim at Poisson q.

MLP 20-32-32-2 on 500 synthetic rows; ``make_private`` with Poisson sampling (B = 64: Opacus' q = 1/len(loader)
= 1/8), 3 epochs, σ = 1, C = 1; the claim from Opacus' default accountant (PRV) for that history.
``make`` is the script as written (θ0 from ``torch.manual_seed(seed)``); ``make_auditable`` is the same script
after docs/byo.md ("θ0 first", ``make(setting)``): the lines marked ``# docs``.
"""

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from torch import nn
from torch.utils.data import DataLoader

N, FEATURES = 500, 20
BATCH, EPOCHS, SIGMA, CLIP, LR, DELTA = 64, 3, 1.0, 1.0, 0.5, 1e-5
SWAPPED = False


def dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, FEATURES, generator=g)
    y = (x[:, :5].sum(1) + 0.5 * torch.randn(N, generator=g) > 0).long()
    return x, y


def train(data, seed, init_seed=None):
    torch.manual_seed(seed if init_seed is None else init_seed)  # docs: θ0 from init_seed
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    torch.manual_seed(seed)  # docs
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(data, batch_size=BATCH or len(data), shuffle=True, num_workers=2)  # docs: BATCH None = full
    engine = PrivacyEngine()
    model, optimizer, private = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=CLIP
    )
    loader = loader if SWAPPED else private
    for _ in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model


def claim():
    rate, steps = (1 / -(-N // BATCH), EPOCHS * -(-N // BATCH)) if BATCH else (1.0, EPOCHS)
    accountant = PRVAccountant()
    accountant.history = [(SIGMA, rate, steps)]
    return dict(epsilon=accountant.get_epsilon(DELTA), delta=DELTA, noise_multiplier=SIGMA, max_grad_norm=CLIP,
                sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove", accountant="opacus prv")


def make():
    return dict(claim=claim(), train=lambda data, seed: train(data, seed), dataset=dataset)


def make_auditable(setting=None):
    global BATCH, EPOCHS, SIGMA
    if setting is not None:  # docs: the audit setting's steps, σ and full batch
        BATCH, EPOCHS, SIGMA = None, setting.steps, setting.noise_multiplier
    return dict(claim=claim(), train=train, dataset=dataset)


def make_swapped():
    global SWAPPED
    SWAPPED = True
    return make()
