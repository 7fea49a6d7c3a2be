"""Steinke, Nasr et al. Table 1 (the accounting and audit side): σ per batch size, and the table.

:func:`privacy_plan` turns a row (B, and σ or a target heuristic ε) into (q, T, σ) once the number N of training
blocks is known: q = B/N, T = round(epochs · N/B) (App. D: "2 epochs ... for text"), and, without an explicit σ,
the σ whose heuristic ε_{T,q,σ}(δ) (Theorem 1) is the row's target (App. D: "calculating the noise parameters
required to achieve a similar privacy guarantee based on our heuristic"). :func:`table1` audits the trained shards
of :mod:`hsaudit.experiments.steinke.language` with Figure 2's audits (:func:`hsaudit.experiments.steinke.trained_audit.fig2_table`:
σ̂ last-iterate audit under the paper's rule and held out, GDP audit, heuristic and standard ε) at the row's T and
adds the final models' held-out perplexity.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from hsaudit.accounting import last_iterate as H
from hsaudit.experiments.steinke.trained_audit import METHODS, paper_value, table_row

TABLE1_COLUMNS = (
    "batch_size",
    "sampling_rate",
    "noise_multiplier",
    "steps",
    *METHODS,
    "perplexity_mean",
    "perplexity_sd",
    "n_train",
    "n_eval",
    "delta",
    "confidence",
    "gdp_mode",
    "runs_per_world",
    "score",
    "model",
    "data_source",
    "mean_out",
    "mean_in",
    "inclusions_in",
    "paper_heuristic",
    "paper_standard",
    "paper_perplexity",
    "paper_empirical",
)


def training_steps(*, epochs: float, n_train: int, batch_size: int) -> int:
    """T = max(1, round(epochs · N / B)): the steps of ``epochs`` passes over N examples at expected batch B."""
    return max(1, int(round(float(epochs) * int(n_train) / int(batch_size))))


def privacy_plan(
    rows: Sequence[Mapping[str, object]], *, n_train: int, epochs: float, delta: float
) -> list[dict[str, float]]:
    """(q, T, σ, heuristic ε) of every row for a training set of ``n_train`` examples.

    Args:
        rows: ``batch_size`` and either ``noise_multiplier`` or ``heuristic_epsilon`` (the calibration target).
        n_train: N.
        epochs: passes over the data; T = max(1, round(epochs · N / B)).
        delta: δ of the heuristic.

    Raises:
        ValueError: B > N, or a target the calibration cannot reach.
    """
    out = []
    for i, row in enumerate(rows):
        b = int(row["batch_size"])
        if not 1 <= b <= n_train:
            raise ValueError(f"table1 row {i}: batch_size must be in [1, N = {n_train}], got {b}")
        q, steps = b / n_train, training_steps(epochs=epochs, n_train=n_train, batch_size=b)
        kw = dict(steps=steps, sampling_rate=q)
        if row.get("noise_multiplier") is not None:
            sigma = float(row["noise_multiplier"])
        else:
            target = float(row["heuristic_epsilon"])
            sigma = H.calibrate(lambda s: H.heuristic_epsilon(delta, noise_multiplier=s, **kw), target,
                                lo=0.05, hi=1000.0, start=1.0, what=f"table1 row {i} noise multiplier")
        out.append({"batch_size": b, "sampling_rate": q, "steps": steps, "noise_multiplier": sigma,
                    "heuristic": H.heuristic_epsilon(delta, noise_multiplier=sigma, **kw)})
    return out


def table1(
    rows: Sequence[Mapping[str, object]],
    *,
    delta: float,
    confidence: float,
    mode: str = "paper",
    seed: int,
    model: str = "",
    score: str = "gradient",
    value_discretization_interval: float = 1e-3,
) -> pd.DataFrame:
    """Table 1 of Steinke, Nasr et al.: per batch size, heuristic and standard ε, the final models' held-out
    perplexity (mean ± sd over both worlds) and the empirical ε of the unused-token canary at the row's T.

    Args:
        rows: per row ``shards`` (:func:`hsaudit.experiments.steinke.language.train_table1_shard` outputs),
            ``noise_multiplier``, ``steps`` and optionally ``paper`` = ``{heuristic, standard, perplexity,
            empirical}`` and ``data_source``.
        delta, confidence, mode, seed, value_discretization_interval: as
            :func:`hsaudit.experiments.steinke.trained_audit.fig2_table`.
        model, score: recorded in every row.

    Returns:
        One row per input row with :data:`TABLE1_COLUMNS`.
    """
    out = []
    for i, row in enumerate(rows):
        data, audit, common = table_row(row, i, table="table1", delta=delta, confidence=confidence, mode=mode,
                                        seed=seed, model=model, paper_keys=("heuristic", "standard", "perplexity",
                                                                            "empirical"),
                                        value_discretization_interval=value_discretization_interval)
        ppl = [float(v) for s in row["shards"] for v in s["perplexity"]]
        first = audit.iloc[0]
        out.append({
            **common,
            "perplexity_mean": float(pd.Series(ppl).mean()),
            "perplexity_sd": float(pd.Series(ppl).std(ddof=1)) if len(ppl) > 1 else math.nan,
            "n_train": int(data["n_train"]),
            "n_eval": int(row["shards"][0]["n_eval"]),
            "score": score,
            "mean_out": float(first["mean_out"]),
            "mean_in": float(first["mean_in"]),
            "inclusions_in": float(first["inclusions_in"]),
        })
    return pd.DataFrame(out, columns=list(TABLE1_COLUMNS))


def table1_markdown(table: pd.DataFrame, *, footer: str) -> str:
    """Table 1 as Markdown: the paper's columns (batch size, heuristic ε, standard ε, perplexity, empirical ε) with
    its printed values in parentheses where given, then ``footer``."""

    paper = paper_value
    lines = [
        "| Batch size | q | σ | T | Heuristic ε (paper) | Standard ε (paper) | Perplexity, mean ± sd (paper) "
        "| Empirical ε: σ̂ audit, paper rule / held-out (paper) | Empirical ε: GDP audit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table.itertuples(index=False):
        lines.append(
            f"| {r.batch_size} | {r.sampling_rate:.4g} | {r.noise_multiplier:.4g} | {r.steps} "
            f"| {r.heuristic:.2f}{paper(r.paper_heuristic, '{:.1f}')} "
            f"| {r.standard:.2f}{paper(r.paper_standard, '{:g}')} "
            f"| {r.perplexity_mean:.4g} ± {r.perplexity_sd:.2g}{paper(r.paper_perplexity, '{:g}')} "
            f"| {r.empirical_sigma_last_iterate:.2f} / {r.empirical_sigma_last_iterate_held_out:.2f}"
            f"{paper(r.paper_empirical, '{:g}')} | {r.empirical_gdp:.2f} |"
        )
    return "\n".join(lines) + f"\n\n{footer}\n"


__all__ = ["TABLE1_COLUMNS", "privacy_plan", "table1", "table1_markdown", "training_steps"]
