# Housing figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C). Each writes figN.pdf + figN.csv.


rule plot_fig1c:
    input:
        tables=audit_table_paths(HOUSING, "fig1c"),
    output:
        pdf=report(
            register_figure("results/fig1c.pdf"),
            caption="../report/housing_fig1c.rst",
            category="Housing",
        ),
        csv="results/fig1c.csv",
    log:
        log_path("housing/plot_fig1c"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig1c",
        refs=[vars(ref) for ref in HOUSING.figures["fig1c"]],
        scale=SCALE,
        code_version=TRAINED_CODE["plot"],
    script:
        "../scripts/plot_housing.py"


rule plot_fig4:
    input:
        tables=audit_table_paths(HOUSING, "fig4"),
    output:
        pdf=report(
            register_figure("results/fig4.pdf"),
            caption="../report/housing_fig4.rst",
            category="Housing",
        ),
        csv="results/fig4.csv",
    log:
        log_path("housing/plot_fig4"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig4",
        refs=[vars(ref) for ref in HOUSING.figures["fig4"]],
        scale=SCALE,
        code_version=TRAINED_CODE["plot"],
    script:
        "../scripts/plot_housing.py"


rule plot_fig7:
    input:
        tables=audit_table_paths(HOUSING, "fig7"),
    output:
        pdf=report(
            register_figure("results/fig7.pdf"),
            caption="../report/housing_fig7.rst",
            category="Housing",
        ),
        csv="results/fig7.csv",
    log:
        log_path("housing/plot_fig7"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        figure="fig7",
        refs=[vars(ref) for ref in HOUSING.figures["fig7"]],
        scale=SCALE,
        code_version=TRAINED_CODE["plot"],
    script:
        "../scripts/plot_housing.py"
