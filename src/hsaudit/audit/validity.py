"""Which threshold rules give a valid lower bound, and the valid rule a table carries beside one that does not.

The trained-model tables of every paper report the paper's rule (not a valid bound) where they reproduce a printed
number, and beside it the estimate of a valid rule on the same scores (the config's ``audit.valid_mode``). Kept
apart from :mod:`hsaudit.audit.rules` so that the jobs which only audit under one rule do not change code version
with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hsaudit.audit.rules import DEFAULT_SELECTION_FRACTION, RULES, Seed, ThresholdRule, rule_from_mode

__all__ = ["RULE_VALID", "rule_words", "valid_companion", "with_valid"]

R = TypeVar("R")

RULE_VALID: dict[str, bool] = {cls.name: bool(cls.valid) for cls in RULES}
"""Whether each rule, by the name the config and the CSVs' ``mode`` columns spell it, gives a valid lower bound."""


def valid_companion(
    rule: ThresholdRule, valid_mode: str, *, selection_fraction: float = DEFAULT_SELECTION_FRACTION, seed: Seed = 0
) -> ThresholdRule:
    """The valid rule whose estimate a table carries beside ``rule``'s: ``rule`` itself when it is valid, else the
    rule of ``valid_mode`` (the config's ``audit.valid_mode``; :func:`~hsaudit.audit.rules.rule_from_mode` with
    these options).

    Raises:
        ValueError: ``valid_mode`` names a rule that is not valid (or no rule).
    """
    if rule.valid:
        return rule
    companion = rule_from_mode(valid_mode, selection_fraction=selection_fraction, seed=seed)
    if not companion.valid:
        raise ValueError(f"valid_mode {valid_mode!r} is not a valid rule")
    return companion


def with_valid(rule: ThresholdRule, valid_rule: ThresholdRule, estimate: Callable[[ThresholdRule], R]) -> tuple[R, R]:
    """``estimate(rule)`` and ``estimate(valid_rule)`` (the rule's :func:`valid_companion`), the second computed only
    when it is another rule than the first.

    >>> with_valid(rule_from_mode("crossing"), rule_from_mode("crossing"), lambda r: r.name)
    ('crossing', 'crossing')
    """
    result = estimate(rule)
    return result, (result if valid_rule is rule else estimate(valid_rule))


def rule_words(name: str, valid: bool | None = None) -> str:
    """How tables, legends and footers name a rule and its validity: ``"crossing rule (valid)"``, ``"paper rule (not a
    valid bound)"``. ``valid`` None: looked up in :data:`RULE_VALID` by ``name``.

    >>> rule_words("paper"), rule_words("crossing")
    ('paper rule (not a valid bound)', 'crossing rule (valid)')
    """
    if valid is None:
        valid = RULE_VALID[name]
    return f"{name} rule ({'valid' if valid else 'not a valid bound'})"
