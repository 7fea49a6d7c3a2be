# Cebere, Bellet & Papernot. Section 6 process (fig3, fig6b, fig6c, fig10, fig14): simulate -> audit -> plot,
# plus the exact law (docs/section6.md); and the figures of the trained-model audits on Housing (fig1c, fig4,
# fig7) and CIFAR-10 (fig1, fig2, fig5, fig6a, fig8, fig11, fig12, fig13, table2), whose populations the
# shared stages data/train/scores/audit.smk train and audit (docs/housing.md, docs/cifar10.md).
#
# Section 6 process of Cebere et al. (fig3, fig6b, fig6c, fig10, fig14): simulate -> audit -> plot, plus the
# exact law. One audit job per (sign rule, σ) runs every B, repetition and step; one exact job per sign rule.
# The Clopper–Pearson table of each R is computed once and shared. Package: hsaudit.experiments.cebere.section6; see
# docs/section6.md. The wildcard {sign} is the sign rule of the process (config section6.rules).


rule tabulate_cebere_cp:
    output:
        S6_CP_TABLE,
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
        confidence=AUDIT["confidence"],
        code_version=script_version("tabulate_cebere_cp"),
    script:
        "../scripts/tabulate_cebere_cp.py"


rule audit_cebere_process:
    input:
        cp_table=lambda wc: (
            expand(S6_CP_TABLE, n=S6_RUNS[wc.sign]) if S6_PAPER_MODE else []
        ),
    output:
        "results/section6/audit/{sign}/sigma{sigma}.csv",
    log:
        log_path("section6/audit_process_{sign}_sigma{sigma}"),
    benchmark:
        bench_path("section6/audit_process_{sign}_sigma{sigma}")
    wildcard_constraints:
        sign=S6_SIGN,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 600 + S6_RUNS[wc.sign] // 5000,
        runtime=lambda wc: 5
        + S6_RUNS[wc.sign]
        * S6["steps"]
        * S6["repetitions"]
        * len(S6["batch_sizes"])
        // 10**9,
    params:
        batch_sizes=S6["batch_sizes"],
        steps=S6["steps"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        runs_per_world=lambda wc: S6_RUNS[wc.sign],
        repetitions=S6["repetitions"],
        seed=SEED,
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        selection_fraction=AUDIT["selection_fraction"],
        code_version=script_version("audit_cebere_process"),
    script:
        "../scripts/audit_cebere_process.py"


rule compute_cebere_exact_law:
    output:
        "results/section6/exact/{sign}.csv",
    log:
        log_path("section6/compute_exact_law_{sign}"),
    benchmark:
        bench_path("section6/compute_exact_law_{sign}")
    wildcard_constraints:
        sign=S6_SIGN,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=10,
    params:
        sigmas=S6["sigmas"],
        batch_sizes=S6["batch_sizes"],
        steps=S6["steps"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        delta=AUDIT["delta"],
        grid=S6["exact"],
        code_version=script_version("compute_cebere_exact_law"),
    script:
        "../scripts/compute_cebere_exact_law.py"


# fig3 and fig14 differ only in the figure drawn from the same tables: one rule per figure, plot_cebere_fig3 and
# plot_cebere_fig14 (hsaudit.experiments.cebere.figures.section6).
for s6_figure in ("fig3", "fig14"):

    rule:
        name:
            f"plot_cebere_{s6_figure}"
        input:
            audits=S6_AUDITS,
            exact=S6_EXACT,
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
            code_version=script_version("plot_cebere_section6"),
            figure=s6_figure,
            panel_sigmas=S6["panel_sigmas"],
            steps=S6["steps"],
            repetitions=S6["repetitions"],
            facts=S6_FACTS,
        script:
            "../scripts/plot_cebere_section6.py"


rule compute_cebere_tradeoff_curves:
    output:
        "results/section6/tradeoff.csv",
    log:
        log_path("section6/compute_cebere_tradeoff_curves"),
    benchmark:
        bench_path("section6/compute_cebere_tradeoff_curves")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 1000 + S6["runs_per_world"] // 2000,
        runtime=15,
    params:
        sigma=S6["tradeoff"]["sigma"],
        step=S6["tradeoff"]["step"],
        max_points=S6["tradeoff"]["max_points"],
        batch_sizes=S6["batch_sizes"],
        steps=S6["steps"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        rule=S6_RULES[0],
        runs_per_world=S6["runs_per_world"],
        seed=SEED,
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        grid=S6["exact"],
        code_version=script_version("compute_cebere_tradeoff_curves"),
    script:
        "../scripts/compute_cebere_tradeoff_curves.py"


rule plot_cebere_fig6b:
    input:
        tradeoff=rules.compute_cebere_tradeoff_curves.output[0],
    output:
        pdf=report(
            register_figure("results/fig6b.pdf"),
            caption="../report/section6_fig6b.rst",
            category="Section 6",
        ),
        csv="results/fig6b.csv",
    log:
        log_path("section6/plot_cebere_fig6b"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_cebere_section6"),
        figure="fig6b",
        facts=S6_FACTS,
    script:
        "../scripts/plot_cebere_section6.py"


rule search_cebere_threshold:
    input:
        cp_table=(
            expand(S6_CP_TABLE, n=S6_SEARCH["runs_per_world"]) if S6_PAPER_MODE else []
        ),
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
        mem_mb=lambda wc: 600 + S6_SEARCH["runs_per_world"] // 5000,
        runtime=30,
    params:
        steps=S6_SEARCH["steps"],
        alphas=S6_SEARCH["alphas"],
        runs_per_world=S6_SEARCH["runs_per_world"],
        repetitions=S6_SEARCH["repetitions"],
        clip_norm=S6["clip_norm"],
        rule=S6_RULES[0],
        seed=SEED,
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        selection_fraction=AUDIT["selection_fraction"],
        grid=S6["exact"],
        code_version=script_version("search_cebere_threshold"),
    script:
        "../scripts/search_cebere_threshold.py"


rule plot_cebere_fig6c:
    input:
        searches=[
            f"results/section6/threshold_search/sigma{s}_B{b}.csv"
            for s, b in S6_SEARCH_CELLS
        ],
    output:
        pdf=report(
            register_figure("results/fig6c.pdf"),
            caption="../report/section6_fig6c.rst",
            category="Section 6",
        ),
        csv="results/fig6c.csv",
    log:
        log_path("section6/plot_cebere_fig6c"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_cebere_section6"),
        figure="fig6c",
        facts=S6_FACTS,
    script:
        "../scripts/plot_cebere_section6.py"


rule plot_cebere_fig10:
    output:
        pdf=report(
            register_figure("results/fig10.pdf"),
            caption="../report/section6_fig10.rst",
            category="Section 6",
        ),
        csv="results/fig10.csv",
    log:
        log_path("section6/plot_cebere_fig10"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        code_version=script_version("plot_cebere_section6"),
        figure="fig10",
        landscape=S6["landscape"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        rules=S6_RULES,
        facts=S6_FACTS,
    script:
        "../scripts/plot_cebere_section6.py"


# Housing figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C). Each writes figN.pdf + figN.csv.


for _figure in ("fig1c", "fig4", "fig7"):

    rule:
        name:
            f"plot_cebere_{_figure}"
        input:
            tables=audit_table_paths(HOUSING, _figure),
        output:
            pdf=report(
                register_figure(f"results/{_figure}.pdf"),
                caption=f"../report/housing_{_figure}.rst",
                category="Housing",
            ),
            csv=f"results/{_figure}.csv",
        log:
            log_path(f"housing/plot_{_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        params:
            figure=_figure,
            refs=[vars(ref) for ref in HOUSING.figures[_figure]],
            hyper={
                k: HOUSING.values[_figure][0][k]
                for k in (
                    "lr",
                    "batch_size",
                    "noise_multiplier",
                    "clip_norm",
                    "period",
                )
            },
            scale=SCALE,
            code_version=script_version("plot_cebere_housing"),
        script:
            "../scripts/plot_cebere_housing.py"


# CIFAR-10 figures of Cebere et al. (§5, Appendices D–E; hsaudit.experiments.cebere.figures.cifar). GPU-sized at paper scale
# (`hsaudit plan results/fig1.pdf`): registered with kind "gpu", so `rule all` leaves them out and a local run
# without a GPU warns first. Each writes figN.pdf + figN.csv; table2 is generated from the config that ran.


rule plot_cebere_fig1:
    input:
        tables=audit_table_paths(CIFAR10, "fig1"),
        datasets=cifar_datasets("fig1"),
        housing=audit_table_paths(HOUSING, "fig1c"),
    output:
        pdf=report(
            register_figure("results/fig1.pdf", kind="gpu"),
            caption="../report/cifar_fig1.rst",
            category="CIFAR-10",
        ),
        csv="results/fig1.csv",
    log:
        log_path("cifar10/plot_cebere_fig1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        figure="fig1",
        refs=cifar_refs("fig1"),
        housing_refs=[vars(ref) for ref in HOUSING.figures["fig1c"]],
        scale=SCALE,
        code_version=script_version("plot_cebere_cifar"),
    script:
        "../scripts/plot_cebere_cifar.py"


for _figure in ("fig2", "fig5", "fig11", "fig12", "fig13"):

    rule:
        name:
            f"plot_cebere_{_figure}"
        input:
            tables=audit_table_paths(CIFAR10, _figure),
            datasets=cifar_datasets(_figure),
            crafted=cifar_crafted(_figure),
        output:
            pdf=report(
                register_figure(f"results/{_figure}.pdf", kind="gpu"),
                caption=f"../report/cifar_{_figure}.rst",
                category="CIFAR-10",
            ),
            csv=f"results/{_figure}.csv",
        log:
            log_path(f"cifar10/plot_{_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            figure=_figure,
            refs=cifar_refs(_figure),
            scale=SCALE,
            code_version=script_version("plot_cebere_cifar"),
        script:
            "../scripts/plot_cebere_cifar.py"


rule plot_cebere_fig6a:
    input:
        tables=audit_table_paths(CIFAR10, "fig6a"),
        scores=scores_paths(CIFAR10, "fig6a"),
        datasets=cifar_datasets("fig6a"),
    output:
        pdf=report(
            register_figure("results/fig6a.pdf", kind="gpu"),
            caption="../report/cifar_fig6a.rst",
            category="CIFAR-10",
        ),
        csv="results/fig6a.csv",
    log:
        log_path("cifar10/plot_cebere_fig6a"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=10,
    params:
        figure="fig6a",
        refs=cifar_refs("fig6a"),
        scale=SCALE,
        code_version=script_version("plot_cebere_cifar"),
    script:
        "../scripts/plot_cebere_cifar.py"


rule plot_cebere_fig8:
    input:
        shards=figure_shard_paths(CIFAR10, "fig8"),
        datasets=cifar_datasets("fig8"),
    output:
        pdf=report(
            register_figure("results/fig8.pdf", kind="gpu"),
            caption="../report/cifar_fig8.rst",
            category="CIFAR-10",
        ),
        csv="results/fig8.csv",
    log:
        log_path("cifar10/plot_cebere_fig8"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        figure="fig8",
        refs=cifar_refs("fig8"),
        shards_per_ref=[ref.runs // ref.shard_size for ref in CIFAR10.figures["fig8"]],
        scale=SCALE,
        code_version=script_version("plot_cebere_cifar"),
    script:
        "../scripts/plot_cebere_cifar.py"


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
        families=hyperparameters(CIFAR10, audit=AUDIT)
        + hyperparameters(HOUSING, audit=AUDIT),
        data_sources={
            "cifar10": f"cifar10:{config['cifar10']['data']['source']}",
            "housing": f"housing:{config['housing']['data']['path'] or 'sklearn'}",
        },
        scale=SCALE,
        code_version=script_version("write_cebere_table2"),
    script:
        "../scripts/write_cebere_table2.py"
