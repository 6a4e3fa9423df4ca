// Tile sizes of the sm80-class attention kernel, one row per head-dim bucket (the role of
// FlashAttention-3's tile_size.h). Any head_dim up to 256 runs in the smallest bucket that holds
// it: the loaders zero-fill the columns past head_dim, so the padded columns add nothing to
// Q K^T and produce output columns that are never stored.
//
// Shapes follow FlashAttention-2's choices for sm80/sm90 (Dao 2023, Section 3.3: split the query
// rows across warps, so that no warp needs another's partial sums): a block of kBlockM query rows
// walks key tiles of kBlockN rows; each warp owns kBlockM / kWarps rows (kMTiles MMA row tiles of
// 16). Two row tiles per warp halve the shared-memory reads per MMA (each K or V fragment loaded
// once feeds both: 128 instead of 256 bytes of ldmatrix per m16n8k16), at the price of registers
// (head_dim 128: 128 accumulator floats per thread). head_dim 256 keeps one row tile per warp and
// uses 8 warps, its accumulator alone being 128 registers.
// Measured on the H200 (benchmarks/attention.py, bf16 grid): head_dim 64 with 128 keys per tile
// beats 64 by up to 12% at short sequences; head_dim 128 at 64 x 64 (one row tile per warp) ran
// 10-20% slower than 128 x 64; head_dim 256 at 64 x 64 with 4 warps was within 5% of 128 x 64,
// and again after the swizzle below as two CTAs per SM (FlashAttention-2's shape on this GPU):
// 0.94-1.00x of 128 x 64 in the 12 head_dim 256 cells, slower in 10 (session 34, RESULTS).
#pragma once

#include <cstddef>
#include <cstdint>

namespace flashkit {
namespace cuda {
namespace sm80 {

// kKind 0: the default tiles; kKind 1 (kDecodeKind): decode tiles, below; kKind 2
// (kNarrowKind): head_dim 256 on narrow tiles, below.
constexpr int kDecodeKind = 1;
constexpr int kNarrowKind = 2;

template <int kHeadDim, int kKind = 0>
struct TileShape;  // kBlockM, kBlockN, kWarps per head-dim bucket

template <>
struct TileShape<64> {
  static constexpr int kBlockM = 128, kBlockN = 128, kWarps = 4;
};
template <>
struct TileShape<96> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 4;
};
template <>
struct TileShape<128> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 4;
};
template <>
struct TileShape<256> {
  static constexpr int kBlockM = 128, kBlockN = 64, kWarps = 8;
};

// Decode tiles (head_dim buckets 64 and 128): calls with at most 16 query rows per (sequence,
// head), i.e. decode after the GQA packing and split-KV's chunks, run one warp of 16 rows per
// block instead of four warps of 128 rows, of which a decode fills 1-16: the 128-row tile spent
// 8x the tensor-core work on empty rows, and its 68 KB of shared memory held two blocks per SM,
// each with one K/V tile in flight. A one-warp block took 39 KB (head_dim 128): five per SM,
// five tiles in flight (the 128-row tile takes 64 KB since the swizzled layout below; the
// decode tiles keep their padded 39 KB). FlashAttention-2 makes the same trade for its KV-cache kernel (small kBlockM when seqlen_q
// is 1).
template <>
struct TileShape<64, kDecodeKind> {
  static constexpr int kBlockM = 16, kBlockN = 64, kWarps = 1;
};
template <>
struct TileShape<128, kDecodeKind> {
  static constexpr int kBlockM = 16, kBlockN = 64, kWarps = 1;
};
constexpr bool decode_bucket(int bucket) { return bucket == 64 || bucket == 128; }

// Narrow tiles (head_dim bucket 256): 64 query rows on 4 warps, the same per-warp work as the
// default 128 x 64 tile on 8 warps (one 16-row MMA tile per warp), in 96 KB of shared memory
// instead of 128 KB. For GPUs whose per-block limit is 99 KB (sm_86, sm_89, sm_120, sm_121),
// where the default tile does not fit and head_dim 129-256 would otherwise run the generic
// kernel on the CUDA cores. The shape is FlashAttention-2's for head_dim 256 on those GPUs; on
// the H200 it ran correct and 0.94-1.00x of the default tile (session 34, branch a80t256, as
// the only head_dim-256 tile; RESULTS), so it is used only where the default does not fit
// (FLASHKIT_SM80_ATTENTION_NARROW=1 forces it, for tests).
template <>
struct TileShape<256, kNarrowKind> {
  static constexpr int kBlockM = 64, kBlockN = 64, kWarps = 4;
};
constexpr int kDecodeRows = 16;  // TileShape<*, kDecodeKind>::kBlockM

// The bucket a head_dim runs in (0 when none does).
inline int head_dim_bucket(long long head_dim) {
  if (head_dim < 1) return 0;
  if (head_dim <= 64) return 64;
  if (head_dim <= 96) return 96;
  if (head_dim <= 128) return 128;
  if (head_dim <= 256) return 256;
  return 0;
}

// Shared memory layout of one block: Q (kBlockM rows), one K tile and one V tile (kBlockN rows
// each). The 8 row addresses of an ldmatrix phase (8 rows, one 16-byte chunk column) must fall in
// 8 different 16-byte bank groups. Head dims that are multiples of 64 (rows of 8 k chunks, k >= 1)
// get that by an XOR swizzle, as CUTLASS's Swizzle<3, 3, 3> does: chunk c of row r is stored at
// chunk (c ^ (r % 8)) of the row (the low three bits of c change), so the rows stay unpadded and
// every 128-byte segment of a row is one aligned 128-byte segment of shared memory. The padded
// layout used before (8 elements per row) also avoided ldmatrix conflicts, but its rows started
// 16 bytes off a 128-byte boundary, and each 128-byte line that cp.async brought in then landed
// in two: Nsight Compute on the H200 (head_dim 256, seqlen 2048, bf16) counted 10.5 shared
// wavefronts per LDGSTS against 4 ideal, 14% of all shared wavefronts, and 10% of the stall
// samples waited behind those copies. Swizzled: head_dim 256 +5-9% and head_dim 128 +3-7% on
// every cell of the forced bf16 grid, head_dim 64 unchanged (benchmarks/RESULTS.md,
// "Shared-memory swizzle in the sm80-class kernel"). head_dim 96 (12 chunks, not a multiple of
// 8) keeps the padding.
// The decode tiles (kDecodeKind: one warp, 16 rows, memory-bound) keep the padding too: their
// copies step by 2 or 4 rows, so the swizzle phase changes from one 16-byte copy of a thread to
// the next, and swizzled they were 5.0-7.9% slower on five of eight decode rows and 2-7% faster
// on three (RESULTS, same entry).
// The tile bases are 128-byte aligned (every tile is a multiple of 128 bytes and the dynamic
// shared memory starts aligned), which the ldmatrix address steps below rely on.
template <int kHeadDim, int kKind = 0>
struct SmemLayout {
  // Not for the decode tiles (see above).
  static constexpr bool kSwizzle = kHeadDim % 64 == 0 && kKind != kDecodeKind;
  static constexpr int kPitch = kSwizzle ? kHeadDim : kHeadDim + 8;  // elements per row
  static constexpr int kQElems = TileShape<kHeadDim, kKind>::kBlockM * kPitch;
  static constexpr int kKVElems = TileShape<kHeadDim, kKind>::kBlockN * kPitch;
  static constexpr size_t kBytes = sizeof(unsigned short) * (kQElems + 2 * kKVElems);
  // The packed varlen kernel adds each query row's visible key range (two int32) after V.
  static constexpr size_t kPackedBytes =
      kBytes + TileShape<kHeadDim, kKind>::kBlockM * 2 * sizeof(int);
  static_assert(!kSwizzle || (kPitch * 2) % 128 == 0, "swizzled rows are whole 128-byte lines");
  static_assert((kQElems * 2) % 128 == 0 && (kKVElems * 2) % 128 == 0, "128-byte tile bases");

#ifdef __CUDACC__
  // Element offset of (row, col) inside a tile.
  static __device__ __forceinline__ constexpr int offset(int row, int col) {
    return kSwizzle ? row * kPitch + ((((col >> 3) ^ (row & 7)) << 3) | (col & 7))
                    : row * kPitch + col;
  }
  // Byte address of 16-byte chunk `step * 2` past the lane's ldmatrix address `lane_addr`
  // (which points at its chunk 0 or 1 of some row; step is a compile-time loop index): with the
  // swizzle, chunk 2 step + c of row r sits at chunk ((2 step + c) ^ (r % 8)), which is the
  // lane's own chunk XOR 2 (step % 4), plus 8 chunks per 4 steps.
  static __device__ __forceinline__ uint32_t chunk_pair(uint32_t lane_addr, int step) {
    return kSwizzle ? (lane_addr ^ static_cast<uint32_t>((step & 3) << 5)) +
                          static_cast<uint32_t>((step >> 2) << 7)
                    : lane_addr + static_cast<uint32_t>(step * 32);
  }
#endif
};

inline int block_n_for_bucket(int bucket) {
  switch (bucket) {
    case 64: return TileShape<64>::kBlockN;
    case 96: return TileShape<96>::kBlockN;
    case 128: return TileShape<128>::kBlockN;
    case 256: return TileShape<256>::kBlockN;
    default: return 0;
  }
}

inline int block_m_for_bucket(int bucket) {
  switch (bucket) {
    case 64: return TileShape<64>::kBlockM;
    case 96: return TileShape<96>::kBlockM;
    case 128: return TileShape<128>::kBlockM;
    case 256: return TileShape<256>::kBlockM;
    default: return 0;
  }
}

// The packed varlen kernel (kernel.cuh, kPacked) is instantiated for the buckets 64 and 128
// only (compile time); attention_packed_supported declines the others.
constexpr bool packed_bucket(int bucket) { return bucket == 64 || bucket == 128; }

inline size_t packed_smem_bytes_for_bucket(int bucket) {
  switch (bucket) {
    case 64: return SmemLayout<64>::kPackedBytes;
    case 128: return SmemLayout<128>::kPackedBytes;
    default: return 0;
  }
}

// The narrow tiles exist for the 99 KB opt-in limit (101376 bytes: sm_86, sm_89, sm_120, sm_121)
// that the default head_dim-256 tile exceeds.
static_assert(SmemLayout<256, kNarrowKind>::kBytes <= 101376, "narrow tiles fit 99 KB per block");
static_assert(SmemLayout<256>::kBytes > 101376, "the default head_dim-256 tile needs more");

inline size_t smem_bytes_for_bucket(int bucket) {
  switch (bucket) {
    case 64: return SmemLayout<64>::kBytes;
    case 96: return SmemLayout<96>::kBytes;
    case 128: return SmemLayout<128>::kBytes;
    case 256: return SmemLayout<256>::kBytes;
    default: return 0;
  }
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
