"""Non-Poisson batches (``poisson_sampling=False``): the loader's shuffled batches of B. Opacus' accountant still
accounts Poisson sampling at q = 1/len(loader); hsaudit is told the mechanism that runs, ``sampling="shuffle"``. In
the audit setting (one batch of all the data) the two are the same mechanism; in the script's own configuration
(B < N) shuffled batches have no add-remove guarantee, so the claim declares replace-one, and hsaudit's accountant
then says whether Opacus' Poisson ε covers it (Opacus #80).

    hsaudit audit-training --entry examples/libraries/opacus/shuffle.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus_common import CLIP, LR, N, claim, config, entry, mlp, run, seeded
from torch.utils.data import DataLoader


def make(setting=None):
    epochs, noise, batch = config(setting)

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine()
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch, shuffle=True),
            noise_multiplier=noise, max_grad_norm=CLIP, poisson_sampling=False,
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    claimed = claim(noise, batch, epochs, sampling="shuffle")
    if batch < N:
        claimed.update(neighbouring="replace-one", batch_size=batch)
    return entry(claimed, train)
