"""scripts/one_run_seeds.py: the one-run figure's CSVs of several runs (one per master seed) side by side, the
score's ε̂ at M over each run's own valid population ε̂, with the mean ± sd over the runs."""

from __future__ import annotations

import pandas as pd
import pytest

from conftest import load_script


@pytest.fixture(scope="module")
def seeds():
    return load_script("one_run_seeds")


def table(pop: float, fdp: float) -> pd.DataFrame:
    rows = [{"family": "housing", "method": "population: GDP, valid rule", "score": "raw", "models": r,
             "epsilon": pop - (r == 500), "model_steps": r * 250, "guesses": r, "correct": float("nan")}
            for r in (500, 5000)]
    for method, eps in (("one run: counting (Steinke et al. 2023)", fdp / 2), ("one run: f-DP, GDP (x)", fdp)):
        for m in (1, 256):
            rows.append({"family": "housing", "method": method, "score": "calibrated", "models": m,
                         "epsilon": eps * m / 256, "model_steps": m * 250 + 16000, "guesses": 10, "correct": 9.0})
    return pd.DataFrame(rows)


def test_rows_read_the_largest_population_and_the_asked_point(seeds, tmp_path, capsys):
    rows = seeds.seed_rows({"a": table(16.0, 8.0), "b": table(20.0, 6.0)}, score="calibrated", models=256,
                           family="housing")
    assert rows["R"].tolist() == [5000, 5000] and rows["population ε̂ (valid)"].tolist() == [16.0, 20.0]
    assert rows["f-DP ε̂"].tolist() == [8.0, 6.0] and rows["counting ε̂"].tolist() == [4.0, 3.0]
    assert rows["f-DP / population"].tolist() == [0.5, 0.3] and rows["right guesses"].tolist() == ["9 of 10"] * 2
    text = seeds.markdown(rows)
    assert "| mean ± sd over 2 |" in text and "0.400 ± 0.141" in text  # (0.5, 0.3): sd with ddof 1
    # Labels: the workdir's seed overlay, else its config's seed; a CSV carries its file name.
    for seed in (7, 8):
        work = tmp_path / f"w{seed}"
        (work / "results" / "one_run").mkdir(parents=True)
        table(10.0 + seed, 5.0).to_csv(work / "results" / "one_run" / "fig1.csv", index=False)
    (tmp_path / "w7" / "seed.yaml").write_text("seed: 7\n")
    (tmp_path / "w8" / "config").mkdir()
    (tmp_path / "w8" / "config" / "config.yaml").write_text("seed: 8\nother: 1\n")
    table(12.0, 6.0).to_csv(tmp_path / "w7" / "primary.csv", index=False)
    assert seeds.main([str(tmp_path / "w7" / "primary.csv")]) == 0
    assert "| seed 7 (primary) | 5000 | 12.000 |" in capsys.readouterr().out
    assert seeds.main([str(tmp_path / "w7"), str(tmp_path / "w8")]) == 0
    out = capsys.readouterr().out
    assert "| seed 7 | 5000 | 17.000 |" in out and "| seed 8 | 5000 | 18.000 |" in out
    # A run without the asked point: exit status 2, the run named.
    assert seeds.main([str(tmp_path / "w7"), "--models", "64"]) == 2
    assert "seed 7" in capsys.readouterr().err
