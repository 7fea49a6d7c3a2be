"""Snakemake adapter: draw θ0 and the fixed minibatch schedule of one setup (hsaudit.engine.dpsgd.make_setup)."""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.experiments.cebere.plan import write_params_json
from hsaudit.engine.dpsgd import DPSGDConfig, make_setup, save_setup
from hsaudit.engine.models import model_spec
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
data = load_dataset(snakemake.input.data)
setup = make_setup(
    spec=model_spec(spec["model"], **spec["model_kwargs"]),
    n_train=data.n,
    config=DPSGDConfig(**spec["dpsgd"]),
    seed=snakemake.params.seed,
    theta0_init=spec.get("theta0_init", "default"),
)
save_setup(setup, snakemake.output.setup)
write_params_json(spec, snakemake.output.params_json, key=snakemake.wildcards.setup, derived_seed=snakemake.params.seed)
log.info("setup %s: %d parameters, batches %s", snakemake.wildcards.setup, setup.theta0.size, tuple(setup.batches.shape))
