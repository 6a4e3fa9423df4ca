#!/usr/bin/env python3
"""Per-cell medians of a KV-cache A/B call (benchmarks/ab/stage.sh, kv_ab): reads
DIR/PREFIX_<side>_<run>_<heads>.json (benchmarks/attention.py --only-kvcache --json) and prints,
per (heads, head_dim, batch, keys, queries, page), each side's median time in us and B / A for
the KV-cache call ("cache") and for the same keys through the batched call ("batched").

    python3 benchmarks/ab/kv_ab_table.py $OUT PREFIX "A's environment"
"""
import glob
import json
import os
import statistics
import sys


def main(out, prefix, label):
    tab = {}
    for f in glob.glob(os.path.join(out, f"{prefix}_*_*_*.json")):
        side = os.path.basename(f)[len(prefix) + 1:].split("_")[0]
        for r in json.load(open(f))["rows"]:
            k = (r["nheads"], r["nheads_k"], r["head_dim"], r["batch"], r["seqlen"], r["seqlen_q"], r["page"])
            tab.setdefault(k, {}).setdefault(side, []).append(
                (r["flashkit_ms"] * 1e3, r["flashkit_dense_ms"] * 1e3, r["variant"]))
    med = lambda v: statistics.median(v) if v else float("nan")
    print(f"H/Hk d B S Sq page | cache A us ({label}) | B us | B/A | batched A us | B us | B/A | variant")
    for k in sorted(tab):
        a, b = tab[k].get("A", []), tab[k].get("B", [])
        var = (b or a)[0][2]
        ca, cb = med([x[0] for x in a]), med([x[0] for x in b])
        da, db = med([x[1] for x in a]), med([x[1] for x in b])
        print(f"{k[0]}/{k[1]} {k[2]} {k[3]} {k[4]} {k[5]} {k[6]} | {ca:.1f} | {cb:.1f} | {cb / ca:.3f} | "
              f"{da:.1f} | {db:.1f} | {db / da:.3f} | {var}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "A")
