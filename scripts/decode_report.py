#!/usr/bin/env python3
"""Turns bench_decode's JSON (Google Benchmark, --benchmark_format=json) into a markdown report and a plot.

usage: decode_report.py BENCH.json OUT_PREFIX
  writes OUT_PREFIX.md (tables: p50/p99 per strategy, ratios against the goals of issue 10) and OUT_PREFIX.png
  (latency vs batch, one line per strategy; gnuplot). Example:
    build-release/bench/decode/bench_decode --benchmark_format=json > /tmp/decode.json
    python3 scripts/decode_report.py /tmp/decode.json docs/decode-bench"""
import json
import os
import subprocess
import sys
import tempfile

META = [
    ("Meta_PinnedHost_InPlace", "pinned_host, in place (zero-copy)"),
    ("Meta_Upload_Batched", "batched upload to device"),
    ("Meta_Floor_Memcpy", "memcpy floor"),
    ("Meta_Baseline_CondvarQueue", "mutex+condvar queue"),
]
STEP = [
    ("Step_NoMetadataUpdate", "step, metadata unchanged"),
    ("Step_PinnedHost_InPlace", "step, pinned_host in place"),
    ("Step_SyncCopy", "step, sync copy before execute"),
]


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            continue
        # "BM_Meta_Floor_Memcpy/batch:8/max_blocks:16/iterations:1"
        parts = b["name"].split("/")
        name = parts[0][3:] if parts[0].startswith("BM_") else parts[0]
        args = dict(p.split(":", 1) for p in parts[1:] if ":" in p)
        if "batch" not in args:
            continue
        rows[(name, int(args["batch"]), int(args["max_blocks"]))] = b
    return data.get("context", {}), rows


def us(ns):
    return f"{ns / 1000:.2f}" if ns is not None else "-"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def get(rows, name, batch, mb, counter):
    b = rows.get((name, batch, mb))
    return b.get(counter) if b else None


def typical(rows, name, batch, mb):
    """The p50, or the batch mean when the p50 is within a few clock ticks (under 200 ns), as the bench does."""
    p50, mean = get(rows, name, batch, mb, "p50_ns"), get(rows, name, batch, mb, "batch_mean_ns")
    return mean if p50 is not None and p50 < 200 and mean is not None else p50


def markdown(context, rows, png_name):
    batches = sorted({k[1] for k in rows})
    blocks = sorted({k[2] for k in rows if k[0].startswith("Meta_")})
    out = ["# Decode metadata: pinned_host in place vs copies (bench/decode)", ""]
    out.append(f"Machine: {context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz, "
               f"{context.get('date', '')}. Times in µs per decode step (p50 / p99), one run.")
    out.append("")
    out.append("## Metadata handling per step")
    out.append("Host update of the changed rows + what makes the device see them. Bytes: block table + sequence "
               "lengths + positions + slot mapping. The clock ticks in 10 ns, so the floor and the in-place update "
               "are also timed over 200 consecutive steps (mean); ratios use p50s, or that mean where a p50 is under "
               "200 ns.")
    out.append("")
    head = "| batch | max_blocks | bytes | " + " | ".join(label for _, label in META)
    head += " | memcpy floor, mean of 200 | in place, mean of 200 | in place / memcpy | upload / memcpy |"
    head += " queue / in place |"
    out.append(head)
    out.append("|" + "---|" * (3 + len(META) + 5))
    for mb in blocks:
        for batch in batches:
            cells = []
            for name, _ in META:
                p50, p99 = get(rows, name, batch, mb, "p50_ns"), get(rows, name, batch, mb, "p99_ns")
                cells.append(f"{us(p50)} / {us(p99)}")
            floor = typical(rows, "Meta_Floor_Memcpy", batch, mb)
            inplace = typical(rows, "Meta_PinnedHost_InPlace", batch, mb)
            upload = get(rows, "Meta_Upload_Batched", batch, mb, "p50_ns")
            queue = get(rows, "Meta_Baseline_CondvarQueue", batch, mb, "p50_ns")
            nbytes = get(rows, "Meta_Floor_Memcpy", batch, mb, "meta_bytes")
            out.append(f"| {batch} | {mb} | {int(nbytes) if nbytes else '-'} | " + " | ".join(cells) +
                       f" | {us(get(rows, 'Meta_Floor_Memcpy', batch, mb, 'batch_mean_ns'))} |"
                       f" {us(get(rows, 'Meta_PinnedHost_InPlace', batch, mb, 'batch_mean_ns'))} |"
                       f" {ratio(inplace, floor)} | {ratio(upload, floor)} |"
                       f" {ratio(queue, inplace)} |")
    out.append("")
    step_blocks = sorted({k[2] for k in rows if k[0].startswith("Step_")})
    if step_blocks:
        out.append("## Decode step end to end")
        out.append("The step run by the software NeuronCore; metadata share = the metadata part's p50 / the step's "
                   "p50.")
        out.append("")
        out.append("| batch | max_blocks | " + " | ".join(label for _, label in STEP) +
                   " | metadata share, in place | metadata share, sync copy |")
        out.append("|" + "---|" * (2 + len(STEP) + 2))
        for mb in step_blocks:
            for batch in batches:
                cells = [f"{us(get(rows, n, batch, mb, 'p50_ns'))} / {us(get(rows, n, batch, mb, 'p99_ns'))}"
                         for n, _ in STEP]
                shares = []
                for n in ("Step_PinnedHost_InPlace", "Step_SyncCopy"):
                    s = get(rows, n, batch, mb, "meta_share")
                    shares.append(f"{100 * s:.4f}%" if s is not None else "-")
                out.append(f"| {batch} | {mb} | " + " | ".join(cells) + " | " + " | ".join(shares) + " |")
        out.append("")
    out.append(f"![metadata handling per step vs batch]({png_name})")
    out.append("")
    return "\n".join(out)


def plot(rows, png_path):
    batches = sorted({k[1] for k in rows})
    blocks = sorted({k[2] for k in rows if k[0].startswith("Meta_")})
    with tempfile.TemporaryDirectory() as tmp:
        series = []
        for mb in blocks:
            for name, label in META:

                path = os.path.join(tmp, f"{name}_{mb}.dat")
                with open(path, "w", encoding="utf-8") as f:
                    for batch in batches:
                        value = typical(rows, name, batch, mb)
                        if value is not None:
                            f.write(f"{batch} {max(value, 1.0) / 1000}\n")
                series.append((path, f"{label}, max_blocks {mb}", "1" if mb == blocks[0] else "2", name))
        colors = {name: c for (name, _), c in zip(META, ["#1b9e77", "#d95f02", "#7570b3", "#e7298a"])}
        cmds = [
            "set terminal pngcairo noenhanced size 1000,700 font 'DejaVu Sans,11'",
            f"set output '{png_path}'",
            "set title 'Decode metadata handling per step (p50; mean of 200 steps where the p50 is under 200 ns)'",
            "set xlabel 'batch'",
            "set ylabel 'µs per step (log)'",
            "set logscale xy",
            "set xtics (" + ", ".join(str(b) for b in batches) + ")",
            "set key below maxcols 2",
            f"set xrange [0.8:{batches[-1] * 1.25}]",
            "set grid",
        ]
        plots = []
        for path, title, dash, name in series:
            plots.append(f"'{path}' using 1:2 with linespoints lw 2 dt {dash} lc rgb '{colors[name]}' "
                         f"title '{title}'")
        cmds.append("plot " + ", \\\n  ".join(plots))
        subprocess.run(["gnuplot"], input="\n".join(cmds), text=True, check=True)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    context, rows = load(argv[1])
    if not rows:
        print(f"{argv[1]}: no bench_decode results", file=sys.stderr)
        return 1
    prefix = argv[2]
    png = prefix + ".png"
    plot(rows, png)
    with open(prefix + ".md", "w", encoding="utf-8") as f:
        f.write(markdown(context, rows, os.path.basename(png)))
    print(f"wrote {prefix}.md and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
