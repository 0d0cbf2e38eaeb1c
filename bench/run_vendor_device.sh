#!/usr/bin/env bash
# On the GPU machine, in one call: the cuDNN engine's GPU tests, then sinter_bench_vendor and
# the PyTorch vendor baselines in the same run, then a table of ratios against PyTorch.
#   bench/run_vendor_device.sh [BIN_DIR] [--quick]
set -uo pipefail
bin="${1:-.device}"
quick="${2:-}"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
echo "== GpuCudnn tests"
"$bin/sinter_gpu_tests" --gtest_filter='GpuCudnn*' > "$out/gpu_cudnn.log" 2>&1
grep -E "cuDNN [0-9]|rel L2|step .*\[cudnn\]|sinter: cudnn|candidate\(s\)|operation graph given|^    [0-9]+\. |Failure|^\[  (PASSED|FAILED|SKIPPED|  OK) " "$out/gpu_cudnn.log" | head -150
# A refusal: rerun the model-shape heuristics test with cuDNN's own warnings and errors logged.
if grep -q "cudnn offers no candidate" "$out/gpu_cudnn.log"; then
  echo "== cuDNN log (CUDNN_LOGLEVEL_DBG=2) of GpuCudnn.SdpaHeuristicsOfferConfigsAtModelShapes"
  CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG="$out/cudnn_log.txt" timeout 120 "$bin/sinter_gpu_tests" \
    --gtest_filter='GpuCudnn.SdpaHeuristicsOfferConfigsAtModelShapes' > "$out/gpu_cudnn_logged.log" 2>&1
  grep -E "^[EW]! |CUDNN_STATUS|Reason|reason" "$out/cudnn_log.txt" | sort | uniq -c | sort -rn | head -40
fi
echo "== benchmarks"
"$bin/sinter_bench_vendor" $quick | tee "$out/vendor.jsonl"
python3 bench/torch_vendor_baselines.py $quick | tee "$out/torch_vendor.jsonl"
echo "== ratios (sinter-cudnn time / PyTorch time; < 1 is faster)"
python3 - "$out/vendor.jsonl" "$out/torch_vendor.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.startswith("{")]
by = {}
for r in rows:
    if "ms" in r:
        by.setdefault(r["case"], {})[r["engine"]] = r
for case, e in by.items():
    ours = e.get("sinter-cudnn")
    if not ours:
        continue
    line = f"{case:22s} sinter-cudnn {ours['ms']:.4f} ms {ours.get('tflops', 0):7.1f} TFLOP/s on {ours.get('steps_on')}"
    for ref in ("torch-cudnn", "torch-flash", "torch-conv-bare", "torch-conv-bias-relu", "sinter-jit",
                "sinter-jit-flash-decode", "sinter-jit-flash-simple"):
        if ref in e:
            line += f" | {ref} {e[ref]['ms']:.4f} ms (x{ours['ms'] / e[ref]['ms']:.3f})"
    print(line)
PY
