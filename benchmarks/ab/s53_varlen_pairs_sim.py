#!/usr/bin/env python3
"""Session 53: a host simulation of the Hopper attention kernel's static round robin on the
issue's varlen row (benchmarks/attention.py: 7 sequences of 3000 / 1500 / 4096 / 512 / 2048 /
777 / 4453 tokens, 16 heads, head_dim 128, causal), for the next scheduling step. Today varlen
calls number ceil(max seqlen / 128) = 35 positions per (sequence, head), longest first in head
sections (10 heads of ~2.3 MB K / V each on a 50 MB L2; attention_sm90.cpp), so 1,840 of 3,920
positions are empty tiles; pairs (tile_scheduler.cuh) do not apply to varlen. Compared: that
order, longest first without sections, the batched pair numbering padded to the longest
sequence (holes past a sequence's own pairs; no host list), and a compact sequence-aware pair list (query tile i with
n_s - 1 - i of each (sequence, head), n_s the sequence's own tile count; no empty pairs), which
the host could build at dispatch since it reads cu_seqlens back for its check.

Work of query tile m of a sequence of L tokens: ceil(min((m + 1) 128, L) / 128) key tiles; an
empty position costs EMPTY key tiles (a scheduler step; 0.1 assumed). Prints the busiest CTA over
the ideal (total work / 132) and over the mean.

    python3 benchmarks/ab/s53_varlen_pairs_sim.py
"""
import math

GRID, BM, BN, EMPTY = 132, 128, 128, 0.1
LENS, HEADS, SECTION = [3000, 1500, 4096, 512, 2048, 777, 4453], 16, 10


def work(length, m):
    return math.ceil(min((m + 1) * BM, length) / BN) if m * BM < length else 0


def main():
    nmax = math.ceil(max(LENS) / BM)
    bhs = [(s, h) for s in range(len(LENS)) for h in range(HEADS)]

    def longest_first(sec):
        order = []
        for f in range(0, len(bhs), sec):
            group = bhs[f:f + sec]
            order += [(s, h, nmax - 1 - q) for q in range(nmax) for (s, h) in group]
        return order

    def pairs():
        plist = []
        for (s, h) in bhs:
            n = math.ceil(LENS[s] / BM)
            per = (n + 1) // 2
            plist += [(s, h, (j + s * HEADS + h) % per, n) for j in range(per)]
        order = [None] * (2 * math.ceil(len(plist) / GRID) * GRID)
        for p, (s, h, i, n) in enumerate(plist):
            wave, c = divmod(p, GRID)
            order[2 * wave * GRID + c] = (s, h, n - 1 - i)
            order[(2 * wave + 1) * GRID + c] = None if i == n - 1 - i else (s, h, i)
        return order

    def pairs_padded():
        # The batched numbering with ceil(nmax / 2) pairs a (sequence, head) and each sequence's
        # own tile count (no host list): pairs past a sequence's own become holes.
        per = (nmax + 1) // 2
        num = len(bhs) * per
        order = []
        for t in range(2 * math.ceil(num / GRID) * GRID):
            wave, c = divmod(t, GRID)
            pair = (wave >> 1) * GRID + c
            bh = pair // per
            if pair >= num or (pair + bh) % per >= (math.ceil(LENS[bhs[bh][0]] / BM) + 1) // 2:
                order.append(None)
                continue
            s, h = bhs[bh]
            n, i = math.ceil(LENS[s] / BM), (pair + bh) % per
            order.append(None if wave & 1 and i == n - 1 - i else (s, h, i if wave & 1 else n - 1 - i))
        return order

    ideal = sum(work(LENS[s], m) for (s, h) in bhs for m in range(nmax)) / GRID
    for name, order in (("longest first, sections of 10 (today)", longest_first(SECTION)),
                        ("longest first, no sections", longest_first(len(bhs))),
                        ("pairs padded to the longest sequence", pairs_padded()),
                        ("sequence-aware pairs", pairs())):
        per_cta = [0.0] * GRID
        empty = 0
        for t, x in enumerate(order):
            w = work(LENS[x[0]], x[2]) if x else 0
            empty += w == 0
            per_cta[t % GRID] += w if w else EMPTY
        mean = sum(per_cta) / GRID
        print(f"{name:40s} positions {len(order):5d} (empty {empty:4d}): busiest / ideal "
              f"{max(per_cta) / ideal:.3f}, / mean {max(per_cta) / mean:.3f}")


if __name__ == "__main__":
    main()
