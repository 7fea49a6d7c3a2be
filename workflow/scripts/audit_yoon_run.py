"""Snakemake adapter: craft the audit samples of one Yoon et al. run and audit them (hsaudit.experiments.yoon).

x_a is crafted on the crafting population (white box: the models; black box: surrogates distilled from their
outputs on D′'s inputs) and scored on the crafting population (split "same", the paper's reading) and on the
independent audit population (split "held-out"). Writes one CSV row per adversary × margin × split, and the
scores of every model (fig2's histograms).
"""

import numpy as np
import pandas as pd
import torch

from hsaudit.experiments.yoon import crafting as yoon
from hsaudit.experiments.yoon.plan import CraftRecipe, recipe_label
from hsaudit.experiments.yoon.populations import Canary
from hsaudit.pipeline.logs import script_logging
from hsaudit.util.io import write_csv_atomic
from hsaudit.util.seeding import derive_seed

log = script_logging(snakemake)
spec, pop = snakemake.params.spec, snakemake.params.population
run = int(snakemake.wildcards.run)
torch.set_num_threads(snakemake.threads)
device = snakemake.params.device
with np.load(snakemake.input.models) as f:
    models = {k: f[k] for k in f.files}
model = pop["model"]
members = models["members"]
# Populations written before the crafting population had its own size share the audit population's bits.
craft_members = models.get("craft_members", members)
canary = Canary(str(models["canary_kind"]), models["canary_x"], int(models["canary_y"]), str(models["canary_source"]))
crafting_models = models["craft_theta"]
recipe = CraftRecipe.from_config(spec["craft"])
with np.load(snakemake.input.data) as f:
    data = {k: f[k] for k in ("X", "mean", "std")}
# The data's pixel range [0, 1] in the normalised space, per channel.
shape = (-1,) + (1,) * (canary.x.ndim - 1)
mean, std = data["mean"].astype(np.float32).reshape(shape), data["std"].astype(np.float32).reshape(shape)
pixel_bounds = ((0.0 - mean) / std, (1.0 - mean) / std)
validation = None
if "validation_theta" in models:
    validation = (models["validation_theta"], models["validation_members"])
if spec["access"] == "black":
    query = np.concatenate([data["X"], canary.x[None]])
    s = spec["surrogate"]
    crafting_models = yoon.distill_surrogates(
        model=model, targets=models["craft_theta"], X_query=query, epochs=s["epochs"], batch_size=s["batch_size"],
        lr=s["lr"], seed=derive_seed(pop["seed"], "yoon-surrogates", snakemake.wildcards.audit, run), device=device,
    )
samples = [yoon.craft_sample("a_c", model=model, theta=crafting_models, members=craft_members, canary=canary)]
for adversary in ("a_ude", "a_ade"):
    for margin in spec["margins"] if adversary == "a_ade" else [float("nan")]:
        samples.append(
            yoon.craft_sample(
                adversary, model=model, theta=crafting_models, members=craft_members, canary=canary,
                margin=0.0 if np.isnan(margin) else margin, recipe=recipe, pixel_bounds=pixel_bounds,
                validation=validation, device=device,
            )
        )
rows, scores = [], []
for sample in samples:
    for split, key, bits in (("same", "craft_theta", craft_members), ("held-out", "audit_theta", members)):
        result, s = yoon.audit_sample(
            model=model, theta=models[key], members=bits, sample=sample, delta=snakemake.params.delta,
            confidence=spec["confidence"], mode=spec["mode"], selection_fraction=spec["selection_fraction"],
            seed=derive_seed(pop["seed"], "yoon-audit", run), device=device,
        )
        margin = sample.margin if sample.adversary == "a_ade" else float("nan")
        rows.append(
            {
                "run": run, "adversary": sample.adversary, "margin": margin, "split": split,
                "access": spec["access"], **result,
                "objective_start": sample.objective_start, "objective_end": sample.objective_end,
                "selected_step": sample.selected_step, "validation_mu": sample.validation_mu,
            }
        )
        scores.append(
            pd.DataFrame(
                {"run": run, "adversary": sample.adversary, "margin": margin, "split": split,
                 "model_index": np.arange(s.size), "member": bits, "score": s}
            )
        )
        log.info("%s α=%s %s: ε̂ = %.3f (μ̂ = %.3f)", sample.adversary, margin, split, result["epsilon"], result["mu"])
table = pd.DataFrame(rows).assign(
    dataset=pop["dataset"], model=model, init=pop["init"], canary=pop["canary"], clip_norm=pop["clip_norm"],
    epsilon_theory=pop["epsilon"], noise_multiplier=float(models["noise_multiplier"]), steps=pop["steps"],
    lr=pop["lr"], models_per_world=pop["models_per_world"], data_source=str(models["data_source"]),
    recipe=recipe_label(spec["craft"]), craft_models_per_world=int(craft_members.size // 2),
)
write_csv_atomic(table, snakemake.output.table)
write_csv_atomic(pd.concat(scores, ignore_index=True), snakemake.output.scores)
