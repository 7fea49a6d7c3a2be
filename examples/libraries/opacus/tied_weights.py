"""A model with tied weights (Opacus #413): two layers share one weight matrix, so its per-sample gradient is the
sum of both layers' contributions and Opacus must clip that sum.

    hsaudit audit-training --entry examples/libraries/opacus/tied_weights.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLASSES, CLIP, FEATURES, LR, claim, config, entry, run, seeded
from torch import nn
from torch.utils.data import DataLoader


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = nn.Linear(FEATURES, FEATURES), nn.Linear(FEATURES, FEATURES)
        self.second.weight = self.first.weight  # tied
        self.head = nn.Linear(FEATURES, CLASSES)

    def forward(self, x):
        return self.head(torch.relu(self.second(torch.relu(self.first(x)))))


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(Tied, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            noise_multiplier=noise, max_grad_norm=CLIP,
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(noise, batch, epochs), train)
