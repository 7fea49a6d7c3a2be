"""The canary registry (hsaudit.engine.canaries): every entry builds what it says, values round-trip, and a new canary
type is one entry that the harness audits with no other change."""

from __future__ import annotations

import numpy as np
import pytest

from byo_testing import zoo_entry
from hsaudit.engine import canaries
from hsaudit.engine.canaries import (
    BACKGROUNDS,
    CANARIES,
    CanarySource,
    CanaryType,
    GradientCanary,
    InputCanary,
    canary_arrays,
    canary_from_arrays,
    canary_type,
)
from hsaudit.experiments.byo.api import audit_training
from hsaudit.experiments.byo.audit import AuditOptions
from hsaudit.experiments.byo.values import Design

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _data(n=60, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.standard_normal((n, d)).astype(np.float32) + y[:, None]
    return x, y


def test_mislabelled_takes_an_example_with_a_wrong_label():
    x, y = _data()
    c = canary_type("mislabelled")(CanarySource(x, y, classes=3, seed=4))
    i = c.source_index
    assert np.array_equal(c.x, x[i]) and int(c.y) != int(y[i]) and int(c.y) == (int(y[i]) + 1) % 3


def test_mislabelled_takes_the_reference_models_least_likely_class():
    x, y = _data()
    logits = np.array([0.0, -5.0, 3.0])  # class 1 is the least likely everywhere
    c = canary_type("mislabelled")(CanarySource(x, y, classes=3, seed=1, reference=lambda xs: np.tile(logits, (len(xs), 1))))
    assert int(c.y) == (1 if int(y[c.source_index]) != 1 else 0)


def test_out_of_support_lies_outside_the_data_along_its_least_variance():
    x, y = _data(d=5)
    c = canary_type("out_of_support")(CanarySource(x, y, classes=3, seed=0))
    mean = x.mean(0)
    radius = np.linalg.norm(x - mean, axis=1).max()
    assert np.linalg.norm(c.x - mean) == pytest.approx(canaries.OUT_OF_SUPPORT_AMPLITUDE * radius, rel=1e-5)
    v = (c.x - mean) / np.linalg.norm(c.x - mean)
    variances = np.linalg.eigvalsh(np.cov((x - mean).T))
    assert np.var((x - mean) @ v, ddof=1) == pytest.approx(variances.min(), rel=1e-4)  # the last principal axis
    assert int(c.y) == int(np.argmin(np.bincount(y, minlength=3)))  # without a reference: the rarest class


def test_out_of_support_is_orthogonal_to_the_data_when_features_outnumber_examples():
    x, y = _data(n=8, d=30)
    c = canary_type("out_of_support")(CanarySource(x, y, classes=3, seed=2))
    centred = x - x.mean(0)
    assert np.abs(centred @ (c.x - x.mean(0))).max() < 1e-3 * np.linalg.norm(c.x - x.mean(0))


def test_dirac_is_one_coordinate_with_a_gradient_far_above_the_clipping_norm():
    x, y = _data()
    c = canary_type("dirac")(CanarySource(x, y, classes=3, parameters=40, clip_norm=2.0, seed=3))
    assert isinstance(c, GradientCanary) and np.count_nonzero(c.direction) == 1
    assert c.direction[c.coordinate] == 1.0 and c.norm == canaries.DIRAC_NORM * 2.0
    assert not np.any(c.x)


def test_dirac_avoids_the_biases_it_is_told_of():
    """Every coordinate drawn avoids the biases; where the first draw is a weight it is the coordinate drawn without
    them (so a training whose layout is unknown keeps the same draw)."""
    x, y = _data()
    biases = tuple(range(30, 40))  # e.g. a Linear(.., 10)'s bias at the end
    for seed in range(50):
        plain = canaries.dirac_coordinate(40, seed)
        c = canary_type("dirac")(CanarySource(x, y, classes=3, parameters=40, seed=seed, biases=biases))
        assert c.coordinate not in biases and (plain in biases or c.coordinate == plain)
    with pytest.raises(ValueError, match="not avoided"):
        canaries.dirac_coordinate(3, 0, avoid=(0, 1, 2))


def test_the_harness_names_a_modules_biases():
    import torch

    from hsaudit.experiments.byo.train.harness import bias_coordinates

    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    assert bias_coordinates(model) == (6, 7, 10) and bias_coordinates(torch.zeros(11)) is None


def test_the_worst_case_dataset_opposes_the_canary():
    """``copies`` and ``opposing`` agree on x0 = a·e_f; for a 2-class logistic model the canary's gradient is exactly
    opposite to every background row's, so clipped it is minus theirs (Nasr et al. 2021)."""
    x, y = _data(classes=2)
    bx, by = BACKGROUNDS["copies"](x, y, size=0, seed=0)
    c = canary_type("opposing")(CanarySource(x, y, classes=2))
    x0 = np.zeros(5, np.float32)
    x0[canaries.WORST_CASE_FEATURE] = canaries.WORST_CASE_AMPLITUDE
    assert bx.shape == x.shape and (bx == x0).all() and not by.any() and np.array_equal(c.x, x0) and int(c.y) == 1
    w, b = np.random.default_rng(0).standard_normal((2, 5)), np.array([0.3, -0.1])

    def grad(xi, yi):  # cross-entropy of softmax(W x + b): (p − e_y) ⊗ (x, 1)
        z = w @ xi + b
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        r = p - np.eye(2)[yi]
        return np.concatenate([np.outer(r, xi).ravel(), r])

    def clipped(g):  # C = 1: both norms are far above it at a = 10
        return g / np.linalg.norm(g)

    g_canary, g_row = grad(c.x, int(c.y)), grad(bx[0], int(by[0]))
    assert min(np.linalg.norm(g_canary), np.linalg.norm(g_row)) > 1.0
    np.testing.assert_allclose(clipped(g_canary), -clipped(g_row), rtol=1e-12, atol=1e-12)
    opts = {"amplitude": 3.0, "feature": 2}
    bx, _ = BACKGROUNDS["copies"](x, y, size=0, seed=0, options=opts)
    c = canary_type("opposing")(CanarySource(x, y, classes=2, options=opts))
    assert np.array_equal(bx[0], c.x) and c.x[2] == 3.0


def test_the_worst_case_dataset_needs_classes():
    x, _ = _data()
    y = np.linspace(0.0, 1.0, len(x)).astype(np.float32)
    with pytest.raises(ValueError, match="class labels"):
        BACKGROUNDS["copies"](x, y, size=0, seed=0)
    with pytest.raises(ValueError, match="class labels"):
        canary_type("opposing")(CanarySource(x, y, classes=None))
    with pytest.raises(ValueError, match="takes the options"):
        BACKGROUNDS["copies"](x, _data()[1], size=0, seed=0, options={"a": 1})


def test_regression_targets():
    x, _ = _data()
    y = np.linspace(0.0, 1.0, len(x)).astype(np.float32)
    c = canary_type("out_of_support")(CanarySource(x, y, classes=None, seed=0))
    assert float(c.y) == pytest.approx(y.mean() + 4 * y.std(), rel=1e-5)
    with pytest.raises(ValueError, match="class labels"):
        canary_type("mislabelled")(CanarySource(x, y, classes=None))


@pytest.mark.parametrize("name", list(CANARIES))
def test_values_round_trip(name):
    x, y = _data()
    c = CANARIES[name](CanarySource(x, y, classes=3, parameters=20, clip_norm=1.0, seed=5))
    back = canary_from_arrays(canary_arrays(c))
    assert type(back) is type(c) and back.origin == c.origin and np.array_equal(back.x, c.x)
    assert all(getattr(back, f) == getattr(c, f) for f in ("source_index", "coordinate", "norm") if hasattr(c, f))


def test_backgrounds():
    x, y = _data()
    bx, by = BACKGROUNDS["blank"](x, y, size=0, seed=0)
    assert not bx.any() and np.array_equal(by, y)
    sx, sy = BACKGROUNDS["subset"](x, y, size=7, seed=1)
    assert sx.shape == (7, 5) and all(any(np.array_equal(r, row) for row in x) for r in sx)
    with pytest.raises(ValueError, match="subset"):
        BACKGROUNDS["subset"](x, y, size=len(x) + 1, seed=0)


def test_unknown_names_and_kinds_are_errors():
    with pytest.raises(ValueError, match="unknown canary 'nope'"):
        canary_type("nope")
    with pytest.raises(ValueError, match="kind"):
        CanaryType("bad", "sound", lambda s: None, "")
    wrong = CanaryType("wrong", "gradient", canaries.mislabelled, "says gradient, builds an input")
    with pytest.raises(ValueError, match="returned"):
        wrong(CanarySource(*_data(), classes=3))


def test_a_new_canary_type_is_one_entry(monkeypatch):
    """A toy canary — the data's first example, relabelled — registered in CANARIES alone is audited end to end."""

    def first_example(source: CanarySource) -> InputCanary:
        x, y = source.candidates()  # the data here: the byo path gives no pool
        shift = int(source.options.get("shift", 1))
        return InputCanary(x=x[0].copy(), y=np.array((int(y[0]) + shift) % source.classes),
                           origin="the first example, relabelled", source_index=source.data_row(0))  # fmt: skip

    toy = CanaryType("toy", "input", first_example, "a test's canary", options=("shift",))
    monkeypatch.setitem(CANARIES, "toy", toy)
    result = audit_training(Design(entry=zoo_entry("no_clipping"), canary="toy", runs=30, seed=1), AuditOptions())
    assert result.report.details["canary origin"] == "the first example, relabelled"
    assert len(result.scores) == 60 and result.report.verdict == "violation", result.report.reason  # no clipping
    x, y = _data()
    assert int(canary_type("toy")(CanarySource(x, y, classes=3, options={"shift": 2})).y) == (int(y[0]) + 2) % 3


def test_the_dirac_gradient_is_one_function_for_every_paper():
    """C·e_d is canaries.dirac_gradient: the dirac entry's direction, its family form Σ_j b_ij C e_{d_j}, and the
    entries that declare a family form draw distinct canaries from distinct seeds."""
    p, coords = 12, np.array([2, 7, 5])
    bits = np.array([[1, 0, 1], [0, 0, 0]])
    family = canaries.dirac_gradient(p, coords, norm=1.5, bits=bits)
    assert family.dtype == np.float32 and family.shape == (2, p)
    one = [canaries.dirac_gradient(p, d, norm=1.5) for d in (2, 5)]
    np.testing.assert_array_equal(family[0], one[0] + one[1])
    assert not family[1].any()
    source = canaries.CanarySource(x=np.zeros((4, 3), np.float32), y=np.arange(4) % 2, classes=2, parameters=p)
    value = canaries.canary_type("dirac")(source)
    np.testing.assert_array_equal(value.direction, canaries.dirac_gradient(p, value.coordinate, norm=1.0))
    for bad in ({"coordinates": [2, 2], "bits": [[1, 1]]}, {"coordinates": [p], "bits": [[1]]},
                {"coordinates": [1], "bits": [[2]]}):
        with pytest.raises(ValueError):
            canaries.dirac_gradient(p, bad["coordinates"], norm=1.0, bits=bad["bits"])
    assert {n for n, e in canaries.CANARIES.items() if e.family} >= {"dirac", "mislabelled", "out_of_support"}
    assert not any(canaries.CANARIES[n].family for n in ("blank", "opposing", "clipbkd"))
