"""The audit of a user's training in one call, and the pieces the CLI and the workflow put together.

:func:`audit_training` loads the entry, decides what needs no training (an accounting bug, an audit too small to
exceed the claim), checks the training, builds the canary, trains every shard and reports. The workflow runs the
same steps as separate jobs (check, shards, audit): :func:`check`, :func:`train_shard_frame`, :func:`audit_frames`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from hsaudit.experiments.byo.audit import (
    AuditOptions,
    ByoReport,
    Control,
    control_copies,
    control_is_exact,
    control_noise_epsilon,
    pre_training,
    report,
)
from hsaudit.engine.canaries import canary_type
from hsaudit.experiments.byo.advice import advice
from hsaudit.experiments.byo.train.harness import (
    Loaded,
    Prepared,
    build_canary,
    canary_changes_model,
    checked,
    data_use,
    load,
    init_seed_for,
    prepare,
    probe,
    replaced_option,
    score_mode,
    train_models,
    train_shard,
)
from hsaudit.experiments.byo.train.parallel import train_block, worker_block
from hsaudit.experiments.byo.train.pilot import choose, pilot_design, pilot_details
from hsaudit.experiments.byo.train.pool import Workers, warm
from hsaudit.experiments.byo.values import DESIGNS, PINNED, Claim, Design, reads_text

SCORE_COLUMNS = ("model", "member", "seed", "score", "train_seconds", "harness_seconds")
"""A scores CSV: one row per model; ``score`` and ``member`` are what ``hsaudit audit`` and ``hsaudit one-run`` read."""


SCORE_MODES = {
    "final": "final: the final model's canary score",
    "relative": "relative to θ0: the final model's canary score minus θ0's (scores.csv: score_final is the final "
    "model's alone)",
}
"""How the report names the score the verdict used (:func:`~hsaudit.experiments.byo.train.harness.score_mode`)."""

THETA0_ADVICE = (
    "the training draws its initialisation θ0 from the seed, so θ0 differs across the audit's models and its variance "
    "drowns the canary's effect (the audit is nearly blind); DP holds for every fixed θ0, so let the audit fix it: "
    "accept a keyword init_seed in train(data, seed, init_seed=None) and draw θ0 from it, everything else from seed "
    "(docs/byo.md, 'θ0 first')"
)
"""The report's sentence for a θ0 that varies with the seed."""


@dataclass(frozen=True, eq=False)
class Result:
    """An audit's report and its scores (no rows when the verdict needed no training)."""

    report: ByoReport
    scores: pd.DataFrame
    control: pd.DataFrame | None = None
    pilot: tuple[dict[str, Any], ...] = ()


def details(design: Design, prepared: Prepared | None = None, scores: pd.DataFrame | None = None) -> dict[str, Any]:
    """What a report records about the design, the check and the timings."""
    out: dict[str, Any] = {
        "entry": design.entry,
        "canary": design.canary,
        "background": design.background,
        "runs per world (design)": design.runs,
        "shards": design.shards,
        "seed": design.seed,
        "audit setting": "none (the training's own configuration)" if design.setting is None else
        ", ".join(f"{k} = {v:.4g}" if isinstance(v, float) else f"{k} = {v}" for k, v in asdict(design.setting).items()),
    }  # fmt: skip
    if design.canary_options:
        out["canary options"] = ", ".join(f"{k} = {v}" for k, v in design.canary_options.items())
        if replaced_option(design) == "opposite":
            out["replaced row (world 0)"] = "the canary's input with the other label: a pair whose gradients oppose"
    if prepared is not None:
        out.update(
            {
                "canary origin": prepared.canary.origin,
                "parameters": prepared.probe.parameters,
                "deterministic in seed": True,
                "seed changes the model": prepared.probe.seed_sensitive,
                "θ0 (initialisation)": prepared.probe.theta0,
                "score": SCORE_MODES[score_mode(design, prepared.probe)],
            }
        )
        if prepared.probe.theta0 == "varies with the seed":
            out["θ0 advice"] = THETA0_ADVICE
        found, own = prepared.probe, prepared.probe.own_claim
        for key, uses, whole, claim in (
            ("reads of each row (check)", found.uses, found.whole, prepared.training.claim),
            ("reads of each row (own configuration)", found.own_uses, found.own_whole, own and Claim.from_mapping(own)),
        ):
            if uses is not None or whole or key.endswith("(check)"):
                out[key] = reads_text(uses, whole, found.use_trainings, claim)
    if scores is not None and len(scores):
        train_s = float(np.median(scores["train_seconds"]))
        harness_s = float(np.median(scores["harness_seconds"]))
        out.update(
            {
                "user training per model (median, s)": train_s,
                "harness per model (median, s)": harness_s,
                "harness overhead": harness_s / train_s if train_s > 0 else float("nan"),
            }
        )
    if prepared is not None and not prepared.probe.seed_sensitive:
        out["warning"] = (
            "two seeds gave the same model: the training ignores its seed (a reused random key), so every run of a "
            "world is the same model"
        )
    return out


def frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """The scores table of :func:`hsaudit.experiments.byo.train.harness.train_shard`'s columns (with ``score_final``
    for a score relative to θ0, ``score_iterates`` for a recording training)."""
    return pd.DataFrame({c: columns[c] for c in (*SCORE_COLUMNS, "score_final", "score_iterates") if c in columns})


def early_report(
    design: Design, loaded: Loaded, options: AuditOptions, prepared: Prepared | None = None
) -> ByoReport | None:
    """The verdict that needs no audit model (an accounting bug, the check's reads of the data against the claim's
    sampling when ``prepared`` is given, or an audit that cannot exceed the claim), or None."""
    looks = 2 if loaded.training.records else 1
    return pre_training(loaded.training.claim, loaded.n, options, runs=design.runs, looks=looks,
                        data_use=data_use(prepared))  # fmt: skip


def audit_training(
    design: Design,
    options: AuditOptions = AuditOptions(),
    *,
    shards: Sequence[int] | None = None,
    progress: bool = False,
    control: bool = True,
    jobs: int | None = 1,
) -> Result:
    """Audit a user's training end to end.

    Args:
        design: the entry, canary, runs, shards, seed, setting (:class:`~hsaudit.experiments.byo.values.Design`).
        options: how the scores are audited.
        shards: the shards to train (default all); a report of a subset audits the models trained so far.
        progress: tqdm bars over the models.
        control: train the positive control (as many models again: in the audit setting the training at
            σ/power_factor, else the canary repeated k times in world 1; :func:`control_design`), which measures the
            audit's power; without it the verdict is at best ``inconclusive``.
        jobs: processes that train the models (:func:`train_all`; default 1, this one; None: :func:`default_jobs`).

    A design whose canary is ``auto`` (:attr:`Design.chosen`, the default) is chosen first, when the verdict needs
    training: :func:`choose_design` pilots each candidate's control on streams of its own, and the report names the
    chosen design, the candidates' separations and the pilot's cost (:func:`pilot_details`).

    Returns:
        The report, the scores (empty when the verdict needed no training), the control's scores and the pilot's
        rows (none for a given design).

    Raises:
        ValueError: bad input (an entry that does not import, a bad claim, a training not deterministic in its
            seed, a NaN loss), with a message naming it.
        UserCodeError: the user's own code raised (:mod:`~hsaudit.experiments.byo.train.errors`).
    """
    if jobs is not None and jobs > 1:
        warm(design.entry)  # the workers' server imports torch while this process loads and checks the training
    loaded = load(design, own=True)
    early = early_report(design, loaded, options)
    first = None
    if early is None or early.verdict != "violation":  # the check's reads of the data may show one
        first = checked(design, loaded)
        early = early_report(design, loaded, options, first)
    if early is not None:
        return Result(early, frame({c: np.zeros(0) for c in SCORE_COLUMNS}))
    with Workers(design.entry) as workers:  # one set of worker processes for the pilot, the audit and its control
        return _audit(design, loaded, options, shards=shards, progress=progress, control=control, jobs=jobs,
                      workers=workers, prepared=None if design.chosen else first)  # fmt: skip


def _audit(
    design: Design, loaded: Loaded, options: AuditOptions, *, shards: Sequence[int] | None, progress: bool,
    control: bool, jobs: int | None, workers: Workers, prepared: Prepared | None = None,
) -> Result:  # fmt: skip
    """:func:`audit_training` past its early verdict, training in ``workers`` (``prepared``: the given design's
    check, done already)."""
    pilot: list[dict[str, Any]] = []
    if design.chosen:
        design, pilot = choose_design(design, options, jobs=jobs, loaded=loaded, workers=workers)
    prepared = prepare(design, loaded) if prepared is None else prepared
    jobs = default_jobs(prepared) if jobs is None else jobs
    audited = start_all(prepared, jobs=jobs, progress=progress, shards=shards, workers=workers)
    claim = loaded.training.claim

    def start_control() -> tuple[Design, float, Callable[[], pd.DataFrame]]:
        twin_design, worst = control_design(design, claim, loaded.n, options)
        twin_loaded = loaded if twin_design.noise_factor == 1.0 else load(twin_design)  # make(setting) at σ/f
        twin = prepare(twin_design, twin_loaded, found=prepared.probe, canary=prepared.canary)
        return twin_design, worst, start_all(twin, jobs=jobs, progress=progress, shards=shards, workers=workers)

    # in workers, the control is loaded and queued behind the audit's models while they train (its models dropped
    # if the verdict is a violation); in this process, only when the verdict asks for it
    queued = start_control() if control and jobs > 1 else None
    scores = audited()
    same = not prepared.probe.seed_sensitive and canary_changes_model(prepared)
    about = {**details(design, prepared, scores), **pilot_details(design, pilot)}
    look = control and control_is_exact(claim, loaded.n)  # the looks both reports pay for
    # (the check's reads of the data were judged once, before any audit model: audit_training's early verdict)
    found = report(scores, claim, loaded.n, options, details=about, same_model=same, every_estimate=False,
                   control_look=look)  # fmt: skip
    checked = None
    if control and found.verdict != "violation":  # a violation needs no power: its control is not trained
        twin_design, worst, controlled = queued or start_control()
        checked = Control(copies=twin_design.copies, epsilon_worst=worst, scores=controlled(),
                          noise_factor=twin_design.noise_factor)  # fmt: skip
    elif queued is not None:
        workers.close(now=True)  # the control's blocks are cancelled, those started killed
    rep = report(scores, claim, loaded.n, options, details=about, control=checked, same_model=same,
                 advice=advice(design, prepared.probe.theta0), control_look=look)  # fmt: skip
    return Result(rep, scores, None if checked is None else checked.scores, tuple(pilot))


def control_design(design: Design, claim: Any, n: int, options: AuditOptions) -> tuple[Design, float]:
    """The positive control of ``design`` and its worst case for the declared mechanism.

    In the audit setting, the training at σ/``power_factor`` (:meth:`Design.control_noise`): it declares and runs
    that σ, so in the full batch it leaks exactly ``power_factor`` × the declared μ through any canary — a leak of a
    known size above the claim, whatever the canary reaches. Outside it (the user's own configuration, where hsaudit
    cannot change σ), the canary repeated k times (:func:`~hsaudit.experiments.byo.audit.control_copies`): k times
    the training's own leak through this canary, k the least whose worst case is ``power_factor`` × the claim."""
    if design.setting is not None:
        return control_twin(design, claim, n, options), control_noise_epsilon(claim, n, options.power_factor)
    copies, worst = control_copies(claim, n, options.power_factor)
    return design.control(copies), worst


def control_twin(design: Design, claim: Any, n: int, options: AuditOptions) -> Design:
    """:func:`control_design`'s design alone: in the audit setting it needs no accounting (a pilot's candidates
    start training before the accountant runs)."""
    if design.setting is not None:
        return design.control_noise(options.power_factor)
    return control_design(design, claim, n, options)[0]


def choose_design(
    design: Design, options: AuditOptions = AuditOptions(), *, jobs: int | None = 1, loaded: Loaded | None = None,
    workers: Workers | None = None,
) -> tuple[Design, list[dict[str, Any]]]:  # fmt: skip
    """The design with the most measured power on this training (:func:`~hsaudit.experiments.byo.train.pilot.choose`):
    each candidate's positive control (:func:`control_design`) piloted at ``design.pilot_runs`` per world on streams
    of its own, in ``jobs`` processes (:func:`train_all`, of ``workers`` if given); ``loaded``: the user's
    training, if loaded already.

    Returns:
        The chosen design and one row per candidate (canary, background, separation or error, models, seconds).

    Raises:
        ValueError: no candidate could be trained (the rows say why).
    """
    loaded = load(pilot_design(design)) if loaded is None else loaded
    claim, n = loaded.training.claim, loaded.n

    def start(prepared: Prepared) -> Callable[[], pd.DataFrame]:
        if jobs is None and workers is not None and default_jobs(replace(prepared, design=design)) > 1:
            warm(design.entry)  # the audit will train in workers: their server imports while the pilot runs
        return start_all(prepared, jobs=jobs, workers=workers)

    return choose(design, lambda c: control_twin(c, claim, n, options), loaded=loaded, start=start)


PARALLEL_MIN_SECONDS = 60.0
"""Below this much of the user's training (the check's seconds per model × the models), :func:`default_jobs` trains
in-process. Measured with spawned workers (a fresh interpreter importing torch and the user's libraries, 3.5 s of CPU
for the Opacus example, whose check says 0.1–0.25 s per model, its first model's warm-up, for 0.015–0.04 s after it):
two jobs lost to one at 200 models (20–23 s against 12–16 s) and gained little at 1,000 on a loaded 2-core machine.
Workers are now forks of a server that imported those once (:mod:`~hsaudit.experiments.byo.train.pool`): the bound
stands until re-measured (docs/journal/byo.md)."""


def default_jobs(prepared: Prepared) -> int:
    """One process per core (``os.cpu_count()``), or 1 when the training is too short to gain from more
    (:data:`PARALLEL_MIN_SECONDS`, estimated from the determinism check's time per model)."""
    if prepared.design.models * prepared.probe.seconds < PARALLEL_MIN_SECONDS:
        return 1
    return max(1, os.cpu_count() or 1)


def train_all(
    prepared: Prepared, *, jobs: int | None = 1, progress: bool = False, shards: Sequence[int] | None = None,
    workers: Workers | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The scores table (:func:`frame`) of every model of ``prepared.design`` (or of its ``shards``), trained in
    ``jobs`` processes: :func:`start_all`, waited for.

    Each model's bit and seed come from the design by its index, so the rows do not depend on ``jobs`` (only the
    timing columns do). ``jobs`` = 1 trains here, shard after shard, as
    :func:`~hsaudit.experiments.byo.train.harness.train_shard`. More jobs fork that many workers from a server that
    imported torch and the entry's libraries once (:mod:`~hsaudit.experiments.byo.train.pool`), each with
    ``cpu_count // jobs`` torch threads; each gets the design, the check's probe and the canary (not the user's
    functions, which need not pickle), calls the user's ``make()`` and ``dataset()`` once and trains blocks of
    consecutive models: those of a finer split of the design (a few blocks per job, so that the bar moves and the jobs
    end together), or the chosen ``shards``.

    Args:
        prepared: the checked training, its canary and worlds (:func:`~hsaudit.experiments.byo.train.harness.prepare`).
        jobs: processes (default 1: this one; None: :func:`default_jobs`, as ``hsaudit audit-training``).
        progress: one tqdm bar over the models.
        shards: shards of ``prepared.design`` to train (default: all its models).
        workers: worker processes that outlive this call (:class:`~hsaudit.experiments.byo.train.pool.Workers`: an
            audit's pilot, models and control share them), else started and stopped here.

    Raises:
        ValueError: ``jobs`` < 1, or as :func:`~hsaudit.experiments.byo.train.harness.train_shard`.
        UserCodeError: the user's code raised; the error names the model and its world.
    """
    return start_all(prepared, jobs=jobs, progress=progress, shards=shards, workers=workers)()


def start_all(
    prepared: Prepared, *, jobs: int | None = 1, progress: bool = False, shards: Sequence[int] | None = None,
    workers: Workers | None = None,
) -> Callable[[], pd.DataFrame]:  # fmt: skip
    """:func:`train_all` begun: in workers, the blocks are queued now and the function returned waits for their
    table, so that this process prepares the next part (a pilot's next candidate, the control) while they train; in
    this process (one job), the function returned trains them when called (none trained if it is not)."""
    design = prepared.design
    jobs = default_jobs(prepared) if jobs is None else jobs
    if int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if shards is not None:
        blocks = [(design.shards, int(s)) for s in shards]
    else:
        per_call = prepared.training.models_per_call if prepared.training.train_batch is not None else 1
        count = 1 if jobs == 1 else min(design.models, max(jobs, min(4 * jobs, design.models // per_call)))
        blocks = [(count, i) for i in range(count)]
    if jobs == 1 or len(blocks) == 1:
        return lambda: pd.concat([frame(train_block(prepared, *b, progress=progress)) for b in blocks],
                                 ignore_index=True)  # fmt: skip
    return _start_parallel(prepared, blocks, min(int(jobs), len(blocks)), progress, workers)


def _start_parallel(
    prepared: Prepared, blocks: list[tuple[int, int]], jobs: int, progress: bool, workers: Workers | None = None
) -> Callable[[], pd.DataFrame]:
    """The blocks queued on ``jobs`` workers (of ``workers``, else started here), and the function that waits for
    their table, in block order."""
    spec = (prepared.design.to_dict(), prepared.probe, prepared.canary, max(1, (os.cpu_count() or 1) // jobs))
    own = workers is None
    workers = Workers(prepared.design.entry) if workers is None else workers
    try:
        pool = workers.get(jobs)
        futures = {pool.submit(worker_block, *spec, c, i): k for k, (c, i) in enumerate(blocks)}
    except BaseException:
        workers.close()
        raise

    def wait() -> pd.DataFrame:
        from concurrent.futures import BrokenExecutor, as_completed

        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=sum(len(replace(prepared.design, shards=c).shard_models(i)) for c, i in blocks),
                       desc=f"{jobs} jobs", unit="model")  # fmt: skip
        try:
            done: dict[int, dict[str, np.ndarray]] = {}
            for future in as_completed(futures):
                columns = future.result()
                done[futures[future]] = columns
                if bar is not None:
                    bar.update(len(columns["model"]))
        except BaseException as err:
            for future in futures:  # this part's blocks not started yet (the pool goes on with other parts)
                future.cancel()
            if isinstance(err, BrokenExecutor):  # a worker died: the pool is of no more use
                workers.close()
            raise
        finally:  # (the workers exit while the report is computed)
            if own:
                workers.close()
            if bar is not None:
                bar.close()
        return pd.concat([frame(done[k]) for k in range(len(blocks))], ignore_index=True)

    return wait


def audit_frames(
    frames: Iterable[pd.DataFrame], design: Design, loaded: Loaded, options: AuditOptions,
    prepared: Prepared | None = None, control: Iterable[pd.DataFrame] = (),
) -> ByoReport:  # fmt: skip
    """The report of shards' score tables (written by separate jobs), with the control's (``control``: none, the
    verdict is then at most inconclusive)."""
    scores = pd.concat(list(frames), ignore_index=True)
    if scores.empty:
        early = early_report(design, loaded, options)
        if early is None:
            raise ValueError("no scores to audit: the shards trained no model")
        return early
    if scores["model"].duplicated().any():
        raise ValueError("the shards' scores repeat a model: shards of different designs were mixed")
    claim = loaded.training.claim
    tables = list(control)
    checked = None
    if tables:
        twin, worst = control_design(design, claim, loaded.n, options)
        checked = Control(copies=twin.copies, epsilon_worst=worst, scores=pd.concat(tables, ignore_index=True),
                          noise_factor=twin.noise_factor)  # fmt: skip
    same = prepared is not None and not prepared.probe.seed_sensitive and canary_changes_model(prepared)
    return report(scores, claim, loaded.n, options, details=details(design, prepared, scores), control=checked,
                  same_model=same, advice=None if prepared is None else advice(design, prepared.probe.theta0),
                  data_use=data_use(prepared))  # fmt: skip


def benchmark(design: Design, *, models: int = 40, repeats: int = 3) -> dict[str, float]:
    """The harness's cost beside the user's own training (docs/byo.md, "Speed").

    Times ``models`` models of the user's training called directly (``train``/``train_batch`` on the worlds' data,
    half with the canary) and the same models through the harness (:func:`~hsaudit.experiments.byo.train.harness.train_shard`:
    the worlds' data, the seeds, the scoring, the bookkeeping), alternating, ``repeats`` times each; the medians give
    the overhead per model (on a loaded machine, wall-clock noise of a few per cent either way). Beside it, the harness's
    own work timed inside :func:`~hsaudit.experiments.byo.train.harness.train_shard` (building the worlds' data, scoring, per
    model) against the user's training there. A job's one-off work is timed apart: ``make()`` and ``dataset()`` (the
    user's), the determinism check (four of the user's trainings) and the canary with the worlds (the harness's).
    """
    small, prepared, one_off = _small_job(design, models)
    bits = small.bits()
    seeds = [small.model_seed(i) for i in range(small.models)]
    data = {b: prepared.worlds.dataset(b) for b in (False, True)}
    bare, harness, own, inside = [], [], [], []
    for _ in range(repeats):
        s0 = time.perf_counter()
        for b in (False, True):
            train_models(prepared.training, data[b], [s for s, bit in zip(seeds, bits) if bit == b],
                         init_seed=init_seed_for(small, prepared.training))  # fmt: skip
        s1 = time.perf_counter()
        columns = train_shard(prepared, 0)
        s2 = time.perf_counter()
        bare.append((s1 - s0) / small.models)
        harness.append((s2 - s1) / small.models)
        own.append(float(np.mean(columns["harness_seconds"])))
        inside.append(float(np.mean(columns["train_seconds"])))
    b, h = float(np.median(bare)), float(np.median(harness))
    return {
        "models": small.models,
        "user_training_per_model_s": b,
        "through_harness_per_model_s": h,
        "overhead_per_model": h / b - 1.0,
        "harness_own_work_per_model_s": float(np.median(own)),
        "harness_own_work_share": float(np.median(own)) / float(np.median(inside)),
        "make_and_dataset_s": one_off["make_and_dataset_s"],
        "check_s (4 user trainings)": one_off["check_s (4 user trainings)"],
        "canary_and_worlds_s": one_off["canary_s"] + one_off["worlds_s"],
    }


def _timed_load(design: Design) -> tuple[Loaded, float]:
    """:func:`load` (the user's ``make()`` and ``dataset()``) and its seconds."""
    start = time.perf_counter()
    loaded = load(design)
    return loaded, time.perf_counter() - start


def _small_job(
    design: Design, models: int, loaded: tuple[Loaded, float] | None = None
) -> tuple[Design, Prepared, dict[str, float]]:
    """A job of ``models`` models (runs = models // 2, one shard) of ``design``, prepared as the workflow prepares
    one, and the seconds of each piece of work before its first model: ``make()`` and ``dataset()`` (``loaded``:
    done already, with its seconds), the determinism check (four of the user's trainings), the canary, the worlds."""
    loaded, load_seconds = loaded or _timed_load(design)
    t1 = time.perf_counter()
    small = replace(design, runs=max(1, models // 2), shards=1)
    gradient = canary_type(design.canary).kind == "gradient"
    found, reference = probe(loaded.training, loaded.x, loaded.y, loaded.classes, small, gradient)
    t2 = time.perf_counter()
    canary = build_canary(small, loaded.training, loaded.x, loaded.y, found, reference)
    t3 = time.perf_counter()
    prepared = prepare(small, loaded, found=found, canary=canary)
    t4 = time.perf_counter()
    return small, prepared, {"make_and_dataset_s": load_seconds, "check_s (4 user trainings)": t2 - t1,
                             "canary_s": t3 - t2, "worlds_s": t4 - t3}  # fmt: skip


JOB_IMPORTS = ("numpy", "pandas", "torch", "snakemake.script", "hsaudit.experiments.byo.train.harness",
               "hsaudit.pipeline.logs")  # fmt: skip
"""What a byo job's process imports before its work (a Snakemake script job: the interpreter, Snakemake's script
support, the harness)."""


def job_start_seconds() -> float:
    """Seconds for a fresh interpreter to import :data:`JOB_IMPORTS` (those installed): a job's start, which a
    timing inside this process does not see."""
    import importlib.util
    import subprocess
    import sys

    modules = [m for m in JOB_IMPORTS if importlib.util.find_spec(m.split(".")[0]) is not None]
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import " + ", ".join(modules)], check=True)
    return time.perf_counter() - start


@dataclass(frozen=True)
class Timing:
    """What ``hsaudit plan --time-byo`` measured of a user's training on this machine (:func:`time_training`), priced
    as the workflow runs it: one check job (``check_byo_entry``), then one training job per shard.

    Attributes:
        models: the models timed.
        seconds_per_model: one model through the harness (the user's training, the worlds' data, scoring).
        shard_seconds: a training job's work before its first model: its start (:func:`job_start_seconds`),
            ``make()`` and ``dataset()``, the worlds.
        check_seconds: the check job, once: its start, ``make()`` and ``dataset()``, the determinism check (four of
            the user's trainings), the canary.
        early: the verdict reached before any training (an accounting bug, or runs too few to exceed the claim):
            then no model is trained and nothing was timed but ``make()`` and ``dataset()``. None otherwise.
        candidate_seconds: a pilot candidate's work before its first model (:func:`choose_design`, in the check
            job: the determinism check, the canary, the worlds).
    """

    models: int
    seconds_per_model: float
    shard_seconds: float
    check_seconds: float
    early: str | None = None
    candidate_seconds: float = 0.0

    def pilot_seconds(self, design: Design) -> float:
        """The estimated seconds of choosing ``design`` (:func:`choose_design`; none for a given design): each of
        :data:`DESIGNS` checked and its control trained at ``design.pilot_runs`` per world."""
        if self.early is not None or not design.chosen:
            return 0.0
        return len(DESIGNS) * (2 * design.pilot_runs * self.seconds_per_model + self.candidate_seconds)

    def seconds(self, design: Design, *, control: bool = True) -> float:
        """The estimated seconds of ``design``'s check and training jobs (none when the verdict needs no
        training); with the positive control, its shards too (as many models and jobs again); for a chosen design,
        its pilot (:meth:`pilot_seconds`)."""
        if self.early is not None:
            return 0.0
        parts = 2 if control else 1
        trained = parts * (design.models * self.seconds_per_model + design.shards * self.shard_seconds)
        return trained + self.check_seconds + self.pilot_seconds(design)


def time_training(design: Design, options: AuditOptions | None = None, *, models: int = 8) -> Timing:
    """Time ``models`` models of ``design`` here, and the work of its jobs before their first model (one job's
    start in a fresh interpreter, the user's ``make()`` and ``dataset()``, the check, the canary, the worlds); the
    models go through the harness (:func:`~hsaudit.experiments.byo.train.harness.train_shard`). With the audit's
    ``options``, a verdict that needs no training (:func:`early_report`) is found first and nothing is trained. A
    chosen design is timed as the design every training takes (:data:`~hsaudit.experiments.byo.values.PINNED`),
    its pilot priced from that (:meth:`Timing.pilot_seconds`).

    Raises:
        ValueError: ``models`` < 2 (one per world at least).
    """
    if models < 2:
        raise ValueError(f"time at least 2 models (one per world), got {models}")
    loaded = _timed_load(design)
    if options is not None:
        early = early_report(design, loaded[0], options)
        if early is not None:
            return Timing(models=0, seconds_per_model=0.0, shard_seconds=0.0, check_seconds=0.0, early=early.verdict)
    if design.chosen:
        design = replace(design, canary=PINNED[0], background=PINNED[1])
    small, prepared, parts = _small_job(design, models, loaded)
    start = time.perf_counter()
    train_shard(prepared, 0)
    per_model = (time.perf_counter() - start) / small.models
    begin = job_start_seconds() + parts["make_and_dataset_s"]
    candidate = parts["check_s (4 user trainings)"] + parts["canary_s"] + parts["worlds_s"]
    return Timing(models=small.models, seconds_per_model=per_model, shard_seconds=begin + parts["worlds_s"],
                  check_seconds=begin + parts["check_s (4 user trainings)"] + parts["canary_s"],
                  candidate_seconds=candidate)  # fmt: skip
