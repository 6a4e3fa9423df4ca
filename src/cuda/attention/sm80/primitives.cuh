// The sm_80 instructions the attention kernel is built from, one thin wrapper each (PTX ISA 8.x,
// "Warp-level matrix instructions" and "Data movement: cp.async"): the m16n8k16 tensor-core MMA
// with fp32 accumulators, ldmatrix (four 8x8 b16 matrices per warp, optionally transposed),
// 16-byte cp.async with zero fill, and the fast base-2 exponential. All are valid on sm_80 and
// later (sm_86/89 Ampere/Ada, sm_90 Hopper, sm_100/120 Blackwell through compute_80 PTX).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace flashkit {
namespace cuda {
namespace sm80 {

// Element types: the MMA's type name and the packing of two fp32 values into one register
// (low half = first element, which is the lower column index in every fragment).
template <class T>
struct Elt;

template <>
struct Elt<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t r) {
    return __half22float2(*reinterpret_cast<__half2*>(&r));
  }
  // D = A * B + D, A 16x16 row-major (4 regs), B 16x8 column-major (2 regs), D 16x8 fp32.
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Elt<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t r) {
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&r));
  }
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i. Register i of a lane
// receives row lane/4, columns 2*(lane%4) and +1 of matrix i (transposed: column lane/4, rows
// 2*(lane%4) and +1).
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

// 16-byte global -> shared copy that bypasses L1; only `src_bytes` (0..16) are read, the rest of
// the 16 bytes are zero-filled. Both addresses are 16-byte aligned.
__device__ __forceinline__ void cp_async_16(uint32_t smem_addr, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
// The same copy of a whole 16-byte chunk, without the zero-fill operand (no predicate work).
__device__ __forceinline__ void cp_async_16_full(uint32_t smem_addr, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Commits the copies issued so far and waits for all of this thread's copies.
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// One 16-byte global store (st.global.v4.b32). Through a uint4 pointer nvcc split the epilogue's
// row-segment stores into four 4-byte STG.E (sm_90a SASS of the swizzled head-dim buckets,
// session 36), four times the store instructions and L2 write requests.
__device__ __forceinline__ void st_global_16(void* gmem, const uint4& v) {
  asm volatile("st.global.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"l"(gmem), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 2^x in one MUFU instruction (relative error ~2^-22); exp2(-inf) = 0.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
