#!/usr/bin/env bash
# The command-line tool's contract, without a GPU: the documented exit codes, --json output that
# parses, .npy inputs read by name, and a plan bundle inspected. Fails naming the first broken case.
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
json_ok() {  # the last command's stdout is one JSON document
  if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$work/out"; then echo "ok: JSON: $*"; else
    echo "FAIL: not JSON: $*"; failures=$((failures + 1)); fi
}
g="$src/examples/mlp_layer.json"
expect 0 -- "$sinter" check "$g"
expect 0 -- "$sinter" check "$g" --json; json_ok check --json
expect 0 -- "$sinter" explain "$src/examples/transformer_block.json" --json; json_ok explain --json
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
echo "$failures failure(s)"
[ "$failures" = 0 ]
