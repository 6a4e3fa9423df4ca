// The sm80-class attention forward kernel: one block per (query tile, head, sequence), composed
// of the mainloop (mainloop.cuh), the online softmax (softmax.cuh) and the epilogue
// (epilogue.cuh). FlashAttention-2's forward pass (Dao 2023, Algorithm 1 and Section 3.2): the
// query tile stays in shared memory, key/value tiles stream through with cp.async, and each
// warp owns its query rows end to end, so no partial results are exchanged between warps.
//
// Pipeline (two tiles in flight, K and V alternating in their own buffers): the copy of V(n) is
// issued before S = Q K(n)^T and lands during it; the copy of K(n-1) is issued as soon as every
// warp is done with K(n) and lands during the softmax and O += P V(n). Key tiles are walked from
// the last to the first, so a tile that needs masking (sequence end, causal diagonal) comes
// first and the rest run without mask arithmetic, except under a sliding window's left edge.
//
// Packed varlen (kPacked; chosen on the host for batches of many short sequences, see
// attention_packed.h): the query tiles run over the packed rows [0, total_q) across sequence
// ends instead of one set of tiles per sequence, so 64 sentences of ~18 tokens take 9 tiles of
// 128 rows per head rather than 64 mostly empty ones. Each row finds its sequence in
// cu_seqlens_q (binary search) and sees the keys [cu_seqlens_k[s], cu_seqlens_k[s + 1]) of that
// sequence only, with causal and window bounds applied within it; the per-row ranges are
// computed once per block into shared memory and every key tile is masked with them. A block's
// key tiles span the sequences its rows belong to. A separate instantiation, so that the
// per-sequence kernel keeps its registers (a runtime flag cost it up to 112 bytes of spills).
//
// Even kernels (kEven, Params::even): calls with whole key tiles, a full head dim, no softcap,
// varlen, paged cache or left window run an instantiation without the two-sided mask, softcap
// and zero-fill code (kEven 2 keeps the upper-bound mask of causal / right-only windows). The
// key loop shrinks to a third of the general kernel's SASS, and the standard grid ran +3-12%
// faster on the H200 (RESULTS, session 36): 29 of its 36 cells >= FlashAttention-2.
#pragma once

#include <climits>
#include <cstdint>

#include "cuda/attention/common/varlen.h"
#include "cuda/attention/sm80/epilogue.cuh"
#include "cuda/attention/sm80/mainloop.cuh"
#include "cuda/attention/sm80/params.h"
#include "cuda/attention/sm80/softmax.cuh"
#include "cuda/attention/sm80/tile_size.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

// kEven (Params::even): 1, a call whose key tiles need no per-element work; 2, the same but for
// the upper-bound mask of causal / right-only windows. The two-sided mask, softcap and
// zero-fill branches are compiled out (static_assert below: never packed or decode), and with 1
// the upper-bound mask too: one kernel for both lost 2-5% on the short unmasked cells (its key
// loop spilled more, session 36).
template <class T, int kHeadDim, bool kPacked = false, int kKind = 0, int kEven = 0>
__global__ void __launch_bounds__(TileShape<kHeadDim, kKind>::kWarps * 32,
                                  kKind == kDecodeKind ? 8 : kHeadDim <= 128 ? 2 : 1)
    attention_fwd_kernel(const Params p) {
  static_assert(kEven == 0 || (!kPacked && kKind == 0), "the even kernels are plain ones");
  using ML = Mainloop<T, kHeadDim, kKind>;
  using SM = OnlineSoftmax<ML::kMTiles, ML::kSTiles>;
  using EP = Epilogue<T, kHeadDim, kKind>;
  constexpr int kBlockM = ML::kBlockM, kBlockN = ML::kBlockN, kMTiles = ML::kMTiles;
  constexpr int kWarpRows = 16 * kMTiles;

  extern __shared__ __align__(128) unsigned char smem_raw[];  // SmemLayout: 128-byte tile bases
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + SmemLayout<kHeadDim, kKind>::kQElems;
  T* sV = sK + SmemLayout<kHeadDim, kKind>::kKVElems;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  // ---- Which tile. Unmasked: the query tiles of one (sequence, head) are adjacent, so that they
  // share K/V in L2. Masked (causal, window): tiles differ in length, so the longest (last) query
  // tiles of every head go first and the grid ends on short ones (H200, benchmarks/attention.py:
  // +7% on the causal cells against ordering by head with the longest tile first in each head).
  const int64_t bh_count = static_cast<int64_t>(p.batch) * p.nheads;
  int m_block;
  int64_t bh;
  if constexpr (kPacked) {
    // The heads of one row tile are adjacent (they read the same rows of q, k, v); batch
    // index 0: the packed tensors have no batch stride.
    m_block = static_cast<int>(blockIdx.x / p.nheads);
    bh = blockIdx.x % p.nheads;
  } else if (p.window_left >= 0 || p.window_right >= 0) {
    m_block = p.num_m_blocks - 1 - static_cast<int>(blockIdx.x / bh_count);
    bh = blockIdx.x % bh_count;
  } else {
    m_block = static_cast<int>(blockIdx.x % p.num_m_blocks);
    bh = blockIdx.x / p.num_m_blocks;
  }
  const int h = static_cast<int>(bh % p.nheads);
  const int b = static_cast<int>(bh / p.nheads);
  const int hk = h / p.group;

  int row0_q = 0, row0_k = 0, len_q = p.seqlen_q, len_k = p.seqlen_k;
  if constexpr (kPacked) {
    len_q = static_cast<int>(p.total_q);
    len_k = static_cast<int>(p.total_k);
  } else if (p.cu_seqlens_q != nullptr) {
    attn::varlen_rows(p.cu_seqlens_q, b, p.total_q, &row0_q, &len_q);
    attn::varlen_rows(p.cu_seqlens_k, b, p.total_k, &row0_k, &len_k);
  }
  if (p.seqused_k != nullptr) len_k = min(max(p.seqused_k[b], 0), p.seqlen_k);
  const int m0 = m_block * kBlockM;
  if (m0 >= len_q) return;  // uniform across the block

  const T* gQ = static_cast<const T*>(p.q) + b * p.q_batch_stride +
                static_cast<int64_t>(row0_q + m0) * p.q_row_stride + h * p.q_head_stride;
  // Paged cache: gK / gV are the pools with the head offset; the tile loads find the pages.
  const bool paged = p.block_table != nullptr;
  const T* gK = static_cast<const T*>(p.k) + (paged ? 0 : b * p.k_batch_stride) +
                static_cast<int64_t>(row0_k) * p.k_row_stride + hk * p.k_head_stride;
  const T* gV = static_cast<const T*>(p.v) + (paged ? 0 : b * p.v_batch_stride) +
                static_cast<int64_t>(row0_k) * p.v_row_stride + hk * p.v_head_stride;
  const int32_t* table = paged ? p.block_table + b * p.block_table_stride : nullptr;
  // Key/value tile n0 of this sequence. Pages of at least kBlockN rows (powers of two, so
  // multiples of the tile) hold whole tiles: one table entry per tile, then the contiguous copy.
  auto load_kv = [&](uint32_t smem, const T* g, int64_t batch_stride, int64_t row_stride,
                     int n0) {
    if constexpr (kEven) {  // whole tiles of head_dim == kHeadDim, not paged
      ML::template load_tile_full<kBlockN>(smem, g + static_cast<int64_t>(n0) * row_stride,
                                           row_stride, tid);
    } else if (!paged) {
      ML::load_kv_tile(smem, g, row_stride, n0, len_k, p.head_dim, tid);
    } else if (kKind != kDecodeKind || (1 << p.page_shift) >= kBlockN) {
      const int pg = min(max(table[n0 >> p.page_shift], 0), p.num_pages - 1);
      const T* t = g + pg * batch_stride +
                   static_cast<int64_t>(n0 & ((1 << p.page_shift) - 1)) * row_stride;
      ML::load_kv_tile_at(smem, t, row_stride, len_k - n0, p.head_dim, tid);
    } else if constexpr (kKind == kDecodeKind) {
      // Pages smaller than a tile: decode tiles only (the 128-row kernel's registers are full;
      // attention_supported sends its paged calls with small pages to the generic kernel).
      ML::load_kv_tile_paged(smem, g, table, p.num_pages, batch_stride, row_stride, p.page_shift,
                             n0, len_k - n0, p.head_dim, tid);
    }
  };

  // ---- Keys visible to each row (bottom-right alignment: row i sits at key i + shift),
  // clamped to [0, len_k - 1]; lo > hi means none.
  const int64_t shift = static_cast<int64_t>(len_k) - len_q;
  auto key_lo = [&](int64_t i) -> int {
    const int64_t lo = p.window_left >= 0 ? i + shift - p.window_left : 0;
    return static_cast<int>(min(max(lo, int64_t(0)), static_cast<int64_t>(len_k)));
  };
  auto key_hi = [&](int64_t i) -> int {
    const int64_t hi = p.window_right >= 0 ? i + shift + p.window_right : len_k - 1;
    return static_cast<int>(max(min(hi, static_cast<int64_t>(len_k) - 1), int64_t(-1)));
  };
  const int m_last = min(m0 + kBlockM, len_q) - 1;
  int tile_lo, tile_hi;
  // A key tile needs the per-element mask unless every row of the block sees all of it
  // (packed: always, rows of different sequences see different keys).
  int all_rows_lo, all_rows_hi;
  int* s_range = nullptr;  // packed: each row's visible keys [lo, hi]
  if constexpr (kPacked) {
    // The keys packed row i (< total_q) sees: its sequence s is the last one starting at or
    // before i (so empty sequences are skipped), and the causal/window bounds apply within s.
    // Entries are clamped as in varlen_rows: wrong ones give a wrong result but never an
    // address outside the tensors.
    auto packed_range = [&](int64_t i, int* lo, int* hi) {
      int a = 0, z = p.batch - 1;
      while (a < z) {
        const int mid = (a + z + 1) >> 1;
        if (min(max(int64_t(p.cu_seqlens_q[mid]), int64_t(0)), p.total_q) <= i) {
          a = mid;
        } else {
          z = mid - 1;
        }
      }
      int rq, lq, rk, lk;
      attn::varlen_rows(p.cu_seqlens_q, a, p.total_q, &rq, &lq);
      attn::varlen_rows(p.cu_seqlens_k, a, p.total_k, &rk, &lk);
      const int64_t li = i - rq, sh = static_cast<int64_t>(lk) - lq;
      const int64_t l = p.window_left >= 0 ? li + sh - p.window_left : 0;
      const int64_t h2 = p.window_right >= 0 ? li + sh + p.window_right : lk - 1;
      *lo = rk + static_cast<int>(min(max(l, int64_t(0)), static_cast<int64_t>(lk)));
      *hi = rk + static_cast<int>(max(min(h2, static_cast<int64_t>(lk) - 1), int64_t(-1)));
    };
    // Per-row ranges into shared memory after V (read after the key loop's first barrier; rows
    // past total_q see nothing and are not stored).
    s_range = reinterpret_cast<int*>(sV + SmemLayout<kHeadDim, kKind>::kKVElems);
    for (int r = tid; r < kBlockM; r += TileShape<kHeadDim, kKind>::kWarps * 32) {
      int lo = 1, hi = 0;
      if (m0 + r < len_q) packed_range(m0 + r, &lo, &hi);
      s_range[2 * r] = lo;
      s_range[2 * r + 1] = hi;
    }
    // The block's key span: ranges grow with the row for valid cu_seqlens, so the first row's
    // start and the last row's end bound it.
    int lo_last, hi_first;
    packed_range(m0, &tile_lo, &hi_first);
    packed_range(m_last, &lo_last, &tile_hi);
    all_rows_lo = INT_MAX;
    all_rows_hi = INT_MIN;
  } else {
    tile_lo = key_lo(m0);
    tile_hi = key_hi(m_last);
  }
  const int n_block_min = tile_lo / kBlockN;
  const int n_block_max = tile_hi >= tile_lo ? tile_hi / kBlockN + 1 : n_block_min;
  if constexpr (!kPacked) {
    all_rows_lo = key_lo(m0 + kBlockM - 1);
    all_rows_hi = key_hi(m0);
  }

  const uint32_t sQa = smem_u32(sQ), sKa = smem_u32(sK), sVa = smem_u32(sV);
  const uint32_t q_addr = ML::q_lane_addr(sQa, warp, lane);
  const uint32_t k_addr = ML::k_lane_addr(sKa, lane);
  const uint32_t v_addr = ML::v_lane_addr(sVa, lane);

  // ---- Prologue: Q and the first (highest) K tile.
  ML::template load_tile<kBlockM>(sQa, gQ, p.q_row_stride, len_q - m0, p.head_dim, tid);
  if (n_block_max > n_block_min) {
    load_kv(sKa, gK, p.k_batch_stride, p.k_row_stride, (n_block_max - 1) * kBlockN);
  }
  cp_async_commit();

  float acc_o[kMTiles][ML::kOTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int dt = 0; dt < ML::kOTiles; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_o[mt][dt][e] = 0.0f;
  SM softmax;
  softmax.init();

  for (int n = n_block_max - 1; n >= n_block_min; --n) {
    const int n0 = n * kBlockN;
    float acc_s[kMTiles][ML::kSTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < ML::kSTiles; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc_s[mt][nt][e] = 0.0f;

    cp_async_wait<0>();  // K(n) (and Q) landed ...
    __syncthreads();     // ... for every thread, and every warp is done reading V(n+1)
    load_kv(sVa, gV, p.v_batch_stride, p.v_row_stride, n0);
    cp_async_commit();

    ML::gemm_qk(acc_s, q_addr, k_addr);

    cp_async_wait<0>();  // V(n) landed ...
    __syncthreads();     // ... and every warp is done reading K(n)
    if (n > n_block_min) {
      load_kv(sKa, gK, p.k_batch_stride, p.k_row_stride, n0 - kBlockN);
      cp_async_commit();
    }

    // Plain scores with a positive scale stay raw: the scale is folded into the exponent's FFMA
    // (exp2(s * scale_log2 - m)), and masking -inf survives it. Softcap (applied before the
    // mask) and non-positive scales turn the scores into logits first.
    const bool raw = kEven || (!p.softcap && p.scale_log2 > 0.0f);
    if (!raw) SM::to_logits(acc_s, p);
    // Calls without a left window (not packed): each row's upper bound alone (SM::mask_hi), on
    // the tiles that cross some row's bound (the causal diagonal). The even kernels know it at
    // compile time: kEven 2 takes this mask only, kEven 1 none.
    bool hi_only = kEven == 2;
    if constexpr (!kPacked && kEven == 0) hi_only = p.window_left < 0 && p.hi_mask != 0;
    if (hi_only && (n0 + kBlockN - 1 > all_rows_hi)) {
      int row_hi[kMTiles][2];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          row_hi[mt][r] = key_hi(m0 + warp * kWarpRows + mt * 16 + (lane >> 2) + 8 * r);
      SM::mask_hi(acc_s, n0 + 2 * (lane & 3), row_hi);
    } else if (kEven == 0 && !hi_only &&
               (n0 < all_rows_lo || n0 + kBlockN - 1 > all_rows_hi)) {
      // Per-row bounds, recomputed here rather than held in registers across the loop.
      int row_lo[kMTiles][2], row_hi[kMTiles][2];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          if constexpr (kPacked) {
            const int local = warp * kWarpRows + mt * 16 + (lane >> 2) + 8 * r;
            row_lo[mt][r] = s_range[2 * local];
            row_hi[mt][r] = s_range[2 * local + 1];
          } else {
            const int64_t i = m0 + warp * kWarpRows + mt * 16 + (lane >> 2) + 8 * r;
            row_lo[mt][r] = key_lo(i);
            row_hi[mt][r] = key_hi(i);
          }
        }
      SM::mask(acc_s, n0 + 2 * (lane & 3), row_lo, row_hi);
    }
    uint32_t p_frag[kMTiles][ML::kSTiles / 2][4];
    softmax.template update<T>(acc_s, acc_o, p_frag, raw ? p.scale_log2 : 1.0f);
    ML::gemm_pv(acc_o, p_frag, v_addr);
  }

  // ---- Epilogue. The warp stages its output in its own Q rows; wait for the Q copies of every
  // thread first (a block with no visible key never waited for them).
  float lse[kMTiles][2];
  softmax.finalize(acc_o, lse);
  cp_async_wait<0>();
  __syncthreads();
  const int i0 = m0 + warp * kWarpRows;
  T* gO = static_cast<T*>(p.out) + b * p.o_batch_stride +
          static_cast<int64_t>(row0_q + i0) * p.o_row_stride + h * p.o_head_stride;
  float* gL = p.lse != nullptr
                  ? p.lse + b * p.lse_batch_stride + h * p.lse_head_stride + (row0_q + i0)
                  : nullptr;
  EP::store(acc_o, lse, sQ + warp * kWarpRows * ML::kPitch, gO, p.o_row_stride, len_q - i0, p.head_dim,
            gL, lane);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
