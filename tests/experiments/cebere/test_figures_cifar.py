"""CIFAR-10 figures and Table 2 (hsaudit.experiments.cebere.figures.cifar, .table2) on synthetic tables.

Audit tables come from :func:`audit_table` on Gaussian scores (N(0, 1) against N(μ_t, 1), small R), so every
column is the real one; each test checks that the CSV holds exactly the plotted numbers (recomputed here from
the inputs or from a closed form) and that the footer and CSV carry the scale, the audit mode and the data source.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from conftest import check_footer_inside, check_pdf
from hsaudit.audit.rules import parse_rule
from hsaudit.engine.models import model_spec
from hsaudit.experiments import plotting
from hsaudit.experiments.cebere.audit import audit_table
from hsaudit.experiments.cebere.figures import FIGURES, cifar
from hsaudit.experiments.cebere.figures.table2 import write_table2

RUNS = 200
SOURCE = "cifar10:synthetic"


def gaussian_scores(seed: int, *, steps: np.ndarray, level: float, runs: int = RUNS) -> pd.DataFrame:
    """A scores table: member scores shifted by level·√t (higher ⇒ inserted), an exact half split."""
    rng = np.random.default_rng(seed)
    bits = np.repeat([0, 1], runs // 2)
    scores = rng.normal(size=(runs, steps.size)) + bits[:, None] * level * np.sqrt(steps)[None, :]
    return pd.DataFrame({"run": np.repeat(np.arange(runs), steps.size), "shard": 0, "bit": np.repeat(bits, steps.size),
                         "step": np.tile(steps, runs), "score": scores.reshape(-1)})  # fmt: skip


def entry(seed, *, adversary="gc_r", model="convnet", clip_norm=1.0, period=1, theta0="known", rep=0, steps=None):
    steps = np.arange(period, 5 * period + 1, period) if steps is None else steps
    level = {"gc_r": 0.9, "gc_s": 0.85, "label_flip": 0.2}[adversary]
    audit = audit_table(gaussian_scores(seed, steps=steps, level=level), delta=1e-5, confidence=0.95, rule=parse_rule("paper"),
                        noise_multiplier=4.0, period=period)  # fmt: skip
    ref = {"figure": "x", "model": model, "adversary": adversary, "clip_norm": clip_norm, "period": period,
           "theta0": theta0, "rep": rep, "key": f"{model}-{adversary}-{clip_norm:g}-{period}-{theta0}-{rep}",
           "runs": RUNS, "data_source": SOURCE}  # fmt: skip
    return ref, audit


class Saved(list):
    """The footer of every figure saved during a test (the list), and the texts written in its panels."""

    texts: list[str]


@pytest.fixture
def footers(monkeypatch):
    seen = Saved()
    seen.texts = []
    original = plotting.save

    def save(fig, path, *, footer=None, tight=True):
        seen.append(footer)
        seen.texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        original(fig, path, footer=footer, tight=tight)

    monkeypatch.setattr(plotting, "save", save)
    return seen


def epsilon_figure(entries, pdf, csv, *, figure, scale, code_version="", extra=()) -> pd.DataFrame:
    """The workflow's path for fig2, fig5, fig12, fig13: the audits' table, then the figure from the registry."""
    table = cifar.cifar_table(entries, extra_columns=extra)
    return FIGURES.get(figure, cifar.plot_epsilon)(
        table, pdf=pdf, csv=csv, facts={"figure": figure, "scale": scale, "code_version": code_version}
    )


def check_mean(csv: pd.DataFrame, summary: pd.DataFrame, *, panel: str, adversary: str, step: int) -> None:
    reps = csv[(csv.panel == panel) & (csv.adversary == adversary) & (csv.step == step)]["epsilon"]
    row = summary[(summary.panel == panel) & (summary.adversary == adversary) & (summary.step == step)].iloc[0]
    assert row["mean"] == pytest.approx(reps.mean()) and row["reps"] == len(reps)
    assert row["sd"] == pytest.approx(reps.std(ddof=1) if len(reps) > 1 else 0.0)


# ------------------------------------------------------------------------------------------ ε against step


def test_fig1_plots_every_audit_and_names_what_did_not_run(tmp_path, footers):
    # ConvNet: every C, two repetitions, but no A_L at C = 4; ResNet18: C = 1 only (a laptop preset).
    entries = [entry(10 * rep + i, adversary=a, clip_norm=c, rep=rep)
               for i, (a, c) in enumerate([(a, c) for c in (1, 2, 4) for a in ("gc_r", "label_flip")])
               if (a, c) != ("label_flip", 4) for rep in range(2)]  # fmt: skip
    entries += [entry(50 + i, adversary=a, model="resnet18_gn") for i, a in enumerate(("gc_r", "label_flip"))]
    housing = [({"adversary": a, "rep": rep, "key": f"h{a}{rep}"}, entry(70 + rep, adversary=a, rep=rep)[1])
               for a in ("gc_r", "label_flip") for rep in range(3)]  # fmt: skip
    summary = cifar.plot_fig1(cifar.fig1_table(entries, housing), pdf=tmp_path / "fig1.pdf",
                              csv=tmp_path / "fig1.csv", facts={"scale": "smoke", "code_version": "abc123"})
    check_pdf(tmp_path / "fig1.pdf")
    csv = pd.read_csv(tmp_path / "fig1.csv")
    for column in ("panel", "adversary", "model", "clip_norm", "period", "rep", "step", "epsilon", "epsilon_upper",
                   "mu", "runs", "threshold_rule", "data_source", "scale"):  # fmt: skip
        assert column in csv.columns, column
    assert len(csv) == 5 * (len(entries) + len(housing))
    assert set(csv["scale"]) == {"smoke"} and set(csv["threshold_rule"]) == {"paper"}
    assert set(csv["data_source"]) == {SOURCE, "housing"}
    assert set(csv[csv.model == "fcnn"]["panel"]) == {"(c) FCNN on Housing, C = 1"}
    resnet = csv[csv.model == "resnet18_gn"]
    assert set(resnet["panel"]) == {"(b) ResNet18-GN, C = 1"} and set(resnet["clip_norm"]) == {1.0}
    check_mean(csv, summary, panel="(a) ConvNet, C = 2", adversary="gc_r", step=3)
    check_mean(csv, summary, panel="(c) FCNN on Housing, C = 1", adversary="label_flip", step=5)
    # the plotted numbers are the inputs: ConvNet C = 1, A_L, rep 1 is entries[3]
    ref, audit = entries[3]
    got = csv[csv.key == ref["key"]].sort_values("step")
    np.testing.assert_allclose(got["epsilon"], audit["epsilon"], rtol=1e-12)
    np.testing.assert_allclose(got["epsilon_upper"], audit["epsilon_upper"], rtol=1e-12)
    assert not (summary.panel == "(b) ResNet18-GN, C = 4").any()
    assert footers.texts.count("not run at this scale") == 2  # ResNet18-GN, C = 2 and 4: nothing
    assert footers.texts.count("A_L: not run at this scale") == 1  # ConvNet, C = 4 has A_GC-R only
    footer = footers[-1]
    for fact in (
        "scale=smoke",
        f"R={RUNS}",
        "reps=2",
        "paper (GDP, CP 0.95, not valid; dotted: crossing, valid)",
        f"data={SOURCE}/housing",
        "abc123",
        f"(c) R={RUNS}",
        "(c) reps=3",
    ):
        assert fact in footer, (fact, footer)


@pytest.mark.parametrize(
    ("figure", "specs", "panels"),
    [
        ("fig2", [("gc_r", "convnet", 5, "known"), ("label_flip", "convnet", 25, "known"),
                  ("gc_r", "resnet18_gn", 5, "known")], 3),
        ("fig5", [("gc_r", "convnet", 1, "known"), ("gc_s", "convnet", 1, "known"), ("gc_s", "resnet18_gn", 5, "known")],
         2),
        ("fig12", [("gc_r", "convnet", 1, "known"), ("gc_r", "convnet", 1, "unknown")], 1),
        ("fig13", [("gc_r", "convnet", 1, "known"), ("gc_r", "alexnet_head", 1, "known")], 2),
    ],
)  # fmt: skip
def test_epsilon_figures_hold_their_audits(tmp_path, footers, figure, specs, panels):
    entries = [entry(i, adversary=a, model=m, period=k, theta0=t, rep=rep)
               for i, (a, m, k, t) in enumerate(specs) for rep in range(2)]  # fmt: skip
    pdf, csv_path = tmp_path / f"{figure}.pdf", tmp_path / f"{figure}.csv"
    summary = epsilon_figure(entries, pdf, csv_path, figure=figure, scale="laptop")
    check_pdf(pdf)
    csv = pd.read_csv(csv_path)
    assert len(csv) == 5 * len(entries) and csv["panel"].nunique() == panels
    assert set(csv["scale"]) == {"laptop"} and set(csv["data_source"]) == {SOURCE}
    for ref, audit in entries:
        got = csv[csv.key == ref["key"]].sort_values("step")
        np.testing.assert_allclose(got["epsilon"], audit["epsilon"], rtol=1e-12)
        assert set(got["period"]) == {ref["period"]} and set(got["theta0"]) == {ref["theta0"]}
    by = {"fig12": "theta0"}.get(figure)
    first = csv.iloc[0]
    reps = csv[(csv.panel == first.panel) & (csv.adversary == first.adversary) & (csv.step == first.step)]
    if by:
        reps = reps[reps[by] == first[by]]
    row = summary[
        (summary.panel == first.panel) & (summary.adversary == first.adversary) & (summary.step == first.step)
    ]
    if by:
        row = row[row[by] == first[by]]
    assert row["mean"].iloc[0] == pytest.approx(reps["epsilon"].mean()) and row["reps"].iloc[0] == 2
    assert f"data={SOURCE}" in footers[-1] and "scale=laptop" in footers[-1] and "paper" in footers[-1]


def test_fig12_draws_every_theta0_reading_and_names_the_crafted_coordinate(tmp_path, footers):
    readings = ("known", "shared_unknown", "per_run_known", "unknown")
    entries = []
    for c, (coordinates, layer) in enumerate((("all", "conv1.weight"), ("fixed_init", "conv1.bias"))):
        for i, t in enumerate(readings):
            for rep in range(2):
                ref, audit = entry(i, theta0=t, rep=rep)
                ref = {**ref, "key": f"{ref['key']}-{coordinates}", "coordinates": coordinates,
                       "coordinate": 100 * (c + 1) + rep, "layer": layer}  # fmt: skip
                entries.append((ref, audit))
    summary = epsilon_figure(entries, tmp_path / "f.pdf", tmp_path / "f.csv", figure="fig12", scale="laptop",
                             extra=cifar.CRAFTED_COLUMNS)
    csv = pd.read_csv(tmp_path / "f.csv")
    assert set(summary["theta0"]) == set(readings) and "not run at this scale" not in " ".join(footers.texts)
    # one panel per reading of d: over all coordinates, over the fixed-initialisation ones
    assert csv.groupby("coordinates")["panel"].nunique().eq(1).all() and csv["panel"].nunique() == 2
    assert set(csv.loc[csv.coordinates == "fixed_init", "panel"]) == {cifar.FIG12_PANELS["fixed_init"] + "\nConvNet, A_GC-R, k = 1, C = 1"}
    # every reading of a repetition names the same coordinate (the fair comparison) and its layer
    assert csv.groupby(["coordinates", "rep"])["coordinate"].nunique().eq(1).all()
    assert set(csv.loc[csv.coordinates == "all", "layer"]) == {"conv1.weight"}
    assert set(csv.groupby("rep")["coordinate"].first()) == {100, 101}


def test_fig12_without_the_coordinates_column_is_all_panel_a(tmp_path, footers):
    """A table made before the fixed-init reading: every audit is d over all coordinates, panel (b) not run."""
    entries = [entry(i, theta0=t) for i, t in enumerate(("known", "unknown"))]
    epsilon_figure(entries, tmp_path / "f.pdf", tmp_path / "f.csv", figure="fig12", scale="laptop")
    csv = pd.read_csv(tmp_path / "f.csv")
    assert set(csv["coordinates"]) == {"all"} and csv["panel"].str.startswith("(a)").all()
    assert "not run at this scale" in " ".join(footers.texts)


@pytest.fixture
def kept(monkeypatch):
    """The figures that :func:`plotting.save` writes, kept open (not closed) so that a test can measure them."""
    figures, close = [], plotting.plt.close
    monkeypatch.setattr(plotting.plt, "close", figures.append)
    yield figures
    for fig in figures:
        close(fig)


@pytest.mark.parametrize("figure", ["fig12", "fig13"])
def test_footer_fits_the_page_at_paper_scale(tmp_path, kept, figure):
    """Issue: fig12's footer (4.8 in wide) ran off both edges of the page. It is wrapped inside it now."""
    specs = {"fig12": [("convnet", "known"), ("convnet", "unknown")], "fig13": [("convnet", "known"),
             ("alexnet_head", "known")]}[figure]  # fmt: skip
    entries = [entry(i, model=m, theta0=t, rep=rep) for i, (m, t) in enumerate(specs) for rep in range(5)]
    epsilon_figure(entries, tmp_path / "f.pdf", tmp_path / "f.csv", figure=figure, scale="paper",
                   code_version="0123456789ab")
    check_pdf(tmp_path / "f.pdf")
    (fig,) = kept
    check_footer_inside(fig)


def test_fig2_spans_each_period_to_its_own_last_step(tmp_path):
    entries = [entry(1, period=5, steps=np.array([5, 625, 1250])), entry(2, period=25, steps=np.array([25, 6250]))]
    summary = epsilon_figure(entries, tmp_path / "f.pdf", tmp_path / "f.csv", figure="fig2", scale="smoke")
    assert summary.groupby("panel")["step"].max().to_dict() == {"(a) ConvNet, k = 5, C = 1": 1250,
                                                               "(b) ConvNet, k = 25, C = 1": 6250}  # fmt: skip


@pytest.mark.parametrize(
    ("figure", "kwargs", "needle"),
    [
        ("fig1", {"clip_norm": 3.0}, "clip_norm=3"),
        ("fig2", {"period": 1}, "period=1"),
        ("fig5", {"adversary": "label_flip"}, "adversary=label_flip"),
        ("fig12", {"model": "resnet18_gn"}, "model=resnet18_gn"),
        ("fig2", {"model": "vgg"}, "unknown model 'vgg'"),
        ("fig2", {"theta0": "random"}, "unknown theta0 'random'"),
    ],
)
def test_an_audit_that_fits_no_panel_is_an_error_naming_it(tmp_path, figure, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        if figure == "fig1":
            cifar.plot_fig1(cifar.fig1_table([entry(0, **kwargs)], []), pdf=tmp_path / "f.pdf",
                            csv=tmp_path / "f.csv", facts={"scale": "smoke"})
        else:
            epsilon_figure([entry(0, **kwargs)], tmp_path / "f.pdf", tmp_path / "f.csv", figure=figure, scale="smoke")
    assert not list(tmp_path.iterdir()), "nothing written"


def test_unknown_figure_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="'fig9'"):
        epsilon_figure([entry(0)], tmp_path / "f.pdf", tmp_path / "f.csv", figure="fig9", scale="smoke")


# ------------------------------------------------------------------------------------------ privacy profiles


def test_fig11_profiles_are_the_gdp_formula(tmp_path, footers):
    # k = 1 and 5 (two repetitions each); k = 25 not run: its panel says so.
    entries = [entry(10 * k + rep, period=k, rep=rep) for k in (1, 5) for rep in range(2)]
    summary = cifar.plot_fig11(cifar.cifar_table(entries), pdf=tmp_path / "fig11.pdf", csv=tmp_path / "fig11.csv",
                               facts={"scale": "smoke", "periods": (1, 5, 25)})
    check_pdf(tmp_path / "fig11.pdf")
    csv = pd.read_csv(tmp_path / "fig11.csv")
    assert set(csv["period"]) == {1, 5} and set(csv["curve"]) == {"empirical", "theoretical"}
    assert set(csv["data_source"]) == {SOURCE} and set(csv["scale"]) == {"smoke"} and set(csv["threshold_rule"]) == {"paper"}
    for k in (1, 5):
        last = pd.concat([a for r, a in entries if r["period"] == k]).query(f"step == {5 * k}")
        for curve, mu in (("empirical", last["mu"].mean()), ("theoretical", last["mu_upper"].iloc[0])):
            rows = csv[(csv.period == k) & (csv.curve == curve)]
            assert rows["mu"].iloc[0] == pytest.approx(mu) and set(rows["step"]) == {5 * k}
            eps = rows["epsilon"].to_numpy()
            closed = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
            np.testing.assert_allclose(rows["delta"], closed, rtol=1e-6, atol=1e-15)
        assert summary.set_index("period").loc[k, "mu"] == pytest.approx(last["mu"].mean())
    # 5 insertions at σ = 4 for both k: theoretical μ = √5 / 4
    assert summary["mu_upper"].tolist() == pytest.approx([np.sqrt(5) / 4] * 2)
    assert f"data={SOURCE}" in footers[-1] and "reps=2" in footers[-1]
    assert "not run at this scale" in footers.texts  # k = 25


# ------------------------------------------------------------------------------------------------ trade-off


def test_fig6a_empirical_curve_is_counted_at_each_threshold(tmp_path, footers):
    steps = np.array([5, 10])
    scores = gaussian_scores(3, steps=steps, level=0.5)
    ref, _ = entry(0, period=5)
    audit = audit_table(scores, delta=1e-5, confidence=0.95, rule=parse_rule("paper"), noise_multiplier=4.0, period=5)
    summary = cifar.plot_fig6a(cifar.fig6a_table(ref, audit, scores), pdf=tmp_path / "fig6a.pdf",
                               csv=tmp_path / "fig6a.csv", facts={"scale": "smoke"})
    check_pdf(tmp_path / "fig6a.pdf")
    csv = pd.read_csv(tmp_path / "fig6a.csv")
    assert set(csv["step"]) == {10} and set(csv["data_source"]) == {SOURCE} and set(csv["threshold_rule"]) == {"paper"}
    emp = csv[csv.curve == "empirical"]
    at = scores[scores.step == 10]
    s0, s1 = np.sort(at[at.bit == 0]["score"].to_numpy()), at[at.bit == 1]["score"].to_numpy()
    for tau in ((s0[40] + s0[41]) / 2, (s0[90] + s0[91]) / 2, -np.inf):  # "inserted" when score > τ
        fpr, fnr = np.mean(s0 > tau), np.mean(s1 < tau)
        assert ((np.isclose(emp["fpr"], fpr)) & np.isclose(emp["fnr"], fnr)).any(), (tau, fpr, fnr)
    assert len(emp) == RUNS + 1 == summary["points"].iloc[0]
    mu = audit.set_index("step").loc[10, "mu"]
    fit = csv[csv.curve == "gdp_fit"]
    np.testing.assert_allclose(fit["fnr"], stats.norm.cdf(stats.norm.ppf(1 - fit["fpr"]) - mu), atol=1e-12)
    assert summary["mu"].iloc[0] == pytest.approx(mu) and csv["mu"].tolist() == pytest.approx([mu] * len(csv))
    point = csv[csv.curve == "audit_threshold"].iloc[0]
    assert point["fpr"] == pytest.approx(audit["fpr_upper"].iloc[1]) and "step=10" in footers[-1]


def test_fig6a_refuses_a_step_it_does_not_have(tmp_path):
    scores = gaussian_scores(3, steps=np.array([5]), level=0.5)
    audit = audit_table(scores, delta=1e-5, confidence=0.95, rule=parse_rule("paper"), noise_multiplier=4.0, period=5)
    with pytest.raises(ValueError, match="step 7"):
        cifar.fig6a_table(entry(0)[0], audit, scores, step=7)
    two = gaussian_scores(3, steps=np.array([5, 10]), level=0.5)
    table = cifar.fig6a_table(entry(0)[0], audit_table(two, delta=1e-5, confidence=0.95, rule=parse_rule("paper"),
                                                       noise_multiplier=4.0, period=5), two, step=10)
    with pytest.raises(ValueError, match="one step"):
        cifar.plot_fig6a(pd.concat([table, table.assign(step=5)]), pdf=tmp_path / "f.pdf", csv=tmp_path / "f.csv",
                         facts={"scale": "s"})


# ------------------------------------------------------------------------------------------- gradient norms


def norms_table(models=("convnet", "resnet18_gn"), runs=30, steps=20) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    frames = []
    for i, model in enumerate(models):
        base = (1.5 + i) * np.exp(-np.arange(1, steps + 1) / 10)
        norm = np.abs(base[None, :] + rng.normal(0, 0.2, (runs, steps)))
        frames.append(
            pd.DataFrame(
                {
                    "model": model,
                    "run": np.repeat(np.arange(runs), steps),
                    "step": np.tile(np.arange(1, steps + 1), runs),
                    "norm": norm.reshape(-1),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)  # fmt: skip


@pytest.mark.parametrize("models", [("convnet", "resnet18_gn"), ("convnet",)])
def test_fig8_mean_and_two_sd_per_model_and_step(tmp_path, footers, models):
    norms = norms_table(models)
    out = cifar.plot_fig8(norms, pdf=tmp_path / "fig8.pdf", csv=tmp_path / "fig8.csv",
                          facts={"scale": "paper", "data_source": SOURCE, "clip_norm": 1.0})
    check_pdf(tmp_path / "fig8.pdf")
    csv = pd.read_csv(tmp_path / "fig8.csv")
    assert list(csv.columns) == ["model", "step", "runs", "mean", "sd", "lower", "upper", "world", "data_source",
                                 "scale"]  # fmt: skip
    assert (
        len(csv) == 20 * len(models) and set(csv["runs"]) == {30} and list(dict.fromkeys(csv["model"])) == list(models)
    )
    part = norms[(norms.model == models[-1]) & (norms.step == 7)]["norm"]
    row = csv[(csv.model == models[-1]) & (csv.step == 7)].iloc[0]
    assert row["mean"] == pytest.approx(part.mean()) and row["sd"] == pytest.approx(part.std(ddof=1))
    assert row["lower"] == pytest.approx(part.mean() - 2 * part.std(ddof=1))
    assert row["upper"] == pytest.approx(part.mean() + 2 * part.std(ddof=1))
    assert out["mean"].tolist() == pytest.approx(csv["mean"].tolist())
    assert f"data={SOURCE}" in footers[-1] and "scale=paper" in footers[-1] and "runs=30" in footers[-1]
    assert ("ResNet18-GN: not run at this scale" in footers.texts) == (len(models) == 1)


def test_fig8_plots_the_canary_runs_only(tmp_path, footers):
    """A shard's bit-0 half never saw the canary: its norms (here shifted by +100) must not enter fig8."""
    norms = norms_table(("convnet",), runs=30)
    norms["bit"] = (norms["run"] % 2 == 0).astype(int)
    norms.loc[norms["bit"] == 0, "norm"] += 100.0
    out = cifar.plot_fig8(norms, pdf=tmp_path / "fig8.pdf", csv=tmp_path / "fig8.csv",
                          facts={"scale": "paper", "data_source": SOURCE})
    canary = norms[(norms.bit == 1) & (norms.step == 3)]["norm"]
    row = out[out.step == 3].iloc[0]
    assert row["runs"] == 15 and row["mean"] == pytest.approx(canary.mean()) and set(out["world"]) == {"canary"}
    assert "runs=15" in footers[-1] and "canary runs only" in footers[-1]
    with pytest.raises(ValueError, match="canary runs"):
        cifar.plot_fig8(norms[norms.bit == 0], pdf=tmp_path / "f.pdf", csv=tmp_path / "f.csv",
                        facts={"scale": "s", "data_source": SOURCE})


def test_fig8_refuses_a_table_without_norms(tmp_path):
    with pytest.raises(ValueError, match="'norm'"):
        cifar.plot_fig8(norms_table().drop(columns="norm"), pdf=tmp_path / "f.pdf", csv=tmp_path / "f.csv",
                        facts={"scale": "s", "data_source": SOURCE})


# --------------------------------------------------------------------------------------------------- table 2


def test_table2_is_generated_from_the_families_it_is_given(tmp_path):
    families = [
        {"dataset": "housing", "model": "fcnn", "figures": ["fig1c", "fig4", "fig7"], "batch_size": 400, "lr": 0.1,
         "noise_multiplier": 4.0, "clip_norm": 1.0, "period": 1, "steps": 250, "runs": 5000, "delta": 1e-5,
         "repetitions": 5, "data_source": "housing:sklearn"},
        {"dataset": "cifar10", "model": "convnet", "figures": ["fig1"], "batch_size": 128, "lr": 0.01,
         "noise_multiplier": 4.0, "clip_norm": [1.0, 2.0, 4.0], "period": 1, "steps": 250, "runs": 5000,
         "delta": 1e-5, "repetitions": 1, "data_source": SOURCE, "trainable_params": 62006},
    ]  # fmt: skip
    out = write_table2(pd.DataFrame(families, dtype=object), pdf=tmp_path / "table2.md", csv=tmp_path / "table2.csv",
                       facts={"scale": "smoke", "code_version": "c1"})
    md = (tmp_path / "table2.md").read_text()
    heads = [f"{model_spec(m).label} ({f})" for m, f in (("fcnn", "fig1c, fig4, fig7"), ("convnet", "fig1"))]
    assert f"| Hyper-parameter | {' | '.join(heads)} |" in md  # each model headed by its registry label
    assert "| Clipping norm (C) | 1 | 1, 2, 4 |" in md
    assert "| Learning rate (η) | 0.1 | 0.01 |" in md and "| Failure probability (δ) | 1e-05 | 1e-05 |" in md
    assert "| Trainable params | – | 62006 |" in md and f"| Data source | housing:sklearn | {SOURCE} |" in md
    assert "scale=smoke" in md and "code=c1" in md
    csv = pd.read_csv(tmp_path / "table2.csv", dtype=str, keep_default_na=False)
    assert len(csv) == 2 and csv["clip_norm"].tolist() == ["1", "1, 2, 4"] and set(csv["scale"]) == {"smoke"}
    assert list(out.columns[:4]) == ["dataset", "model", "figures", "trainable_params"]
    families[1]["batch_size"] = 256  # a different configuration, a different table
    write_table2(pd.DataFrame(families, dtype=object), pdf=tmp_path / "t.md", csv=tmp_path / "t.csv",
                 facts={"scale": "smoke"})
    assert "| Batch size | 400 | 256 |" in (tmp_path / "t.md").read_text()


def test_table2_refuses_no_families(tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        write_table2(pd.DataFrame(), pdf=tmp_path / "t.md", csv=tmp_path / "t.csv", facts={"scale": "smoke"})
