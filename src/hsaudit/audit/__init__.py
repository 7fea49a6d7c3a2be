"""The audit layer: every estimator the papers use, none tied to a paper (docs/audit.md).

- :mod:`hsaudit.audit.auditor` — the one auditor every caller uses: threshold rules as values, every estimate of
  an audit in one report (docs/audit.md "The auditor"). Its rule ``Crossing`` is reached there (the name
  ``Crossing`` here is :mod:`hsaudit.audit.crossing`'s record of one crossing).
- :mod:`hsaudit.audit.gdp` — one-sided Clopper–Pearson bounds, the GDP audit of Nasr et al. (2023) as Cebere et
  al. (2025) run it (paper / held-out / grid threshold selection), the assumption-free (ε, δ) bound, the slow
  reference loop, empirical trade-off curves and observed rates.
- :mod:`hsaudit.audit.crossing` — exact lower confidence bounds on μ where the empirical trade-off curve crosses
  rays around FPR = FNR, calibrated on the least-favourable Gaussian pair (the crossing / rays modes: valid for
  any scores, no split).
- :mod:`hsaudit.audit.search` — the exact histogram-pruned threshold search behind the paper-mode audit of
  large populations.
- :mod:`hsaudit.audit.two_sample` — the same audit of two score samples with precomputed Clopper–Pearson tables
  and the assumption-free bound maximised over thresholds (what the Section 6 experiments run).
- :mod:`hsaudit.audit.one_run` — audits in one training run: the counting bound of Steinke, Nasr & Jagielski
  (2023) for (ε, δ)-DP; :mod:`hsaudit.audit.one_run_fdp` — the f-DP / μ-GDP bound of Mahloujifar et al. (2024).
- :mod:`hsaudit.audit.pld` — audits against a known mechanism family: the σ̂ audit (largest σ consistent with
  every Clopper–Pearson-bounded point; Nasr et al. 2023, Steinke et al. 2024 §3.1) and the PLD trade-off-curve
  audit of Annamalai (2024, Algorithm 2).

Convention everywhere: **higher score ⇒ member** (canary inserted). numpy/scipy only (no torch), plus the
PLD curves of :mod:`hsaudit.accounting.last_iterate` for the known-family audits.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# name -> nothing is imported until a name is used (PEP 562): ``hsaudit audit`` loads the auditor and the GDP audit,
# not the one-run bounds or the PLD tables. Each name comes from the module that defines it.
_EXPORTS = {
    "hsaudit.audit.crossing": (
        "DEFAULT_CALIBRATION_DRAWS",
        "DEFAULT_RAYS",
        "Crossing",
        "RayPath",
        "crossing_cdf",
        "crossing_mu_lower",
        "first_crossing",
        "minimum_calibration_draws",
        "ray_path",
        "ray_statistic",
        "rays_mu_lower",
    ),
    "hsaudit.audit.gdp": (
        "AUDIT_MODES",
        "DEFAULT_GRID_SIZE",
        "DEFAULT_SELECTION_FRACTION",
        "MODE_DESCRIPTIONS",
        "SPLIT_MODES",
        "TEST_MODES",
        "AuditResult",
        "assumption_free_epsilon",
        "audit_scores",
        "audit_steps",
        "clear_cache",
        "clopper_pearson_upper",
        "describe_mode",
        "empirical_tradeoff",
        "observed_rates",
        "reference_audit",
        "bonferroni_confidence",
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
    "hsaudit.audit.pld": (
        "SIGMA_FAMILIES",
        "audit_pld",
        "audit_pld_sigma",
        "clopper_pearson_points",
        "epsilon_grid_audit",
        "lower_hull",
        "pld_sigma_audit",
        "sigma_hat_from_points",
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
    "hsaudit.audit.auditor": (
        "Auditor",
        "AuditReport",
        "KnownFamily",
        "Paper",
        "HeldOut",
        "Grid",
        "Bonferroni",
        "Rays",
        "ThresholdRule",
        "parse_rule",
        "rule_from_mode",
    ),
}
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_LAZY)

if TYPE_CHECKING:  # for readers and type checkers; code versions follow these (hsaudit.pipeline.provenance)
    from hsaudit.audit.crossing import *  # noqa: F403
    from hsaudit.audit.gdp import *  # noqa: F403
    from hsaudit.audit.one_run import *  # noqa: F403
    from hsaudit.audit.one_run_fdp import *  # noqa: F403
    from hsaudit.audit.pld import *  # noqa: F403
    from hsaudit.audit.search import *  # noqa: F403
    from hsaudit.audit.two_sample import *  # noqa: F403
    from hsaudit.audit.auditor import *  # noqa: F403


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hsaudit.audit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
