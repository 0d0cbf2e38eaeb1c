"""The report of bench/suite.sh: reads its results folder ($OUT/suite: sinter_CASE_EXECUTOR.json
from `sinter bench --json`, bench_plan.log, torch_blocks.jsonl, torch_decode_stack.jsonl,
steps.tsv, meta.txt) and writes
  - the suite section of docs/benchmarks.md, between <!-- suite:begin --> and <!-- suite:end -->
    (inserted before the first "## " heading when the markers are absent; nothing else changes);
  - docs/benchmarks-suite.svg: per case, every engine's time relative to the fastest PyTorch
    baseline (SVG written by hand, as bench/plot.py: no plotting library on the GPU machine);
  - the same markdown and SVG into the folder (report.md, benchmarks-suite.svg), since the docs/
    of the GPU machine is a copy and only $OUT comes back; and prints the markdown.
A number that is missing is shown as "n/a (why)", the why taken from steps.tsv and the logs;
nothing is ever filled in.

    python3 bench/suite_report.py DIR [--dry-run]
--dry-run: print the markdown and write the SVG into DIR only; docs/ and DIR/report.md untouched.
"""
import html
import json
import os
import re
import subprocess
import sys
from datetime import datetime, timezone

CASES = ("transformer_block", "conv_block", "mlp_layer", "llama_decode_layer")
SINTER = ("sinter-stream", "sinter-graph")
TORCH = ("torch-eager", "torch-compile", "torch-cuda-graph")
ENGINES = SINTER + TORCH
BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Missing:
    """A number that is not there, and why."""

    def __init__(self, why):
        self.why = why.replace("|", "/").replace("\n", " ").strip()

    def __str__(self):
        return f"n/a ({self.why})"


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_steps(d):
    """{step name: (rc, seconds, limit)} from steps.tsv."""
    steps = {}
    for line in (read(os.path.join(d, "steps.tsv")) or "").splitlines():
        parts = line.split("\t")
        if len(parts) == 4:
            steps[parts[0]] = (parts[1], parts[2], parts[3])
    return steps


def why_missing(d, steps, step):
    """Why a step left no number: how it ended, and the last line of its stderr."""
    if step not in steps:
        return "not run"
    rc, secs, limit = steps[step]
    if rc == "skipped":
        return "skipped: suite time budget spent"
    if rc in ("124", "137"):
        return f"timed out after {limit} s"
    last = [l for l in (read(os.path.join(d, step + ".err")) or "").splitlines() if l.strip()]
    tail = (": " + last[-1][:90]) if last else ""
    return f"exit {rc}{tail}" if rc != "0" else "not in its output"


def read_meta(d):
    meta = {}
    for line in (read(os.path.join(d, "meta.txt")) or "").splitlines():
        k, _, v = line.partition("=")
        meta[k.strip()] = v.strip()
    return meta


def load(d):
    """{case: {engine: ms or Missing}}, the device, torch's meta, notes; every cell filled."""
    steps = read_steps(d)
    table = {c: {} for c in CASES + ("chain", "decode_stack")}
    device, notes, torch_meta = None, [], {}

    for c in CASES:  # sinter bench --json: pretty-printed, one object per file
        for e in ("stream", "graph"):
            step = f"sinter_{c}_{e}"
            text = read(os.path.join(d, step + ".json")) or ""
            try:
                j = json.loads(text[text.index("{"):text.rindex("}") + 1])
                table[c]["sinter-" + e] = float(j["latency_ms"]["p50"])
                device = device or j.get("device")
            except (ValueError, KeyError, TypeError):
                table[c]["sinter-" + e] = Missing(why_missing(d, steps, step))

    for name in ("torch_blocks", "torch_decode_stack"):  # JSON lines
        for line in (read(os.path.join(d, name + ".jsonl")) or "").splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "meta" in r:
                torch_meta = r["meta"]
                continue
            case = "decode_stack" if r.get("case") == "llama_decode_stack" else r.get("case")
            if case not in table or r.get("engine") not in TORCH:
                continue
            if isinstance(r.get("ms"), (int, float)) and r["ms"] >= 0:
                table[case][r["engine"]] = float(r["ms"])
            else:
                table[case][r["engine"]] = Missing("error: " + str(r.get("error", "no time"))[:90])
    for c in CASES:
        for e in TORCH:
            table[c].setdefault(e, Missing(why_missing(d, steps, "torch_blocks")))
    for e in ("torch-eager", "torch-cuda-graph"):
        table["decode_stack"].setdefault(e, Missing(why_missing(d, steps, "torch_decode_stack")))
    table["decode_stack"]["torch-compile"] = Missing("torch_decode_stack.py does not measure it")
    for e in TORCH:
        table["chain"][e] = Missing("no PyTorch twin")

    plan = read(os.path.join(d, "bench_plan.log")) or ""
    why = why_missing(d, steps, "bench_plan")
    m = re.search(r"^1\. .*\n\s*stream executor\s+([0-9.]+) us/op.*\n\s*graph executor\s+([0-9.]+) us/op", plan, re.M)
    table["chain"]["sinter-stream"] = float(m.group(1)) if m else Missing(why)
    table["chain"]["sinter-graph"] = float(m.group(2)) if m else Missing(why)
    m = re.search(r"^4\. llama decode stack .*?outputs (\w+);.*?stream executor ([0-9.]+) ms, graph executor ([0-9.]+) ms",
                  plan, re.M)
    table["decode_stack"]["sinter-stream"] = float(m.group(2)) if m else Missing(why)
    table["decode_stack"]["sinter-graph"] = float(m.group(3)) if m else Missing(why)
    if m and m.group(1) != "correct":
        notes.append(f"sinter_bench_plan: decode stack outputs {m.group(1)} against the CPU reference.")
    if "SOME CHECKS FAILED" in plan:
        notes.append("sinter_bench_plan: SOME CHECKS FAILED (see bench_plan.log).")
    if not device:
        dm = re.search(r"^device: (.*)$", plan, re.M)
        device = dm.group(1) if dm else None
    failed = [f"{s} ({why_missing(d, steps, s)})" for s, (rc, _, _) in steps.items() if rc != "0"]
    if failed:
        notes.append(("Steps that did not finish cleanly: " + "; ".join(failed) + ".").replace("|", "/"))
    return table, device, torch_meta, notes


def commit(meta):
    c = os.environ.get("SINTER_COMMIT") or meta.get("commit")
    if c:
        return c
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no .git here; set SINTER_COMMIT)"


def fmt(v, unit="ms"):
    return str(v) if isinstance(v, Missing) else f"{v:.4g} {unit}"


def best(row, engines):
    got = [(row[e], e) for e in engines if not isinstance(row.get(e), (Missing, type(None)))]
    return min(got) if got else None


def ratio(row):
    s, t = best(row, SINTER), best(row, TORCH)
    if not s or not t:
        return Missing("no Sinter number" if not s else "no PyTorch number")
    return f"{s[0] / t[0]:.2f}x ({s[1][7:]} / {t[1][6:]})"


LABELS = {"transformer_block": "transformer_block (b2 s128 d512, 8 heads, ffn 2048)",
          "conv_block": "conv_block (NHWC 4x28x28x64, two 3x3 convs)",
          "mlp_layer": "mlp_layer (128x1024 @ 1024x4096, GELU, amax)",
          "llama_decode_layer": "llama_decode_layer (d512, GQA 8/2, cache 255)",
          "chain": "200-op pointwise chain, unfused (us per op)",
          "decode_stack": "Llama decode stack, 16 layers d2048 (sinter_bench_plan)"}


def markdown(table, device, torch_meta, notes, meta):
    date = meta.get("started") or datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    gpu = device or meta.get("nvidia_smi") or torch_meta.get("gpu") or "unknown GPU (no device line in any log)"
    torch_v = torch_meta.get("torch", "n/a (no PyTorch output)")
    mode = "--quick" if meta.get("quick") else "full"
    out = [f"## Benchmark suite ({date}), {gpu.split(' (')[0]}", "",
           f"`bench/suite.sh` ({mode}; {meta.get('iters', '?')} timed runs per case after warm-up) on {gpu}, "
           f"commit {commit(meta)}, PyTorch {torch_v}. Written by `bench/suite_report.py`; this section is "
           "replaced by every run. Times are medians (Sinter: p50 of `sinter bench --json`, plan built "
           "now with the heuristic tuner); the last column is the best Sinter time over the best "
           "PyTorch time (below 1.00: Sinter faster).", "",
           "| case | Sinter stream p50 | Sinter graph p50 | torch eager | torch.compile | torch CUDA graph "
           "| best Sinter / best torch |",
           "|---|---|---|---|---|---|---|"]
    for c in CASES + ("chain", "decode_stack"):
        row = table[c]
        unit = "us" if c == "chain" else "ms"
        cells = [fmt(row[e], unit) for e in ENGINES]
        r = Missing("no PyTorch twin") if c == "chain" else ratio(row)
        out.append(f"| {LABELS[c]} | " + " | ".join(cells) + f" | {r} |")
    out += ["", "![Suite: time relative to the fastest PyTorch baseline](benchmarks-suite.svg)"]
    if notes:
        out += [""] + notes
    return "\n".join(out) + "\n"


COLORS = {"sinter-stream": "#7bc", "sinter-graph": "#27a", "torch-eager": "#db8",
          "torch-compile": "#c84", "torch-cuda-graph": "#a52"}


def svg(table):
    """Grouped horizontal bars: per case, each engine's time / the fastest PyTorch time."""
    groups = []
    for c in CASES + ("decode_stack",):
        t = best(table[c], TORCH)
        if t:
            bars = [(e, table[c][e] / t[0]) for e in ENGINES if isinstance(table[c][e], float)]
            groups.append((c, bars))
    bar_h, gap, group_gap, left, width, top = 14, 2, 14, 220, 460, 54
    hi = max([1.5] + [min(v * 1.05, 5.0) for _, bars in groups for _, v in bars])
    x_of = lambda v: left + width * min(v, hi) / hi
    height = top + sum(len(b) * (bar_h + gap) + group_gap for _, b in groups) + 40
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 200}" height="{height}" '
         'font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="#fff"/>',
         '<text x="10" y="18" font-size="14">Time relative to the fastest PyTorch baseline (shorter is faster)</text>']
    for i, e in enumerate(ENGINES):  # legend
        x = 10 + i * 135
        p.append(f'<rect x="{x}" y="28" width="10" height="10" fill="{COLORS[e]}"/>')
        p.append(f'<text x="{x + 14}" y="37">{e}</text>')
    y = top
    for c, bars in groups:
        name = "llama_decode_stack" if c == "decode_stack" else c
        p.append(f'<text x="{left - 8}" y="{y + bar_h - 2}" text-anchor="end" font-weight="bold">{name}</text>')
        for e, v in bars:
            p.append(f'<rect x="{left}" y="{y}" width="{x_of(v) - left:.1f}" height="{bar_h}" fill="{COLORS[e]}"/>')
            label = f"{v:.2f}x {e}" + ("  (off scale)" if v > hi else "")
            p.append(f'<text x="{x_of(v) + 4:.1f}" y="{y + bar_h - 3}">{html.escape(label)}</text>')
            y += bar_h + gap
        y += group_gap
    one = x_of(1.0)
    p.append(f'<line x1="{one:.1f}" y1="{top - 4}" x2="{one:.1f}" y2="{y}" stroke="#000" stroke-dasharray="4,3"/>')
    p.append(f'<text x="{one:.1f}" y="{y + 16}" text-anchor="middle">1.0 = the fastest PyTorch baseline of that case</text>')
    if not groups:
        p.append(f'<text x="{left}" y="{top + 12}">no case has a PyTorch number</text>')
    p.append("</svg>")
    return "\n".join(p) + "\n"


def splice(doc, section):
    """doc with `section` between the markers; markers placed before the first "## " if absent."""
    block = f"{BEGIN}\n{section}{END}\n"
    if BEGIN in doc and END in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        return doc[:a] + block.rstrip("\n") + doc[b:]
    m = re.search(r"^## ", doc, re.M)
    if not m:
        return doc.rstrip("\n") + "\n\n" + block
    return doc[:m.start()] + block + "\n" + doc[m.start():]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    dry = "--dry-run" in sys.argv
    if len(args) != 1 or not os.path.isdir(args[0]):
        sys.exit(__doc__)
    d = args[0]
    table, device, torch_meta, notes = load(d)
    md = markdown(table, device, torch_meta, notes, read_meta(d))
    picture = svg(table)
    with open(os.path.join(d, "benchmarks-suite.svg"), "w") as f:
        f.write(picture)
    if not dry:
        with open(os.path.join(d, "report.md"), "w") as f:
            f.write(md)
        docs = os.path.join(REPO, "docs")
        os.makedirs(docs, exist_ok=True)
        path = os.path.join(docs, "benchmarks.md")
        doc = read(path) or "# Benchmarks\n\n"
        with open(path, "w") as f:
            f.write(splice(doc, md))
        with open(os.path.join(docs, "benchmarks-suite.svg"), "w") as f:
            f.write(picture)
    print(md, end="")


if __name__ == "__main__":
    main()
