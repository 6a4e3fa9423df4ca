// cuda.sm80.fftconv_reg: register-resident FFT convolution for fft_size N = 256 .. 32768, and
// 65536 for rows up to 32768 long (FlashFFTConv's Monarch form, Fu et al. 2023, section 3),
// fp16/bf16 u/y. Same semantics as
// generic/ and sm80/fftconv_sm80.cu: y = postgate * (conv(v, k) + D * v), v = pregate * u, every
// mode of flashkit.h. What this kernel declines goes to cuda.sm80.fftconv (fft_size <= 32768)
// or the generic kernel.
//
// How it is built:
// - Two rows per transform. The rows (b, c) and (b + 1, c) share channel c's real filter, so
//   x = v_b + i v_(b+1) is transformed once (N-point complex FFT), multiplied by the filter's
//   spectrum H and transformed back: the real part is v_b (*) k, the imaginary part v_(b+1) (*) k
//   (linearity; H is the spectrum of a real filter). No real/imaginary split and no partner
//   frequencies: the pointwise step is one complex multiply per point. An odd batch pairs its
//   last row with zeros.
// - N = S * P. A radix-S step (S in {1, 2, 4, ..., 32}) on the CUDA cores in fp32 while the row is
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
//   Complex products are 4 real mma each; signs go on operands as sign-bit flips (exact); the
//   first two products of each DFT step start the accumulators (no zeroing). The steps between
//   the two left DFTs act on rows independently and run one 16-row tile at a time.
//   Tensor work per row pair: 4 M1 M2 (M1 + M2) * 4 real MACs per sub-FFT; for N = 2048,
//   2 sub-FFTs x 256 mma = 512 mma per pair (256 per row).
// - 32 x 32 tiles read the F_32 fragments from shared memory at each DFT step (one copy in the
//   A-operand word order, one in the B order, so the B register pairs need no moves) instead of
//   holding them in 32 registers; __syncwarp() between the steps keeps the compiler from hoisting
//   a step's table and fragment loads into the step before (the 255-register builds spilled at
//   fft_size 8192 without it). 16-row tiles keep F in registers under a 12-warp cap.
//   The twiddles W_P^(k1 n2) and the spectrum are tables in the lanes' fragment order (one
//   16-byte load per two points). The radix-S twiddles W_N^(n j) are made in registers
//   (RadixTw: __sincosf once per thread group, then a recurrence).
// - The radix-S steps are radix-2 decimation-in-frequency FFTs (S log2 S additions). A row is
//   zero from L on, so with L <= N / 2 (every causal plan with the default fft_size) the input
//   step reads and adds only its inputs i < S / 2 and the output step computes only outputs
//   i < S / 2 (a run-time choice between two inlined copies of each phase).
// - Precision: fp16 operands (11-bit significands), fp32 accumulation and fp32 radix-S steps.
//   Range is kept by exact power-of-two scaling: each row pair is scaled so its largest
//   component after the radix-S step is < 1 (max |u| and max |pregate| as raw 16-bit
//   magnitudes, one redux.sync per warp, then across the warps), each channel's spectrum so its
//   largest component is <= 1/8; with P <= 1024 no fp16 operand can then exceed 2^15. The
//   output is scaled back in fp32.
// - The filter spectrum is cached in the plan when FK_FFTCONV_FILTER_CONSTANT is set, else
//   computed once per call, from fft_size 1024 up by spectrum_fast_kernel: fp32, the real-input trick (an
//   N / 2-point complex DFT of the packed row), radix-16 Stockham passes with 16 points per
//   thread in registers (3-4 passes instead of 8-15 radix-2 stages, 2 barriers each), N / 2
//   float2 of shared memory per channel (128 KB at 32K: one pass, no split), several channels
//   per block below 8K, and the fragment-order table written once with 16-byte stores. The
//   radix-2 kernel (spectrum_reg_kernel) stays below fft_size 1024 (faster there), for devices
//   whose shared memory is too small for the fast one, and behind
//   FLASHKIT_FFTCONV_SPECTRUM=radix2 (diagnostic, tested). H200, 768 channels: 5.1x faster at
//   32K (1143 -> 225 us), 4.4x at 8K, 2.3x at 2K (benchmarks/RESULTS.md, FFT section). At 64K
//   (N / 2 points would need 256 KB) spectrum_fast64_kernel does the same in two 16K-point
//   halves, one per parity of the frequencies (~0.62 ms for 768 channels; radix-2 ~2.6 ms).
// - Input/output: the next row pair's u and gates are prefetched into a shared-memory ring
//   (cp.async, 16-byte chunks, zero-filled past seqlen; an odd batch's missing second row is
//   zero-filled too, so the kernel reads both rows unconditionally) while the current pair is
//   transformed; the D term and the postgate read the ring, y leaves with 16-byte stores. Each
//   block takes a contiguous range of pairs (channel-major), so its spectrum loads hit L1. Rows
//   that are not 16-byte aligned take plain loads into the ring (no prefetch) and scalar stores.
// - Measured (H200, 2026-11-30, benchmarks/fftconv.py shapes: B 64, H 768, bf16, causal,
//   fft_size 2L, D, constant-filter plan; branch fft10): 0.065 ms at L 256 (7.9x torch.fft,
//   0.070 before), 0.292 ms at L 1K (6.0x, 17% of the HBM floor; 0.336 before), 0.347 ms gated
//   (5.8x; 0.404), 0.367 ms at L 4K with B 16 (5.0x; 0.461). Still far from the 12x / 60%
//   targets. ncu at L 1K: 111M instructions (135M before), 255 registers, 8 warps per SM,
//   4.7 cycles per issued instruction per warp, tensor pipe 28% active; stalls per issued
//   instruction: wait (fixed-latency dependencies) 1.33, no_instruction 0.47 (the loop body is
//   large), short scoreboard 0.45, long scoreboard 0.31, dispatch 0.29, math-pipe throttle 0.25.
//   Leaving stages out (diagnostic builds, L 1K): without the DFT core 0.109 ms, without the
//   output phase 0.214, without the three table products 0.225, without the input radix step
//   0.256, all 0.291: the DFT core (256 mma and the table products per sub-FFT) is ~60% of the
//   time. A 12-warp cap (168 registers) was slower gated (shared memory allows 4 blocks anyway)
//   and no faster ungated (0.293 ms); F in registers (8 warps) 5% slower; the middle steps on
//   both row tiles at once 1% faster at L 1K, 10% slower at L 4K.
//   Tried before (branch fft9) and removed: two warps per 32 x 32 sub-FFT (row halves, 128
//   registers): slower at every size.
//   Next: fewer dependent instructions in the DFT core (the table products in fp16x2, the
//   W_P twiddles folded into fewer passes), a wgmma (sm_90a) core for Hopper, a faster
//   spectrum kernel for the plain plan (+0.05 ms at L 1K, +0.24 ms at L 4K).
// - fft_size 16384 and 32768 (S = 16, 32; conv_reg_big_kernel, branch fft11): one block of 8
//   warps (255 registers, one block per multiprocessor); all S X tiles (fp16, 5 KB each with
//   the row padding) sit in shared memory after the radix-S step, warp w transforms sub-FFTs
//   w, w + 8, ... in turn and writes its inverse result Z_j over its own X tile as fp16 times
//   2^-4 (no fp32 staging: 168 KB of tiles at S = 32 instead of 320 KB); the spectrum is scaled
//   to <= 1 / (4 S) there (1/32 below), which keeps every fp16 operand and Z_j < 2^15. The radix
//   steps work on two consecutive positions per thread group (S = 32: 128 fp32 registers of
//   data). u is prefetched into a ring when one fits (at 16K two pairs up to L ~12.5K, then one;
//   at 32K, since session 32's tables, two up to L ~2.3K, one up to ~4.6K, else none),
//   otherwise read from global memory like the gates, which are always read from global
//   memory at these sizes (the D term and the post-gate re-read them from L2,
//   one chunk of outputs ahead of the stores). The spectrum kernel takes N / 2 points per pass
//   at 32K (two passes: even and odd frequencies) and 1024 threads at N >= 16K.
//   Measured (H200, 2026-11-30, benchmarks/fftconv.py, B L = 64K, H 768, bf16, causal, D,
//   constant-filter plan): L 8K 0.578 ms (3.4x torch; the sm80 kernel before 1.378 ms, 1.4x),
//   gated 0.955 (2.3x; 1.493); L 16K 1.410 ms (1.6x; 2.140), gated 1.817 (1.4x; 2.402). The
//   plain plan (spectrum per call) is 2.560 / 2.958 ms at L 16K, slower than the sm80 kernel's
//   2.478 / 2.737: the two-pass radix-2 spectrum kernel costs ~1.15 ms per call there.
//   Session 8's profile at L 16K (13.99 cycles per issued instruction per warp, 45% of them
//   no_instruction stalls, 551 KB of SASS) traced to the row accesses: ~900 unrolled call
//   sites of a general 16-bit row loader were half of the fft_size-32K kernel's code. They are
//   now predicated accesses with immediate offsets (ld_pair / st_pair; the phases compiled per
//   row alignment), W_P sits in shared memory and each warp prefetches its sub-FFT's spectrum
//   (cp.async, one 16-row tile's half at a time) ahead of the product. Measured (H200,
//   2026-12-03, session 32, same shapes): L 8K 0.373 ms (5.3x torch), gated 0.584 (3.8x);
//   L 16K 0.415 ms (5.6x; 1.40 before), gated 0.70 (3.7x); 16-18% of the HBM floor. The
//   fft_size-32K kernel now runs 162 M warp instructions at L 16K, 2.4x its issue floor.
//   Next: fewer instructions per point (the DFT core on wgmma, the table products in fp16x2).
//   The tables need 128 KB of shared memory at fft_size 8K and 16K (88 KB without), so those
//   sizes also have builds without them (C8Kn, C16Kn; session 33), which run where the tabled
//   ones do not fit: GPUs with 99 KB per block (sm_86, sm_89, sm_120), and on an A100 (163 KB)
//   gated fft_size-8K rows above L ~2.9K (up to ~6.3K). FLASHKIT_FFTCONV_REG_TABLES=0 forces
//   them (diagnostic; the tests use it).
// - fft_size 65536 (conv_reg_big_kernel<BigCfg<32>, ., true>), for seqlen <= 32768 only: the
//   row pair x is then zero from 32K on, so with W = W_64K the even frequencies X[2m] are
//   DFT_32K(x)[m] and the odd ones X[2m + 1] = DFT_32K(x W^n)[m] (the first radix-2 step of a
//   decimation in frequency, with its zero half left out), and for n < 32K
//   y[n] = (IDFT_32K(X_even H_even)[n] + W^-n IDFT_32K(X_odd H_odd)[n]) / 2. The fft_size-32K
//   kernel runs the two passes per row pair: pass 0 as usual with the even half of the
//   spectrum, its raw fp32 result kept in scratch (256 KB per block, coalesced 16-byte rows,
//   read back by the same thread); pass 1 with the input times W^(n0 + i P), split as W_2S^i
//   (constants, before the radix step) and W^n0 (folded into the radix step's twiddles,
//   RadixTwHalf), the odd half of the spectrum, the conjugate factors on the way out, then the
//   first pass added, D, the gates and the stores. The spectrum is the 64K-point table
//   (spectrum_fast64_kernel: two 16K-point halves), whose sub-table 2 j + h holds frequencies
//   2 m + h of sub-FFT j; its scale carries the 1/2. Each linear step above is complex-linear, so the
//   two-rows-per-transform packing holds for the sum (each pass alone is not real). Twice the
//   fft_size-32K kernel's work per pair (both passes take every input position). Measured
//   (H200, 2026-12-03, session 33; B 2, H 768, L 32K, bf16, causal, D): 0.954 ms with a
//   constant filter (2.9x torch.fft; the generic four-step FFT through HBM, which served these
//   calls before, 4.58 ms = 0.6x), 1.57 ms with the spectrum per call (1.76x), gated 1.28 /
//   1.90. Declined above 2048 channels (the spectra would pass 1 GiB; the generic kernel
//   computes such spectra in chunks).
// - FLASHKIT_FFTCONV_REG=0 (diagnostic) declines every problem, so the sm80 kernel serves.
#ifndef FK_FFTCONV_REG_AB_BUILD
#define FK_FFTCONV_REG_AB_BUILD 0  // measurement builds only (see launch_conv)
#endif
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
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

constexpr int kMinLogN = 8;   // 16 x 16
// 32 x (32 x 32) in one pass up to 2^15, two passes at 2^16 (seqlen <= 32768)
constexpr int kLogN64 = 16;

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
  // fft_size 64K (conv_reg_big_kernel<., ., true>): per block R S T float4 holding the first
  // pass's result between the two passes of a row pair; blocks launched at most ws_blocks.
  float4* ws;
  int64_t ws_blocks;
};

template <int M1_, int M2_, int S_, bool TAB_ = true>
struct Cfg {
  static constexpr int M1 = M1_, M2 = M2_, S = S_;
  static constexpr int P = M1 * M2, T = 32 * S, NW = T / 32;
  static constexpr int MT1 = M1 / 16, NT = M2 / 8, MT2 = M2 / 16;
  static constexpr int PPT = P / T;             // positions of a sub-FFT per thread
  static constexpr int G = PPT < 8 ? PPT : 8;   // consecutive positions per vector access
  static constexpr int R = PPT / G;             // groups per thread
  static constexpr int XS = M2 + 8;             // row stride (halves) of the fp16 X planes
  static constexpr int YS = M2 + 8;             // row stride (floats) of the fp32 staging planes
  static constexpr int PLANE_X = M1 * XS, PLANE_Y = M1 * YS;
  static constexpr size_t kStage = size_t(S) * 2 * PLANE_Y * sizeof(float);
  // 32 x 32 tiles: room for the F_32 fragments (32 words per lane, in the A-operand order and
  // again in the B-operand order) when they are read from shared memory rather than held in
  // registers (FM > 0, the default for these tiles).
  static constexpr size_t kFrag = (M1 == 32 && M2 == 32) ? 2 * 32 * 32 * sizeof(uint32_t) : 0;
  // fft_size 8192 (8 sub-FFTs of 32 x 32, one block of 8 warps per multiprocessor): W_P in
  // shared memory and per warp one 16-row tile's half of its spectrum, prefetched (as in
  // conv_reg_big_kernel). Smaller sizes run several blocks per multiprocessor, which the extra
  // 8 KB + 4 KB a warp would cut. TAB_ = false: the build without them (tables read through
  // L1), for GPUs whose shared memory per block does not hold them (use_tables()).
  static constexpr bool kTabS = TAB_ && M1 == 32 && M2 == 32 && S == 8;
  static constexpr int kSpecHalf = P / 4;  // float4 per 16-row tile
  static constexpr size_t kTab = kTabS ? (size_t(P / 2) + size_t(NW) * kSpecHalf) * sizeof(float4) : 0;
  static constexpr size_t kSmem = kStage + kFrag + kTab;
  static_assert(G == 2 || G == 4 || G == 8, "group size");
  static_assert(size_t(S) * 2 * PLANE_X * 2 <= kStage, "X planes alias the staging planes");
};

template <int V>
using int_c = std::integral_constant<int, V>;

// ---- small helpers -----------------------------------------------------------------------------

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

// RadixTw for the two 32K-point passes of an fft_size-64K row pair (a.N = 2 N, so the step
// W_N = tw_n[2]). kTwist (the odd-frequency pass): every twiddle also carries W_2N^n0 (and the
// next position's W_2N^(n0 + 1)), the part of the input twist W_2N^n, n = n0 + i P, that is
// common to the sub-FFT inputs i (the rest, W_2S^i, is applied before the radix step); with
// kConj the same factors conjugated undo the twist on the outputs.
template <int S, int N, bool kTwist>
struct RadixTwHalf {
  float2 w1, step, h, hstep;
  __device__ __forceinline__ RadixTwHalf(const RegArgs& a, int n0) {
    int m = n0 & (N - 1);
    if (m > N / 2) m -= N;
    float sn, cs;
    __sincosf(static_cast<float>(m) * (-6.283185307179586f / static_cast<float>(N)), &sn, &cs);
    w1 = make_float2(cs, sn);
    step = a.tw_n[2];
    if constexpr (kTwist) {
      const int m2 = n0 & (N - 1);  // n0 < N: the angle stays in (-pi, 0]
      __sincosf(static_cast<float>(m2) * (-3.141592653589793f / static_cast<float>(N)), &sn, &cs);
      h = make_float2(cs, sn);
      hstep = a.tw_n[1];
    }
  }
  template <bool kConj>
  __device__ __forceinline__ void apply(float2 (&z)[S]) const {
    float2 w = w1;
    if constexpr (kTwist) {
      z[0] = kConj ? conv::cmul_conj(z[0], h) : conv::cmul(z[0], h);
      w = conv::cmul(h, w1);
    }
#pragma unroll
    for (int j = 1; j < S; ++j) {
      if (j > 1) w = conv::cmul(w, w1);
      z[j] = kConj ? conv::cmul_conj(z[j], w) : conv::cmul(z[j], w);
    }
  }
  __device__ __forceinline__ void next() {
    w1 = conv::cmul(w1, step);
    if constexpr (kTwist) h = conv::cmul(h, hstep);
  }
};

// cos and sin of -2 pi i / R, i < R / 2, evaluated at compile time (Taylor series in double
// after reduction to [-pi, pi]): the constant twiddles of the R = 16 and 32 radix steps.
constexpr double kPi = 3.14159265358979323846;
constexpr double taylor_cos(double x) {
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 30; ++k) {
    term *= -x * x / double((2 * k - 1) * (2 * k));
    sum += term;
  }
  return sum;
}
template <int R>
struct TwConst {
  float c[R / 2 > 0 ? R / 2 : 1], s[R / 2 > 0 ? R / 2 : 1];
  constexpr TwConst() : c(), s() {
    for (int i = 0; i < R / 2; ++i) {
      const double x = -2.0 * kPi * double(i) / double(R);  // in (-pi, 0]
      c[i] = float(taylor_cos(x));
      s[i] = float(taylor_cos(x - kPi / 2));  // sin x = cos(x - pi / 2), still in [-1.5 pi, 0]
    }
  }
};
// v * W_R^i (INV: W_R^-i), i < R / 2 known after unrolling: W_8 multiples by mul_w8 (no
// multiplications by 0 or 1), the others by constants.
template <int R, bool INV>
__device__ __forceinline__ float2 mul_wr(float2 v, int i) {
  if ((i * 8) % R == 0) {
    const int e = (i * 8 / R) & 7;
    return conv::mul_w8(v, INV ? (8 - e) & 7 : e);
  }
  constexpr TwConst<R> tw{};
  const float c = tw.c[i], s = INV ? -tw.s[i] : tw.s[i];
  return make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
}

// In-place R-point DFT (INV: conjugated), R in {1, 2, 4, ..., 32}, as radix-2 decimation in
// frequency (R log2 R complex additions instead of the R^2 of the definition; natural-order
// output). Inputs x[i], i >= NZ, are taken as zero and not read (the zero-padded upper half of a
// causal row): their additions are left out, which the compiler cannot do by itself (x + 0 is
// not x for x = -0).
template <int R, bool INV, int NZ = R>
__device__ __forceinline__ void fft_dif(float2 (&x)[R]) {
  if constexpr (R > 1) {
    constexpr int H = R / 2;
    float2 ev[H], od[H];
#pragma unroll
    for (int i = 0; i < H; ++i) {
      if (i + H < NZ) {
        ev[i] = make_float2(x[i].x + x[i + H].x, x[i].y + x[i + H].y);
        od[i] = mul_wr<R, INV>(make_float2(x[i].x - x[i + H].x, x[i].y - x[i + H].y), i);
      } else if (i < NZ) {
        ev[i] = x[i];
        od[i] = mul_wr<R, INV>(x[i], i);
      } else {
        ev[i] = od[i] = make_float2(0.0f, 0.0f);  // not read (NZ2 <= i below)
      }
    }
    constexpr int NZ2 = NZ < H ? NZ : H;
    fft_dif<H, INV, NZ2>(ev);
    fft_dif<H, INV, NZ2>(od);
#pragma unroll
    for (int q = 0; q < H; ++q) {
      x[2 * q] = ev[q];
      x[2 * q + 1] = od[q];
    }
  }
}

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
// c = a b (no accumulator input: replaces zeroing the accumulators before a DFT step).
__device__ __forceinline__ void mma_f16_z(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%10,%10,%10};\n"
      : "=f"(c[0]), "=f"(c[1]), "=f"(c[2]), "=f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(0.0f));
}
// First accumulation into c (kFirst: c = a b) or a later one (c += a b).
template <bool kFirst>
__device__ __forceinline__ void mma_acc(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  if constexpr (kFirst) {
    mma_f16_z(c, a, b0, b1);
  } else {
    mma_f16(c, a, b0, b1);
  }
}
__device__ __forceinline__ uint32_t movt(uint32_t x) {
  uint32_t y;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
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

// Where a warp reads the F fragments from: registers (FM = 0: 8 M^2 / 256 words per lane held
// for the kernel's life) or shared memory (M = 32: lane-major 16-byte words loaded per DFT step,
// so that the input and output phases and a register cap do not pay for them; FM = 2 also keeps
// a copy in the B-operand word order).
template <int M, int FM>
struct FragSrc {
  Frag<M> f;
  const uint4* sm;
  // Tile (mt, kt) of the real (im = 0) or imaginary part, as 4 words.
  __device__ __forceinline__ void get(int im, int mt, int kt, int lane, uint32_t (&r)[4]) const {
    if constexpr (FM > 0) {
      const uint4 q = sm[((im * (M / 16) + mt) * (M / 16) + kt) * 32 + lane];
      r[0] = q.x;
      r[1] = q.y;
      r[2] = q.z;
      r[3] = q.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) r[i] = im ? f.im[mt][kt][i] : f.re[mt][kt][i];
    }
  }
  // The same tile in B-operand order: words (0, 2, 1, 3), so that the pair of B registers of
  // n tile 2 m + q is r[2 q], r[2 q + 1] (adjacent: no moves before the mma). FM = 2: a second
  // copy stored in that order.
  __device__ __forceinline__ void get_b(int im, int mt, int kt, int lane, uint32_t (&r)[4]) const {
    if constexpr (FM == 2) {
      const uint4 q = sm[(8 + (im * (M / 16) + mt) * (M / 16) + kt) * 32 + lane];
      r[0] = q.x;
      r[1] = q.y;
      r[2] = q.z;
      r[3] = q.w;
    } else if constexpr (FM == 1) {
      const uint4 q = sm[((im * (M / 16) + mt) * (M / 16) + kt) * 32 + lane];
      r[0] = q.x;
      r[1] = q.z;
      r[2] = q.y;
      r[3] = q.w;
    } else {
      const uint32_t(&x)[4] = im ? f.im[mt][kt] : f.re[mt][kt];
      r[0] = x[0];
      r[1] = x[2];
      r[2] = x[1];
      r[3] = x[3];
    }
  }
};

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

// ---- steps on a warp's accumulator tile (MT1 x NT mma tiles of 16 x 8, complex as re/im) ----

// Entry-wise product with a table stored in lane order (one float4 = the two complex values of
// accumulator pair h of tile (mt, nt) for this lane): twiddles or the filter spectrum;
// kConj multiplies by the conjugate (the inverse transform's twiddles).
template <class C, bool kConj, int MTO, bool kShared = false>
__device__ __forceinline__ void mul_lane_table(float (&ar)[C::MT1][C::NT][4],
                                               float (&ai)[C::MT1][C::NT][4], const float4* table,
                                               int lane) {
#pragma unroll
  for (int mt = (MTO < 0 ? 0 : MTO); mt < (MTO < 0 ? C::MT1 : MTO + 1); ++mt)
#pragma unroll
    for (int nt = 0; nt < C::NT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4* tp = table + ((mt * C::NT + nt) * 2 + h) * 32 + lane;
        const float4 w = kShared ? *tp : __ldg(tp);
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

// One 16-row tile's half (H float4 per lane group of 32) of sub-FFT j's spectrum `spec_j`, half
// `mto`, into the warp's shared-memory buffer by cp.async (one committed group), ahead of its
// product (mul_lane_table<..., true> at spec_s - mto H): a load issued at the product left its
// L2 / HBM latency exposed. Each lane copies the entries it reads itself, so neither the copy
// nor the reuse of the buffer after the lane's own reads of the previous half needs a barrier.
template <int H>
__device__ __forceinline__ void prefetch_spec_half(float4* spec_s, const float4* spec_j, int mto,
                                                   int lane) {
#pragma unroll
  for (int e = 0; e < H / 32; ++e)
    cp_async_16_full(smem_u32(spec_s + e * 32 + lane), spec_j + mto * H + e * 32 + lane);
  cp_async_commit();
}

// X <- X F_M2 (kConj: X conj(F_M2)) with X the accumulator tile, repacked in place as A
// operands (fp16; FlashAttention's P-in-registers step). Complex product as four real mma:
//   forward  Cr = Xr Fr - Xi Fi, Ci = Xr Fi + Xi Fr
//   inverse  Cr = Xr Fr + Xi Fi, Ci = Xi Fr - Xr Fi
// issued term-major so that 2 MT1 NT independent mma separate two that share an accumulator;
// the first two terms of the first k tile start the accumulators (no zeroing).
template <class C, bool kConj, int FM, int MTO>
__device__ __forceinline__ void right_dft(float (&ar)[C::MT1][C::NT][4], float (&ai)[C::MT1][C::NT][4],
                                          const FragSrc<C::M2, FM>& fb, int lane) {
  constexpr int MT1 = C::MT1, MT2 = C::MT2, NT = C::NT;
  uint32_t pr[MT1][MT2][4], pi[MT1][MT2][4];
#pragma unroll
  for (int mt = (MTO < 0 ? 0 : MTO); mt < (MTO < 0 ? MT1 : MTO + 1); ++mt)
#pragma unroll
    for (int kt = 0; kt < MT2; ++kt) {
      pr[mt][kt][0] = pack_h2(ar[mt][2 * kt][0], ar[mt][2 * kt][1]);
      pr[mt][kt][1] = pack_h2(ar[mt][2 * kt][2], ar[mt][2 * kt][3]);
      pr[mt][kt][2] = pack_h2(ar[mt][2 * kt + 1][0], ar[mt][2 * kt + 1][1]);
      pr[mt][kt][3] = pack_h2(ar[mt][2 * kt + 1][2], ar[mt][2 * kt + 1][3]);
      pi[mt][kt][0] = pack_h2(ai[mt][2 * kt][0], ai[mt][2 * kt][1]);
      pi[mt][kt][1] = pack_h2(ai[mt][2 * kt][2], ai[mt][2 * kt][3]);
      pi[mt][kt][2] = pack_h2(ai[mt][2 * kt + 1][0], ai[mt][2 * kt + 1][1]);
      pi[mt][kt][3] = pack_h2(ai[mt][2 * kt + 1][2], ai[mt][2 * kt + 1][3]);
    }
#pragma unroll
  for (int kt = 0; kt < MT2; ++kt) {
    // B fragments of tile (kt, nt): F_M2 is symmetric, so tile (nt / 2, kt) of the A layout.
    uint32_t fre[MT2][4], fim[MT2][4];
#pragma unroll
    for (int m = 0; m < MT2; ++m) {
      fb.get_b(0, m, kt, lane, fre[m]);
      fb.get_b(1, m, kt, lane, fim[m]);
    }
#pragma unroll
    for (int term = 0; term < 4; ++term)
#pragma unroll
      for (int mt = (MTO < 0 ? 0 : MTO); mt < (MTO < 0 ? MT1 : MTO + 1); ++mt) {
        // The operand that enters with a minus sign: Xi (forward) or Xr (inverse).
        const uint32_t(&src)[4] = kConj ? pr[mt][kt] : pi[mt][kt];
        const uint32_t neg[4] = {src[0] ^ kNeg2, src[1] ^ kNeg2, src[2] ^ kNeg2, src[3] ^ kNeg2};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint32_t fr0 = fre[nt >> 1][2 * (nt & 1)], fr1 = fre[nt >> 1][2 * (nt & 1) + 1];
          const uint32_t fi0 = fim[nt >> 1][2 * (nt & 1)], fi1 = fim[nt >> 1][2 * (nt & 1) + 1];
          if (kt == 0) {
            if (term == 0) mma_acc<true>(ar[mt][nt], pr[mt][kt], fr0, fr1);
            if (!kConj && term == 1) mma_acc<true>(ai[mt][nt], pr[mt][kt], fi0, fi1);
            if (kConj && term == 1) mma_acc<true>(ai[mt][nt], pi[mt][kt], fr0, fr1);
          } else {
            if (term == 0) mma_f16(ar[mt][nt], pr[mt][kt], fr0, fr1);
            if (!kConj && term == 1) mma_f16(ai[mt][nt], pr[mt][kt], fi0, fi1);
            if (kConj && term == 1) mma_f16(ai[mt][nt], pi[mt][kt], fr0, fr1);
          }
          if (!kConj) {
            if (term == 2) mma_f16(ar[mt][nt], neg, fi0, fi1);
            if (term == 3) mma_f16(ai[mt][nt], pi[mt][kt], fr0, fr1);
          } else {
            if (term == 2) mma_f16(ar[mt][nt], pi[mt][kt], fi0, fi1);
            if (term == 3) mma_f16(ai[mt][nt], neg, fi0, fi1);
          }
        }
      }
  }
}

// Step 1 of a sub-FFT, F_M1 X: X (M1 x M2, fp16 real and imaginary planes in shared memory,
// row stride C::XS halves) read with ldmatrix.trans as the B operands, F_M1 as the A operand;
// the first two products start the accumulators. Yr = Fr Br - Fi Bi, Yi = Fr Bi + Fi Br.
// Shared by conv_reg_kernel and conv_reg_big_kernel.
template <class C, int FM>
__device__ __forceinline__ void left_dft(float (&ar)[C::MT1][C::NT][4],
                                         float (&ai)[C::MT1][C::NT][4], const __half* xr,
                                         const __half* xi, const FragSrc<C::M1, FM>& fa,
                                         int lane) {
  constexpr int MT1 = C::MT1, NT = C::NT;
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
    uint32_t fr[MT1][4], fi[MT1][4];
#pragma unroll
    for (int mt = 0; mt < MT1; ++mt) {
      fa.get(0, mt, kt, lane, fr[mt]);
      fa.get(1, mt, kt, lane, fi[mt]);
    }
#pragma unroll
    for (int term = 0; term < 4; ++term)
#pragma unroll
      for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const uint32_t r0 = br[nt][0], r1 = br[nt][1], i0 = bi[nt][0], i1 = bi[nt][1];
          if (kt == 0) {
            if (term == 0) mma_acc<true>(ar[mt][nt], fr[mt], r0, r1);
            if (term == 1) mma_acc<true>(ai[mt][nt], fr[mt], i0, i1);
          } else {
            if (term == 0) mma_f16(ar[mt][nt], fr[mt], r0, r1);
            if (term == 1) mma_f16(ai[mt][nt], fr[mt], i0, i1);
          }
          if (term == 2) mma_f16(ar[mt][nt], fi[mt], i0 ^ kNeg2, i1 ^ kNeg2);
          if (term == 3) mma_f16(ai[mt][nt], fi[mt], r0, r1);
        }
  }
}

// The inverse's last DFT step, conj(F_M1) C: C (the accumulators) transposed in registers
// (movmatrix) into B operands. yr = Fr Cr + Fi Ci, yi = Fr Ci - Fi Cr. Shared by both kernels.
template <class C, int FM>
__device__ __forceinline__ void left_dft_inv(float (&ar)[C::MT1][C::NT][4],
                                             float (&ai)[C::MT1][C::NT][4],
                                             const FragSrc<C::M1, FM>& fa, int lane) {
  constexpr int MT1 = C::MT1, NT = C::NT;
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
#pragma unroll
  for (int kt = 0; kt < MT1; ++kt) {
    uint32_t fr[MT1][4], fi[MT1][4];
#pragma unroll
    for (int mt = 0; mt < MT1; ++mt) {
      fa.get(0, mt, kt, lane, fr[mt]);
      fa.get(1, mt, kt, lane, fi[mt]);
    }
#pragma unroll
    for (int term = 0; term < 4; ++term)
#pragma unroll
      for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          if (kt == 0) {
            if (term == 0) mma_acc<true>(ar[mt][nt], fr[mt], cr[kt][nt][0], cr[kt][nt][1]);
            if (term == 1) mma_acc<true>(ai[mt][nt], fr[mt], ci[kt][nt][0], ci[kt][nt][1]);
          } else {
            if (term == 0) mma_f16(ar[mt][nt], fr[mt], cr[kt][nt][0], cr[kt][nt][1]);
            if (term == 1) mma_f16(ai[mt][nt], fr[mt], ci[kt][nt][0], ci[kt][nt][1]);
          }
          if (term == 2) mma_f16(ar[mt][nt], fi[mt], ci[kt][nt][0], ci[kt][nt][1]);
          if (term == 3)
            mma_f16(ai[mt][nt], fi[mt], cr[kt][nt][0] ^ kNeg2, cr[kt][nt][1] ^ kNeg2);
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
// ring slot `slot`: positions >= seqlen (up to lp) are zero, and so is the second row of each
// array when the pair has none (an odd batch's last pair), so that the kernel reads both rows
// unconditionally. vec: cp.async (the caller commits); otherwise plain loads.
template <int T>
__device__ __forceinline__ void fill_ring(const RegArgs& a, uint16_t* ring, int slot, int64_t c,
                                          int64_t b0) {
  const bool has1 = b0 + 1 < a.batch;
  const int chunks = a.lp / 8;
  for (int arr = 0; arr < a.narr; ++arr)
    for (int row = 0; row < 2; ++row) {
      const bool present = row == 0 || has1;
      const int64_t b = present ? b0 + row : b0;
      const void* base;
      int64_t off;
      if (arr == 0) {
        base = a.u;
        off = b * a.u_bs + c * a.u_cs;
      } else if (arr == 1 && a.pre != nullptr) {
        base = a.pre;
        off = b * a.pre_bs + c * a.pre_cs;
      } else {
        base = a.post;
        off = b * a.post_bs + c * a.post_cs;
      }
      const uint16_t* src = static_cast<const uint16_t*>(base) + off;
      uint16_t* dst = ring + ((slot * a.narr + arr) * 2 + row) * a.lp;
      for (int ch = threadIdx.x; ch < chunks; ch += T) {
        const int t = 8 * ch;
        const int64_t left = present ? a.L - t : 0;
        if (a.vec) {
          cp_async_16(smem_u32(dst + t), src + t,
                      left >= 8 ? 16 : (left > 0 ? static_cast<int>(2 * left) : 0));
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) dst[t + e] = (e < left) ? src[t + e] : uint16_t(0);
        }
      }
    }
}

// w = the G / 2 words of row[t0 .. t0 + G) in the ring (zeros when !in).
template <int G>
__device__ __forceinline__ void ld_words(const uint16_t* row, int t0, bool in,
                                         uint32_t (&w)[G / 2]) {
  if (!in) {
#pragma unroll
    for (int e = 0; e < G / 2; ++e) w[e] = 0u;
    return;
  }
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
}

// v0, v1 *= the G values of two rows at row0, row1 [t0 .. t0 + G) (the pre- or post-gate of a
// row pair), read from the ring as fp16/bf16 words.
template <int G>
__device__ __forceinline__ void mul_rows(const uint16_t* row0, const uint16_t* row1, int t0,
                                         bool bf16, float (&v0)[G], float (&v1)[G]) {
  uint32_t w0[G / 2], w1[G / 2];
  ld_words<G>(row0, t0, true, w0);
  ld_words<G>(row1, t0, true, w1);
#pragma unroll
  for (int e = 0; e < G / 2; ++e) {
    float c0, d0, c1, d1;
    cvt_word(w0[e], bf16, c0, d0);
    cvt_word(w1[e], bf16, c1, d1);
    v0[2 * e] *= c0;
    v0[2 * e + 1] *= d0;
    v1[2 * e] *= c1;
    v1[2 * e + 1] *= d1;
  }
}
// m = per-half max of the raw 16-bit magnitudes of w (bf16 and fp16 magnitudes order like
// unsigned integers).
template <int GW>
__device__ __forceinline__ void absmax_w(const uint32_t (&w)[GW], uint32_t& m) {
#pragma unroll
  for (int e = 0; e < GW; ++e) m = __vmaxu2(m, w[e] & 0x7fff7fffu);
}
// Exponent e with x < 2^e (x >= 0 finite); 0 for x = 0; -1000 flags inf/NaN.
__device__ __forceinline__ int exp_above(float x) {
  if (!(x <= 3.4e38f)) return -1000;
  if (x == 0.0f) return 0;
  int ex;
  frexpf(x, &ex);  // x = f 2^ex, f in [0.5, 1)
  return ex;
}

// The input scale 2^-E with |u| |pregate| 2^-E < 1 (1 when a maximum is zero or not finite),
// from each thread's largest raw 16-bit magnitudes of u (`mu`) and of the pregate (`mp`), two
// per word: one redux per warp, then across the NW warps through `red` (2 NW words of shared
// memory; a block-wide barrier). conv_reg_kernel and conv_reg_big_kernel share it.
// E is kept in [-126, e_hi] (input_scale_hi): bf16 rows whose max |u| x max |pregate| is below
// 2^-126 (or, gated, above 2^127 where the products themselves are moderate) otherwise gave a
// scale of inf (or 0) and NaN outputs; e_hi keeps the output scale, spec_scale[c] / s_in,
// finite.
template <int NW>
__device__ __forceinline__ float input_scale(uint32_t mu, uint32_t mp, bool gated_in, bool bf16,
                                             uint32_t* red, int lane, int warp, int e_hi) {
  mu = __reduce_max_sync(0xffffffffu, max(mu & 0xffffu, mu >> 16));
  mp = __reduce_max_sync(0xffffffffu, max(mp & 0xffffu, mp >> 16));
  if (lane == 0) {
    red[warp] = mu;
    red[NW + warp] = mp;
  }
  __syncthreads();
  mu = red[0];
  mp = red[NW];
#pragma unroll
  for (int w = 1; w < NW; ++w) {
    mu = max(mu, red[w]);
    mp = max(mp, red[NW + w]);
  }
  float mxu, mxp, unused;
  cvt_word(mu, bf16, mxu, unused);
  cvt_word(mp, bf16, mxp, unused);
  const int eu = exp_above(mxu), ep = gated_in ? exp_above(mxp) : 0;
  if (eu <= -1000 || ep <= -1000) return 1.0f;
  return ldexpf(1.0f, -min(max(eu + ep, -126), e_hi));
}

// The largest E of input_scale for channel scale `spec` (a power of two, 2^(es - 1)) when the
// output scale is spec / (s_in 2^-zs): spec 2^(E + zs) stays at most 2^126 and s_in 2^-zs
// normal.
__device__ __forceinline__ int input_scale_hi(float spec, int zs) {
  int es = 0;
  frexpf(spec, &es);
  return min(126 - zs, 127 - zs - es);
}

// W_N^e for any e >= 0.
__device__ __forceinline__ float2 twn(const RegArgs& a, int e) {
  const int half = static_cast<int>(a.N >> 1);
  const float2 t = a.tw_n[e & (half - 1)];
  return (e & half) ? make_float2(-t.x, -t.y) : t;
}

// ---- the kernel --------------------------------------------------------------------------------

// W > 0: registers capped so that W warps fit on a multiprocessor (W * 32 / T blocks).
// FM > 0: the F_32 fragments are read from shared memory per DFT step (32 x 32 tiles only).
// SW: __syncwarp() between the steps of the DFT core, so that the compiler does not hoist a
// step's loads (tables, F fragments) into the step before: fewer live registers, no spills.
// SPLIT: the steps between the two left DFTs one 16-row tile at a time.
// DIAG (measurement builds only, wrong results): bit 0 leaves out the table products, bit 1
// the input radix step, bit 2 the output phase, bit 3 the DFT core.
template <class C, int W, bool BF16, int FM, bool SW, bool SPLIT = true, int DIAG = 0>
__global__ void __launch_bounds__(C::T, W > 0 ? W * 32 / C::T : 1) conv_reg_kernel(const RegArgs a) {
  constexpr int M1 = C::M1, M2 = C::M2, S = C::S, P = C::P, T = C::T;
  constexpr int MT1 = C::MT1, NT = C::NT, G = C::G, R = C::R, GW = G / 2;
  constexpr int NW = C::NW;
  constexpr bool FS = FM > 0;
  static_assert(!FS || (M1 == 32 && M2 == 32), "shared-memory fragments: 32 x 32 tiles");
  extern __shared__ float4 smem4[];
  float* stage = reinterpret_cast<float*>(smem4);
  __half* xbuf = reinterpret_cast<__half*>(smem4);
  uint16_t* ring = reinterpret_cast<uint16_t*>(smem4 + C::kSmem / sizeof(float4));
  __shared__ uint32_t red[2 * NW];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  constexpr bool bf16 = BF16;
  const bool vec = a.vec != 0;
  const bool gated_in = a.pre != nullptr;

  FragSrc<M1, FM> fa;
  FragSrc<M2, FM> fb;
  if constexpr (FS) {
    // Warp 0 writes F_32 (lane-major 16-byte words, A then B order); read after the pair loop's
    // first barrier.
    uint4* fsm = reinterpret_cast<uint4*>(smem4 + C::kStage / sizeof(float4));
    if (warp == 0) {
      Frag<32> f;
      make_frag<32>(f);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint32_t(&r)[4] = f.re[q >> 1][q & 1];
        const uint32_t(&i)[4] = f.im[q >> 1][q & 1];
        fsm[q * 32 + lane] = make_uint4(r[0], r[1], r[2], r[3]);
        fsm[(4 + q) * 32 + lane] = make_uint4(i[0], i[1], i[2], i[3]);
        if (FM == 2) {
          fsm[(8 + q) * 32 + lane] = make_uint4(r[0], r[2], r[1], r[3]);
          fsm[(12 + q) * 32 + lane] = make_uint4(i[0], i[2], i[1], i[3]);
        }
      }
    }
    fa.sm = fsm;
    fb.sm = fsm;
  } else {
    make_frag<M1>(fa.f);
    if constexpr (M1 == M2) {
      fb.f = fa.f;
    } else {
      make_frag<M2>(fb.f);
    }
  }

  // Tables in shared memory (Cfg::kTabS; the table products of measurement builds that leave
  // them out, or take all row tiles at once, keep the global reads).
  constexpr bool kTabS = C::kTabS && FS && SPLIT && (DIAG & 1) == 0;
  float4* const twp_s = reinterpret_cast<float4*>(smem4 + (C::kStage + C::kFrag) / sizeof(float4));
  float4* const spec_s = twp_s + P / 2 + warp * C::kSpecHalf;
  if constexpr (kTabS) {
    for (int e = tid; e < P / 2; e += T) twp_s[e] = __ldg(a.tw_p + e);  // read after a barrier
  }

  const int64_t pairs = a.pairs_per_channel * a.channels;
  const int64_t first = blockIdx.x * a.pairs_per_block;
  const int64_t last = first + a.pairs_per_block < pairs ? first + a.pairs_per_block : pairs;
  const int lp = a.lp;
  // The row is zero from L on: with L <= N / 2 (a causal plan's fft_size >= 2 L) the radix-S
  // step's inputs i >= S / 2 are zero and its outputs i >= S / 2 are not stored.
  const bool half = S > 1 && 2 * a.L <= int64_t(S) * P;
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
    // Ring rows of this pair (the second rows are zeros when the pair has none).
    const uint16_t* u0 = ring + int64_t(slot) * a.narr * 2 * lp;
    const uint16_t* u1 = u0 + lp;
    const uint16_t* p0 = u0 + 2 * lp;  // pregate rows (read only when gated_in)
    const uint16_t* p1 = p0 + lp;

    // ---- input: the scale s_in = 2^-E with |v| s_in < 1 from max |u| * max |pregate|, the
    // radix-S DIF step (SI nonzero inputs), fp16 into the X planes ----
    float s_in = 1.0f;
    auto input_phase = [&](auto si_tag) {
      constexpr int SI = decltype(si_tag)::value;
      // Pass 1: max |u|, max |pregate| (raw 16-bit magnitudes); pass 2 below re-reads the
      // ring (keeping the words in registers across the barrier costs 32-64 registers).
      uint32_t mu = 0, mp = 0;
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int i = 0; i < SI; ++i) {
          const int t0 = G * (tid + T * r) + i * P;
          const bool in = t0 < lp;  // the ring holds zeros from L up to lp
          uint32_t w0[GW], w1[GW];
          ld_words<G>(u0, t0, in, w0);
          ld_words<G>(u1, t0, in, w1);
          absmax_w<GW>(w0, mu);
          absmax_w<GW>(w1, mu);
          if (gated_in) {
            ld_words<G>(p0, t0, in, w0);
            ld_words<G>(p1, t0, in, w1);
            absmax_w<GW>(w0, mp);
            absmax_w<GW>(w1, mp);
          }
        }
      s_in = input_scale<NW>(mu, mp, gated_in, bf16, red, lane, warp,
                             input_scale_hi(__ldg(a.spec_scale + c), 0));
#pragma unroll
      for (int r = 0; r < ((DIAG & 2) ? 0 : R); ++r) {
        const int n0 = G * (tid + T * r), n1 = n0 / M2, n2 = n0 % M2;
        uint32_t wu[SI][2][GW], wp[SI][2][GW];
#pragma unroll
        for (int i = 0; i < SI; ++i) {
          const int t0 = n0 + i * P;
          const bool in = t0 < lp;
          ld_words<G>(u0, t0, in, wu[i][0]);
          ld_words<G>(u1, t0, in, wu[i][1]);
          if (gated_in) {
            ld_words<G>(p0, t0, in, wp[i][0]);
            ld_words<G>(p1, t0, in, wp[i][1]);
          }
        }
        float2 xs[S][G];
        RadixTw<S, S * P> tw(a, n0);
#pragma unroll
        for (int e2 = 0; e2 < GW; ++e2) {
          float2 z[2][S];
#pragma unroll
          for (int i = 0; i < SI; ++i) {
            float a0, b0v, a1, b1v;  // rows 0 and 1 at positions 2 e2, 2 e2 + 1
            cvt_word(wu[i][0][e2], bf16, a0, b0v);
            cvt_word(wu[i][1][e2], bf16, a1, b1v);
            if (gated_in) {
              float c0, d0, c1, d1;
              cvt_word(wp[i][0][e2], bf16, c0, d0);
              cvt_word(wp[i][1][e2], bf16, c1, d1);
              a0 *= c0;
              b0v *= d0;
              a1 *= c1;
              b1v *= d1;
            }
            z[0][i] = make_float2(a0 * s_in, a1 * s_in);
            z[1][i] = make_float2(b0v * s_in, b1v * s_in);
          }
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            fft_dif<S, false, SI>(z[h]);
            tw.template apply<false>(z[h]);
            if (2 * e2 + h + 1 < G) tw.next();
#pragma unroll
            for (int j = 0; j < S; ++j) xs[j][2 * e2 + h] = z[h][j];
          }
        }
#pragma unroll
        for (int j = 0; j < S; ++j) {
          uint32_t hr[GW], hi[GW];
#pragma unroll
          for (int e = 0; e < GW; ++e) {
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
    };
    if constexpr (S == 1) {
      input_phase(int_c<1>{});
    } else {
      if (half) {
        input_phase(int_c<S / 2>{});
      } else {
        input_phase(int_c<S>{});
      }
    }
    __syncthreads();

    // ---- the warp's sub-FFT j: forward, pointwise, inverse ----
    const int j = warp;
    float ar[MT1][NT][4], ai[MT1][NT][4];
    const float4* const spec_j = a.spec + c * (a.N >> 1) + j * (P / 2);
    // acc = conj?(F_M1) . B with B = the M1 x M2 plane pair (re, im) in shared memory, loaded as
    // B operands with ldmatrix.trans; the first k tile's first two terms start the accumulators.
    //   Yr = Fr Br - Fi Bi, Yi = Fr Bi + Fi Br
    if constexpr ((DIAG & 8) != 0) {
#pragma unroll
      for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int q = 0; q < 4; ++q) ar[mt][nt][q] = ai[mt][nt][q] = 0.0f;
    } else {
      if constexpr (kTabS) prefetch_spec_half<C::kSpecHalf>(spec_s, spec_j, 0, lane);
      left_dft<C>(ar, ai, xbuf + (j * 2 + 0) * C::PLANE_X, xbuf + (j * 2 + 1) * C::PLANE_X, fa,
                  lane);
    }
    // The steps between the two left DFTs act on rows independently: one 16-row tile at a time
    // (half the operands, table values and F_M2 fragments live at once).
    auto middle = [&](auto mt_tag) {
      constexpr int MTO = decltype(mt_tag)::value;
      if constexpr (SW) __syncwarp();
      // Twiddles W_P^(k1 n2), k1 = 16 mt + g + 8 h, n2 = 8 nt + 2 t + e.
      if constexpr (kTabS) {
        mul_lane_table<C, false, MTO, true>(ar, ai, twp_s, lane);
      } else if constexpr (!(DIAG & 1)) {
        mul_lane_table<C, false, MTO>(ar, ai, a.tw_p, lane);
      }
      if constexpr (SW) __syncwarp();
      // Step 2: (A o T) F_M2, the accumulators repacked as A operands.
      right_dft<C, false, FM, MTO>(ar, ai, fb, lane);
      if constexpr (SW) __syncwarp();
      // Pointwise: times the spectrum (entry (k1, k2) of sub-FFT j).
      if constexpr (kTabS) {
        cp_async_wait_all();  // also the next pair's ring rows, requested before the input step
        mul_lane_table<C, false, MTO, true>(ar, ai, spec_s - MTO * C::kSpecHalf, lane);
        if (MTO == 0) prefetch_spec_half<C::kSpecHalf>(spec_s, spec_j, 1, lane);
      } else if constexpr (!(DIAG & 1)) {
        mul_lane_table<C, false, MTO>(ar, ai, spec_j, lane);
      }
      if constexpr (SW) __syncwarp();
      // Inverse step 1: Y conj(F_M2), then conjugate twiddles.
      right_dft<C, true, FM, MTO>(ar, ai, fb, lane);
      if constexpr (SW) __syncwarp();
      if constexpr (kTabS) {
        mul_lane_table<C, true, MTO, true>(ar, ai, twp_s, lane);
      } else if constexpr (!(DIAG & 1)) {
        mul_lane_table<C, true, MTO>(ar, ai, a.tw_p, lane);
      }
      if constexpr (SW) __syncwarp();
    };
    if constexpr ((DIAG & 8) != 0) {
    } else if constexpr (SPLIT) {
      middle(int_c<0>{});
      if constexpr (MT1 == 2) middle(int_c<1>{});
    } else {
      middle(int_c<-1>{});  // all row tiles at once
    }
    if constexpr ((DIAG & 8) == 0) {
      // Inverse step 2: conj(F_M1) C.
      left_dft_inv<C>(ar, ai, fa, lane);
    }
    __syncthreads();  // every warp has read its X planes (they alias the staging planes)
#pragma unroll
    for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int n1 = 16 * mt + g + 8 * h, n2 = 8 * nt + 2 * t;
          float* yr = stage + (j * 2 + 0) * C::PLANE_Y + n1 * C::YS + n2;
          float* yi = stage + (j * 2 + 1) * C::PLANE_Y + n1 * C::YS + n2;
          *reinterpret_cast<float2*>(yr) = make_float2(ar[mt][nt][2 * h], ar[mt][nt][2 * h + 1]);
          *reinterpret_cast<float2*>(yi) = make_float2(ai[mt][nt][2 * h], ai[mt][nt][2 * h + 1]);
        }
    __syncthreads();

    // ---- output: radix-S DIT step (outputs i < SO), scale back, D term, gates, stores ----
    const float oscale = __ldg(a.spec_scale + c) / s_in;
    const float dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
    uint16_t* y0 = static_cast<uint16_t*>(a.y) + b0 * a.y_bs + c * a.y_cs;
    uint16_t* y1 = has1 ? y0 + a.y_bs : nullptr;
    const uint16_t* q0 = a.post != nullptr ? u0 + (gated_in ? 4 : 2) * lp : nullptr;
    const uint16_t* q1 = q0 != nullptr ? q0 + lp : nullptr;
    auto output_phase = [&](auto so_tag) {
      constexpr int SO = decltype(so_tag)::value;
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
            fft_dif<S, true>(z[e]);  // outputs i >= SO are never read: dead code
          }
        }
#pragma unroll
        for (int i = 0; i < SO; ++i) {
          const int t0 = n0 + i * P;
          if (t0 >= a.L) continue;
          float o0[G], o1[G];
#pragma unroll
          for (int e = 0; e < G; ++e) {
            o0[e] = z[e][i].x * oscale;
            o1[e] = z[e][i].y * oscale;
          }
          if (a.D != nullptr) {
            uint32_t w0[GW], w1[GW];
            ld_words<G>(u0, t0, true, w0);
            ld_words<G>(u1, t0, true, w1);
            float v0[G], v1[G];
#pragma unroll
            for (int e = 0; e < GW; ++e) {
              cvt_word(w0[e], bf16, v0[2 * e], v0[2 * e + 1]);
              cvt_word(w1[e], bf16, v1[2 * e], v1[2 * e + 1]);
            }
            if (gated_in) mul_rows<G>(p0, p1, t0, bf16, v0, v1);
#pragma unroll
            for (int e = 0; e < G; ++e) {
              o0[e] = fmaf(dc, v0[e], o0[e]);
              o1[e] = fmaf(dc, v1[e], o1[e]);
            }
          }
          if (q0 != nullptr) mul_rows<G>(q0, q1, t0, bf16, o0, o1);
          store_g<G>(y0, t0, a.L, vec, bf16, o0);
          if (y1 != nullptr) store_g<G>(y1, t0, a.L, vec, bf16, o1);
        }
      }
    };
    if constexpr ((DIAG & 4) != 0) {
    } else if constexpr (S == 1) {
      output_phase(int_c<1>{});
    } else {
      if (half) {
        output_phase(int_c<S / 2>{});
      } else {
        output_phase(int_c<S>{});
      }
    }
    c = cn;
    b0 = bn;
  }
}

// ---- fft_size 16384 and 32768: S = 16 or 32 sub-FFTs, 8 warps taking them in turn ----------
//
// The X planes of all S sub-FFTs (fp16, the radix-S step's output) live in shared memory; warp w
// transforms sub-FFTs w, w + 8, ... in turn and writes each result Z_j (the inverse P-point
// FFT, before the radix-S DIT step) back over its own X planes as fp16, scaled by 2^-4 (Z_j <=
// 2^19 in magnitude with the spectrum scaled to <= 1 / (4 S): no overflow; the 2^4 goes into
// the output scale). Then all threads do the radix-S DIT step from the S planes. Shared memory:
// S * 5 KB of planes + 8 KB of F_32 fragments + 8 KB of W_P + 4 KB of spectrum per warp (128 KB
// at S = 16, 208 KB at S = 32), plus a u ring
// (one or two row pairs, 16-byte aligned rows only) when it fits; otherwise u is read from
// global memory like the gates, which are always read from global memory here (L2-resident:
// each block re-reads its pair's rows at the D term and the post-gate).
template <int S_, bool TAB_ = true>
struct BigCfg {
  static constexpr int M1 = 32, M2 = 32, S = S_, P = 1024, T = 256, NW = 8;
  static constexpr int MT1 = 2, NT = 4, MT2 = 2;
  static constexpr int R = P / (T * 2);  // groups of two consecutive positions per thread
  static constexpr int XS = M2 + 8;      // row stride (halves) of the fp16 planes
  static constexpr int PLANE_X = M1 * XS;
  static constexpr size_t kPlanes = size_t(S) * 2 * PLANE_X * sizeof(__half);
  static constexpr size_t kFrag = 2 * 32 * 32 * sizeof(uint32_t);
  // W_P^(k1 n2) in fragment order (P / 2 float4), copied once per block, and per warp one half
  // (one 16-row tile) of the current sub-FFT's spectrum, prefetched by cp.async. kTab = false:
  // the build without them (both read through L1 at the products, 16 KB less), for GPUs whose
  // shared memory per block does not hold them (use_tables()).
  static constexpr bool kTab = TAB_;
  static constexpr size_t kTwp = kTab ? size_t(P / 2) * sizeof(float4) : 0;
  static constexpr int kSpecHalf = P / 4;  // float4 per 16-row tile
  static constexpr size_t kSpec = kTab ? size_t(NW) * kSpecHalf * sizeof(float4) : 0;
  static constexpr size_t kSmem = kPlanes + kFrag + kTwp + kSpec;
  static constexpr float kZScale = 0.0625f;  // Z_j staged as fp16 times 2^-4 (input_scale_hi's zs)
};

// Row access of the big kernel. A thread works on positions n0 + k of a row (n0 even, k a
// multiple of P, a constant after unrolling), through p = row + n0 and lim = L - n0 (0 for a
// missing row, which is then never dereferenced; p may be null then). Positions past L read as
// zero and are not written. AL: the row is 4-byte aligned at even positions and L is even
// (16-byte-aligned rows of even length), so a pair of positions is one 32-bit access, whole or
// past L; otherwise two 16-bit ones. The accesses are predicated PTX, and ptxas folds k into the
// compares and the addresses' immediate offsets: written in C++ with a general tail test, each
// access compiled to a branchy 64-bit sequence that made up half of the fft_size-32K kernel's
// code (and the same register loaded twice under two predicates serialised the loads).
// Volatile: a ring row's address repeats from pair to pair, so the loads must not be merged or
// moved across the barriers between the pairs.
template <bool AL>
__device__ __forceinline__ uint32_t ld_pair(const uint16_t* p, int k, int lim) {
  uint32_t v;
  if constexpr (AL) {
    asm volatile(
        "{\n\t.reg .pred f;\n\t"
        "setp.lt.s32 f, %1, %2;\n\t"
        "mov.b32 %0, 0;\n\t"
        "@f ld.u32 %0, [%3];\n\t}"
        : "=r"(v)
        : "r"(k), "r"(lim), "l"(p + k));
  } else {
    uint32_t hi;
    asm volatile(
        "{\n\t.reg .pred f, h;\n\t"
        "setp.lt.s32 f, %2, %3;\n\t"
        "setp.lt.s32 h, %4, %3;\n\t"
        "mov.b32 %0, 0;\n\t"
        "mov.b32 %1, 0;\n\t"
        "@f ld.u16 %0, [%5];\n\t"
        "@h ld.u16 %1, [%5+2];\n\t}"
        : "=r"(v), "=r"(hi)
        : "r"(k), "r"(lim), "r"(k + 1), "l"(p + k));
    v |= hi << 16;
  }
  return v;
}
template <bool AL>
__device__ __forceinline__ void st_pair(uint16_t* p, int k, int lim, uint32_t w) {
  if constexpr (AL) {
    asm volatile(
        "{\n\t.reg .pred f;\n\t"
        "setp.lt.s32 f, %0, %1;\n\t"
        "@f st.global.u32 [%2], %3;\n\t}"
        :
        : "r"(k), "r"(lim), "l"(p + k), "r"(w)
        : "memory");
  } else {
    asm volatile(
        "{\n\t.reg .pred f, h;\n\t"
        "setp.lt.s32 f, %0, %1;\n\t"
        "setp.lt.s32 h, %2, %1;\n\t"
        "@f st.global.u16 [%3], %4;\n\t"
        "@h st.global.u16 [%3+2], %5;\n\t}"
        :
        : "r"(k), "r"(lim), "r"(k + 1), "l"(p + k), "r"(w), "r"(w >> 16)
        : "memory");
  }
}

// A row seen from position n0: p = row + n0, lim = L - n0 (0 and null for a missing row).
struct RowAt {
  const uint16_t* p;
  int lim;
};
__device__ __forceinline__ RowAt row_at(const uint16_t* row, int n0, int L) {
  RowAt x;
  x.p = row != nullptr ? row + n0 : row;
  x.lim = row != nullptr ? L - n0 : 0;
  return x;
}
// The words of the six rows of the output step (u and pregate for the D term, postgate; two rows
// each) at positions (ch CH + k) P, k < CH; a group of rows the call does not have is skipped by
// a uniform branch (predicated-off loads would still take issue slots).
template <bool AL, int CH, int P>
__device__ __forceinline__ void ld_chunk(const RowAt (&src)[6], int ch, bool has_d, bool pre_d,
                                         bool has_q, uint32_t (&wd)[CH][6]) {
#pragma unroll
  for (int k = 0; k < CH; ++k)
#pragma unroll
    for (int q = 0; q < 6; ++q) wd[k][q] = 0u;
  if (has_d) {
#pragma unroll
    for (int k = 0; k < CH; ++k)
#pragma unroll
      for (int q = 0; q < 2; ++q) wd[k][q] = ld_pair<AL>(src[q].p, (ch * CH + k) * P, src[q].lim);
  }
  if (pre_d) {
#pragma unroll
    for (int k = 0; k < CH; ++k)
#pragma unroll
      for (int q = 2; q < 4; ++q) wd[k][q] = ld_pair<AL>(src[q].p, (ch * CH + k) * P, src[q].lim);
  }
  if (has_q) {
#pragma unroll
    for (int k = 0; k < CH; ++k)
#pragma unroll
      for (int q = 4; q < 6; ++q) wd[k][q] = ld_pair<AL>(src[q].p, (ch * CH + k) * P, src[q].lim);
  }
}

template <class C, bool BF16, bool K64 = false>
__global__ void __launch_bounds__(C::T, 1) conv_reg_big_kernel(const RegArgs a) {
  constexpr int S = C::S, P = C::P, T = C::T, NW = C::NW, R = C::R;
  constexpr int MT1 = C::MT1, NT = C::NT, XS = C::XS, PX = C::PLANE_X;
  constexpr int FM = 2;
  constexpr bool bf16 = BF16;
  extern __shared__ float4 smem4[];
  __half* xbuf = reinterpret_cast<__half*>(smem4);
  uint4* fsm = reinterpret_cast<uint4*>(smem4 + C::kPlanes / sizeof(float4));
  uint16_t* ring = reinterpret_cast<uint16_t*>(smem4 + C::kSmem / sizeof(float4));
  __shared__ uint32_t red[2 * NW];

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const bool vec = a.vec != 0;
  const bool gated_in = a.pre != nullptr;
  const int64_t L = a.L;
  const int slots = a.slots;  // 0: u from global memory; 1, 2: ring slots (vec rows only)

  if (warp == 0) {
    Frag<32> f;
    make_frag<32>(f);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t(&r)[4] = f.re[q >> 1][q & 1];
      const uint32_t(&i)[4] = f.im[q >> 1][q & 1];
      fsm[q * 32 + lane] = make_uint4(r[0], r[1], r[2], r[3]);
      fsm[(4 + q) * 32 + lane] = make_uint4(i[0], i[1], i[2], i[3]);
      fsm[(8 + q) * 32 + lane] = make_uint4(r[0], r[2], r[1], r[3]);
      fsm[(12 + q) * 32 + lane] = make_uint4(i[0], i[2], i[1], i[3]);
    }
  }
  FragSrc<32, FM> fa, fb;
  fa.sm = fsm;
  fb.sm = fsm;
  // W_P in shared memory (read at every sub-FFT by every warp); visible after the pair loop's
  // first barrier.
  float4* const twp_s = reinterpret_cast<float4*>(smem4 + (C::kPlanes + C::kFrag) / sizeof(float4));
  float4* const spec_s = twp_s + P / 2 + warp * C::kSpecHalf;
  if constexpr (C::kTab) {
    for (int e = tid; e < P / 2; e += T) twp_s[e] = __ldg(a.tw_p + e);
  }

  const int64_t pairs = a.pairs_per_channel * a.channels;
  const int64_t first = blockIdx.x * a.pairs_per_block;
  const int64_t last = first + a.pairs_per_block < pairs ? first + a.pairs_per_block : pairs;
  const int lp = a.lp;
  // K64: the whole radix step (a 64K plan's rows are rarely within its first quarter).
  const bool half = !K64 && 2 * L <= int64_t(S) * P;
  const bool al = vec && (L & 1) == 0;  // ld_pair / st_pair
  // Runs a phase compiled for this call's row shape: the nonzero half of the radix step or all
  // of it, 32-bit row accesses or 16-bit ones; TW: the pass of a 64K pair (0 even, 1 odd
  // frequencies).
  auto by_shape = [&](auto& phase, auto tw_tag) __attribute__((always_inline)) {
    if (al && half) {
      phase(int_c<S / 2>{}, int_c<1>{}, tw_tag);
    } else if (al) {
      phase(int_c<S>{}, int_c<1>{}, tw_tag);
    } else if (half) {
      phase(int_c<S / 2>{}, int_c<0>{}, tw_tag);
    } else {
      phase(int_c<S>{}, int_c<0>{}, tw_tag);
    }
  };
  // fft_size 64K: this block's store for the first pass's result (see the output phase).
  float4* const wsb = K64 ? a.ws + int64_t(blockIdx.x) * (R * S * T) : nullptr;
  int64_t c = first / a.pairs_per_channel;
  int64_t b0 = 2 * (first - c * a.pairs_per_channel);
  if (slots == 2 && first < last) {
    fill_ring<T>(a, ring, 0, c, b0);
    cp_async_commit();
  }
  int slot = 0;
  for (int64_t pair = first; pair < last; ++pair, slot ^= (slots == 2 ? 1 : 0)) {
    int64_t cn = c, bn = b0 + 2;
    if (bn >= a.batch) {
      bn = 0;
      ++cn;
    }
    const bool has1 = b0 + 1 < a.batch;
    if (slots == 1) {
      __syncthreads();  // the previous pair is done with the only slot
      fill_ring<T>(a, ring, 0, c, b0);
      cp_async_commit();
    }
    if (slots > 0) cp_async_wait_all();
    __syncthreads();  // this pair's u rows are in the ring; the previous pair is done with all
    if (slots == 2 && pair + 1 < last) {
      fill_ring<T>(a, ring, slot ^ 1, cn, bn);
      cp_async_commit();
    }
    // The pair's rows (u in the ring or in global memory, the gates in global memory; nullptr
    // for an odd batch's missing row), made in each phase rather than kept across the DFT core.
    struct Rows {
      const uint16_t *u0, *u1, *p0, *p1, *q0, *q1;
    };
    auto rows = [&]() {
      Rows w;
      const uint16_t* gu0 = static_cast<const uint16_t*>(a.u) + b0 * a.u_bs + c * a.u_cs;
      w.u0 = slots > 0 ? ring + int64_t(slot) * 2 * lp : gu0;
      w.u1 = slots > 0 ? w.u0 + lp : (has1 ? gu0 + a.u_bs : nullptr);
      w.p0 = gated_in ? static_cast<const uint16_t*>(a.pre) + b0 * a.pre_bs + c * a.pre_cs
                      : nullptr;
      w.p1 = (gated_in && has1) ? w.p0 + a.pre_bs : nullptr;
      w.q0 = a.post != nullptr
                 ? static_cast<const uint16_t*>(a.post) + b0 * a.post_bs + c * a.post_cs
                 : nullptr;
      w.q1 = (w.q0 != nullptr && has1) ? w.q0 + a.post_bs : nullptr;
      return w;
    };
    const int Li = static_cast<int>(L);  // L <= 32768 (fft_size 64K: L <= fft_size / 2)

    // fft_size 64K (K64): the row pair x (zero from 32K on) as two 32K-point passes, X[2m] =
    // DFT_32K(x)[m] and X[2m + 1] = DFT_32K(x W_64K^n)[m]; each pass multiplies by its half of
    // the spectrum and transforms back, and y[n] = (IDFT(even)[n] + W_64K^-n IDFT(odd)[n]) / 2
    // (the 1/2 is in the spectrum's scale). Pass 0 leaves its result in wsb, pass 1 adds it.
    float s_in = 1.0f;  // the input scale (pass 1 of a 64K pair keeps pass 0's)
#pragma unroll 1
    for (int pass = 0; pass < (K64 ? 2 : 1); ++pass) {
      if (pass > 0) __syncthreads();  // pass 0's output phase is done with the X planes
      // Runs a phase for this pass.
      auto by_pass = [&](auto& phase) __attribute__((always_inline)) {
        if constexpr (K64) {
          if (pass == 0) {
            by_shape(phase, int_c<0>{});
          } else {
            by_shape(phase, int_c<1>{});
          }
        } else {
          by_shape(phase, int_c<0>{});
        }
      };

      // ---- input: scale, radix-S DIF step (SI nonzero inputs), fp16 into the X planes ----
      auto input_phase = [&](auto si_tag, auto al_tag,
                             auto tw_tag) __attribute__((always_inline)) {
        constexpr int SI = decltype(si_tag)::value;
        constexpr bool AL = decltype(al_tag)::value != 0;
        constexpr bool TW = decltype(tw_tag)::value != 0;
        using Tw = std::conditional_t<K64, RadixTwHalf<S, S * P, TW>, RadixTw<S, S * P>>;
        const Rows w = rows();
        if constexpr (!TW) {
          uint32_t mu = 0, mp = 0;
#pragma unroll
          for (int r = 0; r < R; ++r) {
            const int n0 = 2 * (tid + T * r);
            const RowAt u0 = row_at(w.u0, n0, Li), u1 = row_at(w.u1, n0, Li);
            const RowAt p0 = row_at(w.p0, n0, Li), p1 = row_at(w.p1, n0, Li);
#pragma unroll
            for (int i = 0; i < SI; ++i) {
              mu = __vmaxu2(mu, ld_pair<AL>(u0.p, i * P, u0.lim) & 0x7fff7fffu);
              mu = __vmaxu2(mu, ld_pair<AL>(u1.p, i * P, u1.lim) & 0x7fff7fffu);
              if (gated_in) {
                mp = __vmaxu2(mp, ld_pair<AL>(p0.p, i * P, p0.lim) & 0x7fff7fffu);
                mp = __vmaxu2(mp, ld_pair<AL>(p1.p, i * P, p1.lim) & 0x7fff7fffu);
              }
            }
          }
          s_in = input_scale<NW>(mu, mp, gated_in, bf16, red, lane, warp,
                                 input_scale_hi(__ldg(a.spec_scale + c), 4));
        }
#pragma unroll 1
        for (int r = 0; r < R; ++r) {
          const int n0 = 2 * (tid + T * r), n1 = n0 / 32, n2 = n0 % 32;
          const RowAt u0 = row_at(w.u0, n0, Li), u1 = row_at(w.u1, n0, Li);
          const RowAt p0 = row_at(w.p0, n0, Li), p1 = row_at(w.p1, n0, Li);
          float2 z[2][S];
#pragma unroll
          for (int i = 0; i < SI; ++i) {
            float a0, b0v, a1, b1v;  // rows 0 and 1 at positions n0, n0 + 1
            cvt_word(ld_pair<AL>(u0.p, i * P, u0.lim), bf16, a0, b0v);
            cvt_word(ld_pair<AL>(u1.p, i * P, u1.lim), bf16, a1, b1v);
            if (gated_in) {
              float c0, d0, c1, d1;
              cvt_word(ld_pair<AL>(p0.p, i * P, p0.lim), bf16, c0, d0);
              cvt_word(ld_pair<AL>(p1.p, i * P, p1.lim), bf16, c1, d1);
              a0 *= c0;
              b0v *= d0;
              a1 *= c1;
              b1v *= d1;
            }
            z[0][i] = make_float2(a0 * s_in, a1 * s_in);
            z[1][i] = make_float2(b0v * s_in, b1v * s_in);
            if constexpr (TW) {  // W_2S^i of the twist (the rest is in Tw)
              z[0][i] = mul_wr<2 * S, false>(z[0][i], i);
              z[1][i] = mul_wr<2 * S, false>(z[1][i], i);
            }
          }
          Tw tw(a, n0);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            fft_dif<S, false, SI>(z[h]);
            tw.template apply<false>(z[h]);
            if (h == 0) tw.next();
          }
#pragma unroll
          for (int j = 0; j < S; ++j) {
            __half* pr = xbuf + (j * 2 + 0) * PX + n1 * XS + n2;
            *reinterpret_cast<uint32_t*>(pr) = pack_h2(z[0][j].x, z[1][j].x);
            *reinterpret_cast<uint32_t*>(pr + PX) = pack_h2(z[0][j].y, z[1][j].y);
          }
        }
      };
      by_pass(input_phase);
      __syncthreads();

      // ---- sub-FFTs j = warp, warp + NW, ...: forward, pointwise, inverse; Z_j over X_j ----
#pragma unroll 1
      for (int j = warp; j < S; j += NW) {
        __half* xr = xbuf + (j * 2 + 0) * PX;
        __half* xi = xr + PX;
        float ar[MT1][NT][4], ai[MT1][NT][4];
        // The sub-FFT's spectrum, one 16-row tile's half at a time (prefetch_spec_half).
        // (fft_size 64K: the spectrum's sub-table 2 j + pass holds frequencies 2 m + pass.)
        const float4* spec_j = a.spec + c * (a.N >> 1) + (K64 ? 2 * j + pass : j) * (P / 2);
        if constexpr (C::kTab) prefetch_spec_half<C::kSpecHalf>(spec_s, spec_j, 0, lane);
        left_dft<C>(ar, ai, xr, xi, fa, lane);
        auto middle = [&](auto mt_tag) {
          constexpr int MTO = decltype(mt_tag)::value;
          __syncwarp();
          if constexpr (C::kTab) {
            mul_lane_table<C, false, MTO, true>(ar, ai, twp_s, lane);
          } else {
            mul_lane_table<C, false, MTO>(ar, ai, a.tw_p, lane);
          }
          __syncwarp();
          right_dft<C, false, FM, MTO>(ar, ai, fb, lane);
          __syncwarp();
          if constexpr (C::kTab) {
            cp_async_wait_all();
            mul_lane_table<C, false, MTO, true>(ar, ai, spec_s - MTO * C::kSpecHalf, lane);
            if (MTO == 0) prefetch_spec_half<C::kSpecHalf>(spec_s, spec_j, 1, lane);
          } else {
            mul_lane_table<C, false, MTO>(ar, ai, spec_j, lane);
          }
          __syncwarp();
          right_dft<C, true, FM, MTO>(ar, ai, fb, lane);
          __syncwarp();
          if constexpr (C::kTab) {
            mul_lane_table<C, true, MTO, true>(ar, ai, twp_s, lane);
          } else {
            mul_lane_table<C, true, MTO>(ar, ai, a.tw_p, lane);
          }
          __syncwarp();
        };
        middle(int_c<0>{});
        middle(int_c<1>{});
        left_dft_inv<C>(ar, ai, fa, lane);
        __syncwarp();  // this warp's ldmatrix reads of X_j are done before Z_j overwrites them
#pragma unroll
        for (int mt = 0; mt < MT1; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int n1 = 16 * mt + g + 8 * h, n2 = 8 * nt + 2 * t;
              *reinterpret_cast<uint32_t*>(xr + n1 * XS + n2) =
                  pack_h2(ar[mt][nt][2 * h] * C::kZScale, ar[mt][nt][2 * h + 1] * C::kZScale);
              *reinterpret_cast<uint32_t*>(xi + n1 * XS + n2) =
                  pack_h2(ai[mt][nt][2 * h] * C::kZScale, ai[mt][nt][2 * h + 1] * C::kZScale);
            }
      }
      __syncthreads();

      // ---- output: radix-S DIT step (outputs i < SO), scale back, D term, gates, stores ----
      const float oscale = __ldg(a.spec_scale + c) / (s_in * C::kZScale);
      const float dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
      auto output_phase = [&](auto so_tag, auto al_tag,
                              auto tw_tag) __attribute__((always_inline)) {
        constexpr int SO = decltype(so_tag)::value;
        constexpr bool AL = decltype(al_tag)::value != 0;
        constexpr bool TW = decltype(tw_tag)::value != 0;
        using Tw = std::conditional_t<K64, RadixTwHalf<S, S * P, TW>, RadixTw<S, S * P>>;
        // The radix-S DIT step of positions n0 and n0 + 1 (z[e][i]: position n0 + e + i P) from
        // the S planes of Z_j (outputs i >= SO are never read: dead code).
        auto dit = [&](int n0, float2 (&z)[2][S]) __attribute__((always_inline)) {
          const int n1 = n0 / 32, n2 = n0 % 32;
#pragma unroll
          for (int jj = 0; jj < S; ++jj) {
            const __half* sr = xbuf + (jj * 2 + 0) * PX + n1 * XS + n2;
            const float2 vr = __half22float2(*reinterpret_cast<const __half2*>(sr));
            const float2 vi = __half22float2(*reinterpret_cast<const __half2*>(sr + PX));
            z[0][jj] = make_float2(vr.x, vi.x);
            z[1][jj] = make_float2(vr.y, vi.y);
          }
          Tw tw(a, n0);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            tw.template apply<true>(z[e]);
            if (e == 0) tw.next();
            fft_dif<S, true>(z[e]);
          }
        };
        // The first pass of a 64K pair: the DIT step, then its raw result into wsb ((r S + i) T +
        // tid: coalesced 16-byte stores, read back by the same thread in pass 1).
        if constexpr (K64 && !TW) {
#pragma unroll 1
          for (int r = 0; r < R; ++r) {
            const int n0 = 2 * (tid + T * r);
            const int lim = Li - n0;
            float2 z[2][S];
            dit(n0, z);
#pragma unroll
            for (int i = 0; i < SO; ++i)
              if (i * P < lim)
                wsb[(r * S + i) * T + tid] =
                    make_float4(z[0][i].x, z[0][i].y, z[1][i].x, z[1][i].y);
          }
          return;
        }
        // The global words of the D term and the gates (u, pregate, postgate; two rows each) for
        // CH outputs at a time, loaded one chunk ahead of the stores: loads written after a store
        // through a pointer that may alias it cannot be hoisted above it, so without this each
        // output waited for its own L2 round trip (2x the time at fft_size 32K, measured).
        constexpr int CHM = 4;  // registers: z is 4 S floats during the DIT step
        constexpr int CH = SO < CHM ? SO : CHM, NCH = SO / CH;
        const Rows w = rows();
        uint16_t* const y0 = static_cast<uint16_t*>(a.y) + b0 * a.y_bs + c * a.y_cs;
        uint16_t* const y1 = has1 ? y0 + a.y_bs : nullptr;
        const bool has_d = a.D != nullptr, pre_d = has_d && gated_in, has_q = w.q0 != nullptr;
        // The D term's rows are read only with a D, the pregate's only with both (lim 0 else).
        const Rows wl = {has_d ? w.u0 : nullptr, has_d ? w.u1 : nullptr, pre_d ? w.p0 : nullptr,
                         pre_d ? w.p1 : nullptr, w.q0, w.q1};
#pragma unroll 1
        for (int r = 0; r < R; ++r) {
          const int n0 = 2 * (tid + T * r);
          const RowAt src[6] = {row_at(wl.u0, n0, Li), row_at(wl.u1, n0, Li),
                                row_at(wl.p0, n0, Li), row_at(wl.p1, n0, Li),
                                row_at(wl.q0, n0, Li), row_at(wl.q1, n0, Li)};
          const int lim = Li - n0;
          uint16_t* const y0n = y0 + n0;
          uint16_t* const y1n = y1 != nullptr ? y1 + n0 : y1;
          uint32_t wd[CH][6];
          ld_chunk<AL, CH, P>(src, 0, has_d, pre_d, has_q, wd);
          // The second pass of a 64K pair: the first pass's result, one chunk ahead.
          float4 wv[CH], wvn[CH];
          if constexpr (TW) {
#pragma unroll
            for (int k = 0; k < CH; ++k)
              wv[k] = k * P < lim ? wsb[(r * S + k) * T + tid] : float4{};
          }
          float2 z[2][S];
          dit(n0, z);
#pragma unroll
          for (int ch = 0; ch < NCH; ++ch) {
            uint32_t wn[CH][6];
            if (ch + 1 < NCH) ld_chunk<AL, CH, P>(src, ch + 1, has_d, pre_d, has_q, wn);
            if constexpr (TW) {
              if (ch + 1 < NCH) {
#pragma unroll
                for (int k = 0; k < CH; ++k) {
                  const int i = (ch + 1) * CH + k;
                  wvn[k] = i * P < lim ? wsb[(r * S + i) * T + tid] : float4{};
                }
              }
            }
#pragma unroll
            for (int k = 0; k < CH; ++k) {
              const int i = ch * CH + k;
              if (i * P >= lim) continue;
              float o0[2], o1[2];
              if constexpr (TW) {  // undo the twist's W_2S^i, add the first pass
                const float2 t0 = mul_wr<2 * S, true>(z[0][i], i);
                const float2 t1 = mul_wr<2 * S, true>(z[1][i], i);
                o0[0] = (t0.x + wv[k].x) * oscale;
                o1[0] = (t0.y + wv[k].y) * oscale;
                o0[1] = (t1.x + wv[k].z) * oscale;
                o1[1] = (t1.y + wv[k].w) * oscale;
              } else {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  o0[e] = z[e][i].x * oscale;
                  o1[e] = z[e][i].y * oscale;
                }
              }
              if (has_d) {
                float v0[2], v1[2];
                cvt_word(wd[k][0], bf16, v0[0], v0[1]);
                cvt_word(wd[k][1], bf16, v1[0], v1[1]);
                if (gated_in) {
                  float c0, d0, c1, d1;
                  cvt_word(wd[k][2], bf16, c0, d0);
                  cvt_word(wd[k][3], bf16, c1, d1);
                  v0[0] *= c0;
                  v0[1] *= d0;
                  v1[0] *= c1;
                  v1[1] *= d1;
                }
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  o0[e] = fmaf(dc, v0[e], o0[e]);
                  o1[e] = fmaf(dc, v1[e], o1[e]);
                }
              }
              if (has_q) {
                float c0, d0, c1, d1;
                cvt_word(wd[k][4], bf16, c0, d0);
                cvt_word(wd[k][5], bf16, c1, d1);
                o0[0] *= c0;
                o0[1] *= d0;
                o1[0] *= c1;
                o1[1] *= d1;
              }
              st_pair<AL>(y0n, i * P, lim, pack_out(o0[0], o0[1], bf16));
              if (y1n != nullptr) st_pair<AL>(y1n, i * P, lim, pack_out(o1[0], o1[1], bf16));
            }
            if (ch + 1 < NCH) {
#pragma unroll
              for (int k = 0; k < CH; ++k)
#pragma unroll
                for (int q = 0; q < 6; ++q) wd[k][q] = wn[k][q];
              if constexpr (TW) {
#pragma unroll
                for (int k = 0; k < CH; ++k) wv[k] = wvn[k];
              }
            }
          }
        }
      };
      by_pass(output_phase);
    }  // pass
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

// The exponent ex of a spectrum's scale g = 2^ex, mx < g (0 for 0 and non-finite mx), kept at
// least -100: the floor keeps 1 / (den g) finite for filters whose spectrum is below ~2^-130
// (such a spectrum then scales to values fp16 flushes to zero: outputs 0 instead of NaN).
// Callers form 1 / (den g) and the scale den g / N with ldexpf, never den g itself, which
// overflows from g ~ 2^120 (den up to 256): spectra up to fp32's largest keep |H| / (den g)
// <= 1 / den and a finite power-of-two scale (den / N <= 2^-3).
__device__ __forceinline__ int spectrum_exp(float mx) {
  int ex = 0;
  if (mx > 0.0f && mx < INFINITY) {
    frexpf(mx, &ex);
    ex = max(ex, -100);
  }
  return ex;
}

// Per channel: H = DFT_N(filter row) by fp32 radix-2 FFTs in shared memory; g = the smallest
// power of two >= max component of H; spec gets H / (den g) in fragment order, scale den g / N,
// den = max(32, 4 S) (S = N / P: |spectrum| <= 1 / (4 S) keeps every fp16 operand of the
// fft_size 16K / 32K kernel below 2^15, as 1/32 does up to 8K). `split` > 1 (when N points do
// not fit in shared memory): the N-point DFT as `split` DFTs of N / split points, frequencies
// split m + p from the sequence sum_q k[n + q M] W_N^((n + q M) p) (M = N / split), written
// unscaled and rescaled in place once the maximum is known.
// Up to kSpecThreads threads per block: at N >= 16K the blocks are one per multiprocessor (N /
// split points of shared memory each), and each butterfly stage waits on shared-memory and
// twiddle latency; 256 below (several blocks per multiprocessor).
constexpr int kSpecThreads = 1024;
__global__ void __launch_bounds__(kSpecThreads) spectrum_reg_kernel(const RegArgs a, int M1,
                                                                    int M2, int log_n, int split,
                                                                    float2* spec, float* scale) {
  extern __shared__ float2 buf[];
  __shared__ float red[kSpecThreads / 32];
  const int N = static_cast<int>(a.N), S = N / (M1 * M2), P = M1 * M2, NT = M2 / 8;
  const int M = N / split;
  const int log_m = log_n - (split == 1 ? 0 : (split == 2 ? 1 : 2));
  const float den = static_cast<float>(S * 4 > 32 ? S * 4 : 32);
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    float2* sc = spec + c * N;
    float mx = 0.0f;
    for (int p = 0; p < split; ++p) {
      for (int tt = threadIdx.x; tt < M; tt += blockDim.x) {
        const unsigned rev = __brev(static_cast<unsigned>(tt)) >> (32 - log_m);
        float2 v = make_float2(0.0f, 0.0f);
        if (split == 1) {
          v.x = conv::load_filter(a, c, tt, 1.0f);
        } else {
          for (int q = 0; q < split; ++q) {
            const int n = tt + q * M;
            const float k = conv::load_filter(a, c, n, 1.0f);
            const float2 w = twn(a, (n * p) & (N - 1));
            v.x += k * w.x;
            v.y += k * w.y;
          }
        }
        buf[rev] = v;
      }
      __syncthreads();
      for (int half = 1; half < M; half *= 2) {
#pragma unroll 4
        for (int b = threadIdx.x; b < M / 2; b += blockDim.x) {
          const int pos = b & (half - 1), i0 = (b - pos) * 2 + pos, i1 = i0 + half;
          const float2 w = twn(a, pos * (N / (2 * half)));
          const float2 x0 = buf[i0], x1 = cmul(buf[i1], w);
          buf[i0] = make_float2(x0.x + x1.x, x0.y + x1.y);
          buf[i1] = make_float2(x0.x - x1.x, x0.y - x1.y);
        }
        __syncthreads();
      }
      for (int m = threadIdx.x; m < M; m += blockDim.x) {
        mx = fmaxf(mx, fmaxf(fabsf(buf[m].x), fabsf(buf[m].y)));
        if (split > 1) {
          const int k = m * split + p, j = k % S, mm = k / S, k1 = mm % M1, k2 = mm / M1;
          sc[j * P + frag_pos(k1, k2, NT)] = buf[m];
        }
      }
      __syncthreads();  // buf is reused by the next part
    }
    mx = warp_max(mx);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    mx = 0.0f;
    for (int w = 0; w < int(blockDim.x >> 5); ++w) mx = fmaxf(mx, red[w]);
    const int gex = spectrum_exp(mx);
    const float inv = ldexpf(1.0f / den, -gex);
    if (split == 1) {
      for (int k = threadIdx.x; k < N; k += blockDim.x) {
        const int j = k % S, m = k / S, k1 = m % M1, k2 = m / M1;
        const float2 v = buf[k];
        sc[j * P + frag_pos(k1, k2, NT)] = make_float2(v.x * inv, v.y * inv);
      }
    } else {
      // The unscaled values written above by this block (visible after the barriers).
      for (int k = threadIdx.x; k < N; k += blockDim.x) {
        const float2 v = sc[k];
        sc[k] = make_float2(v.x * inv, v.y * inv);
      }
    }
    if (threadIdx.x == 0) scale[c] = ldexpf(den / static_cast<float>(N), gex);
    __syncthreads();
  }
}

// Per channel, the fast path (spectrum_fast_kernel, used from fft_size 1024 up whenever its
// shared memory fits):
// - Real-input trick: z[n] = x[2n] + i x[2n + 1] (M = N / 2 points), Z = DFT_M(z), then
//   X[k] = E + W_N^k O, X[k + M] = E - W_N^k O with E = (Z[k] + conj Z[M - k]) / 2,
//   O = (Z[k] - conj Z[M - k]) / 2i; X[N - k] = conj X[k] exactly (the input is real).
// - DFT_M: Stockham autosort passes (natural order in and out, in place with a barrier between
//   a pass's loads and its stores), radix 16 with the 16 points of a butterfly in one thread's
//   registers (M / 16 threads per channel), the last pass radix 2^(log2 M mod 4) when M is not
//   a power of 16. The filter row is staged in shared memory first (as z, coalesced loads).
//   Twiddles W_N^(r e) between passes: the powers of two of r from the table, the rest as
//   products of two or three of them (accurate to a few ulp). Shared memory holds Z as M float2
//   under an XOR swizzle of the low 4 bits by bits 4-7, 8-11, 12-13 (no bank conflicts in the
//   passes' strided stores nor in the fragment-order gather below, fft_size >= 1024).
// - X[0..M] replaces Z in shared memory (pairs k, M - k per thread; X[0] and X[M], both real, in
//   entry 0); then g, then every entry of the channel's table is written once, in fragment order,
//   as 16-byte stores (two consecutive positions per thread), each read from X[k] or conj X[N - k].
// - Several channels per block below fft_size 8K (256 threads per block at least).
namespace fast_spec {

constexpr int kR = 16;  // points per thread in every pass

// Bank-conflict swizzle of an index < 2^14 (a bijection: only bits 0-3 change).
__device__ __forceinline__ int swz(int i) { return i ^ (((i >> 4) ^ (i >> 8) ^ (i >> 12)) & 15); }

// x * W_16^k (W_16 = exp(-2 pi i / 16)), k in [0, 8) known at compile time after unrolling.
__device__ __forceinline__ float2 mul_w16(float2 x, int k) {
  constexpr float c1 = 0.92387953251128674f, s1 = 0.38268343236508977f,
                  r2 = 0.70710678118654752f;
  switch (k) {
    case 0: return x;
    case 1: return make_float2(x.x * c1 + x.y * s1, x.y * c1 - x.x * s1);
    case 2: return make_float2((x.x + x.y) * r2, (x.y - x.x) * r2);
    case 3: return make_float2(x.x * s1 + x.y * c1, x.y * s1 - x.x * c1);
    case 4: return make_float2(x.y, -x.x);
    case 5: return make_float2(x.y * c1 - x.x * s1, -x.y * s1 - x.x * c1);
    case 6: return make_float2((x.y - x.x) * r2, -(x.x + x.y) * r2);
    default: return make_float2(x.y * s1 - x.x * c1, -x.y * c1 - x.x * s1);
  }
}

// k's low `bits` bits reversed (bits <= 4), a constant expression.
__host__ __device__ constexpr int brev(int k, int bits) {
  return (((k & 1) << 3) | ((k & 2) << 1) | ((k & 4) >> 1) | ((k & 8) >> 3)) >> (4 - bits);
}
__host__ __device__ constexpr int log2c(int r) { return r >= 16 ? 4 : r >= 8 ? 3 : r >= 4 ? 2 : r >= 2 ? 1 : 0; }
__host__ __device__ constexpr int hibit(int r) { return r >= 8 ? 8 : r >= 4 ? 4 : r >= 2 ? 2 : 1; }

// One radix-2 decimation-in-frequency stage of half-size H on R registers, then the next.
template <int R, int H>
__device__ __forceinline__ void dif_stages(float2* v) {
#pragma unroll
  for (int b = 0; b < R; b += 2 * H) {
#pragma unroll
    for (int i = 0; i < H; ++i) {
      const float2 x0 = v[b + i], x1 = v[b + i + H];
      v[b + i] = make_float2(x0.x + x1.x, x0.y + x1.y);
      v[b + i + H] = mul_w16(make_float2(x0.x - x1.x, x0.y - x1.y), i * (8 / H));
    }
  }
  if constexpr (H > 1) dif_stages<R, H / 2>(v);
}

// In-register R-point DFT, natural order in and out.
template <int R>
__device__ __forceinline__ void dft(float2* v) {
  dif_stages<R, R / 2>(v);
  float2 t[R];
#pragma unroll
  for (int k = 0; k < R; ++k) t[k] = v[brev(k, log2c(R))];
#pragma unroll
  for (int k = 0; k < R; ++k) v[k] = t[k];
}

// v[r] *= W_N^(r e1), r < R, with (R / 2) e1 < N / 2.
template <int R>
__device__ __forceinline__ void twiddle(float2* v, const float2* tw, int e1) {
  float2 p[5];  // p[b] = W_N^(2^b e1)
#pragma unroll
  for (int b = 0; (1 << b) < R; ++b) p[b] = __ldg(tw + (e1 << b));
#pragma unroll
  for (int r = 1; r < R; ++r) {
    float2 w = p[log2c(hibit(r))];
#pragma unroll
    for (int b = 0; b < 3; ++b)
      if ((1 << b) < hibit(r) && ((r >> b) & 1)) w = cmul(w, p[b]);
    v[r] = cmul(v[r], w);
  }
}

// One Stockham pass of radix R over the M points in buf (Ns = 2^log_ns points already
// combined): butterfly j takes buf[j + r M / R], r < R, and stores its outputs at
// (j / Ns) Ns R + j % Ns + r Ns. Each thread does 16 / R butterflies (j = t + g tc).
// tws: log2 of (table size) / (2 M): 0 when tw is W_2M (the N = 2M-point plan), 1 for the
// 64K plan's 16K-point halves (spectrum_fast64_kernel).
template <int R, bool TW = true>
__device__ __forceinline__ void pass(float2* buf, int log_m, int log_ns, int t, int tc,
                                     const float2* tw, int tws = 0) {
  constexpr int G = kR / R, LR = log2c(R);
  float2 v[kR];
  const int mr = 1 << (log_m - LR);
#pragma unroll
  for (int g = 0; g < G; ++g)
#pragma unroll
    for (int r = 0; r < R; ++r) v[g * R + r] = buf[swz(t + g * tc + r * mr)];
  __syncthreads();
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const int j = t + g * tc, jn = j & ((1 << log_ns) - 1);
    // W_(Ns R)^(jn r) = W_N^(r jn N / (Ns R)), N = 2M.
    if (TW) twiddle<R>(v + g * R, tw, jn << (log_m + 1 + tws - log_ns - LR));
    dft<R>(v + g * R);
    const int base = ((j >> log_ns) << (log_ns + LR)) + jn;
#pragma unroll
    for (int r = 0; r < R; ++r) buf[swz(base + (r << log_ns))] = v[g * R + r];
  }
  __syncthreads();
}

// The real-input trick for one pair of Z in buf: entry i holds Z[k], entry j Z[M - k] (i != j
// unless k = M / 2), w = W_N^k. Entry i gets X[k] = E + w O and entry j conj X[k + M] = conj(E -
// w O) = X[M - k], with E = (Z[k] + conj Z[M - k]) / 2, O = (Z[k] - conj Z[M - k]) / 2i; mx
// takes their largest component.
__device__ __forceinline__ void real_pair(float2* buf, int i, int j, float2 w, float& mx) {
  const float2 A = buf[swz(i)], B = buf[swz(j)];  // B: conj taken below
  // Halved before the sums: A + B overflows for spectra above fp32's largest / 2 (a one-tap
  // filter of 2.5e38 gave NaN) although X itself fits. Exact for normal values (halving is
  // exact, the FMA rounds once), as the sum-then-halve form was.
  const float2 E = make_float2(0.5f * A.x + 0.5f * B.x, 0.5f * A.y - 0.5f * B.y);
  const float2 O = make_float2(0.5f * A.y + 0.5f * B.y, 0.5f * B.x - 0.5f * A.x);
  const float2 wo = cmul(O, w);
  const float2 x = make_float2(E.x + wo.x, E.y + wo.y);
  const float2 y = make_float2(E.x - wo.x, E.y - wo.y);
  buf[swz(i)] = x;
  if (i != j) buf[swz(j)] = make_float2(y.x, -y.y);
  mx = fmaxf(mx, fmaxf(fmaxf(fabsf(x.x), fabsf(x.y)), fmaxf(fabsf(y.x), fabsf(y.y))));
}

// The frequency k of entry q (even) of a spectrum table in fragment order (frag_pos inverted):
// sub-table jt = q >> log_p, entry (k1, k2) of sub-FFT jt, k = jt + S (k1 + M1 k2).
__device__ __forceinline__ int frag_k(int q, int log_p, int NT, int log_nt, int log_m1,
                                      int log_s) {
  const int jt = q >> log_p, rr = q & ((1 << log_p) - 1);
  const int tt = (rr >> 1) & 31, g8 = tt >> 2, tq = tt & 3, h = (rr >> 6) & 1, rest = rr >> 7;
  const int nt = rest & (NT - 1), mt = rest >> log_nt;
  const int k1 = mt * 16 + h * 8 + g8, k2 = nt * 8 + tq * 2;
  return jt + ((k1 + (k2 << log_m1)) << log_s);
}

// X[k] for k < N from X[0..M] in buf (entry 0 holds X[0], X[M]).
__device__ __forceinline__ float2 spec_at(const float2* buf, int k, int M) {
  if (k < M) {
    if (k == 0) return make_float2(buf[0].x, 0.0f);
    return buf[swz(k)];
  }
  if (k == M) return make_float2(buf[0].y, 0.0f);
  const float2 v = buf[swz(2 * M - k)];
  return make_float2(v.x, -v.y);
}

}  // namespace fast_spec

// G channels per block, N / 32 threads per channel, T threads per block at most: 1024 at
// fft_size 16K and 32K (64 registers), 256 below (3 blocks per multiprocessor at least, 80
// registers); see the comment above fast_spec.
template <int T, int MINB>
__global__ void __launch_bounds__(T, MINB)
    spectrum_fast_kernel(const RegArgs a, int log_n, int M1, int G, float2* spec, float* scale) {
  using namespace fast_spec;
  extern __shared__ float2 sbuf[];
  __shared__ float red[T / 32];
  const int N = 1 << log_n, M = N >> 1, log_m = log_n - 1;
  const int P = N >= 1024 ? 1024 : (N == 512 ? 512 : 256), S = N / P;
  const int log_p = log_n >= 10 ? 10 : log_n, M2 = P / M1, NT = M2 / 8;
  const int log_nt = NT == 4 ? 2 : 1, log_s = log_n - log_p, log_m1 = M1 == 32 ? 5 : 4;
  const float den = static_cast<float>(S * 4 > 32 ? S * 4 : 32);
  const int tc = N / 32;  // threads per channel
  const int grp = threadIdx.x / tc, t = threadIdx.x - grp * tc;
  float2* buf = sbuf + grp * M;
  const float2* tw = a.tw_n;
  const int64_t groups = (a.channels + G - 1) / G;
  for (int64_t cg = blockIdx.x; cg < groups; cg += gridDim.x) {
    const int64_t c = cg * G + grp;
    const bool valid = c < a.channels;
    // The filter row into shared memory as z (entry m = x[2m] + i x[2m + 1]), then pass 1.
    {
      float* zf = reinterpret_cast<float*>(buf);
#pragma unroll 4
      for (int n = t; n < N; n += tc)
        zf[2 * swz(n >> 1) + (n & 1)] = valid ? conv::load_filter(a, c, n, 1.0f) : 0.0f;
      __syncthreads();
      pass<16, false>(buf, log_m, 0, t, tc, tw);
    }
    int log_ns = 4;
    while (log_m - log_ns >= 4) {
      pass<16>(buf, log_m, log_ns, t, tc, tw);
      log_ns += 4;
    }
    switch (log_m - log_ns) {
      case 1: pass<2>(buf, log_m, log_ns, t, tc, tw); break;
      case 2: pass<4>(buf, log_m, log_ns, t, tc, tw); break;
      case 3: pass<8>(buf, log_m, log_ns, t, tc, tw); break;
      default: break;
    }
    // Z -> X[0..M] in place, pairs (k, M - k); the largest component (X[N - k] = conj X[k]).
    float mx = 0.0f;
    for (int k = t; k <= M / 2; k += tc) {
      if (k == 0) {
        const float2 z = buf[0];
        const float x0 = z.x + z.y, xm = z.x - z.y;
        buf[0] = make_float2(x0, xm);
        mx = fmaxf(mx, fmaxf(fabsf(x0), fabsf(xm)));
      } else {
        real_pair(buf, k, M - k, __ldg(tw + k), mx);
      }
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1)
      if (o < tc) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (tc > 32 && (threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = mx;
    __syncthreads();
    if (tc > 32) {
      const int w0 = (grp * tc) >> 5;
      for (int w = 0; w < (tc >> 5); ++w) mx = fmaxf(mx, red[w0 + w]);
    }
    const int gex = spectrum_exp(mx);
    const float inv = ldexpf(1.0f / den, -gex);
    if (valid) {
      float4* out = reinterpret_cast<float4*>(spec + c * N);
      const int step = S << log_m1;  // k of position e = 1 minus k of e = 0
      for (int q2 = t; q2 < M; q2 += tc) {
        const int k = frag_k(2 * q2, log_p, NT, log_nt, log_m1, log_s);
        const float2 x0 = spec_at(buf, k, M), x1 = spec_at(buf, k + step, M);
        out[q2] = make_float4(x0.x * inv, x0.y * inv, x1.x * inv, x1.y * inv);
      }
      if (t == 0) scale[c] = ldexpf(den / static_cast<float>(N), gex);
    }
    __syncthreads();  // buf and red are reused by the next channels
  }
}

// fft_size 64K (the fast kernel's N / 2 = 32K points, 256 KB, do not fit one block), one
// channel per block of 1024 threads: the real-input trick's 32K-point DFT Z of z[n] = x[2n] +
// i x[2n + 1] in two halves of H = 16K points, Z[2p] = DFT_H(z[n] + z[n + H])[p] and Z[2p + 1] =
// DFT_H((z[n] - z[n + H]) W_32K^n)[p] (a radix-2 decimation-in-frequency step), each by the
// same Stockham passes in 128 KB. X[k] = E + W_64K^k O needs Z[k] and Z[M - k], which have the
// parity of k, so half h yields every frequency of parity h: in place, buf[p] = X[2p + h] for
// 2p + h < M (half 0: entry 0 holds X[0] and X[M], both real), the rest conj X[N - k]. Those
// are the sub-tables j = h (mod 2) of the 64K table (j = k mod 64), written unscaled, then
// scaled in place (each entry by the thread that wrote it) once both halves' maximum is known.
template <int T>
__global__ void __launch_bounds__(T, 1)
    spectrum_fast64_kernel(const RegArgs a, int M1, float2* spec, float* scale) {
  using namespace fast_spec;
  extern __shared__ float2 sbuf[];
  __shared__ float red[T / 32];
  constexpr int log_n = 16, N = 1 << log_n, M = N >> 1, H = M >> 1, log_h = log_n - 2;
  constexpr int P = 1024, S = N / P, log_p = 10, log_s = log_n - log_p;
  static_assert(H / kR == T, "one radix-16 butterfly per thread");
  const int M2 = P / M1, NT = M2 / 8, log_nt = NT == 4 ? 2 : 1, log_m1 = M1 == 32 ? 5 : 4;
  const float den = static_cast<float>(S * 4);
  const int t = threadIdx.x;
  const float2* tw = a.tw_n;  // W_64K^e, e < 32K
  for (int64_t c = blockIdx.x; c < a.channels; c += gridDim.x) {
    float4* out = reinterpret_cast<float4*>(spec + c * N);
    const int step = S << log_m1;  // k of position e = 1 minus k of e = 0
    float mx = 0.0f;
    for (int h = 0; h < 2; ++h) {
#pragma unroll 4
      for (int n = t; n < H; n += T) {
        const float2 z0 = make_float2(conv::load_filter(a, c, 2 * n, 1.0f),
                                      conv::load_filter(a, c, 2 * n + 1, 1.0f));
        const float2 z1 = make_float2(conv::load_filter(a, c, 2 * n + M, 1.0f),
                                      conv::load_filter(a, c, 2 * n + 1 + M, 1.0f));
        if (h == 0) {
          sbuf[swz(n)] = make_float2(z0.x + z1.x, z0.y + z1.y);
        } else {
          sbuf[swz(n)] = cmul(make_float2(z0.x - z1.x, z0.y - z1.y), __ldg(tw + 2 * n));
        }
      }
      __syncthreads();
      pass<16, false>(sbuf, log_h, 0, t, T, tw, 1);
      int log_ns = 4;
      while (log_h - log_ns >= 4) {
        pass<16>(sbuf, log_h, log_ns, t, T, tw, 1);
        log_ns += 4;
      }
      switch (log_h - log_ns) {
        case 1: pass<2>(sbuf, log_h, log_ns, t, T, tw, 1); break;
        case 2: pass<4>(sbuf, log_h, log_ns, t, T, tw, 1); break;
        case 3: pass<8>(sbuf, log_h, log_ns, t, T, tw, 1); break;
        default: break;
      }
      // Z_h -> X of parity h in place: pairs (p, q), k = 2p + h, M - k = 2q + h.
      for (int p = t; p <= H / 2 - h; p += T) {
        if (h == 0 && p == 0) {
          const float2 z = sbuf[0];
          const float x0 = z.x + z.y, xm = z.x - z.y;
          sbuf[0] = make_float2(x0, xm);
          mx = fmaxf(mx, fmaxf(fabsf(x0), fabsf(xm)));
          continue;
        }
        real_pair(sbuf, p, H - h - p, __ldg(tw + 2 * p + h), mx);
      }
      __syncthreads();
      // X[k] for k of parity h (< N) from the half in sbuf.
      auto x_at = [&](int k) {
        const int kk = k > M ? N - k : k;
        float2 v;
        if (kk == 0) {
          v = make_float2(sbuf[0].x, 0.0f);
        } else if (kk == M) {
          v = make_float2(sbuf[0].y, 0.0f);
        } else {
          v = sbuf[swz(kk >> 1)];
        }
        return k > M ? make_float2(v.x, -v.y) : v;
      };
      for (int q2 = t; q2 < M; q2 += T) {
        if (((2 * q2) >> log_p & 1) != h) continue;  // sub-table of the other parity
        const int k = frag_k(2 * q2, log_p, NT, log_nt, log_m1, log_s);
        const float2 x0 = x_at(k), x1 = x_at(k + step);
        out[q2] = make_float4(x0.x, x0.y, x1.x, x1.y);
      }
      __syncthreads();  // sbuf is reused by the next half
    }
    mx = warp_max(mx);
    if ((t & 31) == 0) red[t >> 5] = mx;
    __syncthreads();
    mx = 0.0f;
    for (int w = 0; w < T / 32; ++w) mx = fmaxf(mx, red[w]);
    const int gex = spectrum_exp(mx);
    const float inv = ldexpf(1.0f / den, -gex);
    for (int q2 = t; q2 < M; q2 += T) {  // the entries this thread wrote
      const float4 v = out[q2];
      out[q2] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
    }
    if (t == 0) scale[c] = ldexpf(den / static_cast<float>(N), gex);
    __syncthreads();  // red is reused by the next channel
  }
}

// ---- host side ---------------------------------------------------------------------------------

using C256 = Cfg<16, 16, 1>;
using C512 = Cfg<16, 32, 1>;
using C1K = Cfg<32, 32, 1>;
using C2K = Cfg<32, 32, 2>;
using C4K = Cfg<32, 32, 4>;
using C8K = Cfg<32, 32, 8>;
using C16K = BigCfg<16>;
using C32K = BigCfg<32>;
// Without the shared-memory tables (88 KB each: GPUs with 99 KB per block, e.g. sm_86 / sm_89 /
// sm_120, where the tabled 8K / 16K builds need 128 KB). No such build at 32K: 176 KB, and no
// part has between that and the tabled 209 KB.
using C8Kn = Cfg<32, 32, 8, false>;
using C16Kn = BigCfg<16, false>;

void dims_for(int log_n, int* m1, int* m2) {
  *m1 = log_n <= 9 ? 16 : 32;
  *m2 = log_n <= 8 ? 16 : 32;
}
// The smallest shared memory (dynamic, without the ring) of the builds for log_n.
size_t stage_smem(int log_n) {
  switch (log_n) {
    case 8: return C256::kSmem;
    case 9: return C512::kSmem;
    case 10: return C1K::kSmem;
    case 11: return C2K::kSmem;
    case 12: return C4K::kSmem;
    case 13: return C8Kn::kSmem;
    case 14: return C16Kn::kSmem;
    default: return C32K::kSmem;
  }
}


bool reg_enabled() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG");
  return !(e != nullptr && e[0] == '0');
}

size_t ring_bytes(const RegArgs& a, int slots) {
  return size_t(slots) * a.narr * 2 * size_t(a.lp) * sizeof(uint16_t);
}

// Whether fft_size 8K / 16K run the builds with the shared-memory tables: where they fit (8K
// with one ring slot, 16K without a ring; measured faster on the H200, benchmarks/RESULTS.md),
// unless FLASHKIT_FFTCONV_REG_TABLES=0 (diagnostic: the tests cover the builds without them).
bool use_tables(int log_n, size_t one_slot, int optin) {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG_TABLES");
  if (e != nullptr && e[0] == '0') return false;
  const size_t need = log_n == 13 ? C8K::kSmem + one_slot : C16K::kSmem;
  return need + 1024 <= size_t(optin);
}

template <class C, int W, bool BF16, int FM, bool SW, bool SPLIT = true, int DIAG = 0>
fk_status_t launch_conv_w(RegArgs a, int smem_optin, int sm_count, cudaStream_t stream) {
  const void* kernel =
      reinterpret_cast<const void*>(conv_reg_kernel<C, W, BF16, FM, SW, SPLIT, DIAG>);
  a.slots = C::kSmem + ring_bytes(a, 2) + 1024 <= size_t(smem_optin) ? 2 : 1;  // + static
  const size_t smem = C::kSmem + ring_bytes(a, a.slots);
  // The kernel's static shared memory counts against the 48 KB default too (allow_smem only
  // raises the limit above 48 KB of dynamic memory).
  if (smem + 1024 > 48 * 1024) {
    FK_RETURN_IF_ERROR(raise_dynamic_smem_limit(
        kernel, smem, "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(shared memory)"));
  }
  int per_sm = 0;
  FK_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::T, smem),
              "cuda.sm80.fftconv_reg: occupancy");
  const int64_t pairs = a.pairs_per_channel * a.channels;
  int64_t grid = std::min<int64_t>(pairs, int64_t(std::max(per_sm, 1)) * std::max(sm_count, 1));
  a.pairs_per_block = (pairs + grid - 1) / grid;
  grid = (pairs + a.pairs_per_block - 1) / a.pairs_per_block;
  conv_reg_kernel<C, W, BF16, FM, SW, SPLIT, DIAG><<<grid_for(grid), C::T, smem, stream>>>(a);
  return check_launch("cuda.sm80.fftconv_reg fused kernel");
}

// One build per tile shape and dtype (CI compile time): 16-row tiles (fft_size 256, 512) with
// F in registers and a 12-warp cap (168 registers); 32 x 32 tiles with F from shared memory, no
// cap (8 warps per multiprocessor), __syncwarp() fences in both. A library compiled with
// -DFK_FFTCONV_REG_AB_BUILD=1 (measurement only) also has other 32 x 32 bf16 builds, chosen by
// FLASHKIT_FFTCONV_REG_VARIANT = r (F in registers, no fences), s2 (no fences), s212 (12-warp
// cap), ns (the middle steps on all rows at once); at fft_size 2048, d1 / d2 / d4 / d8 time the
// kernel without a stage (DIAG below; wrong results).
#if FK_FFTCONV_REG_AB_BUILD
int ab_variant() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_REG_VARIANT");
  if (e == nullptr) return -1;
  const char* names[] = {"r", "s2", "s212", "ns", "d1", "d2", "d4", "d8"};
  for (int i = 0; i < 8; ++i)
    if (std::strcmp(e, names[i]) == 0) return i;
  return -1;
}
#endif

template <class C>
fk_status_t launch_conv(const RegArgs& a, int optin, int sm_count, cudaStream_t stream) {
  const bool bf16 = a.dtype == DType::BF16;
  if constexpr (C::M1 == 16) {
    return bf16 ? launch_conv_w<C, 12, true, 0, true>(a, optin, sm_count, stream)
                : launch_conv_w<C, 12, false, 0, true>(a, optin, sm_count, stream);
  } else {
#if FK_FFTCONV_REG_AB_BUILD
    if (bf16) {
      switch (ab_variant()) {
        case 0: return launch_conv_w<C, 0, true, 0, false>(a, optin, sm_count, stream);
        case 1: return launch_conv_w<C, 0, true, 2, false>(a, optin, sm_count, stream);
        case 2: return launch_conv_w<C, 12, true, 2, true>(a, optin, sm_count, stream);
        case 3: return launch_conv_w<C, 0, true, 2, true, false>(a, optin, sm_count, stream);
        default: break;
      }
      if constexpr (C::S == 2) {
        switch (ab_variant()) {
          case 4: return launch_conv_w<C, 0, true, 2, true, true, 1>(a, optin, sm_count, stream);
          case 5: return launch_conv_w<C, 0, true, 2, true, true, 2>(a, optin, sm_count, stream);
          case 6: return launch_conv_w<C, 0, true, 2, true, true, 4>(a, optin, sm_count, stream);
          case 7: return launch_conv_w<C, 0, true, 2, true, true, 8>(a, optin, sm_count, stream);
          default: break;
        }
      }
    }
#endif
    return bf16 ? launch_conv_w<C, 0, true, 2, true>(a, optin, sm_count, stream)
                : launch_conv_w<C, 0, false, 2, true>(a, optin, sm_count, stream);
  }
}

// fft_size 16K / 32K: one block of 8 warps per multiprocessor (255 registers); the u ring holds
// two row pairs (prefetch), one, or none (u read from global memory), whatever fits.
template <class C, bool BF16, bool K64>
fk_status_t launch_big_w(RegArgs a, int smem_optin, int sm_count, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(conv_reg_big_kernel<C, BF16, K64>);
  a.narr = 1;
  a.slots = 0;
  if (a.vec && !K64) {
    if (C::kSmem + ring_bytes(a, 2) + 1024 <= size_t(smem_optin)) {
      a.slots = 2;
    } else if (C::kSmem + ring_bytes(a, 1) + 1024 <= size_t(smem_optin)) {
      a.slots = 1;
    }
  }
  const size_t smem = C::kSmem + ring_bytes(a, a.slots);
  FK_RETURN_IF_ERROR(raise_dynamic_smem_limit(
      kernel, smem, "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(shared memory)"));
  int per_sm = 0;
  FK_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, C::T, smem),
              "cuda.sm80.fftconv_reg: occupancy");
  const int64_t pairs = a.pairs_per_channel * a.channels;
  int64_t grid = std::min<int64_t>(pairs, int64_t(std::max(per_sm, 1)) * std::max(sm_count, 1));
  if (K64) grid = std::min<int64_t>(grid, std::max<int64_t>(a.ws_blocks, 1));  // wsb per block
  a.pairs_per_block = (pairs + grid - 1) / grid;
  grid = (pairs + a.pairs_per_block - 1) / a.pairs_per_block;
  conv_reg_big_kernel<C, BF16, K64><<<grid_for(grid), C::T, smem, stream>>>(a);
  return check_launch(K64 ? "cuda.sm80.fftconv_reg fused kernel (fft_size 64K)"
                          : "cuda.sm80.fftconv_reg fused kernel (fft_size 16K / 32K)");
}
template <class C, bool K64 = false>
fk_status_t launch_big(const RegArgs& a, int optin, int sm_count, cudaStream_t stream) {
  return a.dtype == DType::BF16 ? launch_big_w<C, true, K64>(a, optin, sm_count, stream)
                                : launch_big_w<C, false, K64>(a, optin, sm_count, stream);
}

fk_status_t run_conv(const RegArgs& a, int log_n, int optin, int sm_count, cudaStream_t stream) {
  switch (log_n) {
    case 8: return launch_conv<C256>(a, optin, sm_count, stream);
    case 9: return launch_conv<C512>(a, optin, sm_count, stream);
    case 10: return launch_conv<C1K>(a, optin, sm_count, stream);
    case 11: return launch_conv<C2K>(a, optin, sm_count, stream);
    case 12: return launch_conv<C4K>(a, optin, sm_count, stream);
    case 13:
      return use_tables(13, ring_bytes(a, 1), optin) ? launch_conv<C8K>(a, optin, sm_count, stream)
                                                     : launch_conv<C8Kn>(a, optin, sm_count, stream);
    case 14:
      return use_tables(14, 0, optin) ? launch_big<C16K>(a, optin, sm_count, stream)
                                      : launch_big<C16Kn>(a, optin, sm_count, stream);
    case 15: return launch_big<C32K>(a, optin, sm_count, stream);
    default: return launch_big<C32K, true>(a, optin, sm_count, stream);
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

// Parts of the spectrum kernel's DFT (see spectrum_reg_kernel): N / split points in shared memory.
int spectrum_split(int64_t N, int optin) {
  int split = 1;
  while (split < 4 && sizeof(float2) * size_t(N / split) + 1024 > size_t(optin)) split *= 2;
  return split;
}

// FLASHKIT_FFTCONV_SPECTRUM=radix2 (diagnostic) computes every spectrum with the radix-2 kernel.
bool fast_spectrum_enabled() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_SPECTRUM");
  return !(e != nullptr && std::strcmp(e, "radix2") == 0);
}

fk_status_t compute_spectrum(const RegArgs& a, int log_n, int optin, void* spec,
                             cudaStream_t stream) {
  int m1, m2;
  dims_for(log_n, &m1, &m2);
  if (log_n == kLogN64 && fast_spectrum_enabled()) {
    // spectrum_fast64_kernel: 16K float2 (128 KB) per block, one channel per block.
    const size_t smem = sizeof(float2) * size_t(16384);
    if (smem + 1024 <= size_t(optin)) {
      const void* kernel = reinterpret_cast<const void*>(spectrum_fast64_kernel<1024>);
      FK_RETURN_IF_ERROR(conv::allow_smem(
          kernel, smem, "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(spectrum, fast, 64K)"));
      float2* sp = static_cast<float2*>(spec);
      float* scale = reinterpret_cast<float*>(sp + a.channels * a.N);
      spectrum_fast64_kernel<1024><<<grid_for(std::min<int64_t>(a.channels, 65535)), 1024, smem,
                                      stream>>>(a, m1, sp, scale);
      return check_launch("cuda.sm80.fftconv_reg filter spectrum kernel (fast, fft_size 64K)");
    }
  }
  {
    // spectrum_fast_kernel: N / 32 threads and N / 2 float2 of shared memory per channel, G
    // channels per block (256 threads at least).
    const int tc = static_cast<int>(a.N / 32);
    const int g = std::max(1, 256 / tc);
    const size_t smem = sizeof(float2) * size_t(g) * size_t(a.N / 2);
    // Below fft_size 1024 the radix-2 kernel is the faster one (H200, 768 channels: 11.7 vs
    // 17.5 us at 256, 16.6 vs 18.1 at 512; 25.9 vs 18.7 at 1024; RESULTS.md, FFT section).
    if (a.N >= 1024 && smem + 1024 <= size_t(optin) && fast_spectrum_enabled()) {
      const bool big = g * tc > 256;
      const void* kernel = big ? reinterpret_cast<const void*>(spectrum_fast_kernel<1024, 1>)
                               : reinterpret_cast<const void*>(spectrum_fast_kernel<256, 3>);
      // The 1024-thread instance serves fft_size 16K (64 KB) and 32K (128 KB); allow_smem only
      // ever raises its limit, so calls of both sizes on other host threads cannot lower it.
      FK_RETURN_IF_ERROR(conv::allow_smem(
          kernel, smem, "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(spectrum, fast)"));
      float2* sp = static_cast<float2*>(spec);
      float* scale = reinterpret_cast<float*>(sp + a.channels * a.N);
      const unsigned grid = grid_for(std::min<int64_t>((a.channels + g - 1) / g, 65535));
      if (big) {
        spectrum_fast_kernel<1024, 1><<<grid, g * tc, smem, stream>>>(a, log_n, m1, g, sp, scale);
      } else {
        spectrum_fast_kernel<256, 3><<<grid, g * tc, smem, stream>>>(a, log_n, m1, g, sp, scale);
      }
      return check_launch("cuda.sm80.fftconv_reg filter spectrum kernel (fast)");
    }
  }
  const int split = spectrum_split(a.N, optin);
  const size_t smem = sizeof(float2) * static_cast<size_t>(a.N / split);
  const void* kernel = reinterpret_cast<const void*>(spectrum_reg_kernel);
  FK_RETURN_IF_ERROR(conv::allow_smem(kernel, smem,
                                      "cuda.sm80.fftconv_reg: cudaFuncSetAttribute(spectrum)"));
  float2* sp = static_cast<float2*>(spec);
  float* scale = reinterpret_cast<float*>(sp + a.channels * a.N);
  const int threads = a.N >= 16384 ? kSpecThreads : 256;
  spectrum_reg_kernel<<<grid_for(std::min<int64_t>(a.channels, 65535)), threads, smem, stream>>>(
      a, m1, m2, log_n, split, sp, scale);
  return check_launch("cuda.sm80.fftconv_reg filter spectrum kernel");
}

}  // namespace

bool fftconv_reg_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major < 8 || !reg_enabled()) return false;
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  const int64_t N = p.fft_size;
  if (N < (int64_t(1) << kMinLogN) || N > (int64_t(1) << kLogN64) || (N & (N - 1)) != 0)
    return false;
  const int log_n = conv::log2_exact(N);
  // fft_size 64K: two 32K-point passes, which need the row zero from 32K on; the filter spectra
  // (512 KB a channel, per call or cached) stay within the generic kernel's 1 GiB budget (it
  // computes larger ones in chunks), i.e. up to 2048 channels.
  if (log_n == kLogN64 && (2 * p.seqlen > N || p.channels * N * 8 > (int64_t(1) << 30)))
    return false;
  if (log_n >= 14) {
    // The ring is optional there (u and the gates can be read from global memory); the
    // spectrum kernel needs N / 4 points in shared memory at most.
    if (static_cast<int64_t>(stage_smem(log_n)) + 1024 > caps.smem_per_block_optin ||
        int64_t(sizeof(float2)) * (N / 4) + 1024 > caps.smem_per_block_optin)
      return false;
    return p.seqlen <= N && p.filter_len > 0;
  }
  const int narr = 1 + (p.pregate != nullptr ? 1 : 0) + (p.postgate != nullptr ? 1 : 0);
  const int64_t one_slot = int64_t(narr) * 2 * ((p.seqlen + 7) / 8 * 8) * 2;
  // + 1024: the kernel's static shared memory (its reduction words) counts against the same
  // per-block limit; without the margin a launch whose dynamic bytes filled the limit failed
  // (FK_ERROR_DEVICE) instead of this row declining it.
  if (static_cast<int64_t>(stage_smem(log_n)) + one_slot + 1024 > caps.smem_per_block_optin)
    return false;
  return p.seqlen <= N && p.filter_len > 0;
}

// The spectrum (fp32 complex, fragment order) and per-channel scales of every channel.
static int64_t spectrum_bytes(const FFTConvProblem& p) {
  return p.channels * p.fft_size * static_cast<int64_t>(sizeof(float2)) +
         p.channels * int64_t(sizeof(float));
}

// fft_size 64K: blocks of the launch (one per multiprocessor at most) and the first pass's
// store, R S T float4 = 256 KB per block (C32K: 2 x 32 x 256).
static int64_t k64_blocks(const FFTConvProblem& p, int sm_count) {
  return std::min<int64_t>((p.batch + 1) / 2 * p.channels, std::max(sm_count, 1));
}
static uint64_t k64_bytes(const FFTConvProblem& p, int sm_count) {
  if (p.fft_size != (int64_t(1) << kLogN64)) return 0;
  return uint64_t(k64_blocks(p, sm_count)) * C32K::R * C32K::S * C32K::T * sizeof(float4);
}

uint64_t fftconv_reg_workspace(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return 0;
  // With a plan (every C API call) the twiddles are the plan's; a constant filter's spectrum
  // is cached there too.
  const uint64_t spec = p.filter_constant && p.state ? 0 : uint64_t(spectrum_bytes(p));
  const uint64_t tw = p.state ? 0 : uint64_t(tables_bytes(conv::log2_exact(p.fft_size)));
  return workspace_for({tw, spec, k64_bytes(p, caps.sm_count)});
}

fk_status_t fftconv_reg(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  const int64_t N = p.fft_size;
  FK_RETURN_IF_ERROR(conv::check_plan(p, kMinLogN, kLogN64, "cuda.sm80.fftconv_reg"));
  if (N == (int64_t(1) << kLogN64) && 2 * p.seqlen > N) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm80.fftconv_reg: seqlen %lld above fft_size / 2 at fft_size 65536 "
                     "(outside the kernel's predicate)",
                     static_cast<long long>(p.seqlen));
  }
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
  a.vec = (conv::rows_aligned(p.u, 16, p.u_batch_stride, p.u_channel_stride) &&
           conv::rows_aligned(p.pregate, 16, p.pre_batch_stride, p.pre_channel_stride) &&
           conv::rows_aligned(p.postgate, 16, p.post_batch_stride, p.post_channel_stride) &&
           conv::rows_aligned(p.y, 16, p.y_batch_stride, p.y_channel_stride))
              ? 1
              : 0;

  ScratchArena arena(ctx);
  const int64_t spec_bytes = spectrum_bytes(p);
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
          [&](void* spec) { return compute_spectrum(a, log_n, optin, spec, stream); }, &cached_spec));
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
    FK_RETURN_IF_ERROR(compute_spectrum(a, log_n, optin, spec, stream));
  }
  a.spec = static_cast<const float4*>(spec);
  a.spec_scale = reinterpret_cast<const float*>(static_cast<const float2*>(spec) + p.channels * N);
  a.ws = nullptr;
  a.ws_blocks = 0;
  if (log_n == kLogN64) {
    void* ws = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(static_cast<size_t>(k64_bytes(p, sm_count)), &ws,
                                   "fftconv_reg: first-pass store (fft_size 64K)"));
    a.ws = static_cast<float4*>(ws);
    a.ws_blocks = k64_blocks(p, sm_count);
  }
  return run_conv(a, log_n, optin, sm_count, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
