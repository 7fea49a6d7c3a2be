"""``hsaudit bench train``: the vectorised population trainer against the Opacus one-model loop, side by side.

Both trainers run in this process on the same Housing-like task (Cebere et al. §5: 8 standardised features,
binary label, FCNN with 68 parameters, T = 250, batch 400, η = 0.1, C = 1, σ = 4, k = 1): a population of
``--models`` models through :func:`hsaudit.populations.train_shard`, then ``--opacus-models`` models one at a time
through :func:`hsaudit.reference.train_reference`. The data are synthetic (a fixed linear-logistic rule on
standard normal features, 20,640 rows like California Housing) so that the benchmark needs no download; the cost
does not depend on the values. ``--data FILE.npz`` uses a prepared dataset (:func:`hsaudit.data.load_dataset`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import time

import numpy as np
import torch

from hsaudit.adversaries import craft
from hsaudit.reference import train_reference
from hsaudit.populations import train_shard
from hsaudit.train import DPSGDConfig, make_setup, model_noise, pick_device


def register(sub) -> None:
    parser = sub.add_parser("train", help="time the vectorised DP-SGD population against the Opacus loop")
    parser.add_argument("--models", type=int, default=1000, help="population size of the vectorised run")
    parser.add_argument("--opacus-models", type=int, default=3, help="models trained one at a time by Opacus")
    parser.add_argument("--steps", type=int, default=250, help="T (default 250)")
    parser.add_argument("--batch-size", type=int, default=400, help="B (default 400)")
    parser.add_argument("--n-train", type=int, default=20640, help="rows of the synthetic training set")
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
        from hsaudit.data import load_dataset

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
        model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=config, crafted=crafted, bits=bits,
        noise_key=seed, device=str(dev), progress=False, workers=workers,
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
                model="fcnn", model_kwargs=kwargs, X=X, y=y, setup=setup, config=config, crafted=crafted,
                bit=int(bits[i % models]), noise=model_noise(seed, i % models, steps, setup.theta0.size),
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


def run(args: argparse.Namespace) -> int:
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)
    result = measure(
        models=args.models,
        opacus_models=args.opacus_models,
        steps=args.steps,
        batch_size=args.batch_size,
        n_train=args.n_train,
        adversary=args.adversary,
        variant=args.variant,
        workers=args.workers,
        device=args.device,
        data=args.data,
        seed=args.seed,
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"{key:>26}: {value:.4g}" if isinstance(value, float) else f"{key:>26}: {value}")
    return 0
