# The DP libraries, configuration by configuration (hsaudit.experiments.libraries; docs/libraries.md): one job per
# row of the `libraries:` config section (its script audited through hsaudit.experiments.byo in the audit setting,
# the audit's models and its control), then the table, its figure and its report. A row's code version holds its
# script folder's code and its library's installed version: upgrading Opacus reruns the Opacus rows only. Not part
# of `rule all`: name the target, results/libraries/report.md.
from hsaudit.experiments.libraries.plan import folder_version as _lib_folder_version
from hsaudit.experiments.libraries.plan import library_version as _lib_version
from hsaudit.experiments.libraries.plan import plan as _libraries_plan

LIBRARIES = _libraries_plan(config)
LIBRARY_ROWS = "|".join(LIBRARIES.rows) or "(?!)"


rule audit_library_row:
    output:
        record="results/libraries/rows/{row}.json",
    log:
        log_path("libraries/audit_library_row/{row}"),
    benchmark:
        bench_path("libraries/audit_library_row/{row}")
    wildcard_constraints:
        row=LIBRARY_ROWS,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: LIBRARIES.rows[wc.row].threads
    resources:
        mem_mb=lambda wc: LIBRARIES.rows[wc.row].audit.resources["mem_mb"],
        runtime=lambda wc: LIBRARIES.rows[wc.row].audit.resources["runtime"],
    params:
        row=lambda wc: LIBRARIES.rows[wc.row].to_dict(),
        library_version=lambda wc: _lib_version(LIBRARIES.rows[wc.row].library),
        entry_version=lambda wc: _lib_folder_version(LIBRARIES.rows[wc.row].design.entry),
        code_version=script_version("audit_library_row"),
    script:
        "../scripts/audit_library_row.py"


rule table_libraries:
    input:
        records=expand("results/libraries/rows/{row}.json", row=list(LIBRARIES.rows)),
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
        not_run=LIBRARIES.not_run,
        facts={
            "scale": SCALE,
            "runs": (config.get("libraries") or {}).get("audit", {}).get("runs"),
            "canary": (config.get("libraries") or {}).get("audit", {}).get("canary"),
            "setting": (config.get("libraries") or {}).get("audit", {}).get("audit_setting"),
        },
        code_version=script_version("table_libraries"),
    script:
        "../scripts/table_libraries.py"
