// What the sm80-class attention kernel reads: the AttentionProblem reduced to the values the
// device needs, with the softmax constants precomputed on the host (scale folded into the base-2
// exponent: exp(scale * s) = exp2(scale * log2(e) * s)). Built by attention_sm80.cpp, passed by
// value as the kernel parameter.
#pragma once

#include <cstdint>

namespace flashkit {
namespace cuda {
namespace sm80 {

struct Params {
  const void* q;
  const void* k;
  const void* v;
  void* out;
  float* lse;                    // nullptr: not requested
  const int32_t* cu_seqlens_q;   // nullptr: batched form
  const int32_t* cu_seqlens_k;

  // Strides in elements (head_dim is contiguous); batch strides are 0 in the varlen form.
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  int64_t lse_batch_stride, lse_head_stride;  // lse rows are contiguous

  int32_t batch, nheads, group;  // group = nheads / nheads_k (GQA/MQA)
  int32_t seqlen_q, seqlen_k;    // batched: the extents; varlen: the longest sequence
  int64_t total_q, total_k;      // varlen: rows of q and of k/v (cu_seqlens entries clamped to it)
  int32_t head_dim;              // <= the kernel's bucket
  int32_t num_m_blocks;          // query tiles per (batch, head) for seqlen_q; packed: for total_q
  // Packed varlen (kernel.cuh): query tiles run over all total_q rows, across sequence ends, and
  // each row sees only the keys of its own sequence. Grid: num_m_blocks x nheads.
  int32_t packed;
  // Decode tiles (tile_size.h, kDecodeKind): one warp of 16 query rows per block; num_m_blocks
  // then counts 16-row tiles.
  int32_t decode;
  // Narrow tiles (tile_size.h, kNarrowKind; head_dim bucket 256 only): 64-row tiles of 4 warps;
  // num_m_blocks then counts 64-row tiles.
  int32_t narrow;
  // Window, bottom-right aligned, causal already folded in as right = 0; -1 = unbounded.
  int32_t window_left, window_right;

  // Score transform into base-2 logits x (log2(e) folded in):
  //   no softcap: x = s * scale_log2               (scale_log2 = scale * log2(e))
  //   softcap:    x = tanh(s * cap_pre) * cap_post (cap_pre = scale / cap, cap_post = cap * log2(e))
  bool softcap;
  float scale_log2;
  float cap_pre, cap_post;

  // KV cache (fk_attention_kvcache_forward; kernel.cuh). seqused_k: valid keys per sequence
  // (nullptr: seqlen_k), clamped to [0, seqlen_k]. block_table: paged k/v, row b at
  // block_table + b * block_table_stride, entries clamped to [0, num_pages - 1]; pages of
  // 2^page_shift rows, k/v_batch_stride stepping from one page to the next.
  const int32_t* seqused_k;
  const int32_t* block_table;
  int64_t block_table_stride;
  int32_t page_shift;
  int32_t num_pages;
  // Calls without a left window mask their partial key tiles by each row's upper bound alone
  // (softmax.cuh mask_hi) where this is 1: the host sets it for calls with a right bound
  // (causal, right windows; attention_sm80.cpp), 0 for unmasked calls and under
  // FLASHKIT_SM80_ATTENTION_HI_MASK=0 (two-sided mask).
  int32_t hi_mask;
  // 1: the call needs no per-element work on any key tile; 2: none but each row's upper bound
  // (mask_hi) of causal and right-only windows (no left window, no softcap, a positive
  // scale, seqlen_k a multiple of kBlockN, head_dim the bucket's, no varlen, no seqused_k, no
  // paged cache, not packed, not decode), so it runs a kEven kernel (kernel.cuh), compiled
  // without the mask, softcap and zero-fill code (FlashAttention-2's Is_even_MN specialisation).
  // Set by the host (attention_sm80.cpp); FLASHKIT_SM80_ATTENTION_EVEN=0 keeps the general kernel.
  int32_t even;
};

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
