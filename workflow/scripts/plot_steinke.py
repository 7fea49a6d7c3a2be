"""Snakemake adapter: one Steinke et al. figure (fig1, fig2, fig3, fig4, fig5 or fig6) via hsaudit.experiments.steinke.figures."""

import pandas as pd

from hsaudit.experiments.steinke import figures as steinke
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
p = snakemake.params
table = pd.concat([pd.read_csv(f) for f in snakemake.input.tables], ignore_index=True)
out = dict(pdf=snakemake.output.pdf, csv=snakemake.output.csv, facts=dict(p.facts, code_version=p.code_version))
if p.figure == "fig1":
    steinke.plot_fig1(table, delta=p.delta, **out)
elif p.figure == "fig2":
    steinke.plot_fig2(table, **out)
elif p.figure == "fig4":
    steinke.plot_fig4(table, **out)
elif p.figure == "fig3":
    steinke.plot_fig3(table, audit=p.audit, sigma_family=p.sigma_family, **out)
elif p.figure == "fig5":
    steinke.plot_fig5(table, delta=p.delta, **out)
elif p.figure == "fig6":
    steinke.plot_fig6(table, **out)
else:  # pragma: no cover - the rules only pass the names above
    raise ValueError(f"unknown figure {p.figure!r}")
log.info("wrote %s and %s", snakemake.output.pdf, snakemake.output.csv)
