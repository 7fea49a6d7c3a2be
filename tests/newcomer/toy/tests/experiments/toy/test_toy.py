"""The toy paper: its plan hands the config's rule down, its valid audit stays below the mechanism's ε, and its
figure writes the table it was given."""

from __future__ import annotations

import pandas as pd
import yaml

from conftest import REPO, check_pdf
from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.toy.audit import audit_gaussian
from hsaudit.experiments.toy.figures import FIGURES
from hsaudit.experiments.toy.plan import plan
from hsaudit.pipeline.config import resolve_scale


def test_the_plan_carries_the_configs_rule_and_the_valid_audit_stays_below_epsilon(tmp_path):
    config = resolve_scale(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    planned = plan(config)
    assert planned.rule == parse_rule(config["audit"]["mode"], selection_fraction=config["audit"]["selection_fraction"])
    table = audit_gaussian(parse_rule("crossing"), **planned.audit)
    assert 0 < table["epsilon_hat"].iloc[0] <= table["epsilon"].iloc[0]
    drawn = FIGURES["fig1"](table, pdf=str(tmp_path / "fig1.pdf"), csv=str(tmp_path / "fig1.csv"), facts=planned.facts)
    check_pdf(tmp_path / "fig1.pdf")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "fig1.csv"), drawn)
