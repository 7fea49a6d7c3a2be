"""Snakemake adapter: bundle one figure with its DAG's outputs and provenance (hsaudit.archive)."""

import logging

from hsaudit.archive import archive_figure

logging.basicConfig(filename=snakemake.log[0], filemode="w", level=logging.INFO, format="%(asctime)s %(message)s")
logging.captureWarnings(True)
params = snakemake.params
try:
    summary = archive_figure(
        snakemake.output[0],
        figure=params.figure,
        targets=params.targets,
        config=params.config,
        snakefile=params.snakefile,
        max_file_mb=params.max_file_mb,
        exclude=params.exclude,
        extra={"code_version": params.code_version, "rule": snakemake.rule},
    )
except Exception:
    logging.exception("archiving %s failed", params.figure)
    raise
logging.info("%s: %d files bundled, %d excluded", summary.path, len(summary.files), len(summary.excluded))
for path, digest, reason in summary.excluded:
    logging.info("excluded %s (%s) sha256=%s", path, reason, digest)
