"""Snakemake adapter: one Yoon et al. figure (or table1) from its audits' CSVs (hsaudit.experiments.yoon.figures)."""

import pandas as pd

from hsaudit.experiments.yoon import figures
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic

log = script_logging(snakemake)
params, inp, out = snakemake.params, snakemake.input, snakemake.output
frames, start = [], 0
for point in params.points:
    for path in inp.tables[start : start + point["runs"]]:
        # The recipe's name (the audit rows hold its options, in `recipe`).
        frames.append(pd.read_csv(path).assign(figure=params.figure, point_audit=point["audit"],
                                               craft_recipe=point["values"].get("craft_recipe", "paper")))
    start += point["runs"]
table = pd.concat(frames, ignore_index=True)
write_csv_atomic(table, out.runs)
scores = pd.concat([pd.read_csv(p) for p in inp.scores], ignore_index=True) if inp.scores else None
common = {"scale": params.scale, "code_version": params.code_version}
if params.figure == "table1":
    summary = figures.write_table1(table, out.main, out.csv, **common)
else:
    summary = figures.plot_yoon_figure(params.figure, table, out.main, out.csv, scores=scores, **common)
log.info("%s:\n%s", params.figure, summary.to_string(max_rows=60))
