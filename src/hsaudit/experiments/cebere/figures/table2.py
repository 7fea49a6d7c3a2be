"""Table 2 of Cebere et al.: the hyper-parameters that ran, generated from the plan, never typed.

The rows come from the plan (:func:`hsaudit.experiments.cebere.plan.hyperparameters`, computed when the workflow
is parsed, cheaply: no model is built); the Table 2 job adds each model's parameter count and loss
(:func:`with_model_facts`, which builds the model) and writes the table (:func:`write_table2`). No training job
imports this module: a Table 2 edit retrains nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.engine.models import model_spec
from hsaudit.util.io import write_text_atomic

# Row order and labels of Table 2; keys not listed follow in the order first seen, labelled by their name.
TABLE2_FIELDS = {
    "dataset": "Dataset",
    "model": "Model",
    "figures": "Figures",
    "trainable_params": "Trainable params",
    "loss": "Loss function",
    "batch_size": "Batch size",
    "lr": "Learning rate (η)",
    "noise_multiplier": "Noise multiplier (σ)",
    "clip_norm": "Clipping norm (C)",
    "period": "Periodicity (k)",
    "steps": "Steps (T)",
    "runs": "Auditing runs (R)",
    "delta": "Failure probability (δ)",
    "confidence": "Confidence",
    "threshold_rule": "Threshold rule",
    "repetitions": "Repetitions",
    "data_source": "Data source",
}


def _cell(value: Any) -> str:
    """One Table 2 cell: lists as "a, b", floats in the shortest form (0.01, 1e-05), the rest as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, Sequence | set | tuple | np.ndarray):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def _present(value: Any) -> bool:
    """Whether a cell of the table holds a value (a family without a key has NaN there)."""
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def write_table2(table: pd.DataFrame, *, pdf: str, csv: str, facts: Mapping[str, Any]) -> pd.DataFrame:
    """Table 2 of Cebere et al.: the hyper-parameters that ran, from the resolved configuration, never typed.

    Markdown as in the paper (one row per hyper-parameter, one column per experiment family, headed by model
    and figures) with a provenance line; CSV tidy (one row per family, one column per key, plus scale).
    Rows follow :data:`TABLE2_FIELDS`, then any other key in the order first seen; a family without a key
    shows "–". Lists are written "1, 2, 4", floats in their shortest form.

    Args:
        table: one row per experiment family (dataset, model, figures, batch_size, lr, noise_multiplier,
            clip_norm, period, steps, runs, delta, repetitions, data_source, ... as the workflow resolved them;
            list-valued cells where a family ran several values).
        pdf: the Markdown table; csv: the tidy table (both written atomically).
        facts: ``scale``, ``code_version`` (optional).

    Returns:
        The CSV table (cells as written).

    Raises:
        ValueError: an empty table.
    """
    from hsaudit.experiments.plotting import footer_text
    from hsaudit.util.io import write_csv_atomic

    if table.empty:
        raise ValueError("write_table2 needs at least one experiment family")
    families = [{k: v for k, v in row.items() if _present(v)} for row in table.to_dict("records")]
    keys = [k for k in TABLE2_FIELDS if any(k in f for f in families)]
    keys += list(dict.fromkeys(k for f in families for k in f if k not in TABLE2_FIELDS))
    cells = pd.DataFrame([{k: _cell(f[k]) if k in f else "" for k in keys} for f in families])
    heads = []
    for i, f in enumerate(families):
        name = model_spec(f["model"]).label if "model" in f else f"family {i + 1}"
        heads.append(f"{name} ({_cell(f['figures'])})" if "figures" in f else name)
    lines = ["| Hyper-parameter | " + " | ".join(heads) + " |", "|---|" + "---|" * len(heads)]
    for k in keys:
        values = [(c if c != "" else "–").replace("|", "\\|") for c in cells[k]]
        lines.append(f"| {TABLE2_FIELDS.get(k, k)} | " + " | ".join(values) + " |")
    provenance = footer_text(scale=facts["scale"], code_version=facts.get("code_version", ""))
    text = "Table 2: hyper-parameters used per experiment family (generated from the configuration that ran).\n\n"
    text += "\n".join(lines) + f"\n\n{provenance}\n"
    write_text_atomic(pdf, text)
    out = cells.assign(scale=facts["scale"])
    write_csv_atomic(out, csv)
    return out


def with_model_facts(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A :func:`hsaudit.experiments.cebere.plan.hyperparameters` mapping with ``model_kwargs`` replaced, in place, by the model's trainable
    parameter count and its loss (the model is built: this imports torch)."""
    from hsaudit.engine.models import count_parameters, spec_of

    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key != "model_kwargs":
            out[key] = value
            continue
        spec = spec_of(entry)
        out["trainable_params"] = count_parameters(spec.build())
        out["loss"] = {"bce": "binary cross-entropy", "ce": "cross-entropy"}[spec.loss]
    return out
