#!/usr/bin/env bash
# GPU check (docs/benchmarks.md, "On a GPU"): the gpu-marked tests, then the engine's seconds per model-step on CUDA
# for every image model, `auto` against the other backend where both apply. Run from the repository root on a CUDA
# machine with the package importable (pip install -e . or PYTHONPATH=src); OUT (default gpu-check/) gets the logs
# and calibration.json (the measured rows; copy it to config/calibration.json to plan with them). Assembled from the
# commands of the 2026-11-26 H100 calls (173 + 83 + 76 + 64 s there); not yet run as one script on a GPU.
set -uo pipefail
OUT=${OUT:-gpu-check}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HSAUDIT_TEST_WARM=0 MPLBACKEND=Agg
PY=${PYTHON:-python3}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $PY -c "import torch; print(torch.__version__, torch.cuda.get_device_name())"; } | tee "$OUT/device.txt"
timeout 300 $PY -m pytest -p no:cacheprovider -o addopts="" -m gpu tests/engine/test_gpu.py -q -rA | tee "$OUT/gpu_tests.log"
bench() {  # bench SECONDS ARGS...: one `hsaudit bench train` on CUDA, its JSON appended to bench.jsonl
  echo "### $*" | tee -a "$OUT/bench.log"
  timeout "$1" $PY -m hsaudit bench train "${@:2}" --opacus-models 0 --device cuda --json > "$OUT/last.json" \
    && tr -d '\n' < "$OUT/last.json" >> "$OUT/bench.jsonl" && echo >> "$OUT/bench.jsonl"
  echo "rc=$?" | tee -a "$OUT/bench.log"
}
CAL=(--save-calibration "$OUT/calibration.json")
bench 90 --model convnet --models 64,256 --steps 5 "${CAL[@]}"
bench 90 --model convnet --models 4,16,64 --steps 5 --backend hooks
bench 60 --model mnist_cnn --models 64,256 --steps 5 "${CAL[@]}"
bench 60 --model mnist_cnn --models 64,256 --steps 5 --backend hooks
bench 60 --model cifar_cnn --models 16,64 --steps 5 "${CAL[@]}"
bench 60 --model cifar_cnn --models 16,64 --steps 5 --backend hooks
bench 90 --model resnet18_gn --models 1,4 --steps 3 "${CAL[@]}"
bench 90 --model resnet18_gn --models 1,4 --steps 3 --backend func
bench 90 --model wrn16_4 --models 1,4,8 --steps 3 "${CAL[@]}"
bench 60 --model alexnet_head --models 256,1024 --steps 10 "${CAL[@]}"
bench 60 --model fcnn --models 4096 --steps 50 --workers 1 "${CAL[@]}"
timeout 300 $PY scripts/gpu_shard.py 500 250 | tee "$OUT/shard.log"  # a paper-scale ConvNet shard end to end
