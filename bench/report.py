"""Merges Sinter's and PyTorch's benchmark lines (JSON, one object per line) into one table.

    python3 bench/report.py sinter.jsonl torch.jsonl > report.md
"""
import json
import sys

TARGETS = {  # issue targets, in TB/s of minimum bytes
    "add_layernorm": 4.0, "add_rmsnorm": 4.0, "softmax": 3.6,
    "pointwise_chain10": "0.9 x copy",
}


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    return rows


def main():
    rows = load(sys.argv[1:])
    by = {}
    candidates = []
    for r in rows:
        if r["engine"] == "sinter-candidate":
            candidates.append(r)
            continue
        by.setdefault(r["case"], {})[r["engine"]] = r
    copy = by.get("copy", {}).get("torch")
    copy_tbps = copy["tbps"] if copy else None
    print("| case | Sinter ms | Sinter TB/s | eager ms | torch.compile ms | Sinter vs compile | target |")
    print("|---|---|---|---|---|---|---|")
    for case, e in by.items():
        s = e.get("sinter")
        if not s or "ms" not in s or "tbps" not in s:
            continue
        eager, comp = e.get("eager"), e.get("compile")
        target = TARGETS.get(case.split("/")[0], "")
        if target == "0.9 x copy" and copy_tbps:
            target = "%.2f TB/s (90%% of copy %.2f)" % (0.9 * copy_tbps, copy_tbps)
        elif target:
            target = "%.1f TB/s" % target
        ratio = "%.2fx" % (comp["ms"] / s["ms"]) if comp else ""
        print("| %s | %.3f | %.2f | %s | %s | %s | %s |" % (
            case, s["ms"], s["tbps"], "%.3f" % eager["ms"] if eager else "",
            "%.3f (%.2f TB/s)" % (comp["ms"], comp["tbps"]) if comp else "", ratio, target))
    if copy_tbps:
        print("\ncopy bandwidth (torch, bytes read + written): %.2f TB/s" % copy_tbps)
    memcpy = by.get("copy_cudaMemcpy", {}).get("cuda")
    if memcpy:
        print("cudaMemcpy in sinter_bench_memory's process: %.4f ms, %.2f TB/s" % (memcpy["ms"], memcpy["tbps"]))
    if candidates:
        print("\nevery candidate, timed by the tuner (exhaustive):\n")
        print("| case | region | candidate | ms |")
        print("|---|---|---|---|")
        for r in candidates:
            print("| %s | %d | %s | %s |" % (r["case"], r["region"], r["candidate"],
                                           "%.4f" % r["ms"] if r["ms"] >= 0 else r.get("skipped", "")))
    for case in ("new_shape_compilations", "cold_compile_add_rmsnorm", "kernel_cache"):
        r = by.get(case, {}).get("sinter")
        if r:
            print("%s: %s" % (case, {k: v for k, v in r.items() if k not in ("case", "engine")}))


if __name__ == "__main__":
    main()
