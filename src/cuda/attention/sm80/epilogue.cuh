// Epilogue of the sm80-class attention kernel: the normalised output accumulators of a warp's
// rows are rounded to the output type, staged in shared memory (the warp's own rows of the Q
// tile, which only that warp ever read), and written to global memory as 16-byte row segments,
// so the stores are coalesced whatever head_dim is. LSE goes out one value per row.
#pragma once

#include <cstdint>

#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/attention/sm80/tile_size.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

template <class T, int kHeadDim, int kKind = 0>
struct Epilogue {
  using Layout = SmemLayout<kHeadDim, kKind>;
  static constexpr int kPitch = Layout::kPitch;
  static constexpr int kChunks = kHeadDim / 8;
  static constexpr int kOTiles = kHeadDim / 8;

  // sO: the warp's 16 kMTiles staging rows. out: global row 0 of the warp (row i at
  // out + i * row_stride). rows_valid: rows of the warp inside the sequence (may be <= 0).
  // lse_out: the warp's row 0 in the LSE tensor, or nullptr.
  template <int kMTiles>
  static __device__ __forceinline__ void store(const float (&acc_o)[kMTiles][kOTiles][4],
                                               const float (&lse)[kMTiles][2], T* sO, T* out,
                                               int64_t row_stride, int rows_valid, int head_dim,
                                               float* lse_out, int lane) {
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int dt = 0; dt < kOTiles; ++dt) {
        // Rows g and g + 8 share the swizzle (it depends on the row modulo 8).
        T* row = sO + Layout::offset(mt * 16 + g, dt * 8 + 2 * t);
        *reinterpret_cast<uint32_t*>(row) = Elt<T>::pack(acc_o[mt][dt][0], acc_o[mt][dt][1]);
        *reinterpret_cast<uint32_t*>(row + 8 * kPitch) =
            Elt<T>::pack(acc_o[mt][dt][2], acc_o[mt][dt][3]);
      }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 16 * kMTiles * kChunks / 32; ++i) {
      const int idx = lane + 32 * i;
      const int row = idx / kChunks;
      const int col = (idx % kChunks) * 8;
      if (row < rows_valid && col < head_dim) {
        const uint4 v = *reinterpret_cast<const uint4*>(sO + Layout::offset(row, col));
        T* dst = out + row * row_stride + col;
        if (col + 8 <= head_dim) {
          st_global_16(dst, v);
        } else {
          // The last, partial chunk of a head_dim that is not a multiple of 8: element j is
          // the low (even j) or high half of word j / 2 (no address taken of v, which made
          // nvcc split the whole-chunk store above).
          const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if (col + j < head_dim) {
              const unsigned short bits =
                  static_cast<unsigned short>(w[j / 2] >> (16 * (j % 2)));
              reinterpret_cast<unsigned short*>(dst)[j] = bits;
            }
          }
        }
      }
    }
    if (lse_out != nullptr && t == 0) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        if (mt * 16 + g < rows_valid) lse_out[mt * 16 + g] = lse[mt][0];
        if (mt * 16 + g + 8 < rows_valid) lse_out[mt * 16 + g + 8] = lse[mt][1];
      }
    }
  }
};

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
