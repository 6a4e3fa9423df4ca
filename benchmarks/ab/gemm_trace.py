#!/usr/bin/env python3
"""Per-tile phases of the Hopper GEMM's cooperative kernel from a tracing build's stamp file
(cmake -DFLASHKIT_GEMM_TRACE=ON; FLASHKIT_SM90_GEMM_TRACE=<file>; src/cuda/gemm/sm90/trace.h).

For each launch (default: the last one in the file) prints, over all CTAs, the median and the
10th / 90th percentiles (us) of:
  consumer (thread 0 of each consumer warpgroup): wait for the tile's first full stage, the
  k-loop after it (and per k-tile), the epilogue, the time from one tile's epilogue end to the
  next tile's top;
  producer: tile top to its first stage's loads issued (waiting for a free ring slot), and to
  its last loads issued; first loads issued to the consumers' first full stage (the first
  stage's load latency);
and the launch's span and its CTAs' finishing spread."""
import argparse
import statistics
from collections import defaultdict


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def line(name, xs):
    if not xs:
        return f"  {name:<44} (none)"
    return (f"  {name:<44} median {statistics.median(xs):8.3f}  p10 {pct(xs, 0.1):8.3f}  "
            f"p90 {pct(xs, 0.9):8.3f}  n {len(xs)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--launch", type=int, default=-1, help="launch index (default: the last)")
    args = ap.parse_args()
    heads, rows = {}, defaultdict(list)
    for ln in open(args.file):
        if ln.startswith("# launch"):
            f = ln.split()
            heads[int(f[2])] = dict(zip(f[3::2], f[4::2]))
        elif ln.strip():
            v = [int(x) for x in ln.split(",")]
            rows[v[0]].append(v[1:])
    if not heads:
        raise SystemExit("no launches in the file")
    launch = max(heads) if args.launch < 0 else args.launch
    h = heads[launch]
    k_tiles = int(h["k_tiles"])
    print(f"launch {launch}: " + " ".join(f"{k} {v}" for k, v in h.items()))
    stamps = {(cta, role, slot): t for cta, role, slot, *t in rows[launch]}
    t_min = min(t[0] for t in stamps.values())
    us = lambda a, b: (b - a) / 1e3
    wait_first, kloop, per_k, epi, between, slot_wait, issue_span, first_lat = ([] for _ in range(8))
    ends = defaultdict(int)
    for (cta, role, slot), t in stamps.items():
        if role == 0:
            if t[1]:
                slot_wait.append(us(t[0], t[1]))
            if t[2]:
                issue_span.append(us(t[0], t[2]))
            continue
        if t[1] and t[2] and t[3]:
            wait_first.append(us(t[0], t[1]))
            kloop.append(us(t[1], t[2]))
            if k_tiles > 1:
                per_k.append(us(t[1], t[2]) / (k_tiles - 1))
            epi.append(us(t[2], t[3]))
            ends[cta] = max(ends[cta], t[3])
            nxt = stamps.get((cta, role, slot + 1))
            if nxt:
                between.append(us(t[3], nxt[0]))
            p = stamps.get((cta, 0, slot))
            if p and p[1]:
                first_lat.append(us(p[1], t[1]))
    print("consumer warpgroups (us):")
    print(line("wait for the first full stage", wait_first))
    print(line(f"k-loop after it ({k_tiles - 1} k-tiles)", kloop))
    print(line("  per k-tile", per_k))
    print(line("epilogue", epi))
    print(line("epilogue end to the next tile's top", between))
    print("producer (us):")
    print(line("tile top to first stage's loads issued", slot_wait))
    print(line("tile top to last loads issued", issue_span))
    print(line("first loads issued to first stage full", first_lat))
    fin = [us(t_min, e) for e in ends.values()]
    print(f"launch span {max(fin):.2f} us from the first stamp; CTAs finish between "
          f"{min(fin):.2f} and {max(fin):.2f} us")


if __name__ == "__main__":
    main()
