"""Section 6's plan (hsaudit.experiments.section6.plan): the values its rules read, the threshold rule built once."""

from __future__ import annotations

import pytest
import yaml

from conftest import REPO
from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.section6.figures import FIGURES
from hsaudit.experiments.section6.plan import plan
from hsaudit.pipeline.config import resolve_scale


def resolved(scale: str, **audit) -> dict:
    config = resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": scale})
    config["audit"] = {**config["audit"], **audit}
    return config


def test_section6_paths_follow_its_values():
    config = resolved("smoke")
    s6 = plan(config)
    section = config["section6"]
    assert len(s6.audits) == len(section["rules"]) * len(section["sigmas"])
    assert s6.exact == [f"results/section6/exact/{r}.csv" for r in section["rules"]]
    assert len(s6.searches) == len(section["threshold_search"]["sigmas"]) * len(section["threshold_search"]["batch_sizes"])
    assert s6.cp_tables(10) == (["results/section6/cp_table/n10.npy"] if config["audit"]["mode"] == "paper" else [])


@pytest.mark.parametrize("scale", ["paper", "smoke"])
def test_targets_are_the_figures_simulated_and_nothing_is_trained(scale):
    s6 = plan(resolved(scale))
    assert s6.populations == ()
    assert {t.id for t in s6.targets} == set(FIGURES)
    assert not any(t.trained for t in s6.targets)


def test_the_rule_is_built_once_from_the_audit_section():
    s6 = plan(resolved("smoke", mode="held-out", selection_fraction=0.25))
    assert s6.audit_rule == parse_rule("held-out", selection_fraction=0.25)
    assert not s6.paper_mode and s6.cp_tables(10) == []
    assert s6.facts["threshold_rule"] == "held-out@0.25"
    with pytest.raises(ValueError, match="unknown audit mode"):
        plan(resolved("smoke", mode="no-such-rule"))
