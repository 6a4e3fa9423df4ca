#!/usr/bin/env python3
"""Nsight Compute CSVs (--page details or --page raw) side by side: one column per file, one row
per metric.

Made on the device by benchmarks/ab/gemm_grid_device.sh (ncu --csv --page details, one kernel
launch per file: flashkit's and cuBLAS's on the same shape). Read here, no GPU needed:

    python3 benchmarks/ncu_compare.py ncu_fk_4096x4096x4096.csv ncu_cublas_4096x4096x4096.csv
    python3 benchmarks/ncu_compare.py --grep "Duration|Throughput|Stall" *.csv

Rows come in the order the first file lists them; a metric a file lacks shows as "-". The
kernel's name, grid and block come first.
"""
import argparse
import csv
import os
import re
import sys


def load(path):
    """(kernel info dict, {(section, metric, unit): value}, [keys in file order])."""
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if rows and "Metric Name" not in rows[0] and "Kernel Name" in rows[0] and len(rows) >= 3:
        # --page raw: one column per metric, the second row holds the units, then a row per
        # kernel (the first is read).
        head, units, first = rows[0], rows[1], rows[2]
        col = {name: i for i, name in enumerate(head)}
        info = {"kernel": first[col["Kernel Name"]], "grid": first[col.get("Grid Size", 0)],
                "block": first[col.get("Block Size", 0)]}
        values, order = {}, []
        start = col.get("Kernel Name", 0) + 1
        for i in range(start, min(len(head), len(first))):
            key = ("raw", head[i], units[i] if i < len(units) else "")
            values[key] = first[i]
            order.append(key)
        return info, values, order
    if not rows or "Metric Name" not in rows[0]:
        sys.exit(f"{path}: no ncu table (made with --csv --page details or --page raw?)")
    head = rows[0]
    col = {name: i for i, name in enumerate(head)}
    info, values, order = {}, {}, []
    for r in rows[1:]:
        if len(r) <= col["Metric Value"]:
            continue
        if not info:
            info = {"kernel": r[col["Kernel Name"]], "grid": r[col["Grid Size"]],
                    "block": r[col["Block Size"]]}
        key = (r[col["Section Name"]], r[col["Metric Name"]], r[col["Metric Unit"]])
        if key[1] and key not in values:
            values[key] = r[col["Metric Value"]]
            order.append(key)
    return info, values, order


def short(name, width, kernel=False):
    if kernel:
        name = re.sub(r"\(.*", "", name).replace("void ", "")  # drop the argument list
    name = name.replace(" ", "")
    return name if len(name) <= width else name[:width - 3] + "..."


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--grep", default=None, help="only metrics whose name matches this regex")
    ap.add_argument("--width", type=int, default=14, help="column width")
    args = ap.parse_args()
    loaded = [load(p) for p in args.csv]
    w = args.width
    labels = [os.path.splitext(os.path.basename(p))[0].replace("ncu_", "") for p in args.csv]
    print(f"{'':52s}" + "".join(f"{l[:w]:>{w + 1}s}" for l in labels))
    for field in ("kernel", "grid", "block"):
        print(f"{field:52s}" + "".join(f"{short(i.get(field, '-'), w, field == 'kernel'):>{w + 1}s}"
                                        for i, _, _ in loaded))
    keys = []
    for _, _, order in loaded:
        keys += [k for k in order if k not in keys]
    for key in keys:
        sec, name, unit = key
        if args.grep and not re.search(args.grep, name):
            continue
        label = f"{name} [{unit}]" if unit else name
        print(f"{label[:52]:52s}" + "".join(f"{v.get(key, '-')[:w]:>{w + 1}s}" for _, v, _ in loaded))
    return 0


if __name__ == "__main__":
    sys.exit(main())
