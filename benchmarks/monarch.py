#!/usr/bin/env python3
"""Monarch benchmark (issue 8): flashkit's fk_monarch against the two-bmm PyTorch reference
(m2's blockdiag_butterfly_multiply computed with two torch.bmm calls and the reshapes between
them) and a dense torch.matmul of the same dimension, in one process, on the same random inputs,
with CUDA events (fkbench.time_ms: warm-up, median, input sets rotated past L2; calls under ~1 ms
timed in batches of up to 10 so that host launch latency does not count). Also the sm80-class
fused kernel forced (kernel family SM80: what Hopper ran before cuda.sm90.monarch) and the generic
kernels.

Square Monarch (Dao et al. 2022): n = nblocks^2, blocks sqrt(n) x sqrt(n); n in {1024, 4096,
16384} at 16384 and 65536 tokens. Bytes counted: read x + write out + read both weight tensors
once. The copy anchor is a device-to-device copy of x into a tensor like out (read + write) in
the same process. Also fk_blockdiag_linear against one torch.bmm.

  python3 benchmarks/monarch.py --lib build/libflashkit.so [--dtype bf16] [--tokens 16384 65536]

Prints a table (last) and writes JSON to $OUT/monarch_bench.json (or --json).
"""
import argparse
import ctypes
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fkbench import Flashkit, rotation_count, write_json  # noqa: E402
from fkbench import time_ms as _time_ms  # noqa: E402

def time_ms(fns, warmup, reps):
    """fkbench.time_ms over batches of calls (cycling through the input sets), per call: calls
    under ~1 ms (the fused kernels run ~0.05-0.1 ms, about the host's ctypes launch latency) are
    timed in batches of up to 10 so that the GPU, not the host, sets the pace."""
    if callable(fns):
        fns = [fns]
    one = _time_ms(fns, 1, 3)
    inner = max(1, min(10, int(1.0 / max(one, 1e-3))))
    if inner == 1:
        return _time_ms(fns, warmup, reps)
    batches = [lambda i=i: [fns[(i + k) % len(fns)]() for k in range(inner)]
               for i in range(len(fns))]
    return _time_ms(batches, max(1, warmup), reps) / inner

COPY_TBPS = 4.2  # issue 8's measured copy bandwidth of the H200 (read + write)


def two_bmm(x, w1, w2):
    """m2's blockdiag_butterfly_multiply as two batched matmuls (PyTorch reference)."""
    B, n = x.shape
    k, q, p = w1.shape
    l, s, r = w2.shape
    out1 = torch.bmm(x.view(B, k, p).transpose(0, 1), w1.transpose(-1, -2))  # (k, B, q)
    out1 = out1.transpose(0, 1).reshape(B, r, l).transpose(-1, -2)          # (B, l, r)
    out2 = torch.bmm(out1.transpose(0, 1), w2.transpose(-1, -2))            # (l, B, s)
    return out2.permute(1, 2, 0).reshape(B, s * l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("FLASHKIT_LIB", "build"))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    ap.add_argument("--tokens", type=int, nargs="+", default=[16384, 65536])
    ap.add_argument("--n", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--family", default="auto")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--no-dense", action="store_true")
    ap.add_argument("--quick", action="store_true",
                    help="time only fk_monarch and its anchors (no generic, sm80 or blockdiag runs)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    fk = Flashkit(args.lib, args.family)
    gen = Flashkit(args.lib, "generic")  # the generic CUDA kernels, for comparison
    s80 = Flashkit(args.lib, "sm80")  # the sm80-class fused kernel (what Hopper ran before)
    L = fk.lib
    params = (ctypes.c_uint32 * 2)()
    fk.check(L.fk_monarch_params_init(ctypes.byref(params)), "fk_monarch_params_init")
    torch.manual_seed(0)
    dev = "cuda"
    rows = []

    def fk_variant(fn_name, *tensors):
        name = ctypes.c_char_p()
        fn = getattr(L, fn_name + "_select_kernel")
        fk.check(fn(fk.ctx, ctypes.byref(params), *[fk.dl(t) for t in tensors], ctypes.byref(name)),
                 fn_name + "_select_kernel")
        return name.value.decode()

    for T in args.tokens:
        for n in args.n:
            nb = int(round(math.sqrt(n)))
            b = n // nb
            elem = 2
            set_bytes = 2 * T * n * elem
            nsets = rotation_count(set_bytes, limit=4)
            sets = []
            for _ in range(nsets):
                x = torch.randn(T, n, device=dev, dtype=dt)
                out = torch.empty(T, n, device=dev, dtype=dt)
                sets.append((x, out))
            w1 = (torch.randn(nb, b, b, device=dev) / math.sqrt(b)).to(dt)
            w2 = (torch.randn(nb, b, b, device=dev) / math.sqrt(b)).to(dt)
            launch = fk.launch()

            def fk_call(x, out):
                fk.check(L.fk_monarch(fk.ctx, ctypes.byref(launch), ctypes.byref(params),
                                      fk.dl(x), fk.dl(w1), fk.dl(w2), None, fk.dl(out)),
                         "fk_monarch")
            # DLTensor views made once per set (fk.dl allocates ctypes objects).
            views = [(fk.dl(x), fk.dl(out)) for x, out in sets]
            dw1, dw2 = fk.dl(w1), fk.dl(w2)
            calls = [lambda v=v: L.fk_monarch(fk.ctx, ctypes.byref(launch), ctypes.byref(params),
                                              v[0], dw1, dw2, None, v[1]) for v in views]
            variant = fk_variant("fk_monarch", sets[0][0], w1, w2, None, sets[0][1])
            fk_call(*sets[0])
            torch.cuda.synchronize()
            ref = two_bmm(sets[0][0].float(), w1.float(), w2.float())
            got = sets[0][1].float()
            rel = ((got - ref).norm() / ref.norm()).item()
            nan = int(torch.isnan(got).sum().item())
            del ref, got

            t_fk = time_ms(calls, args.warmup, args.reps)
            gviews = [(gen.dl(x), gen.dl(out)) for x, out in sets]
            gw1, gw2 = gen.dl(w1), gen.dl(w2)
            glaunch = gen.launch()
            gcalls = [lambda v=v: L.fk_monarch(gen.ctx, ctypes.byref(glaunch), ctypes.byref(params),
                                               v[0], gw1, gw2, None, v[1]) for v in gviews]
            t_gen = float("nan") if args.quick else time_ms(gcalls, 1, 5)
            sviews = [(s80.dl(x), s80.dl(out)) for x, out in sets]
            sw1, sw2 = s80.dl(w1), s80.dl(w2)
            slaunch = s80.launch()
            scalls = [lambda v=v: L.fk_monarch(s80.ctx, ctypes.byref(slaunch), ctypes.byref(params),
                                               v[0], sw1, sw2, None, v[1]) for v in sviews]
            t_s80 = float("nan") if args.quick else time_ms(scalls, args.warmup, args.reps)
            t_bmm = time_ms([lambda s=s: two_bmm(s[0], w1, w2) for s in sets], args.warmup, args.reps)
            t_copy = time_ms([lambda s=s: s[1].copy_(s[0]) for s in sets], args.warmup, args.reps)
            t_dense = float("nan")
            if not args.no_dense:
                wd = (torch.randn(n, n, device=dev) / math.sqrt(n)).to(dt)
                t_dense = time_ms([lambda s=s: torch.matmul(s[0], wd) for s in sets], 2,
                                  max(3, args.reps // 3))
                del wd
            bytes_ = 2 * T * n * elem + 2 * nb * b * b * elem
            flops = 2 * 2 * T * n * b
            gbs = bytes_ / (t_fk * 1e-3) / 1e9
            row = dict(op="monarch", tokens=T, n=n, nblocks=nb, block=b, dtype=args.dtype,
                       variant=variant, ms=t_fk, gbps=gbs, pct_copy_target=100 * gbs / (COPY_TBPS * 1e3),
                       pct_copy_here=100 * gbs / (2 * T * n * elem / (t_copy * 1e-3) / 1e9),
                       copy_ms=t_copy, copy_gbps=2 * T * n * elem / (t_copy * 1e-3) / 1e9,
                       tflops=flops / (t_fk * 1e-3) / 1e12, bmm_ms=t_bmm, dense_ms=t_dense,
                       x_vs_bmm=t_bmm / t_fk, x_vs_dense=t_dense / t_fk, rel_l2_vs_fp32=rel,
                       nan=nan, floor_ms=bytes_ / (COPY_TBPS * 1e12) * 1e3, generic_ms=t_gen,
                       sm80_ms=t_s80)
            rows.append(row)
            print(f"monarch T={T} n={n} ({nb}x{b}) {variant}: {t_fk:.3f} ms {gbs:.0f} GB/s "
                  f"({row['pct_copy_target']:.0f}% of 4.2 TB/s; copy {row['copy_gbps']:.0f} GB/s here, "
                  f"{row['pct_copy_here']:.0f}% of it) "
                  f"bmm {t_bmm:.3f} ms ({row['x_vs_bmm']:.1f}x) dense {t_dense:.3f} ms "
                  f"({row['x_vs_dense']:.1f}x) sm80 {t_s80:.3f} ms generic {t_gen:.3f} ms rel_l2 {rel:.2e} "
                  f"nan {nan}",
                  flush=True)

            # Block-diagonal linear with the same first factor.
            if args.quick:
                fk.forget()
                gen.forget()
                s80.forget()
                del sets, views, calls
                torch.cuda.empty_cache()
                continue
            bviews = [(fk.dl(x), fk.dl(out)) for x, out in sets]
            bcalls = [lambda v=v: L.fk_blockdiag_linear(fk.ctx, ctypes.byref(launch), ctypes.byref(params),
                                                        v[0], dw1, None, v[1]) for v in bviews]
            bvariant = fk_variant("fk_blockdiag_linear", sets[0][0], w1, None, sets[0][1])
            fk.check(bcalls[0](), "fk_blockdiag_linear")
            torch.cuda.synchronize()
            bref = torch.bmm(sets[0][0].float().view(T, nb, b).transpose(0, 1),
                             w1.float().transpose(-1, -2)).transpose(0, 1).reshape(T, n)
            brel = ((sets[0][1].float() - bref).norm() / bref.norm()).item()
            del bref
            tb_fk = time_ms(bcalls, args.warmup, args.reps)
            gbviews = [(gen.dl(x), gen.dl(out)) for x, out in sets]
            tb_gen = time_ms([lambda v=v: L.fk_blockdiag_linear(gen.ctx, ctypes.byref(glaunch),
                                                                ctypes.byref(params), v[0], gw1, None, v[1])
                              for v in gbviews], 1, 5)
            tb_t = time_ms([lambda s=s: torch.bmm(s[0].view(T, nb, b).transpose(0, 1),
                                                  w1.transpose(-1, -2)).transpose(0, 1).reshape(T, n)
                            for s in sets], args.warmup, args.reps)
            bbytes = 2 * T * n * elem + nb * b * b * elem
            bg = bbytes / (tb_fk * 1e-3) / 1e9
            rows.append(dict(op="blockdiag_linear", tokens=T, n=n, nblocks=nb, block=b,
                             dtype=args.dtype, variant=bvariant, ms=tb_fk, gbps=bg,
                             pct_copy_target=100 * bg / (COPY_TBPS * 1e3), torch_bmm_ms=tb_t,
                             x_vs_torch=tb_t / tb_fk, rel_l2_vs_fp32=brel, generic_ms=tb_gen))
            print(f"blockdiag T={T} n={n} {bvariant}: {tb_fk:.3f} ms {bg:.0f} GB/s "
                  f"({100 * bg / 4200:.0f}%) torch.bmm {tb_t:.3f} ms ({tb_t / tb_fk:.1f}x) "
                  f"rel_l2 {brel:.2e}", flush=True)
            fk.forget()
            gen.forget()
            s80.forget()
            del sets, views, bviews, calls, bcalls
            torch.cuda.empty_cache()

    print("\n| op | tokens | n | blocks | variant | ms | GB/s | % of 4.2 TB/s | copy GB/s (% of it) | "
          "two-bmm ms (x) | dense ms (x) | rel_l2 | sm80 ms | generic ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["op"] == "monarch":
            print(f"| monarch | {r['tokens']} | {r['n']} | {r['nblocks']}x{r['block']} | {r['variant']} | "
                  f"{r['ms']:.3f} | {r['gbps']:.0f} | {r['pct_copy_target']:.0f} | {r['copy_gbps']:.0f} "
                  f"({r['pct_copy_here']:.0f}) | {r['bmm_ms']:.3f} ({r['x_vs_bmm']:.1f}x) | {r['dense_ms']:.3f} ({r['x_vs_dense']:.1f}x) | "
                  f"{r['rel_l2_vs_fp32']:.1e} | {r['sm80_ms']:.3f} | {r['generic_ms']:.3f} |")
        else:
            print(f"| blockdiag | {r['tokens']} | {r['n']} | {r['nblocks']}x{r['block']} | {r['variant']} | "
                  f"{r['ms']:.3f} | {r['gbps']:.0f} | {r['pct_copy_target']:.0f} | | "
                  f"bmm {r['torch_bmm_ms']:.3f} ({r['x_vs_torch']:.1f}x) | | {r['rel_l2_vs_fp32']:.1e} | | "
                  f"{r['generic_ms']:.3f} |")
    path = write_json("monarch_bench.json", args.json,
                      dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows))
    print("wrote", path)


if __name__ == "__main__":
    main()
