#!/usr/bin/env bash
# On the GPU machine: everything issue 6 (plans) needs a GPU for, in one call, from prebuilt
# binaries in BIN_DIR (default .device/: sinter, sinter_gpu_tests, sinter_bench_plan). Logs go to
# $OUT. Exit status: non-zero when a test, a check or a command failed.
#   bench/plan_device.sh [BIN_DIR]
set -uo pipefail
bin="${1:-.device}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"  # outside $out: only results come back
status=0
echo "== GpuPlan tests"
timeout 240 "$bin/sinter_gpu_tests" --gtest_filter='GpuPlan.*' > "$out/gpu_plan_tests.log" 2>&1 || status=1
grep -E "rel L2|load to first|note:|refused:|^\[  (PASSED|FAILED|SKIPPED)|^\[  FAILED" "$out/gpu_plan_tests.log" | head -60
echo "== sinter_bench_plan"
timeout 240 "$bin/sinter_bench_plan" 2>&1 | tee "$out/bench_plan.log" || status=1
timeout 120 python3 bench/torch_decode_stack.py | tee "$out/torch_decode_stack.jsonl" || status=1
echo "== CLI: build, inspect, run (stream, graph), bench"
plan="$out/transformer_block.plan"
timeout 120 "$bin/sinter" build examples/transformer_block.json -o "$plan" --tune fast || status=1
timeout 120 "$bin/sinter" build examples/transformer_block.json -o "$plan" --tune fast || status=1  # zero timings now
timeout 60 "$bin/sinter" inspect "$plan" | head -30 || status=1
timeout 60 "$bin/sinter" run "$plan" --executor stream || status=1
timeout 60 "$bin/sinter" run "$plan" --executor graph || status=1
timeout 60 "$bin/sinter" bench "$plan" --iters 200 || status=1
timeout 60 "$bin/sinter" bench "$plan" --executor stream --iters 200 --json > "$out/bench_stream.json" || status=1
echo "== demo (build, save, load, replay per example)"
timeout 240 "$bin/sinter" demo --examples examples 2>&1 | grep -E "^== |plan:|FAILED|failed|rel L2" || status=1
exit $status
