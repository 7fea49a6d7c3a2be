"""Audit your own DP training: bring a training function and its claim, get ε̂ against the claim and a verdict.

Shaped as every experiment package: :mod:`~hsaudit.experiments.byo.plan` (the ``byo:`` config → frozen values),
:mod:`~hsaudit.experiments.byo.train.harness` (the harness: the user's entry, the two worlds, the shards),
:mod:`~hsaudit.experiments.byo.audit` (scores → the report and its verdict), :mod:`~hsaudit.experiments.byo.figures`;
:mod:`~hsaudit.experiments.byo.values` holds the values they share and :mod:`~hsaudit.experiments.byo.api` puts them
together for the CLI (``hsaudit audit-training``) and the workflow (``results/byo/{name}/report.md``). docs/byo.md.

    >>> from hsaudit.experiments.byo import Design, audit_training  # doctest: +SKIP
    >>> design = Design(entry="examples/byo/plain_dpsgd.py:make", canary="out_of_support", runs=200)  # doctest: +SKIP
    >>> audit_training(design).report.verdict  # doctest: +SKIP
    'consistent'

Names resolve lazily (PEP 562): importing this package runs none of its modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "hsaudit.experiments.byo.api": ("Result", "audit_training", "choose_design", "control_design", "train_all"),
    "hsaudit.experiments.byo.audit": ("AuditOptions", "ByoReport", "markdown", "report"),
    "hsaudit.experiments.byo.plan": ("ByoAudit", "ByoPlan", "audit_setting", "plan"),
    "hsaudit.experiments.byo.train.harness": ("CanaryData", "load_training", "prepare", "train_shard"),
    "hsaudit.experiments.byo.values": ("AuditSetting", "Claim", "Design"),
}
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_LAZY)

if TYPE_CHECKING:
    from hsaudit.experiments.byo.api import *  # noqa: F403
    from hsaudit.experiments.byo.audit import *  # noqa: F403
    from hsaudit.experiments.byo.plan import *  # noqa: F403
    from hsaudit.experiments.byo.train.harness import *  # noqa: F403
    from hsaudit.experiments.byo.values import *  # noqa: F403


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hsaudit.experiments.byo' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
