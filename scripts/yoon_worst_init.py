"""θ_worst vs θ_avg at laptop scale: the canary's own ε̂ (a_c) of Yoon et al.'s fig7, without crafting (docs/journal/yoon.md,
"θ_worst at laptop scale").

Each cell is (init, auxiliary pre-training set size and epochs, DP-SGD lr η, steps T); every cell trains, per run,
one population of N models on D and N on D ∪ {blank canary} with full-batch DP-SGD at ε = 10 (σ recalibrated to T)
and audits the canary on it (audit mode ``paper``, δ = 1e-5). The runs are paired across cells: run r has the same
θ_avg, D, canary and noise key in every cell (θ_worst is θ_avg of that run pre-trained). Besides ε̂ it records the
test accuracy of the init and of the final models (mean over the population, 1,000 test images) and the mean
distance ‖θ_T − θ0‖, which shows how far the noisy training moves the models from their init.

    PYTHONPATH=src python scripts/yoon_worst_init.py --mnist <folder>/package/data --runs 4 --out results/yoon_worst_init.csv
    PYTHONPATH=src python scripts/yoon_worst_init.py --summary results/yoon_worst_init.csv

Rows are appended as runs finish (a cell × run already in ``--out`` is skipped), so the study can be resumed.
No pipeline state is read or written.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from hsaudit.data.datasets import configured_dataset
from hsaudit.engine.models import model_spec
from hsaudit.experiments.yoon import audit, crafting, train
from hsaudit.experiments.yoon.plan import noise_multiplier
from hsaudit.util.seeding import derive_seed

MODEL = model_spec("mnist_cnn")  # resolved once, handed to every function below
# (name, init, aux_size (None: the whole other half, 30,000), pre-training epochs, η, T).
# η = 4 is the paper's; η = 0.17 makes ηT/|D| (the per-coordinate scale of both the canary's signal and the noise
# at fixed ε) the paper's 4·100/30,000 with |D| = 256, T = 20. The T = 100 cells (ηT of the η = 4 ones) are defined
# but were not run for docs/yoon.md (the budget went to |D| = 1,024: --d-size 1024 --models-per-world 16).
CELLS = {
    "avg-eta4-T20": ("avg", None, 0, 4.0, 20),
    "worst5k-e5-eta4-T20": ("worst", 5000, 5, 4.0, 20),
    "worstall-e5-eta4-T20": ("worst", None, 5, 4.0, 20),
    "avg-eta0.17-T20": ("avg", None, 0, 0.17, 20),
    "worst5k-e5-eta0.17-T20": ("worst", 5000, 5, 0.17, 20),
    "worstall-e5-eta0.17-T20": ("worst", None, 5, 0.17, 20),
    "avg-eta0.8-T100": ("avg", None, 0, 0.8, 100),
    "worst5k-e5-eta0.8-T100": ("worst", 5000, 5, 0.8, 100),
}


def _load(mnist: str, *, d_size: int, seed: int):
    section = {"source": "local", "path": mnist, "normalize": {"mean": [0.1307], "std": [0.3081]}, "subset_seed": seed}
    d = configured_dataset("mnist", {**section, "subset": d_size, "subset_offset": 0})
    aux = configured_dataset("mnist", {**section, "subset": 30000, "subset_offset": 30000})
    test = configured_dataset("mnist", {**section, "train": False, "subset": 1000, "subset_offset": 0})
    return d, aux, test


def _accuracy(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Mean test accuracy of the models ``theta`` (one flat θ or ``[m, p]``)."""
    th = torch.as_tensor(np.atleast_2d(theta), dtype=torch.float32)
    with torch.no_grad():
        logits = torch.cat([crafting.population_logits(MODEL, th[i : i + 16], torch.as_tensor(X), device="cpu")
                            for i in range(0, th.shape[0], 16)])  # fmt: skip
    return float((logits.argmax(-1).numpy() == y[None]).mean())


def run_cell(name: str, run: int, *, data, models_per_world: int, epsilon: float, delta: float, seed: int) -> dict:
    init, aux_size, epochs, eta, steps = CELLS[name]
    d, aux, test = data
    theta_avg = train.average_theta0(MODEL, seed=derive_seed(seed, "yoon-worst-study", "theta0", run))
    theta0 = theta_avg
    if init == "worst":
        n_aux = aux.X.shape[0] if aux_size is None else int(aux_size)
        theta0 = train.pretrain(MODEL, theta_avg, aux.X[:n_aux], aux.y[:n_aux], epochs=epochs, lr=0.01,
                                      batch_size=32,
                                      seed=derive_seed(seed, "yoon-worst-study", "worst", run))  # fmt: skip
    canary = train.make_canary("blank", spec=MODEL, X=d.X, y=d.y, aux_X=aux.X, aux_y=aux.y, theta0=theta0,
                                     mean=d.mean, std=d.scale, seed=seed)  # fmt: skip
    sigma = noise_multiplier(epsilon, steps=steps, delta=delta)
    theta, members = train.train_worlds(
        spec=MODEL, theta0=theta0, X=d.X, y=d.y, canary=canary, models_per_world=models_per_world, steps=steps,
        lr=eta, clip_norm=1.0, sigma=sigma, noise_key=derive_seed(seed, "yoon-worst-study", "noise", run), device="cpu",
    )
    sample = crafting.craft_sample("a_c", spec=MODEL, theta=theta, members=members, canary=canary)
    scores = crafting.sample_scores(MODEL, theta, sample)
    result = audit.audit_scores(scores, members, delta=delta, confidence=0.95, mode="paper",
                                seed=derive_seed(seed, "yoon-audit", run))  # fmt: skip
    bits = members.astype(bool)
    return {
        "cell": name, "run": run, "init": init, "aux_size": aux_size or aux.X.shape[0] if init == "worst" else 0,
        "pre_epochs": epochs, "eta": eta, "steps": steps, "d_size": d.X.shape[0], "models_per_world": models_per_world,
        "epsilon_theory": epsilon, "noise_multiplier": sigma, "epsilon": result["epsilon"], "mu": result["mu"],
        "loss_in": float(-scores[bits].mean()), "loss_out": float(-scores[~bits].mean()),
        "acc_init": _accuracy(theta0, test.X, test.y), "acc_final": _accuracy(theta, test.X, test.y),
        "distance": float(np.linalg.norm(theta - theta0[None], axis=1).mean()),
        "init_norm": float(np.linalg.norm(theta0)),
    }


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd over runs of every cell, in the order of :data:`CELLS`, and for a θ_worst cell the paired
    difference of ε̂ from the θ_avg cell of the same η and T (same runs: same θ_avg, canary and noise key)."""
    g = table.groupby("cell", sort=False)
    out = g.agg(runs=("run", "size"), eps_mean=("epsilon", "mean"), eps_sd=("epsilon", "std"),
                mu_mean=("mu", "mean"), acc_init=("acc_init", "mean"), acc_final=("acc_final", "mean"),
                distance=("distance", "mean"), init_norm=("init_norm", "mean"),
                loss_in=("loss_in", "mean"), loss_out=("loss_out", "mean"))  # fmt: skip
    eps = table.pivot(index="run", columns="cell", values="epsilon")
    for cell in out.index:
        init, _, _, eta, steps = CELLS[cell]
        base = [c for c, v in CELLS.items() if v[0] == "avg" and v[3:] == (eta, steps) and c in eps.columns]
        if init == "worst" and base:
            diff = (eps[cell] - eps[base[0]]).dropna()
            out.loc[cell, "minus_avg_mean"], out.loc[cell, "minus_avg_sd"] = diff.mean(), diff.std()
            out.loc[cell, "pairs"] = diff.size
    return out.reindex([c for c in CELLS if c in out.index])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mnist", help="folder with MNIST's IDX files")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--cells", nargs="*", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--models-per-world", type=int, default=32)
    parser.add_argument("--d-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/yoon_worst_init.csv")
    parser.add_argument("--summary", help="only print the summary of this CSV")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    if args.summary:
        print(summary(pd.read_csv(args.summary)).round(3).to_string())
        return
    torch.set_num_threads(1)
    data = _load(args.mnist, d_size=args.d_size, seed=args.seed)
    out = Path(args.out)
    done = pd.read_csv(out) if out.exists() else pd.DataFrame(columns=["cell", "run"])
    for run in range(args.runs):  # runs outermost: every cell gets its first runs before any gets its fourth
        for name in args.cells:
            if ((done["cell"] == name) & (done["run"] == run)).any():
                continue
            start = time.time()
            row = run_cell(name, run, data=data, models_per_world=args.models_per_world, epsilon=10.0,
                           delta=1e-5, seed=args.seed)  # fmt: skip
            row["seconds"] = round(time.time() - start, 1)
            done = pd.concat([done, pd.DataFrame([row])], ignore_index=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            done.to_csv(out, index=False)
            print(f"{name} run {run}: eps_hat {row['epsilon']:.2f}, acc {row['acc_init']:.3f} -> "
                  f"{row['acc_final']:.3f}, dist {row['distance']:.2f}, {row['seconds']} s", flush=True)  # fmt: skip
    print(summary(done).round(3).to_string())


if __name__ == "__main__":
    main()
