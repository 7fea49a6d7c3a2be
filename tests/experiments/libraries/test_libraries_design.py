"""A row's own design (``libraries.rows.<row>.audit``, byo options over the shared ones): the per-layer row's
opposing canary, whose options reach the canary and the copies background alike and whose per-tensor gradients reach
Opacus' per-layer bounds; the GDP row at the script's own small q, flagged before any training."""

from __future__ import annotations

import importlib
import sys
import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch
import yaml

from conftest import REPO
from hsaudit.experiments.byo.api import early_report
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import design_options, load, prepare
from hsaudit.experiments.byo.values import Design
from hsaudit.experiments.libraries.audit import markdown, table
from hsaudit.experiments.libraries.plan import plan

pytest.importorskip("opacus")
CONFIG = yaml.safe_load((REPO / "config/config.yaml").read_text())
ROWS = CONFIG["libraries"]["rows"]
PER_LAYER = f"{REPO}/examples/libraries/opacus/per_layer.py:make"


def test_a_row_sets_its_own_byo_options_over_the_shared_ones():
    libs = plan(CONFIG)
    own = ROWS["opacus_per_layer"]["audit"]
    row = libs.rows["opacus_per_layer"].audit.design
    assert (row.canary, row.background, row.canary_options) == (own["canary"], own["background"], own["canary_options"])
    other = libs.rows["opacus_hooks"].audit.design
    assert (other.canary, other.canary_options) == (CONFIG["libraries"]["audit"]["canary"], None)
    assert "canary_options" not in other.to_dict()  # the other rows' job params as before options existed
    assert Design.from_dict(row.to_dict()) == row
    assert libs.rows["opacus_gdp_small_q"].audit.design.setting is None  # the script's own configuration
    assert set(libs.facts["own_designs"]) == {n for n, v in ROWS.items() if v.get("audit") and n in libs.rows}
    assert "amplitude" in libs.facts["own_designs"]["opacus_per_layer"]
    text = markdown(table([]), not_run={}, facts=libs.facts, figure="fig.pdf")
    assert all(f"- {name}: " in text for name in libs.facts["own_designs"])
    with pytest.raises(ValueError, match="unknown key"):
        plan({"libraries": {"rows": {"r": {**ROWS["opacus_hooks"], "audit": {"no_such_option": 1}}}}})


def test_canary_options_reach_the_canary_and_the_background():
    design = Design(entry=PER_LAYER, canary="opposing", background="copies", runs=2, setting=audit_setting(),
                    canary_options={"amplitude": 1.5})  # fmt: skip
    assert design_options(design) == ({"amplitude": 1.5}, {"amplitude": 1.5})
    with pytest.raises(ValueError, match="takes"):
        design_options(replace(design, canary_options={"transform": "noise"}))
    with pytest.raises(ValueError, match="given canary"):
        Design(entry=PER_LAYER, runs=2, canary_options={"amplitude": 1.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = prepare(design, load(design))
    x0 = np.zeros(prepared.canary.x.shape, np.float32)
    x0[0] = 1.5
    assert np.array_equal(prepared.canary.x, x0) and int(prepared.canary.y) == 1
    assert torch.equal(prepared.worlds.x, torch.as_tensor(x0).expand_as(prepared.worlds.x))
    assert int(prepared.worlds.y.sum()) == 0


def test_the_opposing_canary_reaches_every_per_layer_bound():
    """Trained on the copies background in the audit setting, the model gives the canary a gradient at or above
    Opacus' per-layer bound in every tensor: the canary moves the model by the whole declared C."""
    sys.path.insert(0, str(REPO / "examples/libraries/opacus"))
    try:
        per_layer = importlib.import_module("per_layer")
    finally:
        sys.path.pop(0)
    amplitude = ROWS["opacus_per_layer"]["audit"]["canary_options"]["amplitude"]
    x = torch.zeros(240, 10)
    x[:, 0] = amplitude
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = torch.utils.data.TensorDataset(x, torch.zeros(240, dtype=torch.long))
        model = per_layer.make(audit_setting()).train(data, seed=1, init_seed=0)
    plain = per_layer.mlp()
    plain.load_state_dict(model.state_dict())
    torch.nn.functional.cross_entropy(plain(x[:1]), torch.tensor([1])).backward()
    norms = [float(p.grad.norm()) for p in plain.parameters()]
    assert all(n >= bound for n, bound in zip(norms, per_layer.BOUNDS, strict=True)), norms


def test_the_gdp_accountant_at_the_scripts_small_q_is_flagged_before_training():
    from opacus.accountants.utils import create_accountant

    row = plan(CONFIG).rows["opacus_gdp_small_q"].audit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load(row.design)
        found = early_report(row.design, loaded, row.options)
        claim = loaded.training.claim
        acc = create_accountant("gdp")
        acc.history = [(claim.noise_multiplier, claim.sample_rate, claim.steps)]
    assert claim.sample_rate < 1 and claim.epsilon == pytest.approx(acc.get_epsilon(claim.delta), rel=1e-6)
    assert found is not None and found.verdict == "violation" and found.accounting.epsilon > claim.epsilon


def test_the_cli_reads_canary_options():
    from hsaudit.cli.audit_training import canary_options

    assert canary_options(["amplitude=1.5", "feature=2"]) == {"amplitude": 1.5, "feature": 2}
    assert canary_options(None) is None
    with pytest.raises(ValueError, match="KEY=VALUE"):
        canary_options(["amplitude"])
