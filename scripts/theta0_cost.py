"""What an unknown per-run θ0 costs A_GC-R, per layer and averaged exactly over every coordinate d, in closed form
(hsaudit.experiments.cebere.theta0_cost; docs/cifar10.md, fig12).

    python scripts/theta0_cost.py [--config config/config.yaml] [--scale paper] [--section housing cifar10]

For each section (Housing: its FCNN, 68 coordinates; CIFAR-10: fig12's ConvNet) at the resolved scale, one Markdown
table: per layer, its coordinates, v0 (Xavier-normal variance of θ0[d]), μ and ε at the audit's δ with θ0 known and
with an unknown per-run θ0, then the exact mean over d uniform (A_GC-R's draw). Nothing is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from hsaudit.engine.models import model_spec
from hsaudit.experiments.cebere.plan import figure_values, model_options
from hsaudit.experiments.cebere.theta0_cost import layer_summary, per_coordinate_cost, signal_and_noise
from hsaudit.pipeline.config import resolve_scale

FIGURE = {"housing": "fig1c", "cifar10": "fig12"}  # the figure whose (first) series' values are costed


def _num(value: float, digits: int = 3) -> str:
    return f"{value:.{digits}g}" if abs(value) < 1e-2 and value != 0 else f"{value:.{digits}f}".rstrip("0").rstrip(".")


def section_table(config: dict, section: str) -> str:
    values = figure_values(config[section], FIGURE[section], dataset=section)[0]
    spec = model_spec(values["model"], **model_options(values))
    delta = float(config["audit"]["delta"])
    table = layer_summary(per_coordinate_cost(spec, values, delta=delta))
    shift, sd = signal_and_noise(values)
    head = (f"#### {section} ({FIGURE[section]}'s values, scale {config['scale']}): {spec.label}, Δ = {_num(shift)}, "
            f"s_n = {_num(sd)}, μ known = {_num(shift / sd)}, δ = {delta:g}")
    header = ["layer", "coordinates", "v0", "μ known", "μ unknown θ0", "ε known", "ε unknown θ0"]
    lines = [head, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in table.itertuples(index=False):
        cells = [row.layer, row.coordinates, _num(row.v0), _num(row.mu_known), _num(row.mu_unknown),
                 _num(row.epsilon_known), _num(row.epsilon_unknown)]  # fmt: skip
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--scale", default=None, help="a scale preset (default: the config's)")
    parser.add_argument("--section", nargs="+", default=["housing", "cifar10"], choices=sorted(FIGURE))
    args = parser.parse_args(argv)
    raw = yaml.safe_load(Path(args.config).read_text())
    if args.scale:
        raw["scale"] = args.scale
    config = resolve_scale(raw)
    print("\n\n".join(section_table(config, s) for s in args.section))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
