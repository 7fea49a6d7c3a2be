"""Tidy records of the Section 6 experiments for the workflow (one dict per row; the scripts write CSVs).

:func:`audit_records` (fig3/fig14 audits of one (rule, σ)), :func:`exact_records` (exact ε of one rule) and
:func:`tradeoff_records` (fig6b trade-off curves). Columns are listed in each docstring; docs/section6.md says
what they mean.
"""

from __future__ import annotations

import time

import numpy as np

from hsaudit.accounting.gaussian import gdp_epsilon, gdp_tradeoff
from hsaudit.audit.auditor import Auditor, Paper
from hsaudit.audit.tradeoff import empirical_tradeoff
from hsaudit.audit.two_sample import GdpTables, gdp_tables
from hsaudit.experiments.cebere.section6.exact import exact_epsilon, exact_epsilon_curve, exact_laws, exact_tradeoff, upper_bound_epsilon
from hsaudit.experiments.cebere.section6.audit import audit_process
from hsaudit.experiments.cebere.section6.process import Process, simulate_scores, world_rng


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
    mode: str,
    selection_fraction: float = 0.5,
    tables: GdpTables | None = None,
    log=None,
) -> list[dict]:
    """Audits of one (rule, σ) for every B, repetition and step, as tidy records (fig3/fig14 input).

    Streams are keyed by ("section6", rule, σ, B, rep, world), so a cell's numbers do not depend on which
    other cells run. Columns: rule, sigma, batch_size, step, rep, epsilon_audit, mu, threshold, fpr, fnr,
    fpr_upper, fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, epsilon_upper,
    runs_per_world, audit_mode, confidence, delta, clip_norm, switch_point.
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
            mode=mode,
            selection_fraction=selection_fraction,
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
