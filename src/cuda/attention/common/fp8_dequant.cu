// fk_attention_fp8_forward on the CUDA backend (core/cuda_runtime.h): e4m3fn q, k, v times their
// per-(sequence, kv-head) descale factors, rounded once to bf16 into scratch, then the bf16
// attention kernels. One pass per tensor, memory-bound: 1 byte read and 2 written per element.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda_runtime.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace {

// One fp8 tensor of the call, (rows, heads, head_dim) with head_dim contiguous; the copy is
// contiguous in the same order.
struct DequantArgs {
  const uint8_t* src;
  __nv_bfloat16* dst;
  int64_t rows;          // total rows (batched: batch * seqlen)
  int64_t seqlen;        // batched: rows per sequence; varlen: unused
  const int32_t* cu;     // varlen: (batch + 1,) row offsets, else nullptr
  int64_t batch;
  int64_t heads;         // heads of this tensor
  int64_t group;         // heads per descale column (q: nheads / nheads_k; k, v: 1)
  int64_t head_dim;
  int64_t batch_stride, row_stride, head_stride;  // of src, elements (batch_stride: batched)
  const float* descale;  // nullptr: 1
  int64_t descale_batch_stride, descale_head_stride;
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

// Each thread converts kVec consecutive elements of one (row, head) vector.
template <int kVec>
__global__ void dequant_kernel(DequantArgs a) {
  const int64_t chunks = a.head_dim / kVec;
  const int64_t total = a.rows * a.heads * chunks;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % chunks;
    const int64_t rh = i / chunks;
    const int64_t h = rh % a.heads;
    const int64_t r = rh / a.heads;
    int64_t b, src_off;
    if (a.cu) {
      b = sequence_of(a.cu, a.batch, r);
      src_off = r * a.row_stride;
    } else {
      b = r / a.seqlen;
      src_off = b * a.batch_stride + (r - b * a.seqlen) * a.row_stride;
    }
    src_off += h * a.head_stride + c * kVec;
    const float scale =
        a.descale ? a.descale[b * a.descale_batch_stride + (h / a.group) * a.descale_head_stride]
                  : 1.0f;
    __nv_bfloat16* dst = a.dst + (r * a.heads + h) * a.head_dim + c * kVec;
    if constexpr (kVec == 8) {
      const uint2 raw = *reinterpret_cast<const uint2*>(a.src + src_off);
      const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&raw);
      __align__(16) __nv_bfloat16 out[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) out[e] = __float2bfloat16_rn(e4m3_to_float(bytes[e]) * scale);
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(out);
    } else {
      dst[0] = __float2bfloat16_rn(e4m3_to_float(a.src[src_off]) * scale);
    }
  }
}

fk_status_t launch_dequant(const DequantArgs& a, cudaStream_t stream, const char* what) {
  if (a.rows == 0 || a.heads == 0 || a.head_dim == 0) return FK_SUCCESS;
  // 8 elements per thread when every vector start is 8-byte aligned in the source (the copy's
  // starts are 16-byte aligned then: 256-byte aligned scratch, head_dim a multiple of 8).
  const bool vec = a.head_dim % 8 == 0 && reinterpret_cast<uintptr_t>(a.src) % 8 == 0 &&
                   a.row_stride % 8 == 0 && a.head_stride % 8 == 0 &&
                   (a.cu || a.batch_stride % 8 == 0);
  const int64_t per_thread = vec ? 8 : 1;
  const int64_t work = a.rows * a.heads * (a.head_dim / per_thread);
  const int64_t blocks = (work + 255) / 256;
  const unsigned grid = grid_for(blocks < 4096 * 132 ? blocks : 4096 * 132);
  if (vec) {
    dequant_kernel<8><<<grid, 256, 0, stream>>>(a);
  } else {
    dequant_kernel<1><<<grid, 256, 0, stream>>>(a);
  }
  return check_launch(what);
}

}  // namespace

fk_status_t attention_fp8_dequant_run(const ExecContext& exec, const AttentionProblem& p,
                                      const AttentionFp8Descales& d, AttentionInnerRun run_inner,
                                      void* user) {
  DeviceGuard guard(exec.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  const int64_t nq = p.total_q * p.nheads * p.head_dim;
  const int64_t nk = p.total_k * p.nheads_k * p.head_dim;
  ScratchArena arena(exec);
  void *q = nullptr, *k = nullptr, *v = nullptr;
  FK_RETURN_IF_ERROR(arena.alloc(size_t(nq) * 2, &q, "attention fp8: bf16 copy of q"));
  FK_RETURN_IF_ERROR(arena.alloc(size_t(nk) * 2, &k, "attention fp8: bf16 copy of k"));
  FK_RETURN_IF_ERROR(arena.alloc(size_t(nk) * 2, &v, "attention fp8: bf16 copy of v"));
  cudaStream_t stream = static_cast<cudaStream_t>(exec.stream);

  const int64_t group = p.nheads_k > 0 ? p.nheads / p.nheads_k : 1;
  const void* src[3] = {p.q, p.k, p.v};
  void* dst[3] = {q, k, v};
  const int64_t rows[3] = {p.total_q, p.total_k, p.total_k};
  const int64_t seqlen[3] = {p.seqlen_q, p.seqlen_k, p.seqlen_k};
  const int32_t* cu[3] = {p.cu_seqlens_q, p.cu_seqlens_k, p.cu_seqlens_k};
  const int64_t heads[3] = {p.nheads, p.nheads_k, p.nheads_k};
  const int64_t groups[3] = {group, 1, 1};
  const int64_t bs[3] = {p.q_batch_stride, p.k_batch_stride, p.v_batch_stride};
  const int64_t rs[3] = {p.q_row_stride, p.k_row_stride, p.v_row_stride};
  const int64_t hs[3] = {p.q_head_stride, p.k_head_stride, p.v_head_stride};
  const char* what[3] = {"attention fp8: dequantise q", "attention fp8: dequantise k",
                         "attention fp8: dequantise v"};
  for (int t = 0; t < 3; ++t) {
    DequantArgs a{};
    a.src = static_cast<const uint8_t*>(src[t]);
    a.dst = static_cast<__nv_bfloat16*>(dst[t]);
    a.rows = rows[t];
    a.seqlen = seqlen[t] > 0 ? seqlen[t] : 1;
    a.cu = p.varlen ? cu[t] : nullptr;
    a.batch = p.batch;
    a.heads = heads[t];
    a.group = groups[t] > 0 ? groups[t] : 1;
    a.head_dim = p.head_dim;
    a.batch_stride = bs[t];
    a.row_stride = rs[t];
    a.head_stride = hs[t];
    a.descale = d.ptr[t];
    a.descale_batch_stride = d.batch_stride[t];
    a.descale_head_stride = d.head_stride[t];
    FK_RETURN_IF_ERROR(launch_dequant(a, stream, what[t]));
  }

  AttentionProblem inner = attention_fp8_inner(p, q, k, v);
  ExecContext inner_exec = exec;
  inner_exec.workspace = arena.workspace_next();
  inner_exec.workspace_bytes = arena.workspace_left();
  return run_inner(inner_exec, inner, user);
}

}  // namespace cuda
}  // namespace flashkit
