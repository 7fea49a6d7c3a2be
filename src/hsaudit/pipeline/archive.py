"""Archives of finished figures: the figure, its data, the intermediates it was made from, and provenance.

``snakemake results/archive/fig3.tar.gz`` (rule ``archive_figure``, workflow/rules/archive.smk) calls
:func:`build_archive`. The tarball has one top-level directory named after the figure::

    fig3/files/results/fig3.pdf, fig3.csv, ...   every existing output in the figure's DAG (intermediate
                                                scores and audit tables, logs, benchmarks), by its path
    fig3/jobs.json                              Snakemake's record of each of those outputs: rule, params,
                                                shell command, start/end time (.snakemake/metadata)
    fig3/config.resolved.yaml                   the config the run used (scale preset applied)
    fig3/provenance.json                        code version, git commit and dirty flag, target, time
    fig3/environment.txt, environment.json      pip freeze; interpreter and platform
    fig3/excluded.tsv                           files of the DAG left out (size or pattern) with their SHA-256
    fig3/MANIFEST.sha256                        SHA-256 of every other file (``sha256sum -c`` format)

The figure's DAG is walked by Snakemake itself (``snakemake --summary`` on the figure's PDF and CSV with the
same resolved config), so it follows whatever rules produce the figure. :func:`verify_archive` (``hsaudit
archive verify X.tar.gz``) recomputes every checksum.
"""

from __future__ import annotations

import base64
import csv
import fnmatch
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hsaudit.pipeline import provenance

MANIFEST = "MANIFEST.sha256"
_CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def dag_outputs(
    targets: Sequence[str], *, workdir: str | os.PathLike = ".", snakefile: str | os.PathLike | None = None,
    configfile: str | os.PathLike | None = None, timeout: float = 300,
) -> list[dict[str, str]]:
    """Outputs (and their logs) of every job in the DAG of ``targets``, from ``snakemake --summary``.

    Runs ``snakemake --nolock --summary`` in ``workdir`` (safe while another Snakemake holds the lock, e.g. the
    run that is executing the archive job). Returns the rows of the summary (``output_file``, ``rule``,
    ``log-file(s)``, ``status``, ...).

    Raises:
        RuntimeError: if Snakemake fails (its stderr is in the message).
    """
    # Targets first: --configfile takes several values and would swallow them.
    cmd = [sys.executable, "-m", "snakemake", *targets, "--nolock", "--summary"]
    if snakefile:
        cmd += ["--snakefile", str(snakefile)]
    if configfile:
        cmd += ["--configfile", str(configfile)]
    proc = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"snakemake --summary failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    start = next((i for i, ln in enumerate(lines) if ln.startswith("output_file\t")), None)
    if start is None:
        raise RuntimeError(f"snakemake --summary printed no table: {proc.stdout[-2000:]}")
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:])), delimiter="\t"))


def _metadata_record(workdir: Path, path: str) -> dict[str, Any] | None:
    """Snakemake's metadata record of output ``path`` (``.snakemake/metadata/<urlsafe base64 of path>``)."""
    name = base64.urlsafe_b64encode(path.encode()).decode()
    file = workdir / ".snakemake" / "metadata" / name
    if not file.is_file():
        return None
    try:
        return json.loads(file.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _expand(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.is_file())
    return [path] if path.is_file() else []


@dataclass(frozen=True)
class ArchiveSummary:
    """What :func:`build_archive` wrote: the archive path, included files and excluded ones."""

    path: Path
    files: tuple[str, ...]
    excluded: tuple[tuple[str, str, str], ...]


def build_archive(
    out: str | os.PathLike,
    *,
    name: str,
    files: Iterable[str | os.PathLike],
    config: Mapping[str, Any],
    jobs: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    workdir: str | os.PathLike = ".",
    max_file_mb: float = 200.0,
    exclude: Sequence[str] = (),
) -> ArchiveSummary:
    """Write ``out`` (a ``.tar.gz``) with ``files`` and the provenance of the run; atomically.

    Args:
        out: archive path (written to a temporary name, then renamed).
        name: top-level directory inside the archive (e.g. ``"fig3"``).
        files: paths relative to ``workdir`` (directories are expanded); missing ones are skipped.
        config: the resolved config (written as ``config.resolved.yaml``).
        jobs: per output path, Snakemake's record of the job that made it (``jobs.json``).
        extra: more facts for ``provenance.json`` (target, scale, ...).
        workdir: directory the paths are relative to.
        max_file_mb: files larger than this are listed in ``excluded.tsv`` with their SHA-256, not bundled.
        exclude: glob patterns (on the relative path) of files to list as excluded rather than bundle.

    Raises:
        ValueError: if ``name`` is empty or contains a slash, or ``max_file_mb`` is not positive.
    """
    import yaml

    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"archive name must be a plain directory name, got {name!r}")
    if not max_file_mb > 0:
        raise ValueError(f"max_file_mb must be > 0, got {max_file_mb}")
    workdir = Path(workdir)
    out = Path(out)
    out_rel = os.path.relpath(out.resolve(), workdir.resolve())
    chosen: dict[str, Path] = {}
    excluded: list[tuple[str, str, str]] = []
    for f in files:
        for path in _expand(workdir / f):
            rel = os.path.relpath(path, workdir)
            if rel.startswith("..") or rel == out_rel or rel in chosen:
                continue
            if any(fnmatch.fnmatch(rel, pat) for pat in exclude):
                excluded.append((rel, sha256_file(path), "pattern"))
            elif path.stat().st_size > max_file_mb * 1e6:
                excluded.append((rel, sha256_file(path), f"size>{max_file_mb:g}MB"))
            else:
                chosen[rel] = path
    meta: dict[str, bytes] = {
        "config.resolved.yaml": yaml.safe_dump(dict(config), sort_keys=False).encode(),
        "jobs.json": json.dumps(dict(jobs or {}), indent=2, sort_keys=True, default=str).encode(),
        "environment.txt": provenance.pip_freeze().encode(),
        "environment.json": json.dumps(provenance.environment(), indent=2).encode(),
        "provenance.json": json.dumps(
            {
                # The whole package's source hash; each job's own code version is in jobs.json (its params).
                "code_version": provenance.code_version(),
                "git": provenance.git_state(workdir),
                "package_dir": str(provenance.package_dir()),
                "package_git": provenance.git_state(provenance.package_dir()),
                "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **dict(extra or {}),
            },
            indent=2,
            default=str,
        ).encode(),
        "excluded.tsv": ("path\tsha256\treason\n" + "".join(f"{p}\t{h}\t{r}\n" for p, h, r in excluded)).encode(),
    }
    manifest_lines = [f"{hashlib.sha256(data).hexdigest()}  {arc}" for arc, data in sorted(meta.items())]
    manifest_lines += [f"{sha256_file(p)}  files/{rel}" for rel, p in sorted(chosen.items())]
    manifest = ("\n".join(sorted(manifest_lines, key=lambda ln: ln.split("  ", 1)[1])) + "\n").encode()

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{os.getpid()}")
    now = int(time.time())
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            for arc, data in sorted({**meta, MANIFEST: manifest}.items()):
                info = tarfile.TarInfo(f"{name}/{arc}")
                info.size, info.mtime, info.mode = len(data), now, 0o644
                tar.addfile(info, io.BytesIO(data))
            for rel, path in sorted(chosen.items()):
                info = tar.gettarinfo(str(path), arcname=f"{name}/files/{rel}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return ArchiveSummary(out, tuple(sorted(chosen)), tuple(excluded))


def archive_figure(
    out: str | os.PathLike,
    *,
    figure: str,
    targets: Sequence[str],
    config: Mapping[str, Any],
    workdir: str | os.PathLike = ".",
    snakefile: str | os.PathLike | None = None,
    max_file_mb: float = 200.0,
    exclude: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> ArchiveSummary:
    """Archive ``figure``: walk the DAG of ``targets`` (its PDF and CSV) and bundle every existing output.

    The DAG is computed with the same resolved ``config`` (written to a temporary config file), so a run made
    with ``--config scale=smoke`` archives the smoke-scale intermediates.
    """
    import tempfile

    import yaml

    workdir = Path(workdir)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
        yaml.safe_dump(dict(config), fh)
        cfg = fh.name
    try:
        rows = dag_outputs(targets, workdir=workdir, snakefile=snakefile, configfile=cfg)
    finally:
        os.unlink(cfg)
    files: list[str] = list(targets)
    jobs: dict[str, Any] = {}
    for row in rows:
        path = row.get("output_file", "")
        if not path or path == str(out):
            continue
        files.append(path)
        files.extend(x for x in (row.get("log-file(s)") or "").split(",") if x.strip())
        record = _metadata_record(workdir, path)
        if record is not None:
            jobs[path] = {k: record.get(k) for k in ("rule", "params", "shellcmd", "input", "log", "starttime",
                                                     "endtime", "external_jobid", "software_stack_hash")}
        else:
            jobs[path] = {"rule": row.get("rule")}
    facts = {"figure": figure, "targets": list(targets), "scale": config.get("scale"), **dict(extra or {})}
    return build_archive(out, name=Path(figure).name, files=[f.strip() for f in files], config=config, jobs=jobs,
                         extra=facts, workdir=workdir, max_file_mb=max_file_mb, exclude=exclude)


@dataclass(frozen=True)
class Verification:
    """Result of :func:`verify_archive`: ``ok`` and the problems found (empty when ok)."""

    ok: bool
    checked: int
    problems: tuple[str, ...]


def verify_archive(path: str | os.PathLike) -> Verification:
    """Recompute the SHA-256 of every file of an archive against its ``MANIFEST.sha256``.

    A problem is: a file whose checksum differs, a file listed but absent, a regular file present but not
    listed, or no manifest at all.

    Raises:
        FileNotFoundError: if ``path`` does not exist.
        ValueError: if it is not a readable tar.gz.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"archive {str(path)!r} not found")
    try:
        tar = tarfile.open(path, "r:gz")
    except (tarfile.TarError, OSError) as err:
        raise ValueError(f"{str(path)!r} is not a readable .tar.gz: {err}") from None
    problems: list[str] = []
    with tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        manifests = [m for m in members if m.name.endswith("/" + MANIFEST) and m.name.count("/") == 1]
        if len(manifests) != 1:
            return Verification(False, 0, (f"expected one <name>/{MANIFEST}, found {len(manifests)}",))
        root = manifests[0].name.split("/")[0]
        listed: dict[str, str] = {}
        for line in tar.extractfile(manifests[0]).read().decode().splitlines():
            if not line.strip():
                continue
            digest, _, rel = line.partition("  ")
            listed[f"{root}/{rel}"] = digest
        seen = set()
        for m in members:
            if m.name == manifests[0].name:
                continue
            seen.add(m.name)
            if m.name not in listed:
                problems.append(f"not in the manifest: {m.name}")
                continue
            digest = hashlib.sha256()
            fh = tar.extractfile(m)
            for block in iter(lambda: fh.read(_CHUNK), b""):
                digest.update(block)
            if digest.hexdigest() != listed[m.name]:
                problems.append(f"checksum mismatch: {m.name}")
        problems += [f"missing: {name}" for name in sorted(set(listed) - seen)]
    return Verification(not problems, len(seen), tuple(problems))
