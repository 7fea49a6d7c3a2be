"""Scores → the report: ε̂ under valid rules, the verdict against the claim, our accountant and the heuristic.

The verdict (docs/byo.md "The verdict"), stated at confidence c:

- ``violation``: the claimed ε is below what our accountant gives for the declared mechanism (an accounting bug,
  found without training), or the valid lower bound ε̂ exceeds the claimed ε;
- ``underpowered``: even perfectly separated scores could not give an ε̂ above the claim with these runs (the report
  says how many runs per world would be needed);
- ``consistent``: otherwise — the audit found no evidence against the claim (not a proof of it).

ε̂ comes from one threshold rule fixed in advance (:class:`AuditOptions`, default rays), at joint confidence c: a rule
whose ε̂ rests on two one-sided Clopper–Pearson bounds (held-out) gets c' = 1 − (1 − c)/2 per bound; trying both
score directions halves 1 − c once more (:class:`hsaudit.audit.auditor.Auditor`). Its basis:

- ``gdp``: ε of the μ-GDP curve that the bound on μ rejects. Valid for the claim when the declared mechanism's
  trade-off curve lies above the μ-GDP curve of the claimed ε over the false-positive rates an audit of this size can
  read (:func:`region`; exact for the full batch, checked on the dp-accounting PLD curve for Poisson sampling): then
  a correct implementation of the declared mechanism is flagged with probability at most 1 − c.
- ``assumption-free``: the (ε, δ) bound of the same Clopper–Pearson bounds (Kairouz et al. 2015), valid for any
  mechanism, looser; used when the GDP check fails or cannot be made (shuffled or fixed-size batches).

Imports the audit and accounting layers only (the audit side of the package): a claim arrives as a value handed
down, read through :class:`Claim`'s attributes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from hsaudit.accounting.gaussian import (
    calibrate_noise,
    default_epsilon_grid,
    gaussian_epsilon,
    gdp_epsilon,
    tradeoff_from_deltas,
)
from hsaudit.accounting.last_iterate import heuristic_epsilon
from hsaudit.audit.auditor import Auditor, Bonferroni, Crossing, Grid, HeldOut, Rays, ThresholdRule
from hsaudit.audit.crossing import CROSSING_RAYS, DEFAULT_RAYS
from hsaudit.audit.one_run import one_run_audit
from hsaudit.audit.one_run_fdp import one_run_fdp_audit

class Claim(Protocol):
    """What the audit reads of a training's claim (:class:`hsaudit.experiments.byo.train.values.Claim` is one, handed
    down by the training side): the claimed (ε, δ) and the declared mechanism."""

    epsilon: float
    delta: float
    noise_multiplier: float
    sampling: str
    steps: int
    neighbouring: str

    def sampling_rate(self, n: int) -> float: ...

    def to_dict(self) -> dict[str, Any]: ...


VERDICTS = ("violation", "consistent", "underpowered")
RULES = ("rays", "crossing", "held-out")
"""The verdict's rules a config or the CLI may name (all valid)."""
BASES = ("auto", "gdp", "assumption-free")
VALID_RULES = (HeldOut, Grid, Bonferroni, Crossing, Rays)
_TWO_BOUNDS = (HeldOut, Grid)  # ε̂ rests on two one-sided CP bounds, each at the auditor's confidence
ACCOUNTING_RTOL = 0.02
"""A claim is an accounting bug when it is below ours by more than this share (and 1e-3): PLD discretisation and
other accountants' own error bounds stay inside it."""
MAX_RUNS = 10**6
"""The largest runs per world :func:`runs_needed` searches."""
EPSILON_GRID = default_epsilon_grid()[default_epsilon_grid() <= 20.0]
"""ε′ of the declared mechanism's δ(ε′) (its trade-off curve is the envelope of these lines): 0 to 20 by 0.02,
enough for every FPR above e⁻²⁰ ≈ 2e−9."""


@dataclass(frozen=True)
class AuditOptions:
    """How the scores are audited, fixed before they are seen.

    Attributes:
        confidence: joint confidence c of the verdict's ε̂.
        rule: the verdict's threshold rule, a valid one (default :class:`~hsaudit.audit.auditor.Rays`).
        directions: ``"one"`` (higher score ⇒ canary present, as every canary's score is built) or ``"both"`` (also
            the other orientation, paid for).
        basis: ``"auto"`` (GDP when the declared mechanism allows it, else assumption-free), ``"gdp"`` or
            ``"assumption-free"``.
        selection_fraction: the selection share of the held-out rule of the assumption-free basis and of the
            held-out row of the report.
        bootstrap: resamples of the point estimates' intervals (0: none).
        seed: seed of the held-out split, the rays' calibration and the bootstrap.
    """

    confidence: float = 0.95
    rule: ThresholdRule = Rays()
    directions: str = "one"
    basis: str = "auto"
    selection_fraction: float = 0.5
    bootstrap: int = 200
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < float(self.confidence) < 1.0:
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}")
        if not isinstance(self.rule, VALID_RULES):
            raise ValueError(f"the verdict needs a valid rule ({', '.join(c.name for c in VALID_RULES)}), got {self.rule!r}")
        if self.directions not in ("one", "both"):
            raise ValueError(f"directions must be 'one' or 'both', got {self.directions!r}")
        if self.basis not in BASES:
            raise ValueError(f"basis must be one of {', '.join(BASES)}, got {self.basis!r}")
        if not 0.0 < float(self.selection_fraction) < 1.0:
            raise ValueError(f"selection_fraction must be in (0, 1), got {self.selection_fraction!r}")

    def auditor(self, rule: ThresholdRule, delta: float) -> Auditor:
        """The auditor of ``rule`` at joint confidence c (per bound c' = 1 − (1 − c)/2 for two-bound rules)."""
        c = float(self.confidence)
        per = 1.0 - (1.0 - c) / 2.0 if isinstance(rule, _TWO_BOUNDS) else c
        return Auditor(delta=delta, confidence=per, rule=rule, directions=self.directions)

    def held_out(self) -> HeldOut:
        return HeldOut(fraction=self.selection_fraction, seed=self.seed)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (the rule by name), :meth:`from_dict`'s inverse."""
        out = dataclasses.asdict(self)
        out["rule"] = self.rule.name
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> AuditOptions:
        """Options from plain values (the rule by name, seeded with ``seed``)."""
        values = dict(values)
        values["rule"] = rule_value(str(values.get("rule", "rays")), seed=int(values.get("seed", 0)))
        return cls(**values)


def rule_value(name: str, *, seed: int = 0) -> ThresholdRule:
    """The verdict's rule called ``name`` (:data:`RULES`), with the seed of its split or calibration.

    Raises:
        ValueError: an unknown name.
    """
    rules = {"rays": Rays(seed=seed), "crossing": Crossing(), "held-out": HeldOut(seed=seed)}
    if name not in rules:
        raise ValueError(f"rule must be one of {', '.join(RULES)}, got {name!r}")
    return rules[name]


# ---- our accountant -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Accounting:
    """Our accounting of the declared mechanism.

    Attributes:
        epsilon: ε at the claim's δ (an upper bound for the declared mechanism).
        method: how it was computed.
        sampling_rate: q.
        comparable: whether a claim below ``epsilon`` is an accounting bug (False for shuffled batches, where ours is
            the bound without amplification and no tight accountant exists).
        heuristic: the last-iterate heuristic ε (Steinke et al. 2025, Thm 1): what a final-model audit of a correct
            implementation can reach with an ideal canary.
        full_batch_mu: μ of the declared mechanism when it is exactly μ-GDP (the full batch), else None.
        deltas: δ(ε′) of the declared mechanism on :data:`EPSILON_GRID` (dp-accounting PLD), or None without a PLD.
    """

    epsilon: float
    method: str
    sampling_rate: float
    comparable: bool
    heuristic: float
    full_batch_mu: float | None = None
    deltas: np.ndarray | None = field(default=None, compare=False, repr=False)

    def gdp_mu(self, low: float, high: float) -> float | None:
        """The smallest μ such that the declared mechanism's trade-off curve lies above the μ-GDP curve for every
        FPR in [low, high]: max of Φ⁻¹(1 − α) − Φ⁻¹(f(α)) there (None without a curve)."""
        if self.full_batch_mu is not None:
            return self.full_batch_mu
        if self.deltas is None:
            return None
        alpha = np.geomspace(low, high, 400)
        f = tradeoff_from_deltas(alpha, EPSILON_GRID, self.deltas)
        with np.errstate(divide="ignore"):
            return float(np.max(special.ndtri(1.0 - alpha) - special.ndtri(f)))


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """The μ whose μ-GDP curve has ε at δ (1 / the σ of one Gaussian mechanism with that ε)."""
    return 1.0 / calibrate_noise(epsilon=float(epsilon), delta=float(delta), compositions=1)


@functools.lru_cache(maxsize=64)
def _accounting(claim: Claim, n: int) -> Accounting:
    from dp_accounting import dp_event
    from dp_accounting.pld import privacy_loss_distribution as pld_lib
    from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

    q = claim.sampling_rate(n)
    sigma, steps, delta = claim.noise_multiplier, claim.steps, claim.delta
    replace = claim.neighbouring == "replace-one"
    sens = 2.0 if replace else 1.0
    heuristic = heuristic_epsilon(delta, steps=steps, sampling_rate=q, noise_multiplier=sigma / sens)
    if q >= 1.0:
        mu = sens * math.sqrt(steps) / sigma
        return Accounting(
            epsilon=gdp_epsilon(mu=mu, delta=delta),
            method=f"Gaussian mechanism composed {steps} times (full batch, sensitivity {sens:g}C): μ-GDP, μ = {mu:.4g}",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
            full_batch_mu=mu,
        )
    if claim.sampling == "poisson":
        rel = pld_lib.NeighborRel.REPLACE_ONE if replace else pld_lib.NeighborRel.ADD_OR_REMOVE_ONE
        pld = pld_lib.from_gaussian_mechanism(
            standard_deviation=sigma,
            sampling_prob=q,
            value_discretization_interval=1e-4,
            neighboring_relation=rel,
        ).self_compose(steps)
        deltas = np.asarray(pld.get_delta_for_epsilon(EPSILON_GRID), dtype=float)
        return Accounting(
            epsilon=max(0.0, float(pld.get_epsilon_for_delta(delta))),
            method=f"dp-accounting PLD: Poisson-subsampled Gaussian (q = {q:.4g}) composed {steps} times, "
            f"{claim.neighbouring}",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
            deltas=deltas,
        )
    if claim.sampling == "fixed":  # B of N without replacement, replace-one (Claim.sampling_rate refuses add-remove)
        batch = round(q * n)
        acc = rdp_lib.RdpAccountant(neighboring_relation=rdp_lib.NeighborRel.REPLACE_ONE)
        acc.compose(
            dp_event.SelfComposedDpEvent(
                dp_event.SampledWithoutReplacementDpEvent(n, batch, dp_event.GaussianDpEvent(sigma)), steps
            )
        )
        return Accounting(
            epsilon=float(acc.get_epsilon(delta)),
            method=f"dp-accounting RDP: {batch} of {n} sampled without replacement, Gaussian, composed {steps} times, "
            "replace-one",
            sampling_rate=q,
            comparable=True,
            heuristic=heuristic,
        )
    per_epoch = max(1, math.floor(1.0 / q))
    appearances = math.ceil(steps / per_epoch)
    return Accounting(
        epsilon=gaussian_epsilon(noise_multiplier=sigma / sens, compositions=appearances, delta=delta),
        method=f"shuffled batches: no proven amplification; the bound of {appearances} appearance(s) of an example "
        f"without it (Poisson accounting of shuffled batches is not a proven bound, Chua et al. 2024)",
        sampling_rate=q,
        comparable=False,
        heuristic=heuristic,
    )


def accounting(claim: Claim, n: int) -> Accounting:
    """Our accounting of the mechanism ``claim`` declares, for a data set of ``n`` examples (cached: a study of many
    seeds computes it once).

    Raises:
        ValueError: a claim inconsistent with ``n`` (:meth:`Claim.sampling_rate`).
    """
    claim.sampling_rate(n)
    return _accounting(claim, int(n))


def accounting_bug(claim: Claim, ours: Accounting) -> bool:
    """Whether the claimed ε is below ours for the declared mechanism (beyond :data:`ACCOUNTING_RTOL`)."""
    return ours.comparable and claim.epsilon < ours.epsilon * (1.0 - ACCOUNTING_RTOL) - 1e-3


def _gdp_curve(mu: float, alpha: np.ndarray) -> np.ndarray:
    return special.ndtr(special.ndtri(1.0 - alpha) - mu)


def region(rule: ThresholdRule, mu: float, runs: int) -> tuple[float, float]:
    """The false-positive rates at which ``rule``'s test of μ-GDP reads the trade-off curve.

    Crossing and rays reject μ from where the empirical curve crosses their rays (FNR = ρ·FPR; ρ = 1, or nine slopes
    in [1/4, 4]); the rejection event at a crossing is one comparison of two order statistics there
    (:mod:`hsaudit.audit.crossing`), so the curve matters around the rays' crossings of the μ-GDP curve: the FPRs and
    FNRs of those points, widened by a factor 2 each way. A rule that picks a threshold (held-out, grid,
    Bonferroni) may read any FPR an audit of ``runs`` models per world can bound: [1/(10 runs), 1 − 1/(10 runs)].
    """
    if isinstance(rule, (Crossing, Rays)):
        rays = CROSSING_RAYS if isinstance(rule, Crossing) else DEFAULT_RAYS
        points = []
        for rho in rays:
            t = optimize.brentq(lambda a: _gdp_curve(mu, np.array(a)) - rho * a, 1e-15, 1.0 / (1.0 + rho))
            points += [t, rho * t]
        return max(min(points) / 2.0, 1e-12), min(0.5, 2.0 * max(points))
    low = min(0.5, 1.0 / (10.0 * runs))
    return low, 1.0 - low


def basis_for(claim: Claim, ours: Accounting, options: AuditOptions, *, runs: int) -> tuple[str, str]:
    """The verdict's basis and why (see the module docstring): GDP when the declared mechanism's curve lies above
    the claim's μ-GDP curve wherever the verdict's rule reads it (:func:`region`), else assumption-free."""
    if options.basis != "auto":
        return options.basis, "asked for"
    mu_claim = mu_for_epsilon(claim.epsilon, claim.delta)
    low, high = region(options.rule, mu_claim, runs)
    mu = ours.gdp_mu(low, high)
    if mu is None:
        return "assumption-free", "the declared mechanism has no trade-off curve here to check the GDP reading against"
    where = f"FPR in [{low:.2g}, {high:.2g}], where the {options.rule.name} rule reads it"
    if mu <= mu_claim * (1.0 + 1e-6) + 1e-9:
        return "gdp", f"the declared mechanism's curve lies above the claim's μ-GDP curve (μ = {mu_claim:.4g}) for {where}"
    return "assumption-free", (
        f"the declared mechanism's curve dips below the claim's μ-GDP curve for {where} (it needs μ = {mu:.4g} > "
        f"{mu_claim:.4g}): the GDP reading could flag a correct implementation"
    )


def _rule_for(options: AuditOptions, basis: str) -> ThresholdRule:
    return options.rule if basis == "gdp" else options.held_out()


def _epsilon(auditor: Auditor, basis: str, s0: np.ndarray, s1: np.ndarray) -> float:
    res = auditor.gdp(s0, s1)
    value = res.epsilon if basis == "gdp" else res.epsilon_assumption_free
    return 0.0 if not math.isfinite(value) or value < 0 else float(value)  # no evidence is 0


def perfect_epsilon(options: AuditOptions, basis: str, *, delta: float, out: int, into: int) -> float:
    """The ε̂ of perfectly separated scores (``out`` zeros, ``into`` ones): the most this audit can show."""
    auditor = options.auditor(_rule_for(options, basis), delta)
    return _epsilon(auditor, basis, np.zeros(int(out)), np.ones(int(into)))


def runs_needed(
    options: AuditOptions, basis: str, *, epsilon: float, delta: float, start: int = 8, limit: int = MAX_RUNS
) -> int | None:
    """The runs per world (within 25 %) at which perfectly separated scores give an ε̂ above ``epsilon``, or None
    beyond ``limit``. With rays as the rule, the search uses the crossing rule (as tight on perfectly
    separated scores, within 1 %, and not Monte Carlo calibrated), which can only overstate the runs needed."""
    probe = options if not isinstance(options.rule, Rays) else dataclasses.replace(options, rule=Crossing())
    runs = max(int(start), 2)
    while runs <= limit:
        if perfect_epsilon(probe, basis, delta=delta, out=runs, into=runs) > epsilon:
            return runs
        runs = math.ceil(runs * 1.25)
    return None


# ---- the report ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ByoReport:
    """The audit of a user's training.

    Attributes:
        verdict: one of :data:`VERDICTS`.
        reason: the verdict in a sentence.
        claim: the claim audited.
        n: examples of the data.
        accounting: ours for the declared mechanism.
        basis: ``"gdp"`` or ``"assumption-free"``; ``basis_reason`` says why.
        rule: the verdict's rule name; ``confidence``: its joint confidence; ``directions``.
        epsilon_hat: the verdict's valid lower bound (0 without evidence; None when nothing was trained).
        epsilon_max: the ε̂ of perfectly separated scores with these runs.
        runs_out, runs_in: models without and with the canary (the design's runs per world before training).
        runs_needed: runs per world that could exceed the claim, when underpowered (None: beyond the search).
        estimates: every estimate of the scores (rules, one-run bounds, point estimates), one dict each.
        details: what the design and the check recorded (entry, canary, background, probe, seconds).
        looks: the verdict's ε̂ of each score it looked at (``score``: the final model; ``score_iterates``: the
            white-box statistic of a recording training), each at confidence 1 − (1 − c)/len(looks).
    """

    verdict: str
    reason: str
    claim: Claim
    n: int
    accounting: Accounting
    basis: str
    basis_reason: str
    rule: str
    confidence: float
    directions: str
    epsilon_hat: float | None
    epsilon_max: float
    runs_out: int
    runs_in: int
    runs_needed: int | None = None
    estimates: tuple[dict[str, Any], ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    looks: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (non-finite floats as None): the verdict first."""
        out = {
            "verdict": self.verdict,
            "reason": self.reason,
            "epsilon_hat": self.epsilon_hat,
            "epsilon_claimed": self.claim.epsilon,
            "delta": self.claim.delta,
            "epsilon_ours": self.accounting.epsilon,
            "epsilon_heuristic": self.accounting.heuristic,
            "epsilon_max": self.epsilon_max,
            "basis": self.basis,
            "basis_reason": self.basis_reason,
            "rule": self.rule,
            "confidence": self.confidence,
            "directions": self.directions,
            "runs_out": self.runs_out,
            "runs_in": self.runs_in,
            "runs_needed": self.runs_needed,
            "n": self.n,
            "claim": self.claim.to_dict(),
            "accounting": {k: v for k, v in dataclasses.asdict(self.accounting).items() if k != "deltas"},
            "estimates": [dict(e) for e in self.estimates],
            "looks": dict(self.looks),
            "details": dict(self.details),
        }
        return _jsonable(out)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _verdict_before(claim: Claim, n: int, options: AuditOptions, runs_out: int, runs_in: int) -> dict[str, Any]:
    ours = accounting(claim, n)
    basis, why = basis_for(claim, ours, options, runs=max(runs_out, runs_in, 1))
    eps_max = perfect_epsilon(options, basis, delta=claim.delta, out=max(runs_out, 1), into=max(runs_in, 1))
    rule = _rule_for(options, basis).name
    common = dict(
        claim=claim, n=n, accounting=ours, basis=basis, basis_reason=why, rule=rule,
        confidence=float(options.confidence), directions=options.directions, epsilon_max=eps_max,
        runs_out=int(runs_out), runs_in=int(runs_in),
    )  # fmt: skip
    if accounting_bug(claim, ours):
        return dict(
            common,
            verdict="violation",
            reason=f"accounting: the claimed ε = {claim.epsilon:.4g} is below our accountant's {ours.epsilon:.4g} "
            f"for the declared mechanism ({ours.method}); nothing needs training to show it",
        )
    if eps_max <= claim.epsilon:
        needed = runs_needed(options, basis, epsilon=claim.epsilon, delta=claim.delta, start=max(runs_out, runs_in))
        more = f"about {needed} runs per world could" if needed else f"more than {MAX_RUNS} runs per world would"
        return dict(
            common,
            verdict="underpowered",
            runs_needed=needed,
            reason=f"even perfectly separated scores give at most ε̂ = {eps_max:.4g} ≤ the claimed {claim.epsilon:.4g} "
            f"with {runs_out} + {runs_in} runs ({rule}, {basis}); {more} exceed it",
        )
    return common


LOOKS = {"score": "the final model", "score_iterates": "the iterates (white box)"}
"""The scores a verdict may look at: the final model's, and a recording training's iterates statistic."""


def _per_look(options: AuditOptions, looks: int) -> AuditOptions:
    """Options at confidence 1 − (1 − c)/looks: the verdict pays for looking at several scores (Bonferroni)."""
    return dataclasses.replace(options, confidence=1.0 - (1.0 - options.confidence) / looks) if looks > 1 else options


def pre_training(claim: Claim, n: int, options: AuditOptions, *, runs: int, looks: int = 1) -> ByoReport | None:
    """The verdict that needs no training — an accounting bug, or an audit of ``runs`` per world that cannot exceed
    the claim — or None when the models must be trained to decide (``looks``: 2 for a recording training)."""
    found = _verdict_before(claim, n, _per_look(options, looks), runs, runs)
    found["confidence"] = float(options.confidence)
    return ByoReport(**found, epsilon_hat=None) if "verdict" in found else None


def _scores(scores: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(scores, Mapping) or hasattr(scores, "columns"):
        s, m = np.asarray(scores["score"], dtype=float), np.asarray(scores["member"]).astype(bool)
    else:
        raise ValueError("scores must be a table with columns score and member")
    if s.ndim != 1 or s.shape != m.shape:
        raise ValueError(f"score and member must be 1-D of equal length, got {s.shape} and {m.shape}")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite (a NaN score is a diverged training)")
    return s, m


def estimates(
    scores_out: npt.ArrayLike, scores_in: npt.ArrayLike, *, delta: float, options: AuditOptions
) -> list[dict[str, Any]]:
    """Every estimate of the scores, one dict each: the valid rules (held-out with its assumption-free bound,
    crossing, rays), the one-run bounds on the pooled runs (Steinke et al. 2023; Mahloujifar et al. 2024: valid, the
    bits being independent fair coins; a cheap first look) and the point estimates (AUROC and the ε of its μ, with
    a bootstrap interval)."""
    s0, s1 = np.asarray(scores_out, dtype=float), np.asarray(scores_in, dtype=float)
    rows: list[dict[str, Any]] = []
    for rule in (options.held_out(), Crossing(), Rays(seed=options.seed)):
        res = options.auditor(rule, delta).gdp(s0, s1)
        rows.append(
            dict(estimate=f"GDP ε̂ ({rule.name})", rule=rule.name, valid=True, basis="gdp", mu=res.mu,
                 epsilon=max(0.0, res.epsilon), confidence=options.confidence)
        )  # fmt: skip
        if isinstance(rule, HeldOut):
            af = res.epsilon_assumption_free
            rows.append(
                dict(estimate=f"(ε, δ) bound ({rule.name})", rule=rule.name, valid=True, basis="assumption-free",
                     mu=None, epsilon=max(0.0, af) if math.isfinite(af) else 0.0, confidence=options.confidence)
            )  # fmt: skip
    scores = np.concatenate([s0, s1])
    included = np.concatenate([np.zeros(s0.size, bool), np.ones(s1.size, bool)])
    k = max(1, scores.size // 10)
    for method, audit in (("one-run (Steinke et al. 2023)", one_run_audit), ("one-run f-DP", one_run_fdp_audit)):
        res = audit(scores, included, k_plus=k, k_minus=k, delta=delta, confidence=options.confidence)
        rows.append(
            dict(estimate=f"{method}, k = {k} each side", rule="one-run", valid=True,
                 basis="assumption-free" if res.mu is None else "gdp", mu=res.mu, epsilon=res.epsilon,
                 confidence=options.confidence)
        )  # fmt: skip
    with np.errstate(invalid="ignore"), warnings.catch_warnings():  # perfectly separated resamples: μ = ∞
        warnings.simplefilter("ignore", RuntimeWarning)
        point = Auditor(delta=delta, confidence=options.confidence, rule=Crossing(), bootstrap=options.bootstrap,
                        bootstrap_seed=options.seed).report(s0, s1)  # fmt: skip
    mu = point.estimates["mu_auroc"]
    lo, hi = point.intervals.get("mu_auroc", (math.nan, math.nan))
    rows.append(
        dict(estimate="ε of the AUROC's μ (point estimate, not a bound)", rule="auroc", valid=False, basis="gdp",
             mu=mu, epsilon=_gdp_eps(mu, delta), epsilon_lo=_gdp_eps(lo, delta), epsilon_hi=_gdp_eps(hi, delta),
             auroc=point.estimates["auroc"], confidence=options.confidence)
    )  # fmt: skip
    return rows


def _gdp_eps(mu: float, delta: float) -> float:
    if not math.isfinite(mu):
        return math.nan if math.isnan(mu) else (math.inf if mu > 0 else 0.0)
    return gdp_epsilon(mu=max(mu, 0.0), delta=delta) if mu > 0 else 0.0


def report(
    scores: Any,
    claim: Claim,
    n: int,
    options: AuditOptions = AuditOptions(),
    *,
    details: Mapping[str, Any] | None = None,
    every_estimate: bool = True,
) -> ByoReport:
    """The report of the scores of an audit (columns ``score``, higher ⇒ canary present, and ``member``, 0/1).

    Args:
        scores: a table (DataFrame or mapping of columns) with ``score`` and ``member``.
        claim: the claim audited.
        n: examples of the data (the declared sampling rate's N).
        options: the audit's options.
        details: what to carry into the report (design, probe, timings).
        every_estimate: also compute :func:`estimates` (False: the verdict alone, for studies of many seeds).

    Raises:
        ValueError: scores that are not finite or of the wrong shape; a world without models.
    """
    s, m = _scores(scores)
    s0, s1 = s[~m], s[m]
    if s0.size == 0 or s1.size == 0:
        raise ValueError(f"both worlds need models, got {s0.size} without and {s1.size} with the canary")
    columns = {"score": s}
    if "score_iterates" in getattr(scores, "columns", scores):
        columns["score_iterates"] = _scores({"score": scores["score_iterates"], "member": scores["member"]})[0]
    per_look = _per_look(options, len(columns))
    found = _verdict_before(claim, n, per_look, s0.size, s1.size)
    basis = found["basis"]
    auditor = per_look.auditor(_rule_for(per_look, basis), claim.delta)
    looks = {name: _epsilon(auditor, basis, v[~m], v[m]) for name, v in columns.items()}
    top = max(looks, key=looks.get)
    eps_hat = looks[top]
    of = "" if len(looks) == 1 else f" of {LOOKS[top]}, each of {len(looks)} looks at {per_look.confidence:g}"
    if "verdict" not in found:
        if eps_hat > claim.epsilon:
            found.update(
                verdict="violation",
                reason=f"the valid lower bound ε̂ = {eps_hat:.4g}{of} ({found['rule']}, {basis}, confidence "
                f"{options.confidence:g}) exceeds the claimed ε = {claim.epsilon:.4g} at δ = {claim.delta:g}",
            )
        else:
            found.update(
                verdict="consistent",
                reason=f"ε̂ = {eps_hat:.4g}{of} ({found['rule']}, {basis}, confidence {options.confidence:g}) does not "
                f"exceed the claimed ε = {claim.epsilon:.4g}; this audit could have shown up to {found['epsilon_max']:.4g}",
            )
    found["confidence"] = float(options.confidence)
    return ByoReport(
        **found,
        epsilon_hat=eps_hat,
        looks=looks,
        estimates=tuple(estimates(s0, s1, delta=claim.delta, options=options)) if every_estimate else (),
        details=dict(details or {}),
    )


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.4g}"
    return str(value)


def markdown(rep: Mapping[str, Any], *, figure: str | None = None) -> str:
    """A report (:meth:`ByoReport.to_dict`) as Markdown: the verdict first, the numbers beside it, every estimate, the
    claim and the design."""
    claim, acc = rep["claim"], rep["accounting"]
    lines = [
        f"# Audit of {rep['details'].get('entry', 'a training')}",
        "",
        f"**Verdict: {rep['verdict']}** — {rep['reason']}.",
        "",
        f"| ε at δ = {rep['delta']:g} | value | what it is |",
        "|---|---:|---|",
        f"| claimed | {_fmt(rep['epsilon_claimed'])} | the training's own accountant ({claim.get('accountant', 'unnamed')}) |",
        f"| ours | {_fmt(acc['epsilon'])} | {acc['method']} |",
        f"| last-iterate heuristic | {_fmt(acc['heuristic'])} | what a final-model audit of a correct implementation "
        "can reach (Steinke et al. 2025, Thm 1) |",
        f"| ε̂ (verdict) | {_fmt(rep['epsilon_hat'])} | valid lower bound: {rep['rule']}, {rep['basis']}, confidence "
        f"{rep['confidence']:g}, {'one direction' if rep['directions'] == 'one' else 'both directions'} |",
        f"| largest ε̂ possible | {_fmt(rep['epsilon_max'])} | perfectly separated scores, {rep['runs_out']} + "
        f"{rep['runs_in']} runs |",
        "",
        f"Basis: {rep['basis']} — {rep['basis_reason']}.",
    ]
    if rep.get("runs_needed") is not None:
        lines.append(f"Runs per world that could exceed the claim: about {rep['runs_needed']}.")
    if len(rep.get("looks") or {}) > 1:
        lines.append("Looks (each at confidence 1 − (1 − c)/2): " + ", ".join(
            f"{LOOKS.get(k, k)} ε̂ = {_fmt(v)}" for k, v in rep["looks"].items()) + ".")  # fmt: skip
    if rep["estimates"]:
        lines += ["", "## Every estimate", "", "| estimate | valid | μ | ε |", "|---|---|---:|---:|"]
        for e in rep["estimates"]:
            eps = _fmt(e["epsilon"])
            if "epsilon_lo" in e:
                eps += f" [{_fmt(e['epsilon_lo'])}, {_fmt(e['epsilon_hi'])}]"
            lines.append(f"| {e['estimate']} | {'yes' if e['valid'] else 'no'} | {_fmt(e.get('mu'))} | {eps} |")
    lines += ["", "## Claim", "", *(f"- {k}: {v}" for k, v in claim.items())]
    if rep["details"]:
        lines += ["", "## Design and checks", "", *(f"- {k}: {_fmt(v)}" for k, v in rep["details"].items())]
    if figure:
        lines += ["", f"![the scores of both worlds and ε̂ against the claim]({figure})"]
    return "\n".join(lines) + "\n"
