# Datasets of the trained-model audits: prepare each family's dataset (hsaudit.data.datasets.configured_dataset) and the
# AlexNet features of Cebere et al. Fig. 13. The plans these rules serve are built in common.smk (PLANS).


rule prepare_data:
    output:
        data="results/data/{dataset}.npz",
    log:
        log_path("data/prepare_data/{dataset}"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        options=lambda wc: dataset_options(wc.dataset),
        code_version=script_version("prepare_data"),
    script:
        "../scripts/prepare_data.py"


rule extract_features:
    input:
        data="results/data/{dataset}.npz",
    output:
        data="results/data/{dataset}_alexnet.npz",
    log:
        log_path("data/extract_features/{dataset}"),
    benchmark:
        bench_path("data/extract_features/{dataset}")
    conda:
        "../../envs/torch.yaml"
    threads: 2
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=lambda wc: config[wc.dataset]["resources"]["gpu"],
    params:
        weights=lambda wc: config[wc.dataset]["data"]["alexnet_weights"],
        data_dir=lambda wc: config[wc.dataset]["data"]["data_dir"],
        download=lambda wc: config[wc.dataset]["data"]["download"],
        device=lambda wc: config[wc.dataset]["device"],
        code_version=script_version("extract_features"),
    script:
        "../scripts/extract_features.py"
