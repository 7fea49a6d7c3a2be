"""Snakemake adapter: repeated audits of Annamalai's construction at one (q, T, ε), update sign and base rule: σ
calibrated to ε on the (q, T) table, the construction simulated at σ (hsaudit.experiments.annamalai.construction),
its statistics audited (hsaudit.experiments.annamalai.audit)."""

import pandas as pd

from hsaudit.experiments.annamalai import audit, construction
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
job = snakemake.params.job
table, sigma = audit.calibrate(pd.read_csv(snakemake.input.table), epsilon=job["epsilon"])
built = construction.Construction(noise_multiplier=sigma, **job["construction"])
statistics = construction.repeated_statistics(built, **job["simulation"])
audits = audit.audit_repetitions(statistics, table=table, **job["audit"]).assign(epsilon=job["epsilon"])
write_csv_atomic(audits, snakemake.output[0])
log.info("sigma %.6g; wrote %d rows", sigma, len(audits))
