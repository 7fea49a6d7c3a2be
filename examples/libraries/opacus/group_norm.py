"""BatchNorm replaced as Opacus advises (Opacus #672): a model with ``BatchNorm1d``, which mixes the examples of a
batch, fixed by ``ModuleValidator.fix`` (BatchNorm → GroupNorm) before ``make_private``.

    hsaudit audit-training --entry examples/libraries/opacus/group_norm.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus.validators import ModuleValidator
from opacus_common import CLASSES, CLIP, FEATURES, LR, claim, config, entry, run, seeded
from torch import nn
from torch.utils.data import DataLoader

CHANNELS = 4  # GroupNorm(4, 4) after the fix: each channel normalised over its positions


def with_batch_norm():  # a small 1-d CNN over the features, BatchNorm after its convolution
    return nn.Sequential(nn.Unflatten(1, (1, FEATURES)), nn.Conv1d(1, CHANNELS, 3), nn.BatchNorm1d(CHANNELS), nn.ReLU(),
                         nn.Flatten(), nn.Linear(CHANNELS * (FEATURES - 2), CLASSES))


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = ModuleValidator.fix(seeded(with_batch_norm, init_seed, seed))
        assert not ModuleValidator.validate(model, strict=False)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            noise_multiplier=noise, max_grad_norm=CLIP,
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(noise, batch, epochs), train)
