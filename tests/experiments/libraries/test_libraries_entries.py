"""Every Opacus script of examples/libraries/opacus/ is an entry hsaudit loads in the audit setting: its claim is
Opacus' own accountant's for what it runs, its training deterministic in the seed with θ0 fixed by init_seed."""

from __future__ import annotations

import math
import warnings

import pytest

from conftest import REPO
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import load, prepare
from hsaudit.experiments.byo.values import Design

SCRIPTS = sorted(p.name for p in (REPO / "examples/libraries/opacus").glob("*.py") if p.name != "opacus_common.py")


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_loads_and_trains_in_the_audit_setting(script):
    from opacus.accountants.utils import create_accountant

    setting = audit_setting()
    design = Design(entry=f"{REPO}/examples/libraries/opacus/{script}:make", canary="out_of_support", runs=2,
                    setting=setting)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load(design)
        claim = loaded.training.claim
        assert claim.steps == setting.steps and claim.sample_rate == 1.0
        assert math.isclose(claim.noise_multiplier, setting.noise_multiplier, rel_tol=1e-6)
        acc = create_accountant(claim.accountant.removeprefix("opacus "))
        acc.history = [(claim.noise_multiplier, 1.0, claim.steps)]
        assert claim.epsilon == pytest.approx(acc.get_epsilon(claim.delta), rel=1e-6)
        probe = prepare(design, loaded).probe  # deterministic in the seed, finite loss
    assert probe.theta0 != "varies with the seed"
    assert probe.seed_sensitive == ("optimizer_recreated" not in script)  # the planted bug drops the noise
