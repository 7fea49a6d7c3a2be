"""The plan of the libraries table: the ``libraries:`` config section → one :class:`LibraryRow` per configuration.

Each row is an audit of :mod:`hsaudit.experiments.byo` (:func:`hsaudit.experiments.byo.plan.audit_from` builds it
from the section's shared ``audit`` options and the row's ``entry``), with what the table says of it: the library,
the configuration, whether its bug is planted. A row's code version is its design, the text of its script's folder
(:func:`folder_version`: the script and the module it shares) and the library's installed version
(:func:`library_version`), so that upgrading Opacus reruns the Opacus rows and nothing else.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.plan import ByoAudit, audit_from
from hsaudit.experiments.byo.train.values import Design, entry_file
from hsaudit.experiments.plans import Population, Target
from hsaudit.util.source import code_text

ROOT = "results/libraries"
ROW_KEYS = ("entry", "library", "configuration", "planted")


def library_version(library: str) -> str:
    """The installed version of the distribution ``library`` (e.g. ``opacus``), or ``"not installed"``."""
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def folder_version(entry: str) -> str:
    """A hash of the code of every ``.py`` file in the entry's folder (12 hex digits; comments and docstrings left
    out, :func:`hsaudit.util.source.code_text`): the script and the modules it shares with its siblings.

    Raises:
        ValueError: the entry's file cannot be found.
    """
    digest = hashlib.sha256()
    for path in sorted(entry_file(entry).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + code_text(path.read_bytes()) + b"\0")
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class LibraryRow:
    """One configuration of one library, and its audit.

    Attributes:
        name: the row's key in ``libraries.rows`` (its record is ``results/libraries/rows/{name}.json``).
        library: the distribution's name (its version is in the row's code version).
        configuration: the switches the row sets, in words.
        planted: a control with a bug planted on purpose: the table must flag it.
        audit: the byo audit (design, options, threads, resources, control).
    """

    name: str
    library: str
    configuration: str
    planted: bool
    audit: ByoAudit

    @property
    def root(self) -> str:
        return f"{ROOT}/rows/{self.name}"

    @property
    def design(self):
        return self.audit.design

    @property
    def options(self):
        return self.audit.options

    @property
    def threads(self) -> int:
        return self.audit.threads

    @property
    def control(self) -> bool:
        return self.audit.control

    def to_dict(self) -> dict[str, Any]:
        """What a row's job needs (its params: the code version of what it trains)."""
        return {"name": self.name, "library": self.library, "configuration": self.configuration,
                "planted": self.planted, "control": self.control, "design": self.design.to_dict(),
                "options": self.options.to_dict()}  # fmt: skip

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> LibraryRow:
        audit = ByoAudit(name=f"libraries_{values['name']}", design=Design.from_dict(values["design"]),
                         options=AuditOptions.from_dict(values["options"]), control=bool(values["control"]))
        return cls(name=values["name"], library=values["library"], configuration=values["configuration"],
                   planted=bool(values["planted"]), audit=audit)  # fmt: skip


@dataclass(frozen=True)
class LibrariesPlan:
    """Every row, the libraries not run (name → why), and what ``hsaudit plan`` reads (``audits``: the rows by
    name, as the byo plan's, so that ``--time-byo`` times them)."""

    rows: dict[str, LibraryRow]
    not_run: dict[str, str]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]

    @property
    def audits(self) -> dict[str, LibraryRow]:
        return self.rows


def row_from(name: str, values: Mapping[str, Any], shared: Mapping[str, Any], *, seed: int) -> LibraryRow:
    """The row ``name`` of ``libraries.rows``: its ``entry`` audited with the ``shared`` byo options.

    Raises:
        ValueError: a missing or unknown key, or a byo option out of range (the message names the row).
    """
    unknown = sorted(set(values) - set(ROW_KEYS))
    missing = [k for k in ("entry", "library", "configuration") if not values.get(k)]
    if unknown or missing:
        raise ValueError(f"libraries.rows.{name}: unknown key(s) {unknown}, missing {missing}")
    audit = audit_from(f"libraries_{name}", {**dict(shared), "entry": values["entry"]}, seed=seed)
    return LibraryRow(name=name, library=str(values["library"]), configuration=str(values["configuration"]),
                      planted=bool(values.get("planted", False)), audit=audit)  # fmt: skip


def plan(config: Mapping[str, Any]) -> LibrariesPlan:
    """The plan of the resolved config's ``libraries:`` section (empty without one)."""
    section = config.get("libraries") or {}
    seed = int(config.get("seed", 0))
    shared = dict(section.get("audit") or {})
    rows = {name: row_from(name, values or {}, shared, seed=seed) for name, values in (section.get("rows") or {}).items()}
    populations = tuple(
        Population(
            root=r.root,
            figures=("libraries/report",),
            model="user",
            models=r.design.models * (2 if r.control else 1),
            steps=int(r.design.setting.steps if r.design.setting else 0),
            batch=0,
            role=f"{r.library} {r.name}",
            detail=f"entry {r.design.entry}",
        )
        for r in rows.values()
    )
    targets = (Target(path=f"{ROOT}/report.md", kind="cpu", trained=True),) if rows else ()
    return LibrariesPlan(rows=rows, not_run=dict(section.get("not_run") or {}), populations=populations,
                         targets=targets)  # fmt: skip
