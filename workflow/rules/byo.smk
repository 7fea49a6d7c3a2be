# Audits of users' own DP trainings (hsaudit.experiments.byo; docs/byo.md): one per name of the `byo:` config
# section, target results/byo/{name}/report.md. Assess the claim (a checkpoint: an accounting bug or an audit too
# small to exceed the claim needs no training) → check the entry (a checkpoint: reads of the data that contradict the
# claim's sampling are a violation that trains no shard), choose the design (canary auto: a pilot of each
# candidate's control) and build the canary → train the shards → audit the scores → plot → the report. The user's
# code (its entry file, or its folder) and the installed versions of the packages an audit names are in the training
# jobs' code version (training_version).
#
# Other studies audit trainings through these same rules: their plans build ByoAudit values (each with its own root
# under results/ and what its code version covers) and their rule files, included before this one, hand them over
# with host_byo_audits (the libraries table's rows). The {name} wildcard is an audit's root under results/
# (byo/<name>, libraries/<row>).
#
# A few-runs audit (`canaries: M`, `trainings: K`; docs/byo.md, "When your training is expensive") has rules of its
# own, one training per job: assess (a checkpoint: what needs no training) → check the entry and build the M canaries
# (a checkpoint: its reads of the data that contradict the claim's sampling are a violation that trains nothing; the
# audit job and the input function test them, the check job imports none of the audit's code) → plan the control →
# train each training and each control training → pool the scores into the report and its figure (the files
# `hsaudit audit-training --canaries M` writes). The trainings import none of the audit's code: editing the pooled
# bounds reruns the audit alone.
import re

from hsaudit.experiments.byo.plan import audit_details as _byo_details
from hsaudit.experiments.byo.plan import plan as _byo_plan
from hsaudit.experiments.byo.plan import training_version as _byo_training_version

BYO = _byo_plan(config)
BYO_AUDITS = byo_audits(
    BYO.audits.values()
)  # root under results/ → audit, the hosted ones included
BYO_NAMES = (
    "|".join(re.escape(key) for key, a in BYO_AUDITS.items() if a.canaries is None)
    or "(?!)"
)  # the {name} of the population audits' rules (none without an audit)
BYO_FEW_NAMES = (
    "|".join(re.escape(key) for key, a in BYO_AUDITS.items() if a.canaries is not None)
    or "(?!)"
)  # the {name} of the few-runs audits' rules (an audit with `canaries: M`)


checkpoint assess_byo_claim:
    output:
        claim="results/{name}/claim.json",
    log:
        log_path("byo/assess_byo_claim/{name}"),
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=10,
    params:
        design=lambda wc: BYO_AUDITS[wc.name].design.to_dict(),
        options=lambda wc: BYO_AUDITS[wc.name].options.to_dict(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("assess_byo_claim"),
    script:
        "../scripts/assess_byo_claim.py"


checkpoint check_byo_entry:
    input:
        # a chosen design's pilot trains each candidate's control as planned there; ancient: a rewrite of the same
        # plan (an estimator's edit) does not rerun the pilot, which decides the design and never the bound
        claim=lambda wc: (
            ancient(f"results/{wc.name}/claim.json")
            if BYO_AUDITS[wc.name].design.chosen
            else []
        ),
    output:
        probe="results/{name}/probe.json",
        canary="results/{name}/canary.npz",
        check="results/{name}/check.json",
    log:
        log_path("byo/check_byo_entry/{name}"),
    benchmark:
        bench_path("byo/check_byo_entry/{name}")
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: BYO_AUDITS[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO_AUDITS[wc.name].resources["runtime"],
    params:
        design=lambda wc: BYO_AUDITS[wc.name].design.to_dict(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("check_byo_entry"),
    script:
        "../scripts/check_byo_entry.py"


rule train_byo_shard:
    input:
        probe=rules.check_byo_entry.output.probe,
        canary=rules.check_byo_entry.output.canary,
        check=rules.check_byo_entry.output.check,  # the design: given, or chosen by the check's pilot
        # the control's design (claim.json); the audit's shards do not depend on it
        claim=lambda wc: (
            f"results/{wc.name}/claim.json" if wc.part == "control" else []
        ),
    output:
        scores="results/{name}/{part}/{shard}.csv",
    log:
        log_path("byo/train_byo_shard/{name}/{part}/{shard}"),
    benchmark:
        bench_path("byo/train_byo_shard/{name}/{part}/{shard}")
    wildcard_constraints:
        name=BYO_NAMES,
        part="shards|control",
        shard=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: BYO_AUDITS[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO_AUDITS[wc.name].resources["runtime"],
    params:
        design=lambda wc: BYO_AUDITS[wc.name].design.to_dict(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("train_byo_shard"),
    script:
        "../scripts/train_byo_shard.py"


rule audit_byo:
    input:
        unpack(byo_audit_inputs(BYO_AUDITS)),
        claim="results/{name}/claim.json",
    output:
        scores="results/{name}/scores.csv",
        report="results/{name}/report.json",
    log:
        log_path("byo/audit_byo/{name}"),
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        design=lambda wc: BYO_AUDITS[wc.name].design.to_dict(),
        options=lambda wc: BYO_AUDITS[wc.name].options.to_dict(),
        details=lambda wc: _byo_details(BYO_AUDITS[wc.name]),
        code_version=script_version("audit_byo"),
    script:
        "../scripts/audit_byo.py"


rule plot_byo:
    input:
        scores=rules.audit_byo.output.scores,
        report=rules.audit_byo.output.report,
    output:
        pdf=report(
            "results/{name}/fig.pdf",
            caption="../report/byo.rst",
            category="Audits of your training",
        ),
        csv="results/{name}/fig.csv",
    log:
        log_path("byo/plot_byo/{name}"),
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        scale=SCALE,
        code_version=script_version("plot_byo"),
    script:
        "../scripts/plot_byo.py"


rule write_byo_report:
    input:
        report=rules.audit_byo.output.report,
        pdf=rules.plot_byo.output.pdf,
    output:
        markdown="results/{name}/report.md",
    log:
        log_path("byo/write_byo_report/{name}"),
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        code_version=script_version("write_byo_report"),
    script:
        "../scripts/write_byo_report.py"


checkpoint assess_byo_few:
    output:
        claim="results/{name}/claim.json",
    log:
        log_path("byo/assess_byo_few/{name}"),
    wildcard_constraints:
        name=BYO_FEW_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=10,
    params:
        few=lambda wc: BYO_AUDITS[wc.name].few(),
        options=lambda wc: BYO_AUDITS[wc.name].options.to_dict(),
        guesses=lambda wc: list(BYO_AUDITS[wc.name].guesses),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("assess_byo_few"),
    script:
        "../scripts/assess_byo_few.py"


checkpoint check_byo_few:
    output:
        probe="results/{name}/probe.json",
        family="results/{name}/family.npz",
    log:
        log_path("byo/check_byo_few/{name}"),
    benchmark:
        bench_path("byo/check_byo_few/{name}")
    wildcard_constraints:
        name=BYO_FEW_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: BYO_AUDITS[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO_AUDITS[wc.name].resources["runtime"],
    params:
        few=lambda wc: BYO_AUDITS[wc.name].few(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("check_byo_few"),
    script:
        "../scripts/check_byo_few.py"


rule plan_byo_few_control:
    output:
        control="results/{name}/control.json",
    log:
        log_path("byo/plan_byo_few_control/{name}"),
    wildcard_constraints:
        name=BYO_FEW_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=10,
    params:
        few=lambda wc: BYO_AUDITS[wc.name].few(),
        options=lambda wc: BYO_AUDITS[wc.name].options.to_dict(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("plan_byo_few_control"),
    script:
        "../scripts/plan_byo_few_control.py"


rule train_byo_training:
    input:
        probe=rules.check_byo_few.output.probe,
        family=rules.check_byo_few.output.family,
        # the control's design; the audit's trainings do not depend on it
        control=lambda wc: (
            f"results/{wc.name}/control.json" if wc.part == "control" else []
        ),
    output:
        scores="results/{name}/{part}/{k}.csv",
    log:
        log_path("byo/train_byo_training/{name}/{part}/{k}"),
    benchmark:
        bench_path("byo/train_byo_training/{name}/{part}/{k}")
    wildcard_constraints:
        name=BYO_FEW_NAMES,
        part="trainings|control",
        k=r"\d+",
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: BYO_AUDITS[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO_AUDITS[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO_AUDITS[wc.name].resources["runtime"],
    params:
        few=lambda wc: BYO_AUDITS[wc.name].few(),
        entry_version=lambda wc: _byo_training_version(BYO_AUDITS[wc.name]),
        code_version=script_version("train_byo_training"),
    script:
        "../scripts/train_byo_training.py"


rule audit_byo_few:
    input:
        unpack(byo_few_inputs(BYO_AUDITS)),
        claim="results/{name}/claim.json",
    output:
        scores="results/{name}/scores.csv",
        control="results/{name}/control.csv",
        report="results/{name}/report.json",
        markdown="results/{name}/report.md",
        pdf=report(
            "results/{name}/fig.pdf",
            caption="../report/byo_few.rst",
            category="Audits of your training",
        ),
        csv="results/{name}/fig.csv",
    log:
        log_path("byo/audit_byo_few/{name}"),
    wildcard_constraints:
        name=BYO_FEW_NAMES,
    conda:
        "../../envs/torch.yaml"  # the pooled audit reads the trainings' design (torch)
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        few=lambda wc: BYO_AUDITS[wc.name].few(),
        options=lambda wc: BYO_AUDITS[wc.name].options.to_dict(),
        guesses=lambda wc: list(BYO_AUDITS[wc.name].guesses),
        details=lambda wc: _byo_details(BYO_AUDITS[wc.name]),
        scale=SCALE,
        code_version=script_version("audit_byo_few"),
    script:
        "../scripts/audit_byo_few.py"
