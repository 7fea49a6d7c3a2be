"""Snakemake adapter: one CIFAR-10 figure of Cebere et al. from its audits (hsaudit.experiments.cebere.figures.cifar).

fig1 adds the Housing panel (fig1c's audits); fig6a reads the scores of its audit; fig8 the canary's gradient
norms from the shards; fig12 the crafted coordinate of each audit; every other figure only the per-step audit
tables.
"""

import pandas as pd

from hsaudit.data.datasets import dataset_source
from hsaudit.experiments.cebere.scores import norms_table
from hsaudit.experiments.cebere.figures import cifar
from hsaudit.pipeline.logs import script_logging

log = script_logging(snakemake)
params, inp, out = snakemake.params, snakemake.input, snakemake.output
figure = params.figure
sources = {path: dataset_source(path) for path in dict.fromkeys(inp.datasets)}
refs = [{**ref, "data_source": sources[path]} for ref, path in zip(params.refs, inp.datasets, strict=True)]
facts = dict(params.facts, figure=figure, code_version=params.code_version)
if figure == "fig8":
    frames, start = [], 0
    for ref, count in zip(refs, params.shards_per_ref, strict=True):
        frames.append(norms_table(inp.shards[start : start + count]).assign(model=ref["model"]))
        start += count
    facts |= {"data_source": "/".join(sorted(set(sources.values()))), "clip_norm": float(refs[0]["clip_norm"])}
    summary = cifar.plot_fig8(pd.concat(frames, ignore_index=True), pdf=out.pdf, csv=out.csv, facts=facts)
else:
    entries = [(ref, pd.read_csv(path)) for ref, path in zip(refs, inp.tables, strict=True)]
    if figure == "fig1":
        housing = [(ref, pd.read_csv(path)) for ref, path in zip(params.housing_refs, inp.housing, strict=True)]
        summary = cifar.plot_fig1(cifar.fig1_table(entries, housing), pdf=out.pdf, csv=out.csv, facts=facts)
    elif figure == "fig6a":
        (ref, audit), scores = entries[0], pd.read_parquet(inp.scores[0])
        summary = cifar.plot_fig6a(cifar.fig6a_table(ref, audit, scores), pdf=out.pdf, csv=out.csv, facts=facts)
    elif figure == "fig11":
        summary = cifar.plot_fig11(cifar.cifar_table(entries), pdf=out.pdf, csv=out.csv, facts=facts)
    else:
        extra = ()
        if inp.get("crafted"):  # fig12: which coordinate d (and layer) each audit's adversary crafted
            entries = [
                ({**ref, **cifar.crafted_coordinate(path)}, table)
                for (ref, table), path in zip(entries, inp.crafted, strict=True)
            ]
            extra = cifar.CRAFTED_COLUMNS
        table = cifar.cifar_table(entries, extra_columns=extra)
        summary = cifar.plot_epsilon(table, pdf=out.pdf, csv=out.csv, facts=facts)
log.info("%s (%s):\n%s", figure, ", ".join(sorted(set(sources.values()))), summary.to_string(max_rows=40))
