# Section 6 of Cebere, Bellet & Papernot (docs/section6.md): the one-dimensional process, simulate -> audit -> plot,
# plus the exact law. Every rule reads the plan (hsaudit.experiments.section6.plan.plan).
from hsaudit.experiments.section6.plan import plan as section6_plan

S6 = section6_plan(config)


# fig3, fig6b, fig6c, fig10, fig14: one audit job per (sign rule, σ) runs every B, repetition and step; one exact
# job per sign rule. The Clopper–Pearson table of each R is computed once and shared. The wildcard {sign} is the sign rule of the process (config section6.rules).


rule tabulate_section6_cp:
    output:
        S6.CP_TABLE,
    log:
        log_path("section6/make_cp_table_n{n}"),
    benchmark:
        bench_path("section6/make_cp_table_n{n}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 500 + int(wc.n) // 20000,
        runtime=10,
    params:
        confidence=S6.confidence,
        code_version=script_version("tabulate_section6_cp"),
    script:
        "../scripts/tabulate_section6_cp.py"


rule audit_section6_process:
    input:
        cp_table=lambda wc: S6.cp_tables(S6.runs[wc.sign]),
    output:
        "results/section6/audit/{sign}/sigma{sigma}.csv",
    log:
        log_path("section6/audit_process_{sign}_sigma{sigma}"),
    benchmark:
        bench_path("section6/audit_process_{sign}_sigma{sigma}")
    wildcard_constraints:
        sign="|".join(S6.rules),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 600 + S6.runs[wc.sign] // 5000,
        runtime=lambda wc: 5
        + S6.runs[wc.sign]
        * S6.values["steps"]
        * S6.values["repetitions"]
        * len(S6.values["batch_sizes"])
        // 10**9,
    params:
        batch_sizes=S6.values["batch_sizes"],
        steps=S6.values["steps"],
        clip_norm=S6.values["clip_norm"],
        switch_point=S6.values["switch_point"],
        runs_per_world=lambda wc: S6.runs[wc.sign],
        repetitions=S6.values["repetitions"],
        seed=S6.seed,
        delta=S6.delta,
        confidence=S6.confidence,
        audit_rule=S6.audit_rule.spec,
        code_version=script_version("audit_section6_process"),
    script:
        "../scripts/audit_section6_process.py"


rule compute_section6_exact_law:
    output:
        "results/section6/exact/{sign}.csv",
    log:
        log_path("section6/compute_exact_law_{sign}"),
    benchmark:
        bench_path("section6/compute_exact_law_{sign}")
    wildcard_constraints:
        sign="|".join(S6.rules),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=10,
    params:
        sigmas=S6.values["sigmas"],
        batch_sizes=S6.values["batch_sizes"],
        steps=S6.values["steps"],
        clip_norm=S6.values["clip_norm"],
        switch_point=S6.values["switch_point"],
        delta=S6.delta,
        grid=S6.values["exact"],
        code_version=script_version("compute_section6_exact_law"),
    script:
        "../scripts/compute_section6_exact_law.py"


# fig3 and fig14 differ only in the figure drawn from the same tables: one rule per figure, plot_section6_fig3 and
# plot_section6_fig14 (hsaudit.experiments.section6.figures).
for s6_figure in ("fig3", "fig14"):

    rule:
        name:
            f"plot_section6_{s6_figure}"
        input:
            audits=S6.audits,
            exact=S6.exact,
        output:
            pdf=report(
                register_figure(f"results/{s6_figure}.pdf"),
                caption=f"../report/section6_{s6_figure}.rst",
                category="Section 6",
            ),
            csv=f"results/{s6_figure}.csv",
        log:
            log_path(f"section6/plot_{s6_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        params:
            code_version=script_version("plot_section6"),
            figure=s6_figure,
            steps=S6.values["steps"],
            repetitions=S6.values["repetitions"],
            facts=dict(S6.facts, panel_sigmas=S6.values["panel_sigmas"]),
        script:
            "../scripts/plot_section6.py"


rule compute_section6_tradeoff_curves:
    output:
        "results/section6/tradeoff.csv",
    log:
        log_path("section6/compute_section6_tradeoff_curves"),
    benchmark:
        bench_path("section6/compute_section6_tradeoff_curves")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 1000 + S6.values["runs_per_world"] // 2000,
        runtime=15,
    params:
        sigma=S6.values["tradeoff"]["sigma"],
        step=S6.values["tradeoff"]["step"],
        max_points=S6.values["tradeoff"]["max_points"],
        batch_sizes=S6.values["batch_sizes"],
        steps=S6.values["steps"],
        clip_norm=S6.values["clip_norm"],
        switch_point=S6.values["switch_point"],
        rule=S6.rules[0],
        runs_per_world=S6.values["runs_per_world"],
        seed=S6.seed,
        delta=S6.delta,
        confidence=S6.confidence,
        grid=S6.values["exact"],
        code_version=script_version("compute_section6_tradeoff_curves"),
    script:
        "../scripts/compute_section6_tradeoff_curves.py"


rule plot_section6_fig6b:
    input:
        tradeoff=rules.compute_section6_tradeoff_curves.output[0],
    output:
        pdf=report(
            register_figure("results/fig6b.pdf"),
            caption="../report/section6_fig6b.rst",
            category="Section 6",
        ),
        csv="results/fig6b.csv",
    log:
        log_path("section6/plot_section6_fig6b"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_section6"),
        figure="fig6b",
        facts=S6.facts,
    script:
        "../scripts/plot_section6.py"


rule search_section6_threshold:
    input:
        cp_table=S6.cp_tables(S6.values["threshold_search"]["runs_per_world"]),
    output:
        "results/section6/threshold_search/sigma{sigma}_B{batch}.csv",
    log:
        log_path("section6/search_threshold_sigma{sigma}_B{batch}"),
    benchmark:
        bench_path("section6/search_threshold_sigma{sigma}_B{batch}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 600 + S6.values["threshold_search"]["runs_per_world"] // 5000,
        runtime=30,
    params:
        steps=S6.values["threshold_search"]["steps"],
        alphas=S6.values["threshold_search"]["alphas"],
        runs_per_world=S6.values["threshold_search"]["runs_per_world"],
        repetitions=S6.values["threshold_search"]["repetitions"],
        clip_norm=S6.values["clip_norm"],
        rule=S6.rules[0],
        seed=S6.seed,
        delta=S6.delta,
        confidence=S6.confidence,
        audit_rule=S6.audit_rule.spec,
        grid=S6.values["exact"],
        code_version=script_version("search_section6_threshold"),
    script:
        "../scripts/search_section6_threshold.py"


rule plot_section6_fig6c:
    input:
        searches=S6.searches,
    output:
        pdf=report(
            register_figure("results/fig6c.pdf"),
            caption="../report/section6_fig6c.rst",
            category="Section 6",
        ),
        csv="results/fig6c.csv",
    log:
        log_path("section6/plot_section6_fig6c"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_section6"),
        figure="fig6c",
        facts=S6.facts,
    script:
        "../scripts/plot_section6.py"


rule plot_section6_fig10:
    output:
        pdf=report(
            register_figure("results/fig10.pdf"),
            caption="../report/section6_fig10.rst",
            category="Section 6",
        ),
        csv="results/fig10.csv",
    log:
        log_path("section6/plot_section6_fig10"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_section6"),
        figure="fig10",
        landscape=S6.values["landscape"],
        clip_norm=S6.values["clip_norm"],
        switch_point=S6.values["switch_point"],
        rules=list(S6.rules),
        facts=S6.facts,
    script:
        "../scripts/plot_section6.py"
