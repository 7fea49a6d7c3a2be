"""Cebere, Bellet & Papernot: auditing DP-SGD in the hidden-state threat model.

Trained-model experiments (Housing and CIFAR-10; docs/housing.md, docs/cifar10.md):
:mod:`~hsaudit.papers.cebere.plan` (audit keys, shards, setups: what training needs),
:mod:`~hsaudit.papers.cebere.adversaries` (the gradient-crafting adversaries and their scorers),
:mod:`~hsaudit.papers.cebere.shards` (one shard of a population), :mod:`~hsaudit.papers.cebere.tables`
(scores and per-step audits: what the audit jobs need), :mod:`~hsaudit.papers.cebere.reference` (the Opacus
reference trainer); the one-dimensional process of Section 6: :mod:`~hsaudit.papers.cebere.section6`
(docs/section6.md); figures: :mod:`~hsaudit.papers.cebere.figures`.
"""
