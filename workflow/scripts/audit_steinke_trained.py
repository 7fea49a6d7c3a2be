"""Snakemake adapter: the audit table of a Steinke et al. trained-model figure (fig2, fig4: σ̂ and GDP audits, the
GDP audit also under the valid rule `valid_rule`; heuristic, standard per T and background) from its shards, via
hsaudit.experiments.steinke.audit.TRAINED_TABLES."""

from hsaudit.experiments.steinke.audit import TRAINED_TABLES, load_shards, split_shards
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
p = snakemake.params
panels = dict(zip(p.panels, split_shards(load_shards(snakemake.input.shards), list(p.panels.values()))))
table = TRAINED_TABLES[p.figure](
    panels,
    steps=list(p.steps),
    noise_multiplier=float(p.noise_multiplier),
    delta=float(p.delta),
    confidence=float(p.confidence),
    rule=parse_rule(p.rule),
    valid_rule=parse_rule(p.valid_rule),
    seed=int(p.seed),
    model=p.model,
    data_source=str(next(iter(panels.values()))[0]["data_source"]),
    value_discretization_interval=float(p.value_discretization_interval),
)
write_csv_atomic(table, snakemake.output.table)
log.info("wrote %d rows", len(table))
