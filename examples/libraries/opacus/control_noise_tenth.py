"""A planted bug, the table's control: the noise multiplier cut to σ/10 behind the library's back
(``optimizer.noise_multiplier`` changed after ``make_private``), while the claim is the accountant's ε at σ. The
table must flag it.

    hsaudit audit-training --entry examples/libraries/opacus/control_noise_tenth.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, claim, config, entry, mlp, run, seeded
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
        optimizer.noise_multiplier = noise / 10  # the bug: the optimizer adds a tenth of the noise
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(noise, batch, epochs), train)
