# Steinke, Nasr et al., "The Last Iterate Advantage" (fig1, fig3, fig5, fig6): analytic accounting and 1-D
# simulations -> plot. fig2, fig4 and table2 train models (Poisson DP-SGD with the Dirac gradient canary, or the
# label-flipped input canary for fig4; the plans ST_FIG2, ST_FIG4, ST_TABLE2 are built in common.smk): data -> one GPU
# job per shard at paper scale (which also evaluates the models' test accuracy) -> audit table -> plot / table.
# See docs/steinke.md.


rule prepare_steinke_data:
    output:
        data="results/steinke/data/{data_key}.npz",
    log:
        log_path("steinke/prepare_data_{data_key}"),
    wildcard_constraints:
        data_key="|".join(ST_DATA),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        dataset=ST_FIG2_DATASET,
        section=lambda w: ST_DATA[w.data_key],
        code_version=script_version("prepare_steinke_data"),
    script:
        "../scripts/prepare_steinke_data.py"


rule train_steinke_fig2:
    input:
        data=f"results/steinke/data/{ST_FIG2_DATA_KEY}.npz",
        test=f"results/steinke/data/{ST_TEST_DATA_KEY}.npz",
    output:
        shard="results/steinke/fig2/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_fig2_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_fig2_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        key="|".join(ST_DIRAC),
    conda:
        "../../envs/torch.yaml"
    threads: max(r["threads"] for r in ST_DIRAC_RESOURCES.values())
    resources:
        mem_mb=lambda w: ST_DIRAC_RESOURCES[w.key]["mem_mb"],
        runtime=lambda w: ST_DIRAC_RESOURCES[w.key]["runtime"],
        gpu=lambda w: ST_DIRAC_RESOURCES[w.key]["gpu"],
    params:
        spec=lambda w: ST_DIRAC[w.key],
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


rule train_steinke_fig4:
    input:
        data=f"results/steinke/data/{ST_FIG2_DATA_KEY}.npz",
        test=f"results/steinke/data/{ST_TEST_DATA_KEY}.npz",
    output:
        shard="results/steinke/fig4/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_fig4_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_fig4_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        key="|".join(ST_LABEL_FLIP),
    conda:
        "../../envs/torch.yaml"
    threads: ST["fig4"]["resources"]["threads"]
    resources:
        mem_mb=ST["fig4"]["resources"]["mem_mb"],
        runtime=ST["fig4"]["resources"]["runtime"],
        gpu=ST["fig4"]["resources"]["gpu"],
    params:
        spec=lambda w: ST_LABEL_FLIP[w.key],
        device=ST["fig4"]["device"],
        code_version=script_version("train_steinke_fig4"),
    script:
        "../scripts/train_steinke_fig4.py"


rule audit_steinke_fig4:
    input:
        shards=[
            f"results/steinke/fig4/{plan['key']}/shard{shard}.npz"
            for plan in ST_FIG4.values()
            for shard in plan["shards"]
        ],
    output:
        table="results/steinke/fig4/audit.csv",
    log:
        log_path("steinke/audit_fig4"),
    benchmark:
        bench_path("steinke/audit_fig4")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        panels={b: len(plan["shards"]) for b, plan in ST_FIG4.items()},
        steps=sorted({int(t) for t in ST["fig4"]["steps"]}),
        noise_multiplier=ST["fig4"]["noise_multiplier"],
        delta=ST["fig4"]["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        model=ST["fig4"]["model"],
        value_discretization_interval=ST["value_discretization_interval"],
        code_version=script_version("audit_steinke_fig4"),
    script:
        "../scripts/audit_steinke_fig4.py"


rule plot_steinke_fig4:
    input:
        tables=[rules.audit_steinke_fig4.output.table],
    output:
        pdf=report(
            register_figure("results/steinke/fig4.pdf", kind="gpu"),
            caption="../report/steinke_fig4.rst",
            category="Steinke",
        ),
        csv="results/steinke/fig4.csv",
    log:
        log_path("steinke/plot_fig4"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_steinke"),
        figure="fig4",
        delta=ST["fig4"]["delta"],
        facts=ST_FIG4_FACTS,
    script:
        "../scripts/plot_steinke.py"


rule tabulate_steinke_table2:
    input:
        shards=[
            f"results/steinke/fig2/{plan['key']}/shard{shard}.npz"
            for plan in ST_TABLE2
            for shard in plan["shards"]
        ],
    output:
        md=report(
            register_figure("results/steinke/table2.md", kind="gpu"),
            caption="../report/steinke_table2.rst",
            category="Steinke",
        ),
        csv="results/steinke/table2.csv",
    log:
        log_path("steinke/tabulate_table2"),
    benchmark:
        bench_path("steinke/tabulate_table2")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        rows=[
            {
                "shards": len(plan["shards"]),
                "steps": row["steps"],
                "noise_multiplier": row["noise_multiplier"],
                "paper": row.get("paper"),
            }
            for plan, row in zip(ST_TABLE2, ST["table2"]["rows"])
        ],
        delta=ST["table2"]["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        model=ST["table2"]["model"],
        value_discretization_interval=ST["value_discretization_interval"],
        facts=ST_TABLE2_FACTS,
        code_version=script_version("tabulate_steinke_table2"),
    script:
        "../scripts/tabulate_steinke_table2.py"


rule prepare_steinke_table1_data:
    input:
        unpack(steinke_table1_sources),
    output:
        data=f"results/steinke/table1/data/{ST_TABLE1['data_key']}.npz",
    log:
        log_path("steinke/prepare_table1_data"),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        data={
            **{k: ST_T1[k] for k in ("model", "data", "block_size", "eval_fraction")},
            "max_dialogues": ST_T1["max_dialogues"],
            "canary_tokens": ST_T1["canary_tokens"],
            "seed": SEED,
        },
        code_version=script_version("prepare_steinke_table1_data"),
    script:
        "../scripts/prepare_steinke_table1_data.py"


rule calibrate_steinke_table1:
    input:
        data=rules.prepare_steinke_table1_data.output.data,
    output:
        privacy=f"results/steinke/table1/data/{ST_TABLE1['data_key']}_privacy.json",
    log:
        log_path("steinke/calibrate_table1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        rows=[
            {
                k: row.get(k)
                for k in ("batch_size", "noise_multiplier", "heuristic_epsilon")
            }
            for row in ST_T1["rows"]
        ],
        epochs=ST_T1["epochs"],
        delta=ST_T1["delta"],
        code_version=script_version("calibrate_steinke_table1"),
    script:
        "../scripts/calibrate_steinke_table1.py"


# The calibration is ancient(): an accounting edit reruns it but not the fine-tuning (the row's B, σ or heuristic
# target, δ and epochs are in the training job's spec, so a change of them does retrain).
rule train_steinke_table1:
    input:
        data=rules.prepare_steinke_table1_data.output.data,
        privacy=ancient(rules.calibrate_steinke_table1.output.privacy),
    output:
        shard="results/steinke/table1/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_table1_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_table1_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        key="|".join(ST_TABLE1_ROWS) or "^$",
    conda:
        "../../envs/torch.yaml"
    threads: ST_T1["resources"]["threads"]
    resources:
        mem_mb=ST_T1["resources"]["mem_mb"],
        runtime=ST_T1["resources"]["runtime"],
        gpu=ST_T1["resources"]["gpu"],
    params:
        spec=lambda w: ST_TABLE1["rows"][ST_TABLE1_ROWS[w.key]]["train"],
        row=lambda w: ST_TABLE1_ROWS[w.key],
        model=ST_T1["model"],
        data_source=steinke_table1_data_source(),
        device=ST_T1["device"],
        code_version=script_version("train_steinke_table1"),
    script:
        "../scripts/train_steinke_table1.py"


rule tabulate_steinke_table1:
    input:
        shards=[
            f"results/steinke/table1/{row['key']}/shard{shard}.npz"
            for row in ST_TABLE1["rows"]
            for shard in row["shards"]
        ],
    output:
        md=report(
            steinke_table1_target("results/steinke/table1.md"),
            caption="../report/steinke_table1.rst",
            category="Steinke",
        ),
        csv="results/steinke/table1.csv",
    log:
        log_path("steinke/tabulate_table1"),
    benchmark:
        bench_path("steinke/tabulate_table1")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        rows=[
            {"shards": len(row["shards"]), "paper": spec.get("paper")}
            for row, spec in zip(ST_TABLE1["rows"], ST_T1["rows"])
        ],
        delta=ST_T1["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        seed=SEED,
        model=ST_T1["model"] or "",
        score=ST_T1["score"],
        value_discretization_interval=ST["value_discretization_interval"],
        facts=ST_TABLE1_FACTS,
        code_version=script_version("tabulate_steinke_table1"),
    script:
        "../scripts/tabulate_steinke_table1.py"


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
