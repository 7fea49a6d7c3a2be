"""Steinke, Nasr et al., "The Last Iterate Advantage" (docs/steinke.md), in the shape every experiment package has:

- :mod:`~hsaudit.experiments.steinke.plan` — config → frozen values: populations, targets, figures, tables;
- :mod:`~hsaudit.experiments.steinke.train` — what the training jobs run (engine, data and util only): the image
  classifiers of fig2, fig4 and table2, the causal language model of table1;
- :mod:`~hsaudit.experiments.steinke.audit` — trained shards → the audit tables of fig2, fig4, table1 and table2;
- :mod:`~hsaudit.experiments.steinke.simulations` — the simulations and exact computations of fig1, fig3, fig5 and
  fig6 (no training);
- :mod:`~hsaudit.experiments.steinke.figures` — every figure, one signature, one ``FIGURES`` registry.

The heuristic itself is an accountant: :mod:`hsaudit.accounting.last_iterate`.
"""
