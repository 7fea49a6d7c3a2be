"""Threshold rules as values, each carrying its own estimator (docs/audit.md, "The estimators").

A rule says which error-rate evidence an audit may use and at what level; it is a frozen value built once, from the
config in a paper's plan or from the CLI's flags, and handed down to the estimators, which call it. Where it must cross
a process boundary (a Snakemake param) it travels as its canonical :attr:`ThresholdRule.spec` string, and
:func:`parse_rule` — the one reader of rule strings — turns the config's names and the specs back into rules:

- ``rule.gdp(x0, x1, delta=, confidence=)`` — the GDP audit of non-member scores ``x0`` and member scores ``x1``
  (**higher score ⇒ member**) under the rule: one :class:`~hsaudit.audit.gdp.AuditResult`;
- ``rule.points(x0, x1, confidence=)`` — the rule's known-family form: the Clopper–Pearson-bounded (FPR, FNR)
  points that the σ̂ and PLD-curve audits (:mod:`hsaudit.audit.pld`) compare with a family's curves; the rules
  without one (grid, crossing, rays) raise ``ValueError``.

=================  ==========================================================================  =====
rule               threshold selection                                                         valid
=================  ==========================================================================  =====
:class:`Paper`      best threshold on all scores (Cebere et al.; Nasr et al.)                   no
:class:`HeldOut`    best threshold on a stratified selection split, bounds on the rest           yes
:class:`Grid`       a few candidates from the selection split, Bonferroni over them              yes
:class:`Bonferroni` every threshold of all scores, each CP bound at 1 − (1 − c)/(2n)            yes
:class:`Crossing`   exact test where the empirical curve crosses FPR = FNR (no threshold)        yes
:class:`Rays`       Monte Carlo exact test on 9 rays around FPR = FNR (no threshold)            yes
=================  ==========================================================================  =====

Validity. The paper rule chooses τ on the same scores whose error rates it bounds; the maximum over thousands of
thresholds defeats the per-threshold confidence, so its ε̂ is *not* a valid lower bound (on exact Gaussian pairs
it exceeds the true ε in ~20–30 % of trials, docs/audit.md "Coverage study"). Held-out and grid bound the error
rates on scores independent of the choice (valid per rate at ``confidence``); bonferroni pays for every threshold
with a union bound (valid jointly); crossing and rays invert an exact test of μ-GDP calibrated on the
least-favourable Gaussian pair (valid jointly for any scores; :mod:`hsaudit.audit.crossing`).

:data:`DEFAULT_RULE` is :class:`Crossing`: the tightest valid rule on every score family of docs/audit.md's
coverage study (rays is tighter only on Gaussian-like curves, and much looser on heavy-tailed ones at small μ).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Union

import numpy as np
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.bounds import assumption_free_epsilon, bonferroni_confidence, clopper_pearson_upper
from hsaudit.audit.crossing import (
    CROSSING_RAYS,
    DEFAULT_CALIBRATION_DRAWS,
    DEFAULT_RAYS,
    RayCrossing,
    crossing_mu_lower,
    first_crossing,
    minimum_calibration_draws,
    ray_path,
    rays_mu_lower,
)
from hsaudit.audit.gdp import AuditResult, result_from_counts, result_from_mu
from hsaudit.audit.inputs import as_rng
from hsaudit.audit.threshold import best_threshold, grid_candidates, stratified_split
from hsaudit.audit.tradeoff import clopper_pearson_points, held_out_point, observed_rates

__all__ = [
    "AUDIT_MODES",
    "DEFAULT_GRID_SIZE",
    "DEFAULT_RULE",
    "DEFAULT_SELECTION_FRACTION",
    "Bonferroni",
    "Crossing",
    "Grid",
    "HeldOut",
    "Paper",
    "Rays",
    "Seed",
    "ThresholdRule",
    "VALID_MODES",
    "config_rules",
    "parse_rule",
    "rule_names",
]

#: Default number of candidate thresholds of the grid rule.
DEFAULT_GRID_SIZE = 4

#: Default share of each class that chooses the threshold under the held-out and grid rules (half).
DEFAULT_SELECTION_FRACTION = 0.5

# A split's seed: an integer, or a numpy Generator that the split draws from (a caller's own stream, e.g. the
# Section 6 worlds' SFC64 streams, or one stream over the rows of a step table; the rule then consumes it).
Seed = Union[int, np.random.Generator]

Points = tuple[np.ndarray, np.ndarray]


class ThresholdRule:
    """A threshold rule: a frozen dataclass subclass with the class attributes below, ``gdp`` and ``points``.
    Subclassing registers the rule (:data:`RULES`): its ``name`` is then a value of the config's ``audit.mode`` (and,
    when ``valid``, of ``audit.valid_mode`` and of the byo verdict's ``rule``), of ``hsaudit audit --mode`` and of the
    schemas' enums (tests/audit/test_rule_registry.py checks them), with nothing else to edit.

    Attributes:
        name: the rule's name, as the config and the CLI spell it (the result tables' ``rule`` column holds its
            :attr:`spec`).
        valid: whether its ε̂ is a valid lower bound.
        description: one line for the CLI and the docs.
        min_per_class: the fewest scores of each class the rule can audit.
        spec_field: the field that a spec's ``@VALUE`` sets (``fraction``, the selection share of the split
            rules), or None.
    """

    name: ClassVar[str]
    valid: ClassVar[bool]
    description: ClassVar[str]
    min_per_class: ClassVar[int]
    spec_field: ClassVar[str | None] = None
    registry: ClassVar[list[type[ThresholdRule]]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        ThresholdRule.registry.append(cls)

    @property
    def spec(self) -> str:
        """The rule as :func:`parse_rule` reads it back, without the seed (set by the job that audits: :meth:`seeded`),
        the grid size and the calibration draws (which the config does not set): ``NAME``, or ``NAME@VALUE`` when
        its :attr:`spec_field` is not the default (``held-out@0.1``)."""
        if self.spec_field is None:
            return self.name
        value = getattr(self, self.spec_field)
        default = next(f.default for f in dataclasses.fields(self) if f.name == self.spec_field)
        return self.name if value == default else f"{self.name}@{value:g}"

    def seeded(self, seed: Seed) -> ThresholdRule:
        """The rule with the seed of its split or calibration set to ``seed`` (itself when it draws nothing)."""
        if any(f.name == "seed" for f in dataclasses.fields(self)):
            return dataclasses.replace(self, seed=seed)
        return self

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """The GDP audit of non-member scores ``x0`` and member scores ``x1`` under the rule."""
        raise NotImplementedError

    def points(self, x0: np.ndarray, x1: np.ndarray, *, confidence: float) -> Points:
        """The rule's known-family form: CP-bounded (FPR, FNR) points (none by default: ``ValueError``)."""
        return _no_known_family_form(self)


def _check_fraction(fraction: float) -> float:
    f = float(fraction)
    if not 0.0 < f < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {fraction!r}")
    return f


def _no_known_family_form(rule) -> Points:
    raise ValueError(f"the known-family audits take the paper, held-out or bonferroni rule, not {rule.name}")


@dataclass(frozen=True)
class Paper(ThresholdRule):
    """The best threshold on all scores (Cebere et al.; Nasr et al. 2023). Not a valid confidence bound."""

    name: ClassVar[str] = "paper"
    valid: ClassVar[bool] = False
    description: ClassVar[str] = "threshold chosen on the same scores (Cebere et al.; not a valid confidence bound)"
    min_per_class: ClassVar[int] = 1

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """The threshold with the largest μ of its per-rate CP bounds at ``confidence``, on all scores."""
        best = best_threshold(x0, x1, confidence)
        return result_from_counts(fp=best.fp, fn=best.fn, n0=x0.size, n1=x1.size, threshold=best.threshold,
                                  delta=delta, confidence=confidence, threshold_rule=self.spec)  # fmt: skip

    def points(self, x0: np.ndarray, x1: np.ndarray, *, confidence: float) -> Points:
        """Every threshold's CP-bounded point (the papers' known-family audits; a max over thresholds)."""
        return clopper_pearson_points(x0, x1, confidence)


@dataclass(frozen=True)
class HeldOut(ThresholdRule):
    """The best threshold on a stratified selection split (``fraction`` of each class, drawn from ``seed``); the
    Clopper–Pearson bounds at that one threshold on the other scores. Valid: the evaluation scores are independent
    of the choice, so each bound holds at ``confidence`` (≥ 1 − 2(1 − c) jointly)."""

    fraction: float = DEFAULT_SELECTION_FRACTION
    seed: Seed = 0
    name: ClassVar[str] = "held-out"
    valid: ClassVar[bool] = True
    description: ClassVar[str] = "threshold chosen on a random selection set, bounds on the other scores (valid)"
    min_per_class: ClassVar[int] = 2
    spec_field: ClassVar[str | None] = "fraction"

    def __post_init__(self) -> None:
        _check_fraction(self.fraction)

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """The best threshold of the selection split, its CP bounds at ``confidence`` on the evaluation split."""
        sel0, sel1, ev0, ev1 = stratified_split(as_rng(self.seed), x0, x1, self.fraction)
        best = best_threshold(sel0, sel1, confidence)
        n0, n1 = ev0.size, ev1.size
        if math.isnan(best.threshold):
            fp, fn = n0, 0  # no separating threshold: everything predicted member, μ = −inf
        else:
            # Compare in float64: a float32 copy of the threshold could round onto a score.
            fp = int(np.count_nonzero(ev0.astype(np.float64) > best.threshold))
            fn = int(np.count_nonzero(ev1.astype(np.float64) <= best.threshold))
        return result_from_counts(fp=fp, fn=fn, n0=n0, n1=n1, threshold=best.threshold, delta=delta,
                                  confidence=confidence, threshold_rule=self.spec)  # fmt: skip

    def points(self, x0: np.ndarray, x1: np.ndarray, *, confidence: float) -> Points:
        """One CP-bounded point at a threshold chosen on the selection split
        (:func:`hsaudit.audit.tradeoff.held_out_point`)."""
        return held_out_point(x0, x1, confidence=confidence, selection_fraction=self.fraction, seed=self.seed)


@dataclass(frozen=True)
class Grid(ThresholdRule):
    """Up to ``size`` candidate thresholds from a selection split, all bounded on the other scores with a
    Bonferroni correction over the candidates. Valid."""

    size: int = DEFAULT_GRID_SIZE
    fraction: float = DEFAULT_SELECTION_FRACTION
    seed: Seed = 0
    name: ClassVar[str] = "grid"
    valid: ClassVar[bool] = True
    description: ClassVar[str] = (
        "candidate thresholds chosen on a random selection set, Bonferroni CP bounds on the others (valid)"
    )
    min_per_class: ClassVar[int] = 2
    spec_field: ClassVar[str | None] = "fraction"

    def __post_init__(self) -> None:
        _check_fraction(self.fraction)
        if int(self.size) != self.size or self.size < 1:
            raise ValueError(f"grid_size must be a positive integer, got {self.size!r}")

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """The selection split proposes the paper rule's best threshold and thresholds at FPR quantiles within a
        factor 4 of its FPR (:func:`hsaudit.audit.threshold.grid_candidates`); each is bounded on the evaluation
        split at 1 − (1 − c)/g for the g candidates, and the best μ is kept."""
        sel0, sel1, ev0, ev1 = stratified_split(as_rng(self.seed), x0, x1, self.fraction)
        cands = grid_candidates(sel0, sel1, int(self.size), confidence)
        n0, n1 = ev0.size, ev1.size
        if cands.size == 0:
            return result_from_counts(fp=n0, fn=0, n0=n0, n1=n1, threshold=math.nan, delta=delta,
                                      confidence=confidence, threshold_rule=self.spec)  # fmt: skip
        # Bonferroni: every one of the 2·g error-rate bounds holds simultaneously with probability ≥ 1 − 2g(1 − c)
        # ⇒ each holds at confidence c' = 1 − (1 − c)/g per rate keeps the per-rate guarantee of the paper
        # (each of FPR_ub, FNR_ub at level c) uniformly over the g candidates.
        g = cands.size
        c_each = 1.0 - (1.0 - confidence) / g
        e0 = np.sort(ev0.astype(np.float64))
        e1 = np.sort(ev1.astype(np.float64))
        fp = n0 - np.searchsorted(e0, cands, side="right")
        fn = np.searchsorted(e1, cands, side="right")
        fpr_ub = clopper_pearson_upper(fp, n0, confidence=c_each)
        fnr_ub = clopper_pearson_upper(fn, n1, confidence=c_each)
        with np.errstate(divide="ignore"):
            mus = -special.ndtri(fpr_ub) - special.ndtri(fnr_ub)
        mus = np.where(np.isnan(mus), -np.inf, mus)
        k = int(np.argmax(mus))
        return AuditResult(
            epsilon=gdp_epsilon(mu=float(mus[k]), delta=delta),
            mu=float(mus[k]),
            threshold=float(cands[k]),
            fpr_upper=float(fpr_ub[k]),
            fnr_upper=float(fnr_ub[k]),
            fpr=float(fp[k]) / n0,
            fnr=float(fn[k]) / n1,
            epsilon_assumption_free=float(assumption_free_epsilon(fpr_ub[k], fnr_ub[k], delta=delta)),
            n_members=int(n1),
            n_nonmembers=int(n0),
            confidence=float(confidence),
            delta=float(delta),
            threshold_rule=self.spec,
        )


@dataclass(frozen=True)
class Bonferroni(ThresholdRule):
    """Every threshold of all scores, each one-sided CP bound at 1 − (1 − c)/(2n) for n thresholds: valid jointly
    without a split, and loose."""

    name: ClassVar[str] = "bonferroni"
    valid: ClassVar[bool] = True
    description: ClassVar[str] = (
        "best threshold on all scores with every CP bound at 1 - (1 - c)/(2n), n candidate thresholds "
        "(valid jointly, no split; loose)"
    )
    min_per_class: ClassVar[int] = 1

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """The paper rule's search with each bound at :func:`hsaudit.audit.bounds.bonferroni_confidence`; the
        result states the joint ``confidence``."""
        each = bonferroni_confidence(x0, x1, confidence)
        best = best_threshold(x0, x1, each)
        res = result_from_counts(fp=best.fp, fn=best.fn, n0=x0.size, n1=x1.size, threshold=best.threshold,
                                 delta=delta, confidence=each, threshold_rule=self.spec)  # fmt: skip
        return dataclasses.replace(res, confidence=float(confidence))

    def points(self, x0: np.ndarray, x1: np.ndarray, *, confidence: float) -> Points:
        """Every threshold's point, each bound at 1 − (1 − c)/(2n) for the n thresholds of
        :func:`hsaudit.audit.tradeoff.observed_rates`."""
        n = observed_rates(x0, x1)[0].size
        return clopper_pearson_points(x0, x1, 1.0 - (1.0 - confidence) / (2 * n))


@dataclass(frozen=True)
class Crossing(ThresholdRule):
    """The exact test of μ-GDP where the empirical trade-off curve crosses FPR = FNR (no threshold chosen).
    Valid jointly for any scores; deterministic. The default rule (:data:`DEFAULT_RULE`)."""

    name: ClassVar[str] = "crossing"
    valid: ClassVar[bool] = True
    description: ClassVar[str] = (
        "exact test of mu-GDP where the empirical curve crosses FPR = FNR, all scores, no split (valid for "
        "any scores, joint confidence)"
    )
    min_per_class: ClassVar[int] = 1

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """μ̂ of the one-crossing test (:func:`hsaudit.audit.crossing.crossing_mu_lower`) at ``confidence``."""
        s0 = np.sort(x0.astype(np.float64))
        s1 = np.sort(x1.astype(np.float64))
        cross = _diagonal_crossing(s0, s1)
        mu = crossing_mu_lower(k0=cross.k0, k1=cross.k1, n0=s0.size, n1=s1.size, confidence=confidence)
        return _tested(mu, s0.size, s1.size, cross, delta=delta, confidence=confidence, threshold_rule=self.spec)


@dataclass(frozen=True)
class Rays(ThresholdRule):
    """The Monte Carlo exact test on the mean crossing of 9 rays around FPR = FNR, calibrated by ``draws``
    simulated Gaussian pairs from ``seed``. Valid jointly for any scores; the tightest on Gaussian-like scores."""

    draws: int = DEFAULT_CALIBRATION_DRAWS
    seed: Seed = 0
    name: ClassVar[str] = "rays"
    valid: ClassVar[bool] = True
    description: ClassVar[str] = (
        "Monte Carlo exact test of mu-GDP on the mean crossing of 9 rays around FPR = FNR, all scores (valid "
        "for any scores, joint confidence; seeded)"
    )
    min_per_class: ClassVar[int] = 1

    def gdp(self, x0: np.ndarray, x1: np.ndarray, *, delta: float, confidence: float) -> AuditResult:
        """μ̂ of the rays test (:func:`hsaudit.audit.crossing.rays_mu_lower`) at ``confidence``.

        Raises:
            ValueError: fewer ``draws`` than :func:`hsaudit.audit.crossing.minimum_calibration_draws`.
        """
        draws = _check_draws(self.draws, confidence)
        s0 = np.sort(x0.astype(np.float64))
        s1 = np.sort(x1.astype(np.float64))
        mu, _ = rays_mu_lower(s0, s1, confidence=confidence, rng=as_rng(self.seed), draws=draws, rays=DEFAULT_RAYS)
        cross = _diagonal_crossing(s0, s1)
        return _tested(mu, s0.size, s1.size, cross, delta=delta, confidence=confidence, threshold_rule=self.spec)


#: The rule a user gets without choosing one: valid, and the tightest on every score family measured
#: (docs/audit.md, "Coverage study").
DEFAULT_RULE: ThresholdRule = Crossing()


def parse_rule(
    spec: str,
    *,
    selection_fraction: float = DEFAULT_SELECTION_FRACTION,
    grid_size: int = DEFAULT_GRID_SIZE,
    seed: Seed = 0,
    calibration_draws: int = DEFAULT_CALIBRATION_DRAWS,
) -> ThresholdRule:
    """The rule of a name (:data:`AUDIT_MODES`: the config's ``audit.mode``, ``--mode`` of ``hsaudit audit``) or of a
    spec ``NAME@VALUE`` (a rule's :attr:`~ThresholdRule.spec`, e.g. ``held-out@0.1``; ``hsaudit validate-audit
    --modes``), with the options the rule takes (the others are ignored; a spec's value wins over
    ``selection_fraction``). The one reader of rule strings: the inverse of ``spec``.

    Raises:
        ValueError: an unknown name, a spec value that is not a number or out of range, a value for a rule without
            a :attr:`~ThresholdRule.spec_field`, or an option out of range.
    """
    name, at, value = str(spec).partition("@")
    by_name = {cls.name: cls for cls in ThresholdRule.registry}
    if name not in by_name:
        raise ValueError(f"unknown audit mode {name!r} in {spec!r}; choose from {', '.join(by_name)}")
    cls = by_name[name]
    options = {"fraction": selection_fraction, "size": grid_size, "seed": seed, "draws": calibration_draws}
    if at:
        if cls.spec_field is None:
            raise ValueError(f"{name} mode has no selection fraction: {spec!r}")
        try:
            f = float(value)
        except ValueError:
            raise ValueError(f"selection fraction must be a number, got {value!r} in {spec!r}") from None
        if not 0.0 < f < 1.0:
            raise ValueError(f"selection fraction must be in (0, 1), got {f} in {spec!r}")
        options[cls.spec_field] = f
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in options.items() if k in fields})


def config_rules(audit: Mapping[str, Any]) -> tuple[ThresholdRule, ThresholdRule]:
    """The rules of the config's ``audit`` section, built once by each paper's plan: ``mode``'s (with
    ``selection_fraction``) and the valid rule a table carries beside it, ``valid_mode``'s.

    Raises:
        ValueError: an unknown name, or a ``valid_mode`` whose rule is not valid.
    """
    fraction = float(audit.get("selection_fraction", DEFAULT_SELECTION_FRACTION))
    rule = parse_rule(str(audit["mode"]), selection_fraction=fraction)
    valid = parse_rule(str(audit.get("valid_mode", DEFAULT_RULE.name)), selection_fraction=fraction)
    if not valid.valid:
        raise ValueError(f"audit.valid_mode {valid.spec!r} is not a valid rule")
    return rule, valid


# --------------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------------
def _check_draws(draws: int, confidence: float) -> int:
    need = minimum_calibration_draws(confidence)
    try:
        k = int(draws)
    except (TypeError, ValueError):
        k = None
    if k is None or k != draws or k < need:
        raise ValueError(
            f"calibration_draws must be an integer >= {need} at confidence {confidence:g} "
            f"(fewer cannot reject at that level), got {draws!r}"
        )
    return k


def _diagonal_crossing(s0: np.ndarray, s1: np.ndarray) -> RayCrossing:
    """Where the empirical curve of sorted scores crosses FPR = FNR (the crossing rule's statistic; the threshold
    every test-based result reports for orientation)."""
    return first_crossing(s0, s1, ray_path(s0.size, s1.size, CROSSING_RAYS))[0]


def _tested(mu: float, n0: int, n1: int, cross: RayCrossing, **kw) -> AuditResult:
    return result_from_mu(mu=mu, n0=n0, n1=n1, threshold=cross.threshold, fp=cross.fp, fn=cross.fn, **kw)


# --------------------------------------------------------------------------------------------------------------
# the registry (last, so that every rule class of this module is in it)
# --------------------------------------------------------------------------------------------------------------
#: The rule classes, in the order the CLI and the config list their names.
RULES: tuple[type[ThresholdRule], ...] = tuple(ThresholdRule.registry)


def rule_names(*, valid: bool = False) -> tuple[str, ...]:
    """The names of the registered rules (of the valid ones with ``valid``), in the order they were defined."""
    return tuple(cls.name for cls in ThresholdRule.registry if cls.valid or not valid)


#: The names of the rules (``audit.mode`` in the config, ``--mode`` of ``hsaudit audit``).
AUDIT_MODES: tuple[str, ...] = rule_names()

#: The names of the valid rules (``audit.valid_mode``; the byo verdict's rule).
VALID_MODES: tuple[str, ...] = rule_names(valid=True)
