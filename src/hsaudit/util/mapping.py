"""Values as keys: the short hash that names an audit, the deep merge of config overrides, and the points of a
figure's parameter grid."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from typing import Any


def key_of(params: Mapping[str, Any]) -> str:
    """A 12-hex-digit key of ``params`` (canonical JSON, SHA-256): equal parameters, equal keys.

    >>> key_of({"a": 1, "b": [1, 2]}) == key_of({"b": [1, 2], "a": 1})
    True
    >>> len(key_of({}))
    12
    """
    text = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``base`` with ``override`` merged in (mappings recursively, anything else replaced).

    >>> deep_merge({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}})
    {'a': {'x': 1, 'y': 3}, 'b': 1}
    """
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def grid_points(
    grid: Mapping[str, Any] | None, *, where: str, known: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The points of a figure's ``grid:`` (the Cartesian product of its lists, in order); ``[{}]`` without one.

    >>> grid_points({"lr": [0.1, 1.0], "batch": [8]}, known={"lr": 0, "batch": 0}, where="fig")
    [{'lr': 0.1, 'batch': 8}, {'lr': 1.0, 'batch': 8}]

    Raises:
        ValueError: a grid key that is not a value of ``known`` (when given), or one whose options are not a
            non-empty list (naming ``where``).
    """
    grid = dict(grid or {})
    for name, options in grid.items():
        if known is not None and name not in known:
            raise ValueError(f"{where}.grid: {name!r} is not a value of the section")
        if not isinstance(options, list) or not options:
            raise ValueError(f"{where}.grid.{name} must be a non-empty list, got {options!r}")
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())] if grid else [{}]
