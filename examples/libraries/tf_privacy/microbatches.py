"""``DPKerasSGDOptimizer`` with ``num_microbatches`` < the batch: microbatches of 4 examples, each microbatch's mean
gradient clipped to C. ``fit`` needs ``num_microbatches`` to divide every batch, so the batch is the same in both
worlds: replace-one, also in the audit setting (B = N). The claim is ``compute_dp_sgd_privacy_statement`` with
``used_microbatching=True`` (TF Privacy #620: it halves σ, the sensitivity 2C of a microbatch's mean), which is the
replace-one ε of per-example clipping that hsaudit computes for the declared mechanism. Its audit needs replace-one's
worst case, a matched pair: the opposing canary replacing its opposite on a blank background (config.yaml's row; x0's
feature 7 is where the row's θ0, from ``--seed``, gives both rows a clipped gradient):

    hsaudit audit-training --entry examples/libraries/tf_privacy/microbatches.py:make --audit-setting
        --setting-neighbouring replace-one --canary opposing --background blank --canary-option replaced=opposite
        --canary-option amplitude=10 --canary-option feature=7 --seed 2031119053
"""

from tf_common import CLIP, LR, N, DPKerasSGDOptimizer, claim, config, entry, fit, layers, per_example_loss, reused, tf

MICROBATCH = 4  # examples per microbatch


def make(setting=None):
    epochs, noise, batch = config(setting)
    batch = min(batch, N)  # one batch of all N in the audit setting

    def build():
        model = tf.keras.Sequential(layers())
        optimizer = DPKerasSGDOptimizer(l2_norm_clip=CLIP, noise_multiplier=noise,
                                        num_microbatches=batch // MICROBATCH, learning_rate=LR)  # fmt: skip
        model.compile(optimizer=optimizer, loss=per_example_loss())
        return model

    model = reused(build)

    def train(data, seed, init_seed=None):
        return fit(model(init_seed, seed), data, batch, epochs)

    return entry(claim(noise, batch, epochs, microbatching=True, replace_one=True), train)
