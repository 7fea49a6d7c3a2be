"""The plan of the Annamalai experiments: from the resolved config to the jobs of ``workflow/rules/annamalai.smk``
and the targets ``hsaudit plan`` lists (:func:`plan`). Nothing is trained: simulate → audit → plot.

- **calibration tables** (``results/annamalai/pld_table/setting{i}.csv``): ε(σ) and δ(ε′) of fig2's i-th (q, T),
  computed once and shared by every audit of that setting (:func:`hsaudit.experiments.annamalai.construction.pld_table`);
- **audits** (``results/annamalai/audit/setting{i}_eps{j}_{update}_{base}.csv``): the repeated audits of one
  (q, T), ε, update sign and encoding-base rule: σ calibrated to ε on the setting's table
  (:func:`hsaudit.experiments.annamalai.audit.calibrate`), the construction at that σ simulated
  (:func:`hsaudit.experiments.annamalai.construction.repeated_statistics`) and audited
  (:func:`hsaudit.experiments.annamalai.audit.audit_repetitions`): the configured pair, the literal update
  (``fig2.show_literal``) and the other base rule (``fig2.compare_base_rules``);
- **fig1's simulation** (``results/annamalai/fig1_data.csv``):
  :func:`hsaudit.experiments.annamalai.construction.setting_statistics` drawn into
  :func:`hsaudit.experiments.annamalai.audit.fig1_table`.

No job imports this module: the jobs take its values as parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.experiments.plans import Population, Target

BASE_RULES = ("three_sigma", "half_width")
FIG1_DATA = "results/annamalai/fig1_data.csv"


@dataclass(frozen=True)
class Figure:
    """A figure job: the tables it reads (concatenated) and the facts its function takes (footer and options)."""

    inputs: tuple[str, ...]
    facts: dict[str, Any]


@dataclass(frozen=True)
class AnnamalaiPlan:
    """Everything the Annamalai rules and ``hsaudit plan`` need.

    Attributes:
        populations: none (the construction is simulated, not trained).
        targets: fig1 and fig2 (CPU-sized at every scale).
        tables: calibration table id (``setting{i}``) → the keyword arguments of
            :func:`hsaudit.experiments.annamalai.construction.pld_table`.
        audits: audit id (``setting{i}_eps{j}_{update}_{base}``) → its ``epsilon`` and the keyword arguments of
            its ``construction`` (:class:`hsaudit.experiments.annamalai.construction.Construction`, σ aside), its
            ``simulation`` (:func:`hsaudit.experiments.annamalai.construction.repeated_statistics`) and its
            ``audit`` (:func:`hsaudit.experiments.annamalai.audit.audit_repetitions`, the table aside).
        audit_tables: audit id → the id of the calibration table it reads.
        fig1: the keyword arguments of fig1's ``simulation``
            (:func:`hsaudit.experiments.annamalai.construction.setting_statistics`) and its ``audit``
            (:func:`hsaudit.experiments.annamalai.audit.fig1_table`, the statistics aside).
        figures: figure id (``fig1``, ``fig2``) → its inputs and facts.
        audit_mem_mb: the memory of one audit job (it holds the repetitions' statistics).
    """

    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    tables: dict[str, dict[str, Any]]
    audits: dict[str, dict[str, Any]]
    audit_tables: dict[str, str]
    fig1: dict[str, Any]
    figures: dict[str, Figure]
    audit_mem_mb: int = 800

    def audit_table(self, audit: str) -> str:
        """The calibration table an audit reads."""
        return table_path(self.audit_tables[audit])


def table_path(table: str) -> str:
    return f"results/annamalai/pld_table/{table}.csv"


def audit_path(audit: str) -> str:
    return f"results/annamalai/audit/{audit}.csv"


def variants(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The audits of fig2 as (update sign, encoding-base rule): the configured pair, the literal update (to show
    that it fails) and the other base rule (to show the wraps' effect)."""
    update, base = section["update"], section["encoding"]["base_rule"]
    if base not in BASE_RULES:
        raise ValueError(f"annamalai.encoding.base_rule must be one of {BASE_RULES}, got {base!r}")
    out = [(update, base)]
    if section["fig2"]["show_literal"] and update == "ascent":
        out.append(("descent", base))
    if section["fig2"]["compare_base_rules"]:
        out.append((update, next(b for b in BASE_RULES if b != base)))
    return out


def plan(config: Mapping[str, Any]) -> AnnamalaiPlan:
    """The Annamalai plan of the resolved ``config``: reads ``annamalai``, ``seed``, ``audit.confidence`` and
    ``scale`` (the figures' footer)."""
    an, seed = config["annamalai"], int(config["seed"])
    table = an["table"]
    settings = list(an["fig2"]["settings"])
    tables = {
        f"setting{si}": {
            "steps": int(setting["steps"]),
            "sampling_rate": float(setting["sampling_rate"]),
            "delta": an["delta"],
            "epsilon_range": (float(table["epsilon_min"]), float(table["epsilon_max"])),
            "n_sigmas": int(table["n_sigmas"]),
            "value_discretization_interval": float(table["value_discretization_interval"]),
        }
        for si, setting in enumerate(settings)
    }
    configured = (an["update"], an["encoding"]["base_rule"])
    audits, audit_tables = {}, {}
    for si, setting in enumerate(settings):
        for ei, epsilon in enumerate(an["fig2"]["epsilons"]):
            for update, base in variants(an):
                floors = [float(an["tail_floor"])]
                if update == "ascent":
                    floors += [float(f) for f in an["tail_floors_sensitivity"]]
                name = f"setting{si}_eps{ei}_{update}_{base}"
                audit_tables[name] = f"setting{si}"
                steps = int(setting["steps"])
                audits[name] = {
                    "epsilon": float(epsilon),
                    "construction": {
                        "sampling_rate": float(setting["sampling_rate"]),
                        "dataset_size": float(an["dataset_size"]),
                        "base_rule": base,
                        "base_sigmas": float(an["encoding"]["base_sigmas"]),
                    },
                    "simulation": {
                        "steps": steps,
                        "runs": int(an["runs_per_world"]),
                        "repetitions": int(an["repetitions"]),
                        "seed": seed,
                        "update": update,
                        "ideal_reference": bool(an["fig2"]["ideal_reference"] and (update, base) == configured),
                    },
                    "audit": {
                        "tail_floors": list(dict.fromkeys(floors)),
                        "confidence": config["audit"]["confidence"],
                        "seed": seed,
                        "steps": steps,
                    },
                }
    fig1 = {
        "simulation": {
            "settings": [dict(s) for s in an["fig1"]["settings"]],
            "runs": int(an["runs_per_world"]),
            "seed": seed,
            "dataset_size": float(an["dataset_size"]),
            "update": an["update"],
            "base_rule": an["encoding"]["base_rule"],
            "base_sigmas": float(an["encoding"]["base_sigmas"]),
        },
        "audit": {
            "delta": an["delta"],
            "value_discretization_interval": float(table["value_discretization_interval"]),
        },
    }
    facts = {"scale": config["scale"]}
    figures = {
        "fig1": Figure(inputs=(FIG1_DATA,), facts=facts),
        "fig2": Figure(
            inputs=tuple(audit_path(a) for a in audits),
            facts={**facts, "tail_floor": float(an["tail_floor"]), "base_rule": an["encoding"]["base_rule"]},
        ),
    }
    return AnnamalaiPlan(
        populations=(),
        targets=tuple(Target(f"results/annamalai/{f}.pdf", kind="cpu", trained=False) for f in figures),
        tables=tables,
        audits=audits,
        audit_tables=audit_tables,
        fig1=fig1,
        figures=figures,
        audit_mem_mb=800 + int(an["runs_per_world"]) // 50,
    )
