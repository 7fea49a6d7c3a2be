# Yoon, Jeung & No: adversarial-sample audits of the final model of full-batch DP-SGD (hsaudit.experiments.yoon,
# docs/yoon.md). The plan (hsaudit.experiments.yoon.plan.plan) keys every job: data → one job per run training its
# populations (GPU-sized at paper scale) → one job per run crafting and auditing its samples → the figures.
from hsaudit.experiments.yoon.plan import figure_outputs as yoon_figure_outputs
from hsaudit.experiments.yoon.plan import plan as yoon_plan

YOON = yoon_plan(config)


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
        unpack(lambda wc: YOON.training_inputs(wc.population)),
    output:
        models="results/yoon/models/{population}/run{run}.npz",
    log:
        log_path("yoon/train_yoon_models/{population}/run{run}"),
    benchmark:
        bench_path("yoon/train_yoon_models/{population}/run{run}")
    conda:
        "../../envs/torch.yaml"
    threads: YOON.resources["threads"]
    resources:
        mem_mb=YOON.resources["mem_mb"],
        runtime=YOON.resources["runtime"],
        gpu=YOON.resources["gpu"],
    params:
        spec=lambda wc: YOON.trainings[wc.population],
        noise_multiplier=lambda wc: YOON.noise_multiplier(wc.population),
        device=YOON.device,
        code_version=script_version("train_yoon_models"),
    script:
        "../scripts/train_yoon_models.py"


rule audit_yoon_run:
    input:
        unpack(lambda wc: YOON.audit_inputs(wc.audit, wc.run)),
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
            YOON.resources["gpu"] if YOON.audits[wc.audit]["access"] == "black" else 0
        ),
    params:
        spec=lambda wc: YOON.audits[wc.audit],
        population=lambda wc: YOON.trainings[YOON.audits[wc.audit]["population"]],
        delta=YOON.delta,
        rule=YOON.rule.spec,
        valid_rule=YOON.valid_rule.spec,
        device=YOON.device,
        code_version=script_version("audit_yoon_run"),
    script:
        "../scripts/audit_yoon_run.py"


for _target in YOON.targets:
    _figure = _target.id.removeprefix("yoon/")

    rule:
        name:
            f"plot_yoon_{_figure}"
        input:
            tables=YOON.audit_paths(_figure),
            scores=YOON.score_paths(_figure),
        output:
            main=report(
                register_figure(_target.path, kind=_target.kind),
                caption=f"../report/yoon_{_figure}.rst",
                category="Yoon et al.",
            ),
            csv=yoon_figure_outputs(_figure)[1],
            runs=yoon_figure_outputs(_figure)[2],
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
            facts=YOON.facts,
            code_version=script_version("plot_yoon"),
        script:
            "../scripts/plot_yoon.py"
