#!/usr/bin/env python3
"""Session 52: a host simulation of the Hopper attention kernel's causal tile orders
(tile_scheduler.cuh) on the issue-6 grid: every tile covered once, the busiest CTA's key tiles
over the mean under the static round robin (CTA c takes positions c, c + grid, ...), and the
(batch, head) pairs one wave touches (their K / V must fit in L2 to be read once). Orders: the
longest-first one (head sections not modelled) and the paired one (AttnArgs::pairs), with the
pair index rotated by the head (as built) and plain (rot 0). Work of query tile m under a
causal mask: ceil(min((m + 1) block_m, seqlen) / block_n) key tiles. The tile shapes follow
attention_sm90.cpp for the grid's causal cells only roughly (head_dim 64: 192-row tiles from
2048 keys; key tiles 128 wide at head_dim 64 / 128 and 80 at 256, where the kernel takes 176 at
head_dim 128 from 8k keys and 64 at head_dim 256 up to 1k keys), so the balance figures there are
approximate.

    python3 benchmarks/ab/s52_pairs_sim.py
"""
import math

GRID = 132  # H100 / H200 SMs


def longest_first(bh_count, n):
    """Tile (bh, m) at each position: the longest query tile of every head first."""
    return [(t % bh_count, n - 1 - t // bh_count) for t in range(bh_count * n)]


def paired(bh_count, n, rot):
    """tile_scheduler.cuh's paired numbering; None marks a hole (an empty tile)."""
    per_bh = (n + 1) // 2
    num_pairs = bh_count * per_bh
    out = []
    for t in range(2 * math.ceil(num_pairs / GRID) * GRID):
        wave, c = divmod(t, GRID)
        pair = (wave >> 1) * GRID + c
        if pair >= num_pairs:
            out.append(None)
            continue
        bh = pair // per_bh
        i = (pair + rot * bh) % per_bh
        m = i if wave & 1 else n - 1 - i
        out.append(None if (wave & 1 and i == n - 1 - i) else (bh, m))
    return out


def measure(order, bh_count, n, seqlen, block_m, block_n):
    seen, work = set(), [0] * GRID
    for t, x in enumerate(order):
        if x is None:
            continue
        assert x not in seen
        seen.add(x)
        work[t % GRID] += math.ceil(min((x[1] + 1) * block_m, seqlen) / block_n)
    assert len(seen) == bh_count * n
    waves = [{x[0] for x in order[w * GRID:(w + 1) * GRID] if x}
             for w in range(math.ceil(len(order) / GRID))]
    return max(work) / (sum(work) / GRID), max(len(s) for s in waves)


def main():
    print("cell: busiest CTA / mean (heads a wave touches at most)")
    for d, heads in ((64, 32), (128, 16), (256, 8)):
        for s in (512, 1024, 2048, 4096, 8192, 16384):
            bh = (16384 // s) * heads
            block_m = 192 if d == 64 and s >= 2048 else 128
            block_n = 80 if d == 256 else 128
            n = math.ceil(s / block_m)
            if bh * ((n + 1) // 2) < GRID:
                print(f"hd{d} S{s}: fewer pairs than a wave")
                continue
            row = [measure(o, bh, n, s, block_m, block_n) for o in
                   (longest_first(bh, n), paired(bh, n, 1), paired(bh, n, 0))]
            print(f"hd{d} S{s} ({block_m}-row tiles, {n}): longest first {row[0][0]:.3f} ({row[0][1]})"
                  f" | pairs {row[1][0]:.3f} ({row[1][1]}) | pairs, rot 0 {row[2][0]:.3f} ({row[2][1]})")


if __name__ == "__main__":
    main()
