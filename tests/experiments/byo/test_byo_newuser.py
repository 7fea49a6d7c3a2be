"""Scripts written as a new user would (tests/experiments/byo/newuser/, from README.md and docs/byo.md alone) never come
back "consistent" with a bug (issue 34): the check counts the training's reads of each row and a claim whose sampling
they contradict is a violation, before any audit model — also in the audit setting, whose full batch removes the
sampling that a DataLoader kept after ``make_private`` gets wrong (docs/journal/byo.md, 2026-11-28, "A new user's
scripts")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from hsaudit.cli import main
from hsaudit.experiments.byo.api import audit_training, prepare
from hsaudit.experiments.byo.audit import GUESS_FRACTIONS, AuditOptions
from hsaudit.experiments.byo.few_runs import OWN_NOT_CHECKED, audit_training_few, canaries_needed, check_reads
from hsaudit.experiments.byo.train.errors import UserCodeError
from hsaudit.experiments.byo.train.families import FewRunsDesign
from hsaudit.experiments.byo.train.harness import (USE_TRAININGS, data_use, flat_parameters, load, own_reads,
                                                   train_models)
from hsaudit.experiments.byo.values import AuditSetting, Claim, Design, data_use_finding

pytest.importorskip("opacus")
pytestmark = pytest.mark.usefixtures("torch_one_thread")

NEWUSER = Path(__file__).resolve().parent / "newuser"
SETTING = AuditSetting(steps=3, noise_multiplier=2.0, sample_rate=1.0)


def _given(name: str, entry: str = "make", **kw) -> Design:
    return Design(entry=f"{NEWUSER / name}.py:{entry}", canary="out_of_support", background="data", runs=50, **kw)


def test_swapped_loader_is_a_violation_in_the_audit_setting():
    """A real audit: the DataLoader kept after make_private runs the full batch in the setting (no bug there), but its
    own configuration reads every row once per epoch, too even for the Poisson sampling it claims."""
    result = audit_training(_given("opacus_loader_swapped", "make_auditable", setting=SETTING), control=False)
    rep = result.report
    assert rep.verdict == "violation", rep.reason
    assert "own configuration" in rep.reason and "too even" in rep.reason
    assert result.scores.empty  # decided by the check, before any audit model


def test_reads_as_declared_and_more_than_declared():
    """The correct script's reads agree with its claim; the one trained for twice its claimed epochs reads each row
    about twice as often as the claim's q·T."""
    right = prepare(_given("opacus_correct"), load(_given("opacus_correct")))
    assert right.probe.uses is not None and data_use(right) is None
    assert np.mean(right.probe.uses) / right.probe.use_trainings == pytest.approx(1 / 8 * 24, rel=0.1)
    longer = prepare(_given("opacus_epochs_twice"), load(_given("opacus_epochs_twice")))
    assert "on average" in (data_use(longer) or "")


def test_an_evaluation_pass_under_no_grad_is_not_a_training():
    """The correct script plus an accuracy pass over the training rows after each epoch (a tutorial's idiom): under
    ``torch.no_grad()`` its reads are not counted and nothing is found; the same pass with gradients enabled reads
    every row once more per epoch, past the claim's q·T, and is found (the test can fail)."""
    evaluated = _given("opacus_eval_pass")
    assert data_use(prepare(evaluated, load(evaluated))) is None
    graded = _given("opacus_eval_pass", "make_grad")
    assert "torch.no_grad()" in (data_use(prepare(graded, load(graded))) or "")


def test_own_configuration_is_its_own_module():
    """The correct script in the audit setting: its make(setting) sets module globals (``global SIGMA``), yet its own
    configuration, trained for the check, reads as its own claim declares — each configuration has its own module."""
    design = _given("opacus_correct", "make_auditable", setting=SETTING)
    right = prepare(design, load(design, own=True))
    assert right.probe.own_uses is not None and right.probe.uses is not None
    assert data_use(right) is None
    assert right.training.claim.steps == SETTING.steps and right.probe.own_claim["steps"] == 24
    data = right.worlds.dataset(False)
    before = flat_parameters(train_models(right.training, data, [7])[0])
    load(design.control_noise(1.5))  # make(setting at σ/1.5) sets SIGMA in its own copy of the module
    assert torch.equal(before, flat_parameters(train_models(right.training, data, [7])[0]))


def test_user_error_is_shown_as_theirs():
    """Opacus refuses a loop without zero_grad under Poisson sampling: the user's exception, not hsaudit's own."""
    with pytest.raises(UserCodeError, match="Poisson sampling is not compatible"):
        audit_training(Design(entry=f"{NEWUSER / 'opacus_no_zero_grad'}.py:make", runs=50), control=False)


CLAIM = Claim(epsilon=5.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
              sample_rate=0.125, steps=24, neighbouring="add-remove")  # fmt: skip


@pytest.mark.parametrize("seed", range(5))
def test_data_use_finding_level_and_power(seed):
    """Poisson reads at the claim pass; a shuffled loader (every row once per epoch), 2× the steps and the physical
    batch's q (4× the reads) are found."""
    rng = np.random.default_rng(seed)
    n, k = 500, 2
    assert data_use_finding(CLAIM, rng.binomial(k * CLAIM.steps, CLAIM.sample_rate, size=n), k) is None
    assert "too even" in data_use_finding(CLAIM, np.full(n, k * 3), k)
    assert "on average" in data_use_finding(CLAIM, rng.binomial(2 * k * CLAIM.steps, CLAIM.sample_rate, size=n), k)
    physical = CLAIM.__class__(**{**CLAIM.to_dict(), "sample_rate": 16 / 500})
    assert "on average" in data_use_finding(physical, rng.binomial(k * CLAIM.steps, CLAIM.sample_rate, size=n), k)
    assert data_use_finding(CLAIM, np.zeros(n, dtype=int), k) is None  # no read seen: nothing to say
    assert data_use_finding(CLAIM, np.eye(1, n, dtype=int)[0] * 2 * k, k) is None  # only Opacus' dataset[0] seen


@pytest.mark.parametrize("name, correct, wrong", [
    ("handwritten", ("handwritten_correct", "make"), ("handwritten_shuffled", "make")),
    ("workers", ("opacus_workers", "make"), ("opacus_workers", "make_swapped")),
])  # fmt: skip
def test_reads_of_data_tensors_and_of_workers_are_counted(name, correct, wrong):
    """Reads the check once missed: a loop over ``data.tensors`` (a Poisson mask ``x_all[batch]`` fed to vmap;
    shuffled batches ``x_all[perm[i:i + B]]``) and a DataLoader fetching in worker processes (``num_workers=2``). The
    correct script's reads agree with its claim's q·T; the shuffled loader claimed as Poisson is too even."""
    for entry, wrong_one in ((correct, False), (wrong, True)):
        design = _given(*entry)
        loaded = load(design)
        claim = loaded.training.claim
        uses, whole = own_reads(loaded.training, loaded.x, loaded.y, design)  # the check's two trainings
        assert uses is not None and whole == ()
        finding = data_use_finding(claim, uses, USE_TRAININGS)
        if wrong_one:
            assert "too even" in (finding or "")
        else:
            assert finding is None
            assert np.mean(uses) / USE_TRAININGS == pytest.approx(claim.sample_rate * claim.steps, rel=0.1)


def _few_canaries(name: str) -> int:
    """K·M that can exceed the script's claim (fewer decide "too few canaries" before the check: no training)."""
    claim = load(_given(name)).training.claim
    return canaries_needed(claim.epsilon, claim.delta, AuditOptions().confidence, GUESS_FRACTIONS, False, 2)


def test_few_runs_audit_of_shuffled_batches_is_a_violation_before_training(tmp_path, capsys):
    """``hsaudit audit-training --canaries M`` of shuffled batches claimed as Poisson: the check's reads are too even,
    a violation before any of the K trainings (no scores), the report's reads line as the population report's."""
    k = 4  # M = K·M / K canaries built by the check (the trainings, none of which runs, cost nothing here)
    m = -(-_few_canaries("handwritten_shuffled") // k)
    code = main(["audit-training", "--entry", f"{NEWUSER / 'handwritten_shuffled'}.py:make", "--canaries", str(m),
                 "--trainings", str(k), "--canary", "out_of_support", "--background", "data", "--out", str(tmp_path),
                 "--json"])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["verdict"] == "violation" and report["trainings"] == k, report["reason"]
    assert "does not sample as its claim declares" in report["reason"] and "too even" in report["reason"]
    assert report["model_steps"] == 0 and not (tmp_path / "scores.csv").exists()
    assert "- reads of each row (check): " in (tmp_path / "report.md").read_text()


def test_few_runs_audit_of_the_correct_script_trains():
    """The correct script's reads agree with its claim: its few-runs audit trains (M canaries scored) and its report
    gives the reads per training; in the audit setting, the own configuration's line says it was not checked."""
    m = _few_canaries("handwritten_correct")
    design = FewRunsDesign.of(f"{NEWUSER / 'handwritten_correct'}.py:make", m, canary="out_of_support",
                              background="data")  # fmt: skip
    result = audit_training_few(design, control=False)
    rep = result.report
    assert "sample" not in rep.reason and len(result.scores) == m, rep.reason
    assert rep.details["reads of each row (check)"].endswith("per training on average")
    assert "reads of each row (own configuration)" not in rep.details
    lines = check_reads({"uses": None, "whole": (), "use_trainings": 2}, rep.claim, True)[1]
    assert lines["reads of each row (own configuration)"] == OWN_NOT_CHECKED
