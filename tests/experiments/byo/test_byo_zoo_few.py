"""scripts/byo_zoo.py's few-runs study with the Dirac family: which entries take it (the loss takes the per-row
canary term, the model has the parameters) and the population audit's rows read from the zoo's tables."""

from __future__ import annotations

import pytest

import byo_testing  # noqa: F401  (puts the zoo on the import path)
import entries
import wide_zoo
from conftest import load_script

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def zoo():
    return load_script("byo_zoo")


def entry(zoo, name):
    return {z.name: z for z in (*zoo.ZOO, *zoo.FEW_EXTRA)}[name]


def test_dirac_fit_takes_the_wide_twin_and_says_why_not_elsewhere(zoo):
    wide = entry(zoo, "wide_dpsgd")
    assert zoo.dirac_fit(wide, 100) is None
    free = wide_zoo.FEATURES * wide_zoo.CLASSES  # the linear model's weights
    too_many = int(free / zoo.DIRAC_MARGIN) + 1
    assert f"fewer than {zoo.DIRAC_MARGIN:g} × M" in zoo.dirac_fit(wide, too_many)
    assert "fails on a Dirac family's rows" in zoo.dirac_fit(entry(zoo, "correct"), 2)  # one direction, no k


def test_dirac_fit_sees_a_loss_without_the_term(zoo, tmp_path):
    source = (zoo.REPO / "tests" / "experiments" / "byo" / "wide_zoo.py").read_text()
    (tmp_path / "no_term.py").write_text(source.replace("term = wi * data.canary_term", "term = 0 * data.canary_term"))
    no_term = zoo.ZooEntry("no_term", "control", f"{tmp_path / 'no_term.py'}:make", "dirac", "data", 1, "",
                           setting=True)  # fmt: skip
    assert "does not take w * data.canary_term(model, k)" in zoo.dirac_fit(no_term, 2)


def test_population_tables_read_the_zoo_tables_last_wins(zoo, tmp_path):
    page = tmp_path / "journal.md"
    header = "| entry | kind | what | canary / background | flagged | R | check |\n|---|---|---|---|---:|---:|---|\n"
    row = "| correct | control | c | dirac / blank | {} | 500 | pass |\n\n"
    few = "| entry | kind | M | K | flagged |\n|---|---|---:|---:|---:|\n| correct | control | 100 | 1 | 9/9 |\n"
    page.write_text("## one\n\n" + header + row.format("0/20") + "## two\n\n" + header + row.format("0/40") + few)
    tables = zoo.population_tables(page)
    assert tables == {"correct": ("0/40", 500)}
    twin = zoo.population(entry(zoo, "wide_dpsgd"), tables)
    assert twin["population_entry"] == "correct" and twin["population_flagged"] == "0/40"
    assert twin["population_model_steps"] == 2 * 2 * 500 * entries.BASE.steps


def test_the_wide_twins_other_bugs_claim_the_correct_training_and_the_sampling_ones_vanish_in_the_full_batch():
    """Each wide twin of the zoo's other bug classes states the claim of the correct loop (own configuration and
    audit setting alike); the rate, shuffling and batch-size bugs train the correct model in the full batch (no
    bug there: their study runs the own configuration) and another model below it."""
    import torch
    from torch.utils.data import TensorDataset

    from hsaudit.experiments.byo.plan import audit_setting

    bugs = (wide_zoo.make_batch_clipping, wide_zoo.make_accumulation, wide_zoo.make_steps_doubled,
            wide_zoo.make_noise_sqrt2, wide_zoo.make_q_doubled, wide_zoo.make_shuffle_as_poisson,
            wide_zoo.make_normalise_by_batch)  # fmt: skip
    setting = audit_setting()
    claim = wide_zoo.make().claim
    assert all(make().claim == claim for make in bugs)  # the setting's claim: make(setting) reads only the setting
    data = TensorDataset(*wide_zoo.dataset())
    correct = {where: wide_zoo.make(setting if where else None).train(data, 3).weight for where in ("setting", None)}

    def same(make, where) -> bool:
        return torch.equal(make(setting if where else None).train(data, 3).weight, correct[where])

    assert same(wide_zoo.make_q_doubled, "setting") and same(wide_zoo.make_normalise_by_batch, "setting")
    assert not same(wide_zoo.make_q_doubled, None) and not same(wide_zoo.make_normalise_by_batch, None)
    assert not same(wide_zoo.make_shuffle_as_poisson, None)
