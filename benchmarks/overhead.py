"""Per-call host overhead of flashkit's Python package on small problems (torch CUDA tensors),
next to torch's own ops on the same inputs.

Small models (the demo's all-MiniLM-L6-v2: 1128 tokens, hidden 384) are bound by how long the
host takes to launch each op, not by the kernels. This measures, per op:
  host us   time for the Python call to return, median over calls issued back to back while
            the GPU is held busy (torch.cuda._sleep), so queueing never blocks the host;
  gpu us    the GPU time per call: events around a batch of calls queued behind the sleep;
  sync us   one call followed by torch.cuda.synchronize(), from an idle GPU (latency).
A call whose host time exceeds its GPU time leaves the GPU idle in a sequence of such calls.

    PYTHONPATH=<dir holding the flashkit package> python3 benchmarks/overhead.py [--json out]
        [--lib <libflashkit.so or its folder>]

With --lib, the GEMM is also called through the C ABI directly (ctypes, arguments built once:
benchmarks/gemm.py's harness), which separates the C library's host time from the Python
package's.
"""
import argparse
import json
import statistics
import time

import torch

import flashkit

DEV = "cuda:0"


def host_times(fn, n=60):
    """(median host us per call, gpu us per call) with the GPU kept busy by a sleep kernel."""
    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e8))  # ~0.2 s at ~2 GHz: longer than the n host calls take
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    start.record()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    end.record()
    torch.cuda.synchronize()
    # The sleep precedes `start` in the stream, so start..end covers exactly the n calls (a
    # call that synchronises the host with the GPU shows up as a host time near the sleep's).
    return statistics.median(ts) * 1e6, start.elapsed_time(end) * 1e3 / n


def sync_time(fn, n=30):
    ts = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


def profile(ops, n=2000):
    """cProfile of n calls of each op with the GPU kept busy (own time per call, in us)."""
    import cProfile
    import pstats
    for op, fn in ops.items():
        fn()
        torch.cuda.synchronize()
        torch.cuda._sleep(int(2e9))
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(n):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        st = pstats.Stats(pr)
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:14]
        print(f"profile of {op} ({n} calls; cProfile inflates Python time): own us/call, "
              "cumulative us/call, function")
        for (file, line, func), (_, ncalls, tottime, cumtime, _) in rows:
            print(f"  {tottime / n * 1e6:7.2f} {cumtime / n * 1e6:7.2f}  {ncalls / n:4.1f}x "
                  f"{file.rsplit('/', 1)[-1]}:{line}({func})", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--lib", help="libflashkit.so (or its folder) for the C ABI rows")
    ap.add_argument("--profile", action="store_true",
                    help="also print where the Python package spends its host time (cProfile "
                         "of the bf16 gemm + bias and varlen attention calls, top 14 by own time)")
    args = ap.parse_args()
    torch.manual_seed(0)
    ctx = flashkit.Context(DEV)
    H, nh, hd = 384, 12, 32
    lens = torch.randint(8, 30, (64,))
    T = int(lens.sum())
    cu = torch.zeros(65, dtype=torch.int32)
    cu[1:] = torch.cumsum(lens, 0)
    cu = cu.to(DEV)
    mx = int(lens.max())
    rows = []
    cabi = None
    if args.lib:
        import gemm as gemm_bench  # benchmarks/gemm.py: ctypes view of fk_gemm
        cabi = gemm_bench.Flashkit(args.lib)
    for dt in (torch.bfloat16, torch.float16, torch.float32):
        x = torch.randn(T, H, device=DEV, dtype=dt)
        w = torch.randn(3 * H, H, device=DEV, dtype=dt) * 0.05
        bias = torch.randn(3 * H, device=DEV)
        bias_t = bias.to(dt)
        out = torch.empty(T, 3 * H, device=DEV, dtype=dt)
        qkv = torch.randn(T, 3, nh, hd, device=DEV, dtype=dt)
        qb = torch.randn(8, 128, nh, hd, device=DEV, dtype=dt)
        ops = {
            "gemm + bias (1128x1152x384), out=": lambda: ctx.gemm(x, w, trans_b=True, bias=bias,
                                                                  out=out),
            "gemm + bias, new output": lambda: ctx.gemm(x, w, trans_b=True, bias=bias),
            "torch F.linear (same)": lambda: torch.nn.functional.linear(x, w, bias_t),
            "attention varlen (64 seqs, 12 x 32)": lambda: ctx.attention(
                qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens_q=cu, cu_seqlens_k=cu,
                max_seqlen_q=mx, max_seqlen_k=mx),
            "attention batched (8 x 128, 12 x 32)": lambda: ctx.attention(qb, qb, qb),
            "torch SDPA batched (same)": lambda: torch.nn.functional.scaled_dot_product_attention(
                qb.transpose(1, 2), qb.transpose(1, 2), qb.transpose(1, 2)),
        }
        if cabi is not None:
            call, _ = cabi.make_call(x, w, out, bias=bias, trans_b=True)
            ops["C ABI fk_gemm (ctypes, same gemm + bias)"] = call
        name = str(dt).rsplit(".", 1)[-1]
        if args.profile and dt is torch.bfloat16:
            profile({k: v for k, v in ops.items() if k.startswith(("gemm + bias (", "attention v"))})
        for op, fn in ops.items():
            h, g = host_times(fn)
            s = sync_time(fn)
            rows.append({"dtype": name, "op": op, "host_us": h, "gpu_us": g, "sync_us": s})
            print(f"{name:9s} {op:40s} host {h:8.1f} us   gpu {g:8.1f} us   call+sync {s:8.1f} us",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "flashkit": getattr(flashkit, "__version__", "?"), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
