"""Helpers of the tests of hsaudit.experiments.byo: the zoo's entries by path (and the zoo on the import path)."""

from __future__ import annotations

import sys
from pathlib import Path

ZOO_DIR = Path(__file__).resolve().parent / "zoo"
if str(ZOO_DIR) not in sys.path:
    sys.path.insert(0, str(ZOO_DIR))


def zoo_entry(name: str) -> str:
    """The harness's entry string of a zoo training."""
    return f"{ZOO_DIR / 'entries.py'}:{name}"
