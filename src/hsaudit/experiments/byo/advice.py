"""What to change when an audit of a user's training is inconclusive: the one change most likely to give it power.

A pure function of the design and the check's θ0 finding, kept out of the harness so that editing the report's words
reruns audits, never a training job (a training job's code version covers exactly the modules it runs).
"""

from __future__ import annotations

from hsaudit.engine.canaries import canary_type
from hsaudit.experiments.byo.values import Design


def advice(design: Design, theta0: str) -> str:
    """The change most likely to give an audit of ``design`` its power, in the order that matters: θ0 first (its
    variance across seeds hides any canary; ``theta0`` is the check's finding,
    :attr:`~hsaudit.experiments.byo.train.harness.Probe.theta0`), then the audit setting (few full-batch steps, where
    a final-model audit can be tight), then the canary, then the runs."""
    if theta0 == "varies with the seed":
        return ("hold θ0 fixed: let train accept init_seed and draw the model's initialisation from it, the rest from "
                "seed (docs/byo.md, 'θ0 first')")  # fmt: skip
    if design.setting is None:
        return ("run the training in the audit setting (--audit-setting: a few full-batch steps at a σ calibrated to "
                "ε = 4, where a final-model audit can be tight)")  # fmt: skip
    if canary_type(design.canary).kind != "gradient":
        return ("a canary the training cannot dilute: --canary dirac --background blank where the loss takes the "
                "canary's term, else more runs than " + str(design.runs))  # fmt: skip
    return f"more runs per world than {design.runs}"
