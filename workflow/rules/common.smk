# Shared Python for the rules: config resolution, the figure registry, code versions, logs, archives, and the input
# functions of the papers whose planning is not yet a plan module. Beyond its rules, a paper's rule file builds
# its plan once, `PLAN = plan(config)` (hsaudit.experiments.<paper>.plan), whose values its rules read.
import json
import os
import sys

import yaml

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


def report_only():
    """True under `snakemake --report FILE` (not with --report-after-run): Snakemake then builds the DAG of the
    targets without running it and fails on the first report() file that does not exist. Its command line is the
    only sign of this that a Snakefile gets."""
    args = sys.argv[1:]
    asked = any(arg == "--report" or arg.startswith("--report=") for arg in args)
    return asked and "--report-after-run" not in args


def default_targets():
    """The inputs of the default target (`all` in the Snakefile), every CPU-sized figure; under `snakemake --report
    FILE`, every registered figure that has been made (GPU-sized ones included), so that the report shows what
    exists instead of failing on what does not."""
    if report_only():
        return [path for path in FIGURE_KINDS if os.path.exists(path)]
    return FIGURES


# Code version of a job, passed as `params: code_version=script_version("<its script>")`: a hash of the script
# and of exactly the package modules it imports, transitively (hsaudit.pipeline.provenance.script_version), so
# an edit reruns the jobs that run the edited code and no others (editing an estimator never retrains).
def script_version(name):
    return _script_version(f"{workflow.basedir}/workflow/scripts/{name}.py")


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


# ---- Steinke et al. (workflow/rules/steinke.smk, docs/steinke.md)
ST = config["steinke"]
ST_FACTS = dict(scale=SCALE)
ST_FIG3_Q = list(range(len(ST["fig3"]["sampling_rates"])))
ST_FIG5_PANELS = list(range(len(ST["fig5"]["one_step_epsilons"])))
ST_FIG6_STEPS = [int(t) for t in ST["fig6"]["steps"]]
# fig2 (trained models): the plan its rules run (hsaudit.experiments.steinke.trained.plan_fig2), keyed by every value
# that changes a shard; the data file is keyed by the data's identity only.
from hsaudit.data.datasets import configured_identity as _configured_identity
from hsaudit.experiments.steinke.trained import plan_fig2 as _plan_fig2
from hsaudit.experiments.steinke.trained import plan_fig4 as _plan_fig4
from hsaudit.util.mapping import key_of as _key_of

ST_FIG2_DATA = {
    k: v for k, v in ST["fig2"]["data"].items() if k not in ("dataset", "test_subset")
}
ST_FIG2_DATASET = ST["fig2"]["data"]["dataset"]
ST_FIG2_DATA_ID = _configured_identity(ST_FIG2_DATASET, ST_FIG2_DATA)
ST_FIG2_DATA_KEY = _key_of({"dataset": ST_FIG2_DATASET, **ST_FIG2_DATA_ID})
# The test split of the same data (fig4's canary image, and the accuracy of fig4's and table2's models).
ST_TEST_DATA = {
    **ST_FIG2_DATA,
    "train": False,
    "subset": ST["fig2"]["data"]["test_subset"],
}
ST_TEST_DATA_ID = _configured_identity(ST_FIG2_DATASET, ST_TEST_DATA)
ST_TEST_DATA_KEY = _key_of({"dataset": ST_FIG2_DATASET, **ST_TEST_DATA_ID})
# Prepared data files by key: the training set and its test split (rule prepare_steinke_data).
ST_DATA = {ST_FIG2_DATA_KEY: ST_FIG2_DATA, ST_TEST_DATA_KEY: ST_TEST_DATA}
# fig2's models are also evaluated on the test split (the identity is not part of their key: it changes no score).
ST_FIG2 = _plan_fig2(
    ST["fig2"], seed=SEED, data_identity=ST_FIG2_DATA_ID, test_identity=ST_TEST_DATA_ID
)
# fig4: one plan per background; table2: one fig2-shaped plan per row (Dirac canary, natural data), so that a row
# with fig2's values shares fig2's models.
ST_FIG4 = _plan_fig4(
    ST["fig4"], seed=SEED, data_identity=ST_FIG2_DATA_ID, test_identity=ST_TEST_DATA_ID
)
ST_TABLE2 = [
    _plan_fig2(
        {
            **{
                k: ST["table2"][k]
                for k in (
                    "model",
                    "model_kwargs",
                    "backend",
                    "lr",
                    "clip_norm",
                    "canary_dim",
                )
            },
            **{k: ST["table2"][k] for k in ("models_per_world", "shard_size")},
            "background": "natural",
            "batch_size": row["batch_size"],
            "noise_multiplier": row["noise_multiplier"],
            "steps": [row["steps"]],
            "lr": row.get("lr", ST["table2"]["lr"]),
        },
        seed=SEED,
        data_identity=ST_FIG2_DATA_ID,
        test_identity=ST_TEST_DATA_ID,
    )
    for row in ST["table2"]["rows"]
]
# Training specs of the Dirac-canary jobs (rule train_steinke_fig2) and of the label-flip jobs (train_steinke_fig4).
ST_DIRAC = {
    ST_FIG2["key"]: ST_FIG2["train"],
    **{plan["key"]: plan["train"] for plan in ST_TABLE2},
}
ST_LABEL_FLIP = {plan["key"]: plan["train"] for plan in ST_FIG4.values()}
# Resources of a Dirac-canary training job: table2's rows, fig2's (a shared key takes the larger of each).
ST_DIRAC_RESOURCES = {
    plan["key"]: dict(ST["table2"]["resources"]) for plan in ST_TABLE2
}
ST_DIRAC_RESOURCES[ST_FIG2["key"]] = {
    k: max(v, ST_DIRAC_RESOURCES.get(ST_FIG2["key"], {}).get(k, v))
    for k, v in ST["fig2"]["resources"].items()
}
# What the footer says the figure was trained with, beside the paper's WRN-16-4 on all of CIFAR-10.
ST_FIG2_FACTS = dict(
    scale=SCALE,
    setup=f"{ST['fig2']['model']} on {ST['fig2']['data']['subset'] or 'all'} {ST_FIG2_DATASET} images, "
    f"B={ST['fig2']['batch_size']}, {ST['fig2']['background']} background"
    + (
        ""
        if ST["fig2"]["model"] == "wrn16_4"
        and ST_FIG2_DATASET == "cifar10"
        and not ST["fig2"]["data"]["subset"]
        else " (paper: WRN-16-4, all of CIFAR-10)"
    ),
)


def _st_setup(section, what):
    """The footer's `setup=`: what fig4/table2 trained, beside the paper's WRN-16-4 on all of CIFAR-10."""
    paper = (
        section["model"] == "wrn16_4"
        and ST_FIG2_DATASET == "cifar10"
        and not ST["fig2"]["data"]["subset"]
    )
    return (
        f"{section['model']} on {ST['fig2']['data']['subset'] or 'all'} {ST_FIG2_DATASET} images, {what}"
        + ("" if paper else " (paper: WRN-16-4, all of CIFAR-10)")
    )


ST_FIG4_FACTS = dict(
    scale=SCALE, setup=_st_setup(ST["fig4"], f"B={ST['fig4']['batch_size']}")
)
ST_TABLE2_FACTS = dict(
    scale=SCALE,
    setup=_st_setup(
        ST["table2"],
        "B ∈ {"
        + ", ".join(str(r["batch_size"]) for r in ST["table2"]["rows"])
        + "}, natural data, Dirac canary",
    ),
)


# Table 1 (the causal LM by path; hsaudit.experiments.steinke.language.plan_table1): one data job, one calibration job
# (σ per row once N is known), one training job per row and shard. Optional: without `model` and `data` a request
# for it stops before any job with ST_TABLE1_MISSING's message; every other target is unaffected.
from snakemake.exceptions import WorkflowError
from hsaudit.experiments.steinke.language import LM_EXTRA as _LM_EXTRA
from hsaudit.experiments.steinke.language import plan_table1 as _plan_table1

ST_T1 = ST["table1"]
ST_TABLE1 = _plan_table1(ST_T1, seed=SEED)
ST_TABLE1_ROWS = {row["key"]: i for i, row in enumerate(ST_TABLE1["rows"])}
ST_TABLE1_MISSING = (
    "results/steinke/table1.md is an optional target: it needs a causal language model and PersonaChat text, "
    "given by path. Missing: "
    + ", ".join(f"steinke.table1.{k}" for k in ("model", "data") if not ST_T1[k])
    + ". Set steinke.table1.model to a Hugging Face model directory (config.json, weights, tokenizer; the paper's "
    "is Gemma 2) and steinke.table1.data to a PersonaChat file (.txt, .jsonl or .json), e.g. in a --configfile, "
    f"and install the language-model extra: {_LM_EXTRA}. See docs/steinke.md, 'table1'."
    if not (ST_T1["model"] and ST_T1["data"])
    else ""
)
ST_TABLE1_FACTS = dict(
    scale=SCALE,
    setup=f"{ST_T1['model']} fine-tuned on {ST_T1['data']}, blocks of {ST_T1['block_size']} tokens, "
    f"{ST_T1['epochs']} epochs, {ST_T1['canary_tokens']} unused canary tokens",
)


def steinke_table1_sources(wc):
    """Table 1's model config and data file (inputs of its data job); stops the DAG when a path is missing."""
    if ST_TABLE1_MISSING:
        raise WorkflowError(ST_TABLE1_MISSING)
    return {"model": f"{ST_T1['model']}/config.json", "data": ST_T1["data"]}


def steinke_table1_target(path):
    """Table 1's Markdown path, registered as a (GPU-sized) figure only when its paths are given, so that
    `archive_all` and `hsaudit plan` never reach for an optional target that cannot run.
    """
    return path if ST_TABLE1_MISSING else register_figure(path, kind="gpu")


def steinke_table1_data_source():
    """What the table's footer and CSV name as the data."""
    return f"{ST_T1['data']} (tokenizer of {ST_T1['model']})"
