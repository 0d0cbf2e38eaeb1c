#!/usr/bin/env bash
# A short device call when device time is scarce: the GPU tests of the memory-bound regions, the
# examples and cuBLASLt; Sinter's memory-bound benchmarks; PyTorch eager (no torch.compile).
set -uo pipefail
bin="${1:-.device}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
timeout 200 "$bin/sinter_gpu_tests" --gtest_filter='GpuRegions.Pointwise*:GpuRegions.Fp8*:GpuRegions.Residual*:GpuRegions.RmsNorm*:GpuRegions.Rope*:GpuRegions.Permute*:GpuRegions.ExampleGraphs:GpuCublasLt.*' > "$out/gpu_tests.log" 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]" "$out/gpu_tests.log" | head -20
timeout 120 "$bin/sinter_bench_memory" --quick | tee "$out/sinter.jsonl"
timeout 90 python3 bench/torch_baselines.py --quick --no-compile | tee "$out/torch.jsonl"
python3 bench/report.py "$out/sinter.jsonl" "$out/torch.jsonl" | tee "$out/report.md"
