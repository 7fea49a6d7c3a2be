"""Snakemake adapter: prepare one dataset (hsaudit.data.datasets.configured_dataset) -> results/data/{dataset}.npz."""

from hsaudit.data.datasets import configured_dataset, save_dataset
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
name = snakemake.wildcards.dataset
data = configured_dataset(name, snakemake.params.options)
save_dataset(data, snakemake.output.data)
log.info("%s from %s: %d rows, X %s, classes %s", name, data.source, data.n, tuple(data.X.shape), sorted(set(data.y.tolist())))
