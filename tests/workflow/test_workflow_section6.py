"""Section 6 workflow: config validation of the section6 section, the dry run, and fig3 end to end at smoke scale.

The end-to-end test reads the session's smoke build of fig3 (tests/conftest.py: the real workflow in a private
copy, the package imported from a frozen copy of it).
"""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import yaml

from conftest import REPO, run_snakemake
from hsaudit.pipeline.config import check_config, resolve_scale

SCHEMA = str(REPO / "workflow" / "schemas" / "config.schema.yaml")

FIG3_COLUMNS = {
    "sigma",
    "batch_size",
    "step",
    "rep",
    "epsilon_audit",
    "epsilon_exact",
    "epsilon_upper",
    "rule",
    "mu",
    "threshold",
    "threshold_rule",
    "runs_per_world",
}


@pytest.fixture(scope="module")
def config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def test_config_section6_is_valid_at_every_scale(config):
    for scale in ("paper", "laptop", "smoke"):
        check_config(resolve_scale({**config, "scale": scale}), SCHEMA)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("steps",), 0),
        (("runs_per_world",), 1),
        (("rules",), ["convex"]),
        (("sigmas",), [0]),
        (("threshold_search", "alphas"), 1),
        (("exact", "extent_sds"), 1),
        (("tradeoff", "sigmaa"), 4),
    ],
)
def test_schema_rejects_a_bad_section6_value_naming_the_key(config, path, value):
    bad = copy.deepcopy(config)
    node = bad["section6"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ValueError) as err:
        check_config(bad, SCHEMA)
    assert "section6" in str(err.value) and path[-1] in str(err.value)


def test_dry_run_of_fig3_and_every_section6_figure(workflow_copy):
    proc = run_snakemake(
        workflow_copy,
        "-n",
        "results/fig3.pdf",
        "results/fig14.pdf",
        "results/fig6b.pdf",
        "results/fig6c.pdf",
        "results/fig10.pdf",
    )
    out = proc.stdout + proc.stderr
    for rule in (
        "tabulate_section6_cp",
        "audit_section6_process",
        "compute_section6_exact_law",
        "plot_section6_fig3",
        "plot_section6_fig14",
        "plot_section6_fig6b",
        "search_section6_threshold",
        "plot_section6_fig6c",
        "plot_section6_fig10",
    ):
        assert rule in out


def test_bad_override_fails_before_any_job_naming_the_key(workflow_copy):
    proc = run_snakemake(
        workflow_copy,
        "-n",
        "results/fig3.pdf",
        "--config",
        "scale=smoke",
        "section6={'panel_sigmas': [3]}",
        check=False,
    )
    assert proc.returncode != 0
    assert "section6" in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("fig3")
def test_fig3_end_to_end_at_smoke_scale(fig3_built):
    """fig3 built from scratch at smoke scale (the session's build, conftest.fig3_built; read only)."""
    pdf = fig3_built / "results" / "fig3.pdf"
    assert pdf.read_bytes()[:4] == b"%PDF"
    table = pd.read_csv(fig3_built / "results" / "fig3.csv")
    assert FIG3_COLUMNS <= set(table.columns)
    smoke = resolve_scale({**yaml.safe_load((REPO / "config" / "config.yaml").read_text()), "scale": "smoke"})
    s6 = smoke["section6"]
    curves = table[table["panel"] == "a"]
    assert (
        len(curves) == len(s6["rules"]) * len(s6["sigmas"]) * len(s6["batch_sizes"]) * s6["steps"] * s6["repetitions"]
    )
    assert set(curves["rule"]) == set(s6["rules"])
    assert (curves["epsilon_exact"] <= curves["epsilon_upper"] + 1e-6).all()
    assert set(curves["threshold_rule"]) == {"paper"}
    heat = table[table["panel"] == "b"]
    assert len(heat) == len(s6["rules"]) * len(s6["sigmas"]) * len(s6["batch_sizes"])
    assert heat["ratio"].notna().all()
