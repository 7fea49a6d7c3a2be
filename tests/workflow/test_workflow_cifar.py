"""The CIFAR-10 targets of Cebere et al. through the workflow: paper-scale DAG (GPU jobs) and a smoke run of every
target on synthetic CIFAR-format data (the smoke preset's `cifar10.data.source: synthetic`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import copy_built, job_counts, package_env, run_snakemake

TARGETS = tuple(f"results/{f}.pdf" for f in ("fig1", "fig2", "fig5", "fig6a", "fig8", "fig11", "fig12", "fig13"))
ALL = (*TARGETS, "results/table2.md")


@pytest.mark.xdist_group("paper_dag")
def test_paper_scale_dag_asks_for_gpus(paper_dry_run):
    stdout = paper_dry_run.of(*ALL)  # what `snakemake -n ALL` prints of its jobs (conftest.paper_dry_run)
    counts = job_counts(stdout)
    # 67 distinct CIFAR-10 populations (fig5's k = 1 A_GC-R is fig1's C = 1 one, ...; fig12's 4 θ0 readings x 2
    # readings of d x 5 repetitions have their own Xavier setups), of which fig8's two only give gradient norms, +
    # fig1's 15 Housing audits; fig12's 20 fixed-initialisation audits craft d in a rule of their own
    assert counts["audit_epsilon"] == 65 + 15
    assert counts["craft_adversary"] == 47 + 15 and counts["craft_fixed_init"] == 20
    assert counts["extract_features"] == 1 and counts["write_cebere_table2"] == 1
    # ConvNet shards of 500, ResNet18-GN shards of 50 (model_shard_sizes), fig8's 60 runs in two shards of 30 each
    assert counts["train_shard"] > 1000
    train_jobs = [block for block in stdout.split("\nrule ") if block.startswith("train_shard:")]
    cifar = [b for b in train_jobs if "results/cifar10/" in b]
    assert cifar and all(re.search(r"gpu=1\b", b) for b in cifar)
    assert all(not re.search(r"gpu=[1-9]", b) for b in train_jobs if "results/housing/" in b)


@pytest.mark.slow
@pytest.mark.xdist_group("housing")
def test_smoke_every_cifar_target_end_to_end(housing_built, tmp_path, monkeypatch):
    # On a copy of the session's Housing build (conftest.housing_built: smoke, one repetition of R = 20): fig1's
    # Housing panel is fig1c's audits, already made.
    workdir: Path = copy_built(housing_built, tmp_path / "work")
    monkeypatch.setenv("PYTHONPATH", package_env(workdir)["PYTHONPATH"])
    path = workdir / "config" / "config.yaml"
    config = yaml.safe_load(path.read_text())
    # one shard per audit keeps the number of (torch-importing) jobs down
    config["scales"]["smoke"]["cifar10"].update(runs=4, shard_size=4)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    run_snakemake(workdir, *ALL, timeout=1500)

    results = workdir / "results"
    for target in TARGETS:
        assert (results / target.removeprefix("results/")).stat().st_size > 1000, target
    fig1 = pd.read_csv(results / "fig1.csv")
    assert {"convnet", "fcnn"} <= set(fig1["model"]) and set(fig1["data_source"]) >= {"cifar10:synthetic"}
    fig12 = pd.read_csv(results / "fig12.csv")
    # every θ0 reading of the config's grid, each audit naming its crafted coordinate and the layer holding it
    assert set(fig12["theta0"]) == {"known", "shared_unknown", "per_run_known", "unknown"}
    assert {"coordinate", "layer"} <= set(fig12.columns) and fig12["layer"].notna().all()
    # the θ0 readings of one repetition and reading of d craft the same coordinate (only θ0 differs between them);
    # the fixed-initialisation d is on a bias, where the per-run known and unknown θ0 give the same ε̂
    assert set(fig12["coordinates"]) == {"all", "fixed_init"}
    assert (fig12.groupby(["coordinates", "rep"])["coordinate"].nunique() == 1).all()
    fixed = fig12[fig12["coordinates"] == "fixed_init"]
    assert fixed["layer"].str.endswith(".bias").all()
    by_theta0 = fixed.set_index(["theta0", "rep", "step"])["epsilon"]
    np.testing.assert_array_equal(by_theta0.loc["per_run_known"], by_theta0.loc["unknown"])
    fig13 = pd.read_csv(results / "fig13.csv")
    assert set(fig13["model"]) == {"alexnet_head", "convnet"}
    assert any("alexnet-random" in s for s in fig13["data_source"])
    fig8 = pd.read_csv(results / "fig8.csv")
    assert np.isfinite(fig8["mean"]).all() and (fig8["mean"] > 0).all()
    table2 = (results / "table2.md").read_text()
    assert "62006" in table2.replace(",", "") and "40970" in table2.replace(",", "")
    # every audit of a figure audits every insertion step, under the μ-GDP bound of its k
    for figure in ("fig2", "fig5", "fig11"):
        csv = pd.read_csv(results / f"{figure}.csv")
        assert (csv["step"] % csv["period"] == 0).all() and np.isfinite(csv["epsilon"]).all()
