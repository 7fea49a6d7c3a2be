"""Snakemake adapter: gather an audit's shards into a tidy scores table (hsaudit.experiments.scores_table)."""

import logging
import os
from pathlib import Path

from hsaudit.experiments import scores_table

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
table = scores_table(snakemake.input.shards)
out = Path(snakemake.output.scores)
tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
table.to_parquet(tmp, index=False)
os.replace(tmp, out)
log.info("%d shards -> %d runs x %d steps", len(snakemake.input.shards), table["run"].nunique(), table["step"].nunique())
