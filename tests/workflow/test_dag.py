"""Every figure target of the project has a sensible DAG, at every scale (dry runs only)."""

from __future__ import annotations

import re

import pytest
import yaml

from conftest import REPO, run_snakemake
from hsaudit.pipeline.config import resolve_scale
from hsaudit.pipeline.costs import experiment_plans


def cpu_figures(scale: str) -> list[str]:
    """The CPU-sized figures (PDF targets) of every experiment's plan at ``scale``
    (:func:`hsaudit.pipeline.costs.experiment_plans`): what the default target must build, and nothing more. Read from
    the plans, so that a new paper's figures are dry-run here as they are registered."""
    config = resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": scale})
    return sorted({t.path for p in experiment_plans(config).values() for t in p.targets
                   if t.kind == "cpu" and t.path.endswith(".pdf")})  # fmt: skip


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
    figures = cpu_figures(scale)
    assert {"results/fig3.pdf", "results/steinke/fig1.pdf", "results/annamalai/fig2.pdf"} <= set(figures), figures
    proc = run_snakemake(workflow_copy, "-n", *figures, "--config", f"scale={scale}")
    jobs = _jobs(proc.stdout)
    assert sum(n for rule, n in jobs.items() if rule.startswith("plot")) >= len(figures), jobs
    # The default target builds every CPU-sized figure, and nothing it does not know about. At the config's own
    # scale it is `snakemake -n` as a user types it (no --config).
    own = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["scale"]
    assert own in ("paper", "smoke"), own  # one of the two cases here runs it as typed
    default = _jobs(run_snakemake(workflow_copy, "-n", *([] if scale == own else ["--config", f"scale={scale}"])).stdout)
    assert default == jobs | {"all": 1}
    # The GPU-sized figures are registered kind "gpu": rule all does not build them (they are named), whatever a
    # plan's list of CPU figures says: no Yoon job, no Steinke fig2/fig4/table2 training.
    assert not any("yoon" in rule for rule in default) and "train_steinke_shard" not in default, default


@pytest.mark.xdist_group("paper_dag")
def test_training_figures_run_the_training_stages(paper_dry_run):
    jobs = _jobs(paper_dry_run.of("results/fig1c.pdf"))  # `snakemake -n results/fig1c.pdf`'s jobs
    for stage in ("prepare_data", "make_setup", "craft_adversary", "train_shard", "extract_scores", "audit_epsilon"):
        assert jobs.get(stage, 0) >= 1, (stage, jobs)
    # Paper scale: R = 5,000 per audit in shards; 3 adversaries x 5 repetitions.
    assert jobs["audit_epsilon"] == 15
