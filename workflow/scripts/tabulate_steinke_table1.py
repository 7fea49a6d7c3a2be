"""Snakemake adapter: Steinke et al. Table 1 (heuristic, standard ε, perplexity, empirical ε per batch size) from the
rows' shards, via hsaudit.experiments.steinke.audit.table1 -> table1.csv + table1.md."""

from hsaudit.experiments.plotting import footer_text
from hsaudit.experiments.steinke.audit import gdp_rules, load_shards, split_shards, table1, table1_markdown
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic, write_text_atomic

log = script_logging(snakemake)
p = snakemake.params
groups = split_shards(load_shards(snakemake.input.shards), [row["shards"] for row in p.rows])
rows = [{"shards": shards, "noise_multiplier": float(shards[0]["noise_multiplier"]),
         "steps": int(shards[0]["scores"].shape[1]), "paper": row.get("paper"),
         "data_source": str(shards[0]["data_source"])} for row, shards in zip(p.rows, groups)]
table = table1(rows, delta=float(p.delta), confidence=float(p.confidence), rule=parse_rule(p.rule), valid_rule=parse_rule(p.valid_rule),
               seed=int(p.seed), model=p.model, score=p.score,
               value_discretization_interval=float(p.value_discretization_interval))
footer = footer_text(
    **dict(p.facts, code_version=p.code_version),
    R=f"{int(table['runs_per_world'].min())}/world",
    data=table["data_source"].iloc[0],
    audit=f"unused-token canary, score {p.score}: σ̂ last_iterate (all thresholds, not a valid bound / held-out, "
    f"valid) + GDP ({gdp_rules(table)})",
    CP=float(p.confidence),
    delta=float(p.delta),
    perplexity=f"mean ± sd over both worlds' final models on {int(table['n_eval'].iloc[0])} held-out blocks",
)
write_csv_atomic(table, snakemake.output.csv)
write_text_atomic(snakemake.output.md, "# Steinke, Nasr et al., Table 1\n\n" + table1_markdown(table, footer=footer))
log.info("wrote %d rows", len(table))
