"""Housing audits (fig1c, fig4, fig7): plan and audit keys, shards, tables, figure, and the workflow end to end.

The end-to-end tests run the real workflow at smoke scale on a small synthetic Housing-format CSV, in a private
copy of the workflow (tests/conftest.py), and check that raising R only adds shards and that changing fig7's
parameters leaves fig1c's jobs alone.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import REPO, configure_housing as configure, copy_built, job_counts, package_env, run_snakemake
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.config import resolve_scale
from hsaudit.experiments.cebere.audit import audit_table, scores_matrix
from hsaudit.experiments.cebere.scores import scores_table
from hsaudit.experiments.cebere.figures.housing import figure_table, plot_housing, summarise
from hsaudit.experiments.cebere.plan import plan_dataset
from hsaudit.experiments.cebere.train.shards import noise_key, save_shard, shard_bits

SEED = 2024


@pytest.fixture(scope="module")
def housing() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return config["housing"]


def plan_housing(section, *, seed):
    return plan_dataset(section, seed=seed, dataset="housing")


def keys(plan, figure, adversary=None):
    return {r.key for r in plan.figures[figure] if adversary is None or r.adversary == adversary}


# ------------------------------------------------------------------------------------------------------ plan


def test_figures_share_the_audits_they_have_in_common(housing):
    plan = plan_housing(housing, seed=SEED)
    reps = housing["repetitions"]
    for adversary in ("gc_r", "label_flip"):
        shared = keys(plan, "fig1c", adversary)
        assert len(shared) == reps
        assert shared == keys(plan, "fig4", adversary) == keys(plan, "fig7", adversary)
    assert keys(plan, "fig1c", "gc_s_noiseless_ps") == keys(plan, "fig4", "gc_s_noiseless_ps")
    # 3 + 6 + 3 adversaries with gc_r, label_flip, gc_s_noiseless_ps shared: 7 distinct, each per repetition.
    assert len(plan.audits) == 7 * reps
    # All adversaries of a repetition share one setup (θ0, batches); each repetition has its own.
    assert len(plan.setups) == reps


def test_key_covers_every_result_parameter_but_not_r(housing):
    base = plan_housing(housing, seed=SEED)
    for change in ({"lr": 0.01}, {"noise_multiplier": 2.0}, {"steps": 100}, {"batch_size": 200},
                   {"clip_norm": 2.0}, {"period": 5}, {"model_variant": "8-6-2"}):
        changed = plan_housing({**housing, **change}, seed=SEED)
        assert not keys(base, "fig1c") & keys(changed, "fig1c"), change
    assert not keys(base, "fig1c") & keys(plan_housing(housing, seed=SEED + 1), "fig1c")
    data = copy.deepcopy(housing["data"])
    data["threshold"] = 2.0
    assert not keys(base, "fig1c") & keys(plan_housing({**housing, "data": data}, seed=SEED), "fig1c")
    # R, the shard size, the device and the cache directory do not change an audit's key.
    same = plan_housing({**housing, "runs": 10000, "device": "cpu", "data": {**housing["data"], "data_dir": "x"}},
                        seed=SEED)
    assert keys(same, "fig4") == keys(base, "fig4")
    assert {r.run_dir for r in same.figures["fig4"]} == {"R10000-s500"}


def test_simulations_only_change_the_noisy_simulation_audits(housing):
    base = plan_housing(housing, seed=SEED)
    more = plan_housing({**housing, "simulations": 8}, seed=SEED)
    for adversary in ("gc_r", "gc_s_noiseless_ps", "gc_s_noiseless_fm", "label_flip"):
        assert keys(base, "fig4", adversary) == keys(more, "fig4", adversary)
    for adversary in ("gc_s_noisy_ps", "gc_s_noisy_fm"):
        assert not keys(base, "fig4", adversary) & keys(more, "fig4", adversary)


def test_per_figure_override_changes_only_that_figure(housing):
    base = plan_housing(housing, seed=SEED)
    figures = copy.deepcopy(housing["figures"])
    figures["fig7"]["lr"] = 0.01
    changed = plan_housing({**housing, "figures": figures}, seed=SEED)
    assert keys(changed, "fig1c") == keys(base, "fig1c")
    assert keys(changed, "fig4") == keys(base, "fig4")
    assert not keys(changed, "fig7") & keys(base, "fig7")
    assert changed.values["fig7"][0]["lr"] == 0.01 and changed.values["fig1c"][0]["lr"] == housing["lr"]


def test_housing_keys_survive_the_generic_plan(housing):
    """The Housing plan became the dataset-generic hsaudit.experiments.cebere.plan (CIFAR-10
    issue): every Housing audit and setup keeps the key it had, so no finished Housing population is retrained.
    The digests below were computed with the pre-move code (commit 5476ed3) from config/config.yaml."""
    import hashlib

    plan = plan_housing(housing, seed=SEED)
    assert sorted(plan.setups) == ["2a8e6ca5e610", "531e9eaa8733", "59a08165aa98", "cd39fe8a8b8d", "e44faad36989"]
    assert len(plan.audits) == 35
    digest = hashlib.sha256(",".join(sorted(plan.audits)).encode()).hexdigest()[:16]
    assert digest == "56efd63b89274650"


@pytest.mark.parametrize(
    ("change", "needle"),
    [({"runs": 5001}, "runs"), ({"period": 300}, "period"), ({"shard_size": 7, "runs": 7}, "shard_size")],
)
def test_inconsistent_values_are_rejected_naming_the_key(housing, change, needle):
    with pytest.raises(ValueError, match=needle):
        plan_housing({**housing, **change}, seed=SEED)


def test_schema_rejects_bad_housing_values_naming_the_key():
    from hsaudit.pipeline.config import config_errors

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    schema = str(REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert config_errors(config, schema) == []
    for key, value in [("noise_multiplier", -1.0), ("shard_size", 3), ("model_variant", "8-4-1"),
                       ("device", "tpu"), ("lrr", 0.1)]:
        bad = copy.deepcopy(config)
        bad["housing"][key] = value
        errors = "\n".join(config_errors(bad, schema))
        assert errors and (f"housing.{key}" in errors or f"'{key}'" in errors), (key, errors)
    bad = copy.deepcopy(config)
    bad["housing"]["figures"]["fig7"]["adversaries"] = ["gc_r", "canary"]
    assert "housing.figures.fig7.adversaries.1" in "\n".join(config_errors(bad, schema))
    bad = copy.deepcopy(config)
    bad["housing"]["data"]["threshold"] = "mean"
    assert "housing.data.threshold" in "\n".join(config_errors(bad, schema))


# ---------------------------------------------------------------------------------------------------- shards


def test_shard_bits_are_an_exact_seeded_half_split():
    a = shard_bits(seed=1, key="abc", shard_size=500, index=3, dataset="housing")
    assert a.sum() == 250 and set(np.unique(a)) == {0, 1}
    np.testing.assert_array_equal(a, shard_bits(seed=1, key="abc", shard_size=500, index=3, dataset="housing"))
    assert not np.array_equal(a, shard_bits(seed=1, key="abc", shard_size=500, index=4, dataset="housing"))
    assert not np.array_equal(a, shard_bits(seed=1, key="abd", shard_size=500, index=3, dataset="housing"))
    assert noise_key(seed=1, key="abc", dataset="housing") != noise_key(seed=1, key="abd", dataset="housing")
    with pytest.raises(ValueError, match="shard_size"):
        shard_bits(seed=1, key="abc", shard_size=5, index=0, dataset="housing")


def test_scores_table_numbers_runs_in_shard_order(tmp_path):
    steps = np.array([1, 2, 3])
    paths = []
    for index in range(2):
        bits = shard_bits(seed=0, key="k", shard_size=4, index=index, dataset="housing")
        scores = np.arange(12, dtype=float).reshape(4, 3) + 100 * index
        paths.append(tmp_path / f"{index}.npz")
        save_shard(paths[-1], bits=bits, scores=scores, steps=steps)
    table = scores_table(paths)
    assert list(table.columns) == ["run", "shard", "bit", "step", "score"]
    assert len(table) == 8 * 3 and table["run"].nunique() == 8
    got_steps, matrix, members = scores_matrix(table)
    np.testing.assert_array_equal(got_steps, steps)
    assert matrix.shape == (3, 8) and members.sum() == 4
    # Run 5 is shard 1's second model: its score at step 2 is 100 + 1·3 + 1.
    assert matrix[1, 5] == 104.0
    with pytest.raises(ValueError, match="shape"):
        save_shard(tmp_path / "bad.npz", bits=[0, 1], scores=np.zeros((2, 2)), steps=steps)


def test_audit_table_on_gaussian_scores_matches_the_calibration():
    # Ideal Gaussian scores N(0, 1) vs N(mu, 1) with mu = sqrt(250)/4, R = 5000 balanced: the spec's calibration
    # (specs/cebere.md §1, [derived]) expects eps_hat ≈ 23.2 ± 0.6 against the upper bound 24.00 at step 250.
    rng = np.random.default_rng(7)
    mu = np.sqrt(250) / 4
    runs, steps = 5000, np.array([125, 250])
    bits = np.repeat([0, 1], runs // 2)
    scores = rng.normal(size=(runs, 2)) + bits[:, None] * mu * np.sqrt(steps / 250)[None, :]
    table = pd.DataFrame({"run": np.repeat(np.arange(runs), 2), "shard": 0, "bit": np.repeat(bits, 2),
                          "step": np.tile(steps, runs), "score": scores.reshape(-1)})
    out = audit_table(table, delta=1e-5, confidence=0.95, rule=parse_rule("paper"), noise_multiplier=4.0, period=1)
    assert list(out["step"]) == [125, 250] and set(out["runs"]) == {runs}
    assert out["epsilon_upper"].iloc[1] == pytest.approx(24.00, abs=0.01)  # spec §1: 24.00 at 250 insertions
    assert abs(out["epsilon"].iloc[1] - 23.2) < 1.8
    assert (out["epsilon"] < out["epsilon_upper"] + 1.0).all()
    assert (out["epsilon_free"] <= out["epsilon"] + 1e-9).all()  # the GDP conversion is the tighter reading
    held = audit_table(table, delta=1e-5, confidence=0.95, rule=parse_rule("held-out"), noise_multiplier=4.0,
                       period=1, seed=3)
    assert set(held["threshold_rule"]) == {"held-out"} and held["epsilon"].iloc[1] < out["epsilon"].iloc[1]


# ---------------------------------------------------------------------------------------------------- figure


def synthetic_audit(rng, steps, level):
    from hsaudit.accounting import gdp_epsilon, gdp_mu

    mu_up = [gdp_mu(noise_multiplier=4.0, compositions=int(t)) for t in steps]
    return pd.DataFrame(
        {
            "step": steps,
            "insertions": steps,
            "runs": 40,
            "mu": level * np.sqrt(steps) + rng.normal(0, 0.01, steps.size),
            "epsilon": level * steps + rng.normal(0, 0.1, steps.size),
            "epsilon_free": 0.5 * level * steps,
            "mu_upper": mu_up,
            "epsilon_upper": [gdp_epsilon(mu=m, delta=1e-5) for m in mu_up],
            "threshold_rule": "paper",
            "confidence": 0.95,
            "delta": 1e-5,
        }
    )


def test_figure_csv_holds_every_plotted_number(tmp_path):
    rng = np.random.default_rng(0)
    steps = np.arange(1, 6)
    entries = [({"adversary": adv, "rep": rep, "key": f"{adv}{rep}"}, synthetic_audit(rng, steps, level))
               for adv, level in (("gc_r", 0.5), ("label_flip", 0.1)) for rep in range(3)]
    table = figure_table(entries)
    summary = plot_housing(table, pdf=tmp_path / "fig7.pdf", csv=tmp_path / "fig7.csv",
                           facts={"figure": "fig7", "scale": "smoke"})
    assert (tmp_path / "fig7.pdf").stat().st_size > 1000
    csv = pd.read_csv(tmp_path / "fig7.csv")
    for column in ("adversary", "step", "rep", "epsilon", "mu", "epsilon_upper", "threshold_rule", "runs", "epsilon_free"):
        assert column in csv.columns, column
    assert len(csv) == 2 * 3 * 5 and set(csv["scale"]) == {"smoke"}
    part = csv[(csv.adversary == "gc_r") & (csv.step == 3)]["epsilon"]
    row = summary[(summary.adversary == "gc_r") & (summary.step == 3)].iloc[0]
    assert row["mean"] == pytest.approx(part.mean()) and row["sd"] == pytest.approx(part.std(ddof=1))
    assert row["reps"] == 3
    assert summarise(table[table.rep == 0])["sd"].eq(0).all()


# ------------------------------------------------------------------------------------------------ end to end


TARGETS = ("results/fig1c.pdf", "results/fig4.pdf", "results/fig7.pdf")
# Dry runs below use the mtime and input triggers only: the audit keys (paths) already encode every parameter,
# and leaving out the params trigger keeps the checks meaningful while the package source (hence the code
# version in params) is being edited concurrently, e.g. in a shared development checkout.
DRY = ("-n", *TARGETS, "--rerun-triggers", "mtime", "input")


@pytest.mark.slow
@pytest.mark.xdist_group("housing")
def test_smoke_figures_end_to_end_then_reuse(housing_built, tmp_path, monkeypatch):
    from hsaudit.accounting import gdp_epsilon, gdp_mu

    # The session's build (conftest.housing_built: one repetition and one shard of 20; gathering several shards
    # is tested above and below), copied because the checks below edit the config.
    workdir = copy_built(housing_built, tmp_path / "work")
    monkeypatch.setenv("PYTHONPATH", package_env(workdir)["PYTHONPATH"])

    config = resolve_scale(yaml.safe_load((workdir / "config" / "config.yaml").read_text()))
    h = config["housing"]
    for figure, n_adv in (("fig1c", 3), ("fig4", 6), ("fig7", 3)):
        csv = pd.read_csv(workdir / "results" / f"{figure}.csv")
        assert (workdir / "results" / f"{figure}.pdf").stat().st_size > 1000
        assert csv["adversary"].nunique() == n_adv and csv["rep"].nunique() == h["repetitions"]
        assert set(csv["step"]) == set(range(1, h["steps"] + 1)) and set(csv["runs"]) == {h["runs"]}
        assert np.isfinite(csv["epsilon"]).all() and (csv["epsilon"] >= 0).all()
        assert set(csv["lr"]) == {h["lr"]} and set(csv["batch_size"]) == {h["batch_size"]}  # η, B on record
        for step, upper in csv.groupby("step")["epsilon_upper"].first().items():
            expected = gdp_epsilon(mu=gdp_mu(noise_multiplier=h["noise_multiplier"], compositions=step), delta=1e-5)
            assert upper == pytest.approx(expected, rel=1e-9)
    params = list((workdir / "results" / "housing" / "audits").glob("*/params.json"))
    assert len(params) == 7 * h["repetitions"]
    shards = list((workdir / "results" / "housing" / "audits").glob("*/shards/s20/*.npz"))
    assert len(shards) == 7 * h["repetitions"]

    # Nothing left to do.
    proc = run_snakemake(workdir, *DRY)
    assert job_counts(proc.stdout) == {}, proc.stdout

    # Raising R from 20 to 40 trains one new shard per audit and keeps the first.
    configure(workdir, repetitions=1, runs=40)
    proc = run_snakemake(workdir, *DRY)
    counts = job_counts(proc.stdout)
    n_audits = 7 * h["repetitions"]
    assert counts.get("train_shard") == n_audits, proc.stdout
    assert "craft_adversary" not in counts and "make_setup" not in counts and "prepare_data" not in counts
    assert counts.get("audit_epsilon") == n_audits and counts.get("extract_scores") == n_audits
    outputs = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip().startswith("output:")]
    new_shards = set(re.findall(r"shards/s20/(\d+)\.npz", "\n".join(outputs)))
    assert new_shards == {"1"}, new_shards

    # Changing fig7's learning rate reruns fig7's audits only.
    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    figures = config["housing"]["figures"]
    figures["fig7"]["lr"] = 0.05
    configure(workdir, repetitions=1, runs=20, figures=figures)
    proc = run_snakemake(workdir, *DRY)
    counts = job_counts(proc.stdout)
    assert "plot_cebere_fig1c" not in counts and "plot_cebere_fig4" not in counts, proc.stdout
    assert counts.get("plot_cebere_fig7") == 1
    assert counts.get("craft_adversary") == 3 * h["repetitions"]
    assert counts.get("train_shard") == 3 * h["repetitions"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("housing:\n  noise_multiplier: -1\n", "housing.noise_multiplier"),
        ("housing:\n  runs: 5001\n", "runs (5001) must be a multiple of shard_size"),
    ],
)
def test_workflow_refuses_bad_housing_config_naming_the_key(workflow_copy, override, needle):
    (workflow_copy / "bad.yaml").write_text(override)
    proc = run_snakemake(workflow_copy, "-n", "results/fig1c.pdf", "--configfile", "bad.yaml", check=False)
    assert proc.returncode != 0
    assert needle in proc.stdout + proc.stderr, proc.stdout + proc.stderr
