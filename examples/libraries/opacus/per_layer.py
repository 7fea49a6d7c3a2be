"""Per-layer clipping (``clipping="per_layer"``): one bound per parameter tensor; Opacus' noise is σ times their
Euclidean norm, the bound of the whole gradient, which is the claim's C.

A canary whose gradient lives mostly in one tensor is clipped to that tensor's C/2: audit it with one that reaches
every bound, Nasr et al.'s opposing canary on the copies background at |x0| = 1.5 (docs/journal/libraries.md):

    hsaudit audit-training --entry examples/libraries/opacus/per_layer.py:make --audit-setting \
        --canary opposing --background copies --canary-option amplitude=1.5
"""

import math

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, claim, config, entry, mlp, run, seeded
from torch.utils.data import DataLoader

BOUNDS = [CLIP / 2] * 4  # weight and bias of the two layers: √(4 × (C/2)²) = C


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            noise_multiplier=noise, max_grad_norm=BOUNDS, clipping="per_layer",
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(noise, batch, epochs, clip=math.sqrt(sum(c * c for c in BOUNDS))), train)
