"""Snakemake adapter: bundle one figure with its DAG's outputs and provenance (hsaudit.pipeline.archive)."""

from hsaudit.pipeline.archive import archive_figure
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params = snakemake.params
summary = archive_figure(
    snakemake.output[0],
    figure=params.figure,
    targets=params.targets,
    config=params.config,
    snakefile=params.snakefile,
    max_file_mb=params.max_file_mb,
    exclude=params.exclude,
    extra={"archive_code_version": params.code_version, "rule": snakemake.rule},
)
log.info("%s: %d files bundled, %d excluded", summary.path, len(summary.files), len(summary.excluded))
for path, digest, reason in summary.excluded:
    log.info("excluded %s (%s) sha256=%s", path, reason, digest)
