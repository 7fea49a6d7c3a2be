# Shared Python for the rules: config resolution, wildcard constraints, input functions.
# The only .smk file that holds Python beyond rule declarations.
import json
import sys

import yaml
from snakemake.exceptions import WorkflowError

from hsaudit.pipeline.config import (
    check_config,
    preset_overrides,
    resolve_scale,
    user_values,
)
from hsaudit.pipeline.provenance import script_version as _script_version

# The scale preset's overrides are merged in, then the values the user set explicitly (--config, overlay
# --configfiles whole, a full copy of the config where it differs from config/config.yaml) over them; the merged
# config is validated again so that an override with a bad value is caught as well (precedence:
# hsaudit.pipeline.config).
with open(f"{workflow.basedir}/config/config.yaml") as _fh:
    _EXPLICIT = user_values(
        workflow.config_settings.configfiles,
        workflow.config_settings.config,
        yaml.safe_load(_fh),
    )
for _line in preset_overrides(config, _EXPLICIT):
    print(f"config: your value wins over the preset: {_line}", file=sys.stderr)
config.update(resolve_scale(config, explicit=_EXPLICIT))
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


# Code version of a job, passed as `params: code_version=script_version("<its script>")`: a hash of the script
# and of exactly the package modules it imports, transitively (hsaudit.pipeline.provenance.script_version), so
# an edit reruns the jobs that run the edited code and no others (editing an estimator never retrains).
def script_version(name):
    return _script_version(f"{workflow.basedir}/workflow/scripts/{name}.py")


def unless_missing(missing, inputs):
    """An input function's value for a job of an optional target: ``inputs``, or stop before any job with the message
    ``missing`` (why the target cannot run, e.g. a path the user has not given) when there is one.
    """
    if missing:
        raise WorkflowError(missing)
    return inputs


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

    from hsaudit.pipeline.costs import gpu_warning, has_local_gpu

    if not EXECUTION.get("gpu_warning", True) or not workflow.local_exec:
        return
    targets = workflow.dag_settings.targets or FIGURES
    message = gpu_warning(targets, config, has_gpu=has_local_gpu())
    if message:
        print(message, file=sys.stderr)


# ---- Trained-model audits (data/train/scores/audit.smk, figures in cebere.smk): one plan per family (docs/housing.md,
# docs/cifar10.md). The plan (hsaudit.experiments.cebere.plan.plan_experiments) turns a config section into setups, audits and
# figure entries; every audit is keyed by a hash of the parameters that change its result and lives under
# results/{family}/.
from hsaudit.experiments.cebere.table2 import hyperparameters
from hsaudit.experiments.cebere.plan import (
    FAMILIES,
    audit_table_paths,
    dataset_name,
    figure_shard_paths,
    plan_experiments,
    scores_paths,
    setup_path,
    shard_paths,
    stream_key,
)
from hsaudit.util.seeding import derive_seed

PLANS = {
    family: plan_experiments(config[family], seed=SEED, family=family)
    for family in FAMILIES
}
HOUSING = PLANS["housing"]
CIFAR10 = PLANS["cifar10"]


def craft_seed(wc):
    """The adversary's seed of an audit: from its stream key, so audits that differ only in θ0 craft the same d."""
    return derive_seed(
        SEED, f"{wc.family}-craft", stream_key(PLANS[wc.family].audits[wc.audit])
    )


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
    """The data section of a dataset's family (hsaudit.data.datasets.configured_dataset reads it)."""
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


def cifar_crafted(figure):
    """The adversaries' crafted objects behind fig12 (its CSV names the crafted coordinate d); none elsewhere."""
    if figure != "fig12":
        return []
    return [
        f"results/cifar10/audits/{ref.key}/crafted.npz"
        for ref in CIFAR10.figures[figure]
    ]


def cifar_datasets(figure):
    """The prepared datasets behind a CIFAR-10 figure's audits, in reference order (for their data_source)."""
    return [
        f"results/data/{dataset_name('cifar10', ref.model)}.npz"
        for ref in CIFAR10.figures[figure]
    ]


# ---- Audits in one training run (workflow/rules/one_run.smk, docs/one_run.md): per family, the one-run audit
# (m canaries per model, keyed by hsaudit.experiments.cebere.one_run.plan_one_run) and the A_GC-R population audit of
# the same configuration, registered in the family's plan so that the shared train/scores/audit rules build it
# (for Housing it is fig1c's first gc_r repetition: the same key, the same files).
from hsaudit.experiments.cebere.one_run import (
    one_run_shard_paths,
    plan_one_run,
    population_table_paths,
)
from hsaudit.experiments.cebere.one_run import craft_seed as one_run_craft_seed

ONE_RUN = plan_one_run(
    config["one_run"], {family: config[family] for family in FAMILIES}, seed=SEED
)
for _spec in ONE_RUN.values():
    PLANS[_spec.family].audits.setdefault(_spec.population_key, _spec.population_params)
    PLANS[_spec.family].setups.setdefault(
        _spec.population_params["setup_key"], _spec.population_params["setup"]
    )
ONE_RUN_KEYS = "|".join(spec.key for spec in ONE_RUN.values()) or "^$"
# The figure is GPU-sized when one of its families trains on a GPU (CIFAR-10 at scale=paper).
ONE_RUN_KIND = (
    "gpu"
    if any(config[f]["resources"]["gpu"] for f in config["one_run"]["families"])
    else "cpu"
)


def one_run_spec(wc):
    """The one-run audit of wc.family (its key must be wc.key)."""
    spec = ONE_RUN[wc.family]
    if spec.key != wc.key:
        raise ValueError(
            f"results/one_run/{wc.family}/{wc.key}: the one-run audit of {wc.family} is {spec.key}"
        )
    return spec


def one_run_job(wc):
    """What the one-run scripts need of an audit: its parameters (setup, m, coordinate rule)."""
    return one_run_spec(wc).params


def one_run_dataset(wc):
    """results/data/<dataset>.npz of a one-run audit."""
    return (
        f"results/data/{dataset_name(wc.family, one_run_spec(wc).values['model'])}.npz"
    )


def one_run_setup(wc):
    """The setup (θ0, batches) a one-run audit shares with its population audit."""
    return (
        f"results/{wc.family}/setups/{one_run_spec(wc).params['setup_key']}/setup.npz"
    )


def one_run_tables():
    """The per-family one-run tables behind results/one_run/fig1.pdf, in config order."""
    return [f"{spec.root}/table.csv" for spec in ONE_RUN.values()]


def one_run_datasets():
    """The prepared datasets of the families of results/one_run/fig1.pdf (for their data_source)."""
    return [
        f"results/data/{dataset_name(spec.family, spec.values['model'])}.npz"
        for spec in ONE_RUN.values()
    ]


# ---- Yoon et al. (workflow/rules/yoon.smk, docs/yoon.md): data, populations and audits keyed by
# hsaudit.experiments.yoon.plan; every figure is GPU-sized at paper scale.
from hsaudit.experiments.yoon.plan import FIGURES as YOON_FIGURES
from hsaudit.experiments.yoon.plan import (
    figure_audit_paths,
    figure_outputs,
    noise_multiplier,
    plan_yoon,
)

YOON = plan_yoon(config["yoon"], seed=SEED, audit=AUDIT)


def yoon_noise_multiplier(population):
    """σ of a population's full-batch DP-SGD at its ε, δ and T (computed here, a param of the training job)."""
    spec = YOON.populations[population]
    return noise_multiplier(spec["epsilon"], steps=spec["steps"], delta=spec["delta"])


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


# ---- Cebere et al. Section 6 (workflow/rules/cebere.smk, docs/section6.md)
from hsaudit.experiments.cebere.section6.experiments import check_section6_config

S6 = config["section6"]
check_section6_config(S6)
S6_RULES = S6["rules"]
S6_SIGMAS = [f"{float(s):g}" for s in S6["sigmas"]]
S6_SEARCH = S6["threshold_search"]
S6_SEARCH_CELLS = [
    (f"{float(s):g}", int(b))
    for s in S6_SEARCH["sigmas"]
    for b in S6_SEARCH["batch_sizes"]
]
S6_FACTS = dict(
    scale=SCALE,
    audit_mode=AUDIT["mode"],
    selection_fraction=AUDIT["selection_fraction"],
    confidence=AUDIT["confidence"],
    delta=AUDIT["delta"],
)
# R per world of each sign rule's audits (the literal rule may run cheaper, see config).
S6_RUNS = {
    sign: (
        int(S6["literal_runs_per_world"])
        if sign == "literal" and S6["literal_runs_per_world"]
        else int(S6["runs_per_world"])
    )
    for sign in S6_RULES
}
# The shared Clopper–Pearson table an audit with R runs per world needs (paper mode only).
S6_CP_TABLE = "results/section6/cp_table/n{n}.npy"
S6_PAPER_MODE = AUDIT["mode"] == "paper"
S6_AUDITS = expand(
    "results/section6/audit/{sign}/sigma{sigma}.csv", sign=S6_RULES, sigma=S6_SIGMAS
)
S6_EXACT = expand("results/section6/exact/{sign}.csv", sign=S6_RULES)

# Wildcard constraint of the rules with a {sign} wildcard: one of the configured sign rules.
S6_SIGN = "|".join(S6_RULES)


# ---- Annamalai (workflow/rules/annamalai.smk, docs/annamalai.md)
AN = config["annamalai"]
AN_FACTS = dict(scale=SCALE)
AN_SETTINGS = list(range(len(AN["fig2"]["settings"])))
AN_EPS = list(range(len(AN["fig2"]["epsilons"])))
AN_BASE = AN["encoding"]["base_rule"]
AN_OTHER_BASE = "three_sigma" if AN_BASE == "half_width" else "half_width"
# Audits of fig2 as (update sign, encoding-base rule): the configured pair, the literal update (to show that it
# fails) and the other base rule (to show the wraps' effect).
AN_VARIANTS = [(AN["update"], AN_BASE)]
if AN["fig2"]["show_literal"] and AN["update"] == "ascent":
    AN_VARIANTS.append(("descent", AN_BASE))
if AN["fig2"]["compare_base_rules"]:
    AN_VARIANTS.append((AN["update"], AN_OTHER_BASE))
