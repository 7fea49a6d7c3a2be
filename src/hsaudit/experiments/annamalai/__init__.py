"""Annamalai, "It's our loss": the construction whose hidden state gives no amplification, simulated, not trained.

Shaped as every experiment package (:mod:`hsaudit.experiments.plans`): :mod:`~hsaudit.experiments.annamalai.plan`
(config → calibration tables, audits, figures), :mod:`~hsaudit.experiments.annamalai.construction` (the
adversarial gradient and its vectorised simulation; numpy only), :mod:`~hsaudit.experiments.annamalai.audit` (the
PLD calibration table, the audits, the figures' tables; the audit and accounting layers) and
:mod:`~hsaudit.experiments.annamalai.figures` (``FIGURES``). docs/annamalai.md."""
