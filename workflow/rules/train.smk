# Trained-model audits, training side: the shared setup (θ0 + fixed minibatch schedule), the adversary's
# crafted object, and populations of DP-SGD models trained shard by shard (hsaudit.train, hsaudit.adversaries).


rule make_setup:
    input:
        data=rules.prepare_data.output.data,
    output:
        setup=f"{HOUSING_DIR}/setups/{{setup}}/setup.npz",
        params_json=f"{HOUSING_DIR}/setups/{{setup}}/params.json",
    log:
        log_path("housing/make_setup/{setup}"),
    benchmark:
        bench_path("housing/make_setup/{setup}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        spec=lambda wc: HOUSING.setups[wc.setup],
        seed=lambda wc: derive_seed(SEED, "housing-setup", wc.setup),
        code_version=HOUSING_CODE["train"],
    script:
        "../scripts/make_setup.py"


rule craft:
    input:
        data=rules.prepare_data.output.data,
        setup=lambda wc: setup_path(HOUSING, wc.audit, root=HOUSING_DIR),
    output:
        crafted=f"{HOUSING_DIR}/audits/{{audit}}/crafted.npz",
        params_json=f"{HOUSING_DIR}/audits/{{audit}}/params.json",
    log:
        log_path("housing/craft/{audit}"),
    benchmark:
        bench_path("housing/craft/{audit}")
    conda:
        "../../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        spec=lambda wc: HOUSING.audits[wc.audit],
        seed=lambda wc: derive_seed(SEED, "housing-craft", wc.audit),
        device=config["housing"]["device"],
        code_version=HOUSING_CODE["train"],
    script:
        "../scripts/craft.py"


rule train_shard:
    input:
        data=rules.prepare_data.output.data,
        setup=lambda wc: setup_path(HOUSING, wc.audit, root=HOUSING_DIR),
        crafted=rules.craft.output.crafted,
    output:
        # Not temp(): the shards are what makes raising R cheap (only new shards are trained).
        shard=f"{HOUSING_DIR}/audits/{{audit}}/shards/s{{size}}/{{index}}.npz",
    log:
        log_path("housing/train_shard/{audit}/s{size}/{index}"),
    benchmark:
        bench_path("housing/train_shard/{audit}/s{size}/{index}")
    conda:
        "../../envs/torch.yaml"
    threads: config["housing"]["resources"]["threads"]
    resources:
        mem_mb=config["housing"]["resources"]["mem_mb"],
        runtime=config["housing"]["resources"]["runtime"],
        gpu=config["housing"]["resources"]["gpu"],
    params:
        spec=lambda wc: HOUSING.audits[wc.audit],
        master_seed=SEED,
        device=config["housing"]["device"],
        code_version=HOUSING_CODE["train"],
    script:
        "../scripts/train_shard.py"
