"""The plan of the byo: section (hsaudit.experiments.byo.plan) and its schema: defaults, enums that are the registries,
the audit setting's calibration, the populations and targets hsaudit plan reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from conftest import REPO
from hsaudit.accounting.gaussian import gaussian_epsilon
from hsaudit.audit.auditor import Crossing
from hsaudit.engine.canaries import BACKGROUNDS, CANARIES

from hsaudit.experiments.byo.plan import (
    BACKGROUND_CHOICES,
    CANARY_CHOICES,
    DEFAULTS,
    SETTING_DEFAULTS,
    audit_setting,
    check_data_use,
    checks,
    plan,
    shard_paths,
)
from hsaudit.experiments.byo.values import DESIGNS, PINNED, REQUIRED, Claim

SCHEMA = yaml.safe_load((REPO / "workflow/schemas/byo.schema.yaml").read_text())["$defs"]["audit"]["properties"]


def test_the_schema_states_the_plans_defaults_and_the_registries():
    assert {k: SCHEMA[k]["default"] for k in DEFAULTS} == DEFAULTS
    assert {k: v["default"] for k, v in SCHEMA["audit_setting"]["properties"].items()} == SETTING_DEFAULTS
    assert SCHEMA["canary"]["x-enum"] == "hsaudit.experiments.byo.plan.CANARY_CHOICES"
    assert SCHEMA["background"]["x-enum"] == "hsaudit.experiments.byo.plan.BACKGROUND_CHOICES"
    assert tuple(CANARY_CHOICES) == ("auto", *CANARIES) and tuple(BACKGROUND_CHOICES) == ("auto", *BACKGROUNDS)
    assert set(PINNED) <= set(CANARIES) | set(BACKGROUNDS) and PINNED in DESIGNS
    assert SCHEMA["rule"]["x-rules"] == "valid" and set(REQUIRED) <= set(SCHEMA["claim"]["properties"])


def test_the_config_example_is_planned():
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    byo = plan(config)
    audit = byo.audits["example"]
    assert audit.design.entry == config["byo"]["example"]["entry"] and isinstance(audit.options.rule, Crossing)
    assert [t.path for t in byo.targets] == ["results/byo/example/report.md"]
    # the audit's 2R models and the positive control's 2R, and the pilot's of the chosen design
    assert audit.design.chosen and audit.design.pilot_runs == config["byo"]["example"]["pilot_runs"]
    pilot = len(DESIGNS) * 2 * audit.design.pilot_runs
    assert byo.populations[0].models == 4 * audit.design.runs + pilot and byo.populations[0].root == audit.root
    assert plan({"seed": 1}).audits == {}


def test_a_given_canary_or_background_pins_the_design():
    def design(**keys):
        return plan({"byo": {"x": {"entry": "a.py:make", **keys}}}).audits["x"].design

    assert design().chosen and design().to_dict()["canary"] == "auto"
    assert (design(canary="dirac").canary, design(canary="dirac").background) == ("dirac", PINNED[1])
    assert (design(background="blank").canary, design(background="blank").background) == (PINNED[0], "blank")
    assert not design(canary="dirac").chosen and "pilot_runs" not in design(canary="dirac").to_dict()


def test_every_key_of_an_entry_is_checked():
    with pytest.raises(ValueError, match="byo.x: unknown key"):
        plan({"byo": {"x": {"entry": "a.py:make", "runz": 3}}})
    with pytest.raises(ValueError, match="byo.x: needs an entry"):
        plan({"byo": {"x": {"runs": 3}}})
    with pytest.raises(ValueError, match="byo.x: the verdict needs a valid rule"):
        plan({"byo": {"x": {"entry": "a.py:make", "rule": "paper"}}})


def test_the_audit_setting_is_calibrated_to_its_epsilon():
    s = audit_setting(steps=5, epsilon=4.0, delta=1e-5, sample_rate=1.0)
    assert gaussian_epsilon(noise_multiplier=s.noise_multiplier, compositions=5, delta=1e-5) == pytest.approx(4.0, rel=1e-3)
    assert (s.steps, s.sample_rate, s.epsilon) == (5, 1.0, 4.0)


def test_a_replace_one_setting_is_calibrated_to_its_epsilon_under_replace_one():
    """Fixed-size batches (TF Privacy's microbatches): the full batch's replace-one sensitivity is 2C, so its ε at σ
    is the add-remove ε at σ/2; calibrated on the full batch only."""
    s = audit_setting(steps=5, epsilon=4.0, delta=1e-5, neighbouring="replace-one")
    assert gaussian_epsilon(noise_multiplier=s.noise_multiplier / 2, compositions=5, delta=1e-5) == pytest.approx(4.0, rel=1e-3)
    assert s.neighbouring == "replace-one" and audit_setting().neighbouring == "add-remove"
    with pytest.raises(ValueError, match="full batch only"):
        audit_setting(sample_rate=0.5, neighbouring="replace-one")


def test_an_early_verdict_needs_no_shard(tmp_path):
    audit = plan({"byo": {"x": {"entry": "a.py:make", "shards": 3, "runs": 5}}}).audits["x"]
    (tmp_path / "early.json").write_text('{"early": {"verdict": "violation"}}')
    (tmp_path / "train.json").write_text('{"early": null}')
    assert shard_paths(audit, str(tmp_path / "early.json")) == []
    assert shard_paths(audit, str(tmp_path / "train.json")) == [
        f"results/byo/x/{part}/{i}.csv" for part in ("shards", "control") for i in range(3)
    ]
    alone = plan({"byo": {"x": {"entry": "a.py:make", "shards": 3, "runs": 5, "control": False}}}).audits["x"]
    assert shard_paths(alone, str(tmp_path / "train.json")) == [f"results/byo/x/shards/{i}.csv" for i in range(3)]
    # the check's reads of the data contradict the claim's sampling: a violation before training, as in the CLI
    assert not checks(str(tmp_path / "early.json")) and checks(str(tmp_path / "train.json"))
    (tmp_path / "few.json").write_text('{"early": {"verdict": "inconclusive"}}')
    assert checks(str(tmp_path / "few.json"))  # too few runs: the check's reads may still show a violation
    (tmp_path / "read.json").write_text('{"data use": "too even"}')
    (tmp_path / "fine.json").write_text('{"data use": null}')
    assert shard_paths(alone, str(tmp_path / "train.json"), str(tmp_path / "read.json")) == []
    assert shard_paths(alone, str(tmp_path / "train.json"), str(tmp_path / "fine.json")) == shard_paths(
        alone, str(tmp_path / "train.json"))


def test_the_few_runs_check_decides_from_its_probe(tmp_path):
    """A few-runs audit's check job writes only its probe (it imports none of the audit's code): the checkpoint's
    input function tests its reads against claim.json's claim — a shuffled loader's (every row read once per epoch)
    trains nothing, Poisson reads at the claim train every training and control training."""
    audit = plan({"byo": {"x": {"entry": "a.py:make", "canaries": 10, "trainings": 2}}}).audits["x"]
    claim = Claim(epsilon=5.0, delta=1e-5, noise_multiplier=1.0, max_grad_norm=1.0, sampling="poisson",
                  sample_rate=0.125, steps=24, neighbouring="add-remove")  # fmt: skip
    (tmp_path / "claim.json").write_text(json.dumps({"early": None, "claim": claim.to_dict()}))
    n, trainings, epochs = 500, 2, 3
    reads = {"even": [trainings * epochs] * n,
             "poisson": np.random.default_rng(0).binomial(trainings * claim.steps, claim.sample_rate, n).tolist()}
    for name, uses in reads.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"uses": uses, "use_trainings": trainings, "whole": []}))
    found = check_data_use(audit, str(tmp_path / "claim.json"), str(tmp_path / "even.json"))
    assert "too even" in found and shard_paths(audit, str(tmp_path / "claim.json"), str(tmp_path / "even.json")) == []
    assert shard_paths(audit, str(tmp_path / "claim.json"), str(tmp_path / "poisson.json")) == [
        f"results/byo/x/{part}/{i}.csv" for part in ("trainings", "control") for i in range(2)]
