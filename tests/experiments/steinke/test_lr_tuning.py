"""Steinke et al. Table 2 with η tuned per row (steinke.table2.lr_grid; hsaudit.experiments.steinke.train.candidates
and hsaudit.experiments.steinke.train.tuning):
the selection rule, the validation split, the plan (the candidates exist exactly when the option is on, and the
option off changes no key), the candidates' and tuned shards' training, and the table's η columns."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from conftest import REPO
from hsaudit.engine.models import model_spec
from hsaudit.experiments.steinke.audit import TABLE2_LR_COLUMNS, table2, table2_lr, table2_markdown
from hsaudit.experiments.steinke.plan import RESULTS, plan, plan_fig2, plan_table2, plan_table2_candidates
from hsaudit.experiments.steinke.train.images import train_dirac_shard
from hsaudit.experiments.steinke.train.candidates import train_lr_candidate, validation_split
from hsaudit.experiments.steinke.train.tuning import select_lr, train_tuned_shard
from hsaudit.pipeline import costs
from hsaudit.pipeline.config import resolve_scale

pytestmark = pytest.mark.usefixtures("torch_one_thread")

MODEL = {"features": 8, "num_classes": 3}  # alexnet_head: one Linear 8 -> 3, a 3-class softmax
DATA, TEST = {"dataset": "toy"}, {"dataset": "toy", "split": "test"}
SECTION = dict(model="alexnet_head", model_kwargs=MODEL, backend="auto", lr=0.5, lr_grid=None, validation_size=40,
               tuning_models=3, clip_norm=1.0, canary_dim=None, models_per_world=4, shard_size=8,
               rows=[{"batch_size": 20, "noise_multiplier": 1.0, "steps": 5},
                     {"batch_size": 10, "noise_multiplier": 0.8, "steps": 10}])
IDS = dict(seed=1, data_identity=DATA)


def _data(n=200, seed=0):
    """Three separable classes in 8 dimensions (the class mean on one coordinate), so that η matters."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[np.arange(n), y] += 2.0
    return X, y


def _arch(spec):
    return model_spec(spec["model"], **(spec["model_kwargs"] or {}))


# ------------------------------------------------------------------------------------------------- selection


def test_select_lr_takes_the_best_mean():
    assert select_lr([0.1, 1.0, 10.0], [[0.5, 0.7], [0.8, 0.6], [0.2, 0.1]]) == 1  # means 0.6, 0.7, 0.15
    # the mean decides, not the best single model
    assert select_lr([0.1, 1.0], [[0.95, 0.05], [0.6, 0.6]]) == 1


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 2, 0]])
def test_select_lr_breaks_ties_to_the_smaller_lr_in_any_order(order):
    lrs = np.array([0.25, 0.5, 1.0])[order]
    acc = [np.array([0.7, 0.7]), np.array([0.6, 0.8]), np.array([0.5, 0.5])]  # 0.25 and 0.5 tie at 0.7
    acc = [acc[i] for i in order]
    assert lrs[select_lr(lrs, acc)] == 0.25


def test_select_lr_ranks_a_nan_mean_last_and_names_bad_input():
    assert select_lr([1.0, 2.0], [[np.nan, 0.9], [0.1, 0.1]]) == 1
    with pytest.raises(ValueError, match="one accuracy array per η"):
        select_lr([1.0, 2.0], [[0.5]])
    with pytest.raises(ValueError, match="distinct and positive"):
        select_lr([1.0, 1.0], [[0.5], [0.6]])
    with pytest.raises(ValueError, match="no models"):
        select_lr([1.0], [[]])


def test_validation_split_is_seeded_disjoint_and_complete():
    train, val = validation_split(100, 20, seed=3)
    assert len(val) == 20 and len(train) == 80 and not set(train) & set(val)
    assert sorted({*train, *val}) == list(range(100))
    again = validation_split(100, 20, seed=3)
    assert np.array_equal(train, again[0]) and np.array_equal(val, again[1])
    assert not np.array_equal(val, validation_split(100, 20, seed=4)[1])
    with pytest.raises(ValueError, match="validation_size"):
        validation_split(100, 100, seed=3)


# ------------------------------------------------------------------------------------------------------ plan


def test_off_leaves_every_key_as_before_and_plans_no_candidate():
    """lr_grid null: each row is the fig2-shaped population it always was (the key plan_fig2 gives), no candidate."""
    rows = plan_table2(SECTION, test_identity=TEST, **IDS)
    for row, population in zip(SECTION["rows"], rows):
        want = plan_fig2({**{k: SECTION[k] for k in ("model", "model_kwargs", "backend", "lr", "clip_norm",
                                                        "canary_dim", "models_per_world", "shard_size")},
                          "background": "natural", "batch_size": row["batch_size"],
                          "noise_multiplier": row["noise_multiplier"], "steps": [row["steps"]]},
                         test_identity=TEST, **IDS)
        assert population.key == want.key and population.spec["lr"] == 0.5 and "lr_tuning" not in population.spec
    assert plan_table2_candidates(SECTION, **IDS) == ((), ())


def test_on_plans_one_candidate_per_row_and_lr_and_a_row_of_its_own_lr_is_fixed():
    section = {**SECTION, "lr_grid": [1.0, 0.25, 0.5],
               "rows": [*SECTION["rows"], {"batch_size": 5, "noise_multiplier": 0.6, "steps": 20, "lr": 0.5}]}
    candidates = plan_table2_candidates(section, **IDS)
    assert [len(c) for c in candidates] == [3, 3, 0]
    assert [c.spec["lr"] for c in candidates[0]] == [0.25, 0.5, 1.0]  # ascending
    for row, cands in zip(section["rows"], candidates[:2]):
        for c in cands:
            assert c.root == f"{RESULTS}/lr_tuning/{c.key}" and c.paths == [f"{c.root}/shard0.npz"]
            assert (c.spec["batch_size"], c.spec["noise_multiplier"], c.spec["steps"]) == (
                row["batch_size"], row["noise_multiplier"], row["steps"])
            assert (c.spec["models"], c.spec["validation_size"]) == (3, 40)
    rows = plan_table2(section, test_identity=TEST, **IDS)
    off = plan_table2({**section, "lr_grid": None}, test_identity=TEST, **IDS)
    assert rows[0].spec["lr"] is None and rows[0].spec["lr_tuning"] == {"grid": [0.25, 0.5, 1.0],
                                                                         "validation_size": 40, "models": 3}
    assert rows[0].key != off[0].key and rows[1].key != off[1].key
    assert rows[2].key == off[2].key  # its own η: not tuned, the population it was
    # a candidate is keyed by its own values: adding an η to the grid adds one candidate and moves none
    more = plan_table2_candidates({**section, "lr_grid": [0.25, 0.5, 1.0, 2.0]}, **IDS)
    assert {c.key for c in candidates[0]} < {c.key for c in more[0]} and len(more[0]) == 4
    with pytest.raises(ValueError, match="lr_grid"):
        plan_table2_candidates({**section, "lr_grid": [0.5, 0.5]}, **IDS)


def _config(scale: str, **table2) -> dict:
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = resolve_scale({**raw, "scale": scale})
    config["steinke"]["table2"].update(table2)
    return config


@pytest.mark.parametrize("scale", ["paper", "laptop", "smoke"])
def test_the_plan_and_hsaudit_plan_price_the_candidates_exactly_when_on(scale):
    off = plan(_config(scale))
    assert not off.candidate_jobs and not off.tuned_jobs and not off.table2.candidate_paths
    assert not any("lr_tuning" in pop.root for pop in off.populations)
    grid = [0.25, 0.5, 1.0]
    config = _config(scale, lr_grid=grid)
    on = plan(config)
    t2 = on.section["table2"]
    rows = len(t2["rows"])
    assert len(on.candidate_jobs) == rows * len(grid) and len(on.tuned_jobs) == rows
    assert len(on.table2.candidate_paths) == rows * len(grid)
    # the tuned rows are trained by their own rule, not train_steinke_shard's
    assert not set(on.tuned_jobs) & set(on.jobs)
    assert {row.key for row in on.table2.rows} == set(on.tuned_jobs)
    for key, tuned in on.tuned_jobs.items():
        assert tuned.grid == tuple(grid) and len(tuned.candidates) == len(grid)
        assert tuned.job.spec["lr"] is None
    priced = {p.key[0]: p for p in costs.plan(["results/steinke/table2.md"], config).populations}
    for key, job in on.candidate_jobs.items():
        pop = priced[f"{RESULTS}/lr_tuning/{key}"]
        assert (pop.models, pop.steps, pop.batch) == (t2["tuning_models"], job.spec["steps"], job.spec["batch_size"])
    assert len(priced) == rows + rows * len(grid)
    assert [p["grid"] for p in on.table2.params] == [grid] * rows
    assert [p["grid"] for p in off.table2.params] == [[]] * rows


# -------------------------------------------------------------------------------------------------- training


def test_candidates_train_without_the_canary_and_the_tuned_shard_takes_the_best():
    X, y = _data()
    test = _data(60, 9)
    section = {**SECTION, "lr_grid": [0.01, 2.0], "rows": SECTION["rows"][:1]}
    (cands,) = plan_table2_candidates(section, **IDS)
    outs = [train_lr_candidate(c.spec, arch=_arch(c.spec), X=X, y=y, device="cpu") for c in cands]
    for out, c in zip(outs, cands):
        assert out["validation_accuracy"].shape == (3,) and out["lr"] == c.spec["lr"]
        assert (int(out["n_train"]), int(out["n_validation"])) == (160, 40)
        assert out["sampling_rate"] == pytest.approx(20 / 160)
    again = train_lr_candidate(cands[1].spec, arch=_arch(cands[1].spec), X=X, y=y, device="cpu")
    assert np.array_equal(again["validation_accuracy"], outs[1]["validation_accuracy"])  # seeded
    # η = 2 learns the separable classes in 5 steps, η = 0.01 barely moves from θ0
    assert outs[1]["validation_accuracy"].mean() > outs[0]["validation_accuracy"].mean()

    (row,) = plan_table2(section, test_identity=TEST, **IDS)
    shard = train_tuned_shard(row.spec, 0, arch=_arch(row.spec), X=X, y=y, test=test, candidates=outs[::-1],
                              device="cpu")
    assert shard["lr"] == 2.0 and shard["lr_grid"].tolist() == [0.01, 2.0]
    assert shard["validation_accuracy_mean"].tolist() == [o["validation_accuracy"].mean() for o in outs]
    # the shard is the row's Dirac population trained with the chosen η, bit for bit
    fixed = train_dirac_shard({**row.spec, "lr": 2.0}, 0, arch=_arch(row.spec), X=X, y=y, test=test, device="cpu")
    assert all(np.array_equal(shard[k], fixed[k]) for k in fixed)
    with pytest.raises(ValueError, match="not the grid"):
        train_tuned_shard(row.spec, 0, arch=_arch(row.spec), X=X, y=y, test=test, candidates=outs[:1], device="cpu")

    # the table: η and lr_tuned per row, the candidates' validation accuracy beside it
    fixed_row = {"shards": [train_dirac_shard(plan_fig2({**{k: SECTION[k] for k in ("model", "model_kwargs",
                 "backend", "lr", "clip_norm", "canary_dim", "models_per_world", "shard_size")},
                 "background": "natural", "batch_size": 10, "noise_multiplier": 0.8, "steps": [10]},
                 test_identity=TEST, **IDS).spec, 0, arch=_arch(row.spec), X=X, y=y, test=test, device="cpu")],
                 "steps": 10, "noise_multiplier": 0.8, "lr": 0.5, "grid": []}
    rows = [{"shards": [shard], "steps": 5, "noise_multiplier": 1.0, "lr": None, "grid": [0.01, 2.0]}, fixed_row]
    table = table2(rows, delta=1e-5, confidence=0.95, seed=1, model="alexnet_head")
    assert table["lr"].tolist() == [2.0, 0.5] and table["lr_tuned"].tolist() == [True, False]
    lr = table2_lr(table, rows, [outs, []])
    assert list(lr.columns) == list(TABLE2_LR_COLUMNS) and lr["lr"].tolist() == [0.01, 2.0, 0.5]
    assert lr["chosen"].tolist() == [False, True, True] and lr["lr_tuned"].tolist() == [True, True, False]
    assert lr["validation_accuracy_mean"].iloc[1] == pytest.approx(outs[1]["validation_accuracy"].mean())
    assert math.isnan(lr["validation_accuracy_mean"].iloc[2]) and lr["validation_models"].tolist() == [3, 3, 0]
    md = table2_markdown(table, footer="scale=test", lr_table=lr)
    assert "| 2 (tuned) |" in md and "| 0.5 |" in md and "η tuning: validation accuracy" in md
    assert md.count("**") == 2  # the one chosen cell in bold
    assert "**†" in md and "an end of the grid (B = 20)" in md  # 2 is the grid's largest η
    # a tuned row whose shards record no η is named
    with pytest.raises(ValueError, match="one tuned η"):
        table2([{**rows[0], "shards": [fixed]}], delta=1e-5, confidence=0.95, seed=1)
