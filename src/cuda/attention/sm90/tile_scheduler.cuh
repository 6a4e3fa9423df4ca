// Persistent tile scheduler of the Hopper attention kernel. The grid holds at most one CTA per
// SM; CTA c takes work tiles c, c + grid, c + 2 grid, ... of one numbering, so the producer and
// all consumer warpgroups walk the same sequence without talking to each other and the
// producer runs ahead into the next tile while the consumers finish the current one.
//
// Numbering: unmasked problems put the query tiles of one (batch, head) next to each other
// (they share K and V in L2); masked ones (causal, window) take the longest query tiles of
// every head first (for causal, the last m blocks), so the grid ends on short tiles; when there
// are many heads (batch x heads >= grid / 4) whose keys and values overflow about half the L2,
// the heads are taken in sections that fit and each section is walked longest tile first (a head's query tiles then run close enough
// in time to share its keys and values in L2: without sections, short causal problems with many
// heads read them from device memory once per query tile). Causal calls with a wave of pairs or
// more number their tiles in pairs instead (AttnArgs::pairs): position t = wave * grid + c is
// pair p = (wave / 2) * grid + c, its longer tile (num_m_blocks - 1 - i) on even waves and its
// shorter one (i) on odd waves, so CTA c runs both tiles of a pair back to back: the two add
// up to about the same work for every pair, which balances the static round robin. Pair p is
// pair i = (p + bh) mod pairs_per_bh of (batch, head) bh = p / pairs_per_bh: without the
// rotation a grid that pairs_per_bh divides would give each CTA the same i in every wave (the
// unpaired middle tile of an odd count every time, for some). The pairs of a head are
// consecutive, so the tiles in flight cover about grid / pairs_per_bh heads
// (their keys and values stay in L2; H100, session 52: head_dim 128 causal over 8k keys read
// them ~15 times from device memory in the longest-first order). Varlen causal calls take
// pairs too, per sequence (seq_pairs): sequence s has n_s = ceil(len_s / kBlockM) query tiles
// (len_s clamped to seqlen_q, the longest) and ceil(n_s / 2) pairs a head, and the kernel
// lays every sequence's pairs end to end, in sequence order, from a prefix over the sequences
// that each CTA builds in shared memory from cu_seqlens_q at its start (kernel.cuh; the
// longest sequences first measured the same: H100, session 54, five varlen rows within -3% to
// +3%, geometric mean equal): pair p belongs to the last
// sequence whose prefix entry is <= p (a binary search), then to head (p - that entry) /
// pairs of the sequence, with the same rotation. No empty positions but the holes and the
// positions of the last wave, where a padded numbering left whole waves of them. Other varlen
// problems number ceil(max seqlen_q / kBlockM) tiles per (sequence, head); the tiles past a
// shorter sequence's end are empty and skipped by every warpgroup alike.
//
// A tile's key range (per sequence under varlen; seqlen_k the cache's length under a KV cache,
// kCache): row i (bottom-right aligned) sees keys [i + shift - left, i + shift + right]
// clamped to [0, seqlen_k - 1], shift = seqlen_k - seqlen_q. Key tiles with no visible
// key for any row of the tile are skipped (n_min, n_max); the consumers mask the tiles that
// some row sees only partly.
#pragma once

#include <cstdint>

#include "cuda/attention/common/kvcache.h"
#include "cuda/attention/common/varlen.h"
#include "cuda/attention/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

struct WorkTile {
  int32_t m_block, h, hk, b;  // h: packed head under packed GQA tiles (launch.h, q_pack)
  int32_t m0;            // first query row, counted from the sequence's first row
  int32_t len_q, len_k;  // the sequence's lengths (varlen: from cu_seqlens; KV cache: len_k
                         // from seqused_k; else the extents)
  int32_t row0_q, row0_k;  // varlen: the sequence's first row in the packed tensors; else 0
  int32_t n_min, n_max;  // key tiles [n_min, n_max), walked from n_max - 1 down
  int32_t all_lo, all_hi;  // keys every row of the tile sees: tiles inside need no mask
  bool empty;            // no query row (varlen: m0 >= len_q): producer and consumers skip it
};

// kBlockM_: the kernel's query rows per work tile (launch.h; AttnArgs::block_m). kSeqPairs_:
// the kernel may take varlen pairs (false compiles them out: the fp8 kernel, which takes no
// varlen call; KV caches and 192-row tiles never take them either).
template <int kBlockN, bool kCache, int kBlockM_ = kBlockM, bool kSeqPairs_ = true>
struct TileScheduler {
  static constexpr int kBlockM = kBlockM_;
  static constexpr bool kSeqPairs = kSeqPairs_ && !kCache && kBlockM_ != kBlockM3;
  const AttnArgs& a;
  // Varlen pairs (seq_mode()): seq_prefix[s] = the pairs of sequences 0 .. s - 1 (all heads),
  // s = 0 .. batch, and seq_prefix[kSeqPairsTotal] the positions walked, 2 ceil(pairs / grid)
  // grid (shared memory, kernel.cuh). Read where needed, nothing kept per thread: a member
  // holding the total (session 54's first form) made ptxas spill in kernels that never take
  // this order.
  const int32_t* seq_prefix;
  static constexpr int kSeqPairsTotal = kSeqPairsMaxBatch + 1;

  __device__ __forceinline__ explicit TileScheduler(const AttnArgs& args, const int32_t* prefix = nullptr)
      : a(args), seq_prefix(prefix) {}

  __device__ __forceinline__ bool seq_mode() const {
    return kSeqPairs && a.pairs && a.cu_seqlens_q != nullptr;
  }

  // Varlen pairs: the query tiles of a sequence of len_q rows (len_q clamped to seqlen_q, as
  // the tile count of the other orders is), and the pairs of all its heads.
  __device__ __forceinline__ static int32_t seq_tiles(const AttnArgs& args, int32_t len_q) {
    return (min(len_q, args.seqlen_q) + kBlockM - 1) / kBlockM;
  }
  __device__ __forceinline__ static int32_t seq_pairs(const AttnArgs& args, int32_t len_q) {
    return (seq_tiles(args, len_q) + 1) / 2 * args.nheads;
  }

  __device__ __forceinline__ int64_t first() const { return blockIdx.x; }
  __device__ __forceinline__ int64_t next(int64_t t) const { return t + gridDim.x; }
  __device__ __forceinline__ bool valid(int64_t t) const {
    return t < (seq_mode() ? int64_t(seq_prefix[kSeqPairsTotal]) : a.total_tiles);
  }

  // Keys [key_lo, key_hi] that query row i of sequence (len_q, len_k) sees.
  __device__ __forceinline__ int key_lo(int64_t i, int len_q, int len_k) const {
    const int64_t shift = int64_t(len_k) - len_q;
    const int64_t lo = a.window_left >= 0 ? i + shift - a.window_left : 0;
    return int(min(max(lo, int64_t(0)), int64_t(len_k)));
  }
  __device__ __forceinline__ int key_hi(int64_t i, int len_q, int len_k) const {
    const int64_t shift = int64_t(len_k) - len_q;
    const int64_t hi = a.window_right >= 0 ? i + shift + a.window_right : len_k - 1;
    return int(max(min(hi, int64_t(len_k) - 1), int64_t(-1)));
  }
  __device__ __forceinline__ int key_lo(const WorkTile& w, int64_t i) const {
    return key_lo(i, w.len_q, w.len_k);
  }
  __device__ __forceinline__ int key_hi(const WorkTile& w, int64_t i) const {
    return key_hi(i, w.len_q, w.len_k);
  }

  // (m_block, h, hk, b) of tile t through the host's multiply-high divisors (AttnArgs::
  // index32: t, the (batch, head) count and the section's tile count fit in 31 bits).
  __device__ __forceinline__ void index32(int t, WorkTile& w) const {
    int q, r, bh;
    if (a.pairs) {
      // Holes (a pair past the last, the partner of an odd count's middle tile) get
      // m_block = num_m_blocks: past the rows, so tile() marks them empty.
      int wave, c, rot;
      a.div_grid(wave, c, t);
      const int pair = (wave >> 1) * a.grid + c;
      const bool hole_pair = pair >= a.num_pairs;
      a.div_pairs(bh, r, hole_pair ? 0 : pair);
      a.div_pairs(q, rot, bh);
      r += rot;
      if (r >= a.pairs_per_bh) r -= a.pairs_per_bh;
      const int n = a.num_m_blocks;
      w.m_block = (wave & 1) ? (r == n - 1 - r || hole_pair ? n : r) : (hole_pair ? n : n - 1 - r);
    } else if (a.longest_first && a.section_heads > 0) {
      int sec, local;
      a.div_sec_tiles(sec, local, t);
      const int first_bh = sec * a.section_heads;
      // The last section (narrower when section_heads does not divide batch x nheads); written
      // without first_bh + section_heads, which could pass 2^31.
      const bool last = first_bh > a.batch * a.nheads - a.section_heads;
      const cutlass::FastDivmod width = last ? a.div_sec_last : a.div_sec;
      width(q, r, local);
      w.m_block = a.num_m_blocks - 1 - q;
      bh = first_bh + r;
    } else if (a.longest_first) {
      a.div_bh(q, r, t);
      w.m_block = a.num_m_blocks - 1 - q;
      bh = r;
    } else {
      a.div_m_blocks(q, r, t);
      w.m_block = r;
      bh = q;
    }
    a.div_heads(w.b, w.h, bh);
    a.div_group(w.hk, r, w.h);
  }

  // The same in 64-bit arithmetic (a numbering past 31 bits).
  __device__ __forceinline__ void index64(int64_t t, WorkTile& w) const {
    const int64_t bh_count = int64_t(a.batch) * a.nheads;
    int64_t bh;
    if (a.pairs) {
      const int64_t wave = t / a.grid, c = t - wave * a.grid;
      const int64_t pair = (wave >> 1) * a.grid + c;
      const bool hole_pair = pair >= a.num_pairs;
      bh = hole_pair ? 0 : pair / a.pairs_per_bh;
      const int64_t i = hole_pair ? 0 : (pair + bh) % a.pairs_per_bh;
      const int32_t n = a.num_m_blocks;
      w.m_block = (wave & 1) ? (i == n - 1 - i || hole_pair ? n : int32_t(i))
                             : (hole_pair ? n : n - 1 - int32_t(i));
    } else if (a.longest_first && a.section_heads > 0) {
      // Sections of section_heads (batch, head) pairs (the last one may be narrower), each
      // walked longest query tile first: a head's keys and values are read again by its other
      // query tiles while they are still in L2.
      const int64_t sec_tiles = int64_t(a.section_heads) * a.num_m_blocks;
      const int64_t sec = t / sec_tiles;
      const int64_t first_bh = sec * a.section_heads;
      const int64_t width = min(int64_t(a.section_heads), bh_count - first_bh);
      const int64_t local = t - sec * sec_tiles;
      w.m_block = a.num_m_blocks - 1 - int32_t(local / width);
      bh = first_bh + local % width;
    } else if (a.longest_first) {
      w.m_block = a.num_m_blocks - 1 - int32_t(t / bh_count);
      bh = t % bh_count;
    } else {
      w.m_block = int32_t(t % a.num_m_blocks);
      bh = t / a.num_m_blocks;
    }
    w.h = int32_t(bh % a.nheads);
    w.b = int32_t(bh / a.nheads);
    w.hk = w.h / a.group;
  }

  // Varlen pairs: sequence, head and pair slot i (rotated) of position t; false for a position
  // past the last pair. The tile (i or n_s - 1 - i, by `odd`) needs n_s: tile(). Fewer pairs
  // than CTAs (the host counts every sequence as long as max_seqlen_q, which a caller may give
  // far above the real lengths): no CTA takes a whole pair, the longer tiles of all pairs come
  // first and then the shorter ones, so each CTA runs at most one tile while 2 x pairs <= grid.
  // 32-bit throughout: the host takes this order only where every position fits in 31 bits.
  __device__ __forceinline__ bool seq_index(int64_t t64, WorkTile& w, int32_t& slot, bool& odd) const {
    const int t = int(t64);
    const int pairs_total = seq_prefix[a.batch];
    int pair;
    if (pairs_total < a.grid) {
      odd = t >= pairs_total;
      pair = odd ? t - pairs_total : t;
    } else {
      int wave, c;
      if (a.index32) {
        a.div_grid(wave, c, t);
      } else {  // FLASHKIT_SM90_ATTENTION_INDEX64=1 (tests)
        wave = t / a.grid;
        c = t - wave * a.grid;
      }
      odd = (wave & 1) != 0;
      pair = (wave >> 1) * a.grid + c;
    }
    w.b = w.h = w.hk = 0;
    slot = 0;
    if (pair >= pairs_total) return false;
    int lo = 0, hi = a.batch - 1;  // the last s with seq_prefix[s] <= pair (skips empty ones)
    while (lo < hi) {
      const int mid = (lo + hi + 1) >> 1;
      if (seq_prefix[mid] <= pair) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int32_t local = int32_t(pair - seq_prefix[lo]);
    const int32_t per = (seq_prefix[lo + 1] - seq_prefix[lo]) / a.nheads;  // >= 1 here
    w.b = lo;
    w.h = local / per;
    w.hk = w.h / a.group;
    slot = local - w.h * per + (w.b * a.nheads + w.h) % per;  // 31 bits: the host's bound
    if (slot >= per) slot -= per;
    return true;
  }

  __device__ __forceinline__ WorkTile tile(int64_t t) const {
    WorkTile w;
    bool hole = false, odd = false;
    int32_t slot = 0;
    if (seq_mode()) {
      hole = !seq_index(t, w, slot, odd);
    } else if (a.index32) {
      index32(int(t), w);
    } else {
      index64(t, w);
    }
    if (a.cu_seqlens_q != nullptr) {
      attn::varlen_rows(a.cu_seqlens_q, w.b, a.tma_rows_q, &w.row0_q, &w.len_q);
      attn::varlen_rows(a.cu_seqlens_k, w.b, a.tma_rows_k, &w.row0_k, &w.len_k);
      if (seq_mode()) {
        const int32_t n = seq_tiles(a, w.len_q);
        w.m_block = odd ? slot : n - 1 - slot;
        hole = hole || (odd && slot == n - 1 - slot);
      }
    } else {
      w.row0_q = w.row0_k = 0;
      w.len_q = a.seqlen_q;
      w.len_k = a.seqlen_k;
      if constexpr (kCache) {
        if (a.seqused_k != nullptr) w.len_k = int32_t(attn::cache_len(a.seqused_k, w.b, a.seqlen_k));
      }
    }
    if (hole) w.m_block = a.num_m_blocks;  // as the batched pairs mark theirs
    // Query rows a work tile covers per head: kBlockM, or under packed GQA tiles (the KV-cache
    // instantiation, which packed batched calls run too; launch.h, q_pack) q_pack_rows of each
    // of its q_pack heads.
    int rows = kBlockM;
    if constexpr (kCache) rows = a.q_pack_rows;
    w.m0 = w.m_block * rows;
    w.empty = hole || w.m0 >= w.len_q;
    const int m_last = min(w.m0 + rows, w.len_q) - 1;
    const int lo = key_lo(w, w.m0), hi = key_hi(w, m_last);
    w.n_min = lo / kBlockN;
    w.n_max = hi >= lo ? hi / kBlockN + 1 : w.n_min;
    w.all_lo = key_lo(w, w.m0 + rows - 1);
    w.all_hi = key_hi(w, w.m0);
    return w;
  }
};

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
