"""Snakemake adapter: the training set of Steinke et al. fig2 (hsaudit.data.datasets.configured_dataset) -> .npz."""

from hsaudit.data.datasets import configured_dataset
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import atomic_savez
from hsaudit.util.locks import data_lock, file_lock

log = script_logging(snakemake)
section = dict(snakemake.params.section)
with file_lock(data_lock(section)):  # a synthetic copy is written once, by one job, before any job reads it
    data = configured_dataset(snakemake.params.dataset, section)
atomic_savez(snakemake.output.data, {"X": data.X, "y": data.y, "data_source": data.data_source})
log.info("%s: X %s (%s)", snakemake.params.dataset, tuple(data.X.shape), data.data_source)
