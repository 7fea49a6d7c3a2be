"""JAX Privacy's Keras API under gradient accumulation (JAX Privacy PR #271, not in 2.0.0; docs/libraries.md,
Findings), where keras with the JAX backend and jax_privacy are installed (skipped elsewhere): the reproduction's
claimed ε, which DPKerasConfig accepts, is below hsaudit's lower figure for the mechanism it runs, and the Keras
row's claim is flagged by the accounting check before any training."""

from __future__ import annotations

import importlib.util
import os

import pytest

from conftest import REPO
from hsaudit.experiments.byo.audit import AuditOptions, accounting, accounting_bug, pre_training
from hsaudit.experiments.byo.plan import audit_setting
from hsaudit.experiments.byo.train.harness import load
from hsaudit.experiments.byo.values import Claim, Design

os.environ.setdefault("KERAS_BACKEND", "jax")
pytest.importorskip("jax_privacy")
keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("keras runs another backend in this process", allow_module_level=True)

FOLDER = REPO / "examples/libraries/jax_privacy"


def reproduction():
    spec = importlib.util.spec_from_file_location("finding_keras_accumulation", FOLDER / "finding_keras_accumulation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reproductions_accepted_epsilon_is_below_our_lower_figure_for_the_mechanism_it_runs():
    from jax_privacy import keras_api

    r = reproduction()
    config = keras_api.DPKerasConfig(epsilon=r.TARGET, delta=r.DELTA, clipping_norm=1.0, batch_size=r.BATCH,
                                     gradient_accumulation_steps=r.ACCUMULATION, train_steps=r.STEPS,
                                     train_size=r.N, noise_multiplier=r.SIGMA)  # accepted: no raise  # fmt: skip
    updates = r.STEPS // r.ACCUMULATION  # fit() counts Keras steps (#288): one update per ACCUMULATION of them
    claim = Claim(epsilon=r.TARGET, delta=r.DELTA, noise_multiplier=r.SIGMA, max_grad_norm=1.0, sampling="poisson",
                  steps=updates, neighbouring="add-remove", batch_size=config.effective_batch_size)  # fmt: skip
    ours = accounting(claim, r.N)
    assert accounting_bug(claim, ours) and r.TARGET < ours.lower
    assert ours.lower <= r.pld_epsilon(updates, config.effective_batch_size) <= ours.epsilon * 1.01


def test_the_keras_rows_claim_is_flagged_before_training():
    setting = audit_setting()
    design = Design(entry=f"{FOLDER}/keras_accumulation.py:make", canary="out_of_support", runs=2, setting=setting)
    loaded = load(design)
    claim = loaded.training.claim
    assert claim.steps == setting.steps and claim.sample_rate == 1.0
    early = pre_training(claim, loaded.n, AuditOptions(), runs=1000)
    assert early is not None and early.verdict == "violation" and "accounting" in early.reason
    assert claim.epsilon < accounting(claim, loaded.n).lower
