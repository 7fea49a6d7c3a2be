"""One shard of an audit's population: the adversary's insertion and score on the DP-SGD layer.

:func:`train_shard` is what the workflow's training jobs run for every dataset (Housing, CIFAR-10, ...): it takes
the adversary's crafted object (:mod:`hsaudit.experiments.cebere.adversaries`), turns it into an insertion and a scorer, and trains
the shard's models with :func:`hsaudit.engine.dpsgd.train_population`. Model ``first_model + i`` of the audit draws the
noise of global index ``first_model + i`` under ``noise_key`` (and, with per-model θ0, its own θ0), so a model's
result does not depend on the shard size it was trained in.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import torch

from hsaudit.experiments.cebere.adversaries import Crafted, insertion_tensors, make_scorer, validate_crafted
from hsaudit.engine.models import model_spec
from hsaudit.engine.psg import MLPPopulation, population_engine
from hsaudit.engine.dpsgd import DPSGDConfig, Observations, Setup, check_data, pick_device, train_population

MIN_MODELS_PER_WORKER = 32  # smaller groups are not worth a thread


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
    noise_key: int,
    first_model: int = 0,
    theta0: npt.ArrayLike | None = None,
    known_theta0: bool = True,
    canary_norms: bool = False,
    device: str | None = None,
    progress: bool = True,
    backend: str = "auto",
    workers: int | None = None,
) -> Observations:
    """Train ``len(bits)`` models at once with DP-SGD and the adversary's insertion; record their scores.

    Args:
        model, model_kwargs: architecture (:func:`hsaudit.engine.models.build_model`).
        X, y: training set (float features, integer labels).
        setup: the minibatch schedule (and the shared θ0) of the audit.
        config: DP-SGD hyper-parameters (T, B, η, C, σ, k).
        crafted: the adversary's object (:func:`hsaudit.experiments.cebere.adversaries.craft`).
        bits: ``[models]`` in {0, 1}; 1 = inserted (member).
        noise_key: key of the audit's counter-based noise (:mod:`hsaudit.engine.noise`).
        first_model: global index of the shard's first model.
        theta0: per-model initialisations ``[models, p]`` (e.g. :func:`hsaudit.engine.dpsgd.population_theta0`);
            ``None``: every model starts from ``setup.theta0``.
        known_theta0: whether the adversary's score may subtract θ0 (see :func:`hsaudit.experiments.cebere.adversaries.make_scorer`).
        canary_norms: also record the canary's unclipped gradient norm at every step (canary adversaries).
        device: ``None``/``"auto"`` = CUDA when available, else CPU. Computation is float32.
        progress: tqdm bar over the steps.
        backend: per-sample gradient backend (:func:`hsaudit.engine.psg.population_engine`).
        workers: CPU worker threads, each training a contiguous group of the models with single-threaded ops.
            ``None``: ``torch.get_num_threads()`` for the FCNN engine on the CPU, else 1 (intra-op threads).
            Results do not depend on it (every model keeps its own noise stream).

    Returns:
        :class:`hsaudit.engine.dpsgd.Observations`: ``scores`` float64 ``[models, T // k]`` (the oriented score, higher ⇒
        inserted, after the update of every insertion step) and, if asked, ``grad_norms`` ``[models, T]``.

    Raises:
        ValueError: on inconsistent shapes, bits outside {0, 1}, or a crafted object of the wrong dimension.
    """
    spec = model_spec(model, **model_kwargs)
    X, y = check_data(spec, X, y, setup)
    bits = np.asarray(bits)
    if bits.ndim != 1 or bits.size == 0 or not np.all((bits == 0) | (bits == 1)):
        raise ValueError(f"bits must be a non-empty 1-D array of 0/1, got shape {bits.shape}")
    if setup.batches.shape != (config.steps, config.batch_size):
        raise ValueError(
            f"setup.batches has shape {setup.batches.shape}, config wants ({config.steps}, {config.batch_size})"
        )
    if int(first_model) != first_model or first_model < 0:
        raise ValueError(f"first_model must be a non-negative integer, got {first_model}")
    dev = pick_device(device)
    engine = population_engine(spec, dev, backend=backend)
    m = bits.size
    if theta0 is None:
        if setup.theta0.shape != (engine.p,):
            raise ValueError(f"setup.theta0 has shape {setup.theta0.shape}, {model!r} has {engine.p} parameters")
        start = torch.from_numpy(np.ascontiguousarray(setup.theta0, dtype=np.float32)).to(dev)
    else:
        theta0 = np.asarray(theta0, dtype=np.float32)
        if theta0.shape != (m, engine.p):
            raise ValueError(f"theta0 must have shape ({m}, {engine.p}), got {theta0.shape}")
        start = torch.from_numpy(np.ascontiguousarray(theta0)).to(dev)
    validate_crafted(crafted, p=engine.p, model=model, model_kwargs=model_kwargs)
    gradient, canary = insertion_tensors(crafted, dev)
    if canary_norms and canary is None:
        raise ValueError(f"canary_norms needs a canary adversary, got {crafted.adversary!r}")
    Xt, yt = torch.from_numpy(X).to(dev), torch.from_numpy(y).to(dev)
    mask = torch.as_tensor(bits, dtype=torch.float32, device=dev)
    if workers is None:
        workers = torch.get_num_threads() if dev.type == "cpu" and isinstance(engine, MLPPopulation) else 1
        workers = min(workers, m // MIN_MODELS_PER_WORKER or 1)
    if int(workers) != workers or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers}")
    if workers > 1 and not isinstance(engine, MLPPopulation):
        # torch.func.functional_call swaps the module's parameters in place: not thread-safe.
        raise ValueError(f"workers > 1 needs the FCNN ('mlp') engine, got workers={workers} for {model!r}")
    workers = min(int(workers), m)

    def run_group(rows: range, show: bool) -> Observations:
        theta_rows = start if start.dim() == 1 else start[rows.start : rows.stop]
        scorer = make_scorer(crafted, engine, theta_rows, known_theta0=known_theta0)
        # torch.func.grad ignores an outer no_grad (a function transform), so this is safe for every backend.
        with torch.no_grad():
            return train_population(
                engine=engine,
                theta0=theta_rows,
                X=Xt,
                y=yt,
                batches=setup.batches,
                config=config,
                noise_key=noise_key,
                models=range(first_model + rows.start, first_model + rows.stop),
                mask=mask[rows.start : rows.stop],
                gradient=gradient,
                canary=canary,
                observe=scorer,
                canary_norms=canary_norms,
                progress=show,
                desc=f"train {model} x{m}" + (f" ({workers} workers, bar: first)" if workers > 1 else ""),
            )

    if workers == 1:
        return run_group(range(m), progress)
    # Models never interact, so a CPU population splits into independent groups, one per worker thread, each
    # with single-threaded ops (torch releases the GIL inside ops). Far more robust than intra-op threading,
    # whose per-op barriers stall whenever another process takes a core (measured in docs/trainer.md).
    bounds = np.linspace(0, m, workers + 1).astype(int)
    groups = [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = [f.result() for f in [pool.submit(run_group, g, progress and i == 0) for i, g in enumerate(groups)]]
    finally:
        torch.set_num_threads(threads)
    return Observations(
        scores=np.concatenate([p.scores for p in parts]),
        grad_norms=np.concatenate([p.grad_norms for p in parts]) if canary_norms else None,
    )

