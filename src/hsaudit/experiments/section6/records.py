"""The Section 6 experiments: simulations audited (:mod:`hsaudit.experiments.section6.audit`) into tidy records for the
workflow (one dict per row; the scripts write CSVs).

:func:`audit_process` simulates both worlds and audits θ_t at every step (Cebere et al. Section 6, Algorithm 4);
:func:`threshold_search` is the T = 2 search over switch points of App. F (Algorithm 5), with the exact ε of
every candidate beside it (docs/section6.md); :func:`audit_records` (fig3/fig14 audits of one (rule, σ)), :func:`exact_records` (exact ε of one rule) and
:func:`tradeoff_records` (fig6b trade-off curves). Columns are listed in each docstring; docs/section6.md says
what they mean.
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

from hsaudit.accounting.gaussian import gdp_epsilon, gdp_tradeoff
from hsaudit.audit.auditor import Auditor, Paper
from hsaudit.audit.rules import ThresholdRule
from hsaudit.audit.tradeoff import empirical_tradeoff
from hsaudit.audit.two_sample import GdpTables, gdp_tables
from hsaudit.experiments.section6.exact import exact_epsilon, exact_epsilon_curve, exact_laws, exact_tradeoff, upper_bound_epsilon
from hsaudit.experiments.section6.audit import audit_pair, paper_tables, switch_points
from hsaudit.experiments.section6.process import Process, check_runs, iter_scores, simulate_scores, world_rng

PAPER: ThresholdRule = Paper()
"""The paper's threshold rule (Cebere et al. Algorithm 4), the default of the functions below."""


def audit_process(
    process: Process,
    *,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    key: tuple = (),
    delta: float = 1e-5,
    confidence: float = 0.95,
    audit_rule: ThresholdRule = PAPER,
    tables: GdpTables | None = None,
    steps: list[int] | None = None,
) -> list[dict]:
    """Simulate both worlds ``repetitions`` times and audit θ_t at every step (or at ``steps``).

    Each repetition draws R = ``runs_per_world`` runs per world (an exact half split of 2R runs, b = 1 for the
    inserted world) from streams keyed by ``(*key, rep, world)``, and audits each step with
    :func:`hsaudit.experiments.section6.audit.audit_pair` (the rule of a split seeded per step).

    Args:
        process: the process.
        runs_per_world: R (≥ 1).
        repetitions: number of independent repetitions (≥ 1).
        seed: master seed.
        key: the experiment key the streams are derived from (e.g. (rule, σ, B)).
        delta: δ of the reported ε.
        confidence: Clopper–Pearson confidence.
        audit_rule: the threshold rule, built once by the plan (``audit_rule`` of :class:`hsaudit.experiments.section6.plan.Section6Plan`).
        tables: precomputed :func:`gdp_tables` for (R, R, confidence, δ) (the paper's rule only).
        steps: 1-based steps to audit (default all).

    Returns:
        One record (dict) per (rep, step): rep, step, epsilon_audit, mu, threshold, fpr, fnr, fpr_upper,
        fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, runs_per_world, threshold_rule (the rule's
        spec).
    """
    runs = check_runs(runs_per_world)
    if int(repetitions) != repetitions or repetitions < 1:
        raise ValueError(f"repetitions must be an integer >= 1, got {repetitions}")
    wanted = set(range(1, process.steps + 1) if steps is None else steps)
    if not wanted or min(wanted) < 1 or max(wanted) > process.steps:
        raise ValueError(f"steps must lie in 1..{process.steps}, got {sorted(wanted)}")
    tables = paper_tables(audit_rule, runs, confidence=confidence, delta=delta, tables=tables)
    records = []
    for rep in range(int(repetitions)):
        worlds = [iter_scores(process, runs=runs, inserted=bool(b), rng=world_rng(seed, *key, rep, b)) for b in (0, 1)]
        for step, (s, m) in enumerate(zip(*worlds), start=1):
            if step not in wanted:
                continue
            row = audit_pair(s, m, audit_rule=audit_rule, delta=delta, confidence=confidence, tables=tables,
                             seed=world_rng(seed, *key, rep, "split", step))
            records.append({"rep": rep, "step": step, **row, "runs_per_world": runs, "threshold_rule": audit_rule.spec})
    return records


def threshold_search(
    *,
    sigma: float,
    batch_size: int,
    steps: int,
    clip_norm: float,
    rule: str,
    alphas: npt.ArrayLike,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    delta: float = 1e-5,
    confidence: float = 0.95,
    audit_rule: ThresholdRule = PAPER,
    tables: GdpTables | None = None,
    exact: dict | None = None,
) -> list[dict]:
    """The threshold search of Cebere et al. App. F (Algorithm 5) next to A_S^{h*}, with exact ε.

    For every α_i the process is run with switch point h_i = σC·Φ⁻¹(1 − α_i), audited at step ``steps``; the
    search's answer is max_i ε̂_i (per repetition). The candidate ``h*`` (switch point C/2) is added with
    ``alpha = NaN`` and ``candidate = "h*"``. The exact ε of the last iterate is computed for every h.

    Returns:
        One record per (candidate, rep): candidate ("grid" or "h*"), alpha, h, rep, epsilon_audit, mu,
        epsilon_exact, plus the audit fields.
    """
    alphas = np.asarray(alphas, dtype=float)
    hs = switch_points(alphas, sigma=sigma, clip_norm=clip_norm)
    cands = [("grid", a, h) for a, h in zip(alphas, hs)] + [("h*", np.nan, 0.5 * clip_norm)]
    runs = check_runs(runs_per_world)
    tables = paper_tables(audit_rule, runs, confidence=confidence, delta=delta, tables=tables)
    records = []
    for i, (kind, alpha, h) in enumerate(cands):
        proc = Process(
            sigma=sigma, batch_size=batch_size, steps=steps, clip_norm=clip_norm, rule=rule, switch_point=h / clip_norm
        )
        eps_curve, _, mu_curve = exact_epsilon_curve(proc, delta=delta, **(exact or {}))
        eps_exact, mu_limit = float(eps_curve[-1]), float(mu_curve[-1])
        rows = audit_process(
            proc,
            runs_per_world=runs,
            repetitions=repetitions,
            seed=seed,
            key=("threshold_search", rule, sigma, batch_size, steps, kind, i),
            delta=delta,
            confidence=confidence,
            audit_rule=audit_rule,
            tables=tables,
            steps=[steps],
        )
        for row in rows:
            records.append(
                {
                    "candidate": kind,
                    "alpha": float(alpha),
                    "h": float(h),
                    **row,
                    "epsilon_exact": eps_exact,
                    "mu_limit": mu_limit,
                    "epsilon_gdp_limit": gdp_epsilon(mu=mu_limit, delta=delta),
                }
            )
    return records


def audit_records(
    *,
    rule: str,
    sigma: float,
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    delta: float,
    confidence: float,
    audit_rule: ThresholdRule,
    tables: GdpTables | None = None,
    log=None,
) -> list[dict]:
    """Audits of one (rule, σ) for every B, repetition and step, as tidy records (fig3/fig14 input).

    Streams are keyed by ("section6", rule, σ, B, rep, world), so a cell's numbers do not depend on which
    other cells run. Columns: rule, sigma, batch_size, step, rep, epsilon_audit, mu, threshold, fpr, fnr,
    fpr_upper, fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, epsilon_upper,
    runs_per_world, threshold_rule, confidence, delta, clip_norm, switch_point.
    """
    upper = upper_bound_epsilon(sigma=sigma, delta=delta)
    out = []
    for b in batch_sizes:
        start = time.perf_counter()
        proc = Process(
            sigma=sigma, batch_size=int(b), steps=steps, clip_norm=clip_norm, rule=rule, switch_point=switch_point
        )
        rows = audit_process(
            proc,
            runs_per_world=runs_per_world,
            repetitions=repetitions,
            seed=seed,
            key=("section6", rule, f"{float(sigma):g}", int(b)),
            delta=delta,
            confidence=confidence,
            audit_rule=audit_rule,
            tables=tables,
        )
        for row in rows:
            out.append(
                {
                    "rule": rule,
                    "sigma": float(sigma),
                    "batch_size": int(b),
                    **row,
                    "epsilon_upper": upper,
                    "confidence": confidence,
                    "delta": delta,
                    "clip_norm": clip_norm,
                    "switch_point": switch_point,
                }
            )
        if log is not None:
            last = [r["epsilon_audit"] for r in rows if r["step"] == steps]
            log(
                f"rule={rule} sigma={sigma:g} B={b}: eps_hat(T={steps}) = {np.mean(last):.3f} ± {np.std(last):.3f} "
                f"({repetitions} reps, R={runs_per_world}/world) in {time.perf_counter() - start:.1f} s"
            )
    return out


def exact_records(
    *,
    rule: str,
    sigmas: list[float],
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    delta: float,
    grid: dict,
) -> list[dict]:
    """Exact ε of the last iterate at every step for every (σ, B) of one rule (columns rule, sigma,
    batch_size, step, epsilon_exact, mu_limit, epsilon_gdp_limit, lost_mass, epsilon_upper)."""
    out = []
    for s in sigmas:
        upper = upper_bound_epsilon(sigma=float(s), delta=delta)
        for b in batch_sizes:
            proc = Process(
                sigma=float(s),
                batch_size=int(b),
                steps=steps,
                clip_norm=clip_norm,
                rule=rule,
                switch_point=switch_point,
            )
            eps, lost, mu_limit = exact_epsilon_curve(proc, delta=delta, **grid)
            for t in range(steps):
                out.append(
                    {
                        "rule": rule,
                        "sigma": float(s),
                        "batch_size": int(b),
                        "step": t + 1,
                        "epsilon_exact": float(eps[t]),
                        "mu_limit": float(mu_limit[t]),
                        "epsilon_gdp_limit": gdp_epsilon(mu=float(mu_limit[t]), delta=delta),
                        "lost_mass": float(lost[t]),
                        "epsilon_upper": upper,
                    }
                )
    return out


def tradeoff_records(
    *,
    sigma: float,
    step: int,
    batch_sizes: list[int],
    steps: int,
    clip_norm: float,
    switch_point: float,
    rule: str,
    runs_per_world: int,
    seed: int,
    delta: float,
    confidence: float,
    max_points: int,
    grid: dict,
) -> list[dict]:
    """fig6b data: for each B, the empirical trade-off curve of the scores θ_step (one repetition), the
    G_μ̂ curve of its paper-mode audit and the exact trade-off curve (columns batch_size, curve, fpr, fnr,
    mu, epsilon_audit, epsilon_exact)."""
    out = []
    for b in batch_sizes:
        proc = Process(
            sigma=sigma, batch_size=int(b), steps=step, clip_norm=clip_norm, rule=rule, switch_point=switch_point
        )
        key = ("section6-tradeoff", rule, f"{float(sigma):g}", int(b))
        worlds = [
            simulate_scores(proc, runs=runs_per_world, inserted=bool(w), rng=world_rng(seed, *key, 0, w))[-1]
            for w in (0, 1)
        ]
        tables = gdp_tables(runs_per_world, runs_per_world, confidence=confidence, delta=delta)
        audit = Auditor(delta=delta, confidence=confidence, rule=Paper()).gdp_two_sample(worlds[0], worlds[1], tables)
        scores = np.concatenate(worlds)
        members = np.repeat([False, True], runs_per_world)
        full_fpr, full_fnr = empirical_tradeoff(scores, members)
        # arc-length points for the linear plot plus log-spaced FPR points for the tail (FPR ≥ 1/R)
        arc_fpr, _ = empirical_tradeoff(scores, members, max_points=max_points)
        tail = np.logspace(np.log10(1.0 / runs_per_world), 0.0, max_points // 4)
        pick = np.unique(
            np.concatenate(
                [
                    np.searchsorted(-full_fpr, -np.concatenate([arc_fpr, tail]), side="left").clip(
                        0, full_fpr.size - 1
                    ),
                    [0, full_fpr.size - 1],
                ]
            )
        )
        fpr, fnr = full_fpr[pick], full_fnr[pick]
        law = exact_laws(proc, **grid)
        eps_exact = exact_epsilon(law.p[-1], law.pbar[-1], delta=delta)
        efpr, efnr = exact_tradeoff(law.p[-1], law.pbar[-1])
        alpha = np.unique(np.concatenate([np.linspace(0.0, 1.0, max_points), np.logspace(-8, 0, max_points // 4)]))
        # the exact curve at the same α (it is piecewise linear between likelihood-ratio cells)
        efnr = np.interp(alpha, efpr[::-1], efnr[::-1])
        efpr = alpha
        common = {
            "batch_size": int(b),
            "sigma": float(sigma),
            "step": step,
            "mu": audit.mu,
            "epsilon_audit": audit.epsilon,
            "epsilon_exact": eps_exact,
            "runs_per_world": runs_per_world,
        }
        for name, xs, ys in (
            ("empirical", fpr, fnr),
            ("gdp_fit", alpha, gdp_tradeoff(alpha, mu=audit.mu)),
            ("exact", efpr, efnr),
        ):
            out.extend({**common, "curve": name, "fpr": float(x), "fnr": float(y)} for x, y in zip(xs, ys))
    return out
