"""Snakemake adapter: AlexNet features of a prepared image dataset (hsaudit.data.datasets.alexnet_feature_dataset)."""

import torch

from hsaudit.data.datasets import alexnet_feature_dataset, load_dataset, save_dataset
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
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
