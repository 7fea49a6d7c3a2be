# Housing figures of Cebere et al.: fig1c (§5), fig4 and fig7 (Appendix C). Each writes figN.pdf + figN.csv.


for _figure in ("fig1c", "fig4", "fig7"):

    rule:
        name:
            f"plot_{_figure}"
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
            code_version=TRAINED_CODE["plot"],
        script:
            "../scripts/plot_housing.py"


# CIFAR-10 figures of Cebere et al. (§5, Appendices D–E; hsaudit.figures.cifar). GPU-sized at paper scale
# (`hsaudit plan results/fig1.pdf`): registered with kind "gpu", so `rule all` leaves them out and a local run
# without a GPU warns first. Each writes figN.pdf + figN.csv; table2 is generated from the config that ran.


rule plot_fig1:
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
        log_path("cifar10/plot_fig1"),
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
        code_version=TRAINED_CODE["plot_cifar"],
    script:
        "../scripts/plot_cifar.py"


for _figure in ("fig2", "fig5", "fig11", "fig12", "fig13"):

    rule:
        name:
            f"plot_{_figure}"
        input:
            tables=audit_table_paths(CIFAR10, _figure),
            datasets=cifar_datasets(_figure),
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
            code_version=TRAINED_CODE["plot_cifar"],
        script:
            "../scripts/plot_cifar.py"


rule plot_fig6a:
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
        log_path("cifar10/plot_fig6a"),
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
        code_version=TRAINED_CODE["plot_cifar"],
    script:
        "../scripts/plot_cifar.py"


rule plot_fig8:
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
        log_path("cifar10/plot_fig8"),
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
        code_version=TRAINED_CODE["plot_cifar"],
    script:
        "../scripts/plot_cifar.py"


rule write_table2:
    output:
        md=register_figure("results/table2.md", kind="gpu"),
        csv="results/table2.csv",
    log:
        log_path("cifar10/write_table2"),
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
        code_version=TRAINED_CODE["plot_cifar"],
    script:
        "../scripts/write_table2.py"
