#!/usr/bin/env python3
"""GEMMs under sustained load: bf16 8192^3 flashkit `a @ b`, torch.matmul, flashkit + bias + GELU
(tanh) and torch's unfused matmul, bias add and GELU, each run back to back for 3 s (two
rounds) while `nvidia-smi` samples the SM clock, board power and throttle reasons every 200 ms.
Prints the time per call of each burst, then the median clock and power inside it. On the
H200 every burst ran at the 700 W cap (throttle reason 0x4), about 1.5 GHz (benchmarks/RESULTS.md,
"GELU epilogue cost, and what power does to 8192^3").

  LD_LIBRARY_PATH=.device/lib FK_LIB=.device/lib/libflashkit.so python3 benchmarks/gemm_power.py
"""
import os, sys, time, subprocess, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import gemm as G

fk = G.Flashkit(os.environ.get("FK_LIB", ".device/lib/libflashkit.so"))
M = N = K = 8192
sets = G.input_sets(M, N, K, torch.bfloat16, "nn", with_bias=True)
calls = {
    "fk": [fk.make_call(a, b, d)[0] for a, b, bi, d in sets],
    "torch": [lambda s=s: torch.matmul(s[0], s[1]) for s in sets],
    "fk+bias+gelu": [fk.make_call(a, b, d, bias=bi, act="gelu_tanh")[0] for a, b, bi, d in sets],
    "torch+bias+gelu": [lambda s=s: torch.nn.functional.gelu(torch.matmul(s[0], s[1]) + s[2], approximate="tanh") for s in sets],
}
mon = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                        "--format=csv,noheader", "-lms", "200"], stdout=subprocess.PIPE, text=True)
time.sleep(1.0)
marks = []
flops = 2.0 * M * N * K
for rnd in range(2):
    for name, cs in calls.items():
        torch.cuda.synchronize()
        t0 = time.time()
        n = 0
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        while time.time() - t0 < 3.0:
            for _ in range(20):
                cs[n % len(cs)]()
                n += 1
            torch.cuda.synchronize()
        ev1.record(); torch.cuda.synchronize()
        ms = ev0.elapsed_time(ev1) / n
        t1 = time.time()
        marks.append((name, t0, t1, ms))
        print(f"round {rnd} {name:16s} {n:5d} calls {ms*1e3:7.1f} us/call {flops/ms*1e-9:6.1f} TFLOP/s", flush=True)
        time.sleep(1.0)
mon.terminate()
out = mon.communicate()[0].strip().splitlines()
import datetime
def ts(line):
    t = line.split(",")[0].strip()
    return datetime.datetime.strptime(t, "%Y/%m/%d %H:%M:%S.%f").timestamp()
rows = []
for l in out:
    try:
        rows.append((ts(l), l))
    except Exception:
        pass
# The device clock and time.time() share the machine clock.
for name, t0, t1, ms in marks:
    inside = [l for t, l in rows if t0 + 0.5 <= t <= t1]
    clk = [float(l.split(",")[1].split()[0]) for l in inside]
    pw = [float(l.split(",")[2].split()[0]) for l in inside]
    thr = sorted(set(l.split(",")[4].strip() for l in inside))
    if clk:
        print(f"{name:16s} {ms*1e3:7.1f} us  SM clock median {statistics.median(clk):.0f} MHz (min {min(clk):.0f})  power median {statistics.median(pw):.0f} W  throttle {thr}")
