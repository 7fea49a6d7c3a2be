"""Audits in one training run against population audits of the same DP-SGD configuration (docs/one_run.md).

A study on Cebere et al.'s trained-model configurations (Housing, CIFAR-10), in the shape of every experiment
package (:mod:`hsaudit.experiments.plans`): :mod:`~hsaudit.experiments.one_run.plan` (the config and the population
audits it compares with → the one-run audits, populations and figure), :mod:`~hsaudit.experiments.one_run.train`
(the m canaries of a model and a shard of models: the training jobs), :mod:`~hsaudit.experiments.one_run.audit`
(both one-run bounds against the population audits: the audit job) and :mod:`~hsaudit.experiments.one_run.figures`.
"""
