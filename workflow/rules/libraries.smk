# The DP libraries, configuration by configuration (hsaudit.experiments.libraries; docs/libraries.md): each row of
# the `libraries:` config section is a byo audit that byo's rules train and audit at results/libraries/<row>/
# (workflow/rules/byo.smk: included after this file, which hands the rows over with host_byo_audits); the table, its
# figure and its report read the rows' report.json. A row's trainings' code version holds its script folder's code
# and its library's installed version: upgrading Opacus retrains the Opacus rows only; editing an estimator reruns
# audit_byo and the table, never a training. Not part of `rule all`: name the target, results/libraries/report.md.
from hsaudit.experiments.libraries.plan import plan as _libraries_plan

LIBRARIES = _libraries_plan(config)
host_byo_audits(LIBRARIES.audits.values())


rule table_libraries:
    input:
        reports=[row.report for row in LIBRARIES.rows.values()],
        shards=byo_training_shards([row.audit for row in LIBRARIES.rows.values()]),
    output:
        csv="results/libraries/table.csv",
        pdf=report("results/libraries/fig.pdf", category="The DP libraries"),
        figcsv="results/libraries/fig.csv",
        markdown="results/libraries/report.md",
    log:
        log_path("libraries/table_libraries"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        rows=[row.describe() for row in LIBRARIES.rows.values()],
        roots=[row.root for row in LIBRARIES.rows.values()],
        not_run=LIBRARIES.not_run,
        facts={"scale": SCALE, **LIBRARIES.facts},
        code_version=script_version("table_libraries"),
    script:
        "../scripts/table_libraries.py"
