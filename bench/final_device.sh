#!/usr/bin/env bash
# One short device call that checks what changed since the last full run, each step under its
# own timeout so a hang costs only that step. Logs land in $OUT.
#   bench/final_device.sh [BIN_DIR] [STEP,STEP,...]
# Steps (default: all, in this order):
#   vendor_tests  GpuCudnn.* and GpuCublasLt.* against the CPU reference
#   vendor        sinter_bench_vendor and torch_vendor_baselines.py in the same call (issue 5);
#                 VENDOR_ONLY=A,B limits both to those cases (default: all)
#   plan          sinter_bench_plan (launch cost, load to first result, decode stack with a per-step
#                 breakdown) and torch_decode_stack.py in the same call (issue 6)
#   layout_tests  GPU tests of layout copies, aliases, the examples and plans
#   quick_tests   the GPU tests most sensitive to launch and layout changes (cuBLASLt, layout,
#                 examples, plans, decode attention and GEMV), under one short timeout
#   unverified    the GPU tests written or changed without a device call (UNVERIFIED_TESTS, a
#                 gtest filter; default: the row-wise and pointwise candidates), then softmax,
#                 add+layernorm and add+rmsnorm benched with a one-pass row-statistics combine
#                 forced (ROW_COMBINE=pairwise|warp, default pairwise), the pre-session-8 kernels
#                 to set beside the two-pass default of the memory step, and the transformer block
#   bundle        sinter build/inspect/run of the transformer block's bundle (kept in $OUT)
#   pdl_off       the 200-op chain again with SINTER_PDL=0 (programmatic launch off), to compare
#   gemm_decode   sinter_bench_gemm --quick --decode (decode GEMV candidates, Llama stack shapes),
#                 L2 hot and cold; DECODE_AB_ENV="VAR=VALUE ..." reruns M = 1, 8, 16 under each
#                 (DECODE_AB_CASES: other cases, e.g. llama_qo,llama_gate_silu,llama_down_residual)
#   decode_tests  GpuDecodeGemm.* (every decode GEMV candidate; DECODE_TESTS a filter; DECODE_TEST_ENV
#                 "VAR=VALUE ..." runs them again under those settings)
#   rows_tests    GPU tests of the row-wise, pointwise, flash-decode, decode GEMV and example graphs
#   memory        sinter_bench_memory on the issue-3 cases, with PyTorch's copy; MEMORY_TIMING_AB=1
#                 runs them again with SINTER_TIMING=synced (the timing method before session 9)
#   torch_memory  bench/torch_baselines.py --quick: PyTorch eager and torch.compile on the same
#                 memory-bound cases (and the GEMM ones it also times), for ratios in one call
#   gemm          sinter_bench_gemm --quick (issue 4); GEMM_CASES=A,B limits it to those cases;
#                 GEMM_AB_ENV=VAR=VALUE runs them again under that variable (defaults only)
#   gemm_parts    the fused epilogue part by part (sinter_bench_gemm --shapes S, S:bias, S:bias_amax,
#                 S:bias_gelu, S:fused, S = GEMM_PARTS_SHAPE, default 4096x4096x4096), each against
#                 bare cuBLASLt with every Hopper candidate forced; GEMM_AB_ENV=VAR=VALUE runs the
#                 defaults again under that variable (e.g. SINTER_GELU=erff)
#   torch_gemm    bench/torch_gemm_baselines.py --quick: cuBLAS through torch.matmul, PyTorch eager,
#                 torch.compile (default and max-autotune; TORCH_GEMM_ARGS=--no-autotune skips the
#                 latter) on the gemm step's cases and the decode shapes, for the issue's ratios
#   gemm_soak     each SOAK_CASES case (default gemm_4096,gemm_bias_gelu_amax_4096) run back to back
#                 for SOAK_S seconds under an nvidia-smi sampler: SM clock, power, event reasons
#   decode_probe  bench/experiments/decode_read_probe (built into BIN_DIR): TMA box shapes, ring
#                 depths, PDL and L2 prefetch reading the 117 MB decode weight, no math
#   hopper_tests  GpuHopperGemm.*
#   probe         bench/experiments/stream_probe (built by nvcc into BIN_DIR): copy and read-only
#                 stream structures against cudaMemcpy
#   gemm_profile  Nsight Compute on the 4096^3 GEMM: our default kernel, cuBLASLt's kernel on the
#                 same problem, and our default with the bias+GELU+amax epilogue (tensor-pipe
#                 utilization, stall reasons, L2 traffic, launch shape: what separates the two)
#   decode_profile Nsight Compute on the M = 1 decode GEMV (DECODE_PROFILE_CASE, default decode_m1):
#                 our default kernel and cuBLASLt's, DRAM throughput, duration without launch cost
#   all_tests     every GPU test (ALL_TESTS, a gtest filter; default all), SHARDS shards
#   profile       Nsight Compute on the default kernel of each PROFILE_CASES memory-bound case
#                 (default softmax,add_layernorm,add_rmsnorm,copy): speed of light, warp stall
#                 reasons, scheduler and memory statistics, occupancy. Why softmax runs 20% under
#                 a copy of its bytes is the open question of issue 3 (docs/benchmarks.md)
set -uo pipefail
bin="${1:-.device}"
steps=",${2:-vendor_tests,vendor,plan,rows_tests,memory,gemm,hopper_tests},"
out="${OUT:-/tmp/sinter_out}"
mkdir -p "$out"
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
want() { [[ "$steps" == *",$1,"* ]]; }
summary() { grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^\[==========\] .* ran|SKIPPED" "$1" | sort -u | head -30; }
# gpu_tests LOG TIMEOUT FILTER [DETAIL_REGEX]: the GPU tests matching FILTER into $out/LOG, then
# the pass/fail summary and the lines matching DETAIL_REGEX (default: failures), 3 lines after each.
# The tests run as $SHARDS gtest shards in parallel (default 4): most of their time is NVRTC
# compiling kernels on a fresh machine, one core each; the shards share the kernel cache.
gpu_tests() {
  local shards="${SHARDS:-4}" pids=() rc=0
  for ((i = 0; i < shards; ++i)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i timeout "$2" "$bin/sinter_gpu_tests" --gtest_filter="$3" \
      > "$out/$1.shard$i" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  cat "$out"/"$1".shard* > "$out/$1"; rm -f "$out"/"$1".shard*
  echo "exit $rc (worst of $shards shards)"; summary "$out/$1"; grep -E "${4:-Failure}" -A3 "$out/$1" | head -60
}
if want decode_probe; then
  stamp "decode read probe: TMA box shapes, ring depths, PDL and L2 prefetch on a 117 MB weight"
  timeout 120 "$bin/decode_read_probe" > "$out/decode_read_probe.log" 2>&1
  echo "exit $?"; cat "$out/decode_read_probe.log"
fi
if want probe; then
  stamp "stream probe: copy and read structures vs cudaMemcpy"
  timeout 120 "$bin/stream_probe" > "$out/stream_probe.log" 2>&1
  echo "exit $?"; cat "$out/stream_probe.log"
fi
if want vendor_tests; then
  stamp "GPU tests: cuDNN and cuBLASLt engines"
  gpu_tests tests_vendor.log 150 'GpuCudnn.*:GpuCublasLt.*' 'Failure|cuDNN [0-9]'
fi
if want vendor; then
  stamp "vendor bench + PyTorch vendor baselines"
  only=(); [ -n "${VENDOR_ONLY:-}" ] && only=("--only=$VENDOR_ONLY")
  timeout 150 "$bin/sinter_bench_vendor" --quick "${only[@]}" > "$out/vendor.jsonl" 2>&1
  echo "exit $?"; cut -c1-260 "$out/vendor.jsonl"
  timeout 120 python3 bench/torch_vendor_baselines.py --quick "${only[@]}" > "$out/torch_vendor.jsonl" 2>&1
  echo "exit $?"; cut -c1-260 "$out/torch_vendor.jsonl"
fi
if want plan; then
  stamp "plan bench (launch cost, load to first result, decode stack + breakdown) + torch decode stack"
  timeout 200 "$bin/sinter_bench_plan" --runs 7 > "$out/bench_plan.log" 2>&1
  echo "exit $?"; grep -v "check " "$out/bench_plan.log" | cut -c1-250
  timeout 90 python3 bench/torch_decode_stack.py --quick > "$out/torch_decode_stack.jsonl" 2>&1
  echo "exit $?"; cat "$out/torch_decode_stack.jsonl"
fi
if want unverified; then
  stamp "GPU tests written without a device call"
  gpu_tests tests_unverified.log 150 "${UNVERIFIED_TESTS:-GpuRegions.Rowwise*:GpuRegions.PointwiseCandidatesEachCorrect}" 'Failure'
  # every softmax, add+layernorm and add+rmsnorm candidate with a one-pass combine forced (and
  # rmsnorm's guarded two-barrier reduction), against the two-pass default in the memory step
  SINTER_ROW_COMBINE="${ROW_COMBINE:-pairwise}" timeout 120 "$bin/sinter_bench_memory" --quick --cases softmax,add_layernorm,add_rmsnorm \
    > "$out/memory_row_combine.jsonl" 2>&1
  echo "exit $?"; cut -c1-190 "$out/memory_row_combine.jsonl"
  # the suite's transformer block, step by step
  timeout 60 "$bin/sinter" bench examples/transformer_block.json --executor graph \
    > "$out/tb_folded.log" 2>&1
  echo "exit $?"; cut -c1-200 "$out/tb_folded.log" | head -40
fi
if want bundle; then
  stamp "transformer block bundle: build, inspect, run from the bundle (load notes); the bundle comes back in \$OUT"
  timeout 120 "$bin/sinter" build examples/transformer_block.json -o "$out/transformer_block.plan" > "$out/bundle.log" 2>&1
  echo "exit $?"
  timeout 60 "$bin/sinter" inspect "$out/transformer_block.plan" >> "$out/bundle.log" 2>&1
  for i in 1 2; do timeout 60 "$bin/sinter" run "$out/transformer_block.plan" --executor graph >> "$out/bundle.log" 2>&1; done
  echo "exit $?"; cut -c1-300 "$out/bundle.log" | head -80
fi
if want quick_tests; then
  stamp "GPU tests: cuBLASLt, layout, examples, plans, decode"
  gpu_tests tests_quick.log 150 'GpuCublasLt.*:GpuRegions.PermuteSliceConcatReshape:GpuRegions.Layout*:GpuRegions.ExampleGraphs:GpuPlan.*:GpuDecodeAttention.*:GpuDecodeGemm.OddShapes*'
fi
if want layout_tests; then
  stamp "GPU tests: layout copies, aliases, examples, plans"
  gpu_tests tests_layout.log 200 'GpuRegions.PermuteSliceConcatReshape:GpuRegions.Layout*:GpuRegions.ExampleGraphs*:GpuPlan.*'
fi
if want gemm_decode; then
  stamp "decode GEMM bench"
  if [ -z "${DECODE_AB_ONLY:-}" ]; then  # DECODE_AB_ONLY=1: only the M = 1, 8, 16 runs below
  timeout 120 "$bin/sinter_bench_gemm" --quick --decode > "$out/gemm_decode.jsonl" 2>&1
  echo "exit $?"; cut -c1-260 "$out/gemm_decode.jsonl"
  # the same with cold L2 (weights from DRAM, as in the decode stack): what decode defaults need
  timeout 120 "$bin/sinter_bench_gemm" --quick --decode --cold-l2 > "$out/gemm_decode_cold.jsonl" 2>&1
  echo "exit $?"; cut -c1-260 "$out/gemm_decode_cold.jsonl"
  fi
  # DECODE_AB_ENV="VAR=VALUE ...": the M = 1, 8, 16 cases again under each setting, for A/B in one call
  # (one entry may set several variables joined by '+': SINTER_DECODE_TMA_BN=16+SINTER_DECODE_TMA_PREFETCH=6)
  for ab in ${DECODE_AB_ONLY:+SINTER_AB_BASELINE=1} ${DECODE_AB_ENV:-}; do
    cases="${DECODE_AB_CASES:-decode_m1,decode_m8,decode_m16}"
    env ${ab//+/ } timeout 60 "$bin/sinter_bench_gemm" --quick --decode --cases "$cases" \
      > "$out/gemm_decode_ab_${ab//[^A-Za-z0-9]/_}.jsonl" 2>&1
    echo "exit $? ($ab)"; grep -E "\"(${cases//,/|})\"" "$out/gemm_decode_ab_${ab//[^A-Za-z0-9]/_}.jsonl" | cut -c1-260
  done
fi
if want pdl_off; then
  stamp "200-op chain with programmatic launch off"
  SINTER_PDL=0 timeout 40 "$bin/sinter_bench_plan" --runs 7 --chain-only > "$out/bench_chain_nopdl.log" 2>&1
  echo "exit $?"; grep -v "check " "$out/bench_chain_nopdl.log"
fi
if want decode_tests; then
  stamp "GPU tests: decode GEMV tiles"
  gpu_tests tests_decode.log 200 "${DECODE_TESTS:-GpuDecodeGemm.*:-GpuDecodeGemm.RealDecodeShape}"
  # DECODE_TEST_ENV="VAR=VALUE ...": the decode tests again under those settings (e.g. SINTER_DECODE_TMA_X=global)
  if [ -n "${DECODE_TEST_ENV:-}" ]; then
    (export ${DECODE_TEST_ENV}; gpu_tests tests_decode_env.log 200 'GpuDecodeGemm.*:-GpuDecodeGemm.RealDecodeShape')
  fi
fi
if want rows_tests; then
  stamp "GPU tests: row-wise, pointwise, flash-decode, decode GEMV, examples"
  gpu_tests tests_rows.log 200 'GpuRegions.Rowwise*:GpuRegions.ExampleGraphs:GpuRegions.SdpaVariants:GpuDecodeAttention.*:GpuDecodeGemm.*:-GpuDecodeGemm.RealDecodeShape'
fi
if want memory; then
  stamp "memory-bound bench"
  timeout "${MEMORY_TIMEOUT:-240}" "$bin/sinter_bench_memory" --quick --cases "${MEMORY_CASES:-add_layernorm,add_rmsnorm,softmax,pointwise_chain10,copy}" > "$out/sinter.jsonl" 2>&1
  echo "exit $?"; cut -c1-190 "$out/sinter.jsonl"
  if [ -n "${MEMORY_TIMING_AB:-}" ]; then  # the same timed the old way (host waits after each call)
    SINTER_TIMING=synced timeout "${MEMORY_TIMEOUT:-240}" "$bin/sinter_bench_memory" --quick --cases "${MEMORY_CASES:-add_layernorm,add_rmsnorm,softmax,pointwise_chain10,copy}" > "$out/sinter_synced.jsonl" 2>&1
    echo "exit $? (SINTER_TIMING=synced)"; grep -v sinter-candidate "$out/sinter_synced.jsonl" | cut -c1-190
  fi
fi
if want torch_memory; then
  stamp "PyTorch memory-bound baselines (eager, torch.compile)"
  timeout 240 python3 bench/torch_baselines.py --quick > "$out/torch.jsonl" 2>&1
  echo "exit $?"; grep -E '"(copy|add_layernorm|add_rmsnorm|softmax|pointwise_chain10)"' "$out/torch.jsonl" | cut -c1-160
fi
if want gemm; then
  stamp "GEMM bench"
  cases=(); [ -n "${GEMM_CASES:-}" ] && cases=(--cases "$GEMM_CASES")
  timeout 150 "$bin/sinter_bench_gemm" --quick "${cases[@]}" > "$out/gemm.jsonl" 2>&1
  echo "exit $?"; cut -c1-230 "$out/gemm.jsonl"
  if [ -n "${GEMM_AB_ENV:-}" ]; then  # the same cases again under VAR=VALUE, for an A/B in one call
    env "$GEMM_AB_ENV" timeout 150 "$bin/sinter_bench_gemm" --quick --no-candidates "${cases[@]}" > "$out/gemm_ab.jsonl" 2>&1
    echo "exit $? ($GEMM_AB_ENV)"; cut -c1-230 "$out/gemm_ab.jsonl"
  fi
fi
if want gemm_parts; then
  stamp "GEMM epilogue parts"
  sh="${GEMM_PARTS_SHAPE:-4096x4096x4096}"
  parts="$sh,$sh:bias,$sh:bias_amax,$sh:bias_gelu,$sh:fused"
  timeout 250 "$bin/sinter_bench_gemm" --quick --shapes "$parts" > "$out/gemm_parts.jsonl" 2>&1
  echo "exit $?"; cut -c1-230 "$out/gemm_parts.jsonl"
  if [ -n "${GEMM_AB_ENV:-}" ]; then
    env "$GEMM_AB_ENV" timeout 150 "$bin/sinter_bench_gemm" --quick --no-candidates --shapes "$parts" \
      > "$out/gemm_parts_ab.jsonl" 2>&1
    echo "exit $? ($GEMM_AB_ENV)"; cut -c1-230 "$out/gemm_parts_ab.jsonl"
  fi
fi
if want torch_gemm; then
  stamp "PyTorch GEMM baselines (torch.matmul, eager, torch.compile)"
  timeout 300 python3 bench/torch_gemm_baselines.py --quick ${TORCH_GEMM_ARGS:-} > "$out/torch_gemm.jsonl" 2>&1
  echo "exit $?"; grep -v "^ " "$out/torch_gemm.jsonl" | cut -c1-200 | tail -20
fi
if want gemm_soak; then
  # each SOAK_CASES case's default runs back to back for SOAK_S seconds while nvidia-smi samples
  # the SM clock and board power every 50 ms: does a fused epilogue cost clock (power), not slots?
  stamp "GEMM soak with clock / power sampling"
  # SOAK_CASES entries: CASE[:ENGINE[:CANDIDATE]] (ENGINE jit or cublaslt; CANDIDATE a jit
  # candidate number from the gemm step's lines)
  IFS=, read -ra soak_cases <<< "${SOAK_CASES:-gemm_4096,gemm_bias_gelu_amax_4096}"
  reasons=clocks_event_reasons.active
  nvidia-smi --query-gpu=$reasons --format=csv,noheader > /dev/null 2>&1 || reasons=clocks_throttle_reasons.active
  for spec in "${soak_cases[@]}"; do
    IFS=: read -r c engine candidate <<< "$spec"
    tag="${spec//[^A-Za-z0-9_]/_}"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,$reasons \
      --format=csv,noheader,nounits -lms 50 > "$out/soak_$tag.smi" 2>&1 &
    smi=$!
    timeout 60 "$bin/sinter_bench_gemm" --quick --no-candidates --cases "$c" --soak "${SOAK_S:-4}" \
      --soak-engine "${engine:-jit}" --soak-candidate "${candidate:--1}" > "$out/soak_$tag.jsonl" 2>&1
    echo "exit $? ($spec)"; kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    grep soak_s "$out/soak_$tag.jsonl" | cut -c1-330
    python3 - "$out/soak_$tag.smi" <<'PY'
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    try:
        if len(f) >= 5 and float(f[4]) >= 95: rows.append(f)
    except ValueError:
        pass
if not rows:
    print("  no busy samples:", open(sys.argv[1]).read()[:300])
else:
    med = lambda i: statistics.median(float(r[i]) for r in rows)
    reasons = sorted({r[5] for r in rows if len(r) > 5})
    print(f"  {len(rows)} busy samples: sm clock {med(0):.0f} MHz (min {min(float(r[0]) for r in rows):.0f}), "
          f"mem {med(1):.0f} MHz, power {med(2):.0f} W, temp {med(3):.0f} C, event reasons {reasons}")
PY
  done
fi
if want hopper_tests; then
  stamp "Hopper GEMM tests"
  gpu_tests tests_gemm.log 240 'GpuHopperGemm.*'
fi
if want profile; then
  stamp "Nsight Compute on the memory-bound defaults"
  ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [ -z "$ncu_bin" ]; then
    echo "no ncu on this machine"
  else
    IFS=, read -ra cases <<< "${PROFILE_CASES:-softmax,add_layernorm,add_rmsnorm,copy}"
    for c in "${cases[@]}"; do
      # the bench's first launches are the default candidate's warm-up: profile the third
      timeout 120 "$ncu_bin" --kernel-name sinter_region --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        "$bin/sinter_bench_memory" --quick --cases "$c" > "$out/ncu_$c.log" 2>&1
      echo "exit $? ($c)"
      grep -E "sinter_region|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|stall|Hit Rate|Barrier|barrier" "$out/ncu_$c.log" | head -40
    done
  fi
fi
if want gemm_profile; then
  stamp "Nsight Compute on the 4096^3 GEMMs (ours, cuBLASLt's, ours fused)"
  ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [ -z "$ncu_bin" ]; then
    echo "no ncu on this machine"
  else
    sections=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats
              --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy)
    keep="Duration|SM Frequency|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\)|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Registers Per|Grid Size|Block Size|Cluster|Shared Memory|Stall|stall|Tensor|tensor|Pipe|pipe"
    # the third launch of each side: past the first run and a warm-up launch
    # GEMM_PROFILE_SIDES: which of ours, cublaslt, ours_fused (default all three); ours adds the
    # source counters (the SASS lines where the warps stall most)
    for spec in "ours gemm_4096 sinter_region" "cublaslt gemm_4096 regex:nvjet|xmma|gemm|cutlass" \
                "ours_fused gemm_bias_gelu_amax_4096 sinter_region"; do
      read -r tag case kname <<< "$spec"
      [[ ",${GEMM_PROFILE_SIDES:-ours,cublaslt,ours_fused}," == *",$tag,"* ]] || continue
      extra=(); [[ "$tag" == ours* ]] && extra=(--section SourceCounters)
      timeout 150 "$ncu_bin" --kernel-name "$kname" --launch-skip 2 --launch-count 1 "${sections[@]}" "${extra[@]}" \
        "$bin/sinter_bench_gemm" --quick --no-candidates --cases "$case" > "$out/ncu_gemm_$tag.log" 2>&1
      echo "exit $? ($tag)"
      grep -E "^  [a-zA-Z_0-9]+.*\(|$keep" "$out/ncu_gemm_$tag.log" | cut -c1-150 | head -60
    done
  fi
fi
if want decode_profile; then
  stamp "Nsight Compute on the decode GEMV, M = 1 x 4096x14336 [N, K]: our default and cuBLASLt's"
  ncu_bin="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [ -z "$ncu_bin" ]; then
    echo "no ncu on this machine"
  else
    # ncu flushes the caches before each profiled launch: the weight comes from DRAM, as in a model
    for spec in "ours sinter_region" "cublaslt regex:gemv|gemm|nvjet|splitK|reduce"; do
      read -r tag kname <<< "$spec"
      timeout 120 "$ncu_bin" --kernel-name "$kname" --launch-skip 2 --launch-count 2 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \
        --section LaunchStats --section Occupancy --section SchedulerStats \
        "$bin/sinter_bench_gemm" --quick --decode --no-candidates --cases "${DECODE_PROFILE_CASE:-decode_m1}" \
        > "$out/ncu_decode_$tag.log" 2>&1
      echo "exit $? ($tag)"
      grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Registers Per|Grid Size|Block Size|Shared Memory Config|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|No Eligible|Stall|stall|Waves Per SM" \
        "$out/ncu_decode_$tag.log" | cut -c1-150 | head -50
    done
  fi
fi
if want all_tests; then
  stamp "every GPU test"
  gpu_tests tests_all.log "${ALL_TESTS_TIMEOUT:-330}" "${ALL_TESTS:-*}"
fi
stamp done
