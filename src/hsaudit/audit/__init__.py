"""The audit layer: every estimator the papers use, none tied to a paper (docs/audit.md).

- :mod:`hsaudit.audit.auditor` — the one auditor every caller uses: :class:`Auditor` (every estimate of an audit in
  one :class:`AuditReport`), :func:`audit_scores` / :func:`audit_steps` (the GDP audit of labelled score arrays);
  docs/audit.md "The auditor".
- :mod:`hsaudit.audit.rules` — threshold rules as values, each carrying its estimator: :class:`Paper` (the papers'
  rule, not valid), :class:`HeldOut`, :class:`Grid`, :class:`Bonferroni`, :class:`Crossing` (the default,
  :data:`DEFAULT_RULE`), :class:`Rays`, each a subclass of :class:`ThresholdRule` (the registry); :func:`parse_rule`,
  the one reader of rule strings (the config's names, the CLI's, a rule's ``spec``).
- :mod:`hsaudit.audit.gdp` — the GDP audit's result (:class:`AuditResult`) and its conversion error-rate bounds →
  μ̂ → ε̂ (Nasr et al. 2023; Cebere et al. 2025).
- :mod:`hsaudit.audit.bounds` — one-sided Clopper–Pearson bounds and their cached probit tables, the Bonferroni
  level, the assumption-free (ε, δ) bound.
- :mod:`hsaudit.audit.threshold` — threshold selection of the Clopper–Pearson rules (the exact search for the
  largest μ, the stratified split, the grid's candidates); :mod:`hsaudit.audit.search` — the histogram-pruned
  search behind it on large populations and behind the two-sample audit.
- :mod:`hsaudit.audit.crossing` — exact lower confidence bounds on μ where the empirical trade-off curve crosses
  rays around FPR = FNR, calibrated on the least-favourable Gaussian pair (the crossing and rays rules).
- :mod:`hsaudit.audit.tradeoff` — empirical trade-off curves, observed rates and their Clopper–Pearson-bounded
  points (every threshold, or one held-out threshold): the known-family form of the rules.
- :mod:`hsaudit.audit.pld` — audits against a known mechanism family: the σ̂ audit (largest σ consistent with the
  rule's points; Nasr et al. 2023, Steinke et al. 2024 §3.1) and the PLD trade-off-curve audit of Annamalai (2024,
  Algorithm 2).
- :mod:`hsaudit.audit.two_sample` — the paper rule's audit of two score samples with precomputed Clopper–Pearson
  tables and the assumption-free bound maximised over thresholds (what the Section 6 experiments run).
- :mod:`hsaudit.audit.one_run` — audits in one training run: the counting bound of Steinke, Nasr & Jagielski
  (2023) for (ε, δ)-DP; :mod:`hsaudit.audit.one_run_fdp` — the f-DP / μ-GDP bound of Mahloujifar et al. (2024).
- :mod:`hsaudit.audit.validation` — the coverage study of the rules on score pairs of known μ;
  :mod:`hsaudit.audit.reference` — the slow reference loop of the paper rule; :mod:`hsaudit.audit.inputs` — the
  checks of scores, labels and levels at the public boundaries.

Convention everywhere: **higher score ⇒ member** (canary inserted). numpy/scipy only (no torch), plus the
PLD curves of :mod:`hsaudit.accounting.last_iterate` for the known-family audits. No evidence is ε̂ = 0, never the
end of a search bracket.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# name -> nothing is imported until a name is used (PEP 562): ``hsaudit audit`` loads the auditor and its rules,
# not the one-run bounds or the PLD tables. Each name comes from the module that defines it.
_EXPORTS = {
    "hsaudit.audit.auditor": (
        "Auditor",
        "AuditReport",
        "KnownFamily",
        "audit_scores",
        "audit_steps",
    ),
    "hsaudit.audit.rules": (
        "AUDIT_MODES",
        "DEFAULT_RULE",
        "Bonferroni",
        "Crossing",
        "Grid",
        "HeldOut",
        "Paper",
        "Rays",
        "ThresholdRule",
        "VALID_MODES",
        "parse_rule",
    ),
    "hsaudit.audit.gdp": ("AuditResult",),
    "hsaudit.audit.bounds": (
        "assumption_free_epsilon",
        "bonferroni_confidence",
        "clear_cache",
        "clopper_pearson_upper",
    ),
    "hsaudit.audit.crossing": (
        "DEFAULT_CALIBRATION_DRAWS",
        "DEFAULT_RAYS",
        "RayCrossing",
        "RayPath",
        "crossing_cdf",
        "crossing_mu_lower",
        "first_crossing",
        "minimum_calibration_draws",
        "ray_path",
        "ray_statistic",
        "rays_mu_lower",
    ),
    "hsaudit.audit.tradeoff": (
        "clopper_pearson_points",
        "empirical_tradeoff",
        "held_out_point",
        "observed_rates",
    ),
    "hsaudit.audit.pld": (
        "SIGMA_FAMILIES",
        "audit_pld",
        "epsilon_grid_audit",
        "lower_hull",
        "no_evidence",
        "pld_sigma_audit",
        "sigma_hat_from_points",
    ),
    "hsaudit.audit.one_run": (
        "OneRunResult",
        "one_run_audit",
        "one_run_audit_search",
        "one_run_epsilon",
        "one_run_guesses",
        "one_run_p_value",
    ),
    "hsaudit.audit.one_run_fdp": (
        "one_run_fdp_audit",
        "one_run_fdp_epsilon",
        "one_run_fdp_mu",
        "one_run_fdp_p_value",
    ),
    "hsaudit.audit.search": (
        "ThresholdMax",
        "max_over_thresholds",
    ),
    "hsaudit.audit.two_sample": (
        "GdpTables",
        "StepAudit",
        "cp_upper_table",
        "gdp_audit_two_sample",
        "gdp_tables",
    ),
    "hsaudit.audit.reference": ("reference_audit",),
}
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # for readers and type checkers; code versions follow these (hsaudit.pipeline.provenance)
    from hsaudit.audit.auditor import Auditor, AuditReport, KnownFamily, audit_scores, audit_steps  # noqa: F401
    from hsaudit.audit.bounds import *  # noqa: F403
    from hsaudit.audit.crossing import *  # noqa: F403
    from hsaudit.audit.gdp import AuditResult  # noqa: F401
    from hsaudit.audit.one_run import *  # noqa: F403
    from hsaudit.audit.one_run_fdp import *  # noqa: F403
    from hsaudit.audit.pld import *  # noqa: F403
    from hsaudit.audit.reference import *  # noqa: F403
    from hsaudit.audit.rules import *  # noqa: F403
    from hsaudit.audit.search import *  # noqa: F403
    from hsaudit.audit.tradeoff import *  # noqa: F403
    from hsaudit.audit.two_sample import *  # noqa: F403


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hsaudit.audit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
