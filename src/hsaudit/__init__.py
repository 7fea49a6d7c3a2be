"""hsaudit: reproducible audits of DP-SGD in the hidden-state threat model.

The package is cut in layers; each imports only the layers below it (``tests/test_imports.py`` holds this):

==============  =====================================================================================
``util``        atomic writes, seeds, key hashing, dict merging (imports nothing of the package)
``accounting``  upper bounds and curves: μ-GDP, PLD, mixtures, the last-iterate heuristic   (maths)
``audit``       every estimator: GDP, Clopper–Pearson, two-sample, σ̂/PLD, one-run, validation (maths)
``engine``      the paper-neutral DP-SGD layer: per-sample gradients, noise, models          (torch)
``data``        the dataset registry: Housing, CIFAR-10/100, MNIST, AlexNet features
``experiments`` one package per paper or study, shaped alike (plan and keys, science, figures):
                ``cebere`` (with ``section6``), ``steinke``, ``annamalai``, ``yoon``; ``plotting`` is shared
``pipeline``    what the workflow needs around the science: config, provenance, archives, cost plans, logs
``cli``         the ``hsaudit`` command
==============  =====================================================================================

A fifth paper is a package under ``experiments/`` plus one rules file in ``workflow/rules/``; a new model is an entry
of ``engine.models``; a new dataset an entry of ``data.datasets``; a new estimator a module of ``audit/``.

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
    **dict.fromkeys(
        (
            "AuditResult",
            "assumption_free_epsilon",
            "audit_scores",
            "audit_steps",
            "clopper_pearson_upper",
            "empirical_tradeoff",
            "reference_audit",
        ),
        "hsaudit.audit.gdp",
    ),
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hsaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
