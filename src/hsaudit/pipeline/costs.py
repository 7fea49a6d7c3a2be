"""Cost estimates before launching: models, DP-SGD steps and CPU/GPU-hours per experiment.

``hsaudit plan results/fig4.pdf`` answers "how many models, how many steps, how long?" from the *resolved*
config (scale preset applied) and a small calibration table of seconds per model-step (:data:`CALIBRATION`).

Where the experiments come from:

- **Cebere et al.** (Housing: fig1c, fig4, fig7; CIFAR-10: fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13;
  Table 2; the Section 6 simulations) and **the one-run study** (``one_run/fig1``): the populations and targets of
  the very plans the rules run (:func:`hsaudit.experiments.cebere.plan.plan`,
  :func:`hsaudit.experiments.one_run.plan.plan`), so the estimate follows the config. A population that several
  figures read (same root) is counted once in totals.
- **Yoon et al.** (``yoon/fig2`` … ``yoon/fig8``, ``yoon/table1``, ``yoon/crafting``): the populations of the plan
  its rules read (``populations`` of :class:`hsaudit.experiments.yoon.plan.YoonPlan`): one row per population (crafting,
  held-out and validation populations of every run) with full-batch steps of |D| + 1 examples, plus the black-box
  surrogates (:func:`yoon_populations`).
- Analytic / 1-D experiments (Section 6 process, Steinke, Annamalai): no training; listed as simulations
  (Section 6's and Annamalai's: the untrained targets of their plans).

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
# row is the Housing shard's step time divided by the shard size (issue 3). GPU rows are NOT measured (no GPU
# here). They are derived from the paper's total, "approximately 3500 GPU hours" for the ConvNet and ResNet
# audits at T = 250, 1250, 6250 (Cebere et al., Appendix D), spread over the model-steps of the paper-scale CIFAR-10
# plan (91.26M ConvNet, 90.0M ResNet18) in the ratio of the CPU costs measured with torch.func on 2026-11-22
# (ResNet18/ConvNet = 768, close to their FLOP ratio): c_conv·91.25M + 768·c_conv·90.0M = 3500 h. The ResNet18
# row is therefore the paper's own cost; the ConvNet row assumes populations vectorised as well as the FLOPs allow
# (on a GPU a lone ConvNet is launch-bound and slower). See docs/cluster.md "Cost estimates". A measured row
# stored by `hsaudit bench train --save-calibration` (:data:`STORED_CALIBRATION`) takes precedence.
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
    Calibration("fcnn", "gpu", 400, 1.79e-4, "assumed: CPU cost of 2026-11-22 (68 parameters: launch-bound)"),
    Calibration("convnet", "gpu", 128, 1.82e-4, "derived: paper's 3,500 GPU-h x measured CPU cost ratio"),
    Calibration("resnet18_gn", "gpu", 128, 0.140, "derived: paper's 3,500 GPU-h x measured CPU cost ratio"),
    Calibration("alexnet_head", "gpu", 128, 1.82e-4, "assumed equal to the ConvNet on GPU (launch-bound)"),
    # Yoon et al.'s ConvNets: the ConvNet GPU row x the ratio of forward multiply-adds per example (ConvNet
    # 651,720; MNIST ConvNet 910,656: x1.40; CIFAR-10 ConvNet 38,896,896: x59.7). Not measured (no GPU here).
    Calibration("mnist_cnn", "gpu", 128, 2.54e-4, "derived: ConvNet GPU row x multiply-adds ratio 1.40 (estimate)"),
    Calibration("cifar_cnn", "gpu", 128, 1.09e-2, "derived: ConvNet GPU row x multiply-adds ratio 59.7 (estimate)"),
    # De et al.'s WRN-16-4 (Steinke et al. fig2): ≈ 392M forward multiply-adds per 32x32 image (convolutions; hand
    # count in docs/steinke.md), x602 the ConvNet's. The GPU row is not measured, and the WRN trains through the
    # `func` backend (weight standardisation), which was 3.5x slower than `hooks` on the ResNet18 on the CPU: a
    # lower estimate. The CPU row is measured (2026-11-25, idle; the earlier derived 13.3 s, ResNet18-GN CPU row x
    # 392/556, was 2.9x too high).
    Calibration("wrn16_4", "gpu", 128, 0.110, "derived: ConvNet GPU row x multiply-adds ratio 602 (estimate)"),
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
    raise ValueError(
        f"no calibration for model {model!r} on {device!r}; known: {known}; measure one with "
        f"`hsaudit bench train --model {model} --save-calibration`"
    )


@dataclass(frozen=True)
class Population:
    """One population of trained models (one adversary, one parameter set, one repetition group)."""

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

    @property
    def model_steps(self) -> int:
        return self.models * self.steps

    def hours(self, device: str) -> float:
        """Estimated hours on ``device`` (``"cpu"``: CPU core-hours at 1 thread per job; ``"gpu"``: GPU-hours)."""
        cal = calibration(self.model, device)
        per_step = cal.seconds_per_model_step * (self.batch / cal.batch) * self.cost_factor
        return self.model_steps * per_step / 3600.0


# Figures without trained models (simulate → audit → plot), by config section (Cebere et al.'s Section 6 figures and
# Annamalai's are targets of their plans).
SIMULATION_FIGURES = {
    "steinke": ("steinke/fig1", "steinke/fig3", "steinke/fig5", "steinke/fig6"),
}


def _from_plan(pop: Any) -> Population:
    """A plan's :class:`hsaudit.experiments.plans.Population` as a row of this table (its section is the directory
    below ``results/`` its root lives in; its key, the root)."""
    return Population(
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


def _cebere_plans(config: Mapping[str, Any]) -> tuple[Any, Any]:
    """Cebere et al.'s plan and the one-run study's (None without a ``one_run`` section), as the rules build them."""
    from hsaudit.experiments.cebere.plan import plan as cebere_plan
    from hsaudit.experiments.one_run.plan import plan as one_run_plan

    cebere = cebere_plan(config)
    one_run = one_run_plan(config, populations=cebere.base) if config.get("one_run") else None
    return cebere, one_run


def trained_populations(config: Mapping[str, Any]) -> list[Population]:
    """Every population of Cebere et al.'s trained-model figures: the populations of its plan
    (:func:`hsaudit.experiments.cebere.plan.plan`), one per audit (an audit shared by several figures once, with
    all of them; repetitions are separate audits; R models, plus the simulated trainings of the A_GC-S Noisy
    variants), on the GPU when its dataset's jobs ask for one."""
    return [_from_plan(pop) for pop in _cebere_plans(config)[0].populations]


def one_run_populations(config: Mapping[str, Any]) -> list[Population]:
    """The populations of ``results/one_run/fig1.pdf``, from the plan its rules run
    (:func:`hsaudit.experiments.one_run.plan.plan`): per audited dataset, the one-run models (the largest M,
    rounded up to whole shards; m canaries each, same cost per model-step) and the A_GC-R population of the same
    configuration (the largest R; its root is Cebere's, so for Housing it is fig1c's first repetition, counted once
    with it)."""
    one_run = _cebere_plans(config)[1]
    return [_from_plan(pop) for pop in one_run.populations] if one_run else []


def _plan_targets(config: Mapping[str, Any]) -> tuple[Any, ...]:
    """The targets of the plans that list theirs (Cebere et al., the one-run study, Annamalai)."""
    cebere, one_run = _cebere_plans(config)
    annamalai = ()
    if config.get("annamalai"):
        from hsaudit.experiments.annamalai.plan import plan as annamalai_plan

        annamalai = annamalai_plan(config).targets
    return cebere.targets + (one_run.targets if one_run else ()) + annamalai


def yoon_populations(config: Mapping[str, Any]) -> list[Population]:
    """The Yoon et al. populations of the config: those of the plan its rules read
    (``populations`` of :class:`hsaudit.experiments.yoon.plan.YoonPlan`; every figure of the section, shared
    populations once)."""
    if not config.get("yoon"):
        return []
    from hsaudit.experiments.yoon.plan import plan as yoon_plan

    return [_from_plan(pop) for pop in yoon_plan(config).populations]


def steinke_populations(config: Mapping[str, Any]) -> list[Population]:
    """Steinke, Nasr et al. fig2, fig4, table2 and table1: the populations of the plan their rules read
    (:func:`hsaudit.experiments.steinke.plan.plan`), one per root: 2R models (both worlds) trained for the largest T;
    a table2 row with fig2's values is fig2's population (listed once, with both). Poisson batches of expected size
    B are priced at B per-sample gradients per model-step; table1's language model by the size the plan assumes
    (``steinke.table1.plan``) against the ``causal_lm`` calibration rows'."""
    if not config.get("steinke"):
        return []
    from hsaudit.experiments.steinke.plan import plan as steinke_plan

    return [_from_plan(pop) for pop in steinke_plan(config).populations]


def all_populations(config: Mapping[str, Any]) -> list[Population]:
    """Every trained population the config describes (Housing, CIFAR-10, the one-run study, Yoon et al., and
    Steinke et al. fig2, fig4, table2 and table1); a population that several experiments share (same key) is listed once,
    with all their figures and the largest R."""
    cebere, one_run = _cebere_plans(config)
    ours = [_from_plan(pop) for pop in cebere.populations + (one_run.populations if one_run else ())]
    merged: dict[tuple, Population] = {}
    for pop in (ours + yoon_populations(config) + steinke_populations(config)):
        seen = merged.get(pop.key) if pop.key else None
        if seen is None:
            merged[pop.key or (id(pop),)] = pop
            continue
        figures = seen.figures + tuple(f for f in pop.figures if f not in seen.figures)
        merged[pop.key] = replace(seen, figures=figures, models=max(seen.models, pop.models))
    return list(merged.values())


_TARGET_RE = re.compile(r"^(?:results/)?(?:archive/)?(?P<fig>(?:[a-z0-9_]+/)?[a-z][0-9a-z_]*)"
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
    """Every figure (and table) id that :func:`plan` accepts."""
    figs = {f for a in all_populations(config) for f in a.figures}
    figs.update(f for group in SIMULATION_FIGURES.values() for f in group)
    figs.update(t.id for t in _plan_targets(config))
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
        return sum(a.hours(device) for a in self.populations)

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
    simulated = [t.id for t in planned if not t.trained] + [f for g in SIMULATION_FIGURES.values() for f in g]
    sims = tuple(f for f in simulated if f in wanted)
    return CostPlan(targets=targets, populations=chosen, simulations=sims)


def _fmt_hours(h: float) -> str:
    if h < 0.01:
        return f"{h * 3600:.1f} s"
    if h < 1:
        return f"{h * 60:.1f} min"
    return f"{h:,.1f} h"


def format_plan(p: Plan, *, scale: str) -> str:
    """Human-readable table of a plan (what ``hsaudit plan`` prints)."""
    lines = [f"plan for {' '.join(p.targets)} (scale={scale})"]
    if p.populations:
        fw = max(7, *(len(",".join(a.figures)) for a in p.populations))
        sw = max(7, *(len(a.detail) for a in p.populations))
        header = f"{'figures':<{fw}} {'adversary':<18} {'model':<12} {'setting':<{sw}} {'models':>9} {'steps':>6} " \
                 f"{'model-steps':>14} {'CPU (1 core)':>13} {'GPU':>10}  runs on"
        lines += [header, "-" * len(header)]
        for a in p.populations:
            lines.append(
                f"{','.join(a.figures):<{fw}} {a.adversary:<18} {a.model:<12} {a.detail:<{sw}} {a.models:>9,} "
                f"{a.steps:>6,} {a.model_steps:>14,} {_fmt_hours(a.hours('cpu')):>13} {_fmt_hours(a.hours('gpu')):>10}"
                f"  {a.device}"
            )
        lines.append("-" * len(header))
        lines.append(
            f"{'total (shared populations once)':<{fw + sw + 33}} {p.models:>9,} {'':>6} {p.model_steps:>14,} "
            f"{_fmt_hours(p.hours('cpu')):>13} {_fmt_hours(p.hours('gpu')):>10}"
        )
    for fig in p.simulations:
        lines.append(f"{fig}: simulation, no training (CPU minutes at paper scale; docs/benchmarks.md)")
    lines.append("CPU = core-hours at 1 thread per job; GPU = GPU-hours (derived, see docs/cluster.md).")
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
    cpu_h = sum(a.hours("cpu") for a in gpu)
    gpu_h = sum(a.hours("gpu") for a in gpu)
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
