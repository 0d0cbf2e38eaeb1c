#!/usr/bin/env bash
# Installs the built Sinter into a temporary prefix and builds examples/cpp_runtime against it with
# find_package(Sinter), as a program outside the tree would; runs it where there is a GPU.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/sinter/sinter.hpp"
test -f "$work/prefix/lib/cmake/Sinter/SinterConfig.cmake" || test -f "$work/prefix/lib64/cmake/Sinter/SinterConfig.cmake"
# Nothing from src/ may be installed or needed: the example sees only the installed headers.
if grep -rl '"\(cuda\|engines\|plan\|exec\|fuse\|ir\|tune\|compile\)/' "$work/prefix/include/sinter"; then
  echo "an installed header includes an internal one" >&2
  exit 1
fi
cmake -S "$src/examples/cpp_runtime" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/example" >/dev/null
echo "built the out-of-tree example against the installed Sinter"
cd "$work"
"$work/example/sinter_cpp_runtime" "$src/examples/transformer_block.json" "$work/transformer_block.plan"
