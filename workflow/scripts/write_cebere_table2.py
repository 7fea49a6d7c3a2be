"""Snakemake adapter: Table 2 of Cebere et al. from the resolved config (hsaudit.experiments.cebere.figures.cifar.write_table2)."""

from hsaudit.experiments.cebere.figures.cifar import write_table2
from hsaudit.experiments.cebere.table2 import with_model_facts
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
families = [{**with_model_facts(f), "data_source": params.data_sources[f["dataset"]]} for f in params.families]
table = write_table2(families, snakemake.output.md, snakemake.output.csv, scale=params.scale, code_version=params.code_version)
log.info("table2: %d families\n%s", len(table), table.to_string())
