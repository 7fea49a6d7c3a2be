"""Snakemake adapter: the m canary coordinates of a one-run audit (hsaudit.experiments.cebere.one_run.craft_canaries)."""

import torch

from hsaudit.data.datasets import load_dataset
from hsaudit.engine.dpsgd import DPSGDConfig, load_setup
from hsaudit.experiments.cebere.one_run import craft_canaries, save_canaries
from hsaudit.experiments.cebere.plan import write_params_json
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
torch.set_num_threads(snakemake.threads)
spec = snakemake.params.spec
setup_spec = spec["setup"]
data = load_dataset(snakemake.input.data)
canaries = craft_canaries(
    spec["coordinates"],
    canaries=spec["canaries"],
    model=setup_spec["model"],
    model_kwargs=setup_spec["model_kwargs"],
    X=data.X,
    y=data.y,
    setup=load_setup(snakemake.input.setup),
    config=DPSGDConfig(**setup_spec["dpsgd"]),
    seed=snakemake.params.seed,
    device=snakemake.params.device,
)
save_canaries(canaries, snakemake.output.canaries)
write_params_json(spec, snakemake.output.params_json, key=snakemake.wildcards.key, derived_seed=snakemake.params.seed)
log.info("one-run audit %s: %d canaries (%s), coordinates %s", snakemake.wildcards.key, canaries.m, canaries.rule,
         canaries.coordinates.tolist())
