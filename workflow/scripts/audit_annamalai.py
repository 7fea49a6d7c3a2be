"""Snakemake adapter: repeated audits of Annamalai's construction at one (q, T, ε), update sign and base rule."""

import pandas as pd

from hsaudit.accounting.gaussian import PldTable, sigma_for_epsilon
from hsaudit.experiments.annamalai.construction import audit_many
from hsaudit.util.io import write_csv_atomic
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
update = snakemake.wildcards.sign
table = PldTable.from_frame(pd.read_csv(snakemake.input.table))
sigma = sigma_for_epsilon(float(p.epsilon), table)
floors = [float(p.tail_floor)] + ([float(f) for f in p.tail_floors_sensitivity] if update == "ascent" else [])
audits = audit_many(
    steps=int(p.setting["steps"]),
    sampling_rate=float(p.setting["sampling_rate"]),
    noise_multiplier=sigma,
    runs=int(p.runs),
    repetitions=int(p.repetitions),
    table=table,
    tail_floors=list(dict.fromkeys(floors)),
    confidence=p.confidence,
    seed=p.seed,
    dataset_size=float(p.dataset_size),
    update=update,
    base_rule=snakemake.wildcards.base,
    base_sigmas=float(p.base_sigmas),
    ideal_reference=bool(p.ideal_reference),
)
audits["epsilon"] = float(p.epsilon)
write_csv_atomic(audits, snakemake.output[0])
log.info("sigma %.6g; wrote %d rows", sigma, len(audits))
