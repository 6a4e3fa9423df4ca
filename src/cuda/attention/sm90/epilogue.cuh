// Epilogue of the Hopper attention kernel: each consumer thread writes its normalised output
// fragment (two rows, two adjacent columns per 8-column group) straight to global memory as
// 4-byte pairs, rounded to the input type, and its rows' LSE (one thread per quad). Rows past
// the end of the sequence are not written (under varlen they are the next sequence's), nor are
// the columns past a head_dim that the kernel pads (a multiple of 8 below the tile's width).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cute/tensor.hpp>

#include <cstdint>
#include <type_traits>

#include "cuda/attention/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

template <class Element>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<Element, cute::bfloat16_t>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
}

// o: the thread's fragment of the 128 x head_dim output tile (flat index c + 2 r + 4 j);
// row0: the tile row of the thread's r = 0 row; t: the thread's index in its quad.
// seq_row0 / len_q: the sequence's first row in the (packed, under varlen) output and its length.
template <class Element, class TO>
__device__ __forceinline__ void store_output(const AttnArgs& a, const TO& o, const float (&lse)[2],
                                             int32_t b, int32_t h, int32_t m0, int row0, int t,
                                             int32_t seq_row0, int32_t len_q) {
  Element* out = static_cast<Element*>(a.out) + int64_t(b) * a.o_batch_stride +
                 int64_t(h) * a.o_head_stride;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    const int seq_row = m0 + row0 + 8 * r;
    if (seq_row >= len_q) continue;
    const int64_t row = int64_t(seq_row0) + seq_row;
    Element* dst = out + row * a.o_row_stride + 2 * t;
    CUTE_UNROLL
    for (int j = 0; j < cute::size(o) / 4; ++j) {
      if (8 * j >= a.head_dim) break;  // padded head_dim: the columns past it are not stored
      *reinterpret_cast<uint32_t*>(dst + 8 * j) = pack2<Element>(o(4 * j + 2 * r), o(4 * j + 2 * r + 1));
    }
    if (a.lse != nullptr && t == 0) {
      a.lse[int64_t(b) * a.lse_batch_stride + int64_t(h) * a.lse_head_stride +
            row * a.lse_row_stride] = lse[r];
    }
  }
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
