"""Every experiment package of the registry (hsaudit.experiments.plans.EXPERIMENTS) has the one shape that
hsaudit.experiments.plans describes, so a new paper cannot drift: the parts exist, ``plan(config)`` takes the config
alone and returns populations and targets, ``FIGURES`` maps ids to functions of the one figure signature, a
``values`` module sits at the package's top, and its rule file reads the plan, never ``config[...]``."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re

import pytest
import yaml

from conftest import REPO
from hsaudit.experiments.byo.plan import ByoAudit
from hsaudit.experiments.plans import EXPERIMENTS, Population, Target
from hsaudit.pipeline.config import resolve_scale

PACKAGES = REPO / "src" / "hsaudit" / "experiments"

def _exists(name: str, part: str) -> bool:
    return importlib.util.find_spec(f"hsaudit.experiments.{name}.{part}") is not None


@pytest.fixture(scope="module")
def config() -> dict:
    return resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": "paper"})


def test_the_registry_lists_every_package():
    packages = {p.name for p in PACKAGES.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(EXPERIMENTS)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_plan_takes_the_config_alone(name, config):
    module = importlib.import_module(f"hsaudit.experiments.{name}.plan")
    params = list(inspect.signature(module.plan).parameters.values())
    assert [(p.name, p.kind) for p in params] == [("config", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    planned = module.plan(config)
    assert isinstance(planned.populations, tuple) and all(isinstance(p, Population) for p in planned.populations)
    assert planned.targets and all(isinstance(t, Target) for t in planned.targets)


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_the_parts_exist(name, config):
    assert _exists(name, "plan") and _exists(name, "audit") and _exists(name, "figures"), name
    # A package that trains has a train part; one whose figures are simulated (section6, annamalai) need not, nor one
    # whose trainings are byo audits that byo's rules run (its plan's ``audits``: libraries).
    planned = importlib.import_module(f"hsaudit.experiments.{name}.plan").plan(config)
    audits = getattr(planned, "audits", None)
    hosted = name != "byo" and isinstance(audits, dict) and bool(audits) and all(
        isinstance(a, ByoAudit) for a in audits.values())
    if planned.populations and not hosted:
        assert _exists(name, "train"), name
    if hosted:
        assert not _exists(name, "train"), f"{name}: its trainings are byo's; a train side would be a second one"


ONE_SIGNATURE = [("table", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
    (k, inspect.Parameter.KEYWORD_ONLY) for k in ("pdf", "csv", "facts")]


def figure_problems(fn) -> list[str]:
    """What keeps ``fn`` from the one figure signature ``fn(table, *, pdf, csv, facts) -> pd.DataFrame`` (further
    parameters only when bound or defaulted, as a registry's partial binds them)."""
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    problems = []
    if [(p.name, p.kind) for p in params[:4]] != ONE_SIGNATURE:
        problems.append(f"parameters {[p.name for p in params]}")
    if any(p.default is inspect.Parameter.empty for p in params[4:]):
        problems.append("a further parameter without a default")
    if sig.return_annotation not in ("pd.DataFrame", "pandas.DataFrame"):
        problems.append(f"returns {sig.return_annotation}")
    return problems


def rule_file_problems(text: str, name: str) -> list[str]:
    """What keeps a rule file from reading its package's plan alone."""
    problems = []
    if not re.search(rf"from hsaudit\.experiments\.{name}\.plan import plan\b", text):
        problems.append("does not import its plan")
    problems += [f"reads {m}" for m in re.findall(r"config(?:\[|\.get\()", text)]
    return problems


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_figures_have_the_one_signature(name):
    figures = importlib.import_module(f"hsaudit.experiments.{name}.figures").FIGURES
    assert figures and all(isinstance(k, str) for k in figures)
    assert {figure: figure_problems(fn) for figure, fn in figures.items()} == {figure: [] for figure in figures}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_a_values_module_sits_at_the_package_top(name):
    nested = sorted(str(p.relative_to(PACKAGES)) for p in (PACKAGES / name).rglob("values.py")
                    if p.parent != PACKAGES / name)
    assert nested == [], nested


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_the_rule_file_reads_the_plan_not_the_config(name):
    assert rule_file_problems((REPO / "workflow" / "rules" / f"{name}.smk").read_text(), name) == []


def test_the_shape_checks_can_fail():
    def positional(table, pdf, csv, facts) -> pd.DataFrame:  # noqa: F821 (never evaluated)
        return table

    def returns_nothing(table, *, pdf, csv, facts) -> None:
        return None

    def unbound(table, *, pdf, csv, facts, figure_name) -> pd.DataFrame:  # noqa: F821 (never evaluated)
        return table

    assert figure_problems(positional) == ["parameters ['table', 'pdf', 'csv', 'facts']"]
    assert figure_problems(returns_nothing) == ["returns None"]
    assert figure_problems(unbound) == ["a further parameter without a default"]
    drifted = 'from hsaudit.experiments.toy.plan import plan as toy_plan\nX = config["toy"]["runs"]\n'
    assert rule_file_problems(drifted, "toy") == ["reads config["]
    assert rule_file_problems("TOY = 1\n", "toy") == ["does not import its plan"]
