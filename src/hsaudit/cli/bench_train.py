"""``hsaudit bench train``: the population engine against the Opacus one-model loop and the non-private floor.

The benchmarks are :mod:`hsaudit.bench.train`; this module parses the command line and prints.

- ``--model M`` (any registry model but ``fcnn``, or ``fcnn`` with ``--sampling poisson``):
  :func:`hsaudit.bench.train.measure_engine` at the population sizes ``--models N[,N...]`` (default: the model's
  :attr:`~hsaudit.engine.models.ModelSpec.bench` sizes); ``--full-batch`` (Yoon et al.), ``--sampling poisson
  [--sampling-rate q]`` (Steinke et al.).
- ``--model fcnn`` (default): the Housing benchmark, :func:`hsaudit.bench.train.measure`, once per ``--models`` size.
- ``--save-calibration [PATH]`` stores the engine's seconds per model-step for
  :func:`hsaudit.pipeline.costs.calibration` (default path :func:`hsaudit.pipeline.costs.calibration_path`).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from hsaudit.bench import train as bench
from hsaudit.engine.models import model_names, model_spec
from hsaudit.pipeline.costs import calibration_path

HOUSING = "fcnn"  # --model fcnn without --sampling poisson runs the Housing benchmark


def register(sub) -> None:
    parser = sub.add_parser("train", description="Time the vectorised DP-SGD population against the Opacus loop.")
    parser.add_argument("--model", default=HOUSING, choices=model_names(), help="architecture (default fcnn: Housing)")
    parser.add_argument(
        "--models",
        default=None,
        help="population size(s), N[,N...] (default: the model's bench sizes, e.g. fcnn 1000, convnet 1,8,64,256; "
        "with --full-batch: 16)",
    )
    parser.add_argument(
        "--opacus-models", type=int, default=None, help="models trained one at a time by Opacus (fcnn: 3, others: 1)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"T of the Housing benchmark ({bench.HOUSING_STEPS}); timed steps otherwise (default: the model's bench "
        "steps, e.g. convnet 3, resnet18_gn 2)",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="B (default: the model's, fcnn 400, others 128)")
    parser.add_argument(
        "--full-batch",
        action="store_true",
        help="full-batch DP-SGD (Yoon et al.): every step is all of the --n-train samples, half the population "
        "with a canary (not the Housing benchmark)",
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
        const="",
        default=None,
        metavar="PATH",
        help="store the measured seconds per model-step (default path: $HSAUDIT_CALIBRATION or "
        "config/calibration.json)",
    )
    parser.add_argument(
        "--n-train", type=int, default=None, help="rows of the synthetic training set (fcnn: 20640; --full-batch: 1000)"
    )
    parser.add_argument("--adversary", default="gc_r", help="Housing: whose insertion to train with (default gc_r)")
    parser.add_argument("--variant", default="8-3-8-1", help="FCNN variant (default 8-3-8-1)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: unchanged)")
    parser.add_argument("--workers", type=int, default=None, help="Housing: train_shard workers (default: auto)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--data", default=None, help="Housing: prepared dataset .npz instead of synthetic data")
    parser.add_argument("--seed", type=int, default=0, help="seed of data, setup, bits and noise")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _sizes(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    if text is None:
        return default
    try:
        sizes = tuple(int(s) for s in text.split(","))
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
    housing = args.model == HOUSING and not poisson
    if args.full_batch and args.model == HOUSING:
        others = ", ".join(m for m in model_names() if m != HOUSING)
        raise ValueError(f"--full-batch needs an image model ({others}), got --model fcnn")
    if args.full_batch and args.batch_size is not None:
        raise ValueError("--full-batch uses B = --n-train; drop --batch-size")
    if not housing:
        spec = model_spec(args.model, **({"variant": args.variant} if args.model == HOUSING else {}))
        batch = args.batch_size or spec.bench.batch
        n_train = args.n_train or (20640 if args.model == HOUSING else None)
        rate = None
        if poisson:
            rate = args.sampling_rate or batch / (n_train or max(4 * batch, 512))
        result = bench.measure_engine(
            spec=spec,
            models=_sizes(args.models, bench.FULL_BATCH_MODELS if args.full_batch else spec.bench.models),
            steps=args.steps or spec.bench.steps,
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
        spec = model_spec(HOUSING, variant=args.variant)
        results = [
            bench.measure(
                models=m,
                opacus_models=3 if args.opacus_models is None else args.opacus_models,
                steps=args.steps or bench.HOUSING_STEPS,
                batch_size=args.batch_size or spec.bench.batch,
                n_train=args.n_train or 20640,
                adversary=args.adversary,
                variant=args.variant,
                workers=args.workers,
                device=args.device,
                data=args.data,
                seed=args.seed,
            )
            for m in _sizes(args.models, spec.bench.models)
        ]
        result = results[0] if len(results) == 1 else {"model": HOUSING, "runs": results}
    if args.save_calibration is not None:
        command = "hsaudit " + " ".join(sys.argv[1:]) if sys.argv[0].endswith("hsaudit") else "hsaudit bench train"
        path = args.save_calibration or None
        saved = [bench.save_calibration(r, path, command) for r in result.get("runs", [result])]
        result["calibration_saved"] = {"path": str(calibration_path(path)), "rows": saved}
    if args.json:
        print(json.dumps(result, indent=2))
    elif "populations" in result:
        print(bench.format_engine(result))
    else:
        for key, value in result.items():
            print(f"{key:>26}: {value:.4g}" if isinstance(value, float) else f"{key:>26}: {value}")
    return 0
