"""The docs name code that exists: every ``hsaudit.x.y`` and every repository path written in README.md, docs/,
the config, the rules and the package resolves (a module, an attribute of one, or a file), so a move of the
layout cannot leave a stale pointer behind."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from conftest import REPO

TEXTS = sorted(
    [
        REPO / "README.md",
        *(REPO / "docs").rglob("*.md"),  # the pages, the reference and the results journal (docs/journal/)
        *(REPO / "config").glob("*.yaml"),
        *(REPO / "workflow").rglob("*.smk"),
        *(REPO / "workflow" / "scripts").glob("*.py"),
        *(REPO / "src").rglob("*.py"),
    ]
)
# Names that are not code: a logger's name and a placeholder in a docstring.
NOT_CODE = {"hsaudit.workflow", "hsaudit.x.y"}
# Files that a command writes (documented where they appear), not part of a clone.
GENERATED = {"config/calibration.json"}
DOTTED = re.compile(r"\bhsaudit(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
PATH = re.compile(r"(?<![\w./~-])((?:src/hsaudit|workflow|tests|docs|config|scripts|profiles|envs)/[A-Za-z0-9_./-]+)")


def resolves(name: str) -> bool:
    """``name`` is a module, or an attribute path inside the longest importable module prefix."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def references(path: Path) -> tuple[set[str], set[str]]:
    text = path.read_text()
    names = {m.group(0).rstrip(".") for m in DOTTED.finditer(text)} - NOT_CODE
    names = {n for n in names if not n.endswith("_")}  # a prefix such as hsaudit.cli.bench_
    paths = {m.group(1).rstrip(".,:;)") for m in PATH.finditer(text)} - GENERATED
    return names, paths


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_reference_resolves(path):
    names, paths = references(path)
    assert sorted(n for n in names if not resolves(n)) == []
    assert sorted(p for p in paths if not (REPO / p).exists()) == []


# Absolute paths of a machine, and the project's notes kept outside the repository (shared/specs, shared/papers, …).
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|scratch)/|\bshared/(?:experiments|specs|notes|papers)/")


@pytest.mark.parametrize("path", [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))], ids=lambda p: str(p.relative_to(REPO)))
def test_no_machine_specific_paths(path):
    """A reader's machine is not ours: the docs cite papers by title and arXiv id and data by where to get them."""
    lines = [f"{i}: {line.strip()}" for i, line in enumerate(path.read_text().splitlines(), 1) if MACHINE_PATH.search(line)]
    assert lines == []


def test_the_check_catches_a_stale_reference(tmp_path):
    stale = tmp_path / "stale.md"
    stale.write_text("See `hsaudit.heuristic.calibrate` and `src/hsaudit/figures/section6.py`.\n")
    names, paths = references(stale)
    assert [n for n in names if not resolves(n)] == ["hsaudit.heuristic.calibrate"]
    assert [p for p in paths if not (REPO / p).exists()] == ["src/hsaudit/figures/section6.py"]
