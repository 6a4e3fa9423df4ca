// Epilogue of the Hopper attention kernel: each consumer thread writes its normalised output
// fragment (two rows, two adjacent columns per 8-column group) straight to global memory,
// rounded to the input type, as 16-byte writes after a transpose across the quad (o_wide) or
// as 4-byte pairs, and its rows' LSE (one thread per quad). Rows past
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

// The LSE of the thread's two rows (one thread per quad writes them); arguments as for
// store_output below.
template <bool kPacked = false>
__device__ __forceinline__ void store_lse(const AttnArgs& a, const float (&lse)[2], int32_t b,
                                          int32_t h, int32_t m0, int row0, int t,
                                          int32_t seq_row0, int32_t len_q) {
  if (a.lse == nullptr || t != 0) return;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    int seq_row = m0 + row0 + 8 * r;
    int32_t head = h;
    if constexpr (kPacked) {
      const QPackRow pr = qpack_row(a, row0 + 8 * r);
      seq_row = m0 + pr.row;
      head = h * a.q_pack + pr.head;
    }
    if (seq_row >= len_q) continue;
    a.lse[int64_t(b) * a.lse_batch_stride + int64_t(head) * a.lse_head_stride +
          (int64_t(seq_row0) + seq_row) * a.lse_row_stride] = lse[r];
  }
}

// Wide stores (AttnArgs::o_wide): the four threads of a quad hold the four column pairs of each
// 8-column group; a 4 x 4 transpose across the quad (two rounds of two shuffles) gives thread t
// all eight columns of group 4 q + t, stored as one 16-byte write. A warp's store then covers 64
// contiguous bytes of each of its 8 rows (two whole 32-byte sectors where rows start on a
// 32-byte boundary) instead of 16, in a quarter
// as many instructions. Every lane runs the shuffles; only the stores are predicated.
// v[k]: thread t's pair of group 4 q + k; returns, in w[s], thread s's pair of group 4 q + t.
__device__ __forceinline__ void quad_transpose(const uint32_t (&v)[4], uint32_t (&w)[4], int t) {
  const bool b = (t & 1) != 0;
  const uint32_t r0 = __shfl_xor_sync(0xffffffffu, b ? v[0] : v[1], 1);
  const uint32_t r1 = __shfl_xor_sync(0xffffffffu, b ? v[2] : v[3], 1);
  // u[p] holds the pair of (thread s, group k) with p = s0 | k1 << 1 and k0 = t0, s1 = t1.
  const uint32_t u0 = b ? r0 : v[0], u1 = b ? v[1] : r0;
  const uint32_t u2 = b ? r1 : v[2], u3 = b ? v[3] : r1;
  const bool c = (t & 2) != 0;
  const uint32_t q0 = __shfl_xor_sync(0xffffffffu, c ? u0 : u2, 2);
  const uint32_t q1 = __shfl_xor_sync(0xffffffffu, c ? u1 : u3, 2);
  w[0] = c ? q0 : u0;
  w[1] = c ? q1 : u1;
  w[2] = c ? u2 : q0;
  w[3] = c ? u3 : q1;
}

// o: the thread's fragment of the 128 x head_dim output tile (flat index c + 2 r + 4 j);
// row0: the tile row of the thread's r = 0 row; t: the thread's index in its quad.
// seq_row0 / len_q: the sequence's first row in the (packed, under varlen) output and its length.
// kPacked: tile rows mapped to (head, row) by qpack_row (the KV-cache instantiation, which
// runs packed GQA tiles: launch.h, q_pack).
template <class Element, bool kPacked = false, class TO>
__device__ __forceinline__ void store_output(const AttnArgs& a, const TO& o, const float (&lse)[2],
                                             int32_t b, int32_t h, int32_t m0, int row0, int t,
                                             int32_t seq_row0, int32_t len_q) {
  Element* const out_h = static_cast<Element*>(a.out) + int64_t(b) * a.o_batch_stride +
                        int64_t(kPacked ? h * a.q_pack : h) * a.o_head_stride;
  constexpr int kGroups = decltype(cute::size(o))::value / 4;  // 8-column groups: head_dim / 8
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r) {
    int seq_row = m0 + row0 + 8 * r;
    Element* out = out_h;
    if constexpr (kPacked) {
      const QPackRow pr = qpack_row(a, row0 + 8 * r);
      seq_row = m0 + pr.row;
      out += int64_t(pr.head) * a.o_head_stride;
    }
    const bool in_seq = seq_row < len_q;
    const int64_t row = int64_t(seq_row0) + seq_row;
    if (a.o_wide) {
      static_assert(kGroups % 4 == 0, "wide stores transpose whole quads of 8-column groups");
      Element* dst = out + row * a.o_row_stride + 8 * t;
      CUTE_UNROLL
      for (int q = 0; q < kGroups / 4; ++q) {
        uint32_t v[4], w[4];
        CUTE_UNROLL
        for (int k = 0; k < 4; ++k) {
          const int j = 4 * q + k;
          v[k] = pack2<Element>(o(4 * j + 2 * r), o(4 * j + 2 * r + 1));
        }
        quad_transpose(v, w, t);
        // padded head_dim: the groups past it are not stored
        if (in_seq && 8 * (4 * q + t) < a.head_dim)
          *reinterpret_cast<uint4*>(dst + 32 * q) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    } else if (in_seq) {
      Element* dst = out + row * a.o_row_stride + 2 * t;
      CUTE_UNROLL
      for (int j = 0; j < kGroups; ++j) {
        if (8 * j >= a.head_dim) break;  // padded head_dim: the columns past it are not stored
        *reinterpret_cast<uint32_t*>(dst + 8 * j) = pack2<Element>(o(4 * j + 2 * r), o(4 * j + 2 * r + 1));
      }
    }
  }
  store_lse<kPacked>(a, lse, b, h, m0, row0, t, seq_row0, len_q);
}

// Copy-engine output stores (AttnArgs::o_tma, kernel.cuh): the thread's fragment, rounded to
// the input type, into its warpgroup's 64-row staging tile sO (the swizzled layout the copy
// engine reads; two adjacent columns share a 16-byte chunk, so each pair is one 4-byte store,
// and the 8 rows of a warp's store fall on 8 different chunks: no bank conflict). row: the
// thread's first row within the warpgroup's 64.
template <class Element, class TO, class SO>
__device__ __forceinline__ void stage_output(const TO& o, SO& sO, int row, int t) {
  constexpr int kGroups = decltype(cute::size(o))::value / 4;
  CUTE_UNROLL
  for (int r = 0; r < 2; ++r)
    CUTE_UNROLL
    for (int j = 0; j < kGroups; ++j)
      *reinterpret_cast<uint32_t*>(&sO(row + 8 * r, 8 * j + 2 * t)) =
          pack2<Element>(o(4 * j + 2 * r), o(4 * j + 2 * r + 1));
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
