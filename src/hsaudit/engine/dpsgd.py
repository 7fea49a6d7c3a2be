"""The DP-SGD layer of the trained-model audits (Cebere et al. 2025, Eq. 2 and Algorithm 4), model-agnostic.

One audit trains R models that share a fixed, known minibatch schedule B_1..B_T (:class:`Setup`) and usually θ0;
the only randomness between them is the DP noise and the membership bit b. Every model follows

    θ_{t+1} = θ_t − (η/B) (Σ_{x∈B_t} clip(∇ℓ(θ_t; x), C) + [b ∧ t % k = 0] ∇* + Z_t),   Z_t ~ N(0, σ²C²I)

with steps t = 1..T (1-based), B the nominal batch size in both worlds [inferred from Cebere et al. 2025], clip(g, C) =
g · min(1, C / (‖g‖ + 10⁻⁶)) (Opacus' formula), and, for a canary insertion, the canary sample appended to the
batch at insertion steps of inserted runs (clipped like any sample) instead of ∇*.

This module knows nothing of datasets, figures or particular adversaries. It is given

- a per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`: ``clipped_sum``, ``loss``,
  ``grad_norms``),
- the insertion: a crafted gradient ∇* ``[p]`` or a canary sample ``(x*, y*)``, and the membership mask ``[m]``;
  or a per-model inserted gradient ``[m, p]`` (several gradient canaries per model, each with its own bit),
- the noise: standard normals keyed by (noise key, global model index, step) from :mod:`hsaudit.engine.noise`, drawn
  on the models' device, so a model's noise never depends on the shard size, the chunking or the order of work,
- observers: functions ``θ [m, p] -> [m]`` evaluated after every insertion step (the adversary's score), and
  optionally the unclipped gradient norm of the canary at every step (Cebere et al. Fig. 8).

With ``DPSGDConfig(sampling=Poisson(q))`` the schedule is replaced by Poisson subsampling (Steinke, Nasr et al. 2025,
Alg. 1; :func:`run_poisson`): every model draws its own batch at every step, the canary of an inserted model is
drawn with probability q, the update is normalised by the expected batch size B = qN as Opacus does, and an
optional regulariser gradient is added unclipped.

:func:`train_population` keeps everything on the device: the parameters ``[m, p]`` are updated in place, the
observations are written into preallocated device tensors and copied to the host once, at the end. Adversaries
(:mod:`hsaudit.experiments.cebere.train.adversaries`) build the insertion and the scorer; :mod:`hsaudit.experiments.cebere.train.shards` trains one shard.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.util.io import atomic_savez
from hsaudit.engine.architectures import WSConv2d, flat_parameters
from hsaudit.engine.models import ModelSpec, require_spec
from hsaudit.engine.noise import CounterNoise, counter_normals
from hsaudit.engine.sampling import Poisson, PoissonSampler, slot_weights
from hsaudit.util.seeding import derive_seed, rng_for

THETA0_SCHEMES = ("default", "xavier_normal")
# Normalisation layers, whose scale θ0 sets to 1 under "xavier_normal": torch's _NormBase covers BatchNorm,
# SyncBatchNorm, InstanceNorm and their lazy forms; GroupNorm, LayerNorm and RMSNorm (torch >= 2.4) derive from
# Module directly.
_NORM_LAYERS = (torch.nn.modules.batchnorm._NormBase, torch.nn.GroupNorm, torch.nn.LayerNorm) + tuple(
    getattr(torch.nn, name) for name in ("RMSNorm",) if hasattr(torch.nn, name)
)


@dataclass(frozen=True)
class DPSGDConfig:
    """Hyper-parameters of one DP-SGD audit (Cebere et al. Table 2).

    Attributes:
        steps: T, number of DP-SGD steps.
        batch_size: B, the fixed minibatch size (also the normaliser in both worlds).
        lr: η, learning rate.
        clip_norm: C, per-sample clipping norm.
        noise_multiplier: σ; the noise is N(0, σ²C²I).
        period: k; insertion at steps t (1-based) with ``t % k == 0`` (T // k insertions).
        sampling: ``None`` (default): the fixed schedule of a :class:`Setup`; :class:`~hsaudit.engine.sampling.Poisson`:
            Poisson subsampling with rate q (Steinke et al. Alg. 1; :func:`run_poisson`), where ``batch_size`` is
            the expected batch size qN that normalises the update (Opacus' ``expected_batch_size``) and the canary
            is inserted at a step ``t % k == 0`` with probability q.
    """

    steps: int
    batch_size: int
    lr: float
    clip_norm: float
    noise_multiplier: float
    period: int = 1
    sampling: Poisson | None = None

    def __post_init__(self) -> None:
        if int(self.steps) != self.steps or self.steps < 1:
            raise ValueError(f"steps must be a positive integer, got {self.steps}")
        if int(self.batch_size) != self.batch_size or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not (math.isfinite(self.clip_norm) and self.clip_norm > 0):
            raise ValueError(f"clip_norm must be > 0, got {self.clip_norm}")
        if not (math.isfinite(self.noise_multiplier) and self.noise_multiplier >= 0):
            raise ValueError(f"noise_multiplier must be >= 0, got {self.noise_multiplier}")
        if int(self.period) != self.period or not 1 <= self.period <= self.steps:
            raise ValueError(f"period must be an integer in [1, steps={self.steps}], got {self.period}")
        if self.sampling is not None and not isinstance(self.sampling, Poisson):
            raise ValueError(f"sampling must be None (fixed batches) or a Poisson value, got {self.sampling!r}")

    @property
    def insertion_steps(self) -> np.ndarray:
        """The 1-based steps t with ``t % period == 0`` (where scores are recorded)."""
        return np.arange(self.period, self.steps + 1, self.period, dtype=np.int64)


@dataclass(frozen=True)
class Setup:
    """What every run of one audit shares (known to the adversary).

    Attributes:
        theta0: the initial parameters, flat float32 ``[p]`` (order of ``model.parameters()``).
        batches: int64 ``[steps, batch_size]``, indices into the training set; row ``t - 1`` is B_t.
    """

    theta0: np.ndarray
    batches: np.ndarray

    def __post_init__(self) -> None:
        if np.ndim(self.theta0) != 1:
            raise ValueError(f"theta0 must be 1-D, got shape {np.shape(self.theta0)}")
        if np.ndim(self.batches) != 2:
            raise ValueError(f"batches must be 2-D [steps, batch_size], got shape {np.shape(self.batches)}")


def make_setup(
    *, spec: ModelSpec, n_train: int, config: DPSGDConfig, seed: int, theta0_init: str = "default"
) -> Setup:
    """Draw θ0 (``theta0_init``: PyTorch's default initialisation, or ``"xavier_normal"`` as :func:`init_theta0`)
    and the fixed minibatch schedule of an audit.

    The schedule is a sequence of epochs; each epoch is a fresh random permutation of the ``n_train`` indices cut
    into ``n_train // batch_size`` batches (the remainder is dropped, so no index repeats inside a batch).
    θ0 and the schedule have separate streams derived from ``seed``.

    Raises:
        ValueError: if ``spec`` is not a :class:`~hsaudit.engine.models.ModelSpec` or ``n_train < batch_size``.
    """
    spec = require_spec(spec, "spec")
    n_train = int(n_train)
    if n_train < config.batch_size:
        raise ValueError(f"n_train must be >= batch_size={config.batch_size}, got {n_train}")
    if theta0_init == "default":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derive_seed(seed, "theta0"))
            net = spec.build()
        theta0 = flat_parameters(net).numpy().astype(np.float32)
    else:
        theta0 = init_theta0(spec, scheme=theta0_init, seed=derive_seed(seed, "theta0"))
    rng = rng_for(seed, "batches")
    per_epoch = n_train // config.batch_size
    rows: list[np.ndarray] = []
    while len(rows) < config.steps:
        perm = rng.permutation(n_train)
        rows.extend(perm[: per_epoch * config.batch_size].reshape(per_epoch, config.batch_size))
    batches = np.stack(rows[: config.steps]).astype(np.int64)
    return Setup(theta0=theta0, batches=batches)


def save_setup(setup: Setup, path: str | os.PathLike) -> None:
    """Write ``setup`` to an ``.npz`` file atomically (temporary name, then rename)."""
    atomic_savez(path, {"theta0": setup.theta0, "batches": setup.batches})


def load_setup(path: str | os.PathLike) -> Setup:
    """Read a :class:`Setup` written by :func:`save_setup`."""
    with np.load(path) as data:
        return Setup(theta0=data["theta0"].astype(np.float32), batches=data["batches"].astype(np.int64))


def init_theta0(spec: ModelSpec, *, scheme: str = "default", seed: int, bias: float = 0.0) -> np.ndarray:
    """One initialisation θ0 ``[p]`` (float32) drawn from ``seed``.

    ``scheme``: ``"default"`` (PyTorch's layer defaults, as :func:`make_setup`) or ``"xavier_normal"`` (Glorot
    normal weights for every parameter with ≥ 2 dimensions, biases and norm offsets set to ``bias``, unit scales
    for every normalisation layer, recognised by its module type: BatchNorm, InstanceNorm, GroupNorm, LayerNorm,
    RMSNorm) — the "unknown θ0" of Cebere et al. Fig. 12 [inferred: the paper says "Xavier initialisation"; bias 0]
    and the θ_avg of Yoon et al. (bias 0.01, docs/yoon.md). ``bias`` is ignored by ``"default"``.
    """
    spec = require_spec(spec, "spec")
    if scheme not in THETA0_SCHEMES:
        raise ValueError(f"scheme must be one of {THETA0_SCHEMES}, got {scheme!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed) % 2**63)
        net = spec.build()
        if scheme == "xavier_normal":
            # A parameter's owner decides its role, not its name: ResNet18-GN's shortcut GroupNorm is
            # ``layers.2.shortcut.1``, whose scale a name test ("norm" in the name) would have zeroed.
            norm_params = {
                id(param)
                for module in net.modules()
                for pname, param in module.named_parameters(recurse=False)
                if (isinstance(module, _NORM_LAYERS) and pname == "weight")
                or (isinstance(module, WSConv2d) and pname == "gain")  # a weight-standardised conv's scale
            }
            with torch.no_grad():
                for param in net.parameters():  # model.parameters() order, as before: the same Xavier draws
                    if param.dim() >= 2:
                        torch.nn.init.xavier_normal_(param)
                    elif id(param) in norm_params:
                        param.fill_(1.0)
                    else:
                        param.fill_(float(bias))
    return flat_parameters(net).numpy().astype(np.float32)


def population_theta0(spec: ModelSpec, *, scheme: str, key: int, models: range | npt.ArrayLike) -> np.ndarray:
    """Per-model initialisations ``[m, p]``: model ``i`` (global index) gets :func:`init_theta0` seeded by (key, i).

    Like the noise, model i's θ0 does not depend on the shard it is trained in.
    """
    return np.stack(
        [init_theta0(spec, scheme=scheme, seed=derive_seed(key, "theta0", int(i))) for i in models]
    )


def model_noise(key: int, index: int, steps: int, dim: int) -> np.ndarray:
    """The standard normals ``[steps, dim]`` (float32) that global model ``index`` draws under noise key ``key``.

    :func:`train_population` multiplies them by σC. Exposed so that the reference trainer replays them.
    """
    idx = torch.tensor([int(index)])
    return torch.cat([counter_normals(key, idx, t, dim) for t in range(1, steps + 1)]).numpy()


def pick_device(device: str | None = None) -> torch.device:
    """``device`` as a :class:`torch.device`; ``None`` or ``"auto"`` means CUDA when available, else the CPU."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def check_data(spec: ModelSpec, X: npt.ArrayLike, y: npt.ArrayLike, setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    """Validate a training set against the architecture and the batch schedule; return float32 X, int64 y.

    Raises:
        ValueError: naming the inconsistent shape or value.
    """
    spec = require_spec(spec, "spec")
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    shape = spec.input_shape
    if X.ndim != 1 + len(shape) or any(s is not None and s != got for s, got in zip(shape, X.shape[1:])):
        want = ", ".join("*" if s is None else str(s) for s in shape)
        raise ValueError(f"X must have shape [n, {want}] for {spec.name!r}, got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape [{X.shape[0]}], got {y.shape}")
    k = spec.classes
    if y.size and (y.min() < 0 or y.max() >= k or not np.all(y == np.round(y))):
        raise ValueError(f"y must hold integer labels in [0, {k - 1}], got values in [{y.min()}, {y.max()}]")
    if setup.batches.size and (setup.batches.min() < 0 or setup.batches.max() >= X.shape[0]):
        raise ValueError(f"setup.batches index rows outside X (n = {X.shape[0]}), max {setup.batches.max()}")
    return X, y.astype(np.int64)


def run_population(
    engine,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    batches: np.ndarray,
    *,
    lr: float,
    batch_size: int,
    clip: float | None,
    sigma: float,
    period: int,
    mask: torch.Tensor | None = None,
    gradient: torch.Tensor | None = None,
    canary: tuple[torch.Tensor, torch.Tensor] | None = None,
    noise: Callable[[int], torch.Tensor] | None = None,
    on_step: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None,
    before_step: Callable[[int, torch.Tensor], None] | None = None,
    progress: bool = False,
    desc: str = "DP-SGD",
) -> torch.Tensor:
    """The DP-SGD loop (Cebere et al. 2025, Eq. 2), in place on one ``[models, p]`` tensor; no host synchronisation.

    Args:
        engine: a per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`).
        theta0: ``[models, p]`` starting parameters (not modified; rows may differ: per-model θ0).
        X, y: training set on the engine's device.
        batches: ``[steps, batch]`` indices (row t-1 is B_t).
        lr, batch_size: η and the normaliser B.
        clip: C, or ``None`` for no clipping (the noiseless simulation of A_GC-S).
        sigma: noise multiplier; the noise added to the clipped sum is ``sigma * C * noise(t)``.
        period: k; insertion at steps with ``t % k == 0``.
        mask: ``[models]`` float, 1 where the run is inserted (b = 1); required with a canary or a ``[p]``
            gradient, and must be ``None`` with a per-model ``[models, p]`` gradient.
        gradient: ∇* ``[p]`` added to the clipped sum of inserted runs (``mask``) at insertion steps; or a
            per-model inserted gradient ``[models, p]`` added as it is (row i to model i) at insertion steps, e.g.
            Σ_j b_ij ∇*_j for m gradient canaries per model with their own bits (audits in one training run,
            :mod:`hsaudit.experiments.one_run.train`). The ``[p]`` path is unchanged (``addr_``).
        canary: ``(x*, y*)`` (batch of one) appended to the batch of inserted runs at insertion steps.
        noise: ``t -> [models, p]`` standard normals (required when ``sigma > 0``), e.g.
            :class:`hsaudit.engine.noise.CounterNoise`.
        on_step: called as ``on_step(t, theta_after, step)`` after every update, ``step = θ_{t+1} − θ_t``
            (a temporary: copy what you keep).
        before_step: called as ``before_step(t, theta)`` before step t's update (θ_t).
        progress: show a tqdm bar.

    Returns:
        θ_T, ``[models, p]`` (a new tensor).
    """
    theta = theta0.clone()
    steps = batches.shape[0]
    scale = float(sigma) * (1.0 if clip is None else float(clip))
    if scale > 0 and noise is None:
        raise ValueError("noise is required when sigma > 0")
    per_model = gradient is not None and gradient.dim() == 2
    if per_model:
        if gradient.shape != theta.shape:
            raise ValueError(f"a per-model gradient must have shape {tuple(theta.shape)}, got {tuple(gradient.shape)}")
        if mask is not None or canary is not None:
            raise ValueError("a per-model gradient [models, p] carries its own bits: give no mask and no canary")
    elif (gradient is not None or canary is not None) and mask is None:
        raise ValueError("mask is required with an insertion (gradient or canary)")
    m = theta.shape[0]
    weights_canary = None
    if canary is not None:
        weights_canary = torch.ones((m, batches.shape[1] + 1), dtype=theta.dtype, device=theta.device)
        weights_canary[:, -1] = mask
    iterator = range(1, steps + 1)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc=desc, unit="step", leave=False)
    batches_t = torch.as_tensor(batches, device=X.device)
    factor = -float(lr) / float(batch_size)
    for t in iterator:
        if before_step is not None:
            before_step(t, theta)
        idx = batches_t[t - 1]
        xb, yb = X[idx], y[idx]
        inserting = t % period == 0
        weights = None
        if canary is not None and inserting:
            xb, yb = torch.cat([xb, canary[0]]), torch.cat([yb, canary[1]])
            weights = weights_canary
        g = engine.clipped_sum(theta, xb, yb, clip, weights)
        if gradient is not None and inserting:
            if per_model:
                g.add_(gradient)
            else:
                g.addr_(mask.to(g.dtype), gradient)
        if scale > 0:
            g.add_(noise(t), alpha=scale)
        g.mul_(factor)
        theta.add_(g)
        if on_step is not None:
            on_step(t, theta, g)
    return theta


_GATHER_BUDGET = 256 * 2**20  # bytes of gathered per-model batches [chunk, B_max, ...] per backend call
_POISSON_CHUNK = 64  # models per backend call under Poisson sampling, sorted by batch size (padding ≈ spread)


def _gather(values: torch.Tensor, index: torch.Tensor, transposed: torch.Tensor | None = None) -> torch.Tensor:
    """``values[index]`` (rows of ``values`` at a 2-D index) as one ``index_select`` of the flattened index; with
    ``transposed`` (= ``values.T.contiguous()``, 2-D values) gathered from its rows, the same values as a view
    ``[*index.shape, features]`` of a ``[features, *index.shape]`` tensor."""
    flat = index.reshape(-1)
    if transposed is not None:
        return transposed.index_select(1, flat).view(transposed.shape[0], *index.shape).permute(1, 2, 0)
    return values.index_select(0, flat).view(*index.shape, *values.shape[1:])


def run_poisson(
    engine,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    sampler: PoissonSampler,
    *,
    steps: int,
    lr: float,
    batch_size: float,
    clip: float | None,
    sigma: float,
    gradient: torch.Tensor | None = None,
    canary: tuple[torch.Tensor, torch.Tensor] | None = None,
    noise: Callable[[int], torch.Tensor] | None = None,
    regulariser: Callable[[torch.Tensor], torch.Tensor] | None = None,
    included: torch.Tensor | None = None,
    on_step: Callable[[int, torch.Tensor, torch.Tensor], None] | None = None,
    before_step: Callable[[int, torch.Tensor], None] | None = None,
    progress: bool = False,
    desc: str = "DP-SGD (Poisson)",
) -> torch.Tensor:
    """DP-SGD with Poisson subsampling (Steinke, Nasr et al. 2025, Alg. 1), in place on one ``[models, p]`` tensor.

    Every model i follows, with B_t^i its own Poisson batch (``sampler``) and c_t^i ∈ {0, 1} its canary draw,

        θ_t = θ_{t−1} − η [ (Σ_{x∈B_t^i} clip(∇ℓ(θ_{t−1}; x), C) + c_t^i ∇* + σ C ξ_t) / B + ∇r(θ_{t−1}) ],

    B the expected batch size qN. The clipped sum and the noise are normalised by B exactly as Opacus' DPOptimizer
    with ``expected_batch_size = B`` does; the regulariser's gradient is neither clipped nor normalised: it is
    what ``torch.optim.SGD`` adds after Opacus has normalised the gradient (for r(θ) = α‖θ‖²/2, ∇r = αθ is
    ``SGD(weight_decay=α)``). Steinke et al.'s unnormalised update (step size η_S, regulariser r_S) is the case
    η = η_S·B, ∇r = ∇r_S / B. An input canary (x*, y*) is one more sample of the batch when drawn, clipped like any
    other; a gradient canary ∇* is added unclipped.

    Every model has its own batch, so the backends get per-model batches ``[models, B_max, ...]`` padded with weight
    0 (``engine.clipped_sum_per_model``). The models are sorted by batch size and cut into chunks of at most
    :data:`_POISSON_CHUNK` (fewer where the gathered inputs would exceed :data:`_GATHER_BUDGET`), each padded only
    to its own largest batch: with m models the padding is the spread of neighbouring batch sizes, not
    max − mean (≈ 3√(qN) for 1,000 models).

    Args:
        engine: a per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`).
        theta0: ``[models, p]`` starting parameters (not modified).
        X, y: training set on the engine's device (the sampler's ``n`` examples).
        sampler: the models' Poisson batches (:class:`hsaudit.engine.sampling.PoissonSampler`); with an input
            canary it must pack the canary as example ``n`` (``canary_in_batch=True``).
        steps: T.
        lr, batch_size: η and the normaliser B.
        clip: C, or ``None`` for no clipping.
        sigma: noise multiplier (noise ``sigma * C * noise(t)``).
        gradient: ∇* ``[p]``, added where the sampler's canary draw is 1.
        canary: ``(x*, y*)`` (batch of one), in the batch where the sampler's canary draw is 1.
        noise: ``t -> [models, p]`` standard normals (required when ``sigma > 0``).
        regulariser: ``θ [models, p] -> ∇r(θ) [models, p]``, evaluated at θ_{t−1}, not clipped.
        included: optional bool ``[models, steps]`` (device) filled with the canary draws c_t.
        on_step, before_step, progress, desc: as :func:`run_population`.

    Returns:
        θ_T, ``[models, p]`` (a new tensor).
    """
    theta = theta0.clone()
    scale = float(sigma) * (1.0 if clip is None else float(clip))
    if scale > 0 and noise is None:
        raise ValueError("noise is required when sigma > 0")
    if gradient is not None and canary is not None:
        raise ValueError("give a gradient canary or an input canary, not both")
    if sampler.n != X.shape[0]:
        raise ValueError(f"the sampler draws from n = {sampler.n} examples, X has {X.shape[0]}")
    if canary is not None:
        if not sampler.canary_in_batch:
            raise ValueError("an input canary needs a sampler with canary_in_batch=True and a mask")
        X, y = torch.cat([X, canary[0]]), torch.cat([y, canary[1]])
    m = theta.shape[0]
    sample_bytes = X[:1].numel() * X.element_size()
    # for a backend that computes feature-major (mlp), narrow tabular inputs are gathered from the rows of X.T:
    # the batches reach it as a [models, B, features] view of a [features, models, B] tensor, so that it copies
    # contiguous rows instead of transposing [models, B, 8] (FCNN: ~3 ms of a 1,000-model step); the same values
    feature_major = getattr(engine, "feature_major_batches", False) and X.dim() == 2 and X.shape[1] <= 64
    x_rows = X.T.contiguous() if feature_major else None
    iterator = range(1, int(steps) + 1)
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(iterator, desc=desc, unit="step", leave=False)
    factor = -float(lr) / float(batch_size)
    for t in iterator:
        if before_step is not None:
            before_step(t, theta)
        batch = sampler(t)
        b_max = batch.index.shape[1]
        chunk = max(1, min(m, _POISSON_CHUNK, _GATHER_BUDGET // (b_max * sample_bytes)))
        if chunk >= m:
            weight = batch.weight.to(theta.dtype)
            g = engine.clipped_sum_per_model(
                theta, _gather(X, batch.index, x_rows), _gather(y, batch.index), clip, weight, batch.counts
            )
        else:
            # the models sorted by batch size (a stable sort: ties keep the model order), permuted once; every
            # chunk is then a contiguous block of rows, gathered with index_select (3-4× faster than X[idx])
            order = sorted(range(m), key=batch.counts.__getitem__)
            perm = torch.as_tensor(order, device=theta.device)
            index, theta_s = batch.index.index_select(0, perm), theta.index_select(0, perm)
            g_s = torch.empty_like(theta)
            for m0 in range(0, m, chunk):
                counts = [batch.counts[i] for i in order[m0 : m0 + chunk]]
                width = max(1, counts[-1])
                idx = index[m0 : m0 + chunk, :width]
                weight = slot_weights(counts, width, theta.device).to(theta.dtype)  # batch.weight's rows
                g_s[m0 : m0 + chunk] = engine.clipped_sum_per_model(
                    theta_s[m0 : m0 + chunk], _gather(X, idx, x_rows), _gather(y, idx), clip, weight, counts
                )
            g = torch.empty_like(theta).index_copy_(0, perm, g_s)
        if gradient is not None:
            g.addr_(batch.canary.to(g.dtype), gradient)
        if scale > 0:
            g.add_(noise(t), alpha=scale)
        g.mul_(factor)
        if regulariser is not None:
            reg = regulariser(theta)
            if reg.shape != theta.shape:
                raise ValueError(f"regulariser must return {tuple(theta.shape)}, got {tuple(reg.shape)}")
            g.sub_(reg, alpha=float(lr))
        theta.add_(g)
        if included is not None:
            included[:, t - 1] = batch.canary
        if on_step is not None:
            on_step(t, theta, g)
    return theta


@dataclass(frozen=True)
class Observations:
    """What :func:`train_population` recorded, on the host.

    Attributes:
        scores: float64 ``[models, T // k]``, the observer's value after every insertion step (``None`` without one).
        grad_norms: float64 ``[models, T]``, the canary's unclipped gradient norm at θ_t before step t
            (``None`` unless asked).
        theta: float32 ``[models, p]``, the final models (``None`` unless asked).
        canary_steps: bool ``[models, T]``, whether the canary was in model i's batch at step t (Poisson sampling
            with an insertion only, else ``None``).
    """

    scores: np.ndarray | None
    grad_norms: np.ndarray | None = None
    theta: np.ndarray | None = None
    canary_steps: np.ndarray | None = None


def train_population(
    *,
    engine,
    theta0: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    batches: np.ndarray | None,
    config: DPSGDConfig,
    noise_key: int,
    models: range | npt.ArrayLike,
    mask: torch.Tensor | None = None,
    gradient: torch.Tensor | None = None,
    canary: tuple[torch.Tensor, torch.Tensor] | None = None,
    sampling_key: int | None = None,
    regulariser: Callable[[torch.Tensor], torch.Tensor] | None = None,
    observe: Callable[[torch.Tensor], torch.Tensor] | None = None,
    canary_norms: bool = False,
    keep_final: bool = False,
    progress: bool = False,
    desc: str = "DP-SGD",
) -> Observations:
    """Train a population with DP-SGD and record its observations on the device (copied once at the end).

    Args:
        engine: per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`) on the models' device.
        theta0: ``[p]`` (shared θ0) or ``[models, p]`` (per-model θ0), on the device.
        X, y: training set on the device.
        batches: the fixed schedule ``[T, B]`` (``None`` under Poisson sampling).
        config: DP-SGD hyper-parameters; ``config.sampling`` chooses the fixed schedule (:func:`run_population`)
            or Poisson subsampling (:func:`run_poisson`).
        noise_key: key of the counter-based noise (:mod:`hsaudit.engine.noise`).
        models: the global indices of the models (their noise and sampling streams), e.g.
            ``range(first, first + m)``.
        mask, gradient, canary: the insertion (see :func:`run_population`; under Poisson sampling the canary of
            an inserted model is drawn with probability q at every insertion step, :func:`run_poisson`). A
            per-model gradient ``[models, p]`` (m gradient canaries per model, mask ``None``) needs the fixed
            schedule.
        sampling_key: key of the Poisson draws (:mod:`hsaudit.engine.sampling`); required under Poisson sampling,
            and should differ from ``noise_key`` (the streams are domain-separated anyway).
        regulariser: ``θ [m, p] -> ∇r(θ) [m, p]``, unclipped (Poisson sampling only; :func:`run_poisson`).
        observe: ``θ [m, p] -> [m]``, evaluated after every insertion step (the adversary's score).
        canary_norms: record ``engine.grad_norms`` of the canary at every step (needs ``canary``).
        keep_final: also return θ_T.
        progress: tqdm bar over the steps.

    Returns:
        :class:`Observations`.
    """
    dev = X.device
    idx = torch.as_tensor(np.asarray(list(models) if isinstance(models, range) else models), dtype=torch.int64)
    m = idx.numel()
    if theta0.dim() == 1:
        theta0 = theta0[None].expand(m, -1)
    if theta0.shape[0] != m:
        raise ValueError(f"theta0 has {theta0.shape[0]} rows for {m} models")
    if mask is not None and mask.shape != (m,):
        raise ValueError(f"mask must have shape ({m},), got {tuple(mask.shape)}")
    if gradient is not None and gradient.dim() == 2 and config.sampling is not None:
        raise ValueError("a per-model gradient [models, p] needs the fixed schedule (config.sampling = None)")
    if canary_norms and canary is None:
        raise ValueError("canary_norms needs a canary")
    poisson = config.sampling
    if poisson is None and (regulariser is not None or sampling_key is not None):
        raise ValueError("regulariser and sampling_key need config.sampling = Poisson(q)")
    if poisson is not None and sampling_key is None:
        raise ValueError("Poisson sampling needs a sampling_key")
    if poisson is None and batches is None:
        raise ValueError("a fixed schedule needs batches")
    if poisson is not None and batches is not None:
        raise ValueError("batches must be None under Poisson sampling (every model draws its own)")
    n_obs = config.steps // config.period
    scores = torch.empty((m, n_obs), dtype=torch.float64, device=dev) if observe is not None else None
    norms = torch.empty((m, config.steps), dtype=torch.float64, device=dev) if canary_norms else None

    def record(t: int, theta: torch.Tensor, _step: torch.Tensor) -> None:
        if t % config.period == 0:
            scores[:, t // config.period - 1] = observe(theta)

    def record_norm(t: int, theta: torch.Tensor) -> None:
        norms[:, t - 1] = engine.grad_norms(theta, canary[0], canary[1])[:, 0]

    noise = None
    if config.noise_multiplier > 0:
        noise = CounterNoise(noise_key, idx.to(dev), engine.p, dev)
    if poisson is not None:
        n = X.shape[0]
        if abs(poisson.expected_batch_size(n) - config.batch_size) >= 1:
            warnings.warn(
                f"batch_size = {config.batch_size} normalises the update, but the expected batch size is "
                f"qN = {poisson.expected_batch_size(n):.6g}",
                stacklevel=2,
            )
        inserting = gradient is not None or canary is not None
        if inserting and mask is None:
            raise ValueError("mask is required with an insertion (gradient or canary)")
        sampler = PoissonSampler(
            sampling_key,
            idx.to(dev),
            n=n,
            rate=poisson.rate,
            mask=mask if inserting else None,
            canary_in_batch=canary is not None,
            period=config.period,
            device=dev,
        )
    # What both loops take alike; they differ in how batches are formed (a fixed schedule or each model's draws).
    common = dict(
        lr=config.lr,
        batch_size=config.batch_size,
        clip=config.clip_norm,
        sigma=config.noise_multiplier,
        gradient=gradient,
        canary=canary,
        noise=noise,
        on_step=record if observe is not None else None,
        before_step=record_norm if canary_norms else None,
        progress=progress,
        desc=desc,
    )
    included = None
    if poisson is not None:
        included = torch.zeros((m, config.steps), dtype=torch.bool, device=dev) if inserting else None
        final = run_poisson(
            engine, theta0, X, y, sampler, steps=config.steps, regulariser=regulariser, included=included, **common
        )
    else:
        final = run_population(engine, theta0, X, y, batches, period=config.period, mask=mask, **common)
    return Observations(
        scores=None if scores is None else scores.cpu().numpy(),
        grad_norms=None if norms is None else norms.cpu().numpy(),
        theta=final.cpu().numpy() if keep_final else None,
        canary_steps=None if included is None else included.cpu().numpy(),
    )
