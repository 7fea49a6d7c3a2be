"""An Opacus ``PrivacyEngine`` training as people write it, made auditable by hsaudit:

    hsaudit audit-training --entry examples/byo/opacus_dpsgd.py:make --runs 200

``train`` seeds torch's global generator and builds the model, then Opacus draws the Poisson batches and the noise
from the same global generator; ``make()`` states the claim of Opacus' default accountant (PRV) for the configuration,
computed once. ``make(setting)`` accepts the audit setting (``--audit-setting``).

Auditable: θ0 comes from ``init_seed`` when one is given (hsaudit passes the same one to every model of an audit),
everything else from ``seed``. The diff from the usual script, ``def train(data, seed):`` and
``torch.manual_seed(seed)`` first, is three lines (marked ``# hsaudit``): a θ0 drawn from the seed varies across
the audit's models and drowns the canary's effect (docs/byo.md, "θ0 first"); called as ``train(data, seed)`` the
script behaves as before.

One Opacus detail matters to an audit: ``make_private`` derives the sampling rate from the loader, q = 1/len(loader)
= 1/⌈N/B⌉. With N a multiple of B, the one example more of the canary's world changes q (and the normaliser qN)
for every example; N = 240, B = 25 keeps ⌈N/B⌉ = ⌈(N + 1)/B⌉ = 10.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
from opacus import PrivacyEngine
from opacus.accountants import PRVAccountant
from torch.utils.data import DataLoader

# Opacus' hooks on a model whose input needs no gradient make torch warn at every backward(); harmless here, and
# once per model it buried the audit's output.
warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed with respect to")

N, FEATURES, CLASSES = 240, 10, 2
STEPS, NOISE, BATCH, CLIP, LR, DELTA = 20, 1.0, 25, 1.0, 0.5, 1e-5


def dataset() -> tuple[torch.Tensor, torch.Tensor]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, CLASSES, (N,), generator=g)
    x = torch.randn(N, FEATURES, generator=g) + (2.0 * y[:, None] - 1.0) * 0.5
    return x, y


def make(setting=None):
    steps, noise, batch = STEPS, NOISE, BATCH
    if setting is not None:
        steps, noise = setting.steps, setting.noise_multiplier
        # the full batch must stay one batch when the canary's row joins: B = N + 1 keeps len(loader) = 1 in both
        # worlds (B = N would give the canary's world two batches, q = 1/2: see the module docstring)
        # (a many-canary audit's setting says how many rows its training sets hold at most: ``rows``)
        full = getattr(setting, "rows", None) or N + 1
        batch = (full if setting.sample_rate == 1.0 else setting.batch_size(N)) if setting.sample_rate else BATCH
    rate = 1.0 / -(-N // batch)  # what make_private will use: 1 / len(loader)

    def train(data, seed, init_seed=None):  # hsaudit: init_seed
        torch.manual_seed(init_seed if init_seed is not None else seed)  # hsaudit: θ0 from init_seed
        model = torch.nn.Linear(FEATURES, CLASSES)
        torch.manual_seed(seed)  # hsaudit: everything else from seed
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        loader = DataLoader(data, batch_size=batch)
        with warnings.catch_warnings():  # Opacus warns that secure_mode is off: these runs are for an audit
            warnings.simplefilter("ignore")
            engine = PrivacyEngine()
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise, max_grad_norm=CLIP,
                poisson_sampling=True,
            )  # fmt: skip
        done = 0
        while done < steps:
            for x, y in loader:
                optimizer.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
                done += 1
                if done == steps:
                    break
        return model._module

    accountant = PRVAccountant()  # the default accountant of PrivacyEngine(), once for every model
    accountant.history = [(noise, rate, steps)]
    claim = dict(epsilon=float(accountant.get_epsilon(DELTA)), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove",
                 accountant="opacus prv")  # fmt: skip
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)
