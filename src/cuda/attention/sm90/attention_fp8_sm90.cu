// fk_attention_fp8_forward on Hopper's fp8 tensor cores ("cuda.sm90.attention_fp8"):
// FlashAttention-3's FP8 forward (Shah et al. 2024, Section 3.3) on the Hopper attention kernel
// (kernel.cuh) instantiated for e4m3.
//
// wgmma reads 8-bit operands K-major only. Q and K are K-major as they come (head_dim
// contiguous), so the copy engine reads them from the caller's tensors. V is not: O = P V sums
// over the keys, which V holds along rows, so the P V GEMM reads V^T, with the keys of each
// group of 16 in the order in which the kernel's P fragment holds them (softmax.cuh,
// convert_fragment_fp8; vt_key below), so that P goes from the S accumulators to the A operand
// without moving values between threads. Where V^T comes from:
//   head_dim 128, and head_dim 256 where few query rows read each key (kFp8VtInKernelMaxReads,
//     launch.h; attention_sm90.cpp, fp8_vt_in_kernel): as FA3
//     does, the kernel transposes V tiles in shared memory (mainloop.cuh, kVtInSmem and
//     transpose_v_tile): the copy engine loads each tile as it is, and three warps of the
//     producer warpgroup write it transposed into the ring the P V GEMM reads. A v outside the
//     copy engine's 16-byte rule is first copied into a contiguous scratch. (0.7.0 used the
//     pass below here too: 11-21% of the call at 512 keys.)
//   head_dim 256 otherwise: one pass before the kernel writes V^T (batch, nheads_k,
//     head_dim, keys) into scratch (1 byte read and 1 written per element of v), and the
//     kernel's copy engine reads that; the in-kernel transposition measured 5-24% slower there
//     from 2k keys on (session 44, RESULTS.md "head_dim 256: V transposed in shared memory
//     where few query rows read each key").
// P is rounded to e4m3 (as FA3 does); the row sums use the unrounded fp32 P. S is scaled by
// softmax_scale x descale_q x descale_k and O by descale_v, per (sequence, kv head).
//
// What it takes: attention_sm90.cpp, attention_fp8_supported (batched, head_dim 128 or 256, no
// softcap, softmax_scale > 0; tiles and stages: launch.h, fp8_block_n). Everything else runs
// the dequantise-then-bf16 path ("<bf16 variant>+fp8_dequant", fp8_dequant.cu).
#include "cuda/attention/sm90/launch.cuh"

#include <cstdint>
#include <type_traits>

#include "cuda/attention/sm90/attention_sm90.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {
namespace {

// The key whose V row goes to position e (0..15) of its group of 16 in V^T: the P fragment's
// k position 4 t + j holds key 8 (j / 2) + 2 t + j % 2 (softmax.cuh, convert_fragment_fp8).
__host__ __device__ constexpr int vt_key(int e) { return 8 * ((e % 4) / 2) + 2 * (e / 4) + e % 2; }

// V (batch, seqlen_k, nheads_k, D) e4m3 codes, any strides -> V^T (batch, nheads_k, D, keys)
// with keys past seqlen_k zero. One block per 64 keys of one (sequence, kv head): 64 rows of D
// bytes into shared memory, then D rows of 64 bytes out, permuted per group of 16.
struct TransposeArgs {
  const uint8_t* v;
  uint8_t* vt;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t seqlen_k, keys, nheads_k;
};

template <int kD, bool kVec>
__global__ void __launch_bounds__(256) vt_kernel(TransposeArgs a) {
  constexpr int kKeys = 64, kPitch = kD + 16;
  __shared__ __align__(16) uint8_t tile[kKeys * kPitch];
  const int64_t key0 = int64_t(blockIdx.x) * kKeys;
  const int64_t hk = blockIdx.y, b = blockIdx.z;
  const uint8_t* src = a.v + b * a.v_batch_stride + hk * a.v_head_stride;
  if constexpr (kVec) {
    for (int c = threadIdx.x; c < kKeys * kD / 16; c += 256) {
      const int r = c / (kD / 16), col = c % (kD / 16) * 16;
      const int64_t key = key0 + r;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);
      if (key < a.seqlen_k) val = *reinterpret_cast<const uint4*>(src + key * a.v_row_stride + col);
      *reinterpret_cast<uint4*>(tile + r * kPitch + col) = val;
    }
  } else {
    for (int c = threadIdx.x; c < kKeys * kD; c += 256) {
      const int r = c / kD, col = c % kD;
      const int64_t key = key0 + r;
      tile[r * kPitch + col] = key < a.seqlen_k ? src[key * a.v_row_stride + col] : uint8_t(0);
    }
  }
  __syncthreads();
  uint8_t* dst = a.vt + (b * a.nheads_k + hk) * kD * a.keys;
  for (int c = threadIdx.x; c < kD * kKeys / 16; c += 256) {
    const int d = c / (kKeys / 16), g = c % (kKeys / 16) * 16;  // row of V^T, first position
    if (key0 + g >= a.keys) continue;
    uint32_t w[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      uint32_t x = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) x |= uint32_t(tile[(g + vt_key(4 * q + e)) * kPitch + d]) << (8 * e);
      w[q] = x;
    }
    *reinterpret_cast<uint4*>(dst + int64_t(d) * a.keys + key0 + g) = make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// v (batch, seqlen_k, nheads_k, D) e4m3 codes, any strides -> a contiguous copy (batch,
// seqlen_k, nheads_k, D) at a.vt that the copy engine can read (a.keys unused). One block per 64
// keys of one (sequence, kv head).
template <int kD>
__global__ void __launch_bounds__(256) v_copy_kernel(TransposeArgs a) {
  const int64_t key0 = int64_t(blockIdx.x) * 64;
  const int64_t hk = blockIdx.y, b = blockIdx.z;
  const uint8_t* src = a.v + b * a.v_batch_stride + hk * a.v_head_stride;
  uint8_t* dst = a.vt + ((b * a.seqlen_k) * a.nheads_k + hk) * kD;
  for (int c = threadIdx.x; c < 64 * kD; c += 256) {
    const int64_t key = key0 + c / kD;
    if (key < a.seqlen_k) dst[key * a.nheads_k * kD + c % kD] = src[key * a.v_row_stride + c % kD];
  }
}

}  // namespace

fk_status_t attention_fp8(const ExecContext& ctx, const AttentionProblem& p,
                          const AttentionFp8Descales& d) {
  if (!attention_fp8_supported(*ctx.caps, p)) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.attention_fp8: problem outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  ScratchArena arena(ctx);  // lives until the kernel is enqueued
  AttnArgs a = build_args(ctx, p);  // q, k, v as given (1-byte elements)
  int32_t vt_keys = 0;
  // v as the caller gave it, for either pass below (its destination set there).
  TransposeArgs t;
  t.v = static_cast<const uint8_t*>(p.v);
  t.vt = nullptr;
  t.v_batch_stride = p.v_batch_stride;
  t.v_row_stride = p.v_row_stride;
  t.v_head_stride = p.v_head_stride;
  t.seqlen_k = p.seqlen_k;
  t.keys = fp8_vt_keys(p.seqlen_k);
  t.nheads_k = p.nheads_k;
  const bool in_kernel = fp8_vt_in_kernel(p);
  if (!in_kernel) {  // head_dim 256, many reads per key: V^T written by a pass first
    void* vt = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(size_t(fp8_vt_bytes(p.batch, p.nheads_k, p.head_dim, p.seqlen_k)),
                                   &vt, "attention fp8: V^T copy"));
    t.vt = static_cast<uint8_t*>(vt);
    const dim3 grid(unsigned((t.keys + 63) / 64), unsigned(p.nheads_k), unsigned(p.batch));
    if (fp8_v_direct(p)) {  // 16-byte rows: the pass reads them 16 bytes at a time
      vt_kernel<256, true><<<grid, 256, 0, stream>>>(t);
    } else {
      vt_kernel<256, false><<<grid, 256, 0, stream>>>(t);
    }
    FK_RETURN_IF_ERROR(check_launch("cuda.sm90.attention_fp8: V transpose"));
    vt_keys = int32_t(t.keys);
    a.v = vt;
    a.v_row_stride = t.keys;  // between head_dim rows of V^T
    a.v_head_stride = p.head_dim * t.keys;
    a.v_batch_stride = int64_t(p.nheads_k) * p.head_dim * t.keys;
  } else if (!fp8_v_direct(p)) {  // transposed in the kernel, v off the 16-byte rule: copied first
    void* copy = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(size_t(fp8_v_copy_bytes(p.batch, p.nheads_k, p.head_dim, p.seqlen_k)),
                                   &copy, "attention fp8: contiguous copy of v"));
    t.vt = static_cast<uint8_t*>(copy);
    const dim3 grid(unsigned((p.seqlen_k + 63) / 64), unsigned(p.nheads_k), unsigned(p.batch));
    if (p.head_dim == 256) {
      v_copy_kernel<256><<<grid, 256, 0, stream>>>(t);
    } else {
      v_copy_kernel<128><<<grid, 256, 0, stream>>>(t);
    }
    FK_RETURN_IF_ERROR(check_launch("cuda.sm90.attention_fp8: copy of v"));
    a.v = copy;
    a.v_row_stride = tma_stride(int64_t(p.nheads_k) * p.head_dim, p.seqlen_k, 1);
    a.v_head_stride = tma_stride(p.head_dim, p.nheads_k, 1);
    a.v_batch_stride = tma_stride(p.seqlen_k * int64_t(p.nheads_k) * p.head_dim, p.batch, 1);
  }
  a.o_tma = 0;
  // build_args gives 128-row tiles at head_dim 128 and 256 (192-row ones only at 64). Three
  // consumer warpgroups over 64-key fp8 tiles at head_dim 128 measured 1-22% slower (session 41).
  if (a.block_m != kBlockM) return set_error(FK_ERROR_INTERNAL, "cuda.sm90.attention_fp8: tile height");
  // build_args packs GQA heads for 16-bit calls only (the fp8 kernel has no packed form).
  if (a.q_pack != 1) return set_error(FK_ERROR_INTERNAL, "cuda.sm90.attention_fp8: packed GQA tile");
  const Fp8Launch f{d, vt_keys};
  if (p.head_dim == 256 && in_kernel)
    return launch_kernel<cute::float_e4m3_t, 256, fp8_block_n(256), false, kBlockM, kFp8Stages>(
        a, stream, &f);
  if (p.head_dim == 256)
    return launch_kernel<cute::float_e4m3_t, 256, fp8_block_n(256), false, kBlockM, kFp8Stages, false>(
        a, stream, &f);
  return launch_kernel<cute::float_e4m3_t, 128, fp8_block_n(128), false, kBlockM, kFp8Stages>(
      a, stream, &f);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
