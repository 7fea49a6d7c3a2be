"""Snakemake adapter: one Section 6 figure (fig3, fig14, fig6b, fig6c or fig10) via hsaudit.experiments.section6.figures."""

import pandas as pd

from hsaudit.experiments.section6 import figures as section6
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
out = dict(pdf=snakemake.output.pdf, csv=snakemake.output.csv, facts=dict(p.facts, code_version=p.code_version))
if p.figure in ("fig3", "fig14"):
    audits = pd.concat([pd.read_csv(f) for f in snakemake.input.audits], ignore_index=True)
    exact = pd.concat([pd.read_csv(f) for f in snakemake.input.exact], ignore_index=True)
    section6.FIGURES[p.figure](section6.curves_table(audits, exact), **out)
elif p.figure == "fig6b":
    section6.plot_fig6b(pd.read_csv(snakemake.input.tradeoff), **out)
elif p.figure == "fig6c":
    section6.plot_fig6c(pd.concat([pd.read_csv(f) for f in snakemake.input.searches], ignore_index=True), **out)
elif p.figure == "fig10":
    section6.plot_fig10(
        section6.landscape_table(
            rules=p.rules, clip_norm=p.clip_norm, switch_point=p.switch_point, **dict(p.landscape)
        ),
        **out,
    )
else:  # pragma: no cover - the rules only pass the names above
    raise ValueError(f"unknown figure {p.figure!r}")
log.info("wrote %s and %s", snakemake.output.pdf, snakemake.output.csv)
