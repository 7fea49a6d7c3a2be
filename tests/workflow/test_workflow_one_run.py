"""results/one_run/fig1.pdf end to end at smoke scale (synthetic Housing-format data; built on a copy of the Housing
figures' build, conftest.housing_built): one-run and population audits of the same configuration, the CSV's methods
and compute, and a rerun that has nothing to do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import check_pdf, copy_built, job_counts, package_env, run_snakemake

TARGET = "results/one_run/fig1.pdf"


@pytest.mark.slow
@pytest.mark.xdist_group("housing")
def test_one_run_figure_end_to_end(housing_built, tmp_path, monkeypatch):
    # On a copy of the session's Housing build (conftest.housing_built): its data, setups and fig1c's population
    # are the one-run figure's, which adds a second shard of 20 to that population.
    workdir = copy_built(housing_built, tmp_path / "work")
    monkeypatch.setenv("PYTHONPATH", package_env(workdir)["PYTHONPATH"])
    run_snakemake(workdir, TARGET, timeout=300)
    check_pdf(workdir / TARGET)
    table = pd.read_csv(workdir / "results/one_run/fig1.csv")
    methods = set(table["method"])
    assert {m for m in methods if m.startswith("one run")} and {m for m in methods if m.startswith("population")}
    counting = table[table["method"].str.startswith("one run: counting")]
    one = counting[counting["score"] == "raw"]
    assert one["models"].tolist() == [1, 2, 4, 8] and one["canaries"].tolist() == [16, 32, 64, 128]
    assert (one["model_steps"] == one["models"] * 5).all()
    # Every configured score on the same models; the noiseless one pays its canary-free run (T = 5 model-steps),
    # the median-centred and standardised ones have no point at M = 1.
    # The reference and calibrated ones their 16 reference models each (smoke's one_run.housing.reference_models).
    assert list(dict.fromkeys(counting["score"])) == ["raw", "median_centred", "noiseless", "standardised", "reference",
                                                      "calibrated"]
    noiseless = counting[counting["score"] == "noiseless"]
    assert (noiseless["model_steps"] == (noiseless["models"] + 1) * 5).all() and noiseless["epsilon"].notna().all()
    reference = counting[counting["score"] == "reference"]
    assert (reference["model_steps"] == (reference["models"] + 16) * 5).all() and reference["epsilon"].notna().all()
    calibrated = counting[counting["score"] == "calibrated"]
    assert (calibrated["model_steps"] == (calibrated["models"] + 16) * 5).all() and calibrated["epsilon"].notna().all()
    centred = counting[counting["score"] == "median_centred"].set_index("models")["epsilon"]
    assert np.isnan(centred[1]) and centred.drop(1).notna().all()
    standardised = counting[counting["score"] == "standardised"].set_index("models")["epsilon"]
    assert np.isnan(standardised[1]) and standardised.drop(1).notna().all()
    pop = table[table["method"] == "population: GDP"]
    assert pop["runs_per_world"].tolist() == [10, 20] and (pop["model_steps"] == pop["models"] * 5).all()
    assert (table["epsilon"].dropna() >= 0).all() and table["epsilon_upper"].nunique() == 1
    assert set(table["data_source"]) == {"housing:local"} and set(table["scale"]) == {"smoke"}
    assert job_counts(run_snakemake(workdir, "-n", TARGET).stdout) == {}
