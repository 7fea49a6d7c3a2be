"""The plan of Steinke et al.'s targets (hsaudit.experiments.steinke.plan) at every scale: one population per root,
the training jobs that make them, the targets and figures, and the same populations in `hsaudit plan`."""

from __future__ import annotations

import inspect

import pytest
import yaml

from conftest import REPO
from hsaudit.experiments.steinke.figures import FIGURES
from hsaudit.experiments.steinke.plan import RESULTS, plan
from hsaudit.pipeline import costs
from hsaudit.pipeline.config import resolve_scale

SCALES = ("paper", "laptop", "smoke")


def _config(scale: str, **table1) -> dict:
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = resolve_scale({**raw, "scale": scale})
    config["steinke"]["table1"].update(table1)
    return config


@pytest.mark.parametrize("scale", SCALES)
def test_every_population_has_one_root_and_the_jobs_that_train_it(scale):
    p = plan(_config(scale))
    roots = [pop.root for pop in p.populations]
    assert len(roots) == len(set(roots))
    image = {f"{RESULTS}/{job.canary}/{key}" for key, job in p.jobs.items()}
    lm = {row.root for row in p.table1.rows}
    assert set(roots) == image | lm
    # every table reads shards of planned populations only, each from the job of its key
    readers = [t for audit in p.audits for _, t in audit.panels] + list(p.table2.rows) + list(p.table1.rows)
    assert {t.root for t in readers} == set(roots)
    for t in readers:
        if t.root in image:
            assert p.jobs[t.key].spec == t.spec and t.root.endswith(f"/{p.jobs[t.key].canary}/{t.key}")
        assert t.paths == [f"{t.root}/shard{s}.npz" for s in t.shards]
    section = p.section
    for pop in p.populations:
        if pop.root in image:
            job = p.jobs[pop.root.rsplit("/", 1)[1]]
            assert (pop.steps, pop.batch) == (job.spec["steps"], job.spec["batch_size"])
            assert pop.gpu == (job.resources["gpu"] > 0)
        else:
            assert pop.models == 2 * section["table1"]["models_per_world"] and pop.model == "causal_lm"


def test_a_table2_row_with_fig2s_values_is_fig2s_population():
    """Paper scale: table2's 4,096 row has fig2's B, σ, T and η: one population, listed with both figures, trained
    with the larger of the two sections' resources and fig2's device."""
    p = plan(_config("paper"))
    fig2 = p.audits[0].panels[0][1]
    assert p.table2.rows[0].root == fig2.root and p.table2.rows[1].root != fig2.root
    (shared,) = [pop for pop in p.populations if pop.root == fig2.root]
    assert shared.figures == ("steinke/fig2", "steinke/table2")
    section = p.section
    resources = p.jobs[fig2.key].resources
    for k in ("mem_mb", "runtime", "gpu", "threads"):
        assert resources[k] == max(section["fig2"]["resources"][k], section["table2"]["resources"][k])
    assert p.jobs[fig2.key].device == section["fig2"]["device"]
    assert p.jobs[p.table2.rows[1].key].resources == section["table2"]["resources"]


@pytest.mark.parametrize("scale", SCALES)
def test_targets_and_figures(scale):
    p = plan(_config(scale))
    kinds = {t.path: (t.kind, t.trained) for t in p.targets}
    for name in ("fig1", "fig3", "fig5", "fig6"):
        assert kinds[f"{RESULTS}/{name}.pdf"] == ("cpu", False)
    for path in (f"{RESULTS}/fig2.pdf", f"{RESULTS}/fig4.pdf", f"{RESULTS}/fig4_spread.pdf", f"{RESULTS}/table2.md"):
        assert kinds[path] == ("gpu", True)
    # Table 1 is a target only once its model and data are given
    assert f"{RESULTS}/table1.md" not in kinds and p.table1.missing
    given = plan(_config(scale, model="lm", data="pc.txt"))
    assert not given.table1.missing and f"{RESULTS}/table1.md" in {t.path for t in given.targets}
    # one figure function per figure, every one with the one signature
    assert sorted(f.name for f in p.figures) == sorted(FIGURES)
    for fn in FIGURES.values():
        params = inspect.signature(fn).parameters
        assert list(params) == ["table", "pdf", "csv", "facts"]
        assert all(params[k].kind is inspect.Parameter.KEYWORD_ONLY for k in ("pdf", "csv", "facts"))
    assert p.figure("fig2").csv == f"{RESULTS}/fig2.csv" and p.figure("fig2").tables == (p.audits[0].table,)
    with pytest.raises(ValueError, match="no Steinke figure"):
        p.figure("fig7")


@pytest.mark.parametrize("scale", SCALES)
def test_hsaudit_plan_prices_the_plans_populations(scale):
    config = _config(scale)
    priced = costs.all_populations(config, ["steinke"])
    ours = plan(config).populations
    assert [pop.key for pop in priced] == [(pop.root,) for pop in ours] and {pop.section for pop in priced} <= {"steinke"}
    for pop, mine in zip(priced, ours):
        assert (pop.figures, pop.models, pop.steps, pop.batch, pop.device == "gpu", pop.cost_factor) == (
            mine.figures, mine.models, mine.steps, mine.batch, mine.gpu, mine.cost_factor)


def test_fig4_spread_has_one_population_pair_per_canary():
    """fig4_spread: fig4's training on natural data, one Dirac population per coordinate (drawn: canary_draw i) and
    one label-flip population per image (drawn: index null, draw i); an explicit image equal to fig4's canary, at
    fig4's shard size, is fig4's natural population (one key, shared)."""
    from hsaudit.experiments.steinke.plan import plan_fig4, plan_fig4_spread

    config = _config("paper")
    fig4 = config["steinke"]["fig4"]
    ids = dict(seed=1, data_identity={"dataset": "toy"}, test_identity={"dataset": "toy", "split": "test"})
    spread = plan_fig4_spread({"coordinates": 3, "canaries": 2, "models_per_world": 10, "shard_size": 10}, fig4,
                              **ids)
    assert [(panel, canary) for panel, canary, _ in spread] == [
        ("dirac_0", "dirac"), ("dirac_1", "dirac"), ("dirac_2", "dirac"), ("label_flip_0", "label_flip"),
        ("label_flip_1", "label_flip")]
    assert len({p.key for _, _, p in spread}) == 5
    assert [p.spec["canary_draw"] for _, _, p in spread[:3]] == [0, 1, 2]
    assert all(p.spec["canary_dim"] is None and p.spec["background"] == "natural" for _, _, p in spread[:3])
    assert [p.spec["canary"] for _, _, p in spread[3:]] == [
        {"source": "test", "index": None, "label": None, "draw": i} for i in (0, 1)]
    assert all(p.shards == (0, 1) and p.spec["batch_size"] == fig4["batch_size"] for _, _, p in spread)
    explicit = plan_fig4_spread({"coordinates": [7], "canaries": [fig4["canary"]["index"]], "models_per_world": 50,
                                 "shard_size": fig4["shard_size"]}, {**fig4, "backgrounds": ["natural"]}, **ids)
    assert explicit[0][2].spec["canary_dim"] == 7 and "canary_draw" not in explicit[0][2].spec
    natural = plan_fig4({**fig4, "backgrounds": ["natural"]}, **ids)["natural"]
    assert explicit[1][2].key == natural.key
    with pytest.raises(ValueError, match="fig4_spread.canaries"):
        plan_fig4_spread({"coordinates": 1, "canaries": [3, 3], "models_per_world": 10, "shard_size": 10}, fig4, **ids)
