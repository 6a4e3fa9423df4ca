// Split-KV decode (FlashAttention-2's "flash-decoding" split, Dao et al. 2023): a batched call
// with few query rows per (batch, head) gives each kernel too few tiles to fill the GPU (batch 8
// x 8 KV heads = 64 tiles on 132 SMs), and each tile then streams all seqlen_k keys alone. The
// keys of every sequence are cut into `nsplit` chunks that run as separate sequences of one
// varlen call of the same kernel (each chunk's output and LSE go to scratch), then a combine
// kernel merges the chunks: out = sum_c exp(lse_c - lse) out_c with lse = log sum_c exp(lse_c).
//
// Only where the mask hides no key (non-causal without a window, or one query row with a left
// window reaching key 0 and any right window), so every chunk's rows see all of their keys and
// the merge is exact up to the rounding of each chunk's output to the input dtype (one extra
// rounding step); and over KV caches also for causal rows (up to one query tile, no left
// window): chunks cut from each sequence's end that overlap by up to seqlen_q - 1 + page - 1
// keys, run causal with window_left = chunk - 1, so that each row sees each of its keys in
// exactly one chunk (split_kv_plan.h, chunk_keys; rows that see no key give lse -inf, which
// the combine turns into zeros as the unsplit kernels do); causal rows also only where the
// tiles leave most of the GPU idle (split_kv_plan.h, kMaxCausalRows). fp16/bf16 only: fp32
// attention runs on the generic kernel, which callers pick for accuracy rather than speed, and
// is left unsplit. K and V must have the same row pitch between sequences (batch stride = rows
// x row stride with rows >= seqlen_k, as in a contiguous tensor or a slice of a longer KV
// cache), since the varlen form addresses keys by row. Wrapped around the
// CUDA dispatch rows (tables.cpp), so the row's name and predicate are unchanged; the row is
// kept only when its predicate also takes the split problem.
//
// FLASHKIT_ATTENTION_SPLIT_KV (read on every call; diagnostic): "0" or "1" never splits; an
// integer N >= 2 splits every eligible call (mask, dtype, K/V layout and int32 limits as above,
// any seqlen_q, any number of tiles) into chunks of ceil(seqlen_k / min(N, 32, seqlen_k)) keys,
// so ceil(seqlen_k / that) chunks (N = 32 on 40 keys: 20 chunks of 2); anything else is the
// automatic choice. Automatic chunks are multiples of 128 keys (the last one takes the rest).
#pragma once

#include <cstdint>

#include "core/backend.h"
#include "core/problems.h"
#include "cuda/attention/common/split_kv_plan.h"

namespace flashkit {
namespace cuda {
namespace attn {

// True when `p` is split by `plan` and the row predicate `supports` (nullptr: every problem)
// takes the inner varlen problem as well; cache_blocks_per_sm as plan_split_kv's.
bool split_kv_applies(const DeviceCaps& caps, const AttentionProblem& p,
                      bool (*supports)(const DeviceCaps&, const AttentionProblem&),
                      SplitKvPlan* plan, int64_t cache_blocks_per_sm,
                      int64_t heads_per_tile = 1, int64_t tile_bytes_per_s = 0,
                      bool one_wave = false);
// The row's heads per work tile for the planner (nullptr: 1).
using HeadsPerTileFn = int64_t (*)(const DeviceCaps&, const AttentionProblem&);
// The bytes per second one work tile of the row streams (plan_split_kv's tile_bytes_per_s;
// nullptr or 0: no bandwidth rule).
using TileRateFn = int64_t (*)(const DeviceCaps&, const AttentionProblem&);

// Workspace bytes of the split's scratch (chunk queries, outputs, LSE, cu_seqlens).
uint64_t split_kv_workspace(const AttentionProblem& p, const SplitKvPlan& plan);

// Runs `p` as planned: one prepare kernel, `inner` on the varlen problem, one combine kernel.
fk_status_t split_kv_run(const ExecContext& ctx, const AttentionProblem& p,
                         const SplitKvPlan& plan, AttentionFn inner);

// A dispatch row's run and workspace functions with the split in front of them
// (kCacheBlocksPerSm, kOneWave: the row kernel's, see plan_split_kv). A split whose K/V rows
// have gaps between sequences (SplitKvPlan::gaps: k and v are the first seqlen_k rows of a longer
// per-sequence buffer, e.g. a slice of a KV cache) runs as a varlen problem that spans the gap
// rows, and a sequence's last key tile reads some of them: memory the caller may never have
// written (NaN, Inf). Their P is 0, but 0 x NaN is NaN, so every row kernel zeroes (Hopper:
// clear_v_tail in sm90/kernel.cuh) or never loads (sm80, generic) the v rows past a sequence.
// The run and the workspace query of a row plan alike (split_kv_plan_for), so that a call the
// query sizes at 0 never splits.
template <bool (*Supports)(const DeviceCaps&, const AttentionProblem&), int kCacheBlocksPerSm,
          HeadsPerTileFn HeadsPerTile, TileRateFn TileRate, bool kOneWave>
bool split_kv_plan_for(const DeviceCaps& caps, const AttentionProblem& p, SplitKvPlan* plan) {
  const int64_t hpt = HeadsPerTile != nullptr ? HeadsPerTile(caps, p) : 1;
  const int64_t rate = TileRate != nullptr ? TileRate(caps, p) : 0;
  return split_kv_applies(caps, p, Supports, plan, kCacheBlocksPerSm, hpt, rate, kOneWave);
}
template <bool (*Supports)(const DeviceCaps&, const AttentionProblem&), AttentionFn Run,
          int kCacheBlocksPerSm = 2, HeadsPerTileFn HeadsPerTile = nullptr,
          TileRateFn TileRate = nullptr, bool kOneWave = false>
fk_status_t run_with_split(const ExecContext& ctx, const AttentionProblem& p) {
  SplitKvPlan plan;
  if (split_kv_plan_for<Supports, kCacheBlocksPerSm, HeadsPerTile, TileRate, kOneWave>(
          *ctx.caps, p, &plan))
    return split_kv_run(ctx, p, plan, Run);
  return Run(ctx, p);
}
template <bool (*Supports)(const DeviceCaps&, const AttentionProblem&), int kCacheBlocksPerSm = 2,
          HeadsPerTileFn HeadsPerTile = nullptr, TileRateFn TileRate = nullptr,
          bool kOneWave = false>
uint64_t workspace_with_split(const DeviceCaps& caps, const AttentionProblem& p) {
  SplitKvPlan plan;
  return split_kv_plan_for<Supports, kCacheBlocksPerSm, HeadsPerTile, TileRate, kOneWave>(
             caps, p, &plan)
             ? split_kv_workspace(p, plan)
             : 0;
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
