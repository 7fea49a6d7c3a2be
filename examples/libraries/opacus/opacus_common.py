"""What the Opacus configurations of examples/libraries/opacus/ share: the data, the model, the training loop and
the claim of Opacus' own accountant. Each configuration's script holds its ``make_private`` call, the switch it
audits (docs/libraries.md).

The audit setting (``make(setting)``, docs/byo.md): ``setting.steps`` full-batch steps at ``setting.noise_multiplier``.
Opacus derives q = 1/len(loader) from the loader, so the full batch is B = N + 1: one batch, q = 1, in both worlds
(B = N would give the canary's world two batches). Outside it, the script's own configuration (B = 25 of N = 240,
3 epochs). θ0 comes from ``init_seed`` (docs/byo.md, "θ0 first"), everything else from ``seed`` through torch's
global generator, as Opacus draws its batches and noise.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
from opacus.accountants.utils import create_accountant
from torch import nn

# Opacus' hooks on a model whose input needs no gradient make torch warn at every backward(); harmless here.
warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with respect to")
warnings.filterwarnings("ignore", message="Secure RNG turned off")  # these runs are for an audit
warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")

N, FEATURES, HIDDEN, CLASSES = 240, 10, 16, 2
EPOCHS, NOISE, BATCH, CLIP, LR, DELTA = 3, 1.0, 25, 1.0, 0.5, 1e-5


def dataset() -> tuple[torch.Tensor, torch.Tensor]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, CLASSES, (N,), generator=g)
    x = torch.randn(N, FEATURES, generator=g) + (2.0 * y[:, None] - 1.0) * 0.5
    return x, y


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))


def config(setting=None) -> tuple[int, float, int]:
    """(epochs, σ, B): the script's own, or the audit setting's (one full batch of N + 1 per epoch)."""
    if setting is None:
        return EPOCHS, NOISE, BATCH
    return setting.steps, setting.noise_multiplier, N + 1


def seeded(build, init_seed, seed) -> nn.Module:
    """The model ``build()`` with θ0 from ``init_seed`` (or ``seed``), then torch's generator set to ``seed``."""
    torch.manual_seed(init_seed if init_seed is not None else seed)  # hsaudit: θ0 from init_seed
    model = build()
    torch.manual_seed(seed)  # hsaudit: everything else from seed
    return model


def run(model, optimizer, loader, epochs, criterion=None) -> None:
    """The usual loop: ``epochs`` passes over the loader, one optimizer step per batch."""
    criterion = criterion or nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            criterion(model(x), y).backward()
            optimizer.step()


def claim(noise, batch, epochs, *, accountant="prv", clip=CLIP, sampling="poisson", epsilon=None) -> dict:
    """The claim of Opacus' ``accountant`` for ``epochs`` epochs of batches of ``batch`` (q = 1/len(loader), as
    ``make_private`` derives it), its ε unless given (``make_private_with_epsilon``'s target)."""
    rate = 1.0 / -(-N // batch)
    steps = epochs * -(-N // batch)
    if epsilon is None:
        acc = create_accountant(accountant)
        acc.history = [(noise, rate, steps)]  # what PrivacyEngine's accountant records over the training
        epsilon = float(acc.get_epsilon(DELTA))
    return dict(epsilon=epsilon, delta=DELTA, noise_multiplier=noise, max_grad_norm=clip, sampling=sampling,
                sample_rate=rate, steps=steps, neighbouring="add-remove", accountant=f"opacus {accountant}")


def entry(claimed: dict, train) -> SimpleNamespace:
    return SimpleNamespace(claim=claimed, train=train, dataset=dataset)
