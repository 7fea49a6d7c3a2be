# hsaudit: auditing DP-SGD in the hidden-state threat model.
# Usage: `snakemake results/fig3.pdf` (see README.md). Profiles: profiles/default (used automatically),
# profiles/slurm (`--profile slurm`, see README.md).
from snakemake.utils import min_version

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
include: "workflow/rules/cebere.smk"
include: "workflow/rules/section6.smk"
include: "workflow/rules/steinke.smk"
include: "workflow/rules/annamalai.smk"
include: "workflow/rules/one_run.smk"
include: "workflow/rules/yoon.smk"
include: "workflow/rules/libraries.smk"  # before byo.smk: its rows are audits byo's rules run
include: "workflow/rules/byo.smk"
include: "workflow/rules/archive.smk"


rule all:
    default_target: True
    input:
        default_targets(),
