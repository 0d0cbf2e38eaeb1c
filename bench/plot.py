"""One picture of where Sinter stands: for every benchmark case, the speed of Sinter relative to
the fastest baseline (PyTorch eager / torch.compile / cuBLASLt / PyTorch's cuDNN, measured in the
same run as Sinter), as horizontal bars around 1.0 (right of the line: Sinter faster). Written
as SVG by hand: no plotting library needed on the GPU machine.

bench/report.py draws docs/benchmarks.svg with svg() from the current results. On its own, this
reads the JSON lines that the benchmark programs and the PyTorch scripts print (for instance the
raw files of a bench/device.py run) and compares whatever cases they share:

    python3 bench/plot.py OUT.svg FILE.jsonl [FILE.jsonl ...]
"""
import html
import json
import sys

OURS = ("sinter", "sinter-cudnn")
BASELINES = ("eager", "compile", "torch-cudnn", "torch-flash", "torch-conv-bare", "torch-cuda-graph",
             "torch-eager")


def load(paths):
    """{case: {engine: ms}} from every line that carries a time."""
    by = {}
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                case = r.get("case")
                if not case:
                    continue
                if "sinter_ms" in r and "cublaslt_ms" in r:  # sinter_bench_gemm lines
                    by.setdefault(case, {})["sinter"] = r["sinter_ms"]
                    by.setdefault(case, {})["cublaslt"] = r["cublaslt_ms"]
                elif "ms" in r and r.get("engine") and r["ms"] >= 0:
                    by.setdefault(case, {})[r["engine"]] = r["ms"]
    return by


def rows(by):
    """(case, speedup vs the fastest baseline, that baseline's name), cases with both sides."""
    out = []
    for case, e in by.items():
        ours = [e[k] for k in OURS if k in e]
        base = [(e[k], k) for k in BASELINES + ("cublaslt",) if k in e]
        if not ours or not base:
            continue
        ms, name = min(base)
        out.append((case, ms / min(ours), name))
    return out


def svg(data, title, footnote="1.0 = as fast as the fastest baseline in the input files"):
    bar_h, gap, left, width = 18, 6, 260, 420
    top = 40
    height = top + len(data) * (bar_h + gap) + 40
    hi = max([2.0] + [s for _, s, _ in data])
    x_of = lambda v: left + width * min(v, hi) / hi
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 160}" height="{height}" '
             'font-family="sans-serif" font-size="12">',
             f'<text x="10" y="20" font-size="14">{html.escape(title)}</text>']
    for i, (case, s, base) in enumerate(data):
        y = top + i * (bar_h + gap)
        color = "#2a7" if s >= 1 else "#c44"
        parts.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{html.escape(case)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{x_of(s) - left:.1f}" height="{bar_h}" fill="{color}"/>')
        parts.append(f'<text x="{x_of(s) + 4:.1f}" y="{y + 13}">{s:.2f}x vs {html.escape(base)}</text>')
    one = x_of(1.0)
    parts.append(f'<line x1="{one:.1f}" y1="{top - 6}" x2="{one:.1f}" y2="{height - 30}" stroke="#000" '
                 'stroke-dasharray="4,3"/>')
    parts.append(f'<text x="{one:.1f}" y="{height - 14}" text-anchor="middle">{html.escape(footnote)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    data = rows(load(sys.argv[2:]))
    with open(sys.argv[1], "w") as f:
        f.write(svg(data, "Sinter speed relative to the fastest baseline (time ratio)"))
    for case, s, base in data:
        print(f"{case:32s} {s:6.2f}x vs {base}")


if __name__ == "__main__":
    main()
