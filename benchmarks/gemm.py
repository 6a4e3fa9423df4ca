#!/usr/bin/env python3
"""GEMM benchmark: flashkit's fk_gemm against torch.matmul (cuBLAS), in one process, on the same
random inputs, with CUDA events.

flashkit is loaded through ctypes straight from a build folder (the Python bindings are not
needed): set FLASHKIT_LIB to libflashkit.so, or pass --lib. Operands are torch tensors handed
over as DLTensor views built with ctypes, on torch's current stream.

Per shape: warm-up, then the median of --reps timed calls; when one input set is smaller than
3x the L2 cache, several sets are rotated so that the inputs come from memory, not L2.
Prints a table of TFLOP/s and ratios (last), and writes JSON to $OUT/gemm_bench.json (or --json).

Shapes (issue 7): (M, N, K) in {4096^3, 8192^3, 16384^3, (8192, 8192, 1024), (16, 8192, 8192),
(128, 8192, 8192), (4096, 12288, 4096)}, plus GEMM + bias + GELU at 8192^3 and 4096^3 against
torch.matmul followed by torch's bias add and GELU.

  python3 benchmarks/gemm.py --lib build/libflashkit.so [--dtype bf16 fp16] [--layout nn tn]
                             [--family auto|generic|sm80|sm90] [--fp8] [--ksweep]
FLASHKIT_SM90_GEMM_EPILOGUE=regs in the environment keeps the Hopper kernel's D on the register
store path (no copy-engine stores), for comparison. --sweep-skinny SPEC... times each shape again
under FLASHKIT_SM90_GEMM_SKINNY=SPEC (read per call: on[,splits[,krot]], src/cuda/gemm/sm90/
heuristics.h), in the same process and on the same inputs, each SPEC twice (forward then reverse
order, the mean of its two medians).
"""
import argparse
import ctypes
import os
import sys

import torch

SHAPES = [
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 16384, 16384),
    (8192, 8192, 1024),
    (16, 8192, 8192),
    (128, 8192, 8192),
    (4096, 4096 * 3, 4096),
]
FUSED_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]
FP8_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (16384, 16384, 16384), (8192, 8192, 1024),
              (16, 8192, 8192), (128, 8192, 8192), (4096, 4096 * 3, 4096)]

# cuBLAS through torch.matmul on this H200 model, 2026-11-30 (anchor-baseline-h200.txt).
ANCHOR = {
    ("bf16", 4096, 4096, 4096): 715.9, ("bf16", 8192, 8192, 8192): 773.5,
    ("bf16", 16384, 16384, 16384): 696.3, ("bf16", 8192, 8192, 1024): 523.8,
    ("bf16", 16, 8192, 8192): 46.4, ("bf16", 128, 8192, 8192): 334.9,
    ("fp16", 4096, 4096, 4096): 718.1, ("fp16", 8192, 8192, 8192): 747.9,
    ("fp16", 16384, 16384, 16384): 663.6, ("fp16", 8192, 8192, 1024): 507.6,
    ("fp16", 16, 8192, 8192): 42.4, ("fp16", 128, 8192, 8192): 350.0,
}

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fkbench import DLTensor, Launch, time_ms, rotation_count, write_json  # noqa: E402
import fkbench  # noqa: E402


# --batched N: time N back-to-back calls between one pair of events (the per-call time is their
# mean, the median over --reps such batches). The host enqueues a call in well under the ~35 us
# a decode-shaped GEMM runs, so the stream stays busy and host launch gaps drop out of the
# numbers; the default (one call between events) can include them for calls this short.
BATCH = 1


def time_calls(fns, warmup, reps):
    return time_ms(fns, warmup, reps, batch=max(1, BATCH))


class GemmParams(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32), ("trans_a", ctypes.c_int32), ("trans_b", ctypes.c_int32),
        ("alpha", ctypes.c_float), ("beta", ctypes.c_float), ("activation", ctypes.c_int32),
    ]


ACT = {"none": 0, "relu": 1, "gelu_tanh": 2, "gelu_erf": 3}


class Flashkit(fkbench.Flashkit):
    def __init__(self, path, family="auto"):
        super().__init__(path, family)
        P = ctypes.POINTER
        self.lib.fk_gemm.argtypes = [ctypes.c_void_p, P(Launch), P(GemmParams)] + [P(DLTensor)] * 5
        self.lib.fk_gemm_select_kernel.argtypes = [ctypes.c_void_p, P(GemmParams)] + \
            [P(DLTensor)] * 5 + [P(ctypes.c_char_p)]
        self.lib.fk_gemm_workspace_size.argtypes = [ctypes.c_void_p, P(GemmParams)] + \
            [P(DLTensor)] * 5 + [P(ctypes.c_uint64)]
        self.lib.fk_gemm_scaled.argtypes = [ctypes.c_void_p, P(Launch), P(GemmParams)] + \
            [P(DLTensor)] * 7
        self.lib.fk_gemm_scaled_select_kernel.argtypes = [ctypes.c_void_p, P(GemmParams)] + \
            [P(DLTensor)] * 7 + [P(ctypes.c_char_p)]

    def make_scaled_call(self, a, w, d, scale_a, scale_b):
        """fk_gemm_scaled of fp8 a (M, K) and w (N, K) (trans_b): (callable, variant)."""
        p = self.init("fk_gemm_params_init", GemmParams)
        p.trans_b = 1
        args = [self.dl(x) for x in (a, w, scale_a, scale_b, None, None, d)]
        name = ctypes.c_char_p()
        self.check(self.lib.fk_gemm_scaled_select_kernel(self.ctx, ctypes.byref(p), *args,
                                                         ctypes.byref(name)),
                   "fk_gemm_scaled_select_kernel")
        launch = self.launch()
        self._keep.append((p, args))
        fn, ctx = self.lib.fk_gemm_scaled, self.ctx

        def call():
            st = fn(ctx, ctypes.byref(launch), ctypes.byref(p), *args)
            if st != 0:
                self.check(st, "fk_gemm_scaled")

        return call, name.value.decode()

    def make_call(self, a, b, d, c=None, bias=None, trans_a=False, trans_b=False, alpha=1.0,
                  beta=0.0, act="none"):
        """Returns (callable, variant name); the callable enqueues one fk_gemm on the current stream."""
        p = self.init("fk_gemm_params_init", GemmParams)
        p.trans_a, p.trans_b, p.alpha, p.beta, p.activation = int(trans_a), int(trans_b), alpha, beta, ACT[act]
        args = [self.dl(x) for x in (a, b, c, bias, d)]
        name = ctypes.c_char_p()
        self.check(self.lib.fk_gemm_select_kernel(self.ctx, ctypes.byref(p), *args, ctypes.byref(name)),
                   "fk_gemm_select_kernel")
        launch = self.launch()
        if os.environ.get("FK_BENCH_WORKSPACE") == "1":
            # A caller workspace of fk_gemm_workspace_size() bytes (kept for the call's life), as a
            # framework integration would pass one, instead of the library's per-call scratch.
            ws = ctypes.c_uint64(0)
            self.check(self.lib.fk_gemm_workspace_size(self.ctx, ctypes.byref(p), *args, ctypes.byref(ws)),
                       "fk_gemm_workspace_size")
            if ws.value:
                buf = torch.empty(ws.value, dtype=torch.uint8, device="cuda")
                launch.workspace, launch.workspace_bytes = buf.data_ptr(), ws.value
                self._keep.append(buf)
        self._keep.append((p, args))
        fn = self.lib.fk_gemm
        ctx = self.ctx

        def call():
            st = fn(ctx, ctypes.byref(launch), ctypes.byref(p), *args)
            if st != 0:
                self.check(st, "fk_gemm")

        return call, name.value.decode()


D_FP32 = False  # --d-fp32


def input_sets(M, N, K, dtype, layout, with_bias):
    elem = torch.finfo(dtype).bits // 8
    n = rotation_count((M * K + K * N + M * N) * elem)
    sets = []
    for _ in range(n):
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        # layout "nn": b (K, N) row-major (torch.matmul(a, b)); "tn": weight (N, K), a @ w.T
        b = torch.randn(K, N, device="cuda", dtype=dtype) if layout == "nn" else \
            torch.randn(N, K, device="cuda", dtype=dtype)
        bias = torch.randn(N, device="cuda", dtype=dtype) if with_bias else None
        d = torch.empty(M, N, device="cuda", dtype=torch.float32 if D_FP32 else dtype)
        sets.append((a, b, bias, d))
    return sets


def tune(fk, l2, args):
    """Diagnostics for tuning: flashkit bf16 TFLOP/s over a K sweep (per-tile fixed cost vs
    per-k-step cost), both B layouts, the raster group size (env knob read per call), and the
    host time of one fk_gemm call."""
    out = []
    dtype = torch.bfloat16

    def measure(M, N, K, layout="nn", label=""):
        sets = input_sets(M, N, K, dtype, layout, with_bias=False)
        calls = [fk.make_call(a, b, d, trans_b=(layout == "tn"))[0] for a, b, _, d in sets]
        t = time_calls(calls, args.warmup, args.reps)
        tf = 2.0 * M * N * K / t * 1e-9
        out.append(dict(kind="tune", label=label, M=M, N=N, K=K, layout=layout, flashkit_ms=t,
                        flashkit_tflops=tf))
        print(f"  tune {label:<18} {layout} {M}x{N}x{K}: {t * 1e3:9.1f} us  {tf:7.1f} TFLOP/s", flush=True)
        return calls, t

    for K in (64, 256, 1024, 4096):
        measure(8192, 8192, K, label="k-sweep")
    if args.ksweep:
        return out + host_time(measure)
    for layout in ("tn",):
        for shp in SHAPES[:2]:
            measure(*shp, layout=layout, label="layout")
    # The library reads these knobs once per process (heuristics.h, TuningOverrides), so each
    # setting runs in a process of its own (knob_run; before session 18 they were set between
    # calls in this process and had no effect), its rows read back from that process's JSON.
    knobs = [("FLASHKIT_BENCH_BASELINE", "1")]  # no knob: the process-to-process reference
    if args.tune_raster:
        knobs += [("FLASHKIT_SM90_GEMM_GROUP", g) for g in ("1", "4", "16", "32")]
        knobs += [("FLASHKIT_SM90_GEMM_RASTER", "n")]
    knobs += [("FLASHKIT_SM90_GEMM_EPILOGUE", "generic")]
    tune_shapes = [f"{m}x{n}x{k}" for m, n, k in SHAPES[:2]]  # (--shapes narrows SHAPES)
    for var, val in knobs:
        out += knob_run(args, var, val, tune_shapes)
    split_shapes = [f"{m}x{n}x{k}" for m, n, k in SHAPES[4:6]]
    for sp in (("1", "2", "8") if split_shapes else ()):
        out += knob_run(args, "FLASHKIT_SM90_GEMM_SPLITS", sp, split_shapes)
    return out + host_time(measure)


def knob_run(args, var, val, shapes):
    """Rows of `gemm` for `shapes` (bf16, nn, no fused rows) from a child process of this
    script with environment variable var=val: for the knobs the library reads once per process."""
    import json
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tf:
        path = tf.name
    cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--dtype", "bf16",
           "--no-fused", "--shapes", *shapes, "--reps", str(args.reps), "--warmup",
           str(args.warmup), "--json", path]
    env = dict(os.environ, **{var: val})
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            print(f"  tune {var}={val}: child failed (rc {res.returncode}): {res.stderr[-300:]}",
                  flush=True)
            return []
        with open(path) as f:
            child_rows = json.load(f)["rows"]
    finally:
        os.unlink(path)
    rows = []
    for r in child_rows:
        if r.get("kind") != "gemm":
            continue
        r = dict(r, kind="tune", label=f"{var}={val}")
        rows.append(r)
        print(f"  tune {var}={val} {r['M']}x{r['N']}x{r['K']}: {r['flashkit_ms'] * 1e3:9.1f} us "
              f"{r['flashkit_tflops']:7.1f} TFLOP/s ratio {r['ratio']:.3f} (own process)",
              flush=True)
    return rows


def host_time(measure):
    """Host cost of one call: enqueue 50 calls of a small problem without waiting (a time
    above the kernel's own puts the host in the timed intervals of the event loop). Also for
    torch.matmul, for comparison."""
    import time
    out = []
    calls, _ = measure(256, 256, 256, label="small")
    a = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
    for name, fn in (("fk_gemm", calls[0]), ("torch.matmul", lambda: torch.matmul(a, a))):
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(50):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        host_us = (t1 - t0) / 50 * 1e6
        out.append(dict(kind="host", call=name, host_us_per_call=host_us))
        print(f"  tune host time per {name} call (ctypes included): {host_us:.1f} us", flush=True)
    return out


SCHEDULES = ("cooperative", "pingpong64", "pingpong128")


def ab_schedule(args, calls, check):
    """With --ab-schedule: {schedule: (ms, rel_err)} for each forced Hopper GEMM schedule, the
    same calls and inputs (check() reruns the first set and returns its error); else {}."""
    out = {}
    if not args.ab_schedule:
        return out
    # A B B A, each schedule's time the mean of its two medians: clocks that drift through the
    # process weigh on both alike.
    times = {sch: [] for sch in SCHEDULES}
    errs = {}
    for sch in SCHEDULES + SCHEDULES[::-1]:
        os.environ["FLASHKIT_SM90_GEMM_SCHEDULE"] = sch
        errs[sch] = max(errs.get(sch, 0.0), check())
        times[sch].append(time_calls(calls, args.warmup, args.reps))
    os.environ.pop("FLASHKIT_SM90_GEMM_SCHEDULE", None)
    for sch in SCHEDULES:
        out[sch] = (sum(times[sch]) / len(times[sch]), errs[sch])
    return out


def ab_env(var, specs, calls, check, warmup, reps):
    """{spec: (ms, rel_err)} for each value of environment variable `var` (read per call by the
    library), the same calls and inputs; each spec timed twice, forward then reverse order."""
    out = {}
    if not specs:
        return out
    times = {sp: [] for sp in specs}
    errs = {}
    old = os.environ.get(var)
    for sp in list(specs) + list(specs)[::-1]:
        os.environ[var] = sp
        errs[sp] = max(errs.get(sp, 0.0), check())
        times[sp].append(time_calls(calls, warmup, reps))
    if old is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = old
    for sp in specs:
        out[sp] = (sum(times[sp]) / len(times[sp]), errs[sp])
    return out


def sweep_note(sw, flops, t_torch):
    return "".join(f"\n      skinny={sp:<8} {flops / t * 1e-9:7.1f} TF/s {t * 1e3:7.1f} us "
                   f"ratio {t_torch / t:.3f} err {e:.1e}" for sp, (t, e) in sw.items())


def ab_note(ab, flops, t_torch):
    return "".join(f" | {sch} {flops / t * 1e-9:.1f} TF/s ratio {t_torch / t:.3f} err {e:.1e}"
                   for sch, (t, e) in ab.items())


def ab_columns(r):
    """TF/s and ratio to torch of each forced schedule (SCHEDULES order)."""
    sch = r.get("schedules") or {}
    if not sch:
        return ""
    flops = 2.0 * r["M"] * r["N"] * r["K"]
    return "   " + " | ".join(f"{flops / sch[s]['ms'] * 1e-9:7.1f} {r['torch_ms'] / sch[s]['ms']:5.3f}"
                             for s in SCHEDULES if s in sch)


def torch_mm(a, b, layout):
    return torch.matmul(a, b) if layout == "nn" else torch.matmul(a, b.t())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("FLASHKIT_LIB", ".device-gemm/libflashkit.so"))
    ap.add_argument("--dtype", nargs="+", default=["bf16", "fp16"])
    ap.add_argument("--layout", nargs="+", default=["nn"], help="nn: a @ b; tn: a @ w.T")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="only 4096^3 and 8192^3")
    ap.add_argument("--tune", action="store_true",
                    help="diagnostics: K sweep, layouts, raster group sizes, host time per call")
    ap.add_argument("--tune-raster", action="store_true",
                    help="with --tune: also raster group sizes and order (each in a process of its own)")
    ap.add_argument("--skip-main", action="store_true", help="skip the main shape list")
    ap.add_argument("--ksweep", action="store_true",
                    help="only the K sweep of --tune (8192 x 8192 x K, bf16): per-tile fixed cost")
    ap.add_argument("--fp8", action="store_true",
                    help="also FP8 e4m3 (fk_gemm_scaled) against torch._scaled_mm")
    ap.add_argument("--profile", type=int, nargs=3, metavar=("M", "N", "K"),
                    help="only run 3 flashkit calls of this shape, bf16 (--profile-dtype; with --fp8: e4m3) (for ncu -k regex:sm90 -s 2)")
    ap.add_argument("--profile-dtype", default="bf16", choices=["bf16", "fp16"],
                    help="with --profile (16-bit inputs): the dtype of a, b, bias and d")
    ap.add_argument("--profile-anchor", action="store_true",
                    help="with --profile: run torch's call (cuBLAS: torch.matmul, fp8 "
                         "torch._scaled_mm) instead of flashkit's, on the same inputs")
    ap.add_argument("--profile-act", default="none", choices=sorted(ACT),
                    help="with --profile (bf16): this activation with a bias (the fused rows: gelu_tanh)")
    ap.add_argument("--family", default="auto", choices=sorted(fkbench.FAMILIES),
                    help="force a kernel family (e.g. sm80 runs the sm80-class GEMM on Hopper)")
    ap.add_argument("--json", default=None, help="default: $OUT/gemm_bench.json")
    ap.add_argument("--shapes", nargs="+", default=None, metavar="MxNxK",
                    help="only these shapes of the main and FP8 lists (e.g. 16x8192x8192)")
    ap.add_argument("--no-fused", action="store_true", help="skip the GEMM + bias + GELU rows")
    ap.add_argument("--ab-schedule", action="store_true",
                    help="also time flashkit with FLASHKIT_SM90_GEMM_SCHEDULE=cooperative, "
                         "=pingpong64 and =pingpong128 (read per call) in this process, on the "
                         "same inputs")
    ap.add_argument("--sweep-skinny", nargs="+", default=None, metavar="SPEC",
                    help="also time flashkit under FLASHKIT_SM90_GEMM_SKINNY=SPEC for each SPEC "
                         "(on[,splits[,krot]], read per call), same process and inputs")
    ap.add_argument("--batched", type=int, default=1, metavar="N",
                    help="time N back-to-back calls per event pair (host launch gaps out)")
    ap.add_argument("--d-fp32", action="store_true",
                    help="flashkit's D in fp32 on the 16-bit rows, fused rows included (torch's "
                         "anchor keeps 16-bit output; compare flashkit's own A/B, not the ratio)")
    ap.add_argument("--label", default="",
                    help="tag printed on each row (e.g. the FLASHKIT_SM90_GEMM_* knobs of this run)")
    args = ap.parse_args()
    global BATCH, D_FP32
    BATCH = max(1, args.batched)
    D_FP32 = args.d_fp32
    if args.shapes:
        keep = {tuple(int(x) for x in s.lower().split("x")) for s in args.shapes}
        SHAPES[:] = [s for s in SHAPES if s in keep] + [s for s in keep if s not in SHAPES]
        FP8_SHAPES[:] = [s for s in FP8_SHAPES if s in keep]

    fk = Flashkit(args.lib, args.family)
    if args.profile:
        # The three calls run inside a profiler range (cudaProfilerStart / Stop), so that
        # `ncu --profile-from-start off -s 2 -c 1` takes the third call's kernel and none of the
        # input set-up's.
        M, N, K = args.profile
        pdt = torch.float16 if args.profile_dtype == "fp16" else torch.bfloat16
        d = torch.empty(M, N, device="cuda", dtype=torch.bfloat16 if args.fp8 else pdt)
        if args.fp8:  # e4m3 a (M, K) and w (N, K), per-tensor scales: the benchmark's fp8 rows
            a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
            w = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
            sa = torch.tensor([0.5], device="cuda")
            sb = torch.tensor([0.25], device="cuda")
            if args.profile_anchor:
                f, variant = (lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb,
                                                        out_dtype=torch.bfloat16)), "torch._scaled_mm"
            else:
                f, variant = fk.make_scaled_call(a, w, d, sa, sb)
        else:
            a = torch.randn(M, K, device="cuda", dtype=pdt)
            b = torch.randn(K, N, device="cuda", dtype=pdt)
            bias = None
            if args.profile_act != "none":
                bias = torch.randn(N, device="cuda", dtype=pdt)
            if args.profile_anchor:
                if bias is not None:
                    sys.exit("--profile-anchor profiles the plain product only (no --profile-act)")
                f, variant = (lambda: torch.matmul(a, b)), "torch.matmul"  # as the benchmark calls it
            else:
                f, variant = fk.make_call(a, b, d, bias=bias, act=args.profile_act)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        print(f"profiled {'fp8' if args.fp8 else args.profile_dtype} {M}x{N}x{K} [{variant}]")
        return 0
    prop = torch.cuda.get_device_properties(0)
    l2 = getattr(prop, "L2_cache_size", 50 * 2**20)
    print(f"device {prop.name} SMs {prop.multi_processor_count} L2 {l2 >> 20} MiB "
          f"torch {torch.__version__} cuda {torch.version.cuda}", flush=True)
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    shapes = [] if args.skip_main else (SHAPES[:2] if args.quick else SHAPES)
    rows = []
    torch.manual_seed(0)

    for dname in args.dtype:
        dtype = dtypes[dname]
        for layout in args.layout:
            for (M, N, K) in shapes:
                sets = input_sets(M, N, K, dtype, layout, with_bias=False)
                calls = []
                variant = "?"
                for a, b, _, d in sets:
                    f, variant = fk.make_call(a, b, d, trans_b=(layout == "tn"))
                    calls.append(f)
                # correctness against cuBLAS on the first set
                ref = torch_mm(sets[0][0], sets[0][1], layout).float()

                def check():
                    sets[0][3].fill_(float("nan"))
                    calls[0]()
                    return ((sets[0][3].float() - ref).norm() / ref.norm()).item()

                err = check()
                t_fk = time_calls(calls, args.warmup, args.reps)
                t_tc = time_calls([lambda s=s: torch_mm(s[0], s[1], layout) for s in sets],
                               args.warmup, args.reps)
                ab = ab_schedule(args, calls, check)
                sw = ab_env("FLASHKIT_SM90_GEMM_SKINNY", args.sweep_skinny, calls, check,
                            args.warmup, args.reps)
                flops = 2.0 * M * N * K
                r = dict(kind="gemm", dtype=dname, d_dtype="fp32" if D_FP32 else dname,
                         layout=layout, M=M, N=N, K=K, variant=variant,
                         sets=len(sets), flashkit_ms=t_fk, torch_ms=t_tc,
                         flashkit_tflops=flops / t_fk * 1e-9, torch_tflops=flops / t_tc * 1e-9,
                         ratio=t_tc / t_fk, rel_err_vs_torch=err,
                         anchor_tflops=ANCHOR.get((dname, M, N, K)),
                         schedules={k: dict(ms=v[0], rel_err=v[1]) for k, v in ab.items()},
                         skinny_sweep={k: dict(ms=v[0], rel_err=v[1]) for k, v in sw.items()})
                rows.append(r)
                print(f"  {dname} {layout} {M}x{N}x{K}: flashkit {r['flashkit_tflops']:.1f} "
                      f"torch {r['torch_tflops']:.1f} TFLOP/s ratio {r['ratio']:.3f} err {err:.2e} "
                      f"[{variant}]{ab_note(ab, flops, t_tc)}{sweep_note(sw, flops, t_tc)}",
                      flush=True)
                del sets, calls
                torch.cuda.empty_cache()

    # Fused epilogue: flashkit GEMM + bias + GELU (tanh) against matmul, then bias add and GELU.
    for dname in ([] if (args.skip_main or args.no_fused) else args.dtype):
        dtype = dtypes[dname]
        for (M, N, K) in FUSED_SHAPES:
            sets = input_sets(M, N, K, dtype, "nn", with_bias=True)
            calls = []
            for a, b, bias, d in sets:
                f, variant = fk.make_call(a, b, d, bias=bias, act="gelu_tanh")
                calls.append(f)
            a0, b0, bias0, d0 = sets[0]
            ref = torch.nn.functional.gelu(torch.matmul(a0, b0).float() + bias0.float(), approximate="tanh")

            def check():
                d0.fill_(float("nan"))
                calls[0]()
                return ((d0.float() - ref).norm() / ref.norm()).item()

            err = check()

            def unfused(s):
                return torch.nn.functional.gelu(torch.matmul(s[0], s[1]) + s[2], approximate="tanh")

            t_fk = time_calls(calls, args.warmup, args.reps)
            t_tc = time_calls([lambda s=s: unfused(s) for s in sets], args.warmup, args.reps)
            t_lt = None
            if hasattr(torch, "_addmm_activation"):  # cuBLASLt's fused GELU_BIAS epilogue
                try:
                    t_lt = time_calls([lambda s=s: torch._addmm_activation(s[2], s[0], s[1], use_gelu=True)
                                    for s in sets], args.warmup, args.reps)
                except RuntimeError:
                    t_lt = None
            ab = ab_schedule(args, calls, check)
            flops = 2.0 * M * N * K
            r = dict(kind="gemm_bias_gelu", dtype=dname, d_dtype="fp32" if D_FP32 else dname,
                     layout="nn", M=M, N=N, K=K, variant=variant,
                     sets=len(sets), flashkit_ms=t_fk, torch_ms=t_tc,
                     flashkit_tflops=flops / t_fk * 1e-9, torch_tflops=flops / t_tc * 1e-9,
                     ratio=t_tc / t_fk, rel_err_vs_torch=err,
                     torch_addmm_activation_ms=t_lt,
                     schedules={k: dict(ms=v[0], rel_err=v[1]) for k, v in ab.items()})
            rows.append(r)
            print(f"  fused {dname} {M}x{N}x{K}: flashkit {r['flashkit_tflops']:.1f} unfused torch "
                  f"{r['torch_tflops']:.1f} ratio {r['ratio']:.3f} err {err:.2e}"
                  f"{'' if t_lt is None else f' (addmm_activation {flops / t_lt * 1e-9:.1f})'}"
                  f"{ab_note(ab, flops, t_tc)}", flush=True)
            del sets, calls
            torch.cuda.empty_cache()

    # FP8 (e4m3, K-major a and w, per-tensor scales, bf16 out) against torch._scaled_mm with
    # the same inputs, with and without its fast accumulation.
    for (M, N, K) in ([] if not args.fp8 else FP8_SHAPES):
        n = rotation_count(M * K + N * K + 2 * M * N)
        sets = []
        for _ in range(n):
            a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
            w = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
            sa = torch.tensor([0.5], device="cuda")
            sb = torch.tensor([0.25], device="cuda")
            d = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            sets.append((a, w, sa, sb, d))
        calls = []
        variant = "?"
        for a, w, sa, sb, d in sets:
            f, variant = fk.make_scaled_call(a, w, d, sa, sb)
            calls.append(f)
        a0, w0, sa0, sb0, d0 = sets[0]
        ref = (a0.float() @ w0.float().t()) * (sa0 * sb0)

        def check():
            d0.fill_(float("nan"))
            calls[0]()
            return ((d0.float() - ref).norm() / ref.norm()).item()

        err = check()
        t_fk = time_calls(calls, args.warmup, args.reps)
        times = {}
        for fast in (False, True):
            try:
                times[fast] = time_calls(
                    [lambda s=s: torch._scaled_mm(s[0], s[1].t(), scale_a=s[2], scale_b=s[3],
                                                  out_dtype=torch.bfloat16, use_fast_accum=fast)
                     for s in sets], args.warmup, args.reps)
            except RuntimeError as e:
                print(f"  torch._scaled_mm(use_fast_accum={fast}) failed: {e}", flush=True)
                times[fast] = None
        ab = ab_schedule(args, calls, check)
        sw = ab_env("FLASHKIT_SM90_GEMM_SKINNY", args.sweep_skinny, calls, check, args.warmup,
                    args.reps)
        flops = 2.0 * M * N * K
        t_ref = times[False] or times[True] or float("nan")
        r = dict(kind="gemm_fp8", dtype="e4m3", layout="tn", M=M, N=N, K=K, variant=variant,
                 sets=len(sets), flashkit_ms=t_fk, torch_ms=t_ref,
                 torch_fast_accum_ms=times[True], flashkit_tflops=flops / t_fk * 1e-9,
                 torch_tflops=flops / t_ref * 1e-9, ratio=t_ref / t_fk, rel_err_vs_torch=err,
                 anchor_tflops=1392.0 if (M, N, K) == (8192, 8192, 8192) else None,
                 schedules={k: dict(ms=v[0], rel_err=v[1]) for k, v in ab.items()},
                 skinny_sweep={k: dict(ms=v[0], rel_err=v[1]) for k, v in sw.items()})
        if times[True]:
            r["ratio_fast_accum"] = times[True] / t_fk
        rows.append(r)
        print(f"  fp8 {M}x{N}x{K}: flashkit {r['flashkit_tflops']:.1f} _scaled_mm "
              f"{r['torch_tflops']:.1f} (fast accum "
              f"{(flops / times[True] * 1e-9) if times[True] else float('nan'):.1f}) TFLOP/s "
              f"ratio {r['ratio']:.3f} err {err:.2e} [{variant}]{ab_note(ab, flops, t_ref)}"
              f"{sweep_note(sw, flops, t_ref)}", flush=True)
        del sets, calls
        torch.cuda.empty_cache()

    if args.tune or args.ksweep:
        rows += tune(fk, l2, args)

    write_json("gemm_bench.json", args.json,
               dict(device=prop.name, torch=torch.__version__, argv=sys.argv, rows=rows))

    print()
    print(f"{'op':<10}{'dtype':<6}{'lay':<4}{'M':>6}{'N':>7}{'K':>7}{'fk TF/s':>9}{'torch':>8}"
          f"{'ratio':>7}{'anchor':>8}{'relerr':>9}  variant"
          + ("   " + " | ".join(f"{s} TF/s ratio" for s in SCHEDULES) if args.ab_schedule else ""))
    for r in rows:
        if r["kind"] not in ("gemm", "gemm_bias_gelu", "gemm_fp8"):
            continue
        anchor = r.get("anchor_tflops")
        label = {"gemm": "gemm", "gemm_bias_gelu": "bias+gelu", "gemm_fp8": "fp8"}[r["kind"]]
        print(f"{label:<10}{r['dtype']:<6}{r['layout']:<4}"
              f"{r['M']:>6}{r['N']:>7}{r['K']:>7}{r['flashkit_tflops']:>9.1f}{r['torch_tflops']:>8.1f}"
              f"{r['ratio']:>7.3f}{(f'{anchor:.0f}' if anchor else '-'):>8}{r['rel_err_vs_torch']:>9.1e}"
              f"  {r['variant']} {args.label}" + ab_columns(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
