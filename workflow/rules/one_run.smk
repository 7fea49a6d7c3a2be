# Audits in one training run (Steinke, Nasr & Jagielski 2023; Mahloujifar et al. 2024) against population
# audits of the same DP-SGD configuration: results/one_run/fig1.pdf (hsaudit.experiments.cebere.one_run,
# one_run_tables, figures.one_run; docs/one_run.md). Per family: craft the m canary coordinates, train the
# one-run models shard by shard (m canaries each, their own bits), audit the pooled canaries of the first M
# models for every M beside the population audit's per-step tables (built by train/scores/audit.smk), plot.


rule craft_one_run_canaries:
    input:
        data=one_run_dataset,
        setup=one_run_setup,
    output:
        canaries="results/one_run/{family}/{key}/canaries.npz",
        params_json="results/one_run/{family}/{key}/params.json",
    log:
        log_path("one_run/craft_one_run_canaries/{family}/{key}"),
    benchmark:
        bench_path("one_run/craft_one_run_canaries/{family}/{key}")
    wildcard_constraints:
        key=ONE_RUN_KEYS,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        spec=one_run_job,
        seed=lambda wc: one_run_craft_seed(seed=SEED, key=wc.key, family=wc.family),
        device=lambda wc: config[wc.family]["device"],
        code_version=script_version("craft_one_run_canaries"),
    script:
        "../scripts/craft_one_run_canaries.py"


rule train_one_run_shard:
    input:
        data=one_run_dataset,
        setup=one_run_setup,
        canaries=rules.craft_one_run_canaries.output.canaries,
    output:
        shard="results/one_run/{family}/{key}/shards/s{size}/{index}.npz",
    log:
        log_path("one_run/train_one_run_shard/{family}/{key}/s{size}/{index}"),
    benchmark:
        bench_path("one_run/train_one_run_shard/{family}/{key}/s{size}/{index}")
    wildcard_constraints:
        key=ONE_RUN_KEYS,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: config[wc.family]["resources"]["threads"]
    resources:
        mem_mb=family_resources("mem_mb"),
        runtime=family_resources("runtime"),
        gpu=family_resources("gpu"),
    params:
        spec=one_run_job,
        master_seed=SEED,
        device=lambda wc: config[wc.family]["device"],
        code_version=script_version("train_one_run_shard"),
    script:
        "../scripts/train_one_run_shard.py"


rule audit_one_run_canaries:
    input:
        shards=lambda wc: one_run_shard_paths(one_run_spec(wc)),
        population=lambda wc: population_table_paths(one_run_spec(wc)),
    output:
        table="results/one_run/{family}/{key}/table.csv",
    log:
        log_path("one_run/audit_one_run_canaries/{family}/{key}"),
    benchmark:
        bench_path("one_run/audit_one_run_canaries/{family}/{key}")
    wildcard_constraints:
        key=ONE_RUN_KEYS,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        models=lambda wc: list(one_run_spec(wc).models),
        steps=lambda wc: one_run_spec(wc).steps,
        guess_fractions=config["one_run"]["guess_fractions"],
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        coordinates=config["one_run"]["coordinates"],
        code_version=script_version("audit_one_run_canaries"),
    script:
        "../scripts/audit_one_run_canaries.py"


rule plot_one_run_fig1:
    input:
        tables=one_run_tables(),
        data=one_run_datasets(),
    output:
        pdf=report(
            register_figure("results/one_run/fig1.pdf", kind=ONE_RUN_KIND),
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
        families=list(ONE_RUN),
        scale=SCALE,
        code_version=script_version("plot_one_run_fig1"),
    script:
        "../scripts/plot_one_run_fig1.py"
