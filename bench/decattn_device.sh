#!/usr/bin/env bash
# On the GPU machine: the flash-decode sdpa kernels' GPU tests (suite GpuDecodeAttention, plus
# the existing SdpaVariants and example-graph tests, which now take them for Sq <= 16), then the
# decode sdpa benchmark cases (B32 H32/8 Skv4096 and B1 Skv1025, D128) on cuDNN, flash-decode and
# flash-simple in one process, and the PyTorch baselines. Binaries come prebuilt in BIN_DIR
# (default .device/); logs land in $OUT.
#   bench/decattn_device.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
echo "== GpuDecodeAttention, GpuRegions.SdpaVariants, GpuRegions.ExampleGraphs*"
timeout 420 "$bin/sinter_gpu_tests" \
  --gtest_filter='GpuDecodeAttention.*:GpuRegions.SdpaVariants:GpuRegions.ExampleGraphs*' > "$out/gpu_decattn.log" 2>&1
echo "gpu tests exit code $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|flash-decode|Failure|Error|rel L2 (nan|inf)" "$out/gpu_decattn.log" \
  | sort -u | head -60
echo "worst rel L2 / bound:"
sed -n 's/.*rel L2 \([0-9.e+-]*\) (bound \([0-9.e+-]*\)).*/\1 \2/p' "$out/gpu_decattn.log" \
  | awk '$2 > 0 {r = $1 / $2; if (r > m) m = r} END {print m}'
echo "== sinter_bench_vendor --only=sdpa_decode"
timeout 200 "$bin/sinter_bench_vendor" --only=sdpa_decode $quick | tee "$out/decattn.jsonl" | cut -c1-400
echo "bench exit code ${PIPESTATUS[0]}"
echo "== PyTorch"
timeout 200 python3 bench/torch_vendor_baselines.py $quick | grep -E "versions|sdpa_decode" | tee "$out/torch_decattn.jsonl"
echo "== the decode stack (sinter_bench_plan part 4) and its PyTorch baseline"
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"
timeout 300 "$bin/sinter_bench_plan" > "$out/bench_plan_decattn.log" 2>&1
echo "bench_plan exit code $?"
grep -E "llama decode stack|checks|WRONG" "$out/bench_plan_decattn.log" | cut -c1-600
timeout 120 python3 bench/torch_decode_stack.py | tee "$out/torch_decode_stack.jsonl"
