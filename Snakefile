# hsaudit: auditing DP-SGD in the hidden-state threat model.
# Usage: `snakemake results/fig3.pdf` (see README.md). Profiles: profiles/default (used automatically),
# profiles/slurm (`--profile slurm`, see README.md).
from snakemake.utils import min_version, validate

min_version("8.0")


configfile: "config/config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/section6.smk"


rule all:
    default_target: True
    input:
        FIGURES,
