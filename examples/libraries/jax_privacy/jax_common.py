"""What the JAX Privacy configurations of examples/libraries/jax_privacy/ share: the data, the model, the DP-SGD
step and the claim of JAX Privacy's own accountant. JAX only: no torch here (docs/byo.md, "The contract": ``train``
returns the params pytree, ``loss(params, x, y)`` is per-example on NumPy inputs).

The step is JAX Privacy 2.x's raw-JAX path: ``jax_privacy.clipped_grad`` (per-example clipping to C, summed, divided
by the expected batch size), ``noise_addition.gaussian_privatizer`` (N(0, (σ · sensitivity)²) on that, its key from
``seed``), then an optax SGD update; batches are Poisson samples of ``batch_selection.CyclicPoissonSampling``, padded to a multiple of 8
(padding rows are zeroed by ``is_padding_example``, as JAX Privacy's examples do). The claim is
``accounting.DpsgdTrainingAccountant`` with the PLD accountant (what its Keras API configures).

The audit setting (``make(setting)``, docs/byo.md): ``setting.steps`` steps at ``setting.noise_multiplier`` with
sampling probability ``setting.sample_rate`` (1: the full batch, in both worlds). Outside it, the script's own
configuration (expected batch 24 of N = 240, 3 epochs). θ0 comes from ``init_seed``, everything else (the batches
and the noise key) from ``seed``.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax_privacy import accounting, batch_selection, clipped_grad, noise_addition

N, FEATURES, HIDDEN, CLASSES = 240, 10, 16, 2
EPOCHS, NOISE, RATE, CLIP, LR, DELTA = 3, 1.0, 0.1, 1.0, 0.5, 1e-5
PADDING = 8  # batches are padded to a multiple of this: fewer shapes to compile


def dataset() -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian classes in 10 dimensions (fixed seed: the same data every call)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, CLASSES, N)
    x = (rng.standard_normal((N, FEATURES)) + (2.0 * y[:, None] - 1.0) * 0.5).astype(np.float32)
    return x, y


def init(key) -> dict:
    """An MLP 10-16-2: weights by LeCun normal, zero biases."""
    k1, k2 = jax.random.split(key)
    lecun = jax.nn.initializers.lecun_normal()
    return {"dense1": {"w": lecun(k1, (FEATURES, HIDDEN)), "b": jnp.zeros(HIDDEN)},
            "dense2": {"w": lecun(k2, (HIDDEN, CLASSES)), "b": jnp.zeros(CLASSES)}}  # fmt: skip


def predict(params, x):
    h = jax.nn.relu(jnp.asarray(x) @ params["dense1"]["w"] + params["dense1"]["b"])
    return h @ params["dense2"]["w"] + params["dense2"]["b"]


def loss(params, x, y):
    """Per-example cross-entropy (what hsaudit scores the canary with; shape [n])."""
    return optax.softmax_cross_entropy_with_integer_labels(predict(params, x), jnp.asarray(y))


def mean_loss(params, x, y):
    return loss(params, x, y).mean()


def config(setting=None) -> tuple[int, float, float]:
    """(steps, σ, q): the script's own (3 epochs of Poisson batches at q = 0.1), or the audit setting's. q is a
    whole expected batch qN (JAX Privacy's accountant takes an integer batch size)."""
    if setting is None:
        return round(EPOCHS / RATE), NOISE, RATE
    rate = setting.sample_rate if setting.sample_rate is not None else RATE
    return setting.steps, setting.noise_multiplier, max(round(rate * N), 1) / N


@functools.cache
def clipped_gradient(rate: float):
    """``jax_privacy.clipped_grad`` of the mean loss: per-example gradients clipped to C, summed, divided by the
    expected batch size qN (its ``sensitivity()`` is C/qN), and that function jitted (one compilation per batch
    shape and q, shared by every model of an audit)."""
    grad_fn = clipped_grad(mean_loss, l2_clip_norm=CLIP, batch_argnums=(1, 2), normalize_by=round(rate * N))
    return grad_fn, jax.jit(grad_fn)


def batches(n: int, rate: float, steps: int, rng: np.random.Generator):
    """JAX Privacy's Poisson batches (``CyclicPoissonSampling``, q = ``rate``), padded: (indices, is_padding)."""
    strategy = batch_selection.CyclicPoissonSampling(sampling_prob=rate, iterations=steps)
    for idx in strategy.batch_iterator(n, rng=rng):
        idx = batch_selection.pad_to_multiple_of(idx, PADDING)
        yield idx, idx == -1


def train_dp(data, seed, init_seed, steps, noise, rate, *, accumulate: int = 1, noise_fraction: float = 1.0):
    """DP-SGD on ``data.numpy``: ``steps`` noisy updates of N(0, (σ · sensitivity)²) noise (times
    ``noise_fraction``: 1 but for the planted control); with ``accumulate`` > 1 each update sums the clipped
    gradients of its Poisson batch split into ``accumulate`` minibatches (``split_and_pad_global_batch``) before
    its one noise draw."""
    x, y = data.numpy[:2]
    grad_fn, clipped = clipped_gradient(rate)
    params = init(jax.random.key(init_seed if init_seed is not None else seed))  # hsaudit: θ0 from init_seed
    stddev = noise * grad_fn.sensitivity() * noise_fraction
    privatizer = noise_addition.gaussian_privatizer(stddev=stddev, prng_key=seed)
    optimizer = optax.sgd(LR)
    noise_state, opt_state = privatizer.init(params), optimizer.init(params)
    rng = np.random.default_rng(seed)  # the batches
    for idx, pad in batches(len(x), rate, steps, rng):
        if accumulate == 1:
            grads = clipped(params, x[idx], y[idx], is_padding_example=pad)
        else:  # JAX Privacy's split of a global batch into fixed-size minibatches (the last one padded)
            size = -(-int((~pad).sum()) // accumulate)
            size += -size % PADDING
            grads = None
            for part in batch_selection.split_and_pad_global_batch(idx[~pad], max(size, PADDING)):
                g = clipped(params, x[part], y[part], is_padding_example=part == -1)
                grads = g if grads is None else jax.tree.map(jnp.add, grads, g)
        noisy, noise_state = privatizer.update(grads, noise_state)
        updates, opt_state = optimizer.update(noisy, opt_state)
        params = optax.apply_updates(params, updates)
    return params


def epsilon(noise: float, rate: float, steps: int, *, batch_size: int | None = None) -> float:
    """JAX Privacy's ε at DELTA: ``DpsgdTrainingAccountant`` (PLD) for ``steps`` updates of Poisson batches of
    expected size ``batch_size`` (default qN) at σ."""
    accountant = accounting.DpsgdTrainingAccountant(dp_accountant_config=accounting.PldAccountantConfig())
    params = accounting.DpParams(noise_multipliers=noise, num_samples=N, delta=DELTA,
                                 batch_size=batch_size if batch_size is not None else round(rate * N))  # fmt: skip
    return float(accountant.compute_epsilon(steps, params))


def claim(noise: float, rate: float, steps: int, *, epsilon_claimed: float | None = None) -> dict:
    """The claim: JAX Privacy's ε for (σ, q, T) unless given, and the mechanism it accounts."""
    eps = epsilon(noise, rate, steps) if epsilon_claimed is None else epsilon_claimed
    return dict(epsilon=eps, delta=DELTA, noise_multiplier=noise, max_grad_norm=CLIP, sampling="poisson",
                sample_rate=rate, steps=steps, neighbouring="add-remove",
                accountant="jax_privacy DpsgdTrainingAccountant (PLD)")  # fmt: skip


def entry(claimed: dict, train) -> SimpleNamespace:
    return SimpleNamespace(claim=claimed, train=train, loss=loss, predict=predict, dataset=dataset)
