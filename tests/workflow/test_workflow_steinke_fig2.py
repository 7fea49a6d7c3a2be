"""Steinke et al. fig2, fig4 and table2 through the workflow: the paper-scale DAGs (shards, GPU requests, shared
populations) and one smoke run of the three targets on synthetic CIFAR-format data (the smoke preset's
`steinke.fig2.data.source`)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from conftest import job_counts, run_snakemake

TARGET = "results/steinke/fig2.pdf"
FIG4, TABLE2 = "results/steinke/fig4.pdf", "results/steinke/table2.md"


def job_blocks(output: str, rule: str) -> list[str]:
    """The dry run's job blocks (`rule NAME:` … up to the next job) of one rule."""
    return [block for block in re.split(r"\n(?=(?:local)?rule \w+:)", output) if block.startswith(f"rule {rule}:")]


def job_inputs(block: str) -> set[str]:
    """The input paths of one dry-run job block."""
    m = re.search(r"^\s*input: (.*)$", block, re.MULTILINE)
    return set(m.group(1).split(", ")) if m else set()


@pytest.mark.xdist_group("paper_dag")
def test_paper_scale_dag_asks_for_gpus(paper_dry_run):
    """Paper scale, fig2 + fig4 + table2 in one dry run: fig2 trains 1,000 + 1,000 WRN-16-4 models in shards of 100
    (20 jobs); fig4 20 per background (label-flip canary); table2 20 per batch size, of which the 4,096 row *is*
    fig2's population (its 20 shards feed both): 100 jobs of the one training rule. Every training job asks for a
    GPU; the two data jobs (training set, test split for the models' accuracy), audits, plots and the table ask for
    none."""
    stdout = paper_dry_run.of(TARGET, FIG4, TABLE2)  # `snakemake -n TARGET FIG4 TABLE2`'s jobs (conftest.paper_dry_run)
    counts = job_counts(stdout)
    assert counts == {"prepare_steinke_data": 2, "train_steinke_shard": 100,
                      "audit_steinke_fig2": 1, "audit_steinke_fig4": 1, "plot_steinke_fig2": 1,
                      "plot_steinke_fig4": 1, "tabulate_steinke_table2": 1}
    blocks = job_blocks(stdout, "train_steinke_shard")
    assert len(blocks) == 100 and all(re.search(r"\bgpu=1\b", b) for b in blocks)
    assert sum("canary=dirac" in b for b in blocks) == 60 and sum("canary=label_flip" in b for b in blocks) == 40
    for rule in ("audit_steinke_fig2", "plot_steinke_fig2", "prepare_steinke_data", "audit_steinke_fig4",
                 "plot_steinke_fig4", "tabulate_steinke_table2"):
        assert not any(re.search(r"\bgpu=[1-9]", b) for b in job_blocks(stdout, rule)), rule
    (fig2_audit,) = job_blocks(stdout, "audit_steinke_fig2")
    (table,) = job_blocks(stdout, "tabulate_steinke_table2")
    fig2_shards = {f for f in job_inputs(fig2_audit) if "/shard" in f}
    assert len(fig2_shards) == 20 and fig2_shards < job_inputs(table) and len(job_inputs(table)) == 60
    # fig2 is GPU-sized: `rule all` leaves it out (tests/workflow/test_dag.py, on its dry run of rule all)


@pytest.mark.slow
def test_smoke_fig2(workflow_copy):
    """fig2, fig4 and table2 at smoke size in one run (fig4 and table2 add ≈ 10 s)."""
    run_snakemake(workflow_copy, TARGET, FIG4, TABLE2, "--config", "scale=smoke")
    pdf = workflow_copy / TARGET
    assert pdf.stat().st_size > 1000
    table = pd.read_csv(pdf.with_suffix(".csv"))
    assert set(table["steps"]) == {1, 3} and set(table["runs_per_world"]) == {8}
    assert {"heuristic", "standard", "empirical_sigma_last_iterate", "empirical_sigma_last_iterate_held_out",
            "empirical_gdp", "empirical_gdp_valid"} == set(table["method"])
    # every audit says its rule and whether it is valid: the paper rule's GDP and σ̂ are not, crossing and held-out are
    audits = table.dropna(subset=["valid"]).groupby("method")[["threshold_rule", "valid"]].first()
    assert audits.loc["empirical_gdp"].tolist() == ["paper", False]
    assert audits.loc["empirical_gdp_valid"].tolist() == ["crossing", True]
    assert table.loc[table["method"].isin(["heuristic", "standard"]), "valid"].isna().all()
    assert set(table["data_source"]) == {"cifar10:synthetic"} and set(table["model"]) == {"convnet"}
    fig4 = pd.read_csv(workflow_copy / "results/steinke/fig4.csv")
    assert (workflow_copy / FIG4).stat().st_size > 1000
    assert set(fig4["background"]) == {"zero_gradient", "natural"} and set(fig4["steps"]) == {1, 3}
    assert set(fig4["runs_per_world"]) == {4} and fig4["test_accuracy_mean"].between(0, 1).all()
    t2 = pd.read_csv(workflow_copy / "results/steinke/table2.csv")
    assert t2["batch_size"].tolist() == [10, 5, 2] and t2["test_accuracy_mean"].between(0, 1).all()
    assert t2["runs_per_world"].tolist() == [4, 4, 4]  # row 1 reads 4 + 4 of fig2's shared models
    assert (t2["heuristic"] - t2["heuristic"].iloc[0]).abs().max() < 0.01  # σ calibrated to one heuristic
    assert set(t2["valid_threshold_rule"]) == {"crossing"} and not t2["empirical_gdp_valid"].isna().any()
    # every accountant's standard ε beside the PLD (issue 24 §4); RDP bounds the same mechanism more loosely
    rdp = ["standard_rdp_classic", "standard_rdp_improved", "standard_rdp_classic_fractional",
           "standard_rdp_improved_fractional"]
    assert (t2[rdp].to_numpy() >= t2[["standard"]].to_numpy() - 1e-3).all()
    md = (workflow_copy / TABLE2).read_text()
    assert md.count("\n| ") == 4 and "scale=smoke" in md and "crossing rule (valid)" in md
    assert "Standard ε: PLD (paper)" in md and "RDP, classic / improved conversion, α = 2…256" in md
    # a second request trains nothing again
    again = run_snakemake(workflow_copy, TARGET, FIG4, TABLE2, "--config", "scale=smoke", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
    assert t2["lr"].tolist() == [0.5, 0.5, 0.5] and not t2["lr_tuned"].any()
    fixed = pd.read_csv(workflow_copy / "results/steinke/table2_lr.csv")
    assert fixed["lr"].tolist() == [0.5, 0.5, 0.5] and fixed["validation_accuracy_mean"].isna().all()

    # η tuned for the middle row only (the others fix their own η, so they keep their populations): 2 candidates
    # and 1 shard train, the table records the choice (issue 24 §4)
    (workflow_copy / "tuned.yaml").write_text(
        "steinke:\n  table2:\n    lr_grid: [0.25, 1.0]\n    rows:\n"
        "      - {batch_size: 10, noise_multiplier: 1.0, steps: 3, lr: 0.5}\n"
        "      - {batch_size: 5, noise_multiplier: 0.744, steps: 6}\n"
        "      - {batch_size: 2, noise_multiplier: 0.485, steps: 15, lr: 0.5}\n")
    tuned = ("--config", "scale=smoke", "--configfile", "config/config.yaml", "tuned.yaml")
    assert job_counts(run_snakemake(workflow_copy, TABLE2, *tuned, "-n").stdout) == {
        "train_steinke_lr_candidate": 2, "train_steinke_tuned_shard": 1, "tabulate_steinke_table2": 1}
    run_snakemake(workflow_copy, TABLE2, *tuned)
    t2_tuned = pd.read_csv(workflow_copy / "results/steinke/table2.csv")
    assert t2_tuned["lr_tuned"].tolist() == [False, True, False] and t2_tuned["lr"].iloc[1] in (0.25, 1.0)
    kept = [0, 2]
    assert t2_tuned["test_accuracy_mean"].iloc[kept].tolist() == t2["test_accuracy_mean"].iloc[kept].tolist()
    lr = pd.read_csv(workflow_copy / "results/steinke/table2_lr.csv")
    candidates = lr[lr["lr_tuned"]]
    assert candidates["lr"].tolist() == [0.25, 1.0] and candidates["validation_models"].tolist() == [2, 2]
    best = candidates.sort_values(["validation_accuracy_mean", "lr"], ascending=[False, True]).iloc[0]
    assert candidates.loc[candidates["chosen"], "lr"].tolist() == [best["lr"]] == [t2_tuned["lr"].iloc[1]]
    assert "η tuning: validation accuracy" in (workflow_copy / TABLE2).read_text()
