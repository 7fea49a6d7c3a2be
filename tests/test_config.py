"""Config presets and schema validation (the workflow refuses a bad config before any job runs)."""

from __future__ import annotations

import pytest

from conftest import run_snakemake
from hsaudit.pipeline.config import deep_merge, resolve_scale


def test_deep_merge_overrides_only_named_keys():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2}
    out = deep_merge(base, {"a": {"y": [3]}})
    assert out == {"a": {"x": 1, "y": [3]}, "b": 2}
    assert base["a"]["y"] == [1, 2], "the base must not be modified"


def test_resolve_scale_applies_the_selected_preset():
    config = {"scale": "smoke", "sec": {"r": 1000, "t": 25}, "scales": {"smoke": {"sec": {"r": 10}}}}
    assert resolve_scale(config)["sec"] == {"r": 10, "t": 25}
    assert resolve_scale({**config, "scale": "paper"})["sec"] == {"r": 1000, "t": 25}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"scale": "huge"}, "scale must be one of"),
        ({"scale": "smoke", "sec": {"r": 1}, "scales": {"smoke": {"sec": {"rr": 2}}}}, "scales.smoke.sec.rr"),
    ],
)
def test_resolve_scale_rejects_bad_presets(config, message):
    with pytest.raises(ValueError, match=message):
        resolve_scale(config)


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("audit={'delta': 2}", "delta"),
        ("audit={'confidence': 0}", "confidence"),
        ("audit={'mode': 'magic'}", "mode"),
        ("audti={'delta': 1e-5}", "audti"),
        ("scale=enormous", "scale"),
    ],
)
def test_workflow_rejects_bad_config_naming_the_key(workflow_copy, override, needle):
    proc = run_snakemake(workflow_copy, "-n", "--config", override, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert needle in out, out


def test_dry_run_of_the_default_target(workflow_copy):
    run_snakemake(workflow_copy, "-n")


def test_inferred_choices_are_read_with_their_dotted_keys(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "sec:\n  # plain key\n  a: 1\n  # chosen by us [inferred]\n  sub:\n    # also [inferred: silent]\n    b: [1, 2]\n"
        "scales:\n  smoke:\n    # [inferred] presets are not decisions\n    x: 1\n"
    )
    from hsaudit.pipeline.config import inferred_choices

    assert [(k, v) for k, v, _ in inferred_choices(cfg)] == [("sec.sub", "(section)"), ("sec.sub.b", "[1, 2]")]


def test_decisions_doc_is_up_to_date():
    from conftest import REPO
    from hsaudit.pipeline.config import decisions_markdown

    expected = decisions_markdown(REPO / "config" / "config.yaml")
    assert (REPO / "docs" / "decisions.md").read_text() == expected, "regenerate docs/decisions.md (see its header)"
