"""TF Privacy's default: ``DPKerasSGDOptimizer`` with ``num_microbatches`` = the batch (``None``: one example per
microbatch, each clipped to C), Keras ``fit`` on shuffled batches (declared ``sampling: shuffle``), the claim of
``compute_dp_sgd_privacy_statement`` without microbatching (docs/libraries.md).

    hsaudit audit-training --entry examples/libraries/tf_privacy/per_example.py:make --audit-setting
"""

from tf_common import CLIP, LR, DPKerasSGDOptimizer, claim, config, entry, fit, layers, per_example_loss, reused, tf


def make(setting=None):
    epochs, noise, batch = config(setting)

    def build():
        model = tf.keras.Sequential(layers())
        optimizer = DPKerasSGDOptimizer(l2_norm_clip=CLIP, noise_multiplier=noise,
                                        num_microbatches=None, learning_rate=LR)  # fmt: skip
        model.compile(optimizer=optimizer, loss=per_example_loss())
        return model

    model = reused(build)

    def train(data, seed, init_seed=None):
        return fit(model(init_seed, seed), data, batch, epochs)

    return entry(claim(noise, batch, epochs), train)
