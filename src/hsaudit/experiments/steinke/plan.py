"""Steinke, Nasr et al., "The Last Iterate Advantage": the plan of every target, from the resolved config to the
frozen values that the rules (``workflow/rules/steinke.smk``) and ``hsaudit plan`` (:mod:`hsaudit.pipeline.costs`)
both read.

Targets (``results/steinke/…``):

* simulations, no training — ``fig1`` (accounting), ``fig3`` (the Dirac canary's one-dimensional law), ``fig5``
  (quadratic regulariser), ``fig6`` (malicious dataset): :mod:`hsaudit.experiments.steinke.simulations`;
* trained image classifiers — ``fig2`` (the Dirac gradient canary), ``fig4`` (the label-flipped input canary, one
  population per background), ``fig4_spread`` (fig4's natural-data audit over several Dirac coordinates and
  label-flipped images, one population pair each) and ``table2.md`` (one Dirac population per batch size; a row with fig2's values *is*
  fig2's population): :mod:`hsaudit.experiments.steinke.train.images`;
* a fine-tuned causal language model — ``table1.md``, optional (it needs a model and data by path; without them it is
  no target of ``rule all`` and a request for it stops with :attr:`Table1.missing`):
  :mod:`hsaudit.experiments.steinke.train.language`.

Every trained population is a :class:`Training`: 2R models (both worlds; model i is in world i mod 2), trained in
shards for its largest T, keyed by a hash of every value that changes a shard, so that changing one retrains, raising
R adds shards and changing a plotted T below the largest retrains nothing. Its files live under its
:attr:`Training.root` (``results/steinke/<canary>/<key>``, a canary of
:data:`hsaudit.experiments.steinke.train.canaries.STEINKE_CANARIES`; Table 1's under
``results/steinke/table1/<key>``). The tables are :mod:`hsaudit.experiments.steinke.audit`'s, the figures
:data:`hsaudit.experiments.steinke.figures.FIGURES`.

This module is imported by the workflow and the cost planner, never by a job's script: editing it reruns nothing
by itself (a change of what it plans does, through the keys and the jobs' params).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hsaudit.audit.rules import DEFAULT_RULE, ThresholdRule, config_rules
from hsaudit.data.datasets import configured_identity
from hsaudit.experiments.plans import Population, Target, gpu_requested
from hsaudit.experiments.steinke.train.canaries import DIRAC_BACKGROUNDS, LABEL_FLIP_BACKGROUNDS, LABEL_FLIP_SOURCES
from hsaudit.experiments.steinke.values import EXAMPLES, LM_EXTRA, SCORES
from hsaudit.util.mapping import key_of
from hsaudit.util.schedule import training_steps

RESULTS = "results/steinke"
# The keys of `steinke.fig2` that change what a training job computes (its key); the others (steps plotted, audit
# settings, R) only select or add shards.
TRAINING_KEYS = (
    "model",
    "model_kwargs",
    "background",
    "batch_size",
    "lr",
    "clip_norm",
    "noise_multiplier",
    "canary_dim",
    "shard_size",
    "backend",
)
# The keys of `steinke.fig4` that change a training job (besides the background, one population per panel).
FIG4_TRAINING_KEYS = ("model", "model_kwargs", "batch_size", "lr", "clip_norm", "noise_multiplier", "canary",
                      "shard_size", "backend")
# The keys of `steinke.table2` that every row's population takes (a row sets B, σ, T and may set its own lr).
TABLE2_KEYS = ("model", "model_kwargs", "backend", "lr", "clip_norm", "canary_dim", "models_per_world", "shard_size")
# The keys of `steinke.table2` that an η candidate shares with its row's population (with the row's B, σ, T, its η,
# the validation split's size and its number of models): the same DP-SGD setting, without the canary.
CANDIDATE_KEYS = ("model", "model_kwargs", "backend", "clip_norm")
# Keys of `steinke.table1` that change what a training job computes (with the row's batch size and σ).
TABLE1_TRAINING_KEYS = ("lr", "clip_norm", "epochs", "score", "shard_size")
# Keys that change Table 1's prepared data (the tokenised blocks and the canary).
TABLE1_DATA_KEYS = ("model", "data", "examples", "block_size", "eval_fraction", "max_dialogues", "canary_tokens")


@dataclass(frozen=True)
class Training:
    """One trained population as a table reads it.

    Attributes:
        root: the directory of its shards (``results/steinke/<canary>/<key>``).
        key: the hash of every value that changes a shard (the spec without ``key`` and, for fig2/table2, ``test``).
        spec: the training job's spec (read-only; the rules hand a copy to the job).
        shards: the shards the table reads (0 … 2R/S − 1).
        steps: the T values the table reads (ascending; the models are trained for the largest).
    """

    root: str
    key: str
    spec: Mapping[str, Any]
    shards: tuple[int, ...]
    steps: tuple[int, ...]

    @property
    def paths(self) -> list[str]:
        """The shard files, in shard order."""
        return [f"{self.root}/shard{s}.npz" for s in self.shards]


@dataclass(frozen=True)
class TrainingJob:
    """What every training job (one shard) of an image population runs.

    Attributes:
        canary: :data:`hsaudit.experiments.steinke.train.canaries.STEINKE_CANARIES` (also the directory of its population).
        spec: :attr:`Training.spec`.
        device: ``auto``, ``cpu`` or ``cuda``.
        resources: ``threads``, ``mem_mb``, ``runtime``, ``gpu`` (a population that two tables share takes the
            larger of each).
    """

    canary: str
    spec: Mapping[str, Any]
    device: str
    resources: Mapping[str, int]


@dataclass(frozen=True)
class TunedJob:
    """What every training job (one shard) of a Table 2 row with η tuned on a validation split runs: the row's
    population (:class:`TrainingJob`, ``spec["lr"]`` ``None``) with the η that its candidates' mean validation
    accuracy picks (:func:`hsaudit.experiments.steinke.train.tuning.select_lr`).

    Attributes:
        job: the population's training job (Dirac canary; its spec has ``lr_tuning`` instead of an η).
        candidates: the candidates' files, one per η of ``grid`` in grid order.
        grid: the candidate η values (ascending).
    """

    job: TrainingJob
    candidates: tuple[str, ...]
    grid: tuple[float, ...]


@dataclass(frozen=True)
class TrainedAudit:
    """The audit table of a trained-model figure (fig2: one population; fig4: one per background).

    Attributes:
        figure: ``fig2``, ``fig4`` or ``fig4_spread``.
        panels: (background, population) in panel order.
        steps: the T values audited.
        noise_multiplier, delta: σ of the training and δ of every ε.
        model: the architecture (recorded in the table).
    """

    figure: str
    panels: tuple[tuple[str, Training], ...]
    steps: tuple[int, ...]
    noise_multiplier: float
    delta: float
    model: str

    @property
    def table(self) -> str:
        return f"{RESULTS}/{self.figure}/audit.csv"

    @property
    def paths(self) -> list[str]:
        """Every panel's shard files, panel after panel (the order the audit splits them back in)."""
        return [path for _, training in self.panels for path in training.paths]


@dataclass(frozen=True)
class Figure:
    """A figure of the paper: its target, the tables its plot reads and what its figure function is told.

    Attributes:
        target: the PDF target.
        tables: the CSVs concatenated into the figure's table.
        facts: the ``facts`` of its figure function (:data:`hsaudit.experiments.steinke.figures.FIGURES`): the
            footer's entries (``scale``, ``setup``) and the figure's settings (``delta``, ``audit``, ...).
    """

    target: Target
    tables: tuple[str, ...]
    facts: Mapping[str, Any]

    @property
    def name(self) -> str:
        """``fig2`` (the key of :data:`~hsaudit.experiments.steinke.figures.FIGURES`)."""
        return self.target.id.removeprefix("steinke/")

    @property
    def csv(self) -> str:
        return self.target.path.removesuffix(".pdf") + ".csv"


@dataclass(frozen=True)
class Table2:
    """Table 2: one Dirac-canary population per row (natural data).

    Attributes:
        rows: the rows' populations.
        params: per row ``{shards, steps, noise_multiplier, paper, lr, grid}`` (what the table script is handed;
            ``lr`` ``None`` and ``grid`` the candidate η values where η is tuned, else ``lr`` the row's η and
            ``grid`` empty).
        delta, model: δ of every ε; the architecture.
        facts: the footer's entries.
        candidates: per row its η candidates (:func:`plan_table2_candidates`; empty where η is not tuned).
    """

    rows: tuple[Training, ...]
    params: tuple[Mapping[str, Any], ...]
    delta: float
    model: str
    facts: Mapping[str, Any]
    candidates: tuple[tuple[Training, ...], ...] = ()

    @property
    def paths(self) -> list[str]:
        return [path for row in self.rows for path in row.paths]

    @property
    def candidate_paths(self) -> list[str]:
        """Every η candidate's file, row after row, in grid order."""
        return [path for row in self.candidates for c in row for path in c.paths]


@dataclass(frozen=True)
class Table1:
    """Table 1: the language model's data job, σ calibration and one population per row.

    Attributes:
        data_key: the key of the prepared data (``results/steinke/table1/data/<data_key>.npz``).
        data: the keyword arguments of :func:`hsaudit.experiments.steinke.train.language.prepare_table1_data`
            (the seed included).
        rows: the rows' populations (``steps`` is empty: T is known once N is, from the calibration).
        calibration: per row ``{batch_size, noise_multiplier, heuristic_epsilon}``
            (:func:`hsaudit.experiments.steinke.audit.privacy_plan`).
        paper: per row the paper's printed values (or ``None``).
        missing: why the target cannot run (the model or data path not given), or ``""``.
        sources: the inputs of its data job, ``model`` (the model's ``config.json``) and ``data`` (empty when
            ``missing``).
        facts: the footer's entries.
        data_source: what the table names as its data.
    """

    data_key: str
    data: Mapping[str, Any]
    rows: tuple[Training, ...]
    calibration: tuple[Mapping[str, Any], ...]
    paper: tuple[Mapping[str, Any] | None, ...]
    missing: str
    sources: Mapping[str, str]
    facts: Mapping[str, Any]
    data_source: str

    @property
    def data_path(self) -> str:
        return f"{RESULTS}/table1/data/{self.data_key}.npz"

    @property
    def privacy_path(self) -> str:
        return f"{RESULTS}/table1/data/{self.data_key}_privacy.json"

    @property
    def paths(self) -> list[str]:
        return [path for row in self.rows for path in row.paths]


@dataclass(frozen=True)
class SteinkePlan:
    """Everything the rules and the cost planner read (module docstring).

    Attributes:
        section: the resolved ``steinke`` config section (the simulations' rules hand parts of it to their jobs).
        populations: every trained population, one per root (:class:`hsaudit.experiments.plans.Population`).
        targets: every target (Table 1 only when its paths are given).
        figures: the PDF figures, fig1 … fig6 and fig4_spread.
        dataset: the image dataset of fig2, fig4 and table2.
        data: prepared data files by key (the training set and its test split): the dataset's config options.
        train_data, test_data: the prepared training set and test split (paths).
        jobs: the image populations' training jobs by key (rule ``train_steinke_shard``).
        candidate_jobs: Table 2's η candidates' training jobs by key (rule ``train_steinke_lr_candidate``; canary
            ``none``; empty unless ``steinke.table2.lr_grid`` is set).
        tuned_jobs: the training jobs of Table 2's rows whose η is tuned, by key (rule
            ``train_steinke_tuned_shard``; empty unless ``steinke.table2.lr_grid`` is set).
        audits: the audit tables of fig2, fig4 and fig4_spread.
        table2, table1: the tables.
        rule, valid_rule: the trained-model audits' threshold rule and the valid rule beside it, built once from
            the config's ``audit`` section (:func:`hsaudit.audit.rules.config_rules`).
    """

    section: Mapping[str, Any]
    populations: tuple[Population, ...]
    targets: tuple[Target, ...]
    figures: tuple[Figure, ...]
    dataset: str
    data: Mapping[str, Mapping[str, Any]]
    train_data: str
    test_data: str
    jobs: Mapping[str, TrainingJob]
    audits: tuple[TrainedAudit, ...]
    table2: Table2
    table1: Table1
    candidate_jobs: Mapping[str, TrainingJob]
    tuned_jobs: Mapping[str, TunedJob]
    rule: ThresholdRule = DEFAULT_RULE
    valid_rule: ThresholdRule = DEFAULT_RULE
    delta: float | None = None
    confidence: float | None = None

    def figure(self, name: str) -> Figure:
        """The figure ``name`` (``fig2``).

        Raises:
            ValueError: no such figure.
        """
        for fig in self.figures:
            if fig.name == name:
                return fig
        raise ValueError(f"no Steinke figure {name!r}; known: {[f.name for f in self.figures]}")


def _population(
    section: Mapping[str, Any],
    keys: tuple[str, ...],
    *,
    root: str,
    seed: int,
    data_identity: Mapping[str, Any],
    test_identity: Mapping[str, Any] | None,
    test_in_key: bool,
    name: str,
) -> Training:
    steps = sorted({int(t) for t in section["steps"]})
    if not steps or steps[0] < 1:
        raise ValueError(f"{name}.steps must be positive integers, got {section['steps']!r}")
    r, size = int(section["models_per_world"]), int(section["shard_size"])
    if r < 1 or size < 2 or size % 2:
        raise ValueError(f"models_per_world must be >= 1 and shard_size even and >= 2, got {r}, {size}")
    if (2 * r) % size:
        raise ValueError(
            f"2 * models_per_world ({2 * r}) must be a multiple of shard_size ({size}), so that raising R only adds shards"
        )
    train = {k: section[k] for k in keys}
    train.update(steps=steps[-1], seed=int(seed), data=dict(data_identity))
    if test_identity is not None and test_in_key:
        train["test"] = dict(test_identity)
    key = key_of(train)
    train["key"] = key
    if test_identity is not None:
        train["test"] = dict(test_identity)
    return Training(root=f"{RESULTS}/{root}/{key}", key=key, spec=train, shards=tuple(range(2 * r // size)),
                    steps=tuple(steps))


def plan_fig2(
    section: Mapping[str, Any],
    *,
    seed: int,
    data_identity: Mapping[str, Any],
    test_identity: Mapping[str, Any] | None = None,
) -> Training:
    """Figure 2's population (the Dirac gradient canary) from the config section ``steinke.fig2``.

    Args:
        section: ``steinke.fig2`` (``steps``, ``models_per_world``, ``shard_size`` and :data:`TRAINING_KEYS`).
        seed: the master seed.
        data_identity: what identifies the prepared training set
            (:func:`hsaudit.data.datasets.configured_identity`); part of the key.
        test_identity: what identifies the test set the final models are evaluated on (their accuracy, Table 2);
            ``None``: no evaluation. Carried in the spec but *not* in the key: it changes no score, so a Table 2 row
            with Figure 2's values shares Figure 2's models (and keys made before the evaluation existed stay).

    Returns:
        The population under ``results/steinke/dirac/<key>``; the key hashes every value that changes a shard's
        content (the largest T included).

    Raises:
        ValueError: a bad value, named.
    """
    if section["background"] not in DIRAC_BACKGROUNDS:
        raise ValueError(f"steinke.fig2.background must be one of {DIRAC_BACKGROUNDS}, got {section['background']!r}")
    return _population(section, TRAINING_KEYS, root="dirac", seed=seed, data_identity=data_identity,
                       test_identity=test_identity, test_in_key=False, name="steinke.fig2")


def plan_fig4(
    section: Mapping[str, Any],
    *,
    seed: int,
    data_identity: Mapping[str, Any],
    test_identity: Mapping[str, Any],
) -> dict[str, Training]:
    """Figure 4's populations (the label-flipped input canary) from ``steinke.fig4``, one per background (panel) in
    ``section["backgrounds"]``, under ``results/steinke/label_flip/<key>``.

    ``spec["canary"]`` is ``{source, index, label}`` (the registry's ``mislabelled`` entry with that row and label,
    :func:`hsaudit.experiments.steinke.train.images.fig4_canary`) and ``spec["test"]`` the test set's
    identity, part of the key (the canary may come from it; the final models are evaluated on it).

    Raises:
        ValueError: a bad value, named.
    """
    backgrounds = list(section["backgrounds"])
    if (not backgrounds or any(b not in LABEL_FLIP_BACKGROUNDS for b in backgrounds)
            or len(set(backgrounds)) < len(backgrounds)):
        raise ValueError(
            f"steinke.fig4.backgrounds must be distinct values of {LABEL_FLIP_BACKGROUNDS}, got {backgrounds!r}")
    canary = dict(section["canary"])
    if set(canary) != {"source", "index", "label"} or canary["source"] not in LABEL_FLIP_SOURCES:
        raise ValueError(f"steinke.fig4.canary must be {{source: test|train, index, label}}, got {canary!r}")
    return {
        background: _population({**section, "background": background}, ("background", *FIG4_TRAINING_KEYS),
                                 root="label_flip", seed=seed, data_identity=data_identity,
                                 test_identity=test_identity, test_in_key=True, name="steinke.fig4")
        for background in backgrounds
    }


def _spread_choices(value: Any, name: str) -> list[tuple[str, int]]:
    """``coordinates`` / ``canaries`` of ``steinke.fig4_spread``: n → n draws ``("draw", i)``; a list → the given
    values ``("value", v)``.

    Raises:
        ValueError: not a positive count nor a list of distinct non-negative integers.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise ValueError(f"steinke.fig4_spread.{name} must be >= 1, got {value}")
        return [("draw", i) for i in range(value)]
    values = [int(v) for v in value]
    if not values or any(v < 0 for v in values) or len(set(values)) < len(values):
        raise ValueError(f"steinke.fig4_spread.{name} must be a count or distinct non-negative integers, got {value!r}")
    return [("value", v) for v in values]


def plan_fig4_spread(
    spread: Mapping[str, Any],
    fig4: Mapping[str, Any],
    *,
    seed: int,
    data_identity: Mapping[str, Any],
    test_identity: Mapping[str, Any],
) -> tuple[tuple[str, str, Training], ...]:
    """The populations of ``fig4_spread``: Figure 4's natural-data training (``steinke.fig4``'s model, B, η, C, σ,
    T) with ``spread``'s R and shard size, one population pair per Dirac coordinate (a fig2-shaped population under
    ``results/steinke/dirac/``; a drawn coordinate is ``canary_dim: null`` with ``canary_draw: i``,
    :func:`hsaudit.experiments.steinke.train.images.canary_coordinate`) and per label-flipped test image (a
    fig4-shaped population under ``results/steinke/label_flip/``; a drawn image is ``index: null`` with
    ``draw: i``, :func:`hsaudit.experiments.steinke.train.images.canary_index`).

    Returns:
        ``(panel, canary, population)`` in order: ``dirac_0`` …, then ``label_flip_0`` …; ``canary`` is
        ``dirac`` or ``label_flip``.

    Raises:
        ValueError: a bad value, named.
    """
    base = {k: fig4[k] for k in FIG4_TRAINING_KEYS if k != "canary"}
    base.update(steps=fig4["steps"], models_per_world=spread["models_per_world"], shard_size=spread["shard_size"],
                background="natural")
    ids = dict(seed=seed, data_identity=data_identity, test_identity=test_identity)
    out = []
    for i, (how, value) in enumerate(_spread_choices(spread["coordinates"], "coordinates")):
        section = {**base, "canary_dim": value if how == "value" else None}
        keys = TRAINING_KEYS
        if how == "draw":
            section["canary_draw"], keys = value, (*TRAINING_KEYS, "canary_draw")
        out.append((f"dirac_{i}", "dirac", _population(section, keys, root="dirac", test_in_key=False,
                                                       name="steinke.fig4_spread", **ids)))
    for i, (how, value) in enumerate(_spread_choices(spread["canaries"], "canaries")):
        canary = {"source": "test", "index": value if how == "value" else None, "label": None}
        if how == "draw":
            canary["draw"] = value
        out.append((f"label_flip_{i}", "label_flip",
                    _population({**base, "canary": canary}, ("background", *FIG4_TRAINING_KEYS), root="label_flip",
                                test_in_key=True, name="steinke.fig4_spread", **ids)))
    return tuple(out)


def _lr_grid(section: Mapping[str, Any]) -> tuple[float, ...]:
    """``steinke.table2.lr_grid`` as ascending distinct floats; ``()`` when η is not tuned (``null``).

    Raises:
        ValueError: an empty grid, a non-positive or repeated η, or a bad ``validation_size`` / ``tuning_models``.
    """
    grid = section.get("lr_grid")
    if grid is None:
        return ()
    values = [float(v) for v in grid]
    if not values or any(not v > 0 for v in values) or len(set(values)) < len(values):
        raise ValueError(f"steinke.table2.lr_grid must be null or distinct positive values, got {grid!r}")
    if int(section["validation_size"]) < 1 or int(section["tuning_models"]) < 1:
        raise ValueError("steinke.table2.validation_size and tuning_models must be >= 1, got "
                         f"{section['validation_size']!r}, {section['tuning_models']!r}")
    return tuple(sorted(values))


def _tuned(section: Mapping[str, Any], row: Mapping[str, Any]) -> bool:
    """Whether a row's η is tuned: a grid is given and the row sets no ``lr`` of its own."""
    return bool(_lr_grid(section)) and row.get("lr") is None


def plan_table2_candidates(
    section: Mapping[str, Any],
    *,
    seed: int,
    data_identity: Mapping[str, Any],
) -> tuple[tuple[Training, ...], ...]:
    """The η candidates of every Table 2 row whose η is tuned (``steinke.table2.lr_grid`` set, no ``lr`` of the
    row's own): per η of the grid, ``tuning_models`` models of the row's DP-SGD setting (B, σ, T, C, the model)
    without the canary, trained on the training set less ``validation_size`` held-out examples and scored by their
    accuracy on those (:func:`hsaudit.experiments.steinke.train.candidates.train_lr_candidate`) [inferred: the paper does
    not say how η was chosen]. One job each, ``results/steinke/lr_tuning/<key>/shard0.npz``, keyed by every value that
    changes it (so that adding an η to the grid adds one job).

    Returns:
        Per row, its candidates in ascending η (empty for a row whose η is fixed).

    Raises:
        ValueError: a bad grid, named.
    """
    grid = _lr_grid(section)
    out = []
    for row in section["rows"]:
        if not _tuned(section, row):
            out.append(())
            continue
        base = {k: section[k] for k in CANDIDATE_KEYS}
        base.update({k: row[k] for k in ("batch_size", "noise_multiplier", "steps")})
        base.update(validation_size=int(section["validation_size"]), models=int(section["tuning_models"]),
                    seed=int(seed), data=dict(data_identity))
        candidates = []
        for lr in grid:
            spec = {**base, "lr": lr}
            key = key_of(spec)
            candidates.append(Training(root=f"{RESULTS}/lr_tuning/{key}", key=key, spec={**spec, "key": key},
                                       shards=(0,), steps=(int(row["steps"]),)))
        out.append(tuple(candidates))
    return tuple(out)


def plan_table2(
    section: Mapping[str, Any],
    *,
    seed: int,
    data_identity: Mapping[str, Any],
    test_identity: Mapping[str, Any],
) -> tuple[Training, ...]:
    """Table 2's populations from ``steinke.table2``: one Figure-2-shaped population per row (Dirac canary, natural
    data, the row's B, σ, T and optional ``lr``), so that a row with Figure 2's values shares Figure 2's models.

    A row whose η is tuned (``lr_grid`` set, no ``lr`` of its own) has ``lr`` ``None`` in its spec and
    ``lr_tuning`` = ``{grid, validation_size, models}`` in its key instead: its η is known only once its candidates
    are trained (:func:`plan_table2_candidates`), and what decides it is in the key. With ``lr_grid`` null every key
    is what it was before the option existed."""
    grid = _lr_grid(section)
    out = []
    for row in section["rows"]:
        values = {
            **{k: section[k] for k in TABLE2_KEYS},
            "background": "natural",
            "batch_size": row["batch_size"],
            "noise_multiplier": row["noise_multiplier"],
            "steps": [row["steps"]],
            "lr": row.get("lr", section["lr"]),
        }
        if not _tuned(section, row):
            out.append(plan_fig2(values, seed=seed, data_identity=data_identity, test_identity=test_identity))
            continue
        values.update(lr=None, lr_tuning={"grid": list(grid), "validation_size": int(section["validation_size"]),
                                          "models": int(section["tuning_models"])})
        out.append(_population(values, (*TRAINING_KEYS, "lr_tuning"), root="dirac", seed=seed,
                               data_identity=data_identity, test_identity=test_identity, test_in_key=False,
                               name="steinke.table2"))
    return tuple(out)


def plan_table1(section: Mapping[str, Any], *, seed: int, scale: str = "paper") -> Table1:
    """Table 1's plan from ``steinke.table1``: the data key and, per row, a population and its calibration.

    A row's spec holds every value that changes a shard (the data's key, B, σ or the heuristic target, η, C, the
    epochs, the score, the shard size, the seed); σ itself may depend on the data (calibrated to the row's heuristic
    ε once N is known: :func:`hsaudit.experiments.steinke.audit.privacy_plan`), so the spec carries the calibration's
    inputs, not its output.

    Raises:
        ValueError: a bad value, named.
    """
    if section["score"] not in SCORES:
        raise ValueError(f"steinke.table1.score must be one of {SCORES}, got {section['score']!r}")
    r, size = int(section["models_per_world"]), int(section["shard_size"])
    if r < 1 or size < 2 or size % 2 or (2 * r) % size:
        raise ValueError(
            f"steinke.table1: models_per_world must be >= 1, shard_size even and 2R a multiple of it, got {r}, {size}"
        )
    examples = section.get("examples", "blocks")
    if examples not in EXAMPLES:
        raise ValueError(f"steinke.table1.examples must be one of {EXAMPLES}, got {examples!r}")
    # `examples` enters the data's key only when it is not the default, so blocks keep the keys they had before
    data = {k: section[k] for k in TABLE1_DATA_KEYS if k != "examples"}
    if examples != "blocks":
        data["examples"] = examples
    data["seed"] = int(seed)
    data_key = key_of(data)
    rows = []
    for i, row in enumerate(section["rows"]):
        if (row.get("noise_multiplier") is None) == (row.get("heuristic_epsilon") is None):
            raise ValueError(f"steinke.table1.rows[{i}]: give exactly one of noise_multiplier and heuristic_epsilon")
        train = {k: section[k] for k in TABLE1_TRAINING_KEYS}
        train.update(batch_size=int(row["batch_size"]), noise_multiplier=row.get("noise_multiplier"),
                     heuristic_epsilon=row.get("heuristic_epsilon"), delta=float(section["delta"]),
                     data=data_key, seed=int(seed))
        key = key_of(train)
        rows.append(Training(root=f"{RESULTS}/table1/{key}", key=key, spec={**train, "key": key},
                             shards=tuple(range(2 * r // size)), steps=()))
    absent = [f"steinke.table1.{k}" for k in ("model", "data") if not section[k]]
    missing = (
        "results/steinke/table1.md is an optional target: it needs a causal language model and PersonaChat text, "
        f"given by path. Missing: {', '.join(absent)}. Set steinke.table1.model to a Hugging Face model directory "
        "(config.json, weights, tokenizer; the paper's is Gemma 2) and steinke.table1.data to a PersonaChat file "
        "(.txt, .jsonl or .json), e.g. in a --configfile, and install the language-model extra: "
        f"{LM_EXTRA}. See docs/steinke.md, 'table1'."
        if absent
        else ""
    )
    facts = dict(
        scale=scale,
        setup=f"{section['model']} fine-tuned on {section['data']}, blocks of {section['block_size']} tokens, "
        f"{section['epochs']} epochs, {section['canary_tokens']} unused canary tokens",
    )
    return Table1(
        data_key=data_key,
        data=data,
        rows=tuple(rows),
        calibration=tuple(
            {k: row.get(k) for k in ("batch_size", "noise_multiplier", "heuristic_epsilon")} for row in section["rows"]
        ),
        paper=tuple(row.get("paper") for row in section["rows"]),
        missing=missing,
        sources={} if absent else {"model": f"{section['model']}/config.json", "data": str(section["data"])},
        facts=facts,
        data_source=f"{section['data']} (tokenizer of {section['model']})",
    )


def _setup(section: Mapping[str, Any], data: Mapping[str, Any], what: str) -> str:
    """The footer's ``setup=``: what a trained-model target trained, beside the paper's WRN-16-4 on all of
    CIFAR-10."""
    paper = section["model"] == "wrn16_4" and data["dataset"] == "cifar10" and not data["subset"]
    return (
        f"{section['model']} on {data['subset'] or 'all'} {data['dataset']} images, {what}"
        + ("" if paper else " (paper: WRN-16-4, all of CIFAR-10)")
    )


def _image_populations(
    entries: list[tuple[str, Training, Mapping[str, Any], str]],
) -> tuple[Population, ...]:
    """One :class:`~hsaudit.experiments.plans.Population` per root of the image targets' ``(figure, population,
    section, role)`` entries: 2R models at the largest R of the sections that read it, its largest T, Poisson batches
    of expected size B priced at B per-sample gradients per model-step."""
    rows: dict[str, dict[str, Any]] = {}
    for figure, training, section, role in entries:
        row = rows.setdefault(training.root, {"figures": [], "training": training, "gpu": False, "r": 0,
                                              "shards": 0, "role": role})
        if figure not in row["figures"]:
            row["figures"].append(figure)
        row["gpu"] |= gpu_requested(section)
        row["r"] = max(row["r"], int(section["models_per_world"]))
        row["shards"] = max(row["shards"], len(training.shards))
    out = []
    for root, row in rows.items():
        spec = row["training"].spec
        out.append(Population(
            root=root, figures=tuple(row["figures"]), model=spec["model"], models=2 * row["r"],
            steps=int(spec["steps"]), batch=int(spec["batch_size"]), gpu=row["gpu"], role=row["role"],
            detail=f"q=B/N B={spec['batch_size']} sigma={spec['noise_multiplier']:g} R={row['r']}/world "
            f"{row['shards']} shards",
        ))
    return tuple(out)


def _candidate_populations(
    section: Mapping[str, Any], candidates: tuple[tuple[Training, ...], ...]
) -> tuple[Population, ...]:
    """Table 2's η candidates as :class:`~hsaudit.experiments.plans.Population`: ``tuning_models`` models of the
    row's T steps at expected batch B each (priced like the row's population, per model-step)."""
    return tuple(
        Population(root=c.root, figures=("steinke/table2",), model=c.spec["model"], models=int(c.spec["models"]),
                   steps=int(c.spec["steps"]), batch=int(c.spec["batch_size"]), gpu=gpu_requested(section),
                   role="η candidate (no canary)",
                   detail=f"B={c.spec['batch_size']} sigma={c.spec['noise_multiplier']:g} lr={c.spec['lr']:g} "
                   f"{c.spec['models']} models, {c.spec['validation_size']} validation")
        for row in candidates for c in row
    )


# What `hsaudit plan` prices Table 1's language model at: the `causal_lm` calibration rows are per example of this
# many tokens of a model of this many parameters, scaled by parameters × block size.
LM_REFERENCE_PARAMETERS = 2.6e9
LM_REFERENCE_TOKENS = 128


def _table1_populations(section: Mapping[str, Any], table1: Table1) -> tuple[Population, ...]:
    """Table 1's populations: 2R models per row, T = round(epochs·N/B) steps of expected batch B. N and the model's
    size are known only once the data are tokenised and the model read, so they come from ``steinke.table1.plan``
    (examples, parameters)."""
    n, parameters = int(section["plan"]["examples"]), float(section["plan"]["parameters"])
    block = int(section["block_size"])
    factor = parameters / LM_REFERENCE_PARAMETERS * block / LM_REFERENCE_TOKENS
    out = []
    for row in table1.rows:
        b = int(row.spec["batch_size"])
        out.append(Population(
            root=row.root, figures=("steinke/table1",), model="causal_lm", models=2 * int(section["models_per_world"]),
            steps=training_steps(epochs=section["epochs"], n_train=n, batch_size=b), batch=b, gpu=gpu_requested(section),
            role="unused tokens", detail=f"B={b} N={n} {parameters:.2g} params {block}-token blocks "
            "(assumed: steinke.table1.plan)", cost_factor=factor,
        ))
    return tuple(out)


def plan(config: Mapping[str, Any]) -> SteinkePlan:
    """The plan of every Steinke et al. target from the resolved config (the scale preset applied).

    Args:
        config: the whole config (``seed``, ``scale``, ``steinke``).

    Raises:
        ValueError: a bad value, named.
    """
    section = config["steinke"]
    seed, scale = int(config["seed"]), str(config.get("scale", "paper"))
    fig2, fig4, t2, t1 = section["fig2"], section["fig4"], section["table2"], section["table1"]
    # The data: fig2's data section is the training set of every image target; its test split evaluates the
    # models (fig4, table2) and holds fig4's canary image. A data file is keyed by the data's identity only.
    data = fig2["data"]
    dataset = data["dataset"]
    train_options = {k: v for k, v in data.items() if k not in ("dataset", "test_subset")}
    test_options = {**train_options, "train": False, "subset": data["test_subset"]}
    train_identity = configured_identity(dataset, train_options)
    test_identity = configured_identity(dataset, test_options)
    train_key = key_of({"dataset": dataset, **train_identity})
    test_key = key_of({"dataset": dataset, **test_identity})
    identities = dict(seed=seed, data_identity=train_identity, test_identity=test_identity)

    fig2_population = plan_fig2(fig2, **identities)
    fig4_populations = plan_fig4(fig4, **identities)
    spread = plan_fig4_spread(section["fig4_spread"], fig4, **identities)
    spread_section = {**fig4, "models_per_world": section["fig4_spread"]["models_per_world"]}
    table2_populations = plan_table2(t2, **identities)
    table2_candidates = plan_table2_candidates(t2, seed=seed, data_identity=train_identity)
    table1 = plan_table1(t1, seed=seed, scale=scale)

    # The training jobs by key: a table2 row with fig2's values is fig2's population, with the larger resources.
    jobs: dict[str, TrainingJob] = {}
    for canary, training, sec in (
        ("dirac", fig2_population, fig2),
        *(("label_flip", p, fig4) for p in fig4_populations.values()),
        *((canary, p, fig4) for _, canary, p in spread),
        *(("dirac", p, t2) for p, c in zip(table2_populations, table2_candidates) if not c),
    ):
        seen = jobs.get(training.key)
        resources = dict(sec["resources"])
        if seen is not None:
            resources = {k: max(v, seen.resources.get(k, v)) for k, v in resources.items()}
        jobs[training.key] = TrainingJob(canary=canary, spec=training.spec,
                                         device=seen.device if seen else sec["device"], resources=resources)

    # A row with η tuned: its candidates (one job each) and its population's shards, which read them.
    candidate_jobs = {c.key: TrainingJob(canary="none", spec=c.spec, device=t2["device"], resources=dict(t2["resources"]))
                      for row in table2_candidates for c in row}
    tuned_jobs = {
        p.key: TunedJob(job=TrainingJob(canary="dirac", spec=p.spec, device=t2["device"],
                                        resources=dict(t2["resources"])),
                        candidates=tuple(path for c in cands for path in c.paths),
                        grid=tuple(c.spec["lr"] for c in cands))
        for p, cands in zip(table2_populations, table2_candidates) if cands
    }

    populations = _image_populations(
        [("steinke/fig2", fig2_population, fig2, f"Dirac gradient canary ({fig2['background']} background)")]
        + [("steinke/fig4", p, fig4, f"label-flip input canary ({b} background)") for b, p in fig4_populations.items()]
        + [("steinke/table2", p, t2, "Dirac gradient canary (natural background)"
            + (", η tuned" if c else "")) for p, c in zip(table2_populations, table2_candidates)]
        + [("steinke/fig4_spread", p, spread_section,
            "Dirac gradient canary (natural background)" if canary == "dirac" else
            "label-flip input canary (natural background)") for _, canary, p in spread]
    ) + _candidate_populations(t2, table2_candidates) + _table1_populations(t1, table1)

    audits = (
        TrainedAudit(figure="fig2", panels=((fig2["background"], fig2_population),), steps=fig2_population.steps,
                     noise_multiplier=fig2["noise_multiplier"], delta=fig2["delta"], model=fig2["model"]),
        TrainedAudit(figure="fig4", panels=tuple(fig4_populations.items()),
                     steps=tuple(sorted({int(t) for t in fig4["steps"]})), noise_multiplier=fig4["noise_multiplier"],
                     delta=fig4["delta"], model=fig4["model"]),
        TrainedAudit(figure="fig4_spread", panels=tuple((panel, p) for panel, _, p in spread),
                     steps=tuple(sorted({int(t) for t in fig4["steps"]})), noise_multiplier=fig4["noise_multiplier"],
                     delta=fig4["delta"], model=fig4["model"]),
    )
    simple = dict(scale=scale)
    figures = (
        Figure(Target(f"{RESULTS}/fig1.pdf", trained=False), (f"{RESULTS}/fig1_data.csv",),
               dict(simple, delta=section["fig1"]["delta"])),
        Figure(Target(f"{RESULTS}/fig2.pdf", kind="gpu"), (audits[0].table,),
               dict(scale=scale, setup=_setup(fig2, data, f"B={fig2['batch_size']}, {fig2['background']} background"))),
        Figure(Target(f"{RESULTS}/fig3.pdf", trained=False),
               tuple(f"{RESULTS}/fig3/q{i}.csv" for i in range(len(section["fig3"]["sampling_rates"]))),
               dict(simple, audit=section["fig3"]["audit"], sigma_family=section["fig3"]["sigma_families"][0])),
        Figure(Target(f"{RESULTS}/fig4.pdf", kind="gpu"), (audits[1].table,),
               dict(scale=scale, setup=_setup(fig4, data, f"B={fig4['batch_size']}"))),
        Figure(Target(f"{RESULTS}/fig4_spread.pdf", kind="gpu"), (audits[2].table,),
               dict(scale=scale, setup=_setup(fig4, data, f"B={fig4['batch_size']}, natural data, "
                                              f"{sum(c == 'dirac' for _, c, _ in spread)} Dirac coordinates and "
                                              f"{sum(c == 'label_flip' for _, c, _ in spread)} label-flipped images"))),
        Figure(Target(f"{RESULTS}/fig5.pdf", trained=False),
               tuple(f"{RESULTS}/fig5/panel{i}.csv" for i in range(len(section["fig5"]["one_step_epsilons"]))),
               dict(simple, delta=section["fig5"]["delta"])),
        Figure(Target(f"{RESULTS}/fig6.pdf", trained=False),
               tuple(f"{RESULTS}/fig6/T{int(t)}.csv" for t in section["fig6"]["steps"]), dict(simple)),
    )
    table2 = Table2(
        rows=table2_populations,
        params=tuple(
            {"shards": len(p.shards), "steps": row["steps"], "noise_multiplier": row["noise_multiplier"],
             "paper": row.get("paper"), "lr": p.spec["lr"], "grid": [c.spec["lr"] for c in cands]}
            for p, row, cands in zip(table2_populations, t2["rows"], table2_candidates)
        ),
        delta=t2["delta"],
        model=t2["model"],
        facts=dict(scale=scale, setup=_setup(
            t2, data, "B ∈ {" + ", ".join(str(r["batch_size"]) for r in t2["rows"]) + "}, natural data, Dirac canary")),
        candidates=table2_candidates,
    )
    targets = (
        *(f.target for f in figures),
        Target(f"{RESULTS}/table2.md", kind="gpu"),
        *((Target(f"{RESULTS}/table1.md", kind="gpu"),) if not table1.missing else ()),
    )
    rule, valid_rule = config_rules(config["audit"])
    return SteinkePlan(
        rule=rule,
        valid_rule=valid_rule,
        delta=float(config["audit"]["delta"]),
        confidence=float(config["audit"]["confidence"]),
        section=section,
        populations=populations,
        targets=targets,
        figures=figures,
        dataset=dataset,
        data={train_key: train_options, test_key: test_options},
        train_data=f"{RESULTS}/data/{train_key}.npz",
        test_data=f"{RESULTS}/data/{test_key}.npz",
        jobs=jobs,
        audits=audits,
        table2=table2,
        table1=table1,
        candidate_jobs=candidate_jobs,
        tuned_jobs=tuned_jobs,
    )


__all__ = [
    "CANDIDATE_KEYS",
    "FIG4_TRAINING_KEYS",
    "LM_REFERENCE_PARAMETERS",
    "LM_REFERENCE_TOKENS",
    "RESULTS",
    "TABLE1_DATA_KEYS",
    "TABLE1_TRAINING_KEYS",
    "TABLE2_KEYS",
    "TRAINING_KEYS",
    "Figure",
    "SteinkePlan",
    "Table1",
    "Table2",
    "TrainedAudit",
    "Training",
    "TrainingJob",
    "TunedJob",
    "plan",
    "plan_fig2",
    "plan_fig4",
    "plan_fig4_spread",
    "plan_table1",
    "plan_table2",
    "plan_table2_candidates",
]
