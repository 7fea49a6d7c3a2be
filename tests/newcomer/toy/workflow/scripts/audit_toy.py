"""Snakemake adapter: the toy audit (hsaudit.experiments.toy.audit.audit_gaussian) under the plan's rule."""

from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.toy.audit import audit_gaussian
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
write_csv_atomic(audit_gaussian(parse_rule(snakemake.params.rule), **snakemake.params.job), snakemake.output[0])
log.info("wrote %s", snakemake.output[0])
