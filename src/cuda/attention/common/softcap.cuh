// Gemma 2's softcap as a base-2 logit (Team Gemma 2024, Section 2), shared by the sm90 and sm80
// attention kernels: x = cap_post tanh(s cap_pre) (logits.h forms the two multipliers) with
// tanh.approx.f32 (one MUFU.TANH, sm_75 and later): an FMUL, the MUFU op and an FMUL a score.
// The softmax's own ex2 is the score's other MUFU op. The multi-function unit issues at a
// sixteenth of the FMA rate, so these ops, not the tensor cores, bound a softcap call at small
// head dims: the exact form cap_post (1 - 2 / (e^{2y} + 1)) (ex2 + rcp, three MUFU ops a score
// with the softmax's) ran at 0.41-0.55x the plain rate at head_dim 64 and 0.63-0.70x at head_dim
// 128, 8k keys, this form at 0.65-0.78x and 0.76-0.79x (H100, session 52; RESULTS "Softcap
// through tanh.approx"). tanh.approx's relative error is at most about 2^-11 (PTX ISA), so a
// logit moves by up to softcap 5e-4 (in units of the natural-log logit). FlashAttention-2 makes
// the same choice (apply_softcap with cutlass::fast_tanh) and its tests allow 3x instead of 2x
// the naive-in-dtype error when softcap is on; the tests here keep 2x and pass. tanh.approx of
// +-inf is +-1 and of NaN is NaN, so a score times a clamped cap_pre (logits.h) that overflows
// gives +-cap_post.
#pragma once

namespace flashkit {
namespace cuda {
namespace attn {

struct SoftcapLogit {
  float cap_pre;
  float cap_post;

  __device__ __forceinline__ SoftcapLogit(float cap_pre_, float cap_post_)
      : cap_pre(cap_pre_), cap_post(cap_post_) {}

  __device__ __forceinline__ float operator()(float s) const {
    float t;
    asm("tanh.approx.f32 %0, %1;\n" : "=f"(t) : "f"(s * cap_pre));
    return t * cap_post;
  }
};

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
