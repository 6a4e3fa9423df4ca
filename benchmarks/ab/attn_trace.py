#!/usr/bin/env python3
"""Reads the Hopper attention kernel's per-tile stamps (a tracing build: cmake -DFLASHKIT_ATTENTION_TRACE=ON,
then FLASHKIT_SM90_ATTENTION_TRACE=<file>; src/cuda/attention/sm90/trace.h) and prints, per
launch (the last one of each shape by default), the medians over its tiles, in cycles and us:
  consumer warpgroups: tile top to its WorkTile (TileScheduler::tile), WorkTile to Q in shared
  memory, Q to the first K tile, the key loop per key tile, the epilogue (finalize, output and
  LSE stores), and the epilogue's end to the next tile's top;
  producer: top to WorkTile, the wait for the previous tile's Q release, the tile's loads issued.
Usage: attn_trace.py FILE [--launch N] [--all]  (FILE may be gzipped)."""
import argparse
import gzip
import statistics
from collections import defaultdict


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def line(name, xs, rate):
    if not xs:
        return f"  {name:<44} (none)"
    m = statistics.median(xs)
    return (f"  {name:<44} median {m / rate / 1e3:8.3f} us  p10 {pct(xs, 0.1) / rate / 1e3:7.3f}  "
            f"p90 {pct(xs, 0.9) / rate / 1e3:7.3f} | median {m:8.0f} cycles  n {len(xs)}")


def report(launch, head, rows):
    print(f"launch {launch}: {head}")
    st = {(c, r, s): w for c, r, s, *w in rows}
    rates = []
    for (c, r, s), w in st.items():
        end = w[5] if r else w[3]
        if w[0] and end and w[6] and w[7] and w[7] > w[6]:
            rates.append((end - w[0]) / (w[7] - w[6]))
    rate = statistics.median(rates) if rates else 1.7
    print(f"SM clock from the stamps: {rate:.3f} GHz (median of {len(rates)} tiles)")
    rate_ns = rate  # cycles per ns
    top, q, k1, per_key, loop, epi, turn = ([] for _ in range(7))
    ptop, pq, pload = [], [], []
    for (c, r, s), w in st.items():
        if r == 0:
            if w[1]:
                ptop.append(w[1] - w[0])
            if w[2] and w[1]:
                pq.append(w[2] - w[1])
            if w[3] and w[2]:
                pload.append(w[3] - w[2])
            continue
        if not (w[1] and w[2] and w[4] and w[5]):
            continue
        top.append(w[1] - w[0])
        q.append(w[2] - w[1])
        if w[3]:
            k1.append(w[3] - w[2])
            loop.append(w[4] - w[3])
            if w[8]:
                per_key.append((w[4] - w[3]) / w[8])
        epi.append(w[5] - w[4])
        nxt = st.get((c, r, s + 1))
        if nxt and nxt[0]:
            turn.append(nxt[0] - w[5])
    print("consumer warpgroups:")
    for name, xs in (("top to WorkTile", top), ("WorkTile to Q in shared memory", q),
                     ("Q to the first K tile", k1), ("key loop (first K to last P V)", loop),
                     ("key loop per key tile", per_key), ("epilogue (finalize, O and LSE)", epi),
                     ("epilogue end to the next tile's top", turn)):
        print(line(name, xs, rate_ns))
    print("producer:")
    for name, xs in (("top to WorkTile", ptop), ("wait for the previous Q's release", pq),
                     ("the tile's loads issued", pload)):
        print(line(name, xs, rate_ns))
    ends = [w[7] for w in st.values() if w[7]]
    starts = [w[6] for w in st.values() if w[6]]
    if ends and starts:
        print(f"launch span {(max(ends) - min(starts)) / 1e3:.2f} us (global timer)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--launch", type=int, default=None)
    ap.add_argument("--all", action="store_true", help="every launch, not the last of each shape")
    args = ap.parse_args()
    opener = gzip.open if args.file.endswith(".gz") else open
    heads, rows = {}, defaultdict(list)
    with opener(args.file, "rt") as f:
        for ln in f:
            if ln.startswith("# launch"):
                parts = ln.split()
                heads[int(parts[2])] = " ".join(parts[3:])
                continue
            v = [int(x) for x in ln.strip().split(",")]
            rows[v[0]].append(v[1:])
    if args.launch is not None:
        pick = [args.launch]
    elif args.all:
        pick = sorted(heads)
    else:
        last = {}
        for n in sorted(heads):
            last[heads[n].split(" grid")[0]] = n
        pick = sorted(last.values())
    for n in pick:
        report(n, heads[n], rows[n])
        print()


if __name__ == "__main__":
    main()
