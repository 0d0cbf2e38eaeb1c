#!/usr/bin/env python3
"""Summarizes SINTER_TRACE_FILE (kernels/common/trace.cuh's per-CTA stamps, one launch).

Each line: "<kernel description> | <block> <sm> <ns_0> <cycles_0> ... <ns_4> <cycles_4>", the
stamps being a CTA's entry, the end of its PDL wait, consumer 0's start, consumer 0's end and the
CTA's exit (kernels/common/trace.cuh; the Hopper GEMM is built with them whenever SINTER_TRACE_FILE is set). Prints, per kernel, where the
launch's time goes across CTAs: how late each CTA enters after the first, how long each phase
takes (min / median / max over CTAs, from the SM clock where a phase stays on one SM), and how
long the last CTA runs after the first ones have left.

  SINTER_TRACE_FILE=trace.txt build/sinter_bench_gemm --quick --cases gemm_4096
  bench/trace_summary.py trace.txt
"""
import statistics
import sys

PHASES = ["PDL wait", "prologue (to consumer 0's start)", "tiles (consumer 0)", "end (to exit)"]


def spread(values):
    v = sorted(values)
    return f"min {v[0]:>9.0f}  median {statistics.median(v):>9.0f}  max {v[-1]:>9.0f}"


def main(path):
    kernels = {}
    for line in open(path):
        if " | " not in line:
            continue
        desc, rest = line.rsplit(" | ", 1)
        words = [int(x) for x in rest.split()]
        block, sm, stamps = words[0], words[1], words[2:]
        ns = stamps[0::2]
        cycles = stamps[1::2]
        kernels.setdefault(desc.strip(), []).append((block, sm, ns, cycles))
    for desc, ctas in kernels.items():
        print(desc)
        t0 = min(c[2][0] for c in ctas)
        print(f"  {len(ctas)} CTAs on {len({c[1] for c in ctas})} SMs; launch span "
              f"{max(c[2][-1] for c in ctas) - t0} ns (first entry to last exit)")
        print(f"  entry after the first CTA's, ns:     {spread([c[2][0] - t0 for c in ctas])}")
        for i, name in enumerate(PHASES):
            print(f"  {name + ', cycles:':36s} {spread([c[3][i + 1] - c[3][i] for c in ctas])}")
        t_exit = min(c[2][-1] for c in ctas)  # the first CTA's exit
        t_end0 = min(c[2][3] for c in ctas)   # the first consumer 0's end
        print(f"  exit after the first CTA's exit, ns: {spread([c[2][-1] - t_exit for c in ctas])}")
        print(f"  consumer 0's end after the first one's, ns: {spread([c[2][3] - t_end0 for c in ctas])}")
        # the CTAs that end the launch: late because they entered late, or because they ran slow?
        print("  last 6 CTAs to exit (block, SM: entry after the first, ns; tiles, cycles; exit after the first, ns):")
        for c in sorted(ctas, key=lambda c: c[2][-1])[-6:]:
            print(f"    block {c[0]:4d} SM {c[1]:3d}: entry +{c[2][0] - t0:6d}  tiles {c[3][3] - c[3][2]:8d}"
                  f"  exit +{c[2][-1] - t_exit:6d}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
