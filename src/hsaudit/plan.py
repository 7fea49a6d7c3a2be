"""Cost estimates before launching: models, DP-SGD steps and CPU/GPU-hours per experiment.

``hsaudit plan results/fig4.pdf`` answers "how many models, how many steps, how long?" from the *resolved*
config (scale preset applied) and a small calibration table of seconds per model-step (:data:`CALIBRATION`).

Where the experiments come from:

- **Housing** (fig1c, fig4, fig7): the ``housing:`` config section that the training rules themselves read
  (base values, ``figures.<fig>.adversaries`` and per-figure overrides), so the plan follows the config. Audits
  that several figures share (same adversary and parameters) are counted once in totals.
- **CIFAR-10** (fig1a/b, fig2, fig5, fig6a, fig8, fig11, fig12, fig13; GPU-sized): :data:`CIFAR_AUDITS`, the
  paper's experiment list (Cebere et al. 2025, §5, Table 2, Appendix D; specs/cebere.md §3). The CIFAR rules are
  expected to read this table (or a ``cifar:`` config section of the same shape, which takes precedence).
- Analytic / 1-D experiments (Section 6 process, Steinke, Annamalai): no training; listed as simulations.

Cost model: seconds per model-step scale linearly with the batch size from the calibration batch; a model
trains ``steps`` DP-SGD steps with per-sample gradients, clipping and noise. Calibration rows say whether they
were measured (with the command that reproduces them, :func:`measure_step_seconds`) or derived.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
from pathlib import Path
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hsaudit.config import deep_merge

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
# through the population engine of hsaudit.psg (`auto` backend) at the largest population measured. The FCNN
# row is the Housing shard's step time divided by the shard size (issue 3). GPU rows are NOT measured (no GPU
# here). They are derived from the paper's total, "approximately 3500 GPU hours" for the ConvNet and ResNet
# audits at T = 250, 1250, 6250 (Cebere et al., Appendix D), spread over the model-steps of :data:`CIFAR_AUDITS`
# (91.25M ConvNet, 90.0M ResNet18) in the ratio of the CPU costs measured with torch.func on 2026-11-22
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
    Calibration("fcnn", "gpu", 400, 1.79e-4, "assumed: CPU cost of 2026-11-22 (68 parameters: launch-bound)"),
    Calibration("convnet", "gpu", 128, 1.82e-4, "derived: paper's 3,500 GPU-h x measured CPU cost ratio"),
    Calibration("resnet18_gn", "gpu", 128, 0.140, "derived: paper's 3,500 GPU-h x measured CPU cost ratio"),
    Calibration("alexnet_head", "gpu", 128, 1.82e-4, "assumed equal to the ConvNet on GPU (launch-bound)"),
)

PAPER_GPU_HOURS = 3500.0
"""Cebere et al., Appendix D: "totaling approximately 3500 GPU hours" (ConvNet + ResNet, T = 250/1250/6250)."""

STORED_CALIBRATION = "config/calibration.json"
"""Default file of measured rows (``hsaudit bench train --save-calibration``), relative to the working directory;
the environment variable ``HSAUDIT_CALIBRATION`` overrides it. Machine-specific: not meant to be committed."""

_MODEL_ALIASES = {"linear4096": "alexnet_head"}  # the CIFAR audit table's name of the AlexNet head


def stored_calibration(path: str | os.PathLike | None = None) -> tuple[Calibration, ...]:
    """Measured rows stored by ``hsaudit bench train --save-calibration`` (empty when the file does not exist).

    Args:
        path: the JSON file; default ``$HSAUDIT_CALIBRATION`` or :data:`STORED_CALIBRATION`.

    Raises:
        ValueError: a file that is not a calibration file (the message names it).
    """
    file = Path(path or os.environ.get("HSAUDIT_CALIBRATION") or STORED_CALIBRATION)
    if not file.is_file():
        return ()
    return _read_stored(str(file), file.stat().st_mtime_ns)


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
        model: architecture (``linear4096`` is an alias of ``alexnet_head``).
        device: ``"cpu"`` or ``"gpu"``.
        path: stored calibration file (see :func:`stored_calibration`).

    Raises:
        ValueError: if neither the stored rows nor the table have such a row.
    """
    model = _MODEL_ALIASES.get(model, model)
    for row in (*stored_calibration(path), *CALIBRATION):
        if row.model == model and row.device == device:
            return row
    known = sorted({(r.model, r.device) for r in CALIBRATION})
    raise ValueError(f"no calibration for model {model!r} on {device!r}; known: {known}")


@dataclass(frozen=True)
class Audit:
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

    @property
    def model_steps(self) -> int:
        return self.models * self.steps

    def hours(self, device: str) -> float:
        """Estimated hours on ``device`` (``"cpu"``: CPU core-hours at 1 thread per job; ``"gpu"``: GPU-hours)."""
        cal = calibration(self.model, device)
        return self.model_steps * cal.seconds_per_model_step * (self.batch / cal.batch) / 3600.0


# --------------------------------------------------------------------------------------------------------------
# The CIFAR-10 experiments of Cebere et al. (specs/cebere.md §3; CIFAR-BASE: batch 128, σ 4, R 5000, 250
# insertions, i.e. T = 250·k). Each entry is one population; `figures` lists every figure that uses it.
# fig8 trains 30 runs with the A_L canary (gradient norms); fig13's AlexNet trains only a new last layer on
# precomputed features (modelled as the 4096→10 linear layer, `linear4096`).
_CIFAR_BASE = {"batch": 128, "runs": 5000}


def _cifar_audits() -> tuple[dict[str, Any], ...]:
    audits: list[dict[str, Any]] = []
    for model, fig in (("convnet", "fig1a"), ("resnet18_gn", "fig1b")):
        for clip in (1, 2, 4):
            for adv in ("gc_r", "label_flip"):
                figs = [fig]
                if clip == 1 and adv == "gc_r":
                    figs += ["fig5"] + (["fig11", "fig13"] if model == "convnet" else [])
                audits.append({"figures": figs, "model": model, "adversary": adv, "clip": clip, "period": 1})
        for period, fig2 in ((5, "fig2a"), (25, "fig2b")):
            for adv in ("gc_r", "label_flip"):
                figs = [fig2]
                if adv == "gc_r" and period == 5:
                    figs += ["fig5"] + (["fig6a", "fig11"] if model == "convnet" else [])
                if adv == "gc_r" and period == 25 and model == "convnet":
                    figs += ["fig11"]
                audits.append({"figures": figs, "model": model, "adversary": adv, "clip": 1, "period": period})
        for period in (1, 5):
            audits.append({"figures": ["fig5"], "model": model, "adversary": "gc_s", "clip": 1, "period": period})
        audits.append(
            {"figures": ["fig8"], "model": model, "adversary": "label_flip_norms", "clip": 1, "period": 1, "runs": 30}
        )
    audits.append({"figures": ["fig12"], "model": "convnet", "adversary": "gc_r_unknown_theta0", "clip": 1,
                   "period": 1})
    audits.append({"figures": ["fig13"], "model": "linear4096", "adversary": "gc_r", "clip": 1, "period": 1})
    return tuple({**_CIFAR_BASE, **a} for a in audits)


CIFAR_AUDITS: tuple[dict[str, Any], ...] = _cifar_audits()
"""The paper's CIFAR-10 populations: figures, model, adversary, clip C, period k, runs R, batch (T = 250·k)."""

INSERTIONS = 250
"""Number of insertions of the CIFAR/Housing audits (T = 250·k) [Cebere et al. §5]."""

# Figures without trained models (simulate → audit → plot), by config section.
SIMULATION_FIGURES = {
    "section6": ("fig3", "fig6b", "fig6c", "fig10", "fig14"),
    "steinke": ("steinke/fig1", "steinke/fig3", "steinke/fig5", "steinke/fig6"),
    "annamalai": ("annamalai/fig1", "annamalai/fig2"),
}

_HOUSING_NOT_PARAMS = ("data", "resources", "figures")


def housing_audits(config: Mapping[str, Any]) -> list[Audit]:
    """Populations of the Housing figures from the resolved ``housing:`` section (what the training rules read).

    ``figures.<fig>`` may override any base key for that figure; an audit is one adversary with its merged
    parameters, trained ``runs`` times in each of ``repetitions`` repetitions. The A_GC-S Noisy variants add their
    ``simulations`` simulated trainings per repetition.
    """
    section = config.get("housing")
    if not section:
        return []
    base = {k: v for k, v in section.items() if k not in _HOUSING_NOT_PARAMS}
    device = "gpu" if int((section.get("resources") or {}).get("gpu", 0) or 0) > 0 else "cpu"
    by_key: dict[tuple, Audit] = {}
    for fig, spec in (section.get("figures") or {}).items():
        spec = dict(spec or {})
        adversaries = spec.pop("adversaries", [])
        params = deep_merge(base, spec)
        for adv in adversaries:
            reps = int(params.get("repetitions", 1))
            models = int(params["runs"]) * reps
            if adv.startswith("gc_s_noisy"):
                models += int(params.get("simulations", 0)) * reps
            key = ("housing", adv, repr(sorted(params.items())))
            if key in by_key:
                old = by_key[key]
                by_key[key] = replace(old, figures=old.figures + (fig,))
                continue
            by_key[key] = Audit(
                figures=(fig,),
                section="housing",
                adversary=adv,
                model=str(params.get("model", "fcnn")),
                models=models,
                steps=int(params["steps"]),
                batch=int(params["batch_size"]),
                device=device,
                key=key,
                detail=f"R={params['runs']} x{reps}",
            )
    return list(by_key.values())


def cifar_audits(config: Mapping[str, Any]) -> list[Audit]:
    """Populations of the CIFAR-10 figures: ``config['cifar']['audits']`` if present, else :data:`CIFAR_AUDITS`.

    A scale preset may shrink them through ``cifar.runs`` / ``cifar.period_max`` once a ``cifar:`` section exists;
    without one the paper's values are used (these figures are GPU-sized at every scale until then).
    """
    section = config.get("cifar") or {}
    rows = section.get("audits", CIFAR_AUDITS)
    out = []
    for i, a in enumerate(rows):
        a = {**_CIFAR_BASE, **{k: v for k, v in section.items() if k in ("runs", "batch")}, **a}
        out.append(
            Audit(
                figures=tuple(a["figures"]),
                section="cifar",
                adversary=a["adversary"],
                model=a["model"],
                models=int(a["runs"]),
                steps=INSERTIONS * int(a["period"]),
                batch=int(a["batch"]),
                device="gpu",
                key=("cifar", i),
                detail=f"C={a['clip']} k={a['period']}",
            )
        )
    return out


def all_audits(config: Mapping[str, Any]) -> list[Audit]:
    """Every trained population the config describes (Housing and CIFAR-10)."""
    return housing_audits(config) + cifar_audits(config)


_TARGET_RE = re.compile(r"^(?:results/)?(?:archive/)?(?P<fig>(?:[a-z0-9_]+/)?(?:fig|table)[0-9a-z_]+)"
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
    figs = {f for a in all_audits(config) for f in a.figures}
    figs.update(f for group in SIMULATION_FIGURES.values() for f in group)
    return sorted(figs)


@dataclass(frozen=True)
class Plan:
    """The populations behind some targets, and totals with shared populations counted once."""

    targets: tuple[str, ...]
    audits: tuple[Audit, ...]
    simulations: tuple[str, ...]

    @property
    def models(self) -> int:
        return sum(a.models for a in self.audits)

    @property
    def model_steps(self) -> int:
        return sum(a.model_steps for a in self.audits)

    def hours(self, device: str) -> float:
        return sum(a.hours(device) for a in self.audits)

    @property
    def gpu_sized(self) -> bool:
        return any(a.device == "gpu" for a in self.audits)


def plan(targets: Iterable[str], config: Mapping[str, Any]) -> Plan:
    """Plan ``targets`` (figure paths, or ``all``) under the resolved ``config``.

    Raises:
        ValueError: a target that is no figure of the project (the message lists the known ones).
    """
    targets = tuple(targets)
    audits = all_audits(config)
    known = known_figures(config)
    wanted: list[str] = []
    for t in targets:
        if t in ("all", "results/all"):
            wanted.extend(known)
            continue
        fig = figure_id(t)
        if fig not in known:
            raise ValueError(f"unknown figure {fig!r} (from {t!r}); known: {', '.join(known)}")
        wanted.append(fig)
    chosen = tuple(a for a in audits if set(a.figures) & set(wanted))
    sims = tuple(
        f for group in SIMULATION_FIGURES.values() for f in group if f in wanted
    )
    return Plan(targets=targets, audits=chosen, simulations=sims)


def _fmt_hours(h: float) -> str:
    if h < 0.01:
        return f"{h * 3600:.1f} s"
    if h < 1:
        return f"{h * 60:.1f} min"
    return f"{h:,.1f} h"


def format_plan(p: Plan, *, scale: str) -> str:
    """Human-readable table of a plan (what ``hsaudit plan`` prints)."""
    lines = [f"plan for {' '.join(p.targets)} (scale={scale})"]
    if p.audits:
        header = f"{'figures':<24} {'adversary':<20} {'model':<12} {'setting':<10} {'models':>9} {'steps':>6} " \
                 f"{'model-steps':>14} {'CPU (1 core)':>13} {'GPU':>10}  runs on"
        lines += [header, "-" * len(header)]
        for a in p.audits:
            lines.append(
                f"{','.join(a.figures):<24} {a.adversary:<20} {a.model:<12} {a.detail:<10} {a.models:>9,} {a.steps:>6,} "
                f"{a.model_steps:>14,} {_fmt_hours(a.hours('cpu')):>13} {_fmt_hours(a.hours('gpu')):>10}  {a.device}"
            )
        lines.append("-" * len(header))
        lines.append(
            f"{'total (shared populations once)':<69} {p.models:>9,} {'':>6} {p.model_steps:>14,} "
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
    gpu = tuple(a for a in p.audits if a.device == "gpu")
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


# --------------------------------------------------------------------------------------------------------------
# Calibration: time DP-SGD steps (per-sample gradients, clipping, noise, update) of one architecture.


def measure_step_seconds(
    model: str,
    *,
    device: str = "cpu",
    batch: int | None = None,
    steps: int = 5,
    population: int = 1,
    threads: int = 1,
    seed: int = 0,
) -> float:
    """Measured seconds per model-step of DP-SGD for ``model`` through the population engine.

    One step = :func:`hsaudit.train.run_population` with the ``auto`` backend of :mod:`hsaudit.psg` (per-sample
    gradients, clipping to norm 1, noise from a preallocated standard-normal tensor, SGD update) for
    ``population`` models at once; the time is divided by ``population``. The first step (warm-up) is not timed.
    ``hsaudit bench train --save-calibration`` measures the same thing beside Opacus and stores it.

    Raises:
        ValueError: bad model, device, or a non-positive count.
    """
    import torch

    from hsaudit import models as M
    from hsaudit.psg import population as engine_for
    from hsaudit.train import run_population

    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {device!r}")
    if min(steps, population, threads) < 1:
        raise ValueError(f"steps, population and threads must be >= 1, got {steps}, {population}, {threads}")
    model = _MODEL_ALIASES.get(model, model)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(seed)
    shape = tuple(32 if s is None else s for s in M.input_shape(model))
    batch = int(batch or (400 if model == "fcnn" else 128))
    engine = engine_for(model, {}, dev)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        theta0 = M.flat_parameters(M.build_model(model)).to(dev)
    theta = theta0[None].repeat(population, 1)
    x = torch.randn(batch, *shape, generator=gen).to(dev)
    y = torch.randint(0, M.num_classes(model), (batch,), generator=gen).to(dev)
    z = torch.randn(population, engine.p, generator=gen).to(dev)
    kw = dict(lr=0.01, batch_size=batch, clip=1.0, sigma=4.0, period=1, noise=lambda t: z)
    schedule = torch.arange(batch)[None].numpy()
    with torch.no_grad():
        theta = run_population(engine, theta, x, y, schedule, **kw)  # warm-up
        if dev.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run_population(engine, theta, x, y, schedule.repeat(steps, axis=0), **kw)
        if dev.type == "cuda":
            torch.cuda.synchronize()
    return (time.perf_counter() - start) / (steps * population)
