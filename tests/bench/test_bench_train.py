"""The training benchmarks (hsaudit.bench.train) through `hsaudit bench train`, and the calibration they store for
the cost planner (hsaudit.pipeline.costs): one measurement, one stored file, one path for `hsaudit plan --calibrate`."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from hsaudit.bench import train as bench
from hsaudit.cli import main
from hsaudit.engine.models import model_names, model_spec
from hsaudit.engine.sampling import PoissonSampler
from hsaudit.pipeline import costs as P
from hsaudit.pipeline.costs import calibration

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_bench_train_engine_cli(capsys, tmp_path):
    """`hsaudit bench train --model convnet`: engine, Opacus and floor rows per population size; calibration saved."""
    path = tmp_path / "cal.json"
    argv = [
        "bench",
        "train",
        "--model",
        "convnet",
        "--models",
        "1,2",
        "--steps",
        "1",
        "--batch-size",
        "4",
        "--json",
        "--save-calibration",
        str(path),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["models"] for r in out["populations"]] == [1, 2]
    for row in out["populations"]:
        for key in (
            "seconds_per_model_step",
            "model_steps_per_s",
            "models_per_s",
            "engine_over_floor",
            "speedup_vs_opacus",
            "peak_rss_mb",
            "load_average",
        ):
            assert row[key] > 0
    assert out["opacus"]["seconds_per_model_step"] > 0 and out["floor"]["seconds_per_model_step"] > 0
    assert out["backend"] == "auto (hooks)" and out["parameters"] == 62_006
    row = calibration("convnet", "cpu", path=path)
    assert row.status == "measured" and row.seconds_per_model_step == out["populations"][-1]["seconds_per_model_step"]
    assert main([*argv[:4], "--models", "0"]) == 2  # bad input: one-line error, exit 2


def test_bench_train_full_batch_cli(capsys):
    """`hsaudit bench train --model mnist_cnn --full-batch`: every step is all of D, for the engine, Opacus, floor."""
    argv = ["bench", "train", "--model", "mnist_cnn", "--full-batch", "--models", "2", "--n-train", "8",
            "--steps", "1", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["full_batch"] and out["batch_size"] == out["n_train"] == 8 and out["parameters"] == 25_386
    (row,) = out["populations"]
    assert row["models"] == 2 and row["engine_over_floor"] > 0 and row["speedup_vs_opacus"] > 0
    assert out["opacus"]["model_steps_per_s"] > 0 and out["floor"]["model_steps_per_s"] > 0
    assert main([*argv[:5], "--batch-size", "4"]) == 2  # B is |D| under --full-batch
    assert main(["bench", "train", "--full-batch"]) == 2  # fcnn has no full-batch mode


def test_bench_train_cli(capsys):
    argv = ["bench", "train", "--models", "4", "--opacus-models", "1", "--steps", "3", "--batch-size", "8",
            "--n-train", "64", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("vectorised_models_per_s", "opacus_models_per_s", "models", "steps", "peak_rss_mb"):
        assert key in out
    assert out["models"] == 4 and out["steps"] == 3
    assert out["max_abs_score_diff"] < 1e-5  # model 0 trained both ways agrees
    assert main([*argv[:2], "--models", "0"]) == 2  # bad input: one-line error, exit 2


@pytest.mark.parametrize("model", ["fcnn", "convnet", "wrn16_4"])
def test_bench_train_poisson_cli(model, capsys):
    """``hsaudit bench train --sampling poisson`` times the Poisson engine beside fixed batches of B = round(qN),
    with every repeat on other draws, and the per-example ratio uses the examples those draws hold."""
    models = "1" if model == "wrn16_4" else "2"  # the model: 2.75M parameters at 32×32, one model
    argv = ["bench", "train", "--model", model, "--models", models, "--opacus-models", "1", "--steps", "1",
            "--n-train", "40", "--sampling", "poisson", "--sampling-rate", "0.2", "--repeats", "2", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sampling_rate"] == 0.2 and out["batch_size"] == 8 and out["n_train"] == 40
    row = out["populations"][0]
    assert row["repeats"] == 2 and len(row["poisson_over_fixed_runs"]) == 2  # fixed and Poisson alternated
    for key in ("poisson_seconds_per_model_step", "poisson_over_fixed", "poisson_over_floor",
                "poisson_speedup_vs_opacus", "poisson_over_fixed_per_example"):
        assert row[key] > 0
    m = int(models)
    drawn = [sum(PoissonSampler(r, range(m), n=40, rate=0.2)(1).counts) for r in range(2)]
    assert row["poisson_batch_mean"] == pytest.approx(np.mean(drawn) / m)  # the draws of seeds 0 and 1
    assert main([*argv[:4], "--sampling-rate", "0.2"]) == 2  # a rate without --sampling poisson


def test_plan_calibrate_times_the_benchmark_engine(capsys):
    """`hsaudit plan --calibrate` prints the benchmark's engine timing (step_seconds: measure_engine's engine row)."""
    argv = ["plan", "--calibrate", "fcnn", "--batch", "8", "--steps", "1", "--population", "3", "--json"]
    assert main(argv) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["model"] == "fcnn" and row["batch"] == 8 and row["population"] == 3 and row["seconds_per_model_step"] > 0
    assert main(["plan", "--calibrate", "vgg"]) == 2  # an unknown model: the registry's one-line error
    assert main(["plan", "--calibrate", "fcnn", "--steps", "0"]) == 2
    assert "must be >= 1" in capsys.readouterr().err


def test_step_seconds_is_measure_engines_engine_row(monkeypatch):
    """One calibration path: step_seconds is measure_engine's engine timing at one population, without Opacus."""
    calls = []

    def fake(**kw):
        calls.append(kw)
        return {"populations": [{"seconds_per_model_step": 0.5}]}

    monkeypatch.setattr(bench, "measure_engine", fake)
    spec = model_spec("convnet")
    assert bench.step_seconds(spec, steps=2, population=4) == 0.5
    (kw,) = calls
    assert kw["spec"] == spec and kw["models"] == (4,) and kw["steps"] == 2 and kw["opacus_models"] == 0
    assert kw["batch_size"] == spec.bench.batch


def test_stored_calibration_takes_precedence(tmp_path):
    """`hsaudit bench train --save-calibration` rows override the built-in table (model, device)."""
    path = tmp_path / "cal.json"
    assert P.stored_calibration(path) == ()
    result = {"model": "convnet", "device": "cpu", "device_name": "test cpu", "batch_size": 128, "threads": 1,
              "populations": [{"models": 1, "seconds_per_model_step": 9.0, "load_average": 1.0},
                              {"models": 64, "seconds_per_model_step": 0.02, "load_average": 2.5}]}
    bench.save_calibration(result, path, "hsaudit bench train --model convnet")
    row = P.calibration("convnet", "cpu", path=path)
    assert row.status == "measured" and row.seconds_per_model_step == 0.02 and "--model convnet" in row.source
    assert P.calibration("convnet", "gpu", path=path) == P.calibration("convnet", "gpu", path=tmp_path / "none")
    bench.save_calibration({**result, "populations": result["populations"][:1]}, path, "again")  # replaces the row
    assert P.calibration("convnet", "cpu", path=path).seconds_per_model_step == 9.0
    assert len(P.stored_calibration(path)) == 1
    path.write_text("{}")
    with pytest.raises(ValueError, match="cal.json"):
        P.calibration("convnet", "cpu", path=path)


def test_store_calibration_validates_and_honours_the_environment(tmp_path, monkeypatch):
    """The stored file is one constant (costs.STORED_CALIBRATION, or $HSAUDIT_CALIBRATION) for writer and reader."""
    row = bench.calibration_row(
        {"model": "fcnn", "device": "cpu", "batch_size": 400, "threads": 1, "models": 10, "steps": 2,
         "vectorised_s": 0.5, "load_average_1min": 1.0, "machine": "test"},
        "hsaudit bench train",
    )
    assert row["seconds_per_model_step"] == pytest.approx(0.5 / 20)
    monkeypatch.setenv("HSAUDIT_CALIBRATION", str(tmp_path / "env.json"))
    assert P.store_calibration(row) == tmp_path / "env.json" == P.calibration_path()
    assert P.calibration("fcnn", "cpu").seconds_per_model_step == pytest.approx(0.025)
    monkeypatch.delenv("HSAUDIT_CALIBRATION")
    assert str(P.calibration_path()) == P.STORED_CALIBRATION
    with pytest.raises(ValueError, match="lacks"):
        P.store_calibration({"model": "fcnn"}, tmp_path / "x.json")
    with pytest.raises(ValueError, match="device"):
        P.store_calibration({**row, "device": "tpu"}, tmp_path / "x.json")


def test_every_model_the_config_trains_is_priced(monkeypatch, tmp_path):
    """The built-in rows price every model the project's config trains, on both devices."""
    from conftest import REPO
    from hsaudit.pipeline.config import load_yaml, resolve_scale

    monkeypatch.setenv("HSAUDIT_CALIBRATION", str(tmp_path / "none.json"))
    trained = {a.model for a in P.all_populations(resolve_scale(load_yaml(REPO / "config" / "config.yaml")))
               if a.batch > 0}  # fmt: skip
    assert "convnet" in trained and trained <= set(model_names()) | {"causal_lm"}
    assert all(P.is_calibrated(model, device) for model in trained for device in P.DEVICES)


def test_an_uncalibrated_model_is_planned_and_says_how_to_measure_it(monkeypatch, tmp_path):
    """A new registry model has no row: `hsaudit plan` lists its populations as "not calibrated (run hsaudit bench
    train --model NAME --save-calibration)", prices the others, and prices it once that command stored a row."""
    monkeypatch.setenv("HSAUDIT_CALIBRATION", str(tmp_path / "calibration.json"))
    row = dict(figures=("fig1",), section="cifar10", adversary="gc_r", models=10, steps=5, batch=128, device="cpu")
    known, new = P.Population(model="convnet", **row), P.Population(model="toy", **row)
    plan = P.CostPlan(targets=("fig1",), populations=(known, new), simulations=())
    text = P.format_plan(plan, scale="paper")
    assert plan.uncalibrated == ("toy",) and not new.priced("cpu") and known.priced("cpu")
    assert "toy: not calibrated (run hsaudit bench train --model toy --save-calibration)" in text
    # the priced total (the uncalibrated model left out), and its wall time with one job per core
    found = re.search(r"priced total: ([\d.]+) (s|min|h) of CPU core time, ≈ ([\d.]+) (s|min|h) wall on 2 core",
                      P.format_plan(plan, scale="paper", cores=2))  # fmt: skip
    hours = [float(found[i]) / {"s": 3600, "min": 60, "h": 1}[found[i + 1]] for i in (1, 3)]
    assert hours == pytest.approx([known.hours("cpu"), known.hours("cpu") / 2], rel=0.05)
    assert plan.hours("cpu") == known.hours("cpu") > 0
    with pytest.raises(ValueError, match="--save-calibration"):
        P.calibration("toy", "cpu")
    P.store_calibration({"model": "toy", "device": "cpu", "batch": 128, "seconds_per_model_step": 0.5, "torch": "x",
                         "date": "d", "command": "hsaudit bench train --model toy --save-calibration"})  # fmt: skip
    assert plan.uncalibrated == ("toy",) and new.priced("cpu") and not new.priced("gpu")
    assert plan.hours("cpu") == known.hours("cpu") + 10 * 5 * 0.5 / 3600
