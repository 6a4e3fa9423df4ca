#!/usr/bin/env python3
"""fk_attention_fp8_forward against fk_attention_forward (bf16) and torch SDPA's cuDNN backend
(bf16), in the same process, on the same values.

On Hopper the fp8 call runs the fp8 tensor-core kernel ("cuda.sm90.attention_fp8": e4m3 Q K^T
and P V; at head_dim 128 V is transposed in shared memory inside the kernel, at head_dim 256 one
pass writes V^T first, 2 bytes of traffic per element of v); elsewhere, or with
FLASHKIT_ATTENTION_FP8_DEQUANT=1, it dequantises q, k, v into bf16 scratch and runs the bf16
kernel ("+fp8_dequant"). Reported per cell: ms of each, the fp8 call's TFLOP/s, its speed over
the bf16 call and over cuDNN bf16, and the relative RMS difference between the fp8 output and
the bf16 call's on the dequantised inputs (0 on the dequantising path, which is bit for bit;
the fp8 kernel's rounding of P to e4m3 otherwise). Grid: bf16-standard cells, batch * seqlen =
16384, nheads * head_dim = 2048, head_dim 128, seqlen 512 .. 16k, causal and not; FLOPs =
4 * batch * nheads * seqlen^2 * head_dim (halved for causal).

    python3 benchmarks/attention_fp8.py --lib build-gpu
"""
import argparse
import ctypes
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention import AttnParams  # noqa: E402
import fkbench  # noqa: E402
from fkbench import time_ms, write_json  # noqa: E402


class Flashkit(fkbench.Flashkit):
    def run_fn(self, entry, select, tensors, causal):
        p = self.init("fk_attention_params_init", AttnParams)
        p.causal = 1 if causal else 0
        args = [self.dl(t) for t in tensors]
        name = ctypes.c_char_p()
        self.check(getattr(self.lib, select)(self.ctx, ctypes.byref(p), *args, ctypes.byref(name)),
                   select)
        launch = self.launch()
        fn = getattr(self.lib, entry)

        def run():
            launch.stream = torch.cuda.current_stream().cuda_stream
            self.check(fn(self.ctx, ctypes.byref(launch), ctypes.byref(p), *args), entry)
        run.keep = (args, p, launch)
        run.variant = name.value.decode()
        return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=os.environ.get("FK_LIB", "build-gpu"))
    ap.add_argument("--seqlens", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192, 16384])
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default=None, help="default: $OUT/attention_fp8.json")
    a = ap.parse_args()
    fk = Flashkit(a.lib, "auto")
    d = a.head_dim
    h = 2048 // d
    rows = []
    print(f"{'seqlen':>6} {'causal':>6} {'bf16 ms':>8} {'fp8 ms':>8} {'cuDNN ms':>8} "
          f"{'fp8 TF/s':>8} {'x bf16':>7} {'x cuDNN':>7} {'rmsdiff':>8} variant")
    for s in a.seqlens:
        b = 16384 // s
        for causal in (False, True):
            g = torch.Generator(device="cuda").manual_seed(s)
            q8, k8, v8 = ((torch.randn(b, s, h, d, device="cuda", generator=g) * 2)
                          .to(torch.float8_e4m3fn) for _ in range(3))
            dsc = [torch.rand(b, h, device="cuda", generator=g) * 0.5 + 0.05 for _ in range(3)]
            # The bf16 tensors the fp8 call computes on (dequantised, rounded once).
            qb, kb, vb = (x.float().mul(ds[:, None, :, None]).to(torch.bfloat16)
                          for x, ds in zip((q8, k8, v8), dsc))
            out8 = torch.empty(b, s, h, d, device="cuda", dtype=torch.bfloat16)
            outb = torch.empty_like(out8)
            lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
            run8 = fk.run_fn("fk_attention_fp8_forward", "fk_attention_fp8_select_kernel",
                             (q8, k8, v8, *dsc, None, None, out8, lse), causal)
            runb = fk.run_fn("fk_attention_forward", "fk_attention_select_kernel",
                             (qb, kb, vb, None, None, outb, lse), causal)
            t8 = time_ms(run8, a.warmup, a.reps)
            tb = time_ms(runb, a.warmup, a.reps)
            qt, kt, vt = (x.transpose(1, 2) for x in (qb, kb, vb))

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
            tc = time_ms(cudnn, a.warmup, a.reps)
            run8()
            runb()
            torch.cuda.synchronize()
            diff = ((out8.float() - outb.float()).square().mean().sqrt()
                    / outb.float().square().mean().sqrt()).item()
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            row = dict(seqlen=s, batch=b, nheads=h, head_dim=d, causal=causal, bf16_ms=tb,
                       fp8_ms=t8, cudnn_ms=tc, fp8_tflops=flops / t8 / 1e9,
                       bf16_tflops=flops / tb / 1e9, cudnn_tflops=flops / tc / 1e9,
                       speedup_bf16=tb / t8, speedup_cudnn=tc / t8, rms_diff=diff,
                       variant=run8.variant)
            rows.append(row)
            print(f"{s:>6} {str(causal):>6} {tb:8.4f} {t8:8.4f} {tc:8.4f} {row['fp8_tflops']:8.1f} "
                  f"{tb / t8:7.3f} {tc / t8:7.3f} {diff:8.2g} {run8.variant}", flush=True)
    write_json("attention_fp8.json", a.json, {"rows": rows, "device": torch.cuda.get_device_name()})


if __name__ == "__main__":
    main()
