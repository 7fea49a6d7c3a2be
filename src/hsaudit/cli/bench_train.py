"""``hsaudit bench train``: the population engine against the Opacus one-model loop and the non-private floor.

``--model convnet|resnet18_gn|alexnet_head|mnist_cnn|cifar_cnn|wrn16_4`` (:func:`measure_engine`): in one process, side by
side, on synthetic data of the right shape (CIFAR-10: 3×32×32, MNIST: 1×28×28, 10 classes; ``alexnet_head``:
4096-d non-negative features) and batch 128, (a) the population engine doing full DP-SGD steps through :func:`hsaudit.engine.dpsgd.run_population` for
every population size of ``--models N[,N...]`` (noise = a preallocated standard-normal tensor, so the gradient
layer and the update are timed), (b) a minimal Opacus loop (``GradSampleModule`` + ``DPOptimizer``, one model;
physical batches bounded by memory, accumulated as Opacus' ``BatchMemoryManager`` does) and (c) the floor: a
plain non-private forward + backward + SGD step of the same samples with the same model. Reported per population
size: models/s, model-steps/s, seconds per model-step, the ratios engine : Opacus and engine : floor, peak host
RSS (``resource``, monotonic over the process: the floor runs first, then Opacus, the engine by increasing
population, Opacus again; the Opacus figure is the mean of both blocks) and, on CUDA, peak device
memory (``torch.cuda.max_memory_allocated``). ``--save-calibration [PATH]`` stores the engine's seconds per
model-step for :func:`hsaudit.pipeline.costs.calibration`.

``--full-batch`` (Yoon et al.'s DP-SGD, docs/yoon.md): every step uses all of D, ``--n-train`` synthetic samples
(default 1,000), so B = |D| for the engine, Opacus and the floor alike; half of the engine's population trains on
D ∪ {canary} (a blank image, label 9, appended to every step's batch, normaliser |D|), as an audit's M′ do.

``--sampling poisson [--sampling-rate q]`` (Steinke et al.'s DP-SGD, :func:`hsaudit.engine.dpsgd.run_poisson`; any
model of the engine, ``fcnn`` included): beside every engine row, the same population trained with Poisson
subsampling at rate q (default B / ``--n-train``) through :class:`hsaudit.engine.sampling.PoissonSampler` (the keyed
draws, the per-model padded batches and the host synchronisation of a step included in the time), while the
fixed-batch engine, Opacus and the floor use batches of the expected size B = round(q·N). The fixed-batch and the
Poisson engine are timed alternately ``--repeats`` times (default 5) per population. Reported per population: the
medians of both engines' seconds per model-step, the median of the pairwise ratios Poisson : fixed (≤ 1.1 is the
goal), the same ratio per example drawn (``x fixed/ex``: a model whose step costs ∝ |B| pays for the luck of its
draws in a short run; every repeat draws other batches, seed + r, and the mean drawn batch is printed), and the
Poisson engine's ratios to the floor and to Opacus.

``--model fcnn`` (default) keeps the Housing benchmark of issue 3 (:func:`measure`): both trainers run in this
process on the same Housing-like task (Cebere et al. §5: 8 standardised features,
binary label, FCNN with 68 parameters, T = 250, batch 400, η = 0.1, C = 1, σ = 4, k = 1): a population of
``--models`` models through :func:`hsaudit.experiments.cebere.train.shards.train_shard`, then ``--opacus-models`` models one at a time
through :func:`hsaudit.experiments.cebere.reference.train_reference`. The data are synthetic (a fixed linear-logistic rule on
standard normal features, 20,640 rows like California Housing) so that the benchmark needs no download; the cost
does not depend on the values. ``--data FILE.npz`` uses a prepared dataset (:func:`hsaudit.data.datasets.load_dataset`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from hsaudit.experiments.cebere.train.adversaries import craft
from hsaudit.experiments.cebere.reference import train_reference
from hsaudit.engine.models import (
    build_model,
    flat_parameters,
    input_shape,
    load_flat_parameters,
    loss_name,
    num_classes,
    per_sample_loss,
)
from hsaudit.engine.sampling import PoissonSampler
from hsaudit.engine.psg import auto_backend, population
from hsaudit.util.io import write_text_atomic
from hsaudit.experiments.cebere.train.shards import train_shard
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, model_noise, pick_device, run_poisson, run_population

ENGINE_MODELS = ("convnet", "resnet18_gn", "alexnet_head", "mnist_cnn", "cifar_cnn", "wrn16_4")
DEFAULT_CALIBRATION = "config/calibration.json"
_DEFAULT_SIZES = {
    "convnet": "1,8,64,256",
    "resnet18_gn": "1",
    "alexnet_head": "1,8,64,256",
    "mnist_cnn": "1,8,64",
    "cifar_cnn": "1,8",
    "wrn16_4": "1",
}
_DEFAULT_STEPS = {"convnet": 3, "resnet18_gn": 2, "alexnet_head": 5, "mnist_cnn": 3, "cifar_cnn": 3, "wrn16_4": 2}
_FULL_BATCH_SIZES = "16"  # --full-batch: the population (--models) by default
_FULL_BATCH_N = 1000  # --full-batch: |D| (--n-train) by default
_OPACUS_BUDGET = 2 * 2**30  # bytes of Opacus per-sample gradients per physical batch


def register(sub) -> None:
    parser = sub.add_parser("train", description="Time the vectorised DP-SGD population against the Opacus loop.")
    parser.add_argument(
        "--model", default="fcnn", choices=("fcnn", *ENGINE_MODELS), help="architecture (default fcnn: Housing)"
    )
    parser.add_argument(
        "--models",
        default=None,
        help="population size(s), N[,N...] (fcnn: 1000; convnet/alexnet_head: 1,8,64,256; resnet18_gn, wrn16_4: 1; "
        "mnist_cnn: 1,8,64; cifar_cnn: 1,8; with --full-batch: 16)",
    )
    parser.add_argument(
        "--opacus-models", type=int, default=None, help="models trained one at a time by Opacus " "(fcnn: 3, others: 1)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="T (fcnn: 250; timed steps otherwise: convnet, mnist_cnn, cifar_cnn 3, resnet18_gn, wrn16_4 2, "
        "alexnet_head 5)",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="B (fcnn: 400, others: 128)")
    parser.add_argument(
        "--full-batch",
        action="store_true",
        help="full-batch DP-SGD (Yoon et al.): every step is all of the --n-train samples, half the population "
        "with a canary (engine models only)",
    )
    parser.add_argument(
        "--sampling",
        default="fixed",
        choices=("fixed", "poisson"),
        help="poisson: also time the engine under Poisson subsampling beside fixed batches of the expected size",
    )
    parser.add_argument(
        "--sampling-rate", type=float, default=None, help="q of --sampling poisson (default: B / --n-train)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="--sampling poisson: fixed and Poisson timed alternately this many times, medians (default 5)",
    )
    parser.add_argument("--backend", default="auto", help="engine backend: auto, mlp, hooks or func")
    parser.add_argument(
        "--save-calibration",
        nargs="?",
        const=DEFAULT_CALIBRATION,
        default=None,
        metavar="PATH",
        help=f"store the measured seconds per model-step (default path {DEFAULT_CALIBRATION})",
    )
    parser.add_argument(
        "--n-train", type=int, default=None, help="rows of the synthetic training set (fcnn: 20640; --full-batch: 1000)"
    )
    parser.add_argument("--adversary", default="gc_r", help="whose insertion to train with (default gc_r)")
    parser.add_argument("--variant", default="8-3-8-1", help="FCNN variant (default 8-3-8-1)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: unchanged)")
    parser.add_argument("--workers", type=int, default=None, help="train_shard workers (default: auto)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--data", default=None, help="prepared dataset .npz instead of synthetic data")
    parser.add_argument("--seed", type=int, default=0, help="seed of data, setup, bits and noise")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def synthetic_housing(n: int = 20640, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Housing-like data: ``n`` rows of 8 standard normal features and a noisy linear-logistic binary label."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8)).astype(np.float32)
    w = rng.standard_normal(8)
    y = (X @ w + rng.standard_normal(n) > 0).astype(np.int64)
    return X, y


def measure(
    *,
    models: int = 1000,
    opacus_models: int = 3,
    steps: int = 250,
    batch_size: int = 400,
    n_train: int = 20640,
    adversary: str = "gc_r",
    variant: str = "8-3-8-1",
    workers: int | None = None,
    device: str | None = None,
    data: str | None = None,
    seed: int = 0,
) -> dict:
    """Run both trainers and return the timings (models/s are for the full T steps)."""
    if models < 1 or opacus_models < 0:
        raise ValueError(f"models must be >= 1 and opacus_models >= 0, got {models}, {opacus_models}")
    if data is None:
        X, y = synthetic_housing(n_train, seed)
        source = "synthetic"
    else:
        from hsaudit.data.datasets import load_dataset

        ds = load_dataset(data)
        X, y, source = ds.X, ds.y, str(data)
    kwargs = {"variant": variant}
    config = DPSGDConfig(steps=steps, batch_size=batch_size, lr=0.1, clip_norm=1.0, noise_multiplier=4.0)
    setup = make_setup(model="fcnn", model_kwargs=kwargs, n_train=len(X), config=config, seed=seed)
    crafted = craft(adversary, model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=config, seed=seed)
    bits = np.arange(models) % 2
    dev = pick_device(device)
    t0 = time.perf_counter()
    scores = train_shard(
        model="fcnn",
        model_kwargs=kwargs,
        X=X,
        y=y,
        setup=setup,
        config=config,
        crafted=crafted,
        bits=bits,
        noise_key=seed,
        device=str(dev),
        progress=False,
        workers=workers,
    ).scores
    if dev.type == "cuda":
        torch.cuda.synchronize()
    vec_s = time.perf_counter() - t0
    out = {
        "models": models,
        "steps": steps,
        "batch_size": batch_size,
        "parameters": int(setup.theta0.size),
        "adversary": crafted.adversary,
        "data": source,
        "device": str(dev),
        "threads": torch.get_num_threads(),
        "workers": workers if workers is not None else "auto",
        "vectorised_s": vec_s,
        "vectorised_models_per_s": models / vec_s,
    }
    if opacus_models:
        t0 = time.perf_counter()
        max_diff = 0.0
        for i in range(opacus_models):
            ref, _ = train_reference(
                model="fcnn",
                model_kwargs=kwargs,
                X=X,
                y=y,
                setup=setup,
                config=config,
                crafted=crafted,
                bit=int(bits[i % models]),
                noise=model_noise(seed, i % models, steps, setup.theta0.size),
            )
            if i < models:
                max_diff = max(max_diff, float(np.abs(ref - scores[i]).max()))
        op_s = time.perf_counter() - t0
        out.update(
            opacus_models=opacus_models,
            opacus_s=op_s,
            opacus_models_per_s=opacus_models / op_s,
            speedup=(models / vec_s) / (opacus_models / op_s),
            max_abs_score_diff=max_diff,  # the same models, trained both ways
        )
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out["load_average_1min"] = os.getloadavg()[0]
    out["cpu_count"] = os.cpu_count()
    out["machine"] = platform.processor() or platform.machine()
    out["torch"] = torch.__version__
    return out


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def _device_peak_start(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)


def _device_peak_mb(dev: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else None


def synthetic_task(model: str, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic inputs of ``model``'s shape (CIFAR-like 3×32×32 or MNIST-like 1×28×28 images; 32×32 where any
    size works; the FCNN's 8 features), or 4096-d post-ReLU AlexNet features; labels uniform over the classes."""
    gen = torch.Generator().manual_seed(seed)
    if model == "alexnet_head":
        X = torch.randn(n, 4096, generator=gen).relu_()
    else:
        X = torch.randn(n, *(32 if s is None else s for s in input_shape(model)), generator=gen)
    return X, torch.randint(0, num_classes(model), (n,), generator=gen)


def _time_engine(engine, theta0, X, y, batches, *, m, lr, batch_size, clip, sigma, dev, canary=None) -> float:
    """Seconds of ``len(batches) - 1`` DP-SGD steps of ``m`` models (the first step is a warm-up).

    ``canary``: ``(x*, y*)`` appended to every step's batch of every other model (the audit's M′).
    """
    theta = theta0[None].expand(m, -1).contiguous()
    z = torch.randn(m, theta.shape[1], device=dev)  # preallocated: the gradient layer is timed, not the RNG
    kw = dict(lr=lr, batch_size=batch_size, clip=clip, sigma=sigma, period=1, noise=lambda t: z)
    if canary is not None:
        kw.update(canary=canary, mask=(torch.arange(m, device=dev) % 2).to(theta.dtype))
    with torch.no_grad():  # as train_shard runs it
        theta = run_population(engine, theta, X, y, batches[:1], **kw)
        _sync(dev)
        t0 = time.perf_counter()
        run_population(engine, theta, X, y, batches[1:], **kw)
        _sync(dev)
    return time.perf_counter() - t0


def _time_poisson(
    engine, theta0, X, y, *, m, rate, steps, lr, batch_size, clip, sigma, dev, seed
) -> tuple[float, int]:
    """Seconds of ``steps`` Poisson-subsampled DP-SGD steps of ``m`` models (after one untimed warm-up step),
    the sampler's keyed draws and batch packing included, noise preallocated as in :func:`_time_engine`; and the
    number of examples the timed steps drew (Σ over models and steps of |B_t^i|; padding not counted)."""
    theta = theta0[None].expand(m, -1).contiguous()
    z = torch.randn(m, theta.shape[1], device=dev)
    sampler = PoissonSampler(seed, range(m), n=X.shape[0], rate=rate, device=dev)
    kw = dict(lr=lr, batch_size=batch_size, clip=clip, sigma=sigma, noise=lambda t: z)
    with torch.no_grad():
        theta = run_poisson(engine, theta, X, y, sampler, steps=1, **kw)
        _sync(dev)
        t0 = time.perf_counter()
        run_poisson(engine, theta, X, y, sampler, steps=steps, **kw)
        _sync(dev)
    seconds = time.perf_counter() - t0
    return seconds, sum(sum(sampler(t).counts) for t in range(1, steps + 1))


def _time_floor(model, kwargs, theta0, X, y, batches, *, lr, dev) -> float:
    """Seconds of ``len(batches) - 1`` plain (non-private) SGD steps of one model: forward, backward, update."""
    net = build_model(model, **kwargs).to(dev)
    load_flat_parameters(net, theta0)
    kind = loss_name(model, **kwargs)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    t0 = 0.0
    for i, idx in enumerate(batches):
        if i == 1:
            _sync(dev)
            t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        per_sample_loss(kind, net(X[idx]), y[idx]).sum().backward()
        opt.step()
    _sync(dev)
    return time.perf_counter() - t0


def _time_opacus(model, kwargs, theta0, X, y, batches, *, lr, batch_size, clip, sigma, dev) -> tuple[float, int]:
    """Seconds of ``len(batches) - 1`` Opacus DP-SGD steps of one model, and the physical batch used.

    Per-sample gradients of a physical batch take ``physical · p`` floats (ResNet18-GN at batch 128: 5.7 GB), so
    the logical batch is split into physical batches within ``_OPACUS_BUDGET`` and accumulated with
    ``signal_skip_step`` exactly as Opacus' ``BatchMemoryManager`` does; noise is Opacus' own.
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    net = build_model(model, **kwargs).to(dev)
    load_flat_parameters(net, theta0)
    p = theta0.numel()
    physical = max(1, min(batch_size, _OPACUS_BUDGET // (8 * p)))
    gsm = GradSampleModule(net, loss_reduction="sum")
    optimizer = DPOptimizer(
        torch.optim.SGD(gsm.parameters(), lr=lr),
        noise_multiplier=sigma,
        max_grad_norm=clip,
        expected_batch_size=batch_size,
        loss_reduction="sum",
    )
    kind = loss_name(model, **kwargs)
    t0 = 0.0
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        for i, idx in enumerate(batches):
            if i == 1:
                _sync(dev)
                t0 = time.perf_counter()
            chunks = idx.split(physical)
            for j, part in enumerate(chunks):
                per_sample_loss(kind, gsm(X[part]), y[part]).sum().backward()
                optimizer.signal_skip_step(do_skip=j < len(chunks) - 1)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
    _sync(dev)
    return time.perf_counter() - t0, physical


def measure_engine(
    *,
    model: str,
    models: tuple[int, ...] = (1, 8, 64, 256),
    steps: int = 3,
    batch_size: int = 128,
    opacus_models: int = 1,
    backend: str = "auto",
    device: str | None = None,
    seed: int = 0,
    full_batch: bool = False,
    n_train: int | None = None,
    sampling_rate: float | None = None,
    repeats: int = 5,
) -> dict:
    """The engine at each population size, Opacus and the floor, side by side in this process (module docstring).

    Args:
        model: one of :data:`ENGINE_MODELS`.
        models: population sizes of the engine.
        steps: timed DP-SGD steps per measurement (after one untimed warm-up step).
        batch_size: B (ignored with ``full_batch``: B = ``n_train``).
        opacus_models: models timed through the Opacus loop (0: skip it).
        backend: engine backend (:func:`hsaudit.engine.psg.population`).
        device: ``"cpu"`` or ``"cuda"`` (default: CUDA when available).
        seed: seed of θ0, data, batches.
        full_batch: Yoon et al.'s full-batch DP-SGD: every step is all ``n_train`` samples; every other model of
            the engine's population also gets a canary (blank image, label 9) appended to every step.
        n_train: rows of the synthetic training set (default: max(4 B, 512); with ``full_batch`` 1,000).
        sampling_rate: q: also time the engine with Poisson subsampling at rate q (:func:`_time_poisson`) beside
            every population, and use B = round(q·n_train) for the fixed batches, Opacus and the floor.
        repeats: with ``sampling_rate``, the fixed-batch and the Poisson engine are timed alternately this many
            times per population; their seconds are the medians and ``poisson_over_fixed`` the median of the
            pairwise ratios (one reading each varied by up to 2× on the shared machine).

    Returns:
        A JSON-able dict: machine and load, ``opacus`` and ``floor`` rows and one ``populations`` row per size.

    Raises:
        ValueError: an unknown model, or non-positive sizes/steps/batch.
    """
    if model not in ENGINE_MODELS and not (model == "fcnn" and sampling_rate is not None):
        raise ValueError(f"model must be one of {ENGINE_MODELS} (or fcnn with a sampling rate), got {model!r}")
    if full_batch:
        if sampling_rate is not None:
            raise ValueError("full_batch and sampling_rate exclude each other")
        n_train = batch_size = _FULL_BATCH_N if n_train is None else n_train
    if sampling_rate is not None:
        if not 0 < sampling_rate <= 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {sampling_rate}")
        if n_train is None:
            n_train = max(4 * batch_size, 512)
        batch_size = max(1, round(sampling_rate * n_train))
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if not models or min(models) < 1 or steps < 1 or batch_size < 1 or opacus_models < 0:
        raise ValueError(
            f"models, steps, batch_size and n_train must be >= 1 and opacus_models >= 0, got {models}, {steps}, "
            f"{batch_size}, {opacus_models}"
        )
    dev = pick_device(device)
    kwargs: dict = {}
    lr, clip, sigma = 0.1, 1.0, 4.0
    torch.manual_seed(seed)
    theta0 = flat_parameters(build_model(model, **kwargs)).to(dev)
    if n_train is None:
        n_train = max(4 * batch_size, 512)
    if n_train < batch_size:
        raise ValueError(f"n_train must be >= batch_size={batch_size}, got {n_train}")
    X, y = synthetic_task(model, n_train, seed)
    X, y = X.to(dev), y.to(dev)
    canary = None
    if full_batch:  # Yoon's blank canary: an all-zero image, label 9
        canary = (torch.zeros((1, *X.shape[1:]), device=dev), torch.full((1,), 9, dtype=y.dtype, device=dev))
        batches = torch.arange(n_train).expand(steps + 1, -1).contiguous()
    else:
        gen = torch.Generator().manual_seed(seed + 1)
        batches = torch.stack([torch.randperm(n_train, generator=gen)[:batch_size] for _ in range(steps + 1)])
    batches_np = batches.numpy()
    batches = batches.to(dev)
    out: dict = {
        "model": model,
        "parameters": int(theta0.numel()),
        "device": str(dev),
        "device_name": (
            torch.cuda.get_device_name(dev) if dev.type == "cuda" else (platform.processor() or platform.machine())
        ),
        "backend": backend if backend != "auto" else f"auto ({auto_backend(model, dev)})",
        "batch_size": batch_size,
        "full_batch": full_batch,
        "n_train": n_train,
        "steps": steps,
        "sampling_rate": sampling_rate,
        "threads": torch.get_num_threads(),
        "load_average_start": os.getloadavg(),
    }
    opacus_runs: list[float] = []
    physical = batch_size

    def time_opacus() -> None:
        nonlocal physical
        _device_peak_start(dev)
        for _ in range(opacus_models):
            sec, physical = _time_opacus(
                model, kwargs, theta0, X, y, batches, lr=lr, batch_size=batch_size, clip=clip, sigma=sigma, dev=dev
            )
            opacus_runs.append(sec / steps)

    _device_peak_start(dev)
    floors = [_time_floor(model, kwargs, theta0, X, y, batches, lr=lr, dev=dev) / steps]
    out["floor"] = {"peak_rss_mb": _rss_mb(), "peak_device_mb": _device_peak_mb(dev)}
    if opacus_models:
        time_opacus()
    engine = population(model, kwargs, dev, backend=backend)
    rows = []
    for m in models:
        _device_peak_start(dev)

        def time_fixed() -> float:
            return _time_engine(
                engine,
                theta0,
                X,
                y,
                batches_np,
                m=m,
                lr=lr,
                batch_size=batch_size,
                clip=clip,
                sigma=sigma,
                dev=dev,
                canary=canary,
            )

        def time_poisson(repeat: int) -> tuple[float, int]:
            return _time_poisson(
                engine, theta0, X, y, m=m, rate=sampling_rate, steps=steps, lr=lr, batch_size=batch_size,
                clip=clip, sigma=sigma, dev=dev, seed=seed + repeat,
            )

        if sampling_rate is None:
            seconds = time_fixed()
        else:  # alternated, so that a change of the shared machine's load falls on both sides of the ratio
            pairs, drawn = [], []
            for r in range(repeats):  # every repeat draws other batches (seed + r): the ratio averages the draws
                fixed_s = time_fixed()
                poisson_s, n_drawn = time_poisson(r)
                pairs.append((fixed_s, poisson_s))
                drawn.append(n_drawn)
            seconds = float(np.median([f for f, _ in pairs]))
        per = seconds / (m * steps)
        row = {
            "models": m,
            "seconds": seconds,
            "models_per_s": m / seconds,  # over the `steps` timed steps
            "model_steps_per_s": 1.0 / per,
            "seconds_per_model_step": per,
            "peak_rss_mb": _rss_mb(),
            "peak_device_mb": _device_peak_mb(dev),
            "load_average": os.getloadavg()[0],
        }
        if sampling_rate is not None:
            row.update(
                poisson_seconds_per_model_step=float(np.median([p for _, p in pairs])) / (m * steps),
                poisson_over_fixed=float(np.median([p / f for f, p in pairs])),  # ≤ 1.1 is the goal
                poisson_over_fixed_runs=[p / f for f, p in pairs],
                # per example drawn: the cost ratio at equal work, without the luck of the draw (a model whose
                # step costs ∝ |B| pays (|B_t| / qN)× for a large batch; E|B_t| = qN, so over many steps the two
                # ratios agree, and the difference of a short run is the draws, not the engine)
                poisson_batch_mean=float(np.mean(drawn)) / (m * steps),
                poisson_over_fixed_per_example=float(
                    np.median([(p / d) / (f / (m * steps * batch_size)) for (f, p), d in zip(pairs, drawn)])
                ),
                repeats=repeats,
                poisson_peak_device_mb=_device_peak_mb(dev),  # (fixed and Poisson together)
            )
        # The floor is re-timed after every population, and each ratio uses the floors just before and after it,
        # so that the shared machine's changing load shows up in both sides of the ratio.
        floors.append(_time_floor(model, kwargs, theta0, X, y, batches, lr=lr, dev=dev) / steps)
        row["floor_seconds_per_model_step"] = (floors[-2] + floors[-1]) / 2
        row["engine_over_floor"] = per / row["floor_seconds_per_model_step"]  # ≤ 2 is the goal
        if sampling_rate is not None:
            row["poisson_over_floor"] = row["poisson_seconds_per_model_step"] / row["floor_seconds_per_model_step"]
        rows.append(row)
    floor = sum(floors) / len(floors)
    out["floor"].update(seconds_per_model_step=floor, model_steps_per_s=1.0 / floor, repeats=floors)
    opacus = None
    if opacus_models:
        # Opacus is timed before the engine (after the first floor) and again after it: the mean of both blocks
        time_opacus()
        opacus = sum(opacus_runs) / len(opacus_runs)
        out["opacus"] = {
            "models": opacus_models,
            "physical_batch": physical,
            "seconds_per_model_step": opacus,
            "model_steps_per_s": 1.0 / opacus,
            "repeats": opacus_runs,
            "peak_rss_mb": _rss_mb(),
            "peak_device_mb": _device_peak_mb(dev),
        }
    for row in rows:
        if opacus is not None:
            row["speedup_vs_opacus"] = opacus / row["seconds_per_model_step"]  # ≥ 1.6 is the goal
            if "poisson_seconds_per_model_step" in row:
                row["poisson_speedup_vs_opacus"] = opacus / row["poisson_seconds_per_model_step"]
    out["populations"] = rows
    out["load_average_end"] = os.getloadavg()
    out["cpu_count"] = os.cpu_count()
    out["torch"] = torch.__version__
    return out


def save_calibration(result: dict, path: str | os.PathLike, command: str) -> dict:
    """Add (or replace) the row of ``result``'s model and device in the calibration JSON file at ``path``.

    The row's ``seconds_per_model_step`` is the engine's at the largest population measured (shards are large);
    :func:`hsaudit.pipeline.costs.calibration` prefers it over the built-in table.
    """
    if "populations" in result:
        best = max(result["populations"], key=lambda r: r["models"])
        model, per, batch = result["model"], best["seconds_per_model_step"], result["batch_size"]
        population_size, load = best["models"], best["load_average"]
    else:  # the fcnn (Housing) benchmark: T steps of a `models` population
        model, batch, population_size = "fcnn", result["batch_size"], result["models"]
        per, load = result["vectorised_s"] / (result["models"] * result["steps"]), result["load_average_1min"]
    row = {
        "model": model,
        "device": "gpu" if str(result["device"]).startswith("cuda") else "cpu",
        "device_name": result.get("device_name", result.get("machine", "")),
        "batch": int(batch),
        "seconds_per_model_step": float(per),
        "population": int(population_size),
        "threads": result["threads"],
        "load_average": float(load),
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": command,
    }
    path = Path(path)
    rows = json.loads(path.read_text())["rows"] if path.is_file() else []
    rows = [r for r in rows if (r["model"], r["device"]) != (row["model"], row["device"])] + [row]
    write_text_atomic(path, json.dumps({"rows": rows}, indent=2) + "\n")
    return row


def _sizes(text: str | None, default: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(s) for s in (text or default).split(","))
    except ValueError:
        raise ValueError(f"--models must be N[,N...], got {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--models must be positive, got {text!r}")
    return sizes


def run(args: argparse.Namespace) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    poisson = args.sampling == "poisson"
    if args.sampling_rate is not None and not poisson:
        raise ValueError("--sampling-rate needs --sampling poisson")
    if poisson and args.full_batch:
        raise ValueError("--sampling poisson and --full-batch exclude each other")
    if args.full_batch and args.model == "fcnn":
        raise ValueError(f"--full-batch needs an image model ({', '.join(ENGINE_MODELS)}), got --model fcnn")
    if args.full_batch and args.batch_size is not None:
        raise ValueError("--full-batch uses B = --n-train; drop --batch-size")
    if args.model != "fcnn" or poisson:
        batch = args.batch_size or (400 if args.model == "fcnn" else 128)
        n_train = args.n_train or (20640 if args.model == "fcnn" else None)
        rate = None
        if poisson:
            rate = args.sampling_rate or batch / (n_train or max(4 * batch, 512))
        result = measure_engine(
            model=args.model,
            models=_sizes(
                args.models, _FULL_BATCH_SIZES if args.full_batch else _DEFAULT_SIZES.get(args.model, "1000")
            ),
            steps=args.steps or _DEFAULT_STEPS.get(args.model, 5),
            batch_size=batch,
            opacus_models=1 if args.opacus_models is None else args.opacus_models,
            backend=args.backend,
            device=args.device,
            seed=args.seed,
            full_batch=args.full_batch,
            n_train=n_train,
            sampling_rate=rate,
            repeats=args.repeats,
        )
    else:
        results = [
            measure(
                models=m,
                opacus_models=3 if args.opacus_models is None else args.opacus_models,
                steps=args.steps or 250,
                batch_size=args.batch_size or 400,
                n_train=args.n_train or 20640,
                adversary=args.adversary,
                variant=args.variant,
                workers=args.workers,
                device=args.device,
                data=args.data,
                seed=args.seed,
            )
            for m in _sizes(args.models, "1000")
        ]
        result = results[0] if len(results) == 1 else {"model": "fcnn", "runs": results}
    if args.save_calibration:
        command = "hsaudit " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("hsaudit") else "hsaudit bench train"
        saved = [save_calibration(r, args.save_calibration, command) for r in result.get("runs", [result])]
        result["calibration_saved"] = {"path": str(args.save_calibration), "rows": saved}
    if args.json:
        print(json.dumps(result, indent=2))
    elif "populations" in result:
        print(format_engine(result))
    else:
        for key, value in result.items():
            print(f"{key:>26}: {value:.4g}" if isinstance(value, float) else f"{key:>26}: {value}")
    return 0


def format_engine(result: dict) -> str:
    """A table of :func:`measure_engine`'s result (what ``hsaudit bench train --model M`` prints)."""
    floor = result["floor"]["seconds_per_model_step"]
    opacus = result.get("opacus", {}).get("seconds_per_model_step")
    batch = (
        f"full batch |D| = {result['batch_size']} (canary on every other model)"
        if result.get("full_batch")
        else f"batch {result['batch_size']}"
    )
    opacus_text = ""
    if opacus is not None:
        opacus_text = f"; Opacus (one model): {opacus * 1e3:.1f} ms/model-step = {1 / opacus:.2f} model-steps/s"
    if result.get("sampling_rate") is not None:
        batch += f" (= round(qN), Poisson q = {result['sampling_rate']:.4g}, N = {result['n_train']})"
    lines = [
        f"{result['model']} ({result['parameters']:,} parameters) on {result['device']} ({result['device_name']}), "
        f"{batch}, {result['steps']} timed steps, {result['threads']} thread(s), backend "
        f"{result['backend']}; load {result['load_average_start'][0]:.2f} -> {result['load_average_end'][0]:.2f}",
        f"floor (non-private fwd+bwd, one model): {floor * 1e3:.1f} ms/model-step = {1 / floor:.2f} model-steps/s "
        f"(mean of {len(result['floor']['repeats'])})" + opacus_text,
        f"{'models':>7} {'ms/model-step':>14} {'model-steps/s':>14} {'models/s':>9} {'floor ms':>9} {'x floor':>8} "
        f"{'vs Opacus':>10} {'RSS MB':>8} {'load':>5}",
    ]
    for r in result["populations"]:
        vs = f"{r['speedup_vs_opacus']:.2f}x" if "speedup_vs_opacus" in r else "-"
        lines.append(
            f"{r['models']:>7} {r['seconds_per_model_step'] * 1e3:>14.2f} {r['model_steps_per_s']:>14.1f} "
            f"{r['models_per_s']:>9.2f} {r['floor_seconds_per_model_step'] * 1e3:>9.1f} {r['engine_over_floor']:>8.2f} "
            f"{vs:>10} {r['peak_rss_mb']:>8.0f} "
            f"{r['load_average']:>5.2f}"
        )
    if result.get("sampling_rate") is not None:
        lines.append(
            f"Poisson (q = {result['sampling_rate']:.4g}; fixed and Poisson timed alternately, medians of "
            f"{result['populations'][0].get('repeats', 1)}):\n{'models':>7} {'fixed ms':>10} {'ms/model-step':>14} "
            f"{'x fixed':>8} {'mean |B|':>9} {'x fixed/ex':>10} {'x floor':>8} {'vs Opacus':>10}"
        )
        for r in result["populations"]:
            vs = f"{r['poisson_speedup_vs_opacus']:.2f}x" if "poisson_speedup_vs_opacus" in r else "-"
            lines.append(
                f"{r['models']:>7} {r['seconds_per_model_step'] * 1e3:>10.4g} "
                f"{r['poisson_seconds_per_model_step'] * 1e3:>14.4g} {r['poisson_over_fixed']:>8.2f} "
                f"{r['poisson_batch_mean']:>9.1f} {r['poisson_over_fixed_per_example']:>10.2f} "
                f"{r['poisson_over_floor']:>8.2f} {vs:>10}"
            )
    return "\n".join(lines)
