# Trained-model audits: the GDP audit (Nasr et al. 2023; Cebere et al. Algorithm 4) at every insertion step,
# with the assumption-free bound and the μ-GDP upper bound beside it.


rule audit_epsilon:
    input:
        scores=rules.extract_scores.output.scores,
    output:
        table="results/{family}/audits/{audit}/R{runs}-s{size}/epsilon.csv",
    log:
        log_path("{family}/audit_epsilon/{audit}/R{runs}-s{size}"),
    benchmark:
        bench_path("{family}/audit_epsilon/{audit}/R{runs}-s{size}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        delta=AUDIT["delta"],
        confidence=AUDIT["confidence"],
        mode=AUDIT["mode"],
        selection_fraction=AUDIT["selection_fraction"],
        noise_multiplier=lambda wc: PLANS[wc.family].audits[wc.audit]["setup"][
            "dpsgd"
        ]["noise_multiplier"],
        period=lambda wc: PLANS[wc.family].audits[wc.audit]["setup"]["dpsgd"]["period"],
        seed=lambda wc: derive_seed(
            SEED, f"{wc.family}-audit", wc.audit, wc.runs, wc.size
        ),
        code_version=script_version("audit_epsilon"),
    script:
        "../scripts/audit_epsilon.py"
