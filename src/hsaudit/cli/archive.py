"""``hsaudit archive verify X.tar.gz``: check a figure archive against its SHA-256 manifest.

Archives are made by the workflow (``snakemake results/archive/fig3.tar.gz``, see :mod:`hsaudit.pipeline.archive`).
Exit status 0 when every checksum matches, 1 when a file is changed, missing or unlisted.
"""

from __future__ import annotations

import json


def register(sub) -> None:
    parser = sub.add_parser("archive", description="Check a figure archive (results/archive/*.tar.gz).")
    inner = parser.add_subparsers(dest="archive_command", metavar="ACTION")
    inner.required = True
    verify = inner.add_parser("verify", help="recompute every SHA-256 of an archive against its MANIFEST.sha256")
    verify.add_argument("archives", nargs="+", help="archive(s) to check")
    verify.add_argument("--json", action="store_true", help="print JSON")
    verify.set_defaults(func=_verify)


def _verify(args) -> int:
    from hsaudit.pipeline.archive import verify_archive

    status = 0
    for path in args.archives:
        result = verify_archive(path)
        if args.json:
            print(json.dumps({"archive": path, "ok": result.ok, "checked": result.checked,
                              "problems": list(result.problems)}))
        elif result.ok:
            print(f"{path}: OK ({result.checked} files match MANIFEST.sha256)")
        else:
            print(f"{path}: FAILED")
            for problem in result.problems:
                print(f"  {problem}")
        status = status or (0 if result.ok else 1)
    return status
