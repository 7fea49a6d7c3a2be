"""examples/byo/numpy_dpsgd.py with a planted bug: the training runs at σ/10 while the claim is the example's at σ
(the noise multiplier divided by ten behind the accountant's back)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from types import SimpleNamespace

_PATH = Path(__file__).resolve().parents[3] / "examples" / "byo" / "numpy_dpsgd.py"
_SPEC = importlib.util.spec_from_file_location("numpy_dpsgd_example", _PATH)
example = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(example)


def make(setting=None):
    honest = example.make(setting)
    if setting is None:
        return honest
    stated, example.epsilon = example.epsilon, lambda *_: honest.claim["epsilon"]  # skip the unused claim's PLD
    try:
        leaky = example.make(dataclasses.replace(setting, noise_multiplier=setting.noise_multiplier / 10))
    finally:
        example.epsilon = stated
    return SimpleNamespace(**{**vars(honest), "train": leaky.train})
