"""One package per paper, each shaped alike: its plan (keys, config checks), its science, its figures.

- :mod:`~hsaudit.experiments.cebere` — Cebere, Bellet & Papernot: gradient-crafting adversaries on trained models
  (Housing, CIFAR-10) and the one-dimensional process of Section 6;
- :mod:`~hsaudit.experiments.steinke` — Steinke, Nasr et al.: the last-iterate heuristic experiments;
- :mod:`~hsaudit.experiments.annamalai` — Annamalai: the loss that defeats hidden-state amplification;
- :mod:`~hsaudit.experiments.yoon` — Yoon, Jeung & No: adversarial-sample audits of full-batch DP-SGD.

:mod:`~hsaudit.experiments.plotting` holds the figure style they share. No paper's package imports another's.
"""
