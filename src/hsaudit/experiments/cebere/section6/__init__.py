"""Section 6 of Cebere et al.: the one-dimensional process of adversary A_S^{h*}, by Monte Carlo and exactly.

Modules (docs/section6.md):

- :mod:`hsaudit.experiments.cebere.section6.process` — the process (Eq. 3), its loss landscape (Fig. 10) and the float32 Monte
  Carlo of one world with its noise streams.
- :mod:`hsaudit.experiments.cebere.section6.exact` — the exact law by density propagation, the exact privacy profile, ε, the
  R → ∞ audit limit, the exact trade-off curve and the accounting upper bound.
- :mod:`hsaudit.experiments.cebere.section6.audit` — audits of every step (fig3, fig14) and the threshold search (fig6c).
- :mod:`hsaudit.experiments.cebere.section6.records` — tidy records for the workflow (fig3/fig14 audits, exact ε, fig6b curves).

The audits are those of :mod:`hsaudit.audit` (the two-sample GDP audit with precomputed Clopper–Pearson tables,
:func:`hsaudit.audit.gdp_audit_two_sample`, re-exported here). The section's plan (its values and cross-key checks)
is :func:`hsaudit.experiments.cebere.plan.plan_section6`; its figures are
:mod:`hsaudit.experiments.cebere.figures.section6`.
"""

from __future__ import annotations

from hsaudit.audit.two_sample import GdpTables, StepAudit, cp_upper_table, gdp_audit_two_sample, gdp_tables
from hsaudit.experiments.cebere.section6.exact import (
    ExactLaw,
    exact_epsilon,
    exact_epsilon_curve,
    exact_epsilons,
    exact_laws,
    exact_tradeoff,
    density_privacy_profile,
    threshold_mu_limit,
    upper_bound_epsilon,
)
from hsaudit.experiments.cebere.section6.audit import alpha_grid, audit_process, switch_points, threshold_search
from hsaudit.experiments.cebere.section6.process import RULES, Process, iter_scores, loss_landscape, simulate_scores, world_rng
from hsaudit.experiments.cebere.section6.records import audit_records, exact_records, tradeoff_records

__all__ = [
    "RULES",
    "ExactLaw",
    "GdpTables",
    "Process",
    "StepAudit",
    "alpha_grid",
    "audit_process",
    "audit_records",
    "cp_upper_table",
    "exact_epsilon",
    "exact_epsilon_curve",
    "exact_epsilons",
    "exact_laws",
    "exact_records",
    "exact_tradeoff",
    "gdp_audit_two_sample",
    "gdp_tables",
    "iter_scores",
    "loss_landscape",
    "density_privacy_profile",
    "simulate_scores",
    "switch_points",
    "threshold_mu_limit",
    "threshold_search",
    "tradeoff_records",
    "upper_bound_epsilon",
    "world_rng",
]
