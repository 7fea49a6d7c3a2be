"""Table 2 of Cebere et al.: the hyper-parameters that ran, generated from the experiment plans, never typed.

Apart from :mod:`hsaudit.experiments.cebere.plan` because the training jobs import the plan: a Table 2 edit must not
change their code version (docs/cluster.md, "Partial reruns"). :func:`hyperparameters` runs when the workflow is
parsed (cheap: no model is built); :func:`with_model_facts` adds each model's parameter count and loss in the
Table 2 job (it builds the model, which imports torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hsaudit.experiments.cebere.plan import ExperimentPlan, model_kwargs, total_steps

__all__ = ["hyperparameters", "with_model_facts"]


def hyperparameters(plan: ExperimentPlan, *, audit: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The hyper-parameters that a plan's audits run with, one mapping per model (Cebere et al. Table 2).

    Values that differ between the model's series (e.g. C ∈ {1, 2, 4}, k ∈ {1, 5, 25}) are listed; ``audit`` is
    the config's ``audit`` section (δ, confidence, mode). Generated from the plan, never typed. Each mapping
    carries ``model_kwargs``, which :func:`with_model_facts` turns into the parameter count and loss: that needs
    torch and the model built, so the Table 2 job does it, not the workflow's parse (which it cost 2 s).
    """
    by_model: dict[str, dict[str, Any]] = {}
    for figure, series in plan.values.items():
        for values in series:
            model = values["model"]
            row = by_model.setdefault(model, {"dataset": plan.family, "model": model, "figures": [], "_v": {}})
            if figure not in row["figures"]:
                row["figures"].append(figure)
            for name in ("batch_size", "lr", "noise_multiplier", "clip_norm", "period", "runs", "repetitions"):
                row["_v"].setdefault(name, []).append(values[name])
            row["_v"].setdefault("steps", []).append(total_steps(values))
    out = []
    for model, row in by_model.items():
        kwargs = model_kwargs(next(v for s in plan.values.values() for v in s if v["model"] == model))
        entry = {
            "dataset": row["dataset"],
            "model": model,
            "figures": row["figures"],
            "model_kwargs": kwargs,
        }
        for name, seen in row["_v"].items():
            distinct = sorted(set(seen))
            entry[name] = distinct[0] if len(distinct) == 1 else distinct
        entry.update({"delta": audit["delta"], "confidence": audit["confidence"], "audit_mode": audit["mode"]})
        out.append(entry)
    return out


def with_model_facts(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A :func:`hyperparameters` mapping with ``model_kwargs`` replaced, in place, by the model's trainable
    parameter count and its loss (the model is built: this imports torch)."""
    from hsaudit.engine.models import build_model, count_parameters, loss_name

    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key != "model_kwargs":
            out[key] = value
            continue
        model = entry["model"]
        out["trainable_params"] = count_parameters(build_model(model, **value))
        out["loss"] = {"bce": "binary cross-entropy", "ce": "cross-entropy"}[loss_name(model, **value)]
    return out
