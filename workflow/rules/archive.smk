# Archives of finished figures (hsaudit.pipeline.archive) and the pre-flight warning for GPU-sized runs.
#   snakemake results/archive/fig3.tar.gz     one figure: PDF, CSV, every intermediate of its DAG, provenance
#   snakemake archive_all                     every registered figure
#   hsaudit archive verify results/archive/fig3.tar.gz


rule archive_figure:
    input:
        unpack(archive_inputs),
    output:
        "results/archive/{figure}.tar.gz",
    log:
        log_path("archive/{figure}"),
    # Runs where Snakemake runs: it reads .snakemake/metadata and asks Snakemake for the figure's DAG.
    localrule: True
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        figure=lambda wc: wc.figure,
        targets=lambda wc, input: [input.pdf, input.csv],
        config=config,
        snakefile=os.path.relpath(workflow.main_snakefile),
        max_file_mb=EXECUTION["archive"]["max_file_mb"],
        exclude=EXECUTION["archive"]["exclude"],
        code_version=script_version("archive_figure"),
    script:
        "../scripts/archive_figure.py"


rule archive_all:
    input:
        lambda wc: [archive_path(fig) for fig in FIGURE_KINDS],


onstart:
    gpu_preflight_warning(workflow)
