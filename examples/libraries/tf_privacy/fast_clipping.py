"""``DPSequential`` with a layer registry: TF Privacy's fast ("ghost norm") clipping, the per-example gradient norms
from each Dense layer's inputs and output gradients, a plain ``SGD`` and a reduced loss, as its docstring shows. The
claim is ``compute_dp_sgd_privacy_statement`` without microbatching (``num_microbatches=None``). ``use_xla=False``:
with the default (True) the same seed gives different models (XLA's random numbers ignore TensorFlow's seeds), which
hsaudit's determinism check refuses; without XLA it draws the same noise as per_example.py.

    hsaudit audit-training --entry examples/libraries/tf_privacy/fast_clipping.py:make --audit-setting
"""

from tf_common import CLIP, LR, DPSequential, claim, config, entry, fit, layer_registry, layers, reused, tf


def make(setting=None):
    epochs, noise, batch = config(setting)

    def build():
        model = DPSequential(l2_norm_clip=CLIP, noise_multiplier=noise, num_microbatches=None, use_xla=False,
                             layer_registry=layer_registry.make_default_layer_registry(), layers=layers())
        model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=LR),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))  # fmt: skip
        return model

    model = reused(build)

    def train(data, seed, init_seed=None):
        return fit(model(init_seed, seed), data, batch, epochs)

    return entry(claim(noise, batch, epochs), train)
