// The split-KV planner (split_kv.h says what the split is): whether a problem is split, into
// how many chunks of how many keys, and the varlen segments that follow. Host code only, inline
// so that the CPU unit tests (tests/cpu/test_split_kv_plan.cpp) check its rules without a GPU.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>

#include "core/backend.h"
#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace attn {

struct SplitKvPlan {
  int64_t nsplit = 1;    // key chunks per sequence (>= 2 when planned)
  int64_t chunk = 0;     // keys per chunk; the last chunk of a sequence may be shorter
  int64_t rows = 0;      // k/v rows from one sequence's start to the next (>= seqlen_k)
  bool gaps = false;     // rows > seqlen_k: a sequence without queries skips each gap
  int64_t segments = 0;  // sequences of the inner varlen problem
  // KV cache (seqused_k / block_table): the inner problem is batched over batch x nsplit
  // chunk-sequences, each a paged cache of chunk keys with its own length and page row
  // (built by the prepare kernel). page: rows per page, the caller's page_block_size, or
  // kKeyTile "virtual" pages of a contiguous cache (page j of sequence b is rows [j, j + 1) x
  // page of it; page id b x pages_per_seq + j).
  bool kvcache = false;
  int64_t page = 0;
  int64_t pages_per_seq = 0;  // contiguous cache: batch stride / (page x row stride)
  // KV cache, causal queries (2..kMaxRowsQ rows, no left window): the chunks are cut from each
  // sequence's end and overlap by up to seqlen_q - 1 + page - 1 keys, and the inner call masks
  // them causally with window_left = chunk - 1, so that every query row's keys fall into the
  // chunks exactly once (chunk_keys below). pages_per_chunk: block_table entries per
  // chunk-sequence (chunk / page without `causal`).
  bool causal = false;
  int64_t pages_per_chunk = 0;
};

#if defined(__CUDACC__)
#define FK_SPLIT_HD __host__ __device__
#else
#define FK_SPLIT_HD
#endif

// KV cache: the keys of chunk c of a sequence of len_b keys, as the first page of the sequence
// it starts at and its length in keys (0: an empty chunk-sequence).
// Unmasked and one-row calls: keys [c chunk, (c + 1) chunk) of the sequence.
// Causal calls (plan.causal) with q = seqlen_q rows, row i of the sequence seeing keys
// [0, len_b - q + i] (bottom-right aligned): chunk c ends at hi = len_b - c chunk and starts at
// lo = max(hi - chunk - (q - 1), 0) rounded down to a page. Under the inner call's mask (causal,
// window_left = chunk - 1, both aligned to the chunk's own end), row i sees the chunk's keys
// [hi - q + i - (chunk - 1), hi - q + i] of the sequence, whatever lo is: chunk c + 1's range
// ends one key below chunk c's, and the first chunk (ceil(seqlen_k / chunk) chunks, so
// c chunk >= len_b - chunk) reaches key 0. Rows that see no key (len_b - q + i < 0) see none in
// any chunk.
FK_SPLIT_HD inline void chunk_keys(int64_t len_b, int64_t c, int64_t chunk, int64_t page,
                                   int64_t seqlen_q, bool causal, int64_t* first_page,
                                   int64_t* len) {
  if (!causal) {
    const int64_t lo = c * chunk;
    const int64_t n = len_b - lo;
    *first_page = lo / page;
    *len = n < 0 ? 0 : n > chunk ? chunk : n;
    return;
  }
  const int64_t hi = len_b - c * chunk;
  if (hi <= 0) {
    *first_page = 0;
    *len = 0;
    return;
  }
  int64_t lo = hi - chunk - (seqlen_q - 1);
  lo = lo < 0 ? 0 : lo / page * page;
  *first_page = lo / page;
  *len = hi - lo;
}

// The most chunks one call takes (the combine kernel holds one LSE per chunk in registers).
constexpr int64_t kMaxSplits = 32;

namespace split_plan {

constexpr int64_t kMinChunk = 512;  // keys: each chunk's tile start-up and its combine share
                                    // must stay small against streaming its keys
constexpr int64_t kKeyTile = 128;   // chunks start on key-tile boundaries of the kernels
constexpr int64_t kMaxRowsQ = 128;  // query rows per (batch, head): one query tile
constexpr int64_t kMaxCausalRows = 2048;  // causal calls: batch x seqlen_q x nheads (planner)

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// FLASHKIT_ATTENTION_SPLIT_KV: -1 automatic (unset, empty or unparsable); 0 never ("0", "1");
// N >= 2 that many chunks.
inline int64_t forced_splits() {
  const char* env = std::getenv("FLASHKIT_ATTENTION_SPLIT_KV");
  if (env == nullptr || *env == '\0') return -1;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (*end != '\0' || n < 0) return -1;
  return n == 1 ? 0 : int64_t(n);
}

// fp16/bf16 only: fp32 attention runs on the generic kernel, which callers pick for accuracy,
// not speed; it is left as it is.
inline bool dtype_ok(DType t) { return t == DType::F16 || t == DType::BF16; }

}  // namespace split_plan

// Plans the split of `p`; false when it does not apply (mask, layout, varlen, dtype) or does
// not pay (enough tiles already, or keys too few for chunks of kMinChunk). cache_blocks_per_sm:
// the blocks of the row's kernel that stream a cache's keys at once on one multiprocessor
// (the wave the heuristic fills): 2 for the sm80-class and generic kernels, 1 for the Hopper
// kernel (one persistent CTA per SM).
// heads_per_tile: query heads a work tile of the inner call holds (the Hopper kernel's packed
// GQA tiles over KV caches, sm90_attention::split_heads_per_tile; 1 elsewhere): the tile count
// the wave rule sees is divided by it.
// tile_bytes_per_s: the K/V bytes per second one work tile of the row's kernel streams on its
// own (0: unknown or not measured, no bandwidth rule); where the unsplit tiles already draw 2/3 of
// the DRAM bandwidth (DeviceCaps::dram_bytes_per_s) the call stays unsplit.
// one_wave: the split's tiles must fit one wave (tiles x chunks <= the wave's slots); where not
// even two chunks fit, the call stays unsplit (the Hopper row's persistent kernel, one CTA per
// SM: see the rule below).
inline bool plan_split_kv(const DeviceCaps& caps, const AttentionProblem& p, SplitKvPlan* plan,
                          int64_t cache_blocks_per_sm = 2, int64_t heads_per_tile = 1,
                          int64_t tile_bytes_per_s = 0, bool one_wave = false) {
  *plan = SplitKvPlan{};
  if (p.device != Device::Cuda || p.varlen || !split_plan::dtype_ok(p.dtype)) return false;
  if (p.batch < 1 || p.nheads < 1 || p.seqlen_q < 1 || p.seqlen_k < 2 || p.head_dim < 1)
    return false;
  // Masks that hide no key: then each chunk's rows see all of its keys. KV caches also take
  // causal calls of up to kMaxRowsQ query rows without a left window (speculative decoding,
  // short chunks of a prefill over a cache): end-aligned chunks under a window (chunk_keys).
  const bool one_row = p.seqlen_q == 1 && (p.window_left < 0 || p.window_left >= p.seqlen_k - 1);
  const bool no_mask = !p.causal && p.window_left < 0 && p.window_right < 0;
  const bool cache = attention_uses_kvcache(p);
  const bool causal_rows = cache && !one_row && p.causal && p.window_left < 0 &&
                           p.seqlen_q <= split_plan::kMaxRowsQ;
  if (!one_row && !no_mask && !causal_rows) return false;
  const int64_t forced = split_plan::forced_splits();
  if (forced == 0) return false;
  if (forced < 0 && p.seqlen_q > split_plan::kMaxRowsQ) return false;
  // KV cache: chunks are whole pages.
  int64_t page = 0, pages_per_seq = 0, unit = split_plan::kKeyTile;
  if (cache) {
    if (p.block_table != nullptr) {
      page = p.page_size;
    } else {
      page = split_plan::kKeyTile;
      if (p.k_row_stride <= 0 || p.v_row_stride <= 0) return false;
      if (p.batch > 1) {
        if (p.k_batch_stride % (page * p.k_row_stride) != 0 ||
            p.v_batch_stride % (page * p.v_row_stride) != 0 ||
            p.k_batch_stride / p.k_row_stride != p.v_batch_stride / p.v_row_stride)
          return false;
        pages_per_seq = p.k_batch_stride / (page * p.k_row_stride);
      }
      if (p.batch * std::max<int64_t>(pages_per_seq, split_plan::ceil_div(p.seqlen_k, page)) >
          INT32_MAX)
        return false;
    }
    if (page < 1 || page > INT32_MAX) return false;
    unit = std::lcm(split_plan::kKeyTile, page);
    if (unit > p.seqlen_k) return false;
  }
  // Rows between sequences, the same for k and v.
  int64_t rows = p.seqlen_k;
  if (cache) {
    // (chunks address pages, not rows)
  } else if (p.batch > 1) {
    if (p.k_row_stride <= 0 || p.v_row_stride <= 0 || p.k_batch_stride % p.k_row_stride != 0)
      return false;
    rows = p.k_batch_stride / p.k_row_stride;
    if (rows < p.seqlen_k || p.v_batch_stride != rows * p.v_row_stride) return false;
  }
  if (!cache && (p.batch - 1) * rows + p.seqlen_k > INT32_MAX) return false;

  int64_t n = 0, chunk = 0;
  if (forced > 0) {
    n = std::min<int64_t>({forced, kMaxSplits, p.seqlen_k});
    chunk = split_plan::ceil_div(p.seqlen_k, n);
    if (cache) chunk = split_plan::ceil_div(chunk, unit) * unit;
  } else {
    // FlashAttention-2's heuristic (flash_api.cpp, num_splits_heuristic): tiles almost filling
    // the GPU run unsplit; otherwise the fewest chunks whose wave efficiency (tiles per wave
    // slot used) is within 85% of the best.
    // KV caches on the sm80-class kernel (two blocks per multiprocessor at head_dim <= 128) or
    // the generic one, whose blocks keep one K/V tile in flight each: their wave counts twice
    // the SMs, so a decode streams twice the bytes at once (H200, 1 x 32k: see RESULTS.md).
    const int64_t sms =
        std::max<int32_t>(1, caps.sm_count) * (cache ? std::max<int64_t>(1, cache_blocks_per_sm) : 1);
    const int64_t tiles = p.batch *
                          split_plan::ceil_div(p.nheads, std::max<int64_t>(1, heads_per_tile)) *
                          split_plan::ceil_div(p.seqlen_q, split_plan::kMaxRowsQ);
    if (tiles * 10 >= sms * 8) return false;
    // Tiles that together already stream near the DRAM bandwidth: the split can only add its
    // prepare and combine kernels. Hopper kernel, bf16, head_dim 128, one query, GQA 32 / 8 (64
    // packed tiles, ~40 GB/s each), batched: on an H100 (3.35 TB/s) unsplit against split at 8 x
    // 8k keys 103 against 114 us (RESULTS, "Session 59: ... a DRAM-bandwidth rule for decode
    // splits"); on an H200 (4.9 TB/s) the same split was 1.12x faster ("Split-KV decode",
    // 0.4.0). 64 x 40 GB/s is 76% of the H100's bandwidth and 52% of the H200's; 2/3 lies
    // between (from 56 tiles on the H100, 82 on the H200). The rate comes from the row
    // (sm90_attention::split_tile_bytes_per_s: batched calls at head_dim 128 only).
    if (tile_bytes_per_s > 0 && caps.dram_bytes_per_s > 0 &&
        double(tiles) * double(tile_bytes_per_s) * 3 >= double(caps.dram_bytes_per_s) * 2)
      return false;
    // Causal rows: only where the tiles fill at most a quarter of the wave and the call has at
    // most kMaxCausalRows query rows x heads. H100, bf16, head_dim 128, 2-16 causal queries,
    // SPLIT_KV=0 against the split (RESULTS, "Split-KV for causal query rows over a KV cache:
    // measured", session 57): 1 x 32k keys 0.13-0.22 of the time, 2 x 16k 0.25-0.45, 4 x 8k
    // 0.47-0.87, 8 x 8k at 32 / 4 heads with 2-8 queries 0.63-0.85; but 8 x 8k at 32 / 4 with 16
    // queries (32 packed tiles, 4096 rows x heads) 1.02-1.10 and at 32 / 8 (64 packed tiles)
    // 0.97-1.32: the prepare and combine kernels (query copies, LSE merge: per row x head)
    // cost more there than the under-filled wave. On 16-byte vectors (session 58) they cost
    // less, yet 8 x 8k at 32 / 8 still measured 1.005-1.03 against unsplit: the bound stays.
    if (causal_rows &&
        (tiles * 4 > sms || p.batch * p.seqlen_q * p.nheads > split_plan::kMaxCausalRows))
      return false;
    const int64_t max_n = std::min<int64_t>(kMaxSplits, p.seqlen_k / split_plan::kMinChunk);
    // One wave: FlashAttention-2's rule below picks the fewest chunks within 85% of the best
    // wave efficiency over any number of waves, so from ~45 tiles on 132 SMs it took 3-5
    // chunks over two or three waves, and above 66 tiles (where two chunks no longer fit one
    // wave) it still split. Hopper kernel, bf16, one query, --kv-calls 10 (RESULTS, "Session
    // 60: ..."): H200, GQA 32 / 4 head_dim 128 batched, 68 / 72 / 80 tiles split 1.13 / 1.13 /
    // 1.10x the unsplit time (64 tiles, two chunks in one wave: 0.85x); GQA 32 / 8 over 12 x 8k
    // keys (96 tiles) over a cache 0.99-1.12x; H100, GQA 16 / 2 head_dim 64 96 tiles 1.09x
    // batched, 1.18x over a cache; H100, GQA 32 / 8 head_dim 128 over 6 x 8k keys (48 tiles)
    // five chunks (FA2's pick, 240 tiles) 1.03-1.11x the time of two (96 tiles, one wave).
    // The best efficiency is still taken over every count, so that FA2's pick stands wherever
    // it fits one wave; otherwise the most chunks that fit.
    const int64_t fit_n = one_wave ? std::min<int64_t>(max_n, sms / tiles) : max_n;
    if (fit_n < 2) return false;
    auto eff = [&](int64_t k) {
      const int64_t t = tiles * k;
      return double(t) / double(split_plan::ceil_div(t, sms) * sms);
    };
    double best = 0;
    for (int64_t k = 1; k <= max_n; ++k) best = std::max(best, eff(k));
    for (n = 1; n < fit_n && eff(n) < 0.85 * best; ++n) {
    }
    chunk = split_plan::ceil_div(split_plan::ceil_div(p.seqlen_k, n), unit) * unit;
  }
  n = split_plan::ceil_div(p.seqlen_k, chunk);
  if (n < 2) return false;
  plan->nsplit = n;
  plan->chunk = chunk;
  plan->rows = rows;
  plan->gaps = !cache && p.batch > 1 && rows > p.seqlen_k;
  plan->segments = p.batch * n + (plan->gaps ? p.batch - 1 : 0);
  plan->kvcache = cache;
  plan->page = page;
  plan->pages_per_seq = pages_per_seq;
  plan->causal = causal_rows;
  if (cache) {
    // Causal: a chunk's keys span at most chunk + seqlen_q - 1 + page - 1 (chunk_keys).
    plan->pages_per_chunk =
        chunk / page + (causal_rows ? split_plan::ceil_div(p.seqlen_q - 1, page) + 1 : 0);
    if (p.batch * n * plan->pages_per_chunk >= INT32_MAX ||
        plan->pages_per_chunk * page >= INT32_MAX)
      return false;
  }
  if (plan->segments >= INT32_MAX || n * p.batch * p.seqlen_q * p.nheads >= INT32_MAX) return false;
  return true;
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
