"""One auditor for every estimate: threshold rules as values, one report per audit (docs/audit.md "The auditor").

Every experiment module, workflow script and the CLI audits scores through :class:`Auditor`. It takes the scores
of the runs without the canary (``scores_out``, b = 0) and with it (``scores_in``, b = 1), **higher score ⇒
member** (``directions="both"`` also tries the other orientation and pays for it), and a threshold rule — a frozen
value that carries its own estimator (:mod:`hsaudit.audit.rules`: :class:`Paper`, :class:`HeldOut`, :class:`Grid`,
:class:`Bonferroni`, :class:`Crossing`, :class:`Rays`), not a mode string plus loose keywords. Without one it uses
:data:`hsaudit.audit.rules.DEFAULT_RULE`, the crossing rule (valid for any scores). The rules and their one reader
of strings (:func:`parse_rule`) are re-exported here: they are the auditor's
vocabulary.

The estimates (:meth:`Auditor.report` returns them all in one :class:`AuditReport`):

- the GDP audit (μ̂, ε̂ at δ; ``rule.gdp``) and, from the same Clopper–Pearson bounds, the assumption-free (ε, δ)
  bound;
- the σ̂ audit against a known mechanism family (:class:`KnownFamily`: q, T, last-iterate or all-iterates;
  :func:`hsaudit.audit.pld.pld_sigma_audit`) under the same rule, where the rule has a known-family form
  (paper, held-out, bonferroni);
- point estimates, not bounds: the AUROC, its Gaussian reading μ_AUC = √2 Φ⁻¹(AUROC) (the AUROC of N(0, 1) vs
  N(μ, 1) is Φ(μ/√2)), and the TPR at fixed FPRs (0.1 %, 1 % by default), each with a stratified bootstrap
  percentile interval when ``bootstrap > 0``.

:func:`audit_scores` and :func:`audit_steps` are the same GDP audit on a score array with membership labels (one
population, or one row per training step of a step table).

``directions="both"`` audits score and −score, each at confidence 1 − (1 − c)/2, and keeps the larger ε̂: the
two-sided search pays for both directions (an ``abs(μ)`` shortcut would report ε̂ > 0 on null scores far more
often than 1 − c; tests/audit/test_auditor.py has the null test).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.audit.gdp import AuditResult
from hsaudit.audit.inputs import as_members, as_rng, as_scores, check_classes, check_unit
from hsaudit.audit.rules import (
    DEFAULT_RULE,
    RULES,
    Bonferroni,
    Crossing,
    Grid,
    HeldOut,
    Paper,
    Rays,
    ThresholdRule,
    parse_rule,
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
    "audit_scores",
    "audit_steps",
    "auroc",
    "mu_from_auroc",
    "parse_rule",
    "tpr_at_fpr",
]

#: ``"one"``: higher score ⇒ member; ``"both"``: either orientation, each at confidence 1 − (1 − c)/2.
DIRECTIONS = ("one", "both")

#: FPR levels of the TPR-at-FPR estimates by default.
DEFAULT_FPR_LEVELS = (0.001, 0.01)


def _check_rule(rule: object) -> ThresholdRule:
    if not isinstance(rule, ThresholdRule):
        raise ValueError(f"rule must be one of {', '.join(c.__name__ for c in RULES)}, got {rule!r}")
    return rule


# --------------------------------------------------------------------------------------------------------------
# the GDP audit of labelled score arrays
# --------------------------------------------------------------------------------------------------------------
def audit_scores(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    rule: ThresholdRule = DEFAULT_RULE,
    delta: float = 1e-5,
    confidence: float = 0.95,
) -> AuditResult:
    """GDP audit of one population of scores under a threshold rule (Nasr et al. 2023; Cebere et al. Algorithm 4,
    Appendix A; the rules and their validity: :mod:`hsaudit.audit.rules`).

    Convention: **higher score ⇒ member** (b = 1, canary inserted); a threshold τ predicts "member" iff
    score > τ; thresholds lie between consecutive distinct scores (ties are never split).

    Args:
        scores: R finite scores.
        members: R membership labels, 0/1 or bool (1 = member).
        rule: the threshold rule (default :data:`hsaudit.audit.rules.DEFAULT_RULE`, crossing: valid for any
            scores); :class:`Paper` reproduces the papers' numbers and is not a valid bound.
        delta: δ in (0, 1) at which ε is reported.
        confidence: confidence of each one-sided CP bound, in (0, 1); under crossing/rays the confidence of the
            bound on μ, under bonferroni the joint confidence.

    Returns:
        An :class:`~hsaudit.audit.gdp.AuditResult` (its ``threshold_rule`` is the rule's spec; under held-out/grid
        its counts and rates refer to the evaluation scores).

    Raises:
        ValueError: NaN/infinite scores, labels other than 0/1, an empty class (fewer than 2 per class under
            held-out/grid), δ or confidence outside (0, 1), not a rule, too few calibration draws (rays).
    """
    d = check_unit("delta", delta)
    c = check_unit("confidence", confidence)
    rule = _check_rule(rule)
    s = as_scores(scores)
    m = as_members(members, s.size)
    n1 = int(np.count_nonzero(m))
    check_classes(s.size - n1, n1, minimum=rule.min_per_class)
    return rule.gdp(s[~m], s[m], delta=d, confidence=c)


def audit_steps(
    scores: npt.ArrayLike,
    members: npt.ArrayLike,
    *,
    rule: ThresholdRule = DEFAULT_RULE,
    delta: float = 1e-5,
    confidence: float = 0.95,
    threads: int = 1,
) -> list[AuditResult]:
    """One audit per row of a [n_steps, n_runs] score matrix (e.g. one row per training step).

    The membership labels are shared by all rows (shape [n_runs]) or given per row ([n_steps, n_runs]). With
    shared labels the classes are split once; the Clopper–Pearson tables are shared by all rows. A seeded rule
    (held-out, grid, rays) draws every row's split or simulations from one stream started at its seed, in row
    order; the other rules audit rows concurrently when ``threads > 1`` (numpy sorts release the GIL).

    Args:
        scores: [n_steps, n_runs] finite scores (higher ⇒ member).
        members: [n_runs] or [n_steps, n_runs] 0/1 labels.
        rule: the threshold rule (default crossing).
        delta: δ in (0, 1).
        confidence: CP confidence in (0, 1).
        threads: worker threads (≥ 1).

    Returns:
        A list of n_steps :class:`~hsaudit.audit.gdp.AuditResult`.

    Raises:
        ValueError: as :func:`audit_scores`; shapes that do not match.
    """
    d = check_unit("delta", delta)
    c = check_unit("confidence", confidence)
    rule = _check_rule(rule)
    s = as_scores(scores, ndim=2)
    m_arr = np.asarray(members)
    if int(threads) < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    n_steps, n_runs = s.shape
    seeded = hasattr(rule, "seed")
    if seeded:  # one stream for every row, consumed in row order
        rule = dataclasses.replace(rule, seed=as_rng(rule.seed))
    if m_arr.ndim == 2:
        if m_arr.shape != s.shape:
            raise ValueError(f"members has shape {m_arr.shape}, scores {s.shape}")
        rows_m = [as_members(m_arr[i], n_runs) for i in range(n_steps)]
        return [audit_scores(s[i], rows_m[i], rule=rule, delta=d, confidence=c) for i in range(n_steps)]
    shared = as_members(m_arr, n_runs)
    n1 = int(np.count_nonzero(shared))
    check_classes(n_runs - n1, n1, minimum=rule.min_per_class)
    s0_all = s[:, ~shared]
    s1_all = s[:, shared]

    def one(i: int) -> AuditResult:
        return rule.gdp(s0_all[i], s1_all[i], delta=d, confidence=c)

    if seeded or int(threads) == 1 or n_steps == 1:
        return [one(i) for i in range(n_steps)]
    with ThreadPoolExecutor(max_workers=int(threads)) as pool:
        return list(pool.map(one, range(n_steps)))


@dataclass(frozen=True)
class KnownFamily:
    """A mechanism family whose sampling rate and steps the auditor knows (the σ̂ audit estimates σ).

    Attributes:
        steps: T.
        sampling_rate: q.
        noise_multiplier: the nominal σ, where the σ̂ search starts (the result does not depend on it:
            :func:`hsaudit.audit.pld.sigma_hat_from_points`).
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
        """One flat row of plain scalars: the GDP audit's fields (``threshold_rule``: the rule's spec), the rule's
        validity, description and options (``rule_valid``, ``rule_description``, ``rule_<option>``), the
        known-family audit (``sigma_hat``, ``epsilon_known``), the point estimates and their intervals
        (``<name>_lo/_hi``)."""
        row = self.gdp.to_dict()
        row.update(
            rule_valid=self.rule.valid,
            rule_description=self.rule.description,
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
    """Scores as a 1-D float array; float32 is kept, as :func:`audit_scores` keeps it (the
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
        rule: a threshold rule value (default :data:`hsaudit.audit.rules.DEFAULT_RULE`, :class:`Crossing`: valid
            for any scores; :class:`Paper` reproduces the papers' numbers and is labelled not valid).
        directions: :data:`DIRECTIONS`.
        fpr_levels: FPRs of the TPR-at-FPR estimates.
        bootstrap: stratified bootstrap resamples for the point estimates' intervals (0: none).
        bootstrap_seed: seed of the resamples.
    """

    delta: float = 1e-5
    confidence: float = 0.95
    rule: ThresholdRule = DEFAULT_RULE
    directions: str = "one"
    fpr_levels: tuple[float, ...] = DEFAULT_FPR_LEVELS
    bootstrap: int = 0
    bootstrap_seed: int = 0

    def __post_init__(self) -> None:
        for name in ("delta", "confidence"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 < float(v) < 1.0):
                raise ValueError(f"{name} must be in (0, 1), got {v!r}")
        _check_rule(self.rule)
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
        return audit_scores(scores, members, rule=self.rule, delta=self.delta, confidence=confidence)

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
        ``[steps, runs]``): one result per step (:func:`audit_steps`; higher ⇒ member)."""
        if self.directions != "one":
            raise ValueError("gdp_steps audits one orientation (higher score => member); use directions='one'")
        return audit_steps(scores, members, rule=self.rule, delta=self.delta, confidence=self.confidence,
                           threads=threads)  # fmt: skip

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
            rule=self.rule,
        )

    def pld_curve(
        self, scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, table: PldTable, *, bounded: bool = True,
        tail_floor: float = 0.0, grid: npt.ArrayLike | None = None,
    ) -> float:
        """Annamalai's (2024) Algorithm 2: the first ε̂ of a grid whose PLD trade-off curve lies below the rule's
        CP-bounded points (``rule.points``; rules: paper, held-out, bonferroni). ``bounded=False`` is the paper's
        audit on raw rates (no confidence; ``tail_floor`` drops the points with a rate ≤ floor), which no rule can
        make valid."""
        from hsaudit.audit.pld import audit_pld

        if not bounded:
            return audit_pld(scores_out, scores_in, table, tail_floor=tail_floor, grid=grid)
        return audit_pld(scores_out, scores_in, table, rule=self.rule, confidence=self.confidence, grid=grid)

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
