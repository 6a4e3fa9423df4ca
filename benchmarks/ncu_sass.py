#!/usr/bin/env python3
"""Where a kernel's time goes, per SASS instruction, from an Nsight Compute source-page CSV.

Made on the device (one kernel launch; ncu reads the hardware counters there):

    ncu --clock-control none -k regex:gemm -s 2 -c 1 --section WarpStateStats \\
        --section SourceCounters --section InstructionStats --page source --print-source sass \\
        --csv python3 benchmarks/gemm.py --lib .device/lib/libflashkit.so \\
        --profile 8192 8192 1024 --fp8 > $OUT/sass.csv

Read here (no GPU or ncu needed):

    python3 benchmarks/ncu_sass.py sass.csv                 # hottest instructions
    python3 benchmarks/ncu_sass.py sass.csv --regions       # 2 KB code regions: samples, executed
    python3 benchmarks/ncu_sass.py sass.csv --range 0x1f000 0x22800   # one region, line by line

Offsets are from the kernel's first instruction. "samples" are warp-stall samples (all
samples: issued or not), "executed" warp-level instructions executed. Session 17 found the
GEMM epilogue's cost this way (benchmarks/RESULTS.md, "Lean copy-engine epilogue").
"""
import argparse
import csv
import sys
from collections import defaultdict

# Instruction families worth naming in a region summary.
MARKERS = ("GMMA", "HMMA", "SYNCS", "BAR", "STS", "LDS", "LDSM", "UTMA", "UBLKCP", "STG", "LDG",
           "MUFU", "NANOSLEEP", "SHFL")


def load(path):
    """(header index, rows) of the source table in an ncu --csv --page source dump."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    starts = [i for i, r in enumerate(rows) if r and r[0] == "Address"]
    if not starts:
        sys.exit(f"{path}: no 'Address' header (was it made with --page source --csv?)")
    if len(starts) > 1:
        print(f"note: {len(starts)} kernels in the file; reading the first", file=sys.stderr)
    kernel = rows[starts[0] - 1] if starts[0] > 0 else []
    if len(kernel) >= 2 and kernel[0] == "Kernel Name":
        print(f"kernel: {kernel[1]}")
    head = rows[starts[0]]
    end = starts[1] - 1 if len(starts) > 1 else len(rows)
    body = [r for r in rows[starts[0] + 1:end] if len(r) == len(head)]
    return {n: i for i, n in enumerate(head)}, body


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return 0.0


def opcode(source):
    parts = source.split()
    if not parts:
        return ""
    op = parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]
    return op.split(".")[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30, help="hottest instructions to list")
    ap.add_argument("--regions", action="store_true", help="summarise 2 KB code regions")
    ap.add_argument("--region-bytes", type=lambda s: int(s, 0), default=0x800)
    ap.add_argument("--range", nargs=2, metavar=("LO", "HI"), type=lambda s: int(s, 0),
                    help="list the executed instructions with offsets in [LO, HI)")
    args = ap.parse_args()

    ix, body = load(args.csv)
    s_col = ix.get("Warp Stall Sampling (All Samples)")
    e_col = ix.get("Instructions Executed")
    if s_col is None or e_col is None:
        sys.exit("the CSV lacks the stall-sampling or executed-instruction columns "
                 "(profile with --section SourceCounters --section WarpStateStats)")
    stall_cols = [n for n in ix if n.startswith("stall_") and "Not Issued" not in n
                  and n != "stall_selected"]  # selected: issuing, not a stall
    base = int(body[0][0], 16)
    total_s = sum(num(r[s_col]) for r in body) or 1.0
    total_e = sum(num(r[e_col]) for r in body)
    print(f"{len(body)} instructions, {total_s:.0f} stall samples, {total_e / 1e6:.2f} M executed")

    if args.range:
        lo, hi = args.range
        print(f"{'offset':>8} {'executed':>10} {'samples':>6}  instruction")
        for r in body:
            off = int(r[0], 16) - base
            if lo <= off < hi and num(r[e_col]) > 0:
                print(f"{off:#8x} {num(r[e_col]):>10.0f} {num(r[s_col]):>6.0f}  {r[ix['Source']]}")
        return 0

    if args.regions:
        reg = defaultdict(lambda: [0.0, 0.0, set()])
        for r in body:
            k = (int(r[0], 16) - base) // args.region_bytes
            reg[k][0] += num(r[s_col])
            reg[k][1] += num(r[e_col])
            op = opcode(r[ix["Source"]])
            if any(m in op for m in MARKERS):
                reg[k][2].add(op)
        print(f"{'offset':>8} {'samples':>8} {'executed':>9}  families")
        for k in sorted(reg):
            s, e, ops = reg[k]
            if s / total_s >= 0.005 or e >= 0.01 * total_e:
                print(f"{k * args.region_bytes:#8x} {100 * s / total_s:7.1f}% {e / 1e6:8.2f}M  "
                      f"{' '.join(sorted(ops))}")
        return 0

    hot = sorted(body, key=lambda r: -num(r[s_col]))[:args.top]
    print(f"{'offset':>8} {'samples':>8} {'executed':>10}  {'instruction':<60} top stalls")
    for r in hot:
        stalls = sorted(((num(r[ix[n]]), n[6:]) for n in stall_cols), reverse=True)[:2]
        why = ", ".join(f"{n} {v:.0f}" for v, n in stalls if v > 0)
        print(f"{int(r[0], 16) - base:#8x} {100 * num(r[s_col]) / total_s:7.1f}% "
              f"{num(r[e_col]):>10.0f}  {r[ix['Source']][:60]:<60} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
