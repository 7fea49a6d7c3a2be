# hsaudit: auditing DP-SGD in the hidden-state threat model.
# Usage: `snakemake results/fig3.pdf` (see README.md). Profiles: profiles/default (used automatically),
# profiles/slurm (`--profile slurm`, see README.md).
from snakemake.utils import min_version

from hsaudit.experiments.plans import EXPERIMENTS
from hsaudit.pipeline import warm
from hsaudit.pipeline.config import validate_config

min_version("8.0")


configfile: "config/config.yaml"


# Python script jobs fork from a warm server when HSAUDIT_WARM_SOCKET names one (hsaudit.pipeline.warm).
warm.enable(f"{workflow.basedir}/workflow")


# Readable errors (every violation, named by its dotted key), then the schema's defaults are filled in, as
# Snakemake's `validate` does, with the schemas parsed once (hsaudit.pipeline.config.validate_config).
validate_config(config, f"{workflow.basedir}/workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/constraints.smk"


# One rule file per experiment package, workflow/rules/<name>.smk, in the registry's order
# (hsaudit.experiments.plans.EXPERIMENTS: a new paper is one entry there, no line here).
for _experiment in EXPERIMENTS:

    include: f"workflow/rules/{_experiment}.smk"


include: "workflow/rules/archive.smk"


rule all:
    default_target: True
    input:
        default_targets(),
