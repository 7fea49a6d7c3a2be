"""An Opacus ``PrivacyEngine`` training that hsaudit can audit:

    hsaudit audit-training --entry examples/byo/opacus_dpsgd.py:make --runs 200

``make()`` returns the claim of Opacus' own RDP accountant for the configuration, ``train(data, seed)`` (every random
number drawn from ``seed``: the Poisson sampler through the loader's generator, the noise through
``noise_generator``) and the ``dataset()``. ``make(setting)`` accepts the audit setting (``--audit-setting``).

One Opacus detail matters to an audit: ``make_private`` derives the sampling rate from the loader, q = 1/len(loader)
= 1/⌈N/B⌉. With N a multiple of B, the one example more of the canary's world changes q (and the normaliser qN)
for every example; N = 240, B = 25 keeps ⌈N/B⌉ = ⌈(N + 1)/B⌉ = 10.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import torch
from opacus import PrivacyEngine
from opacus.accountants import RDPAccountant
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
        batch = setting.batch_size(N) if setting.sample_rate is not None else BATCH
    rate = 1.0 / -(-N // batch)  # what make_private will use: 1 / len(loader)

    def train(data, seed):
        torch.manual_seed(1234)  # the same θ0 for every seed
        model = torch.nn.Linear(FEATURES, CLASSES)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        loader = DataLoader(data, batch_size=batch, generator=torch.Generator().manual_seed(seed))
        with warnings.catch_warnings():  # Opacus warns that secure_mode is off: these runs are for an audit
            warnings.simplefilter("ignore")
            engine = PrivacyEngine(accountant="rdp")
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=noise, max_grad_norm=CLIP,
                poisson_sampling=True, noise_generator=torch.Generator().manual_seed(seed + 1),
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

    accountant = RDPAccountant()
    accountant.history = [(noise, rate, steps)]
    claim = dict(epsilon=accountant.get_epsilon(DELTA), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                 sampling="poisson", sample_rate=rate, steps=steps, neighbouring="add-remove",
                 accountant="opacus rdp")  # fmt: skip
    return SimpleNamespace(claim=claim, train=train, dataset=dataset)
