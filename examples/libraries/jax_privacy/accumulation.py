"""Gradient accumulation: each Poisson batch is split into ``ACCUMULATION`` minibatches
(``batch_selection.split_and_pad_global_batch``), their clipped-gradient sums added up, and the noise drawn once
per update; the claim is JAX Privacy's accountant at the effective (whole) batch's expected size qN and T noisy
updates, what JAX Privacy PR #271 made its Keras API's validation use (docs/libraries.md).

    hsaudit audit-training --entry examples/libraries/jax_privacy/accumulation.py:make --audit-setting
"""

from jax_common import claim, config, entry, train_dp

ACCUMULATION = 4


def make(setting=None):
    steps, noise, rate = config(setting)

    def train(data, seed, init_seed=None):
        return train_dp(data, seed, init_seed, steps, noise, rate, accumulate=ACCUMULATION)

    return entry(claim(noise, rate, steps), train)
