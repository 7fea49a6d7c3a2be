# Steinke, Nasr et al., "The Last Iterate Advantage" (fig1, fig3, fig5, fig6): analytic accounting and 1-D
# simulations -> plot. fig2 trains models (Poisson DP-SGD with the Dirac gradient canary; the plan ST_FIG2 is built
# in common.smk): data -> one GPU job per shard at paper scale -> audit table -> plot. See docs/steinke.md.


rule prepare_steinke_data:
    output:
        data="results/steinke/data/{data_key}.npz",
    log:
        log_path("steinke/prepare_data_{data_key}"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        dataset=ST_FIG2_DATASET,
        section=ST_FIG2_DATA,
        code_version=script_version("prepare_steinke_data"),
    script:
        "../scripts/prepare_steinke_data.py"


rule train_steinke_fig2:
    input:
        data=f"results/steinke/data/{ST_FIG2_DATA_KEY}.npz",
    output:
        shard="results/steinke/fig2/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_fig2_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_fig2_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: ST["fig2"]["resources"]["threads"]
    resources:
        mem_mb=ST["fig2"]["resources"]["mem_mb"],
        runtime=ST["fig2"]["resources"]["runtime"],
        gpu=ST["fig2"]["resources"]["gpu"],
    params:
        spec=ST_FIG2["train"],
        device=ST["fig2"]["device"],
        code_version=script_version("train_steinke_fig2"),
    script:
        "../scripts/train_steinke_fig2.py"


rule audit_steinke_fig2:
    input:
        shards=expand(
            "results/steinke/fig2/{key}/shard{shard}.npz",
            key=ST_FIG2["key"],
            shard=ST_FIG2["shards"],
        ),
        data=f"results/steinke/data/{ST_FIG2_DATA_KEY}.npz",
    output:
        table="results/steinke/fig2/audit.csv",
    log:
        log_path("steinke/audit_fig2"),
    benchmark:
        bench_path("steinke/audit_fig2")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        steps=ST_FIG2["steps"],
        noise_multiplier=ST["fig2"]["noise_multiplier"],
        delta=ST["fig2"]["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        model=ST["fig2"]["model"],
        background=ST["fig2"]["background"],
        value_discretization_interval=ST["value_discretization_interval"],
        code_version=script_version("audit_steinke_fig2"),
    script:
        "../scripts/audit_steinke_fig2.py"


rule plot_steinke_fig2:
    input:
        tables=[rules.audit_steinke_fig2.output.table],
    output:
        pdf=report(
            register_figure("results/steinke/fig2.pdf", kind="gpu"),
            caption="../report/steinke_fig2.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig2.csv",
    log:
        log_path("steinke/plot_fig2"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig2",
        delta=ST["fig2"]["delta"],
        facts=ST_FIG2_FACTS,
    script:
        "../scripts/plot_steinke.py"


rule compute_steinke_fig1:
    output:
        "results/steinke/fig1_data.csv",
    log:
        log_path("steinke/compute_fig1"),
    benchmark:
        bench_path("steinke/compute_fig1")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=15,
    params:
        fig1=ST["fig1"],
        value_discretization_interval=ST["value_discretization_interval"],
        code_version=script_version("compute_steinke_fig1"),
    script:
        "../scripts/compute_steinke_fig1.py"


rule audit_steinke_fig3:
    output:
        "results/steinke/fig3/q{qi}.csv",
    log:
        log_path("steinke/audit_fig3_q{qi}"),
    benchmark:
        bench_path("steinke/audit_fig3_q{qi}")
    wildcard_constraints:
        qi=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 800 + ST["fig3"]["runs_per_world"] // 1000,
        runtime=15,
    params:
        sampling_rate=lambda wc: ST["fig3"]["sampling_rates"][int(wc.qi)],
        fig3=ST["fig3"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        code_version=script_version("audit_steinke_fig3"),
    script:
        "../scripts/audit_steinke_fig3.py"


rule compute_steinke_fig5:
    output:
        "results/steinke/fig5/panel{pi}.csv",
    log:
        log_path("steinke/compute_fig5_panel{pi}"),
    benchmark:
        bench_path("steinke/compute_fig5_panel{pi}")
    wildcard_constraints:
        pi=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=20,
    params:
        one_step_epsilon=lambda wc: ST["fig5"]["one_step_epsilons"][int(wc.pi)],
        fig5=ST["fig5"],
        code_version=script_version("compute_steinke_fig5"),
    script:
        "../scripts/compute_steinke_fig5.py"


rule attack_steinke_fig6:
    output:
        "results/steinke/fig6/T{steps}.csv",
    log:
        log_path("steinke/attack_fig6_T{steps}"),
    benchmark:
        bench_path("steinke/attack_fig6_T{steps}")
    wildcard_constraints:
        steps=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 1000
        + ST["fig6"]["runs_per_world"] * int(wc.steps) * 40 // 10**6,
        runtime=lambda wc: 5
        + ST["fig6"]["runs_per_world"] * int(wc.steps) ** 2 // 10**8,
    params:
        fig6=ST["fig6"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        code_version=script_version("attack_steinke_fig6"),
    script:
        "../scripts/attack_steinke_fig6.py"


rule plot_steinke_fig1:
    input:
        tables=rules.compute_steinke_fig1.output,
    output:
        pdf=report(
            register_figure("results/steinke/fig1.pdf"),
            caption="../report/steinke_fig1.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig1.csv",
    log:
        log_path("steinke/plot_cebere_fig1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig1",
        delta=ST["fig1"]["delta"],
        facts=ST_FACTS,
    script:
        "../scripts/plot_steinke.py"


rule plot_steinke_fig3:
    input:
        tables=expand("results/steinke/fig3/q{qi}.csv", qi=ST_FIG3_Q),
    output:
        pdf=report(
            register_figure("results/steinke/fig3.pdf"),
            caption="../report/steinke_fig3.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig3.csv",
    log:
        log_path("steinke/plot_cebere_fig3"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig3",
        delta=ST["fig3"]["delta"],
        facts=ST_FACTS,
        audit=ST["fig3"]["audit"],
        sigma_family=ST["fig3"]["sigma_families"][0],
    script:
        "../scripts/plot_steinke.py"


rule plot_steinke_fig5:
    input:
        tables=expand("results/steinke/fig5/panel{pi}.csv", pi=ST_FIG5_PANELS),
    output:
        pdf=report(
            register_figure("results/steinke/fig5.pdf"),
            caption="../report/steinke_fig5.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig5.csv",
    log:
        log_path("steinke/plot_cebere_fig5"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig5",
        delta=ST["fig5"]["delta"],
        facts=ST_FACTS,
    script:
        "../scripts/plot_steinke.py"


rule plot_steinke_fig6:
    input:
        tables=expand("results/steinke/fig6/T{steps}.csv", steps=ST_FIG6_STEPS),
    output:
        pdf=report(
            register_figure("results/steinke/fig6.pdf"),
            caption="../report/steinke_fig6.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig6.csv",
    log:
        log_path("steinke/plot_fig6"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig6",
        delta=ST["fig6"]["delta"],
        facts=ST_FACTS,
    script:
        "../scripts/plot_steinke.py"
