// The attention kernels' shared logit multipliers. Each kernel turns a raw score s = q.k into a
// base-2 logit (exp2 is one instruction): x = s * scale_log2 without a softcap, and
// x = tanh(s * cap_pre) * cap_post with Gemma 2's softcap (Team Gemma 2024, Section 2), where
// scale_log2 = softmax_scale * log2(e), cap_pre = softmax_scale / softcap and
// cap_post = softcap * log2(e).
//
// They are formed in double and clamped to the largest finite float: a subnormal softcap (a
// finite, positive value the API accepts) or a quotient above FLT_MAX would otherwise round to
// infinity in fp32, and a zero score would then give 0 * inf = NaN instead of tanh(0) = 0.
// With the clamp, s * cap_pre at worst overflows to +-inf, whose tanh is the correct limit +-1.
#pragma once

#include <cfloat>

#if defined(__CUDACC__)
#define FK_LOGITS_HD __host__ __device__
#else
#define FK_LOGITS_HD
#endif

namespace flashkit {
namespace cuda {
namespace attn {

struct LogitScale {
  bool softcap;      // softcap > 0
  float scale_log2;  // no softcap: x = s * scale_log2
  float cap_pre;     // softcap: x = tanh(s * cap_pre) * cap_post
  float cap_post;
};

// Conditional rescaling of the online softmax (FlashAttention-4's, as described in Modal's "We
// reverse-engineered Flash Attention 4", 2025-09-26): a row's running max (base 2) moves only
// when a key tile's max exceeds it by more than kMaxSlackLog2. Until then the probabilities
// exp2(x - m) of that row may reach 2^kMaxSlackLog2 = 256 instead of 1, which fp32 sums and the
// 16-bit P fragments hold with the same relative precision (bf16 / fp16 rounding is relative),
// while the output accumulator, the running sum and m keep their values: the rescale of O by
// exp2(m_old - m_new) is skipped for every tile that leaves all maxima of a warp in place,
// which after the first tiles of a row is nearly every tile. The result is exact algebra either
// way (O / l and lse = m + log2(l) do not depend on which m was used). -inf (no key yet) moves
// to any tile max above it (the difference is +inf); -inf against -inf (NaN) and a NaN tile max
// leave m as it was, as fmaxf did; +inf moves it. The test is on the difference, not on
// row_max + 8: for |row_max| in [2^27, 2^28) floats are 16 apart, row_max + 8 is a tie that
// rounds to row_max + 16 for half of them, and a tile max 16 above would have kept m with
// P = 2^16, past fp16's largest value (found in review; tests/cpu/test_online_max.cpp).
// The price: the fp32 output accumulator sums P |v| with P up to 256, so bf16 values of v above
// about FLT_MAX / (256 * seqlen_k) overflow where they did not before.
constexpr float kMaxSlackLog2 = 8.0f;
FK_LOGITS_HD inline float next_row_max(float row_max, float tile_max) {
  return tile_max - row_max > kMaxSlackLog2 ? tile_max : row_max;
}

FK_LOGITS_HD inline float clamp_to_float(double v) {
  return static_cast<float>(v > double(FLT_MAX) ? double(FLT_MAX)
                                                : (v < -double(FLT_MAX) ? -double(FLT_MAX) : v));
}

FK_LOGITS_HD inline LogitScale logit_scale(float softmax_scale, float softcap) {
  const double log2e = 1.4426950408889634;
  LogitScale l;
  l.softcap = softcap > 0.0f;
  l.scale_log2 = clamp_to_float(double(softmax_scale) * log2e);
  l.cap_pre = l.softcap ? clamp_to_float(double(softmax_scale) / double(softcap)) : 0.0f;
  l.cap_post = l.softcap ? clamp_to_float(double(softcap) * log2e) : 0.0f;
  return l;
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit

#undef FK_LOGITS_HD
