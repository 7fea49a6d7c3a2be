"""The audit side of the Section 6 process: the audit of every step (fig3, fig14) and the threshold search (fig6c).

:func:`audit_process` simulates both worlds and audits θ_t at every step (Cebere et al. Section 6, Algorithm 4);
:func:`threshold_search` is the T = 2 search over switch points of App. F (Algorithm 5), with the exact ε of
every candidate beside it (docs/section6.md).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import numpy.typing as npt
from scipy import special

from hsaudit.accounting.gaussian import gdp_epsilon
from hsaudit.audit.auditor import Auditor, Paper, parse_rule
from hsaudit.audit.two_sample import GdpTables, gdp_tables
from hsaudit.experiments.cebere.section6.exact import exact_epsilon_curve
from hsaudit.experiments.cebere.section6.process import Process, check_runs, iter_scores, world_rng


def audit_process(
    process: Process,
    *,
    runs_per_world: int,
    repetitions: int,
    seed: int,
    key: tuple = (),
    delta: float = 1e-5,
    confidence: float = 0.95,
    mode: str = "paper",
    selection_fraction: float = 0.5,
    tables: GdpTables | None = None,
    steps: list[int] | None = None,
) -> list[dict]:
    """Simulate both worlds ``repetitions`` times and audit θ_t at every step (or at ``steps``).

    Each repetition draws R = ``runs_per_world`` runs per world (an exact half split of 2R runs, b = 1 for the
    inserted world) from streams keyed by ``(*key, rep, world)``. In ``mode="paper"`` the fast exact audit
    :meth:`hsaudit.audit.auditor.Auditor.gdp_two_sample` is used; other modes go through
    :meth:`hsaudit.audit.auditor.Auditor.gdp` under the mode's rule.

    Args:
        process: the process.
        runs_per_world: R (≥ 1).
        repetitions: number of independent repetitions (≥ 1).
        seed: master seed.
        key: the experiment key the streams are derived from (e.g. (rule, σ, B)).
        delta: δ of the reported ε.
        confidence: Clopper–Pearson confidence.
        mode: audit mode ("paper", "held-out", "grid").
        selection_fraction: share of each class that selects the threshold (held-out and grid modes).
        tables: precomputed :func:`gdp_tables` for (R, R, confidence, δ) (paper mode only).
        steps: 1-based steps to audit (default all).

    Returns:
        One record (dict) per (rep, step): rep, step, epsilon_audit, mu, threshold, fpr, fnr, fpr_upper,
        fnr_upper, epsilon_assumption_free, epsilon_assumption_free_max, runs_per_world, audit_mode.
    """
    runs = check_runs(runs_per_world)
    if int(repetitions) != repetitions or repetitions < 1:
        raise ValueError(f"repetitions must be an integer >= 1, got {repetitions}")
    wanted = set(range(1, process.steps + 1) if steps is None else steps)
    if not wanted or min(wanted) < 1 or max(wanted) > process.steps:
        raise ValueError(f"steps must lie in 1..{process.steps}, got {sorted(wanted)}")
    if mode == "paper" and tables is None:
        tables = gdp_tables(runs, runs, confidence=confidence, delta=delta)
    if mode == "paper" and (tables.n0, tables.n1, tables.confidence, tables.delta) != (runs, runs, confidence, delta):
        raise ValueError("tables were built for other (n0, n1, confidence, delta)")
    auditor = Auditor(delta=delta, confidence=confidence, rule=Paper())
    records = []
    for rep in range(int(repetitions)):
        worlds = [iter_scores(process, runs=runs, inserted=bool(b), rng=world_rng(seed, *key, rep, b)) for b in (0, 1)]
        for step, (s, m) in enumerate(zip(*worlds), start=1):
            if step not in wanted:
                continue
            if mode == "paper":
                res = auditor.gdp_two_sample(s, m, tables)
            else:
                split = world_rng(seed, *key, rep, "split", step)
                rule = parse_rule(mode, selection_fraction=selection_fraction, seed=split)
                res = replace(auditor, rule=rule).gdp(s, m)
            row = {
                "epsilon_audit": res.epsilon,
                "mu": res.mu,
                "threshold": res.threshold,
                "fpr": res.fpr,
                "fnr": res.fnr,
                "fpr_upper": res.fpr_upper,
                "fnr_upper": res.fnr_upper,
                "epsilon_assumption_free": res.epsilon_assumption_free,
                # Only the two-sample search of the paper mode maximises the assumption-free bound too.
                "epsilon_assumption_free_max": getattr(res, "epsilon_assumption_free_max", np.nan),
            }
            records.append({"rep": rep, "step": step, **row, "runs_per_world": runs, "audit_mode": mode})
    return records


def alpha_grid(*, sigma: float, clip_norm: float, count: int) -> np.ndarray:
    """Type-I error grid of Cebere et al. Algorithm 5: linspace(0, Φ(C/(2σ²)), count)."""
    if int(count) != count or count < 2:
        raise ValueError(f"count must be an integer >= 2, got {count}")
    return np.linspace(0.0, float(special.ndtr(clip_norm / (2.0 * sigma**2))), int(count))


def switch_points(alphas: npt.ArrayLike, *, sigma: float, clip_norm: float) -> np.ndarray:
    """h_i = σC·Φ⁻¹(1 − α_i): the threshold of the level-α_i test of N(0, σ²C²) vs a larger mean (App. F).

    α = 0 gives h = +inf (a constant g, Example 1 of the paper).
    """
    a = np.asarray(alphas, dtype=float)
    if np.isnan(a).any() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"alphas must lie in [0, 1], got {a}")
    return sigma * clip_norm * special.ndtri(1.0 - a)


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
    mode: str = "paper",
    selection_fraction: float = 0.5,
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
    if mode == "paper" and tables is None:
        tables = gdp_tables(runs, runs, confidence=confidence, delta=delta)
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
            mode=mode,
            selection_fraction=selection_fraction,
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
