# Section 6 process of Cebere et al. (fig3, fig6b, fig6c, fig10, fig14): simulate -> audit -> plot, plus the
# exact law. One audit job per (rule, σ) runs every B, repetition and step; one exact job per rule. The
# Clopper–Pearson table of each R is computed once and shared. See docs/section6.md.

from hsaudit.process1d import check_section6_config

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


def s6_runs(rule):
    """R per world of a rule's audits (the literal rule may run cheaper, see config)."""
    if rule == "literal" and S6["literal_runs_per_world"]:
        return int(S6["literal_runs_per_world"])
    return int(S6["runs_per_world"])


def s6_cp_table(runs):
    """The shared Clopper–Pearson table an audit with R runs per world needs (paper mode only)."""
    return (
        [f"results/section6/cp_table/n{runs}.npy"] if AUDIT["mode"] == "paper" else []
    )


S6_AUDITS = expand(
    "results/section6/audit/{rule}/sigma{sigma}.csv", rule=S6_RULES, sigma=S6_SIGMAS
)
S6_EXACT = expand("results/section6/exact/{rule}.csv", rule=S6_RULES)


rule make_cp_table:
    output:
        "results/section6/cp_table/n{n}.npy",
    log:
        log_path("section6/cp_table_n{n}"),
    benchmark:
        bench_path("section6/cp_table_n{n}")
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
        cp_table=lambda wc: s6_cp_table(s6_runs(wc.rule)),
    output:
        "results/section6/audit/{rule}/sigma{sigma}.csv",
    log:
        log_path("section6/audit_{rule}_sigma{sigma}"),
    benchmark:
        bench_path("section6/audit_{rule}_sigma{sigma}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 600 + s6_runs(wc.rule) // 5000,
        runtime=lambda wc: 5
        + s6_runs(wc.rule)
        * S6["steps"]
        * S6["repetitions"]
        * len(S6["batch_sizes"])
        // 10**9,
    params:
        batch_sizes=S6["batch_sizes"],
        steps=S6["steps"],
        clip_norm=S6["clip_norm"],
        switch_point=S6["switch_point"],
        runs_per_world=lambda wc: s6_runs(wc.rule),
        repetitions=S6["repetitions"],
        seed=SEED,
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        selection_fraction=AUDIT["selection_fraction"],
        code_version=CODE_VERSION,
    script:
        "../scripts/section6_audit.py"


rule exact_process:
    output:
        "results/section6/exact/{rule}.csv",
    log:
        log_path("section6/exact_{rule}"),
    benchmark:
        bench_path("section6/exact_{rule}")
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


rule plot_fig3:
    input:
        audits=S6_AUDITS,
        exact=S6_EXACT,
    output:
        pdf=report(
            register_figure("results/fig3.pdf"),
            caption="../report/section6_fig3.rst",
            category="Section 6",
        ),
        csv="results/fig3.csv",
    log:
        log_path("section6/plot_fig3"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig3",
        panel_sigmas=S6["panel_sigmas"],
        steps=S6["steps"],
        repetitions=S6["repetitions"],
        facts=S6_FACTS,
    script:
        "../scripts/section6_plot.py"


rule plot_fig14:
    input:
        audits=S6_AUDITS,
        exact=S6_EXACT,
    output:
        pdf=report(
            register_figure("results/fig14.pdf"),
            caption="../report/section6_fig14.rst",
            category="Section 6",
        ),
        csv="results/fig14.csv",
    log:
        log_path("section6/plot_fig14"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig14",
        panel_sigmas=S6["panel_sigmas"],
        steps=S6["steps"],
        repetitions=S6["repetitions"],
        facts=S6_FACTS,
    script:
        "../scripts/section6_plot.py"


rule tradeoff_process:
    output:
        "results/section6/tradeoff.csv",
    log:
        log_path("section6/tradeoff"),
    benchmark:
        bench_path("section6/tradeoff")
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
        tradeoff=rules.tradeoff_process.output[0],
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
        cp_table=s6_cp_table(S6_SEARCH["runs_per_world"]),
    output:
        "results/section6/threshold_search/sigma{sigma}_B{batch}.csv",
    log:
        log_path("section6/search_sigma{sigma}_B{batch}"),
    benchmark:
        bench_path("section6/search_sigma{sigma}_B{batch}")
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
