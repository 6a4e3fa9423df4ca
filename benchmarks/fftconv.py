#!/usr/bin/env python3
"""FFT convolution benchmark: flashkit's fk_fftconv_forward against the torch.fft convolution
that Hyena's reference uses (rfft of 2L, multiply, irfft, + D*u; fp32 FFTs), in one process, on
the same random inputs, with CUDA events (fkbench.time_ms: warm-up, median, inputs rotated when
they are smaller than 3x L2).

Shapes (issue 8): H = 768, L in {256, 1K, 4K, 8K, 16K, 32K}, B = 64 up to L = 1K and reduced
at longer L (B * L = 64K), causal with fft_size = 2L, gated (pre/post gates) and not, D always.
flashkit is timed twice: with a plan flagged FK_FFTCONV_FILTER_CONSTANT (cached spectrum) and
without (spectrum recomputed per call, as torch does). Where the library picks the direct
(Toeplitz) kernel, the FFT kernel is timed too, with FLASHKIT_FFTCONV_DIRECT=0 set in this
process for that call (column "fft ms", constant plan); where that is the Hopper direct kernel,
the sm80-class direct kernel as well, through a context of the SM80 family (column "sm80 ms").

HBM floor: bytes of u, y and the gates read/written once plus the fp32 filter spectrum
(H * (fft_size/2 + 1) * 8 bytes) once, at 4.2 TB/s (the H200's measured copy rate, issue 8's
reference: column "%floor"), and at this GPU's copy rate measured at the start (fkbench.copy_rate:
column "%copy"; the two agree on an H200, and the second is the one to read on another GPU).
Also reports max |flashkit - float64 reference| over a sample of rows, relative to max |ref|.

  python3 benchmarks/fftconv.py --lib build/libflashkit.so [--dtype bf16] [--family auto]
"""
import argparse
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fkbench import DLTensor, Launch, time_ms, rotation_count, write_json  # noqa: E402
import fkbench  # noqa: E402

COPY_BW = 4.2e12
FK_FFTCONV_CAUSAL = 0
FK_FFTCONV_FILTER_CONSTANT = 1


class PlanOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32), ("mode", ctypes.c_int32), ("channels", ctypes.c_int64),
        ("seqlen", ctypes.c_int64), ("filter_len", ctypes.c_int64), ("fft_size", ctypes.c_int64),
        ("dtype", fkbench.DLDataType), ("flags", ctypes.c_uint32),
    ]


class Flashkit(fkbench.Flashkit):
    def __init__(self, path, family="auto"):
        super().__init__(path, family)
        P = ctypes.POINTER
        L = self.lib
        L.fk_fftconv_plan_create.argtypes = [ctypes.c_void_p, P(PlanOptions), P(ctypes.c_void_p)]
        L.fk_fftconv_plan_destroy.argtypes = [ctypes.c_void_p]
        L.fk_fftconv_forward.argtypes = [ctypes.c_void_p, P(Launch)] + [P(DLTensor)] * 6
        L.fk_fftconv_select_kernel.argtypes = [ctypes.c_void_p] + [P(DLTensor)] * 6 + \
            [P(ctypes.c_char_p)]

    def plan(self, H, L, fft_size, dtype, constant):
        o = self.init("fk_fftconv_plan_options_init", PlanOptions)
        o.mode, o.channels, o.seqlen = FK_FFTCONV_CAUSAL, H, L
        o.filter_len, o.fft_size = L, fft_size
        code, bits = fkbench.DL_CODES[dtype]
        o.dtype = fkbench.DLDataType(code, bits, 1)
        o.flags = FK_FFTCONV_FILTER_CONSTANT if constant else 0
        p = ctypes.c_void_p()
        self.check(self.lib.fk_fftconv_plan_create(self.ctx, ctypes.byref(o), ctypes.byref(p)),
                   "fk_fftconv_plan_create")
        return p

    def make_call(self, plan, u, k, D, pre, post, y):
        args = [self.dl(x) for x in (u, k, D, pre, post, y)]
        name = ctypes.c_char_p()
        self.check(self.lib.fk_fftconv_select_kernel(plan, *args, ctypes.byref(name)),
                   "fk_fftconv_select_kernel")
        launch = self.launch()

        def call():
            self.check(self.lib.fk_fftconv_forward(plan, ctypes.byref(launch), *args),
                       "fk_fftconv_forward")
        return call, name.value.decode()


def torch_fftconv(u, k, D, pre, post):
    """Hyena's fftconv reference (fp32 FFTs of size 2L), with the gates around it."""
    L = u.shape[-1]
    n = 2 * L
    if pre is not None:
        u = u * pre
    k_f = torch.fft.rfft(k, n=n) / n
    u_f = torch.fft.rfft(u.to(k.dtype), n=n)
    y = torch.fft.irfft(u_f * k_f, n=n, norm="forward")[..., :L]
    out = y + u.to(k.dtype) * D.unsqueeze(-1)
    if post is not None:
        out = out * post
    return out.to(u.dtype)


def reference64(u, k, D, pre, post):
    L = u.shape[-1]
    n = 2 * L
    v = u.double() * (pre.double() if pre is not None else 1.0)
    y = torch.fft.irfft(torch.fft.rfft(v, n=n) * torch.fft.rfft(k.double(), n=n), n=n)[..., :L]
    y = y + v * D.double().unsqueeze(-1)
    if post is not None:
        y = y * post.double()
    return y


def make_calls(fk, plan, sets, k, D):
    """One fk_fftconv_forward call per input set on `plan`, and the variant they run."""
    calls, variant = [], None
    for (u, y, pre, post) in sets:
        c, variant = fk.make_call(plan, u, k, D, pre, post, y)
        calls.append(c)
    return calls, variant


def alt_time(fk, sets, H, L, N, dt, k, D, args, env):
    """Median ms of a constant plan on `fk`'s context with the variables `env` set in this
    process for the call, and the variant it ran."""
    old = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        plan = fk.plan(H, L, N, dt, True)
        calls, variant = make_calls(fk, plan, sets, k, D)
        ms = time_ms(calls, args.warmup, args.reps)
        fk.lib.fk_fftconv_plan_destroy(plan)
        fk.forget()
        return ms, variant
    finally:
        for name, value in old.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("FLASHKIT_LIB", "build/libflashkit.so"))
    ap.add_argument("--family", default="auto")
    ap.add_argument("--dtype", nargs="+", default=["bf16"])
    ap.add_argument("--seqlens", nargs="+", type=int, default=[256, 1024, 4096, 8192, 16384, 32768])
    ap.add_argument("--channels", type=int, default=768)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--tag", default="")
    ap.add_argument("--gated", choices=["both", "yes", "no"], default="both",
                    help="rows to run: gated and not (default), gated only, or not gated only")
    args = ap.parse_args()
    torch.manual_seed(0)
    fk = Flashkit(args.lib, args.family)
    copy_bw = fkbench.copy_rate()
    print(f"device {torch.cuda.get_device_name()}: copy rate {copy_bw / 1e12:.2f} TB/s (read + write; "
          f"%floor is against issue 8's 4.2 TB/s, %copy against this rate)", flush=True)
    fk80 = None
    dts = {"bf16": torch.bfloat16, "fp16": torch.float16}
    H = args.channels
    rows = []
    print(f"{'dtype':5} {'B':>3} {'L':>6} {'gated':>5} {'variant':25} {'fk const ms':>11} "
          f"{'fk ms':>8} {'fft ms':>8} {'sm80 ms':>8} {'torch ms':>9} {'GB/s':>7} {'%floor':>7} {'%copy':>6} {'x torch':>8} "
          f"{'max err':>9}")
    for dname in args.dtype:
        dt = dts[dname]
        for L in args.seqlens:
            B = max(1, min(args.batch, args.batch * 1024 // L))
            N = 2 * L
            for gated in {"both": (False, True), "yes": (True,), "no": (False,)}[args.gated]:
                el = B * H * L
                set_bytes = el * 2 * (4 if gated else 2)
                nsets = rotation_count(set_bytes, limit=4)
                sets = []
                for _ in range(nsets):
                    u = (0.02 * torch.randn(B, H, L, device="cuda")).to(dt)
                    y = torch.empty_like(u)
                    pre = torch.randn(B, H, L, device="cuda").to(dt) if gated else None
                    post = torch.randn(B, H, L, device="cuda").to(dt) if gated else None
                    sets.append((u, y, pre, post))
                decay = torch.exp(-torch.arange(L, device="cuda") / (0.3 * L))
                k = 0.02 * torch.randn(H, L, device="cuda") * decay
                D = torch.randn(H, device="cuda")
                res = {"dtype": dname, "B": B, "H": H, "L": L, "fft_size": N, "gated": gated}
                for constant in (True, False):
                    plan = fk.plan(H, L, N, dt, constant)
                    calls, variant = make_calls(fk, plan, sets, k, D)
                    ms = time_ms(calls, args.warmup, args.reps)
                    res["fk_const_ms" if constant else "fk_ms"] = ms
                    res["variant"] = variant
                    if constant:
                        # accuracy on a sample of rows of the first set
                        u, y, pre, post = sets[0]
                        calls[0]()
                        torch.cuda.synchronize()
                        nb = min(B, 2)
                        ref = reference64(u[:nb], k, D, pre[:nb] if gated else None,
                                          post[:nb] if gated else None)
                        err = (y[:nb].double() - ref).abs().max().item()
                        res["max_abs_err"] = err
                        res["max_rel_err"] = err / ref.abs().max().item()
                        res["ref_max"] = ref.abs().max().item()
                        tq = torch_fftconv(u[:nb], k, D, pre[:nb] if gated else None,
                                           post[:nb] if gated else None)
                        res["torch_max_abs_err"] = (tq.double() - ref).abs().max().item()
                    fk.lib.fk_fftconv_plan_destroy(plan)
                    fk.forget()
                if "direct" in res["variant"]:
                    # The FFT kernel on the same inputs, same process (constant plan).
                    res["fft_const_ms"], res["fft_variant"] = alt_time(
                        fk, sets, H, L, N, dt, k, D, args, {"FLASHKIT_FFTCONV_DIRECT": "0"})
                if res["variant"] == "cuda.sm90.fftconv_direct":
                    # And the sm80-class direct kernel (the SM80 family's context).
                    if fk80 is None:
                        fk80 = Flashkit(args.lib, "sm80")
                    res["sm80_const_ms"], res["sm80_variant"] = alt_time(
                        fk80, sets, H, L, N, dt, k, D, args, {})
                tcalls = [lambda s=s: torch_fftconv(s[0], k, D, s[2], s[3]) for s in sets]
                try:
                    res["torch_ms"] = time_ms(tcalls, args.warmup, args.reps)
                except torch.OutOfMemoryError:
                    res["torch_ms"] = float("nan")
                floor_bytes = set_bytes + H * (N // 2 + 1) * 8
                res["floor_ms"] = floor_bytes / COPY_BW * 1e3
                best = res["fk_const_ms"]
                res["gbps"] = floor_bytes / (best * 1e-3) / 1e9
                res["pct_floor"] = 100.0 * res["floor_ms"] / best
                res["copy_bw"] = copy_bw
                res["pct_copy"] = 100.0 * floor_bytes / copy_bw * 1e3 / best
                res["ratio_vs_torch"] = res["torch_ms"] / best
                rows.append(res)
                print(f"{dname:5} {B:3d} {L:6d} {str(gated):>5} {res['variant']:25} {best:11.4f} "
                      f"{res['fk_ms']:8.4f} {res.get('fft_const_ms', float('nan')):8.4f} "
                      f"{res.get('sm80_const_ms', float('nan')):8.4f} "
                      f"{res['torch_ms']:9.4f} {res['gbps']:7.0f} "
                      f"{res['pct_floor']:6.1f}% {res['pct_copy']:5.1f}% {res['ratio_vs_torch']:7.1f}x "
                      f"{res['max_rel_err']:9.2e}", flush=True)
                del sets
                torch.cuda.empty_cache()
    out = write_json(f"fftconv_bench{args.tag}.json", args.json,
                     {"device": torch.cuda.get_device_name(), "copy_rate": copy_bw, "rows": rows,
                      "fast": os.environ.get("FLASHKIT_FFTCONV_SM80_FAST", "")})
    print("json:", out)


if __name__ == "__main__":
    main()
