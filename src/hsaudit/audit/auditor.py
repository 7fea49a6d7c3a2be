"""One auditor for every estimate: threshold rules as values, one report per audit (docs/audit.md "The auditor").

Every paper module, workflow script and the CLI audit scores through :class:`Auditor`. It takes the scores of the
runs without the canary (``scores_out``, b = 0) and with it (``scores_in``, b = 1), **higher score ⇒ member**
(``directions="both"`` also tries the other orientation and pays for it), and a threshold rule — a frozen value,
not a mode string plus loose keywords:

================  =========================================================================  =====
rule              threshold selection                                                        valid
================  =========================================================================  =====
:class:`Paper`     best threshold on all scores (Cebere et al.; Nasr et al.)                  no
:class:`HeldOut`   best threshold on a stratified selection split, bounds on the rest          yes
:class:`Grid`      a few candidates from the selection split, Bonferroni over them             yes
:class:`Bonferroni` every threshold of all scores, each CP bound at 1 − (1 − c)/(2n)           yes
:class:`Crossing`  exact test where the empirical curve crosses FPR = FNR (no threshold)       yes
:class:`Rays`      Monte Carlo exact test on 9 rays around FPR = FNR (no threshold)           yes
================  =========================================================================  =====

The estimates (:meth:`Auditor.report` returns them all in one :class:`AuditReport`):

- the GDP audit (μ̂, ε̂ at δ; :func:`hsaudit.audit.gdp.audit_scores`) and, from the same Clopper–Pearson bounds,
  the assumption-free (ε, δ) bound;
- the σ̂ audit against a known mechanism family (:class:`KnownFamily`: q, T, last-iterate or all-iterates;
  :func:`hsaudit.audit.pld.pld_sigma_audit`) under the same rule, where the rule has a known-family form
  (paper, held-out, bonferroni);
- point estimates, not bounds: the AUROC, its Gaussian reading μ_AUC = √2 Φ⁻¹(AUROC) (the AUROC of N(0, 1) vs
  N(μ, 1) is Φ(μ/√2)), and the TPR at fixed FPRs (0.1 %, 1 % by default), each with a stratified bootstrap
  percentile interval when ``bootstrap > 0``.

``directions="both"`` audits score and −score, each at confidence 1 − (1 − c)/2, and keeps the larger ε̂: the
two-sided search pays for both directions (an ``abs(μ)`` shortcut would report ε̂ > 0 on null scores far more
often than 1 − c; tests/audit/test_auditor.py has the null test).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Union

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.audit.crossing import DEFAULT_CALIBRATION_DRAWS
from hsaudit.audit.gdp import (
    AUDIT_MODES,
    DEFAULT_GRID_SIZE,
    DEFAULT_SELECTION_FRACTION,
    MODE_DESCRIPTIONS,
    AuditResult,
    audit_scores,
    audit_steps,
)
from hsaudit.audit.two_sample import GdpTables, StepAudit, gdp_audit_two_sample

if TYPE_CHECKING:
    from hsaudit.accounting.gaussian import PldTable

__all__ = [
    "DEFAULT_FPR_LEVELS",
    "DIRECTIONS",
    "AuditReport",
    "Auditor",
    "Bonferroni",
    "Crossing",
    "Grid",
    "HeldOut",
    "KnownFamily",
    "Paper",
    "Rays",
    "ThresholdRule",
    "auroc",
    "mu_from_auroc",
    "parse_rule",
    "rule_from_mode",
    "tpr_at_fpr",
]

#: ``"one"``: higher score ⇒ member; ``"both"``: either orientation, each at confidence 1 − (1 − c)/2.
DIRECTIONS = ("one", "both")

#: FPR levels of the TPR-at-FPR estimates by default.
DEFAULT_FPR_LEVELS = (0.001, 0.01)


def _check_fraction(fraction: float) -> float:
    f = float(fraction)
    if not 0.0 < f < 1.0:
        raise ValueError(f"selection_fraction must be in (0, 1), got {fraction!r}")
    return f


@dataclass(frozen=True)
class Paper:
    """The best threshold on all scores (Cebere et al.; Nasr et al. 2023). Not a valid confidence bound."""

    name: ClassVar[str] = "paper"
    valid: ClassVar[bool] = False

    def audit_kwargs(self) -> dict:
        return {"mode": "paper"}

    def select(self) -> dict:
        """The known-family form (:func:`hsaudit.audit.pld.pld_sigma_audit`'s ``select``)."""
        return {"select": "all"}


# A split's seed: an integer, or a numpy Generator that the split draws from (a caller's own stream, e.g. the
# Section 6 worlds' SFC64 streams; the rule then consumes it).
Seed = Union[int, np.random.Generator]


@dataclass(frozen=True)
class HeldOut:
    """The best threshold on a stratified selection split (``fraction`` of each class, drawn from ``seed``); the
    Clopper–Pearson bounds at that one threshold on the other scores. Valid."""

    fraction: float = DEFAULT_SELECTION_FRACTION
    seed: Seed = 0
    name: ClassVar[str] = "held-out"
    valid: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_fraction(self.fraction)

    def audit_kwargs(self) -> dict:
        return {"mode": "held-out", "selection_fraction": self.fraction, "rng": self.seed}

    def select(self) -> dict:
        return {"select": "held_out", "selection_fraction": self.fraction, "seed": self.seed}


@dataclass(frozen=True)
class Grid:
    """Up to ``size`` candidate thresholds from a selection split, all bounded on the other scores with a
    Bonferroni correction over the candidates. Valid."""

    size: int = DEFAULT_GRID_SIZE
    fraction: float = DEFAULT_SELECTION_FRACTION
    seed: Seed = 0
    name: ClassVar[str] = "grid"
    valid: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _check_fraction(self.fraction)
        if int(self.size) != self.size or self.size < 1:
            raise ValueError(f"grid size must be a positive integer, got {self.size!r}")

    def audit_kwargs(self) -> dict:
        return {"mode": "grid", "grid_size": self.size, "selection_fraction": self.fraction, "rng": self.seed}

    def select(self) -> dict:
        raise ValueError("the known-family audits take the paper, held-out or bonferroni rule, not grid")


@dataclass(frozen=True)
class Bonferroni:
    """Every threshold of all scores, each one-sided CP bound at 1 − (1 − c)/(2n) for n thresholds: valid jointly
    without a split, and loose."""

    name: ClassVar[str] = "bonferroni"
    valid: ClassVar[bool] = True

    def audit_kwargs(self) -> dict:
        return {"mode": "bonferroni"}

    def select(self) -> dict:
        return {"select": "bonferroni"}


@dataclass(frozen=True)
class Crossing:
    """The exact test of μ-GDP where the empirical trade-off curve crosses FPR = FNR (no threshold chosen).
    Valid jointly for any scores."""

    name: ClassVar[str] = "crossing"
    valid: ClassVar[bool] = True

    def audit_kwargs(self) -> dict:
        return {"mode": "crossing"}

    def select(self) -> dict:
        raise ValueError("the known-family audits take the paper, held-out or bonferroni rule, not crossing")


@dataclass(frozen=True)
class Rays:
    """The Monte Carlo exact test on the mean crossing of 9 rays around FPR = FNR, calibrated by ``draws``
    simulated Gaussian pairs from ``seed``. Valid jointly for any scores; the tightest on Gaussian-like scores."""

    draws: int = DEFAULT_CALIBRATION_DRAWS
    seed: Seed = 0
    name: ClassVar[str] = "rays"
    valid: ClassVar[bool] = True

    def audit_kwargs(self) -> dict:
        return {"mode": "rays", "calibration_draws": self.draws, "rng": self.seed}

    def select(self) -> dict:
        raise ValueError("the known-family audits take the paper, held-out or bonferroni rule, not rays")


ThresholdRule = Union[Paper, HeldOut, Grid, Bonferroni, Crossing, Rays]
# One rule per mode of the GDP audit, in its order (tests/audit/test_auditor.py checks the two lists agree).
_RULES = {cls.name: cls for cls in (Paper, HeldOut, Grid, Bonferroni, Crossing, Rays)}


def rule_from_mode(
    mode: str,
    *,
    selection_fraction: float = DEFAULT_SELECTION_FRACTION,
    grid_size: int = DEFAULT_GRID_SIZE,
    seed: Seed = 0,
    calibration_draws: int = DEFAULT_CALIBRATION_DRAWS,
) -> ThresholdRule:
    """The rule of a mode name (:data:`hsaudit.audit.gdp.AUDIT_MODES`, as the config and the CLI spell it) with
    the options that mode takes; the others are ignored."""
    if mode not in _RULES:
        raise ValueError(f"unknown audit mode {mode!r}; choose from {', '.join(AUDIT_MODES)}")
    if mode == "held-out":
        return HeldOut(fraction=selection_fraction, seed=seed)
    if mode == "grid":
        return Grid(size=grid_size, fraction=selection_fraction, seed=seed)
    if mode == "rays":
        return Rays(draws=calibration_draws, seed=seed)
    return _RULES[mode]()


def parse_rule(spec: str, *, seed: int = 0) -> ThresholdRule:
    """A rule from a spec ``MODE`` or ``MODE@FRACTION`` (the selection share of held-out/grid, e.g.
    ``held-out@0.1``), as ``hsaudit validate-audit --modes`` takes them.

    Raises:
        ValueError: unknown mode, a fraction outside (0, 1) or not a number, or a fraction for a mode without a
            split.
    """
    name, _, frac = str(spec).partition("@")
    if name not in _RULES:
        raise ValueError(f"unknown audit mode {name!r} in {spec!r}; choose from {', '.join(AUDIT_MODES)}")
    if not frac:
        return rule_from_mode(name, seed=seed)
    if name not in ("held-out", "grid"):
        raise ValueError(f"{name} mode has no selection fraction: {spec!r}")
    try:
        f = float(frac)
    except ValueError:
        raise ValueError(f"selection fraction must be a number, got {frac!r} in {spec!r}") from None
    if not 0.0 < f < 1.0:
        raise ValueError(f"selection fraction must be in (0, 1), got {f} in {spec!r}")
    return rule_from_mode(name, selection_fraction=f, seed=seed)


@dataclass(frozen=True)
class KnownFamily:
    """A mechanism family whose sampling rate and steps the auditor knows (the σ̂ audit estimates σ).

    Attributes:
        steps: T.
        sampling_rate: q.
        noise_multiplier: the nominal σ (a starting bracket of the σ̂ search).
        family: ``"last_iterate"`` (only the final model is released) or ``"all_iterates"``.
        iterations: bisection steps of the σ̂ search.
    """

    steps: int
    sampling_rate: float
    noise_multiplier: float
    family: str = "last_iterate"
    iterations: int = 14


# --------------------------------------------------------------------------------------------------------------
# point estimates
# --------------------------------------------------------------------------------------------------------------
def auroc(scores_out: npt.ArrayLike, scores_in: npt.ArrayLike) -> float:
    """The area under the ROC curve, P(in > out) + ½ P(in = out) (the Mann–Whitney statistic over n₀n₁)."""
    s0 = np.sort(np.asarray(scores_out, dtype=np.float64))
    s1 = np.asarray(scores_in, dtype=np.float64)
    below = np.searchsorted(s0, s1, side="left")
    ties = np.searchsorted(s0, s1, side="right") - below
    return float((below.sum() + 0.5 * ties.sum()) / (s0.size * s1.size))


def tpr_at_fpr(scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, levels: Sequence[float]) -> np.ndarray:
    """The largest empirical TPR of a threshold rule "member iff score > τ" whose empirical FPR is ≤ each level.

    τ is the (k+1)-th largest out-score with k = ⌊level · n₀⌋ (at most k out-scores lie above it; −∞ when
    k ≥ n₀), so ties are never split.
    """
    s0 = np.sort(np.asarray(scores_out, dtype=np.float64))
    s1 = np.asarray(scores_in, dtype=np.float64)
    out = np.empty(len(levels))
    for i, level in enumerate(levels):
        k = math.floor(float(level) * s0.size + 1e-12)
        tau = -math.inf if k >= s0.size else s0[s0.size - 1 - k]
        out[i] = np.count_nonzero(s1 > tau) / s1.size
    return out


def mu_from_auroc(a: float) -> float:
    """The μ of the Gaussian pair N(0, 1) vs N(μ, 1) whose AUROC is ``a``: √2 Φ⁻¹(a) (±inf at 0 and 1)."""
    return math.sqrt(2.0) * float(special.ndtri(a))


def _point_estimates(s0: np.ndarray, s1: np.ndarray, levels: Sequence[float]) -> dict[str, float]:
    a = auroc(s0, s1)
    est = {"auroc": a, "mu_auroc": mu_from_auroc(a)}
    for level, tpr in zip(levels, tpr_at_fpr(s0, s1, levels)):
        est[f"tpr_at_fpr_{level:g}"] = float(tpr)
    return est


# --------------------------------------------------------------------------------------------------------------
# the auditor
# --------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditReport:
    """Every estimate of one audit, with its method, confidence and threshold rule named.

    Attributes:
        rule: the threshold rule (a value; ``rule.name``, ``rule.valid``).
        direction: ``"higher"`` (higher score ⇒ member) or ``"lower"``, the orientation the estimates use.
        directions: the auditor's ``directions`` (``"both"``: the GDP audit paid for trying both).
        confidence: the confidence the bounds were asked at (each direction got 1 − (1 − c)/2 under "both").
        delta: δ.
        gdp: the GDP audit (μ̂, ε̂, τ, CP bounds, and the assumption-free ε in ``epsilon_assumption_free``).
        known: ``{"sigma_hat", "epsilon"}`` of the σ̂ audit when a :class:`KnownFamily` was given, else None.
        estimates: point estimates (auroc, mu_auroc, tpr_at_fpr_<level>); not bounds.
        intervals: ``{name: (lo, hi)}``, bootstrap percentile intervals at ``confidence`` of the point estimates
            (empty without a bootstrap).
        bootstrap: resamples behind ``intervals`` (0: none).
    """

    rule: ThresholdRule
    direction: str
    directions: str
    confidence: float
    delta: float
    gdp: AuditResult
    known: dict | None
    estimates: dict[str, float]
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    bootstrap: int = 0

    @property
    def valid(self) -> bool:
        """Whether the bounds (GDP, assumption-free, σ̂) are valid confidence bounds under the rule."""
        return self.rule.valid

    def to_dict(self) -> dict:
        """One flat row of plain scalars: the GDP audit's fields, the rule and its options, the known-family
        audit (``sigma_hat``, ``epsilon_known``), the point estimates and their intervals (``<name>_lo/_hi``)."""
        row = self.gdp.to_dict()
        row.update(
            rule=self.rule.name,
            rule_valid=self.rule.valid,
            rule_description=MODE_DESCRIPTIONS[self.rule.name],
            **{f"rule_{k}": v for k, v in dataclasses.asdict(self.rule).items()},
            direction=self.direction,
            directions=self.directions,
            confidence=self.confidence,
        )
        if self.known is not None:
            row.update(sigma_hat=self.known["sigma_hat"], epsilon_known=self.known["epsilon"])
        row.update(self.estimates)
        for name, (lo, hi) in self.intervals.items():
            row[f"{name}_lo"], row[f"{name}_hi"] = lo, hi
        row["bootstrap"] = self.bootstrap
        return row


def _scores(name: str, x: npt.ArrayLike) -> np.ndarray:
    """Scores as a 1-D float array; float32 is kept, as :func:`hsaudit.audit.gdp.audit_scores` keeps it (the
    threshold is computed in the scores' own precision)."""
    a = np.asarray(x)
    if a.dtype not in (np.float32, np.float64):
        a = a.astype(np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {a.shape}")
    return a


@dataclass(frozen=True)
class Auditor:
    """The audit of scores under one threshold rule (see the module docstring).

    Attributes:
        delta: δ at which ε is reported, in (0, 1).
        confidence: confidence of the bounds, in (0, 1) (per one-sided CP bound under paper/held-out/grid, as
            the papers state it; jointly under bonferroni/crossing/rays).
        rule: a threshold rule value (default :class:`Paper`, the papers' method).
        directions: :data:`DIRECTIONS`.
        fpr_levels: FPRs of the TPR-at-FPR estimates.
        bootstrap: stratified bootstrap resamples for the point estimates' intervals (0: none).
        bootstrap_seed: seed of the resamples.
    """

    delta: float = 1e-5
    confidence: float = 0.95
    rule: ThresholdRule = Paper()
    directions: str = "one"
    fpr_levels: tuple[float, ...] = DEFAULT_FPR_LEVELS
    bootstrap: int = 0
    bootstrap_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("delta", "confidence"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 < float(v) < 1.0):
                raise ValueError(f"{name} must be in (0, 1), got {v!r}")
        if not isinstance(self.rule, tuple(_RULES.values())):
            raise ValueError(f"rule must be one of {', '.join(c.__name__ for c in _RULES.values())}, got {self.rule!r}")
        if self.directions not in DIRECTIONS:
            raise ValueError(f"directions must be one of {DIRECTIONS}, got {self.directions!r}")
        if any(not 0.0 < float(f) < 1.0 for f in self.fpr_levels):
            raise ValueError(f"fpr_levels must lie in (0, 1), got {self.fpr_levels}")
        if int(self.bootstrap) != self.bootstrap or self.bootstrap < 0:
            raise ValueError(f"bootstrap must be a whole number >= 0, got {self.bootstrap!r}")
        object.__setattr__(self, "fpr_levels", tuple(float(f) for f in self.fpr_levels))

    @property
    def per_direction_confidence(self) -> float:
        """The confidence each orientation is audited at: c, or 1 − (1 − c)/2 when both are tried."""
        return self.confidence if self.directions == "one" else 1.0 - (1.0 - self.confidence) / 2.0

    # ---- the GDP audit ----------------------------------------------------------------------------------------
    def _gdp_one(self, s0: np.ndarray, s1: np.ndarray, confidence: float) -> AuditResult:
        scores = np.concatenate([s0, s1])
        members = np.concatenate([np.zeros(s0.size, bool), np.ones(s1.size, bool)])
        return audit_scores(scores, members, delta=self.delta, confidence=confidence, **self.rule.audit_kwargs())

    def _gdp(self, s0: np.ndarray, s1: np.ndarray) -> tuple[AuditResult, str]:
        c = self.per_direction_confidence
        higher = self._gdp_one(s0, s1, c)
        if self.directions == "one":
            return higher, "higher"
        lower = self._gdp_one(-s0, -s1, c)
        # ε̂ first, μ̂ to break ties (both 0 when neither direction separates)
        if (lower.epsilon, lower.mu) > (higher.epsilon, higher.mu):
            return dataclasses.replace(lower, threshold=-lower.threshold), "lower"
        return higher, "higher"

    def gdp(self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike) -> AuditResult:
        """The GDP audit (μ̂, ε̂, and the assumption-free ε from the same CP bounds) under the rule.

        Under ``directions="both"`` the better orientation's result (its threshold in score units, "member iff
        score < τ" for the lower one; :meth:`report` names the orientation)."""
        return self._gdp(_scores("scores_out", scores_out), _scores("scores_in", scores_in))[0]

    def gdp_steps(self, scores: npt.ArrayLike, members: npt.ArrayLike, *, threads: int = 1) -> list[AuditResult]:
        """The GDP audit of every row of a ``[steps, runs]`` score table (membership ``[runs]`` or
        ``[steps, runs]``): one result per step (:func:`hsaudit.audit.gdp.audit_steps`; higher ⇒ member)."""
        if self.directions != "one":
            raise ValueError("gdp_steps audits one orientation (higher score => member); use directions='one'")
        return audit_steps(
            scores, members, delta=self.delta, confidence=self.confidence, threads=threads, **self.rule.audit_kwargs()
        )

    def gdp_two_sample(self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, tables: GdpTables) -> StepAudit:
        """The paper rule's GDP audit of two samples of fixed sizes with precomputed tables
        (:func:`hsaudit.audit.two_sample.gdp_tables`; the Section 6 process audits thousands of steps of one size):
        the same maximum as :meth:`gdp`, plus the assumption-free bound maximised over thresholds."""
        if not isinstance(self.rule, Paper) or self.directions != "one":
            raise ValueError("the precomputed-table audit is the paper rule's, one direction; use gdp() otherwise")
        if (tables.confidence, tables.delta) != (self.confidence, self.delta):
            raise ValueError(
                f"tables were built for confidence {tables.confidence}, delta {tables.delta}; the auditor has "
                f"{self.confidence}, {self.delta}"
            )
        return gdp_audit_two_sample(scores_out, scores_in, tables)

    # ---- known-family audits ----------------------------------------------------------------------------------
    def known_family(self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, family: KnownFamily) -> dict:
        """The σ̂ audit (largest σ consistent with the rule's CP-bounded points; ε_lb = ε_σ̂(δ)) for a
        :class:`KnownFamily`: ``{"sigma_hat", "epsilon"}``. Rules: paper (every point: not valid), held-out,
        bonferroni (valid)."""
        from hsaudit.audit.pld import pld_sigma_audit  # the PLD machinery loads only when a family is audited

        return pld_sigma_audit(
            scores_out,
            scores_in,
            steps=family.steps,
            sampling_rate=family.sampling_rate,
            noise_multiplier=family.noise_multiplier,
            delta=self.delta,
            confidence=self.confidence,
            family=family.family,
            iterations=family.iterations,
            **self.rule.select(),
        )

    def pld_curve(
        self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, table: PldTable, *, bounded: bool = True,
        tail_floor: float = 0.0, grid: npt.ArrayLike | None = None,
    ) -> float:
        """Annamalai's (2024) Algorithm 2: the first ε̂ of a grid whose PLD trade-off curve lies below the rule's
        points. ``bounded=False`` is the paper's audit on raw rates (no confidence; ``tail_floor`` drops the
        points with a rate ≤ floor), which no rule can make valid."""
        from hsaudit.audit.pld import audit_pld

        if not bounded:
            return audit_pld(scores_out, scores_in, table, tail_floor=tail_floor, grid=grid)
        return audit_pld(scores_out, scores_in, table, confidence=self.confidence, grid=grid, **self.rule.select())

    # ---- everything at once -----------------------------------------------------------------------------------
    def _intervals(self, s0: np.ndarray, s1: np.ndarray) -> dict[str, tuple[float, float]]:
        rng = np.random.default_rng(self.bootstrap_seed)
        draws: dict[str, list[float]] = {}
        for _ in range(int(self.bootstrap)):
            b0 = s0[rng.integers(0, s0.size, s0.size)]
            b1 = s1[rng.integers(0, s1.size, s1.size)]
            for name, value in _point_estimates(b0, b1, self.fpr_levels).items():
                draws.setdefault(name, []).append(value)
        tail = 50.0 * (1.0 - self.confidence)
        return {
            name: (float(np.percentile(v, tail)), float(np.percentile(v, 100.0 - tail))) for name, v in draws.items()
        }

    def report(
        self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, family: KnownFamily | None = None
    ) -> AuditReport:
        """Every estimate of the scores: the GDP audit (with the assumption-free bound), the σ̂ audit when a
        ``family`` is given, and the point estimates with their bootstrap intervals."""
        s0, s1 = _scores("scores_out", scores_out), _scores("scores_in", scores_in)
        gdp, direction = self._gdp(s0, s1)
        if direction == "lower":
            s0, s1 = -s0, -s1
        known = None
        if family is not None:
            known = dataclasses.replace(self, confidence=self.per_direction_confidence).known_family(s0, s1, family)
        return AuditReport(
            rule=self.rule,
            direction=direction,
            directions=self.directions,
            confidence=float(self.confidence),
            delta=float(self.delta),
            gdp=gdp,
            known=known,
            estimates=_point_estimates(s0, s1, self.fpr_levels),
            intervals=self._intervals(s0, s1) if self.bootstrap else {},
            bootstrap=int(self.bootstrap),
        )
