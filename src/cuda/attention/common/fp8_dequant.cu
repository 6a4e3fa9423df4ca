// fk_attention_fp8_forward on the CUDA backend (core/cuda_runtime.h): e4m3fn q, k, v times their
// per-(sequence, kv-head) descale factors, rounded once to bf16 into scratch, then the bf16
// attention kernels. One pass per tensor, memory-bound: 1 byte read and 2 written per element.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/attention_fp8.h"
#include "core/cuda_runtime.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace {

// One of q, k, v (core/attention_fp8.h) and where its bf16 copy goes.
struct DequantArgs : Fp8Operand {
  __nv_bfloat16* dst;
};

__device__ __forceinline__ float e4m3_to_float(uint8_t v) {
  const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(v), __NV_E4M3);
  return __half2float(__half(h));
}

// Sequence of packed row r: the last b with cu[b] <= r, clamped to [0, batch - 1] (entries of a
// device-resident cu_seqlens are not always checked on the host; clamping keeps reads in bounds).
__device__ __forceinline__ int64_t sequence_of(const int32_t* cu, int64_t batch, int64_t r) {
  int64_t lo = 0, hi = batch;  // invariant: answer in [lo, hi)
  while (hi - lo > 1) {
    const int64_t mid = (lo + hi) / 2;
    if (static_cast<int64_t>(cu[mid]) <= r) lo = mid; else hi = mid;
  }
  return lo;
}

// Converts 2 codes at a time: fp8x2 -> half2 (exact) -> float2, times the factor, then RNE to
// bf16 (the same arithmetic as one at a time: every step but the last two is exact).
__device__ __forceinline__ __nv_bfloat162 dequant2(uint16_t pair, float scale) {
  const __half2_raw h2 =
      __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair), __NV_E4M3);
  float2 f = __half22float2(__half2(h2));
  f.x *= scale;
  f.y *= scale;
  return __float22bfloat162_rn(f);
}

// Each thread converts kVec consecutive elements of one (row, head) vector. Index: the type of
// the flat chunk index (32-bit when the chunk count fits: the divisions below are the kernel's
// main cost after the memory traffic).
template <int kVec, class Index>
__global__ void __launch_bounds__(256) dequant_kernel(DequantArgs a) {
  const Index chunks = static_cast<Index>(a.head_dim / kVec);
  const Index heads = static_cast<Index>(a.heads);
  const Index total = static_cast<Index>(a.rows) * heads * chunks;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index c = i % chunks;
    const Index rh = i / chunks;
    const Index h = rh % heads;
    const Index r = rh / heads;
    int64_t b, src_off;
    if (a.cu) {
      b = sequence_of(a.cu, a.batch, r);
      src_off = int64_t(r) * a.row_stride;
    } else {
      b = int64_t(r) / a.seqlen;
      src_off = b * a.batch_stride + (int64_t(r) - b * a.seqlen) * a.row_stride;
    }
    src_off += int64_t(h) * a.head_stride + int64_t(c) * kVec;
    const float scale =
        a.descale ? a.descale[b * a.descale_batch_stride + (h / a.group) * a.descale_head_stride]
                  : 1.0f;
    __nv_bfloat16* dst = a.dst + (int64_t(r) * a.heads + h) * a.head_dim + int64_t(c) * kVec;
    if constexpr (kVec == 16) {
      const uint4 raw = *reinterpret_cast<const uint4*>(a.src + src_off);
      const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
      __align__(16) __nv_bfloat162 out[8];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        out[2 * e] = dequant2(static_cast<uint16_t>(w[e] & 0xFFFFu), scale);
        out[2 * e + 1] = dequant2(static_cast<uint16_t>(w[e] >> 16), scale);
      }
      reinterpret_cast<uint4*>(dst)[0] = reinterpret_cast<const uint4*>(out)[0];
      reinterpret_cast<uint4*>(dst)[1] = reinterpret_cast<const uint4*>(out)[1];
    } else if constexpr (kVec == 8) {
      const uint2 raw = *reinterpret_cast<const uint2*>(a.src + src_off);
      const uint32_t w[2] = {raw.x, raw.y};
      __align__(16) __nv_bfloat162 out[4];
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        out[2 * e] = dequant2(static_cast<uint16_t>(w[e] & 0xFFFFu), scale);
        out[2 * e + 1] = dequant2(static_cast<uint16_t>(w[e] >> 16), scale);
      }
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else {
      dst[0] = __float2bfloat16_rn(e4m3_to_float(a.src[src_off]) * scale);
    }
  }
}

// True when every vector start of `a`'s source is `bytes`-aligned (head_dim then a multiple
// of `bytes` too, so the copy's starts are 2 * bytes-aligned: 256-byte aligned scratch).
bool aligned_to(const DequantArgs& a, int64_t bytes) {
  return a.head_dim % bytes == 0 && reinterpret_cast<uintptr_t>(a.src) % bytes == 0 &&
         a.row_stride % bytes == 0 && a.head_stride % bytes == 0 &&
         (a.cu || a.batch_stride % bytes == 0);
}

template <int kVec>
void launch_vec(const DequantArgs& a, cudaStream_t stream) {
  const int64_t work = a.rows * a.heads * (a.head_dim / kVec);
  const int64_t blocks = (work + 255) / 256;
  const unsigned grid = grid_for(blocks < 4096 * 132 ? blocks : 4096 * 132);
  if (work < (int64_t(1) << 31)) {
    dequant_kernel<kVec, uint32_t><<<grid, 256, 0, stream>>>(a);
  } else {
    dequant_kernel<kVec, int64_t><<<grid, 256, 0, stream>>>(a);
  }
}

fk_status_t launch_dequant(const DequantArgs& a, cudaStream_t stream, const char* what) {
  if (a.rows == 0 || a.heads == 0 || a.head_dim == 0) return FK_SUCCESS;
  if (aligned_to(a, 16)) {
    launch_vec<16>(a, stream);
  } else if (aligned_to(a, 8)) {
    launch_vec<8>(a, stream);
  } else {
    launch_vec<1>(a, stream);
  }
  return check_launch(what);
}

}  // namespace

fk_status_t attention_fp8_dequant_run(const ExecContext& exec, const AttentionProblem& p,
                                      const AttentionFp8Descales& d, AttentionInnerRun run_inner,
                                      void* user) {
  DeviceGuard guard(exec.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  DequantArgs ops[3];
  for (int t = 0; t < 3; ++t) static_cast<Fp8Operand&>(ops[t]) = attention_fp8_operand(p, d, t);
  const int64_t nq = ops[0].elements(), nk = ops[1].elements();
  ScratchArena arena(exec);
  void *q = nullptr, *k = nullptr, *v = nullptr;
  // Sizes below 2^62 bytes (checked by the API layer). No keys: no k and v copies (a 0-byte
  // request would still take a scratch unit that fk_attention_fp8_workspace_size does not count).
  FK_RETURN_IF_ERROR(arena.alloc(size_t(nq) * 2, &q, "attention fp8: bf16 copy of q"));
  if (nk > 0) {
    FK_RETURN_IF_ERROR(arena.alloc(size_t(nk) * 2, &k, "attention fp8: bf16 copy of k"));
    FK_RETURN_IF_ERROR(arena.alloc(size_t(nk) * 2, &v, "attention fp8: bf16 copy of v"));
  }
  cudaStream_t stream = static_cast<cudaStream_t>(exec.stream);

  void* dst[3] = {q, k, v};
  const char* what[3] = {"attention fp8: dequantise q", "attention fp8: dequantise k",
                         "attention fp8: dequantise v"};
  for (int t = 0; t < 3; ++t) {
    ops[t].dst = static_cast<__nv_bfloat16*>(dst[t]);
    FK_RETURN_IF_ERROR(launch_dequant(ops[t], stream, what[t]));
  }

  AttentionProblem inner = attention_fp8_inner(p, q, k, v);
  ExecContext inner_exec = exec;
  inner_exec.workspace = arena.workspace_next();
  inner_exec.workspace_bytes = arena.workspace_left();
  return run_inner(inner_exec, inner, user);
}

}  // namespace cuda
}  // namespace flashkit
