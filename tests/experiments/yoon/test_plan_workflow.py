"""``hsaudit plan`` and the workflow agree on the Yoon et al. and Annamalai targets: at every scale, the population
roots that the cost planner lists for a target (:func:`hsaudit.pipeline.costs.plan`) are the roots whose training
a dry run of that target schedules (read from the DAG of ``snakemake -n``: the jobs upstream of the target).

A Yoon population lives in ``results/yoon/models/<key>`` (``train_yoon_models``); a black-box audit's surrogates
in ``results/yoon/audits/<key>`` (``audit_yoon_run`` distils them; its jobs are the ones that ask for the GPU, so
the dry run sets ``yoon.resources.gpu: 1`` at every scale, which keys nothing). Annamalai trains nothing.
"""

from __future__ import annotations

import copy
import os
import re

import pytest
import yaml

from conftest import REPO, run_snakemake
from hsaudit.pipeline import costs
from hsaudit.pipeline.config import resolve_scale

YOON = [f"results/yoon/{f}.pdf" for f in ("fig2", "fig3", "fig4", "fig5", "fig6", "fig7", "fig8", "crafting")]
TARGETS = [*YOON, "results/yoon/table1.md", "results/annamalai/fig1.pdf", "results/annamalai/fig2.pdf"]
TRAINING = {"train_yoon_models"}  # every rule that trains a model of these targets (surrogates: below)


def dry_run_jobs(output: str) -> list[dict]:
    """The jobs of a dry run: rule, inputs, outputs and whether the job asks for a GPU."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", output):
        head = re.match(r"(?:local)?rule (\w+):", block)
        if not head:
            continue

        def files(field: str) -> list[str]:
            line = re.search(rf"^\s+{field}: (.*)$", block, re.M)
            return [f.strip() for f in line.group(1).split(",")] if line else []

        jobs.append({"rule": head.group(1), "input": files("input"), "output": files("output"),
                     "gpu": bool(re.search(r"\bgpu=[1-9]", block))})  # fmt: skip
    return jobs


def upstream_roots(jobs: list[dict], target: str) -> set[str]:
    """The roots of the populations trained upstream of ``target``: training jobs' output folders, and the folders
    of the audit jobs that train surrogates."""
    producer = {path: job for job in jobs for path in job["output"]}
    roots, seen, stack = set(), set(), [target]
    while stack:
        job = producer.get(stack.pop())
        if job is None or id(job) in seen:
            continue
        seen.add(id(job))
        if job["rule"] in TRAINING or (job["rule"] == "audit_yoon_run" and job["gpu"]):
            roots.add(os.path.dirname(job["output"][0]))
        stack.extend(job["input"])
    return roots


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["paper", "laptop", "smoke"])
def test_cost_plan_and_dry_run_train_the_same_populations(workflow_copy, scale):
    overlay = workflow_copy / "gpu.yaml"
    overlay.write_text(yaml.safe_dump({"yoon": {"resources": {"gpu": 1}}}))
    proc = run_snakemake(workflow_copy, "-n", "--config", f"scale={scale}", "--configfile", "config/config.yaml",
                         str(overlay), "--", *TARGETS, timeout=900)  # fmt: skip
    jobs = dry_run_jobs(proc.stdout)
    assert {job["rule"] for job in jobs} >= {"train_yoon_models", "audit_yoon_run", "audit_annamalai"}
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = resolve_scale({**copy.deepcopy(raw), "scale": scale})
    for target in TARGETS:
        planned = {pop.key[0] for pop in costs.plan([target], config).populations}
        assert all(root.startswith("results/") for root in planned), planned
        assert planned == upstream_roots(jobs, target), target
        assert bool(planned) == target.startswith("results/yoon/"), target
