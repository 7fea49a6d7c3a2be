"""Snakemake adapter: AlexNet features of a prepared image dataset (hsaudit.data.alexnet_feature_dataset)."""

import logging

import torch

from hsaudit.data import alexnet_feature_dataset, load_dataset, save_dataset

# Our messages at INFO; other libraries (e.g. fontTools while writing PDFs) only from WARNING.
logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
log = logging.getLogger("hsaudit.workflow")
log.setLevel(logging.INFO)
logging.captureWarnings(True)
torch.set_num_threads(snakemake.threads)
params = snakemake.params
features = alexnet_feature_dataset(
    load_dataset(snakemake.input.data),
    weights=params.weights,
    data_dir=params.data_dir,
    download=params.download,
    device=params.device,
)
save_dataset(features, snakemake.output.data)
log.info("%s: %d images -> features %s (%s)", snakemake.wildcards.dataset, features.n, features.X.shape, features.data_source)
