"""The few-runs audit's real-size example (examples/byo/cifar_convnet.py) at a tiny size, and the price of a few-runs
audit (hsaudit.experiments.byo.price.price_few: ``hsaudit plan --few`` and ``--time-byo``)."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import asdict

import pytest
import torch
from torch.utils.data import TensorDataset

from byo_testing import zoo_entry
from conftest import REPO
from hsaudit.cli import main
from hsaudit.experiments.byo import price
from hsaudit.experiments.byo.plan import CHECK_TRAININGS, audit_setting, few_runs_cost
from hsaudit.experiments.byo.train.families import FewRunsSetting

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _example(monkeypatch, tmp_path):
    """The example module, reading its (synthetic) data under ``tmp_path``, with a scale of 12 images, 1 epoch."""
    monkeypatch.chdir(tmp_path)
    spec = importlib.util.spec_from_file_location("cifar_convnet", REPO / "examples" / "byo" / "cifar_convnet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(module.SCALES, "tiny", dict(images=12, epochs=1))
    return module


def test_the_convnet_example_trains_one_full_batch_of_setting_rows(monkeypatch, tmp_path):
    module = _example(monkeypatch, tmp_path)
    batches = []
    loader = module.DataLoader
    monkeypatch.setattr(module, "DataLoader", lambda data, batch_size: batches.append(batch_size) or loader(data, batch_size=batch_size))
    rows = 12 + 5  # the data and every canary a training of the audit can hold
    setting = FewRunsSetting(**asdict(audit_setting(steps=1)), rows=rows)
    made = module.make(setting, scale="tiny")
    x, y = made.dataset()
    assert tuple(x.shape) == (12, 3, 32, 32) and int(y.max()) < 10
    assert made.claim["steps"] == 1 and made.claim["sample_rate"] == 1.0
    data = TensorDataset(torch.cat([x, x[:3] * 10]), torch.cat([y, y[:3]]))  # 3 of the 5 canaries in
    model = made.train(data, 0, init_seed=1)
    assert batches == [rows]  # one batch of setting.rows: q = 1 with the canaries in, as the claim says
    assert tuple(model(x[:2]).shape) == (2, 10)
    start = module.convnet(10)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in start.parameters())


def test_the_convnet_example_own_configuration_is_the_papers():
    spec = importlib.util.spec_from_file_location("cifar_convnet", REPO / "examples" / "byo" / "cifar_convnet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (module.BATCH, module.NOISE, module.CLIP, module.LR) == (128, 4.0, 1.0, 0.01)  # Cebere et al., CIFAR-BASE
    assert module.SCALES["full"]["images"] == 50_000


def test_a_few_runs_audit_costs_the_check_then_k_trainings_twice():
    cost = few_runs_cost(3, 100, 2.0, rows=1000)
    assert (cost.check, cost.audit, cost.control) == (CHECK_TRAININGS, 3, 3)
    assert cost.seconds_check == 2.0 and cost.seconds_audit == pytest.approx(2.0 * 1050 / 1000)
    assert cost.seconds == pytest.approx(CHECK_TRAININGS * 2.0 + 6 * 2.1)
    alone = few_runs_cost(3, 100, 2.0, control=False, job_seconds=1.0)  # the check's one job, then one per training
    assert alone.control == 0 and alone.jobs == 1 + 3
    assert alone.seconds == pytest.approx((CHECK_TRAININGS + 3) * 2.0 + 4 * 1.0)
    assert alone.seconds_trainings == pytest.approx((CHECK_TRAININGS + 3) * 2.0)
    assert few_runs_cost(1, 100, 2.0, rows=1000, copies=3).seconds_control == pytest.approx(2.0 * 1150 / 1000)
    with pytest.raises(ValueError, match="M >= 2"):
        few_runs_cost(1, 1, 2.0)


def _json_out(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_plan_few_and_time_byo_price_a_few_runs_audit_alike(capsys, monkeypatch, tmp_path):
    """One function prices a few-runs audit (price.price_few): `plan --few ENTRY` and `plan --time-byo` of a
    `byo:` section with the same entry, M and K give the same trainings and seconds (a training and a job's work
    fixed here, so that the two timings agree), the control's copies and the data's rows included."""
    monkeypatch.setattr(price, "time_one_training", lambda loaded: 3.0)
    monkeypatch.setattr(price, "job_work_seconds", lambda load_seconds: 1.5)
    entry = zoo_entry("correct")
    assert main(["plan", "--few", entry, "--canaries", "50", "--trainings", "2", "--json"]) == 0
    few = _json_out(capsys)
    assert few["total_trainings"] == CHECK_TRAININGS + 4 and few["how"].startswith("timed here") and few["jobs"] == 5
    assert few["copies"] >= 2  # the user's configuration: the copies control, its rows priced
    assert few["total_seconds"] == pytest.approx(few_runs_cost(2, 50, 3.0, rows=few["rows"], copies=few["copies"],
                                                               job_seconds=1.5).seconds)  # fmt: skip
    (tmp_path / "o.yaml").write_text(f"byo:\n  mine:\n    entry: {entry}\n    canaries: 50\n    trainings: 2\n")
    monkeypatch.chdir(REPO)
    assert main(["plan", "results/byo/mine/report.md", "--configfile", "config/config.yaml", str(tmp_path / "o.yaml"),
                 "--time-byo", "4", "--json"]) == 0  # fmt: skip
    (row,) = _json_out(capsys)["audits"]
    assert row["timed_seconds"] == pytest.approx(few["total_seconds"]) and "timed here" in row["detail"]
    assert main(["plan", "--few", entry, "--canaries", "50", "--trainings", "2", "--seconds-per-training", "3",
                 "--json"]) == 0  # fmt: skip
    assert _json_out(capsys)["total_seconds"] == pytest.approx(few["total_seconds"])
    # a ceiling at or below the claim: nothing is trained, by either path
    assert main(["plan", "--few", entry, "--canaries", "2", "--trainings", "1", "--json"]) == 0
    early = _json_out(capsys)
    assert early["total_trainings"] == 0 and early["early"].startswith("inconclusive")
