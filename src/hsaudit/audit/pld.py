"""Audits against a known mechanism family: the σ̂ audit and the PLD trade-off-curve audit.

Both compare (FPR, FNR) points (**higher score ⇒ canary present**) with the trade-off curves of a family of
mechanisms whose sampling rate q and steps T the auditor knows. The points are a threshold rule's known-family form
(``rule.points``, :mod:`hsaudit.audit.rules`): every threshold's one-sided Clopper–Pearson upper bounds under
:class:`~hsaudit.audit.rules.Paper` (the papers' audits: a max over thresholds, not a valid 95 % bound —
docs/audit.md: at paper scale the Clopper–Pearson variant overshoots the true ε on average), the same with each
bound at 1 − (1 − c)/(2n) under :class:`~hsaudit.audit.rules.Bonferroni` (valid jointly, loose), or one bounded
point at a threshold chosen on a random selection split of each world under :class:`~hsaudit.audit.rules.HeldOut`
(valid: the true mechanism is consistent with it whenever both one-sided bounds hold;
:func:`hsaudit.audit.tradeoff.held_out_point`).

* the σ̂ audit (Nasr et al. 2023, "PLD approach with Clopper–Pearson intervals"; Steinke et al. 2024 §3.1): the
  largest σ̂ whose curve lies on or below every point, and ε_lb = ε_{σ̂}(δ) — :func:`sigma_hat_from_points`
  (last-iterate or all-iterates family, as Annamalai 2024 also runs it) and :func:`pld_sigma_audit`;
* the PLD trade-off-curve audit of Annamalai (2024, Algorithm 2): the first ε̂ of a grid whose PLD curve
  (from a calibration table, :class:`hsaudit.accounting.PldTable`) lies below every point — :func:`audit_pld`.

No evidence is 0: points on or above β = 1 − α (the curve of σ = ∞, :func:`no_evidence`) give ε̂ = 0, never the
end of a search bracket. The curves themselves are accounting-side (:mod:`hsaudit.accounting`; the last-iterate
curve and the PLDs of composed subsampled Gaussians in :mod:`hsaudit.accounting.last_iterate`).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hsaudit.accounting import last_iterate as H
from hsaudit.accounting.gaussian import PldTable, pld_tradeoff, sigma_for_epsilon, tradeoff_from_deltas
from hsaudit.accounting.last_iterate import delta_curve, last_iterate_tradeoff
from hsaudit.audit.tradeoff import observed_rates

if TYPE_CHECKING:
    from hsaudit.audit.rules import ThresholdRule

__all__ = [
    "SIGMA_FAMILIES",
    "SIGMA_SEARCH_LIMITS",
    "audit_pld",
    "epsilon_grid_audit",
    "lower_hull",
    "no_evidence",
    "pld_sigma_audit",
    "sigma_hat_from_points",
]

SIGMA_FAMILIES = ("last_iterate", "all_iterates")


def lower_hull(alpha: npt.ArrayLike, beta: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the lower-left convex hull of the points (α, β) (Andrew's monotone chain).

    A trade-off curve f is convex and decreasing, so every point lies on or above f iff every vertex of this hull
    does (a point dominated by a convex combination of others is implied): the consistency checks of the σ̂ audit
    only need these vertices, typically a few hundred of ~10⁵ points.
    """
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    hull: list[int] = []
    for i in range(a.size):
        while len(hull) >= 2:
            i1, i2 = hull[-2], hull[-1]
            cross = (a[i2] - a[i1]) * (b[i] - b[i1]) - (b[i2] - b[i1]) * (a[i] - a[i1])
            if cross <= 0:
                hull.pop()
            else:
                break
        hull.append(i)
    idx = np.array(hull, dtype=int)
    # Keep the decreasing part (the lower-left boundary); points right of the β minimum cannot bind.
    stop = int(np.argmin(b[idx])) + 1
    return a[idx[:stop]], b[idx[:stop]]


def _lowest_beta_per_alpha(alpha: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct α in increasing order, each with its smallest β (for equal α only the smallest β matters)."""
    order = np.lexsort((beta, alpha))
    a, b = alpha[order], beta[order]
    first = np.concatenate(([True], a[1:] != a[:-1])) if a.size else np.zeros(0, dtype=bool)
    return a[first], b[first]


def _composed_tradeoff(alpha, sigma, steps, sampling_rate, epsilons, value_discretization_interval) -> np.ndarray:
    """β(α) of T composed Poisson-subsampled Gaussians at σ, from the δ(ε′) envelope of its PLD on ``epsilons``."""
    d = delta_curve(
        steps=steps,
        sampling_rate=sampling_rate,
        noise_multiplier=sigma,
        epsilons=epsilons,
        value_discretization_interval=value_discretization_interval,
    )
    return tradeoff_from_deltas(alpha, epsilons, d)


#: Absolute limits of the σ̂ search. The nominal σ only places the first bracket [σ/4, 10σ]; the bracket then grows
#: until it holds σ̂, so the result does not depend on the nominal σ (beyond the bisection's resolution). Points
#: consistent with every σ up to the upper limit are read as no evidence (σ̂ = ∞, ε̂ = 0); points that reject every σ
#: down to the lower limit give σ̂ = that limit (ε̂ below the evidence: conservative, with a warning).
SIGMA_SEARCH_LIMITS = (0.05, 1e4)


def no_evidence(alpha: npt.ArrayLike, beta: npt.ArrayLike) -> bool:
    """Whether every (α, β) point lies on or above β = 1 − α, the trade-off curve of σ = ∞ (the two worlds
    identical): the points reject no mechanism of any family, and the audit's lower bound is ε̂ = 0."""
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    return bool(np.all(b >= 1.0 - a - 1e-12))


def _largest_consistent_sigma(consistent, lo: float, hi: float, iterations: int) -> float:
    """σ̂ = sup{σ : consistent(σ)}, where consistency holds on (0, σ̂] (a smaller σ has a lower curve).

    [lo, hi] is the first bracket; it grows (×10 up, ÷4 down) within :data:`SIGMA_SEARCH_LIMITS` until it holds
    σ̂, then ``iterations`` bisection steps in log σ close on it from the rejected side. Returns ``inf`` (no evidence) when
    every σ up to the upper limit is consistent; the lower limit, with a warning, when none down to it is.
    """
    smin, smax = SIGMA_SEARCH_LIMITS
    if consistent(hi):
        while True:
            if hi >= smax:
                warnings.warn(f"points are consistent with every sigma up to {hi:g}: read as no evidence (epsilon 0)",
                              stacklevel=3)  # fmt: skip
                return math.inf
            lo, hi = hi, min(hi * 10.0, smax)
            if not consistent(hi):
                break
    elif not consistent(lo):
        while True:
            if lo <= smin:
                warnings.warn(f"points violate even sigma={lo:g}; sigma_hat is capped there (epsilon is a "
                              "conservative lower bound)", stacklevel=3)  # fmt: skip
                return lo
            hi, lo = lo, max(lo / 4.0, smin)
            if consistent(lo):
                break
    return math.exp(_bisect_log_sigma(consistent, math.log(lo), math.log(hi), iterations))


def _bisect_log_sigma(consistent, llo: float, lhi: float, iterations: int) -> float:
    """``iterations`` bisection steps on log σ between a consistent ``llo`` and an inconsistent ``lhi``; returns
    the smallest inconsistent log σ found: every σ at or above it is rejected by the points, so ε at it is a lower
    bound (the last consistent σ would overstate ε by the bisection's resolution)."""
    for _ in range(iterations):  # invariant: exp(llo) consistent, exp(lhi) not
        mid = 0.5 * (llo + lhi)
        if consistent(math.exp(mid)):
            llo = mid
        else:
            lhi = mid
    return lhi


def sigma_hat_from_points(
    alpha: npt.ArrayLike,
    beta: npt.ArrayLike,
    *,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    delta: float,
    family: str = "last_iterate",
    iterations: int = 14,
    value_discretization_interval: float = 1e-3,
) -> dict[str, float]:
    """The largest σ̂ whose trade-off curve (known q, T) lies on or below every point (α, β); ε at δ of σ̂.

    Args:
        alpha, beta: (FPR, FNR) points (CP upper bounds for an audit, exact rates for its infinite-R limit).
        steps, sampling_rate: the known T and q.
        noise_multiplier: the nominal σ, where the search starts (bracket [σ/4, 10σ], grown until it holds σ̂
            within :data:`SIGMA_SEARCH_LIMITS`): the result does not depend on it beyond the bisection's resolution.
        delta: δ.
        family: the mechanisms the adversary assumes. ``"last_iterate"``: Theorem 1's pair
            N(Binomial(T, q), Tσ²) vs N(0, Tσ²) — its symmetric curve (:func:`hsaudit.accounting.last_iterate.last_iterate_tradeoff`),
            ε = the heuristic ε at σ̂. ``"all_iterates"``: T composed Poisson-subsampled Gaussians (symmetric
            PLD curve of dp-accounting, as in Nasr et al. 2023 and Annamalai 2024),
            ε = standard accounting at σ̂.
        iterations: bisection steps in log σ.
        value_discretization_interval: PLD discretisation (``all_iterates``).

    Returns:
        ``{"sigma_hat": σ̂, "epsilon": ε}``; no evidence (every point on or above β = 1 − α, :func:`no_evidence`,
        or consistent with every σ up to the search's upper limit) is σ̂ = ∞, ε = 0 — never a bracket's end.

    Raises:
        ValueError: on an unknown family.
    """
    if family not in SIGMA_FAMILIES:
        raise ValueError(f"family must be one of {SIGMA_FAMILIES}, got {family!r}")
    if no_evidence(alpha, beta):
        return {"sigma_hat": math.inf, "epsilon": 0.0}
    a, b = lower_hull(alpha, beta)

    eg = np.round(np.arange(0.0, 40.0 + 1e-9, 0.05), 6)  # ε′ lines of the PLD envelope (fig6's grid)

    def consistent(sig: float) -> bool:
        if family == "last_iterate":
            f = last_iterate_tradeoff(a, steps=steps, sampling_rate=sampling_rate, noise_multiplier=sig)
        else:
            f = _composed_tradeoff(a, sig, steps, sampling_rate, eg, value_discretization_interval)
        return bool(np.all(b >= f - 1e-12))

    sig = _largest_consistent_sigma(consistent, noise_multiplier / 4, noise_multiplier * 10, iterations)
    if math.isinf(sig):
        return {"sigma_hat": sig, "epsilon": 0.0}
    kw = dict(steps=steps, sampling_rate=sampling_rate, noise_multiplier=sig)
    if family == "last_iterate":
        eps = H.heuristic_epsilon(delta, **kw)
    else:
        eps = H.standard_epsilon(delta, value_discretization_interval=value_discretization_interval, **kw)
    return {"sigma_hat": sig, "epsilon": eps}


def pld_sigma_audit(
    scores_out: npt.ArrayLike,
    scores_in: npt.ArrayLike,
    *,
    rule: ThresholdRule,
    steps: int,
    sampling_rate: float,
    noise_multiplier: float,
    delta: float,
    confidence: float = 0.95,
    family: str = "last_iterate",
    iterations: int = 14,
) -> dict[str, float]:
    """The paper's audit (§3.1, "PLD approach with Clopper–Pearson intervals" of Nasr et al. 2023): the adversary
    knows q and T and estimates σ; ε_lb is derived from σ̂.

    The rule's CP-bounded points at ``confidence`` (``rule.points``; higher score ⇒ canary present), then
    :func:`sigma_hat_from_points` with the assumed ``family`` (``iterations`` bisection steps). Rules:
    :class:`~hsaudit.audit.rules.Paper` (every threshold, the paper's: not a valid bound), ``HeldOut`` and
    ``Bonferroni`` (valid); the others raise ``ValueError``.

    Returns:
        ``{"sigma_hat": σ̂, "epsilon": ε_lb}`` (σ̂ = ∞, ε = 0 when the points give no evidence).
    """
    a, b = rule.points(scores_out, scores_in, confidence=confidence)
    return sigma_hat_from_points(
        a,
        b,
        steps=steps,
        sampling_rate=sampling_rate,
        noise_multiplier=noise_multiplier,
        delta=delta,
        family=family,
        iterations=iterations,
    )


def epsilon_grid_audit() -> np.ndarray:
    """Υ = {0.5, 0.6, …, 20.0} (Algorithm 2, line 17)."""
    return np.round(np.arange(0.5, 20.0 + 1e-9, 0.1), 6)


def audit_pld(
    o_out: npt.ArrayLike,
    o_in: npt.ArrayLike,
    table: PldTable,
    *,
    rule: ThresholdRule | None = None,
    confidence: float = 0.95,
    tail_floor: float = 0.0,
    grid: npt.ArrayLike | None = None,
) -> float:
    """ε_emp of Algorithm 2: the first ε̂ ∈ Υ whose PLD trade-off curve lies below every observed (α, β).

    Args:
        o_out: statistics on D (null, no canary).
        o_in: statistics on D′.
        table: the PLD table of the audited (q, T).
        rule: None for the paper's audit (raw rates, no confidence intervals); a threshold rule for the
            Clopper–Pearson variant, which replaces (α, β) by the rule's one-sided upper bounds at ``confidence``
            (``rule.points``: every threshold under ``Paper``, a max over thresholds and not a valid bound; one
            held-out threshold under ``HeldOut`` or every threshold at a Bonferroni level under ``Bonferroni``,
            valid; no floor needed).
        confidence: the level of the rule's bounds.
        tail_floor: raw rates only: points with α ≤ floor or β ≤ floor are ignored (α = 0 or β = 0 violates
            every curve, so some rule is needed; the paper states none). 0 drops only the exact zeros.
        grid: Υ (default 0.5, 0.6, …, 20).

    Returns:
        Without a rule or under ``Paper`` (the paper's Algorithm 2): the first ε̂ ∈ Υ whose curve is consistent
        with every point; ``inf`` when every ε̂ of the grid is violated. Under a valid rule, a lower bound: the
        largest ε that the points reject, found by bisection between the last rejected and the first consistent
        value of Υ (the first consistent grid value can sit up to one grid step above it, which a lower bound must
        not); the largest value of Υ, with a warning, when every ε̂ of the grid is rejected. 0 when no point
        rejects ε = 0 (no evidence; also when the floor drops every point).
    """
    if rule is not None:
        alpha, beta = rule.points(o_out, o_in, confidence=confidence)
    else:
        alpha, beta = observed_rates(o_out, o_in)
        keep = (alpha > tail_floor) & (beta > tail_floor)
        alpha, beta = alpha[keep], beta[keep]
    alpha, beta = _lowest_beta_per_alpha(alpha, beta)
    grid = epsilon_grid_audit() if grid is None else np.asarray(grid, dtype=float)
    valid = rule is not None and rule.valid

    def consistent_at(epsilon: float) -> bool:
        sig = sigma_for_epsilon(float(epsilon), table)
        return bool(np.all(beta >= pld_tradeoff(alpha, sig, table) - 1e-12))

    def consistent(i: int) -> bool:
        return consistent_at(float(grid[i]))

    # The curves are nested (a larger ε̂ means a smaller σ̂ and a lower curve), so the first consistent ε̂ of the
    # ascending grid is found by bisection over the grid index; same answer as the paper's linear scan.
    if alpha.size == 0 or no_evidence(alpha, beta):
        return 0.0  # no point rejects ε = 0 (the curve β = 1 − α): no evidence, not the grid's first value
    if not consistent(len(grid) - 1):
        if valid:
            warnings.warn(
                f"the points reject every epsilon of the grid up to {grid[-1]:g}; the lower bound is reported there",
                stacklevel=2,
            )
            return float(grid[-1])
        return math.inf
    if consistent(0):
        # below the grid: the table's smallest ε is the lowest value that can be checked (0 if even it is consistent)
        lo_eps, hi_eps = 0.0, float(grid[0])
        floor = float(np.min(table.eps_at))
        if valid and floor < hi_eps and not consistent_at(floor):
            lo_eps = floor
        elif valid:
            return 0.0
    else:
        lo, hi = 0, len(grid) - 1  # invariant: grid[lo] inconsistent, grid[hi] consistent
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if consistent(mid):
                hi = mid
            else:
                lo = mid
        if not valid:
            return float(grid[hi])
        lo_eps, hi_eps = float(grid[lo]), float(grid[hi])
    if not valid:
        return float(grid[0])
    # A valid rule: the largest rejected ε, to 1e-4 (every value returned is rejected by the points).
    while hi_eps - lo_eps > 1e-4:
        mid_eps = 0.5 * (lo_eps + hi_eps)
        if not consistent_at(mid_eps):
            lo_eps = mid_eps
        else:
            hi_eps = mid_eps
    return lo_eps

