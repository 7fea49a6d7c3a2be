"""Steinke et al. fig2 through the workflow: the paper-scale DAG (shards, GPU requests, no audit import in training)
and a smoke run of the target on synthetic CIFAR-format data (the smoke preset's `steinke.fig2.data.source`)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from conftest import job_counts, run_snakemake

TARGET = "results/steinke/fig2.pdf"


def job_blocks(output: str, rule: str) -> list[str]:
    """The dry run's job blocks (`rule NAME:` … up to the next job) of one rule."""
    return [block for block in re.split(r"\n(?=(?:local)?rule \w+:)", output) if block.startswith(f"rule {rule}:")]


def test_paper_scale_dag_asks_for_gpus(workflow_copy):
    """Paper scale: 1,000 + 1,000 WRN-16-4 models in shards of 100 = 20 training jobs, each asking for a GPU; one
    data job, one audit, one plot (which ask for none)."""
    proc = run_snakemake(workflow_copy, "-n", TARGET)
    counts = job_counts(proc.stdout)
    assert counts == {"prepare_steinke_data": 1, "train_steinke_fig2": 20, "audit_steinke_fig2": 1,
                      "plot_steinke_fig2": 1}
    train = job_blocks(proc.stdout, "train_steinke_fig2")
    assert len(train) == 20 and all(re.search(r"\bgpu=1\b", b) for b in train)
    for rule in ("audit_steinke_fig2", "plot_steinke_fig2", "prepare_steinke_data"):
        assert not any(re.search(r"\bgpu=[1-9]", b) for b in job_blocks(proc.stdout, rule)), rule
    # fig2 is GPU-sized: `rule all` leaves it out
    assert "train_steinke_fig2" not in job_counts(run_snakemake(workflow_copy, "-n").stdout)


@pytest.mark.slow
def test_smoke_fig2(workflow_copy):
    run_snakemake(workflow_copy, TARGET, "--config", "scale=smoke")
    pdf = workflow_copy / TARGET
    assert pdf.stat().st_size > 1000
    table = pd.read_csv(pdf.with_suffix(".csv"))
    assert set(table["steps"]) == {1, 3} and set(table["runs_per_world"]) == {8}
    assert {"heuristic", "standard", "empirical_sigma_last_iterate", "empirical_sigma_last_iterate_held_out",
            "empirical_gdp"} == set(table["method"])
    assert set(table["data_source"]) == {"cifar10:synthetic"} and set(table["model"]) == {"convnet"}
    # a second request trains nothing again
    again = run_snakemake(workflow_copy, TARGET, "--config", "scale=smoke", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
