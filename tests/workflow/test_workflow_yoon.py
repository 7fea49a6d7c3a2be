"""The Yoon et al. targets through the workflow: the paper-scale DAG (job counts, GPU requests) and a smoke run of
every target on synthetic MNIST/CIFAR-format data (the smoke preset's `yoon.data.*.source: synthetic`), then a
config change that must rerun the audits but not the training."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import job_counts, run_snakemake

FIGURES = ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8")
TARGETS = (*(f"results/yoon/{f}.pdf" for f in FIGURES), "results/yoon/table1.md")


def job_blocks(output: str, rule: str) -> list[str]:
    """The dry run's job blocks (`rule NAME:` … up to the next job) of one rule."""
    return [block for block in re.split(r"\n(?=(?:local)?rule \w+:)", output) if block.startswith(f"rule {rule}:")]


@pytest.mark.xdist_group("paper_dag")
def test_paper_scale_dag(paper_dry_run):
    """Populations: fig3 8, fig5 4, fig6 +2 (ID and blank at ε = 10 are fig5's / fig3's), fig7 +8 (θ_worst),
    fig8 +2 (C = 0.1, 10), fig2/fig4/table1 +0 (fig3's) = 24 × 10 runs. Audits: one per population + fig3's 8
    with the paper's recipe (the default recipe is the valid one) + fig4's 4 black-box ones + table1's (5 margins
    in one) = 37 × 10 runs. Data: MNIST, CIFAR-10, CIFAR-100."""
    stdout = paper_dry_run.of(*TARGETS)  # what `snakemake -n TARGETS` prints of its jobs (conftest.paper_dry_run)
    counts = job_counts(stdout)
    assert counts["prepare_yoon_data"] == 3
    assert counts["train_yoon_models"] == 24 * 10
    assert counts["audit_yoon_run"] == 37 * 10
    assert all(counts[f"plot_yoon_{f}"] == 1 for f in (*FIGURES, "table1"))
    train = job_blocks(stdout, "train_yoon_models")
    assert len(train) == 240 and all(re.search(r"\bgpu=1\b", b) for b in train)
    audits = job_blocks(stdout, "audit_yoon_run")
    gpu_audits = [b for b in audits if re.search(r"\bgpu=1\b", b)]
    assert len(gpu_audits) == 4 * 10  # only the black-box audits (surrogate distillation) ask for a GPU

    # fig3's own jobs, read from the same dry run (the jobs its plot needs, through their files): 2 datasets × 4 ε =
    # 8 populations × 10 runs, each audited with both recipes
    fig3 = job_counts(paper_dry_run.of("results/yoon/fig3.pdf"))
    assert fig3 == {"prepare_yoon_data": 2, "train_yoon_models": 80, "audit_yoon_run": 160, "plot_yoon_fig3": 1}


@pytest.mark.slow
def test_smoke_every_yoon_target_end_to_end(workflow_copy):
    workdir: Path = workflow_copy
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    config["scale"] = "smoke"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    run_snakemake(workdir, *TARGETS, timeout=1800)

    results = workdir / "results" / "yoon"
    for figure in FIGURES:
        assert (results / f"{figure}.pdf").stat().st_size > 1000, figure
        csv = pd.read_csv(results / f"{figure}.csv")
        assert {"adversary", "split", "epsilon_theory", "epsilon", "epsilon_sd", "runs"} <= set(csv.columns)
        assert set(csv["split"]) == {"held-out", "same"}, figure
        assert set(csv["adversary"]) == {"a_c", "a_ude", "a_ade"}, figure
        assert np.isfinite(csv["epsilon"]).all() and (csv["epsilon"] >= 0).all(), figure
        # the held-out split draws the valid rule's ε̂, the same split the paper rule's; both rules' in every row
        assert set(csv.loc[csv["split"] == "held-out", "rule"]) == {"crossing"}, figure
        assert set(csv.loc[csv["split"] == "same", "rule"]) == {"paper"}, figure
        assert np.isfinite(csv[["epsilon_valid", "epsilon_mode"]]).all(axis=None), figure
        runs = pd.read_csv(results / f"{figure}_runs.csv")  # every run's audit row (the columns)
        columns = {"epsilon_theory", "adversary", "canary", "init", "clip_norm", "margin", "run", "epsilon", "mu",
                   "threshold_rule", "rule_valid", "valid_threshold_rule", "mu_valid", "epsilon_valid"}
        assert columns | {"split", "data_source", "craft_recipe", "recipe"} <= set(runs.columns), figure
        assert {"craft_recipe", "recipe"} <= set(csv.columns), figure
    fig3 = pd.read_csv(results / "fig3.csv")
    assert set(fig3["dataset"]) == {"mnist", "cifar10"} and set(fig3["craft_recipe"]) == {"validation_stopped", "paper"}
    assert set(pd.read_csv(results / "fig7.csv")["craft_recipe"]) == {"validation_stopped"}  # the default recipe
    assert set(pd.read_csv(results / "fig4.csv")["access"]) == {"black"}
    assert set(pd.read_csv(results / "fig6.csv")["canary"]) == {"in_distribution", "blank", "mislabeled", "clipbkd"}
    assert set(pd.read_csv(results / "fig7.csv")["init"]) == {"avg", "worst"}
    assert set(pd.read_csv(results / "fig8.csv")["clip_norm"]) == {0.1, 1.0, 10.0}
    table1 = pd.read_csv(results / "table1.csv")
    assert sorted(table1["margin"].unique()) == [0.1, 0.2]  # the smoke preset's margins
    assert "| α | ε̂ held-out, crossing rule (valid) |" in (results / "table1.md").read_text()
    # every audit row says where its data came from (synthetic files in the real formats at smoke scale)
    audits = [pd.read_csv(p) for p in (results / "audits").glob("*/run*.csv") if not p.stem.endswith("_scores")]
    assert len(audits) == 17  # smoke: 11 populations (one run each) + fig3's paper recipe (4) + fig4 + table1
    sources = set(pd.concat(audits)["data_source"])
    assert sources == {"mnist:synthetic", "cifar10:synthetic"}, sources
    # fig2's scores: one per model of both populations, for every sample
    scores = pd.concat(pd.read_csv(p) for p in (results / "audits").glob("*/run*_scores.csv"))
    assert set(scores["member"]) == {0, 1}

    # A crafting option changes the audit keys only: the audits rerun, the populations are kept.
    overlay = workdir / "craft.yaml"
    overlay.write_text(yaml.safe_dump({"scales": {"smoke": {"yoon": {"craft": {"steps": 4}}}}}))
    # (--configfile takes several files: it goes after the targets)
    counts = job_counts(run_snakemake(workdir, "-n", *TARGETS, "--configfile", str(overlay)).stdout)
    assert counts.get("audit_yoon_run") == 17 and "train_yoon_models" not in counts, counts
    assert "prepare_yoon_data" not in counts
    # and with nothing changed, nothing is left to do
    assert job_counts(run_snakemake(workdir, "-n", *TARGETS).stdout) == {}
