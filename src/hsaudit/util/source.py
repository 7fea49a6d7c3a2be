"""What a code version hashes of a Python file: its code, not its comments, docstrings or layout."""

from __future__ import annotations

import ast
import hashlib
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path


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


def cache_dir() -> Path | None:
    """Where :func:`code_text` keeps its results between processes: ``$HSAUDIT_CODE_CACHE``, else
    ``$XDG_CACHE_HOME/hsaudit/code-text`` (``~/.cache/...``); None (no disk cache) when ``HSAUDIT_CODE_CACHE`` is
    empty."""
    env = os.environ.get("HSAUDIT_CODE_CACHE")
    if env is not None:
        return Path(env) if env else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hsaudit" / "code-text"


def _cache_file(source: bytes, kind: bytes = b"") -> Path | None:
    root = cache_dir()
    if root is None:
        return None
    # Keyed by what is computed, the bytes and the interpreter's minor version (ast.unparse's output may change
    # between versions).
    key = hashlib.sha256(kind + b"%d.%d\0" % sys.version_info[:2] + source).hexdigest()
    return root / key[:2] / key


def _read_cached(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def _write_cached(path: Path | None, text: bytes) -> None:
    """Atomically (a temporary file renamed into place), so that concurrent jobs never read half a file; a cache
    that cannot be written is skipped."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass


@lru_cache(maxsize=4096)
def code_text(source: bytes) -> bytes:
    r"""What a code version hashes of a Python file: its code without comments, docstrings or layout
    (``ast.unparse`` of the syntax tree with bare-string statements removed), so that editing a docstring or a
    comment reruns nothing; the raw bytes when the file does not parse.

    >>> code_text(b"def f():\n    'Doc.'\n    return 1  # a comment\n") == code_text(b"def f():\n    return 1\n")
    True

    Memoised on the bytes themselves (content-addressed, so an edited file is a new key), in the process and on
    disk (:func:`cache_dir`): a workflow's DAG asks for the same package files once per rule, and every Snakemake
    call (every SLURM job step too) would otherwise parse them all again.
    """
    cached = _cache_file(source)
    text = _read_cached(cached)
    if text is not None:
        return text
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return source
    text = ast.unparse(_DropDocstrings().visit(tree)).encode()
    _write_cached(cached, text)
    return text


@lru_cache(maxsize=4096)
def import_statements(source: bytes) -> tuple[tuple[int, str, tuple[str, ...]], ...]:
    r"""Every import statement of a Python file, anywhere in it (outer blocks first): ``(level, module, names)`` —
    ``import a.b, c`` is ``(-1, "", ("a.b", "c"))``, ``from ..a import b`` is ``(2, "a", ("b",))``; ``()`` when the
    file does not parse.

    >>> import_statements(b"import os\nfrom . import x\ndef f():\n    from a.b import c, d\n")
    ((-1, '', ('os',)), (1, '', ('x',)), (0, 'a.b', ('c', 'd')))

    Memoised like :func:`code_text` (in the process and on disk, keyed by the bytes): code versions follow every
    job's imports through the package, and parsing the same files in every Snakemake call is what costs.
    """
    import json

    cached = _cache_file(source, b"imports\0")
    text = _read_cached(cached)
    if text is not None:
        return tuple((level, module, tuple(names)) for level, module, names in json.loads(text))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.append((-1, "", tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
    _write_cached(cached, json.dumps(found).encode())
    return tuple(found)
