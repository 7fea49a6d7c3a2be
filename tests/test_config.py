"""Config presets and schema validation (the workflow refuses a bad config before any job runs)."""

from __future__ import annotations

import pytest

from conftest import run_snakemake
from hsaudit.config import deep_merge, resolve_scale


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
