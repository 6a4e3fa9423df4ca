#!/usr/bin/env python3
"""Checks on the machine code (SASS) of libflashkit's Hopper kernels, no GPU needed.

  check_sass.py [--fat-binary] LIB   LIB: libflashkit.so of a CUDA build (rule 5 with
                                      --fat-binary)
  check_sass.py --find-tools   exit 0 when cuobjdump and nvdisasm are found (setup-deps.sh)

1. Every Hopper matrix kernel (cuda.sm90.attention, cuda.sm90.gemm and its skinny kernel,
   cuda.sm90.fftconv_direct) issues
   warpgroup MMAs (HGMMA, or QGMMA for FP8) and no warp-level HMMA: a kernel that fell back to
   mma.sync would still pass every correctness test while running at sm80 speed.
2. The plain Hopper attention kernels at head_dim <= 128 (the fp8 ones of
   cuda.sm90.attention_fp8 included) touch no local memory (no LDL/STL
   spill traffic) between their first and last warpgroup MMA, i.e. inside the key-tile loop.
   ptxas places these kernels' spills by heuristics that small source changes move: on the H200
   the same head_dim 128 kernel measured 1.02-1.20x slower with reloads inside the loop than with
   them before the tile loop and after it (benchmarks/RESULTS.md, "Output stores of the Hopper
   attention kernel"). head_dim 192 and 256 (2 and 33 such instructions today) are not held to
   it. Every (head_dim 64/96/128, dtype) must have at least one such kernel in LIB, so that a
   renamed or missing kernel fails instead of escaping the rule. A new CUDA toolkit may move the
   spills: then this test fails on purpose, and the kernels need re-timing. The head_dim 64
   kernel with three consumer warpgroups (192-row tiles, 160 registers per consumer thread) is
   held to it over its overlapped key-tile loop only (from the branch target of the loop's back
   edge to that edge, the loop that issues an S GEMM and a P V GEMM together), which is what
   every default call runs per key tile: its plain S / softmax / P V loop
   (FLASHKIT_SM90_ATTENTION_OVERLAP=0, for diagnosis) reloads one value. Spills in its first S
   GEMM and softmax of a work tile or its last P V (once per work tile) are not held to it.
3. The decode GEMM kernels (gemm_decode_kernel, src/cuda/gemm/sm90/decode.cu) are the exception
   to rule 1 by design: they stream a weight once for M <= 32 token rows, the tensor cores a few
   percent busy, so they use warp-level HMMA (mma.sync). They must issue HMMA and touch no local
   memory at all, and all 15 shapes (16 tokens: 7 K-major and 6 MN-major widths; 32 tokens:
   width 64 of each layout) of each 16-bit dtype must be in LIB.
4. The Hopper GEMM kernels (gemm_sm90_kernel, gemm_sm90_skinny_kernel) and the Hopper direct
   convolution (direct90_kernel, and its streamed form stream90_kernel in a wide and a narrow
   launch shape, per 16-bit dtype) touch no local memory
   between their first and last warpgroup MMA (the k-tile loop; for stream90_kernel the
   product walk, after each item's NaN-check wgmmas). Since the lean copy-engine
   epilogue (sessions 17-18) some keep a stack frame, with its loads and stores outside that
   loop: at 90cbac8, 8 bytes (fp8 3-stage cooperative and fp8 pingpong128), 32 (16-bit 4-stage
   cooperative) or 48 (fp8 4-stage cooperative). The rule keeps those accesses out of the loop.
5. With --fat-binary (what tests/CMakeLists.txt passes when FLASHKIT_CUDA_GENCODE keeps its
   default): every translation unit outside the sm_90a-only Hopper sources carries sm_80 SASS
   and compute_80 PTX (the fat binary that serves Ampere, Ada and, through the PTX, later GPUs;
   the H200 runs the sm_90a copy, so no GPU test here can see a missing one), and the sm80-class
   and generic kernels of every family are among them (`FATBIN_UNITS`; a unit named like a
   Hopper unit, `HOPPER_NAMESAKES`, must carry two sm_90a cubins, its own and the Hopper one's).
   The units the generic paths launch (`TURING_UNITS`) also carry sm_75 SASS, all Turing runs.
   Rule 5 also runs, and decides the exit status, for a build without the Hopper kernels.
6. The sm80-class GEMM kernels (cuda.sm80.gemm's gemm_kernel, 9 per 16-bit dtype), in their
   sm_90a copies (the code the H200 runs and every sm80-class measurement timed), touch no local
   memory between their first and last HMMA (the k-tile loops), and they issue HMMA. Session 22's
   persistent variant (branch persist80) put a spill there until it was restructured. Their
   sm_80 copies (what A100-class GPUs run) are not held to it: in session 22 the mid tile's
   MN-major and KMN kernels and the big tile's KMN kernel keep one STL and one LDL in the
   bounds-checked k-loop there (K tails and edge tiles).

Tools: cuobjdump and nvdisasm from PATH, /usr/local/cuda/bin, or the pip wheels
nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (scripts/setup-deps.sh installs them). Exits 77
(ctest: skipped) when they are missing or LIB holds no sm_90a code, 1 on a violation or when
cuobjdump fails.
"""
import glob
import os
import re
import shutil
import site
import subprocess
import sys

SKIP = 77


def find_tool(name):
    path = shutil.which(name)
    if path:
        return path
    roots = ["/usr/local/cuda/bin"]
    for sp in site.getsitepackages() + [site.getusersitepackages()]:
        roots += glob.glob(os.path.join(sp, "nvidia", "*", "bin"))
    for root in roots:
        cand = os.path.join(root, name)
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def overlapped_loop(body):
    """The lines of the loop that issues an S GEMM (shared-memory A) followed closely by a
    P V GEMM (register A): from the target of the first backward branch after that pair to the
    branch itself. None when there is no such loop."""
    addr = [None] * len(body)
    for i, l in enumerate(body):
        a = re.search(r"/\*([0-9a-f]{4,})\*/", l)
        if a:
            addr[i] = int(a.group(1), 16)
    ss = [i for i, l in enumerate(body) if re.search(r"\bHGMMA\.\S+ R\d+, gdesc", l)]
    rs = [i for i, l in enumerate(body) if re.search(r"\bHGMMA\.\S+ R\d+, R\d+", l)]
    for i in ss:
        if addr[i] is None or not any(i < j <= i + 60 for j in rs):
            continue
        for k in range(i + 1, len(body)):
            b = re.search(r"\bBRA(?:\.\S+)?\s+(?:P\d+,\s*)?0x([0-9a-f]+)", body[k])
            if b and int(b.group(1), 16) <= addr[i]:
                start = int(b.group(1), 16)
                return [l for j, l in enumerate(body[:k + 1]) if addr[j] is not None and addr[j] >= start]
        return None
    return None


def local_accesses(lines):
    """The lines among `lines` that touch local memory (LDL/STL: spill traffic)."""
    return [l.strip() for l in lines if re.search(r"\b(LDL|STL)\b", l)]


def count_failures(kernels, want, label):
    """Failures when `kernels` does not hold `want` kernels for each 16-bit dtype."""
    failures = []
    for dt in ("__half", "__nv_bfloat16"):
        mine = [n for n in kernels if dt in n]
        if len(mine) != want:
            failures.append(f"{len(mine)} {label} kernels for {dt} (want {want}: renamed or missing?)")
    return failures


# Rule 5: the translation units (cuobjdump names cubins and PTX after them) that must hold sm_80
# SASS and compute_80 PTX: the sm80-class kernels of the four families and the generic ones.
FATBIN_UNITS = ("launch_hdim64", "launch_hdim96", "launch_hdim128", "launch_hdim256",  # attention
                "split_kv", "attention_generic",
                "launch_bf16", "launch_f16", "splitk_reduce", "gemm_generic",  # GEMM
                "monarch_sm80", "monarch_generic",  # Monarch
                "fftconv_direct", "fftconv_reg", "fftconv_sm80", "fftconv_generic",  # FFT convolution
                "runtime")


# Rule 5b: the units the generic paths launch also hold sm_75 SASS (Turing runs nothing else:
# sm_80 SASS does not run there and compute_80 PTX cannot be compiled down to it). CMakeLists.txt
# adds the gencode to these files.
TURING_UNITS = ("attention_generic", "split_kv", "fp8_dequant", "gemm_generic",
                "fftconv_generic", "monarch_generic")


# Non-Hopper units that share their file name with an sm_90a-only Hopper unit (src/cuda/attention/
# sm90/launch_hdim*.cu, src/cuda/gemm/sm90/launch_{bf16,f16}.cu): cuobjdump names both cubins
# alike, so in a build with the Hopper kernels such a name must carry two sm_90a cubins.
HOPPER_NAMESAKES = ("launch_hdim64", "launch_hdim96", "launch_hdim128", "launch_hdim256",
                    "launch_bf16", "launch_f16")


def fat_binary_failures(cuobjdump, lib, env, with_hopper):
    """Rule 5: a list of failures (empty when it holds). `with_hopper`: LIB has the sm_90a-only
    Hopper units (then each HOPPER_NAMESAKES name carries two sm_90a cubins)."""
    units = {}  # unit -> {(kind, arch): count}
    for flag, kind in (("--list-elf", "elf"), ("--list-ptx", "ptx")):
        out = subprocess.run([cuobjdump, flag, lib], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            return [f"cuobjdump {flag} exited {out.returncode}: {out.stderr.strip()[:300]}"]
        for m in re.finditer(r"(?:ELF|PTX) file\s+\d+: (\S+?)\.(sm_\w+?)\.(?:cubin|ptx)", out.stdout):
            have = units.setdefault(m.group(1), {})
            have[(kind, m.group(2))] = have.get((kind, m.group(2)), 0) + 1
    failures = []
    for unit in FATBIN_UNITS:
        have = units.get(unit, {})
        want_90a = 2 if (with_hopper and unit in HOPPER_NAMESAKES) else 1
        for want, what, n in ((("elf", "sm_80"), "sm_80 SASS", 1),
                              (("ptx", "sm_80"), "compute_80 PTX", 1),
                              (("elf", "sm_90a"), "sm_90a SASS", want_90a)):
            if have.get(want, 0) < n:
                failures.append(f"{unit}: {have.get(want, 0)} {what} entries in the fat binary "
                                f"(want {n})")
    for unit in TURING_UNITS:
        if units.get(unit, {}).get(("elf", "sm_75"), 0) < 1:
            failures.append(f"{unit}: no sm_75 SASS in the fat binary (want 1: Turing runs it)")
    # Every unit with sm_80 SASS has the PTX too (a new unit is held to it without being listed).
    for unit, have in sorted(units.items()):
        if have.get(("elf", "sm_80"), 0) and not have.get(("ptx", "sm_80"), 0):
            failures.append(f"{unit}: sm_80 SASS without compute_80 PTX")
    return failures


def report_fat_binary(cuobjdump, lib, env, with_hopper):
    fat = fat_binary_failures(cuobjdump, lib, env, with_hopper)
    print(f"check_sass: fat binary, {len(FATBIN_UNITS)} units with sm_80 SASS, compute_80 PTX "
          f"and sm_90a SASS, {len(TURING_UNITS)} with sm_75 SASS: {len(fat)} failures")
    return fat


def main():
    args = sys.argv[1:]
    fat_binary = "--fat-binary" in args
    args = [a for a in args if a != "--fat-binary"]
    if len(args) != 1:
        print(__doc__)
        return 2
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    if args[0] == "--find-tools":
        print(cuobjdump, nvdisasm)
        return 0 if cuobjdump and nvdisasm else 1
    lib = args[0]
    if not cuobjdump or not nvdisasm:
        print("SKIP: cuobjdump / nvdisasm not found (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
        return SKIP
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(nvdisasm) + os.pathsep + env.get("PATH", "")

    listing = subprocess.run([cuobjdump, "--list-text", lib], capture_output=True, text=True, env=env)
    if listing.returncode != 0:
        print(f"FAIL: cuobjdump --list-text {lib} exited {listing.returncode}: {listing.stderr.strip()[:300]}")
        return 1
    names = sorted(set(re.findall(r"-(_Z\w+)\.sm_90a\.elf\.bin", listing.stdout)))
    kernels = [n for n in names if re.search(r"attention_sm90_kernel|gemm_sm90_kernel|gemm_sm90_skinny_kernel|direct90_kernel|stream90_kernel", n)]
    decode = [n for n in names if "gemm_decode_kernel" in n]
    sm80_gemm = [n for n in names if "sm8011gemm_kernel" in n]
    if not kernels:
        if fat_binary:  # rule 5 holds for a build without the Hopper kernels too
            fat = report_fat_binary(cuobjdump, lib, env, with_hopper=False)
            for f in fat:
                print("FAIL:", f)
            if fat:
                return 1
            print(f"check_sass: rules 1-4 not applicable: no Hopper matrix kernel in {lib}")
            return 0
        print(f"SKIP: no Hopper matrix kernel in {lib} (a build without sm_90a code)")
        return SKIP

    run = subprocess.run([cuobjdump, "--dump-sass", "--function", ",".join(kernels + decode + sm80_gemm), lib],
                         capture_output=True, text=True, env=env)
    if run.returncode != 0:
        print(f"FAIL: cuobjdump --dump-sass exited {run.returncode}: {run.stderr.strip()[:300]}")
        return 1
    dump = run.stdout
    # Only the sm_90a copies: the sm80-class GEMM's units also carry sm_80 SASS under the same
    # function names (rule 6 holds the sm_90a ones).
    bodies, current, arch = {}, None, None
    for line in dump.splitlines():
        a = re.match(r"\s*arch = (\S+)", line)
        if a:
            arch, current = a.group(1), None
            continue
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = m.group(1) if arch == "sm_90a" else None
            if current is not None:
                bodies.setdefault(current, [])
        elif current is not None:
            bodies[current].append(line)

    failures, checked = [], 0
    spill_rule = set()  # (head_dim, dtype) pairs with a plain kernel held to rule 2
    for name in kernels:
        body = bodies.get(name)
        if not body:
            failures.append(f"{name}: no SASS found")
            continue
        checked += 1
        mma = [i for i, l in enumerate(body) if re.search(r"\b[HQ]GMMA\b", l)]
        hmma = sum(1 for l in body if re.search(r"\bHMMA\b", l))
        if not mma or hmma:
            failures.append(f"{name}: {len(mma)} warpgroup MMAs, {hmma} HMMA (want > 0 and 0)")
            continue
        if "gemm_sm90" in name or "direct90_kernel" in name or "stream90_kernel" in name:
            span = mma
            if "stream90_kernel" in name:
                # The product walk: its first wgmmas of an item are the NaN check (64x8, once
                # per item, before the tiles), whose set-up may reload a value.
                span = [i for i in mma if "HGMMA.64x8x" not in body[i]] or mma
            local = local_accesses(body[span[0]:span[-1]])
            if local:
                failures.append(f"{name}: {len(local)} local-memory accesses inside the k-tile "
                                f"loop, first: {local[0]}")
            continue
        m = re.search(r"AttentionKernelIN7cutlass\w+?_tELi(\d+)ELi(\d+)ELb([01])E(Li(\d+)E)?", name)
        if m and m.group(3) == "0" and int(m.group(1)) <= 128:
            dt = "bf16" if "bfloat16" in name else "fp8" if "float_e4m3" in name else "fp16"
            spill_rule.add((int(m.group(1)), dt))
            region = body[mma[0]:mma[-1]]
            if m.group(5) == "192":
                region = overlapped_loop(body)
                if region is None:
                    failures.append(f"{name}: no overlapped key-tile loop found")
                    continue
            local = local_accesses(region)
            if local:
                failures.append(f"{name} (head_dim {m.group(1)}, key tile {m.group(2)}): "
                                f"{len(local)} local-memory accesses inside the key-tile loop, first: {local[0]}")
    for hd in (64, 96, 128):
        for dt in ("fp16", "bf16"):
            if (hd, dt) not in spill_rule:
                failures.append(f"no plain attention kernel for head_dim {hd} / {dt} found (renamed?)")
    if (128, "fp8") not in spill_rule:  # cuda.sm90.attention_fp8 (attention_fp8_sm90.cu)
        failures.append("no fp8 attention kernel for head_dim 128 found (renamed?)")
    failures += count_failures([n for n in kernels if "direct90_kernel" in n], 1, "sm90 direct convolution")
    failures += count_failures([n for n in kernels if "stream90_kernel" in n], 2, "sm90 streamed direct convolution")
    failures += count_failures(decode, 15, "decode GEMM")
    for name in decode:
        body = bodies.get(name)
        if not body:
            failures.append(f"{name}: no SASS found")
            continue
        checked += 1
        hmma = sum(1 for l in body if re.search(r"\bHMMA\b", l))
        local = local_accesses(body)
        if not hmma or local:
            failures.append(f"{name}: {hmma} HMMA, {len(local)} local-memory accesses (want > 0 and 0)")
    failures += count_failures(sm80_gemm, 9, "sm80-class GEMM")
    for name in sm80_gemm:  # rule 6 (their sm_90a copies: `names` lists sm_90a cubins only)
        body = bodies.get(name)
        if not body:
            failures.append(f"{name}: no SASS found")
            continue
        checked += 1
        hmma = [i for i, l in enumerate(body) if re.search(r"\bHMMA\b", l)]
        if not hmma:
            failures.append(f"{name}: no HMMA")
            continue
        local = local_accesses(body[hmma[0]:hmma[-1]])
        if local:
            failures.append(f"{name}: {len(local)} local-memory accesses inside the k-tile loops, "
                            f"first: {local[0]}")
    if fat_binary:
        failures += report_fat_binary(cuobjdump, lib, env, with_hopper=True)
    for f in failures:
        print("FAIL:", f)
    print(f"check_sass: {checked} matrix kernels checked ({len(decode)} Hopper decode GEMM, "
          f"{len(sm80_gemm)} sm80-class GEMM), {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
