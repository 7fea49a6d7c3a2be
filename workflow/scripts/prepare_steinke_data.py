"""Snakemake adapter: the training set of Steinke et al. fig2 (hsaudit.data.datasets.configured_dataset) -> .npz."""

from hsaudit.data.datasets import configured_dataset
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez

log = script_logging(snakemake)
data = configured_dataset(snakemake.params.dataset, dict(snakemake.params.section))
atomic_savez(snakemake.output.data, {"X": data.X, "y": data.y, "data_source": data.data_source})
log.info("%s: X %s (%s)", snakemake.params.dataset, tuple(data.X.shape), data.data_source)
