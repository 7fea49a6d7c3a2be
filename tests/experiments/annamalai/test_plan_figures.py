"""The Annamalai plan (hsaudit.experiments.annamalai.plan) and figure registry: jobs counted from the config,
the fig2 variants, and every figure drawn through ``fn(table, *, pdf, csv, facts)``."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, check_pdf
from hsaudit.experiments.annamalai import figures
from hsaudit.experiments.annamalai.plan import BASE_RULES, plan, variants
from hsaudit.pipeline.config import resolve_scale


@pytest.fixture(scope="module")
def raw_config():
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def resolved(raw, scale="paper", **fig2):
    config = copy.deepcopy(raw)
    config["scale"] = scale
    config = resolve_scale(config)
    config["annamalai"]["fig2"].update(fig2)
    return config


@pytest.mark.parametrize("scale", ["paper", "laptop", "smoke"])
def test_plan_counts_every_job_from_the_config(raw_config, scale):
    config = resolved(raw_config, scale)
    an = config["annamalai"]
    p = plan(config)
    settings, epsilons = len(an["fig2"]["settings"]), len(an["fig2"]["epsilons"])
    assert len(p.tables) == settings
    assert len(p.audits) == settings * epsilons * len(variants(an))
    assert set(p.audit_tables.values()) == set(p.tables)
    assert p.populations == () and [t.id for t in p.targets] == ["annamalai/fig1", "annamalai/fig2"]
    assert all(t.kind == "cpu" and not t.trained for t in p.targets)
    assert list(p.figures["fig2"].inputs) == [f"results/annamalai/audit/{a}.csv" for a in p.audits]
    # every audit job simulates the (q, T) of the table it reads its σ from
    for name, job in p.audits.items():
        table = p.tables[p.audit_tables[name]]
        assert (job["simulation"]["steps"], job["construction"]["sampling_rate"]) == (table["steps"],
                                                                                     table["sampling_rate"])
        assert job["audit"]["steps"] == job["simulation"]["steps"]
        assert job["simulation"]["runs"] == an["runs_per_world"] and job["simulation"]["seed"] == config["seed"]


def test_fig2_variants_follow_the_switches(raw_config):
    """The configured (update, base) pair; the literal update (descent) only beside ascent; the other base rule."""
    config = resolved(raw_config)
    base = config["annamalai"]["encoding"]["base_rule"]
    other = next(b for b in BASE_RULES if b != base)
    assert variants(config["annamalai"]) == [("ascent", base), ("descent", base), ("ascent", other)]
    assert variants(resolved(raw_config, show_literal=False, compare_base_rules=False)["annamalai"]) == [
        ("ascent", base)]
    p = plan(config)
    ideal = {name for name, job in p.audits.items() if job["simulation"]["ideal_reference"]}
    assert ideal == {name for name in p.audits if name.endswith(f"_ascent_{base}")}
    # the sensitivity floors are audited for the ascent update only
    floors = {name: job["audit"]["tail_floors"] for name, job in p.audits.items()}
    assert all(f == [config["annamalai"]["tail_floor"]] for n, f in floors.items() if "_descent_" in n)
    assert all(len(f) > 1 for n, f in floors.items() if "_ascent_" in n)
    assert p.figures["fig2"].facts == {"scale": "paper", "tail_floor": config["annamalai"]["tail_floor"],
                                       "base_rule": base}  # fmt: skip


def test_every_figure_draws_through_the_registry(tmp_path):
    assert set(figures.FIGURES) == {"fig1", "fig2"}
    rng = np.random.default_rng(0)
    rows = []
    for eps in (1.0, 4.0):
        for rep in range(2):
            for method, floor in (("paper", 0.01), ("clopper_pearson", np.nan), ("clopper_pearson_held_out", np.nan)):
                rows.append({"repetition": rep, "method": method, "tail_floor": floor,
                             "epsilon_emp": float(rng.uniform(0, eps)), "wrap_rate_out": 0.0, "wrap_rate_in": 0.0,
                             "sampling_rate": 0.1, "steps": 20, "noise_multiplier": 4.0 / eps, "update": "ascent",
                             "base_rule": "half_width", "encoding_base": 100.0, "confidence": 0.95,
                             "runs_per_world": 50, "epsilon": eps})  # fmt: skip
    audits = pd.DataFrame(rows)
    facts = {"scale": "smoke", "code_version": "abc", "tail_floor": 0.01, "base_rule": "half_width"}
    figures.FIGURES["fig2"](audits, pdf=tmp_path / "f.pdf", csv=tmp_path / "f.csv", facts=facts)
    check_pdf(tmp_path / "f.pdf")
    csv = pd.read_csv(tmp_path / "f.csv")
    paper = csv[(csv.method == "paper") & (csv.epsilon == 4.0)]
    expected = audits[(audits.method == "paper") & (audits.epsilon == 4.0)]["epsilon_emp"]
    assert paper["mean"].item() == pytest.approx(expected.mean()) and paper["n"].item() == 2
    assert facts == {"scale": "smoke", "code_version": "abc", "tail_floor": 0.01, "base_rule": "half_width"}
