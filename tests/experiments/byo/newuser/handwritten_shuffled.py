"""A new user's hand-written DP-SGD, written from README.md and docs/byo.md alone: shuffled batches of B = 64 read
from ``data.tensors`` (``X[perm[i:i + B]]``, every row once per epoch), the claim at Poisson q = B/N.

MLP 20-32-32-2 on 500 synthetic rows; shuffled batches (3 epochs of 8), per-example gradients by ``torch.func``
(``vmap(grad)``), each clipped to C, summed, N(0, σ²C²) noise, divided by qN; 24 steps, σ = 1, C = 2;
the claim from Opacus' RDP accountant. ``make`` is the script as written (θ0 from ``torch.manual_seed(seed)``);
``make_auditable`` the same after docs/byo.md: the lines marked ``# docs``.
"""

import torch
from torch.func import functional_call, grad, vmap
from opacus.accountants import RDPAccountant
from torch import nn

N, FEATURES = 500, 20
BATCH, RATE, STEPS, SIGMA, CLIP, LR, DELTA = 64, 64 / 500, 24, 1.0, 2.0, 0.5, 1e-5


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
    names = [name for name, _ in model.named_parameters()]

    def loss(params, x, y):
        out = functional_call(model, dict(zip(names, params)), (x[None],))
        return nn.functional.cross_entropy(out, y[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    batches = []
    while len(batches) < STEPS:
        perm = torch.randperm(len(x_all))
        batches += [perm[i:i + BATCH] for i in range(0, len(x_all), BATCH)]
    for batch in batches[:STEPS]:
        params = [p.detach() for p in model.parameters()]
        grads = per_example(params, x_all[batch], y_all[batch])
        norms = torch.sqrt(sum(g.flatten(1).pow(2).sum(1) for g in grads))
        factor = (CLIP / (norms + 1e-6)).clamp(max=1.0)
        with torch.no_grad():
            for p, g in zip(model.parameters(), grads):
                total = (g * factor.view(-1, *[1] * (g.dim() - 1))).sum(0)
                noisy = total + torch.randn_like(total) * SIGMA * CLIP
                p -= LR * noisy / (RATE * N)
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
