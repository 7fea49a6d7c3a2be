"""``make_private_with_epsilon``: Opacus searches the σ of a target ε (here with the RDP accountant: the PRV search
takes 0.6 s per call, and ``train`` calls it once per model). The claim is the target; the σ is the search's, found
in ``make`` by the same call Opacus makes. In the audit setting the target is the accountant's ε at the setting's σ,
searched to a tolerance that returns that σ (hsaudit checks that the training runs the σ it asked for).

    hsaudit audit-training --entry examples/libraries/opacus/with_epsilon.py:make --audit-setting
"""

import torch
from opacus import PrivacyEngine
from opacus.accountants.utils import create_accountant, get_noise_multiplier
from opacus_common import CLIP, DELTA, LR, N, claim, config, entry, mlp, run, seeded
from torch.utils.data import DataLoader

TARGET, TOLERANCE = 3.0, 0.01


def make(setting=None):
    epochs, noise, batch = config(setting)
    target, tolerance = TARGET, TOLERANCE
    if setting is not None:
        acc = create_accountant("rdp")
        acc.history = [(noise, 1.0, epochs)]
        target, tolerance = acc.get_epsilon(DELTA), 1e-9
    rate = 1.0 / -(-N // batch)
    sigma = get_noise_multiplier(target_epsilon=target, target_delta=DELTA, sample_rate=rate, epochs=epochs,
                                 accountant="rdp", epsilon_tolerance=tolerance)  # what make_private_with_epsilon runs

    def train(data, seed, init_seed=None):
        model = seeded(mlp, init_seed, seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        engine = PrivacyEngine(accountant="rdp")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=optimizer, data_loader=DataLoader(data, batch_size=batch),
            target_epsilon=target, target_delta=DELTA, epochs=epochs, max_grad_norm=CLIP, epsilon_tolerance=tolerance,
        )  # fmt: skip
        run(model, optimizer, loader, epochs)
        return model._module

    return entry(claim(sigma, batch, epochs, accountant="rdp", epsilon=float(target)), train)
