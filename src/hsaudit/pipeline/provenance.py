"""Provenance: which code, environment and commit produced a result.

Two uses:

- **Reruns.** Snakemake reruns a job when one of its ``params`` changes. Every rule that runs package code
  passes ``code_version=script_version(...)`` (``workflow/rules/common.smk``): a SHA-256 of its script and of
  exactly the package modules that script imports, transitively. Editing an estimator therefore reruns the audit
  and figure jobs that import it and never a training job; editing ``hsaudit/experiments/section6/exact.py``
  reruns Section 6 jobs only. ``tests/pipeline/test_provenance.py`` holds this for every rule family.

  What counts as "imported": a module named in an ``import`` or ``from … import`` (at top level or inside a
  function) and what it imports in turn. A parent package's ``__init__.py`` runs first on import, so its text is
  hashed, but the names it only re-exports are not followed: importing ``hsaudit.audit.gdp`` covers
  ``hsaudit/__init__.py``, ``hsaudit/audit/__init__.py`` and ``gdp.py`` with its own imports, not
  ``audit/pld.py``. Importing the package ``hsaudit.audit`` itself (``from hsaudit.audit import audit_scores``)
  does follow every module that ``audit/__init__.py`` imports.

  **Code, not text** [a decision]: what is hashed of each Python file is its code — the syntax tree without
  comments, docstrings or layout (:func:`hsaudit.util.source.code_text`) — so a docstring edit or a reflow reruns
  nothing, even in ``hsaudit/__init__.py``, whose code every job runs. (A new Python version could print the same
  tree differently and rerun everything once.)

  **The source alone decides** [a decision]: the package version is not part of a code version, so a release
  that changes no module a job runs reruns nothing, and a job reruns after an edit even when the version number
  stays the same. The version is still recorded in archives (:func:`environment`).
- **Archives.** :func:`git_state` and :func:`environment` record the commit (and whether the tree was dirty)
  and the installed packages (``pip freeze``) next to a figure (see :mod:`hsaudit.pipeline.archive`).
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from hsaudit import __version__
from hsaudit.util.source import code_text, import_statements

PACKAGE = "hsaudit"
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


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


def _imports_in(source: bytes, package: str, root: Path) -> set[str]:
    """``hsaudit`` modules that the Python source imports (absolute and relative, anywhere in the file).

    ``from a.b import c`` counts as importing the module ``a.b.c`` when there is one (then ``a.b`` is only its
    parent, which is hashed but not followed), else as importing ``a.b`` itself (``c`` is a name in it).
    """
    found: set[str] = set()
    for level, module, names in import_statements(source):
        if level < 0:  # import a.b, c
            found.update(name for name in names if name.split(".")[0] == PACKAGE)
            continue
        if level:
            anchor = package.split(".")
            anchor = anchor[: len(anchor) - (level - 1)]
            base = ".".join(anchor + ([module] if module else []))
        else:
            base = module
        if base.split(".")[0] != PACKAGE:
            continue
        for name in names:
            sub = f"{base}.{name}"
            found.add(sub if _module_file(sub, root) is not None else base)
    return found


def _imports_of(path: Path, root: Path = _PACKAGE_DIR) -> set[str]:
    """``hsaudit`` modules that the package file ``path`` imports (its statements parsed once per content:
    :func:`hsaudit.util.source.import_statements`)."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _imports_in(path.read_bytes(), package, root)


def _closure(names: set[str], root: Path) -> set[Path]:
    """Files of ``names`` and of everything they import, transitively, plus their parents' ``__init__.py``."""
    seen: set[Path] = set()
    followed: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in followed:
            continue
        followed.add(name)
        path = _module_file(name, root)
        if path is None:
            continue
        seen.add(path)
        todo.extend(_imports_of(path, root))
        parts = name.split(".")
        # Importing a.b.c runs a/__init__.py and a/b/__init__.py first: hashed, their re-exports not followed.
        for i in range(1, len(parts)):
            parent = _module_file(".".join(parts[:i]), root)
            if parent is not None:
                seen.add(parent)
    return seen


def _full_name(mod: str, root: Path) -> str:
    full = mod if mod.split(".")[0] == PACKAGE else f"{PACKAGE}.{mod}"
    if _module_file(full, root) is None:
        raise ValueError(f"module {mod!r} is not part of the {PACKAGE} package under {root}")
    return full


def module_files(*modules: str, root: Path | None = None) -> list[Path]:
    """Source files that importing ``modules`` runs: the modules, their transitive imports, their parents.

    Args:
        *modules: dotted names (``"hsaudit.experiments.section6"``; the ``hsaudit.`` prefix may be left out).
            None: every ``.py`` file of the package.
        root: package directory (default: the installed package; tests pass a copy).

    Returns:
        Sorted paths.

    Raises:
        ValueError: if a module does not exist in the package.
    """
    root = Path(root) if root is not None else _PACKAGE_DIR
    if not modules:
        return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(_closure({_full_name(mod, root) for mod in modules}, root))


def script_modules(script: str | Path, *, root: Path | None = None) -> list[str]:
    """The ``hsaudit`` modules that a workflow script (a file outside the package) imports directly."""
    root = Path(root) if root is not None else _PACKAGE_DIR
    found = _imports_in(Path(script).read_bytes(), "", root)
    return sorted(name for name in found if _module_file(name, root) is not None)


def _digest(files: list[Path], root: Path, *, extra: bytes = b"", length: int) -> str:
    digest = hashlib.sha256(extra)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(b"\0")
        digest.update(code_text(path.read_bytes()) if path.suffix == ".py" else path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:length]


def source_hash(*modules: str, root: Path | None = None, length: int = 12) -> str:
    """SHA-256 (first ``length`` hex digits) of the files :func:`module_files` returns, names included."""
    root = Path(root) if root is not None else _PACKAGE_DIR
    return _digest(module_files(*modules, root=root), root, length=length)


@lru_cache(maxsize=None)
def code_version(*modules: str) -> str:
    """Hash of the package code that ``modules`` run (all of the package if none): :func:`source_hash`.

    >>> len(code_version("hsaudit.util.seeding"))
    12
    """
    return source_hash(*modules)


def script_files(script: str | Path, *, root: Path | None = None) -> list[Path]:
    """The package files behind a workflow script: :func:`module_files` of :func:`script_modules`."""
    root = Path(root) if root is not None else _PACKAGE_DIR
    names = script_modules(script, root=root)
    return sorted(_closure(set(names), root)) if names else []


def script_version(script: str | Path, *, root: Path | None = None, length: int = 12) -> str:
    """Code version of a job: SHA-256 of its script's text and of exactly the package code the script imports.

    Rules pass it as ``params: code_version=...``; Snakemake's ``params`` rerun trigger then reruns the job
    after an edit of any of those files and of nothing else.
    """
    root = Path(root) if root is not None else _PACKAGE_DIR
    script = Path(script)
    return _digest(script_files(script, root=root), root, extra=code_text(script.read_bytes()) + b"\0", length=length)


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

