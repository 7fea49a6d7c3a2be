"""Values as keys: the short hash that names an audit, and the deep merge of config overrides."""

from __future__ import annotations

import copy
import hashlib
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
