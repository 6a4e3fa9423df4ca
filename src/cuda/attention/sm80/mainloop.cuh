// Mainloop pieces of the sm80-class attention kernel: global -> shared tile copies (cp.async,
// zero fill past the sequence end and past head_dim) and the two warp-level GEMMs of
// FlashAttention-2 (Dao 2023, Algorithm 1, lines 8 and 10): S = Q K^T with fp32 accumulators,
// and O += P V with P taken from registers (the S accumulators converted in place, so P never
// touches shared memory).
//
// Fragment conventions (PTX ISA, mma.m16n8k16 with .row.col): lane = 4 g + t. An A fragment
// holds rows g and g+8, columns 2t, 2t+1 and 2t+8, 2t+9 of a 16x16 tile; a B fragment holds rows
// (k) 2t, 2t+1 and 2t+8, 2t+9 of column (n) g; the accumulator holds rows g and g+8, columns 2t,
// 2t+1 of a 16x8 tile. K in shared memory is [key][d], which is B = K^T in the "col" layout
// ldmatrix reads directly; V is [key][d] too, so its B fragments come from ldmatrix.trans.
#pragma once

#include <cstdint>

#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/attention/sm80/tile_size.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

template <class T, int kHeadDim, int kKind = 0>
struct Mainloop {
  using Shape = TileShape<kHeadDim, kKind>;
  static constexpr int kBlockM = Shape::kBlockM;
  static constexpr int kBlockN = Shape::kBlockN;
  static constexpr int kThreads = Shape::kWarps * 32;
  using Layout = SmemLayout<kHeadDim, kKind>;
  static constexpr int kPitch = Layout::kPitch;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks per row
  static constexpr int kMTiles = kBlockM / (16 * Shape::kWarps);  // 16-row MMA tiles per warp
  static constexpr int kSTiles = kBlockN / 8;   // n8 tiles of S per row tile
  static constexpr int kOTiles = kHeadDim / 8;  // n8 tiles of O per row tile
  static_assert(kMTiles >= 1 && kBlockM == kMTiles * 16 * Shape::kWarps, "whole row tiles");
  static_assert(kHeadDim % 16 == 0 && kBlockN % 16 == 0, "MMA k-steps of 16");

  // Issues the copies of a kRows x kHeadDim tile: row r of the tile is at gmem + r * row_stride.
  // Rows >= rows_valid and columns >= head_dim are zero-filled (nothing is read for them), so a
  // partial tile needs no masking of the data itself, and padded head dims add zeros to Q K^T.
  // gmem (row 0) must be a valid row. Threads take consecutive 16-byte chunks of a row, so each
  // warp reads whole 16-byte-aligned row segments (coalesced).
  template <int kRows>
  static __device__ __forceinline__ void load_tile(uint32_t smem, const T* gmem,
                                                   int64_t row_stride, int rows_valid,
                                                   int head_dim, int tid) {
    constexpr int kTotal = kRows * kChunks;
    static_assert(kTotal % kThreads == 0, "whole chunks per thread");
    if constexpr (kThreads % kChunks == 0) {
      // Fixed column per thread, rows kStep apart: one pointer, advanced by kStep rows.
      constexpr int kStep = kThreads / kChunks;
      const int row0 = tid / kChunks, col = (tid % kChunks) * 8;
      const int col_bytes = 2 * max(0, min(8, head_dim - col));
      const T* src = gmem + row0 * row_stride + col;
      const int64_t step = kStep * row_stride;
#pragma unroll
      for (int i = 0; i < kTotal / kThreads; ++i) {
        const int bytes = row0 + i * kStep < rows_valid ? col_bytes : 0;
        cp_async_16(smem + 2u * static_cast<uint32_t>(Layout::offset(row0 + i * kStep, col)),
                    bytes > 0 ? src : gmem, bytes);
        src += step;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kTotal / kThreads; ++i) {
        const int idx = tid + i * kThreads;
        const int row = idx / kChunks, col = (idx % kChunks) * 8;
        const int bytes = row < rows_valid ? 2 * max(0, min(8, head_dim - col)) : 0;
        const T* src = bytes > 0 ? gmem + row * row_stride + col : gmem;
        cp_async_16(smem + 2u * static_cast<uint32_t>(Layout::offset(row, col)), src, bytes);
      }
    }
  }

  // The same copy for a whole tile (kRows valid rows, head_dim == kHeadDim): no predicates, one
  // pointer per thread advanced by a fixed number of rows. Every key tile but the one at the
  // sequence end takes this path, so the steady state spends few instructions on addresses.
  template <int kRows>
  static __device__ __forceinline__ void load_tile_full(uint32_t smem, const T* gmem,
                                                        int64_t row_stride, int tid) {
    constexpr int kTotal = kRows * kChunks;
    static_assert(kTotal % kThreads == 0, "whole chunks per thread");
    if constexpr (kThreads % kChunks == 0) {
      constexpr int kStep = kThreads / kChunks;
      const int row0 = tid / kChunks, col = (tid % kChunks) * 8;
      const T* src = gmem + row0 * row_stride + col;
      const int64_t step = kStep * row_stride;
#pragma unroll
      for (int i = 0; i < kTotal / kThreads; ++i) {
        cp_async_16_full(smem + 2u * static_cast<uint32_t>(Layout::offset(row0 + i * kStep, col)),
                         src);
        src += step;
      }
    } else {
#pragma unroll
      for (int i = 0; i < kTotal / kThreads; ++i) {
        const int idx = tid + i * kThreads;
        const int row = idx / kChunks, col = (idx % kChunks) * 8;
        cp_async_16_full(smem + 2u * static_cast<uint32_t>(Layout::offset(row, col)),
                         gmem + row * row_stride + col);
      }
    }
  }

  // Loads a key/value tile whose first row is at g (rows_valid of its kBlockN rows exist): the
  // whole-tile path unless the tile crosses the sequence end or head_dim is padded.
  static __device__ __forceinline__ void load_kv_tile_at(uint32_t smem, const T* g,
                                                         int64_t row_stride, int rows_valid,
                                                         int head_dim, int tid) {
    if (head_dim == kHeadDim && rows_valid >= kBlockN) {
      load_tile_full<kBlockN>(smem, g, row_stride, tid);
    } else {
      load_tile<kBlockN>(smem, g, row_stride, rows_valid, head_dim, tid);
    }
  }

  // Loads key/value tile n0 of a sequence of len_k rows stored from gmem on.
  static __device__ __forceinline__ void load_kv_tile(uint32_t smem, const T* gmem,
                                                      int64_t row_stride, int n0, int len_k,
                                                      int head_dim, int tid) {
    load_kv_tile_at(smem, gmem + static_cast<int64_t>(n0) * row_stride, row_stride, len_k - n0,
                    head_dim, tid);
  }

  // Paged KV cache with pages of fewer than kBlockN rows (2^page_shift; n0 is a multiple of
  // kBlockN, so the tile holds kBlockN >> page_shift whole pages): each warp reads the tile's
  // table entries once, lane j holding pages j and j + 32 (only those with valid rows: the
  // header promises no read past ceil(cache_seqlens / page_block_size)), clamped to the pool;
  // every row then takes its page with a shuffle. base = the pool with the head offset applied.
  // A rolled loop: unrolled, the per-row addresses spilled the one-warp decode kernel.
  static __device__ __forceinline__ void load_kv_tile_paged(
      uint32_t smem, const T* base, const int32_t* table, int num_pages, int64_t page_stride,
      int64_t row_stride, int page_shift, int n0, int rows_valid, int head_dim, int tid) {
    constexpr int kTotal = kBlockN * kChunks;
    static_assert(kTotal % kThreads == 0, "whole chunks per thread");
    static_assert(kBlockN <= 64, "two table entries per lane cover the tile's pages");
    const int lane = tid & 31;
    const int first = n0 >> page_shift;
    const int pages_valid = rows_valid > 0 ? ((rows_valid - 1) >> page_shift) + 1 : 0;
    int e0 = 0, e1 = 0;
    if (lane < pages_valid) e0 = min(max(table[first + lane], 0), num_pages - 1);
    if (lane + 32 < pages_valid) e1 = min(max(table[first + lane + 32], 0), num_pages - 1);
    const int page_mask = (1 << page_shift) - 1;
    if constexpr (kThreads % kChunks == 0) {
      // Pages of at least kStep rows (the rows a thread's copies step by): every lane's i-th
      // row is in the same page, so the page loop is warp-uniform and each page's rows are
      // one pointer advanced by kStep rows, as in load_tile.
      constexpr int kStep = kThreads / kChunks;
      if ((1 << page_shift) >= kStep) {
        const int row0 = tid / kChunks, col = (tid % kChunks) * 8;
        const int col_bytes = 2 * max(0, min(8, head_dim - col));
        const int per_page = (1 << page_shift) / kStep;  // this thread's rows in one page
        const int pages = kBlockN >> page_shift;
        for (int pp = 0; pp < pages; ++pp) {
          const int p0 = __shfl_sync(0xffffffffu, e0, pp & 31);
          const int p1 = __shfl_sync(0xffffffffu, e1, pp & 31);
          const T* src = base + (pp < 32 ? p0 : p1) * page_stride +
                         static_cast<int64_t>(((n0 + row0) & page_mask)) * row_stride + col;
          const int64_t step = kStep * row_stride;
          int row = (pp << page_shift) + row0;
#pragma unroll 4
          for (int j = 0; j < per_page; ++j) {
            const int bytes = row < rows_valid ? col_bytes : 0;
            cp_async_16(smem + 2u * static_cast<uint32_t>(Layout::offset(row, col)),
                        bytes > 0 ? src : base, bytes);
            src += step;
            row += kStep;
          }
        }
        return;
      }
    }
#pragma unroll 4
    for (int i = 0; i < kTotal / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      const int row = idx / kChunks, col = (idx % kChunks) * 8;
      const int bytes = row < rows_valid ? 2 * max(0, min(8, head_dim - col)) : 0;
      const int pi = row >> page_shift;  // < 64
      const int p0 = __shfl_sync(0xffffffffu, e0, pi & 31);
      const int p1 = __shfl_sync(0xffffffffu, e1, pi & 31);
      const int pg = pi < 32 ? p0 : p1;
      const T* src = bytes > 0 ? base + pg * page_stride +
                                     static_cast<int64_t>((n0 + row) & page_mask) * row_stride + col
                               : base;
      cp_async_16(smem + 2u * static_cast<uint32_t>(Layout::offset(row, col)), src, bytes);
    }
  }

  // ldmatrix row addresses of this lane (bytes, shared window), for k-step 0 / tile 0.
  // Q (A operand): matrices (rows 0-7, 8-15) x (cols 0-7, 8-15) of the warp's first row tile
  // (the warp owns rows [warp * 16 kMTiles, (warp + 1) * 16 kMTiles)).
  static __device__ __forceinline__ uint32_t q_lane_addr(uint32_t sQ, int warp, int lane) {
    return sQ + 2u * static_cast<uint32_t>(
                    Layout::offset(warp * 16 * kMTiles + (lane & 15), (lane >> 4) * 8));
  }
  // K (B operand, non-transposed): matrices (keys 0-7, d 0-7), (keys 0-7, d 8-15), (keys 8-15,
  // d 0-7), (keys 8-15, d 8-15) = b0, b1 of key tile 0 and b0, b1 of key tile 1.
  static __device__ __forceinline__ uint32_t k_lane_addr(uint32_t sK, int lane) {
    return sK + 2u * static_cast<uint32_t>(
                    Layout::offset((lane & 7) + ((lane >> 4) << 3), ((lane >> 3) & 1) * 8));
  }
  // V (B operand, transposed): matrices (keys 0-7, d 0-7), (keys 8-15, d 0-7), (keys 0-7, d
  // 8-15), (keys 8-15, d 8-15) = b0, b1 of d tile 0 and b0, b1 of d tile 1.
  static __device__ __forceinline__ uint32_t v_lane_addr(uint32_t sV, int lane) {
    return sV + 2u * static_cast<uint32_t>(
                    Layout::offset((lane & 7) + (((lane >> 3) & 1) << 3), (lane >> 4) * 8));
  }

  // acc_s += Q K^T for the warp's rows and the kBlockN keys of the tile in shared memory. Each K
  // fragment is loaded once and used for all kMTiles row tiles.
  static __device__ __forceinline__ void gemm_qk(float (&acc_s)[kMTiles][kSTiles][4],
                                                 uint32_t q_addr, uint32_t k_addr) {
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t a[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt)
        ldsm_x4(a[mt], Layout::chunk_pair(q_addr, kk) + 2u * (mt * 16 * kPitch));
      const uint32_t k_kk = Layout::chunk_pair(k_addr, kk);
#pragma unroll
      for (int np = 0; np < kBlockN / 16; ++np) {
        uint32_t b[4];
        ldsm_x4(b, k_kk + 2u * (np * 16 * kPitch));
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Elt<T>::mma(acc_s[mt][2 * np], a[mt], b[0], b[1]);
          Elt<T>::mma(acc_s[mt][2 * np + 1], a[mt], b[2], b[3]);
        }
      }
    }
  }

  // acc_o += P V: P is the A operand straight from registers (one 16x16 fragment per 16 keys and
  // row tile); each V fragment feeds all row tiles.
  static __device__ __forceinline__ void gemm_pv(float (&acc_o)[kMTiles][kOTiles][4],
                                                 const uint32_t (&p)[kMTiles][kBlockN / 16][4],
                                                 uint32_t v_addr) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
#pragma unroll
      for (int dp = 0; dp < kHeadDim / 16; ++dp) {
        uint32_t b[4];
        ldsm_x4_trans(b, Layout::chunk_pair(v_addr, dp) + 2u * (kk * 16 * kPitch));
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Elt<T>::mma(acc_o[mt][2 * dp], p[mt][kk], b[0], b[1]);
          Elt<T>::mma(acc_o[mt][2 * dp + 1], p[mt][kk], b[2], b[3]);
        }
      }
    }
  }
};

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
