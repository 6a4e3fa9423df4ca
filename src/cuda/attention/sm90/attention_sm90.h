// The Hopper attention kernel's entry points as the dispatch table sees them
// (src/dispatch/tables.cpp). Built only when the CUTLASS headers are found (FLASHKIT_WITH_SM90).
#pragma once

#include "core/backend.h"

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
// For the split-KV planner (tile_bytes_per_s): GB/s of K/V one work tile streams when few tiles
// run (one CTA per SM). Measured, bf16, head_dim 128, GQA 32 / 8, one query, unsplit: 39 GB/s a
// tile at 1 x 32k keys and 41 at 8 x 8k on an H100 (session 59), 44 and 41 on an H200 (0.4.0).
constexpr int kSplitTileGBps = 40;

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
