// fft_size 256..32768 in fp16/bf16 is served first by cuda.sm80.fftconv_reg (fftconv_reg.cu, the
// register-resident form, the row above this one in src/dispatch/tables.cpp); this kernel takes
// what that one declines for shared memory (fft_size 32768 on GPUs with less than ~170 KB per
// block but room for this kernel's 128 KB, e.g. the A100; fft_size <= 8192 rows whose input ring
// does not fit beside the register kernel's tiles) and everything in its range when
// FLASHKIT_FFTCONV_REG=0. On the H200 the register kernel takes every such problem.
//
// sm80-class fused FFT convolution (FlashFFTConv, Fu et al. 2023): one thread block per
// (batch, channel) sequence does load -> FFT -> multiply by the filter spectrum -> inverse FFT
// -> + D * v -> gates in shared memory, with the FFT's small DFTs on the tensor cores
// (mma.sync m16n8k16, bf16 operands, fp32 accumulate). Semantics as in generic/: y = postgate *
// (conv(v, k) + D * v), v = pregate * u, every mode of flashkit.h.
//
// How it is built:
// - Real input, half-size complex FFT. A real row v of length N (= fft_size) is packed as the
//   complex row z[n] = v[2n] + i v[2n+1] of length M = N / 2; one M-point FFT of z gives the
//   N-point spectrum of v through the usual split V[k] = E[k] + W_N^k O[k] (E, O from Z[k] and
//   conj Z[M-k]). After the pointwise product the same identity run backwards gives the M-point
//   spectrum of the packed output, and one inverse M-point FFT gives y[2n] + i y[2n+1].
// - Implicit zero padding: positions >= seqlen are never stored; the first FFT stage reads u
//   (and pregate) and substitutes zeros. When rows are 16-byte aligned, blocks are persistent
//   and copy the next row's u/pregate into shared memory (cp.async) while transforming the
//   current one; otherwise stage 0 reads global memory directly.
// - The M-point FFT is a Monarch / mixed-radix decimation in frequency: radix-16 stages, each
//   one 16 x 16 complex DFT matrix times a 16 x 8 tile of columns per warp on the tensor cores
//   (4 real mma per complex product), twiddles applied to the fp32 accumulators, then (when
//   log2 M is not a multiple of 4) one radix-2/4/8 stage on the CUDA cores. Output is in
//   digit-reversed order; the inverse is the exact mirror (decimation in time, conjugated), so
//   the order never has to be undone: the pointwise step looks positions up by freq_pos().
//   The forward tail stage, the pointwise product and the inverse tail stage are one pass
//   (middle_pass_r: the tail group of frequency k0 pairs with the group of K - k0). Twiddles
//   come from a per-plan table laid out in lane order (coalesced); shared memory is
//   XOR-swizzled against the power-of-two strides. The last inverse stage writes the epilogue
//   straight from its accumulators.
// - Measured on the H200 (benchmarks/fftconv.py, 2026-11-30): correct, but about 1.5 ms at
//   B = 64, H = 768, L = 1K, far from the 12x-over-torch target; neither the tensor-core work
//   (FAST mode: -4%) nor the input loads (prefetch: -3%) is the limit. The likely cause (not
//   yet profiled) is instruction overhead per element (index math, swizzles, 64-bit address
//   arithmetic, shared-memory round trips between stages): the next step is FlashFFTConv's
//   register-resident order-2 form.
// - Precision: data stay fp32 in shared memory; only mma operands are bf16. By default each
//   operand is split as hi + lo (bf16 each) and a product takes hi*hi + hi*lo + lo*hi (3 mma):
//   about 16 mantissa bits per stage, well below the bf16/fp16 rounding of the output.
//   FLASHKIT_FFTCONV_SM80_FAST=1 (diagnostic) keeps only hi*hi (FlashFFTConv-like precision).
// - The filter spectrum (the same forward pipeline on the filter, scaled by 1 / (8M), which
//   folds in the inverse's 1/M and the split's factors of 2) is computed on the GPU: cached in
//   the plan when FK_FFTCONV_FILTER_CONSTANT is set, else once per call.
// - fp32 u/y stay on the generic kernel (fp32 outputs deserve fp32 FFTs); fft_size outside
//   [256, 32768] or beyond the block's shared memory declines (the outer HBM pass of
//   FlashFFTConv for larger sizes is not written yet).
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/fftconv_plan_cache.h"
#include "cuda/common/scratch.h"
#include "cuda/fftconv/common/conv_io.cuh"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

constexpr int kMinLogN = 8;   // fft_size 256: M = 128, one 16 x 8 tile
constexpr int kMaxLogN = 15;  // fft_size 32768: M = 16384 complex fp32 = 128 KB of shared memory

using conv::cmul;
using conv::cmul_conj;
using conv::load_v;
using conv::log2_exact;
using conv::small_dft;
using conv::twiddle_kernel;

struct Args : conv::ConvIO {
  const float2* tw;  // tw[e] = exp(-2 pi i e / N), e < N / 2
  // The radix-16 stages' twiddles in the order the lanes use them (lane_tw_index), so that a
  // warp reads 256 contiguous bytes per twiddle instead of gathering 32 scattered ones.
  const float2* lane_tw;
  int log_n, log_m;  // M = N / 2
  int stages;        // radix-16 stages
  int log_tail;      // the last stage has radix 2^log_tail (0: none)
  int split;         // 1: hi/lo bf16 operands (3 mma per product); 0: hi only
  // > 0: the next row's u (and pregate) is copied into shared memory (cp.async, this many
  // elements per array, a multiple of 8) while the current row is transformed.
  int stage_len;
};

// W_N^e for any e >= 0 (W_N^(e + N/2) = -W_N^e); branch-free so that loads can be batched.
__device__ __forceinline__ float2 tw_n(const Args& a, int64_t e) {
  const int64_t half = a.N >> 1;
  const float2 t = a.tw[e & (half - 1)];
  const float sg = (e & half) ? -1.0f : 1.0f;
  return make_float2(sg * t.x, sg * t.y);
}

// Shared-memory slot of element i of the row: the 16 float2 of a 128-byte line are permuted by
// the XOR of i's higher hexadecimal digits, so that the strided column accesses of the radix-16
// stages (stride m = 16^k) spread over the banks instead of hitting 4 of them.
__device__ __forceinline__ int sw(int i) {
  return i ^ ((i >> 4) & 15) ^ ((i >> 8) & 15) ^ ((i >> 12) & 15);
}

// Index of slot `slot` of lane `lane` for tile `tile` of radix-16 stage s: slots 0..3 are the
// forward stage's output twiddles (output (e, h): W_Ls^(j q)), slots 4..7 the inverse stage's
// input twiddles (input row i: W_Ls^(j r), applied conjugated).
__host__ __device__ __forceinline__ int64_t lane_tw_index(int s, int tiles, int tile, int slot,
                                                          int lane) {
  return ((int64_t(s) * tiles + tile) * 8 + slot) * 32 + lane;
}

// Position in the digit-reversed FFT output of frequency k (0 <= k < M).
__device__ __forceinline__ int freq_pos(const Args& a, int k) {
  int p = 0, rem = a.log_m;
  for (int s = 0; s < a.stages; ++s) {
    rem -= 4;
    p += (k & 15) << rem;
    k >>= 4;
  }
  return p + k;
}

// ---- operands ----------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t pack_bf16(float x0, float x1) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  return *reinterpret_cast<uint32_t*>(&h);
}
// hi = bf16(x), lo = bf16(x - hi), packed in pairs.
__device__ __forceinline__ void split_pack(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const float2 hf = __bfloat1622float2(h);
  hi = *reinterpret_cast<const uint32_t*>(&h);
  lo = pack_bf16(x0 - hf.x, x1 - hf.y);
}

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A-operand fragments of the 16 x 16 DFT matrix F[q][r] = W_16^(q r): real and imaginary
// parts, each as hi and lo bf16. Register i of a lane (g = lane / 4, t =
// lane % 4) holds row g + 8 (i & 1), columns 2t + 8 (i >> 1) + {0, 1}.
struct Dft16 {
  uint32_t rh[4], rl[4], ih[4], il[4];
};

__device__ __forceinline__ void make_dft16(Dft16& f) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i & 1), col = 2 * t + 8 * (i >> 1);
    float c[2], s[2];
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int idx = (row * (col + e)) & 15;
      sincospif(-static_cast<float>(idx) / 8.0f, &s[e], &c[e]);
    }
    split_pack(c[0], c[1], f.rh[i], f.rl[i]);
    split_pack(s[0], s[1], f.ih[i], f.il[i]);
  }
}

// y = F x (INV: conj(F) x) for one 16 x 8 tile of complex columns. x[0..3] are the lane's
// B-operand elements: rows 2t, 2t + 1, 2t + 8, 2t + 9 of column g. yr/yi come back in the
// accumulator layout: [0], [1] row g, columns 2t, 2t + 1; [2], [3] row g + 8.
template <bool INV>
__device__ __forceinline__ void dft16_tile(const Dft16& f, int split, const float2 (&x)[4],
                                           float (&yr)[4], float (&yi)[4]) {
  uint32_t rh0, rl0, rh1, rl1, ih0, il0, ih1, il1;
  split_pack(x[0].x, x[1].x, rh0, rl0);
  split_pack(x[2].x, x[3].x, rh1, rl1);
  split_pack(x[0].y, x[1].y, ih0, il0);
  split_pack(x[2].y, x[3].y, ih1, il1);
#pragma unroll
  for (int i = 0; i < 4; ++i) yr[i] = yi[i] = 0.0f;
  // Forward: yr = Fr xr - Fi xi, yi = Fr xi + Fi xr. Inverse: the signs of Fi flip. A sign
  // goes on the B operand (flipping the bf16 sign bits is exact).
  constexpr uint32_t kNeg = 0x80008000u;
  const uint32_t s1 = INV ? 0u : kNeg, s2 = INV ? kNeg : 0u;
  mma16816(yr, f.rh, rh0, rh1);
  mma16816(yr, f.ih, ih0 ^ s1, ih1 ^ s1);
  mma16816(yi, f.rh, ih0, ih1);
  mma16816(yi, f.ih, rh0 ^ s2, rh1 ^ s2);
  if (split) {
    mma16816(yr, f.rh, rl0, rl1);
    mma16816(yr, f.rl, rh0, rh1);
    mma16816(yr, f.ih, il0 ^ s1, il1 ^ s1);
    mma16816(yr, f.il, ih0 ^ s1, ih1 ^ s1);
    mma16816(yi, f.rh, il0, il1);
    mma16816(yi, f.rl, ih0, ih1);
    mma16816(yi, f.ih, rl0 ^ s2, rl1 ^ s2);
    mma16816(yi, f.il, rh0 ^ s2, rh1 ^ s2);
  }
}

// ---- asynchronous copies (the next row's input while this one is transformed) -------------

// cp.async: cp_async_16 / cp_async_commit / cp_async_wait_all of
// cuda/attention/sm80/primitives.cuh.

// ---- sources and the epilogue ------------------------------------------------------------------

// u, y and the gates are fp16 or bf16 here (the predicate). Hot loads fetch raw 16-bit values
// first and convert afterwards: a conversion inside a per-dtype switch right after each load
// would make every load wait for the previous one.
__device__ __forceinline__ uint16_t ld16(const void* base, int64_t i) {
  return static_cast<const uint16_t*>(base)[i];
}
__device__ __forceinline__ float cvt16(uint16_t r, bool bf16) {
  return bf16 ? __uint_as_float(uint32_t(r) << 16) : __half2float(__ushort_as_half(r));
}

// Element t (< N) of channel c's real length-N filter (conv::load_filter's placement, the same
// as generic/), unscaled: the spectrum kernel folds the scale in.
__device__ __forceinline__ float load_filter(const Args& a, int64_t c, int64_t t) {
  return conv::load_filter(a, c, t, 1.0f);
}

// z[n] = x[2n] + i x[2n + 1] of the real row being transformed: the signal (b, c) or, for
// b < 0, the filter of channel c.
__device__ __forceinline__ float2 load_z(const Args& a, int64_t b, int64_t c, int n) {
  const int64_t t = 2 * int64_t(n);
  if (b < 0) return make_float2(load_filter(a, c, t), load_filter(a, c, t + 1));
  float2 z = make_float2(0.0f, 0.0f);
  if (t < a.L) z.x = load_v(a, b, c, t);
  if (t + 1 < a.L) z.y = load_v(a, b, c, t + 1);
  return z;
}

// Starts copying row `row`'s u (and pregate) into su (sp): 16-byte chunks, the last one
// zero-filled past seqlen. The host enables this only for 16-byte aligned rows.
__device__ __forceinline__ void stage_row(const Args& a, uint16_t* su, uint16_t* sp,
                                          int64_t row) {
  const int64_t c = row / a.batch, b = row % a.batch;
  const uint16_t* gu = static_cast<const uint16_t*>(a.u) + b * a.u_bs + c * a.u_cs;
  const uint16_t* gp = a.pre != nullptr
                           ? static_cast<const uint16_t*>(a.pre) + b * a.pre_bs + c * a.pre_cs
                           : nullptr;
  const int chunks = static_cast<int>((a.L + 7) / 8);
  for (int ch = threadIdx.x; ch < chunks; ch += blockDim.x) {
    const int64_t left = 2 * (a.L - 8 * int64_t(ch));
    const int bytes = left < 16 ? static_cast<int>(left) : 16;
    cp_async_16(smem_u32(su + 8 * ch), gu + 8 * ch, bytes);
    if (gp != nullptr) cp_async_16(smem_u32(sp + 8 * ch), gp + 8 * ch, bytes);
  }
  cp_async_commit();
}

// ---- the FFT stages ----------------------------------------------------------------------------

// Forward radix-16 DIF stage s (sub-length Ls = M / 16^s, stride m = Ls / 16): column c =
// (block c / m, offset j = c % m) holds elements base + r m, r < 16; output q gets W_Ls^(j q) and
// goes to base + q m. Stage 0 reads the row from global memory (b, c) instead of buf.
__device__ __forceinline__ void forward_stage(const Args& a, const Dft16& f, float2* buf, int s,
                                              int64_t b, int64_t c, const uint16_t* su,
                                              const uint16_t* sp) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int log_ls = a.log_m - 4 * s, log_mm = log_ls - 4, m = 1 << log_mm;
  const int tiles = 1 << (a.log_m - 7);
  const int rows[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
  for (int tile = warp; tile < tiles; tile += nwarps) {
    const int cin = tile * 8 + g;
    const int base_in = ((cin >> log_mm) << log_ls) + (cin & (m - 1));
    float2 x[4];
    if (s > 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = buf[sw(base_in + rows[i] * m)];
    } else if (b < 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = load_z(a, b, c, base_in + rows[i] * m);
    } else {
      // Stage 0 of a signal row: all 8 elements (and gates) loaded before any is converted;
      // positions >= L are the implicit zero padding.
      uint16_t ru[8], rp[8];
      const int64_t ub = b * a.u_bs + c * a.u_cs, pb = b * a.pre_bs + c * a.pre_cs;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int64_t tpos = 2 * int64_t(base_in + rows[i >> 1] * m) + (i & 1);
        const bool in = tpos < a.L;
        if (su != nullptr) {  // staged in shared memory
          ru[i] = in ? su[tpos] : uint16_t(0);
          rp[i] = (in && a.pre != nullptr) ? sp[tpos] : uint16_t(0);
        } else {
          ru[i] = in ? ld16(a.u, ub + tpos) : uint16_t(0);
          rp[i] = (in && a.pre != nullptr) ? ld16(a.pre, pb + tpos) : uint16_t(0);
        }
      }
      const bool bf16 = a.dtype == DType::BF16;
      float v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        v[i] = cvt16(ru[i], bf16);
        if (a.pre != nullptr) v[i] *= cvt16(rp[i], bf16);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) x[i] = make_float2(v[2 * i], v[2 * i + 1]);
    }
    const float2* lt = a.lane_tw + lane_tw_index(s, tiles, tile, 0, lane);
    float2 w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = __ldg(lt + 32 * i);
    float yr[4], yi[4];
    dft16_tile<false>(f, a.split, x, yr, yi);
    __syncwarp();
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int cout = tile * 8 + 2 * t + e, j = cout & (m - 1);
      const int base_out = ((cout >> log_mm) << log_ls) + j;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int q = g + 8 * h;
        buf[sw(base_out + q * m)] = cmul(make_float2(yr[2 * h + e], yi[2 * h + e]), w[2 * e + h]);
      }
    }
  }
  __syncthreads();
}

// Inverse radix-16 DIT stage s: the mirror of forward_stage (conjugate twiddle on the way in,
// conj(F) on the tensor cores). Stage 0 is the last one: it writes the epilogue of row (b, c).
__device__ __forceinline__ void inverse_stage(const Args& a, const Dft16& f, float2* buf, int s,
                                              int64_t b, int64_t c, float dc) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int log_ls = a.log_m - 4 * s, log_mm = log_ls - 4, m = 1 << log_mm;
  const int tiles = 1 << (a.log_m - 7);
  const int rows[4] = {2 * t, 2 * t + 1, 2 * t + 8, 2 * t + 9};
  for (int tile = warp; tile < tiles; tile += nwarps) {
    const int cin = tile * 8 + g, jin = cin & (m - 1);
    const int base_in = ((cin >> log_mm) << log_ls) + jin;
    const float2* lt = a.lane_tw + lane_tw_index(s, tiles, tile, 4, lane);
    float2 x[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      x[i] = cmul_conj(buf[sw(base_in + rows[i] * m)], __ldg(lt + 32 * i));
    float yr[4], yi[4];
    dft16_tile<true>(f, a.split, x, yr, yi);
    __syncwarp();
    // Last stage: the epilogue's inputs (v for D, postgate) are loaded all together before
    // the stores, so that their latencies overlap instead of serialising with the stores (y may
    // alias u, so the compiler keeps loads after earlier stores).
    float ev[8], ep[8];
    if (s == 0) {
      uint16_t ru[8], rq[8], rp[8];
      const int64_t ub = b * a.u_bs + c * a.u_cs, qb = b * a.pre_bs + c * a.pre_cs;
      const int64_t pb = b * a.post_bs + c * a.post_cs;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const int e = i >> 2, h = (i >> 1) & 1;
        const int64_t tpos = 2 * int64_t(tile * 8 + 2 * t + e + (g + 8 * h) * m) + (i & 1);
        const bool in = tpos < a.L;
        ru[i] = (in && a.D != nullptr) ? ld16(a.u, ub + tpos) : uint16_t(0);
        rq[i] = (in && a.D != nullptr && a.pre != nullptr) ? ld16(a.pre, qb + tpos) : uint16_t(0);
        rp[i] = (in && a.post != nullptr) ? ld16(a.post, pb + tpos) : uint16_t(0);
      }
      const bool bf16 = a.dtype == DType::BF16;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        ev[i] = cvt16(ru[i], bf16);
        if (a.pre != nullptr) ev[i] *= cvt16(rq[i], bf16);
        ep[i] = a.post != nullptr ? cvt16(rp[i], bf16) : 1.0f;
      }
    }
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int cout = tile * 8 + 2 * t + e;
      const int base_out = ((cout >> log_mm) << log_ls) + (cout & (m - 1));
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = g + 8 * h, addr = base_out + r * m;
        if (s > 0) {
          buf[sw(addr)] = make_float2(yr[2 * h + e], yi[2 * h + e]);
        } else {
          // Stage 0 has m = M / 16 and one block, so addr = cout + r m as in the loads above.
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const int i = 4 * e + 2 * h + q;
            const int64_t tpos = 2 * int64_t(addr) + q;
            if (tpos < a.L) {
              const float val = fmaf(dc, ev[i], q == 0 ? yr[2 * h + e] : yi[2 * h + e]) * ep[i];
              store_float(a.y, a.dtype, b * a.y_bs + c * a.y_cs + tpos, val);
            }
          }
        }
      }
    }
  }
  __syncthreads();
}

// The forward radix-R tail stage (sub-length R, stride 1, no twiddles): a plain R-point DFT
// on each group of R adjacent positions. (In the convolution it is part of middle_pass.)
template <int R>
__device__ void tail_stage_r(const Args& a, float2* buf);

__device__ void tail_stage(const Args& a, float2* buf);

// Forward M-point FFT of the packed row (b, c) (b < 0: channel c's filter) into buf.
__device__ __forceinline__ void forward_fft(const Args& a, const Dft16& f, float2* buf, int64_t b,
                                            int64_t c) {
  for (int s = 0; s < a.stages; ++s) forward_stage(a, f, buf, s, b, c, nullptr, nullptr);
  tail_stage(a, buf);
}

// Real-input split at frequency pair (k, M - k): X[k] and X[M - k] (twice the N-point
// spectrum of the real row) from the packed spectrum Z at those frequencies.
__device__ __forceinline__ void split_real(float2 zk, float2 zc, float2 w, float2& xk,
                                           float2& xc) {
  const float2 A = make_float2(zk.x + zc.x, zk.y - zc.y);   // Z[k] + conj Z[M-k]
  const float2 Bv = make_float2(zk.x - zc.x, zk.y + zc.y);  // Z[k] - conj Z[M-k]
  const float2 wo = cmul(w, make_float2(Bv.y, -Bv.x));      // W_N^k * (-i) Bv
  xk = make_float2(A.x + wo.x, A.y + wo.y);
  xc = make_float2(A.x - wo.x, -(A.y - wo.y));
}

// New packed spectrum at frequency k: the N-point spectrum X of the real row from Z[k] and
// Z[M - k] (zc), times the filter spectrum (sk at k, sc at M - k), mapped back to the packed
// spectrum of the real output.
__device__ __forceinline__ float2 pointwise(float2 zk, float2 zc, float2 sk, float2 sc, float2 w) {
  float2 xk, xc;
  split_real(zk, zc, w, xk, xc);
  const float2 yk = cmul(xk, sk), yc = cmul(xc, sc);
  const float2 P = make_float2(yk.x + yc.x, yk.y - yc.y);  // Y[k] + conj Y[M-k]
  const float2 Q = cmul_conj(make_float2(yk.x - yc.x, yk.y + yc.y), w);
  return make_float2(P.x - Q.y, P.y + Q.x);  // P + i Q
}

// One pass over shared memory for the middle of the convolution: the forward radix-R tail
// stage, the pointwise product and the inverse tail stage. The tail groups R * P(k0) + d hold
// frequencies k0 + K d (K = M / R, d < R), and the partners M - k of group k0 all lie in group
// K - k0, so a thread takes the two groups together (one when k0 is 0 or K / 2).
template <int R>
__device__ __forceinline__ void middle_pass_r(const Args& a, float2* buf, const float2* sc) {
  const int M = 1 << a.log_m, K = M / R;
  for (int k0 = threadIdx.x; k0 <= K / 2; k0 += blockDim.x) {
    const int k1 = (K - k0) & (K - 1);
    const int pa = freq_pos(a, k0), pb = freq_pos(a, k1);
    float2 za[R], zb[R];
#pragma unroll
    for (int d = 0; d < R; ++d) za[d] = buf[sw(pa + d)];
    if (R > 1) small_dft<R, false>(za);
    if (k0 == 0) {  // partner of d is (R - d) mod R in the same group; k = 0 pairs with M
#pragma unroll
      for (int d = 0; d < R; ++d) {
        const int dp = (R - d) % R;
        if (dp < d) continue;
        const int k = K * d, kp = K * dp;
        const float2 n0 = pointwise(za[d], za[dp], sc[k], sc[M - k], tw_n(a, k));
        if (dp != d) za[dp] = pointwise(za[dp], za[d], sc[kp], sc[M - kp], tw_n(a, kp));
        za[d] = n0;
      }
    } else if (k1 == k0) {  // k0 = K / 2: partner of d is R - 1 - d in the same group
#pragma unroll
      for (int d = 0; d < R; ++d) {
        const int dp = R - 1 - d;
        if (dp < d) continue;
        const int k = k0 + K * d, kp = k0 + K * dp;
        const float2 n0 = pointwise(za[d], za[dp], sc[k], sc[M - k], tw_n(a, k));
        if (dp != d) za[dp] = pointwise(za[dp], za[d], sc[kp], sc[M - kp], tw_n(a, kp));
        za[d] = n0;
      }
    } else {  // partner of (k0, d) is (k1, R - 1 - d)
#pragma unroll
      for (int d = 0; d < R; ++d) zb[d] = buf[sw(pb + d)];
      if (R > 1) small_dft<R, false>(zb);
#pragma unroll
      for (int d = 0; d < R; ++d) {
        const int dp = R - 1 - d;
        const int k = k0 + K * d, kp = k1 + K * dp;
        const float2 n0 = pointwise(za[d], zb[dp], sc[k], sc[M - k], tw_n(a, k));
        zb[dp] = pointwise(zb[dp], za[d], sc[kp], sc[M - kp], tw_n(a, kp));
        za[d] = n0;
      }
      if (R > 1) small_dft<R, true>(zb);
#pragma unroll
      for (int d = 0; d < R; ++d) buf[sw(pb + d)] = zb[d];
    }
    if (R > 1) small_dft<R, true>(za);
#pragma unroll
    for (int d = 0; d < R; ++d) buf[sw(pa + d)] = za[d];
  }
  __syncthreads();
}

template <int R>
__device__ void tail_stage_r(const Args& a, float2* buf) {
  const int groups = (1 << a.log_m) / R;
  for (int grp = threadIdx.x; grp < groups; grp += blockDim.x) {
    float2 x[R];
#pragma unroll
    for (int i = 0; i < R; ++i) x[i] = buf[sw(grp * R + i)];
    small_dft<R, false>(x);
#pragma unroll
    for (int q = 0; q < R; ++q) buf[sw(grp * R + q)] = x[q];
  }
  __syncthreads();
}

__device__ void tail_stage(const Args& a, float2* buf) {
  switch (a.log_tail) {
    case 1: tail_stage_r<2>(a, buf); break;
    case 2: tail_stage_r<4>(a, buf); break;
    case 3: tail_stage_r<8>(a, buf); break;
    default: break;
  }
}

// ---- kernels -----------------------------------------------------------------------------------

// spec[c * (M + 1) + k] = (N-point spectrum of channel c's filter)[k] / (4 M), k = 0 .. M.
__global__ void __launch_bounds__(256) spectrum_kernel(const Args a, float2* spec) {
  extern __shared__ float2 buf[];
  Dft16 f;
  make_dft16(f);
  const int M = 1 << a.log_m;
  const float scale = 1.0f / (8.0f * static_cast<float>(M));
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    forward_fft(a, f, buf, -1, c);
    float2* sc = spec + c * (M + 1);
    for (int k = threadIdx.x; k <= M / 2; k += blockDim.x) {
      const int kc = M - k;
      float2 xk, xc;
      split_real(buf[sw(freq_pos(a, k))], buf[sw(freq_pos(a, kc & (M - 1)))], tw_n(a, k), xk, xc);
      sc[k] = make_float2(xk.x * scale, xk.y * scale);
      if (kc != k) sc[kc] = make_float2(xc.x * scale, xc.y * scale);
    }
    __syncthreads();
  }
}

// One block per (batch, channel) row, channel-major so that the blocks sharing a spectrum run
// together. One instance per tail radix R = 2^LOG_TAIL (registers differ a lot between them).
template <int LOG_TAIL>
__global__ void __launch_bounds__(256, 2) conv_kernel(const Args a, const float2* spec) {
  extern __shared__ float2 buf[];
  Dft16 f;
  make_dft16(f);
  const int M = 1 << a.log_m;
  const int64_t rows = a.batch * a.channels;
  uint16_t* su = a.stage_len > 0 ? reinterpret_cast<uint16_t*>(buf + M) : nullptr;
  uint16_t* sp = su != nullptr ? su + a.stage_len : nullptr;
  if (su != nullptr && blockIdx.x < rows) stage_row(a, su, sp, blockIdx.x);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t c = row / a.batch, b = row % a.batch;
    if (su != nullptr) {
      cp_async_wait_all();
      __syncthreads();
    }
    for (int s = 0; s < a.stages; ++s) {
      forward_stage(a, f, buf, s, b, c, su, sp);
      // Stage 0 has consumed the staged row (it ends with __syncthreads): fetch the next one.
      if (s == 0 && su != nullptr && row + gridDim.x < rows) stage_row(a, su, sp, row + gridDim.x);
    }
    middle_pass_r<1 << LOG_TAIL>(a, buf, spec + c * (M + 1));
    const float dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
    for (int s = a.stages - 1; s >= 0; --s) inverse_stage(a, f, buf, s, b, c, dc);
  }
}

// tw[e] = exp(-2 pi i e / n), e < n / 2, rounded once from double precision.
// lane_tw for every radix-16 stage of an N-point plan (M = N / 2), from double precision.
__global__ void lane_twiddle_kernel(float2* lt, int log_n) {
  const int log_m = log_n - 1, stages = log_m / 4, tiles = 1 << (log_m - 7);
  const int64_t total = int64_t(stages) * tiles * 8 * 32;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int lane = static_cast<int>(idx & 31), slot = static_cast<int>((idx >> 5) & 7);
    const int64_t st = idx >> 8;
    const int tile = static_cast<int>(st % tiles), s = static_cast<int>(st / tiles);
    const int g = lane >> 2, t = lane & 3;
    const int log_ls = log_m - 4 * s, m = 1 << (log_ls - 4);
    int64_t e;
    if (slot < 4) {  // forward output (e, h) = (slot >> 1, slot & 1): W_Ls^(j q)
      const int cout = tile * 8 + 2 * t + (slot >> 1), q = g + 8 * (slot & 1);
      e = int64_t(cout & (m - 1)) * q;
    } else {  // inverse input row r of column g: W_Ls^(j r)
      const int i = slot - 4, r = 2 * t + (i & 1) + 8 * (i >> 1);
      const int cin = tile * 8 + g;
      e = int64_t(cin & (m - 1)) * r;
    }
    double sn, cs;
    sincospi(-2.0 * static_cast<double>(e) / static_cast<double>(int64_t(1) << log_ls), &sn, &cs);
    lt[idx] = make_float2(static_cast<float>(cs), static_cast<float>(sn));
  }
}

// ---- host side ---------------------------------------------------------------------------------


size_t smem_bytes(int64_t N) { return sizeof(float2) * static_cast<size_t>(N / 2); }

int threads_for(int log_m) {
  // A warp per 16 x 8 tile of a stage, between 2 and 8 warps.
  return std::min(256, std::max(64, (1 << (log_m - 7)) * 32));
}

// Diagnostic: FLASHKIT_FFTCONV_SM80_FAST=1 drops the lo halves of the mma operands.
int split_mode() {
  static const int mode = [] {
    const char* e = std::getenv("FLASHKIT_FFTCONV_SM80_FAST");
    return (e != nullptr && e[0] == '1') ? 0 : 1;
  }();
  return mode;
}

// float2 entries of the twiddle tables of an N-point plan: tw (N / 2), then lane_tw.
int64_t lane_tw_count(int log_n) {
  const int log_m = log_n - 1;
  return int64_t(log_m / 4) * (int64_t(1) << (log_m - 7)) * 8 * 32;
}
int64_t twiddle_count(int log_n) { return (int64_t(1) << (log_n - 1)) + lane_tw_count(log_n); }

// Fills both tables at tw (twiddle_count(log_n) entries).
// FLASHKIT_FFTCONV_SM80_PREFETCH=0 (diagnostic) turns the cp.async prefetch of the next row off.
bool prefetch_mode() {
  static const bool on = [] {
    const char* e = std::getenv("FLASHKIT_FFTCONV_SM80_PREFETCH");
    return !(e != nullptr && e[0] == '0');
  }();
  return on;
}

fk_status_t launch_twiddles(float2* tw, int log_n, cudaStream_t stream) {
  const int64_t n = int64_t(1) << log_n, half = n / 2;
  twiddle_kernel<<<static_cast<unsigned>(std::min<int64_t>((half + 255) / 256, 4096)), 256, 0,
                   stream>>>(tw, n);
  FK_RETURN_IF_ERROR(check_launch("cuda.sm80.fftconv twiddle kernel"));
  const int64_t lanes = lane_tw_count(log_n);
  lane_twiddle_kernel<<<static_cast<unsigned>(std::min<int64_t>((lanes + 255) / 256, 4096)), 256,
                        0, stream>>>(tw + half, log_n);
  return check_launch("cuda.sm80.fftconv lane twiddle kernel");
}

fk_status_t allow_smem(const void* kernel, size_t bytes) {
  return conv::allow_smem(kernel, bytes,
                          "cuda.sm80.fftconv: cudaFuncSetAttribute(max dynamic shared memory)");
}

fk_status_t compute_spectrum(const Args& a, float2* spec, cudaStream_t stream) {
  const size_t smem = smem_bytes(a.N);
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(spectrum_kernel), smem));
  spectrum_kernel<<<grid_for(a.channels), threads_for(a.log_m), smem, stream>>>(a, spec);
  return check_launch("cuda.sm80.fftconv filter spectrum kernel");
}

size_t conv_smem_bytes(const Args& a) {
  return smem_bytes(a.N) + sizeof(uint16_t) * static_cast<size_t>(a.stage_len) *
                               (a.pre != nullptr ? 2 : 1);
}

template <int LOG_TAIL>
fk_status_t run_conv_t(const Args& a, const float2* spec, int sm_count, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(conv_kernel<LOG_TAIL>);
  const size_t smem = conv_smem_bytes(a);
  const int threads = threads_for(a.log_m);
  FK_RETURN_IF_ERROR(allow_smem(kernel, smem));
  const int64_t rows = a.batch * a.channels;
  int64_t grid = rows;
  if (a.stage_len > 0) {
    // Prefetching needs a block to own several rows: as many blocks as fit at once.
    int per_sm = 0;
    FK_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem),
                "cuda.sm80.fftconv: occupancy");
    grid = std::min<int64_t>(rows, int64_t(std::max(per_sm, 1)) * std::max(sm_count, 1));
  }
  conv_kernel<LOG_TAIL><<<grid_for(grid), threads, smem, stream>>>(a, spec);
  return check_launch("cuda.sm80.fftconv fused kernel");
}

fk_status_t run_conv(const Args& a, const float2* spec, int sm_count, cudaStream_t stream) {
  switch (a.log_tail) {
    case 0: return run_conv_t<0>(a, spec, sm_count, stream);
    case 1: return run_conv_t<1>(a, spec, sm_count, stream);
    case 2: return run_conv_t<2>(a, spec, sm_count, stream);
    default: return run_conv_t<3>(a, spec, sm_count, stream);
  }
}

}  // namespace

bool fftconv_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major < 8) return false;
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;  // fp32 stays on generic
  const int64_t N = p.fft_size;
  if (N < (int64_t(1) << kMinLogN) || N > (int64_t(1) << kMaxLogN) || (N & (N - 1)) != 0)
    return false;
  if (static_cast<int64_t>(smem_bytes(N)) > caps.smem_per_block_optin) return false;
  return p.seqlen <= N && p.filter_len > 0;
}

// The half-size spectrum of every channel (fp32 complex).
static int64_t spectrum_bytes(const FFTConvProblem& p) {
  return (p.fft_size / 2 + 1) * p.channels * static_cast<int64_t>(sizeof(float2));
}

uint64_t fftconv_workspace(const DeviceCaps&, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return 0;
  // With a plan (every C API call) the twiddles are the plan's; a constant filter's spectrum
  // is cached there too.
  const uint64_t spec = p.filter_constant && p.state ? 0 : uint64_t(spectrum_bytes(p));
  const uint64_t tw =
      p.state ? 0 : sizeof(float2) * uint64_t(twiddle_count(log2_exact(p.fft_size)));
  return workspace_for({tw, spec});
}

fk_status_t fftconv(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  const int64_t N = p.fft_size;
  FK_RETURN_IF_ERROR(conv::check_plan(p, kMinLogN, kMaxLogN, "cuda.sm80.fftconv"));
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  int device = 0;
  FK_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");

  Args a;
  static_cast<conv::ConvIO&>(a) = conv::conv_io(p);
  a.log_n = log2_exact(N);
  a.log_m = a.log_n - 1;
  a.stages = a.log_m / 4;
  a.log_tail = a.log_m % 4;
  a.split = split_mode();
  // Prefetch the next row through cp.async when rows are 16-byte aligned and it fits.
  a.stage_len = 0;
  const int sm_count = ctx.caps != nullptr ? ctx.caps->sm_count : 0;
  if (prefetch_mode() && sm_count > 0 &&
      conv::rows_aligned(p.u, 16, p.u_batch_stride, p.u_channel_stride) &&
      conv::rows_aligned(p.pregate, 16, p.pre_batch_stride, p.pre_channel_stride)) {
    a.stage_len = static_cast<int>((p.seqlen + 7) / 8 * 8);
    if (static_cast<int64_t>(conv_smem_bytes(a)) > ctx.caps->smem_per_block_optin) a.stage_len = 0;
  }

  ScratchArena arena(ctx);
  const int64_t spec_bytes = spectrum_bytes(p);
  // The plan's cached tables, held until this call has enqueued its last kernel.
  std::shared_ptr<FFTConvFamilyCache> family;
  std::shared_ptr<FFTConvDeviceTable> cached_spec;
  const size_t tw_bytes = sizeof(float2) * static_cast<size_t>(twiddle_count(a.log_n));

  if (p.state != nullptr) {
    std::lock_guard<std::mutex> lock(p.state->mutex);
    FK_RETURN_IF_ERROR(fftconv_family_twiddles(
        fftconv_cuda_cache(p.state)->sm80, device, N, tw_bytes, stream,
        [&](void* tw) { return launch_twiddles(static_cast<float2*>(tw), a.log_n, stream); },
        &family));
    a.tw = static_cast<const float2*>(family->twiddles->data);
    a.lane_tw = a.tw + N / 2;
    if (p.filter_constant) {
      FK_RETURN_IF_ERROR(fftconv_cached_spectrum(
          *family, FFTConvSpectrumKey::of(p, device, a.split), static_cast<size_t>(spec_bytes),
          stream,
          [&](void* spec) { return compute_spectrum(a, static_cast<float2*>(spec), stream); },
          &cached_spec));
    }
  } else {
    void* tw = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(tw_bytes, &tw, "fftconv: twiddle table"));
    a.tw = static_cast<float2*>(tw);
    a.lane_tw = a.tw + N / 2;
    FK_RETURN_IF_ERROR(launch_twiddles(static_cast<float2*>(tw), a.log_n, stream));
  }

  if (cached_spec) {
    return run_conv(a, static_cast<const float2*>(cached_spec->data), sm_count, stream);
  }
  void* spec = nullptr;
  FK_RETURN_IF_ERROR(
      arena.alloc(static_cast<size_t>(spec_bytes), &spec, "fftconv: filter spectrum"));
  FK_RETURN_IF_ERROR(compute_spectrum(a, static_cast<float2*>(spec), stream));
  return run_conv(a, static_cast<const float2*>(spec), sm_count, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
