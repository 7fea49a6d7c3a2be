"""Steinke et al.'s fig4_spread through the workflow: the input canary against the gradient canary on natural data
over several canaries of each type, one population pair per canary (the paper-scale DAG), and one smoke run on
synthetic CIFAR-format data."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from conftest import job_counts, run_snakemake

TARGET = "results/steinke/fig4_spread.pdf"


@pytest.mark.xdist_group("paper_dag")
def test_paper_scale_dag_trains_one_population_pair_per_canary(paper_dry_run):
    """Paper scale: 5 Dirac coordinates and 5 label-flipped images, R = 1,000 per world in shards of 100: 20 shards
    per canary, 200 GPU jobs of the one training rule (100 per canary type), one audit and one plot."""
    stdout = paper_dry_run.of(TARGET)  # what `snakemake -n TARGET` prints of its jobs (conftest.paper_dry_run)
    counts = job_counts(stdout)
    assert counts == {"prepare_steinke_data": 2, "train_steinke_shard": 200, "audit_steinke_fig4_spread": 1,
                      "plot_steinke_fig4_spread": 1}
    blocks = [b for b in re.split(r"\n(?=(?:local)?rule \w+:)", stdout) if b.startswith("rule train_steinke_shard:")]
    assert sum("canary=dirac" in b for b in blocks) == 100 and sum("canary=label_flip" in b for b in blocks) == 100
    assert all(re.search(r"\bgpu=1\b", b) for b in blocks)


@pytest.mark.slow
def test_smoke_fig4_spread(workflow_copy):
    """Smoke scale (2 + 2 canaries, R = 4, T ≤ 3): every canary its own population (distinct coordinates and
    images), the valid rule's ε̂ per canary and the spread per type and T."""
    run_snakemake(workflow_copy, TARGET, "--config", "scale=smoke")
    assert (workflow_copy / TARGET).stat().st_size > 1000
    audit = pd.read_csv(workflow_copy / "results/steinke/fig4_spread/audit.csv")
    assert list(audit["panel"].unique()) == ["dirac_0", "dirac_1", "label_flip_0", "label_flip_1"]
    dirac, flip = audit[audit["canary"] == "dirac"], audit[audit["canary"] == "label_flip"]
    assert dirac["canary_dim"].nunique() == 2 and flip["canary_index"].nunique() == 2
    assert set(audit["background"]) == {"natural"}
    summary = pd.read_csv(workflow_copy / "results/steinke/fig4_spread.csv")
    assert len(summary) == 2 * 2 and set(summary["canary"]) == {"dirac", "label_flip"}
    assert (summary["canaries"] == 2).all() and summary["valid"].all() and (summary["threshold_rule"] == "crossing").all()
    valid = audit[audit["method"] == "empirical_gdp_valid"]
    for _, row in summary.iterrows():
        eps = valid[(valid["steps"] == row["steps"]) & (valid["canary"] == row["canary"])]["epsilon"]
        assert row["mean"] == pytest.approx(eps.mean()) and row["min"] == eps.min() and row["max"] == eps.max()
        assert (eps >= 0).all()
