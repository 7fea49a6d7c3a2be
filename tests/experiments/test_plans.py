"""The plan values every experiment package hands to the workflow and to `hsaudit plan`."""

from __future__ import annotations

import pytest

from hsaudit.experiments.plans import Population, Target, merge_populations


def _pop(root: str, figures: tuple[str, ...], models: int) -> Population:
    return Population(root=root, figures=figures, model="fcnn", models=models, steps=10, batch=4)


def test_a_shared_root_is_one_population_with_every_figure_and_the_largest_r():
    merged = merge_populations([_pop("a", ("fig1c",), 100), _pop("b", ("fig4",), 5), _pop("a", ("one_run/fig1",), 300)])
    assert [p.root for p in merged] == ["a", "b"]
    assert merged[0].figures == ("fig1c", "one_run/fig1")
    assert merged[0].models == 300
    assert merged[0].model_steps == 3000


def test_target_ids_and_kinds():
    assert Target("results/steinke/table2.md").id == "steinke/table2"
    assert Target("results/fig3.pdf", trained=False).id == "fig3"
    with pytest.raises(ValueError, match="kind"):
        Target("results/fig3.pdf", kind="tpu")
    with pytest.raises(ValueError, match="models"):
        _pop("a", (), -1)
