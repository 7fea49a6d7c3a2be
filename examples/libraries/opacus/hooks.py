"""Opacus' default: ``grad_sample_mode="hooks"``, Poisson sampling, the PRV accountant; ``mode`` and
``accountant`` are the switches functorch.py, ew.py, rdp.py and gdp.py set (docs/libraries.md).

    hsaudit audit-training --entry examples/libraries/opacus/hooks.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, claim, config, entry, mlp, run, seeded
from torch.utils.data import DataLoader


def make(setting=None, *, mode="hooks", accountant="prv"):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine(accountant=accountant)
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            noise_multiplier=noise, max_grad_norm=CLIP, grad_sample_mode=mode,
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(noise, batch, epochs, accountant=accountant), train)
