# Shared mechanics of the rules: config resolution, the figure registry, code versions, logs, benchmarks,
# archives and the GPU warning. Nothing here is a paper's: each paper's (or study's) rule file builds its plan once,
# `PLAN = plan(config)` (hsaudit.experiments.<paper>.plan), and its rules read that plan's values.
import json
import os
import sys

from snakemake.exceptions import WorkflowError

from hsaudit.pipeline.config import (
    load_yaml,
    preset_overrides,
    resolve_scale,
    user_values,
    validate_config,
)
from hsaudit.pipeline.provenance import script_version as _script_version

# The scale preset's overrides are merged in, then the values the user set explicitly (--config, overlay
# --configfiles whole, a full copy of the config where it differs from config/config.yaml) over them; the merged
# config is validated again so that an override with a bad value is caught as well (precedence:
# hsaudit.pipeline.config).
_EXPLICIT = user_values(
    workflow.config_settings.configfiles,
    workflow.config_settings.config,
    load_yaml(f"{workflow.basedir}/config/config.yaml"),
)
for _line in preset_overrides(config, _EXPLICIT):
    print(f"config: your value wins over the preset: {_line}", file=sys.stderr)
config.update(resolve_scale(config, explicit=_EXPLICIT))
validate_config(
    config,
    f"{workflow.basedir}/workflow/schemas/config.schema.yaml",
    source="config after the scale preset",
)

SCALE = config["scale"]
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


# Audits of trainings that other studies run through byo's rules (workflow/rules/byo.smk): their rule files, included
# before byo.smk, hand over their plans' ByoAudit values (hsaudit.experiments.byo.plan), each at its own root.
_BYO_HOSTED = {"audits": [], "closed": False}


def host_byo_audits(audits):
    """Have byo's rules train and audit ``audits`` (ByoAudit values) too; called before byo.smk is included."""
    if _BYO_HOSTED["closed"]:
        raise WorkflowError(
            "host_byo_audits: include this rule file before workflow/rules/byo.smk"
        )
    _BYO_HOSTED["audits"].extend(audits)


def byo_audits(own):
    """Every audit byo's rules run, by its root under results/ (its {name} wildcard): ``own`` (the byo: section's)
    and the hosted ones. Two audits at one root are an error."""
    _BYO_HOSTED["closed"] = True
    audits = {}
    for audit in [*own, *_BYO_HOSTED["audits"]]:
        if audit.key in audits:
            raise WorkflowError(f"two byo audits at results/{audit.key}")
        audits[audit.key] = audit
    return audits


def byo_training_shards(audits):
    """An input function: the training shards (audit and control; none for a verdict that needed no training) of
    ``audits`` (ByoAudit values), known once their assess_byo_claim checkpoint has run.
    """
    from hsaudit.experiments.byo.plan import shard_paths

    def shards(wildcards):
        return [
            path
            for audit in audits
            for path in shard_paths(
                audit, checkpoints.assess_byo_claim.get(name=audit.key).output.claim
            )
        ]

    return shards


def byo_audit_inputs(audits):
    """An input function: the score files of a population audit of ``audits`` (root under results/ → ByoAudit) and,
    when its check runs, the check's probe and check.json, known once its checkpoints have run: assess_byo_claim (a
    verdict that needs no training, unless the check's reads may still change it), then check_byo_entry (its reads
    of the data against the claim's sampling: a violation that trains no shard).
    """
    from hsaudit.experiments.byo.plan import checks, shard_paths

    def inputs(wildcards):
        claim = checkpoints.assess_byo_claim.get(name=wildcards.name).output.claim
        if not checks(claim):
            return {"shards": []}
        check = checkpoints.check_byo_entry.get(name=wildcards.name).output.check
        return {
            "shards": shard_paths(audits[wildcards.name], claim, check),
            "probe": f"results/{wildcards.name}/probe.json",
            "check": check,
        }

    return inputs


def byo_few_inputs(audits):
    """An input function: the score files of a few-runs audit of ``audits`` (root under results/ → ByoAudit) and,
    when it trains, the check's probe and the control's plan, known once its checkpoints have run: assess_byo_few
    (a verdict that needs no training), then check_byo_few (its reads of the data against the claim's sampling: a
    violation that trains nothing).
    """
    from hsaudit.experiments.byo.plan import shard_paths

    def inputs(wildcards):
        audit = audits[wildcards.name]
        claim = checkpoints.assess_byo_few.get(name=wildcards.name).output.claim
        if not shard_paths(audit, claim):
            return {"trainings": []}
        probe = checkpoints.check_byo_few.get(name=wildcards.name).output.probe
        paths = shard_paths(audit, claim, probe)
        if audit.control and paths:
            return {
                "trainings": paths,
                "probe": probe,
                "control": f"results/{wildcards.name}/control.json",
            }
        return {"trainings": paths, "probe": probe}

    return inputs


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
