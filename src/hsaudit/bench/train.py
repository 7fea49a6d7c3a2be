"""Training benchmarks: the population engine against the Opacus one-model loop and the non-private floor.

:func:`measure_engine` (``hsaudit bench train --model M``, any registry model): in one process, side by side, on
synthetic data of the model's shape (:func:`synthetic_task`; 32×32 where any image size works) and batch B, (a)
the population engine doing full DP-SGD steps through :func:`hsaudit.engine.dpsgd.run_population` for every
population size (noise = a preallocated standard-normal tensor, so the gradient layer and the update are timed),
(b) a minimal Opacus loop (``GradSampleModule`` + ``DPOptimizer``, one model; physical batches bounded by memory,
accumulated as Opacus' ``BatchMemoryManager`` does) and (c) the floor: a plain non-private forward + backward +
SGD step of the same samples with the same model. Reported per population size: models/s, model-steps/s, seconds
per model-step, the ratios engine : Opacus and engine : floor, peak host RSS (``resource``, monotonic over the
process: the floor runs first, then Opacus, the engine by increasing population, Opacus again; the Opacus figure
is the mean of both blocks) and, on CUDA, peak device memory (``torch.cuda.max_memory_allocated``). The defaults
per model (population sizes, timed steps, B) are the spec's :attr:`~hsaudit.engine.models.ModelSpec.bench`.

Full batch (Yoon et al.'s DP-SGD, docs/yoon.md): every step uses all of D, ``n_train`` synthetic samples (default
1,000), so B = |D| for the engine, Opacus and the floor alike; half of the engine's population trains on
D ∪ {canary} (a blank input labelled with the last class, Yoon's 9 of 10, appended to every step's batch,
normaliser |D|), as an audit's M′ do.

Poisson sampling (Steinke et al.'s DP-SGD, :func:`hsaudit.engine.dpsgd.run_poisson`): beside every engine row, the
same population trained with Poisson subsampling at rate q through :class:`hsaudit.engine.sampling.PoissonSampler`
(the keyed draws, the per-model padded batches and the host synchronisation of a step included in the time), while
the fixed-batch engine, Opacus and the floor use batches of the expected size B = round(q·N). The fixed-batch and
the Poisson engine are timed alternately ``repeats`` times per population. Reported per population: the medians
of both engines' seconds per model-step, the median of the pairwise ratios Poisson : fixed (≤ 1.1 is the goal),
the same ratio per example drawn (a model whose step costs ∝ |B| pays for the luck of its draws in a short run;
every repeat draws other batches, seed + r), and the Poisson engine's ratios to the floor and to Opacus.

:func:`measure` (``hsaudit bench train``, the default ``--model fcnn``) is the Housing benchmark: both trainers on the
same Housing-like task (Cebere et al. §5: 8 standardised features, binary label, FCNN with 68 parameters, T = 250,
batch 400, η = 0.1, C = 1, σ = 4, k = 1): a population of ``models`` models through
:func:`hsaudit.experiments.cebere.train.shards.train_shard`, then ``opacus_models`` models one at a time through the
Opacus reference (:func:`hsaudit.experiments.cebere.reference.reference_scores`). The data are synthetic
(:func:`synthetic_housing`, 20,640 rows like California Housing) so that the benchmark needs no download; the cost
does not depend on the values. ``data`` uses a prepared dataset (:func:`hsaudit.data.datasets.load_dataset`).

Calibration: :func:`step_seconds` (``hsaudit plan --calibrate``) is :func:`measure_engine`'s engine timing alone;
:func:`save_calibration` (``--save-calibration``) stores a result's seconds per model-step where
:func:`hsaudit.pipeline.costs.calibration` finds them (:func:`hsaudit.pipeline.costs.store_calibration`).
"""

from __future__ import annotations

import datetime
import os
import platform
import resource
import time
import warnings

import numpy as np
import torch

from hsaudit.engine.architectures import flat_parameters, load_flat_parameters, per_sample_loss
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, model_noise, pick_device, run_poisson, run_population
from hsaudit.engine.models import ModelSpec, model_spec, require_spec
from hsaudit.engine.psg import population_engine
from hsaudit.engine.sampling import PoissonSampler
from hsaudit.experiments.cebere.train.adversaries import craft
from hsaudit.experiments.cebere.reference import reference_scores
from hsaudit.experiments.cebere.train.shards import train_shard
from hsaudit.pipeline.costs import store_calibration

FULL_BATCH_MODELS = (16,)
"""Population sizes of the full-batch benchmark by default."""
FULL_BATCH_N = 1000
"""|D| of the full-batch benchmark by default."""
HOUSING_STEPS = 250
"""T of the Housing benchmark (Cebere et al. §5)."""
_OPACUS_BUDGET = 2 * 2**30  # bytes of Opacus per-sample gradients per physical batch


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
    steps: int = HOUSING_STEPS,
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
    spec = model_spec("fcnn", **kwargs)  # resolved once, handed to every step below
    setup = make_setup(spec=spec, n_train=len(X), config=config, seed=seed)
    crafted = craft(adversary, spec=spec, X=X, y=y, setup=setup, config=config, seed=seed)
    bits = np.arange(models) % 2
    dev = pick_device(device)
    t0 = time.perf_counter()
    task = dict(spec=spec, X=X, y=y, setup=setup, config=config, crafted=crafted)
    scores = train_shard(**task, bits=bits, noise_key=seed, device=str(dev), progress=False, workers=workers).scores
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
            ref, _ = reference_scores(
                **task, bit=int(bits[i % models]), noise=model_noise(seed, i % models, steps, setup.theta0.size)
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
    out["device_name"] = torch.cuda.get_device_name(dev) if dev.type == "cuda" else out["machine"]
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


def synthetic_task(spec: ModelSpec, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` standard normal inputs of the model's shape (:meth:`~hsaudit.engine.models.ModelSpec.example_shape`:
    32×32 where any image size works) and labels uniform over its classes; the cost does not depend on the values."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(n, *spec.example_shape(), generator=gen)
    return X, torch.randint(0, spec.classes, (n,), generator=gen)


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


def _time_floor(spec: ModelSpec, theta0, X, y, batches, *, lr, dev) -> float:
    """Seconds of ``len(batches) - 1`` plain (non-private) SGD steps of one model: forward, backward, update."""
    net = spec.build().to(dev)
    load_flat_parameters(net, theta0)
    kind = spec.loss
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


def _time_opacus(spec: ModelSpec, theta0, X, y, batches, *, lr, batch_size, clip, sigma, dev) -> tuple[float, int]:
    """Seconds of ``len(batches) - 1`` Opacus DP-SGD steps of one model, and the physical batch used.

    Per-sample gradients of a physical batch take ``physical · p`` floats (ResNet18-GN at batch 128: 5.7 GB), so
    the logical batch is split into physical batches within ``_OPACUS_BUDGET`` and accumulated with
    ``signal_skip_step`` exactly as Opacus' ``BatchMemoryManager`` does; noise is Opacus' own.
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    net = spec.build().to(dev)
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
    kind = spec.loss
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
    spec: ModelSpec,
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
        spec: the architecture (any registry model: :func:`hsaudit.engine.models.model_spec`).
        models: population sizes of the engine.
        steps: timed DP-SGD steps per measurement (after one untimed warm-up step).
        batch_size: B (ignored with ``full_batch``: B = ``n_train``).
        opacus_models: models timed through the Opacus loop (0: skip it).
        backend: engine backend (:func:`hsaudit.engine.psg.population_engine`).
        device: ``"cpu"`` or ``"cuda"`` (default: CUDA when available).
        seed: seed of θ0, data, batches.
        full_batch: Yoon et al.'s full-batch DP-SGD: every step is all ``n_train`` samples; every other model of
            the engine's population also gets a canary (blank input, the last class: Yoon's label 9) appended to every
            step.
        n_train: rows of the synthetic training set (default: max(4 B, 512); with ``full_batch`` 1,000).
        sampling_rate: q: also time the engine with Poisson subsampling at rate q (:func:`_time_poisson`) beside
            every population, and use B = round(q·n_train) for the fixed batches, Opacus and the floor.
        repeats: with ``sampling_rate``, the fixed-batch and the Poisson engine are timed alternately this many
            times per population; their seconds are the medians and ``poisson_over_fixed`` the median of the
            pairwise ratios (one reading each varied by up to 2× on the shared machine).

    Returns:
        A JSON-able dict: machine and load, ``opacus`` and ``floor`` rows and one ``populations`` row per size.

    Raises:
        ValueError: not a spec, or non-positive sizes/steps/batch.
    """
    spec = require_spec(spec, "spec")
    if full_batch:
        if sampling_rate is not None:
            raise ValueError("full_batch and sampling_rate exclude each other")
        n_train = batch_size = FULL_BATCH_N if n_train is None else n_train
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
    lr, clip, sigma = 0.1, 1.0, 4.0
    torch.manual_seed(seed)
    theta0 = flat_parameters(spec.build()).to(dev)
    if n_train is None:
        n_train = max(4 * batch_size, 512)
    if n_train < batch_size:
        raise ValueError(f"n_train must be >= batch_size={batch_size}, got {n_train}")
    X, y = synthetic_task(spec, n_train, seed)
    X, y = X.to(dev), y.to(dev)
    canary = None
    if full_batch:  # Yoon's blank canary: an all-zero image, label 9 (the last of 10 classes)
        last = spec.classes - 1
        canary = (torch.zeros((1, *X.shape[1:]), device=dev), torch.full((1,), last, dtype=y.dtype, device=dev))
        batches = torch.arange(n_train).expand(steps + 1, -1).contiguous()
    else:
        gen = torch.Generator().manual_seed(seed + 1)
        batches = torch.stack([torch.randperm(n_train, generator=gen)[:batch_size] for _ in range(steps + 1)])
    batches_np = batches.numpy()
    batches = batches.to(dev)
    out: dict = {
        "model": spec.name,
        "parameters": int(theta0.numel()),
        "device": str(dev),
        "device_name": (
            torch.cuda.get_device_name(dev) if dev.type == "cuda" else (platform.processor() or platform.machine())
        ),
        "backend": backend if backend != "auto" else f"auto ({spec.backend_on(dev)})",
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
                spec, theta0, X, y, batches, lr=lr, batch_size=batch_size, clip=clip, sigma=sigma, dev=dev
            )
            opacus_runs.append(sec / steps)

    _device_peak_start(dev)
    floors = [_time_floor(spec, theta0, X, y, batches, lr=lr, dev=dev) / steps]
    out["floor"] = {"peak_rss_mb": _rss_mb(), "peak_device_mb": _device_peak_mb(dev)}
    if opacus_models:
        time_opacus()
    engine = population_engine(spec, dev, backend=backend)
    rows = []
    for m in models:
        _device_peak_start(dev)

        def time_fixed() -> float:
            return _time_engine(
                engine, theta0, X, y, batches_np, m=m, lr=lr, batch_size=batch_size, clip=clip, sigma=sigma, dev=dev,
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
        floors.append(_time_floor(spec, theta0, X, y, batches, lr=lr, dev=dev) / steps)
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


def calibration_row(result: dict, command: str) -> dict:
    """The stored calibration row of a benchmark's result (:func:`hsaudit.pipeline.costs.store_calibration`).

    The row's ``seconds_per_model_step`` is the engine's at the largest population measured (shards are large); for
    the Housing benchmark (:func:`measure`), its T steps of the whole population divided by models × T.
    :func:`hsaudit.pipeline.costs.calibration` prefers a stored row over the built-in table.
    """
    if "populations" in result:
        best = max(result["populations"], key=lambda r: r["models"])
        model, per, batch = result["model"], best["seconds_per_model_step"], result["batch_size"]
        population_size, load = best["models"], best["load_average"]
    else:  # the fcnn (Housing) benchmark: T steps of a `models` population
        model, batch, population_size = "fcnn", result["batch_size"], result["models"]
        per, load = result["vectorised_s"] / (result["models"] * result["steps"]), result["load_average_1min"]
    return {
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


def save_calibration(result: dict, path: str | os.PathLike | None, command: str) -> dict:
    """Store the calibration row of ``result`` (:func:`calibration_row`), replacing the row of its model and device,
    in the file at ``path`` (default :func:`hsaudit.pipeline.costs.calibration_path`); return the row."""
    row = calibration_row(result, command)
    store_calibration(row, path)
    return row


def step_seconds(
    spec: ModelSpec,
    *,
    device: str | None = None,
    batch: int | None = None,
    steps: int = 5,
    population: int = 1,
    seed: int = 0,
) -> float:
    """Seconds per model-step of ``population`` models of ``spec`` through the engine: :func:`measure_engine`'s
    engine row (the same timing ``--save-calibration`` stores), without Opacus (what ``hsaudit plan --calibrate``
    prints).

    Args:
        spec: the architecture.
        device: ``"cpu"``, ``"cuda"`` (default: CUDA when available).
        batch: B (default: the spec's bench batch).
        steps: timed steps (after one untimed warm-up step).
        population: models per step (the time is divided by it).
        seed: seed of θ0, data and batches.

    Raises:
        ValueError: non-positive counts.
    """
    result = measure_engine(
        spec=spec, models=(int(population),), steps=int(steps), batch_size=int(batch or spec.bench.batch),
        opacus_models=0, device=device, seed=seed,
    )
    return float(result["populations"][0]["seconds_per_model_step"])


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
