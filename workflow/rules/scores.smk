# Trained-model audits: gather the shards of an audit into one tidy scores table (run, shard, bit, step, score;
# higher score ⇒ inserted). temp(): it only feeds audit_epsilon (and fig6a) and is rebuilt from the kept shards
# in seconds.


rule extract_scores:
    input:
        shards=lambda wc: shard_paths(
            wc.audit, runs=wc.runs, shard_size=wc.size, root=f"results/{wc.family}"
        ),
    output:
        scores=temp("results/{family}/audits/{audit}/R{runs}-s{size}/scores.parquet"),
    log:
        log_path("{family}/extract_scores/{audit}/R{runs}-s{size}"),
    benchmark:
        bench_path("{family}/extract_scores/{audit}/R{runs}-s{size}")
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        code_version=script_version("extract_scores"),
    script:
        "../scripts/extract_scores.py"
