"""Snakemake adapter: one dataset of the Yoon et al. audits (hsaudit.experiments.yoon.plan): D and the auxiliary half, or a
pre-training set, prepared by hsaudit.data.datasets and written as one .npz."""

from hsaudit.data.datasets import configured_dataset
from hsaudit.util.io import atomic_savez
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.locks import data_lock, file_lock

log = script_logging(snakemake)
spec = snakemake.params.spec
section = dict(spec["section"])
common = {"subset_seed": spec["split_seed"]}


def prepare(subset: int, offset: int):
    return configured_dataset(spec["dataset"], {**section, **common, "subset": subset, "subset_offset": offset})


with file_lock(data_lock(section)):  # a synthetic copy is written once, by one job, before any job reads it
    if spec["role"] == "train":
        d, aux = prepare(spec["d_size"], 0), prepare(spec["aux_size"], spec["aux_offset"])
        arrays = {"X": d.X, "y": d.y, "aux_X": aux.X, "aux_y": aux.y}
        log.info("%s: D %s, auxiliary %s (%s)", spec["dataset"], d.X.shape, aux.X.shape, d.data_source)
    else:
        d = prepare(spec["size"], 0)
        arrays = {"X": d.X, "y": d.y}
        log.info("%s: pre-training set %s (%s)", spec["dataset"], d.X.shape, d.data_source)
atomic_savez(snakemake.output.data, {**arrays, "mean": d.mean, "std": d.scale, "data_source": d.data_source})
