// cuda.sm80.fftconv_reg: register-resident FFT convolution for fft_size N = 256 .. 8192
// (FlashFFTConv's Monarch form, Fu et al. 2023, section 3), fp16/bf16 u/y. Same semantics as
// generic/ and sm80/fftconv_sm80.cu: y = postgate * (conv(v, k) + D * v), v = pregate * u, every
// mode of flashkit.h. What this kernel declines goes to cuda.sm80.fftconv.
//
// How it is built:
// - Two rows per transform. The rows (b, c) and (b + 1, c) share channel c's real filter, so
//   x = v_b + i v_(b+1) is transformed once (N-point complex FFT), multiplied by the filter's
//   spectrum H and transformed back: the real part is v_b (*) k, the imaginary part v_(b+1) (*) k
//   (linearity; H is the spectrum of a real filter). No real/imaginary split and no partner
//   frequencies: the pointwise step is one complex multiply per point. An odd batch pairs its
//   last row with zeros.
// - N = S * P. A radix-S step (S in {1, 2, 4, 8}) on the CUDA cores in fp32 while the row is
//   loaded (decimation in frequency) splits the transform into S independent P-point FFTs, P =
//   M1 x M2 with M1, M2 in {16, 32} (P = 1024 for N >= 1024). Frequency j + S (k1 + M1 k2) is
//   entry (k1, k2) of sub-FFT j. The inverse is the exact mirror, finishing with the radix-S step
//   (decimation in time) in fp32 while the rows are stored.
// - One warp per sub-FFT, all in registers: X (M1 x M2, from shared memory via ldmatrix.trans)
//   -> F_M1 X (F as the A operand, mma.sync m16n8k16, fp16 operands, fp32 accumulate) ->
//   twiddles W_P^(k1 n2) on the fp32 accumulators -> (. ) F_M2 with the accumulators repacked as
//   the A operand (the FlashAttention P-in-registers reuse) -> times the spectrum, loaded in
//   fragment order -> (. ) conj F_M2, same reuse -> conjugate twiddles -> conj F_M1 (.) with the
//   accumulators transposed in registers (movmatrix) into B operands. Output leaves through
//   shared memory (fp32) for the radix-S step, the D term, the gates and 16-byte stores.
//   Complex products are 4 real mma each; signs go on operands as sign-bit flips (exact).
//   Tensor work per row pair: 4 M1 M2 (M1 + M2) * 4 real MACs per sub-FFT; for N = 2048,
//   2 sub-FFTs x 256 mma = 512 mma per pair (256 per row).
// - The F matrices are computed once per persistent block; the twiddles W_P^(k1 n2) and the
//   spectrum are tables in the lanes' fragment order (one 16-byte load per two points). The
//   radix-S twiddles W_N^(n j) are made in registers (RadixTw: __sincosf once per thread group,
//   then a recurrence), not read per position: those reads were uncoalesced (lanes G positions
//   apart) and were the largest share of the L1 traffic.
// - Precision: fp16 operands (11-bit significands), fp32 accumulation and fp32 radix-S steps.
//   Range is kept by exact power-of-two scaling: each row pair is scaled so its largest
//   component after the radix-S step is < 1 (a block max-reduction while the loaded rows sit
//   in registers), each channel's spectrum so its largest component is <= 1/8; with P <= 1024
//   no fp16 operand can then exceed 2^15. The output is scaled back in fp32.
// - The filter spectrum (an fp32 radix-2 FFT in shared memory, one block per channel) is cached
//   in the plan when FK_FFTCONV_FILTER_CONSTANT is set, else computed once per call.
// - Input/output: the next row pair's u and gates are prefetched into a shared-memory ring
//   (cp.async, 16-byte chunks, zero-filled past seqlen) while the current pair is transformed;
//   the D term and the postgate read the ring, y leaves with 16-byte stores. Each block takes a
//   contiguous range of pairs (channel-major), so its spectrum loads hit L1. Rows that are not
//   16-byte aligned take plain loads into the ring (no prefetch) and scalar stores.
// - Measured (H200, 2026-11-30, in-process A/B on the benchmarks/fftconv.py shapes: B 64, H 768,
//   bf16, causal, fft_size 2L, constant-filter plan; branch fft9): 0.070 ms at L 256 (7.2x
//   torch.fft), 0.336 ms at L 1K (5.2x, 15% of the HBM floor; 0.411 ms before the register
//   radix-S twiddles), 0.461 ms at L 4K with B 16 (4.0x; 0.588 before). Still far from the 12x /
//   60% targets. ncu at L 1K (one-warp tiles): 255 registers, 8 warps per SM (12.5% occupancy),
//   4.4 cycles per issued instruction per warp, SM throughput 42%, L1/shared 36% (57% before):
//   latency bound at low occupancy. The DFT core is about 1200 instructions per warp and
//   sub-FFT (256 mma); the I/O phases about as much again.
//   Tried and left off (FLASHKIT_FFTCONV_REG_SPLIT=1): two warps per 32 x 32 sub-FFT, 16 rows
//   each (128 registers, 16 warps per SM, the last inverse DFT from shared memory): 0.364 ms at
//   L 1K, 0.578 at L 4K, slower at every size (spills, the F reload, both warps reading the whole
//   tile and the C round trip raise the L1 traffic to 60%; 6.7 cycles per instruction). 168
//   registers (12 warps) instead of 128: 0.353 ms at L 1K. Capping the one-warp tiles at 168
//   registers spills and was no faster; it is the default for 16 x 32 (fft_size 512).
//   Next: fewer instructions per point rather than more warps (the I/O phases: ring reads,
//   conversions, fp32 radix-S steps and staging), twiddles W_P^(k1 n2) generated rather than
//   read, and a faster spectrum kernel for the plain plan.
// - FLASHKIT_FFTCONV_REG=0 (diagnostic) declines every problem, so the sm80 kernel serves.
#ifndef FK_FFTCONV_REG_SPLIT_BUILD
#define FK_FFTCONV_REG_SPLIT_BUILD 0  // the row-half variant (see launch_conv) is not built
#endif
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <type_traits>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/fftconv_plan_cache.h"
#include "cuda/common/scratch.h"
#include "cuda/fftconv/common/conv_io.cuh"
#include "cuda/fftconv/sm80/fftconv_reg.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

using conv::cmul;
using conv::cmul_conj;
using conv::small_dft;

constexpr int kMinLogN = 8;   // 16 x 16
constexpr int kMaxLogN = 13;  // 8 x (32 x 32)

struct RegArgs : conv::ConvIO {
  const float2* tw_n;      // W_N^e, e < N / 2
  const float4* tw_p;      // W_P^(k1 n2) in fragment order (P / 2 entries)
  const float4* spec;      // per channel N / 2 entries: H / (8 g_c) in fragment order
  const float* spec_scale; // per channel 8 g_c / N
  int64_t pairs_per_channel;
  int64_t pairs_per_block;  // each block takes a contiguous range of pairs (channel-major)
  int vec;  // 1: u, pre, post, y rows 16-byte aligned (cp.async prefetch, vector stores)
  int lp;   // row length in the input ring: seqlen rounded up to 8
  int narr; // arrays in the ring: u, then pregate and postgate when present
  int slots; // 2: the next pair is prefetched while this one is transformed; 1: no prefetch
};

// HS_: warps per sub-FFT. 1 (the default): one warp holds the whole M1 x M2 tile; 2 (M1 = 32,
// FLASHKIT_FFTCONV_REG_SPLIT=1, diagnostic): each warp holds 16 rows (half the accumulators,
// 128 registers), the last inverse DFT (which mixes the rows) reads the tile back from shared
// memory.
template <int M1_, int M2_, int S_, int HS_ = 1>
struct Cfg {
  static constexpr int M1 = M1_, M2 = M2_, S = S_, HS = HS_;
  static constexpr int P = M1 * M2, T = 32 * S * HS, NW = T / 32;
  static constexpr int MT1 = M1 / 16, NT = M2 / 8, MT2 = M2 / 16;
  static constexpr int MW = MT1 / HS;            // 16-row tiles per warp
  static constexpr int PPT = P / T;             // positions of a sub-FFT per thread
  static constexpr int G = PPT < 8 ? PPT : 8;   // consecutive positions per vector access
  static constexpr int R = PPT / G;             // groups per thread
  static_assert(HS == 1 || (HS == 2 && MT1 == 2), "row halves need 32-row tiles");
  static constexpr int XS = M2 + 8;             // row stride (halves) of the fp16 X planes
  static constexpr int YS = M2 + 8;             // row stride (floats) of the fp32 staging planes
  static constexpr int PLANE_X = M1 * XS, PLANE_Y = M1 * YS;
  static constexpr size_t kStage = size_t(S) * 2 * PLANE_Y * sizeof(float);
  // Row halves: the F_32 fragments (32 words per lane, the same in every warp) wait in shared
  // memory between the pairs, so that the input and output phases do not hold them.
  static constexpr size_t kFrag = HS == 2 ? 32 * 32 * sizeof(uint32_t) : 0;
  static constexpr size_t kSmem = kStage + kFrag;
  static_assert(G == 2 || G == 4 || G == 8, "group size");
  static_assert(size_t(S) * 2 * PLANE_X * 2 <= kStage, "X planes alias the staging planes");
};

// ---- small helpers -----------------------------------------------------------------------------

// W_N^e for any e >= 0.
__device__ __forceinline__ float2 twn(const RegArgs& a, int e) {
  const int half = static_cast<int>(a.N >> 1);
  const float2 t = a.tw_n[e & (half - 1)];
  return (e & half) ? make_float2(-t.x, -t.y) : t;
}

// The radix-S step's twiddles W_N^(n j), j = 1 .. S - 1, for the G consecutive positions
// n = n0 + e of a thread's group, without a table read per position (the lanes' n0 are G apart,
// so those reads cost G times the L1 wavefronts of coalesced ones and were most of the kernel's
// L1 traffic at S >= 2): W_N^n0 from __sincosf of the angle reduced to [-pi, pi] (absolute
// error < 2^-21), then w <- w W_N per position and the powers w^j by products (fp32; a few
// roundings more, all far below the fp16 operands' 2^-11).
template <int S, int N>
struct RadixTw {
  float2 w1, step;
  __device__ __forceinline__ RadixTw(const RegArgs& a, int n0) {
    if constexpr (S > 1) {
      int m = n0 & (N - 1);
      if (m > N / 2) m -= N;
      float sn, cs;
      __sincosf(static_cast<float>(m) * (-6.283185307179586f / static_cast<float>(N)), &sn, &cs);
      w1 = make_float2(cs, sn);
      step = a.tw_n[1];
    }
  }
  template <bool kConj>
  __device__ __forceinline__ void apply(float2 (&z)[S]) const {
    if constexpr (S > 1) {
      float2 w = w1;
#pragma unroll
      for (int j = 1; j < S; ++j) {
        if (j > 1) w = conv::cmul(w, w1);
        z[j] = kConj ? conv::cmul_conj(z[j], w) : conv::cmul(z[j], w);
      }
    }
  }
  __device__ __forceinline__ void next() {
    if constexpr (S > 1) w1 = conv::cmul(w1, step);
  }
};

__device__ __forceinline__ uint32_t pack_h2(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}
constexpr uint32_t kNeg2 = 0x80008000u;

__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t movt(uint32_t x) {
  uint32_t y;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// bar.sync on barrier 1 + j (j < S, warp-uniform) for the 64 threads of sub-FFT j's two warps.
// Immediate ids, so that a block reserves S + 1 barriers rather than all 16 (the barriers per
// multiprocessor limit the resident blocks).
template <int ID>
__device__ __forceinline__ void bar_sync_64() {
  asm volatile("bar.sync %0, 64;\n" ::"n"(ID) : "memory");
}
template <int S, int Q = 0>
__device__ __forceinline__ void pair_barrier(int j) {
  if constexpr (Q < S) {
    if (j == Q) {
      bar_sync_64<1 + Q>();
    } else {
      pair_barrier<S, Q + 1>(j);
    }
  }
}

// A-operand fragments of the M x M DFT matrix W_M^(r c): tile (mt, kt), register i holds row
// 16 mt + g + 8 (i & 1), columns 16 kt + 2 t + 8 (i >> 1) + {0, 1}. F is symmetric, so the
// B-operand fragment of tile (kt, nt) is re[nt / 2][kt][(nt & 1) + {0, 2}].
template <int M>
struct Frag {
  uint32_t re[M / 16][M / 16][4], im[M / 16][M / 16][4];
};
template <int M>
__device__ __forceinline__ void make_frag(Frag<M>& f) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < M / 16; ++mt)
#pragma unroll
    for (int kt = 0; kt < M / 16; ++kt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = 16 * mt + g + 8 * (i & 1), col = 16 * kt + 2 * t + 8 * (i >> 1);
        float c[2], s[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int idx = (row * (col + e)) % M;
          sincospif(-2.0f * static_cast<float>(idx) / static_cast<float>(M), &s[e], &c[e]);
        }
        f.re[mt][kt][i] = pack_h2(c[0], c[1]);
        f.im[mt][kt][i] = pack_h2(s[0], s[1]);
      }
}

// ---- global loads and stores of G consecutive 16-bit elements --------------------------------

__device__ __forceinline__ uint16_t rnd16(float v, bool bf16) {
  if (bf16) {
    __nv_bfloat16 h = __float2bfloat16_rn(v);
    return *reinterpret_cast<uint16_t*>(&h);
  }
  return __half_as_ushort(__float2half_rn(v));
}

// Two 16-bit values of a 32-bit word (element 2e in the low half) to fp32, and back (rounded).
__device__ __forceinline__ void cvt_word(uint32_t w, bool bf16, float& lo, float& hi) {
  if (bf16) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
  } else {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
    lo = f.x;
    hi = f.y;
  }
}
__device__ __forceinline__ uint32_t pack_out(float lo, float hi, bool bf16) {
  if (bf16) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

// ---- steps on a warp's accumulator tile (MW x NT mma tiles of 16 x 8, complex as re/im) ----

template <class C>
__device__ __forceinline__ void zero_acc(float (&ar)[C::MW][C::NT][4], float (&ai)[C::MW][C::NT][4]) {
#pragma unroll
  for (int mt = 0; mt < C::MW; ++mt)
#pragma unroll
    for (int nt = 0; nt < C::NT; ++nt)
#pragma unroll
      for (int q = 0; q < 4; ++q) ar[mt][nt][q] = ai[mt][nt][q] = 0.0f;
}

// Entry-wise product with a table stored in lane order (one float4 = the two complex values of
// accumulator pair h of tile (mt, nt) for this lane): twiddles or the filter spectrum;
// kConj multiplies by the conjugate (the inverse transform's twiddles).
template <class C, bool kConj>
__device__ __forceinline__ void mul_lane_table(float (&ar)[C::MW][C::NT][4],
                                               float (&ai)[C::MW][C::NT][4], const float4* table,
                                               int lane) {
#pragma unroll
  for (int mt = 0; mt < C::MW; ++mt)
#pragma unroll
    for (int nt = 0; nt < C::NT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 w = __ldg(table + ((mt * C::NT + nt) * 2 + h) * 32 + lane);
        const float2 x0 = make_float2(ar[mt][nt][2 * h], ai[mt][nt][2 * h]);
        const float2 x1 = make_float2(ar[mt][nt][2 * h + 1], ai[mt][nt][2 * h + 1]);
        const float2 z0 = kConj ? cmul_conj(x0, make_float2(w.x, w.y)) : cmul(x0, make_float2(w.x, w.y));
        const float2 z1 = kConj ? cmul_conj(x1, make_float2(w.z, w.w)) : cmul(x1, make_float2(w.z, w.w));
        ar[mt][nt][2 * h] = z0.x;
        ai[mt][nt][2 * h] = z0.y;
        ar[mt][nt][2 * h + 1] = z1.x;
        ai[mt][nt][2 * h + 1] = z1.y;
      }
}

// X <- X F_M2 (kConj: X conj(F_M2)) with X the accumulator tile, repacked in place as A
// operands (fp16; FlashAttention's P-in-registers step). Complex product as four real mma:
//   forward  Cr = Xr Fr - Xi Fi, Ci = Xr Fi + Xi Fr
//   inverse  Cr = Xr Fr + Xi Fi, Ci = Xi Fr - Xr Fi
// issued term-major so that 2 MT1 NT independent mma separate two that share an accumulator.
template <class C, bool kConj>
__device__ __forceinline__ void right_dft(float (&ar)[C::MW][C::NT][4], float (&ai)[C::MW][C::NT][4],
                                          const Frag<C::M2>& fb) {
  uint32_t pr[C::MW][C::MT2][4], pi[C::MW][C::MT2][4];
#pragma unroll
  for (int mt = 0; mt < C::MW; ++mt)
#pragma unroll
    for (int kt = 0; kt < C::MT2; ++kt) {
      pr[mt][kt][0] = pack_h2(ar[mt][2 * kt][0], ar[mt][2 * kt][1]);
      pr[mt][kt][1] = pack_h2(ar[mt][2 * kt][2], ar[mt][2 * kt][3]);
      pr[mt][kt][2] = pack_h2(ar[mt][2 * kt + 1][0], ar[mt][2 * kt + 1][1]);
      pr[mt][kt][3] = pack_h2(ar[mt][2 * kt + 1][2], ar[mt][2 * kt + 1][3]);
      pi[mt][kt][0] = pack_h2(ai[mt][2 * kt][0], ai[mt][2 * kt][1]);
      pi[mt][kt][1] = pack_h2(ai[mt][2 * kt][2], ai[mt][2 * kt][3]);
      pi[mt][kt][2] = pack_h2(ai[mt][2 * kt + 1][0], ai[mt][2 * kt + 1][1]);
      pi[mt][kt][3] = pack_h2(ai[mt][2 * kt + 1][2], ai[mt][2 * kt + 1][3]);
    }
  zero_acc<C>(ar, ai);
#pragma unroll
  for (int kt = 0; kt < C::MT2; ++kt)
#pragma unroll
    for (int term = 0; term < 4; ++term)
#pragma unroll
      for (int mt = 0; mt < C::MW; ++mt) {
        // The operand that enters with a minus sign: Xi (forward) or Xr (inverse).
        const uint32_t(&src)[4] = kConj ? pr[mt][kt] : pi[mt][kt];
        const uint32_t neg[4] = {src[0] ^ kNeg2, src[1] ^ kNeg2, src[2] ^ kNeg2, src[3] ^ kNeg2};
#pragma unroll
        for (int nt = 0; nt < C::NT; ++nt) {
          const uint32_t fr0 = fb.re[nt >> 1][kt][nt & 1], fr1 = fb.re[nt >> 1][kt][2 + (nt & 1)];
          const uint32_t fi0 = fb.im[nt >> 1][kt][nt & 1], fi1 = fb.im[nt >> 1][kt][2 + (nt & 1)];
          if (term == 0) mma_f16(ar[mt][nt], pr[mt][kt], fr0, fr1);
          if (!kConj) {
            if (term == 1) mma_f16(ai[mt][nt], pr[mt][kt], fi0, fi1);
            if (term == 2) mma_f16(ar[mt][nt], neg, fi0, fi1);
            if (term == 3) mma_f16(ai[mt][nt], pi[mt][kt], fr0, fr1);
          } else {
            if (term == 1) mma_f16(ai[mt][nt], pi[mt][kt], fr0, fr1);
            if (term == 2) mma_f16(ar[mt][nt], pi[mt][kt], fi0, fi1);
            if (term == 3) mma_f16(ai[mt][nt], neg, fi0, fi1);
          }
        }
      }
}

template <int G>
__device__ __forceinline__ void store_g(uint16_t* row, int64_t t0, int64_t L, bool vec, bool bf16,
                                        const float (&v)[G]) {
  if (vec && t0 + G <= L) {
    uint32_t w[G / 2];
#pragma unroll
    for (int e = 0; e < G / 2; ++e) w[e] = pack_out(v[2 * e], v[2 * e + 1], bf16);
    if constexpr (G == 8) {
      *reinterpret_cast<uint4*>(row + t0) = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (G == 4) {
      *reinterpret_cast<uint2*>(row + t0) = make_uint2(w[0], w[1]);
    } else {
      *reinterpret_cast<uint32_t*>(row + t0) = w[0];
    }
  } else {
#pragma unroll
    for (int e = 0; e < G; ++e)
      if (t0 + e < L) row[t0 + e] = rnd16(v[e], bf16);
  }
}

// ---- the input ring: u, pregate, postgate of two row pairs in shared memory -------------------

// cp.async: cp_async_16 / cp_async_commit / cp_async_wait_all of
// cuda/attention/sm80/primitives.cuh.

// Copies the rows of pair `pair` (u, then pregate and postgate when present; two rows each) into
// ring slot `slot`: positions >= seqlen (up to lp) are zero. vec: cp.async (the caller commits);
// otherwise plain loads.
template <int T>
__device__ __forceinline__ void fill_ring(const RegArgs& a, uint16_t* ring, int slot, int64_t c,
                                          int64_t b0) {
  const bool has1 = b0 + 1 < a.batch;
  const int chunks = a.lp / 8;
  for (int arr = 0; arr < a.narr; ++arr)
    for (int row = 0; row < (has1 ? 2 : 1); ++row) {
      const void* base;
      int64_t off;
      if (arr == 0) {
        base = a.u;
        off = (b0 + row) * a.u_bs + c * a.u_cs;
      } else if (arr == 1 && a.pre != nullptr) {
        base = a.pre;
        off = (b0 + row) * a.pre_bs + c * a.pre_cs;
      } else {
        base = a.post;
        off = (b0 + row) * a.post_bs + c * a.post_cs;
      }
      const uint16_t* src = static_cast<const uint16_t*>(base) + off;
      uint16_t* dst = ring + ((slot * a.narr + arr) * 2 + row) * a.lp;
      for (int ch = threadIdx.x; ch < chunks; ch += T) {
        const int t = 8 * ch;
        const int64_t left = a.L - t;
        if (a.vec) {
          cp_async_16(smem_u32(dst + t), src + t, left >= 8 ? 16 : static_cast<int>(2 * left));
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) dst[t + e] = (t + e < a.L) ? src[t + e] : uint16_t(0);
        }
      }
    }
}

// v[e] = row[t0 + e] from the ring (zeros when the row is absent or t0 >= L).
template <int G>
__device__ __forceinline__ void load_s(const uint16_t* row, int t0, int64_t L, bool bf16,
                                       float (&v)[G]) {
  if (row == nullptr || t0 >= L) {
#pragma unroll
    for (int e = 0; e < G; ++e) v[e] = 0.0f;
    return;
  }
  uint32_t w[G / 2];
  if constexpr (G == 8) {
    const uint4 q = *reinterpret_cast<const uint4*>(row + t0);
    w[0] = q.x;
    w[1] = q.y;
    w[2] = q.z;
    w[3] = q.w;
  } else if constexpr (G == 4) {
    const uint2 q = *reinterpret_cast<const uint2*>(row + t0);
    w[0] = q.x;
    w[1] = q.y;
  } else {
    w[0] = *reinterpret_cast<const uint32_t*>(row + t0);
  }
#pragma unroll
  for (int e = 0; e < G / 2; ++e) cvt_word(w[e], bf16, v[2 * e], v[2 * e + 1]);
}

// m = per-half max of |row[t0 .. t0 + G)| as raw 16-bit magnitudes (bf16 and fp16 magnitudes
// order like unsigned integers).
template <int G>
__device__ __forceinline__ void absmax_s(const uint16_t* row, int t0, int64_t L, uint32_t& m) {
  if (row == nullptr || t0 >= L) return;
  if constexpr (G == 8) {
    const uint4 q = *reinterpret_cast<const uint4*>(row + t0);
    m = __vmaxu2(m, __vmaxu2(q.x & 0x7fff7fffu, q.y & 0x7fff7fffu));
    m = __vmaxu2(m, __vmaxu2(q.z & 0x7fff7fffu, q.w & 0x7fff7fffu));
  } else if constexpr (G == 4) {
    const uint2 q = *reinterpret_cast<const uint2*>(row + t0);
    m = __vmaxu2(m, __vmaxu2(q.x & 0x7fff7fffu, q.y & 0x7fff7fffu));
  } else {
    m = __vmaxu2(m, *reinterpret_cast<const uint32_t*>(row + t0) & 0x7fff7fffu);
  }
}
// Exponent e with x < 2^e (x >= 0 finite); 0 for x = 0; -1000 flags inf/NaN.
__device__ __forceinline__ int exp_above(float x) {
  if (!(x <= 3.4e38f)) return -1000;
  if (x == 0.0f) return 0;
  int ex;
  frexpf(x, &ex);  // x = f 2^ex, f in [0.5, 1)
  return ex;
}

// ---- the kernel --------------------------------------------------------------------------------

// W > 0: registers capped so that W warps fit on a multiprocessor (W * 32 / T blocks).
template <class C, int W, bool BF16>
__global__ void __launch_bounds__(C::T, W > 0 ? W * 32 / C::T : 1) conv_reg_kernel(const RegArgs a) {
  constexpr int M1 = C::M1, M2 = C::M2, S = C::S, P = C::P, T = C::T;
  constexpr int MT1 = C::MT1, MW = C::MW, HS = C::HS, NT = C::NT, G = C::G, R = C::R;
  constexpr int NW = C::NW;
  extern __shared__ float4 smem4[];
  float* stage = reinterpret_cast<float*>(smem4);
  __half* xbuf = reinterpret_cast<__half*>(smem4);
  uint16_t* ring = reinterpret_cast<uint16_t*>(smem4 + C::kSmem / sizeof(float4));
  __shared__ float red[2 * NW];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  constexpr bool bf16 = BF16;
  const bool vec = a.vec != 0;

  Frag<M1> fa;
  Frag<M2> fb;
  uint4* fsm = reinterpret_cast<uint4*>(smem4 + C::kStage / sizeof(float4));
  if constexpr (HS == 2) {
    // Warp 0 parks F_32 in shared memory (lane-major, 16-byte words); every warp reloads it for
    // the DFT core of each pair (first read after the pair loop's __syncthreads).
    if (warp == 0) {
      Frag<M1> f;
      make_frag<M1>(f);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        fsm[q * 32 + lane] = make_uint4(f.re[q >> 1][q & 1][0], f.re[q >> 1][q & 1][1],
                                        f.re[q >> 1][q & 1][2], f.re[q >> 1][q & 1][3]);
        fsm[(4 + q) * 32 + lane] = make_uint4(f.im[q >> 1][q & 1][0], f.im[q >> 1][q & 1][1],
                                              f.im[q >> 1][q & 1][2], f.im[q >> 1][q & 1][3]);
      }
    }
  } else {
    make_frag<M1>(fa);
    if constexpr (M1 == M2) {
      fb = fa;
    } else {
      make_frag<M2>(fb);
    }
  }

  const int64_t pairs = a.pairs_per_channel * a.channels;
  const int64_t first = blockIdx.x * a.pairs_per_block;
  const int64_t last = first + a.pairs_per_block < pairs ? first + a.pairs_per_block : pairs;
  const int ipre = 1, ipost = a.pre != nullptr ? 2 : 1;
  int64_t c = first / a.pairs_per_channel;
  int64_t b0 = 2 * (first - c * a.pairs_per_channel);
  if (vec && a.slots == 2 && first < last) {
    fill_ring<T>(a, ring, 0, c, b0);
    cp_async_commit();
  }
  int slot = 0;
  for (int64_t pair = first; pair < last; ++pair, slot ^= (a.slots - 1)) {
    // (c, b0) of this pair; (cn, bn) of the next
    int64_t cn = c, bn = b0 + 2;
    if (bn >= a.batch) {
      bn = 0;
      ++cn;
    }
    const bool has1 = b0 + 1 < a.batch;
    if (a.slots == 1) __syncthreads();  // the previous pair is done with the only slot
    if (vec) {
      if (a.slots == 1) {
        fill_ring<T>(a, ring, slot, c, b0);
        cp_async_commit();
      }
      cp_async_wait_all();
    } else {
      fill_ring<T>(a, ring, slot, c, b0);
    }
    __syncthreads();  // this pair's rows are in the ring; the previous pair is done with it all
    if (vec && a.slots == 2 && pair + 1 < last) {
      fill_ring<T>(a, ring, slot ^ 1, cn, bn);
      cp_async_commit();
    }
    const uint16_t* rs = ring + int64_t(slot) * a.narr * 2 * a.lp;
    const uint16_t* u0 = rs;
    const uint16_t* u1 = has1 ? rs + a.lp : nullptr;
    const uint16_t* p0 = a.pre != nullptr ? rs + ipre * 2 * a.lp : nullptr;
    const uint16_t* p1 = (p0 != nullptr && has1) ? p0 + a.lp : nullptr;

    // ---- scale: s_in = 2^-E with |v| s_in < 1, from max |u| * max |pregate| of the pair ----
    uint32_t mu = 0, mp = 0;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int n0 = G * (tid + T * r);
#pragma unroll
      for (int i = 0; i < S; ++i) {
        const int t0 = n0 + i * P;
        absmax_s<G>(u0, t0, a.L, mu);
        absmax_s<G>(u1, t0, a.L, mu);
        if (p0 != nullptr) {
          absmax_s<G>(p0, t0, a.L, mp);
          absmax_s<G>(p1, t0, a.L, mp);
        }
      }
    }
    float mxu, mxp;
    {
      float lo, hi;
      cvt_word(mu, bf16, lo, hi);
      mxu = fmaxf(lo, hi);
      cvt_word(mp, bf16, lo, hi);
      mxp = fmaxf(lo, hi);
    }
    mxu = warp_max(mxu);
    mxp = warp_max(mxp);
    if (lane == 0) {
      red[warp] = mxu;
      red[NW + warp] = mxp;
    }
    __syncthreads();
    mxu = red[0];
    mxp = red[NW];
#pragma unroll
    for (int w = 1; w < NW; ++w) {
      mxu = fmaxf(mxu, red[w]);
      mxp = fmaxf(mxp, red[NW + w]);
    }
    float s_in = 1.0f;
    {
      const int eu = exp_above(mxu), ep = p0 != nullptr ? exp_above(mxp) : 0;
      if (eu > -1000 && ep > -1000) s_in = ldexpf(1.0f, -(eu + ep));
    }

    // ---- radix-S DIF step, scaled, fp16 into the X planes ----
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int n0 = G * (tid + T * r), n1 = n0 / M2, n2 = n0 % M2;
      float v0[S][G], v1[S][G];
#pragma unroll
      for (int i = 0; i < S; ++i) {
        const int t0 = n0 + i * P;
        load_s<G>(u0, t0, a.L, bf16, v0[i]);
        load_s<G>(u1, t0, a.L, bf16, v1[i]);
        if (p0 != nullptr) {
          float q0[G], q1[G];
          load_s<G>(p0, t0, a.L, bf16, q0);
          load_s<G>(p1, t0, a.L, bf16, q1);
#pragma unroll
          for (int e = 0; e < G; ++e) {
            v0[i][e] *= q0[e];
            v1[i][e] *= q1[e];
          }
        }
      }
      float2 xs[S][G];
      RadixTw<S, S * P> tw(a, n0);
#pragma unroll
      for (int e = 0; e < G; ++e) {
        float2 z[S];
#pragma unroll
        for (int i = 0; i < S; ++i) z[i] = make_float2(v0[i][e] * s_in, v1[i][e] * s_in);
        small_dft<S, false>(z);
        tw.template apply<false>(z);
        if (e + 1 < G) tw.next();
#pragma unroll
        for (int j = 0; j < S; ++j) xs[j][e] = z[j];
      }
#pragma unroll
      for (int j = 0; j < S; ++j) {
        uint32_t hr[G / 2], hi[G / 2];
#pragma unroll
        for (int e = 0; e < G / 2; ++e) {
          hr[e] = pack_h2(xs[j][2 * e].x, xs[j][2 * e + 1].x);
          hi[e] = pack_h2(xs[j][2 * e].y, xs[j][2 * e + 1].y);
        }
        __half* pr = xbuf + (j * 2 + 0) * C::PLANE_X + n1 * C::XS + n2;
        __half* pi = xbuf + (j * 2 + 1) * C::PLANE_X + n1 * C::XS + n2;
        if constexpr (G == 8) {
          *reinterpret_cast<uint4*>(pr) = make_uint4(hr[0], hr[1], hr[2], hr[3]);
          *reinterpret_cast<uint4*>(pi) = make_uint4(hi[0], hi[1], hi[2], hi[3]);
        } else if constexpr (G == 4) {
          *reinterpret_cast<uint2*>(pr) = make_uint2(hr[0], hr[1]);
          *reinterpret_cast<uint2*>(pi) = make_uint2(hi[0], hi[1]);
        } else {
          *reinterpret_cast<uint32_t*>(pr) = hr[0];
          *reinterpret_cast<uint32_t*>(pi) = hi[0];
        }
      }
    }
    __syncthreads();

    // ---- the warp's sub-FFT j (rows 16 MW hh .. of it), forward, pointwise, inverse ----
    const int j = warp / HS, hh = HS == 1 ? 0 : warp % HS;
    // A-operand fragment (tile row mw of this warp, tile column kt) of F_M1: with two row halves
    // the warp's rows are tile hh (selected, not indexed, to keep fa in registers).
    auto fa_re = [&](int mw, int kt, int i) -> uint32_t {
      if constexpr (HS == 1) return fa.re[mw][kt][i];
      else return hh ? fa.re[1][kt][i] : fa.re[0][kt][i];
    };
    auto fa_im = [&](int mw, int kt, int i) -> uint32_t {
      if constexpr (HS == 1) return fa.im[mw][kt][i];
      else return hh ? fa.im[1][kt][i] : fa.im[0][kt][i];
    };
    if constexpr (HS == 2) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint4 r = fsm[q * 32 + lane], i = fsm[(4 + q) * 32 + lane];
        fa.re[q >> 1][q & 1][0] = r.x;
        fa.re[q >> 1][q & 1][1] = r.y;
        fa.re[q >> 1][q & 1][2] = r.z;
        fa.re[q >> 1][q & 1][3] = r.w;
        fa.im[q >> 1][q & 1][0] = i.x;
        fa.im[q >> 1][q & 1][1] = i.y;
        fa.im[q >> 1][q & 1][2] = i.z;
        fa.im[q >> 1][q & 1][3] = i.w;
      }
      fb = fa;
    }
    // Tables in fragment order: this warp's tiles start at tile row MW hh.
    const int toff = hh * MW * NT * 2 * 32;
    float ar[MW][NT][4], ai[MW][NT][4];
    // acc (+)= conj?(F_M1 rows) . B with B = the M1 x M2 plane pair (re, im) at xr / xi in shared
    // memory, loaded as B operands with ldmatrix.trans.
    //   forward: Yr = Fr Br - Fi Bi, Yi = Fr Bi + Fi Br
    //   inverse: Yr = Fr Br + Fi Bi, Yi = Fr Bi - Fi Br
    auto left_dft_smem = [&](const __half* xr, const __half* xi, auto conj_tag) {
      constexpr bool kConj = decltype(conj_tag)::value;
      const int mat = lane >> 3, rr = lane & 7;
#pragma unroll
      for (int kt = 0; kt < MT1; ++kt) {
        uint32_t br[NT][2], bi[NT][2];
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
          const int off = (16 * kt + (mat & 1) * 8 + rr) * C::XS + 8 * (2 * np + (mat >> 1));
          uint32_t d[4], e[4];
          ldsm_x4_trans(d, smem_u32(xr + off));
          ldsm_x4_trans(e, smem_u32(xi + off));
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            br[2 * np + q][0] = d[2 * q];
            br[2 * np + q][1] = d[2 * q + 1];
            bi[2 * np + q][0] = e[2 * q];
            bi[2 * np + q][1] = e[2 * q + 1];
          }
        }
        // Term-major order: 2 MW NT independent mma between two that share an accumulator.
#pragma unroll
        for (int term = 0; term < 4; ++term)
#pragma unroll
          for (int mw = 0; mw < MW; ++mw) {
            uint32_t fr[4], fi[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              fr[i] = fa_re(mw, kt, i);
              fi[i] = fa_im(mw, kt, i);
            }
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              const uint32_t r0 = br[nt][0], r1 = br[nt][1], i0 = bi[nt][0], i1 = bi[nt][1];
              if (term == 0) mma_f16(ar[mw][nt], fr, r0, r1);
              if (term == 1) mma_f16(ai[mw][nt], fr, i0, i1);
              if (!kConj) {
                if (term == 2) mma_f16(ar[mw][nt], fi, i0 ^ kNeg2, i1 ^ kNeg2);
                if (term == 3) mma_f16(ai[mw][nt], fi, r0, r1);
              } else {
                if (term == 2) mma_f16(ar[mw][nt], fi, i0, i1);
                if (term == 3) mma_f16(ai[mw][nt], fi, r0 ^ kNeg2, r1 ^ kNeg2);
              }
            }
          }
      }
    };
    __half* xr_j = xbuf + (j * 2 + 0) * C::PLANE_X;
    __half* xi_j = xbuf + (j * 2 + 1) * C::PLANE_X;
    zero_acc<C>(ar, ai);
    left_dft_smem(xr_j, xi_j, std::false_type{});
    // Twiddles W_P^(k1 n2), k1 = 16 mt + g + 8 h, n2 = 8 nt + 2 t + e.
    mul_lane_table<C, false>(ar, ai, a.tw_p + toff, lane);
    // Step 2: (A o T) F_M2, the accumulators repacked as A operands.
    right_dft<C, false>(ar, ai, fb);
    // Pointwise: times the spectrum (entry (k1, k2) of sub-FFT j).
    mul_lane_table<C, false>(ar, ai, a.spec + c * (a.N >> 1) + j * (P / 2) + toff, lane);
    // Inverse step 1: Y conj(F_M2), then conjugate twiddles.
    right_dft<C, true>(ar, ai, fb);
    mul_lane_table<C, true>(ar, ai, a.tw_p + toff, lane);
    if constexpr (HS == 1) {
      // Inverse step 2: conj(F_M1) C, C transposed in registers into B operands.
      uint32_t cr[MT1][NT][2], ci[MT1][NT][2];
#pragma unroll
      for (int kt = 0; kt < MT1; ++kt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          cr[kt][nt][0] = movt(pack_h2(ar[kt][nt][0], ar[kt][nt][1]));
          cr[kt][nt][1] = movt(pack_h2(ar[kt][nt][2], ar[kt][nt][3]));
          ci[kt][nt][0] = movt(pack_h2(ai[kt][nt][0], ai[kt][nt][1]));
          ci[kt][nt][1] = movt(pack_h2(ai[kt][nt][2], ai[kt][nt][3]));
        }
      zero_acc<C>(ar, ai);
#pragma unroll
      for (int kt = 0; kt < MT1; ++kt)
#pragma unroll
        for (int term = 0; term < 4; ++term)
#pragma unroll
          for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
            for (int nt = 0; nt < NT; ++nt) {
              // yr = Fr Cr + Fi Ci, yi = Fr Ci - Fi Cr
              if (term == 0) mma_f16(ar[mt][nt], fa.re[mt][kt], cr[kt][nt][0], cr[kt][nt][1]);
              if (term == 1) mma_f16(ai[mt][nt], fa.re[mt][kt], ci[kt][nt][0], ci[kt][nt][1]);
              if (term == 2) mma_f16(ar[mt][nt], fa.im[mt][kt], ci[kt][nt][0], ci[kt][nt][1]);
              if (term == 3)
                mma_f16(ai[mt][nt], fa.im[mt][kt], cr[kt][nt][0] ^ kNeg2, cr[kt][nt][1] ^ kNeg2);
            }
    } else {
      // Inverse step 2 across the two row halves: both warps of sub-FFT j have read its X planes
      // (barrier j + 1 of the sub-FFT's 64 threads), each writes its rows of C there (fp16),
      // then conj(F_M1) C for its output rows from shared memory.
      pair_barrier<S>(j);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int off = (16 * hh + g + 8 * h) * C::XS + 8 * nt + 2 * t;
          *reinterpret_cast<uint32_t*>(xr_j + off) = pack_h2(ar[0][nt][2 * h], ar[0][nt][2 * h + 1]);
          *reinterpret_cast<uint32_t*>(xi_j + off) = pack_h2(ai[0][nt][2 * h], ai[0][nt][2 * h + 1]);
        }
      pair_barrier<S>(j);
      zero_acc<C>(ar, ai);
      left_dft_smem(xr_j, xi_j, std::true_type{});
    }
    __syncthreads();  // every warp has read its X planes (they alias the staging planes)
#pragma unroll
    for (int mw = 0; mw < MW; ++mw)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int n1 = 16 * (hh * MW + mw) + g + 8 * h, n2 = 8 * nt + 2 * t;
          float* yr = stage + (j * 2 + 0) * C::PLANE_Y + n1 * C::YS + n2;
          float* yi = stage + (j * 2 + 1) * C::PLANE_Y + n1 * C::YS + n2;
          *reinterpret_cast<float2*>(yr) = make_float2(ar[mw][nt][2 * h], ar[mw][nt][2 * h + 1]);
          *reinterpret_cast<float2*>(yi) = make_float2(ai[mw][nt][2 * h], ai[mw][nt][2 * h + 1]);
        }
    __syncthreads();

    // ---- radix-S DIT step, scale back, D term, gates, stores ----
    const float oscale = __ldg(a.spec_scale + c) / s_in;
    const float dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
    uint16_t* y0 = static_cast<uint16_t*>(a.y) + b0 * a.y_bs + c * a.y_cs;
    uint16_t* y1 = has1 ? y0 + a.y_bs : nullptr;
    const uint16_t* q0 = a.post != nullptr ? rs + ipost * 2 * a.lp : nullptr;
    const uint16_t* q1 = (q0 != nullptr && has1) ? q0 + a.lp : nullptr;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int n0 = G * (tid + T * r), n1 = n0 / M2, n2 = n0 % M2;
      float2 z[G][S];
#pragma unroll
      for (int jj = 0; jj < S; ++jj) {
        const float* sr = stage + (jj * 2 + 0) * C::PLANE_Y + n1 * C::YS + n2;
        const float* si = stage + (jj * 2 + 1) * C::PLANE_Y + n1 * C::YS + n2;
        if constexpr (G == 2) {
          const float2 vr = *reinterpret_cast<const float2*>(sr);
          const float2 vi = *reinterpret_cast<const float2*>(si);
          z[0][jj] = make_float2(vr.x, vi.x);
          z[1][jj] = make_float2(vr.y, vi.y);
        } else {
#pragma unroll
          for (int e4 = 0; e4 < G / 4; ++e4) {
            const float4 vr = *reinterpret_cast<const float4*>(sr + 4 * e4);
            const float4 vi = *reinterpret_cast<const float4*>(si + 4 * e4);
            z[4 * e4 + 0][jj] = make_float2(vr.x, vi.x);
            z[4 * e4 + 1][jj] = make_float2(vr.y, vi.y);
            z[4 * e4 + 2][jj] = make_float2(vr.z, vi.z);
            z[4 * e4 + 3][jj] = make_float2(vr.w, vi.w);
          }
        }
      }
      {
        RadixTw<S, S * P> tw(a, n0);
#pragma unroll
        for (int e = 0; e < G; ++e) {
          tw.template apply<true>(z[e]);
          if (e + 1 < G) tw.next();
          small_dft<S, true>(z[e]);
        }
      }
#pragma unroll
      for (int i = 0; i < S; ++i) {
        const int64_t t0 = n0 + int64_t(i) * P;
        if (t0 >= a.L) continue;
        float o0[G], o1[G];
#pragma unroll
        for (int e = 0; e < G; ++e) {
          o0[e] = z[e][i].x * oscale;
          o1[e] = z[e][i].y * oscale;
        }
        if (a.D != nullptr) {
          float w0[G], w1[G];
          load_s<G>(u0, int(t0), a.L, bf16, w0);
          load_s<G>(u1, int(t0), a.L, bf16, w1);
          if (p0 != nullptr) {
            float g0[G], g1[G];
            load_s<G>(p0, int(t0), a.L, bf16, g0);
            load_s<G>(p1, int(t0), a.L, bf16, g1);
#pragma unroll
            for (int e = 0; e < G; ++e) {
              w0[e] *= g0[e];
              w1[e] *= g1[e];
            }
          }
#pragma unroll
          for (int e = 0; e < G; ++e) {
            o0[e] = fmaf(dc, w0[e], o0[e]);
            o1[e] = fmaf(dc, w1[e], o1[e]);
          }
        }
        if (q0 != nullptr) {
          float g0[G], g1[G];
          load_s<G>(q0, int(t0), a.L, bf16, g0);
          load_s<G>(q1, int(t0), a.L, bf16, g1);
#pragma unroll
          for (int e = 0; e < G; ++e) {
            o0[e] *= g0[e];
            o1[e] *= g1[e];
          }
        }
        store_g<G>(y0, t0, a.L, vec, bf16, o0);
        if (y1 != nullptr) store_g<G>(y1, t0, a.L, vec, bf16, o1);
      }
    }
    c = cn;
    b0 = bn;
  }
}

// ---- tables ------------------------------------------------------------------------------------

// Index (in float2) of entry (k1, k2) of an M1 x M2 tile in fragment order.
__host__ __device__ __forceinline__ int frag_pos(int k1, int k2, int NT) {
  const int mt = k1 >> 4, r16 = k1 & 15, g8 = r16 & 7, h = r16 >> 3;
  const int nt = k2 >> 3, c8 = k2 & 7, tq = c8 >> 1, e = c8 & 1;
  return ((((mt * NT + nt) * 2 + h) * 32 + 4 * g8 + tq) * 2) + e;
}

// tw_p[frag_pos(k1, n2)] = W_P^(k1 n2), from double precision.
__global__ void tw_p_kernel(float2* tw, int M1, int M2) {
  const int P = M1 * M2;
  for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < P; idx += gridDim.x * blockDim.x) {
    const int k1 = idx / M2, n2 = idx % M2;
    double s, c;
    sincospi(-2.0 * static_cast<double>((k1 * n2) % P) / static_cast<double>(P), &s, &c);
    tw[frag_pos(k1, n2, M2 / 8)] = make_float2(static_cast<float>(c), static_cast<float>(s));
  }
}

// Per channel: H = DFT_N(filter row) by an fp32 radix-2 FFT in shared memory; g = the smallest
// power of two >= max component of H; spec gets H / (8 g) in fragment order, scale 8 g / N.
__global__ void __launch_bounds__(256) spectrum_reg_kernel(const RegArgs a, int M1, int M2,
                                                           int log_n, float2* spec, float* scale) {
  extern __shared__ float2 buf[];
  __shared__ float red[8];
  const int N = static_cast<int>(a.N), S = N / (M1 * M2), P = M1 * M2, NT = M2 / 8;
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    for (int tt = threadIdx.x; tt < N; tt += blockDim.x) {
      const unsigned rev = __brev(static_cast<unsigned>(tt)) >> (32 - log_n);
      buf[rev] = make_float2(conv::load_filter(a, c, tt, 1.0f), 0.0f);
    }
    __syncthreads();
    for (int half = 1; half < N; half *= 2) {
      for (int b = threadIdx.x; b < N / 2; b += blockDim.x) {
        const int pos = b & (half - 1), i0 = (b - pos) * 2 + pos, i1 = i0 + half;
        const float2 w = twn(a, pos * (N / (2 * half)));
        const float2 x0 = buf[i0], x1 = cmul(buf[i1], w);
        buf[i0] = make_float2(x0.x + x1.x, x0.y + x1.y);
        buf[i1] = make_float2(x0.x - x1.x, x0.y - x1.y);
      }
      __syncthreads();
    }
    float mx = 0.0f;
    for (int k = threadIdx.x; k < N; k += blockDim.x)
      mx = fmaxf(mx, fmaxf(fabsf(buf[k].x), fabsf(buf[k].y)));
    mx = warp_max(mx);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = 0.0f;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) mx = fmaxf(mx, red[w]);
    float gsc = 1.0f;
    if (mx > 0.0f && mx <= 3.0e38f) {
      int ex;
      frexpf(mx, &ex);
      gsc = ldexpf(1.0f, ex);  // >= mx
    }
    const float inv = 1.0f / (32.0f * gsc);
    float2* sc = spec + c * N;
    for (int k = threadIdx.x; k < N; k += blockDim.x) {
      const int j = k % S, m = k / S, k1 = m % M1, k2 = m / M1;
      const float2 v = buf[k];
      sc[j * P + frag_pos(k1, k2, NT)] = make_float2(v.x * inv, v.y * inv);
    }
    if (threadIdx.x == 0) scale[c] = 32.0f * gsc / static_cast<float>(N);
    __syncthreads();
  }
}

// ---- host side ---------------------------------------------------------------------------------

using C256 = Cfg<16, 16, 1>;
using C512 = Cfg<16, 32, 1>;
using C1K = Cfg<32, 32, 1>;
using C2K = Cfg<32, 32, 2>;
using C4K = Cfg<32, 32, 4>;
using C8K = Cfg<32, 32, 8>;

void dims_for(int log_n, int* m1, int* m2) {
  *m1 = log_n <= 9 ? 16 : 32;
  *m2 = log_n <= 8 ? 16 : 32;
}
size_t stage_smem(int log_n) {
  switch (log_n) {
    case 8: return C256::kSmem;
    case 9: return C512::kSmem;
    // the row-half build (4 KB more) whether or not FLASHKIT_FFTCONV_REG_SPLIT=0
    case 10: return Cfg<32, 32, 1, 2>::kSmem;
    case 11: return Cfg<32, 32, 2, 2>::kSmem;
    case 12: return Cfg<32, 32, 4, 2>::kSmem;
    default: return Cfg<32, 32, 8, 2>::kSmem;
  }
}

bool reg_enabled() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG");
  return !(e != nullptr && e[0] == '0');
}

// Register cap: 12 warps per multiprocessor (168 registers) for the 16 x 32 tile (fft_size 512,
// no spills there: 0.069 vs 0.082 ms at B 64, H 768, L 256 on the H200); none for the 32 x 32
// tiles (capping them spills and was no faster). FLASHKIT_FFTCONV_REG_WARPS=0 or 12
// (diagnostic) overrides.
int warps_mode(int log_n) {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG_WARPS");
  if (e != nullptr && (e[0] == '0' || std::atoi(e) == 12)) return std::atoi(e) == 12 ? 12 : 0;
  return log_n <= 9 ? 12 : 0;
}

size_t ring_bytes(const RegArgs& a, int slots) {
  return size_t(slots) * a.narr * 2 * size_t(a.lp) * sizeof(uint16_t);
}

template <class C, int W, bool BF16>
fk_status_t launch_conv_w(RegArgs a, int smem_optin, int sm_count, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(conv_reg_kernel<C, W, BF16>);
  a.slots = C::kSmem + ring_bytes(a, 2) <= size_t(smem_optin) ? 2 : 1;
  const size_t smem = C::kSmem + ring_bytes(a, a.slots);
  // The kernel's static shared memory counts against the 48 KB default too (allow_smem only
  // raises the limit above 48 KB of dynamic memory).
  if (smem + 1024 > 48 * 1024) {
    FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     static_cast<int>(smem)),
                "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(shared memory)");
  }
  int per_sm = 0;
  FK_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::T, smem),
              "cuda.sm80.fftconv_reg: occupancy");
  const int64_t pairs = a.pairs_per_channel * a.channels;
  int64_t grid = std::min<int64_t>(pairs, int64_t(std::max(per_sm, 1)) * std::max(sm_count, 1));
  a.pairs_per_block = (pairs + grid - 1) / grid;
  grid = (pairs + a.pairs_per_block - 1) / a.pairs_per_block;
  conv_reg_kernel<C, W, BF16><<<grid_for(grid), C::T, smem, stream>>>(a);
  return check_launch("cuda.sm80.fftconv_reg fused kernel");
}

// The capped (12-warp) build exists only for the 16-row tiles (fft_size 256 and 512), where it is
// the default; the 32 x 32 tiles are built uncapped only (capping spills; fewer instantiations
// keep the compile time and the library size down), so the override is ignored there.
// Row halves (two warps per 32 x 32 sub-FFT, 128 registers, 16 warps per multiprocessor):
// FLASHKIT_FFTCONV_REG_SPLIT=1 in a library built with -DFK_FFTCONV_REG_SPLIT_BUILD=1
// (diagnostic; FLASHKIT_FFTCONV_REG_WARPS=12 with it: 168 registers,
// 12 warps, fft_size <= 2048). Off by default: slower than the one-warp tiles at every size
// measured (H200, B 64, H 768, bf16: 0.364 vs 0.336 ms at L 1K, 0.578 vs 0.461 ms at L 4K with
// B 16): the spills at 128 registers, the F_32 reload, both warps reading the whole X tile and
// the C round trip through shared memory cost more L1 traffic (60% vs 36% L1 throughput in ncu)
// than 16 warps per multiprocessor win back in latency hiding.
#if FK_FFTCONV_REG_SPLIT_BUILD
bool split_enabled() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG_SPLIT");
  return e != nullptr && e[0] == '1';
}
#endif

template <class C>
fk_status_t launch_conv(const RegArgs& a, int optin, int sm_count, cudaStream_t stream) {
  const bool bf16 = a.dtype == DType::BF16;
  if constexpr (C::M1 == 32) {
#if FK_FFTCONV_REG_SPLIT_BUILD
    // Built only with -DFK_FFTCONV_REG_SPLIT_BUILD=1: twelve more kernels (~1.5 min of compile
    // per architecture) for a variant that is slower everywhere measured.
    using CH = Cfg<C::M1, C::M2, C::S, 2>;
    if (split_enabled()) {
      if constexpr (C::S <= 2) {
        // FLASHKIT_FFTCONV_REG_WARPS=12 (diagnostic): 168 registers, 12 warps
        if (warps_mode(conv::log2_exact(a.N)) == 12)
          return bf16 ? launch_conv_w<CH, 12, true>(a, optin, sm_count, stream)
                      : launch_conv_w<CH, 12, false>(a, optin, sm_count, stream);
      }
      return bf16 ? launch_conv_w<CH, 16, true>(a, optin, sm_count, stream)
                  : launch_conv_w<CH, 16, false>(a, optin, sm_count, stream);
    }
#endif
  }
  if constexpr (C::M1 == 16) {
    if (warps_mode(conv::log2_exact(a.N)) == 12)
      return bf16 ? launch_conv_w<C, 12, true>(a, optin, sm_count, stream)
                  : launch_conv_w<C, 12, false>(a, optin, sm_count, stream);
  }
  return bf16 ? launch_conv_w<C, 0, true>(a, optin, sm_count, stream)
              : launch_conv_w<C, 0, false>(a, optin, sm_count, stream);
}

fk_status_t run_conv(const RegArgs& a, int log_n, int optin, int sm_count, cudaStream_t stream) {
  switch (log_n) {
    case 8: return launch_conv<C256>(a, optin, sm_count, stream);
    case 9: return launch_conv<C512>(a, optin, sm_count, stream);
    case 10: return launch_conv<C1K>(a, optin, sm_count, stream);
    case 11: return launch_conv<C2K>(a, optin, sm_count, stream);
    case 12: return launch_conv<C4K>(a, optin, sm_count, stream);
    default: return launch_conv<C8K>(a, optin, sm_count, stream);
  }
}

// Twiddle tables of an N-point plan: tw_n (N / 2 float2), then tw_p (P float2).
size_t tables_bytes(int log_n) {
  int m1, m2;
  dims_for(log_n, &m1, &m2);
  return sizeof(float2) * ((size_t(1) << (log_n - 1)) + size_t(m1) * m2);
}
fk_status_t fill_tables(float2* tw, int log_n, cudaStream_t stream) {
  const int64_t n = int64_t(1) << log_n;
  int m1, m2;
  dims_for(log_n, &m1, &m2);
  conv::twiddle_kernel<<<static_cast<unsigned>((n / 2 + 255) / 256), 256, 0, stream>>>(tw, n);
  FK_RETURN_IF_ERROR(check_launch("cuda.sm80.fftconv_reg twiddle kernel"));
  tw_p_kernel<<<static_cast<unsigned>((m1 * m2 + 255) / 256), 256, 0, stream>>>(tw + n / 2, m1,
                                                                                 m2);
  return check_launch("cuda.sm80.fftconv_reg fragment twiddle kernel");
}

fk_status_t compute_spectrum(const RegArgs& a, int log_n, void* spec, cudaStream_t stream) {
  int m1, m2;
  dims_for(log_n, &m1, &m2);
  const size_t smem = sizeof(float2) * static_cast<size_t>(a.N);
  const void* kernel = reinterpret_cast<const void*>(spectrum_reg_kernel);
  FK_RETURN_IF_ERROR(conv::allow_smem(kernel, smem,
                                      "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(spectrum)"));
  float2* sp = static_cast<float2*>(spec);
  float* scale = reinterpret_cast<float*>(sp + a.channels * a.N);
  spectrum_reg_kernel<<<grid_for(std::min<int64_t>(a.channels, 65535)), 256, smem, stream>>>(
      a, m1, m2, log_n, sp, scale);
  return check_launch("cuda.sm80.fftconv_reg filter spectrum kernel");
}

bool aligned16(const void* ptr, int64_t s0, int64_t s1) {
  return ptr == nullptr ||
         (reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && s0 % 8 == 0 && s1 % 8 == 0);
}

}  // namespace

bool fftconv_reg_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major < 8 || !reg_enabled()) return false;
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  const int64_t N = p.fft_size;
  if (N < (int64_t(1) << kMinLogN) || N > (int64_t(1) << kMaxLogN) || (N & (N - 1)) != 0)
    return false;
  const int narr = 1 + (p.pregate != nullptr ? 1 : 0) + (p.postgate != nullptr ? 1 : 0);
  const int64_t one_slot = int64_t(narr) * 2 * ((p.seqlen + 7) / 8 * 8) * 2;
  if (static_cast<int64_t>(stage_smem(conv::log2_exact(N))) + one_slot > caps.smem_per_block_optin)
    return false;
  return p.seqlen <= N && p.filter_len > 0;
}

fk_status_t fftconv_reg(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  const int64_t N = p.fft_size;
  FK_RETURN_IF_ERROR(conv::check_plan(p, kMinLogN, kMaxLogN, "cuda.sm80.fftconv_reg"));
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.fftconv_reg: dtype outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  int device = 0;
  FK_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
  const int sm_count = ctx.caps != nullptr ? ctx.caps->sm_count : 0;

  RegArgs a;
  static_cast<conv::ConvIO&>(a) = conv::conv_io(p);
  const int log_n = conv::log2_exact(N);
  a.pairs_per_channel = (p.batch + 1) / 2;
  a.pairs_per_block = 1;
  a.lp = static_cast<int>((p.seqlen + 7) / 8 * 8);
  a.narr = 1 + (p.pregate != nullptr ? 1 : 0) + (p.postgate != nullptr ? 1 : 0);
  a.slots = 1;
  int optin = ctx.caps != nullptr ? static_cast<int>(ctx.caps->smem_per_block_optin) : 0;
  if (optin <= 0) {
    FK_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                "cudaDeviceGetAttribute(shared memory)");
  }
  a.vec = (aligned16(p.u, p.u_batch_stride, p.u_channel_stride) &&
           aligned16(p.pregate, p.pre_batch_stride, p.pre_channel_stride) &&
           aligned16(p.postgate, p.post_batch_stride, p.post_channel_stride) &&
           aligned16(p.y, p.y_batch_stride, p.y_channel_stride))
              ? 1
              : 0;

  ScratchArena arena(ctx);
  const int64_t spec_bytes =
      p.channels * N * static_cast<int64_t>(sizeof(float2)) + p.channels * int64_t(sizeof(float));
  std::shared_ptr<FFTConvFamilyCache> family;
  std::shared_ptr<FFTConvDeviceTable> cached_spec;
  const size_t tw_bytes = tables_bytes(log_n);
  const float2* tw = nullptr;
  if (p.state != nullptr) {
    std::lock_guard<std::mutex> lock(p.state->mutex);
    FK_RETURN_IF_ERROR(fftconv_family_twiddles(
        fftconv_cuda_cache(p.state)->sm80_reg, device, N, tw_bytes, stream,
        [&](void* t) { return fill_tables(static_cast<float2*>(t), log_n, stream); }, &family));
    tw = static_cast<const float2*>(family->twiddles->data);
    a.tw_n = tw;
    a.tw_p = reinterpret_cast<const float4*>(tw + N / 2);
    if (p.filter_constant) {
      FK_RETURN_IF_ERROR(fftconv_cached_spectrum(
          *family, FFTConvSpectrumKey::of(p, device, 0), static_cast<size_t>(spec_bytes), stream,
          [&](void* spec) { return compute_spectrum(a, log_n, spec, stream); }, &cached_spec));
    }
  } else {
    void* t = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(tw_bytes, &t, "fftconv_reg: twiddle tables"));
    FK_RETURN_IF_ERROR(fill_tables(static_cast<float2*>(t), log_n, stream));
    tw = static_cast<const float2*>(t);
    a.tw_n = tw;
    a.tw_p = reinterpret_cast<const float4*>(tw + N / 2);
  }
  void* spec = nullptr;
  if (cached_spec) {
    spec = cached_spec->data;
  } else {
    FK_RETURN_IF_ERROR(
        arena.alloc(static_cast<size_t>(spec_bytes), &spec, "fftconv_reg: filter spectrum"));
    FK_RETURN_IF_ERROR(compute_spectrum(a, log_n, spec, stream));
  }
  a.spec = static_cast<const float4*>(spec);
  a.spec_scale = reinterpret_cast<const float*>(static_cast<const float2*>(spec) + p.channels * N);
  return run_conv(a, log_n, optin, sm_count, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
