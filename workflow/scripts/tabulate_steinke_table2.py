"""Snakemake adapter: Steinke et al. Table 2 (heuristic, standard ε, η, test accuracy, empirical ε per batch size)
from the rows' shards and, where η was tuned, their candidates, via hsaudit.experiments.steinke.audit.table2 /
table2_lr -> table2.csv + table2_lr.csv + table2.md."""

from hsaudit.experiments.plotting import footer_text
from hsaudit.experiments.steinke.audit import (
    gdp_rules,
    load_shards,
    split_shards,
    table2,
    table2_lr,
    table2_markdown,
)
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_text_atomic, write_csv_atomic

log = script_logging(snakemake)
p = snakemake.params
groups = split_shards(load_shards(snakemake.input.shards), [row["shards"] for row in p.rows])
candidates = split_shards(load_shards(snakemake.input.candidates), [len(row["grid"]) for row in p.rows])
rows = [{**row, "shards": shards, "data_source": str(shards[0]["data_source"])} for row, shards in zip(p.rows, groups)]
table = table2(rows, delta=float(p.delta), confidence=float(p.confidence), rule=parse_rule(p.rule), valid_rule=parse_rule(p.valid_rule),
               seed=int(p.seed), model=p.model, value_discretization_interval=float(p.value_discretization_interval))
lr_table = table2_lr(table, rows, candidates)
footer = footer_text(
    **dict(p.facts, code_version=p.code_version),
    R=f"{int(table['runs_per_world'].min())}/world",
    data=table["data_source"].iloc[0],
    audit="Dirac canary: σ̂ last_iterate (all thresholds, not a valid bound / held-out, valid) + GDP "
    f"({gdp_rules(table)})",
    CP=float(p.confidence),
    delta=float(p.delta),
    accuracy=f"mean ± sd over both worlds' models on {int(table['n_test'].iloc[0])} test images",
    lr="tuned per row on a validation split (table2_lr.csv)" if table["lr_tuned"].any() else "fixed per row",
)
write_csv_atomic(table, snakemake.output.csv)
write_csv_atomic(lr_table, snakemake.output.lr)
write_text_atomic(snakemake.output.md, "# Steinke, Nasr et al., Table 2\n\n"
                  + table2_markdown(table, footer=footer, lr_table=lr_table))
log.info("wrote %d rows (η: %s)", len(table), ", ".join(f"{v:g}" + (" tuned" if t else "")
                                                        for v, t in zip(table["lr"], table["lr_tuned"])))
