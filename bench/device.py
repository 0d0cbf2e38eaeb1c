#!/usr/bin/env python3
"""The one driver for the GPU machine: Sinter's GPU tests, benchmarks beside their PyTorch
baselines, Nsight Compute profiles, SASS reports and the experiments' probes, step by step, each
command under its own time limit, so that a hang costs one step and not the device call.

    bench/device.py BIN_DIR STEP[,STEP...] [STEP=ARG ...] [options]
    bench/device.py --list                  every step, its argument, what it runs, its limits

BIN_DIR holds the prebuilt binaries (a carried folder such as .device/, or a CMake build folder):
sinter, sinter_gpu_tests, sinter_bench_{memory,gemm,vendor,plan}, optionally sinter_jit_tests and
the probes. A step whose binary is missing says so and is skipped. Steps are named one by one,
comma-separated, or with an argument as STEP=ARG (one word; its own commas stay in it), e.g.

    bench/device.py .device tests=gemm gemm,decode report --commit 1d583cc
    bench/device.py .device memory=softmax,add_layernorm --dry-run

Output, in $OUT (--out; the device tool brings back at most 8 files): summary.txt (what was
printed), results.jsonl (the run's meta line -- date, GPU, commit -- then every JSON line the
programs printed, each tagged with its step and program, and one line per command: exit status,
seconds, limit), raw.tgz (every log and raw output, repacked after each step, so a call cut
short still brings back the steps that finished), and, with the `report` step, a preview of
docs/benchmarks.{md,json,svg} with this run merged (bench/report.py; on the development machine
`bench/report.py merge OUT/results.jsonl --write` updates docs/).

Exit status: 0 every command exited 0; 1 a command failed or timed out; 3 a step was skipped
(a binary or tool missing, no GPU, the budget spent); 130 stopped by a signal.

Standard library only. The commit: --commit, else $SINTER_COMMIT, else BIN_DIR/COMMIT (write
it when you build the binaries), else `git rev-parse --short HEAD`, else "unknown".
"""
import argparse
import glob
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from datetime import datetime, timezone

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
import report  # noqa: E402  (bench/report.py)

# gtest filters by name, for `tests=NAME` (anything else is taken as a filter)
PRESETS = {
    "all": "*",
    "vendor": "GpuCudnn.*:GpuCublasLt.*",
    "gemm": "GpuHopperGemm.*:GpuRegions.Matmul*",
    "decode": "GpuDecodeGemm.*:GpuDecodeAttention.*:GpuRegions.SdpaVariants",
    "rows": "GpuRegions.Rowwise*:GpuRegions.Pointwise*:GpuRegions.ExampleGraphs*:GpuRegions.SdpaVariants:"
            "GpuDecodeAttention.*:GpuDecodeGemm.*:-GpuDecodeGemm.RealDecodeShape",
    "layout": "GpuRegions.PermuteSliceConcatReshape:GpuRegions.Layout*:GpuRegions.ExampleGraphs*:GpuPlan.*",
    "plan": "GpuPlan.*:GpuLaunchTest.*:GpuRegions.TuningIsCachedAndCorrect",
    "pointwise": "GpuRegions.Pointwise*:GpuRegions.Fp8*:GpuRegions.Residual*:GpuRegions.RmsNorm*:GpuRegions.Rope*:"
                 "GpuRegions.Permute*:GpuRegions.ExampleGraphs:GpuCublasLt.*",
    "mega": "GpuMegakernel*",
    "quick": "GpuCublasLt.*:GpuRegions.PermuteSliceConcatReshape:GpuRegions.Layout*:GpuRegions.ExampleGraphs:"
             "GpuPlan.*:GpuDecodeAttention.*:GpuDecodeGemm.OddShapes*",
}
EXAMPLES = ("mlp_layer", "conv_block", "transformer_block", "llama_decode_layer")
PROBES = {  # bench/experiments/NAME.cu: what it measures; the Nsight Compute metrics its header names
    "stream_probe": ("copy and read-only stream structures against cudaMemcpy", None),
    "mega_chain_probe": ("the megakernel dispatcher on the 200-op chain: empty, minimal and generated tasks", None),
    "dispatch_ablation_probe": ("the dispatcher's per-task time with its pieces taken away: cp.async fetch, "
                                "preloaded queue, one barrier, no dispatcher", None),
    "chain_probe": ("one dependent tiny op in a persistent CTA: memory, dispatcher, acquire, publish, cross-SM", None),
    "decode_read_probe": ("TMA box shapes, ring depths, PDL on the 117 MB decode weight, no math", None),
    "convert_probe": ("f32 -> packed bf16 conversion throughput per SM, three routes", None),
    "l2_merge_probe": ("L2 read merging of TMA boxes read in step by several CTAs",
                       ("regex:read_boxes", "lts__t_sectors_srcunit_tex_aperture_device_op_read.sum,"
                        "l1tex__m_xbar2l1tex_read_sectors.sum,gpu__time_duration.sum")),
    "l2_coalesce_window_probe": ("the L2 request coalescer's time window and GPC reach",
                                 ("regex:read_group_boxes", "lts__t_sectors_srcunit_tex_aperture_device_op_read.sum,"
                                  "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,"
                                  "l1tex__m_xbar2l1tex_read_sectors.sum")),
    "gpc_map_probe": ("the SMs grouped into GPCs, where the clusters of a GEMM-shaped launch land", None),
}
GEMM_CASES = "gemm_4096,gemm_8192,gemm_bias_gelu_amax_4096,gemm_bias_gelu_amax_8192,gemm_fp8_e4m3_4096"
DECODE_CASES = "decode_m1,decode_m8,decode_m16"
NCU_SECTIONS = {
    "memory": ("SpeedOfLight", "WarpStateStats", "SchedulerStats", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats"),
    "gemm": ("SpeedOfLight", "ComputeWorkloadAnalysis", "WarpStateStats", "SchedulerStats", "MemoryWorkloadAnalysis",
             "LaunchStats", "Occupancy"),
    "decode": ("SpeedOfLight", "MemoryWorkloadAnalysis", "WarpStateStats", "LaunchStats", "Occupancy", "SchedulerStats"),
}
NCU_KEEP = {
    "memory": r"sinter_region|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Issue Slots Busy|Issued Ipc|"
              r"No Eligible|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Grid Size|Block Size|Stall|stall|"
              r"Hit Rate|Barrier|barrier",
    "gemm": r"^  [a-zA-Z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|Memory Throughput|L2 Cache Throughput|"
            r"L1/TEX Cache Throughput|Compute \(SM\)|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|"
            r"Registers Per|Grid Size|Block Size|Cluster|Shared Memory|Stall|stall|Tensor|tensor|Pipe|pipe",
    "decode": r"^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Registers Per|Grid Size|Block Size|"
              r"Shared Memory Config|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|No Eligible|"
              r"Stall|stall|Waves Per SM",
}
RESERVE_S = 15  # kept back from the budget for packing and the report


class Skip(Exception):
    """A step (or one command of it) that cannot run here, and why."""


class Stop(Exception):
    """The driver was told to stop (SIGTERM, SIGINT)."""


# --- steps --------------------------------------------------------------------------------------

STEPS = {}


def step(name, title, arg=None, gpu=True, limits="", needs=()):
    """Registers fn(run, arg) as step `name`. title: one line for the run's log; arg: what
    STEP=ARG means (None: takes none); limits: the default time limits, for --list; needs: the
    binaries and tools it runs."""
    def register(fn):
        STEPS[name] = dict(fn=fn, title=title, arg=arg, gpu=gpu, limits=limits, needs=needs,
                           doc=(fn.__doc__ or "").strip())
        return fn
    return register


ALIASES = {
    "kernels": "gemm,decode,vendor,memory,report",
    "models": "blocks,plan,report",
    "suite": "blocks,plan,report",
}


@step("tests", "GPU tests", arg="PRESET or gtest filter (default: all)", limits="330 s", needs=("sinter_gpu_tests",))
def step_tests(run, arg):
    """The GPU test suite (sinter_gpu_tests) in --shards gtest shards run side by side (most of a
    fresh machine's test time is NVRTC compiling kernels, one core each; the shards share the
    kernel cache). ARG: a preset (all, vendor, gemm, decode, rows, layout, plan, pointwise,
    quick; --list shows their filters) or a gtest filter. Prints passed / failed / unfinished
    (cut by the limit) tests, each failure's first lines, and the worst `rel L2 / bound` of the
    log."""
    exe = run.need("sinter_gpu_tests")[0]
    flt = PRESETS.get(arg or "all", arg)
    tag = re.sub(r"[^A-Za-z0-9]+", "_", arg or "all").strip("_")[:40] or "all"
    shards = max(1, run.opts.shards)
    cmds = []
    for i in range(shards):
        env = {"GTEST_TOTAL_SHARDS": str(shards), "GTEST_SHARD_INDEX": str(i)}
        cmds.append((f"shard {i}", [exe, f"--gtest_filter={flt}"], f"tests_{tag}.shard{i}", env))
    rcs = run.parallel(cmds, run.limit(330))
    log = run.raw_path(f"tests_{tag}.log")
    if not run.dry:
        with open(log, "w") as out:
            for i in range(shards):
                p = run.raw_path(f"tests_{tag}.shard{i}")
                if os.path.exists(p):
                    with open(p, errors="replace") as f:
                        out.write(f.read())
                    os.remove(p)
        r = parse_gtest(open(log, errors="replace").read())
        r.update(filter=flt, exit=max(rcs, key=lambda c: (c != 0, abs(c))), shards=shards)
        run.record(dict(r, _source="gtest"))
        run.say(f"   exit {r['exit']} (worst of {shards} shards); {r['passed']} passed, {len(r['failed'])} failed, "
                f"{r['skipped']} skipped, {len(r['unfinished'])} unfinished")
        for name in r["failed"]:
            run.say(f"   FAILED {name}")
        for name in r["unfinished"]:
            run.say(f"   unfinished (cut by the limit?) {name}")
        if r.get("worst_rel_l2_over_bound") is not None:
            run.say(f"   worst rel L2 / bound: {r['worst_rel_l2_over_bound']:.3g}")
        run.say_lines(grep_after(log, r"Failure|Error:|error:", 3, 60), "   ")
        if grep(log, r"cudnn offers no candidate", 1):
            run.say("   cuDNN refused a graph: the cudnn_log step shows cuDNN's own reasons")


def parse_gtest(text):
    started, ok, failed, skipped = [], set(), [], 0
    for line in text.splitlines():
        m = re.match(r"^\[ +(RUN|OK|FAILED|SKIPPED) +\] (\S+)", line)
        if not m:
            continue
        what, name = m.groups()
        if "." not in name:  # the summary lines ("[  FAILED  ] 2 tests, listed below")
            continue
        if what == "RUN":
            started.append(name)
        elif what == "OK":
            ok.add(name)
        elif what == "FAILED" and name not in failed:
            failed.append(name)
        elif what == "SKIPPED":
            skipped += 1
            ok.add(name)
    unfinished = [n for n in started if n not in ok and n not in failed]
    worst = None
    for m in re.finditer(r"rel L2 ([0-9.eE+-]+) \(bound ([0-9.eE+-]+)\)", text):
        try:
            r = float(m.group(1)) / float(m.group(2))
        except (ValueError, ZeroDivisionError):
            continue
        worst = r if worst is None else max(worst, r)
    return dict(passed=len(ok) - skipped, failed=failed, skipped=skipped, unfinished=unfinished,
                worst_rel_l2_over_bound=worst)


@step("cudnn_log", "cuDNN's debug log while GPU tests run",
      arg="gtest filter (default GpuCudnn.SdpaHeuristicsOfferConfigsAtModelShapes)", limits="150 s",
      needs=("sinter_gpu_tests",))
def step_cudnn_log(run, arg):
    """cuDNN's own warnings and errors (CUDNN_LOGLEVEL_DBG=2) while the tests ARG run: why its
    heuristics refuse a graph. Prints the distinct E!/W! lines, most frequent first."""
    exe = run.need("sinter_gpu_tests")[0]
    logfile = run.raw_path("cudnn_log.txt")
    env = {"CUDNN_LOGLEVEL_DBG": "2", "CUDNN_LOGDEST_DBG": logfile}
    run.command("cuDNN log", [exe, "--gtest_filter=" + (arg or "GpuCudnn.SdpaHeuristicsOfferConfigsAtModelShapes")],
                "cudnn_tests.log", run.limit(150), env=env, json_lines=False)
    if not run.dry and os.path.exists(logfile):
        counts = {}
        for line in open(logfile, errors="replace"):
            if re.match(r"^[EW]! |.*CUDNN_STATUS|.*[Rr]eason", line):
                counts[line.strip()[:200]] = counts.get(line.strip()[:200], 0) + 1
        for text, n in sorted(counts.items(), key=lambda kv: -kv[1])[:40]:
            run.say(f"   {n:5d} {text}")


@step("sanitize", "compute-sanitizer memcheck, racecheck and synccheck on megakernel tests",
      arg="gtest filter (default: the small megakernel tests)", limits="150 s a tool",
      needs=("sinter_gpu_tests",))
def step_sanitize(run, arg):
    """compute-sanitizer's memcheck, racecheck and synccheck over GPU tests ARG (default: the
    megakernel tests small enough for the tools' slowdown: the examples on our kernels (a cuDNN
    step overflows synccheck's barrier tracking), the 200-op chain, the two-layer decode stack,
    the watchdog faults, the collectives at world 1 and on 2 virtual ranks). Prints each tool's
    error summary."""
    exe = run.need("sinter_gpu_tests")[0]
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not run.dry and not os.path.exists(tool):
        raise Skip("no compute-sanitizer on this machine")
    flt = arg or ("GpuMegakernel.ExamplesOnOurKernels:GpuMegakernel.ChainOf200Ops:"
                  "GpuMegakernel.DecodeStackTwoLayersIsOneMegakernel:GpuMegakernel.Watchdog*:"
                  "GpuMegaCollectives.WorldOneCollectivesRunAsTasks:GpuMegaCollectives.VirtualRanksRunEveryCollective")
    for check in ("memcheck", "racecheck", "synccheck"):
        log = run.command(f"compute-sanitizer {check}",
                          [tool, "--tool", check, "--error-exitcode", "99", exe, "--gtest_filter=" + flt],
                          f"sanitize_{check}.log", run.limit(150), json_lines=False)
        if not run.dry and os.path.exists(log):
            run.say_lines(grep(log, r"ERROR SUMMARY|RACECHECK SUMMARY|hazard|Invalid|PASSED|FAILED", 12), "   ")


@step("memory", "memory-bound regions, Sinter and PyTorch",
      arg="cases of sinter_bench_memory --cases (default: all)", limits="240 s + 240 s (PyTorch)",
      needs=("sinter_bench_memory",))
def step_memory(run, arg):
    """Memory-bound regions (add+layernorm, add+rmsnorm, softmax, a 10-op pointwise chain, copy;
    the heuristic default and every candidate tuned) with sinter_bench_memory, then PyTorch eager
    and torch.compile on the same cases (bench/torch_baselines.py) in the same call."""
    exe = run.need("sinter_bench_memory")[0]
    args = [exe] + run.quick_flag() + (["--cases", arg] if arg else [])
    run.command("sinter_bench_memory", args, "memory.jsonl", run.limit(240), source="sinter_bench_memory")
    run.torch("torch_baselines.py", run.quick_flag() + (["--no-compile"] if run.opts.no_compile else []),
              "torch_memory.jsonl", run.limit(240), source="torch_baselines")
    run.show(["norms", "copy"])


@step("gemm", "GEMMs: Sinter, cuBLASLt and PyTorch",
      arg=f"cases of sinter_bench_gemm --cases (default {GEMM_CASES}; 'all': every case)",
      limits="240 s + 240 s (PyTorch)", needs=("sinter_bench_gemm",))
def step_gemm(run, arg):
    """GEMMs against cuBLASLt in the same process (sinter_bench_gemm: 4096^3, 8192^3, the fused
    bias + GELU + amax, fp8; each also timed in 9 alternating rounds), then torch.matmul, eager,
    torch.compile (bench/torch_gemm_baselines.py; --autotune adds max-autotune) in the same call.
    --candidates adds a line per forced Hopper candidate."""
    exe = run.need("sinter_bench_gemm")[0]
    cases = None if arg == "all" else (arg or GEMM_CASES)
    args = [exe] + run.quick_flag() + ([] if run.opts.candidates else ["--no-candidates"])
    args += ["--cases", cases] if cases else []
    run.command("sinter_bench_gemm", args, "gemm.jsonl", run.limit(240), source="sinter_bench_gemm")
    targs = run.quick_flag() + ([] if run.opts.autotune else ["--no-autotune"]) + ([f"--only={cases}"] if cases else [])
    run.torch("torch_gemm_baselines.py", targs, "torch_gemm.jsonl", run.limit(240), source="torch_gemm_baselines")
    run.show(["gemm"] + (["decode"] if not cases else []))


@step("gemm_parts", "the fused GEMM epilogue part by part",
      arg="MxNxK (default 4096x4096x4096)", limits="250 s", needs=("sinter_bench_gemm",))
def step_gemm_parts(run, arg):
    """The fused epilogue part by part: sinter_bench_gemm --shapes S, S:bias, S:bias_amax,
    S:bias_gelu, S:fused, each against bare cuBLASLt, with every Hopper candidate forced."""
    exe = run.need("sinter_bench_gemm")[0]
    s = arg or "4096x4096x4096"
    if not re.fullmatch(r"\d+x\d+x\d+", s):
        raise Skip(f"gemm_parts takes MxNxK, not '{s}'")
    parts = ",".join([s] + [f"{s}:{p}" for p in ("bias", "bias_amax", "bias_gelu", "fused")])
    run.command("sinter_bench_gemm --shapes", [exe] + run.quick_flag() + ["--shapes", parts], "gemm_parts.jsonl",
                run.limit(250), source="sinter_bench_gemm", variant="parts")
    if not run.dry:
        for r in run.step_records:
            if "sinter_ms" in r:
                alt = r.get("alternated", {})
                run.say(f"   {r['case']:34s} {r.get('candidate', 'default')[:60]:60s} {r['sinter_ms']:.5f} ms, "
                        f"x{r.get('ratio', 0):.3f} cuBLASLt" + (f", alternated {alt['ratio']:.3f}" if alt else ""))


@step("decode", "decode GEMMs, L2 hot and cold, and F.linear",
      arg=f"cases (default {DECODE_CASES}; 'all': every decode and Llama-shape case)",
      limits="120 s hot + 120 s cold + 120 s (PyTorch)", needs=("sinter_bench_gemm",))
def step_decode(run, arg):
    """Decode GEMMs (x [M, 4096] times a 14336 x 4096 weight, M = 1, 8, 16; with 'all' also the
    [K, N] weight and the Llama stack's shapes) against cuBLASLt, each decode candidate forced
    too: sinter_bench_gemm --decode with L2 hot, then again with --cold-l2; F.linear from
    bench/torch_gemm_baselines.py in the same call."""
    exe = run.need("sinter_bench_gemm")[0]
    cases = None if arg == "all" else (arg or DECODE_CASES)
    base = [exe] + run.quick_flag() + ["--decode"] + (["--cases", cases] if cases else [])
    run.command("sinter_bench_gemm --decode", base, "decode.jsonl", run.limit(120), source="sinter_bench_gemm")
    run.command("sinter_bench_gemm --decode --cold-l2", base + ["--cold-l2"], "decode_cold.jsonl", run.limit(120),
                source="sinter_bench_gemm", variant="cold-l2")
    run.torch("torch_gemm_baselines.py", run.quick_flag() + ["--no-autotune", "--only=" + (cases or "decode_m")],
              "torch_decode.jsonl", run.limit(120), source="torch_gemm_baselines")
    run.show(["decode"])
    if not run.dry:
        for r in run.step_records:
            if r.get("_source") == "sinter_bench_gemm" and "of_peak" in r:
                run.say(f"   {r['case']:28s} {r.get('_variant') or 'hot':8s} {r['sinter_ms']:.5f} ms "
                        f"{r['sinter_weight_tbps']:.3f} TB/s, x{r['ratio']:.3f} cuBLASLt")


@step("vendor", "SDPA and conv: Sinter's engines and PyTorch's backends",
      arg="substrings of the cases to run (sinter_bench_vendor --only)", limits="200 s + 200 s (PyTorch)",
      needs=("sinter_bench_vendor",))
def step_vendor(run, arg):
    """SDPA (D128 / D64, causal or not, decode with GQA), conv3x3 + bias + relu, and a cuBLASLt
    GELU epilogue through Sinter's cuDNN / cuBLASLt engines and our own kernels
    (sinter_bench_vendor), then PyTorch's cuDNN and flash SDPA backends, its conv and eager
    epilogue (bench/torch_vendor_baselines.py) in the same call."""
    exe = run.need("sinter_bench_vendor")[0]
    only = [f"--only={arg}"] if arg else []
    run.command("sinter_bench_vendor", [exe] + run.quick_flag() + only, "vendor.jsonl", run.limit(200),
                source="sinter_bench_vendor")
    run.torch("torch_vendor_baselines.py", run.quick_flag() + only, "torch_vendor.jsonl", run.limit(200),
              source="torch_vendor_baselines")
    run.show(["sdpa", "conv"])


@step("plan", "plans and the 16-layer decode stack, Sinter and PyTorch",
      arg="'tuned' to also build the stack with --tune fast (minutes)", limits="300 s + 200 s (PyTorch)",
      needs=("sinter_bench_plan",))
def step_plan(run, arg):
    """Plans (sinter_bench_plan --runs 7): launch cost of a 200-op unfused chain, load to first
    result of the transformer block's bundle, rebinding by graph update, and the 16-layer Llama
    decode stack (checked against the CPU reference) with a per-step breakdown; then the same
    stack in PyTorch, eager, CUDA graph and torch.compile (bench/torch_decode_stack.py)."""
    exe = run.need("sinter_bench_plan")[0]
    args = [exe, "--runs", "7", "--trace-dir", run.raw] + (["--tuned"] if arg == "tuned" else [])
    log = run.command("sinter_bench_plan", args, "bench_plan.log", run.limit(300), json_lines=False)
    if not run.dry and os.path.exists(log):
        for r in parse_bench_plan(open(log, errors="replace").read()):
            run.record(dict(r, _source="sinter_bench_plan"))
        run.say_lines(grep(log, r"^[0-9]|stream executor|graph executor|megakernel|trace |phases|WRONG|FAILED|all checks", 24), "   ")
    run.torch("torch_decode_stack.py", run.quick_flag() + (["--no-compile"] if run.opts.no_compile else []),
              "torch_decode_stack.jsonl", run.limit(200), source="torch_decode_stack")
    run.show(["stack", "plan"])


def parse_bench_plan(text):
    """sinter_bench_plan's text as records (the JSON lines bench/report.py reads)."""
    out = []
    m = re.search(r"^device: (.*)$", text, re.M)
    if m:
        out.append({"case": "device", "device": m.group(1)})
    m = re.search(r"^1\. .*\n\s*stream executor\s+([0-9.]+) us/op.*\n\s*graph executor\s+([0-9.]+) us/op", text, re.M)
    if m:
        out.append({"case": "chain_200_ops", "engine": "sinter-stream", "us_per_op": float(m.group(1))})
        out.append({"case": "chain_200_ops", "engine": "sinter-graph", "us_per_op": float(m.group(2))})
    m = re.search(r"^1\. .*\n(?:.*\n){2}\s*megakernel\s+([0-9.]+) us/op", text, re.M)
    if m:
        out.append({"case": "chain_200_ops", "engine": "sinter-mega", "us_per_op": float(m.group(1))})
    m = re.search(r"^2\. transformer block, bundle \S+ \((\d+) bytes\): load to first result first ([0-9.]+) ms, "
                  r"median ([0-9.]+) ms", text, re.M)
    if m:
        out.append({"case": "load_transformer_block", "bundle_bytes": int(m.group(1)), "first_ms": float(m.group(2)),
                    "median_ms": float(m.group(3))})
    for m in re.finditer(r"^3\. rebind (\S+)\s+\((\d+) nodes\): exec update ([0-9.]+) us, capture \+ instantiate "
                         r"([0-9.]+) us", text, re.M):
        out.append({"case": "rebind", "graph": m.group(1), "nodes": int(m.group(2)), "update_us": float(m.group(3)),
                    "capture_us": float(m.group(4))})
    m = re.search(r"^4\. llama decode stack .*?outputs (\w+); one decode step: stream executor ([0-9.]+) ms, "
                  r"graph executor ([0-9.]+) ms", text, re.M)
    if m:
        for engine, ms in (("sinter-stream", m.group(2)), ("sinter-graph", m.group(3))):
            out.append({"case": "llama_decode_stack", "engine": engine, "ms": float(ms), "outputs": m.group(1)})
    m = re.search(r"^4g\. graph executor: independent steps on branches \((\d+) capture streams; the longest chain of "
                  r"dependent launches (\d+) of (\d+); outputs (\w+)\) ([0-9.]+) ms; the steps captured as one chain "
                  r"([0-9.]+) ms", text, re.M)
    if m:
        out.append({"case": "llama_decode_stack", "engine": "sinter-graph-one-chain", "ms": float(m.group(6)),
                    "outputs": m.group(4), "capture_streams": int(m.group(1)), "chain": int(m.group(2)),
                    "launches": int(m.group(3))})
    m = re.search(r"^4m\. the same plan in mega mode: ([0-9.]+) ms .*?outputs (\w+); (\d+) megakernel segment", text, re.M)
    if m:
        out.append({"case": "llama_decode_stack", "engine": "sinter-mega", "ms": float(m.group(1)), "outputs": m.group(2),
                    "segments": int(m.group(3))})
    # our kernels only: the stack as built, and with nn.Linear's [N, K] weights
    for head, suffix in ((r"compiled on our kernels only", "jit"), (r"the same, weights stored \[N, K\]", "jit-nk")):
        m = re.search(r"^4m\. " + head + r" .*?graph executor ([0-9.]+) ms, megakernel ([0-9.]+) ms .*?outputs (\w+)",
                      text, re.M)
        if m:
            for engine, ms in (("sinter-graph-" + suffix, m.group(1)), ("sinter-mega-" + suffix, m.group(2))):
                out.append({"case": "llama_decode_stack", "engine": engine, "ms": float(ms), "outputs": m.group(3)})
    m = re.search(r"^4n\. norms not folded into the GEMVs: default plan, \d+ steps, graph executor ([0-9.]+) ms; on our "
                  r"kernels for megakernels, megakernel ([0-9.]+) ms; outputs (\w+)", text, re.M)
    if m:
        for engine, ms in (("sinter-graph-unfolded", m.group(1)), ("sinter-mega-jit-unfolded", m.group(2))):
            out.append({"case": "llama_decode_stack", "engine": engine, "ms": float(ms), "outputs": m.group(3)})
    m = re.search(r"^4b\. the stack tuned .*?outputs (\w+); graph executor ([0-9.]+) ms", text, re.M)
    if m:
        out.append({"case": "llama_decode_stack", "engine": "sinter-graph-tuned", "ms": float(m.group(2)),
                    "outputs": m.group(1)})
    m = re.search(r"^4f\. read-once floor of the stack's ([0-9.]+) GB: ([0-9.]+) ms \(([0-9.]+) TB/s", text, re.M)
    if m:
        out.append({"case": "llama_decode_stack", "engine": "read-once-floor", "ms": float(m.group(2)),
                    "tbps": float(m.group(3))})
    for m in re.finditer(r"^5\. (\S+) decode step, (\d+) layers, batch (\d+), ([0-9.]+) GB: read-once floor ([0-9.]+) ms "
                         r"\(([0-9.]+) TB/s\); graph executor ([0-9.]+) ms .*?megakernel ([0-9.]+) ms", text, re.M):
        batch = int(m.group(3))
        case = model_case(m.group(1), batch)
        for engine, ms in (("read-once-floor", m.group(5)), ("sinter-graph", m.group(7)), ("sinter-mega", m.group(8))):
            out.append({"case": case, "engine": engine, "ms": float(ms), "layers": int(m.group(2)), "batch": batch,
                        "graph": m.group(1)})
    for m in re.finditer(r"^5\. (\S+) decode step, (\d+) layers, batch (\d+), [0-9.]+ GB: skipped: .*?need ([0-9.]+) GB"
                         r".*?([0-9.]+) GB of [0-9.]+ GB are free", text, re.M):
        batch = int(m.group(3))
        for engine in ("sinter-graph", "sinter-mega"):
            out.append({"case": model_case(m.group(1), batch), "engine": engine, "layers": int(m.group(2)),
                        "batch": batch, "graph": m.group(1),
                        "error": f"does not fit: needs {m.group(4)} GB + 1 GiB, {m.group(5)} GB free"})
    if "SOME CHECKS FAILED" in text or "all checks passed" in text:
        out.append({"case": "checks", "passed": "SOME CHECKS FAILED" not in text})
    return out


# sinter_bench_plan part 5 names a model by its graph; the report's rows by the model
MODEL_CASES = {"llama3_2_1b_decode_step": "llama_3_2_1b", "llama3_8b_decode_step": "llama_3_8b"}


def model_case(graph, batch):
    """The report's case of a whole-model decode step: llama_3_8b at batch 1, llama_3_8b_b16 at 16."""
    base = MODEL_CASES.get(graph, graph)
    return base if batch == 1 else f"{base}_b{batch}"


def parse_llama_arg(arg):
    """MODELS[:BATCHES] -> (models, batches), e.g. '8b:1,16' -> (['8b'], [1, 16]); default 1b,8b at 1."""
    models, _, batches = (arg or "1b,8b").partition(":")
    models = [m for m in models.split(",") if m]
    bad = [m for m in models if m not in ("1b", "8b")]
    if bad or not models:
        raise Skip(f"llama takes models 1b and 8b, not {','.join(bad) or 'none'} (form: MODELS[:BATCHES], e.g. 8b:1,16)")
    try:
        batch_list = [int(b) for b in batches.split(",")] if batches else [1]
    except ValueError:
        batch_list = [0]
    if not batch_list or min(batch_list) < 1:
        raise Skip(f"llama: the batches after ':' are positive integers, not '{batches}' (e.g. 8b:1,16)")
    return models, batch_list


def visible_gpus():
    """How many GPUs nvidia-smi lists here (0 without it)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for l in out.splitlines() if l.startswith("GPU "))


@step("multi_gpu", "several GPUs: sharded GEMM + all_reduce, the tensor-parallel decode stack, Sinter and PyTorch",
      arg="models of decode_tp (1b, 8b, or 1b,8b; default 1b), or 'virtual' / virtual:W: W virtual ranks on GPU 0 "
          "(default 2), Sinter's megakernel only",
      limits="300 s + 240 s (PyTorch)", needs=("sinter_bench_multi_gpu",))
def step_multi_gpu(run, arg):
    """One rank per visible GPU (sinter_bench_multi_gpu, docs/multi-gpu.md): the GEMM x[M, 8192]
    w[8192, 8192] split along K with an all_reduce (M = 16, 128, 1024, 4096) as cuBLASLt then NCCL,
    Sinter's stream plan and the megakernel with its in-kernel all_reduce (and the share of the
    all_reduce it hides); the Llama-3.2-1B decode step in tensor parallelism through the stream,
    graph and megakernel executors; then the same in PyTorch with torch.distributed (NCCL, eager
    and CUDA graph, bench/torch_multi_gpu.py); each rank's Perfetto trace of one megakernel decode
    step lands in raw.tgz. Skipped, saying so, with fewer than 2 GPUs.
    virtual[:W]: W virtual ranks on one GPU (megakernel only, M = 16 and 1024): the protocol's
    dry run; its times are not multi-GPU times."""
    exe = run.need("sinter_bench_multi_gpu")[0]
    runs = ["--runs", "7" if run.quick else "21"]
    if arg and arg.split(":")[0] == "virtual":
        world = arg.partition(":")[2] or "2"
        run.command("sinter_bench_multi_gpu", [exe, "--virtual", world, "--m", "16,1024"] + runs,
                    "multi_gpu_virtual.jsonl", run.limit(300), source="sinter_bench_multi_gpu")
        return
    gpus = visible_gpus()
    if gpus < 2 and not run.dry:
        raise Skip(f"needs 2 GPUs or more of one host; nvidia-smi lists {gpus} (multi_gpu=virtual runs the "
                   "megakernel's collectives on one)")
    models = ["--models", arg] if arg else []
    if arg and any(m not in ("1b", "8b") for m in arg.split(",")):
        raise Skip(f"multi_gpu takes models 1b and 8b (or virtual[:W]), not '{arg}'")
    run.command("sinter_bench_multi_gpu", [exe, "--trace-dir", run.raw] + runs + models, "multi_gpu.jsonl",
                run.limit(300), source="sinter_bench_multi_gpu")
    run.torch("torch_multi_gpu.py", run.quick_flag() + models, "torch_multi_gpu.jsonl", run.limit(240),
              source="torch_multi_gpu")


@step("llama", "whole-model decode steps (Llama-3.2-1B, Llama-3-8B's shape), Sinter and PyTorch",
      arg="MODELS[:BATCHES]: models 1b,8b (default both), batches after a colon (default 1), e.g. 8b:1,16",
      limits="300 s per batch + 240 s (PyTorch, per model and batch)", needs=("sinter_bench_plan",))
def step_llama(run, arg):
    """sinter_bench_plan --models M --batch B: each model's decode step at each batch (B sequences,
    one new token each, the weights read once for all) checked against the CPU reference (the 1B
    at batch 1 whole; the 8B's shape and every batch above 1 on two layers), then timed through the
    graph executor and the megakernel beside the read-once floor of its bytes (a batch whose KV
    caches do not fit the GPU is skipped and says so); then the same model at the same batch in
    PyTorch (eager, CUDA graph, torch.compile: bench/torch_decode_stack.py --model M --batch B).
    Report cases: llama_3_2_1b and llama_3_8b at batch 1, llama_3_8b_b16 etc. above. One call's
    budget holds a few (model, batch) pairs: e.g. llama=1b:1,4,16,64 in one call, llama=8b:1,16 in
    another."""
    exe = run.need("sinter_bench_plan")[0]
    models, batches = parse_llama_arg(arg)
    batch_arg = ",".join(str(b) for b in batches)
    argv = [exe, "--runs", "7", "--models", ",".join(models)] + (["--batch", batch_arg] if batches != [1] else [])
    tag = "" if not arg else "_" + re.sub(r"[^0-9a-z]+", "-", arg)  # one log per llama=ARG of the call
    log = run.command("sinter_bench_plan --models", argv, f"bench_models{tag}.log", run.limit(300 * len(batches)),
                      json_lines=False)
    if not run.dry and os.path.exists(log):
        for r in parse_bench_plan(open(log, errors="replace").read()):
            run.record(dict(r, _source="sinter_bench_plan"))
        run.say_lines(grep(log, r"^5\.|WRONG|FAILED|all checks", 12 * len(batches)), "   ")
    for m in models:
        for b in batches:
            run.torch("torch_decode_stack.py", run.quick_flag() + ["--model", m] + (["--batch", str(b)] if b > 1 else []) +
                      (["--no-compile"] if run.opts.no_compile else []),
                      f"torch_model_{m}.jsonl" if b == 1 else f"torch_model_{m}_b{b}.jsonl", run.limit(240),
                      source="torch_decode_stack")
    run.show(["models"])


@step("blocks", "the example graphs, Sinter's executors and PyTorch",
      arg=f"examples (default {','.join(EXAMPLES)})", limits="60 s a run (8 runs) + 300 s (PyTorch)",
      needs=("sinter",))
def step_blocks(run, arg):
    """The benchmark suite's models: each example graph through Sinter's stream and graph
    executors (`sinter bench FILE --json`, plan built in the call, heuristic tuning), then the same
    models in PyTorch, eager, torch.compile and CUDA graph (bench/torch_blocks.py)."""
    exe = run.need("sinter")[0]
    names = [n for n in (arg or ",".join(EXAMPLES)).split(",") if n]
    for n in names:
        if not os.path.exists(os.path.join(REPO, "examples", n + ".json")):
            raise Skip(f"no examples/{n}.json")
    iters = "50" if run.quick else "200"
    for n in names:
        for e in ("stream", "graph", "mega"):
            path = run.command(f"sinter bench {n} {e}", [exe, "bench", f"examples/{n}.json", "--executor", e,
                                                         "--iters", iters, "--json"],
                               f"blocks_{n}_{e}.json", run.limit(60), json_lines=False)
            if not run.dry:
                r = read_bench_json(path)
                if r:
                    run.record(dict(case=n, engine="sinter-" + e, _source="sinter_bench", **r))
    run.torch("torch_blocks.py", run.quick_flag() + ([f"--only={arg}"] if arg else []), "torch_blocks.jsonl",
              run.limit(300), source="torch_blocks")
    run.show(["blocks"])


@step("python", "the Python module on the GPU: built here, its GPU tests, the Python path beside PyTorch and the C++ runner",
      arg="models of bench/torch_python_path.py --only (default: all)",
      limits="300 s (build) + 300 s (tests) + 300 s (benchmark) + 300 s (example)", needs=("sinter",))
def step_python(run, arg):
    """The `sinter` Python module built on this machine (CMake with -DSINTER_BUILD_PYTHON=ON into
    build-python/, this machine's python3 and its nanobind; nlohmann-json from BIN_DIR/prefix when
    the system lacks it), then bench/torch_python_path.py (each model through torch eager, CUDA graph,
    torch.compile, the Python runner, the torch.compile backend and `sinter bench`, the C++ runner, on
    the same plan), then its GPU tests (python/tests/test_torch_gpu.py, test_onnx_from_torch.py:
    models through from_torch / from_onnx + sinter.compile and the torch.compile backend against torch
    eager and onnxruntime), then examples/python/llama_transformers.py (transformers' Llama at
    Llama-3.2-1B's shape: a 512-token prefill and a decode step through from_torch and the backend,
    against transformers' eager, beside torch eager and torch.compile)."""
    exe = run.need("sinter")[0]
    build = os.path.join(REPO, "build-python")
    prefix = os.path.join(run.bin, "prefix")
    configure = ["cmake", "-S", REPO, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                 "-DSINTER_BUILD_PYTHON=ON", "-DSINTER_BUILD_TOOLS=OFF", "-DSINTER_BUILD_TESTS=OFF",
                 f"-DPython_EXECUTABLE={sys.executable}"] + ([f"-DCMAKE_PREFIX_PATH={prefix}"] if os.path.isdir(prefix) else [])
    run.command("configure the module", configure, "python_configure.log", run.limit(120), json_lines=False)
    run.command("build the module", ["cmake", "--build", build, "--target", "sinter_python", "-j", str(os.cpu_count() or 8)],
                "python_build.log", run.limit(300), json_lines=False)
    env = {"PYTHONPATH": os.path.join(build, "python"), "PYTHONUNBUFFERED": "1", "SINTER_LOG": "1"}
    args = run.quick_flag() + (["--no-compile"] if run.opts.no_compile else []) + \
        (["--autotune"] if run.opts.autotune else []) + ["--sinter", exe]
    run.command("torch_python_path.py", [sys.executable, os.path.join("bench", "torch_python_path.py")] + args +
                ([f"--only={arg}"] if arg else []), "torch_python_path.jsonl", run.limit(300), env=env,
                source="torch_python_path")
    run.command("python GPU tests", [sys.executable, "-m", "pytest", "-q", "-rs", "-s", "python/tests/test_torch_gpu.py",
                                     "python/tests/test_onnx_from_torch.py"],
                "python_gpu_tests.log", run.limit(300), env=env, json_lines=False)
    if not run.dry:
        run.say_lines(grep(run.raw_path("python_gpu_tests.log"),
                           r"relative L2 error|^FAILED|^ERROR|^SKIPPED|passed|failed", 80), "   ")
    run.command("llama_transformers.py", [sys.executable, os.path.join("examples", "python", "llama_transformers.py")] +
                (["--runs", "20"] if not run.opts.full else []) + (["--autotune"] if run.opts.autotune else []),
                "llama_transformers.log", run.limit(300), env=env,
                json_lines=False)
    if not run.dry:
        run.say_lines(grep(run.raw_path("llama_transformers.log"), r"rel L2|ms, median|checks|Error|error", 20), "   ")
    run.show(["python"])


def read_bench_json(path):
    """{ms (p50), device, iters} of a `sinter bench --json` output, or None."""
    try:
        text = open(path, errors="replace").read()
        j = json.loads(text[text.index("{"):text.rindex("}") + 1])
        return {"ms": float(j["latency_ms"]["p50"]), "device": j.get("device", ""), "iters": j.get("iters")}
    except (OSError, ValueError, KeyError, TypeError):
        return None


@step("bundle", "the plan bundle round trip with the sinter CLI",
      arg="graph file (default examples/transformer_block.json)", limits="120 s a command", needs=("sinter",))
def step_bundle(run, arg):
    """The plan bundle round trip with the CLI: `sinter build` (--tune fast) twice (the second
    finds every timing in the timing cache), `sinter inspect`, `sinter run` on the stream and graph
    executors (checked against the CPU reference), `sinter bench --json` of the bundle on both. The
    bundle comes back in raw.tgz."""
    exe = run.need("sinter")[0]
    graph = arg or "examples/transformer_block.json"
    if not os.path.exists(os.path.join(REPO, graph)):
        raise Skip(f"no {graph}")
    plan = run.raw_path(os.path.splitext(os.path.basename(graph))[0] + ".plan")
    timings = {"SINTER_TIMING_CACHE": run.raw_path("timing_cache.json")}
    for i in (1, 2):
        run.command(f"sinter build ({i})", [exe, "build", graph, "-o", plan, "--tune", "fast"],
                    f"bundle_build{i}.log", run.limit(120), env=timings, json_lines=False)
    run.command("sinter inspect", [exe, "inspect", plan], "bundle_inspect.log", run.limit(60), json_lines=False)
    for e in ("stream", "graph"):
        run.command(f"sinter run {e}", [exe, "run", plan, "--executor", e], f"bundle_run_{e}.log", run.limit(60),
                    json_lines=False)
    for e in ("stream", "graph"):
        path = run.command(f"sinter bench (bundle, {e})", [exe, "bench", plan, "--executor", e, "--json"],
                           f"bundle_bench_{e}.json", run.limit(60), json_lines=False)
        r = None if run.dry else read_bench_json(path)
        if r:
            run.record(dict(case=os.path.basename(plan), engine="sinter-" + e, _source="sinter_bench_bundle", **r))
            run.say(f"   the bundle on the {e} executor: p50 {r['ms']:.4g} ms")
    if not run.dry:
        for f in ("bundle_build2.log", "bundle_run_stream.log", "bundle_run_graph.log"):
            run.say_lines(grep(run.raw_path(f), r"rel L2|kernel cache|timing|tim(ed|ing) cache|load|error|Error|FAIL", 8),
                          f"   {f}: ")


@step("demo", "sinter demo", limits="240 s", needs=("sinter",))
def step_demo(run, arg):
    """`sinter demo --examples examples`: every example built, saved, loaded and replayed."""
    exe = run.need("sinter")[0]
    log = run.command("sinter demo", [exe, "demo", "--examples", "examples"], "demo.log", run.limit(240),
                      json_lines=False)
    if not run.dry:
        run.say_lines(grep(log, r"^== |plan:|FAILED|failed|rel L2", 40), "   ")


@step("soak", "clock and power under a GEMM soak",
      arg="CASE[:ENGINE[:CONFIG]] entries separated by ';' (default gemm_4096;gemm_bias_gelu_amax_4096)",
      limits="60 s an entry", needs=("sinter_bench_gemm",))
def step_soak(run, arg):
    """Clock and power under load: each entry's kernel (ENGINE jit, the default, or cublaslt;
    CONFIG a jit candidate's config text from the gemm step's candidate lines) runs back to back
    for --soak-seconds (sinter_bench_gemm --soak) while nvidia-smi samples SM clock, power,
    temperature and clock event reasons every 50 ms; prints the medians of the busy samples."""
    exe = run.need("sinter_bench_gemm")[0]
    smi = shutil.which("nvidia-smi")
    if not smi and not run.dry:
        raise Skip("nvidia-smi not found")
    reasons = "clocks_event_reasons.active"
    if smi and not run.dry and subprocess.run([smi, "--query-gpu=" + reasons, "--format=csv,noheader"],
                                              capture_output=True).returncode != 0:
        reasons = "clocks_throttle_reasons.active"
    for spec in (arg or "gemm_4096;gemm_bias_gelu_amax_4096").split(";"):
        case, engine, config = (spec.split(":", 2) + ["", ""])[:3]
        tag = re.sub(r"[^A-Za-z0-9_]+", "_", spec)[:60]
        args = [exe, "--quick", "--no-candidates", "--cases", case, "--soak", str(run.opts.soak_seconds)]
        args += (["--soak-engine", engine] if engine else []) + (["--soak-candidate", config] if config else [])
        sampler = None
        smi_file = run.raw_path(f"soak_{tag}.smi")
        smi_cmd = [smi or "nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,"
                   + reasons, "--format=csv,noheader,nounits", "-lms", "50"]
        if run.dry:
            run.say(f"   $ {shlex.join(smi_cmd)} > {smi_file} &   (stopped after the run below)")
        else:
            sampler = subprocess.Popen(smi_cmd, stdout=open(smi_file, "w"), stderr=subprocess.STDOUT)
        try:
            run.command(f"soak {spec}", args, f"soak_{tag}.jsonl", run.limit(60), source="sinter_bench_gemm",
                        variant="soak")
        finally:
            if sampler:
                sampler.terminate()
                sampler.wait()
        if not run.dry:
            run.say("   " + smi_summary(smi_file))
            for r in run.step_records:
                if r.get("case") == case and "soak_s" in r:
                    run.say(f"   {case}: {r.get('soak_chunks')} chunks, median {r.get('soak_median_ms')} ms "
                            f"[{r.get('soak_min_ms')}, {r.get('soak_max_ms')}] on {r.get('soak_engine')}")


def smi_summary(path):
    rows = []
    for line in open(path, errors="replace"):
        f = [x.strip() for x in line.split(",")]
        try:
            if len(f) >= 5 and float(f[4]) >= 95:
                rows.append(f)
        except ValueError:
            pass
    if not rows:
        return "no busy samples: " + open(path, errors="replace").read()[:200].replace("\n", " ")
    med = lambda i: statistics.median(float(r[i]) for r in rows)  # noqa: E731
    reasons = sorted({r[5] for r in rows if len(r) > 5})
    return (f"{len(rows)} busy samples: SM clock {med(0):.0f} MHz (min {min(float(r[0]) for r in rows):.0f}), "
            f"memory {med(1):.0f} MHz, power {med(2):.0f} W, {med(3):.0f} C, clock event reasons {reasons}")


def find_ncu(run):
    return run.find_tool("ncu", ["/usr/local/cuda/bin/ncu"] + sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu")))


def ncu_step(run, kind, target_args, tag, kernel, limit, extra_sections=()):
    ncu = find_ncu(run)
    args = [ncu, "--clock-control", "none", "--kernel-name", kernel, "--launch-skip", "2", "--launch-count", "1"]
    for s in NCU_SECTIONS[kind] + tuple(extra_sections):
        args += ["--section", s]
    log = run.command(f"ncu {tag}", args + target_args, f"ncu_{kind}_{tag}.log", limit, json_lines=False)
    if not run.dry:
        run.say_lines(grep(log, NCU_KEEP[kind], 60), f"   {tag}: ")


@step("ncu_memory", "Nsight Compute on the memory-bound defaults",
      arg="memory cases (default softmax,add_layernorm,add_rmsnorm,copy)", limits="120 s a case",
      needs=("sinter_bench_memory", "ncu"))
def step_ncu_memory(run, arg):
    """Nsight Compute (--clock-control none) on the default kernel of each memory-bound case (its
    third launch): speed of light, warp stall reasons, scheduler and memory statistics, occupancy."""
    exe = run.need("sinter_bench_memory")[0]
    for c in (arg or "softmax,add_layernorm,add_rmsnorm,copy").split(","):
        ncu_step(run, "memory", [exe, "--quick", "--cases", c], c, "sinter_region", run.limit(120))


@step("ncu_gemm", "Nsight Compute on the 4096^3 GEMMs",
      arg="sides (default ours,cublaslt,ours_fused)", limits="150 s a side",
      needs=("sinter_bench_gemm", "ncu"))
def step_ncu_gemm(run, arg):
    """Nsight Compute on the 4096^3 GEMM: our default kernel (with its source counters: where the
    warps stall), cuBLASLt's kernel on the same problem, and ours with the bias + GELU + amax
    epilogue: tensor pipe, issue slots, stall reasons, L2 traffic, launch shape."""
    exe = run.need("sinter_bench_gemm")[0]
    sides = {"ours": ("gemm_4096", "sinter_region"), "cublaslt": ("gemm_4096", "regex:nvjet|xmma|gemm|cutlass"),
             "ours_fused": ("gemm_bias_gelu_amax_4096", "sinter_region")}
    for side in (arg or "ours,cublaslt,ours_fused").split(","):
        if side not in sides:
            raise Skip(f"ncu_gemm: no side '{side}' (ours, cublaslt, ours_fused)")
        case, kernel = sides[side]
        ncu_step(run, "gemm", [exe, "--quick", "--no-candidates", "--cases", case], side, kernel, run.limit(150),
                 ("SourceCounters",) if side.startswith("ours") else ())


@step("ncu_decode", "Nsight Compute on the decode GEMV",
      arg="decode case (default decode_m1)", limits="120 s a side", needs=("sinter_bench_gemm", "ncu"))
def step_ncu_decode(run, arg):
    """Nsight Compute on a decode GEMV, ours and cuBLASLt's (ncu flushes the caches before each
    profiled launch, so the weight comes from DRAM, as in a model): DRAM throughput, duration
    without launch cost, occupancy, stalls."""
    exe = run.need("sinter_bench_gemm")[0]
    case = arg or "decode_m1"
    for side, kernel in (("ours", "sinter_region"), ("cublaslt", "regex:gemv|gemm|nvjet|splitK|reduce")):
        ncu_step(run, "decode", [exe, "--quick", "--decode", "--no-candidates", "--cases", case], side, kernel,
                 run.limit(120))


@step("probe", "bench/experiments probes",
      arg=f"probes (default all: {','.join(PROBES)})", limits="300 s (build) + 120 s a probe",
      needs=("cmake + nvcc, unless BIN_DIR has the probes",))
def step_probe(run, arg):
    """The standalone CUDA probes of bench/experiments (their header comments say what each
    measures; docs/research-*.md and the log cite them): each found in BIN_DIR (or
    BIN_DIR/bench/experiments), else built here by CMake from bench/experiments (nvcc, sm_90a).
    The L2 probes also run under Nsight Compute with the metrics their headers name."""
    names = [n for n in (arg or ",".join(PROBES)).split(",") if n]
    for n in names:
        if n not in PROBES:
            raise Skip(f"no probe '{n}' (probes: {', '.join(PROBES)})")
    found = {n: run.find(n) for n in names}
    missing = [n for n, p in found.items() if not p]
    if missing:
        build = os.path.join(tempfile.gettempdir(), "sinter-experiments")
        cmake = run.find_tool("cmake", [])
        gen = ["-G", "Ninja"] if shutil.which("ninja") else []
        run.command("cmake configure", [cmake, "-S", os.path.join(REPO, "bench", "experiments"), "-B", build] + gen,
                    "probe_build.log", run.limit(120), json_lines=False)
        run.command("cmake build", [cmake, "--build", build, "-j", str(os.cpu_count() or 4), "--target"] + missing,
                    "probe_build2.log", run.limit(300), json_lines=False)
        for n in missing:
            p = os.path.join(build, n)
            found[n] = p if run.dry or os.path.exists(p) else None
    for n in names:
        if not found[n]:
            run.say(f"   {n}: not built (see probe_build*.log in raw.tgz); skipped")
            continue
        log = run.command(n, [found[n]], f"probe_{n}.log", run.limit(120), json_lines=False)
        if not run.dry:
            run.say_lines(grep(log, r".", 40), f"   {n}: ")
        if PROBES[n][1]:
            kernel, metrics = PROBES[n][1]
            try:
                ncu = find_ncu(run)
            except Skip as e:
                run.say(f"   {n} under ncu: skipped ({e})")
                continue
            log = run.command(f"{n} under ncu", [ncu, "--clock-control", "none", "--kernel-name", kernel, "--metrics",
                                                 metrics, found[n]], f"probe_{n}_ncu.log", run.limit(150),
                              json_lines=False)
            if not run.dry:
                run.say_lines(grep(log, r"^  [a-z_]+__|^  [A-Za-z_]+ ?\(|sectors|lrc__|gpu__time", 60), f"   {n} ncu: ")


@step("sass", "SASS report of the GEMM and decode kernels (no GPU)",
      gpu=False, limits="300 s", needs=("sinter_jit_tests", "cuobjdump", "nvdisasm"))
def step_sass(run, arg):
    """The compiler's report on the Hopper GEMM and decode GEMV kernels, no GPU needed: the JIT
    tests compile every config through NVRTC for sm_90a and dump the cubins
    (SINTER_DUMP_CUBIN_DIR); cuobjdump then reads registers, static shared memory and stack per
    kernel and counts HGMMA (wgmma), UTMALDG (TMA loads), HMMA (mma.sync) and LDL/STL (spills) in
    the SASS (a markdown table, sass_report.md), and bench/sass_loops.py counts each wgmma main
    loop's instructions a k-block (sass_loops.txt)."""
    exe = run.need("sinter_jit_tests")[0]
    cuobjdump = run.find_tool("cuobjdump", ["/usr/local/cuda/bin/cuobjdump"])
    nvdisasm = run.find_tool("nvdisasm", ["/usr/local/cuda/bin/nvdisasm"])
    dump = tempfile.mkdtemp(prefix="sinter-cubins-") if not run.dry else "$DUMP"
    flt = ("JitMatmulSm90.CompilesWithoutSpills:JitMatmulSm90.BenchmarkEpilogueCompilesWithoutSpills:"
           "JitMatmulSm90.EveryEpilogueKindCompilesWithoutSpills:JitMatmulDecode.CompilesWithoutSpills")
    run.command("JIT tests (cubins dumped)", [exe, "--gtest_filter=" + flt], "sass_jit_tests.log", run.limit(300),
                env={"SINTER_DUMP_CUBIN_DIR": dump}, json_lines=False)
    if run.dry:
        run.say(f"   then per $DUMP/*.cubin: {cuobjdump} -res-usage, {cuobjdump} -sass; bench/sass_loops.py $DUMP")
        return
    env = dict(os.environ, PATH=os.path.dirname(nvdisasm) + os.pathsep + os.environ.get("PATH", ""))
    table = ["| kernel (cubin) | description | registers | shared (static) | stack | HGMMA | UTMALDG | HMMA | LDL/STL |",
             "|---|---|---|---|---|---|---|---|---|"]
    spills = 0
    cubins = sorted(glob.glob(os.path.join(dump, "*.cubin")))
    for cubin in cubins:
        name = os.path.basename(cubin)[:-len(".cubin")]
        desc = ""
        if os.path.exists(cubin + ".cu"):
            desc = open(cubin + ".cu", errors="replace").readline().strip().lstrip("/ ")[:110]
        res = subprocess.run([cuobjdump, "-res-usage", cubin], capture_output=True, text=True, env=env).stdout
        sass = subprocess.run([cuobjdump, "-sass", cubin], capture_output=True, text=True, env=env).stdout
        field = lambda k: (re.search(k + r":(\d+)", res) or [None, "0"])[1]  # noqa: E731
        count = lambda pat: len(re.findall(pat, sass))  # noqa: E731
        r = dict(kernel=name, description=desc, registers=int(field("REG")), shared=int(field("SHARED")),
                 stack=int(field("STACK")), hgmma=count(r" HGMMA\."), utmaldg=count(r" UTMALDG"), hmma=count(r" HMMA\."),
                 ldl_stl=count(r" (?:LDL|STL)"))
        spills += r["ldl_stl"] > 0
        run.record(dict(r, _source="sass"))
        table.append(f"| {name} | {desc.replace('|', '/')} | {r['registers']} | {r['shared']} | {r['stack']} | "
                     f"{r['hgmma']} | {r['utmaldg']} | {r['hmma']} | {r['ldl_stl']} |")
    with open(run.raw_path("sass_report.md"), "w") as f:
        f.write("\n".join(table) + "\n")
    run.say(f"   {len(cubins)} kernels dumped, {spills} with LDL/STL (local memory); table: sass_report.md in raw.tgz")
    loops = run.command("sass_loops.py", [sys.executable, os.path.join(BENCH, "sass_loops.py"), dump],
                        "sass_loops.txt", run.limit(120), env={"PATH": env["PATH"]}, json_lines=False)
    run.say_lines(grep(loops, r".", 15), "   ")
    shutil.rmtree(dump, ignore_errors=True)


@step("report", "the current-results document with this run merged", gpu=False, limits="none (seconds)")
def step_report(run, arg):
    """This run's figures merged into a copy of docs/benchmarks.json (bench/report.py): writes
    benchmarks.md, benchmarks.json and benchmarks.svg into $OUT, a preview of the current-results
    document. docs/ on the GPU machine is a copy: update the real one on the development machine
    with `bench/report.py merge OUT/results.jsonl --write`."""
    if run.dry:
        run.say(f"   bench/report.py: {report.DATA} + this run -> {run.out}/benchmarks.{{md,json,svg}}")
        return
    data = report.load_data(report.DATA)
    rid, sections = report.merge(data, run.meta, run.records)
    report.write_outputs(data, run.out)
    run.say(f"   run {rid}: {', '.join(sections) or 'no benchmark figures in this run'}; "
            f"benchmarks.md/.json/.svg written to {run.out}")


# --- running ------------------------------------------------------------------------------------

def grep(path, pattern, limit):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return []
    rx = re.compile(pattern)
    return [l[:220] for l in lines if rx.search(l)][:limit]


def grep_after(path, pattern, after, limit):
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return []
    rx, out, left = re.compile(pattern), [], 0
    for l in lines:
        if rx.search(l):
            left = after + 1
        if left > 0:
            out.append(l[:220])
            left -= 1
    return out[:limit]


class Run:
    def __init__(self, opts, steps):
        self.opts, self.steps = opts, steps
        self.dry, self.quick = opts.dry_run, not opts.full
        self.bin = opts.bin_dir
        self.out = os.path.abspath(opts.out)
        self.start = time.monotonic()
        self.deadline = self.start + opts.budget
        self.records, self.step_records, self.outcomes = [], [], []
        self.current, self.step_name = None, ""
        if self.dry:
            self.raw = "$RAW"
            return
        os.makedirs(self.out, exist_ok=True)
        self.raw = tempfile.mkdtemp(prefix="sinter-device-raw-")
        self.summary = open(os.path.join(self.out, "summary.txt"), "w")
        self.results = open(os.path.join(self.out, "results.jsonl"), "w")

    # -- files and tools
    def raw_path(self, name):
        return os.path.join(self.raw, name)

    def find(self, name):
        for d in ("", "tests/gpu", "tests/jit", "bench/experiments"):
            p = os.path.join(self.bin, d, name)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return os.path.abspath(p)
        return None

    def need(self, *names):
        paths, missing = [], []
        for n in names:
            p = self.find(n)
            if p is None:
                missing.append(n)
                p = os.path.join(self.bin, n)
            paths.append(p)
        if missing and not self.dry:
            raise Skip(f"missing in {self.bin}/: {', '.join(missing)} (build it and carry it in BIN_DIR)")
        if missing:
            self.say(f"   (missing here: {', '.join(missing)}; a real run would skip this step)")
        return paths

    def find_tool(self, name, also):
        p = shutil.which(name) or next((a for a in also if os.path.isfile(a) and os.access(a, os.X_OK)), None)
        if p is None and not self.dry:
            raise Skip(f"{name} not found (PATH, {', '.join(also) or 'nowhere else'})")
        return p or name

    def quick_flag(self):
        return ["--quick"] if self.quick else []

    def limit(self, default):
        """A command's time limit: its default, or what --limit STEP=SECONDS says for this step."""
        return self.opts.limits.get(self.step_name, default)

    def left(self):
        return self.deadline - RESERVE_S - time.monotonic()

    # -- output
    def say(self, text):
        print(text, flush=True)
        if not self.dry:
            self.summary.write(text + "\n")
            self.summary.flush()

    def say_lines(self, lines, prefix=""):
        for l in lines:
            self.say(prefix + l)

    def record(self, r):
        r = dict(r, _step=self.step_name)
        self.records.append(r)
        self.step_records.append(r)
        self.results.write(json.dumps(r) + "\n")
        self.results.flush()

    def show(self, sections):
        if not self.dry:
            self.say_lines(report.show(self.step_records, sections), "   ")

    # -- commands
    def describe(self, argv, out_name, limit, env):
        pre = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items())
        out = os.path.join(self.raw, out_name)
        return f"   $ {pre + ' ' if pre else ''}timeout {limit:.0f} {shlex.join(argv)} > {out}"

    def budget(self, label, limit):
        left = self.left()
        if left < 5:
            raise Skip(f"{label}: the call's budget ({self.opts.budget:.0f} s) is spent")
        return min(limit, left)

    def command(self, label, argv, out_name, limit, env=None, source=None, variant=None, json_lines=True):
        """Runs argv (cwd: the repository) with stdout into raw/out_name and stderr into
        raw/out_name.err, under min(limit, what the budget leaves) seconds; its JSON lines become
        records. Returns the output's path."""
        path = self.raw_path(out_name)
        limit = self.budget(label, limit) if not self.dry else limit
        if self.dry:
            self.say(self.describe(argv, out_name, limit, env))
            return path
        t0 = time.monotonic()
        with open(path, "w") as out, open(path + ".err", "w") as err:
            rc = self.wait([self.spawn(argv, out, err, env)], limit)[0]
        secs = time.monotonic() - t0
        self.step_result(label, argv, rc, secs, limit, out_name)
        if os.path.getsize(path + ".err") == 0:
            os.remove(path + ".err")
        if json_lines:
            self.read_json_lines(path, source or label, variant)
        if rc != 0:
            err = path + ".err" if os.path.exists(path + ".err") else path
            last = [l for l in open(err, errors="replace").read().splitlines() if l.strip()]
            why = "timed out" if rc in (124, 137) else f"exit {rc}"
            self.say(f"   {label}: {why} after {secs:.0f} s (limit {limit:.0f} s)" + (f": {last[-1][:160]}" if last else ""))
        else:
            self.say(f"   {label}: done in {secs:.0f} s")
        return path

    def torch(self, script, args, out_name, limit, source):
        if self.opts.no_torch:
            self.say(f"   {script}: skipped (--no-torch)")
            return None
        return self.command(script, [sys.executable, os.path.join("bench", script)] + args, out_name, limit,
                            env={"PYTHONUNBUFFERED": "1"}, source=source)

    def parallel(self, cmds, limit):
        """cmds: [(label, argv, out_name, env)] side by side, one limit for all; their exit codes."""
        limit = self.budget(cmds[0][0], limit) if not self.dry else limit
        if self.dry:
            for label, argv, out_name, env in cmds:
                self.say(self.describe(argv, out_name, limit, env) + " &")
            return [0] * len(cmds)
        t0 = time.monotonic()
        files, procs = [], []
        for label, argv, out_name, env in cmds:
            f = open(self.raw_path(out_name), "w")
            files.append(f)
            procs.append(self.spawn(argv, f, subprocess.STDOUT, env))
        rcs = self.wait(procs, limit)
        for f in files:
            f.close()
        secs = time.monotonic() - t0
        for (label, argv, out_name, env), rc in zip(cmds, rcs):
            self.step_result(label, argv, rc, secs, limit, out_name)
        return rcs

    def spawn(self, argv, out, err, env):
        e = dict(os.environ, **(env or {}))
        return subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=err, env=e, start_new_session=True)

    def wait(self, procs, limit):
        """Exit codes of procs, killed (124, as timeout(1)) when past limit seconds."""
        self.current = procs
        end = time.monotonic() + limit
        rcs = []
        for p in procs:
            try:
                rcs.append(p.wait(timeout=max(0.1, end - time.monotonic())))
            except subprocess.TimeoutExpired:
                kill(p)
                rcs.append(124)
        self.current = None
        return rcs

    def step_result(self, label, argv, rc, secs, limit, out_name):
        r = {"step": self.step_name, "label": label, "command": shlex.join(argv), "rc": rc,
             "seconds": round(secs, 1), "limit": round(limit), "file": out_name}
        self.outcomes.append(r)
        self.results.write(json.dumps({"_step_result": r}) + "\n")
        self.results.flush()

    def skipped(self, why):
        r = {"step": self.step_name, "label": "", "rc": "skipped", "why": why}
        self.outcomes.append(r)
        if not self.dry:
            self.results.write(json.dumps({"_step_result": r}) + "\n")
            self.results.flush()

    def read_json_lines(self, path, source, variant):
        for line in open(path, errors="replace"):
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if isinstance(r, dict):
                r["_source"] = source
                if variant:
                    r["_variant"] = variant
                self.record(r)

    def pack(self):
        """raw/ into $OUT/raw.tgz (atomically: a call cut short keeps the last complete one)."""
        if self.dry:
            return
        tmp = os.path.join(self.out, "raw.tgz.tmp")
        skipped = []
        for cap in (None, 2 << 20):
            skipped = []
            with tarfile.open(tmp, "w:gz") as t:
                for name in sorted(os.listdir(self.raw)):
                    p = self.raw_path(name)
                    if cap and os.path.getsize(p) > cap:
                        skipped.append(name)
                        continue
                    t.add(p, arcname=os.path.join("raw", name))
            if os.path.getsize(tmp) < 15 << 20:
                break
        os.replace(tmp, os.path.join(self.out, "raw.tgz"))
        if skipped:
            self.say(f"   raw.tgz: left out (over 2 MiB, the archive would pass 15 MiB): {', '.join(skipped)}")


def kill(p):
    """p's whole process group: TERM, then KILL after 5 s."""
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            p.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def commit_of(opts):
    if opts.commit:
        return opts.commit
    if os.environ.get("SINTER_COMMIT"):
        return os.environ["SINTER_COMMIT"]
    try:
        with open(os.path.join(opts.bin_dir, "COMMIT")) as f:
            c = f.read().strip()
            if c:
                return c
    except OSError:
        pass
    try:
        c = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                           timeout=10)
        if c.returncode == 0 and c.stdout.strip():
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return c.stdout.strip() + (" + local changes" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown (pass --commit or SINTER_COMMIT)"


def gpu_info():
    """(name, one-line description) from nvidia-smi, or (None, why)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None, "nvidia-smi not found"
    try:
        q = subprocess.run([smi, "--query-gpu=name,driver_version,power.limit,clocks.max.sm,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"nvidia-smi: {e}"
    line = q.stdout.strip().splitlines()[0] if q.returncode == 0 and q.stdout.strip() else ""
    if not line:
        return None, "nvidia-smi: " + (q.stderr.strip().splitlines() or ["no GPU listed"])[0]
    f = [x.strip() for x in line.split(",")]
    return f[0], f"{f[0]} (driver {f[1]}, power limit {f[2]}, max SM clock {f[3]}, {f[4]})" if len(f) >= 5 else line


# --- command line -------------------------------------------------------------------------------

def parse_steps(words):
    """[(step, arg)] from the positional words: NAME[,NAME...] or NAME=ARG, aliases expanded."""
    out = []
    for w in words:
        if "=" in w:
            name, arg = w.split("=", 1)
            items = [(name, arg)]
        else:
            items = [(n, None) for n in w.split(",") if n]
        for name, arg in items:
            if name in ALIASES and arg is None:
                out += [(n, None) for n in ALIASES[name].split(",")]
                continue
            if name not in STEPS:
                raise SystemExit(f"device.py: unknown step '{name}' (bench/device.py --list shows them)")
            if arg is not None and STEPS[name]["arg"] is None:
                raise SystemExit(f"device.py: step '{name}' takes no argument (got '{arg}')")
            if arg == "":
                raise SystemExit(f"device.py: '{name}=' with an empty argument")
            out.append((name, arg))
    return out


def list_steps():
    lines = ["bench/device.py BIN_DIR STEP[,STEP...] [STEP=ARG ...] [options]; steps run in the order given.", ""]
    for name, s in STEPS.items():
        head = name + ("=ARG" if s["arg"] else "") + f": {s['title']}"
        lines.append(f"{head}   [{'GPU' if s['gpu'] else 'no GPU'}; limit {s['limits']}"
                     + (f"; runs {', '.join(s['needs'])}" if s["needs"] else "") + "]")
        if s["arg"]:
            lines.append(f"    ARG: {s['arg']}")
        doc = " ".join(s["doc"].split())
        words, line = doc.split(), "   "
        for w in words:
            if len(line) + len(w) > 98:
                lines.append(line)
                line = "   "
            line += " " + w
        lines.append(line)
        lines.append("")
    lines.append("Aliases:")
    lines += [f"    {a} = {v}" for a, v in ALIASES.items()]
    lines.append("Presets of tests=ARG (gtest filters):")
    lines += [f"    {k} = {v}" for k, v in PRESETS.items()]
    lines.append("Probes of probe=ARG (bench/experiments/NAME.cu):")
    lines += [f"    {k}: {v[0]}" for k, v in PROBES.items()]
    lines += ["", "Options: bench/device.py --help. Old scripts -> steps: bench/README.md."]
    return "\n".join(lines)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/device.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="bench/device.py --list describes every step.")
    p.add_argument("bin_dir", nargs="?", metavar="BIN_DIR", help="the prebuilt binaries (e.g. .device)")
    p.add_argument("steps", nargs="*", metavar="STEP", help="NAME[,NAME...] or NAME=ARG")
    p.add_argument("--list", action="store_true", help="describe every step and exit")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    p.add_argument("--out", default=os.environ.get("OUT") or os.path.join(tempfile.gettempdir(), "sinter_out"),
                   help="results folder (default $OUT, else /tmp/sinter_out)")
    p.add_argument("--commit", help="the commit the binaries were built from (default: $SINTER_COMMIT, "
                                    "BIN_DIR/COMMIT, git rev-parse --short HEAD)")
    p.add_argument("--full", action="store_true", help="the programs' full repeat counts (default: their --quick)")
    p.add_argument("--budget", type=float, default=570, help="seconds for the whole call (default 570)")
    p.add_argument("--limit", action="append", default=[], metavar="STEP=SECONDS",
                   help="cap each command of STEP at SECONDS instead of its default (repeatable)")
    p.add_argument("--shards", type=int, default=4, help="gtest shards of the tests step (default 4)")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch baselines")
    p.add_argument("--no-compile", action="store_true", help="PyTorch baselines without torch.compile where optional")
    p.add_argument("--autotune", action="store_true", help="gemm, python: also torch.compile(mode='max-autotune') (minutes)")
    p.add_argument("--candidates", action="store_true", help="gemm: also a line per forced Hopper candidate")
    p.add_argument("--soak-seconds", type=float, default=4, help="soak: seconds per entry (default 4)")
    opts = p.parse_intermixed_args(argv)
    if opts.list:
        return opts
    if not opts.bin_dir or not opts.steps:
        p.error("name BIN_DIR and at least one step (bench/device.py --list shows the steps)")
    opts.limits = {}
    for l in opts.limit:
        name, _, secs = l.partition("=")
        if name not in STEPS:
            p.error(f"--limit: unknown step '{name}'")
        try:
            opts.limits[name] = float(secs)
        except ValueError:
            p.error(f"--limit takes STEP=SECONDS, not '{l}'")
    if opts.shards < 1 or opts.budget < 30:
        p.error("--shards must be >= 1 and --budget >= 30")
    if not opts.dry_run and not os.path.isdir(opts.bin_dir):
        p.error(f"BIN_DIR '{opts.bin_dir}' is not a folder")
    return opts


def main(argv):
    opts = parse_args(argv)
    if opts.list:
        print(list_steps())
        return 0
    steps = parse_steps(opts.steps)
    run = Run(opts, steps)
    now = datetime.now(timezone.utc)
    gpu, gpu_line = (None, "not asked (dry run)") if opts.dry_run else gpu_info()
    run.meta = {"date": now.strftime("%Y-%m-%d"), "time": now.strftime("%H:%M UTC"), "commit": commit_of(opts),
                "gpu": gpu or "unknown GPU", "gpu_detail": gpu_line, "steps": ",".join(n + (f"={a}" if a else "")
                                                                                 for n, a in steps),
                "quick": run.quick, "bin_dir": opts.bin_dir, "host": platform.node(), "python": platform.python_version()}
    run.say(f"bench/device.py: {run.meta['steps']} | {run.meta['date']} {run.meta['time']} | {gpu_line} | "
            f"commit {run.meta['commit']} | {'quick' if run.quick else 'full'} | budget {opts.budget:.0f} s"
            + (" | DRY RUN" if opts.dry_run else ""))
    if not opts.dry_run:
        run.results.write(json.dumps({"_meta": run.meta}) + "\n")
        run.results.flush()
    # the kernel cache outside $OUT (only results come back), shared by every step of the call
    os.environ.setdefault("SINTER_CACHE_DIR", os.path.join(tempfile.gettempdir(), "sinter-kernel-cache"))

    def stop(signum, frame):
        raise Stop(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        for name, arg in steps:
            s = STEPS[name]
            run.step_name, run.step_records = name, []
            t0 = time.monotonic()
            run.say(f"== [{t0 - run.start:4.0f} s] {name}" + (f"={arg}" if arg else "") + f": {s['title']}")
            try:
                if s["gpu"] and not opts.dry_run and gpu is None:
                    raise Skip(f"no GPU here ({gpu_line})")
                s["fn"](run, arg)
            except Skip as e:
                run.say(f"   skipped: {e}")
                run.skipped(str(e))
            except (Stop, KeyboardInterrupt):
                raise
            except Exception as e:  # noqa: BLE001 (a bug or a surprise in one step must not cost the others)
                run.say(f"   step failed in the driver: {type(e).__name__}: {e}")
                if not opts.dry_run:
                    with open(run.raw_path(f"driver_error_{name}.txt"), "w") as f:
                        traceback.print_exc(file=f)
                    run.step_result("driver", [sys.argv[0], name], f"{type(e).__name__}", 0, 0, "")
            run.pack()
    except (Stop, KeyboardInterrupt) as e:
        for p in run.current or []:
            kill(p)
        run.say(f"stopped ({e or 'interrupted'}); packing what ran")
        status = 130
    finally:
        failed = [r for r in run.outcomes if r["rc"] not in (0, "skipped")]
        skipped = [r for r in run.outcomes if r["rc"] == "skipped"]
        status = status or (1 if failed else 3 if skipped else 0)
        if not opts.dry_run:
            bad = [f"{r['step']} {r['label']}: {'timed out' if r['rc'] in (124, 137) else 'exit %s' % r['rc']}"
                   for r in failed]
            run.results.write(json.dumps({"_end": {"seconds": round(time.monotonic() - run.start), "failed": bad,
                                                   "skipped": [r["step"] for r in skipped]}}) + "\n")
            run.results.close()
            run.say(f"== done in {time.monotonic() - run.start:.0f} s: "
                    + (f"failed: {'; '.join(bad)}; " if bad else "")
                    + (f"skipped: {', '.join(r['step'] for r in skipped)}; " if skipped else "")
                    + ("every command exited 0; " if not bad and not skipped else "") + f"results in {run.out}")
            run.pack()
            run.summary.close()
            shutil.rmtree(run.raw, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
