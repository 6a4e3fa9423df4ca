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
// 10-20% slower than 128 x 64; head_dim 256 at 64 x 64 with 4 warps was within 5% of 128 x 64.
#pragma once

#include <cstddef>

namespace flashkit {
namespace cuda {
namespace sm80 {

template <int kHeadDim>
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
// each), every row padded by 8 elements (16 bytes) so that the 8 row addresses of an ldmatrix
// phase fall in 8 different 16-byte bank groups (row pitch = an odd number of 16-byte chunks).
template <int kHeadDim>
struct SmemLayout {
  static constexpr int kPitch = kHeadDim + 8;  // elements per row
  static constexpr int kQElems = TileShape<kHeadDim>::kBlockM * kPitch;
  static constexpr int kKVElems = TileShape<kHeadDim>::kBlockN * kPitch;
  static constexpr size_t kBytes = sizeof(unsigned short) * (kQElems + 2 * kKVElems);
  // The packed varlen kernel adds each query row's visible key range (two int32) after V.
  static constexpr size_t kPackedBytes = kBytes + TileShape<kHeadDim>::kBlockM * 2 * sizeof(int);
};

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
