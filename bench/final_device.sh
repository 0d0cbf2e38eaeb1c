#!/usr/bin/env bash
# One short device call that checks what changed since the last full run, most important first,
# each step under its own timeout so a hang costs only that step. Logs land in $OUT.
#   bench/final_device.sh [BIN_DIR]
set -uo pipefail
bin="${1:-.device}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
summary() { grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[==========\] .* ran" "$1" | sort -u | head -30; }
stamp "GPU tests: new defaults (row-wise, pointwise, flash-decode, decode GEMV, examples)"
timeout 130 "$bin/sinter_gpu_tests" --gtest_filter='GpuRegions.Rowwise*:GpuRegions.Pointwise*:GpuRegions.ExampleGraphs:GpuRegions.SdpaVariants:GpuDecodeAttention.*:GpuDecodeGemm.*:-GpuDecodeGemm.RealDecodeShape' > "$out/tests_a.log" 2>&1
echo "exit $?"; summary "$out/tests_a.log"
stamp "plan bench (launch cost, load to first result, decode stack)"
timeout 110 "$bin/sinter_bench_plan" --runs 7 > "$out/bench_plan.log" 2>&1
echo "exit $?"; grep -v "check " "$out/bench_plan.log" | tail -14
stamp "memory-bound bench"
timeout 90 "$bin/sinter_bench_memory" --quick --cases add_layernorm,softmax,pointwise_chain10,copy > "$out/sinter.jsonl" 2>&1
echo "exit $?"; cut -c1-190 "$out/sinter.jsonl"
stamp "GEMM bench"
timeout 80 "$bin/sinter_bench_gemm" --quick > "$out/gemm.jsonl" 2>&1
echo "exit $?"; cut -c1-230 "$out/gemm.jsonl"
stamp "Hopper GEMM tests"
timeout 60 "$bin/sinter_gpu_tests" --gtest_filter='GpuHopperGemm.*' > "$out/tests_gemm.log" 2>&1
echo "exit $?"; summary "$out/tests_gemm.log"
stamp "decode sdpa bench"
timeout 30 "$bin/sinter_bench_vendor" --quick --only=sdpa_decode > "$out/vendor.jsonl" 2>&1
echo "exit $?"; cut -c1-230 "$out/vendor.jsonl"
stamp done
