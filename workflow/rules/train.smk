# Trained-model audits, training side, for every family (housing, cifar10): the shared setup (θ0 + fixed
# minibatch schedule), the adversary's crafted object, and populations of DP-SGD models trained shard by shard
# (hsaudit.engine.dpsgd, hsaudit.experiments.cebere.shards, hsaudit.experiments.cebere.adversaries).


rule make_setup:
    input:
        data=setup_dataset,
    output:
        setup="results/{family}/setups/{setup}/setup.npz",
        params_json="results/{family}/setups/{setup}/params.json",
    log:
        log_path("{family}/make_setup/{setup}"),
    benchmark:
        bench_path("{family}/make_setup/{setup}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        spec=lambda wc: PLANS[wc.family].setups[wc.setup],
        # Housing's seed label predates the other families (its setups keep their θ0 and batches).
        seed=lambda wc: derive_seed(SEED, f"{wc.family}-setup", wc.setup),
        code_version=script_version("make_setup"),
    script:
        "../scripts/make_setup.py"


rule craft_adversary:
    input:
        data=audit_dataset,
        setup=lambda wc: setup_path(PLANS[wc.family], wc.audit),
    output:
        crafted="results/{family}/audits/{audit}/crafted.npz",
        params_json="results/{family}/audits/{audit}/params.json",
    log:
        log_path("{family}/craft_adversary/{audit}"),
    benchmark:
        bench_path("{family}/craft_adversary/{audit}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        # Only A_GC-S trains (its simulations); the other adversaries draw a direction or pick a row.
        mem_mb=crafting_resources("mem_mb", 2000),
        runtime=crafting_resources("runtime", 10),
        gpu=crafting_resources("gpu", 0),
    params:
        spec=lambda wc: PLANS[wc.family].audits[wc.audit],
        seed=craft_seed,
        device=lambda wc: config[wc.family]["device"],
        code_version=script_version("craft_adversary"),
    script:
        "../scripts/craft_adversary.py"


rule train_shard:
    input:
        data=audit_dataset,
        setup=lambda wc: setup_path(PLANS[wc.family], wc.audit),
        crafted=rules.craft_adversary.output.crafted,
    output:
        # Not temp(): the shards are what makes raising R cheap (only new shards are trained).
        shard="results/{family}/audits/{audit}/shards/s{size}/{index}.npz",
    log:
        log_path("{family}/train_shard/{audit}/s{size}/{index}"),
    benchmark:
        bench_path("{family}/train_shard/{audit}/s{size}/{index}")
    conda:
        "../../envs/torch.yaml"
    threads: lambda wc: config[wc.family]["resources"]["threads"]
    resources:
        mem_mb=family_resources("mem_mb"),
        runtime=family_resources("runtime"),
        gpu=family_resources("gpu"),
    params:
        spec=lambda wc: PLANS[wc.family].audits[wc.audit],
        master_seed=SEED,
        device=lambda wc: config[wc.family]["device"],
        code_version=script_version("train_shard"),
    script:
        "../scripts/train_shard.py"
