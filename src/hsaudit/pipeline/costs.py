"""Cost estimates before launching: models, DP-SGD steps and CPU/GPU-hours per experiment.

``hsaudit plan results/fig4.pdf`` answers "how many models, how many steps, how long?" from the *resolved*
config (scale preset applied) and a small calibration table of seconds per model-step (:data:`CALIBRATION`).

Where the experiments come from: the plans the rules run. Every experiment package's ``plan(config)``
(:data:`hsaudit.experiments.plans.EXPERIMENTS`, :func:`experiment_plans`) hands its populations (what is trained, keyed by the directory it
lives in; :class:`hsaudit.experiments.plans.Population`) and its targets (figures and tables, trained or simulated)
to both the workflow and this module, which only prices them: a population that several figures or experiments
read (same root) is counted once in totals, and untrained targets are listed as simulations. A user's own training
(``byo``) is listed with its models but not priced (its cost is the user's code), unless ``hsaudit plan
--time-byo MODELS`` times a few of its models on this machine.

Cost model: seconds per model-step scale linearly with the batch size from the calibration batch; a model
trains ``steps`` DP-SGD steps with per-sample gradients, clipping and noise. Calibration rows say whether they
were measured (with the command that reproduces them: ``hsaudit bench train`` or ``hsaudit plan --calibrate``, both
:mod:`hsaudit.bench.train`) or derived.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hsaudit.util.io import write_text_atomic


DEVICES = ("cpu", "gpu")


@dataclass(frozen=True)
class Calibration:
    """Seconds per model-step of one architecture on one device at batch size ``batch``.

    ``status`` is ``"measured"`` (timed with the command in ``source``) or ``"estimate"`` (derived or assumed).
    """

    model: str
    device: str
    batch: int
    seconds_per_model_step: float
    source: str
    status: str = "estimate"


# CPU rows: measured side by side with Opacus and the non-private floor by `hsaudit bench train` (the command is
# in `source`) on the project's development machine (2 cores of an AMD EPYC, torch 2.13.0 CPU build, 1 torch
# thread as the rules run, other engineers' jobs sharing the machine: load average in `source`), 2026-11-23,
# through the population engine of hsaudit.engine.psg (`auto` backend) at the largest population measured. The FCNN
# row is the Housing shard's step time divided by the shard size (issue 3). The GPU rows (below) are measured on one
# H100; Cebere et al.'s own total (PAPER_GPU_HOURS, Appendix D) is what they were derived from before, and what
# docs/cluster.md "Cost estimates" compares the measured plan with. A measured row
# stored by `hsaudit bench train --save-calibration` (:data:`STORED_CALIBRATION`) takes precedence.
H100 = ("measured: hsaudit bench train --device cuda --opacus-models 0 on one NVIDIA H100 80GB HBM3 "
        "(torch 2.11.0+cu130, 2026-11-26)")
"""Where the GPU rows come from (the command's options follow it in each row's ``source``)."""

CALIBRATION: tuple[Calibration, ...] = (
    Calibration(
        "fcnn", "cpu", 400, 2.36e-4,
        "measured: hsaudit bench train --models 1000 --opacus-models 3 --threads 1 --json (1,000 models x 250 "
        "steps in 59.0 s; load 10.0)", "measured",
    ),
    Calibration(
        "convnet", "cpu", 128, 0.0656,
        "measured: hsaudit bench train --model convnet --threads 1 --json (population 256; load 7.8)", "measured",
    ),
    Calibration(
        "resnet18_gn", "cpu", 128, 18.8,
        "measured: hsaudit bench train --model resnet18_gn --threads 1 --json (population 1; load 8.1)",
        "measured",
    ),
    Calibration(
        "alexnet_head", "cpu", 128, 2.89e-3,
        "measured: hsaudit bench train --model alexnet_head --threads 1 --json (population 256; load 7.6)",
        "measured",
    ),
    Calibration(
        "mnist_cnn", "cpu", 128, 0.0601,
        "measured: hsaudit plan --calibrate mnist_cnn --population 64 --steps 3 (2026-11-23; load 8.8)", "measured",
    ),
    Calibration(
        "cifar_cnn", "cpu", 128, 1.31,
        "measured: hsaudit plan --calibrate cifar_cnn --population 4 --steps 2 (2026-11-23; load 8.3)", "measured",
    ),
    # GPU rows: measured on one H100 (the first GPU lent to the project, 2026-11-26; docs/benchmarks.md) through the
    # population engine with `auto`'s CUDA backend (ModelSpec.backend_on: func for the three small ConvNets, hooks for
    # ResNet18-GN, the MLP engine for the FCNN and the AlexNet head), at the largest population measured. Before, they
    # were derived from the paper's 3,500 GPU-h (ConvNet 1.82e-4, ResNet18-GN 0.140) and from multiply-add ratios.
    Calibration(
        "fcnn", "gpu", 400, 1.42e-5,
        f"{H100} --models 4096 --steps 50 --workers 1 (4,096 models x 50 steps in 2.90 s)", "measured",
    ),
    Calibration(
        "convnet", "gpu", 128, 2.65e-4,
        f"{H100} --model convnet --models 64,256 --steps 5 (func, population 256)", "measured",
    ),
    Calibration(
        "resnet18_gn", "gpu", 128, 4.56e-2,
        f"{H100} --model resnet18_gn --models 1,4 --steps 3 (hooks, population 4; func 9.19e-2)", "measured",
    ),
    Calibration(
        "alexnet_head", "gpu", 128, 2.51e-6,
        f"{H100} --model alexnet_head --models 256,1024 --steps 10 (mlp, population 1,024)", "measured",
    ),
    Calibration(
        "mnist_cnn", "gpu", 128, 2.52e-4,
        f"{H100} --model mnist_cnn --models 64,256 --steps 5 (func, population 256)", "measured",
    ),
    Calibration(
        "cifar_cnn", "gpu", 128, 2.69e-3,
        f"{H100} --model cifar_cnn --models 16,64 --steps 5 (func, population 64)", "measured",
    ),
    # De et al.'s WRN-16-4 (Steinke et al. fig2) trains through `func` (weight standardisation) on every device.
    # Poisson subsampling (--sampling poisson --n-train 1560, population 16) measured 4.78e-2.
    Calibration(
        "wrn16_4", "gpu", 128, 4.65e-2,
        f"{H100} --model wrn16_4 --models 1,4,8 --steps 3 (func, population 8)", "measured",
    ),
    Calibration(
        "wrn16_4", "cpu", 128, 4.65,
        "measured: hsaudit bench train --model wrn16_4 --sampling poisson --n-train 1560 --batch-size 128 --models 4 "
        "--opacus-models 0 --steps 1 --repeats 3 --threads 1 (2026-11-25; population 4; load 0.8-1.0)", "measured",
    ),
    # Steinke et al. Table 1's causal LM, per example (batch 1) of LM_REFERENCE_TOKENS tokens for a model of
    # LM_REFERENCE_PARAMETERS parameters (Gemma 2 2B; both in hsaudit.experiments.steinke.plan); a population scales
    # it by its parameters x block size (Population.cost_factor). FLOPs 6 x 2.6e9 x 128 = 2.0e12 per example (forward + backward). Not measured.
    Calibration("causal_lm", "gpu", 1, 0.04, "derived: 2.0e12 FLOPs per example at an effective 50 TFLOP/s (estimate; "
                "one backward pass per example in float32 is likely several times slower, docs/steinke.md)"),
    Calibration("causal_lm", "cpu", 1, 40.0, "derived: 2.0e12 FLOPs per example at 50 GFLOP/s on one core (estimate)"),
)

PAPER_GPU_HOURS = 3500.0
"""Cebere et al., Appendix D: "totaling approximately 3500 GPU hours" (ConvNet + ResNet, T = 250/1250/6250)."""

STORED_CALIBRATION = "config/calibration.json"
"""Default file of measured rows (``hsaudit bench train --save-calibration``), relative to the working directory;
the environment variable ``HSAUDIT_CALIBRATION`` overrides it. Machine-specific: not meant to be committed."""



def calibration_path(path: str | os.PathLike | None = None) -> Path:
    """The stored calibration file: ``path`` if given, else ``$HSAUDIT_CALIBRATION``, else :data:`STORED_CALIBRATION`
    (where ``hsaudit bench train --save-calibration`` writes and :func:`calibration` reads)."""
    return Path(path or os.environ.get("HSAUDIT_CALIBRATION") or STORED_CALIBRATION)


def stored_calibration(path: str | os.PathLike | None = None) -> tuple[Calibration, ...]:
    """Measured rows stored by ``hsaudit bench train --save-calibration`` (empty when the file does not exist).

    Args:
        path: the JSON file (:func:`calibration_path`).

    Raises:
        ValueError: a file that is not a calibration file (the message names it).
    """
    file = calibration_path(path)
    if not file.is_file():
        return ()
    return _read_stored(str(file), file.stat().st_mtime_ns)


STORED_KEYS = ("model", "device", "batch", "seconds_per_model_step", "torch", "date", "command")
"""Keys every stored row has (:func:`store_calibration`); ``device_name``, ``population``, ``threads`` and
``load_average`` are recorded where known."""


def store_calibration(row: Mapping[str, Any], path: str | os.PathLike | None = None) -> Path:
    """Add ``row`` to the stored calibration file, replacing any row of the same model and device; atomic.

    Args:
        row: a measured row with at least :data:`STORED_KEYS` (``device`` ``"cpu"`` or ``"gpu"``), as
            :func:`hsaudit.bench.train.calibration_row` builds it.
        path: the JSON file (:func:`calibration_path`).

    Returns:
        The file written.

    Raises:
        ValueError: a row without a required key, a bad device or a non-positive time.
    """
    missing = [k for k in STORED_KEYS if k not in row]
    if missing:
        raise ValueError(f"calibration row lacks {missing}: {dict(row)!r}")
    if row["device"] not in DEVICES or not float(row["seconds_per_model_step"]) > 0:
        raise ValueError(f"calibration row needs a device in {DEVICES} and seconds > 0, got {dict(row)!r}")
    file = calibration_path(path)
    rows = json.loads(file.read_text())["rows"] if file.is_file() else []
    rows = [r for r in rows if (r["model"], r["device"]) != (row["model"], row["device"])] + [dict(row)]
    write_text_atomic(file, json.dumps({"rows": rows}, indent=2) + "\n")
    return file


@functools.lru_cache(maxsize=8)
def _read_stored(path: str, _mtime_ns: int) -> tuple[Calibration, ...]:
    try:
        rows = json.loads(Path(path).read_text())["rows"]
        return tuple(
            Calibration(
                model=str(r["model"]),
                device=str(r["device"]),
                batch=int(r["batch"]),
                seconds_per_model_step=float(r["seconds_per_model_step"]),
                source=f"measured: {r['command']} ({r['date']}, {r.get('device_name', '?')}, "
                f"population {r.get('population', '?')}, load {r.get('load_average', '?')}, torch {r['torch']})",
                status="measured",
            )
            for r in rows
        )
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"calibration file {path!r} is not a list of measured rows: {err}") from None


def calibration(model: str, device: str, *, path: str | os.PathLike | None = None) -> Calibration:
    """The calibration row of ``model`` on ``device``: a stored measured row if any, else the built-in table's.

    Args:
        model: architecture.
        device: ``"cpu"`` or ``"gpu"``.
        path: stored calibration file (see :func:`stored_calibration`).

    Raises:
        ValueError: if neither the stored rows nor the table have such a row.
    """
    for row in (*stored_calibration(path), *CALIBRATION):
        if row.model == model and row.device == device:
            return row
    known = sorted({(r.model, r.device) for r in CALIBRATION})
    raise ValueError(f"no calibration for model {model!r} on {device!r}; known: {known}; {not_calibrated(model)}")


def not_calibrated(model: str) -> str:
    """What ``hsaudit plan`` says of a model it has no calibration row of, and how to measure one."""
    return f"not calibrated (run hsaudit bench train --model {model} --save-calibration)"


def is_calibrated(model: str, device: str) -> bool:
    """Whether :func:`calibration` has a row of ``model`` on ``device`` (a new registry model has none until it is
    measured: ``hsaudit plan`` lists its populations, says how to measure it and leaves it out of the totals)."""
    try:
        calibration(model, device)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Population:
    """A plan's population (:class:`hsaudit.experiments.plans.Population`) as a priced row of ``hsaudit plan``."""

    figures: tuple[str, ...]
    section: str
    adversary: str
    model: str
    models: int
    steps: int
    batch: int
    device: str
    key: tuple = field(compare=False, default=())
    detail: str = ""
    cost_factor: float = 1.0  # the model's cost per example relative to its calibration row's (e.g. LM size)
    timed_seconds: float = 0.0  # a user's own training (byo), timed here: `hsaudit plan --time-byo`

    @classmethod
    def of(cls, pop: Any) -> Population:
        """The row of a plan's population: its section is the directory below ``results/`` its root lives in,
        its key the root."""
        return cls(
            figures=tuple(pop.figures),
            section=pop.root.split("/")[1],
            adversary=pop.role,
            model=pop.model,
            models=int(pop.models),
            steps=int(pop.steps),
            batch=int(pop.batch),
            device="gpu" if pop.gpu else "cpu",
            key=(pop.root,),
            detail=pop.detail,
            cost_factor=float(pop.cost_factor),
        )

    @property
    def model_steps(self) -> int:
        return self.models * self.steps

    def priced(self, device: str) -> bool:
        """Whether :meth:`hours` knows this population's cost on ``device``: false for a model without a calibration
        row (:func:`is_calibrated`)."""
        return self.batch == 0 or self.model_steps == 0 or is_calibrated(self.model, device)

    def hours(self, device: str) -> float:
        """Estimated hours on ``device`` (``"cpu"``: CPU core-hours at 1 thread per job; ``"gpu"``: GPU-hours).
        A population whose cost per step the plan cannot know (``batch`` 0: a user's own training, ``byo``) is not
        priced (0) unless it was timed on this machine (``timed_seconds``, wall time, given as CPU).

        Raises:
            ValueError: the model has no calibration row (:meth:`priced`).
        """
        if self.batch == 0:
            return self.timed_seconds / 3600.0 if device == "cpu" else 0.0
        if self.model_steps == 0:
            return 0.0
        cal = calibration(self.model, device)
        per_step = cal.seconds_per_model_step * (self.batch / cal.batch) * self.cost_factor
        return self.model_steps * per_step / 3600.0


def experiment_plans(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every experiment's plan, built as the rules build them (``plan(config)`` of each package in
    :data:`hsaudit.experiments.plans.EXPERIMENTS` whose config section is present)."""
    from hsaudit.experiments.plans import EXPERIMENTS, plan_of

    return {name: plan_of(name, config) for name in EXPERIMENTS if name == "cebere" or config.get(name)}


def all_populations(config: Mapping[str, Any], experiments: Iterable[str] | None = None) -> list[Population]:
    """Every trained population the config describes (of ``experiments`` only, when given), priced: the plans'
    populations, one per root (a population that several figures or experiments read is listed once, with all
    their figures and the largest R; :func:`hsaudit.experiments.plans.merge_populations`)."""
    from hsaudit.experiments.plans import merge_populations

    plans = experiment_plans(config)
    wanted = plans.keys() if experiments is None else [e for e in experiments if e in plans]
    return [Population.of(p) for p in merge_populations(p for e in wanted for p in plans[e].populations)]


def _plan_targets(config: Mapping[str, Any]) -> tuple[Any, ...]:
    """The targets of every plan."""
    return tuple(t for plan in experiment_plans(config).values() for t in plan.targets)


_TARGET_RE = re.compile(r"^(?:results/)?(?:archive/)?(?P<fig>(?:[A-Za-z0-9_-]+/)*[a-z][0-9a-z_]*)"
                        r"(?:\.pdf|\.csv|\.tar\.gz|\.md)?$")


def figure_id(target: str) -> str:
    """Figure id of a target path: ``results/fig4.pdf`` → ``fig4``; ``results/steinke/fig1.pdf`` → ``steinke/fig1``.

    Raises:
        ValueError: if ``target`` does not look like a figure target.
    """
    m = _TARGET_RE.match(str(target).strip())
    if not m:
        raise ValueError(f"target {target!r} is not a figure target (expected e.g. results/fig4.pdf)")
    return m.group("fig")


def known_figures(config: Mapping[str, Any]) -> list[str]:
    """Every figure (and table) id that :func:`plan` accepts: the plans' targets, and the figures their populations
    name (an optional target such as Steinke et al.'s Table 1 is priced even before its paths are given)."""
    figs = {t.id for t in _plan_targets(config)}
    figs.update(f for a in all_populations(config) for f in a.figures)
    return sorted(figs)


@dataclass(frozen=True)
class CostPlan:
    """The populations behind some targets, and totals with shared populations counted once."""

    targets: tuple[str, ...]
    populations: tuple[Population, ...]
    simulations: tuple[str, ...]

    @property
    def models(self) -> int:
        return sum(a.models for a in self.populations)

    @property
    def model_steps(self) -> int:
        return sum(a.model_steps for a in self.populations)

    def hours(self, device: str) -> float:
        """Hours of the priced populations (an uncalibrated model's are left out: :attr:`uncalibrated`)."""
        return sum(a.hours(device) for a in self.populations if a.priced(device))

    @property
    def uncalibrated(self) -> tuple[str, ...]:
        """The models of its populations that have no calibration row on some device, each once."""
        return tuple(dict.fromkeys(a.model for a in self.populations for d in DEVICES if not a.priced(d)))

    @property
    def gpu_sized(self) -> bool:
        return any(a.device == "gpu" for a in self.populations)


def plan(targets: Iterable[str], config: Mapping[str, Any]) -> CostPlan:
    """Plan ``targets`` (figure paths, or ``all``) under the resolved ``config``.

    Raises:
        ValueError: a target that is no figure of the project (the message lists the known ones).
    """
    targets = tuple(targets)
    populations = all_populations(config)
    known = known_figures(config)
    planned = _plan_targets(config)
    parts = {t.id: t.parts for t in planned}
    wanted: list[str] = []
    for t in targets:
        if t in ("all", "results/all"):
            wanted.extend(known)
            continue
        fig = figure_id(t)
        if fig not in known:
            raise ValueError(f"unknown figure {fig!r} (from {t!r}); known: {', '.join(known)}")
        wanted.append(fig)
        wanted.extend(parts.get(fig, ()))
    chosen = tuple(a for a in populations if set(a.figures) & set(wanted))
    sims = tuple(t.id for t in planned if not t.trained and t.id in wanted)
    return CostPlan(targets=targets, populations=chosen, simulations=sims)


def _fmt_hours(h: float) -> str:
    if h < 0.01:
        return f"{h * 3600:.1f} s"
    if h < 1:
        return f"{h * 60:.1f} min"
    return f"{h:,.1f} h"


def format_plan(p: Plan, *, scale: str, cores: int | None = None) -> str:
    """Human-readable table of a plan (what ``hsaudit plan`` prints); its priced CPU total also as wall time on
    ``cores`` cores (default: this machine's), one single-threaded job per core."""
    lines = [f"plan for {' '.join(p.targets)} (scale={scale})"]
    if p.populations:
        fw = max(7, *(len(",".join(a.figures)) for a in p.populations))
        sw = max(7, *(len(a.detail) for a in p.populations))
        header = f"{'figures':<{fw}} {'adversary':<18} {'model':<12} {'setting':<{sw}} {'models':>9} {'steps':>6} " \
                 f"{'model-steps':>14} {'CPU (1 core)':>13} {'GPU':>10}  runs on"
        lines += [header, "-" * len(header)]
        for a in p.populations:
            if a.batch > 0:
                cpu, gpu = (_fmt_hours(a.hours(d)) if a.priced(d) else "not calibrated" for d in ("cpu", "gpu"))
            else:  # a user's own training (byo): not priced, or timed here (--time-byo; 0 models: nothing to train)
                timed = a.timed_seconds or a.models == 0
                cpu, gpu = (_fmt_hours(a.hours("cpu")), "–") if timed else ("not priced", "not priced")
            lines.append(
                f"{','.join(a.figures):<{fw}} {a.adversary:<18} {a.model:<12} {a.detail:<{sw}} {a.models:>9,} "
                f"{a.steps:>6,} {a.model_steps:>14,} {cpu:>13} {gpu:>10}  {a.device}"
            )
        lines.append("-" * len(header))
        lines.append(
            f"{'total (shared populations once)':<{fw + sw + 33}} {p.models:>9,} {'':>6} {p.model_steps:>14,} "
            f"{_fmt_hours(p.hours('cpu')):>13} {_fmt_hours(p.hours('gpu')):>10}"
        )
        cores = cores or os.cpu_count() or 1
        cpu = p.hours("cpu")
        lines.append(f"priced total: {_fmt_hours(cpu)} of CPU core time, ≈ {_fmt_hours(cpu / cores)} wall on "
                     f"{cores} core(s) with the local executor (--cores {cores}); {_fmt_hours(p.hours('gpu'))} of "
                     "GPU time; the audits' bootstraps and the reports are not priced")  # fmt: skip
    for model in p.uncalibrated:
        lines.append(f"{model}: {not_calibrated(model)}; the totals leave its populations out")
    for fig in p.simulations:
        lines.append(f"{fig}: simulation, no training (CPU minutes at paper scale; docs/benchmarks.md)")
    lines.append("CPU = core-hours at 1 thread per job; GPU = GPU-hours at the GPU rows' speed (built in: one H100, "
                 "measured; docs/cluster.md).")
    if any(a.batch == 0 for a in p.populations):
        lines.append("byo = a user's own training: not priced, or with --time-byo MODELS timed on this machine "
                     "(wall time of its jobs, in the CPU column, on whatever device the training uses).")
    return "\n".join(lines)


def gpu_warning(targets: Iterable[str], config: Mapping[str, Any], *, has_gpu: bool) -> str | None:
    """Warning text for a paper-scale, GPU-sized run on a machine without a GPU (None when there is nothing to say).

    Targets that are not figures (rules, intermediate files) are ignored.
    """
    if has_gpu or config.get("scale", "paper") != "paper":
        return None
    figs = []
    for t in targets:
        try:
            figs.append(figure_id(t))
        except ValueError:
            continue
    if not figs:
        return None
    try:
        p = plan(figs, config)
    except ValueError:
        return None
    gpu = tuple(a for a in p.populations if a.device == "gpu")
    if not gpu:
        return None
    cpu_h = sum(a.hours("cpu") for a in gpu if a.priced("cpu"))
    gpu_h = sum(a.hours("gpu") for a in gpu if a.priced("gpu"))
    return (
        f"hsaudit: GPU-sized at scale=paper ({', '.join(sorted({f for a in gpu for f in a.figures} & set(figs)))}): "
        f"{sum(a.models for a in gpu):,} models, {sum(a.model_steps for a in gpu):,} model-steps, "
        f"about {_fmt_hours(gpu_h)} of GPU time (GPU-hours), or {_fmt_hours(cpu_h)} of CPU core time on this "
        f"machine, which has no GPU. "
        f"Use --profile slurm on a GPU cluster, or --config scale=laptop (`hsaudit plan TARGET` for details)."
    )


def has_local_gpu() -> bool:
    """Whether this machine has an NVIDIA GPU (cheap check: no torch import)."""
    import os
    import shutil

    return os.path.exists("/proc/driver/nvidia/gpus") and bool(os.listdir("/proc/driver/nvidia/gpus")) or (
        shutil.which("nvidia-smi") is not None and os.path.exists("/dev/nvidia0")
    )
