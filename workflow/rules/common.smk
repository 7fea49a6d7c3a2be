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
# code_version("hsaudit.process1d", "hsaudit.figures.section6"): then only edits there rerun its jobs.
CODE_VERSION = code_version()


def log_path(name):
    return f"results/logs/{name}.log"


def bench_path(name):
    return f"results/benchmarks/{name}.tsv"


wildcard_constraints:
    sigma=r"\d+(\.\d+)?",
    batch=r"\d+",
    rep=r"\d+",
    rule=r"divergent|literal",
