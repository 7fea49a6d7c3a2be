"""Cebere, Bellet & Papernot: auditing DP-SGD in the hidden-state threat model.

The package has the shape of every experiment package (:mod:`hsaudit.experiments.plans`):

- :mod:`~hsaudit.experiments.cebere.plan`: the config → the frozen values its rules run and ``hsaudit plan`` prices
  (trained populations, figure targets, audit keys, setups, figure jobs).
- :mod:`~hsaudit.experiments.cebere.train`: what the training jobs run (the adversaries' crafted objects and one
  shard of a population; imports the engine and data layers only).
- :mod:`~hsaudit.experiments.cebere.scores`: shard files → the scores tables (numpy and pandas only: the scores job
  imports it, so no audit edit reruns that job).
- :mod:`~hsaudit.experiments.cebere.audit`: scores → per-step audit tables (imports the audit layer only).
- :mod:`~hsaudit.experiments.cebere.figures`: one signature for every figure and table, ``fn(table, *, pdf, csv,
  facts)``, listed in :data:`~hsaudit.experiments.cebere.figures.FIGURES`.

Trained-model experiments: Housing (docs/housing.md) and CIFAR-10 (docs/cifar10.md). The paper's Section 6 (the
one-dimensional process) is a package of its own, :mod:`hsaudit.experiments.section6`.
"""
