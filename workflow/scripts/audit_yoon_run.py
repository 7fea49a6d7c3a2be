"""Snakemake adapter: craft the audit samples of one Yoon et al. run and audit them (hsaudit.experiments.yoon).

x_a is crafted on the crafting population and scored on it (split "same", the paper's reading) and on the
independent audit population (split "held-out") by hsaudit.experiments.yoon.crafting.craft_run, then audited by
hsaudit.experiments.yoon.audit.audit_table (under the audit's rule and, beside it, the valid rule).
Writes one CSV row per adversary × margin × split, and the scores of every model (fig2's histograms).
"""

import numpy as np
import torch

from hsaudit.engine.models import spec_of
from hsaudit.experiments.yoon import audit, crafting
from hsaudit.experiments.yoon.recipe import recipe_label
from hsaudit.audit.rules import parse_rule
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.util.seeding import derive_seed

log = script_logging(snakemake)
spec, pop = snakemake.params.spec, snakemake.params.population
run = int(snakemake.wildcards.run)
torch.set_num_threads(snakemake.threads)
with np.load(snakemake.input.models) as f:
    models = {k: f[k] for k in f.files}
with np.load(snakemake.input.data) as f:
    data = {k: f[k] for k in ("X", "mean", "std")}
samples, scores = crafting.craft_run(
    models, data, spec=spec, population=pop, arch=spec_of(pop), audit_key=snakemake.wildcards.audit, run_index=run,
    device=snakemake.params.device,
)
craft_members = models.get("craft_members", models["members"])
facts = dict(
    dataset=pop["dataset"], model=pop["model"], init=pop["init"], canary=pop["canary"], clip_norm=pop["clip_norm"],
    epsilon_theory=pop["epsilon"], noise_multiplier=float(models["noise_multiplier"]), steps=pop["steps"],
    lr=pop["lr"], models_per_world=pop["models_per_world"], data_source=str(models["data_source"]),
    recipe=recipe_label(spec["craft"]), craft_models_per_world=int(craft_members.size // 2),
)
table = audit.audit_table(
    scores, crafting.sample_table(samples), access=spec["access"], delta=snakemake.params.delta,
    confidence=spec["confidence"], rule=parse_rule(snakemake.params.rule),
    valid_rule=parse_rule(snakemake.params.valid_rule), seed=derive_seed(pop["seed"], "yoon-audit", run), facts=facts,
)
for row in table.itertuples():
    log.info("%s α=%s %s: ε̂ = %.3f (μ̂ = %.3f, %s), valid ε̂ = %.3f (μ̂ = %.3f, %s)", row.adversary, row.margin,
             row.split, row.epsilon, row.mu, row.threshold_rule, row.epsilon_valid, row.mu_valid,
             row.valid_threshold_rule)
write_csv_atomic(table, snakemake.output.table)
write_csv_atomic(scores, snakemake.output.scores)
