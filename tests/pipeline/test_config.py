"""Config presets and schema validation (the workflow refuses a bad config before any job runs)."""

from __future__ import annotations

import pytest

from conftest import run_snakemake
import yaml

from conftest import REPO
from hsaudit.pipeline.config import deep_merge, explicit_values, load_yaml, preset_overrides, resolve_scale, user_values


def test_deep_merge_overrides_only_named_keys():
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 2}
    out = deep_merge(base, {"a": {"y": [3]}})
    assert out == {"a": {"x": 1, "y": [3]}, "b": 2}
    assert base["a"]["y"] == [1, 2], "the base must not be modified"


def test_resolve_scale_applies_the_selected_preset():
    config = {"scale": "smoke", "sec": {"r": 1000, "t": 25}, "scales": {"smoke": {"sec": {"r": 10}}}}
    assert resolve_scale(config)["sec"] == {"r": 10, "t": 25}
    assert resolve_scale({**config, "scale": "paper"})["sec"] == {"r": 1000, "t": 25}


def test_explicit_values_are_the_leaves_that_differ_from_the_defaults():
    defaults = {"scale": "paper", "a": {"x": 1, "y": {"z": 2, "w": 3}}, "b": [1, 2]}
    given = {"scale": "paper", "a": {"x": 1, "y": {"z": 5, "w": 3}}, "b": [1, 2], "new": {"k": 0}}
    assert explicit_values(given, defaults) == {"a": {"y": {"z": 5}}, "new": {"k": 0}}
    assert explicit_values(defaults, defaults) == {}


def test_an_explicit_value_wins_over_the_preset():
    """--config scale=smoke --configfile my.yaml: my.yaml's data source survives the smoke preset."""
    raw = load_yaml(REPO / "config" / "config.yaml")
    mine = {"scale": "smoke", "cifar10": {"data": {"source": "local", "path": "/data/cifar-10-batches-py"}}}
    given = deep_merge(raw, mine)  # what snakemake hands the workflow
    explicit = explicit_values(mine, raw)
    resolved = resolve_scale(given, explicit=explicit)
    assert resolved["cifar10"]["data"]["source"] == "local"
    assert resolved["cifar10"]["data"]["path"] == "/data/cifar-10-batches-py"
    # The rest of the preset still applies (here: the smoke set sizes of the same section).
    smoke = raw["scales"]["smoke"]["cifar10"]["data"]
    assert all(resolved["cifar10"]["data"][k] == v for k, v in smoke.items() if k not in mine["cifar10"]["data"])
    # Without the explicit values, the preset would have won (the bug this guards against).
    assert resolve_scale(given)["cifar10"]["data"]["source"] == smoke["source"]
    lines = preset_overrides(given, explicit)
    assert lines == [f"cifar10.data.source: 'local' (scale preset 'smoke': cifar10.data.source = {smoke['source']!r})"]


def test_a_value_equal_to_the_default_leaves_the_preset_in_charge():
    """Passing config/config.yaml again (README's examples do) must not undo the preset."""
    raw = load_yaml(REPO / "config" / "config.yaml")
    given = {**raw, "scale": "smoke"}
    explicit = explicit_values(given, raw)
    assert explicit == {"scale": "smoke"}
    assert resolve_scale(given, explicit=explicit) == resolve_scale(given)


def test_an_overlay_value_equal_to_the_papers_wins_over_the_preset(tmp_path):
    """An overlay's every value is the user's, even the paper's own: ``models_per_world: 1000`` in an overlay at
    ``scale=laptop`` trains 1,000 models per world (before, it equalled config/config.yaml's value, so the laptop
    preset's 100 silently won); a full copy of the config counts only where it differs; --config wins over files."""
    raw = load_yaml(REPO / "config" / "config.yaml")
    paper_r = raw["steinke"]["fig2"]["models_per_world"]
    assert raw["scales"]["laptop"]["steinke"]["fig2"]["models_per_world"] != paper_r  # the preset changes it
    overlay = tmp_path / "mine.yaml"
    overlay.write_text(f"steinke:\n  fig2:\n    models_per_world: {paper_r}\n")
    full = tmp_path / "copy.yaml"
    edited = deep_merge(raw, {"steinke": {"fig2": {"lr": 0.25}}})
    full.write_text(yaml.safe_dump(edited))
    config_yaml = REPO / "config" / "config.yaml"
    explicit = user_values([config_yaml, overlay], {"scale": "laptop"}, raw)
    assert explicit == {"steinke": {"fig2": {"models_per_world": paper_r}}, "scale": "laptop"}
    given = deep_merge(raw, explicit)
    assert resolve_scale(given, explicit=explicit)["steinke"]["fig2"]["models_per_world"] == paper_r
    assert resolve_scale(given)["steinke"]["fig2"]["models_per_world"] != paper_r  # the preset, without it
    assert user_values([full], {}, raw) == {"steinke": {"fig2": {"lr": 0.25}}}  # a copy: only its edit
    assert user_values([config_yaml], {"scale": "smoke"}, raw) == {"scale": "smoke"}  # README's form
    assert user_values([overlay], {"steinke": {"fig2": {"models_per_world": 7}}}, raw)["steinke"]["fig2"] == {
        "models_per_world": 7
    }
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(ValueError, match="mapping"):
        user_values([bad], {}, raw)


def test_workflow_names_the_values_that_beat_the_preset(workflow_copy):
    mine = workflow_copy / "my.yaml"
    mine.write_text(
        "cifar10:\n  data:\n    source: local\n    path: /data/cifar-10-batches-py\n"
        "steinke:\n  fig2:\n    models_per_world: 1000\n"  # the paper's value, which the smoke preset changes
    )
    proc = run_snakemake(
        workflow_copy, "-n", "--config", "scale=smoke", "--configfile", "config/config.yaml", str(mine), check=False
    )
    out = proc.stdout + proc.stderr
    assert "your value wins over the preset: cifar10.data.source: 'local'" in out, out
    assert "your value wins over the preset: steinke.fig2.models_per_world: 1000" in out, out


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


SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def _without_defaulted_keys(config, schema, where):
    """``config`` less every optional key whose schema gives a default (so that validation has to fill them back in)."""
    if "$ref" in schema:  # another file's schema (a reference inside a file is not followed: its keys stay)
        ref = schema["$ref"]
        schema = {} if ref.startswith("#") else load_yaml(where / ref)
    if not isinstance(config, dict):
        return config
    props, required = schema.get("properties", {}), set(schema.get("required", ()))
    return {
        k: _without_defaulted_keys(v, props.get(k, {}), where)
        for k, v in config.items()
        if k in required or not (isinstance(props.get(k), dict) and "default" in props[k])
    }


@pytest.mark.parametrize("scale", ["paper", "laptop", "smoke"])
def test_validate_config_fills_the_defaults_snakemake_would(scale):
    # validate_config replaces snakemake.utils.validate in the Snakefile (schemas parsed once instead of on every
    # $ref lookup): the config it leaves must be the one Snakemake's validate leaves, or every job's params (and
    # code versions) would change.
    import copy

    from snakemake.utils import validate

    from hsaudit.pipeline.config import validate_config

    raw = load_yaml(REPO / "config" / "config.yaml")
    full = resolve_scale({**raw, "scale": scale})
    sparse = _without_defaulted_keys(full, load_yaml(SCHEMA), SCHEMA.parent)
    assert sparse != full  # the schema has defaults to fill
    for config in (full, sparse):
        ours, theirs = copy.deepcopy(config), copy.deepcopy(config)
        validate(theirs, str(SCHEMA))
        validate_config(ours, str(SCHEMA))
        assert ours == theirs


def test_validate_config_rereads_an_edited_schema(tmp_path):
    from hsaudit.pipeline.config import validate_config

    schema = tmp_path / "config.schema.yaml"
    schema.write_text("$schema: https://json-schema.org/draft/2020-12/schema\ntype: object\n"
                      "properties:\n  a: {$ref: part.schema.yaml}\n")
    (tmp_path / "part.schema.yaml").write_text("type: object\nproperties:\n  b: {type: integer, default: 1}\n")
    config = {"a": {}}
    validate_config(config, str(schema))
    assert config == {"a": {"b": 1}}
    (tmp_path / "part.schema.yaml").write_text("type: object\nproperties:\n  b: {type: integer, default: 2}\n"
                                                "additionalProperties: false\n")
    config = {"a": {}}
    validate_config(config, str(schema))
    assert config == {"a": {"b": 2}}
    with pytest.raises(ValueError, match="a: Additional properties"):
        validate_config({"a": {"c": 0}}, str(schema))


# ------------------------------------------------------------------------------ schemas read the registries
def _registries() -> dict[str, tuple[str, ...]]:
    from hsaudit.audit.rules import rule_names
    from hsaudit.engine.canaries import BACKGROUNDS, CANARIES
    from hsaudit.engine.models import model_names
    from hsaudit.util.scores import SCORES

    return {"rules": rule_names(), "models": model_names(), "canaries": tuple(CANARIES),
            "backgrounds": tuple(BACKGROUNDS), "scores": tuple(SCORES)}  # fmt: skip


def _static_enums(node, path=""):
    if isinstance(node, dict):
        if "enum" in node:
            yield path, set(node["enum"])
        for key, value in node.items():
            yield from _static_enums(value, f"{path}.{key}")
    elif isinstance(node, list):
        for value in node:
            yield from _static_enums(value, path)


def test_no_schema_spells_a_registrys_names():
    """An enum made of a registry's names would need an edit for every new entry: it names the registry instead
    (x-rules, x-enum, x-models; hsaudit.pipeline.config.REGISTRY_MARKERS)."""
    spelled = [(f.name, path, registry) for f in sorted(SCHEMA.parent.glob("*.yaml"))
               for path, enum in _static_enums(load_yaml(f))
               for registry, names in _registries().items() if len(enum) > 1 and enum <= set(names)]  # fmt: skip
    assert spelled == []


def _config_with(section: str, path: tuple[str, ...], value) -> dict:
    config = resolve_scale(load_yaml(REPO / "config" / "config.yaml"))
    node = config[section]
    if section == "byo":
        node = next(iter(node.values()))
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


def test_a_new_canary_background_and_score_are_config_values(monkeypatch):
    from hsaudit.engine import canaries
    from hsaudit.experiments.byo import values
    from hsaudit.pipeline.config import config_errors

    cases = {("canary",): "toy_canary", ("background",): "toy_background", ("score",): "toy_score"}
    for path, name in cases.items():
        assert any(f"'{name}' is not one of" in e for e in config_errors(_config_with("byo", path, name), str(SCHEMA)))
    monkeypatch.setitem(canaries.CANARIES, "toy_canary", canaries.CANARIES["blank"])
    monkeypatch.setattr(canaries, "BACKGROUNDS", {**canaries.BACKGROUNDS, "toy_background": None})
    monkeypatch.setattr(values, "SCORES", (*values.SCORES, "toy_score"))
    for path, name in cases.items():
        assert config_errors(_config_with("byo", path, name), str(SCHEMA)) == []


def test_a_section_offers_exactly_the_registry_models_its_data_fits(monkeypatch):
    """A model is offered by every section whose data its input fits (its spec's input shape against the datasets'
    example shapes, or the feature extractor a section computes), and by no other."""
    from hsaudit.engine import models as M
    from hsaudit.pipeline.config import config_errors, fitting_models

    places = {"housing": ("model",), "cifar10": ("model",), "steinke": ("fig2", "model")}
    toys = {"toy_image": ((3, 32, 32), None, {"cifar10", "steinke"}), "toy_table": ((8,), None, {"housing"}),
            "toy_head": ((4096,), "alexnet", {"cifar10"}), "toy_odd": ((7,), None, set())}  # fmt: skip
    for name, (shape, features, offered) in toys.items():
        spec = M.ModelSpec(name=name, builder=lambda: None, input_shape=shape, outputs=2, feature_extractor=features)
        monkeypatch.setitem(M.REGISTRY, name, lambda spec=spec: spec)
        for section, path in places.items():
            errors = config_errors(_config_with(section, path, name), str(SCHEMA))
            assert (errors == []) == (section in offered), (name, section, errors)
    offered = {n for datasets, features in ((("housing",), ()), (("cifar10",), ("alexnet",)), (("cifar10", "mnist"), ()))
               for n in fitting_models(datasets, features)}  # fmt: skip
    assert offered >= set(M.model_names()) - set(toys)  # every registered model is offered somewhere
