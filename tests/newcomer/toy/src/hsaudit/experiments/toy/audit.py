"""The toy audit: outputs of the Gaussian mechanism (sensitivity 1, noise σ) on D (0) and D′ (1), audited by a rule."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.rules import ThresholdRule


def audit_gaussian(rule: ThresholdRule, *, sigma: float, runs: int, seed: int, delta: float,
                   confidence: float) -> pd.DataFrame:  # fmt: skip
    """One row: the mechanism's ε at ``delta`` (μ = 1/σ) and the rule's ε̂ from ``runs`` outputs per world."""
    rng = np.random.default_rng(seed)
    x0, x1 = rng.normal(0.0, sigma, runs), 1.0 + rng.normal(0.0, sigma, runs)
    result = rule.seeded(seed).gdp(x0, x1, delta=delta, confidence=confidence)
    return pd.DataFrame([{"sigma": sigma, "runs": runs, "delta": delta, "rule": rule.spec,
                          "epsilon": gdp_epsilon(mu=1.0 / sigma, delta=delta), "epsilon_hat": result.epsilon}])  # fmt: skip
