"""Snakemake adapter: A_GC-R's crafted object with d among the fixed-initialisation coordinates (fig12's
``coordinates: fixed_init`` reading; hsaudit.experiments.cebere.train.fixed_init.craft_fixed_init)."""

from hsaudit.engine.dpsgd import load_setup
from hsaudit.engine.models import spec_of
from hsaudit.experiments.cebere.train.adversaries import save_crafted, write_params_json
from hsaudit.experiments.cebere.train.fixed_init import craft_fixed_init
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
spec = snakemake.params.spec
setup_spec = spec["setup"]
crafted = craft_fixed_init(
    spec["adversary"],
    spec=spec_of(setup_spec),
    setup=load_setup(snakemake.input.setup),
    clip_norm=setup_spec["dpsgd"]["clip_norm"],
    seed=snakemake.params.seed,
    setup_scheme=setup_spec.get("theta0_init", "default"),
)
save_crafted(crafted, snakemake.output.crafted)
write_params_json(spec, snakemake.output.params_json, key=snakemake.wildcards.audit, derived_seed=snakemake.params.seed)
log.info("audit %s: %s, fixed-initialisation dimension %s", snakemake.wildcards.audit, crafted.adversary, crafted.dim)
