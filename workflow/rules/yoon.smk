# Yoon, Jeung & No: adversarial-sample audits of the final model of full-batch DP-SGD (hsaudit.experiments.yoon; the plan
# hsaudit.experiments.yoon.plan.plan_yoon is built in common.smk as YOON). Data → one job per run training its two
# populations (GPU-sized at paper scale) → one job per run crafting and auditing its samples → the figures.


rule prepare_yoon_data:
    output:
        data="results/yoon/data/{data}.npz",
    log:
        log_path("yoon/prepare_yoon_data/{data}"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        spec=lambda wc: YOON.data[wc.data],
        code_version=script_version("prepare_yoon_data"),
    script:
        "../scripts/prepare_yoon_data.py"


rule train_yoon_models:
    input:
        unpack(yoon_population_inputs),
    output:
        models="results/yoon/models/{population}/run{run}.npz",
    log:
        log_path("yoon/train_yoon_models/{population}/run{run}"),
    benchmark:
        bench_path("yoon/train_yoon_models/{population}/run{run}")
    conda:
        "../../envs/torch.yaml"
    threads: config["yoon"]["resources"]["threads"]
    resources:
        mem_mb=config["yoon"]["resources"]["mem_mb"],
        runtime=config["yoon"]["resources"]["runtime"],
        gpu=config["yoon"]["resources"]["gpu"],
    params:
        spec=lambda wc: YOON.populations[wc.population],
        noise_multiplier=lambda wc: yoon_noise_multiplier(wc.population),
        device=config["yoon"]["device"],
        code_version=script_version("train_yoon_models"),
    script:
        "../scripts/train_yoon_models.py"


rule audit_yoon_run:
    input:
        models=lambda wc: f"results/yoon/models/{YOON.audits[wc.audit]['population']}/run{wc.run}.npz",
        data=yoon_audit_data,
    output:
        table="results/yoon/audits/{audit}/run{run}.csv",
        scores="results/yoon/audits/{audit}/run{run}_scores.csv",
    log:
        log_path("yoon/audit_yoon_run/{audit}/run{run}"),
    benchmark:
        bench_path("yoon/audit_yoon_run/{audit}/run{run}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=lambda wc: (
            config["yoon"]["resources"]["gpu"]
            if YOON.audits[wc.audit]["access"] == "black"
            else 0
        ),
    params:
        spec=lambda wc: YOON.audits[wc.audit],
        population=lambda wc: YOON.populations[YOON.audits[wc.audit]["population"]],
        delta=AUDIT["delta"],
        device=config["yoon"]["device"],
        code_version=script_version("audit_yoon_run"),
    script:
        "../scripts/audit_yoon_run.py"


for _figure in YOON_FIGURES:

    rule:
        name:
            f"plot_yoon_{_figure}"
        input:
            tables=figure_audit_paths(YOON, _figure),
            scores=yoon_scores_paths(_figure),
        output:
            main=report(
                register_figure(figure_outputs(_figure)[0], kind="gpu"),
                caption=f"../report/yoon_{_figure}.rst",
                category="Yoon et al.",
            ),
            csv=figure_outputs(_figure)[1],
            runs=figure_outputs(_figure)[2],
        log:
            log_path(f"yoon/plot_yoon_{_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            figure=_figure,
            points=[vars(point) for point in YOON.figures[_figure]],
            scale=SCALE,
            code_version=script_version("plot_yoon"),
        script:
            "../scripts/plot_yoon.py"
