"""Snakemake adapter: Table 2 of Cebere et al. from the plan's rows (hsaudit.experiments.cebere.figures.table2)."""

import pandas as pd

from hsaudit.experiments.cebere.figures.table2 import with_model_facts, write_table2
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
rows = [{**with_model_facts(row), "data_source": params.data_sources[row["dataset"]]} for row in params.rows]
table = write_table2(
    pd.DataFrame(rows, dtype=object),
    pdf=snakemake.output.md,
    csv=snakemake.output.csv,
    facts=dict(params.facts, code_version=params.code_version),
)
log.info("table2: %d families\n%s", len(table), table.to_string())
