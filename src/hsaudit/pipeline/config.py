"""Configuration helpers shared by the workflow and the command line.

The workflow's config has a ``scale:`` preset (``paper``, ``laptop`` or ``smoke``). The values written in
the experiment sections are the paper's; ``scales.<preset>`` holds overrides that are deep-merged on top
of them, so a preset changes only what it names. :func:`resolve_scale` does that merge.

**Precedence.** A value the user sets explicitly (in a ``--configfile`` or with ``--config``) wins over the
preset: ``--config scale=smoke --configfile my.yaml`` with ``cifar10.data.source: local`` in ``my.yaml`` keeps the
local copy although the smoke preset says ``synthetic``. "Explicitly" (:func:`user_values`) means: every value of
``--config`` and of an overlay file (a ``--configfile`` without a ``scales:`` section), even one equal to the
paper's (``models_per_world: 1000`` in an overlay at ``scale=laptop`` trains 1,000 models per world); from a full
copy of the config (a file with ``scales:``, e.g. ``config/config.yaml`` itself, which README's examples pass
again) only the values that differ from ``config/config.yaml`` (:func:`explicit_values`), so that passing it does
not undo the preset. Highest first: your values, the preset, ``config/config.yaml``. The workflow prints each key
where your value overrode the preset's (:func:`preset_overrides`).
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from hsaudit.util.mapping import deep_merge

SCALES = ("paper", "laptop", "smoke")


def load_yaml(path: str | Path) -> Any:
    """A YAML file's value (safe loading), through libyaml's parser when PyYAML has it (the same values, ~10×
    faster: every Snakemake call reads the config and 11 schema files)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=loader)


def explicit_values(given: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The leaves of ``given`` that differ from ``defaults`` (the user's own choices), nested as in ``given``.

    Mappings are compared key by key; anything else (numbers, strings, lists) is a leaf.

    >>> explicit_values({"a": {"x": 1, "y": 2}, "scale": "smoke"}, {"a": {"x": 1, "y": 3}, "scale": "paper"})
    {'a': {'y': 2}, 'scale': 'smoke'}
    """
    out: dict[str, Any] = {}
    for key, value in given.items():
        default = defaults.get(key) if isinstance(defaults, Mapping) else None
        if isinstance(value, Mapping) and isinstance(default, Mapping):
            inner = explicit_values(value, default)
            if inner:
                out[key] = inner
        elif key not in defaults or value != default:
            out[key] = value
    return out


def user_values(
    configfiles: Sequence[str | os.PathLike], config: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The values the user set explicitly, which win over the scale preset (module docstring, "Precedence").

    Args:
        configfiles: the ``--configfile`` paths, in order (later files win, as in Snakemake).
        config: the ``--config`` values (win over every file).
        defaults: ``config/config.yaml``'s values.

    Returns:
        The overlays' values whole, a full copy's (a file with a ``scales:`` section) where they differ from
        ``defaults``, then ``config``, merged in that order.

    >>> user_values([], {"scale": "laptop"}, {"scale": "paper"})
    {'scale': 'laptop'}
    """
    out: dict[str, Any] = {}
    for path in configfiles:
        given = load_yaml(path) or {}
        if not isinstance(given, Mapping):
            raise ValueError(f"{path}: a config file must hold a mapping, got {type(given).__name__}")
        out = deep_merge(out, explicit_values(given, defaults) if "scales" in given else given)
    return deep_merge(out, config)


def _leaves(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_leaves(value, prefix=f"{name}."))
        else:
            out[name] = value
    return out


def preset_overrides(config: Mapping[str, Any], explicit: Mapping[str, Any]) -> list[str]:
    """Lines ``key: yours (preset: theirs)`` for every leaf where an explicit value beats the active preset."""
    preset = (config.get("scales", {}) or {}).get(config.get("scale", "paper"), {}) or {}
    mine, theirs = _leaves(explicit), _leaves(preset)
    lines = []
    for key, value in mine.items():
        for pkey, pvalue in theirs.items():
            if (pkey == key or pkey.startswith(key + ".") or key.startswith(pkey + ".")) and pvalue != value:
                lines.append(f"{key}: {value!r} (scale preset {config.get('scale')!r}: {pkey} = {pvalue!r})")
    return sorted(set(lines))


def resolve_scale(config: Mapping[str, Any], *, explicit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Apply the overrides of the selected ``scale`` preset to ``config``, then the user's explicit values.

    Args:
        config: the raw config, with keys ``scale`` and (optionally) ``scales``.
        explicit: the values the user set explicitly (:func:`user_values`); they win over the preset.

    Returns:
        A new config with ``scales[scale]`` merged in; ``scales`` itself is kept for provenance.

    Raises:
        ValueError: if ``scale`` names no preset, or a preset overrides a key the config does not have
            (a misspelt override would otherwise be silently ignored).
    """
    scale = config.get("scale", "paper")
    presets = config.get("scales", {}) or {}
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")
    override = presets.get(scale, {}) or {}
    _check_known(config, override, prefix=f"scales.{scale}")
    return deep_merge(deep_merge(config, override), explicit or {})


def _check_known(base: Mapping[str, Any], override: Mapping[str, Any], *, prefix: str) -> None:
    # A figure entry (`<section>.figures.<fig>`) may add per-figure overrides that the base entry does not
    # name; the schema, checked again after merging, still rejects a misspelt one.
    figure_entry = prefix.rsplit(".", 2)[-2:-1] == ["figures"]
    for key, value in override.items():
        if key not in base and not figure_entry:
            raise ValueError(f"{prefix}.{key} overrides a key that the config does not have")
        if key in base and isinstance(value, Mapping) and isinstance(base[key], Mapping):
            _check_known(base[key], value, prefix=f"{prefix}.{key}")


def _schema_validator(schema_path: str):
    """The JSON-schema validator class and root schema at ``schema_path``, loaded once per process and file state.

    Every ``*.yaml`` beside the root schema is registered up front, so a relative ``$ref`` resolves without reading
    or parsing a file again (jsonschema otherwise retrieves a referenced file on every lookup: 1–2 s per
    ``snakemake`` call with this project's ~700 lookups). The cache key holds each file's mtime and size, so an edited
    schema is read again, and the names its registry markers stand for (:func:`_registry_enums`), so a registry
    entry added in a running process (a test's) is a config value at once.
    """
    base = Path(schema_path).resolve()
    files = tuple(sorted(base.parent.glob("*.yaml")))
    key = (str(base), tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    names = tuple((marker, registry_names(*marker)) for marker in _markers(key))
    return _load_schemas(key, names)


REGISTRY_MARKERS = ("x-rules", "x-enum", "x-models")
"""The keys by which a schema property names the registry whose names are its ``enum`` (:func:`registry_names`):

- ``x-rules: all | valid``: the threshold rules (:func:`hsaudit.audit.rules.rule_names`), or the valid ones;
- ``x-enum: <module>.<NAME>``: the keys of a registry, or the items of a tuple of names (e.g.
  ``hsaudit.engine.canaries.CANARIES``); the module must import without torch (every ``snakemake`` call reads the
  schemas);
- ``x-models: {datasets: [...], features: [...]}``: the models of :data:`hsaudit.engine.models.REGISTRY` that the
  section's data fits (:func:`fitting_models`).
"""


def fitting_models(datasets: Sequence[str], features: Sequence[str] = ()) -> tuple[str, ...]:
    """The registry models (default options) whose input a section's data fits: a model with no feature extractor
    whose ``input_shape`` is one of ``datasets``' example shapes
    (:data:`hsaudit.data.datasets.DATASETS`; ``None`` fits any size), or one trained on the outputs of an extractor
    in ``features`` (the section computes them: Cebere et al.'s CIFAR-10 section, ``alexnet``)."""
    from hsaudit.data.datasets import DATASETS
    from hsaudit.engine.models import model_names, model_spec

    shapes = [DATASETS[d].input_shape for d in datasets]

    def fits(spec) -> bool:
        if spec.feature_extractor is not None:
            return spec.feature_extractor in features
        return any(len(spec.input_shape) == len(s) and all(m in (None, d) for m, d in zip(spec.input_shape, s))
                   for s in shapes)  # fmt: skip

    return tuple(name for name in model_names() if fits(model_spec(name)))


def registry_names(kind: str, value: Any) -> tuple[str, ...]:
    """The names a registry marker (:data:`REGISTRY_MARKERS`) stands for, read from its registry now.

    Raises:
        ValueError: an unknown marker, or an ``x-enum`` that names no registry.
    """
    if kind == "x-rules":
        from hsaudit.audit.rules import rule_names

        return rule_names(valid={"all": False, "valid": True}[value])
    if kind == "x-models":
        return fitting_models(**{k: tuple(v) for k, v in value})
    if kind == "x-enum":
        import importlib

        module, _, name = str(value).rpartition(".")
        try:
            return tuple(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError, ValueError) as err:
            raise ValueError(f"x-enum {value!r} names no registry: {err}") from None
    raise ValueError(f"unknown registry marker {kind!r}; known: {', '.join(REGISTRY_MARKERS)}")


def _marker(schema: Mapping[str, Any]) -> tuple[str, Any] | None:
    """A property's registry marker as a hashable pair (``x-models``' mapping as sorted pairs of tuples)."""
    for kind in REGISTRY_MARKERS:
        if kind in schema:
            value = schema[kind]
            if isinstance(value, Mapping):
                value = tuple(sorted((k, tuple(v)) for k, v in value.items()))
            return kind, value
    return None


def _walk(schema: Any):
    """Every mapping in a schema tree."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _walk(value)


@functools.lru_cache(maxsize=8)
def _raw_schemas(key) -> dict[str, Any]:
    """The schema files of ``key`` as parsed (uri → value), before their registry enums are filled."""
    return {Path(f).as_uri(): load_yaml(f) for f, _, _ in key[1]}


@functools.lru_cache(maxsize=8)
def _markers(key) -> tuple[tuple[str, Any], ...]:
    """The registry markers the schema files of ``key`` hold, each once."""
    found = (_marker(node) for schema in _raw_schemas(key).values() for node in _walk(schema))
    return tuple(dict.fromkeys(m for m in found if m is not None))


def _registry_enums(schema: Any, names: Mapping[tuple[str, Any], tuple[str, ...]]) -> Any:
    """``schema`` with every property that carries a registry marker given the ``enum`` of its names (``names``:
    marker → names, :func:`registry_names`): the schemas read rules, models, canaries and scores from their
    registries, so a new entry is a new config value with no schema to edit."""
    for node in _walk(schema):
        marker = _marker(node)
        if marker is not None:
            node["enum"] = list(names[marker])
    return schema


@functools.lru_cache(maxsize=8)
def _load_schemas(key, names):
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    root, filled = key[0], dict(names)
    contents = {uri: _registry_enums(copy.deepcopy(raw), filled) for uri, raw in _raw_schemas(key).items()}
    schema = contents.get(Path(root).as_uri()) or load_yaml(root)
    schema.setdefault("$id", Path(root).as_uri())
    resources = ((uri, Resource.from_contents(c, default_specification=DRAFT202012)) for uri, c in contents.items())
    registry = Registry().with_resources(resources)
    validator = jsonschema.Draft202012Validator

    def fill_defaults(v, properties, instance, subschema):
        # Snakemake's `validate(..., set_default=True)` (after jsonschema's FAQ): set each absent property's
        # schema default, then validate as usual.
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if isinstance(sub, Mapping) and "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from validator.VALIDATORS["properties"](v, properties, instance, subschema)

    filling = jsonschema.validators.extend(validator, {"properties": fill_defaults})
    return schema, registry, validator, filling


def config_errors(config: Mapping[str, Any], schema_path: str) -> list[str]:
    """Validate ``config`` against the JSON schema at ``schema_path`` (YAML; relative ``$ref`` s allowed).

    Returns one readable line per violation, each naming the key by its dotted path, e.g.
    ``audit.delta: 2 is greater than or equal to the maximum of 1``. An empty list means valid.
    """
    schema, registry, validator, _ = _schema_validator(schema_path)
    lines = []
    errors = validator(schema, registry=registry).iter_errors(dict(config))
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        lines.append(f"{where}: {err.message}")
    return lines


def check_config(config: Mapping[str, Any], schema_path: str, *, source: str = "config") -> None:
    """Raise ``ValueError`` listing every schema violation of ``config`` (see :func:`config_errors`)."""
    errors = config_errors(config, schema_path)
    if errors:
        raise ValueError(f"invalid {source}:\n  " + "\n  ".join(errors))


def validate_config(config: dict[str, Any], schema_path: str, *, source: str = "config") -> None:
    """Check ``config`` (:func:`check_config`: every violation, by dotted key), then fill in place every value the
    schema gives a ``default`` for and the config lacks — what Snakemake's ``validate(config, schema)`` does, with
    the schemas parsed once per process (:func:`_schema_validator`).

    Raises:
        ValueError: ``config`` violates the schema.
    """
    check_config(config, schema_path, source=source)
    schema, registry, _, filling = _schema_validator(schema_path)
    filling(schema, registry=registry).validate(config)


def inferred_choices(config_path: str) -> list[tuple[str, str, str]]:
    """The config keys whose comment marks them ``[inferred]`` (a choice the papers leave open).

    Reads ``config/config.yaml`` as text: each key's comment block is the run of ``#`` lines right above it.

    Returns:
        ``(dotted key, default as written, comment)`` for every such key, in file order. docs/decisions.md is
        generated from this list (``tests/pipeline/test_config.py`` checks that it is up to date).
    """
    import re
    from pathlib import Path

    key_re = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w-]*):(?P<value>.*)$")
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    out = []
    for line in Path(config_path).read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        m = key_re.match(line)
        if not m:
            if not stripped:
                comment = []
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m["key"]))
        text = " ".join(comment)
        if "[inferred" in text and stack[0][1] != "scales":
            out.append((".".join(k for _, k in stack), m["value"].strip() or "(section)", text))
        comment = []
    return out


def decisions_markdown(config_path: str) -> str:
    """docs/decisions.md: a table of every ``[inferred]`` config key (see :func:`inferred_choices`)."""
    rows = [
        "# Decisions: every choice the papers leave open",
        "",
        "Each row is a config key whose default is our reading where a paper is silent or ambiguous (tagged",
        "[inferred] in the specs and in `config/config.yaml`). Change it in the config like any other value.",
        "This file is generated from the config's comments; regenerate it after editing them with",
        "`python -c \"from hsaudit.pipeline.config import decisions_markdown as d; print(d('config/config.yaml'), end='')\""
        " > docs/decisions.md`.",
        "",
        "| key | default | why / what the paper says |",
        "|---|---|---|",
    ]
    for key, value, text in inferred_choices(config_path):
        text = text.replace("|", "\\|")
        rows.append(f"| `{key}` | `{value}` | {text} |")
    return "\n".join(rows) + "\n"
