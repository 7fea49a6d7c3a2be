"""`hsaudit plan` and the workflow agree on Steinke et al.'s populations: for every trained target at every scale,
the population roots that the cost planner prices are exactly the roots of the shards that the target's rule reads in
a dry run, and the dry run trains every one of those shards and nothing else — with Table 2's η tuned per row too
(config/steinke-table2-lr-tuning.yaml: its candidates are read by the table and priced by the plan)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest
import yaml

from conftest import REPO, run_snakemake
from hsaudit.pipeline import costs
from hsaudit.pipeline.config import resolve_scale, user_values
from hsaudit.util.mapping import deep_merge

# Each trained target and the rule that reads its populations' shards.
READERS = {
    "results/steinke/fig2.pdf": "audit_steinke_fig2",
    "results/steinke/fig4.pdf": "audit_steinke_fig4",
    "results/steinke/fig4_spread.pdf": "audit_steinke_fig4_spread",
    "results/steinke/table2.md": "tabulate_steinke_table2",
    "results/steinke/table1.md": "tabulate_steinke_table1",
}
TRAINERS = ("train_steinke_shard", "train_steinke_table1", "train_steinke_lr_candidate", "train_steinke_tuned_shard")
TUNING = "config/steinke-table2-lr-tuning.yaml"


def _blocks(output: str, rule: str) -> list[str]:
    return [b for b in re.split(r"\n(?=(?:local)?rule \w+:)", output) if b.startswith(f"rule {rule}:")]


def _paths(block: str, field: str) -> set[str]:
    m = re.search(rf"^\s*{field}: (.*)$", block, re.MULTILINE)
    return set(m.group(1).split(", ")) if m else set()


def _roots(paths: set[str]) -> set[str]:
    return {str(PurePosixPath(p).parent) for p in paths if re.search(r"/shard\d+\.npz$", p)}


@pytest.mark.parametrize(("scale", "tuned"), [("paper", False), ("laptop", False), ("smoke", False),
                                             ("paper", True), ("smoke", True)])
def test_plan_prices_the_populations_the_rules_train(workflow_copy, tmp_path, scale, tuned):
    # Table 1 runs only with a model and data by path; a dry run needs no real ones.
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "pc.txt").write_text("hi\n")
    overlay = {"steinke": {"table1": {"model": str(tmp_path / "model"), "data": str(tmp_path / "pc.txt")}}}
    paths = tmp_path / "paths.yaml"
    paths.write_text(yaml.safe_dump(overlay))
    if tuned:
        overlay = deep_merge(overlay, yaml.safe_load((REPO / TUNING).read_text()))
        paths.write_text(yaml.safe_dump(overlay))
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    files = [str(REPO / "config" / "config.yaml"), str(paths)]
    config = resolve_scale(deep_merge(deep_merge(raw, overlay), {"scale": scale}),
                           explicit=user_values(files, {"scale": scale}, raw))

    proc = run_snakemake(workflow_copy, "-n", *READERS, "--config", f"scale={scale}", "--configfile",
                         "config/config.yaml", str(paths))
    trained = set().union(*(_roots(_paths(b, "output")) for rule in TRAINERS for b in _blocks(proc.stdout, rule)))
    read = set()
    for target, rule in READERS.items():
        (block,) = _blocks(proc.stdout, rule)
        roots = _roots(_paths(block, "input"))
        priced = {root for pop in costs.plan([target], config).populations for (root,) in [pop.key]}
        assert roots and roots == priced, (target, scale)
        read |= roots
    assert trained == read
    tuning = {root for root in read if "/lr_tuning/" in root}
    assert bool(tuning) == tuned and len(tuning) == (3 * 10 if tuned else 0)  # 3 rows × the overlay's 10 η
