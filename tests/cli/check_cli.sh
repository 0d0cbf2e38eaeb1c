#!/usr/bin/env bash
# The command-line tool's contract, without a GPU: the documented exit codes, --json output that
# parses, .npy inputs read by name, a plan bundle inspected, the mega executor's options (with
# the clear "needs a GPU" error where there is none), and import's error when it finds no Python
# module. Fails naming every broken case.
#   check_cli.sh SINTER SOURCE_DIR
set -uo pipefail
sinter="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
# expect CODE -- COMMAND...: runs COMMAND, checks its exit code
expect() {
  local want="$1"; shift; shift
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: exit $got, expected $want: $*"; sed 's/^/   | /' "$work/out" "$work/err" | head -20
    failures=$((failures + 1))
  else
    echo "ok: exit $got: $*"
  fi
}
err_has() {  # the last command's stderr holds TEXT
  if grep -qF -- "$1" "$work/err"; then echo "ok: stderr says '$1'"; else
    echo "FAIL: stderr lacks '$1':"; sed 's/^/   | /' "$work/err" | head -5; failures=$((failures + 1)); fi
}
out_has() {  # the last command's stdout holds TEXT
  if grep -qF -- "$1" "$work/out"; then echo "ok: stdout says '$1'"; else
    echo "FAIL: stdout lacks '$1':"; sed 's/^/   | /' "$work/out" | head -5; failures=$((failures + 1)); fi
}
err_one_line() {  # the last command's stderr is one line
  if [ "$(wc -l <"$work/err")" = 1 ]; then echo "ok: stderr is one line"; else
    echo "FAIL: stderr is not one line:"; sed 's/^/   | /' "$work/err" | head -5; failures=$((failures + 1)); fi
}
json_ok() {  # the last command's stdout is one JSON document
  if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/out"; then echo "ok: JSON: $*"; else
    echo "FAIL: not JSON: $*"; failures=$((failures + 1)); fi
}
g="$src/examples/mlp_layer.json"
expect 0 -- "$sinter" check "$g"
expect 0 -- "$sinter" check "$g" --json; json_ok check --json
expect 0 -- "$sinter" explain "$src/examples/transformer_block.json" --json; json_ok explain --json
# the decode layer's rmsnorms fold into its matmuls, unless --unfolded-norms keeps them apart
expect 0 -- "$sinter" explain "$src/examples/llama_decode_layer.json"; out_has "26 nodes in 20 regions"; out_has "prologue:   rmsnorm0:rmsnorm"
expect 0 -- "$sinter" explain "$src/examples/llama_decode_layer.json" --unfolded-norms; out_has "26 nodes in 22 regions"
expect 0 -- "$sinter" engines "$g" --json; json_ok engines --json
expect 0 -- "$sinter" inspect "$src/tests/fuzz/plan_corpus/seed_bundle_chain3.plan"
expect 0 -- "$sinter" inspect "$src/tests/fuzz/plan_corpus/seed_bundle_chain3.plan" --json; json_ok inspect --json
expect 0 -- "$sinter" --help
expect 0 -- "$sinter" --version
# usage errors: 2
expect 2 -- "$sinter" frobnicate "$g"
expect 2 -- "$sinter" run
expect 2 -- "$sinter" run "$g" --iters 0
expect 2 -- "$sinter" run "$g" --executor sideways
expect 2 -- "$sinter" --device -1 check "$g"
# invalid input: 1
expect 1 -- "$sinter" check "$work/no_such_file.json"
expect 1 -- "$sinter" check "$src/tests/errors/bad_broadcast.json"
expect 1 -- "$sinter" inspect "$g"
expect 1 -- "$sinter" build "$src/tests/fuzz/plan_corpus/seed_bundle_chain3.plan" -o "$work/x.plan"
# the help names the exit codes
"$sinter" --help | grep -q "Exit codes: 0 ok; 1 invalid input" && echo "ok: help names the exit codes" ||
  { echo "FAIL: --help does not name the exit codes"; failures=$((failures + 1)); }
# --load-inputs: .npy files by tensor name, read and run on the CPU reference
cat >"$work/scale.json" <<'JSON'
{"format": "sinter.graph", "version": 1, "name": "scale",
 "inputs": [{"name": "x", "dtype": "f32", "dims": [2, 3]}],
 "nodes": [{"name": "twice", "op": "add", "inputs": ["x", "x"], "outputs": [{"name": "y"}]}],
 "outputs": ["y"]}
JSON
mkdir -p "$work/in"
python3 - "$work/in/x.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<6f", 1, 2, 3, 4, 5, -6))
PY
expect 0 -- "$sinter" run "$work/scale.json" --on cpu --load-inputs "$work/in" --save-outputs "$work/out_npy"
python3 - "$work/out_npy/y.npy" <<'PY' && echo "ok: --load-inputs read x.npy" || { echo "FAIL: y != 2x"; failures=$((failures + 1)); }
import struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<H", data[8:10])[0]
values = struct.unpack("<6f", data[10 + n:10 + n + 24])
sys.exit(0 if list(values) == [2, 4, 6, 8, 10, -12] else 1)
PY
expect 1 -- "$sinter" run "$work/scale.json" --on cpu --load-inputs "$work/no_such_folder"
# the mega executor's options parse; their misuse is a usage error (2) or a bad option value (1)
bundle="$src/tests/fuzz/plan_corpus/seed_bundle_chain3.plan"
expect 2 -- "$sinter" run "$g" --executor megax
expect 2 -- "$sinter" bench "$g" --executor megax
expect 2 -- "$sinter" run "$g" --executor mega --watchdog-ms 0
expect 2 -- "$sinter" explain "$g" --dot "$work/x.dot"
expect 2 -- "$sinter" inspect "$bundle" --dot "$work/x.dot"
expect 2 -- "$sinter" explain "$g" --mega --kernels "$work/kernels"
expect 1 -- "$sinter" run "$work/scale.json" --on cpu --watchdog-ms 10; err_has "--watchdog-ms applies to the mega executor"
expect 1 -- "$sinter" bench "$work/scale.json" --trace "$work/trace.json"; err_has "--trace applies to the mega executor"
expect 2 -- "$sinter" run "$g" --executor graph --graph-streams 0
expect 1 -- "$sinter" run "$work/scale.json" --on cpu --graph-streams 2; err_has "--graph-streams applies to the graph executor"
"$sinter" run --help | grep -q "stream,graph,mega" && "$sinter" bench --help | grep -q -- "--trace" &&
  "$sinter" --help | grep -q "4 internal error (a bug: please report it) or a megakernel watchdog timeout" &&
  echo "ok: help names the mega executor, --trace and the watchdog's exit code" ||
  { echo "FAIL: help lacks the mega executor, --trace or the watchdog's exit code"; failures=$((failures + 1)); }
# import runs `PYTHON -m sinter import`: an interpreter that does not start, or that lacks the
# module (a Python without site-packages or PYTHONPATH), is one line naming it and the install (1)
expect 2 -- "$sinter" import "$work/model.onnx"
expect 1 -- "$sinter" import "$work/model.onnx" -o "$work/model.json" --python /nonexistent
err_has "cannot start the Python interpreter '/nonexistent'"; err_has "pip install ."; err_one_line
printf '#!/bin/sh\nexec python3 -I -S "$@"\n' >"$work/bare-python"
chmod +x "$work/bare-python"
expect 1 -- "$sinter" import "$work/model.onnx" -o "$work/model.json" --python "$work/bare-python"
err_has "'$work/bare-python' cannot import the sinter module (ModuleNotFoundError"; err_has "pip install ."; err_one_line
# one rank's program of world 2: the ranks' CPU reference, each rank's inputs seeded seed + rank;
# on a GPU only as virtual ranks inside megakernels
cat >"$work/rank.json" <<'JSON'
{"format": "sinter.graph", "version": 1, "name": "rank",
 "inputs": [{"name": "x", "dtype": "f32", "dims": [4, 8]}],
 "nodes": [{"name": "sum", "op": "all_reduce", "inputs": ["x"], "outputs": [{"name": "y"}],
            "attrs": {"group": "tp", "world": 2}}],
 "outputs": ["y"]}
JSON
expect 0 -- "$sinter" run "$work/rank.json" --on cpu --save-outputs "$work/rank_out"
if grep -q "world 2" "$work/out" && grep -q "^   rank 1" "$work/out" && [ -f "$work/rank_out/rank1/y.npy" ] &&
   cmp -s "$work/rank_out/rank0/y.npy" "$work/rank_out/rank1/y.npy"; then
  echo "ok: both ranks reported, their all_reduce outputs equal"
else
  echo "FAIL: run of a rank program:"; sed 's/^/   | /' "$work/out" | head -12; failures=$((failures + 1))
fi
expect 1 -- "$sinter" run "$work/rank.json" --on cpu --load-inputs "$work/in"; err_has "its ranks take seeded random inputs"
cat >"$work/two_groups.json" <<'JSON'
{"format": "sinter.graph", "version": 1, "name": "two_groups",
 "inputs": [{"name": "x", "dtype": "f32", "dims": [4, 8]}],
 "nodes": [{"name": "tp_sum", "op": "all_reduce", "inputs": ["x"], "outputs": [{"name": "h"}],
            "attrs": {"group": "tp", "world": 2}},
           {"name": "dp_sum", "op": "all_reduce", "inputs": ["h"], "outputs": [{"name": "y"}],
            "attrs": {"group": "dp", "world": 4}}],
 "outputs": ["y"]}
JSON
expect 1 -- "$sinter" run "$work/two_groups.json" --on cpu; err_has "collectives of several groups, 'dp' (world 4), 'tp' (world 2)"
# without a GPU, every mega command says it needs one (exit 1), never crashes
if "$sinter" run "$work/scale.json" --on auto 2>/dev/null | grep -q "^device: cpu"; then
  expect 1 -- "$sinter" run "$work/scale.json" --executor mega --on gpu; err_has "needs a GPU"
  expect 1 -- "$sinter" run "$bundle" --executor mega --watchdog-ms 100; err_has "needs a GPU"
  expect 1 -- "$sinter" bench "$work/scale.json" --executor mega --watchdog-ms 100 --trace "$work/trace.json"
  err_has "bench needs a GPU"
  expect 1 -- "$sinter" explain --mega "$work/scale.json"; err_has "explain --mega needs a GPU"
  expect 1 -- "$sinter" explain --mega "$bundle" --json --dot "$work/x.dot"; err_has "explain --mega needs a GPU"
  expect 1 -- "$sinter" inspect "$bundle" --mega; err_has "inspect --mega needs a GPU"
  expect 1 -- "$sinter" run "$work/rank.json" --on gpu --executor mega; err_has "needs a GPU"
else
  echo "skip: the no-GPU mega checks (this machine has a GPU)"
fi
echo "$failures failure(s)"
[ "$failures" = 0 ]
