"""The default design is the one with the most measured power (canary auto): a pilot of each candidate's positive
control on streams of its own, the choice named in the report with the candidates and the pilot's cost; a given
canary or background pins the design."""

from __future__ import annotations

import json
from pathlib import Path
from dataclasses import replace

import pytest

from hsaudit.cli import main
from hsaudit.experiments.byo import api
from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.values import AUTO, DESIGNS, PINNED, Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")

GAUSS = "tests/experiments/byo/gauss_entry.py"


def _streams(design: Design) -> set[int]:
    """Every seed a design's models and canary draw from: the model seeds, the bits' and the canary's master seed,
    θ0's init_seed, the determinism check's seeds, the background's and the replaced rows' draws."""
    keys = [("canary", design.canary), ("init",), ("check", 0), ("check", 1), ("background",), ("replaced",)]
    return {design.model_seed(i) for i in range(design.models)} | {design.stream(*k) for k in keys} | {design.seed}


def test_the_default_design_is_chosen_by_a_pilot_the_report_names(monkeypatch):
    """audit_training of a design left at its default pilots every candidate, trains none of the pilot's models on
    the audit's or its control's streams, and the report names the chosen design, each candidate's separation and
    the pilot's cost; the audit then trains the chosen design on its own seed."""
    trained: list[Design] = []
    start_all = api.start_all
    monkeypatch.setattr(api, "start_all", lambda prepared, **kw: trained.append(prepared.design) or
                        start_all(prepared, **kw))  # fmt: skip
    design = Design(entry=f"{GAUSS}:make", runs=20, seed=4, setting=audit_setting(), pilot_runs=15)
    assert design.chosen and (design.canary, design.background) == (AUTO, AUTO)
    result = api.audit_training(design, AuditOptions(bootstrap=0, power_resamples=20))
    details = result.report.details
    assert [(r["canary"], r["background"]) for r in result.pilot] == list(DESIGNS)
    best = max((r for r in result.pilot if r["separation"] is not None), key=lambda r: r["separation"])
    assert (details["canary"], details["background"]) == (best["canary"], best["background"])
    assert details["design"].startswith(f"chosen by a pilot: {best['canary']} / {best['background']}")
    for r in result.pilot:
        assert f"{r['canary']}/{r['background']}: " in details["design candidates"]
    models = sum(r["models"] for r in result.pilot)
    assert models == len(DESIGNS) * 2 * design.pilot_runs and details["pilot cost"].startswith(f"{models} models")
    pilots, audit = trained[: len(DESIGNS)], trained[len(DESIGNS) :]
    chosen = replace(design, canary=best["canary"], background=best["background"])
    assert audit[0] == chosen and all(p.seed == api.pilot_design(design).seed != design.seed for p in pilots)
    assert not set().union(*map(_streams, pilots)) & set().union(*map(_streams, audit))


def test_the_pilots_streams_are_none_of_the_audits():
    """Every seed of every candidate's pilot control (models, bits, canary, θ0, check, background) differs from every
    seed of the audit and of its control (k copies, or σ/f in the audit setting), for each candidate."""
    for setting in (None, audit_setting()):
        design = Design(entry="m.py:make", runs=60, seed=11, pilot_runs=60, setting=setting)
        pilot = api.pilot_design(design)
        assert pilot.runs == design.pilot_runs and pilot.seed == design.stream("pilot") != design.seed
        for canary, background in DESIGNS:
            ours, theirs = (replace(d, canary=canary, background=background) for d in (design, pilot))
            twin = (lambda d: d.control(3)) if setting is None else (lambda d: d.control_noise(1.5))
            assert not (_streams(ours) | _streams(twin(ours))) & (_streams(theirs) | _streams(twin(theirs)))


def test_a_given_canary_or_background_pins_the_design(tmp_path, capsys, monkeypatch):
    """--canary or --background pins the design (no pilot); --design auto beside one, or a chosen design in a
    sharded audit, is a one-line error."""
    assert (Design(entry="m.py:make", runs=2, canary="dirac").background, Design(entry="m.py:make", runs=2,
            background="blank").canary) == (PINNED[1], PINNED[0])  # fmt: skip
    common = ["audit-training", "--entry", f"{GAUSS}:make", "--audit-setting", "--runs", "30", "--out", str(tmp_path),
              "--json"]  # fmt: skip
    assert main([*common, "--design", "auto", "--canary", "dirac"]) == 2
    assert "leave out --canary" in capsys.readouterr().err
    assert main([*common, "--shard", "1/2"]) == 2 and "sharded audit" in capsys.readouterr().err
    monkeypatch.setattr(api, "choose_design", lambda *a, **k: pytest.fail("a given design was piloted"))
    assert main([*common, "--background", "copies", "--no-control", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["epsilon_hat"] is not None  # trained
    assert report["details"]["design"] == f"given: {PINNED[0]} / copies" and "pilot cost" not in report["details"]


def test_one_set_of_workers_trains_the_pilot_the_audit_and_its_control(monkeypatch):
    """audit_training with the default jobs (one per core, here 2: the check says the training is long enough)
    starts its worker processes once (here threads stand in for them): the pilot's candidates, the audit and its
    control share them, so a worker's start is paid once per audit; the server that forks them is started as soon
    as the pilot's first check says the audit will train in workers."""
    import concurrent.futures

    started: list[int] = []

    class Threads(concurrent.futures.ThreadPoolExecutor):
        def __init__(self, max_workers: int, mp_context: object = None) -> None:
            started.append(max_workers)
            super().__init__(max_workers)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Threads)
    warmed: list[str] = []
    monkeypatch.setattr(api, "warm", warmed.append)  # (no server: threads fork nothing)
    monkeypatch.setattr(api, "PARALLEL_MIN_SECONDS", 0.0)
    monkeypatch.setattr(api.os, "cpu_count", lambda: 2)
    design = Design(entry=f"{GAUSS}:make", runs=20, seed=4, setting=audit_setting(), pilot_runs=15)
    result = api.audit_training(design, AuditOptions(bootstrap=0, power_resamples=20), jobs=None)
    assert started == [2] and result.control is not None and len(result.pilot) == len(DESIGNS)
    assert warmed and set(warmed) == {design.entry}


def test_the_pilot_queues_every_candidate_before_awaiting_one_and_leaves_out_one_whose_training_fails():
    """choose() starts every candidate's training before it awaits the first's scores (workers train a candidate
    while this process checks the next); a candidate whose training raises when awaited is left out with why, the
    others are kept."""
    from hsaudit.experiments.byo.train.pilot import choose
    from hsaudit.experiments.byo.train.parallel import train_block

    events: list[tuple[str, str]] = []

    def start(prepared):
        name = f"{prepared.design.canary}/{prepared.design.background}"
        events.append(("start", name))

        def wait():
            events.append(("wait", name))
            if name == events[0][1]:
                raise RuntimeError("boom")
            return train_block(prepared, 1, 0)

        return wait

    design = Design(entry=f"{GAUSS}:make", runs=20, seed=4, setting=audit_setting(), pilot_runs=15)
    chosen, rows = choose(design, lambda c: c.control_noise(1.5), start=start)
    started = [name for kind, name in events if kind == "start"]
    assert len(started) >= 2 and [kind for kind, _ in events] == ["start"] * len(started) + ["wait"] * len(started)
    failed = next(r for r in rows if f"{r['canary']}/{r['background']}" == started[0])
    assert failed["separation"] is None and failed["error"] == "RuntimeError: boom" and failed["models"] == 0
    kept = [r for r in rows if f"{r['canary']}/{r['background']}" in started[1:]]
    assert kept and all(r["separation"] is not None and r["models"] > 0 for r in kept)
    assert f"{chosen.canary}/{chosen.background}" in started[1:]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_violation_trains_no_control_in_this_process_and_drops_the_queued_one_in_workers(monkeypatch, tmp_path, jobs):
    """In workers (threads stand in), the control is queued behind the audit's models before their scores are
    awaited, and the server that forks the workers is started at the audit's start; in one process it is started
    only when the verdict asks for it. A violation (no noise at all) reports no control either way."""
    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor",
                        lambda max_workers, mp_context=None: concurrent.futures.ThreadPoolExecutor(max_workers))
    warmed: list[str] = []
    monkeypatch.setattr(api, "warm", warmed.append)
    events: list[str] = []
    start_all = api.start_all

    def logged(prepared, **kw):
        part = "control" if prepared.design.noise_factor != 1.0 else "audit"
        events.append(f"start {part}")
        wait = start_all(prepared, **kw)
        return lambda: events.append(f"wait {part}") or wait()

    monkeypatch.setattr(api, "start_all", logged)
    entry = tmp_path / "silent.py"
    entry.write_text("import importlib.util\n"
                     f"spec = importlib.util.spec_from_file_location('gauss_copy', {str(Path(GAUSS).resolve())!r})\n"
                     "gauss = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(gauss)\n\n\n"
                     "def make(setting=None):\n    return gauss.make(setting, noise_scale=0.0)\n")  # fmt: skip
    design = Design(entry=f"{entry}:make", canary="out_of_support", background="data", runs=20, seed=4,
                    setting=audit_setting())  # fmt: skip
    result = api.audit_training(design, AuditOptions(bootstrap=0, power_resamples=20), jobs=jobs)
    assert result.report.verdict == "violation" and result.control is None
    if jobs == 1:
        assert events == ["start audit", "wait audit"] and warmed == []
    else:
        assert events == ["start audit", "start control", "wait audit"] and warmed == [str(entry) + ":make"]
