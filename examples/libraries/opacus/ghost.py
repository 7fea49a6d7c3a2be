"""Ghost clipping (``grad_sample_mode="ghost"``): per-sample gradient norms without per-sample gradients; Opacus
returns a criterion wrapper whose ``backward()`` runs the two passes, and the loop must use it.

    hsaudit audit-training --entry examples/libraries/opacus/ghost.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, claim, config, entry, mlp, run, seeded
from torch import nn
from torch.utils.data import DataLoader


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, criterion, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            criterion=nn.CrossEntropyLoss(), noise_multiplier=noise, max_grad_norm=CLIP, grad_sample_mode="ghost",
        )  # fmt: skip
        run(model, optimizer, loader, epochs, criterion)
        return model._module

    return entry(claim(noise, batch, epochs), train)
