"""The plan of the libraries table: the ``libraries:`` config section → one :class:`LibraryRow` per configuration.

Each row is an audit of :mod:`hsaudit.experiments.byo` (:func:`hsaudit.experiments.byo.plan.audit_from` builds it
from the section's shared ``audit`` options and the row's ``entry``) that byo's own rules train and audit at
``results/libraries/<row>/`` (workflow/rules/byo.smk; the row's ``report.json`` is what the table reads), with what
the table says of it: the library, its installed version, the configuration, whether its bug is planted. Its
trainings' code version is the text of its script's folder (the script and the module it shares) and the library's
installed version (:func:`hsaudit.experiments.byo.plan.training_version`), so that upgrading Opacus retrains the
Opacus rows and nothing else, and editing an estimator retrains nothing. A row whose library is not installed here,
or whose adapters' modules (:data:`MODULES`) the running environment cannot import (JAX Privacy's without the
``[jax]`` extra, TensorFlow Privacy's without ``[tf]``), is no job: the report lists it "not run" with the reason
(:func:`not_installed`).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from hsaudit.experiments.byo.plan import ByoAudit, audit_from, installed_version
from hsaudit.experiments.plans import Population, Target

ROOT = "results/libraries"
ROW_KEYS = ("entry", "library", "configuration", "planted", "extra", "requires", "audit_setting", "audit", "runs")
MODULES: dict[str, tuple[str, ...]] = {
    "opacus": ("opacus",),
    "tensorflow-privacy": ("tensorflow_privacy", "tf_keras"),
}
"""A library (its distribution, a row's ``library``) → the modules its adapters import; found without importing
them; where named, these decide whether its rows run (:func:`not_installed`). A library not named here runs where
its distribution is installed."""


def missing_modules(library: str) -> list[str]:
    """The modules of ``library``'s adapters (:data:`MODULES`) that the running environment cannot import."""
    return [m for m in MODULES.get(library, ()) if importlib.util.find_spec(m) is None]


@dataclass(frozen=True)
class LibraryRow:
    """One configuration of one library, and its audit.

    Attributes:
        name: the row's key in ``libraries.rows`` (its files live under ``results/libraries/{name}/``).
        library: the distribution's name (its installed version is in the code version of the row's trainings).
        configuration: the switches the row sets, in words.
        planted: a control with a bug planted on purpose: the table must flag it.
        audit: the byo audit (design, options, threads, resources, control; its root, the folder's code and the
            library in its trainings' code version).
    """

    name: str
    library: str
    configuration: str
    planted: bool
    audit: ByoAudit

    @property
    def root(self) -> str:
        return self.audit.root

    @property
    def report(self) -> str:
        """The byo report the table reads (rule ``audit_byo``)."""
        return f"{self.root}/report.json"

    def describe(self) -> dict[str, Any]:
        """What the table shows of the row besides its report: its name, library, installed version,
        configuration, whether its bug is planted."""
        return {"row": self.name, "library": self.library, "version": installed_version(self.library),
                "configuration": self.configuration, "planted": self.planted}  # fmt: skip


@dataclass(frozen=True)
class LibrariesPlan:
    """Every row that runs here, the rows and libraries not run (name → why: a row whose library is not installed,
    then the section's ``not_run``), what the report states of the shared audit (``facts``: runs,
    canary, setting), and what ``hsaudit plan`` reads (``audits``: the rows' byo audits by name, so that
    ``--time-byo`` times them)."""

    rows: dict[str, LibraryRow]
    not_run: dict[str, str]
    facts: dict[str, Any]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]

    @property
    def audits(self) -> dict[str, ByoAudit]:
        return {name: row.audit for name, row in self.rows.items()}


def check_row(name: str, values: Mapping[str, Any]) -> None:
    """Raises ValueError naming the row ``name`` when a key is missing or unknown (:data:`ROW_KEYS`)."""
    unknown = sorted(set(values) - set(ROW_KEYS))
    missing = [k for k in ("entry", "library", "configuration") if not values.get(k)]
    if unknown or missing:
        raise ValueError(f"libraries.rows.{name}: unknown key(s) {unknown}, missing {missing}")


def not_installed(name: str, values: Mapping[str, Any]) -> str | None:
    """Why the row ``name`` cannot run here (its library, or a distribution it ``requires``, is not installed: no
    version for its code version), or None. The reason names the row's configuration and the extra that installs
    the library (its ``extra``).

    Raises:
        ValueError: a missing or unknown key (:func:`check_row`).
    """
    check_row(name, values)
    library = str(values.get("library"))
    extra = f"; pip install 'hsaudit[{values['extra']}]'" if values.get("extra") else ""
    if library in MODULES:  # installed is not enough: its adapters' modules must import (TF Privacy needs tf_keras)
        missing = missing_modules(library)
        why = f"{', '.join(missing)} not importable here{extra} ({library}, {values.get('configuration')})"
        return f"not run: {why}" if missing else None
    absent = [d for d in (library, *requires(values)) if installed_version(d) == "not installed"]
    if absent:
        return f"not run: {' and '.join(absent)} is not installed here{extra} ({values.get('configuration')})"
    return None


def requires(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The distributions a row's adapter imports besides its library (its ``requires``, e.g. keras for JAX
    Privacy's Keras API): a row runs where they are installed, and their versions join its code version."""
    return tuple(str(d) for d in values.get("requires") or ())


def runs_of(values: Mapping[str, Any], section: Mapping[str, Any]) -> int | None:
    """A row's models per world, or None for the shared audit's: its own ``runs``, else the section's
    ``planted_runs`` for a planted control, else its library's ``library_runs``."""
    planted = section.get("planted_runs") if values.get("planted") else None
    runs = values.get("runs") or planted or (section.get("library_runs") or {}).get(str(values.get("library")))
    return int(runs) if runs else None


def row_from(name: str, values: Mapping[str, Any], shared: Mapping[str, Any], *, seed: int) -> LibraryRow:
    """The row ``name`` of ``libraries.rows``: its ``entry`` audited with the ``shared`` byo options (its own
    ``audit`` options and ``audit_setting`` keys over theirs) at ``results/libraries/{name}``.

    Raises:
        ValueError: a missing or unknown key, or a byo option out of range (the message names the row).
    """
    check_row(name, values)
    own = {**dict(shared), **dict(values.get("audit") or {})}  # the row's byo options over the shared ones
    if values.get("audit_setting"):  # the row's keys over the shared setting's
        own["audit_setting"] = {**dict(shared.get("audit_setting") or {}), **dict(values["audit_setting"])}
    if values.get("runs"):  # the row's models per world (and its control's) over the shared runs
        own["runs"] = int(values["runs"])
    audit = audit_from(f"libraries_{name}", {**own, "entry": values["entry"]}, seed=seed)
    if audit.canaries is not None:  # the table reads population reports (its control's power, its runs)
        raise ValueError(f"libraries.rows.{name}: the libraries table runs the population audit; drop canaries")
    packages = (str(values["library"]), *requires(values))
    audit = replace(audit, root=f"{ROOT}/{name}", entry_code="folder", packages=packages)
    return LibraryRow(name=name, library=str(values["library"]), configuration=str(values["configuration"]),
                      planted=bool(values.get("planted", False)), audit=audit)  # fmt: skip


def own_design(row: LibraryRow) -> str:
    """A row's design in words, for a row that sets its own byo options (``audit``): canary/background, their
    options, and the script's own configuration where it has no audit setting."""
    d = row.audit.design
    options = f" {d.canary_options}" if d.canary_options else ""
    setting = "" if d.setting is not None else ", the script's own configuration (no audit setting)"
    return f"{d.canary}/{d.background}{options}{setting}"


def plan(config: Mapping[str, Any]) -> LibrariesPlan:
    """The plan of the resolved config's ``libraries:`` section (empty without one)."""
    section = config.get("libraries") or {}
    seed = int(config.get("seed", 0))
    shared = dict(section.get("audit") or {})
    listed = {name: values or {} for name, values in (section.get("rows") or {}).items()}
    missing = {name: why for name, values in listed.items() if (why := not_installed(name, values))}
    rows = {name: row_from(name, {**values, "runs": runs_of(values, section)}, shared, seed=seed)
            for name, values in listed.items() if name not in missing}  # fmt: skip
    populations = tuple(
        Population(
            root=r.root,
            figures=("libraries/report",),
            model="user",
            models=r.audit.design.models * (2 if r.audit.control else 1),
            steps=int(r.audit.design.setting.steps if r.audit.design.setting else 0),
            batch=0,
            role=f"{r.library} {r.name}",
            detail=f"entry {r.audit.design.entry}",
        )
        for r in rows.values()
    )
    design = next(iter(rows.values())).audit.design if rows else None
    facts = {"runs": design.runs if design else None, "canary": design.canary if design else None,
             "setting": shared.get("audit_setting"),
             "own_designs": {name: own_design(r) for name, r in rows.items() if listed[name].get("audit")}}  # fmt: skip
    targets = (Target(path=f"{ROOT}/report.md", kind="cpu", trained=True),) if rows else ()
    return LibrariesPlan(rows=rows, not_run={**missing, **dict(section.get("not_run") or {})}, facts=facts,
                         populations=populations, targets=targets)  # fmt: skip
