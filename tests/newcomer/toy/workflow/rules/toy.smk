# A newcomer's toy paper (hsaudit.experiments.toy, docs/toy.md; tests/test_newcomer.py adds it to a copy): the
# Gaussian mechanism simulated and audited -> fig1. Every rule reads the plan (hsaudit.experiments.toy.plan.plan).
from hsaudit.experiments.toy.plan import TABLE as TOY_TABLE
from hsaudit.experiments.toy.plan import plan as toy_plan

TOY = toy_plan(config)


rule audit_toy:
    output:
        TOY_TABLE,
    log:
        log_path("toy/audit"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        rule=TOY.rule.spec,
        job=TOY.audit,
        code_version=script_version("audit_toy"),
    script:
        "../scripts/audit_toy.py"


for _target in TOY.targets:
    _figure = _target.id.removeprefix("toy/")

    rule:
        name:
            f"plot_toy_{_figure}"
        input:
            table=TOY_TABLE,
        output:
            pdf=register_figure(_target.path, kind=_target.kind),
            csv=_target.path.removesuffix(".pdf") + ".csv",
        log:
            log_path(f"toy/plot_{_figure}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=500,
            runtime=5,
        params:
            figure=_figure,
            facts=TOY.facts,
            code_version=script_version("plot_toy"),
        script:
            "../scripts/plot_toy.py"
