# Datasets of the trained-model audits, and the Housing experiment plan shared by train/scores/audit/figures.
#
# The plan (hsaudit.figures.housing_plan.plan_housing) turns config["housing"] into setups, audits and figure
# entries; every audit is keyed by a hash of the parameters that change its result (docs/housing.md). Kept
# here, next to the first Housing rule, rather than in the shared common.smk.
from hsaudit.figures.housing_plan import (
    audit_table_paths,
    plan_housing,
    setup_path,
    shard_paths,
)
from hsaudit.provenance import code_version
from hsaudit.seeding import derive_seed

HOUSING = plan_housing(config["housing"], seed=SEED)
HOUSING_DIR = "results/housing"

# Code versions narrowed to the modules each rule family runs (see CODE_VERSION in common.smk): restyling a
# figure does not retrain populations, and another part's edits do not rerun the Housing jobs.
HOUSING_CODE = {
    "data": code_version("hsaudit.data"),
    "train": code_version(
        "hsaudit.data",
        "hsaudit.train",
        "hsaudit.adversaries",
        "hsaudit.figures.housing_plan",
    ),
    "audit": code_version(
        "hsaudit.figures.housing_plan", "hsaudit.audit", "hsaudit.accounting"
    ),
    "plot": code_version("hsaudit.figures.housing", "hsaudit.plotting"),
}


wildcard_constraints:
    setup=r"[0-9a-f]{12}",
    audit=r"[0-9a-f]{12}",
    runs=r"\d+",
    size=r"\d+",
    index=r"\d+",


rule prepare_data:
    output:
        data="results/data/housing.npz",
    log:
        log_path("housing/prepare_data"),
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        path=config["housing"]["data"]["path"],
        data_dir=config["housing"]["data"]["data_dir"],
        download=config["housing"]["data"]["download"],
        threshold=config["housing"]["data"]["threshold"],
        standardize=config["housing"]["data"]["standardize"],
        code_version=HOUSING_CODE["data"],
    script:
        "../scripts/prepare_data.py"
