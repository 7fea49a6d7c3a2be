"""A planted bug, the table's control: the optimizer adds a tenth of the noise (σ/10 passed to
``DPKerasSGDOptimizer``) while the claim is TF Privacy's statement at σ. The table must flag it.

    hsaudit audit-training --entry examples/libraries/tf_privacy/control_noise_tenth.py:make --audit-setting
"""

from tf_common import CLIP, LR, DPKerasSGDOptimizer, claim, config, entry, fit, layers, per_example_loss, reused, tf


def make(setting=None):
    epochs, noise, batch = config(setting)

    def build():
        model = tf.keras.Sequential(layers())
        optimizer = DPKerasSGDOptimizer(l2_norm_clip=CLIP, noise_multiplier=noise / 10,  # the bug: σ/10
                                        num_microbatches=None, learning_rate=LR)  # fmt: skip
        model.compile(optimizer=optimizer, loss=per_example_loss())
        return model

    model = reused(build)

    def train(data, seed, init_seed=None):
        return fit(model(init_seed, seed), data, batch, epochs)

    return entry(claim(noise, batch, epochs), train)
