"""Build every figure target at smoke scale and compare the tables they write (a refactoring's safety net).

    python scripts/target_csvs.py build OUT            # copy this checkout, build every target, keep its tables
    python scripts/target_csvs.py build --only OUT T.. # only the targets T (options before OUT)
    python scripts/target_csvs.py compare BEFORE AFTER # exact frame equality of every table, target by target

``build`` copies the tracked files of the checkout it runs in to ``OUT/work`` (untracked files too, so that an
uncommitted change is built), writes a synthetic Housing file there, and runs the default target of the workflow
(every CPU-sized figure) plus every GPU-sized target of the plans (:func:`gpu_sized`) at ``scale=smoke`` with synthetic CIFAR-10 images. The CSVs and
Markdown tables under ``results/`` (not logs, benchmarks or intermediates) are copied to ``OUT/tables``.
``compare`` reads each CSV of BEFORE with pandas and checks it equals AFTER's (same columns, same rows, same
values: ``DataFrame.equals``), ignoring the columns named with ``--ignore`` (e.g. a code version); Markdown tables
are compared as text. It exits 1 on a difference and lists each.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def gpu_sized() -> list[str]:
    """The targets every plan marks GPU-sized at smoke scale, built explicitly (rule all builds only the CPU-sized
    figures of the scale): read from the plans, so that a new paper's GPU targets are built without an edit here."""
    import yaml

    from hsaudit.pipeline.config import resolve_scale
    from hsaudit.pipeline.costs import experiment_plans

    config = {**yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), "scale": "smoke"}
    config = resolve_scale(config, explicit={"scale": "smoke"})
    return sorted({t.path for plan in experiment_plans(config).values() for t in plan.targets if t.kind == "gpu"})

OVERLAY = """\
housing:
  data:
    path: {housing}
cifar10:
  data:
    source: synthetic
    alexnet_weights: random
"""


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, check=True,
        capture_output=True, text=True,
    ).stdout.split()
    for name in files:
        src = ROOT / name
        if src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
        elif src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            (dest / name).symlink_to(src.readlink())


def build(out: Path, cores: int, extra: list[str], only: bool = False) -> int:
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import write_synthetic_csv  # the tests' synthetic Housing file

    work = out / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    _copy_checkout(work)
    write_synthetic_csv(work / "housing.csv")
    # A relative path: the data path is part of the Housing audit keys (and so of their seeds), so an absolute one
    # would make two builds in different directories disagree.
    (work / "smoke-overlay.yaml").write_text(OVERLAY.format(housing="housing.csv"))
    snakemake = Path(sys.executable).with_name("snakemake")
    targets = extra if only else ["all", *gpu_sized(), *extra]
    cmd = [str(snakemake), "--cores", str(cores), "--config", "scale=smoke", "--configfile",
           "config/config.yaml", "smoke-overlay.yaml", "--", *targets]
    print(" ".join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=work).returncode
    tables = out / "tables"
    if tables.exists():
        shutil.rmtree(tables)
    for path in sorted((work / "results").rglob("*")):
        rel = path.relative_to(work / "results")
        if rel.parts[0] in ("logs", "benchmarks", "archive") or path.suffix not in (".csv", ".md"):
            continue
        if path.name == "README.md":
            continue
        (tables / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, tables / rel)
    print(f"{sum(1 for _ in tables.rglob('*') if _.is_file())} tables in {tables} (snakemake exit {rc})")
    return rc


def compare(before: Path, after: Path, ignore: list[str]) -> int:
    before, after = (p / "tables" if (p / "tables").is_dir() else p for p in (before, after))
    names = sorted({p.relative_to(before) for p in before.rglob("*") if p.is_file()}
                   | {p.relative_to(after) for p in after.rglob("*") if p.is_file()})
    bad = []
    for rel in names:
        a, b = before / rel, after / rel
        if not a.exists() or not b.exists():
            bad.append(f"{rel}: only in {'after' if not a.exists() else 'before'}")
            continue
        if rel.suffix == ".md":
            if a.read_text() != b.read_text():
                bad.append(f"{rel}: text differs")
            continue
        fa, fb = pd.read_csv(a), pd.read_csv(b)
        fa, fb = (f.drop(columns=[c for c in ignore if c in f.columns]) for f in (fa, fb))
        if not fa.equals(fb):
            detail = "columns differ" if list(fa.columns) != list(fb.columns) else (
                "shape differs" if fa.shape != fb.shape else
                "values differ in " + ", ".join(c for c in fa.columns if not fa[c].equals(fb[c])))
            bad.append(f"{rel}: {detail}")
    print(f"{len(names)} tables compared, {len(bad)} differ")
    for line in bad:
        print("  " + line)
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("out", type=Path)
    b.add_argument("--cores", type=int, default=2)
    b.add_argument("--only", action="store_true", help="build only the targets named (not the default set)")
    b.add_argument("targets", nargs="*", help="more targets beyond the default set")
    c = sub.add_parser("compare")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    c.add_argument("--ignore", action="append", default=[], help="a column to leave out (repeatable)")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.out.resolve(), args.cores, args.targets, only=args.only)
    return compare(args.before, args.after, args.ignore)


if __name__ == "__main__":
    sys.exit(main())
