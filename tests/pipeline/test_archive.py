"""Figure archives: manifest, verification, tampering, and `snakemake results/archive/fig3.tar.gz` end to end."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml

from conftest import copy_built, package_env, run_snakemake
from hsaudit.pipeline import provenance
from hsaudit.pipeline.archive import build_archive, sha256_file, verify_archive
from hsaudit.cli import main


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "results" / "scores").mkdir(parents=True)
    (work / "results" / "fig9.csv").write_text("step,epsilon\n1,0.5\n2,0.75\n")
    (work / "results" / "fig9.pdf").write_bytes(b"%PDF-1.4 not really\n")
    (work / "results" / "scores" / "a.csv").write_text("run,score\n0,1.5\n")
    (work / "results" / "scores" / "model.pt").write_bytes(b"\0" * 100)
    (work / "results" / "scores" / "big.bin").write_bytes(b"\1" * 3000)
    return work


def _build(tree: Path, out: Path, **kw):
    return build_archive(
        out,
        name="fig9",
        files=["results/fig9.pdf", "results/fig9.csv", "results/scores", "results/missing.csv"],
        config={"scale": "smoke", "seed": 1},
        jobs={"results/fig9.pdf": {"rule": "plot_fig9", "params": ["'smoke'"]}},
        extra={"figure": "fig9"},
        workdir=tree,
        **kw,
    )


def test_manifest_covers_every_file_and_verifies(tree, tmp_path):
    out = tmp_path / "fig9.tar.gz"
    summary = _build(tree, out, max_file_mb=0.002, exclude=["*.pt"])
    assert summary.files == ("results/fig9.csv", "results/fig9.pdf", "results/scores/a.csv")
    reasons = {p: r for p, _, r in summary.excluded}
    assert reasons == {"results/scores/model.pt": "pattern", "results/scores/big.bin": "size>0.002MB"}
    with tarfile.open(out) as tar:
        names = {m.name for m in tar.getmembers()}
        manifest = tar.extractfile("fig9/MANIFEST.sha256").read().decode()
        listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in manifest.splitlines()}
        # Every member but the manifest itself is listed, with its true SHA-256.
        assert {f"fig9/{k}" for k in listed} == names - {"fig9/MANIFEST.sha256"}
        for rel, digest in listed.items():
            assert hashlib.sha256(tar.extractfile(f"fig9/{rel}").read()).hexdigest() == digest
        excluded = tar.extractfile("fig9/excluded.tsv").read().decode()
        assert sha256_file(tree / "results/scores/big.bin") in excluded
        assert yaml.safe_load(tar.extractfile("fig9/config.resolved.yaml")) == {"scale": "smoke", "seed": 1}
        prov = json.load(tar.extractfile("fig9/provenance.json"))
        assert prov["code_version"] == provenance.code_version() and prov["figure"] == "fig9"
        assert "pytest" in tar.extractfile("fig9/environment.txt").read().decode().lower()
        assert json.load(tar.extractfile("fig9/jobs.json"))["results/fig9.pdf"]["rule"] == "plot_fig9"
    result = verify_archive(out)
    assert result.ok and result.checked == len(listed) and not result.problems


def test_manifest_is_sha256sum_compatible(tree, tmp_path):
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum not installed")
    out = tmp_path / "fig9.tar.gz"
    _build(tree, out)
    dest = tmp_path / "unpacked"
    with tarfile.open(out) as tar:
        tar.extractall(dest, filter="data")
    proc = subprocess.run(["sha256sum", "-c", "MANIFEST.sha256"], cwd=dest / "fig9", capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (dest / "fig9/files/results/fig9.csv").read_bytes() == (tree / "results/fig9.csv").read_bytes()


def _rewrite(src: Path, dst: Path, change) -> None:
    """Copy a tar.gz member by member, letting ``change(name, data)`` return new bytes (or None to drop it)."""
    with tarfile.open(src) as tin, tarfile.open(dst, "w:gz") as tout:
        for m in tin.getmembers():
            data = tin.extractfile(m).read()
            data = change(m.name, data)
            if data is None:
                continue
            m.size = len(data)
            tout.addfile(m, io.BytesIO(data))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda n, d: d.replace(b"0.75", b"0.76") if n.endswith("fig9.csv") else d, "checksum mismatch"),
        (lambda n, d: None if n.endswith("scores/a.csv") else d, "missing: fig9/files/results/scores/a.csv"),
        (lambda n, d: None if n.endswith("MANIFEST.sha256") else d, "expected one"),
    ],
    ids=["tampered", "missing", "no-manifest"],
)
def test_verify_detects_problems(tree, tmp_path, change, problem):
    good = tmp_path / "good.tar.gz"
    _build(tree, good)
    bad = tmp_path / "bad.tar.gz"
    _rewrite(good, bad, change)
    result = verify_archive(bad)
    assert not result.ok and any(problem in p for p in result.problems), result.problems


def test_verify_detects_unlisted_file(tree, tmp_path):
    good = tmp_path / "good.tar.gz"
    _build(tree, good)
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(good) as tin, tarfile.open(bad, "w:gz") as tout:
        for m in tin.getmembers():
            tout.addfile(m, tin.extractfile(m))
        info = tarfile.TarInfo("fig9/files/results/extra.csv")
        info.size = 3
        tout.addfile(info, io.BytesIO(b"x,y"))
    result = verify_archive(bad)
    assert not result.ok and result.problems == ("not in the manifest: fig9/files/results/extra.csv",)


def test_bad_arguments(tree, tmp_path):
    with pytest.raises(ValueError, match="plain directory name"):
        build_archive(tmp_path / "x.tar.gz", name="a/b", files=[], config={}, workdir=tree)
    with pytest.raises(ValueError, match="max_file_mb"):
        build_archive(tmp_path / "x.tar.gz", name="a", files=[], config={}, workdir=tree, max_file_mb=0)
    with pytest.raises(FileNotFoundError):
        verify_archive(tmp_path / "nope.tar.gz")
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tarball")
    with pytest.raises(ValueError, match="not a readable"):
        verify_archive(tmp_path / "junk.tar.gz")


def test_cli_verify_exit_codes(tree, tmp_path, capsys):
    good = tmp_path / "good.tar.gz"
    _build(tree, good)
    assert main(["archive", "verify", str(good)]) == 0
    assert "OK" in capsys.readouterr().out
    bad = tmp_path / "bad.tar.gz"
    _rewrite(good, bad, lambda n, d: d + b"\n" if n.endswith("fig9.pdf") else d)
    assert main(["archive", "verify", str(good), str(bad), "--json"]) == 1
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["ok"] for r in rows] == [True, False]
    assert main(["archive", "verify", str(tmp_path / "nope.tar.gz")]) == 2


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_workflow_archive_of_fig3(fig3_built, tmp_path, monkeypatch):
    """`snakemake results/archive/fig3.tar.gz` at smoke scale: verifies, and unpacks to the same figure data."""
    # A copy of the session's smoke build of fig3 (conftest.fig3_built), which imports the package from a frozen
    # copy: edits to the checkout meanwhile cannot change the code version.
    work = copy_built(fig3_built, tmp_path / "work")
    monkeypatch.setenv("PYTHONPATH", package_env(work)["PYTHONPATH"])
    run_snakemake(work, "results/archive/fig3.tar.gz", timeout=300)
    archive = work / "results" / "archive" / "fig3.tar.gz"
    assert verify_archive(archive).ok
    dest = tmp_path / "elsewhere"
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    root = dest / "fig3"
    for rel in ("results/fig3.csv", "results/fig3.pdf"):
        assert (root / "files" / rel).read_bytes() == (work / rel).read_bytes()
    bundled = {str(p.relative_to(root / "files")) for p in (root / "files").rglob("*") if p.is_file()}
    # The intermediates of the DAG: every audit table and the exact laws the figure was drawn from.
    audits = {str(p.relative_to(work)) for p in (work / "results" / "section6" / "audit").rglob("*.csv")}
    assert audits and audits <= bundled
    assert any(name.startswith("results/logs/") for name in bundled)
    config = yaml.safe_load((root / "config.resolved.yaml").read_text())
    assert config["scale"] == "smoke" and config["section6"]["runs_per_world"] == 2000
    jobs = json.loads((root / "jobs.json").read_text())
    assert jobs["results/fig3.pdf"]["rule"] == "plot_section6_fig3"
    prov = json.loads((root / "provenance.json").read_text())
    # The figure job ran with the code version of its script over the frozen copy, which jobs.json records.
    script = work / "workflow" / "scripts" / "plot_section6.py"
    frozen = provenance.script_version(script, root=work / "_pkg" / "hsaudit")
    assert frozen in json.dumps(jobs["results/fig3.pdf"]["params"])
    assert prov["archive_code_version"] == provenance.script_version(
        work / "workflow" / "scripts" / "archive_figure.py", root=work / "_pkg" / "hsaudit")
    assert prov["package_dir"] == str(work / "_pkg" / "hsaudit")
    # Unchanged inputs: the archive is up to date.
    assert "Nothing to be done" in run_snakemake(work, "-n", "results/archive/fig3.tar.gz").stdout
    # The self-contained HTML report of the figure, with its caption (workflow/report/).
    run_snakemake(work, "results/fig3.pdf", "--report", "results/report.html")
    html = (work / "results" / "report.html").read_text()
    assert re.search(r"data:application/pdf;[^,]*filename=fig3.pdf;base64,", html)
