"""results/one_run/fig1.pdf end to end at smoke scale (synthetic Housing-format data): one-run and population
audits of the same configuration, the CSV's methods and compute, and a rerun that has nothing to do."""

from __future__ import annotations

import pandas as pd

from conftest import check_pdf, configure_housing, job_counts, run_snakemake, write_synthetic_csv

TARGET = "results/one_run/fig1.pdf"


def test_one_run_figure_end_to_end(workflow_copy):
    workdir = workflow_copy
    write_synthetic_csv(workdir / "housing.csv")
    configure_housing(workdir)
    run_snakemake(workdir, TARGET, timeout=300)
    check_pdf(workdir / TARGET)
    table = pd.read_csv(workdir / "results/one_run/fig1.csv")
    methods = set(table["method"])
    assert {m for m in methods if m.startswith("one run")} and {m for m in methods if m.startswith("population")}
    one = table[table["method"].str.startswith("one run: counting")]
    assert one["models"].tolist() == [1, 2, 4, 8] and one["canaries"].tolist() == [16, 32, 64, 128]
    assert (one["model_steps"] == one["models"] * 5).all()
    pop = table[table["method"] == "population: GDP"]
    assert pop["runs_per_world"].tolist() == [10, 20] and (pop["model_steps"] == pop["models"] * 5).all()
    assert (table["epsilon"] >= 0).all() and table["epsilon_upper"].nunique() == 1
    assert set(table["data_source"]) == {"housing:local"} and set(table["scale"]) == {"smoke"}
    assert job_counts(run_snakemake(workdir, "-n", TARGET).stdout) == {}
