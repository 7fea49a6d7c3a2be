"""Snakemake adapter: one run of a Yoon et al. point: θ0 (θ_avg, or θ_worst pre-trained), the canary, and two
independent populations of full-batch DP-SGD models (crafting: N_craft + N_craft, audit: N + N, and a validation
population where asked) (hsaudit.experiments.yoon)."""

import numpy as np
import torch

from hsaudit.experiments.yoon import populations as yoon
from hsaudit.util.io import atomic_savez
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.seeding import derive_seed

log = script_logging(snakemake)
spec, run = snakemake.params.spec, int(snakemake.wildcards.run)
torch.set_num_threads(snakemake.threads)
with np.load(snakemake.input.data) as f:
    data = {k: f[k] for k in f.files}
model, seed = spec["model"], spec["seed"]
init_seed = derive_seed(seed, "yoon-theta0", spec["data"], spec["model"], "shared" if spec["shared_init"] else run)
theta0 = yoon.average_theta0(model, seed=init_seed, bias=spec["init_bias"])
if spec["init"] == "worst":
    worst, pre = spec["worst"], {}
    if snakemake.input.get("pretrain"):
        with np.load(snakemake.input.pretrain) as f:
            pre = {"X_pre": f["X"], "y_pre": f["y"], "pre_epochs": worst["pre_epochs"]}
    theta0 = yoon.pretrain(
        model, theta0, data["aux_X"], data["aux_y"], epochs=worst["epochs"], lr=worst["lr"],
        batch_size=worst["batch_size"], seed=derive_seed(init_seed, "worst"), progress=True, **pre,
    )
canary = yoon.make_canary(
    spec["canary"], model=model, X=data["X"], aux_X=data["aux_X"], aux_y=data["aux_y"], theta0=theta0,
    mean=data["mean"], std=data["std"], seed=derive_seed(seed, "yoon-canary", spec["data"], run),
    blank_label=spec["blank_label"], ood=spec.get("mislabeled_ood", "invert"),
)
sigma = float(snakemake.params.noise_multiplier)  # σ(ε) from the plan (hsaudit.experiments.yoon.plan)
log.info("%s, ε = %g: σ = %.4f, canary %s (label %d, %s)", model, spec["epsilon"], sigma, canary.kind, canary.y, canary.source)
# The crafting and audit populations (and a validation population where asked), each with its own noise.
sizes = {
    "craft": spec.get("craft_models_per_world") or spec["models_per_world"],
    "audit": spec["models_per_world"],
    "validation": spec.get("validation_models_per_world", 0),
}
populations = {}
for role, size in sizes.items():
    if not size:
        continue
    theta, bits = yoon.train_worlds(
        model=model, theta0=theta0, X=data["X"], y=data["y"], canary=canary,
        models_per_world=size, steps=spec["steps"], lr=spec["lr"], clip_norm=spec["clip_norm"],
        sigma=sigma, noise_key=derive_seed(seed, "yoon-noise", snakemake.wildcards.population, run, role),
        device=snakemake.params.device, progress=True,
    )
    populations[f"{role}_theta"] = theta
    populations[f"{role}_members"] = bits
members = populations.pop("audit_members")
atomic_savez(
    snakemake.output.models,
    {
        **populations,
        "members": members,
        "theta0": theta0,
        "canary_x": canary.x,
        "canary_y": np.int64(canary.y),
        "canary_kind": canary.kind,
        "canary_source": canary.source,
        "noise_multiplier": np.float64(sigma),
        "data_source": str(data["data_source"]),
    },
)
