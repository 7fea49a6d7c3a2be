"""Provenance: which code, environment and commit produced a result.

Two uses:

- **Reruns.** Snakemake reruns a job when one of its ``params`` changes. Every rule that calls package code
  passes ``code_version=...`` as a param; :func:`code_version` makes that value change whenever the package
  source that the rule family uses changes (version + SHA-256 of the source files), so editing
  ``hsaudit/section6/exact.py`` reruns the Section 6 jobs but not the Housing training jobs, and a new release
  reruns everything. Computing it reads a few dozen small files (about a millisecond).
- **Archives.** :func:`git_state` and :func:`environment` record the commit (and whether the tree was dirty)
  and the installed packages (``pip freeze``) next to a figure (see :mod:`hsaudit.archive`).
"""

from __future__ import annotations

import ast
import hashlib
import platform
import subprocess
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from hsaudit import __version__

PACKAGE = "hsaudit"
_PACKAGE_DIR = Path(__file__).resolve().parent


def package_dir() -> Path:
    """Directory of the installed ``hsaudit`` package (the source tree for an editable install)."""
    return _PACKAGE_DIR


def _module_file(name: str, root: Path = _PACKAGE_DIR) -> Path | None:
    """File of the dotted module ``name`` (``hsaudit.x.y``) under ``root``, or None if it does not exist."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _module_name(path: Path, root: Path = _PACKAGE_DIR) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [PACKAGE, *rel.parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports_of(path: Path, root: Path = _PACKAGE_DIR) -> set[str]:
    """``hsaudit`` modules that ``path`` imports (absolute and relative, top level and inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            found.add(base)
            # `from hsaudit import audit` imports the module hsaudit.audit when there is one.
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def module_files(*modules: str, root: Path | None = None) -> list[Path]:
    """Source files that importing ``modules`` executes: their transitive ``hsaudit`` imports and parents.

    Args:
        *modules: dotted names (``"hsaudit.section6"``; the ``hsaudit.`` prefix may be left out). None: every
            ``.py`` file of the package.
        root: package directory (default: the installed package; tests pass a copy).

    Returns:
        Sorted paths.

    Raises:
        ValueError: if a module does not exist in the package.
    """
    root = Path(root) if root is not None else _PACKAGE_DIR
    if not modules:
        return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    todo = []
    for mod in modules:
        full = mod if mod.split(".")[0] == PACKAGE else f"{PACKAGE}.{mod}"
        if _module_file(full, root) is None:
            raise ValueError(f"module {mod!r} is not part of the {PACKAGE} package under {root}")
        todo.append(full)
    seen: set[Path] = set()
    while todo:
        name = todo.pop()
        parts = name.split(".")
        # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
        for i in range(1, len(parts) + 1):
            path = _module_file(".".join(parts[:i]), root)
            if path is not None and path not in seen:
                seen.add(path)
                todo.extend(_imports_of(path, root))
    return sorted(seen)


def source_hash(*modules: str, root: Path | None = None, length: int = 12) -> str:
    """SHA-256 (first ``length`` hex digits) of the files :func:`module_files` returns, names included."""
    root = Path(root) if root is not None else _PACKAGE_DIR
    digest = hashlib.sha256()
    for path in module_files(*modules, root=root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:length]


@lru_cache(maxsize=None)
def code_version(*modules: str) -> str:
    """``<package version>+<source hash>`` of the package code that ``modules`` use (all of it if none).

    Rules pass it as ``params: code_version=...`` so that a change of that code reruns their jobs (Snakemake's
    ``params`` rerun trigger). Cached per process: the workflow computes it once per rule family.

    >>> code_version("hsaudit.seeding").startswith(__import__("hsaudit").__version__ + "+")
    True
    """
    return f"{__version__}+{source_hash(*modules)}"


def git_state(path: str | Path = ".") -> dict[str, object]:
    """Commit, dirty flag and ``git describe`` of the repository containing ``path``.

    Returns ``{"commit": None, "dirty": None, "describe": None}`` outside a git checkout (e.g. an unpacked
    release tarball), never raises for that.
    """
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(path), *args], capture_output=True, text=True, timeout=30, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "describe": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "dirty": bool(status) if status is not None else None,
        "describe": git("describe", "--always", "--dirty", "--tags"),
    }


def pip_freeze() -> str:
    """``pip freeze`` of the running interpreter's environment (falls back to importlib.metadata)."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, timeout=120,
            check=True,
        )
        return out.stdout
    except (OSError, subprocess.SubprocessError):
        from importlib import metadata

        lines = {f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions() if d.metadata["Name"]}
        return "\n".join(sorted(lines, key=str.lower)) + "\n"


def environment() -> dict[str, object]:
    """Interpreter, platform and package versions (the pip freeze text is in :func:`pip_freeze`)."""
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "hsaudit": __version__,
        "code_version": code_version(),
    }

