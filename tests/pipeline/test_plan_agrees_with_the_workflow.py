"""`hsaudit plan` and the workflow agree on what they train: for every target of Cebere et al.'s plan and the one-run
study's, at every scale, the population roots the cost planner lists are exactly the roots whose training jobs a
Snakemake dry run of that target schedules.

The dry run's job graph (``snakemake --dag``, one per scale for every target at once; nothing runs) gives, for each
target, the training jobs it depends on; a training job's root is read from the jobs it depends on (the audit or
one-run key of its crafting job, the dataset of its data job).
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
import yaml

from conftest import REPO, run_snakemake
from hsaudit.experiments.cebere.plan import plan as cebere_plan
from hsaudit.experiments.one_run.plan import plan as one_run_plan
from hsaudit.pipeline import costs
from hsaudit.pipeline.config import resolve_scale

NODE = re.compile(r'^\t(\d+)\[label = "([^"]*)"')
EDGE = re.compile(r"^\t(\d+) -> (\d+)$")
# The rule that makes a target, where it is not plot_cebere_<id>.
MAKER = {"table2": "write_cebere_table2", "one_run/fig1": "plot_one_run_fig1"}


def resolved(scale: str) -> dict:
    return resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": scale})


def our_targets(config: dict) -> list:
    return [*cebere_plan(config).targets, *one_run_plan(config).targets]


def job_graph(dot: str) -> tuple[dict[int, tuple[str, dict[str, str]]], dict[int, set[int]]]:
    """(job id -> (rule, the wildcards its label shows), job id -> the jobs it depends on) of ``snakemake --dag``.

    A job's label shows the wildcards its dependencies do not have (e.g. a crafting job's audit key)."""
    jobs, deps = {}, defaultdict(set)
    for line in dot.splitlines():
        if m := NODE.match(line):
            rule, *wildcards = m.group(2).split("\\n")
            jobs[int(m.group(1))] = (rule, dict(w.split(": ", 1) for w in wildcards))
        elif m := EDGE.match(line):
            deps[int(m.group(2))].add(int(m.group(1)))
    return jobs, deps


def trained_roots(jobs, deps, target_rule: str) -> set[str]:
    """The roots of every training job that the job of ``target_rule`` depends on, transitively."""

    def ancestors(job: int) -> set[int]:
        seen, todo = set(), [job]
        while todo:
            for dep in deps[todo.pop()] - seen:
                seen.add(dep)
                todo.append(dep)
        return seen

    def wildcard(job: int, rule: str | tuple[str, ...], name: str) -> str:
        rules = (rule,) if isinstance(rule, str) else rule
        (value,) = {jobs[a][1][name] for a in ancestors(job) if jobs[a][0] in rules}
        return value

    (final,) = [j for j, (rule, _) in jobs.items() if rule == target_rule]
    roots = set()
    for job in ancestors(final):
        rule = jobs[job][0]
        if rule == "train_shard":
            roots.add(f"results/{wildcard(job, 'prepare_data', 'dataset')}/audits/"
                      f"{wildcard(job, ('craft_adversary', 'craft_fixed_init'), 'audit')}")
        elif rule in ("train_one_run_shard", "simulate_one_run_noiseless", "train_one_run_reference"):
            root = (f"results/one_run/{wildcard(job, 'prepare_data', 'dataset')}/"
                    f"{wildcard(job, 'craft_one_run_canaries', 'key')}")
            roots.add({"train_one_run_shard": root, "simulate_one_run_noiseless": f"{root}/noiseless",
                       "train_one_run_reference": f"{root}/reference/{jobs[job][1].get('kind')}"}[rule])
    return roots


def test_the_graph_reader_finds_the_roots():
    """A hand-written graph: a figure over two shards of one audit and a one-run shard, beside an unrelated job."""
    dot = "\n".join([
        '\t0[label = "plot_cebere_fig9", color = "0 0 0", style="rounded"];',
        '\t1[label = "train_shard\\nindex: 0", color = "0 0 0", style="rounded"];',
        '\t2[label = "train_shard\\nindex: 1", color = "0 0 0", style="rounded"];',
        '\t3[label = "craft_adversary\\naudit: abc", color = "0 0 0", style="rounded"];',
        '\t4[label = "prepare_data\\ndataset: housing", color = "0 0 0", style="rounded"];',
        '\t5[label = "train_one_run_shard\\nindex: 0", color = "0 0 0", style="rounded"];',
        '\t6[label = "craft_one_run_canaries\\nkey: def", color = "0 0 0", style="rounded"];',
        '\t7[label = "train_shard\\nindex: 0", color = "0 0 0", style="rounded"];',
        '\t8[label = "simulate_one_run_noiseless", color = "0 0 0", style="rounded"];',
        "\t1 -> 0", "\t2 -> 0", "\t3 -> 1", "\t3 -> 2", "\t4 -> 3", "\t4 -> 1", "\t4 -> 2",
        "\t5 -> 0", "\t6 -> 5", "\t4 -> 6", "\t4 -> 5", "\t4 -> 7", "\t8 -> 0", "\t6 -> 8", "\t4 -> 8",
    ])  # fmt: skip
    jobs, deps = job_graph(dot)
    assert trained_roots(jobs, deps, "plot_cebere_fig9") == {"results/housing/audits/abc",
                                                              "results/one_run/housing/def",
                                                              "results/one_run/housing/def/noiseless"}


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["smoke", "laptop", "paper"])
def test_every_target_trains_what_hsaudit_plan_prices(workflow_copy, scale):
    config = resolved(scale)
    targets = our_targets(config)
    proc = run_snakemake(workflow_copy, "--dag", "--config", f"scale={scale}", "--", *(t.path for t in targets),
                         timeout=900)
    jobs, deps = job_graph(proc.stdout)
    assert jobs, proc.stdout[-2000:] + proc.stderr[-2000:]
    for target in targets:
        planned = {pop.key[0] for pop in costs.plan([target.path], config).populations}
        scheduled = trained_roots(jobs, deps, MAKER.get(target.id, f"plot_cebere_{target.id}"))
        assert planned == scheduled, (target.path, sorted(planned ^ scheduled))
        assert bool(planned) == (target.trained and target.id != "table2"), target.path
