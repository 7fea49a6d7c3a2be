"""A planted bug, the table's control: the privatizer adds a tenth of the noise (its stddev σC/10), while the claim
is JAX Privacy's accountant at σ. The table must flag it.

    hsaudit audit-training --entry examples/libraries/jax_privacy/control_noise_tenth.py:make --audit-setting
"""

from jax_common import claim, config, entry, train_dp


def make(setting=None):
    steps, noise, rate = config(setting)

    def train(data, seed, init_seed=None):
        return train_dp(data, seed, init_seed, steps, noise, rate, noise_fraction=0.1)  # the bug

    return entry(claim(noise, rate, steps), train)
