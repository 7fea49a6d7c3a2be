"""Snakemake adapter: the adversary's crafted object of one audit (hsaudit.experiments.cebere.train.adversaries.craft)."""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.engine.models import spec_of
from hsaudit.experiments.cebere.train.adversaries import craft, save_crafted, write_params_json
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
setup_spec = spec["setup"]
data = load_dataset(snakemake.input.data)
crafted = craft(
    spec["adversary"],
    spec=spec_of(setup_spec),
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    seed=snakemake.params.seed,
    simulations=spec["simulations"] or 1,
    device=snakemake.params.device,
)
save_crafted(crafted, snakemake.output.crafted)
write_params_json(spec, snakemake.output.params_json, key=snakemake.wildcards.audit, derived_seed=snakemake.params.seed)
log.info(
    "audit %s: %s, dimension %s, canary row %s",
    snakemake.wildcards.audit, crafted.adversary, crafted.dim, crafted.source_index,
)
