"""Snakemake adapter: one run of a Yoon et al. population (hsaudit.experiments.yoon.train.train_run): θ0 (θ_avg, or
θ_worst pre-trained), the canary, and the run's independent populations of full-batch DP-SGD models (crafting:
N_craft + N_craft, audit: N + N, and a validation population where asked)."""

import numpy as np
import torch

from hsaudit.engine.models import spec_of
from hsaudit.experiments.yoon.train import train_run
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
spec, run = snakemake.params.spec, int(snakemake.wildcards.run)
torch.set_num_threads(snakemake.threads)
with np.load(snakemake.input.data) as f:
    data = {k: f[k] for k in f.files}
pretrain = None
if snakemake.input.get("pretrain"):
    with np.load(snakemake.input.pretrain) as f:
        pretrain = {"X": f["X"], "y": f["y"]}
sigma = float(snakemake.params.noise_multiplier)  # σ(ε) from the plan (hsaudit.experiments.yoon.plan)
log.info("%s, ε = %g: σ = %.4f", spec["model"], spec["epsilon"], sigma)
arrays = train_run(
    spec, data, arch=spec_of(spec), population_key=snakemake.wildcards.population, run=run, noise_multiplier=sigma,
    pretrain_data=pretrain, device=snakemake.params.device,
)
log.info("canary %s (label %d, %s)", arrays["canary_kind"], arrays["canary_y"], arrays["canary_source"])
atomic_savez(snakemake.output.models, arrays)
