"""The pilot that chooses an audit's design when its canary is ``auto`` (the default; docs/byo.md).

Each candidate of :data:`~hsaudit.experiments.byo.values.DESIGNS` is checked and its positive control trained
at the design's ``pilot_runs`` per world on streams of its own (:func:`pilot_design`); the candidate whose control
separates its worlds most (:func:`separation`) is the audit's design. Training-side (the harness only): the workflow's
check job runs it, so its code version is that of the trainings it decides.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from hsaudit.engine.canaries import canary_type
from hsaudit.experiments.byo.train.errors import UserCodeError
from hsaudit.experiments.byo.train.harness import Loaded, Prepared, load, prepare
from hsaudit.experiments.byo.train.parallel import train_block
from hsaudit.experiments.byo.values import DESIGNS, Design


def pilot_design(design: Design) -> Design:
    """The design the pilot trains its candidates from: ``design``'s ``pilot_runs`` per world, one shard, and a
    master seed of its own (``design.stream("pilot")``), from which every stream of the pilot derives (bits, model
    seeds, the canary's draw, θ0's ``init_seed``, the check's seeds), so that none is one of the audit's or its
    control's."""
    return replace(design, runs=int(design.pilot_runs), shards=1, seed=design.stream("pilot"))


def twin(design: Design, copies: int, noise_factor: float) -> Design:
    """The positive control of ``design`` planned as ``copies`` canary rows, or σ/``noise_factor`` (above 1)."""
    return design.control_noise(noise_factor) if noise_factor != 1.0 else design.control(copies)


def separation(table: Mapping[str, Any]) -> float:
    """A control's separation of its worlds as a GDP μ, either orientation: √2 Φ⁻¹(AUROC) of |AUROC − ½| + ½
    (``table``: columns ``score`` and ``member``)."""
    from scipy import special, stats

    s, m = np.asarray(table["score"], float), np.asarray(table["member"], bool)
    if m.all() or not m.any():
        return 0.0
    auc = stats.mannwhitneyu(s[m], s[~m]).statistic / (m.sum() * (~m).sum())
    return float(math.sqrt(2.0) * special.ndtri(min(0.5 + abs(auc - 0.5), 1.0 - 1e-9)))


def _in_process(prepared: Prepared) -> Callable[[], Mapping[str, Any]]:
    return lambda: train_block(prepared, 1, 0)


def choose(
    design: Design,
    control: Callable[[Design], Design],
    *,
    loaded: Loaded | None = None,
    start: Callable[[Prepared], Callable[[], Mapping[str, Any]]] = _in_process,
) -> tuple[Design, list[dict[str, Any]]]:
    """The candidate whose pilot control separates most, with the audit's own seed, runs and shards, and one row per
    candidate (canary, background, separation or error, models, seconds).

    The choice is a function of the pilot's models alone, which are independent of the audit's: conditional on it the
    audit's models are fresh draws of the chosen design, so the audit's bound holds at its level with no correction
    (and the audit's own control, trained afresh, measures its power without the winner's bias). A candidate the
    training cannot take (a loss without the canary's term fails or ignores it; regression targets for the
    worst-case dataset) is left out with the reason.

    Args:
        design: the audit's design (its canary and background are replaced).
        control: a candidate's positive control (:func:`twin` of the audit's planned control).
        loaded: the user's training loaded for ``design``, if done already.
        start: begins training a prepared design's models and returns the function that gives their scores
            (default: here, in one block, when called). Every candidate is started before the first one's scores
            are awaited, so that workers train a candidate while this process checks the next.

    Raises:
        ValueError: no candidate could be trained (the message says why for each).
        UserCodeError: the user's code raised on the last candidate, an input canary on the user's own data, which
            every training takes: a bug of the training, shown as the user's (its traceback), not a design's misfit.
    """
    rows: list[dict[str, Any]] = []
    failed: dict[int, Exception] = {}  # by row
    pilot = pilot_design(design)
    loaded = load(pilot) if loaded is None else loaded
    twins: dict[float, Loaded] = {}
    pending: list[tuple[dict[str, Any], Callable[[], Mapping[str, Any]]]] = []
    for canary, background in DESIGNS:
        start_s = time.perf_counter()
        candidate = replace(pilot, canary=canary, background=background)
        row: dict[str, Any] = dict(canary=canary, background=background, separation=None, models=0)
        rows.append(row)
        try:
            prepared = prepare(candidate, loaded)
            other = control(candidate)
            if other.noise_factor != 1.0 and other.noise_factor not in twins:
                twins[other.noise_factor] = load(other)  # make(setting) at σ/f, once for every candidate
            found = prepare(other, twins.get(other.noise_factor, loaded), found=prepared.probe, canary=prepared.canary)
            pending.append((row, start(found)))
            row["models"] = other.models
        except Exception as err:  # noqa: BLE001 — a design this training cannot take is left out, with why
            failed[len(rows) - 1] = _left_out(row, err)
        row["seconds"] = time.perf_counter() - start_s
    for row, scores in pending:
        start_s = time.perf_counter()
        try:
            row["separation"] = separation(scores())
        except Exception as err:  # noqa: BLE001 — as above, raised by its training
            failed[rows.index(row)] = _left_out(row, err)
        row["seconds"] += time.perf_counter() - start_s
    usable = [r for r in rows if r["separation"] is not None]
    last = failed.get(len(rows) - 1)
    if not usable and isinstance(last, UserCodeError) and rows[-1]["background"] == "data":
        raise last
    if not usable:
        raise ValueError("no design could be trained: " + "; ".join(f"{r['canary']}/{r['background']}: {r['error']}"
                                                                    for r in rows))  # fmt: skip
    best = max(usable, key=lambda r: r["separation"])
    return replace(design, canary=best["canary"], background=best["background"]), rows


def _left_out(row: dict[str, Any], err: Exception) -> Exception:
    """``row``: a candidate left out, with why; ``err``."""
    why = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    if isinstance(err, UserCodeError) and canary_type(row["canary"]).kind == "gradient":
        why = f"a gradient canary needs its term in your loss (docs/byo.md, 'The contract'); {why}"
    row.update(separation=None, models=0, error=why)
    return err


def pilot_details(design: Design, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a report records of how its design was chosen: the chosen design, each candidate with its pilot control's
    separation (a GDP μ) or why it was left out, and the pilot's cost; for a given design (no rows), that it was."""
    if not rows:
        return {"design": f"given: {design.canary} / {design.background}"}
    runs = max(r["models"] for r in rows) // 2
    return {
        "design": f"chosen by a pilot: {design.canary} / {design.background} (its control separated most)",
        "design candidates": "; ".join(
            f"{r['canary']}/{r['background']}: " + (f"μ {r['separation']:.3g}" if r["separation"] is not None
                                                   else f"left out ({r['error']})") for r in rows),  # fmt: skip
        "pilot cost": f"{sum(r['models'] for r in rows)} models ({runs} runs per world of each candidate's control, "
        f"streams of their own), {sum(r['seconds'] for r in rows):.1f} s",
    }
