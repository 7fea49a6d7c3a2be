"""The package's structure: no import cycles between hsaudit modules, no private name imported across modules.

Every import counts, module-level or inside a function (a lazy import is still a dependency); a package's
``__init__`` importing its own submodules (re-exports) is not a cycle with them.
"""

from __future__ import annotations

import pytest

import ast
import functools
from collections import Counter
from pathlib import Path

from conftest import REPO
from hsaudit.experiments.plans import EXPERIMENTS

PACKAGE = REPO / "src" / "hsaudit"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def _imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """(module -> hsaudit modules it imports, 'A imports _x from B' lines)."""

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph, private = {m: set() for m in mods}, []
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[tuple[str, str | None]] = []
            if isinstance(node, ast.Import):
                targets = [(alias.name, None) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [(base, alias.name) for alias in node.names]
            for base, name in targets:
                if not base.startswith("hsaudit"):
                    continue
                full = f"{base}.{name}" if name and f"{base}.{name}" in mods else base
                target = owner(full)
                if target and target != module and not target.startswith(module + "."):
                    graph[module].add(target)
                if name and name.startswith("_") and not name.startswith("__") and owner(base) != module:
                    private.append(f"{module} imports {name} from {base}")
    return graph, private


@functools.cache
def _package_imports() -> tuple[dict[str, set[str]], list[str]]:
    """:func:`_imports` of the package itself, parsed once per process: six tests read it (≈ 0.5 s a parse); the
    checks' own can-fail tests parse their toy packages afresh."""
    return _imports(_modules())


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle found by depth-first search (enough to report that there are some)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_cycles():
    cycles = _cycles(_package_imports()[0])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_names_cross_modules():
    assert _package_imports()[1] == []


def test_the_checks_can_fail(tmp_path, monkeypatch):
    """The detector sees a cycle and a private import when there is one."""
    pkg = tmp_path / "hsaudit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from hsaudit.b import _secret\n")
    (pkg / "b.py").write_text("def f():\n    from hsaudit import a\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", pkg)
    graph, private = _imports(_modules())
    assert _cycles(graph) and private == ["hsaudit.a imports _secret from hsaudit.b"]


# The layers of the package, bottom first (src/hsaudit/__init__.py): a module may import its own layer and the
# layers below it, never one above; a paper's package never imports another paper's.
LAYERS = ("util", "accounting", "audit", "engine", "data", "experiments", "pipeline", "bench", "cli")
# Modules of the experiments layer that every experiment package shares (not a paper of their own).
SHARED = ("plotting", "plans")
# Experiment packages that are tools other studies build on (their public API, not a paper's internals): the audit of
# a training (byo), whose plan builds the libraries table's rows (hsaudit.experiments.libraries.plan: each row is a
# byo audit that byo's rules train and audit). The sides' rule below still holds for every package: a study that
# reuses byo's trainings has no training side of its own.
TOOLS = ("byo",)


def _layer(module: str) -> tuple[int, str]:
    """(layer index, paper name or '') of ``hsaudit.<layer>...``.

    The package root imports nothing (its names resolve lazily), so every layer may read ``__version__`` from it:
    it sits below ``util``. ``__main__`` sits on top.
    """
    parts = module.split(".")
    if module == "hsaudit":
        return -1, ""
    if len(parts) < 2 or parts[1] not in LAYERS:
        return len(LAYERS), ""
    paper = parts[2] if parts[1] == "experiments" and len(parts) > 2 and parts[2] not in SHARED else ""
    return LAYERS.index(parts[1]), paper


def _layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in graph.items():
        level, paper = _layer(module)
        for target in targets:
            t_level, t_paper = _layer(target)
            if t_level > level:
                bad.append(f"{module} ({LAYERS[level] if level < len(LAYERS) else 'top'}) imports {target} from above")
            elif t_level == level and paper and t_paper and t_paper != paper and t_paper not in TOOLS:
                bad.append(f"{module} imports another paper's {target}")
    return sorted(bad)


def test_layers_import_downwards_only():
    assert _layer_violations(_package_imports()[0]) == []


def test_the_layer_check_can_fail():
    graph = {
        "hsaudit.audit.gdp": {"hsaudit.engine.dpsgd"},
        "hsaudit.experiments.yoon.plan": {"hsaudit.experiments.cebere.plan", "hsaudit.experiments.plotting", "hsaudit.util.io"},
        # a study may build on a tool's API; the tool never imports a study
        "hsaudit.experiments.libraries.plan": {"hsaudit.experiments.byo.plan"},
        "hsaudit.experiments.byo.plan": {"hsaudit.experiments.libraries.plan"},
    }
    assert _layer_violations(graph) == [
        "hsaudit.audit.gdp (audit) imports hsaudit.engine.dpsgd from above",
        "hsaudit.experiments.byo.plan imports another paper's hsaudit.experiments.libraries.plan",
        "hsaudit.experiments.yoon.plan imports another paper's hsaudit.experiments.cebere.plan",
    ]


# The shape of every experiment package (hsaudit.experiments.plans): its training side (a ``train`` module, or the
# modules of a ``train`` package) imports the engine, data and util layers only, and its audit side (``audit``)
# the audit, accounting and util layers only, each beside its own side's modules and the package's ``values``
# module (plain values the plan checks and one side uses: it imports the util layer at most). So an estimator edit
# never retrains, and a training edit never reruns an audit by itself.
SIDES = {"train": ("engine", "data", "util"), "audit": ("audit", "accounting", "util")}


def _side_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, targets in graph.items():
        parts = module.split(".")
        if len(parts) < 4 or parts[1] != "experiments" or parts[3] not in SIDES:
            continue
        side, own = parts[3], ".".join(parts[:4])
        for target in targets:
            if target == "hsaudit" or target == own or target.startswith(own + "."):
                continue
            if target == ".".join(parts[:3]) + ".values":  # the package's plain values
                continue
            if target.split(".")[1] not in SIDES[side]:
                bad.append(f"{module} ({side} side) imports {target}")
    return sorted(bad)


def test_train_and_audit_sides_import_their_layers_only():
    assert _side_violations(_package_imports()[0]) == []


def test_values_modules_import_the_util_layer_at_most():
    """A package's ``values`` module may be imported by both sides and the plan, so it holds values only: it
    imports the util layer at most."""
    graph = _package_imports()[0]
    values = [m for m in graph if m.startswith("hsaudit.experiments.") and m.endswith(".values")]
    assert "hsaudit.experiments.one_run.values" in values
    above_util = {m: sorted(t for t in graph[m] if t != "hsaudit" and not t.startswith("hsaudit.util")) for m in values}
    assert above_util == {m: [] for m in values}


def test_the_side_check_can_fail():
    graph = {
        "hsaudit.experiments.yoon.train": {"hsaudit.engine.dpsgd", "hsaudit.audit.gdp"},
        "hsaudit.experiments.cebere.train.shards": {"hsaudit.experiments.cebere.train.adversaries",
                                                    "hsaudit.experiments.cebere.plan"},
        "hsaudit.experiments.cebere.audit": {"hsaudit.audit.auditor", "hsaudit.engine.models"},
        "hsaudit.experiments.cebere.plan": {"hsaudit.audit.auditor", "hsaudit.engine.models"},
    }
    assert _side_violations(graph) == [
        "hsaudit.experiments.cebere.audit (audit side) imports hsaudit.engine.models",
        "hsaudit.experiments.cebere.train.shards (train side) imports hsaudit.experiments.cebere.plan",
        "hsaudit.experiments.yoon.train (train side) imports hsaudit.audit.gdp",
    ]


def test_test_modules_have_unique_names():
    """pytest's default import mode puts each test directory on sys.path and imports its files by basename, so two
    test files of one name (tests/bench/test_train.py beside tests/engine/test_train.py) fail to collect."""
    names = Counter(p.name for p in Path(__file__).resolve().parent.rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []


@pytest.mark.parametrize("experiment", EXPERIMENTS)  # a new paper's plan is checked as it is registered
def test_plans_import_neither_torch_nor_scipy_stats(experiment):
    """Every `snakemake` call and `hsaudit plan` import every experiment's plan: its values come from light modules
    (the canary registry, `hsaudit.util.schedule`, a package's `values`), not from the training modules (torch,
    ~2 s) or the audits (scipy.stats, ~1.2 s)."""
    import subprocess
    import sys

    code = (f"import sys, hsaudit.experiments.{experiment}.plan; "
            "print(sorted(m for m in ('torch', 'scipy.stats') if m in sys.modules))")
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_plot_jobs_import_no_torch():
    """A plotting job reads tables and files with numpy and pandas: importing torch (~2–3 s) in every one of them is
    waste (fig12 read its crafted coordinate through the training module once; it reads the adversary's file with
    numpy now, :func:`hsaudit.experiments.cebere.figures.cifar.crafted_coordinate`). The hsaudit imports of every
    ``workflow/scripts/plot_*.py`` are imported in turn in one fresh interpreter; the first that loads torch fails."""
    import subprocess
    import sys

    scripts = sorted((REPO / "workflow" / "scripts").glob("plot_*.py"))
    lines = ["import sys"]
    for script in scripts:
        for node in ast.walk(ast.parse(script.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            lines += [f"import {name}" for name in names if name.split(".")[0] == "hsaudit"]
        lines.append(f"print({script.name!r}) if 'torch' in sys.modules else None; 'torch' in sys.modules and sys.exit()")
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO / "src")}
    out = subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, check=True, env=env)
    assert scripts and out.stdout.strip() == "", f"{out.stdout.strip()} loads torch\n{out.stderr}"


def test_the_scores_job_imports_no_estimator():
    """extract_scores imports hsaudit.experiments.cebere.scores alone: were it to import the audit layer, every edit of
    an estimator, a rule or a result column would change the scores job's code version (and rerun it)."""
    graph = _package_imports()[0]
    targets = graph["hsaudit.experiments.cebere.scores"]
    above_util = sorted(t for t in targets if t != "hsaudit" and not t.startswith("hsaudit.util"))
    assert above_util == []
