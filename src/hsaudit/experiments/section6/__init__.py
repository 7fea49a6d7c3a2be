"""Section 6 of Cebere et al.: the one-dimensional process of adversary A_S^{h*}, by Monte Carlo and exactly
(docs/section6.md). Simulated, never trained: its plan has no populations.

The package has the shape of every experiment package (:mod:`hsaudit.experiments.plans`):

- :mod:`~hsaudit.experiments.section6.plan`: the ``section6`` and ``audit`` sections → :class:`Section6Plan` (its
  values, the threshold rule built once, the paths its rules write, the figure targets).
- :mod:`~hsaudit.experiments.section6.process`: the process (Eq. 3), its loss landscape (Fig. 10) and the float32
  Monte Carlo of one world with its noise streams (what stands for training here).
- :mod:`~hsaudit.experiments.section6.exact`: the exact law by density propagation, the exact privacy profile, ε,
  the R → ∞ audit limit, the exact trade-off curve and the accounting upper bound.
- :mod:`~hsaudit.experiments.section6.audit`: the audit of one step's scores under the plan's rule, and the
  threshold search's grid (imports the audit layer only).
- :mod:`~hsaudit.experiments.section6.records`: simulations audited into tidy records for the workflow (fig3/fig14
  audits, the fig6c threshold search, exact ε, fig6b curves).
- :mod:`~hsaudit.experiments.section6.figures`: fig3, fig6b, fig6c, fig10, fig14, listed in ``FIGURES``.

The package module imports nothing, so the plan (read by every ``snakemake`` call) stays light.
"""
