"""hsaudit: reproducible audits of DP-SGD in the hidden-state threat model.

The package is cut in layers; each imports only the layers below it (``tests/test_imports.py`` holds this):

==============  =====================================================================================
``util``        atomic writes, seeds, key hashing, dict merging (imports nothing of the package)
``accounting``  upper bounds and curves: μ-GDP, PLD, mixtures, the last-iterate heuristic   (maths)
``audit``       every estimator as a threshold rule or a test: GDP, Clopper–Pearson, crossing, σ̂/PLD, one-run,
                two-sample, validation                                                        (maths)
``engine``      the paper-neutral DP-SGD layer: per-sample gradients, noise, the model registry
                (``ModelSpec``), the canary registry, the Opacus reference                  (torch)
``data``        the dataset registry: Housing, CIFAR-10/100, MNIST, AlexNet features
``experiments`` one package per paper or study, shaped alike (``plan``, ``train``, ``audit``, ``figures``):
                ``cebere`` (with ``section6``), ``one_run``, ``steinke``, ``annamalai``, ``yoon``, ``byo``
                (a user's own training); ``plans`` (population and target values) and ``plotting`` are shared
``pipeline``    what the workflow needs around the science: config, provenance, archives, cost plans, logs
``bench``       the benchmarks (training step, audit, Section 6) and the step-time calibration
``cli``         the ``hsaudit`` command
==============  =====================================================================================

A fifth paper is a package under ``experiments/`` plus one rules file in ``workflow/rules/`` and a line of
``experiments.plans.EXPERIMENTS``; a new model is a ``ModelSpec`` in ``engine.models``; a new dataset an entry of
``data.datasets``; a new estimator a rule of ``audit.rules``; a new canary type an entry of ``engine.canaries``
(docs/architecture.md).

This file imports nothing eagerly, so that importing any module of the package runs no other layer's code (the
workflow's code versions rely on it). The most used names are still reachable here, lazily:
``from hsaudit import audit_scores, gdp_epsilon``.
"""

from __future__ import annotations

import importlib
from importlib import metadata

# The version lives in pyproject.toml only: a release that bumps it edits no module, so it reruns no job (code
# versions hash the source alone, hsaudit.pipeline.provenance).
try:
    __version__ = metadata.version("hsaudit")
except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH that was never installed
    __version__ = "0+unknown"

# name -> defining module, resolved on first access (PEP 562).
_LAZY = {
    **dict.fromkeys(
        (
            "calibrate_noise",
            "epsilon_from_delta_curve",
            "gaussian_delta",
            "gaussian_epsilon",
            "gaussian_pld",
            "gdp_delta",
            "gdp_epsilon",
            "gdp_mu",
            "gdp_tradeoff",
            "mixture_gaussian_epsilon",
            "mixture_gaussian_pld",
        ),
        "hsaudit.accounting.gaussian",
    ),
    "AuditResult": "hsaudit.audit.gdp",
    "assumption_free_epsilon": "hsaudit.audit.bounds",
    "clopper_pearson_upper": "hsaudit.audit.bounds",
    "audit_scores": "hsaudit.audit.auditor",
    "audit_steps": "hsaudit.audit.auditor",
    "empirical_tradeoff": "hsaudit.audit.tradeoff",
    "reference_audit": "hsaudit.audit.reference",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hsaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
