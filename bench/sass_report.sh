#!/usr/bin/env bash
# The compiler's report on the Hopper GEMM and decode GEMV kernels, with no GPU: the JIT tests
# compile every config through NVRTC for sm_90a and dump the cubins (SINTER_DUMP_CUBIN_DIR), then
# cuobjdump reads registers, shared memory and stack per kernel and counts the instructions that
# matter in the SASS: HGMMA (wgmma), UTMALDG (TMA loads), HMMA (mma.sync), LDL/STL (local memory:
# spills). Prints a markdown table for docs/benchmarks.md. (bench/sass_loops.py counts the
# instructions a k-block of each kernel's wgmma main loop, and compares two dumps.)
#   bench/sass_report.sh [BUILD_DIR]
# Needs cuobjdump and nvdisasm (CUDA's bin/, or the nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels from PyPI: pip download, unzip, put both on PATH).
set -euo pipefail
build="${1:-build}"
command -v cuobjdump > /dev/null || { echo "sass_report: cuobjdump not on PATH" >&2; exit 1; }
command -v nvdisasm > /dev/null || { echo "sass_report: nvdisasm not on PATH (cuobjdump -sass needs it)" >&2; exit 1; }
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
SINTER_DUMP_CUBIN_DIR="$dir" "$build/tests/jit/sinter_jit_tests" \
  --gtest_filter='JitMatmulSm90.CompilesWithoutSpills:JitMatmulSm90.BenchmarkEpilogueCompilesWithoutSpills:JitMatmulSm90.EveryEpilogueKindCompilesWithoutSpills:JitMatmulDecode.CompilesWithoutSpills' \
  > "$dir/tests.log" 2>&1 || { tail -20 "$dir/tests.log" >&2; exit 1; }
echo "| kernel (cubin) | description | registers | shared (static) | stack | HGMMA | UTMALDG | HMMA | LDL/STL |"
echo "|---|---|---|---|---|---|---|---|---|"
for cubin in "$dir"/*.cubin; do
  name="$(basename "$cubin" .cubin)"
  desc="$(head -1 "$cubin.cu" | sed 's|^// ||' | cut -c1-110)"
  res="$(cuobjdump -res-usage "$cubin" | grep -m1 "REG:")"
  reg="$(grep -o 'REG:[0-9]*' <<< "$res" | cut -d: -f2)"
  shared="$(grep -o 'SHARED:[0-9]*' <<< "$res" | cut -d: -f2)"
  stack="$(grep -o 'STACK:[0-9]*' <<< "$res" | cut -d: -f2)"
  sass="$(cuobjdump -sass "$cubin")"
  count() { grep -cE "$1" <<< "$sass" || true; }
  echo "| $name | $desc | $reg | $shared | ${stack:-0} | $(count ' HGMMA\.') | $(count ' UTMALDG') | $(count ' HMMA\.') | $(count ' (LDL|STL)') |"
done
