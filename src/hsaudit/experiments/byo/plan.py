"""The plan of the audits of users' trainings: the ``byo:`` config section → frozen values.

Each entry of ``byo:`` (a name → its options) becomes a :class:`ByoAudit`: the population's
:class:`~hsaudit.experiments.byo.values.Design` (what is trained) and the
:class:`~hsaudit.experiments.byo.audit.AuditOptions` (how the scores are audited). The rules add the version of the
user's module (:func:`entry_version`, its file's text), so that editing that file reruns its audit and nothing else;
the plan itself reads no user file, so an audit whose entry is missing fails when its target is asked for, not every
other target. :func:`plan` returns the audits with the :class:`~hsaudit.experiments.plans.Population` and
:class:`~hsaudit.experiments.plans.Target` values that ``hsaudit plan`` and the workflow read.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hsaudit.accounting.gaussian import calibrate_noise
from hsaudit.audit.rules import parse_rule
from hsaudit.experiments.byo.audit import GUESS_FRACTIONS, AuditOptions
from hsaudit.engine import canaries
from hsaudit.engine.canary_families import canary_family
from hsaudit.experiments.byo.values import (AUTO, DESIGNS, FEW_SCORES, PINNED, AuditSetting, Claim, Design,
                                                  data_use_of, entry_file, few_score)
from hsaudit.experiments.plans import Population, Target
from hsaudit.util.seeding import derive_seed
from hsaudit.util.source import code_text

DEFAULTS: dict[str, Any] = {
    "canary": "auto",
    "background": "auto",
    "background_size": 16,
    "runs": 500,
    "shards": 1,
    "audit_setting": None,
    "claim": None,
    "data": None,
    "score": "auto",
    "pilot_runs": 50,
    "canary_options": None,
    "confidence": 0.95,
    "rule": "crossing",
    "directions": "one",
    "basis": "auto",
    "control": True,
    "power_factor": 1.5,
    "power_target": 0.8,
    "power_resamples": 100,
    "canaries": None,
    "trainings": 1,
    "guesses": list(GUESS_FRACTIONS),
    "threads": 1,
    "resources": {"mem_mb": 4000, "runtime": 120},
}
"""The value of every key an entry of ``byo:`` leaves out (workflow/schemas/byo.schema.yaml states the same)."""

class _OrAuto:
    """``auto`` and the names of a registry of :mod:`hsaudit.engine.canaries`, read from it at each iteration (a
    name registered later is offered too)."""

    def __init__(self, registry: str) -> None:
        self.registry = registry

    def __iter__(self) -> Iterator[str]:
        yield AUTO
        yield from getattr(canaries, self.registry)


CANARY_CHOICES = _OrAuto("CANARIES")
"""A ``byo:`` entry's ``canary`` (the schema's enum): ``auto`` (the audit chooses the design by a pilot; docs/byo.md)
or a canary type of :data:`hsaudit.engine.canaries.CANARIES`."""
BACKGROUND_CHOICES = _OrAuto("BACKGROUNDS")
"""A ``byo:`` entry's ``background``: ``auto`` or a background (either given pins the design)."""

SETTING_DEFAULTS: dict[str, Any] = {"steps": 5, "epsilon": 4.0, "delta": 1e-5, "sample_rate": 1.0, "neighbouring": "add-remove"}
"""The audit setting's defaults: few steps, the full batch, σ calibrated to ε = 4 at δ = 1e-5 [inferred: an ε a
correct implementation's final model can reach with an ideal canary, so that a tight audit is possible at a few
hundred runs]."""


def audit_setting(
    *, steps: int = 5, epsilon: float = 4.0, delta: float = 1e-5, sample_rate: float | None = 1.0,
    neighbouring: str = "add-remove",
) -> AuditSetting:
    """The cheap configuration an audit asks a training to run in: ``steps`` steps at ``sample_rate`` (None: the
    training's own), σ calibrated so that the declared mechanism's ε at ``delta`` is ``epsilon`` (dp-accounting PLD,
    add-remove; a full batch is the Gaussian mechanism composed ``steps`` times). ``neighbouring="replace-one"``
    (a training whose batches have a fixed size, e.g. TF Privacy's microbatches) doubles that σ: on the full batch
    the replace-one sensitivity is 2C, so its ε at 2σ is the add-remove ε at σ.

    Raises:
        ValueError: a value out of range, or replace-one with a sample rate below 1 (calibrated on the full batch only).
    """
    q = 1.0 if sample_rate is None else float(sample_rate)
    if neighbouring == "replace-one" and q < 1.0:
        raise ValueError(f"a replace-one audit setting is calibrated on the full batch only, got sample_rate {q}")
    sigma = calibrate_noise(epsilon=float(epsilon), delta=float(delta), compositions=int(steps), sampling_rate=q)
    if neighbouring == "replace-one":
        sigma *= 2.0
    return AuditSetting(steps=int(steps), noise_multiplier=sigma, sample_rate=sample_rate, epsilon=float(epsilon),
                        delta=float(delta), neighbouring=str(neighbouring))  # fmt: skip


def entry_version(entry: str) -> str:
    """A hash of the user's module file's code (12 hex digits; its comments and docstrings left out, as in every
    code version: :func:`hsaudit.util.source.code_text`): the code version of what the entry runs.

    Raises:
        ValueError: the entry's file cannot be found.
    """
    return hashlib.sha256(code_text(entry_file(entry).read_bytes())).hexdigest()[:12]


def folder_version(entry: str) -> str:
    """A hash of the code of every ``.py`` file in the entry's folder (12 hex digits, as :func:`entry_version`): the
    entry and the modules it shares with its siblings.

    Raises:
        ValueError: the entry's file cannot be found.
    """
    digest = hashlib.sha256()
    for path in sorted(entry_file(entry).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + code_text(path.read_bytes()) + b"\0")
    return digest.hexdigest()[:12]


def installed_version(distribution: str) -> str:
    """The installed version of ``distribution`` (e.g. ``opacus``), or ``"not installed"``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


CHECK_TRAININGS = 4
"""The user's trainings in the check of a few-runs audit (the harness's probe: two seeds, each twice, for
determinism and the reference model), run before the audit's and the control's trainings."""


@dataclass(frozen=True)
class FewCost:
    """The price of a few-runs audit (:func:`few_runs_cost`).

    Attributes:
        check, audit, control: the trainings of the check, of the audit (K) and of the positive control (K, or 0).
        seconds_check, seconds_audit, seconds_control: one training of each (the check's on the data alone, the
            others with their canaries' rows).
        checks: the check's jobs (each trains :data:`CHECK_TRAININGS`).
        seconds_job: a job's own work before its training (its start, ``make()``, the data), paid once by each job —
            the check's, and one per training of the audit and of the control — where each runs as its own job (the
            workflow); 0 where one process runs them all (the CLI).
    """

    check: int
    audit: int
    control: int
    seconds_check: float
    seconds_audit: float
    seconds_control: float
    checks: int = 1
    seconds_job: float = 0.0

    @property
    def trainings(self) -> int:
        return self.check + self.audit + self.control

    @property
    def jobs(self) -> int:
        """The jobs, one per training of the audit and of the control, after the check's (none when nothing trains)."""
        return (self.checks if self.check else 0) + self.audit + self.control

    @property
    def seconds_trainings(self) -> float:
        """The trainings alone, one after another (one process: the CLI)."""
        return self.check * self.seconds_check + self.audit * self.seconds_audit + self.control * self.seconds_control

    @property
    def seconds(self) -> float:
        """All the trainings and their jobs' own work, one after another."""
        return self.seconds_trainings + self.jobs * self.seconds_job


NOTHING_TRAINED = FewCost(check=0, audit=0, control=0, seconds_check=0.0, seconds_audit=0.0, seconds_control=0.0)
"""The price of a few-runs audit whose verdict needs no training."""


def few_runs_cost(trainings: int, canaries: int, seconds_per_training: float, *, rows: int | None = None,
                  control: bool = True, copies: int = 1, checks: int = 1, job_seconds: float = 0.0) -> FewCost:  # fmt: skip
    """The arithmetic of a few-runs audit's price (what prices one end to end is
    :func:`hsaudit.experiments.byo.price.price_few`): K = ``trainings`` trainings of M = ``canaries`` canaries
    each and, with the ``control``, K more, after ``checks`` × :data:`CHECK_TRAININGS` trainings of the check, given
    one training of the user's data takes ``seconds_per_training``. With the data's ``rows``, a training of the
    audit is priced at (rows + M/2)/rows of that (each canary in by a fair coin), the control's at
    (rows + ``copies``·M/2)/rows; ``job_seconds``: :attr:`FewCost.seconds_job`.

    Raises:
        ValueError: K < 1, M < 2, a negative time, or rows < 1.
    """
    if int(trainings) < 1 or int(canaries) < 2 or seconds_per_training < 0 or job_seconds < 0:
        raise ValueError(f"a few-runs audit needs K >= 1 trainings, M >= 2 canaries and times >= 0, got K = "
                         f"{trainings}, M = {canaries}, {seconds_per_training} s, {job_seconds} s per job")  # fmt: skip
    if rows is not None and int(rows) < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")

    def scaled(extra: float) -> float:
        return seconds_per_training * (1.0 if rows is None else (int(rows) + extra) / int(rows))

    half, k = int(canaries) / 2, int(trainings)
    return FewCost(check=int(checks) * CHECK_TRAININGS, audit=k, control=k if control else 0,
                   seconds_check=scaled(0.0), seconds_audit=scaled(half), seconds_control=scaled(int(copies) * half),
                   checks=int(checks), seconds_job=float(job_seconds))  # fmt: skip


@dataclass(frozen=True)
class ByoAudit:
    """One audit of a user's training.

    Attributes:
        name: its name in the ``byo:`` section (its files live under ``results/byo/{name}/``).
        design: what is trained.
        options: how it is audited.
        threads: torch threads per job.
        resources: ``mem_mb`` and ``runtime`` (minutes) per job.
        control: whether the positive control is trained (its shards under ``control/``, as many as the audit's).
        root: the folder of its files: ``results/byo/{name}`` by default; another study that audits trainings through
            byo's rules sets its own (the libraries table: ``results/libraries/{row}``).
        entry_code: what of the user's code the trainings' code version covers (:func:`training_version`):
            ``file`` (the entry's file) or ``folder`` (every ``.py`` file beside it).
        packages: distributions whose installed version is in the trainings' code version (upgrading one reruns the
            trainings of the audits that name it, and no others).
        canaries: None for the population audit; M for the few-runs audit (``trainings`` K trainings of M canaries
            each, one job per training: :meth:`few`; ``runs`` and ``shards`` unused).
        guesses: the few-runs audit's guesses per side, fractions of the K·M canaries.
    """

    name: str
    design: Design
    options: AuditOptions
    threads: int = 1
    resources: Mapping[str, int] | None = None
    control: bool = True
    root: str = ""
    entry_code: str = "file"
    packages: tuple[str, ...] = field(default=())
    canaries: int | None = None
    trainings: int = 1
    guesses: tuple[float, ...] = GUESS_FRACTIONS

    def __post_init__(self) -> None:
        if not self.root:
            object.__setattr__(self, "root", f"results/byo/{self.name}")
        if not self.root.startswith("results/"):
            raise ValueError(f"byo audit {self.name}: its root {self.root!r} is not under results/")
        if self.entry_code not in ("file", "folder"):
            raise ValueError(f"byo audit {self.name}: entry_code must be file or folder, got {self.entry_code!r}")

    def few(self) -> dict[str, Any] | None:
        """The few-runs design as plain values (``FewRunsDesign.to_dict``), or None for the population audit."""
        if self.canaries is None:
            return None
        return {"population": self.design.to_dict(), "canaries": self.canaries, "trainings": self.trainings,
                "score": few_score(self.design.score)}  # fmt: skip

    @property
    def jobs(self) -> int:
        """Training jobs of the audit (its control's as many again): its shards, or one per few-runs training."""
        return self.design.shards if self.canaries is None else self.trainings

    @property
    def key(self) -> str:
        """Its root under ``results/``: the ``{name}`` wildcard of byo's rules (``byo/<name>``)."""
        return self.root.removeprefix("results/")


@dataclass(frozen=True)
class ByoPlan:
    """Every audit of the ``byo:`` section, and the populations and targets ``hsaudit plan`` reads."""

    audits: dict[str, ByoAudit]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]


def audit_from(name: str, entry: Mapping[str, Any], *, seed: int) -> ByoAudit:
    """The :class:`ByoAudit` of one ``byo:`` entry (its missing keys from :data:`DEFAULTS`).

    Raises:
        ValueError: no ``entry``, an unknown key, or a value out of range (the message names the audit).
    """
    unknown = sorted(set(entry) - set(DEFAULTS) - {"entry"})
    if unknown:
        raise ValueError(f"byo.{name}: unknown key(s) {', '.join(unknown)}")
    if not entry.get("entry"):
        raise ValueError(f"byo.{name}: needs an entry (package.module:make or path/to/file.py:make)")
    values = {**DEFAULTS, **{k: v for k, v in entry.items() if v is not None or k in ("claim", "data")}}
    setting = values["audit_setting"]
    try:
        design = Design(
            entry=str(values["entry"]),
            canary=str(values["canary"]),
            runs=int(values["runs"]),
            shards=int(values["shards"]),
            seed=derive_seed(seed, "byo", name) % 2**31,
            background=str(values["background"]),
            background_size=int(values["background_size"]),
            setting=None if not setting else audit_setting(**{**SETTING_DEFAULTS, **dict(setting)}),
            claim=values["claim"],
            data=values["data"],
            score=str(values["score"]),
            pilot_runs=int(values["pilot_runs"]),
            canary_options=values["canary_options"],
        )
        options = AuditOptions(
            confidence=float(values["confidence"]),
            rule=parse_rule(values["rule"], seed=design.seed),
            directions=str(values["directions"]),
            basis=str(values["basis"]),
            seed=design.seed,
            power_factor=float(values["power_factor"]),
            power_target=float(values["power_target"]),
            power_resamples=int(values["power_resamples"]),
        )
    except ValueError as err:
        raise ValueError(f"byo.{name}: {err}") from None
    few = few_values(name, design, values)
    if few and design.chosen:  # the few-runs audit's design is given (as on the CLI): its pilot would cost trainings
        design = replace(design, canary=PINNED[0], background=PINNED[1])
    return ByoAudit(
        name=name,
        design=design,
        options=options,
        threads=int(values["threads"]),
        resources={**DEFAULTS["resources"], **dict(values["resources"] or {})},
        control=bool(values["control"]),
        **few,
    )


def few_values(name: str, design: Design, values: Mapping[str, Any]) -> dict[str, Any]:
    """The few-runs keys of an entry (``canaries``, ``trainings``, ``guesses``) as :class:`ByoAudit` fields: none
    without ``canaries`` (the population audit).

    Raises:
        ValueError: M < 2, K < 1, a guess outside (0, 0.5], a canary type without a family form, a score the
            few-runs audit does not take.
    """
    if values["canaries"] is None:
        return {}
    canaries, trainings = values["canaries"], values["trainings"]
    guesses = tuple(float(f) for f in values["guesses"])
    if int(canaries) != canaries or canaries < 2 or int(trainings) != trainings or trainings < 1:
        raise ValueError(f"byo.{name}: canaries must be an integer >= 2 and trainings >= 1, got {canaries} and "
                         f"{trainings}")  # fmt: skip
    if not guesses or not all(0.0 < f <= 0.5 for f in guesses):
        raise ValueError(f"byo.{name}: guesses must be fractions in (0, 0.5], got {list(guesses)}")
    if few_score(design.score) not in FEW_SCORES:
        raise ValueError(f"byo.{name}: score {design.score!r} is not a few-runs audit's ({', '.join(FEW_SCORES)})")
    try:
        canary_family(PINNED[0] if design.chosen else design.canary)
    except ValueError as err:
        raise ValueError(f"byo.{name}: {err}") from None
    return {"canaries": int(canaries), "trainings": int(trainings), "guesses": guesses}


def plan(config: Mapping[str, Any]) -> ByoPlan:
    """The plan of the resolved config's ``byo:`` section (empty without one)."""
    section = config.get("byo") or {}
    seed = int(config.get("seed", 0))
    audits = {name: audit_from(name, entry or {}, seed=seed) for name, entry in section.items()}
    populations = tuple(
        Population(
            root=a.root,
            figures=(f"byo/{name}/report",),  # the id of its target, results/byo/<name>/report.md
            model="user",
            # the audit's models and the control's (a few-runs audit: its trainings), and the pilot's of a chosen design
            models=(a.design.models if a.canaries is None else a.trainings) * (2 if a.control else 1)
            + a.design.chosen * len(DESIGNS) * 2 * a.design.pilot_runs,
            steps=int((a.design.setting.steps if a.design.setting else (a.design.claim or {}).get("steps", 0)) or 0),
            batch=0,
            role=_role(a.design),
            detail=f"entry {a.design.entry}" + ("" if a.canaries is None else
                                                f", {a.canaries} canaries x {a.trainings} trainings"),  # fmt: skip
        )
        for name, a in audits.items()
    )
    targets = tuple(Target(path=f"{a.root}/report.md", kind="cpu", trained=True) for a in audits.values())
    return ByoPlan(audits=audits, populations=populations, targets=targets)


def _role(design: Design) -> str:
    """A population's role in ``hsaudit plan``: its design, or that a pilot chooses it."""
    if design.chosen:
        return f"design chosen by a pilot ({len(DESIGNS)} candidates)"
    return f"{design.canary} canary, {design.background} background"


def training_version(audit: ByoAudit) -> str:
    """The code version of what the audit's jobs run of the user's: :func:`entry_version` (``entry_code`` file) or
    :func:`folder_version` (``folder``), then ``name==version`` of each of its ``packages`` (installed here)."""
    code = entry_version(audit.design.entry) if audit.entry_code == "file" else folder_version(audit.design.entry)
    return " ".join([code, *(f"{p}=={installed_version(p)}" for p in audit.packages)])


def checks(claim_json: str) -> bool:
    """Whether the check job (``check_byo_entry``) runs: the checkpoint's ``claim.json`` holds no verdict, or one
    that the check's reads of the data may still turn into a violation (too few runs), as in the CLI; an accounting
    bug needs nothing more."""
    with open(claim_json) as fh:
        early = json.load(fh)["early"]
    return early is None or early.get("verdict") != "violation"


def check_data_use(audit: ByoAudit, claim_json: str, check_json: str) -> str | None:
    """The check's data-use finding: the ``"data use"`` of ``check_byo_entry``'s check.json, or for a few-runs audit
    the reads its ``check_byo_few`` wrote to probe.json (``check_json``; that job imports none of the audit's code)
    against claim.json's claim (:func:`~hsaudit.experiments.byo.values.data_use_of`, as the audit job and the CLI)."""
    with open(check_json) as fh:
        check = json.load(fh)
    if audit.canaries is None:
        return check.get("data use")
    with open(claim_json) as fh:
        claim = Claim.from_mapping(json.load(fh)["claim"])
    return data_use_of(claim, check.get("uses"), int(check["use_trainings"]))


def shard_paths(audit: ByoAudit, claim_json: str, check_json: str | None = None) -> list[str]:
    """The score files the audit's report reads: none when the checkpoint's ``claim.json`` (rule
    ``assess_byo_claim``, or ``assess_byo_few``) holds a verdict that needed no training, or the checkpoint
    ``check_byo_entry``'s ``check_json`` (``check_byo_few``'s probe.json) a data-use finding (a violation before any
    audit model, as in the CLI: :func:`check_data_use`), else
    one per job of the audit (``shards/``, or a few-runs audit's ``trainings/``: :attr:`ByoAudit.jobs`) and, with the
    control, as many of the control (``control/``)."""
    with open(claim_json) as fh:
        if json.load(fh)["early"] is not None:
            return []
    if check_json is not None and check_data_use(audit, claim_json, check_json) is not None:
        return []
    own = "shards" if audit.canaries is None else "trainings"
    parts = (own, "control") if audit.control else (own,)
    return [f"{audit.root}/{part}/{i}.csv" for part in parts for i in range(audit.jobs)]


def audit_details(audit: ByoAudit) -> dict[str, Any]:
    """What the report records about the design (the check's findings are added from its file)."""
    d = audit.design
    if audit.canaries is not None:  # the few-runs audit (the keys of its CLI report, and the design)
        return {"entry": d.entry, "canary family": d.canary, "background": d.background, "seed": d.seed,
                "canaries per training": audit.canaries, "trainings": audit.trainings,
                "entry version": training_version(audit)}  # fmt: skip
    return {
        "entry": d.entry,
        "canary": d.canary,
        "background": d.background,
        "runs per world (design)": d.runs,
        "shards": d.shards,
        "entry version": training_version(audit),
    }
