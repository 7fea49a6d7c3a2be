"""Shared helpers of the tests of hsaudit.experiments.byo: the zoo's entries by path, small designs, one thread."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ZOO_DIR = Path(__file__).resolve().parent / "zoo"
sys.path.insert(0, str(ZOO_DIR))


def zoo_entry(name: str) -> str:
    """The harness's entry string of a zoo training."""
    return f"{ZOO_DIR / 'entries.py'}:{name}"


@pytest.fixture(autouse=True)
def one_thread():
    """Small models train fastest on one thread (and the machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
