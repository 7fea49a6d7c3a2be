"""JAX Privacy 2.0.0's Keras API under-accounts gradient accumulation (PR #271, merged as #287, not in 2.0.0):
``DPKerasConfig._validate_params`` checks a user-given ``noise_multiplier`` against the target ε at the physical
``batch_size`` (keras_api.py line 241), while one noisy update averages ``gradient_accumulation_steps`` batches
(calibration, line 182, uses ``effective_batch_size``). PR #271's numbers: ε = 1 is accepted for σ = 1.

    KERAS_BACKEND=jax python examples/libraries/jax_privacy/finding_keras_accumulation.py
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import dp_accounting  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from jax_privacy import keras_api  # noqa: E402
from jax_privacy.accounting import analysis  # noqa: E402

N, BATCH, ACCUMULATION, STEPS, SIGMA, DELTA, TARGET = 1000, 10, 8, 100, 1.0, 1e-5, 1.0  # PR #271's test


def pld_epsilon(updates: int, batch: int) -> float:
    """dp_accounting's PLD ε of ``updates`` Poisson-subsampled Gaussian updates, q = batch/N, at σ."""
    step = dp_accounting.PoissonSampledDpEvent(batch / N, dp_accounting.GaussianDpEvent(SIGMA))
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-3)
    return accountant.compose(dp_accounting.SelfComposedDpEvent(step, updates)).get_epsilon(DELTA)


def main() -> None:
    config = keras_api.DPKerasConfig(epsilon=TARGET, delta=DELTA, clipping_norm=1.0, batch_size=BATCH,
                                     gradient_accumulation_steps=ACCUMULATION, train_steps=STEPS, train_size=N,
                                     noise_multiplier=SIGMA, seed=0)  # fmt: skip
    checked = config._accountant.compute_epsilon(STEPS, analysis.DpParams(
        noise_multipliers=SIGMA, batch_size=BATCH, num_samples=N, delta=DELTA))  # line 241's figure  # fmt: skip
    model = keras_api.make_private(keras.Sequential([keras.Input((10,)), keras.layers.Dense(2)]), config)
    model.compile(optimizer=keras.optimizers.SGD(0.1, gradient_accumulation_steps=ACCUMULATION),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((N, 10)).astype("float32"), rng.integers(0, 2, N)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # all the Keras steps fit() allows (STEPS)
    updates = int(model.optimizer.iterations)  # noisy updates, each of BATCH * ACCUMULATION examples
    print(f"DPKerasConfig accepted: epsilon={TARGET} for sigma={SIGMA}, batch {BATCH} x {ACCUMULATION} accumulation,"
          f" train_steps={STEPS}, N={N}, delta={DELTA}")  # fmt: skip
    print(f"claimed epsilon: {TARGET} (its check's epsilon at the physical batch, {STEPS} steps: {checked:.3f})")
    print(f"fit() ran {STEPS} Keras steps = {updates} noisy updates of batch {config.effective_batch_size}")
    print(f"true epsilon of that run (PLD, q={config.effective_batch_size / N}, {updates} updates):"
          f" {pld_epsilon(updates, config.effective_batch_size):.3f}")  # fmt: skip
    print(f"true epsilon of train_steps={STEPS} updates as documented (what calibration, line 182, accounts):"
          f" {pld_epsilon(STEPS, config.effective_batch_size):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
