# Shared Python for the rules: config resolution, wildcard constraints, input functions.
# The only .smk file that holds Python beyond rule declarations.
import json

from hsaudit import __version__ as HSAUDIT_VERSION
from hsaudit.config import check_config, resolve_scale
from hsaudit.provenance import code_version

# The scale preset's overrides are merged in, then the merged config is validated again so that an
# override with a bad value is caught as well.
config.update(resolve_scale(config))
check_config(
    config,
    f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
    source="config after the scale preset",
)
validate(config, "../schemas/config.schema.yaml")

SCALE = config["scale"]
AUDIT = config["audit"]
SEED = config["seed"]

# Every figure target of the project, appended to by the experiment rule files. `rule all` builds the
# targets whose `kind` is "cpu"; GPU-sized ones are named explicitly (see README.md).
FIGURES = []
FIGURE_KINDS = {}


def register_figure(path, kind="cpu"):
    """Record a figure target (its PDF path) so that `rule all` and `hsaudit plan` know of it."""
    FIGURE_KINDS[path] = kind
    if kind == "cpu":
        FIGURES.append(path)
    return path


# Code version as a param of every rule calling package code (package version + SHA-256 of the package
# source, hsaudit.provenance.code_version), so a new release or an edited module reruns those jobs. A
# family of rules may narrow it to the modules it imports (transitively), e.g.
# code_version("hsaudit.section6", "hsaudit.figures.section6"): then only edits there rerun its jobs.
CODE_VERSION = code_version()


def log_path(name):
    return f"results/logs/{name}.log"


def bench_path(name):
    return f"results/benchmarks/{name}.tsv"


# ---- Execution: archives and the GPU pre-flight warning (workflow/rules/archive.smk, docs/cluster.md) ----
EXECUTION = config.get("execution", {})


def archive_path(figure_pdf):
    """results/fig3.pdf -> results/archive/fig3.tar.gz (steinke/fig1 -> results/archive/steinke/fig1.tar.gz)."""
    stem = figure_pdf.removeprefix("results/").removesuffix(".pdf")
    return f"results/archive/{stem}.tar.gz"


def archive_inputs(wildcards):
    """The registered figure behind results/archive/{figure}.tar.gz: its PDF and CSV."""
    pdf = f"results/{wildcards.figure}.pdf"
    if pdf not in FIGURE_KINDS:
        raise ValueError(
            f"results/archive/{wildcards.figure}.tar.gz: no registered figure {pdf}; "
            f"known: {', '.join(sorted(FIGURE_KINDS))}"
        )
    return {"pdf": pdf, "csv": pdf.removesuffix(".pdf") + ".csv"}


def gpu_preflight_warning(workflow):
    """Warn once, before jobs start, when a paper-scale GPU-sized target runs locally without a GPU."""
    import sys

    from hsaudit.plan import gpu_warning, has_local_gpu

    if not EXECUTION.get("gpu_warning", True) or not workflow.local_exec:
        return
    targets = workflow.dag_settings.targets or FIGURES
    message = gpu_warning(targets, config, has_gpu=has_local_gpu())
    if message:
        print(message, file=sys.stderr)


# ---- Trained-model audits (data/train/scores/audit/figures.smk): one plan per family (docs/housing.md,
# docs/cifar10.md). The plan (hsaudit.experiments.plan_experiments) turns a config section into setups, audits and
# figure entries; every audit is keyed by a hash of the parameters that change its result and lives under
# results/{family}/.
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

# Code versions narrowed to the modules each family of rules runs (see CODE_VERSION above); restyling a
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


def crafting_resources(key, light):
    """craft_adversary's resource: the family's training resource for A_GC-S (it simulates training), else light."""

    def resource(wc):
        if PLANS[wc.family].audits[wc.audit]["adversary"].startswith("gc_s"):
            return config[wc.family]["resources"][key]
        return light

    return resource


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


def cifar_refs(figure):
    """The audit references of a CIFAR-10 figure as dicts, each with its dataset's data_source filled in."""
    return [vars(ref) for ref in CIFAR10.figures[figure]]


def cifar_datasets(figure):
    """The prepared datasets behind a CIFAR-10 figure's audits, in reference order (for their data_source)."""
    return [
        f"results/data/{dataset_name('cifar10', ref.model)}.npz"
        for ref in CIFAR10.figures[figure]
    ]


# ---- Yoon et al. (workflow/rules/yoon.smk, docs/yoon.md): data, populations and audits keyed by
# hsaudit.yoon_plan; every figure is GPU-sized at paper scale.
from hsaudit.yoon_plan import FIGURES as YOON_FIGURES
from hsaudit.yoon_plan import figure_audit_paths, figure_outputs, plan_yoon

YOON = plan_yoon(config["yoon"], seed=SEED, audit=AUDIT)
YOON_CODE = {
    "data": code_version("hsaudit.data"),
    "train": code_version("hsaudit.data", "hsaudit.yoon.populations"),
    "audit": code_version(
        "hsaudit.yoon.crafting", "hsaudit.audit", "hsaudit.accounting"
    ),
    "plot": code_version("hsaudit.figures.yoon", "hsaudit.plotting"),
}


def yoon_population_inputs(wc):
    """The prepared data of a population (and the pre-training set of a CIFAR-10 θ_worst)."""
    spec = YOON.populations[wc.population]
    inputs = {"data": f"results/yoon/data/{spec['data']}.npz"}
    if spec.get("pretrain_data"):
        inputs["pretrain"] = f"results/yoon/data/{spec['pretrain_data']}.npz"
    return inputs


def yoon_audit_data(wc):
    """The prepared data of the population an audit crafts on (the black box queries D′'s inputs)."""
    population = YOON.populations[YOON.audits[wc.audit]["population"]]
    return f"results/yoon/data/{population['data']}.npz"


def yoon_scores_paths(figure):
    """The per-model scores behind a figure that draws them (fig2's histograms); none for the others."""
    if figure != "fig2":
        return []
    return [
        path.removesuffix(".csv") + "_scores.csv"
        for path in figure_audit_paths(YOON, figure)
    ]
