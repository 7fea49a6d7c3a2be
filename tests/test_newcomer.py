"""The newcomer test: docs/architecture.md's table of what each addition touches is measured by doing it.

In a temporary copy of the parts of the repository that the checks read (src/, config/, workflow/, docs/, the test
files below), a toy threshold rule, a toy model, a toy canary type and a toy score are each added by editing the
files the docs name; the files that changed are counted (every file of the copy hashed before and after) and must be
the table's, in number and in name; then the checks that a new entry must pass run in the copy: the registry,
schema and plan tests (the generic tests that parametrise over each registry take the toy in), and ``hsaudit plan``
on a config that names the toys (an uncalibrated model is planned, not refused).

A toy paper (``toy``: the Gaussian mechanism simulated at σ, audited with the config's rule, one figure) is added
the same way, in its own test: the files it adds are tests/newcomer/toy/ (at their paths in the repository), the
lines it adds to existing files are :data:`PAPER_EDITS`, and docs/decisions.md is regenerated as the docs say; then
the package-shape, config, docs and import checks run on it, ``hsaudit plan`` prices it and Snakemake builds its
figure at smoke scale.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import REPO, check_pdf, run_snakemake
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.config import decisions_markdown

TABLE_HEADING = "| addition | files | what is edited"

# Each case: the edits (path → (anchor, text inserted before it), or None: appended at the end).
TOY_RULE = '''
@dataclass(frozen=True)
class ToyRule(HeldOut):
    """A newcomer's rule: the held-out rule under another name."""

    name: ClassVar[str] = "toy"
    description: ClassVar[str] = "the held-out rule under another name (tests/test_newcomer.py)"


'''
TOY_ARCHITECTURE = '''

def toy_cnn(num_classes: int = 10) -> nn.Module:
    """A newcomer's CIFAR-shaped model: one convolution and a linear layer."""
    return nn.Sequential(nn.Conv2d(3, 4, 5, stride=4), nn.Tanh(), nn.Flatten(), nn.Linear(4 * 7 * 7, num_classes))
'''
TOY_SPEC = '''

def _build_toy_cnn(num_classes: int):
    from hsaudit.engine.architectures import toy_cnn

    return toy_cnn(num_classes)


def _toy_cnn(num_classes: int = 10) -> ModelSpec:
    k = _classes(num_classes)
    return ModelSpec(name="toy_cnn", builder=_build_toy_cnn, input_shape=(3, 32, 32), outputs=k,
                     kwargs=(("num_classes", k),), label="Toy CNN")


'''
TOY_CANARY = '''        CanaryType("toy_canary", "input", blank, "the all-zero input under another name (tests/test_newcomer.py)"),
'''
TOY_SCORE = '''        Score("toy_score", "−ℓ(θ_T; x*, y*)", ("final_model", "canary"), "a newcomer's score (tests/test_newcomer.py)"),
'''
CASES = {
    "a threshold rule": {"src/hsaudit/audit/rules.py": ("\ndef parse_rule(", TOY_RULE)},
    "a model": {
        "src/hsaudit/engine/architectures.py": (None, TOY_ARCHITECTURE),
        "src/hsaudit/engine/models.py": ("\nREGISTRY: dict[str, Callable[..., ModelSpec]] = {\n", TOY_SPEC),
        "src/hsaudit/engine/models.py#entry": ('    "wrn16_4": _wrn16_4,\n', '    "toy_cnn": _toy_cnn,\n'),
    },
    "a canary type": {"src/hsaudit/engine/canaries.py": ('        CanaryType(\n            "clipbkd",', TOY_CANARY)},
    "a score": {"src/hsaudit/util/scores.py": ('        Score("calibrated",', TOY_SCORE)},
}
# The tests that a new entry must pass, run in the copy (each parametrised over its registry, or filled from it).
CHECKS = (
    "tests/audit/test_auditor.py::test_one_rule_per_mode_in_the_same_order",
    "tests/audit/test_auditor.py::test_the_rule_carries_the_estimator",
    "tests/audit/test_rule_registry.py",
    "tests/util/test_scores.py",
    "tests/pipeline/test_config.py::test_no_schema_spells_a_registrys_names",
    "tests/pipeline/test_config.py::test_a_section_offers_exactly_the_registry_models_its_data_fits",
    "tests/bench/test_bench_train.py::test_every_model_the_config_trains_is_priced",
    "tests/engine/test_models.py::test_xavier_theta0_on_every_registry_model",
    "tests/experiments/byo/test_byo_canaries.py::test_values_round_trip",
    "tests/experiments/byo/test_byo_plan.py",
)
# A fifth paper: the files it adds (tests/newcomer/toy/, at their paths in the repository) and the lines it adds to
# existing files (path → (pattern, replacement), each pattern matching once); docs/decisions.md is regenerated.
PAPER_FILES = REPO / "tests" / "newcomer" / "toy"
TOY_CONFIG = """# A newcomer's toy paper (docs/toy.md): the Gaussian mechanism simulated and audited.
toy:
  # Noise multiplier σ of the mechanism (sensitivity 1) [inferred: 1].
  sigma: 1.0
  # Outputs per world.
  runs: 2000

"""
PAPER_EDITS = {
    "src/hsaudit/experiments/plans.py": (r"(\nEXPERIMENTS = \([^)]*)\)", r'\1, "toy")'),
    "workflow/schemas/config.schema.yaml": (r"(\n  execution:\n)", r"\n  toy:\n    $ref: toy.schema.yaml\1"),
    "config/config.yaml": (r"\n(# Execution options)", "\n" + TOY_CONFIG.replace("\\", "\\\\") + r"\1"),
}
PAPER = "a paper"
PAPER_CHECKS = (
    "tests/experiments/test_package_shape.py",
    "tests/experiments/toy",
    "tests/pipeline/test_config.py::test_decisions_doc_is_up_to_date",
    "tests/pipeline/test_config.py::test_no_schema_spells_a_registrys_names",
    "tests/test_docs.py",
    "tests/test_imports.py::test_plans_import_neither_torch_nor_scipy_stats",
)
COPIED = ("src", "config", "workflow", "Snakefile", "profiles", "envs", "examples", "docs", "scripts", "README.md",
          "pyproject.toml", "tests/conftest.py", "tests/test_docs.py", "tests/test_imports.py", "tests/test_newcomer.py",
          "tests/experiments/test_package_shape.py")  # fmt: skip


def newcomer_table(text: str) -> dict[str, tuple[int, tuple[str, ...]]]:
    """docs/architecture.md's newcomer table: addition → (number of files, the files named in backticks; a paper's
    with placeholders, ``<name>`` for its name and ``<verb>`` for a word)."""
    lines = text[text.index(TABLE_HEADING):].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        addition, count, edited = (cell.strip() for cell in line.strip("|").split("|")[:3])
        rows[addition] = (int(count), tuple(re.findall(r"`([^`\s]+/[^`\s]+\.\w+|Snakefile)`", edited)))
    return rows


def _named(touched: list[str], named: tuple[str, ...], *, name: str) -> bool:
    """Every touched file is one the table names and every file it names is touched (``<name>`` is ``name``,
    ``<verb>`` any word)."""
    patterns = [re.escape(n).replace(re.escape("<name>"), re.escape(name)).replace(re.escape("<verb>"), r"[a-z]+")
                for n in named]  # fmt: skip
    return all(any(re.fullmatch(p, t) for p in patterns) for t in touched) and all(
        any(re.fullmatch(p, t) for t in touched) for p in patterns)


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip


def _edit(root: Path, edits: dict[str, tuple[str | None, str]]) -> None:
    for key, (anchor, text) in edits.items():
        path = root / key.split("#")[0]
        source = path.read_text()
        if anchor is None:
            source += text
        else:
            assert source.count(anchor) == 1, (key, anchor)
            source = source.replace(anchor, text + anchor)
        path.write_text(source)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("newcomer")
    for name in (*COPIED, *sorted({str(Path(c.split("::")[0]).parent) for c in CHECKS})):  # with their helpers
        if (root / name).exists():
            continue
        src, dest = REPO / name, root / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dest)
    return root


def test_the_table_is_measured_by_adding_each_entry(copy):
    table = newcomer_table((REPO / "docs" / "architecture.md").read_text())
    assert set(CASES) <= set(table), sorted(table)
    for addition, edits in CASES.items():
        before = _hashes(copy)
        _edit(copy, edits)
        after = _hashes(copy)
        touched = sorted(p for p in after if before.get(p) != after[p])
        count, named = table[addition]
        assert len(touched) == count and _named(touched, named, name=""), (addition, touched, table[addition])

    # the checks a new entry must pass, in the copy with every toy added
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "HSAUDIT_CALIBRATION": str(copy / "none.json")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "-o", "addopts=", "-k", "toy or not xavier", *CHECKS], cwd=copy, env=env, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]

    # hsaudit plan on a config that names them: the rule audits, the model is offered and planned (not calibrated)
    overlay = copy / "toys.yaml"
    overlay.write_text("audit: {mode: toy, valid_mode: toy}\ncifar10: {model: toy_cnn}\n"
                       "byo: {example: {canary: toy_canary, entry: examples/byo/plain_dpsgd.py:make}}\n")
    code = ("import sys\nfrom hsaudit.cli import main\n"
            "sys.exit(main(['plan', 'results/fig6a.pdf', 'results/byo/example/report.md', '--configfile', "
            "'config/config.yaml', '--configfile', 'toys.yaml']))")  # fmt: skip
    plan = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stdout[-2000:] + plan.stderr[-2000:]
    assert "toy_cnn: not calibrated (run hsaudit bench train --model toy_cnn --save-calibration)" in plan.stdout


def _add_paper(root: Path) -> None:
    """What a newcomer does for a fifth paper: its files, its lines in existing files, docs/decisions.md again."""
    for path in PAPER_FILES.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            dest = root / path.relative_to(PAPER_FILES)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    for key, (pattern, replacement) in PAPER_EDITS.items():
        path = root / key
        source, n = re.subn(pattern, replacement, path.read_text())
        assert n == 1, (key, pattern, n)
        path.write_text(source)
    (root / "docs" / "decisions.md").write_text(decisions_markdown(str(root / "config" / "config.yaml")))


@pytest.mark.xdist_group("tests/test_newcomer.py::a paper")  # beside the other additions, on another worker
def test_a_paper_is_measured_by_adding_one(copy):
    count, named = newcomer_table((REPO / "docs" / "architecture.md").read_text())[PAPER]
    before = _hashes(copy)
    _add_paper(copy)
    after = _hashes(copy)
    touched = sorted(p for p in after if before.get(p) != after[p])
    assert len(touched) == count and _named(touched, named, name="toy"), (touched, count, named)

    # the checks a new paper must pass, in the copy: its shape, its config, its docs, its plan's imports
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    run = subprocess.run([sys.executable, "-m", "pytest", "-v", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "-o", "addopts=", "-k", "toy or registry_lists or decisions or schema",
                          *PAPER_CHECKS], cwd=copy, env=env, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "[toy] PASSED" in run.stdout and "tests/experiments/toy/test_toy.py::" in run.stdout, run.stdout[-3000:]

    # CI's workflow lint: the new rule file is as snakefmt writes it
    fmt = subprocess.run([Path(sys.executable).with_name("snakefmt"), "--check", "workflow/rules/toy.smk"],
                         cwd=copy, capture_output=True, text=True)  # fmt: skip
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr

    # hsaudit plan prices it (a simulation), and Snakemake builds its figure at smoke scale
    code = "import sys\nfrom hsaudit.cli import main\nsys.exit(main(['plan', 'results/toy/fig1.pdf']))"
    plan = subprocess.run([sys.executable, "-c", code], cwd=copy, env=env, capture_output=True, text=True)
    assert plan.returncode == 0 and "toy/fig1: simulation, no training" in plan.stdout, plan.stdout + plan.stderr
    run_snakemake(copy, "results/toy/fig1.pdf", "--config", "scale=smoke", env={"PYTHONPATH": str(copy / "src")})
    check_pdf(copy / "results" / "toy" / "fig1.pdf")
    table = pd.read_csv(copy / "results" / "toy" / "fig1.csv")
    assert list(table["rule"]) == [parse_rule(yaml.safe_load((copy / "config" / "config.yaml").read_text())["audit"]["mode"]).spec]
