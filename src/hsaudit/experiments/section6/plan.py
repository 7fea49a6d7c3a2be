"""Section 6 of Cebere et al. (the one-dimensional process): the plan, from the resolved config to the frozen values
its rules run (``workflow/rules/section6.smk``): simulate → audit → plot, and the exact law; no training.

No job imports this module, so editing the plan reruns no job whose values it leaves alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.audit.rules import Paper, ThresholdRule, config_rules
from hsaudit.experiments.plans import Population, Target

FIGURES = ("fig3", "fig6b", "fig6c", "fig10", "fig14")
"""The figures of the section (``results/<id>.pdf``)."""


def check_config(section: Mapping[str, Any]) -> None:
    """Cross-key checks of the ``section6`` config section that the JSON schema cannot express.

    Args:
        section: the resolved ``section6`` section (scale preset merged in).

    Raises:
        ValueError: naming the offending key (e.g. a panel σ that is not simulated).
    """
    sigmas = [float(s) for s in section["sigmas"]]
    search_sigmas = section["threshold_search"]["sigmas"]
    for key, values in (("section6.sigmas", sigmas), ("section6.threshold_search.sigmas", search_sigmas)):
        for s in values:
            if not re.fullmatch(r"\d+(\.\d+)?", f"{float(s):g}"):
                raise ValueError(f"{key}: {s} cannot be written as a plain decimal (use e.g. 0.5, 2, 7.25)")
    for s in section["panel_sigmas"]:
        if float(s) not in sigmas:
            raise ValueError(f"section6.panel_sigmas: {s} is not one of section6.sigmas {section['sigmas']}")
    if section["tradeoff"]["step"] > section["steps"]:
        raise ValueError(
            f"section6.tradeoff.step: {section['tradeoff']['step']} exceeds section6.steps = {section['steps']}"
        )
    lo, hi = section["landscape"]["range"]
    if not lo < hi:
        raise ValueError(f"section6.landscape.range: need low < high, got {section['landscape']['range']}")


@dataclass(frozen=True)
class Section6Plan:
    """The Section 6 process (simulate → audit → plot, and its exact law): what its rules run.

    Attributes:
        values: the resolved ``section6`` section.
        rules: the sign rules of the process (the ``{sign}`` wildcard).
        sigmas: σ of the audits, as written in paths (``0.5``, ``2``).
        search_cells: (σ, B) of the threshold-search jobs (fig6c).
        runs: R per world of each sign rule's audits (the literal rule may run cheaper, see config).
        audit_rule: the threshold rule of every audit, built once from the config's ``audit`` section
            (:func:`hsaudit.audit.rules.config_rules`); the rules pass on its ``spec``.
        facts: what every Section 6 figure's footer states (scale, audit rule, confidence, δ).
        seed: the master seed of the simulations.
        populations: none (nothing is trained).
        targets: the figures (simulated: ``trained=False``).
    """

    values: Mapping[str, Any]
    rules: tuple[str, ...]
    sigmas: tuple[str, ...]
    search_cells: tuple[tuple[str, int], ...]
    runs: Mapping[str, int]
    audit_rule: ThresholdRule
    facts: Mapping[str, Any]
    seed: int
    populations: tuple[Population, ...] = ()
    targets: tuple[Target, ...] = tuple(Target(f"results/{f}.pdf", trained=False) for f in FIGURES)

    CP_TABLE = "results/section6/cp_table/n{n}.npy"
    """The shared Clopper–Pearson table of R runs per world (paper mode only)."""

    @property
    def audits(self) -> list[str]:
        """Every per-(rule, σ) audit table."""
        return [f"results/section6/audit/{sign}/sigma{sigma}.csv" for sign in self.rules for sigma in self.sigmas]

    @property
    def exact(self) -> list[str]:
        """Every per-rule exact-law table."""
        return [f"results/section6/exact/{sign}.csv" for sign in self.rules]

    @property
    def searches(self) -> list[str]:
        """Every threshold-search table (fig6c)."""
        return [f"results/section6/threshold_search/sigma{s}_B{b}.csv" for s, b in self.search_cells]

    @property
    def delta(self) -> float:
        """δ of every reported ε (``audit.delta``)."""
        return float(self.facts["delta"])

    @property
    def confidence(self) -> float:
        """The Clopper–Pearson confidence of every audit (``audit.confidence``)."""
        return float(self.facts["confidence"])

    @property
    def paper_mode(self) -> bool:
        """Whether the audits use the paper's rule (and so the shared Clopper–Pearson tables)."""
        return isinstance(self.audit_rule, Paper)

    def cp_tables(self, runs: int) -> list[str]:
        """The Clopper–Pearson table an audit with R = ``runs`` per world reads (none outside paper mode)."""
        return [self.CP_TABLE.format(n=int(runs))] if self.paper_mode else []


def plan(config: Mapping[str, Any]) -> Section6Plan:
    """Resolve the ``section6`` section (checked with :func:`check_config`) and the ``audit`` section's rule.

    Raises:
        ValueError: naming the key of an inconsistent value (a cross-key check, an unknown threshold rule).
    """
    section, audit, scale = config["section6"], config["audit"], config["scale"]
    check_config(section)
    audit_rule, _ = config_rules(audit)
    rules = tuple(section["rules"])
    search = section["threshold_search"]
    runs = {
        sign: (
            int(section["literal_runs_per_world"])
            if sign == "literal" and section["literal_runs_per_world"]
            else int(section["runs_per_world"])
        )
        for sign in rules
    }
    facts = {
        "scale": scale,
        "threshold_rule": audit_rule.spec,
        "selection_fraction": audit["selection_fraction"],
        "confidence": audit["confidence"],
        "delta": audit["delta"],
    }
    return Section6Plan(
        values=section,
        rules=rules,
        sigmas=tuple(f"{float(s):g}" for s in section["sigmas"]),
        search_cells=tuple((f"{float(s):g}", int(b)) for s in search["sigmas"] for b in search["batch_sizes"]),
        runs=runs,
        audit_rule=audit_rule,
        facts=facts,
        seed=int(config["seed"]),
    )
