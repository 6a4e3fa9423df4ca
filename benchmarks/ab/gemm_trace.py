#!/usr/bin/env python3
"""Per-tile phases of the Hopper GEMM's cooperative kernel from a tracing build's stamp file
(cmake -DFLASHKIT_GEMM_TRACE=ON; FLASHKIT_SM90_GEMM_TRACE=<file>; src/cuda/gemm/sm90/trace.h).

For one launch (default: the last that has stamps) prints, over all CTAs and tiles, the median,
mean and 10th / 90th percentiles, in us (SM cycles converted at the rate the stamps themselves
give: cycles per global-timer ns over each CTA's span) and in cycles, of:
  consumer (thread 0 of each consumer warpgroup): the wait for the tile's first full stage; the
  k-loop's first kStages k-tiles (their stages loaded while the previous tile ran) and the rest
  (loads that waited for a slot this tile released), per k-tile; the epilogue; the time from one
  tile's epilogue end to the next tile's top;
  producer: tile top to its first stage's loads issued (the wait for a free slot) and to its
  last loads issued;
  first stage: how often its loads were issued before the consumers reached the tile (then no
  latency is exposed), and for the others the time from issue to full;
  k-loop counters (words 8-10): the shares of the k-loop spent waiting for full stages and for
  the previous wgmma batch, and the share of k-steps whose batch wait found the tensor cores
  still busy with the previous batch (near 1: the tensor cores never wait for the consumer, so
  the consumers' full-stage waits are idle time; well below 1: a batch had retired before the
  next stage arrived, i.e. the tensor cores went without data)."""
import argparse
import statistics
import sys
from collections import defaultdict


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def line(name, xs, rate):
    if not xs:
        return f"  {name:<46} (none)"
    us = [x / rate / 1e3 for x in xs]
    return (f"  {name:<46} median {statistics.median(us):8.3f} mean {statistics.mean(us):8.3f} "
            f"p10 {pct(us, 0.1):8.3f} p90 {pct(us, 0.9):8.3f} us | median "
            f"{statistics.median(xs):9.0f} cycles  n {len(xs)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--launch", type=int, default=-1, help="launch index (default: the last with stamps)")
    args = ap.parse_args()
    heads, rows = {}, defaultdict(list)
    for ln in open(args.file):
        if ln.startswith("# launch"):
            f = ln.split()
            heads[int(f[2])] = dict(zip(f[3::2], f[4::2]))
        elif ln.strip():
            v = [int(x) for x in ln.split(",")]
            rows[v[0]].append(v[1:])
    with_rows = [i for i in heads if rows.get(i)]
    if not with_rows:
        sys.exit(f"{args.file}: no launch with stamps ({len(heads)} launch headers; is this a "
                 "tracing build, and did the cooperative schedule run?)")
    launch = max(with_rows) if args.launch < 0 else args.launch
    h = heads[launch]
    stages = int(h["stages"])
    print(f"launch {launch} of {sorted(heads)}: " + " ".join(f"{k} {v}" for k, v in h.items()))
    st = {(cta, role, slot): w for cta, role, slot, *w in rows[launch]}
    # Cycles per ns, per (CTA, role): its first top to its last end, in both clocks.
    rates = []
    spans = defaultdict(list)
    for (cta, role, slot), w in st.items():
        end_c = w[3] if role else w[2]
        if w[0] and end_c and w[5] and w[6]:
            spans[(cta, role)].append((w[0], end_c, w[5], w[6]))
    for sp in spans.values():
        c0, g0 = min(s[0] for s in sp), min(s[2] for s in sp)
        c1, g1 = max(s[1] for s in sp), max(s[3] for s in sp)
        if g1 - g0 > 20000:
            rates.append((c1 - c0) / (g1 - g0))
    rate = statistics.median(rates) if rates else 1.98
    print(f"SM clock from the stamps: {rate:.3f} GHz (median of {len(rates)} CTA-role spans)"
          + ("" if rates else " (no span > 20 us: assumed)"))
    wait_first, pre_k, steady_k, epi, between = ([] for _ in range(5))
    full_share, mma_share, busy_share = [], [], []
    slot_wait, issue_span, lat, lead = ([] for _ in range(4))
    ends = defaultdict(int)  # (CTA, consumer role) -> its last epilogue end (global timer)
    for (cta, role, slot), w in st.items():
        if role == 0:
            if w[1]:
                slot_wait.append(w[1] - w[0])
            if w[2]:
                issue_span.append(w[2] - w[0])
            continue
        kc = w[7]
        if not (w[1] and w[2] and w[3]):
            continue  # no MMAs (rows past M, K = 0) or a split-K unit that stored no tile
        wait_first.append(w[1] - w[0])
        if w[4] and kc > stages:
            pre_k.append((w[4] - w[1]) / stages)
            steady_k.append((w[2] - w[4]) / (kc - stages))
        epi.append(w[3] - w[2])
        if len(w) > 10 and kc > 1 and w[2] > w[1]:
            full_share.append(w[8] / (w[2] - w[1]))
            mma_share.append(w[9] / (w[2] - w[1]))
            busy_share.append(w[10] / (kc - 1))
        ends[(cta, role)] = max(ends[(cta, role)], w[6])
        nxt = st.get((cta, role, slot + 1))
        if nxt:
            between.append(nxt[0] - w[3])
        p = st.get((cta, 0, slot))
        if p and p[1]:
            if p[1] <= w[0]:
                lead.append(w[0] - p[1])
            else:
                lat.append(w[1] - p[1])
    print("consumer warpgroups:")
    print(line("wait for the first full stage", wait_first, rate))
    print(line(f"first {stages} k-tiles, per k-tile", pre_k, rate))
    print(line("the other k-tiles, per k-tile", steady_k, rate))
    print(line("epilogue", epi, rate))
    print(line("epilogue end to the next tile's top", between, rate))
    if full_share:
        print("  k-loop shares (per tile; not times):")
        for name, xs in (("waiting for full stages", full_share),
                         ("waiting for the previous wgmma batch", mma_share),
                         ("k-steps whose batch wait found the tensor cores busy", busy_share)):
            print(f"    {name:<54} median {statistics.median(xs):6.3f}  p10 {pct(xs, 0.1):6.3f}  "
                  f"p90 {pct(xs, 0.9):6.3f}")
    print("producer:")
    print(line("tile top to first stage's loads issued", slot_wait, rate))
    print(line("tile top to last loads issued", issue_span, rate))
    print("first stage of a tile:")
    print(line("issued before the consumer's top, by", lead, rate))
    print(line("issued after it: issue to full", lat, rate))
    if ends:
        g0 = min(w[5] for w in st.values() if w[5])
        fin = [(e - g0) / 1e3 for e in ends.values()]
        print(f"launch span {max(fin):.2f} us (global timer, first stamp to last epilogue end); "
              f"consumer warpgroups finish between {min(fin):.2f} and {max(fin):.2f} us")


if __name__ == "__main__":
    main()
