# Datasets of the trained-model audits, and the experiment plans shared by train/scores/audit/figures.
#
# One plan per config section that holds trained-model figures (a "family": housing, cifar10). The plan
# (hsaudit.experiments.plan_experiments) turns the section into setups, audits and figure entries; every audit is
# keyed by a hash of the parameters that change its result (docs/housing.md, docs/cifar10.md), and its files live
# under results/{family}/. Kept here, next to the first rule that needs it, rather than in common.smk.
from hsaudit.experiments import (
    FAMILIES,
    audit_table_paths,
    dataset_name,
    figure_shard_paths,
    hyperparameters,
    plan_experiments,
    scores_paths,
    setup_path,
    shard_paths,
)
from hsaudit.provenance import code_version
from hsaudit.seeding import derive_seed

PLANS = {
    family: plan_experiments(config[family], seed=SEED, family=family)
    for family in FAMILIES
}
HOUSING = PLANS["housing"]
CIFAR10 = PLANS["cifar10"]

# Code versions narrowed to the modules each rule family runs (see CODE_VERSION in common.smk): restyling a
# figure does not retrain populations, and another part's edits do not rerun the training jobs.
TRAINED_CODE = {
    "data": code_version("hsaudit.data"),
    "features": code_version("hsaudit.data", "hsaudit.alexnet"),
    "train": code_version(
        "hsaudit.data",
        "hsaudit.train",
        "hsaudit.populations",
        "hsaudit.adversaries",
        "hsaudit.experiments",
    ),
    "audit": code_version("hsaudit.experiments", "hsaudit.audit", "hsaudit.accounting"),
    "plot": code_version("hsaudit.figures.housing", "hsaudit.plotting"),
    "plot_cifar": code_version("hsaudit.figures.cifar", "hsaudit.plotting"),
}


def family_resources(key):
    """A train_shard resource of the job's family (config[family].resources[key])."""
    return lambda wc: config[wc.family]["resources"][key]


def dataset_options(name):
    """The data section of a dataset's family (hsaudit.data.configured_dataset reads it)."""
    return dict(config[name]["data"])


def audit_dataset(wc):
    """results/data/<dataset>.npz that audit wc.audit trains on (e.g. cifar10_alexnet for the AlexNet head)."""
    spec = PLANS[wc.family].audits[wc.audit]["setup"]
    return f"results/data/{dataset_name(wc.family, spec['model'])}.npz"


def setup_dataset(wc):
    """The dataset of setup wc.setup."""
    spec = PLANS[wc.family].setups[wc.setup]
    return f"results/data/{dataset_name(wc.family, spec['model'])}.npz"


wildcard_constraints:
    family="|".join(FAMILIES),
    dataset="|".join(FAMILIES),
    setup=r"[0-9a-f]{12}",
    audit=r"[0-9a-f]{12}",
    runs=r"\d+",
    size=r"\d+",
    index=r"\d+",


rule prepare_data:
    output:
        data="results/data/{dataset}.npz",
    log:
        log_path("data/prepare_data/{dataset}"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=lambda wc: dataset_options(wc.dataset),
        code_version=TRAINED_CODE["data"],
    script:
        "../scripts/prepare_data.py"


rule extract_features:
    input:
        data="results/data/{dataset}.npz",
    output:
        data="results/data/{dataset}_alexnet.npz",
    log:
        log_path("data/extract_features/{dataset}"),
    benchmark:
        bench_path("data/extract_features/{dataset}")
    conda:
        "../../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=lambda wc: config[wc.dataset]["resources"]["gpu"],
    params:
        weights=lambda wc: config[wc.dataset]["data"]["alexnet_weights"],
        data_dir=lambda wc: config[wc.dataset]["data"]["data_dir"],
        download=lambda wc: config[wc.dataset]["data"]["download"],
        device=lambda wc: config[wc.dataset]["device"],
        code_version=TRAINED_CODE["features"],
    script:
        "../scripts/extract_features.py"
