// The Hopper attention kernel's entry points as the dispatch table sees them
// (src/dispatch/tables.cpp). Their definitions are built only when the CUTLASS headers are found
// (FLASHKIT_WITH_SM90); this header needs none (the planner's host test includes it).
#pragma once

#include <cstdint>

#include "core/backend.h"
#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// True when the problem fits the kernel (see attention_sm90.cpp for the list); everything else
// goes to the next row (the sm80-class kernel).
bool attention_supported(const DeviceCaps& caps, const AttentionProblem& p);

// Enqueues the forward pass on the launch's stream. Call only for problems
// attention_supported() accepts.
fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p);

// Query heads of one GQA group packed into each work tile of `p` (launch.h, q_pack; 1: none):
// fp16 / bf16, not varlen, 2-64 query rows, a group > 1; only past one wave of one head a tile
// unless any_wave (build_args says why).
int32_t gqa_pack(const DeviceCaps& caps, const AttentionProblem& p, bool any_wave);
// For the split-KV planner (split_kv_plan.h, heads_per_tile): the heads a tile of a split KV-cache
// call's inner problem packs (its chunk-sequences fill the waves the planner aims at); 1 for
// calls that are not over a cache (their inner call is varlen, never packed).
int64_t split_heads_per_tile(const DeviceCaps& caps, const AttentionProblem& p);
// For the split-KV planner (tile_bytes_per_s): bytes of K and V per second one work tile of `p`
// streams when few tiles run (one CTA per SM), where that was measured, else 0 (no bandwidth
// rule). Batched (not KV-cache) calls at head_dim 128: 40 GB/s (bf16, GQA 32 / 8, one query,
// unsplit: 45 GB/s a tile at 1 x 32k keys and 41 at 8 x 8k on an H100, session 59; 44 and 41 on
// an H200, 0.4.0). Not at head_dim 104-120 (padded to 128: fewer bytes a tile for the same
// work, unmeasured). Not over KV caches, whose tiles stream slower (8 x 8k on an H100: 37 GB/s
// contiguous, 34 over 128-key pages, where the split was no slower or 6% faster), nor at
// head_dim 64 (16 / 2 heads, 32 x 8k keys: ~25 GB/s a tile, the split ~7% faster).
// (Inline, so that the host test of the planner checks it: tests/cpu/test_split_kv_plan.cpp.)
inline int64_t split_tile_bytes_per_s(const DeviceCaps&, const AttentionProblem& p) {
  if (attention_uses_kvcache(p) || p.head_dim != 128) return 0;
  return int64_t(40) * 1000 * 1000 * 1000;
}

// The kernel's arguments for a validated problem (launch.h), shared by both entry points.
struct AttnArgs;
AttnArgs build_args(const ExecContext& ctx, const AttentionProblem& p);

// fk_attention_fp8_forward on the fp8 tensor cores ("cuda.sm90.attention_fp8",
// attention_fp8_sm90.cu): true when the fp8 problem `p` (unpacked layout) fits that kernel.
bool attention_fp8_supported(const DeviceCaps& caps, const AttentionProblem& p);
// True when the fp8 kernel transposes V tiles in shared memory (head_dim 128; head_dim 256
// where each key is read by at most kFp8VtInKernelMaxReads query rows, launch.h), false when
// a pass writes V^T first.
bool fp8_vt_in_kernel(const AttentionProblem& p);
// Scratch it takes, a multiple of 256 bytes: with the V^T pass, the V^T copy; otherwise nothing,
// or (v outside the copy engine's 16-byte rule) a contiguous copy of v.
uint64_t attention_fp8_workspace(const AttentionProblem& p);
// True when the fp8 kernel's copy engine can read v from the caller's tensor (16-byte rule).
bool fp8_v_direct(const AttentionProblem& p);
// Enqueues it. Call only for problems attention_fp8_supported() accepts.
fk_status_t attention_fp8(const ExecContext& ctx, const AttentionProblem& p,
                          const AttentionFp8Descales& d);

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
