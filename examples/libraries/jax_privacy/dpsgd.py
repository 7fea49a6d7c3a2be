"""JAX Privacy's DP-SGD in raw JAX: ``jax_privacy.clipped_grad`` + ``noise_addition.gaussian_privatizer`` + optax
SGD on Poisson batches of ``batch_selection.CyclicPoissonSampling``; the claim is
``accounting.DpsgdTrainingAccountant``'s (PLD) ε for (σ, q, T) (jax_common.py).

    hsaudit audit-training --entry examples/libraries/jax_privacy/dpsgd.py:make --audit-setting
"""

from jax_common import claim, config, entry, train_dp


def make(setting=None):
    steps, noise, rate = config(setting)

    def train(data, seed, init_seed=None):
        return train_dp(data, seed, init_seed, steps, noise, rate)

    return entry(claim(noise, rate, steps), train)
