# Audits in one training run (Steinke, Nasr & Jagielski 2023; Mahloujifar et al. 2024) against population
# audits of the same DP-SGD configuration: results/one_run/fig1.pdf (hsaudit.experiments.one_run; docs/one_run.md).
# Per audited dataset: craft the m canary coordinates, train the one-run models shard by shard (m canaries each,
# their own bits), audit the pooled canaries of the first M models for every M beside the population audit's
# per-step tables (Cebere et al.'s base audit of the same configuration, trained and audited by cebere.smk) under
# every score of one_run.scores (the noiseless score reads one canary-free, noise-free run, the reference score K
# canary-free reference models, the calibrated score K reference models with their own bits), plot.
from hsaudit.experiments.one_run.plan import plan as one_run_plan

ONE_RUN = one_run_plan(config)


rule craft_one_run_canaries:
    input:
        data=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.data_path,
        setup=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.setup_path,
    output:
        canaries="results/one_run/{dataset}/{key}/canaries.npz",
        params_json="results/one_run/{dataset}/{key}/params.json",
    log:
        log_path("one_run/craft_one_run_canaries/{dataset}/{key}"),
    benchmark:
        bench_path("one_run/craft_one_run_canaries/{dataset}/{key}")
    wildcard_constraints:
        key=ONE_RUN.keys,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        spec=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).params,
        seed=lambda wc: ONE_RUN.craft_seed(wc.dataset, wc.key),
        device=lambda wc: ONE_RUN.devices[wc.dataset],
        code_version=script_version("craft_one_run_canaries"),
    script:
        "../scripts/craft_one_run_canaries.py"


rule train_one_run_shard:
    input:
        data=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.data_path,
        setup=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.setup_path,
        canaries=rules.craft_one_run_canaries.output.canaries,
    output:
        shard="results/one_run/{dataset}/{key}/shards/s{size}/{index}.npz",
    log:
        log_path("one_run/train_one_run_shard/{dataset}/{key}/s{size}/{index}"),
    benchmark:
        bench_path("one_run/train_one_run_shard/{dataset}/{key}/s{size}/{index}")
    wildcard_constraints:
        key=ONE_RUN.keys,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: CEBERE.resources[wc.dataset]["threads"]
    resources:
        mem_mb=lambda wc: CEBERE.resources[wc.dataset]["mem_mb"],
        runtime=lambda wc: CEBERE.resources[wc.dataset]["runtime"],
        gpu=lambda wc: CEBERE.resources[wc.dataset]["gpu"],
    params:
        spec=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).params,
        master_seed=ONE_RUN.seed,
        device=lambda wc: ONE_RUN.devices[wc.dataset],
        code_version=script_version("train_one_run_shard"),
    script:
        "../scripts/train_one_run_shard.py"


rule simulate_one_run_noiseless:
    input:
        data=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.data_path,
        setup=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.setup_path,
        canaries=rules.craft_one_run_canaries.output.canaries,
    output:
        shard="results/one_run/{dataset}/{key}/noiseless.npz",
    log:
        log_path("one_run/simulate_one_run_noiseless/{dataset}/{key}"),
    benchmark:
        bench_path("one_run/simulate_one_run_noiseless/{dataset}/{key}")
    wildcard_constraints:
        key=ONE_RUN.keys,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: CEBERE.resources[wc.dataset]["mem_mb"],
        runtime=lambda wc: CEBERE.resources[wc.dataset]["runtime"],
        gpu=lambda wc: CEBERE.resources[wc.dataset]["gpu"],
    params:
        spec=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).params,
        run="noiseless",
        models=1,
        master_seed=ONE_RUN.seed,
        device=lambda wc: ONE_RUN.devices[wc.dataset],
        code_version=script_version("train_one_run_reference"),
    script:
        "../scripts/train_one_run_reference.py"


rule train_one_run_reference:
    input:
        data=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.data_path,
        setup=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population.setup_path,
        canaries=rules.craft_one_run_canaries.output.canaries,
    output:
        shard="results/one_run/{dataset}/{key}/reference/{kind}/k{models}.npz",
    log:
        log_path("one_run/train_one_run_reference/{dataset}/{key}/{kind}/k{models}"),
    benchmark:
        bench_path("one_run/train_one_run_reference/{dataset}/{key}/{kind}/k{models}")
    wildcard_constraints:
        key=ONE_RUN.keys,
        kind="free|bits",
        models=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: CEBERE.resources[wc.dataset]["threads"]
    resources:
        mem_mb=lambda wc: CEBERE.resources[wc.dataset]["mem_mb"],
        runtime=lambda wc: CEBERE.resources[wc.dataset]["runtime"],
        gpu=lambda wc: CEBERE.resources[wc.dataset]["gpu"],
    params:
        spec=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).params,
        run=lambda wc: "reference" if wc.kind == "free" else "calibration",
        models=lambda wc: int(wc.models),
        master_seed=ONE_RUN.seed,
        device=lambda wc: ONE_RUN.devices[wc.dataset],
        code_version=script_version("train_one_run_reference"),
    script:
        "../scripts/train_one_run_reference.py"


rule audit_one_run_canaries:
    input:
        shards=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).shard_paths(),
        population=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).population_tables(),
        noiseless=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).noiseless_inputs(),
        reference=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).reference_inputs(),
        calibration=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).calibration_inputs(),
    output:
        table="results/one_run/{dataset}/{key}/table.csv",
    log:
        log_path("one_run/audit_one_run_canaries/{dataset}/{key}"),
    benchmark:
        bench_path("one_run/audit_one_run_canaries/{dataset}/{key}")
    wildcard_constraints:
        key=ONE_RUN.keys,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        **ONE_RUN.options,
        models=lambda wc: list(ONE_RUN.audit(wc.dataset, wc.key).models),
        steps=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).steps,
        seed=SEED,
        shift=lambda wc: ONE_RUN.audit(wc.dataset, wc.key).canary_shift,
        code_version=script_version("audit_one_run_canaries"),
    script:
        "../scripts/audit_one_run_canaries.py"


rule plot_one_run_fig1:
    input:
        tables=[f"{spec.root}/table.csv" for spec in ONE_RUN.audits.values()],
        data=[spec.population.data_path for spec in ONE_RUN.audits.values()],
    output:
        pdf=report(
            register_figure(ONE_RUN.targets[0].path, kind=ONE_RUN.targets[0].kind),
            caption="../report/one_run_fig1.rst",
            category="Audits in one training run",
        ),
        csv="results/one_run/fig1.csv",
    log:
        log_path("one_run/plot_one_run_fig1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        datasets=list(ONE_RUN.audits),
        facts={"scale": SCALE},
        code_version=script_version("plot_one_run_fig1"),
    script:
        "../scripts/plot_one_run_fig1.py"
