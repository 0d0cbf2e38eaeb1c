#!/usr/bin/env bash
# The benchmark suite in one command (issue 6, item 7). On the GPU machine, from the repo root,
# with prebuilt binaries in BIN_DIR (default .device/: sinter, sinter_bench_plan):
#   bench/suite.sh [BIN_DIR] [--quick]
# In one run, so every number comes from the same machine state:
#   - each example graph (transformer_block, conv_block, mlp_layer, llama_decode_layer) through
#     Sinter's stream and graph executors (`sinter bench --json`, plan built now, heuristic tuning);
#   - the same models in PyTorch: eager, torch.compile, CUDA graph replay (bench/torch_blocks.py);
#   - sinter_bench_plan (200-op chain us/op, 16-layer decode stack) and its PyTorch twin
#     (bench/torch_decode_stack.py);
# then bench/suite_report.py writes docs/benchmarks.md's suite section, docs/benchmarks-suite.svg,
# and the same report into $OUT/suite/ (docs/ on the GPU machine is a copy; $OUT comes back).
# Raw results and logs: $OUT/suite/, one file per step; steps.tsv says how each step ended, so the
# report can say why a number is missing instead of leaving a blank.
# Every step has its own timeout, and all of them share SUITE_BUDGET_S (default 330 s with
# --quick, 540 s without): a slow step shortens the later ones rather than pushing the report past
# the device call's limit (600 s).
# Set SINTER_COMMIT to the commit the binaries were built from when the copy has no .git.
# Exit status: non-zero when a step failed or timed out (the report is written either way).
set -uo pipefail
bin=.device
quick=""
for a in "$@"; do
  case "$a" in
    --quick) quick=--quick ;;
    *) bin="$a" ;;
  esac
done
out="${OUT:-/tmp/sinter_out}/suite"
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.jsonl "$out"/*.log "$out"/*.err "$out"/steps.tsv "$out"/meta.txt "$out"/raw.tgz
export SINTER_CACHE_DIR="${TMPDIR:-/tmp}/sinter-kernel-cache"  # outside $out: only results come back
reserve=20  # seconds kept back for the report
if [[ -n "$quick" ]]; then iters=50; t_bench=45; t_plan=180; t_torch=150; t_decode=60; budget="${SUITE_BUDGET_S:-330}"
else iters=200; t_bench=90; t_plan=300; t_torch=300; t_decode=120; budget="${SUITE_BUDGET_S:-540}"; fi

{
  echo "started=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "quick=${quick:+1}"
  echo "iters=$iters"
  echo "bin=$bin"
  echo "commit=${SINTER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || true)}"
  echo "nvidia_smi=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
} > "$out/meta.txt"

status=0
# step NAME FILE LIMIT_S CMD...: CMD's stdout into FILE, its stderr into NAME.err, under
# the smaller of LIMIT_S and what is left of the budget; appends "NAME rc seconds limit" to
# steps.tsv (rc "skipped" when no budget was left).
step() {
  local name="$1" file="$2" limit="$3"
  shift 3
  local left=$((budget - reserve - SECONDS))
  if ((left < 5)); then
    printf '%s\tskipped\t0\t0\n' "$name" >> "$out/steps.tsv"
    echo "== $name: skipped (suite budget of $budget s spent)"
    status=1
    return
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$out/$file" 2> "$out/$name.err"
  local rc=$?
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" $((SECONDS - t0)) "$limit" >> "$out/steps.tsv"
  echo "== $name: exit $rc after $((SECONDS - t0)) s (limit $limit s)"
  ((rc == 0)) || status=1
}

cases=(transformer_block conv_block mlp_layer llama_decode_layer)
for c in "${cases[@]}"; do
  for e in stream graph; do
    step "sinter_${c}_${e}" "sinter_${c}_${e}.json" "$t_bench" \
      "$bin/sinter" bench "examples/$c.json" --executor "$e" --iters "$iters" --json
  done
done
step torch_decode_stack torch_decode_stack.jsonl "$t_decode" python3 bench/torch_decode_stack.py $quick
# the plan benchmark before the torch.compile runs: its chain, load and decode-stack figures are
# the plan issue's acceptance numbers; its stdout is line-buffered, so a timeout keeps the lines
# already printed (part 1, the chain, comes first)
step bench_plan bench_plan.log "$t_plan" "$bin/sinter_bench_plan" --runs 7
# last: all four models in one process (inductor starts once); it prints every eager and
# CUDA-graph number before it compiles anything, so a short budget costs only torch.compile numbers
step torch_blocks torch_blocks.jsonl "$t_torch" python3 bench/torch_blocks.py $quick

python3 bench/suite_report.py "$out" || status=1
# The device tool brings back only a handful of files from $OUT: keep the report, the plot, the
# plan log and steps.tsv loose, and pack every raw result and log into one archive
# (suite_report.py can be rerun on the unpacked folder).
tar czf "$out.raw.tgz" -C "$out" --exclude=raw.tgz --exclude=report.md --exclude=benchmarks-suite.svg \
    --exclude=bench_plan.log --exclude=steps.tsv . && mv "$out.raw.tgz" "$out/raw.tgz" &&
  find "$out" -maxdepth 1 -type f ! -name raw.tgz ! -name report.md ! -name benchmarks-suite.svg \
    ! -name bench_plan.log ! -name steps.tsv -delete
exit $status
