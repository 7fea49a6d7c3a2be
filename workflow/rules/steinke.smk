# Steinke, Nasr et al., "The Last Iterate Advantage" (docs/steinke.md). Every value comes from the plan
# (hsaudit.experiments.steinke.plan), which `hsaudit plan` prices too. fig1, fig3, fig5, fig6: analytic accounting
# and 1-D simulations -> plot. fig2, fig4, fig4_spread, table2 train image classifiers (Poisson DP-SGD with the Dirac
# gradient canary, or the label-flipped input canary for fig4; fig4_spread: one population pair per Dirac
# coordinate and per label-flipped image): data -> one job per population shard (GPU at paper scale;
# it also evaluates the models' test accuracy) -> audit table -> plot / table; with steinke.table2.lr_grid set, a
# table2 row first trains its η candidates (no canary, scored on a validation split) and its shards take the best
# η. table1 fine-tunes a causal language model given by path (optional): data -> σ per row -> one job per row and
# shard -> table.
from hsaudit.experiments.steinke.plan import plan as steinke_plan

STEINKE = steinke_plan(config)
STEINKE_T1 = STEINKE.table1
for _target in STEINKE.targets:
    register_figure(_target.path, _target.kind)


rule prepare_steinke_data:
    output:
        data="results/steinke/data/{data_key}.npz",
    log:
        log_path("steinke/prepare_data_{data_key}"),
    wildcard_constraints:
        data_key="|".join(STEINKE.data),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=30,
    params:
        dataset=STEINKE.dataset,
        section=lambda w: dict(STEINKE.data[w.data_key]),
        code_version=script_version("prepare_steinke_data"),
    script:
        "../scripts/prepare_steinke_data.py"


# One job per shard of every image population (fig2, table2: Dirac canary; fig4: label-flip canary; fig4_spread:
# both), keyed by the plan: results/steinke/{canary}/{key}/shard{shard}.npz.
rule train_steinke_shard:
    input:
        data=STEINKE.train_data,
        test=STEINKE.test_data,
    output:
        shard="results/steinke/{canary}/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_{canary}_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_{canary}_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        canary="|".join(sorted({job.canary for job in STEINKE.jobs.values()})),
        key="|".join(STEINKE.jobs),
    conda:
        "../../envs/torch.yaml"
    threads: lambda w: STEINKE.jobs[w.key].resources["threads"]
    resources:
        mem_mb=lambda w: STEINKE.jobs[w.key].resources["mem_mb"],
        runtime=lambda w: STEINKE.jobs[w.key].resources["runtime"],
        gpu=lambda w: STEINKE.jobs[w.key].resources["gpu"],
    params:
        canary=lambda w: STEINKE.jobs[w.key].canary,
        spec=lambda w: dict(STEINKE.jobs[w.key].spec),
        device=lambda w: STEINKE.jobs[w.key].device,
        code_version=script_version("train_steinke_shard"),
    script:
        "../scripts/train_steinke_shard.py"


# Table 2 with η tuned per row (steinke.table2.lr_grid set; otherwise neither rule has a job): one job per row and
# η of the grid (the row's DP-SGD setting without the canary, scored on a validation split), then the row's shards,
# each training with the η of the best mean validation accuracy: results/steinke/dirac/{key}/shard{shard}.npz.
rule train_steinke_lr_candidate:
    input:
        data=STEINKE.train_data,
    output:
        shard="results/steinke/lr_tuning/{key}/shard0.npz",
    log:
        log_path("steinke/train_lr_candidate_{key}"),
    benchmark:
        bench_path("steinke/train_lr_candidate_{key}")
    wildcard_constraints:
        key="|".join(STEINKE.candidate_jobs) or "^$",
    conda:
        "../../envs/torch.yaml"
    threads: lambda w: STEINKE.candidate_jobs[w.key].resources["threads"]
    resources:
        mem_mb=lambda w: STEINKE.candidate_jobs[w.key].resources["mem_mb"],
        runtime=lambda w: STEINKE.candidate_jobs[w.key].resources["runtime"],
        gpu=lambda w: STEINKE.candidate_jobs[w.key].resources["gpu"],
    params:
        spec=lambda w: dict(STEINKE.candidate_jobs[w.key].spec),
        device=lambda w: STEINKE.candidate_jobs[w.key].device,
        code_version=script_version("train_steinke_lr_candidate"),
    script:
        "../scripts/train_steinke_lr_candidate.py"


rule train_steinke_tuned_shard:
    input:
        data=STEINKE.train_data,
        test=STEINKE.test_data,
        candidates=lambda w: list(STEINKE.tuned_jobs[w.key].candidates),
    output:
        shard="results/steinke/dirac/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_tuned_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_tuned_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        key="|".join(STEINKE.tuned_jobs) or "^$",
    conda:
        "../../envs/torch.yaml"
    threads: lambda w: STEINKE.tuned_jobs[w.key].job.resources["threads"]
    resources:
        mem_mb=lambda w: STEINKE.tuned_jobs[w.key].job.resources["mem_mb"],
        runtime=lambda w: STEINKE.tuned_jobs[w.key].job.resources["runtime"],
        gpu=lambda w: STEINKE.tuned_jobs[w.key].job.resources["gpu"],
    params:
        spec=lambda w: dict(STEINKE.tuned_jobs[w.key].job.spec),
        device=lambda w: STEINKE.tuned_jobs[w.key].job.device,
        code_version=script_version("train_steinke_tuned_shard"),
    script:
        "../scripts/train_steinke_tuned_shard.py"


for _audit in STEINKE.audits:

    rule:
        name:
            f"audit_steinke_{_audit.figure}"
        input:
            shards=_audit.paths,
        output:
            table=_audit.table,
        log:
            log_path(f"steinke/audit_{_audit.figure}"),
        benchmark:
            bench_path(f"steinke/audit_{_audit.figure}")
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            figure=_audit.figure,
            panels={name: len(training.shards) for name, training in _audit.panels},
            steps=list(_audit.steps),
            noise_multiplier=_audit.noise_multiplier,
            delta=_audit.delta,
            confidence=STEINKE.confidence,
            rule=STEINKE.rule.spec,
            valid_rule=STEINKE.valid_rule.spec,
            seed=SEED,
            model=_audit.model,
            value_discretization_interval=STEINKE.section[
                "value_discretization_interval"
            ],
            code_version=script_version("audit_steinke_trained"),
        script:
            "../scripts/audit_steinke_trained.py"


rule tabulate_steinke_table2:
    input:
        shards=STEINKE.table2.paths,
        candidates=STEINKE.table2.candidate_paths,
    output:
        md=report(
            "results/steinke/table2.md",
            caption="../report/steinke_table2.rst",
            category="Steinke",
        ),
        csv="results/steinke/table2.csv",
        lr="results/steinke/table2_lr.csv",
    log:
        log_path("steinke/tabulate_table2"),
    benchmark:
        bench_path("steinke/tabulate_table2")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        rows=[dict(row) for row in STEINKE.table2.params],
        delta=STEINKE.table2.delta,
        confidence=STEINKE.confidence,
        rule=STEINKE.rule.spec,
        valid_rule=STEINKE.valid_rule.spec,
        seed=SEED,
        model=STEINKE.table2.model,
        value_discretization_interval=STEINKE.section["value_discretization_interval"],
        facts=dict(STEINKE.table2.facts),
        code_version=script_version("tabulate_steinke_table2"),
    script:
        "../scripts/tabulate_steinke_table2.py"


rule prepare_steinke_table1_data:
    input:
        # the model's config and the data file; without their paths the DAG stops with the plan's message
        unpack(lambda wc: unless_missing(STEINKE_T1.missing, dict(STEINKE_T1.sources))),
    output:
        data=STEINKE_T1.data_path,
    log:
        log_path("steinke/prepare_table1_data"),
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        data=dict(STEINKE_T1.data),
        code_version=script_version("prepare_steinke_table1_data"),
    script:
        "../scripts/prepare_steinke_table1_data.py"


rule calibrate_steinke_table1:
    input:
        data=rules.prepare_steinke_table1_data.output.data,
    output:
        privacy=STEINKE_T1.privacy_path,
    log:
        log_path("steinke/calibrate_table1"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        rows=[dict(row) for row in STEINKE_T1.calibration],
        epochs=STEINKE.section["table1"]["epochs"],
        delta=STEINKE.section["table1"]["delta"],
        code_version=script_version("calibrate_steinke_table1"),
    script:
        "../scripts/calibrate_steinke_table1.py"


# The calibration is ancient(): an accounting edit reruns it but not the fine-tuning (the row's B, σ or heuristic
# target, δ and epochs are in the training job's spec, so a change of them does retrain).
rule train_steinke_table1:
    input:
        data=rules.prepare_steinke_table1_data.output.data,
        privacy=ancient(rules.calibrate_steinke_table1.output.privacy),
    output:
        shard="results/steinke/table1/{key}/shard{shard}.npz",
    log:
        log_path("steinke/train_table1_{key}_shard{shard}"),
    benchmark:
        bench_path("steinke/train_table1_{key}_shard{shard}")
    wildcard_constraints:
        shard=r"\d+",
        key="|".join(row.key for row in STEINKE_T1.rows) or "^$",
    conda:
        "../../envs/torch.yaml"
    threads: STEINKE.section["table1"]["resources"]["threads"]
    resources:
        mem_mb=STEINKE.section["table1"]["resources"]["mem_mb"],
        runtime=STEINKE.section["table1"]["resources"]["runtime"],
        gpu=STEINKE.section["table1"]["resources"]["gpu"],
    params:
        spec=lambda w: next(dict(r.spec) for r in STEINKE_T1.rows if r.key == w.key),
        row=lambda w: [r.key for r in STEINKE_T1.rows].index(w.key),
        model=STEINKE.section["table1"]["model"],
        data_source=STEINKE_T1.data_source,
        device=STEINKE.section["table1"]["device"],
        code_version=script_version("train_steinke_table1"),
    script:
        "../scripts/train_steinke_table1.py"


rule tabulate_steinke_table1:
    input:
        shards=STEINKE_T1.paths,
    output:
        md=report(
            "results/steinke/table1.md",
            caption="../report/steinke_table1.rst",
            category="Steinke",
        ),
        csv="results/steinke/table1.csv",
    log:
        log_path("steinke/tabulate_table1"),
    benchmark:
        bench_path("steinke/tabulate_table1")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        rows=[
            {"shards": len(row.shards), "paper": paper}
            for row, paper in zip(STEINKE_T1.rows, STEINKE_T1.paper)
        ],
        delta=STEINKE.section["table1"]["delta"],
        confidence=STEINKE.confidence,
        rule=STEINKE.rule.spec,
        valid_rule=STEINKE.valid_rule.spec,
        seed=SEED,
        model=STEINKE.section["table1"]["model"] or "",
        score=STEINKE.section["table1"]["score"],
        value_discretization_interval=STEINKE.section["value_discretization_interval"],
        facts=dict(STEINKE_T1.facts),
        code_version=script_version("tabulate_steinke_table1"),
    script:
        "../scripts/tabulate_steinke_table1.py"


rule compute_steinke_fig1:
    output:
        "results/steinke/fig1_data.csv",
    log:
        log_path("steinke/compute_fig1"),
    benchmark:
        bench_path("steinke/compute_fig1")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=15,
    params:
        fig1=STEINKE.section["fig1"],
        value_discretization_interval=STEINKE.section["value_discretization_interval"],
        code_version=script_version("compute_steinke_fig1"),
    script:
        "../scripts/compute_steinke_fig1.py"


rule audit_steinke_fig3:
    output:
        "results/steinke/fig3/q{qi}.csv",
    log:
        log_path("steinke/audit_fig3_q{qi}"),
    benchmark:
        bench_path("steinke/audit_fig3_q{qi}")
    wildcard_constraints:
        qi=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 800 + STEINKE.section["fig3"]["runs_per_world"] // 1000,
        runtime=15,
    params:
        sampling_rate=lambda wc: STEINKE.section["fig3"]["sampling_rates"][int(wc.qi)],
        fig3=STEINKE.section["fig3"],
        confidence=STEINKE.confidence,
        rule=STEINKE.rule.spec,
        seed=SEED,
        code_version=script_version("audit_steinke_fig3"),
    script:
        "../scripts/audit_steinke_fig3.py"


rule compute_steinke_fig5:
    output:
        "results/steinke/fig5/panel{pi}.csv",
    log:
        log_path("steinke/compute_fig5_panel{pi}"),
    benchmark:
        bench_path("steinke/compute_fig5_panel{pi}")
    wildcard_constraints:
        pi=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1500,
        runtime=20,
    params:
        one_step_epsilon=lambda wc: STEINKE.section["fig5"]["one_step_epsilons"][
            int(wc.pi)
        ],
        fig5=STEINKE.section["fig5"],
        code_version=script_version("compute_steinke_fig5"),
    script:
        "../scripts/compute_steinke_fig5.py"


rule attack_steinke_fig6:
    output:
        "results/steinke/fig6/T{steps}.csv",
    log:
        log_path("steinke/attack_fig6_T{steps}"),
    benchmark:
        bench_path("steinke/attack_fig6_T{steps}")
    wildcard_constraints:
        steps=r"\d+",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: 1000
        + STEINKE.section["fig6"]["runs_per_world"] * int(wc.steps) * 40 // 10**6,
        runtime=lambda wc: 5
        + STEINKE.section["fig6"]["runs_per_world"] * int(wc.steps) ** 2 // 10**8,
    params:
        fig6=STEINKE.section["fig6"],
        confidence=STEINKE.confidence,
        rule=STEINKE.rule.spec,
        seed=SEED,
        code_version=script_version("attack_steinke_fig6"),
    script:
        "../scripts/attack_steinke_fig6.py"


# One plot rule per figure (plot_steinke_fig1 … plot_steinke_fig6): its tables -> PDF + CSV through
# hsaudit.experiments.steinke.figures.FIGURES.
for _figure in STEINKE.figures:

    rule:
        name:
            f"plot_steinke_{_figure.name}"
        input:
            tables=list(_figure.tables),
        output:
            pdf=report(
                _figure.target.path,
                caption=f"../report/steinke_{_figure.name}.rst",
                category="Steinke",
            ),
            csv=_figure.csv,
        log:
            log_path(f"steinke/plot_{_figure.name}"),
        conda:
            "../../envs/analysis.yaml"
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        params:
            figure=_figure.name,
            facts=dict(_figure.facts),
            code_version=script_version("plot_steinke"),
        script:
            "../scripts/plot_steinke.py"
