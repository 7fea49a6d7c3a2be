"""Every figure target of the project has a sensible DAG, at every scale (dry runs only)."""

from __future__ import annotations

import re

import pytest

from conftest import run_snakemake

FIGURES = [
    "results/fig3.pdf",
    "results/fig14.pdf",
    "results/fig6b.pdf",
    "results/fig6c.pdf",
    "results/fig10.pdf",
    "results/fig1c.pdf",
    "results/fig4.pdf",
    "results/fig7.pdf",
    "results/steinke/fig1.pdf",
    "results/steinke/fig3.pdf",
    "results/steinke/fig5.pdf",
    "results/steinke/fig6.pdf",
    "results/annamalai/fig1.pdf",
    "results/annamalai/fig2.pdf",
    "results/one_run/fig1.pdf",
]


def _jobs(stdout: str) -> dict[str, int]:
    """The job-count table of a dry run: rule name -> number of jobs."""
    table = {}
    for line in stdout.splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
        if m and m[1] != "total":
            table[m[1]] = int(m[2])
    return table


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_every_figure_has_a_dag(workflow_copy, scale):
    proc = run_snakemake(workflow_copy, "-n", *FIGURES, "--config", f"scale={scale}")
    jobs = _jobs(proc.stdout)
    assert sum(n for rule, n in jobs.items() if rule.startswith("plot")) >= len(FIGURES), jobs
    # The default target builds every CPU-sized figure, and nothing it does not know about.
    default = _jobs(run_snakemake(workflow_copy, "-n", "--config", f"scale={scale}").stdout)
    assert default == jobs | {"all": 1}


def test_training_figures_run_the_training_stages(workflow_copy):
    jobs = _jobs(run_snakemake(workflow_copy, "-n", "results/fig1c.pdf").stdout)
    for stage in ("prepare_data", "make_setup", "craft_adversary", "train_shard", "extract_scores", "audit_epsilon"):
        assert jobs.get(stage, 0) >= 1, (stage, jobs)
    # Paper scale: R = 5,000 per audit in shards; 3 adversaries x 5 repetitions.
    assert jobs["audit_epsilon"] == 15
