"""Snakemake adapter: gather an audit's shards into a tidy scores table (hsaudit.figures.housing.scores_table)."""

import logging
import os
from pathlib import Path

from hsaudit.figures.housing import scores_table

logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(message)s")
table = scores_table(snakemake.input.shards)
out = Path(snakemake.output.scores)
tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
table.to_parquet(tmp, index=False)
os.replace(tmp, out)
logging.info("%d shards -> %d runs x %d steps", len(snakemake.input.shards), table["run"].nunique(), table["step"].nunique())
