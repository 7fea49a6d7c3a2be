"""Cebere et al.'s plan (hsaudit.experiments.cebere.plan): the values its rules and `hsaudit plan` read."""

from __future__ import annotations

import copy
import inspect

import pytest
import yaml

from conftest import REPO
from hsaudit.experiments.cebere.figures import FIGURES
from hsaudit.experiments.cebere.plan import plan, plan_dataset
from hsaudit.experiments.one_run.figures import FIGURES as ONE_RUN_FIGURES
from hsaudit.pipeline.config import resolve_scale


def resolved(scale: str) -> dict:
    return resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": scale})


@pytest.fixture(scope="module", params=["paper", "laptop", "smoke"])
def planned(request):
    return plan(resolved(request.param))


def test_every_target_has_its_figure_function_with_the_one_signature(planned):
    assert {t.id for t in planned.targets} == set(FIGURES)
    for fn in [*FIGURES.values(), *ONE_RUN_FIGURES.values()]:
        params = inspect.signature(fn).parameters
        assert list(params) == ["table", "pdf", "csv", "facts"], fn.__qualname__
        assert [p.kind for p in params.values()][1:] == [inspect.Parameter.KEYWORD_ONLY] * 3, fn.__qualname__


def test_targets_kinds_and_parts(planned):
    by_id = {t.id: t for t in planned.targets}
    assert all(t.trained for t in by_id.values())
    assert {i for i, t in by_id.items() if t.kind == "cpu"} == {"fig1c", "fig4", "fig7"}
    assert by_id["fig1"].parts == ("fig1c",)


def test_one_population_per_audit_a_figure_reads(planned):
    for name, dataset in planned.datasets.items():
        refs = {ref.key: ref for refs in dataset.figures.values() for ref in refs}
        pops = [p for p in planned.populations if p.root.startswith(f"results/{name}/")]
        assert sorted(p.root for p in pops) == sorted(f"results/{name}/audits/{key}" for key in refs)
        for pop in pops:
            ref = refs[pop.root.rsplit("/", 1)[1]]
            params = dataset.audits[ref.key]
            extra = params["simulations"] if ref.adversary.startswith("gc_s_noisy") else 0
            assert pop.models == ref.runs + extra and pop.role == ref.adversary
            assert pop.steps == params["setup"]["dpsgd"]["steps"]
            # every figure that shows the audit, and only those
            assert set(pop.figures) == {f for f, rs in dataset.figures.items() if any(r.key == ref.key for r in rs)}


def test_figure_jobs_read_the_audits_of_their_figure(planned):
    jobs = {job.figure: job for job in planned.figure_jobs}
    housing, cifar = planned.datasets["housing"], planned.datasets["cifar10"]
    assert jobs["fig4"].inputs["tables"] == housing.audit_tables("fig4")
    assert [r["key"] for r in jobs["fig4"].params["refs"]] == [r.key for r in housing.figures["fig4"]]
    assert jobs["fig1"].inputs["housing"] == housing.audit_tables("fig1c")
    assert jobs["fig8"].inputs["shards"] == cifar.shards("fig8") and "tables" not in jobs["fig8"].inputs
    assert len(jobs["fig12"].inputs["crafted"]) == len(cifar.figures["fig12"])
    assert all(path.endswith(".npz") for path in jobs["fig13"].inputs["datasets"])


def test_the_base_audit_is_the_sections_own_gc_r_repetition_0():
    config = resolved("paper")
    planned = plan(config)
    base = planned.base["housing"]
    # fig1c has no overrides: its first A_GC-R repetition is the section's own configuration.
    fig1c = [r for r in planned.datasets["housing"].figures["fig1c"] if r.adversary == "gc_r" and r.rep == 0]
    assert [r.root for r in fig1c] == [base.root]
    assert base.table_path(1000) == f"{base.root}/R1000-s{config['housing']['shard_size']}/epsilon.csv"
    # A figure's override does not move it; a change of the section's own values does.
    changed = copy.deepcopy(config)
    changed["housing"]["figures"]["fig1c"]["lr"] = 0.5
    assert plan(changed).base["housing"].key == base.key
    changed["housing"]["lr"] = 0.5
    assert plan(changed).base["housing"].key != base.key


def test_plan_dataset_refuses_an_unknown_dataset():
    with pytest.raises(ValueError, match="'mnist'"):
        plan_dataset(resolved("smoke")["housing"], seed=0, dataset="mnist")
