"""Steinke, Nasr et al. Figure 2 (the audit side): ε̂ per T from the trained shards of
:mod:`hsaudit.papers.steinke.trained`, beside the heuristic and standard accounting.

Per T, the scores after step T of the two worlds go through the one auditor (:class:`hsaudit.audit.auditor.Auditor`):

* ``empirical_sigma_last_iterate`` — §3.1's audit: the adversary knows q and T and estimates σ (σ̂ = the largest σ
  whose last-iterate pair (Theorem 1) is consistent with every CP-bounded (FPR, FNR) point; ε̂ = heuristic ε(σ̂));
  the paper's rule (all thresholds, ``audit_mode: all_thresholds``), which is *not* a valid 95 % bound;
* ``empirical_sigma_last_iterate_held_out`` — the same with one threshold chosen on half of the runs and its CP point
  from the other half (valid);
* ``empirical_gdp`` — the GDP audit of Nasr et al. 2023 (threshold rule ``mode``);
* ``heuristic`` and ``standard`` — :func:`hsaudit.accounting.last_iterate.heuristic_epsilon` and
  :func:`~hsaudit.accounting.last_iterate.standard_epsilon` at (T, q, σ).

Score diagnostics per world (mean, variance, mean number of canary inclusions) are in every row: under the zero
background they must match :func:`hsaudit.papers.steinke.trained.zero_background_moments`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.audit.auditor import Auditor, HeldOut, KnownFamily, rule_from_mode
from hsaudit.util.seeding import derive_seed

METHODS = (
    "standard",
    "heuristic",
    "empirical_sigma_last_iterate",
    "empirical_sigma_last_iterate_held_out",
    "empirical_gdp",
)
COLUMNS = (
    "steps",
    "method",
    "epsilon",
    "mu",
    "sigma_hat",
    "audit_mode",
    "confidence",
    "delta",
    "sampling_rate",
    "noise_multiplier",
    "runs_per_world",
    "model",
    "background",
    "data_source",
    "canary_dim",
    "mean_out",
    "var_out",
    "mean_in",
    "var_in",
    "inclusions_in",
)


def merge_shards(shards: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate shards (``bits``, ``scores [m, T]``, ``canary_steps``); the scalars must agree.

    Raises:
        ValueError: no shards, or shards of different runs (canary coordinate, q, steps).
    """
    if not shards:
        raise ValueError("no shards to merge")
    first = shards[0]
    for s in shards[1:]:
        for k in ("canary_dim", "sampling_rate", "batch_size", "n_train"):
            if float(s[k]) != float(first[k]):
                raise ValueError(f"shards disagree on {k}: {s[k]} vs {first[k]}")
        if s["scores"].shape[1] != first["scores"].shape[1]:
            raise ValueError("shards disagree on the number of steps")
    out = {k: np.concatenate([s[k] for s in shards]) for k in ("bits", "scores", "canary_steps")}
    out.update({k: first[k] for k in ("canary_dim", "sampling_rate", "batch_size", "n_train", "parameters")})
    return out


def fig2_table(
    shards: Sequence[Mapping[str, np.ndarray]],
    *,
    steps: Sequence[int],
    noise_multiplier: float,
    delta: float,
    confidence: float,
    mode: str = "paper",
    seed: int,
    model: str = "",
    background: str = "natural",
    data_source: str = "",
    value_discretization_interval: float = 1e-3,
) -> pd.DataFrame:
    """Figure 2's table: per T (≤ the shards' T_max), the accounting and the empirical audits (module docstring).

    Args:
        shards: the outputs of :func:`hsaudit.papers.steinke.trained.train_fig2_shard` (or their saved arrays).
        steps: the T values to audit (1-based; scores after step T).
        noise_multiplier: σ of the training.
        delta, confidence: δ of every ε and the one-sided CP confidence.
        mode: the GDP audit's threshold rule (``paper``, ``held-out``, ...; :func:`hsaudit.audit.auditor.rule_from_mode`).
        seed: seeds the held-out splits.
        model, background, data_source: recorded in every row (the figure's footer names them).
        value_discretization_interval: of the standard accounting's PLD.

    Returns:
        One row per (T, method) with :data:`COLUMNS`; higher score ⇒ canary present throughout.

    Raises:
        ValueError: a T beyond the trained steps, or a world without runs.
    """
    data = merge_shards(shards)
    scores, bits, included = data["scores"], data["bits"].astype(bool), data["canary_steps"]
    q, sigma = float(data["sampling_rate"]), float(noise_multiplier)
    if (~bits).sum() == 0 or bits.sum() == 0:
        raise ValueError("both worlds need runs")
    rows = []
    nan = math.nan
    for t in sorted({int(s) for s in steps}):
        if not 1 <= t <= scores.shape[1]:
            raise ValueError(f"T = {t} is outside the trained steps 1..{scores.shape[1]}")
        out, inn = scores[~bits, t - 1], scores[bits, t - 1]
        base = {
            "steps": t,
            "confidence": confidence,
            "delta": delta,
            "sampling_rate": q,
            "noise_multiplier": sigma,
            "runs_per_world": int(min(out.size, inn.size)),
            "model": model,
            "background": background,
            "data_source": data_source,
            "canary_dim": int(data["canary_dim"]),
            "mean_out": float(out.mean()),
            "var_out": float(out.var(ddof=1)) if out.size > 1 else nan,
            "mean_in": float(inn.mean()),
            "var_in": float(inn.var(ddof=1)) if inn.size > 1 else nan,
            "inclusions_in": float(included[bits, :t].sum(axis=1).mean()),
        }

        def row(method, epsilon, *, mu=nan, sigma_hat=nan, audit_mode="none"):
            return {**base, "method": method, "epsilon": float(epsilon), "mu": mu, "sigma_hat": sigma_hat,
                    "audit_mode": audit_mode}

        kw = dict(steps=t, sampling_rate=q, noise_multiplier=sigma)
        rows.append(row("standard", H.standard_epsilon(delta, value_discretization_interval=value_discretization_interval, **kw)))
        rows.append(row("heuristic", H.heuristic_epsilon(delta, **kw)))
        known = KnownFamily(family="last_iterate", **kw)
        paper = Auditor(delta=delta, confidence=confidence).known_family(out, inn, known)
        rows.append(row("empirical_sigma_last_iterate", paper["epsilon"], sigma_hat=paper["sigma_hat"],
                        audit_mode="all_thresholds"))
        rule = HeldOut(seed=derive_seed(seed, "steinke-fig2-select", t))
        held = Auditor(delta=delta, confidence=confidence, rule=rule).known_family(out, inn, known)
        rows.append(row("empirical_sigma_last_iterate_held_out", held["epsilon"], sigma_hat=held["sigma_hat"],
                        audit_mode="held_out"))
        gdp = Auditor(delta=delta, confidence=confidence, rule=rule_from_mode(mode)).gdp(out, inn)
        rows.append(row("empirical_gdp", gdp.epsilon, mu=max(float(gdp.mu), 0.0), audit_mode=mode))
    return pd.DataFrame(rows, columns=list(COLUMNS))


__all__ = ["COLUMNS", "METHODS", "fig2_table", "merge_shards"]
