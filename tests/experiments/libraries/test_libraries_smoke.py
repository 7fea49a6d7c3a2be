"""The libraries table at tiny R, the suite's fast version of results/libraries/report.md (the workflow's is
test_libraries_workflow.py, slow): the default Opacus configuration and the planted σ/10 control audited by byo
(:func:`hsaudit.experiments.byo.api.audit_training`, what byo's rules run shard by shard), their reports turned into
the table, its figure and its report by the study's own functions; the control must be flagged."""

from __future__ import annotations

import pandas as pd
import pytest

from hsaudit.experiments.libraries.audit import COLUMNS, markdown, training_seconds
from hsaudit.experiments.libraries.figures import FIGURES
from hsaudit.experiments.libraries.plan import plan
from libraries_rows import AUDIT, audit_rows

ROWS = {
    "hooks": {"library": "opacus", "configuration": "defaults", "entry": "examples/libraries/opacus/hooks.py:make"},
    "noise": {"library": "opacus", "configuration": "σ/10", "planted": True,
              "entry": "examples/libraries/opacus/control_noise_tenth.py:make"},
}  # fmt: skip


@pytest.fixture
def one_thread():
    """One torch thread, as byo's jobs train (threads: 1): tiny models on a busy machine train many times slower
    with more."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_the_table_builds_at_tiny_r_and_flags_its_control(tmp_path, monkeypatch, one_thread):
    from conftest import REPO

    monkeypatch.chdir(REPO)
    libs = plan({"seed": 3, "libraries": {"audit": AUDIT, "rows": ROWS, "not_run": {"jax-privacy": "why"}}})
    frame = audit_rows(libs)
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 2
    noise = frame.set_index("row").loc["noise"]
    assert noise["verdict"] == "violation" and noise["expected"] == "control flagged"
    hooks = frame.set_index("row").loc["hooks"]
    assert hooks["verdict"] in ("consistent", "inconclusive") and hooks["power_probability"] is not None
    assert (frame["version"] == __import__("opacus").__version__).all() and (frame["seconds"] > 0).all()
    facts = {"scale": "test", **libs.facts, "code_version": "x"}
    FIGURES["table"](frame, pdf=str(tmp_path / "fig.pdf"), csv=str(tmp_path / "fig.csv"), facts=facts)
    assert (tmp_path / "fig.pdf").stat().st_size > 0 and len(pd.read_csv(tmp_path / "fig.csv")) == 2
    text = markdown(frame, not_run=libs.not_run, facts=facts, figure="fig.pdf")
    assert "1 of 1 planted bugs flagged" in text and "jax-privacy: why" in text
    assert f"| {hooks['configuration']} | {hooks['runs_out']:.0f} | " in text  # each row's R


def test_training_seconds_sums_the_shards():
    shard = pd.DataFrame({"train_seconds": [1.0, 2.0], "harness_seconds": [0.5, 0.25]})
    assert training_seconds([shard, shard]) == 7.5 and training_seconds([]) is None
