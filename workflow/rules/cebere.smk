# Cebere, Bellet & Papernot: every rule of the paper, read from its plan (hsaudit.experiments.cebere.plan.plan).
#
# Trained-model audits (docs/housing.md, docs/cifar10.md): prepare each dataset, draw the shared setup (θ0 + the
# fixed minibatch schedule), craft the adversary's object, train populations shard by shard, gather the scores,
# audit every recorded step, plot. Every audit is keyed by a hash of the parameters that change its result and
# lives under results/{dataset}/audits/{audit}/; the figures are generated from the plan's figure jobs.
from hsaudit.experiments.cebere.plan import DATASETS as CEBERE_DATASETS
from hsaudit.experiments.cebere.plan import plan as cebere_plan
from hsaudit.experiments.cebere.plan import shard_paths

CEBERE = cebere_plan(config)


wildcard_constraints:
    dataset="|".join(CEBERE_DATASETS),


# ---- Trained-model audits: data


rule prepare_data:
    output:
        data="results/data/{dataset}.npz",
    log:
        log_path("data/prepare_data/{dataset}"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=lambda wc: dict(CEBERE.data_options[wc.dataset]),
        code_version=script_version("prepare_data"),
    script:
        "../scripts/prepare_data.py"


# The AlexNet features of Cebere et al. Fig. 13.
rule extract_features:
    input:
        data="results/data/{dataset}.npz",
    output:
        data="results/data/{dataset}_alexnet.npz",
    log:
        log_path("data/extract_features/{dataset}"),
    benchmark:
        bench_path("data/extract_features/{dataset}")
    conda:
        "../../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=lambda wc: CEBERE.resources[wc.dataset]["gpu"],
    params:
        weights=lambda wc: CEBERE.data_options[wc.dataset]["alexnet_weights"],
        data_dir=lambda wc: CEBERE.data_options[wc.dataset]["data_dir"],
        download=lambda wc: CEBERE.data_options[wc.dataset]["download"],
        device=lambda wc: CEBERE.devices[wc.dataset],
        code_version=script_version("extract_features"),
    script:
        "../scripts/extract_features.py"


# ---- Trained-model audits: training (hsaudit.experiments.cebere.train)


rule make_setup:
    input:
        data=lambda wc: CEBERE.datasets[wc.dataset].setup_data(wc.setup),
    output:
        setup="results/{dataset}/setups/{setup}/setup.npz",
        params_json="results/{dataset}/setups/{setup}/params.json",
    log:
        log_path("{dataset}/make_setup/{setup}"),
    benchmark:
        bench_path("{dataset}/make_setup/{setup}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        spec=lambda wc: CEBERE.datasets[wc.dataset].setups[wc.setup],
        seed=lambda wc: CEBERE.setup_seed(wc.dataset, wc.setup),
        code_version=script_version("make_setup"),
    script:
        "../scripts/make_setup.py"


rule craft_adversary:
    input:
        data=lambda wc: CEBERE.datasets[wc.dataset].audit_data(wc.audit),
        setup=lambda wc: CEBERE.datasets[wc.dataset].setup_path(wc.audit),
    output:
        crafted="results/{dataset}/audits/{audit}/crafted.npz",
        params_json="results/{dataset}/audits/{audit}/params.json",
    log:
        log_path("{dataset}/craft_adversary/{audit}"),
    benchmark:
        bench_path("{dataset}/craft_adversary/{audit}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        # Only A_GC-S trains (its simulations); the other adversaries draw a direction or pick a row.
        mem_mb=lambda wc: CEBERE.crafting_resources(wc.dataset, wc.audit)["mem_mb"],
        runtime=lambda wc: CEBERE.crafting_resources(wc.dataset, wc.audit)["runtime"],
        gpu=lambda wc: CEBERE.crafting_resources(wc.dataset, wc.audit)["gpu"],
    params:
        spec=lambda wc: CEBERE.audit(wc.dataset, wc.audit),
        seed=lambda wc: CEBERE.craft_seed(wc.dataset, wc.audit),
        device=lambda wc: CEBERE.devices[wc.dataset],
        code_version=script_version("craft_adversary"),
    script:
        "../scripts/craft_adversary.py"


# fig12's fixed-initialisation reading (`coordinates: fixed_init`): A_GC-R's d among the coordinates whose θ0 is the
# same in every run. A rule and script of its own, so that craft_adversary's code version (and every population
# downstream of it) is untouched; train_shard reads whichever crafted object the plan names.
rule craft_fixed_init:
    input:
        setup=lambda wc: CEBERE.datasets[wc.dataset].setup_path(wc.audit),
    output:
        crafted="results/{dataset}/audits/{audit}/crafted-fixed-init.npz",
        params_json="results/{dataset}/audits/{audit}/params-fixed-init.json",
    log:
        log_path("{dataset}/craft_fixed_init/{audit}"),
    benchmark:
        bench_path("{dataset}/craft_fixed_init/{audit}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: CEBERE.crafting_resources(wc.dataset, wc.audit)["mem_mb"],
        runtime=lambda wc: CEBERE.crafting_resources(wc.dataset, wc.audit)["runtime"],
    params:
        spec=lambda wc: CEBERE.audit(wc.dataset, wc.audit),
        seed=lambda wc: CEBERE.craft_seed(wc.dataset, wc.audit),
        code_version=script_version("craft_fixed_init"),
    script:
        "../scripts/craft_fixed_init.py"


rule train_shard:
    input:
        data=lambda wc: CEBERE.datasets[wc.dataset].audit_data(wc.audit),
        setup=lambda wc: CEBERE.datasets[wc.dataset].setup_path(wc.audit),
        crafted=lambda wc: CEBERE.datasets[wc.dataset].crafted_path(wc.audit),
    output:
        # Not temp(): the shards are what makes raising R cheap (only new shards are trained).
        shard="results/{dataset}/audits/{audit}/shards/s{size}/{index}.npz",
    log:
        log_path("{dataset}/train_shard/{audit}/s{size}/{index}"),
    benchmark:
        bench_path("{dataset}/train_shard/{audit}/s{size}/{index}")
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: CEBERE.resources[wc.dataset]["threads"]
    resources:
        mem_mb=lambda wc: CEBERE.resources[wc.dataset]["mem_mb"],
        runtime=lambda wc: CEBERE.resources[wc.dataset]["runtime"],
        gpu=lambda wc: CEBERE.resources[wc.dataset]["gpu"],
    params:
        spec=lambda wc: CEBERE.audit(wc.dataset, wc.audit),
        stream=lambda wc: CEBERE.stream(wc.dataset, wc.audit),
        master_seed=CEBERE.seed,
        device=lambda wc: CEBERE.devices[wc.dataset],
        code_version=script_version("train_shard"),
    script:
        "../scripts/train_shard.py"


# ---- Trained-model audits: scores and per-step audits (hsaudit.experiments.cebere.audit)


# The shards of an audit in one tidy scores table (run, shard, bit, step, score; higher score ⇒ inserted).
# temp(): it only feeds audit_epsilon (and fig6a) and is rebuilt from the kept shards in seconds.
rule extract_scores:
    input:
        shards=lambda wc: shard_paths(
            wc.audit, runs=wc.runs, shard_size=wc.size, root=f"results/{wc.dataset}"
        ),
    output:
        scores=temp("results/{dataset}/audits/{audit}/R{runs}-s{size}/scores.parquet"),
    log:
        log_path("{dataset}/extract_scores/{audit}/R{runs}-s{size}"),
    benchmark:
        bench_path("{dataset}/extract_scores/{audit}/R{runs}-s{size}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code_version=script_version("extract_scores"),
    script:
        "../scripts/extract_scores.py"


# The GDP audit (Nasr et al. 2023; Cebere et al. Algorithm 4) at every insertion step, with the assumption-free
# bound and the μ-GDP upper bound beside it.
rule audit_epsilon:
    input:
        scores=rules.extract_scores.output.scores,
    output:
        table="results/{dataset}/audits/{audit}/R{runs}-s{size}/epsilon.csv",
    log:
        log_path("{dataset}/audit_epsilon/{audit}/R{runs}-s{size}"),
    benchmark:
        bench_path("{dataset}/audit_epsilon/{audit}/R{runs}-s{size}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        delta=CEBERE.delta,
        confidence=CEBERE.confidence,
        rule=CEBERE.rule.spec,
        valid_rule=CEBERE.valid_rule.spec,
        noise_multiplier=lambda wc: CEBERE.audit(wc.dataset, wc.audit)["setup"][
            "dpsgd"
        ]["noise_multiplier"],
        period=lambda wc: CEBERE.audit(wc.dataset, wc.audit)["setup"]["dpsgd"]["period"],
        seed=lambda wc: CEBERE.audit_seed(wc.dataset, wc.audit, wc.runs, wc.size),
        code_version=script_version("audit_epsilon"),
    script:
        "../scripts/audit_epsilon.py"


# ---- Trained-model figures: Housing fig1c, fig4, fig7 (CPU-sized); CIFAR-10 fig1, fig2, fig5, fig6a, fig8,
# fig11, fig12, fig13 (GPU-sized at paper scale: registered with kind "gpu", so `rule all` leaves them out and a
# local run without a GPU warns first; `hsaudit plan results/fig1.pdf`). Each writes figN.pdf + figN.csv. One loop
# per script: a rule's `script:` is read when its job runs, after the loop, so it must not depend on the loop.
for job in CEBERE.figure_jobs:
    if job.dataset != "housing":
        continue

    rule:
        name:
            f"plot_cebere_{job.figure}"
        input:
            **job.inputs,
        output:
            pdf=report(
                register_figure(job.target.path, job.target.kind),
                caption=f"../report/{job.caption}.rst",
                category="Housing",
            ),
            csv=job.csv,
        log:
            log_path(f"housing/plot_{job.figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=job.mem_mb,
            runtime=10,
        params:
            **job.params,
            figure=job.figure,
            code_version=script_version("plot_cebere_housing"),
        script:
            "../scripts/plot_cebere_housing.py"


for job in CEBERE.figure_jobs:
    if job.dataset != "cifar10":
        continue

    rule:
        name:
            f"plot_cebere_{job.figure}"
        input:
            **job.inputs,
        output:
            pdf=report(
                register_figure(job.target.path, job.target.kind),
                caption=f"../report/{job.caption}.rst",
                category="CIFAR-10",
            ),
            csv=job.csv,
        log:
            log_path(f"cifar10/plot_{job.figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=job.mem_mb,
            runtime=10,
        params:
            **job.params,
            figure=job.figure,
            code_version=script_version("plot_cebere_cifar"),
        script:
            "../scripts/plot_cebere_cifar.py"


# Table 2: the hyper-parameters that ran, generated from the plan.
rule write_cebere_table2:
    output:
        md=register_figure("results/table2.md", kind="gpu"),
        csv="results/table2.csv",
    log:
        log_path("cifar10/write_cebere_table2"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        rows=list(CEBERE.table2),
        data_sources=dict(CEBERE.data_sources),
        facts={"scale": SCALE},
        code_version=script_version("write_cebere_table2"),
    script:
        "../scripts/write_cebere_table2.py"
