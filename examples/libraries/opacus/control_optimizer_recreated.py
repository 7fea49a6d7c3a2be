"""A planted bug, the table's control: the optimizer re-created after ``make_private`` (a scheduler or a
fine-tuning script building its own; its loop zeroes the model, as the plain optimizer does not clear the
per-sample gradients), so the steps are plain SGD on the model's summed gradients, no clipping and
no noise, while the claim is the accountant's. The table must flag it.

    hsaudit audit-training --entry examples/libraries/opacus/control_optimizer_recreated.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, claim, config, entry, mlp, seeded
from torch import nn
from torch.utils.data import DataLoader


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            noise_multiplier=noise, max_grad_norm=CLIP,
        )  # fmt: skip
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)  # the bug: Opacus' DPOptimizer is dropped
        for _ in range(epochs):
            for x, y in loader:
                model.zero_grad()  # (the wrapped model's zero_grad also clears the per-sample gradients)
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
        return model._module

    return entry(claim(noise, batch, epochs), train)
