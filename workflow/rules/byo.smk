# Audits of users' own DP trainings (hsaudit.experiments.byo; docs/byo.md): one per name of the `byo:` config
# section, target results/byo/{name}/report.md. Assess the claim (a checkpoint: an accounting bug or an audit too
# small to exceed the claim needs no training) → check the entry and build the canary → train the shards → audit the
# scores → plot → the report. The user module's text is in the training jobs' code version (entry_version).
from hsaudit.experiments.byo.plan import audit_details as _byo_details
from hsaudit.experiments.byo.plan import entry_version as _byo_entry_version
from hsaudit.experiments.byo.plan import plan as _byo_plan
from hsaudit.experiments.byo.plan import shard_paths as _byo_shard_paths

BYO = _byo_plan(config)
BYO_NAMES = (
    "|".join(BYO.audits) or "(?!)"
)  # the {name} of every rule here (none without a byo: section)


checkpoint assess_byo_claim:
    output:
        claim="results/byo/{name}/claim.json",
    log:
        log_path("byo/assess_byo_claim/{name}"),
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: BYO.audits[wc.name].resources["mem_mb"],
        runtime=10,
    params:
        design=lambda wc: BYO.audits[wc.name].design.to_dict(),
        options=lambda wc: BYO.audits[wc.name].options.to_dict(),
        entry_version=lambda wc: _byo_entry_version(BYO.audits[wc.name].design.entry),
        code_version=script_version("assess_byo_claim"),
    script:
        "../scripts/assess_byo_claim.py"


rule check_byo_entry:
    output:
        probe="results/byo/{name}/probe.json",
        canary="results/byo/{name}/canary.npz",
        check="results/byo/{name}/check.json",
    log:
        log_path("byo/check_byo_entry/{name}"),
    benchmark:
        bench_path("byo/check_byo_entry/{name}")
    wildcard_constraints:
        name=BYO_NAMES,
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: BYO.audits[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO.audits[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO.audits[wc.name].resources["runtime"],
    params:
        design=lambda wc: BYO.audits[wc.name].design.to_dict(),
        entry_version=lambda wc: _byo_entry_version(BYO.audits[wc.name].design.entry),
        code_version=script_version("check_byo_entry"),
    script:
        "../scripts/check_byo_entry.py"


rule train_byo_shard:
    input:
        probe=rules.check_byo_entry.output.probe,
        canary=rules.check_byo_entry.output.canary,
        # the control's design (claim.json); the audit's shards do not depend on it
        claim=lambda wc: (
            f"results/byo/{wc.name}/claim.json" if wc.part == "control" else []
        ),
    output:
        scores="results/byo/{name}/{part}/{shard}.csv",
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
    threads: lambda wc: BYO.audits[wc.name].threads
    resources:
        mem_mb=lambda wc: BYO.audits[wc.name].resources["mem_mb"],
        runtime=lambda wc: BYO.audits[wc.name].resources["runtime"],
    params:
        design=lambda wc: BYO.audits[wc.name].design.to_dict(),
        entry_version=lambda wc: _byo_entry_version(BYO.audits[wc.name].design.entry),
        code_version=script_version("train_byo_shard"),
    script:
        "../scripts/train_byo_shard.py"


rule audit_byo:
    input:
        claim="results/byo/{name}/claim.json",
        shards=lambda wc: _byo_shard_paths(
            BYO.audits[wc.name],
            checkpoints.assess_byo_claim.get(name=wc.name).output.claim,
        ),
        probe=lambda wc: (
            f"results/byo/{wc.name}/probe.json"
            if _byo_shard_paths(
                BYO.audits[wc.name],
                checkpoints.assess_byo_claim.get(name=wc.name).output.claim,
            )
            else []
        ),
        check=lambda wc: (
            f"results/byo/{wc.name}/check.json"
            if _byo_shard_paths(
                BYO.audits[wc.name],
                checkpoints.assess_byo_claim.get(name=wc.name).output.claim,
            )
            else []
        ),
    output:
        scores="results/byo/{name}/scores.csv",
        report="results/byo/{name}/report.json",
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
        design=lambda wc: BYO.audits[wc.name].design.to_dict(),
        options=lambda wc: BYO.audits[wc.name].options.to_dict(),
        details=lambda wc: _byo_details(BYO.audits[wc.name]),
        code_version=script_version("audit_byo"),
    script:
        "../scripts/audit_byo.py"


rule plot_byo:
    input:
        scores=rules.audit_byo.output.scores,
        report=rules.audit_byo.output.report,
    output:
        pdf=report(
            "results/byo/{name}/fig.pdf",
            caption="../report/byo.rst",
            category="Audits of your training",
        ),
        csv="results/byo/{name}/fig.csv",
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
        markdown="results/byo/{name}/report.md",
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
