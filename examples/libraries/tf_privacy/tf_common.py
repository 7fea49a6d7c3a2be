"""What the TensorFlow Privacy configurations of examples/libraries/tf_privacy/ share: the data, the Keras model, the
``fit`` call, the per-example loss and the claim of TF Privacy's own accountant helper. Each configuration's script
holds its optimizer (or ``DPSequential``), the switch it audits (docs/libraries.md). Keras only: no torch, no JAX.

TF Privacy 0.9.0 under the registry's TensorFlow 2.21 (docs/journal/libraries.md): its Keras optimizers subclass
Keras 2's ``optimizers.legacy`` classes, so ``tf.keras`` must be ``tf_keras`` (``pip install tf-keras``,
``TF_USE_LEGACY_KERAS=1`` before TensorFlow is imported; Keras 3 refuses with "`keras.optimizers.legacy` is not
supported in Keras 3"), and ``import tensorflow_privacy`` fails on tensorflow-estimator 2.15 ("cannot import name
'estimator_training' from 'tensorflow.python.distribute'"), so the scripts set TF Privacy's own switch for that,
``sys.skip_tf_privacy_import``, and import its modules by path. Both must happen before TensorFlow is imported, so
the scripts take ``tf`` and TF Privacy's classes from here.

Sampling: TF Privacy draws no batches; Keras ``fit`` cuts the shuffled data into batches of B, so the scripts declare
``sampling: shuffle``. The audit setting (``make(setting)``, docs/byo.md): ``setting.steps`` epochs of one full batch
(B = N + 1: one batch in both worlds) at ``setting.noise_multiplier``, where shuffling is no sampling at all and
add-remove holds; outside it, the script's own configuration (B = 24 of N = 240, 3 epochs) is declared replace-one
(fixed-size shuffled batches have no add-remove guarantee). θ0 comes from ``init_seed`` (docs/byo.md, "θ0 first"),
everything else (the shuffle, the noise) from ``seed`` through ``tf.keras.utils.set_random_seed``; each script builds
and compiles its model once and :func:`reused` resets it per seed.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.keras → tf_keras (Keras 2): TF Privacy 0.9's optimizers need it
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.skip_tf_privacy_import = True  # TF Privacy's switch: skip its __init__'s estimator imports (broken on TF 2.21)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_privacy.privacy.analysis import compute_dp_sgd_privacy_lib as privacy_lib  # noqa: E402
from tensorflow_privacy.privacy.fast_gradient_clipping import layer_registry  # noqa: E402, F401
from tensorflow_privacy.privacy.keras_models.dp_keras_model import DPSequential  # noqa: E402, F401
from tensorflow_privacy.privacy.optimizers.dp_optimizer_keras import DPKerasSGDOptimizer  # noqa: E402, F401
from tensorflow_privacy.version import __version__ as TF_PRIVACY_VERSION  # noqa: E402, F401

try:  # one core per training: hsaudit runs its shards side by side
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
except RuntimeError:  # TensorFlow already started in this process: its threads stay as they are
    pass

N, FEATURES, HIDDEN, CLASSES = 240, 10, 16, 2
EPOCHS, NOISE, BATCH, CLIP, LR, DELTA = 3, 1.0, 24, 1.0, 0.5, 1e-5


def dataset() -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, N)
    x = rng.standard_normal((N, FEATURES)) + (2.0 * y[:, None] - 1.0) * 0.5
    return x.astype(np.float32), y.astype(np.int64)


def config(setting=None) -> tuple[int, float, int]:
    """(epochs, σ, B): the script's own, or the audit setting's (one full batch of N + 1 per epoch)."""
    if setting is None:
        return EPOCHS, NOISE, BATCH
    return setting.steps, setting.noise_multiplier, N + 1


def layers() -> list:
    return [tf.keras.Input((FEATURES,)), tf.keras.layers.Dense(HIDDEN, activation="relu"),
            tf.keras.layers.Dense(CLASSES)]  # fmt: skip


def reused(build):
    """``build()`` (the Keras model, compiled with its optimizer) once per ``make()``; each call ``(init_seed, seed)``
    hands it back as a fresh ``build()`` would be: θ0 drawn again from ``init_seed`` (or ``seed``; hsaudit: θ0 from
    init_seed) by fresh copies of its layers' initializers, in the order ``build()`` draws them; the optimizer's
    variables (its step count, accumulators) zeroed; every generator set to ``seed``; and a new train function, which
    ``fit`` traces at ``seed``: TF Privacy's noise ops take their seeds from the global seed when they are traced, so a
    train function kept across seeds would give every seed the first one's noise. The models are those of building
    and compiling per seed, bit for bit; only the Keras objects and the first fit's second trace (after it creates
    the optimizer's variables) are paid once (docs/journal/libraries.md)."""
    built: list = []

    def model(init_seed, seed):
        tf.keras.utils.set_random_seed(init_seed if init_seed is not None else seed)
        if not built:
            built.append(build())
        else:
            for layer in built[0].layers:
                for name in ("kernel", "bias"):  # Dense: the kernel's initializer draws first
                    init = getattr(layer, f"{name}_initializer")
                    getattr(layer, name).assign(type(init).from_config(init.get_config())(getattr(layer, name).shape))
            optimizer = built[0].optimizer
            for variable in optimizer.variables() if callable(optimizer.variables) else optimizer.variables:
                variable.assign(tf.zeros_like(variable))
        tf.keras.utils.set_random_seed(seed)  # hsaudit: everything else from seed
        built[0].make_train_function(force=True)
        return built[0]

    return model


def per_example_loss():
    """The loss TF Privacy's optimizers want: one value per example (they cut it into microbatches)."""
    return tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=tf.keras.losses.Reduction.NONE)


def fit(model, data, batch, epochs) -> list[np.ndarray]:
    """The usual ``fit`` on the NumPy views of ``data`` (shuffled batches of ``batch``); the trained weights."""
    x, y = data.numpy[:2]
    model.fit(x, y, batch_size=batch, epochs=epochs, shuffle=True, verbose=0)
    return model.get_weights()


_SCORER: list = []


def loss(params, x, y) -> np.ndarray:
    """Per-example cross-entropy of the weights ``params`` (``model.get_weights()``) on NumPy ``x``, ``y``."""
    if not _SCORER:
        _SCORER.append(tf.keras.Sequential(layers()))
    model = _SCORER[0]
    model.set_weights(params)
    logits = model(np.asarray(x, np.float32), training=False)
    return tf.keras.losses.sparse_categorical_crossentropy(np.asarray(y), logits, from_logits=True).numpy()


def claim(noise, batch, epochs, *, microbatching=False, replace_one=None) -> dict:
    """The claim of TF Privacy's ``compute_dp_sgd_privacy_statement`` (RDP) for ``epochs`` epochs of batches of
    ``batch`` (one noisy update each) at σ = ``noise``: the ε it prints "with each example occurring once per epoch"
    (Keras' shuffled batches; its Poisson figure is for a sampling Keras does not do), unrounded, by the helper the
    statement calls. ``microbatching``: the statement's ``used_microbatching`` (sensitivity 2C: σ/2 in its ε).
    Declared to hsaudit: shuffled batches, add-remove for one full batch, else (or ``replace_one``) replace-one."""
    epsilon = privacy_lib._compute_dp_sgd_example_privacy(epochs, noise, DELTA, microbatching)
    batches = -(-N // batch)
    claimed = dict(epsilon=float(epsilon), delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP,
                   sampling="shuffle", sample_rate=1.0 / batches, steps=epochs * batches, neighbouring="add-remove",
                   accountant="tf_privacy compute_dp_sgd_privacy_statement (RDP)")  # fmt: skip
    if batch < N or replace_one:  # fixed-size shuffled batches: no add-remove guarantee
        del claimed["sample_rate"]
        claimed.update(neighbouring="replace-one", batch_size=min(batch, N))
    return claimed


def entry(claimed: dict, train) -> SimpleNamespace:
    return SimpleNamespace(claim=claimed, train=train, dataset=dataset, loss=loss)
