# Annamalai, "It's Our Loss" (fig1, fig2; hsaudit.experiments.annamalai, docs/annamalai.md): scalar DP-SGD with the
# adversarial gradient, simulated -> PLD-curve audit -> plot. The plan (hsaudit.experiments.annamalai.plan.plan) keys
# every job; the PLD calibration table of each (q, T) is computed once and shared.
from hsaudit.experiments.annamalai.plan import FIG1_DATA as ANNAMALAI_FIG1_DATA
from hsaudit.experiments.annamalai.plan import plan as annamalai_plan

ANNAMALAI = annamalai_plan(config)


rule tabulate_annamalai_pld:
    output:
        "results/annamalai/pld_table/{table}.csv",
    log:
        log_path("annamalai/tabulate_pld_{table}"),
    benchmark:
        bench_path("annamalai/tabulate_pld_{table}")
    wildcard_constraints:
        table="|".join(ANNAMALAI.tables),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=15,
    params:
        job=lambda wc: ANNAMALAI.tables[wc.table],
        code_version=script_version("tabulate_annamalai_pld"),
    script:
        "../scripts/tabulate_annamalai_pld.py"


rule audit_annamalai:
    input:
        table=lambda wc: ANNAMALAI.audit_table(wc.cell),
    output:
        "results/annamalai/audit/{cell}.csv",
    log:
        log_path("annamalai/audit_{cell}"),
    benchmark:
        bench_path("annamalai/audit_{cell}")
    wildcard_constraints:
        cell="|".join(ANNAMALAI.audits),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=ANNAMALAI.audit_mem_mb,
        runtime=15,
    params:
        job=lambda wc: ANNAMALAI.audits[wc.cell],
        code_version=script_version("audit_annamalai"),
    script:
        "../scripts/audit_annamalai.py"


rule simulate_annamalai_fig1:
    output:
        ANNAMALAI_FIG1_DATA,
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
        job=ANNAMALAI.fig1,
        code_version=script_version("simulate_annamalai_fig1"),
    script:
        "../scripts/simulate_annamalai_fig1.py"


for _target in ANNAMALAI.targets:
    _figure = _target.id.removeprefix("annamalai/")

    rule:
        name:
            f"plot_annamalai_{_figure}"
        input:
            table=ANNAMALAI.figures[_figure].inputs,
        output:
            pdf=report(
                register_figure(_target.path, kind=_target.kind),
                caption=f"../report/annamalai_{_figure}.rst",
                category="Annamalai",
            ),
            csv=_target.path.removesuffix(".pdf") + ".csv",
        log:
            log_path(f"annamalai/plot_annamalai_{_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        params:
            figure=_figure,
            facts=ANNAMALAI.figures[_figure].facts,
            code_version=script_version("plot_annamalai"),
        script:
            "../scripts/plot_annamalai.py"
