"""Vectorised DP-SGD populations with gradient / canary insertion (Cebere et al. 2025, Eq. 2 and Algorithm 4).

One audit trains R models that share θ0 and a fixed, known minibatch schedule B_1..B_T (:class:`Setup`); the
only randomness between them is the DP noise and the membership bit b. Every model follows

    θ_{t+1} = θ_t − (η/B) (Σ_{x∈B_t} clip(∇ℓ(θ_t; x), C) + [b ∧ t % k = 0] ∇* + Z_t),   Z_t ~ N(0, σ²C²I)

with steps t = 1..T (1-based), B the nominal batch size in both worlds [inferred, spec §1], clip(g, C) =
g · min(1, C / (‖g‖ + 10⁻⁶)) (Opacus' formula), and, for the canary adversary A_L, the canary sample appended to
the batch at insertion steps of inserted runs (clipped like any sample) instead of ∇*.

:func:`train_shard` trains a whole shard at once: the parameters are one ``[models, p]`` tensor.

- FCNN (any ``fcnn`` variant): hand-derived per-sample gradients with batched matmuls. The per-sample norm is
  computed from the per-layer pieces without materialising ``[models, batch, p]``: for a linear layer the
  per-sample weight gradient is an outer product δ ⊗ z, so ‖δ ⊗ z‖² = ‖δ‖²‖z‖², and the clipped sum
  Σ_x s_x δ_x ⊗ z_x is one batched matmul.
- Other models (ConvNet, ResNet18-GN): ``torch.func`` — ``vmap`` over models of ``vmap(grad)`` over samples, in
  chunks of models × samples bounded by a memory budget.

Noise: model ``i`` of a shard draws its standard normals from its own generator, seeded with
``derive_seed(seed, "noise", i)`` (numpy PCG64, float32, consumed step after step), see :func:`model_noise`.
Its noise therefore does not depend on the shard size, the chunking, or the device (numpy draws on the CPU, so
CPU and CUDA runs see identical noise), and the reference trainer can be fed exactly the same noise.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.models import build_model, flat_parameters, input_shape, num_classes
from hsaudit.psg import MLPPopulation, population
from hsaudit.seeding import derive_seed, rng_for

if TYPE_CHECKING:  # pragma: no cover
    from hsaudit.adversaries import Crafted

_MIN_MODELS_PER_WORKER = 32  # smaller groups are not worth a thread
_MEMORY_BUDGET = 256 * 2**20  # bytes for noise chunks


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
    """

    steps: int
    batch_size: int
    lr: float
    clip_norm: float
    noise_multiplier: float
    period: int = 1

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


def make_setup(*, model: str, model_kwargs: dict, n_train: int, config: DPSGDConfig, seed: int) -> Setup:
    """Draw θ0 (PyTorch's default initialisation) and the fixed minibatch schedule of an audit.

    The schedule is a sequence of epochs; each epoch is a fresh random permutation of the ``n_train`` indices cut
    into ``n_train // batch_size`` batches (the remainder is dropped, so no index repeats inside a batch).
    θ0 and the schedule have separate streams derived from ``seed``.

    Raises:
        ValueError: if ``n_train < batch_size``.
    """
    n_train = int(n_train)
    if n_train < config.batch_size:
        raise ValueError(f"n_train must be >= batch_size={config.batch_size}, got {n_train}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "theta0"))
        net = build_model(model, **model_kwargs)
    theta0 = flat_parameters(net).numpy().astype(np.float32)
    rng = rng_for(seed, "batches")
    per_epoch = n_train // config.batch_size
    rows: list[np.ndarray] = []
    while len(rows) < config.steps:
        perm = rng.permutation(n_train)
        rows.extend(perm[: per_epoch * config.batch_size].reshape(per_epoch, config.batch_size))
    batches = np.stack(rows[: config.steps]).astype(np.int64)
    return Setup(theta0=theta0, batches=batches)


def _atomic_savez(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_setup(setup: Setup, path: str | os.PathLike) -> None:
    """Write ``setup`` to an ``.npz`` file atomically (temporary name, then rename)."""
    _atomic_savez(path, {"theta0": setup.theta0, "batches": setup.batches})


def load_setup(path: str | os.PathLike) -> Setup:
    """Read a :class:`Setup` written by :func:`save_setup`."""
    with np.load(path) as data:
        return Setup(theta0=data["theta0"].astype(np.float32), batches=data["batches"].astype(np.int64))


def model_noise(seed: int, index: int, steps: int, dim: int) -> np.ndarray:
    """The standard-normal noise ``[steps, dim]`` (float32) that model ``index`` of a shard seeded ``seed`` uses.

    :func:`train_shard` multiplies it by σC. Exposed so that the reference trainer can replay it.
    """
    rng = np.random.default_rng(derive_seed(seed, "noise", int(index)))
    return rng.standard_normal((steps, dim), dtype=np.float32)


class _NoiseStreams:
    """Per-model noise generators, drawn in chunks of steps (same numbers as :func:`model_noise`)."""

    def __init__(self, seed: int, models: int | range, dim: int, steps: int, device: torch.device) -> None:
        indices = range(models) if isinstance(models, int) else models
        self.rngs = [np.random.default_rng(derive_seed(seed, "noise", i)) for i in indices]
        self.dim, self.steps, self.device = dim, steps, device
        self.chunk = max(1, min(steps, _MEMORY_BUDGET // max(1, 4 * len(self.rngs) * dim)))
        self.start, self.block = 0, None

    def __call__(self, t: int) -> torch.Tensor:
        """Standard normals ``[models, dim]`` of step ``t`` (1-based; called with t = 1, 2, ... in order)."""
        i = t - 1
        if self.block is None or i >= self.start + self.block.shape[1]:
            n = min(self.chunk, self.steps - i)
            arr = np.stack([rng.standard_normal((n, self.dim), dtype=np.float32) for rng in self.rngs])
            self.block, self.start = torch.from_numpy(arr).to(self.device), i
        return self.block[:, i - self.start]


def pick_device(device: str | None = None) -> torch.device:
    """``device`` as a :class:`torch.device`; ``None`` means CUDA when available, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _check_data(model: str, model_kwargs: dict, X: npt.ArrayLike, y: npt.ArrayLike, setup: Setup):
    X = np.asarray(X, dtype=np.float32)
    y = np.asarray(y)
    shape = input_shape(model, **model_kwargs)
    if X.ndim != 1 + len(shape) or any(s is not None and s != got for s, got in zip(shape, X.shape[1:])):
        want = ", ".join("*" if s is None else str(s) for s in shape)
        raise ValueError(f"X must have shape [n, {want}] for {model!r}, got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape [{X.shape[0]}], got {y.shape}")
    k = num_classes(model, **model_kwargs)
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
    progress: bool = False,
    desc: str = "DP-SGD",
) -> torch.Tensor:
    """The DP-SGD loop shared by :func:`train_shard` and the adversaries' simulations (spec §1, Eq. 2).

    Args:
        engine: from :func:`population`.
        theta0: ``[models, p]`` starting parameters (not modified).
        X, y: training set on the engine's device.
        batches: ``[steps, batch]`` indices (row t-1 is B_t).
        lr, batch_size: η and the normaliser B.
        clip: C, or ``None`` for no clipping (the noiseless simulation of A_GC-S).
        sigma: noise multiplier; the noise added to the clipped sum is ``sigma * C * noise(t)``.
        period: k; insertion at steps with ``t % k == 0``.
        mask: ``[models]`` float, 1 where the run is inserted (b = 1).
        gradient: ∇* ``[p]`` added to the clipped sum of inserted runs at insertion steps.
        canary: ``(x*, y*)`` (batch of one) appended to the batch of inserted runs at insertion steps.
        noise: ``t -> [models, p]`` standard normals (required when ``sigma > 0``).
        on_step: called as ``on_step(t, theta_before, theta_after)`` after every update.
        progress: show a tqdm bar.

    Returns:
        θ_T, ``[models, p]``.
    """
    theta = theta0.clone()
    steps = batches.shape[0]
    scale = float(sigma) * (1.0 if clip is None else float(clip))
    if scale > 0 and noise is None:
        raise ValueError("noise is required when sigma > 0")
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
    for t in iterator:
        idx = batches_t[t - 1]
        xb, yb = X[idx], y[idx]
        inserting = t % period == 0
        weights = None
        if canary is not None and inserting:
            xb, yb = torch.cat([xb, canary[0]]), torch.cat([yb, canary[1]])
            weights = weights_canary
        g = engine.clipped_sum(theta, xb, yb, clip, weights)
        if gradient is not None and inserting:
            g = g + mask[:, None] * gradient[None, :]
        if scale > 0:
            g = g + scale * noise(t)
        new = theta - lr * (g / batch_size)
        if on_step is not None:
            on_step(t, theta, new)
        theta = new
    return theta


def train_shard(
    *,
    model: str,
    model_kwargs: dict,
    X: npt.ArrayLike,
    y: npt.ArrayLike,
    setup: Setup,
    config: DPSGDConfig,
    crafted: Crafted,
    bits: npt.ArrayLike,
    seed: int,
    device: str | None = None,
    progress: bool = True,
    backend: str = "auto",
    workers: int | None = None,
) -> np.ndarray:
    """Train ``len(bits)`` models at once with DP-SGD and the adversary's insertion; return their scores.

    Args:
        model, model_kwargs: architecture (:func:`hsaudit.models.build_model`).
        X, y: training set (float features, integer labels).
        setup: θ0 and the minibatch schedule shared by all runs of the audit.
        config: DP-SGD hyper-parameters (T, B, η, C, σ, k).
        crafted: the adversary's object (:func:`hsaudit.adversaries.craft`).
        bits: ``[models]`` in {0, 1}; 1 = inserted (member).
        seed: the shard's noise seed; model i uses :func:`model_noise` ``(seed, i, T, p)``.
        device: ``None`` = CUDA when available, else CPU. Computation is float32.
        progress: tqdm bar over the steps.
        backend: ``"auto"``, ``"mlp"`` or ``"func"`` (see :func:`population`).
        workers: CPU worker threads, each training a contiguous group of the models with single-threaded ops.
            ``None``: ``torch.get_num_threads()`` for the FCNN engine on the CPU, else 1 (intra-op threads).
            Results do not depend on it (every model keeps its own noise stream).

    Returns:
        float64 ``[models, T // k]``: the oriented score (higher ⇒ inserted, see
        :func:`hsaudit.adversaries.score`) after the update of every insertion step.

    Raises:
        ValueError: on inconsistent shapes, bits outside {0, 1}, or a crafted object of the wrong dimension.
    """
    from hsaudit.adversaries import make_scorer, validate_crafted

    X, y = _check_data(model, model_kwargs, X, y, setup)
    bits = np.asarray(bits)
    if bits.ndim != 1 or bits.size == 0 or not np.all((bits == 0) | (bits == 1)):
        raise ValueError(f"bits must be a non-empty 1-D array of 0/1, got shape {bits.shape}")
    if setup.batches.shape != (config.steps, config.batch_size):
        raise ValueError(
            f"setup.batches has shape {setup.batches.shape}, config wants ({config.steps}, {config.batch_size})"
        )
    dev = pick_device(device)
    engine = population(model, model_kwargs, dev, backend=backend)
    if setup.theta0.shape != (engine.p,):
        raise ValueError(f"setup.theta0 has shape {setup.theta0.shape}, {model!r} has {engine.p} parameters")
    validate_crafted(crafted, p=engine.p, model=model, model_kwargs=model_kwargs)
    m = bits.size
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    theta0 = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    mask = torch.as_tensor(bits, dtype=torch.float32, device=dev)
    gradient = canary = None
    if crafted.gradient is not None:
        gradient = torch.as_tensor(crafted.gradient, dtype=torch.float32, device=dev)
    if crafted.canary_x is not None:
        canary = (
            torch.as_tensor(np.asarray(crafted.canary_x, dtype=np.float32)[None], device=dev),
            torch.as_tensor(np.asarray(crafted.canary_y, dtype=np.int64).reshape(1), device=dev),
        )
    scorer = make_scorer(crafted, engine, theta0)
    scores = np.empty((m, config.steps // config.period), dtype=np.float64)
    if workers is None:
        workers = torch.get_num_threads() if dev.type == "cpu" and isinstance(engine, MLPPopulation) else 1
        workers = min(workers, m // _MIN_MODELS_PER_WORKER or 1)
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    if workers > 1 and not isinstance(engine, MLPPopulation):
        # torch.func.functional_call swaps the module's parameters in place: not thread-safe.
        raise ValueError(f"workers > 1 needs the FCNN ('mlp') engine, got workers={workers} for {model!r}")
    workers = min(int(workers), m)

    def run_group(rows: range, show: bool) -> None:
        def record(t: int, _before: torch.Tensor, after: torch.Tensor) -> None:
            if t % config.period == 0:
                scores[rows.start : rows.stop, t // config.period - 1] = scorer(after).double().cpu().numpy()

        noise = None
        if config.noise_multiplier > 0:
            noise = _NoiseStreams(seed, rows, engine.p, config.steps, dev)
        # Grad mode is thread-local. torch.func.grad ignores an outer no_grad (it is a function transform),
        # so this is safe for both engines.
        with torch.no_grad():
            run_population(
                engine,
                theta0[None].expand(len(rows), -1),
                Xt,
                yt,
                setup.batches,
                lr=config.lr,
                batch_size=config.batch_size,
                clip=config.clip_norm,
                sigma=config.noise_multiplier,
                period=config.period,
                mask=mask[rows.start : rows.stop],
                gradient=gradient,
                canary=canary,
                noise=noise,
                on_step=record,
                progress=show,
                desc=f"train {model} x{m}" + (f" ({workers} workers, bar: first)" if workers > 1 else ""),
            )

    if workers == 1:
        run_group(range(m), progress)
        return scores
    # Models never interact, so a CPU population splits into independent groups, one per worker thread, each
    # with single-threaded ops (torch releases the GIL inside ops). Far more robust than intra-op threading,
    # whose per-op barriers stall whenever another process takes a core (measured in docs/trainer.md).
    bounds = np.linspace(0, m, workers + 1).astype(int)
    groups = [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for fut in [pool.submit(run_group, g, progress and i == 0) for i, g in enumerate(groups)]:
                fut.result()
    finally:
        torch.set_num_threads(threads)
    return scores

