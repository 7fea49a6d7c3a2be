"""Which threshold rules give a valid lower bound, and the valid rule a table carries beside one that does not.

The trained-model tables of every paper report the paper's rule (not a valid bound) where they reproduce a printed
number, and beside it the estimate of a valid rule on the same scores (the config's ``audit.valid_mode``). Kept
apart from :mod:`hsaudit.audit.rules` so that the jobs which only audit under one rule do not change code version
with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hsaudit.audit.rules import RULES, ThresholdRule, parse_rule

__all__ = ["RULE_VALID", "rule_words", "valid_companion", "with_valid"]

R = TypeVar("R")

RULE_VALID: dict[str, bool] = {cls.name: bool(cls.valid) for cls in RULES}
"""Whether each rule, by the name the config spells it, gives a valid lower bound."""


def valid_companion(rule: ThresholdRule, valid_rule: ThresholdRule) -> ThresholdRule:
    """The valid rule whose estimate a table carries beside ``rule``'s: ``rule`` itself when it is valid, else
    ``valid_rule`` (built from the config's ``audit.valid_mode`` by the paper's plan).

    Raises:
        ValueError: ``valid_rule`` is not valid.
    """
    if rule.valid:
        return rule
    if not valid_rule.valid:
        raise ValueError(f"valid_mode {valid_rule.spec!r} is not a valid rule")
    return valid_rule


def with_valid(rule: ThresholdRule, valid_rule: ThresholdRule, estimate: Callable[[ThresholdRule], R]) -> tuple[R, R]:
    """``estimate(rule)`` and ``estimate(valid_rule)`` (the rule's :func:`valid_companion`), the second computed only
    when it is another rule than the first.

    >>> with_valid(parse_rule("crossing"), parse_rule("crossing"), lambda r: r.name)
    ('crossing', 'crossing')
    """
    result = estimate(rule)
    return result, (result if valid_rule is rule else estimate(valid_rule))


def rule_words(name: str, valid: bool | None = None) -> str:
    """How tables, legends and footers name a rule and its validity: ``"crossing rule (valid)"``, ``"paper rule (not a
    valid bound)"``. ``name``: a rule's name or spec (a result table's ``rule`` column); ``valid`` None: the rule's own.

    >>> rule_words("paper"), rule_words("crossing")
    ('paper rule (not a valid bound)', 'crossing rule (valid)')
    """
    if valid is None:
        valid = parse_rule(name).valid
    return f"{name} rule ({'valid' if valid else 'not a valid bound'})"
