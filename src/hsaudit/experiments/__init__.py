"""One package per paper or study, each shaped alike: ``plan`` (config → frozen values: populations with their keys,
audit jobs, figures), ``train`` (engine and data only), ``audit`` (scores → tables; the audit layer only) and
``figures`` (one signature, one ``FIGURES`` registry).

- :mod:`~hsaudit.experiments.cebere` — Cebere, Bellet & Papernot: gradient-crafting adversaries on trained models
  (Housing, CIFAR-10);
- :mod:`~hsaudit.experiments.section6` — the same paper's Section 6: the one-dimensional process, simulated;
- :mod:`~hsaudit.experiments.one_run` — the one-run audit on Cebere's populations;
- :mod:`~hsaudit.experiments.steinke` — Steinke, Nasr et al.: the last-iterate heuristic experiments;
- :mod:`~hsaudit.experiments.annamalai` — Annamalai: the loss that defeats hidden-state amplification;
- :mod:`~hsaudit.experiments.yoon` — Yoon, Jeung & No: adversarial-sample audits of full-batch DP-SGD;
- :mod:`~hsaudit.experiments.byo` — a user's own DP training code, audited against the ε it claims.

:mod:`~hsaudit.experiments.plans` (the population and target values every plan returns) and
:mod:`~hsaudit.experiments.plotting` (the figure style) are shared. No paper's package imports another's (one_run
reads Cebere's plan, handed to it as a value).
"""
