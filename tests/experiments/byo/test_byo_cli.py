"""``hsaudit audit-training``: the report with its verdict as JSON, score CSVs that ``hsaudit audit`` and ``hsaudit
one-run`` read, shards and their merge, and one-line errors for bad input."""

from __future__ import annotations

import pytest

import json

import pandas as pd

from byo_testing import zoo_entry
from hsaudit.cli import main

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
    assert main(["audit", str(out / "scores.csv"), "--json", "--mode", "crossing"]) == 0
    assert _json(capsys)["epsilon"] > 0
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
    assert main(["audit-training", "--entry", f"{bad}:make", "--runs", "5", "--from-shards", "2",
                 "--out", str(tmp_path)]) == 2  # fmt: skip


def test_the_benchmark_reports_the_overhead(capsys):
    assert main(["audit-training", "--entry", zoo_entry("correct"), "--runs", "4", "--bench", "8", "--json"]) == 0
    timing = _json(capsys)
    assert timing["models"] == 8 and timing["user_training_per_model_s"] > 0
    assert timing["through_harness_per_model_s"] > 0 and "overhead_per_model" in timing
