"""``hsaudit audit-training``: the report with its verdict as JSON, score CSVs that ``hsaudit audit`` and ``hsaudit
one-run`` read, shards and their merge, and one-line errors for bad input."""

from __future__ import annotations

import pytest

import json
from dataclasses import replace

import pandas as pd

from byo_testing import zoo_entry
from conftest import REPO
from hsaudit.cli import main
from hsaudit.experiments.byo import api
from hsaudit.experiments.byo.api import Timing, time_training
from hsaudit.experiments.byo.plan import plan
from hsaudit.experiments.byo.values import DESIGNS, PINNED

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_json_report_and_score_csvs_the_other_commands_read(tmp_path, capsys):
    out = tmp_path / "audit"
    code = main(["audit-training", "--entry", zoo_entry("noise_on_mean"), "--runs", "40", "--canary", "dirac",
                 "--background", "blank", "--out", str(out), "--json", "--seed", "3"])  # fmt: skip
    assert code == 0
    report = _json(capsys)
    assert report["verdict"] == "violation" and report["epsilon_hat"] > report["epsilon_claimed"]
    assert json.loads((out / "report.json").read_text())["verdict"] == "violation"
    assert (out / "report.md").read_text().startswith("# Audit")
    scores = pd.read_csv(out / "scores.csv")
    assert len(scores) == 80 and set(scores["member"]) == {0, 1}
    assert main(["audit", str(out / "scores.csv"), "--json", "--mode", "crossing", "--directions", "one"]) == 0
    (crossing,) = [e for e in report["estimates"] if e["estimate"] == "GDP ε̂ (crossing)"]
    assert _json(capsys)["epsilon"] == pytest.approx(crossing["epsilon"], rel=1e-9)  # the same scores, the same bound
    assert main(["one-run", str(out / "scores.csv"), "--json"]) == 0
    assert _json(capsys)["canaries"] == 80


def test_shards_then_their_merge_is_the_whole(tmp_path, capsys):
    common = ["--entry", zoo_entry("correct"), "--runs", "12", "--canary", "dirac", "--background", "blank",
              "--seed", "5", "--no-progress"]  # fmt: skip
    assert main(["audit-training", *common, "--out", str(tmp_path / "whole"), "--json"]) == 0
    whole = _json(capsys)
    for i in (1, 2):
        assert main(["audit-training", *common, "--out", str(tmp_path / "split"), "--shard", f"{i}/2"]) == 0
    capsys.readouterr()
    assert main(["audit-training", *common, "--out", str(tmp_path / "split"), "--from-shards", "2", "--json"]) == 0
    merged = _json(capsys)
    assert merged["epsilon_hat"] == whole["epsilon_hat"] and merged["verdict"] == whole["verdict"]
    a = pd.read_csv(tmp_path / "whole" / "scores.csv")
    b = pd.read_csv(tmp_path / "split" / "scores.csv")
    pd.testing.assert_frame_equal(a[["model", "member", "score"]], b[["model", "member", "score"]])


def test_an_accounting_bug_trains_nothing(tmp_path, capsys):
    code = main(["audit-training", "--entry", zoo_entry("replace_one_as_add_remove"), "--runs", "50", "--out",
                 str(tmp_path), "--json"])  # fmt: skip
    report = _json(capsys)
    assert code == 0 and report["verdict"] == "violation" and report["reason"].startswith("accounting")
    assert report["epsilon_hat"] is None and not (tmp_path / "scores.csv").exists()


def test_the_audit_setting_reaches_make(tmp_path, capsys):
    code = main(["audit-training", "--entry", "examples/byo/plain_dpsgd.py:make", "--runs", "3", "--audit-setting",
                 "--setting-steps", "2", "--out", str(tmp_path), "--json"])  # fmt: skip
    report = _json(capsys)
    assert code == 0 and report["claim"]["steps"] == 2 and report["claim"]["sample_rate"] == 1.0
    assert report["epsilon_ours"] == __import__("pytest").approx(4.0, rel=1e-3)  # σ calibrated to ε = 4


def test_bad_input_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_anywhere\n")
    assert main(["audit-training", "--entry", f"{bad}:make", "--runs", "5", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hsaudit audit-training: error: entry") and "ModuleNotFoundError" in err
    assert main(["audit-training", "--entry", f"{bad}:make", "--runs", "5", "--from-shards", "2", "--canary", "dirac",
                 "--out", str(tmp_path)]) == 2  # fmt: skip
    assert "missing shard score files" in capsys.readouterr().err


def test_the_benchmark_reports_the_overhead(capsys):
    assert main(["audit-training", "--entry", zoo_entry("correct"), "--runs", "4", "--bench", "8", "--json"]) == 0
    timing = _json(capsys)
    assert timing["models"] == 8 and timing["user_training_per_model_s"] > 0
    assert timing["through_harness_per_model_s"] > 0 and "overhead_per_model" in timing


SLOW_ENTRY = """\
import time

import torch

from hsaudit.accounting.gaussian import gaussian_epsilon

PAUSE = {pause}


def make():
    def train(data, seed):
        time.sleep(PAUSE)  # the training's cost: PAUSE seconds per model
        g = torch.Generator().manual_seed(seed)
        model = torch.nn.Linear(2, 2)
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
        return model

    x = torch.randn(8, 2, generator=torch.Generator().manual_seed(0))
    claim = dict(epsilon=gaussian_epsilon(noise_multiplier=1.0, compositions=5, delta=1e-5), delta=1e-5,
                 noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson", sample_rate=1.0, steps=5,
                 neighbouring="add-remove")
    return dict(claim=claim, train=train, dataset=lambda: (x, torch.tensor([0, 1] * 4)))
"""


def test_plan_times_a_users_training_here(tmp_path, capsys, monkeypatch):
    """`hsaudit plan --time-byo MODELS`: a training that takes 0.05 s per model is priced at 0.05 s per model (plus
    the harness's small share), each training job pays its start, the check job once (it trains four models), and
    the row's hours are its models' and jobs' seconds; an audit whose verdict needs no training (here:
    too few runs to exceed the claim) is priced at nothing; without the flag nothing is priced."""
    starts = []  # a job's start (a fresh interpreter importing torch: 3 s of CPU) is timed once here, then reused
    start = api.job_start_seconds
    monkeypatch.setattr(api, "job_start_seconds", lambda: starts[0] if starts else starts.append(start()) or starts[0])
    pause = 0.05
    (tmp_path / "slow.py").write_text(SLOW_ENTRY.format(pause=pause))
    entry = f"{tmp_path / 'slow.py'}:make"
    audit = plan({"seed": 0, "byo": {"slow": {"entry": entry, "runs": 10, "shards": 3}}}).audits["slow"]
    design = audit.design  # chosen by a pilot (the default): timed as the design every training takes
    pinned = replace(design, canary=PINNED[0], background=PINNED[1])
    timing = time_training(design, models=4)
    assert timing.models == 4 and pause <= timing.seconds_per_model < pause + 0.1 and timing.early is None
    assert timing.check_seconds >= 4 * pause and timing.shard_seconds > 0  # the check trains 4 models
    assert timing.candidate_seconds >= 4 * pause  # and so does each candidate of the pilot
    alone = 20 * timing.seconds_per_model + 3 * timing.shard_seconds  # the audit's 20 models in 3 jobs
    assert timing.seconds(pinned, control=False) == pytest.approx(alone + timing.check_seconds)
    assert timing.seconds(pinned) == pytest.approx(2 * alone + timing.check_seconds)  # and the control's
    assert Timing(2, 1.0, 10.0, 5.0).seconds(pinned) == 2 * (20 * 1.0 + 3 * 10.0) + 5.0
    # the pilot: each candidate's check, then its control at pilot_runs per world
    pilot = len(DESIGNS) * (2 * design.pilot_runs * 1.0 + 4.0)
    assert Timing(2, 1.0, 10.0, 5.0, candidate_seconds=4.0).seconds(design) == 2 * (20 + 3 * 10.0) + 5.0 + pilot
    assert timing.pilot_seconds(pinned) == 0.0 and timing.pilot_seconds(design) > 2 * design.pilot_runs * pause
    early = time_training(design, audit.options, models=4)  # 10 runs per world cannot exceed the claimed ε 11.5
    assert early.early == "inconclusive" and early.seconds(design) == 0.0
    with pytest.raises(ValueError, match="at least 2 models"):
        time_training(design, models=1)

    monkeypatch.chdir(REPO)
    target = ["plan", "results/byo/slow/report.md", "--configfile", "config/config.yaml", str(tmp_path / "o.yaml")]
    for runs in (10, 200):
        (tmp_path / "o.yaml").write_text(f"byo:\n  slow:\n    entry: {entry}\n    runs: {runs}\n    shards: 3\n")
        assert main([*target, "--json"]) == 0
        assert _json(capsys)["audits"][0]["cpu_hours"] == 0.0
        assert main(target) == 0 and "not priced" in capsys.readouterr().out
        assert main([*target, "--time-byo", "4", "--json"]) == 0
        (row,) = _json(capsys)["audits"]
        if runs == 10:
            assert row["models"] == 0 and row["cpu_hours"] == 0.0 and "no training: inconclusive" in row["detail"]
            assert main([*target, "--time-byo", "4"]) == 0
            (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("byo/slow/report")]
            assert "not priced" not in line and "0.0 s" in line  # priced: nothing to train
            continue
        # the audit's 400 models and the control's 400, and the pilot's: each candidate's control
        models = 800 + len(DESIGNS) * 2 * design.pilot_runs
        assert row["models"] == models and row["cpu_hours"] * 3600 == pytest.approx(row["timed_seconds"])
        assert models * pause + 4 * pause <= row["timed_seconds"] < models * (pause + 0.1) + 10 * 15
        assert "with the design's pilot" in row["detail"]
        assert "timed here" in row["detail"] and row["gpu_hours"] == 0.0
    assert len(starts) == 1 and starts[0] > 0
