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


# --------------------------------------------------------------------------------------------------------------
# pages a reader finishes: the current pages are short, their headline cells one sentence, their links valid
# --------------------------------------------------------------------------------------------------------------
PAGES = sorted((REPO / "docs").glob("*.md"))  # the current pages; the results journal (docs/journal/) is history
PAGES_LIMIT = 150_000  # bytes, all of docs/*.md together (docs/decisions.md included)
CELL_LIMIT = 300  # characters of a headline table's cell as a reader sees it (a link counts as its text)
LINK = re.compile(r"(?<!!)\[([^\]]*)\]\(([^)\s]+)\)")


def first_table(text: str) -> list[list[str]]:
    """The rows of the first Markdown table of ``text`` (its header first, the separator row left out)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return []
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append(cells)
    return rows


def paper_pages() -> list[Path]:
    """The pages that open with a target table (its first column ``target``): the paper and study pages."""
    return [p for p in PAGES if (t := first_table(p.read_text())) and t[0][0] == "target"]


def shown(cell: str) -> str:
    """A cell as a reader sees it: a link is its text."""
    return LINK.sub(r"\1", cell)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (letters of any script kept), spaces → '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in ``path`` (a repeated heading's gets -1, -2, …), fenced code left out."""
    seen: dict[str, int] = {}
    fenced = False
    for line in path.read_text().splitlines():
        fenced ^= line.startswith("```")
        if not fenced and (m := re.match(r"#+ (.*)", line)):
            s = slug(m.group(1))
            seen[s] = seen.get(s, 0) + 1
    return {s if i == 0 else f"{s}-{i}" for s, n in seen.items() for i in range(n)}


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` whose file or heading does not exist."""
    bad = []
    for _, target in LINK.findall(path.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in anchors(dest)):
            bad.append(target)
    return bad


def test_the_pages_fit_in_150_kb():
    """A reader finishes the pages: their history (dated runs, superseded numbers, studies) is in the journal."""
    sizes = {p.name: len(p.read_bytes()) for p in PAGES}
    assert sum(sizes.values()) <= PAGES_LIMIT, sorted(sizes.items(), key=lambda kv: -kv[1])


def test_there_are_paper_pages():
    assert {p.name for p in paper_pages()} >= {"steinke.md", "yoon.md", "one_run.md", "housing.md", "byo.md"}


@pytest.mark.parametrize("path", paper_pages(), ids=lambda p: p.name)
def test_headline_cells_are_short_and_link_their_journal_entry(path):
    """Each cell of a page's target table is ≤ 300 characters as shown; each headline links to the journal."""
    header, *rows = first_table(path.read_text())
    long = [(row[0], shown(c)[:60]) for row in rows for c in row if len(shown(c)) > CELL_LIMIT]
    assert long == []
    col = next(i for i, name in enumerate(header) if name.startswith(("headline", "what it showed")))
    unlinked = [row[0] for row in rows if not any(t.startswith("journal/") for _, t in LINK.findall(row[col]))]
    assert unlinked == []


@pytest.mark.parametrize("path", [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))], ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(path):
    """A relative link names a file that exists and, with ``#``, a heading of it."""
    assert broken_links(path) == []


def test_the_checks_catch_a_long_cell_and_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("| target | headline |\n|---|---|\n| `a` | " + "x" * (CELL_LIMIT + 1) + " |\n\n## A heading\n\n"
                    "[ok](#a-heading) [gone](#no-heading) [missing](nowhere.md)\n")  # fmt: skip
    rows = first_table(page.read_text())
    assert rows[0] == ["target", "headline"] and len(shown(rows[1][1])) == CELL_LIMIT + 1
    assert len(shown("[" + "x" * 10 + "](journal/" + "y" * 400 + ".md)")) == 10
    assert broken_links(page) == ["#no-heading", "nowhere.md"]
