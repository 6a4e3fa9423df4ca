// Online softmax of the Hopper attention kernel, on wgmma accumulator fragments (FlashAttention
// online softmax: a running row max m and unnormalised row sum l; the output accumulator is
// rescaled by exp2(m_old - m_new) when a row's max grows and divided by l once at the end).
//
// Base 2 throughout: softmax_scale * log2(e) is folded into one multiplier, so each probability
// is one FFMA and one MUFU.EX2. Fragment layout (PTX ISA, wgmma accumulator D for m64nNk16):
// in each warpgroup, thread 32 w + 4 g + t holds rows 16 w + g and 16 w + g + 8 and, in each
// 8-column group j, columns 8 j + 2 t and 8 j + 2 t + 1. CuTe's flat index i of the fragment
// is c + 2 r + 4 j (c: column of the pair, r: row 0 / +8, j: column group), the same for S
// (kBlockN columns) and O (head_dim columns). A row's max and sum complete across the 4
// threads of a quad.
//
// Rows that see no key keep m = -inf; the exponent offset is then 0 so exp2(-inf) = 0 and the
// finished row is O = 0, lse = -inf, as the C ABI promises.
#pragma once

#include <cuda_fp8.h>

#include <cute/tensor.hpp>
#include <cutlass/numeric_conversion.h>

#include <cstdint>

#include "cuda/attention/common/logits.h"
#include "cuda/attention/common/softcap.cuh"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

struct OnlineSoftmax {
  float row_max[2];  // running max of the base-2 logits of the thread's two rows
  float row_sum[2];  // this thread's part of the running sum of exp2(x - row_max)

  __device__ __forceinline__ void init() {
    row_max[0] = row_max[1] = -INFINITY;
    row_sum[0] = row_sum[1] = 0.0f;
  }

  // Raw scores -> base-2 logits in place (softcap, Gemma 2, comes before the mask).
  template <class TS>
  static __device__ __forceinline__ void to_logits(TS& s, bool softcap, float scale_log2,
                                                   float cap_pre, float cap_post) {
    if (softcap) {
      const attn::SoftcapLogit cap(cap_pre, cap_post);
      CUTE_UNROLL
      for (int i = 0; i < cute::size(s); ++i) s(i) = cap(s(i));
    } else {
      CUTE_UNROLL
      for (int i = 0; i < cute::size(s); ++i) s(i) *= scale_log2;
    }
  }

  // -inf for every element whose key lies outside [lo[r], hi[r]]; key0 = tile start + 2 t.
  template <class TS>
  static __device__ __forceinline__ void mask(TS& s, int key0, const int (&lo)[2], const int (&hi)[2]) {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(s); ++i) {
      const int key = key0 + 8 * (i >> 2) + (i & 1);
      const int r = (i >> 1) & 1;
      if (key < lo[r] || key > hi[r]) s(i) = -INFINITY;
    }
  }

  // The same where no row has a lower bound (no left window: lo = 0 for every row, so
  // unmasked calls, whose one masked tile is the sequence's last, causal calls and right-only
  // windows): each element's column offset from key0 is a constant, compared with one
  // per-row limit, one ISETP and one FSEL per element instead of two compares and their OR.
  template <class TS>
  static __device__ __forceinline__ void mask_hi(TS& s, int key0, const int (&hi)[2]) {
    const int lim[2] = {hi[0] - key0, hi[1] - key0};  // hi >= -1, key0 >= 0: no overflow
    CUTE_UNROLL
    for (int i = 0; i < cute::size(s); ++i) {
      const int col = 8 * (i >> 2) + (i & 1);
      if (col > lim[(i >> 1) & 1]) s(i) = -INFINITY;
    }
  }

  // One key tile: new row max, rescale factor corr = exp2(m_old - m_new) of the running sum
  // (returned for the output accumulator, which the caller rescales with rescale() once the
  // O += P V still in flight has retired), then s <- exp2(s * scale - m). `s` holds logits
  // (scale = 1) or raw scores with scale > 0.
  // kLazy: the running max moves only by more than 2^8 (logits.h, next_row_max), and rescale()
  // skips warps whose maxima all stayed. H200 (RESULTS, session 37): head_dim 256 +1.6-5.7% in
  // 11 of 12 grid cells, head_dim 192 +0.2-2.3%; head_dim 128 within -1.5 to +0.6% and head_dim
  // 64 -1 to -3.4% (their O is 64 / 32 floats a thread, cheaper to rescale than the vote and
  // branch), so those keep fmaxf and the unconditional rescale.
  template <bool kLazy, class TS>
  __device__ __forceinline__ void step(TS& s, float scale, float (&corr)[2]) {
    float mx[2] = {-INFINITY, -INFINITY};
    CUTE_UNROLL
    for (int i = 0; i < cute::size(s); ++i) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], s(i));
    float offset[2];
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = kLazy ? attn::next_row_max(row_max[r], mx[r] * scale)
                                : fmaxf(row_max[r], mx[r] * scale);
      offset[r] = m_new == -INFINITY ? 0.0f : m_new;
      corr[r] = ex2(row_max[r] - offset[r]);  // 0 while the row had no key
      row_max[r] = m_new;
      row_sum[r] *= corr[r];
    }
    CUTE_UNROLL
    for (int i = 0; i < cute::size(s); ++i) {
      const int r = (i >> 1) & 1;
      s(i) = ex2(fmaf(s(i), scale, -offset[r]));
      row_sum[r] += s(i);
    }
  }

  // kLazy: skipped by the whole warp when none of its rows' maxima moved, which with the slack
  // of next_row_max is every tile of a row after its first one or two, as a rule.
  template <bool kLazy, class TO>
  static __device__ __forceinline__ void rescale(TO& o, const float (&corr)[2]) {
    if (kLazy && !__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) return;
    CUTE_UNROLL
    for (int i = 0; i < cute::size(o); ++i) o(i) *= corr[(i >> 1) & 1];
  }

  // Completes the row sums across the quad, divides O by them and returns the rows'
  // natural-log LSE (-inf for a row that saw no key; its O is 0).
  template <class TO>
  __device__ __forceinline__ void finalize(TO& o, float (&lse)[2]) {
    float inv[2];
    CUTE_UNROLL
    for (int r = 0; r < 2; ++r) {
      float sum = row_sum[r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const bool any = sum > 0.0f;
      inv[r] = any ? 1.0f / sum : 0.0f;
      // NaN scores make sum NaN: lse NaN (-inf means the row saw no key).
      lse[r] = any ? (row_max[r] + __log2f(sum)) * 0.6931471805599453f
                   : (sum == 0.0f ? -INFINITY : sum);
    }
    CUTE_UNROLL
    for (int i = 0; i < cute::size(o); ++i) o(i) *= inv[(i >> 1) & 1];
  }
};

// fp32 fragment -> the input type, element for element (flat indices match; see mainloop.cuh),
// converted in pairs (one F2FP per pair).
template <class TF, class TE>
__device__ __forceinline__ void convert_fragment(const TF& f, TE& e) {
  using Element = typename TE::value_type;
  constexpr int N = decltype(cute::size(f))::value;
  static_assert(N == decltype(cute::size(e))::value, "P and S fragments must have equal sizes");
  cutlass::NumericArrayConverter<Element, float, N> conv;
  *reinterpret_cast<cutlass::Array<Element, N>*>(e.data()) =
      conv(*reinterpret_cast<const cutlass::Array<float, N>*>(f.data()));
}

// fp32 S fragment -> the e4m3 P fragment of the fp8 P V GEMM (FA3 Section 3.3). The 8-bit A
// fragment of one k32 block holds, per thread, rows r and r + 8 at four consecutive k each
// (4 t .. 4 t + 3, then 16 + 4 t ..), where the accumulator holds two consecutive columns per
// 8-column group (2 t, 2 t + 1). Without moving values across threads: register (kb, r, h) of
// the A fragment takes the thread's pairs of column groups 4 kb + 2 h and 4 kb + 2 h + 1 of
// row r, so A's k position 16 j + 4 t + e (e < 4) holds the score of key
// 16 j + 8 (e / 2) + 2 t + e % 2. V^T holds its keys in that order within each group of 16
// (V transposed in shared memory: mainloop.cuh, transpose_v_tile; by the pass: its vt_key in
// attention_fp8_sm90.cu), so P V sums matching pairs. Rounded to nearest, with
// saturation (P is in [0, 1] after the row max is subtracted).
template <class TF, class TE>
__device__ __forceinline__ void convert_fragment_fp8(const TF& f, TE& e) {
  constexpr int N = decltype(cute::size(f))::value;
  static_assert(N == decltype(cute::size(e))::value, "P and S fragments must have equal sizes");
  static_assert(N % 16 == 0, "whole k32 blocks");
  uint32_t* out = reinterpret_cast<uint32_t*>(e.data());
  // S flat index: c + 2 r + 4 g (g: 8-column group); A register: r + 2 h + 4 kb.
  CUTE_UNROLL
  for (int kb = 0; kb < N / 16; ++kb) {
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      CUTE_UNROLL
      for (int r = 0; r < 2; ++r) {
        const int g = 4 * kb + 2 * h;
        const float2 lo = make_float2(f(2 * r + 4 * g), f(1 + 2 * r + 4 * g));
        const float2 hi = make_float2(f(2 * r + 4 * (g + 1)), f(1 + 2 * r + 4 * (g + 1)));
        const uint32_t l = __nv_cvt_float2_to_fp8x2(lo, __NV_SATFINITE, __NV_E4M3);
        const uint32_t u = __nv_cvt_float2_to_fp8x2(hi, __NV_SATFINITE, __NV_E4M3);
        out[r + 2 * h + 4 * kb] = l | (u << 16);
      }
    }
  }
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
