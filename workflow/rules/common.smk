# Shared Python for the rules: config resolution, wildcard constraints, input functions.
# The only .smk file that holds Python beyond rule declarations (STYLE.md §2).
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


# Code version as a param of every rule that calls package code: package version + SHA-256 of the package
# source (hsaudit.provenance.code_version), so a new release or an edited module reruns those jobs. A rule
# family may narrow it to the modules it imports (transitively), e.g.
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


wildcard_constraints:
    sigma=r"\d+(\.\d+)?",
    batch=r"\d+",
    rep=r"\d+",
    rule=r"divergent|literal",
