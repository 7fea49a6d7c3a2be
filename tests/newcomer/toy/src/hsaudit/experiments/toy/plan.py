"""The toy plan: from the resolved config to the one audit job and the one figure of ``workflow/rules/toy.smk``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.audit.rules import ThresholdRule, config_rules
from hsaudit.experiments.plans import Population, Target

TABLE = "results/toy/audit.csv"


@dataclass(frozen=True)
class ToyPlan:
    """What the toy rules and ``hsaudit plan`` read: no populations, fig1, the audit's rule and keyword arguments."""

    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    rule: ThresholdRule
    audit: dict[str, Any]
    facts: dict[str, Any]


def plan(config: Mapping[str, Any]) -> ToyPlan:
    """The toy plan of the resolved ``config``: reads ``toy``, ``audit``, ``seed`` and ``scale``."""
    toy, audit = config["toy"], config["audit"]
    return ToyPlan(
        populations=(),
        targets=(Target("results/toy/fig1.pdf", kind="cpu", trained=False),),
        rule=config_rules(audit)[0],
        audit={"sigma": float(toy["sigma"]), "runs": int(toy["runs"]), "seed": int(config["seed"]),
               "delta": float(audit["delta"]), "confidence": float(audit["confidence"])},  # fmt: skip
        facts={"scale": config["scale"]},
    )
