#!/usr/bin/env bash
# On the GPU machine: the decode GEMV tile's GPU tests (suite GpuDecodeGemm), then the decode
# benchmark cases (M = 1, 8, 16 against a 4096x14336 bf16 weight; both weight layouts) against
# cuBLASLt in the same process. Binaries come prebuilt in BIN_DIR (default .device/); logs land
# in $OUT.
#   bench/decode_device.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
echo "== GpuDecodeGemm"
timeout 300 "$bin/sinter_gpu_tests" --gtest_filter='GpuDecodeGemm.*' > "$out/gpu_decode_gemm.log" 2>&1
echo "gpu tests exit code $?"
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|decode gemv|Failure|Error" "$out/gpu_decode_gemm.log" | sort -u | head -60
echo "worst rel L2 / bound:"
sed -n 's/.*rel L2 \([0-9.e+-]*\) (bound \([0-9.e+-]*\)).*/\1 \2/p' "$out/gpu_decode_gemm.log" \
  | awk '{r = $1 / $2; if (r > m) m = r} END {print m}'
echo "== sinter_bench_gemm --decode"
timeout 280 "$bin/sinter_bench_gemm" --decode $quick | tee "$out/decode.jsonl" | cut -c1-420
echo "bench exit code ${PIPESTATUS[0]}"
