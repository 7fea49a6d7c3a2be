"""Tests of the CLI commands audit, bound, validate-audit and bench audit (in-process and one subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hsaudit.audit import Crossing, Paper, audit_scores
from hsaudit.cli import main
from hsaudit.audit.validation import gaussian_pair_scores

AUDIT_KEYS = (
    "epsilon mu threshold fpr_upper fnr_upper epsilon_assumption_free n_members n_nonmembers confidence delta "
    "threshold_rule"
).split()


@pytest.fixture
def scores_csv(tmp_path: Path) -> Path:
    s, m = gaussian_pair_scores(mu=2.0, runs=400, seed=1)
    path = tmp_path / "scores.csv"
    lines = ["run,score,member"] + [f"{i},{float(x)!r},{int(b)}" for i, (x, b) in enumerate(zip(s, m))]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_audit_json(capsys, scores_csv):
    rc, out, err = _run(capsys, "audit", str(scores_csv), "--delta", "1e-5", "--confidence", "0.95", "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    for key in AUDIT_KEYS:
        assert key in got
    s, m = gaussian_pair_scores(mu=2.0, runs=400, seed=1)
    assert got["epsilon"] == pytest.approx(audit_scores(s, m, rule=Crossing()).epsilon, rel=1e-12)
    assert got["n_members"] == 200


def test_audit_default_rule_is_valid_and_paper_is_labelled(capsys, scores_csv):
    """Without --mode a user gets the crossing rule, a valid bound; --mode paper stays a choice, labelled not
    valid, and reproduces the paper rule's number."""
    rc, out, _ = _run(capsys, "audit", str(scores_csv), "--json")
    got = json.loads(out)
    assert rc == 0 and got["threshold_rule"] == "crossing" and got["rule_valid"] is True
    assert "rule" not in got and "mode" not in got  # one key names the rule
    assert got["seed"] is None and got["selection_fraction"] is None and got["calibration_draws"] is None
    rc, out, _ = _run(capsys, "audit", str(scores_csv), "--mode", "paper", "--json")
    paper = json.loads(out)
    assert rc == 0 and paper["threshold_rule"] == "paper" and paper["rule_valid"] is False
    assert "not a valid" in paper["rule_description"]
    s, m = gaussian_pair_scores(mu=2.0, runs=400, seed=1)
    assert paper["epsilon"] == pytest.approx(audit_scores(s, m, rule=Paper()).epsilon, rel=1e-12)


@pytest.mark.parametrize("mode", ["held-out", "grid"])
def test_audit_valid_modes_and_seed(capsys, scores_csv, mode):
    rc, out, _ = _run(capsys, "audit", str(scores_csv), "--mode", mode, "--seed", "3", "--json")
    assert rc == 0
    got = json.loads(out)
    assert got["threshold_rule"] == mode and got["seed"] == 3
    assert got["n_members"] == 100 and got["selection_fraction"] == 0.5
    rc, out2, _ = _run(capsys, "audit", str(scores_csv), "--mode", mode, "--seed", "3", "--json")
    assert json.loads(out2) == got


def test_audit_human_summary(capsys, scores_csv):
    rc, out, _ = _run(capsys, "audit", str(scores_csv))
    assert rc == 0
    assert "epsilon" in out and "crossing" in out and "valid for any scores" in out
    rc, out, _ = _run(capsys, "audit", str(scores_csv), "--mode", "paper")
    assert rc == 0
    assert "epsilon" in out and "paper" in out and "not a valid" in out


def _write(tmp_path, text, name="bad.csv"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    "content,extra,match",
    [
        ("score,label\n1,0\n2,1\n", [], "lacks column(s) member"),
        ("member\n0\n1\n", [], "lacks column(s) score"),
        ("score,member\n1,0\n2,2\n", [], "0/1"),
        ("score,member\n1,yes\n2,1\n", [], "0/1"),
        ("score,member\n1,1\n2,1\n", [], "non-members"),
        ("score,member\n1,0\n,1\n3,1\n", [], "missing/NaN"),
        ("score,member\n1,0\nnan,1\n3,1\n", [], "missing/NaN"),
        ("score,member\n1,0\nabc,1\n3,1\n", [], "non-numeric"),
        ("score,member\n", [], "no rows"),
        ("", [], "empty"),
        ("score,member\n1,0\n2,1\n", ["--delta", "0"], "delta must be in (0, 1)"),
        ("score,member\n1,0\n2,1\n", ["--delta", "1.5"], "delta must be in (0, 1)"),
        ("score,member\n1,0\n2,1\n", ["--confidence", "1"], "confidence must be in (0, 1)"),
        ("score,member\n1,0\n2,1\n", ["--mode", "held-out"], "at least 2"),
    ],
)
def test_audit_bad_input_one_line_error(capsys, tmp_path, content, extra, match):
    rc, out, err = _run(capsys, "audit", _write(tmp_path, content), *extra)
    assert rc != 0
    assert match in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_audit_missing_file(capsys, tmp_path):
    rc, _, err = _run(capsys, "audit", str(tmp_path / "nope.csv"))
    assert rc != 0 and "nope.csv" in err and len(err.strip().splitlines()) == 1


def test_audit_subprocess_no_traceback(tmp_path):
    """The installed entry point: a bad file gives exit 2 and one line on stderr."""
    bad = _write(tmp_path, "score,member\n1,0\n2,7\n")
    proc = subprocess.run([sys.executable, "-m", "hsaudit", "audit", bad], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "0/1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_bound_spec_value(capsys):
    """Spec §1: σ = 4, T = 250, δ = 1e−5 → 24.00 by both the PLD and the closed form."""
    rc, out, _ = _run(capsys, "bound", "--noise-multiplier", "4", "--compositions", "250", "--delta", "1e-5", "--json")
    assert rc == 0
    got = json.loads(out)
    for key in ("epsilon", "epsilon_gdp", "noise_multiplier", "compositions", "sampling_rate", "delta", "method"):
        assert key in got
    assert round(got["epsilon"], 2) == 24.00 and round(got["epsilon_gdp"], 2) == 24.00
    assert got["epsilon"] == pytest.approx(got["epsilon_gdp"], abs=0.01)


def test_bound_subsampled_has_no_gdp(capsys):
    rc, out, _ = _run(
        capsys, "bound", "--noise-multiplier", "2", "--compositions", "5", "--sampling-rate", "0.5", "--json"
    )
    got = json.loads(out)
    assert rc == 0 and "epsilon_gdp" not in got and got["epsilon"] > 0


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--noise-multiplier", "0", "--compositions", "5"], "noise_multiplier"),
        (["--noise-multiplier", "1", "--compositions", "-5"], "compositions"),
        (["--noise-multiplier", "1", "--compositions", "5", "--delta", "2"], "delta"),
        (["--noise-multiplier", "1", "--compositions", "5", "--sampling-rate", "1.5"], "sampling_rate"),
    ],
)
def test_bound_bad_input(capsys, argv, match):
    rc, _, err = _run(capsys, "bound", *argv)
    assert rc != 0 and match in err and "Traceback" not in err


def test_validate_audit_json(capsys):
    rc, out, _ = _run(capsys, "validate-audit", "--trials", "5", "--runs", "400", "--mus", "1,2", "--json")
    assert rc == 0
    rows = json.loads(out)["rows"]
    assert {(r["threshold_rule"], r["mu"]) for r in rows} == {(m, u) for m in ("paper", "held-out") for u in (1.0, 2.0)}
    for r in rows:
        assert 0 <= r["exceed_fraction"] <= 1 and r["median_epsilon"] >= 0


def test_validate_audit_bad_input(capsys):
    rc, _, err = _run(capsys, "validate-audit", "--trials", "0")
    assert rc != 0 and "trials" in err


def test_bench_audit_json(capsys):
    rc, out, _ = _run(
        capsys, "bench", "audit", "--repeats", "1", "--large", "20000", "--reference-runs", "300", "--json"
    )
    assert rc == 0
    got = json.loads(out)
    for key in ("seconds_r5000", "seconds_r20000", "reference_seconds_r300", "seconds_r5000_cold"):
        assert got[key] > 0
    assert got["reference_agrees"] is True
    assert np.isfinite(got["mu_r5000"])


def test_a_command_imports_only_its_own_module(scores_csv):
    """Start-up is lazy: `hsaudit audit` never loads torch (only `bench train` needs it), and `--help` lists every
    command without importing any of them."""
    code = (
        "import sys, contextlib, io\n"
        "from hsaudit.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    rc = main(['audit', {str(scores_csv)!r}])\n"
        "assert rc == 0\n"
        "print(sorted(m for m in sys.modules if m.startswith(('torch', 'opacus', 'hsaudit.cli.'))))\n"
        "try:\n"
        "    with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "        main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "assert all(c in out.getvalue() for c in ('audit', 'bound', 'bench', 'validate-audit', 'archive'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "['hsaudit.cli.audit']", proc.stdout + proc.stderr


def test_bench_lists_its_benchmarks_without_loading_them(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("audit", "train", "section6"))


def test_one_run_cli(capsys, tmp_path):
    """`hsaudit one-run`: the library's bound on the same CSV; a Bonferroni search over several k; bad k, exit 2."""
    import math

    from hsaudit.audit.one_run import one_run_audit

    rng = np.random.default_rng(4)
    included = rng.random(1000) < 0.5
    truthful = rng.random(1000) < math.exp(2) / (1 + math.exp(2))
    scores = np.where(truthful, included, ~included) + 0.01 * rng.random(1000)
    path = tmp_path / "canaries.csv"
    path.write_text("score,member\n" + "".join(f"{float(s)!r},{int(b)}\n" for s, b in zip(scores, included)))
    rc, out, err = _run(capsys, "one-run", str(path), "--k", "100", "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    assert got["epsilon"] == one_run_audit(scores, included, k_plus=100, k_minus=100, delta=1e-5).epsilon > 0.5
    rc, out, _ = _run(capsys, "one-run", str(path), "--k", "50,100:80", "--json")
    assert rc == 0 and json.loads(out)["method"] == "steinke2023, best of 2 (Bonferroni)"
    rc, _, err = _run(capsys, "one-run", str(path), "--k", "900")
    assert rc == 2 and "k_plus + k_minus <= canaries" in err


def test_one_run_cli_fdp_method(capsys, tmp_path):
    """`hsaudit one-run --method fdp`: Mahloujifar et al.'s bound, μ̂ and its ε in the JSON, the method named;
    the default stays the counting bound with its output unchanged (no mu key); bad input exits 2 with a message."""
    from hsaudit.audit.one_run_fdp import one_run_fdp_audit

    rng = np.random.default_rng(11)
    included = rng.random(2000) < 0.5
    scores = rng.standard_normal(2000) + 2.0 * included  # 2-GDP canaries
    path = tmp_path / "canaries.csv"
    path.write_text("score,member\n" + "".join(f"{float(s)!r},{int(b)}\n" for s, b in zip(scores, included)))
    rc, out, err = _run(capsys, "one-run", str(path), "--k", "100", "--method", "fdp", "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    expected = one_run_fdp_audit(scores, included, k_plus=100, k_minus=100, delta=1e-5)
    assert got["method"] == "mahloujifar2024 (GDP)" and got["mu"] == expected.mu > 0.5
    assert got["epsilon"] == expected.epsilon
    rc, out, _ = _run(capsys, "one-run", str(path), "--k", "100", "--json")
    default = json.loads(out)
    assert rc == 0 and default["method"] == "steinke2023" and "mu" not in default
    assert default["epsilon"] < got["epsilon"]
    rc, out, _ = _run(capsys, "one-run", str(path), "--k", "50,100", "--method", "fdp", "--json")
    assert rc == 0 and json.loads(out)["method"] == "mahloujifar2024 (GDP), best of 2 (Bonferroni)"
    rc, out, _ = _run(capsys, "one-run", str(path), "--k", "100", "--method", "fdp")
    assert rc == 0 and "mahloujifar2024" in out and "mu:" in out
    rc, _, err = _run(capsys, "one-run", str(path), "--method", "fdp", "--delta", "0")
    assert rc == 2 and "delta must be in (0, 1)" in err
    with pytest.raises(SystemExit) as exit_:
        main(["one-run", str(path), "--method", "counting"])
    assert exit_.value.code == 2 and "invalid choice: 'counting'" in capsys.readouterr().err
