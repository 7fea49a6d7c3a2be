# Annamalai, "It's Our Loss" (fig1, fig2): scalar DP-SGD with the adversarial gradient -> PLD-curve audit ->
# plot. The PLD calibration table of each (q, T) is computed once and shared. See docs/annamalai.md.


rule tabulate_annamalai_pld:
    output:
        "results/annamalai/pld_table/setting{si}.csv",
    log:
        log_path("annamalai/tabulate_pld_setting{si}"),
    benchmark:
        bench_path("annamalai/tabulate_pld_setting{si}")
    wildcard_constraints:
        si=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=15,
    params:
        setting=lambda wc: AN["fig2"]["settings"][int(wc.si)],
        delta=AN["delta"],
        table=AN["table"],
        code_version=script_version("tabulate_annamalai_pld"),
    script:
        "../scripts/tabulate_annamalai_pld.py"


rule audit_annamalai:
    input:
        table="results/annamalai/pld_table/setting{si}.csv",
    output:
        "results/annamalai/audit/setting{si}_eps{ei}_{sign}_{base}.csv",
    log:
        log_path("annamalai/audit_setting{si}_eps{ei}_{sign}_{base}"),
    benchmark:
        bench_path("annamalai/audit_setting{si}_eps{ei}_{sign}_{base}")
    wildcard_constraints:
        si=r"\d+",
        ei=r"\d+",
        sign=r"ascent|descent",
        base=r"three_sigma|half_width",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 800 + AN["runs_per_world"] // 50,
        runtime=15,
    params:
        setting=lambda wc: AN["fig2"]["settings"][int(wc.si)],
        epsilon=lambda wc: AN["fig2"]["epsilons"][int(wc.ei)],
        runs=AN["runs_per_world"],
        repetitions=AN["repetitions"],
        dataset_size=AN["dataset_size"],
        tail_floor=AN["tail_floor"],
        tail_floors_sensitivity=AN["tail_floors_sensitivity"],
        base_sigmas=AN["encoding"]["base_sigmas"],
        ideal_reference=lambda wc: AN["fig2"]["ideal_reference"]
        and (wc.sign, wc.base) == (AN["update"], AN_BASE),
        confidence=AUDIT["confidence"],
        seed=SEED,
        code_version=script_version("audit_annamalai"),
    script:
        "../scripts/audit_annamalai.py"


rule simulate_annamalai_fig1:
    output:
        "results/annamalai/fig1_data.csv",
    log:
        log_path("annamalai/simulate_fig1"),
    benchmark:
        bench_path("annamalai/simulate_fig1")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=15,
    params:
        settings=AN["fig1"]["settings"],
        runs=AN["runs_per_world"],
        delta=AN["delta"],
        dataset_size=AN["dataset_size"],
        update_rule=AN["update"],
        encoding=AN["encoding"],
        value_discretization_interval=AN["table"]["value_discretization_interval"],
        seed=SEED,
        code_version=script_version("simulate_annamalai_fig1"),
    script:
        "../scripts/simulate_annamalai_fig1.py"


rule plot_annamalai_fig1:
    input:
        table=rules.simulate_annamalai_fig1.output,
    output:
        pdf=report(
            register_figure("results/annamalai/fig1.pdf"),
            caption="../report/annamalai_fig1.rst",
            category="Annamalai",
        ),
        csv="results/annamalai/fig1.csv",
    log:
        log_path("annamalai/plot_cebere_fig1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_annamalai"),
        figure="fig1",
        facts=AN_FACTS,
        tail_floor=AN["tail_floor"],
    script:
        "../scripts/plot_annamalai.py"


rule plot_annamalai_fig2:
    input:
        table=[
            f"results/annamalai/audit/setting{si}_eps{ei}_{sign}_{base}.csv"
            for si in AN_SETTINGS
            for ei in AN_EPS
            for sign, base in AN_VARIANTS
        ],
    output:
        pdf=report(
            register_figure("results/annamalai/fig2.pdf"),
            caption="../report/annamalai_fig2.rst",
            category="Annamalai",
        ),
        csv="results/annamalai/fig2.csv",
    log:
        log_path("annamalai/plot_cebere_fig2"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_annamalai"),
        figure="fig2",
        facts=AN_FACTS,
        tail_floor=AN["tail_floor"],
        base_rule=AN_BASE,
    script:
        "../scripts/plot_annamalai.py"
