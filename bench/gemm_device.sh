#!/usr/bin/env bash
# On the GPU machine: the Hopper GEMM's GPU tests (suite GpuHopperGemm), then its benchmark
# against cuBLASLt in the same process. Timeouts guard against a hung kernel (an mbarrier wait
# that never completes). Binaries come prebuilt in BIN_DIR (default .device/); logs land in $OUT.
#   bench/gemm_device.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
echo "== GpuHopperGemm"
timeout 600 "$bin/sinter_gpu_tests" --gtest_filter='GpuHopperGemm.*' > "$out/gpu_hopper_gemm.log" 2>&1
echo "gpu tests exit code $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|rel L2|sm90|Failure|Error" "$out/gpu_hopper_gemm.log" | head -80
echo "== sinter_bench_gemm"
timeout 540 "$bin/sinter_bench_gemm" $quick | tee "$out/gemm.jsonl"
echo "bench exit code ${PIPESTATUS[0]}"
