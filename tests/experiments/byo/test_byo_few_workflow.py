"""results/byo/{name}/report.md of a few-runs audit (`canaries: M`, `trainings: K`) end to end at smoke: one job per
training and per control training, the report `hsaudit audit-training --canaries M` writes, and the code versions —
an edit of the pooled audit reruns the audit alone, never a training; the audit writes the figure the CLI writes."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml

from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.few_runs import audit_training_few
from hsaudit.experiments.byo.train.families import FewRunsDesign

from conftest import REPO, copy_workflow, job_counts, package_env, run_snakemake
from byo_testing import assert_few_figure_is_the_report

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("torch_one_thread")]
HERE = REPO / "tests" / "experiments" / "byo"
TARGET = "results/byo/few/report.md"


def test_few_runs_target_builds_and_an_audit_edit_retrains_nothing(tmp_path):
    work = copy_workflow(tmp_path / "wf", package=True)
    (work / "user").mkdir()
    for f in ("few_entry.py", "gauss_entry.py"):
        shutil.copy2(HERE / f, work / "user" / f)
    shutil.copy2(HERE / "newuser" / "handwritten_shuffled.py", work / "user" / "shuffled.py")
    few = {"entry": "user/few_entry.py:make_noise_tenth", "canaries": 200, "trainings": 2, "power_resamples": 10}
    # shuffled batches claimed as Poisson (K·M enough to exceed its claim): the check's reads decide, as in the CLI
    sampled = {"entry": "user/shuffled.py:make", "canaries": 1024, "trainings": 4, "canary": "out_of_support",
               "background": "data"}  # fmt: skip
    (work / "overlay.yaml").write_text(yaml.safe_dump({"scale": "smoke", "byo": {"few": few, "sampled": sampled}}))
    args = [TARGET, "--configfile", "config/config.yaml", "overlay.yaml"]
    env = package_env(work)
    run_snakemake(work, TARGET, "results/byo/sampled/report.md", *args[1:], timeout=600, env=env)
    sampled = json.loads((work / "results/byo/sampled/report.json").read_text())
    assert sampled["verdict"] == "violation" and "too even" in sampled["reason"], sampled["reason"]
    assert "reads of each row (check)" in sampled["details"] and sampled["model_steps"] == 0
    assert not (work / "results/byo/sampled/trainings").exists() and not (work / "results/byo/sampled/control").exists()
    report = json.loads((work / "results/byo/few/report.json").read_text())
    assert report["m"] == 400 and report["trainings"] == 2
    assert report["model_steps"] == 4 * 5  # 2 trainings and 2 control trainings of T = 5 steps
    assert (work / TARGET).read_text().startswith("# Few-runs audit of user/few_entry.py:make_noise_tenth")
    scores = pd.read_csv(work / "results/byo/few/scores.csv")
    assert len(scores) == 400 and set(scores["training"]) == {0, 1}
    # the jobs give what the API (and `hsaudit audit-training --canaries M`) gives for the same design and seed
    seed = report["details"]["seed"]
    api = audit_training_few(FewRunsDesign.of(f"{HERE / 'few_entry.py'}:make_noise_tenth", 200, 2, seed=seed),
                             AuditOptions(seed=seed, power_resamples=10))  # fmt: skip
    assert np.array_equal(api.scores["score"].to_numpy(), scores["score"].to_numpy())
    assert report["verdict"] == api.report.verdict and report["epsilon_hat"] == pytest.approx(api.report.epsilon_hat)
    assert report["power"]["probability"] == api.report.power.probability
    assert report["details"]["reads of each row (check)"] == api.report.details["reads of each row (check)"]
    assert_few_figure_is_the_report(work / "results/byo/few", report)  # the figure the CLI writes, from the same rule
    assert len(list((work / "results/byo/few/trainings").glob("*.csv"))) == 2
    assert len(list((work / "results/byo/few/control").glob("*.csv"))) == 2
    # an edit of the pooled audit (the bounds' module) reruns the audit (and its checkpoint), no training
    with open(work / "_pkg/hsaudit/experiments/byo/few_runs.py", "a") as fh:
        fh.write("\n_EDITED = True  # an edit\n")
    counts = job_counts(run_snakemake(work, "-n", *args, env=env).stdout)
    assert counts.get("audit_byo_few") == 1
    assert not {"check_byo_few", "train_byo_training", "plan_byo_few_control"} & set(counts), counts
