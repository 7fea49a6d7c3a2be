"""What a code version hashes of a Python file: its code, not its comments, docstrings or layout."""

from __future__ import annotations

import ast
from functools import lru_cache


class _DropDocstrings(ast.NodeTransformer):
    """Removes every statement that is a bare string (docstrings, attribute docstrings): they run no code."""

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                kept = [
                    stmt for stmt in body
                    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                            and isinstance(stmt.value.value, str))
                ]
                setattr(node, field, kept or [ast.Pass()])
        return node


@lru_cache(maxsize=4096)
def code_text(source: bytes) -> bytes:
    r"""What a code version hashes of a Python file: its code without comments, docstrings or layout
    (``ast.unparse`` of the syntax tree with bare-string statements removed), so that editing a docstring or a
    comment reruns nothing; the raw bytes when the file does not parse.

    >>> code_text(b"def f():\n    'Doc.'\n    return 1  # a comment\n") == code_text(b"def f():\n    return 1\n")
    True

    Memoised on the bytes themselves (content-addressed, so an edited file is a new key): a workflow's DAG asks
    for the same package files once per rule, and parsing them again each time cost ~10 s per `snakemake` call.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    return ast.unparse(_DropDocstrings().visit(tree)).encode()
