#!/usr/bin/env python3
"""Least-squares line through GEMM time against k-tiles (benchmarks/ab/ksweep20_device.sh's
JSON files: gemm.py rows at M x N x K for several K), per library, dtype and file label:
slope = cost per k-tile, intercept = cost per tile outside the k loop (epilogue, ring refill,
launch), both per wave of tiles (us; tiles of 128 x 256 over 132 SMs, fractional). --kmin /
--kmax restrict the fit to a range of K (session 20's numbers: --kmin 1024 --kmax 8192)."""
import argparse
import json
from collections import defaultdict


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


def main(paths, kmin, kmax):
    groups = defaultdict(list)
    for path in paths:
        label = path.rsplit("/", 1)[-1].rsplit("_", 1)[0]  # ks_<cluster>
        for r in json.load(open(path))["rows"]:
            if r.get("kind") != "gemm" or not kmin <= r["K"] <= kmax:
                continue
            tiles = -(-r["M"] // 128) * -(-r["N"] // 256)  # 128 x 256 tiles
            waves = tiles / 132  # fractional (4096^3: 3.88)
            kt = -(-r["K"] // 64)  # 16-bit k-tiles
            for lib, key in (("flashkit", "flashkit_ms"), ("cublas", "torch_ms")):
                groups[(label, r["dtype"], lib)].append((kt, r[key] * 1e3, waves))
    print(f"{'set':<8} {'dtype':<5} {'lib':<9} {'us/k-tile/wave':>15} {'us/tile/wave':>13}  points")
    for (label, dt, lib), pts in sorted(groups.items()):
        w = pts[0][2]
        b, a = fit([p[0] for p in pts], [p[1] / w for p in pts])
        print(f"{label:<8} {dt:<5} {lib:<9} {b:15.4f} {a:13.2f}  {len(pts)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--kmin", type=int, default=0, help="only rows with K >= kmin")
    ap.add_argument("--kmax", type=int, default=1 << 40, help="only rows with K <= kmax")
    a = ap.parse_args()
    main(a.json, a.kmin, a.kmax)
