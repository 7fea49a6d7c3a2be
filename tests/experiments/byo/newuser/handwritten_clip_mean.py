"""A new user's hand-written DP-SGD, written from README.md and docs/byo.md alone: the batch-averaged gradient clipped to C
(``clip_grad_norm_`` after one ``backward`` of the mean loss) instead of each example's; noise σC/(qN) as if per-example.

MLP 20-32-32-2 on 500 synthetic rows; Poisson sampling (q = 1/8), per-example gradients by microbatches of one
(``backward`` per row, ``clip_grad_norm_``, summed), N(0, σ²C²) noise, divided by qN; 24 steps, σ = 1, C = 2;
the claim from Opacus' RDP accountant. ``make`` is the script as written (θ0 from ``torch.manual_seed(seed)``);
``make_auditable`` the same after docs/byo.md: the lines marked ``# docs``.
"""

import torch
from opacus.accountants import RDPAccountant
from torch import nn

N, FEATURES = 500, 20
RATE, STEPS, SIGMA, CLIP, LR, DELTA = 1 / 8, 24, 1.0, 2.0, 0.5, 1e-5


def dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, FEATURES, generator=g)
    y = (x[:, :5].sum(1) + 0.5 * torch.randn(N, generator=g) > 0).long()
    return x, y


def train(data, seed, init_seed=None):
    torch.manual_seed(seed if init_seed is None else init_seed)  # docs: θ0 from init_seed
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    torch.manual_seed(seed)  # docs
    x_all, y_all = data.tensors
    params = list(model.parameters())
    for _ in range(STEPS):
        batch = torch.rand(len(x_all)) < RATE
        model.zero_grad()
        if batch.any():
            nn.functional.cross_entropy(model(x_all[batch]), y_all[batch]).backward()
            torch.nn.utils.clip_grad_norm_(params, CLIP)  # the bug: the mean's gradient clipped, not each example's
        with torch.no_grad():
            for p in params:
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                p -= LR * (g + torch.randn_like(p) * SIGMA * CLIP / (RATE * N))
    return model


def claim():
    accountant = RDPAccountant()
    accountant.history = [(SIGMA, RATE, STEPS)]
    return dict(epsilon=accountant.get_epsilon(DELTA), delta=DELTA, noise_multiplier=SIGMA, max_grad_norm=CLIP,
                sampling="poisson", sample_rate=RATE, steps=STEPS, neighbouring="add-remove", accountant="opacus rdp")


def make():
    return dict(claim=claim(), train=lambda data, seed: train(data, seed), dataset=dataset)


def make_auditable(setting=None):
    global RATE, STEPS, SIGMA
    if setting is not None:  # docs: the audit setting's steps, σ and full batch
        RATE, STEPS, SIGMA = setting.sample_rate, setting.steps, setting.noise_multiplier
    return dict(claim=claim(), train=train, dataset=dataset)
