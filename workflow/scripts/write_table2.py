"""Snakemake adapter: Table 2 of Cebere et al. from the resolved config (hsaudit.figures.cifar.write_table2)."""

import logging

from hsaudit.figures.cifar import write_table2

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
params = snakemake.params
families = [{**f, "data_source": params.data_sources[f["dataset"]]} for f in params.families]
table = write_table2(families, snakemake.output.md, snakemake.output.csv, scale=params.scale, code_version=params.code_version)
log.info("table2: %d families\n%s", len(table), table.to_string())
