"""Virtual steps: ``BatchMemoryManager`` splits each logical batch into physical batches of at most 8; the optimizer
clips and sums them and steps (noise, update) once per logical batch.

    hsaudit audit-training --entry examples/libraries/opacus/virtual_steps.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus.utils.batch_memory_manager import BatchMemoryManager
from opacus_common import CLIP, LR, claim, config, entry, mlp, run, seeded
from torch.utils.data import DataLoader

PHYSICAL = 8


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
        with BatchMemoryManager(data_loader=loader, max_physical_batch_size=PHYSICAL, optimizer=optimizer) as memory:
            run(model, optimizer, memory, epochs)
        return model._module

    return entry(claim(noise, batch, epochs), train)
