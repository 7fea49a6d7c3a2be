"""Coverage study of the audit estimators on exact Gaussian pairs (docs/audit.md, "Coverage study").

Non-member scores N(0, 1) and member scores N(μ, 1) (an exact half split of R runs) are the scores of the
optimal test between the two worlds of a μ-GDP Gaussian mechanism, whose true ε at δ is
:func:`hsaudit.accounting.gdp_epsilon`. A valid lower bound at confidence c should exceed the true ε in at
most about 1 − c of the trials (here the per-rate confidence c applies to each of the two CP bounds, so up
to ~2(1 − c) by the union bound, less in practice). Each trial draws its scores from its own seed
(:func:`hsaudit.util.seeding.derive_seed`), so the study is repeatable and independent of the order of trials.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.gdp import AUDIT_MODES, DEFAULT_SELECTION_FRACTION, audit_scores
from hsaudit.util.seeding import derive_seed

__all__ = ["CoverageRow", "coverage_study", "gaussian_pair_scores", "parse_mode"]


def parse_mode(spec: str) -> tuple[str, float]:
    """Parse an estimator spec ``MODE`` or ``MODE@FRACTION`` (e.g. ``held-out@0.1``: held-out mode with
    10% of each class selecting the threshold) into (mode, selection_fraction).

    Raises:
        ValueError: unknown mode, or a fraction outside (0, 1), or a fraction given for paper mode.
    """
    name, _, frac = str(spec).partition("@")
    if name not in AUDIT_MODES:
        raise ValueError(f"unknown audit mode {name!r} in {spec!r}; choose from {', '.join(AUDIT_MODES)}")
    if not frac:
        return name, DEFAULT_SELECTION_FRACTION
    if name == "paper":
        raise ValueError(f"paper mode has no selection fraction: {spec!r}")
    try:
        f = float(frac)
    except ValueError:
        raise ValueError(f"selection fraction must be a number, got {frac!r} in {spec!r}") from None
    if not 0.0 < f < 1.0:
        raise ValueError(f"selection fraction must be in (0, 1), got {f} in {spec!r}")
    return name, f


@dataclass(frozen=True)
class CoverageRow:
    """Summary of one (μ, mode) cell of the coverage study.

    Attributes:
        mode: estimator spec, ``MODE`` or ``MODE@FRACTION`` (see :func:`parse_mode`).
        mu: true μ of the Gaussian pair.
        true_epsilon: ε of μ-GDP at ``delta``.
        trials: number of seeded trials.
        runs: R, scores per trial (half members).
        exceed_fraction: fraction of trials with ε̂ > true ε (a valid 95% bound keeps this ≲ 5–10%).
        median_epsilon: median ε̂.
        median_ratio: median ε̂ / true ε.
        mean_epsilon: mean ε̂.
        sd_epsilon: standard deviation of ε̂.
        delta: δ.
        confidence: per-rate CP confidence.
    """

    mode: str
    mu: float
    true_epsilon: float
    trials: int
    runs: int
    exceed_fraction: float
    median_epsilon: float
    median_ratio: float
    mean_epsilon: float
    sd_epsilon: float
    delta: float
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


def gaussian_pair_scores(*, mu: float, runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """R scores of an exact half split: ⌊R/2⌋ non-members N(0, 1), the rest members N(μ, 1).

    Args:
        mu: mean shift of the member scores.
        runs: R ≥ 2.
        seed: seed of the draw.

    Returns:
        (scores, members) with members 0/1 (1 = member, higher score ⇒ member).
    """
    r = int(runs)
    if r < 2 or r != runs:
        raise ValueError(f"runs must be an integer >= 2, got {runs!r}")
    rng = np.random.default_rng(seed)
    n0 = r // 2
    members = np.zeros(r, dtype=np.int8)
    members[n0:] = 1
    scores = rng.standard_normal(r) + mu * members
    return scores, members


def coverage_study(
    *,
    mus: Sequence[float] = (0.5, 2.0, 3.95),
    trials: int = 200,
    runs: int = 5000,
    modes: Sequence[str] = ("paper", "held-out"),
    delta: float = 1e-5,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[CoverageRow]:
    """Run the coverage study: for each μ, ``trials`` seeded Gaussian pairs audited by every mode.

    The same scores are audited by every mode (paired comparison); held-out/grid splits are seeded from
    the trial's seed too.

    Args:
        mus: true μ values (> 0).
        trials: trials per μ (≥ 1).
        runs: R per trial (≥ 4).
        modes: estimator specs to compare: ``paper``, ``held-out``, ``grid``, optionally with a
            selection fraction, e.g. ``held-out@0.1``.
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1).
        seed: master seed.

    Returns:
        One :class:`CoverageRow` per (μ, mode), μ-major.

    Raises:
        ValueError: bad μ, counts, modes, δ or confidence.
    """
    mus = [float(m) for m in mus]
    if not mus or any(not (m > 0 and np.isfinite(m)) for m in mus):
        raise ValueError(f"mus must be positive finite numbers, got {mus}")
    if int(trials) < 1 or int(trials) != trials:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    if int(runs) < 4 or int(runs) != runs:
        raise ValueError(f"runs must be an integer >= 4, got {runs!r}")
    modes = list(modes)
    if not modes:
        raise ValueError("modes must name at least one audit mode")
    parsed = {mode: parse_mode(mode) for mode in modes}
    rows: list[CoverageRow] = []
    for mu in mus:
        truth = gdp_epsilon(mu=mu, delta=delta)
        eps = {mode: np.empty(int(trials)) for mode in modes}
        for t in range(int(trials)):
            trial_seed = derive_seed(seed, "coverage", mu, runs, t)
            scores, members = gaussian_pair_scores(mu=mu, runs=int(runs), seed=trial_seed)
            for mode in modes:
                name, fraction = parsed[mode]
                res = audit_scores(
                    scores,
                    members,
                    delta=delta,
                    confidence=confidence,
                    mode=name,
                    rng=derive_seed(trial_seed, "split"),
                    selection_fraction=fraction,
                )
                eps[mode][t] = res.epsilon
        for mode in modes:
            e = eps[mode]
            rows.append(
                CoverageRow(
                    mode=mode,
                    mu=mu,
                    true_epsilon=truth,
                    trials=int(trials),
                    runs=int(runs),
                    exceed_fraction=float(np.mean(e > truth)),
                    median_epsilon=float(np.median(e)),
                    median_ratio=float(np.median(e) / truth),
                    mean_epsilon=float(np.mean(e)),
                    sd_epsilon=float(np.std(e, ddof=1)) if e.size > 1 else 0.0,
                    delta=float(delta),
                    confidence=float(confidence),
                )
            )
    return rows
