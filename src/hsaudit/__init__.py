"""hsaudit: reproducible audits of DP-SGD in the hidden-state threat model.

Science lives in the modules of this package (importable and tested without Snakemake):

- :mod:`hsaudit.audit` — every estimator the papers use: Clopper–Pearson bounds, the GDP audit of Nasr et al.
  (2023) (paper / held-out / grid thresholds), the two-sample audit of Section 6, the assumption-free (ε, δ)
  bound, the σ̂ and PLD trade-off-curve audits, empirical trade-off curves.
- :mod:`hsaudit.accounting` — μ-GDP closed forms, trade-off curves, dp-accounting PLD for (subsampled) Gaussians and
  mixtures of Gaussians.
- :mod:`hsaudit.section6` — the one-dimensional process of Cebere et al. §6, by Monte Carlo and exactly.
- :mod:`hsaudit.heuristic`, :mod:`hsaudit.steinke`, :mod:`hsaudit.annamalai` — the other papers.
- :mod:`hsaudit.train` and friends — vectorised DP-SGD populations and the gradient-crafting adversaries.
"""

from __future__ import annotations

__version__ = "0.1.0"

# Audit core and accountants (numpy/scipy/dp-accounting only; cheap to import).
from hsaudit.accounting import (  # noqa: E402
    calibrate_noise,
    epsilon_from_delta_curve,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_pld,
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_tradeoff,
    mixture_gaussian_epsilon,
    mixture_gaussian_pld,
)
from hsaudit.audit import (  # noqa: E402
    AuditResult,
    assumption_free_epsilon,
    audit_scores,
    audit_steps,
    clopper_pearson_upper,
    empirical_tradeoff,
    reference_audit,
)
