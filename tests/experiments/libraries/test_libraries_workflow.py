"""results/libraries/report.md end to end at smoke scale, with the rows cut to one correct configuration and the two
planted controls: every row trains and is audited by byo's rules at results/libraries/<row>/, the table flags both
controls and not the correct row, and lists a row whose library is not installed as not run; editing the audit's code reruns the audits and the table and retrains nothing; the
rows' trainings' code version holds their script folder (editing it retrains every row of that folder). Slow (≈ 1 min
on 2 busy cores); test_libraries_smoke.py is the suite's fast version."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from conftest import check_pdf, job_counts, run_snakemake

pytestmark = pytest.mark.slow
ROWS = ("opacus_hooks", "opacus_control_optimizer", "opacus_control_noise")


def test_the_table_at_smoke_scale_flags_its_controls_and_trains_through_byo(workflow_copy):
    work = workflow_copy
    config = yaml.safe_load((work / "config/config.yaml").read_text())
    config["scale"] = "smoke"
    config["libraries"]["rows"] = {name: config["libraries"]["rows"][name] for name in ROWS}
    config["libraries"]["rows"]["absent"] = {**config["libraries"]["rows"]["opacus_hooks"], "library": "no-such-lib-xyz"}
    (work / "config/config.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    target = "results/libraries/report.md"
    run_snakemake(work, target, timeout=300)
    frame = pd.read_csv(work / "results/libraries/table.csv").set_index("row")
    assert list(frame.index) == list(ROWS)
    assert (frame.loc[list(ROWS[1:]), "verdict"] == "violation").all()
    assert frame.loc["opacus_hooks", "verdict"] != "violation" and frame["seconds"].gt(0).all()
    for row in ROWS:  # byo's files, at the row's root
        assert (work / f"results/libraries/{row}/report.json").exists()
        assert len(list((work / f"results/libraries/{row}/control").glob("*.csv"))) == 1
    text = (work / target).read_text()
    assert "2 of 2 planted bugs flagged" in text and "- absent: not run: no-such-lib-xyz is not installed here" in text
    check_pdf(work / "results/libraries/fig.pdf")
    # the audit's code (what an estimator's edit changes): the audits and the table rerun, no row retrains
    with open(work / "workflow/scripts/audit_byo.py", "a") as fh:
        fh.write("\nassert payload\n")
    assert job_counts(run_snakemake(work, "-n", target).stdout) == {"audit_byo": len(ROWS), "table_libraries": 1}
    # the scripts' shared module: every row's trainings (their params hold the folder's code)
    with open(work / "examples/libraries/opacus/opacus_common.py", "a") as fh:
        fh.write("\n_EDITED = True\n")
    files = [f"results/libraries/{row}/{f}" for row in ROWS for f in ("claim.json", "probe.json", "shards/0.csv")]
    changed = set(run_snakemake(work, "--list-changes", "params", *files).stdout.split())
    assert set(files) <= changed
