"""JAX Privacy's Keras API with gradient accumulation and a user-given σ (JAX Privacy PR #271, merged as #287 after
2.0.0; finding_keras_accumulation.py reproduces it): ``keras_api.make_private`` on a Keras MLP 10-16-2 (JAX
backend), ``DPKerasConfig(gradient_accumulation_steps=4, noise_multiplier=σ)``, Keras ``fit`` with
``SGD(gradient_accumulation_steps=4)``: every noisy update averages 4 physical batches, the whole (padded) data set.

The claim is what the Keras API certifies for that σ: its ``_validate_params`` ε (keras_api.py line 241: the
physical ``batch_size``), the smallest target ε ``DPKerasConfig`` accepts. ``train_steps`` counts Keras steps (4
per update), the unit ``fit()``'s budget check counts (#288), so that ``fit`` runs T updates. The mechanism is the
full batch (q = 1) for T updates at σ, whose ε hsaudit's accounting check compares the claim with before training.

    KERAS_BACKEND=jax hsaudit audit-training --entry examples/libraries/jax_privacy/keras_accumulation.py:make --audit-setting
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")
import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from jax_common import CLIP, DELTA, LR, NOISE, N, entry, init  # noqa: E402
from jax_privacy import keras_api  # noqa: E402
from jax_privacy.accounting import analysis  # noqa: E402

ACCUMULATION, STEPS = 4, 15
BATCH = -(-(N + 1) // ACCUMULATION)  # physical batch: 4 of them hold either world (N or N + 1), padded
SIZE = BATCH * ACCUMULATION  # the padded data set: each update takes all of it


def keras_config(noise: float, steps: int, epsilon: float, seed: int | None = None) -> keras_api.DPKerasConfig:
    return keras_api.DPKerasConfig(epsilon=epsilon, delta=DELTA, clipping_norm=CLIP, batch_size=BATCH,
                                   gradient_accumulation_steps=ACCUMULATION, train_steps=steps * ACCUMULATION,
                                   train_size=SIZE, noise_multiplier=noise, seed=seed)  # fmt: skip


def keras_epsilon(noise: float, steps: int) -> float:
    """The ε ``DPKerasConfig._validate_params`` computes for σ (its accountant, its arguments: line 237-244)."""
    params = analysis.DpParams(noise_multipliers=noise, batch_size=BATCH, num_samples=SIZE, delta=DELTA)
    return float(keras_api.DPKerasConfig._accountant.compute_epsilon(steps * ACCUMULATION, params))


def train_keras(data, seed, init_seed, noise: float, steps: int, epsilon: float) -> dict:
    """Keras ``fit`` of the private model for ``steps`` updates: θ0 from ``init_seed`` (jax_common.init), the
    noise from ``seed``; padding rows carry sample weight 0 (their clipped gradient is 0)."""
    x, y = data.numpy[:2]
    pad = SIZE - len(x)
    xs = np.concatenate([x, np.zeros((pad, x.shape[1]), x.dtype)])
    ys, weight = np.concatenate([y, np.zeros(pad, y.dtype)]), np.r_[np.ones(len(x)), np.zeros(pad)].astype("float32")
    model = keras.Sequential([keras.Input((x.shape[1],)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(2)])  # fmt: skip
    theta0 = init(jax.random.key(init_seed if init_seed is not None else seed))
    for i, layer in enumerate(model.layers, 1):
        layer.set_weights([np.asarray(theta0[f"dense{i}"][p]) for p in "wb"])
    model = keras_api.make_private(model, keras_config(noise, steps, epsilon, seed=seed))
    model.compile(optimizer=keras.optimizers.SGD(LR, gradient_accumulation_steps=ACCUMULATION),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
    model.fit(xs, ys, sample_weight=weight, batch_size=BATCH, epochs=steps, shuffle=False, verbose=0)
    return {f"dense{i}": dict(zip("wb", layer.get_weights())) for i, layer in enumerate(model.layers, 1)}


def make(setting=None):
    steps, noise = (STEPS, NOISE) if setting is None else (setting.steps, setting.noise_multiplier)
    claimed = keras_epsilon(noise, steps)
    keras_config(noise, steps, claimed)  # the Keras API accepts this claim for σ (raises otherwise)

    def train(data, seed, init_seed=None):
        return train_keras(data, seed, init_seed, noise, steps, claimed)

    claim = dict(epsilon=claimed, delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP, sampling="poisson",
                 sample_rate=1.0, steps=steps, neighbouring="add-remove",
                 accountant="jax_privacy keras_api DPKerasConfig._validate_params (PLD, physical batch)")  # fmt: skip
    return entry(claim, train)
