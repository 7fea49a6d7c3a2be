"""``DPKerasSGDOptimizer(gradient_accumulation_steps=2)``: ``fit`` feeds half batches, the optimizer adds noise at
each and updates the weights every second one. As its docstring says, the effective batch is 2 half batches and the
effective noise multiplier σ·√2, so the optimizer is given σ/√2 and the claim (``compute_dp_sgd_privacy_statement``)
is computed for the effective batch and σ. In the audit setting the half batches are ⌈(N + 1)/2⌉: two per epoch in
both worlds, one update per epoch.

    hsaudit audit-training --entry examples/libraries/tf_privacy/accumulation.py:make --audit-setting
"""

import math

from tf_common import CLIP, LR, DPKerasSGDOptimizer, claim, config, entry, fit, layers, per_example_loss, reused, tf

ACCUMULATE = 2


def make(setting=None):
    epochs, noise, batch = config(setting)  # batch, noise: the effective ones

    def build():
        model = tf.keras.Sequential(layers())
        optimizer = DPKerasSGDOptimizer(l2_norm_clip=CLIP, noise_multiplier=noise / math.sqrt(ACCUMULATE),
                                        gradient_accumulation_steps=ACCUMULATE, learning_rate=LR)  # fmt: skip
        model.compile(optimizer=optimizer, loss=per_example_loss())
        return model

    model = reused(build)

    def train(data, seed, init_seed=None):
        return fit(model(init_seed, seed), data, -(-batch // ACCUMULATE), epochs)

    return entry(claim(noise, batch, epochs), train)
