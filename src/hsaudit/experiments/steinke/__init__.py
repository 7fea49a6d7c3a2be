"""Steinke, Nasr et al., "The Last Iterate Advantage": the experiments of figures 1, 3, 5 and 6
(:mod:`~hsaudit.experiments.steinke.experiments`), the trained-model Figure 2 (training:
:mod:`~hsaudit.experiments.steinke.trained`; audit table: :mod:`~hsaudit.experiments.steinke.trained_audit`) and the figures
(:mod:`~hsaudit.experiments.steinke.figures`). The heuristic itself is an accountant: :mod:`hsaudit.accounting.last_iterate`.
docs/steinke.md."""
