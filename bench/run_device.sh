#!/usr/bin/env bash
# On the GPU machine, in one call: the GPU test suite, then Sinter's benchmarks and the PyTorch
# baselines in the same run, then the summary table. Binaries come prebuilt in the folder given
# (default .device/, carried from the development machine); results land in $OUT.
#   bench/run_device.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
echo "== GPU tests"
"$bin/sinter_gpu_tests" 2>&1 > "$out/gpu_tests.log"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|rel L2" "$out/gpu_tests.log" | grep -E "FAILED|PASSED|SKIPPED" | head -40
echo "== benchmarks"
"$bin/sinter_bench_memory" $quick | tee "$out/sinter.jsonl"
python3 bench/torch_baselines.py $quick | tee "$out/torch.jsonl"
echo "== summary"
python3 bench/report.py "$out/sinter.jsonl" "$out/torch.jsonl" | tee "$out/report.md"
