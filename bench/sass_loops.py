#!/usr/bin/env python3
"""The wgmma main loops of dumped Hopper kernels, counted from their SASS, with no GPU.

A main loop is a backward branch whose body holds HGMMA; its cost is the instructions a k-block
(four HGMMA k steps) issues per warp, which is what the consumers spend issue slots and power on
besides the tensor cores' work (session 25: ~85 -> ~47 a k-block took 4096^3 from 1.012-1.016 to
1.001-1.006x cuBLASLt). Also the kernel's total instruction count and its LDL/STL (spills).

  SINTER_DUMP_CUBIN_DIR=dir build/tests/jit/sinter_jit_tests --gtest_filter='JitMatmulSm90.*'
  bench/sass_loops.py dir [other_dir]

With two folders, kernels of the same file name are compared side by side (before, after).
Needs cuobjdump and nvdisasm on PATH (CUDA's bin/; bench/device.py's `sass` step runs this on its dump).
"""
import os
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
BRANCH = re.compile(r"\bBRA\s+(?:`\(\.L_x_\d+\)|0x([0-9a-f]+))")


def listing(cubin):
    """[(address, text)] of every instruction in the cubin (one kernel a cubin)."""
    sass = subprocess.run(["cuobjdump", "-sass", cubin], capture_output=True, text=True, check=True).stdout
    out = []
    for line in sass.splitlines():
        m = INSTRUCTION.match(line)
        if m:
            out.append((int(m.group(1), 16), m.group(2)))
    return out


def main_loops(code):
    """(instructions, HGMMA) of every backward branch's body that holds HGMMA, innermost first."""
    loops = []
    for i, (addr, text) in enumerate(code):
        m = BRANCH.search(text)
        if not m or not m.group(1):
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [t for a, t in code[: i + 1] if a >= target]
        hgmma = sum(1 for t in body if " HGMMA." in " " + t or t.startswith("HGMMA."))
        if hgmma:
            loops.append((len(body), hgmma))
    return sorted(set(loops))


def summary(cubin):
    code = listing(cubin)
    spills = sum(1 for _, t in code if re.search(r"\b(LDL|STL)\b", t))
    loops = main_loops(code)
    return len(code), spills, loops


def describe(loops):
    # instructions a k-block (4 HGMMA) of each loop: the innermost (fewest instructions) first
    return " ".join(f"{n * 4 / h:.1f}({n}/{h})" for n, h in loops[:2]) or "-"


def main(argv):
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    dirs = argv[1:]
    names = sorted(f for f in os.listdir(dirs[0]) if f.endswith(".cubin"))
    for name in names:
        paths = [os.path.join(d, name) for d in dirs]
        if not all(os.path.exists(p) for p in paths):
            continue
        rows = [summary(p) for p in paths]
        if not any(r[2] for r in rows):
            continue  # no wgmma loop: not a Hopper GEMM
        cells = [f"{total} instr, {spills} spills, loop/k-block {describe(loops)}" for total, spills, loops in rows]
        print(f"{name}: " + "  ->  ".join(cells))


if __name__ == "__main__":
    main(sys.argv)
