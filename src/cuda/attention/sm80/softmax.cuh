// Online softmax of the sm80-class attention kernel (FlashAttention-2, Dao 2023, Section 3.1:
// keep a running row max m and an unnormalised row sum l, rescale the output accumulator once
// per key tile by exp(m_old - m_new), divide by l once at the end).
//
// Everything is in base 2: scores become logits x = log2(e) * score, with softmax_scale (or the
// softcap) folded into one multiplier, so each probability is one MUFU.EX2 of (x - m).
// In each 16-row tile of its warp a lane owns rows g and g+8 (lane = 4 g + t) and, in each n8
// tile of S, keys 2t and 2t+1; a row's max and sum are completed across the 4 lanes of a quad.
//
// Rows that see no key keep m = -inf; the exponent offset is then taken as 0 so that
// exp2(-inf - offset) = 0 instead of exp2(-inf + inf) = NaN, and the finished row is O = 0,
// lse = -inf, as the C ABI promises.
#pragma once

#include <cstdint>

#include "cuda/attention/common/logits.h"
#include "cuda/attention/common/softcap.cuh"
#include "cuda/attention/sm80/params.h"
#include "cuda/attention/sm80/primitives.cuh"

namespace flashkit {
namespace cuda {
namespace sm80 {

// kMTiles row tiles of 16 per warp; each lane owns rows g and g+8 of each, indexed [mt][r].
template <int kMTiles, int kSTiles>
struct OnlineSoftmax {
  float row_max[kMTiles][2];  // running max of the base-2 logits (-inf: no key yet)
  float row_sum[kMTiles][2];  // this lane's part of the running sum of exp2(x - row_max)

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        row_max[mt][r] = -INFINITY;
        row_sum[mt][r] = 0.0f;
      }
  }

  // Raw scores q.k -> base-2 logits, in place. Softcap (Gemma 2) is applied before masking.
  static __device__ __forceinline__ void to_logits(float (&s)[kMTiles][kSTiles][4],
                                                   const Params& p) {
    if (p.softcap) {
      const attn::SoftcapLogit cap(p.cap_pre, p.cap_post);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = cap(s[mt][nt][e]);
    } else {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] *= p.scale_log2;
    }
  }

  // Sets to -inf every logit whose key lies outside [lo, hi] of its row. `key0` is the key of
  // this lane's first element (tile start + 2t).
  static __device__ __forceinline__ void mask(float (&s)[kMTiles][kSTiles][4], int key0,
                                              const int (&lo)[kMTiles][2],
                                              const int (&hi)[kMTiles][2]) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = key0 + nt * 8 + (e & 1);
          const int r = e >> 1;
          if (key < lo[mt][r] || key > hi[mt][r]) s[mt][nt][e] = -INFINITY;
        }
  }

  // The same for rows without a lower bound (calls without a left window, lo = 0: unmasked,
  // causal, right-only windows): one compare per element of its constant column offset with
  // the row's limit hi - key0, instead of two compares and their OR.
  static __device__ __forceinline__ void mask_hi(float (&s)[kMTiles][kSTiles][4], int key0,
                                                 const int (&hi)[kMTiles][2]) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      const int lim[2] = {hi[mt][0] - key0, hi[mt][1] - key0};  // hi >= -1, key0 >= 0
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (nt * 8 + (e & 1) > lim[e >> 1]) s[mt][nt][e] = -INFINITY;
    }
  }

  // One key tile: new row max, rescale of the running sum and of acc_o, probabilities
  // p = exp2(s * scale - m) (one FFMA and one MUFU.EX2 each) summed in fp32 and packed (rounded
  // to T) into the A fragments of P V. `s` holds logits (scale = 1) or raw scores with
  // scale > 0, whose max is the max of the raw scores times the scale.
  template <class T, int kOTiles>
  __device__ __forceinline__ void update(float (&s)[kMTiles][kSTiles][4],
                                         float (&acc_o)[kMTiles][kOTiles][4],
                                         uint32_t (&p)[kMTiles][kSTiles / 2][4], float scale) {
    float offset[kMTiles][2], corr[kMTiles][2];
    bool rescale = false;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt) {
        mx[0] = fmaxf(mx[0], fmaxf(s[mt][nt][0], s[mt][nt][1]));
        mx[1] = fmaxf(mx[1], fmaxf(s[mt][nt][2], s[mt][nt][3]));
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float m_new = attn::next_row_max(row_max[mt][r], mx[r] * scale);
        offset[mt][r] = m_new == -INFINITY ? 0.0f : m_new;
        corr[mt][r] = fast_exp2(row_max[mt][r] - offset[mt][r]);  // 0 while the row had no key
        rescale |= corr[mt][r] != 1.0f;
        row_max[mt][r] = m_new;
        row_sum[mt][r] *= corr[mt][r];
      }
    }
    // Once the running maxima settle (and with the slack of next_row_max, logits.h, that is
    // after the first tile or two of a row), most tiles leave every row's max unchanged
    // (corr == 1): the warp then skips the multiply of its whole output accumulator. The slack
    // on the H200 (forced grid, RESULTS session 37): head_dim 128 +1.3-6%, 256 +0.5-2.3%
    // (long causal calls within +-1%), head_dim 64 +0.5-2% unmasked and -0.6 to +0.2% causal.
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int dt = 0; dt < kOTiles; ++dt) {
          acc_o[mt][dt][0] *= corr[mt][0];
          acc_o[mt][dt][1] *= corr[mt][0];
          acc_o[mt][dt][2] *= corr[mt][1];
          acc_o[mt][dt][3] *= corr[mt][1];
        }
    }
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int nt = 0; nt < kSTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[mt][nt][e] = fast_exp2(fmaf(s[mt][nt][e], scale, -offset[mt][e >> 1]));
          row_sum[mt][e >> 1] += s[mt][nt][e];
        }
      // A fragment of keys 16kk..16kk+15: (row g, keys 2t..) (row g+8, keys 2t..) (row g, keys
      // 2t+8..) (row g+8, keys 2t+8..) = accumulators of n8 tiles 2kk and 2kk+1.
#pragma unroll
      for (int kk = 0; kk < kSTiles / 2; ++kk) {
        p[mt][kk][0] = Elt<T>::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        p[mt][kk][1] = Elt<T>::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        p[mt][kk][2] = Elt<T>::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        p[mt][kk][3] = Elt<T>::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }
  }

  // Completes the row sums across the quad, divides acc_o by them and returns each row's
  // natural-log LSE (-inf for a row that saw no key, whose acc_o is then 0).
  template <int kOTiles>
  __device__ __forceinline__ void finalize(float (&acc_o)[kMTiles][kOTiles][4],
                                           float (&lse)[kMTiles][2]) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float sum = row_sum[mt][r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        const bool any = sum > 0.0f;
        const float inv = any ? 1.0f / sum : 0.0f;
        // NaN scores make sum NaN: lse NaN (-inf means the row saw no key).
        lse[mt][r] = any ? (row_max[mt][r] + __log2f(sum)) * 0.6931471805599453f
                         : (sum == 0.0f ? -INFINITY : sum);
#pragma unroll
        for (int dt = 0; dt < kOTiles; ++dt) {
          acc_o[mt][dt][2 * r] *= inv;
          acc_o[mt][dt][2 * r + 1] *= inv;
        }
      }
  }
};

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
