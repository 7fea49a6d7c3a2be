"""results/byo/{name}/report.md end to end (smoke): the checkpoint that trains nothing for an accounting bug, the
shards, the report and its figure; and the user module's text in the code version — editing it reruns the audits
that run it, and nothing else."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml

from conftest import REPO, check_pdf, job_counts, run_snakemake

pytestmark = pytest.mark.slow
ZOO = REPO / "tests" / "experiments" / "byo" / "zoo"


def test_byo_targets_end_to_end(workflow_copy):
    workdir = workflow_copy
    for name in ("user_a", "user_b"):
        (workdir / name).mkdir()
        for f in ("entries.py", "trainer.py"):
            shutil.copy2(ZOO / f, workdir / name / f)
    shutil.copy2(ZOO.parent / "newuser" / "handwritten_shuffled.py", workdir / "user_a" / "shuffled.py")
    small = {"canary": "dirac", "background": "blank", "runs": 6}
    overlay = {
        "scale": "smoke",
        "byo": {
            # the default design: chosen by the check job's pilot (its candidates' controls, 5 runs per world)
            "first": {"entry": "user_a/entries.py:correct", "shards": 2, "runs": 6, "pilot_runs": 5},
            "early": {"entry": "user_a/entries.py:replace_one_as_add_remove", **small},
            "other": {"entry": "user_b/entries.py:correct", **small},
            # shuffled batches claimed as Poisson: too few runs, but the check's reads decide (as in the CLI)
            "sampled": {"entry": "user_a/shuffled.py:make", "canary": "out_of_support", "background": "data",
                        "runs": 6},
        },
    }
    (workdir / "overlay.yaml").write_text(yaml.safe_dump(overlay))
    config = ["--configfile", "config/config.yaml", "overlay.yaml"]
    targets = ["results/byo/first/report.md", "results/byo/early/report.md", "results/byo/sampled/report.md"]
    run_snakemake(workdir, *targets, *config, timeout=600)
    first = (workdir / targets[0]).read_text()
    # 6 runs per world cannot see a leak of 1.5x the claim: the control says so
    assert first.startswith("# Audit of user_a/entries.py:correct") and "**Verdict: inconclusive**" in first
    assert "## Power (the positive control)" in first and "chosen by a pilot: " in first and "pilot cost" in first
    check_pdf(workdir / "results/byo/first/fig.pdf")
    assert len(pd.read_csv(workdir / "results/byo/first/scores.csv")) == 12
    assert len(list((workdir / "results/byo/first/shards").glob("*.csv"))) == 2
    assert len(list((workdir / "results/byo/first/control").glob("*.csv"))) == 2
    early = (workdir / targets[1]).read_text()
    assert "**Verdict: violation** — accounting" in early
    assert not (workdir / "results/byo/early/shards").exists() and not (workdir / "results/byo/early/probe.json").exists()
    sampled = (workdir / targets[2]).read_text()
    assert "**Verdict: violation** — the training does not sample as its claim declares" in sampled
    assert "too even" in sampled and not (workdir / "results/byo/sampled/shards").exists()
    # editing user_b (which neither audit runs) reruns nothing; editing user_a reruns both audits that run it
    with open(workdir / "user_b" / "entries.py", "a") as fh:
        fh.write("\n_EDITED = True  # an edit\n")
    assert job_counts(run_snakemake(workdir, "-n", *targets, *config).stdout) == {}
    with open(workdir / "user_a" / "entries.py", "a") as fh:
        fh.write("\n_EDITED = True  # an edit\n")
    # (the shards sit behind the checkpoint in the DAG of report.md: name them to see their own jobs)
    files = [f"results/byo/first/{f}" for f in ("claim.json", "probe.json", "canary.npz", "shards/0.csv", "shards/1.csv")]
    files.append("results/byo/early/claim.json")
    changed = set(run_snakemake(workdir, "--list-changes", "params", *files, *config).stdout.split())
    assert set(files) <= changed
