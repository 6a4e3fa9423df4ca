// Generic CUDA Monarch multiply and block-diagonal linear (Dao et al. 2022, "Monarch",
// Section 3; m2's blockdiag_butterfly_multiply; see flashkit.h for the exact index maps).
//
// Both are batched GEMMs over the diagonal blocks, so they reuse the generic tiled GEMM
// (src/cuda/gemm/generic) with strides that express the block structure and the
// reshape-transpose permutation P; nothing is ever physically permuted:
//   blockdiag: for block i, OUT_i(t, a) = sum_c X(t, i*p + c) W(i, a, c)  [M=tokens, N=q, K=p]
//   monarch:   y1 = blockdiag(w1) x, kept in fp32 scratch (one rounding, at the output), then
//              for j < nblocks2: OUT(t, m*nblocks2 + j) = sum_b y1(t, b*nblocks2 + j) w2(j, m, b)
//              [M=tokens, N=s, K=r; the P^T read and the P write are strides nblocks2].
#include <cuda_runtime_api.h>

#include "core/backend.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"
#include "cuda/gemm/generic/gemm_generic.h"

namespace flashkit {
namespace cuda {
namespace generic {
namespace {

// out(t, i*q + a) = sum_c x(t, i*p + c) w(i, a, c) + bias(i*q + a), as a GEMM batched over i.
GemmArgs blockdiag_args(DType x_dtype, const void* x, int64_t x_row_stride, DType w_dtype,
                        const void* w, DType out_dtype, void* out, int64_t out_row_stride,
                        DType bias_dtype, const void* bias, int64_t tokens, int64_t nblocks,
                        int64_t q, int64_t p) {
  GemmArgs g;
  g.a_dtype = x_dtype;
  g.b_dtype = w_dtype;
  g.c_dtype = out_dtype;
  g.d_dtype = out_dtype;
  g.bias_dtype = bias_dtype;
  g.a = x;
  g.b = w;
  g.bias = bias;
  g.d = out;
  g.batch = nblocks;
  g.M = tokens;
  g.N = q;
  g.K = p;
  g.a_batch_stride = p;
  g.a_stride_m = x_row_stride;
  g.a_stride_k = 1;
  g.b_batch_stride = q * p;
  g.b_stride_k = 1;
  g.b_stride_n = p;
  g.d_batch_stride = q;
  g.d_stride_m = out_row_stride;
  g.d_stride_n = 1;
  g.bias_batch_stride = q;
  g.bias_stride_n = 1;
  return g;
}

}  // namespace

fk_status_t blockdiag(const ExecContext& ctx, const BlockdiagProblem& p) {
  if (p.tokens <= 0 || p.nblocks <= 0 || p.q <= 0) return FK_SUCCESS;
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  GemmArgs g = blockdiag_args(p.dtype, p.x, p.x_row_stride, p.dtype, p.w, p.dtype, p.out,
                              p.out_row_stride, p.bias_dtype, p.bias, p.tokens, p.nblocks, p.q,
                              p.p < 0 ? 0 : p.p);
  return launch_gemm(g, static_cast<cudaStream_t>(ctx.stream));
}

// Scratch: y1, the first factor's output (tokens x nblocks1 * q, fp32, compact). 0 when the
// byte count overflows 64 bits (then no allocation can hold it: the call reports out of memory
// instead of allocating a wrapped size and writing past it).
static size_t y1_bytes(const MonarchProblem& p) {
  uint64_t cols = 0, elems = 0, bytes = 0;
  if (__builtin_mul_overflow(uint64_t(p.nblocks1), uint64_t(p.q), &cols) ||
      __builtin_mul_overflow(uint64_t(p.tokens), cols, &elems) ||
      __builtin_mul_overflow(elems, uint64_t(sizeof(float)), &bytes) ||
      bytes > UINT64_MAX - 4096)  // the 256-byte roundings of workspace_for / the arena
    return 0;
  return size_t(bytes);
}

uint64_t monarch_workspace(const DeviceCaps&, const MonarchProblem& p) {
  if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0 || p.nblocks1 * p.q <= 0) return 0;
  const size_t y1 = y1_bytes(p);
  return y1 == 0 ? UINT64_MAX : workspace_for({y1});
}

fk_status_t monarch(const ExecContext& ctx, const MonarchProblem& p) {
  if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0) return FK_SUCCESS;
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);

  // y1: (tokens, nblocks1 * q) in fp32, compact.
  const int64_t n_mid = p.nblocks1 * p.q;
  ScratchArena arena(ctx);
  void* y1 = nullptr;
  if (n_mid > 0) {
    const size_t y1_size = y1_bytes(p);
    if (y1_size == 0) {
      return set_error(FK_ERROR_OUT_OF_MEMORY,
                       "monarch: the intermediate (tokens x nblocks1*q fp32) needs more than "
                       "2^64 bytes");
    }
    FK_RETURN_IF_ERROR(
        arena.alloc(y1_size, &y1, "monarch: intermediate (tokens x nblocks1*q fp32)"));
    GemmArgs g1 = blockdiag_args(p.dtype, p.x, p.x_row_stride, p.dtype, p.w1, DType::F32, y1,
                                 n_mid, DType::F32, nullptr, p.tokens, p.nblocks1, p.q,
                                 p.p < 0 ? 0 : p.p);
    FK_RETURN_IF_ERROR(launch_gemm(g1, stream));
  }

  // Second factor, batched over j < nblocks2: A(t, b) = y1[t, b*nblocks2 + j],
  // B(b, m) = w2[j, m, b], D(t, m) = out[t, m*nblocks2 + j], bias(m) = bias[m*nblocks2 + j].
  GemmArgs g2;
  g2.a_dtype = DType::F32;
  g2.b_dtype = p.dtype;
  g2.c_dtype = p.dtype;
  g2.d_dtype = p.dtype;
  g2.bias_dtype = p.bias_dtype;
  g2.a = y1;
  g2.b = p.w2;
  g2.bias = p.bias;
  g2.d = p.out;
  g2.batch = p.nblocks2;
  g2.M = p.tokens;
  g2.N = p.s;
  g2.K = n_mid > 0 ? p.r : 0;  // an empty intermediate contributes nothing
  g2.a_batch_stride = 1;
  g2.a_stride_m = n_mid;
  g2.a_stride_k = p.nblocks2;
  g2.b_batch_stride = p.s * p.r;
  g2.b_stride_k = 1;
  g2.b_stride_n = p.r;
  g2.d_batch_stride = 1;
  g2.d_stride_m = p.out_row_stride;
  g2.d_stride_n = p.nblocks2;
  g2.bias_batch_stride = 1;
  g2.bias_stride_n = p.nblocks2;
  return launch_gemm(g2, stream);
  // `arena` frees y1 on the stream after the second GEMM has been enqueued.
}

}  // namespace generic
}  // namespace cuda
}  // namespace flashkit
