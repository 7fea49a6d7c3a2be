"""Snakemake adapter: prepare California Housing (hsaudit.data.load_housing) -> results/data/housing.npz."""

import logging

from hsaudit.data import load_housing, save_dataset

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
params = snakemake.params
data = load_housing(
    path=params.path,
    data_dir=params.data_dir,
    download=params.download,
    threshold=params.threshold,
    standardize=params.standardize,
)
save_dataset(data, snakemake.output.data)
log.info(
    "housing from %s: %d rows, %d features, threshold %.6g, positive fraction %.4f",
    data.source, data.n, data.X.shape[1], data.threshold, float(data.y.mean()),
)
