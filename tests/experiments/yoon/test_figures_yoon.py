"""Yoon et al. figures and Table 1 (hsaudit.experiments.yoon.figures) on synthetic audit rows in the workflow's exact format.

The audit rows have the columns of ``results/yoon/audits/<key>/run<r>.csv`` with ε̂ drawn per run from a seeded
generator (the paper rule's, and below it the valid crossing rule's); each test checks that the figure writes a
PDF, and that its CSV holds the series the figure plots with the mean and sd over runs recomputed here from the
input rows (held-out: the valid rule's ε̂, same: the paper rule's), the counts, and the footer's provenance.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from conftest import check_pdf
from hsaudit.experiments import plotting
from hsaudit.experiments.yoon import figures as yoon

RUN_COLUMNS = ("run", "adversary", "margin", "split", "access", "epsilon", "mu", "threshold", "fpr_upper",
               "fnr_upper", "fpr", "fnr", "epsilon_assumption_free", "n_members", "n_nonmembers", "confidence",
               "delta", "threshold_rule", "rule_valid", "valid_threshold_rule", "mu_valid", "epsilon_valid", "objective_start",
               "objective_end", "dataset", "model", "init", "canary", "clip_norm", "epsilon_theory",
               "noise_multiplier", "steps", "lr", "models_per_world", "data_source")  # fmt: skip
CSV_COLUMNS = ("epsilon_theory", "adversary", "canary", "init", "clip_norm", "margin", "split", "epsilon",
               "epsilon_sd", "mu", "runs", "dataset", "access")  # fmt: skip
VALID_COLUMNS = ("rule", "rule_valid", "epsilon_valid", "epsilon_valid_sd", "mu_valid", "runs_finite_valid",
                 "valid_threshold_rule", "epsilon_mode", "epsilon_mode_sd", "mu_mode", "runs_finite_mode", "threshold_rule", "mode_valid")
"""What every figure CSV says of its rules: the drawn ε̂'s rule and validity, the valid rule's and the mode's ε̂."""
N = 8


def audit_rows(*, runs=3, epsilons=(1.0, 10.0), datasets=("mnist",), canaries=("blank",), inits=("avg",),
               clip_norms=(1.0,), access="white", margins=(0.2,), seed=0) -> pd.DataFrame:  # fmt: skip
    """The audit rows of every point of the grid, one row per run × adversary (× margin) × split."""
    rng = np.random.default_rng(seed)
    rows = []
    grid = itertools.product(datasets, canaries, inits, clip_norms, epsilons, range(runs))
    for dataset, canary, init, clip, eps, run in grid:
        samples = [("a_c", np.nan), ("a_ude", np.nan)] + [("a_ade", m) for m in margins]
        for (adversary, margin), split in itertools.product(samples, yoon.SPLITS):
            epsilon = float(rng.uniform(0, eps))
            valid = epsilon * float(rng.uniform(0, 1))  # a valid rule's ε̂ of the same scores: below the paper's
            rows.append({"run": run, "adversary": adversary, "margin": margin, "split": split, "access": access,
                         "epsilon": epsilon, "mu": epsilon / 3, "threshold": -1.0, "fpr_upper": 0.3,
                         "fnr_upper": 0.3, "fpr": 0.1, "fnr": 0.1, "epsilon_assumption_free": 0.0,
                         "n_members": N, "n_nonmembers": N, "confidence": 0.95, "delta": 1e-5, "threshold_rule": "paper",
                         "rule_valid": False, "valid_threshold_rule": "crossing", "mu_valid": valid / 3, "epsilon_valid": valid,
                         "objective_start": 1.0, "objective_end": 0.5, "dataset": dataset, "model": "mnist_cnn",
                         "init": init, "canary": canary, "clip_norm": clip, "epsilon_theory": eps,
                         "noise_multiplier": 5.0, "steps": 2, "lr": 4.0, "models_per_world": N,
                         "data_source": f"{dataset}:synthetic"})  # fmt: skip
    table = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    assert list(table.columns) == list(RUN_COLUMNS)
    return table


def score_rows(table: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    """Per-model scores (score = −loss) of every audit row: members get a lower loss."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in table.itertuples():
        for model, member in enumerate([0] * N + [1] * N):
            rows.append({"run": r.run, "adversary": r.adversary, "margin": r.margin, "split": r.split,
                         "model_index": model, "member": member,
                         "score": -float(rng.lognormal(1.0 - 0.5 * member, 0.3))})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture
def footers(monkeypatch):
    seen: list[str] = []
    original = plotting.save

    def save(fig, path, *, footer=None, tight=True):
        seen.append(footer)
        original(fig, path, footer=footer, tight=tight)

    monkeypatch.setattr(yoon, "save", save)
    return seen


def draw(figure, table, pdf, csv, *, scale, code_version="", scores=None):
    """Draw ``figure`` through the registry (``fn(table, *, pdf, csv, facts)``), as workflow/scripts/plot_yoon.py does:
    fig2's table is the per-model scores joined to their audit rows."""
    if scores is not None:
        table = yoon.with_scores(table.assign(point_audit="k"), scores.assign(point_audit="k"))
    return yoon.FIGURES[figure](table, pdf=pdf, csv=csv, facts={"scale": scale, "code_version": code_version})


def check_series(csv: pd.DataFrame, table: pd.DataFrame, **where) -> pd.Series:
    """The CSV row of one series has the mean, sd (ddof = 1), mean μ̂ and run count of its input rows: the drawn
    ``epsilon`` is the valid rule's on the held-out split and the paper rule's on the same split, and both rules'
    are in ``epsilon_valid`` and ``epsilon_mode``."""
    def select(frame):
        mask = pd.Series(True, index=frame.index)
        for column, value in where.items():
            mask &= np.isclose(frame[column], value) if isinstance(value, float) else frame[column].eq(value)
        return frame[mask]

    rows, got = select(table), select(csv)
    assert len(got) == 1, (where, got)
    got = got.iloc[0]
    held_out = got["split"] == "held-out"
    drawn = "_valid" if held_out else ""
    assert (got["rule"], got["rule_valid"]) == (("crossing", True) if held_out else ("paper", False))
    assert (got["valid_threshold_rule"], got["threshold_rule"], got["mode_valid"]) == ("crossing", "paper", False)
    for prefix, suffix in (("", drawn), ("_valid", "_valid"), ("_mode", "")):  # CSV column ← input column
        eps = rows[f"epsilon{suffix}"].dropna()
        assert got[f"epsilon{prefix}"] == pytest.approx(eps.mean(), rel=1e-12)
        sd = np.std(eps, ddof=1) if len(eps) > 1 else 0.0
        assert got[f"epsilon{prefix}_sd"] == pytest.approx(sd, rel=1e-12, abs=1e-15)
        assert got[f"mu{prefix}"] == pytest.approx(rows[f"mu{suffix}"].mean(), rel=1e-12)
        assert got[f"runs_finite{prefix}"] == len(eps)
    assert got["runs"] == len(rows)
    return got


def test_fig3_two_datasets_mean_sd_paper_and_footer(tmp_path, footers):
    table = audit_rows(epsilons=(1.0, 2.0, 4.0, 10.0), datasets=("mnist", "cifar10"))
    summary = draw("fig3", table, tmp_path / "fig3.pdf", tmp_path / "fig3.csv", scale="smoke",
                                    code_version="abcdef1234")
    check_pdf(tmp_path / "fig3.pdf")
    csv = pd.read_csv(tmp_path / "fig3.csv")
    for column in (*CSV_COLUMNS, *VALID_COLUMNS, "runs_finite", "epsilon_paper", "series", "data_source", "scale"):
        assert column in csv.columns, column
    assert len(csv) == len(summary) == 2 * 4 * 3 * 2  # datasets × ε × adversaries × splits
    for dataset, adversary, split, eps in (("mnist", "a_c", "same", 10.0), ("cifar10", "a_ade", "held-out", 2.0)):
        check_series(csv, table, dataset=dataset, adversary=adversary, split=split, epsilon_theory=eps)
    # the paper's headline values sit beside their setting only (ε = 10), for both splits
    paper = csv[csv.epsilon_paper.notna()].set_index(["dataset", "adversary", "split"])["epsilon_paper"]
    assert paper[("mnist", "a_ade", "same")] == 6.68 and paper[("cifar10", "a_c", "held-out")] == 0.30
    assert len(paper) == 2 * 3 * 2 and set(csv[csv.epsilon_paper.notna()]["epsilon_theory"]) == {10.0}
    assert set(csv.scale) == {"smoke"} and set(csv.margin.dropna()) == {0.2}
    audit = ("audit=GDP (confidence 0.95); ε̂ drawn: held-out crossing rule (valid), same paper rule (not a valid bound); the "
             "CSV has both rules' ε̂")
    for fact in ("scale=smoke", f"N={N} per world", "runs=3", "mnist:synthetic/cifar10:synthetic", audit,
                 "craft/audit split=held-out", "code=abcdef1234"):  # fmt: skip
        assert fact in footers[-1], (fact, footers[-1])


VALID_LABEL = "adam lr=0.01 T=100, pixels in range, validation stop/10"


def test_fig3_shows_both_named_recipes_in_rows_of_panels(tmp_path, footers, monkeypatch):
    """fig3's default grid crafts with the valid recipe and the paper's: one row of panels per recipe (valid
    first), the CSV names each series' recipe (name and options), the footer says which options each name has."""
    valid = audit_rows(epsilons=(4.0, 10.0), datasets=("mnist", "cifar10")).assign(craft_recipe="validation_stopped",
                                                                                  recipe=VALID_LABEL)  # fmt: skip
    paper = audit_rows(epsilons=(4.0, 10.0), datasets=("mnist", "cifar10"), seed=1).assign(
        craft_recipe="paper", recipe=yoon.UNNAMED_RECIPE)
    table = pd.concat([paper, valid], ignore_index=True)  # the paper's rows first: the figure orders them
    grids = []
    original = yoon.figure
    monkeypatch.setattr(yoon, "figure", lambda **kw: grids.append(kw) or original(**kw))
    draw("fig3", table, tmp_path / "fig3.pdf", tmp_path / "fig3.csv", scale="smoke")
    check_pdf(tmp_path / "fig3.pdf")
    assert (grids[-1]["nrows"], grids[-1]["ncols"]) == (2, 2)  # recipes × datasets
    csv = pd.read_csv(tmp_path / "fig3.csv")
    assert list(dict.fromkeys(csv["craft_recipe"])) == ["validation_stopped", "paper"]
    assert dict(csv[["craft_recipe", "recipe"]].drop_duplicates().values) == {"validation_stopped": VALID_LABEL,
                                                                             "paper": yoon.UNNAMED_RECIPE}  # fmt: skip
    assert len(csv) == 2 * 2 * 2 * 3 * 2  # recipes × datasets × ε × adversaries × splits
    for recipe, rows in (("validation_stopped", valid), ("paper", paper)):
        check_series(csv, rows, craft_recipe=recipe, dataset="cifar10", adversary="a_ade", split="held-out",
                     epsilon_theory=10.0)  # fmt: skip
    # the paper's values sit beside both recipes (they are the paper's, whichever recipe we use)
    assert set(csv[csv.epsilon_paper.notna()]["craft_recipe"]) == {"validation_stopped", "paper"}
    assert f"recipe=validation_stopped = {VALID_LABEL}; paper = {yoon.UNNAMED_RECIPE}" in footers[-1], footers[-1]


def legend_texts(monkeypatch) -> list[list[str]]:
    """The legend entries of every figure saved from now on (one list per figure)."""
    seen: list[list[str]] = []
    original = yoon.save

    def save(fig, path, **kw):
        seen.append([t.get_text() for legend in fig.legends for t in legend.get_texts()])
        original(fig, path, **kw)

    monkeypatch.setattr(yoon, "save", save)
    return seen


@pytest.mark.parametrize("figure", ["fig3", "fig8"])
def test_the_legend_names_the_rule_of_each_splits_drawn_estimate(tmp_path, monkeypatch, figure):
    legends = legend_texts(monkeypatch)
    grid = {"clip_norms": (0.1, 1.0)} if figure == "fig8" else {}
    draw(figure, audit_rows(epsilons=(10.0,), **grid), tmp_path / "f.pdf", tmp_path / "f.csv", scale="s")
    assert "held-out split: crossing rule (valid)" in legends[-1], legends[-1]
    assert "same split (paper's reading): paper rule (not a valid bound)" in legends[-1], legends[-1]


def test_a_valid_mode_is_drawn_on_both_splits(tmp_path, footers):
    """audit.mode crossing (valid): the rows' valid columns repeat it, and both splits draw it."""
    table = audit_rows(datasets=("cifar10",), epsilons=(4.0,), margins=(0.1, 0.2))
    table = table.assign(threshold_rule="crossing", rule_valid=True, valid_threshold_rule="crossing", epsilon_valid=table.epsilon,
                         mu_valid=table.mu)  # fmt: skip
    csv = draw("fig3", table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s")
    assert set(csv.rule) == {"crossing"} and csv.rule_valid.all() and csv.mode_valid.all()
    np.testing.assert_array_equal(csv.epsilon, csv.epsilon_valid)
    np.testing.assert_array_equal(csv.epsilon, csv.epsilon_mode)
    assert "ε̂ drawn: held-out crossing rule (valid), same crossing rule (valid);" in footers[-1], footers[-1]
    draw("table1", table, tmp_path / "t.md", tmp_path / "t.csv", scale="s")
    assert (tmp_path / "t.md").read_text().splitlines()[2] == (
        "| α | ε̂ held-out, crossing rule (valid) | ε̂ same, crossing rule | paper (same models) |")


def test_tables_without_valid_columns_draw_the_mode_and_say_so(tmp_path, footers):
    """Audit rows written before the valid rule's columns: every split draws the mode's ε̂, labelled not valid, and
    the valid columns are empty."""
    table = audit_rows().drop(columns=["rule_valid", "valid_threshold_rule", "mu_valid", "epsilon_valid"])
    csv = draw("fig3", table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s")
    assert set(csv.rule) == {"paper"} and not csv.rule_valid.any() and csv.epsilon_valid.isna().all()
    np.testing.assert_array_equal(csv.epsilon, csv.epsilon_mode)
    assert "ε̂ drawn: held-out paper rule (not a valid bound), same paper rule (not a valid bound);" in footers[-1], footers[-1]


def test_tables_without_recipe_names_were_crafted_over_the_paper_reading(tmp_path):
    table = audit_rows()
    draw("fig3", table, tmp_path / "fig3.pdf", tmp_path / "fig3.csv", scale="smoke")
    assert set(pd.read_csv(tmp_path / "fig3.csv")["craft_recipe"]) == {"paper"}


@pytest.mark.parametrize("figure", ["fig4", "fig5"])
def test_single_panel_figures_one_run_and_nan(tmp_path, figure):
    """One run (sd 0, no error bar), a NaN ε̂ in one run of another point: left out of the mean, counted."""
    access, canary = ("black", "blank") if figure == "fig4" else ("white", "in_distribution")
    table = audit_rows(runs=1, epsilons=(4.0, 10.0), access=access, canaries=(canary,))
    table.loc[(table.adversary == "a_ude") & (table.epsilon_theory == 4.0), ["epsilon", "epsilon_valid"]] = np.nan
    draw(figure, table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="smoke", code_version="")
    check_pdf(tmp_path / "f.pdf")
    csv = pd.read_csv(tmp_path / "f.csv")
    assert (csv.epsilon_sd.fillna(0) == 0).all() and (csv.runs == 1).all()
    nan = csv[(csv.adversary == "a_ude") & (csv.epsilon_theory == 4.0)]
    assert len(nan) == 2 and nan.epsilon.isna().all() and (nan.runs_finite == 0).all()
    got = check_series(csv, table, adversary="a_ade", split="same", epsilon_theory=10.0)
    assert got["epsilon_paper"] == (4.51 if figure == "fig4" else 4.33)
    assert set(csv.access) == {access} and set(csv.canary) == {canary}


def test_curves_keep_only_the_main_margin_and_skip_missing_series(tmp_path):
    table = audit_rows(margins=(0.1, 0.2))
    table = table[~((table.adversary == "a_ude") & (table.split == "same"))]  # a series that did not run
    csv = draw("fig3", table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s", code_version="")
    assert set(csv.margin.dropna()) == {0.2}
    assert not ((csv.adversary == "a_ude") & (csv.split == "same")).any()
    assert len(csv) == 2 * (3 * 2 - 1)
    # without α = 0.2 the figure shows the nearest margin audited
    csv = draw("fig3", audit_rows(margins=(0.05, 0.15)), tmp_path / "g.pdf", tmp_path / "g.csv",
                                scale="s", code_version="")  # fmt: skip
    assert set(csv.margin.dropna()) == {0.15}


def test_fig7_series_by_initialisation(tmp_path):
    table = audit_rows(datasets=("mnist", "cifar10"), inits=("avg", "worst"), epsilons=(2.0, 10.0))
    csv = draw("fig7", table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s", code_version="")
    check_pdf(tmp_path / "f.pdf")
    # a_c at θ_avg and θ_worst, a_ade and a_ude at θ_worst: 4 series × 2 splits × 2 ε × 2 datasets
    assert len(csv) == 4 * 2 * 2 * 2
    assert not ((csv.init == "avg") & (csv.adversary != "a_c")).any()
    assert set(csv.series) == {"a_c (canary), θ_avg", "a_c (canary), θ_worst", "a_ade (α = 0.2), θ_worst",
                               "a_ude, θ_worst"}  # fmt: skip
    got = check_series(csv, table, dataset="cifar10", init="worst", adversary="a_ade", split="same",
                       epsilon_theory=10.0)  # fmt: skip
    assert got["epsilon_paper"] == 9.93
    got = check_series(csv, table, dataset="mnist", init="avg", adversary="a_c", split="held-out", epsilon_theory=10.0)
    assert got["epsilon_paper"] == 4.11


@pytest.mark.parametrize(
    ("figure", "grid", "column", "paper"),
    [
        ("fig6", {"canaries": ("in_distribution", "blank", "mislabeled", "clipbkd")}, "canary", ("clipbkd", 3.91)),
        ("fig8", {"clip_norms": (0.1, 1.0, 10.0)}, "clip_norm", (0.1, 7.85)),
    ],
)
def test_bar_figures_at_epsilon_10(tmp_path, footers, figure, grid, column, paper):
    table = audit_rows(epsilons=(4.0, 10.0), **grid)
    csv = draw(figure, table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s", code_version="")
    check_pdf(tmp_path / "f.pdf")
    csv = pd.read_csv(tmp_path / "f.csv")
    groups = next(iter(grid.values()))
    assert set(csv.epsilon_theory) == {10.0} and len(csv) == len(groups) * 3 * 2
    for value in groups:
        check_series(csv, table, **{column: value}, adversary="a_ude", split="held-out", epsilon_theory=10.0)
    row = csv[np.isclose(csv[column], paper[0]) if column == "clip_norm" else csv[column].eq(paper[0])]
    assert set(row[row.adversary == "a_ade"].epsilon_paper) == {paper[1]}
    if figure == "fig6":
        assert row[row.adversary == "a_ude"].epsilon_paper.isna().all()  # the paper gives a_c and a_ade only
    # only ε = 4 audited: the figure shows ε = 4 (no paper value there); a whole NaN bar does not crash
    table = audit_rows(runs=1, epsilons=(4.0,), **grid)
    table.loc[table.adversary == "a_c", ["epsilon", "epsilon_valid"]] = np.nan
    csv = draw(figure, table, tmp_path / "g.pdf", tmp_path / "g.csv", scale="s", code_version="")
    assert set(csv.epsilon_theory) == {4.0} and csv.epsilon_paper.isna().all()
    assert csv[csv.adversary == "a_c"].epsilon.isna().all()


def test_fig2_histograms(tmp_path, footers):
    table = audit_rows(runs=2, epsilons=(10.0,))
    scores = score_rows(table)
    csv = draw("fig2", table, tmp_path / "f.pdf", tmp_path / "f.csv", scores=scores, scale="s",
                                code_version="")
    check_pdf(tmp_path / "f.pdf")
    csv = pd.read_csv(tmp_path / "f.csv")
    for column in (*CSV_COLUMNS, *VALID_COLUMNS, "member", "world", "bin_left", "bin_right", "count", "epsilon_run",
                   "epsilon_valid_run", "epsilon_mode_run"):
        assert column in csv.columns, column
    assert set(csv.run) == {0}  # one run shown
    # every model of run 0 is in exactly one bin of its panel
    for (adversary, split, member), part in csv.groupby(["adversary", "split", "member"]):
        assert part["count"].sum() == N, (adversary, split, member)
    got = csv[(csv.adversary == "a_ade") & (csv.split == "same")].iloc[0]
    rows = table[(table.adversary == "a_ade") & (table.split == "same")]
    assert got["epsilon"] == pytest.approx(rows.epsilon.mean()) and got["runs"] == 2
    assert got["epsilon_run"] == pytest.approx(rows[rows.run == 0].epsilon.iloc[0])  # same split: the paper's rule
    assert got["epsilon_valid_run"] == pytest.approx(rows[rows.run == 0].epsilon_valid.iloc[0])
    held = csv[(csv.adversary == "a_ade") & (csv.split == "held-out")].iloc[0]  # held-out: the valid rule's
    rows = table[(table.adversary == "a_ade") & (table.split == "held-out") & (table.run == 0)]
    assert (held["epsilon_run"], held["epsilon_mode_run"]) == pytest.approx((rows.epsilon_valid.item(),
                                                                              rows.epsilon.item()))  # fmt: skip
    assert held["rule"] == "crossing" and held["rule_valid"]
    assert "run 0" in footers[-1]
    with pytest.raises(ValueError, match="per-model scores"):
        draw("fig2", table, tmp_path / "f.pdf", tmp_path / "f.csv", scale="s", code_version="")


def test_table1_markdown_and_csv(tmp_path):
    margins = (0.05, 0.1, 0.15, 0.2, 0.25)
    table = audit_rows(datasets=("cifar10",), epsilons=(4.0,), margins=margins)
    table.loc[(table.margin == 0.25) & (table.split == "held-out"), ["epsilon", "epsilon_valid"]] = np.nan
    csv = draw("table1", table, tmp_path / "t.md", tmp_path / "t.csv", scale="smoke", code_version="abc")
    text = (tmp_path / "t.md").read_text()
    lines = text.splitlines()
    assert lines[0].startswith("Table 1: ε̂ of a_ade (mean ± sd over 3 run(s)")
    assert "CIFAR-10" in lines[0] and "ε = 4" in lines[0]
    assert lines[2] == ("| α | ε̂ held-out, crossing rule (valid) | ε̂ held-out, paper rule (not a valid bound) | "
                        "ε̂ same, paper rule (not a valid bound) | ε̂ same, crossing rule | paper (same models) |")
    assert lines[-1].startswith("scale=smoke") and "code=abc" in lines[-1]
    rows = {line.split(" | ")[0].strip("| "): line for line in lines[4:9]}
    assert list(rows) == ["0.05", "0.1", "0.15", "0.2", "0.25"]
    same = table[(table.margin == 0.1) & (table.split == "same")].epsilon
    assert f"{same.mean():.2f} ± {np.std(same, ddof=1):.2f}" in rows["0.1"] and "1.84 ± 0.32" in rows["0.1"]
    cells = [cell.strip() for cell in rows["0.1"].strip("|").split("|")]
    for i, (split, column) in enumerate((("held-out", "epsilon_valid"), ("held-out", "epsilon"), ("same", "epsilon"),
                                         ("same", "epsilon_valid")), start=1):  # fmt: skip
        values = table[(table.margin == 0.1) & (table.split == split)][column]
        assert cells[i] == f"{values.mean():.2f} ± {np.std(values, ddof=1):.2f}", (split, column)
    assert "| n/a |" in rows["0.25"] and "2.03 ± 0.24" in rows["0.25"]
    csv = pd.read_csv(tmp_path / "t.csv")
    assert len(csv) == 5 * 2 and set(csv.adversary) == {"a_ade"}
    for column in (*CSV_COLUMNS, *VALID_COLUMNS, "epsilon_paper", "epsilon_paper_sd"):
        assert column in csv.columns, column
    check_series(csv, table, margin=0.15, split="held-out")
    assert csv.set_index(["margin", "split"]).loc[(0.05, "same"), "epsilon_paper_sd"] == 0.51
    # another setting: no paper column values, one run → no ± sd
    table = audit_rows(runs=1, datasets=("mnist",), epsilons=(10.0,), margins=(0.2,))
    draw("table1", table, tmp_path / "u.md", tmp_path / "u.csv", scale="smoke", code_version="")
    row = (tmp_path / "u.md").read_text().splitlines()[4]
    assert row.endswith("| – |") and "±" not in row


def test_validation(tmp_path):
    table = audit_rows(runs=1)
    with pytest.raises(ValueError, match="no column 'split'"):
        draw("fig3", table.drop(columns="split"), tmp_path / "f.pdf", tmp_path / "f.csv",
                              scale="s", code_version="")  # fmt: skip
    with pytest.raises(ValueError, match="unknown adversary 'a_x'"):
        draw("fig3", table.assign(adversary="a_x"), tmp_path / "f.pdf", tmp_path / "f.csv",
                              scale="s", code_version="")  # fmt: skip


def test_registry_draws_every_configured_figure():
    """One function per target of the config's yoon.figures (the schema requires exactly these)."""
    import yaml

    from conftest import REPO

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert set(yoon.FIGURES) == set(config["yoon"]["figures"])


def test_runs_table_and_scores_round_trip():
    """runs_table marks each run's rows with its point; with_scores joins every score to its audit row, and the
    figure gets back exactly the audit rows (in order) and the scores."""
    table = audit_rows(runs=2, epsilons=(10.0,))
    frames = [part for _, part in table.groupby("run", sort=True)]
    points = [{"audit": "abc", "runs": 2, "values": {"craft_recipe": "validation_stopped"}}]
    runs = yoon.runs_table(frames, points, figure="fig2")
    assert set(runs["point_audit"]) == {"abc"} and set(runs["craft_recipe"]) == {"validation_stopped"} and len(runs) == len(table)
    scores = score_rows(runs)
    score_frames = [part for _, part in scores.groupby("run", sort=True)]
    joined = yoon.with_scores(runs, yoon.runs_table(score_frames, points, figure="fig2"))
    assert len(joined) == len(scores)
    pd.testing.assert_frame_equal(joined[list(scores.columns)], scores.assign(point_audit="abc")[list(scores.columns)])
    for r in joined.sample(20, random_state=0).itertuples():  # each score carries its own audit row's ε̂
        same_margin = runs.margin.isna() if pd.isna(r.margin) else np.isclose(runs.margin, r.margin)
        row = runs[(runs.run == r.run) & (runs.adversary == r.adversary) & (runs.split == r.split) & same_margin]
        assert r.epsilon == row.epsilon.item()
    with pytest.raises(ValueError, match="run tables"):
        yoon.runs_table(frames[:1], points, figure="fig2")
    with pytest.raises(ValueError, match="no audit row"):
        yoon.with_scores(runs[runs["run"] == 0], yoon.runs_table(score_frames, points, figure="fig2"))
