// What every CUDA FFT-convolution kernel reads of an FFTConvProblem (operands, extents,
// strides), the input side of the convolution (v = pregate * u; the filter placed in a length-N
// row per mode) and the small helpers the generic and sm80 kernels share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/problems.h"
#include "cuda/common/check.h"
#include "cuda/common/dtype.cuh"

namespace flashkit {
namespace cuda {
namespace conv {

// The problem as the kernels see it: strides in elements, N = fft_size, L = seqlen. Kernel
// argument structs derive from it and add their own plan fields.
struct ConvIO {
  DType dtype, k_dtype, d_dtype;
  FFTConvMode mode;
  int64_t batch, channels, L, filter_len, N;
  const void* u;
  const void* k;
  const void* D;
  const void* pre;
  const void* post;
  void* y;
  int64_t u_bs, u_cs, y_bs, y_cs, pre_bs, pre_cs, post_bs, post_cs, k_cs;
};

inline ConvIO conv_io(const FFTConvProblem& p) {
  ConvIO a;
  a.dtype = p.dtype;
  a.k_dtype = p.k_dtype;
  a.d_dtype = p.d_dtype;
  a.mode = p.mode;
  a.batch = p.batch;
  a.channels = p.channels;
  a.L = p.seqlen;
  a.filter_len = p.filter_len;
  a.N = p.fft_size;
  a.u = p.u;
  a.k = p.k;
  a.D = p.D;
  a.pre = p.pregate;
  a.post = p.postgate;
  a.y = p.y;
  a.u_bs = p.u_batch_stride;
  a.u_cs = p.u_channel_stride;
  a.y_bs = p.y_batch_stride;
  a.y_cs = p.y_channel_stride;
  a.pre_bs = p.pre_batch_stride;
  a.pre_cs = p.pre_channel_stride;
  a.post_bs = p.post_batch_stride;
  a.post_cs = p.post_channel_stride;
  a.k_cs = p.k_channel_stride;
  return a;
}

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 cmul_conj(float2 a, float2 b) {  // a * conj(b)
  return make_float2(a.x * b.x + a.y * b.y, a.y * b.x - a.x * b.y);
}

// x * W_8^e for an e known at compile time after unrolling (the switch folds away), without
// multiplying by 0 or 1.
__device__ __forceinline__ float2 mul_w8(float2 x, int e) {
  constexpr float c = 0.70710678118654752f;
  switch (e & 7) {
    case 0: return x;
    case 1: return make_float2(c * (x.x + x.y), c * (x.y - x.x));
    case 2: return make_float2(x.y, -x.x);
    case 3: return make_float2(c * (x.y - x.x), -c * (x.x + x.y));
    case 4: return make_float2(-x.x, -x.y);
    case 5: return make_float2(-c * (x.x + x.y), c * (x.x - x.y));
    case 6: return make_float2(-x.y, x.x);
    default: return make_float2(c * (x.x - x.y), c * (x.x + x.y));
  }
}

// In-place R-point DFT (INV: conjugated), R in {1, 2, 4, 8}, by the definition with constant
// twiddles (R = 1 is the identity).
template <int R, bool INV>
__device__ __forceinline__ void small_dft(float2 (&x)[R]) {
  if constexpr (R > 1) {
    float2 y[R];
#pragma unroll
    for (int q = 0; q < R; ++q) {
      float2 acc = make_float2(0.0f, 0.0f);
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const int e = ((i * q) % R) * (8 / R);
        const float2 p = mul_w8(x[i], INV ? 8 - e : e);
        acc.x += p.x;
        acc.y += p.y;
      }
      y[q] = acc;
    }
#pragma unroll
    for (int q = 0; q < R; ++q) x[q] = y[q];
  }
}

// v = pregate * u at (b, c, t), t < L.
__device__ __forceinline__ float load_v(const ConvIO& a, int64_t b, int64_t c, int64_t t) {
  float x = load_float(a.u, a.dtype, b * a.u_bs + c * a.u_cs + t);
  if (a.pre != nullptr) x *= load_float(a.pre, a.dtype, b * a.pre_bs + c * a.pre_cs + t);
  return x;
}

// Element t (< N) of channel c's length-N filter row, times `scale`:
// - causal: taps s >= L never reach an output t < L, so the filter is cut at min(filter_len, L);
//   that is also what makes fft_size >= L + min(filter_len, L) - 1 alias-free.
// - circular: the filter zero-padded to N.
// - bidirectional (filter_len = 2R + 1): tap j in [-R, R] goes to index j mod N; taps with
//   |j| >= L never reach an output, and with R' = min(R, L - 1) and N >= L + R' the wrapped
//   taps only meet the zero padding of v.
__device__ __forceinline__ float load_filter(const ConvIO& a, int64_t c, int64_t t,
                                             float scale) {
  int64_t idx = -1;
  switch (a.mode) {
    case FFTConvMode::Causal:
      if (t < min(a.filter_len, a.L)) idx = t;
      break;
    case FFTConvMode::Circular:
      if (t < a.filter_len) idx = t;
      break;
    case FFTConvMode::Bidirectional: {
      const int64_t R = (a.filter_len - 1) / 2;
      const int64_t Rp = min(R, a.L - 1);
      if (t <= Rp) {
        idx = R + t;
      } else if (t >= a.N - Rp) {
        idx = R - (a.N - t);
      }
      break;
    }
  }
  return idx < 0 ? 0.0f : load_float(a.k, a.k_dtype, c * a.k_cs + idx) * scale;
}

// tw[e] = exp(-2 pi i e / n) for e < n / 2, from double precision. `static`: each translation
// unit that includes this header launches its own copy.
static __global__ void twiddle_kernel(float2* tw, int64_t n) {
  const int64_t half = n / 2;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < half;
       e += int64_t(gridDim.x) * blockDim.x) {
    double s, c;
    sincospi(-2.0 * static_cast<double>(e) / static_cast<double>(n), &s, &c);
    tw[e] = make_float2(static_cast<float>(c), static_cast<float>(s));
  }
}

// Rows of 16-bit elements that allow `bytes`-wide accesses (4 or 16) at every multiple of
// bytes / 2 elements: the base pointer aligned to `bytes` and both outer strides (in elements)
// multiples of bytes / 2. An absent operand (nullptr) qualifies.
inline bool rows_aligned(const void* ptr, int bytes, int64_t s0, int64_t s1) {
  const int64_t elems = bytes / 2;
  return ptr == nullptr || (reinterpret_cast<uintptr_t>(ptr) % uintptr_t(bytes) == 0 &&
                            s0 % elems == 0 && s1 % elems == 0);
}

// log2 of a power of two (the smallest l with 2^l >= n otherwise).
inline int log2_exact(int64_t n) {
  int l = 0;
  while ((int64_t(1) << l) < n) ++l;
  return l;
}

// Raises `kernel`'s dynamic shared-memory limit when it needs more than the default 48 KB;
// `what` names the caller in the error message.
// A kernel's own guard on a plan (validation has run; reaching this is an internal error):
// fft_size a power of two in [2^min_log_n, 2^max_log_n] holding the sequence, a filter given.
inline fk_status_t check_plan(const FFTConvProblem& p, int min_log_n, int max_log_n,
                              const char* variant) {
  const int64_t N = p.fft_size;
  if (N < (int64_t(1) << min_log_n) || N > (int64_t(1) << max_log_n) || (N & (N - 1)) != 0 ||
      p.seqlen > N || p.filter_len <= 0) {
    return set_error(FK_ERROR_INTERNAL, "%s: fft_size %lld not covered (unvalidated plan)", variant,
                     static_cast<long long>(N));
  }
  return FK_SUCCESS;
}

inline fk_status_t allow_smem(const void* kernel, size_t bytes, const char* what) {
  if (bytes <= 48 * 1024) return FK_SUCCESS;
  return raise_dynamic_smem_limit(kernel, bytes, what);  // never lowers it (check.h)
}

}  // namespace conv
}  // namespace cuda
}  // namespace flashkit
