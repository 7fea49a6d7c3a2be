"""Cebere, Bellet & Papernot: auditing DP-SGD in the hidden-state threat model.

Trained-model experiments (Housing and CIFAR-10; docs/housing.md, docs/cifar10.md):
:mod:`~hsaudit.experiments.cebere.plan` (audit keys, shards, setups: what training needs),
:mod:`~hsaudit.experiments.cebere.adversaries` (the gradient-crafting adversaries and their scorers),
:mod:`~hsaudit.experiments.cebere.shards` (one shard of a population), :mod:`~hsaudit.experiments.cebere.tables`
(scores and per-step audits: what the audit jobs need), :mod:`~hsaudit.experiments.cebere.reference` (the Opacus
reference trainer); the one-dimensional process of Section 6: :mod:`~hsaudit.experiments.cebere.section6`
(docs/section6.md); figures: :mod:`~hsaudit.experiments.cebere.figures`.
"""
