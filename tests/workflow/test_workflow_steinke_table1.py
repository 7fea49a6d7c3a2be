"""Steinke et al. Table 1 through the workflow: without model and data paths a request stops before any job with one
message (every other target still builds its DAG); with a tiny random causal LM and synthetic PersonaChat-format
text (tests/tiny_lm.py) the smoke run makes the table end to end."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import job_counts, run_snakemake

TARGET = "results/steinke/table1.md"


@pytest.mark.xdist_group("paper_dag")
def test_without_paths_it_stops_before_any_job(workflow_copy, paper_dry_run):
    proc = run_snakemake(workflow_copy, "-n", TARGET, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert out.count("is an optional target") == 1
    assert "Missing: steinke.table1.model, steinke.table1.data" in out and "[lm]" in out
    assert "Job stats" not in out and not (workflow_copy / "results").exists()
    # the paths matter only to Table 1: Table 2 still plans (the session's dry run, same config without the paths)
    assert job_counts(paper_dry_run.of("results/steinke/table2.md"))


def test_paper_scale_dag(workflow_copy, tmp_path):
    """Paper scale with paths given: one data job, one calibration, 3 rows × 128 shards of one model per world,
    every training job on a GPU."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "pc.txt").write_text("hi\n")
    cfg = tmp_path / "paths.yaml"
    cfg.write_text(f"steinke:\n  table1:\n    model: {tmp_path / 'model'}\n    data: {tmp_path / 'pc.txt'}\n")
    proc = run_snakemake(workflow_copy, "-n", TARGET, "--configfile", "config/config.yaml", str(cfg))
    assert job_counts(proc.stdout) == {"prepare_steinke_table1_data": 1, "calibrate_steinke_table1": 1,
                                       "train_steinke_table1": 384, "tabulate_steinke_table1": 1}
    assert proc.stdout.count("gpu=1") >= 384


@pytest.mark.slow
def test_smoke_table1_on_a_tiny_random_lm(workflow_copy, tmp_path):
    pytest.importorskip("transformers")
    from tiny_lm import make_dialogues, make_tiny_lm

    make_tiny_lm(tmp_path / "model", block_size=16)
    make_dialogues(tmp_path / "pc.jsonl", n=40)
    cfg = tmp_path / "paths.yaml"
    cfg.write_text(f"steinke:\n  table1:\n    model: {tmp_path / 'model'}\n    data: {tmp_path / 'pc.jsonl'}\n")
    args = (TARGET, "--config", "scale=smoke", "--configfile", "config/config.yaml", str(cfg))
    run_snakemake(workflow_copy, *args)
    table = pd.read_csv(workflow_copy / "results/steinke/table1.csv")
    assert table["batch_size"].tolist() == [8, 4] and table["runs_per_world"].tolist() == [2, 2]
    assert (table["heuristic"] - 2.0).abs().max() < 1e-3  # σ calibrated to the smoke rows' heuristic ε
    assert (table["standard"] >= table["heuristic"] - 1e-6).all()
    assert table["perplexity_mean"].between(1, 1e6).all() and set(table["score"]) == {"gradient"}
    md = (workflow_copy / TARGET).read_text()
    assert md.count("\n| ") == 3 and "scale=smoke" in md and "pc.jsonl" in md
    assert set(table["valid_threshold_rule"]) == {"crossing"} and "GDP audit, crossing rule (valid)" in md
    again = run_snakemake(workflow_copy, *args, "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
