#!/usr/bin/env python3
"""Per-cell medians of an attention A/B call: reads DIR/g_<side>_<n>.json (benchmarks/attention.py
--json, one file per process; the sides as benchmarks/ab/stage.sh's attn_ab names them) and prints,
per (head_dim, seqlen, causal) (and label and batch for the extra rows), each side's median
flashkit TFLOP/s with its runs, the ratio of every other side to A, and the ratio of each side
to torch's FlashAttention-2 and cuDNN backends (their medians over all processes of the call).

    python3 benchmarks/ab/attn_ab_table.py $OUT
"""
import glob
import json
import os
import statistics
import sys


def main(out):
    tab, sides = {}, []
    for f in sorted(glob.glob(os.path.join(out, "g_*_*.json"))):
        side = os.path.basename(f).split("_")[1]
        if side not in sides:
            sides.append(side)
        for r in json.load(open(f))["rows"]:
            k = (r["head_dim"], r["seqlen"], int(r["causal"]))
            if r.get("label"):  # the extra rows (gqa, varlen, varlen_max, decode) apart
                k = k + (r["label"], r.get("batch", 0))
            tab.setdefault(k, {}).setdefault(side, []).append(r)
    if not tab:
        print(f"no g_*_*.json in {out}")
        return
    first = list(sides)
    sides = sorted(sides, key=lambda s: (s != "A", first.index(s)))
    head = ["d seqlen causal"] + [f"{s} fk [runs]" for s in sides] + [f"{s}/A" for s in sides[1:]]
    head += ["FA2", "cuDNN"] + [f"{s}/FA2" for s in sides] + [f"{s}/cuDNN" for s in sides]
    print(" | ".join(head))
    for k in sorted(tab):
        cell = tab[k]
        med = {s: statistics.median(r["flashkit_tflops"] for r in cell[s]) for s in sides if s in cell}
        anchor = {}
        for name in ("flash_tflops", "cudnn_tflops"):
            vals = [r[name] for s in cell for r in cell[s] if r.get(name)]
            anchor[name] = statistics.median(vals) if vals else float("nan")
        row = [str(k)]
        runs = {s: " ".join("%.0f" % r["flashkit_tflops"] for r in cell[s]) for s in med}
        row += [f"{med[s]:.1f} [{runs[s]}]" if s in med else "-" for s in sides]
        row += [f"{med[s] / med['A']:.3f}" if s in med and "A" in med else "-" for s in sides[1:]]
        row += [f"{anchor['flash_tflops']:.1f}", f"{anchor['cudnn_tflops']:.1f}"]
        row += [f"{med[s] / anchor['flash_tflops']:.3f}" if s in med else "-" for s in sides]
        row += [f"{med[s] / anchor['cudnn_tflops']:.3f}" if s in med else "-" for s in sides]
        print(" | ".join(row))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "/tmp/fk-out"))
