"""Snakemake adapter: prepare one dataset (hsaudit.data.configured_dataset) -> results/data/{dataset}.npz."""

import logging

from hsaudit.data import configured_dataset, save_dataset

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
name = snakemake.wildcards.dataset
data = configured_dataset(name, snakemake.params.options)
save_dataset(data, snakemake.output.data)
log.info("%s from %s: %d rows, X %s, classes %s", name, data.source, data.n, tuple(data.X.shape), sorted(set(data.y.tolist())))
