"""Snakemake adapter: gather an audit's shards into a tidy scores table (hsaudit.experiments.cebere.scores.scores_table)."""

import os
from pathlib import Path

from hsaudit.experiments.cebere.scores import scores_table
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
table = scores_table(snakemake.input.shards)
out = Path(snakemake.output.scores)
tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
table.to_parquet(tmp, index=False)
os.replace(tmp, out)
log.info("%d shards -> %d runs x %d steps", len(snakemake.input.shards), table["run"].nunique(), table["step"].nunique())
