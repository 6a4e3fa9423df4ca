#!/usr/bin/env python3
"""Attention forward benchmark: flashkit against torch SDPA's flash (FlashAttention-2) and cuDNN
backends, in the same process, on the same inputs.

Grid (FlashAttention-2/3 papers): bf16, batch * seqlen = 16384, nheads * head_dim = 2048,
head_dim in {64, 128, 256}, seqlen in {512, ..., 16k}, causal and not; plus varlen, GQA and
decode rows (one query per sequence on a KV cache of 8k / 2k keys, GQA 32 on 8 heads: reported
also as GB/s of K/V/q/out traffic against the 4.2 TB/s copy bandwidth). FLOPs = 4 * batch * nheads * seqlen^2 * head_dim, halved for causal (the
FlashAttention convention; the varlen row sums over sequences). Times: CUDA events around each
call, after warm-up; the median over the repetitions.

flashkit is loaded through ctypes from a folder holding libflashkit.so* (the Python bindings are
not needed): DLTensors are built by hand from torch tensors. The kernel family is chosen with
--family (auto, sm80, generic), which sets the context's kernel_family.

    python3 benchmarks/attention.py --lib .device-attn --family sm80

Prints one line per cell (TFLOP/s and ratios to each anchor, and the max |flashkit - flash|
difference as a sanity check) and writes JSON to --json (default: $OUT/attention_bench.json
when $OUT is set, else attention_bench.json).
"""
import argparse
import ctypes
import itertools
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fkbench import time_ms, write_json  # noqa: E402
import fkbench  # noqa: E402


class AttnParams(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("softmax_scale", ctypes.c_float),
                ("causal", ctypes.c_int32), ("window_size_left", ctypes.c_int32),
                ("window_size_right", ctypes.c_int32), ("softcap", ctypes.c_float),
                # ABI 1 (0.2.0) appended these; fk_attention_params_init writes the whole struct,
                # so leaving them out overran this ctypes buffer (segfaults on the H200, run 1
                # of branch attn80b).
                ("max_seqlen_q", ctypes.c_int64), ("max_seqlen_k", ctypes.c_int64)]


class Flashkit(fkbench.Flashkit):
    softcap = 0.0  # set from --softcap: every call of this object uses it

    def params(self, causal, window=None):
        p = self.init("fk_attention_params_init", AttnParams)
        p.causal = 1 if causal else 0
        if window is not None:
            p.window_size_left, p.window_size_right = window
        p.softcap = self.softcap
        return p

    def prepare(self, q, k, v, out, lse, causal, cu_q=None, cu_k=None, window=None, max_seqlen=0):
        """Returns a zero-argument callable that runs the forward on the current stream
        (max_seqlen > 0: given as max_seqlen_q / max_seqlen_k, so a varlen call reads nothing
        back)."""
        p = self.params(causal, window)
        p.max_seqlen_q = p.max_seqlen_k = max_seqlen
        name = ctypes.c_char_p()
        args_io = [self.dl(t) for t in (q, k, v, cu_q, cu_k, out, lse)]
        self.check(self.lib.fk_attention_select_kernel(self.ctx, ctypes.byref(p), *args_io,
                                                     ctypes.byref(name)), "fk_attention_select_kernel")
        self.variant = name.value.decode()
        launch = self.launch()

        def run():
            launch.stream = torch.cuda.current_stream().cuda_stream
            st = self.lib.fk_attention_forward(self.ctx, ctypes.byref(launch), ctypes.byref(p), *args_io)
            if st != 0:
                self.check(st, "fk_attention_forward")
        run.keep = (args_io, p, launch)
        return run

    def prepare_kvcache(self, q, k_cache, v_cache, cache_seqlens, block_table, out, lse, causal=False):
        """fk_attention_kvcache_forward (non-causal by default: one query row sees its whole
        cache; causal is bottom-right aligned, for several queries per sequence)."""
        p = self.params(causal)
        name = ctypes.c_char_p()
        args_io = [self.dl(t) for t in (q, k_cache, v_cache, cache_seqlens, block_table, out, lse)]
        self.check(self.lib.fk_attention_kvcache_select_kernel(self.ctx, ctypes.byref(p), *args_io,
                                                             ctypes.byref(name)),
                   "fk_attention_kvcache_select_kernel")
        self.variant = name.value.decode()
        launch = self.launch()

        def run():
            launch.stream = torch.cuda.current_stream().cuda_stream
            st = self.lib.fk_attention_kvcache_forward(self.ctx, ctypes.byref(launch), ctypes.byref(p),
                                                       *args_io)
            if st != 0:
                self.check(st, "fk_attention_kvcache_forward")
        run.keep = (args_io, p, launch)
        return run


def visible_pairs(Sq, S, left, right):
    """(query, key) pairs a window lets through, bottom-right aligned (query row i is key
    position i + S - Sq); -1 leaves a side unbounded."""
    i = torch.arange(Sq, dtype=torch.int64) + (S - Sq)
    lo = torch.zeros_like(i) if left < 0 else (i - left).clamp(min=0)
    hi = torch.full_like(i, S - 1) if right < 0 else (i + right).clamp(max=S - 1)
    return float((hi - lo + 1).clamp(min=0).sum())


def sdpa_fn(backend, q, k, v, causal, gqa=False):
    # torch wants (B, H, S, D); transposed views of (B, S, H, D) keep the last dim contiguous.
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=gqa)
    return run


def anchor(backend, q, k, v, causal, warmup, reps, gqa=False, batch=1):
    # batch: back-to-back calls per pair of events, as flashkit's calls of the same cell are timed
    # (--kv-calls), so that neither side's host time is dropped and the other's kept.
    fn = sdpa_fn(backend, q, k, v, causal, gqa)
    try:
        out = fn()
        ms = time_ms(fn, warmup, reps, batch=batch)
        return ms, out.transpose(1, 2)
    except Exception as e:  # backend refuses this shape
        return None, repr(e).splitlines()[0][:120]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.environ.get("FLASHKIT_LIB", ".device-attn"),
                    help="folder holding libflashkit.so (or the file itself)")
    ap.add_argument("--family", choices=["auto", "sm80", "generic", "sm90"], default="auto")
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--seqlens", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--no-anchors", action="store_true")
    ap.add_argument("--no-extra", action="store_true", help="skip the varlen and GQA rows")
    ap.add_argument("--only-decode", action="store_true",
                    help="only the decode rows (no grid, no GQA or varlen rows)")
    ap.add_argument("--only-varlen", action="store_true",
                    help="only the varlen rows (no grid, no GQA or decode rows)")
    ap.add_argument("--varlen-lens", default="3000,1500,4096,512,2048,777,4453",
                    help="the varlen rows' sequence lengths (tokens)")
    ap.add_argument("--varlen-heads", default="16,128", metavar="NHEADS,HEAD_DIM",
                    help="the varlen rows' heads and head_dim")
    ap.add_argument("--only-kvcache", action="store_true",
                    help="only the KV-cache decode rows (paged and contiguous caches)")
    ap.add_argument("--kv-queries", default="1", metavar="N,...",
                    help="--only-kvcache: queries per sequence (more than 1: causal, bottom-right "
                         "aligned, as speculative decoding runs; the anchor then runs unmasked "
                         "and its max difference is not comparable)")
    ap.add_argument("--kv-heads", default="32,8,128", metavar="H,HK,D",
                    help="--only-kvcache: query heads, KV heads and head_dim")
    ap.add_argument("--kv-shapes", default="1x32768,8x8192,64x2048", metavar="BxS,...",
                    help="--only-kvcache: batch x cache length per cell")
    ap.add_argument("--kv-pages", default="0,16,128,256", metavar="P,...",
                    help="--only-kvcache: page sizes (0: contiguous cache)")
    ap.add_argument("--kv-calls", type=int, default=1, metavar="N",
                    help="--only-kvcache: time N back-to-back calls between one pair of events "
                         "and report their mean (host launch gaps drop out: the GPU's own rate; "
                         "1, the default, is one call's latency, host time included; torch's "
                         "anchor is timed the same way)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--window", default=None, metavar="LEFT,RIGHT",
                    help="sliding window (window_size_left,right; -1 = unbounded, bottom-right "
                         "aligned) on every grid cell instead of the --causal settings; flashkit "
                         "only (torch's SDPA backends take no window), FLOPs from the visible "
                         "(query, key) pairs")
    ap.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16",
                    help="q, k, v and out (the issue's grid is bf16; fp16 runs the same grid)")
    ap.add_argument("--softcap", type=float, default=0.0,
                    help="softcap on every flashkit call (0: none); flashkit only, as torch's SDPA "
                         "backends take no softcap, so the anchors and the extra rows are skipped")
    args = ap.parse_args()
    window = None
    if args.softcap != 0.0:
        args.no_anchors = True
        args.no_extra = True
    if args.window:
        window = tuple(int(x) for x in args.window.split(","))
        if len(window) != 2:
            ap.error("--window wants LEFT,RIGHT")
        args.no_anchors = True
        args.causal = "0"
        args.no_extra = True

    torch.manual_seed(0)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    fk = Flashkit(args.lib, args.family)
    fk.softcap = args.softcap
    print(f"device {props.name} SMs {props.multi_processor_count} torch {torch.__version__} "
          f"cudnn {torch.backends.cudnn.version()} flashkit family {args.family} dtype {args.dtype}"
          f"{f' softcap {args.softcap:g}' if args.softcap else ''}", flush=True)
    dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = []
    head = (f"{'d':>4} {'S':>6} {'B':>3} {'H':>3} {'causal':>6} {'flashkit':>9} {'flash':>7} {'cudnn':>7}"
            f" {'fk/flash':>8} {'fk/cudnn':>8} {'maxdiff':>8}  variant")
    print(head, flush=True)

    def report(r):
        f = lambda x: f"{x:7.1f}" if isinstance(x, float) else f"{'n/a':>7}"
        g = lambda x: f"{x:8.3f}" if isinstance(x, float) else f"{'n/a':>8}"
        print(f"{r['head_dim']:>4} {r['seqlen']:>6} {r['batch']:>3} {r['nheads']:>3} {int(r['causal']):>6} "
              f"{r['flashkit_tflops']:9.1f} {f(r['flash_tflops'])} {f(r['cudnn_tflops'])} "
              f"{g(r['ratio_flash'])} {g(r['ratio_cudnn'])} {r['max_diff_vs_flash']:8.4f}  "
              f"{r['variant']}{'  ' + r['note'] if r.get('note') else ''}", flush=True)

    def cell(B, S, H, Hk, D, causal, label=None, Sq=None):
        # Sq (queries per sequence) defaults to S (keys); decode rows pass Sq = 1.
        Sq = S if Sq is None else Sq
        q = torch.randn(B, Sq, H, D, device=dev, dtype=dt)
        k = torch.randn(B, S, Hk, D, device=dev, dtype=dt)
        v = torch.randn(B, S, Hk, D, device=dev, dtype=dt)
        out = torch.empty_like(q)
        lse = torch.empty(B, H, Sq, device=dev, dtype=torch.float32)
        flops = 4.0 * B * H * Sq * S * D / (2 if causal else 1)
        if window is not None:
            flops = 4.0 * B * H * D * visible_pairs(Sq, S, *window)
        run = fk.prepare(q, k, v, out, lse, causal, window=window)
        reps = args.reps if args.family != "generic" else max(3, args.reps // 5)
        ms = time_ms(run, args.warmup, reps)
        r = dict(head_dim=D, seqlen=S, batch=B, nheads=H, nheads_k=Hk, causal=bool(causal), window=window,
                 flashkit_ms=ms, flashkit_tflops=flops / ms / 1e9, variant=fk.variant, label=label,
                 flash_tflops=None, cudnn_tflops=None, ratio_flash=None, ratio_cudnn=None,
                 max_diff_vs_flash=float("nan"), note="")
        if not args.no_anchors:
            gqa = Hk != H
            fms, fout = anchor(SDPBackend.FLASH_ATTENTION, q, k, v, causal, args.warmup, args.reps, gqa)
            cms, cout = anchor(SDPBackend.CUDNN_ATTENTION, q, k, v, causal, args.warmup, args.reps, gqa)
            if fms is not None:
                r["flash_tflops"] = flops / fms / 1e9
                r["ratio_flash"] = r["flashkit_tflops"] / r["flash_tflops"]
                run()
                torch.cuda.synchronize()
                r["max_diff_vs_flash"] = (out.float() - fout.float()).abs().max().item()
            else:
                r["note"] += f"flash: {fout} "
            if cms is not None:
                r["cudnn_tflops"] = flops / cms / 1e9
                r["ratio_cudnn"] = r["flashkit_tflops"] / r["cudnn_tflops"]
                if fms is None:
                    run()
                    torch.cuda.synchronize()
                    r["max_diff_vs_flash"] = (out.float() - cout.float()).abs().max().item()
                    r["note"] += "(diff vs cudnn) "
            else:
                r["note"] += f"cudnn: {cout} "
        if Sq != S:
            # Memory-bound: K and V read once, q and out once; against the copy bandwidth.
            nbytes = 2 * (2 * B * S * Hk * D + 2 * B * Sq * H * D)
            r["seqlen_q"] = Sq
            r["gbps"] = nbytes / ms / 1e6
            r["note"] += (f"Sq {Sq}: {r['gbps']:.0f} GB/s = {100 * r['gbps'] / 4200:.0f}% of 4.2 TB/s; "
                          f"flash {nbytes / fms / 1e6 if (not args.no_anchors and fms) else float('nan'):.0f} GB/s ")
        rows.append(r)
        report(r)
        del q, k, v, out, lse
        torch.cuda.empty_cache()

    def kv_cell(B, S, H, Hk, D, page, Sq=1):
        # Decode over a KV cache of S keys per sequence (all valid): paged with `page` rows per
        # page and a shuffled block_table, or contiguous with cache_seqlens (page 0). Anchors:
        # the same keys contiguous, through flashkit's batched call and torch's flash backend.
        # Sq > 1 queries per sequence: causal (bottom-right) in flashkit's calls.
        causal = Sq > 1
        q = torch.randn(B, Sq, H, D, device=dev, dtype=dt)
        k = torch.randn(B, S, Hk, D, device=dev, dtype=dt)
        v = torch.randn(B, S, Hk, D, device=dev, dtype=dt)
        seqlens = torch.full((B,), S, dtype=torch.int32, device=dev)
        if page:
            per = S // page
            perm = torch.randperm(B * per, device=dev)
            table = perm.view(B, per).to(torch.int32)
            kc = torch.empty(B * per, page, Hk, D, device=dev, dtype=dt)
            vc = torch.empty_like(kc)
            kc[perm] = k.view(B * per, page, Hk, D)
            vc[perm] = v.view(B * per, page, Hk, D)
        else:
            table, kc, vc = None, k, v
        out = torch.empty_like(q)
        lse = torch.empty(B, H, Sq, device=dev, dtype=torch.float32)
        run = fk.prepare_kvcache(q, kc, vc, seqlens, table, out, lse, causal)
        ms = time_ms(run, args.warmup, args.reps, batch=args.kv_calls)
        variant = fk.variant
        out2 = torch.empty_like(q)
        ms_dense = time_ms(fk.prepare(q, k, v, out2, lse, causal), args.warmup, args.reps,
                           batch=args.kv_calls)
        fms, fout = (None, None) if args.no_anchors else anchor(
            SDPBackend.FLASH_ATTENTION, q, k, v, False, args.warmup, args.reps, Hk != H,
            batch=args.kv_calls)
        run()
        torch.cuda.synchronize()
        diff = (out.float() - fout.float()).abs().max().item() if fms and not causal else float("nan")
        nbytes = 2 * (2 * B * S * Hk * D + 2 * B * Sq * H * D)
        r = dict(label="kvcache", batch=B, seqlen=S, seqlen_q=Sq, nheads=H, nheads_k=Hk, head_dim=D, page=page,
                 flashkit_ms=ms, gbps=nbytes / ms / 1e6, flashkit_dense_ms=ms_dense, flash_ms=fms,
                 ratio_flash=(fms / ms) if fms else None, ratio_dense=ms_dense / ms,
                 max_diff_vs_flash=diff, variant=variant)
        rows.append(r)
        print(f"kvcache B {B:>3} S {S:>6} Sq {Sq:>3} H {H}/{Hk} d {D} page {page:>4}: {ms * 1e3:8.1f} us "
              f"{r['gbps']:6.0f} GB/s ({100 * r['gbps'] / 4200:3.0f}% of 4.2 TB/s)  flashkit dense "
              f"{ms_dense * 1e3:8.1f} us  torch flash {fms * 1e3 if fms else float('nan'):8.1f} us  "
              f"x flash {r['ratio_flash'] or float('nan'):5.2f}  maxdiff {diff:.4f}  {variant}",
              flush=True)
        del q, k, v, kc, vc, out, out2, lse
        torch.cuda.empty_cache()

    t0 = time.time()
    if args.only_kvcache:
        H, Hk, D = (int(x) for x in args.kv_heads.split(","))
        for shape in args.kv_shapes.split(","):
            B, S = (int(x) for x in shape.split("x"))
            for Sq in (int(x) for x in args.kv_queries.split(",")):
                for page in (int(x) for x in args.kv_pages.split(",")):
                    kv_cell(B, S, H, Hk, D, page, Sq)
        args.head_dims = ""
        args.no_extra = True
    if args.only_varlen:
        args.head_dims = ""
    for D in ([] if args.only_decode or not args.head_dims else [int(x) for x in args.head_dims.split(",")]):
        H = args.hidden // D
        for S in [int(x) for x in args.seqlens.split(",")]:
            B = max(1, args.tokens // S)
            for causal in [int(x) for x in args.causal.split(",")]:
                cell(B, S, H, H, D, bool(causal))

    if not args.no_extra and not args.only_decode and not args.only_varlen:
        # GQA: 16 query heads on 2 KV heads (group 8), head_dim 128.
        cell(4, 4096, 16, 2, 128, True, label="gqa")
        cell(4, 4096, 16, 2, 128, False, label="gqa")
    if (not args.no_extra and not args.only_varlen) or args.only_decode:
        # Decode: one query per sequence against a long KV cache, GQA 32 query heads on 8 KV
        # heads (group 4), head_dim 128. Non-causal: with one query, flashkit's bottom-right
        # causal mask sees every key anyway, and torch's is_causal is top-left aligned.
        # Batches of 1-8 sequences give 8-64 (sequence, KV head) tiles: split-KV territory.
        cell(8, 8192, 32, 8, 128, False, label="decode", Sq=1)
        cell(64, 2048, 32, 8, 128, False, label="decode", Sq=1)
        cell(1, 32768, 32, 8, 128, False, label="decode", Sq=1)
        cell(2, 16384, 32, 8, 128, False, label="decode", Sq=1)
        cell(4, 8192, 32, 32, 128, False, label="decode", Sq=1)
    if not args.no_extra and not args.only_decode:
        # Varlen: 16k tokens in sequences of mixed lengths, head_dim 128, causal. flashkit only
        # (torch SDPA has no varlen entry); the call includes flashkit's cu_seqlens check, which
        # reads them back and so synchronises the stream.
        lens = [int(x) for x in args.varlen_lens.split(",")]
        tot = sum(lens)
        H, D = (int(x) for x in args.varlen_heads.split(","))
        cu = torch.tensor([0] + list(itertools.accumulate(lens)), dtype=torch.int32, device=dev)
        q = torch.randn(tot, H, D, device=dev, dtype=dt)
        k = torch.randn(tot, H, D, device=dev, dtype=dt)
        v = torch.randn(tot, H, D, device=dev, dtype=dt)
        out = torch.empty_like(q)
        lse = torch.empty(H, tot, device=dev, dtype=torch.float32)
        for causal in (True, False):
            flops = sum(4.0 * H * s * s * D for s in lens) / (2 if causal else 1)
            run = fk.prepare(q, k, v, out, lse, causal, cu, cu)
            ms = time_ms(run, args.warmup, args.reps)
            # Anchor: the same sequences one by one through torch flash (sum of the times).
            fms_total = 0.0
            diff = 0.0
            for i, s in enumerate(lens):
                a, b = int(cu[i]), int(cu[i + 1])
                qs, ks, vs = (t[a:b].unsqueeze(0) for t in (q, k, v))
                fms, fout = anchor(SDPBackend.FLASH_ATTENTION, qs, ks, vs, causal, 1, 5)
                if fms is None:
                    fms_total = None
                    break
                fms_total += fms
                run()
                torch.cuda.synchronize()
                diff = max(diff, (out[a:b].float() - fout[0].float()).abs().max().item())
            r = dict(head_dim=D, seqlen=tot, batch=len(lens), nheads=H, nheads_k=H, causal=causal,
                     flashkit_ms=ms, flashkit_tflops=flops / ms / 1e9, variant=fk.variant, label="varlen",
                     flash_tflops=(flops / fms_total / 1e9) if fms_total else None, cudnn_tflops=None,
                     ratio_flash=None, ratio_cudnn=None, max_diff_vs_flash=diff,
                     note="varlen; flash = per-sequence calls summed")
            if r["flash_tflops"]:
                r["ratio_flash"] = r["flashkit_tflops"] / r["flash_tflops"]
            rows.append(r)
            report(r)
            # The same call with max_seqlen_q / max_seqlen_k given: nothing is read back, so
            # this times the kernel without the check's copy and stream wait.
            run = fk.prepare(q, k, v, out, lse, causal, cu, cu, max_seqlen=max(lens))
            ms = time_ms(run, args.warmup, args.reps)
            r = dict(r, flashkit_ms=ms, flashkit_tflops=flops / ms / 1e9, label="varlen_max",
                     note="varlen, max_seqlen given; flash = per-sequence calls summed")
            if r["flash_tflops"]:
                r["ratio_flash"] = r["flashkit_tflops"] / r["flash_tflops"]
            rows.append(r)
            report(r)

    meta = dict(device=props.name, sms=props.multi_processor_count, torch=torch.__version__,
                cudnn=torch.backends.cudnn.version(), family=args.family, warmup=args.warmup,
                reps=args.reps, dtype=args.dtype, softcap=args.softcap, seconds=time.time() - t0,
                argv=sys.argv)
    out_path = write_json("attention_bench.json", args.json, dict(meta=meta, rows=rows))

    # Short summary last: the grid's ratios.
    grid = [r for r in rows if r["label"] is None and r["ratio_flash"] is not None]
    if grid:
        rf = [r["ratio_flash"] for r in grid]
        rc = [r["ratio_cudnn"] for r in grid if r["ratio_cudnn"] is not None]
        print(f"summary: {len(grid)} cells, fk/flash min {min(rf):.3f} median {statistics.median(rf):.3f} "
              f"max {max(rf):.3f}; cells >= 1.0x flash: {sum(x >= 1.0 for x in rf)}/{len(rf)}"
              + (f"; fk/cudnn median {statistics.median(rc):.3f}" if rc else ""))
    print(f"json: {out_path}")


if __name__ == "__main__":
    main()
