#!/usr/bin/env bash
# Everything on the GPU machine in one call, for when device time is short: the whole GPU test
# suite, then every benchmark program (memory-bound, GEMM, vendor engines, plans) and the
# vendor PyTorch baselines. Logs and JSON lines land in $OUT; a short summary goes to stdout.
#   bench/device_all.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"  # outside $out: only results come back
echo "== GPU tests"
timeout 300 "$bin/sinter_gpu_tests" > "$out/gpu_tests.log" 2>&1
echo "gpu tests exit code $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]" "$out/gpu_tests.log" | head -30
echo "== memory-bound"
timeout 200 "$bin/sinter_bench_memory" $quick > "$out/sinter.jsonl" 2>&1
grep -v candidate "$out/sinter.jsonl" | cut -c1-160
grep candidate "$out/sinter.jsonl" | sed 's/.*case": "\([^"]*\)".*candidate": "\(jit [0-9]*\): \([^"]*\)".*ms": \([0-9.-]*\).*/\1 | \2 \3 | \4/'
echo "== gemm"
timeout 150 "$bin/sinter_bench_gemm" $quick > "$out/gemm.jsonl" 2>&1; echo "exit $?"
cut -c1-400 "$out/gemm.jsonl"
echo "== vendor"
timeout 150 "$bin/sinter_bench_vendor" $quick > "$out/vendor.jsonl" 2>&1; echo "exit $?"
cut -c1-300 "$out/vendor.jsonl"
timeout 150 python3 bench/torch_vendor_baselines.py $quick > "$out/torch_vendor.jsonl" 2>&1
cut -c1-200 "$out/torch_vendor.jsonl"
echo "== plan"
timeout 150 "$bin/sinter_bench_plan" > "$out/bench_plan.log" 2>&1; echo "exit $?"
tail -25 "$out/bench_plan.log"
timeout 120 python3 bench/torch_decode_stack.py $quick > "$out/torch_decode_stack.jsonl" 2>&1
cat "$out/torch_decode_stack.jsonl"
plan="$out/transformer_block.plan"
timeout 60 "$bin/sinter" build examples/transformer_block.json -o "$plan" --tune fast > "$out/build1.log" 2>&1
timeout 60 "$bin/sinter" build examples/transformer_block.json -o "$plan" --tune fast > "$out/build2.log" 2>&1
tail -3 "$out/build2.log"
timeout 60 "$bin/sinter" run "$plan" --executor graph > "$out/run_graph.log" 2>&1; echo "run graph exit $?"
tail -12 "$out/run_graph.log"
echo "== picture"
python3 bench/plot.py "$out/benchmarks.svg" "$out"/*.jsonl
