# Section 6 process of Cebere et al. (fig3, fig6b, fig6c, fig10, fig14): simulate -> audit -> plot, plus the
# exact law. One audit job per (sign rule, σ) runs every B, repetition and step; one exact job per sign rule.
# The Clopper–Pearson table of each R is computed once and shared. Package: hsaudit.section6; see
# docs/section6.md. The wildcard {sign} is the sign rule of the process (config section6.rules).

from hsaudit.config import check_section6_config

S6 = config["section6"]
check_section6_config(S6)
S6_RULES = S6["rules"]
S6_SIGMAS = [f"{float(s):g}" for s in S6["sigmas"]]
S6_SEARCH = S6["threshold_search"]
S6_SEARCH_CELLS = [
    (f"{float(s):g}", int(b))
    for s in S6_SEARCH["sigmas"]
    for b in S6_SEARCH["batch_sizes"]
]
S6_FACTS = dict(
    scale=SCALE,
    code_version=CODE_VERSION,
    audit_mode=AUDIT["mode"],
    selection_fraction=AUDIT["selection_fraction"],
    confidence=AUDIT["confidence"],
    delta=AUDIT["delta"],
)
# R per world of each sign rule's audits (the literal rule may run cheaper, see config).
S6_RUNS = {
    sign: (
        int(S6["literal_runs_per_world"])
        if sign == "literal" and S6["literal_runs_per_world"]
        else int(S6["runs_per_world"])
    )
    for sign in S6_RULES
}
# The shared Clopper–Pearson table an audit with R runs per world needs (paper mode only).
S6_CP_TABLE = "results/section6/cp_table/n{n}.npy"
S6_PAPER_MODE = AUDIT["mode"] == "paper"
S6_AUDITS = expand(
    "results/section6/audit/{sign}/sigma{sigma}.csv", sign=S6_RULES, sigma=S6_SIGMAS
)
S6_EXACT = expand("results/section6/exact/{sign}.csv", sign=S6_RULES)

# Wildcard constraint of the rules with a {sign} wildcard: one of the configured sign rules.
S6_SIGN = "|".join(S6_RULES)


rule make_cp_table:
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
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_cp_table.py"


rule audit_process:
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
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_audit.py"


rule compute_exact_law:
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
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_exact.py"


# fig3 and fig14 differ only in the figure drawn from the same tables: one rule per figure, plot_fig3 and
# plot_fig14 (hsaudit.figures.section6).
for s6_figure in ("fig3", "fig14"):

    rule:
        name:
            f"plot_{s6_figure}"
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
            figure=s6_figure,
            panel_sigmas=S6["panel_sigmas"],
            steps=S6["steps"],
            repetitions=S6["repetitions"],
            facts=S6_FACTS,
        script:
            "../scripts/section6_plot.py"


rule compute_tradeoff_curves:
    output:
        "results/section6/tradeoff.csv",
    log:
        log_path("section6/compute_tradeoff_curves"),
    benchmark:
        bench_path("section6/compute_tradeoff_curves")
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
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_tradeoff.py"


rule plot_fig6b:
    input:
        tradeoff=rules.compute_tradeoff_curves.output[0],
    output:
        pdf=report(
            register_figure("results/fig6b.pdf"),
            caption="../report/section6_fig6b.rst",
            category="Section 6",
        ),
        csv="results/fig6b.csv",
    log:
        log_path("section6/plot_fig6b"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig6b",
        facts=S6_FACTS,
    script:
        "../scripts/section6_plot.py"


rule search_threshold:
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
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_search.py"


rule plot_fig6c:
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
        log_path("section6/plot_fig6c"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig6c",
        facts=S6_FACTS,
    script:
        "../scripts/section6_plot.py"


rule plot_fig10:
    output:
        pdf=report(
            register_figure("results/fig10.pdf"),
            caption="../report/section6_fig10.rst",
            category="Section 6",
        ),
        csv="results/fig10.csv",
    log:
        log_path("section6/plot_fig10"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig10",
        landscape=S6["landscape"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        rules=S6_RULES,
        facts=S6_FACTS,
    script:
        "../scripts/section6_plot.py"
