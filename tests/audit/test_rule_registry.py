"""The threshold-rule registry is the one list of rule names: the config schemas, the CLI's choices and the one
parser (:func:`hsaudit.audit.rules.parse_rule`) read it, so a new rule is one class in hsaudit/audit/rules.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from hsaudit.audit import rules
from hsaudit.audit.rules import AUDIT_MODES, RULES, VALID_MODES, HeldOut, ThresholdRule, parse_rule, rule_names
from hsaudit.pipeline.config import check_config, load_yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "workflow" / "schemas"
CONFIG = REPO / "config" / "config.yaml"


def _enums(node, path=""):
    """(dotted path, enum) of every enum in a schema."""
    if isinstance(node, dict):
        if "enum" in node:
            yield path, list(node["enum"])
        for key, value in node.items():
            yield from _enums(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _enums(value, f"{path}[{i}]")


def _with(section: str, **values) -> dict:
    """The config with ``values`` in ``section`` (byo: in its first entry)."""
    config = load_yaml(str(CONFIG))
    if section == "byo":
        name = next(iter(config["byo"]))
        config["byo"] = {name: {**config["byo"][name], **values}}
    else:
        config[section] = {**config[section], **values}
    return config


@pytest.fixture
def toy_rule():
    """A rule class defined outside rules.py, registered for the test and removed after it."""

    @dataclass(frozen=True)
    class Toy(ThresholdRule):
        fraction: float = 0.5
        seed: int = 0
        name: ClassVar[str] = "toy"
        valid: ClassVar[bool] = True
        description: ClassVar[str] = "a test's rule"
        min_per_class: ClassVar[int] = 1
        spec_field: ClassVar[str | None] = "fraction"

    try:
        yield Toy
    finally:
        ThresholdRule.registry.remove(Toy)


def test_the_registry_lists_every_rule_class_of_the_module_once():
    classes = [v for v in vars(rules).values() if isinstance(v, type) and issubclass(v, ThresholdRule)]
    assert sorted(c.__name__ for c in RULES) == sorted(c.__name__ for c in classes if c is not ThresholdRule)
    assert AUDIT_MODES == tuple(c.name for c in RULES) and len(set(AUDIT_MODES)) == len(RULES)
    assert set(VALID_MODES) == {c.name for c in RULES if c.valid} and "paper" not in VALID_MODES
    assert "bonferroni" in VALID_MODES


def test_no_schema_spells_the_rule_names_itself():
    """A schema that lists rule names would have to be edited for a new rule: it names the registry (x-rules)."""
    spelled = [(f.name, path) for f in sorted(SCHEMAS.glob("*.yaml"))
               for path, enum in _enums(yaml.safe_load(f.read_text())) if len(set(enum) & set(AUDIT_MODES)) > 1]  # fmt: skip
    assert spelled == []


@pytest.mark.parametrize(("section", "key", "valid_only"),
                         [("audit", "mode", False), ("audit", "valid_mode", True), ("byo", "rule", True)])  # fmt: skip
def test_the_schemas_take_exactly_the_registry_names(section, key, valid_only):
    schema = str(SCHEMAS / "config.schema.yaml")
    for name in AUDIT_MODES:
        ok = not valid_only or name in VALID_MODES
        if ok:
            check_config(_with(section, **{key: name}), schema)
        else:
            with pytest.raises(ValueError, match=f"{key}: '{name}' is not one of"):
                check_config(_with(section, **{key: name}), schema)
    with pytest.raises(ValueError, match=f"{key}: 'magic' is not one of"):
        check_config(_with(section, **{key: "magic"}), schema)


def test_a_new_rule_class_is_a_config_value_a_cli_choice_and_a_spec(toy_rule):
    assert rule_names()[-1] == "toy" and rule_names(valid=True)[-1] == "toy"
    assert parse_rule("toy@0.2", seed=4) == toy_rule(fraction=0.2, seed=4)
    assert parse_rule("toy", selection_fraction=0.3).spec == "toy@0.3" and toy_rule().spec == "toy"
    check_config(_with("audit", mode="toy", valid_mode="toy"), str(SCHEMAS / "config.schema.yaml"))


def test_spec_round_trips_and_seeded_sets_only_the_seed():
    for name in AUDIT_MODES:
        for value in ("", "@0.2"):
            cls = next(c for c in RULES if c.name == name)
            if value and cls.spec_field is None:
                with pytest.raises(ValueError, match="no selection fraction"):
                    parse_rule(name + value)
                continue
            rule = parse_rule(name + value, seed=3)
            assert parse_rule(rule.spec, seed=3) == rule and rule.spec == name + value
            seeded = rule.seeded(9)
            assert {f.name: getattr(seeded, f.name) for f in dataclasses.fields(seeded) if f.name != "seed"} == {
                f.name: getattr(rule, f.name) for f in dataclasses.fields(rule) if f.name != "seed"}
            assert getattr(seeded, "seed", 9) == 9
    assert parse_rule("held-out@0.1", selection_fraction=0.3) == HeldOut(fraction=0.1)
