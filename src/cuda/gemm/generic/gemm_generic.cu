// Generic CUDA GEMM: shared-memory tiled, fp32 accumulation on CUDA cores, any strides, any
// dtype mix (run-time switch), any batch. Correctness for every valid GemmProblem is the job
// here; the tensor-core paths live in src/cuda/gemm/sm80 and sm90.
//
// Tiling: a block of 256 threads computes a 64 x 64 tile of D, stepping K in slices of 16
// staged in shared memory; each thread owns a 4 x 4 sub-tile, so every pair of 16-byte shared
// loads feeds 16 FMAs. The next K slice is fetched into registers while the current one is
// multiplied, which hides most of the global latency without a second shared buffer.
#include <cuda_runtime_api.h>

#include "core/backend.h"
#include "cuda/common/activation.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/scratch.h"
#include "cuda/gemm/generic/gemm_generic.h"

namespace flashkit {
namespace cuda {
namespace generic {
namespace {

constexpr int kBM = 64, kBN = 64, kBK = 16, kThreads = 256;
// Row pitch of the shared tiles: 64 + 4 keeps rows 16-byte aligned for the float4 reads.
constexpr int kPitch = kBM + 4;

// One operand's 64 x 16 slice, held in registers between the global load and the shared store.
// `fast_k` picks which index consecutive threads walk so that the global reads are coalesced
// whichever of the two strides is the contiguous one (row- or column-major, or transposed).
struct SliceLoader {
  const void* base;
  DType dtype;
  int64_t stride_outer;  // stride of the 64-wide dimension (m for A, n for B)
  int64_t stride_k;
  int64_t outer_extent, k_extent;
  bool fast_k;

  __device__ __forceinline__ void coords(int i, int* outer, int* kk) const {
    int idx = threadIdx.x + kThreads * i;
    if (fast_k) {
      *kk = idx & (kBK - 1);
      *outer = idx >> 4;
    } else {
      *outer = idx & (kBM - 1);
      *kk = idx >> 6;
    }
  }
  __device__ __forceinline__ void load(float r[4], int64_t offset, int64_t outer0,
                                       int64_t k0) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int o, kk;
      coords(i, &o, &kk);
      int64_t go = outer0 + o, gk = k0 + kk;
      r[i] = (go < outer_extent && gk < k_extent)
                 ? load_float(base, dtype, offset + go * stride_outer + gk * stride_k)
                 : 0.0f;
    }
  }
  __device__ __forceinline__ void store(float (*tile)[kPitch], const float r[4]) const {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int o, kk;
      coords(i, &o, &kk);
      tile[kk][o] = r[i];
    }
  }
};

__global__ void __launch_bounds__(kThreads) gemm_tiled_kernel(const GemmArgs p, int64_t tiles_m,
                                                              int64_t tiles_n) {
  __shared__ __align__(16) float As[kBK][kPitch];
  __shared__ __align__(16) float Bs[kBK][kPitch];

  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  // Consecutive threads walk the operand's smaller stride (the contiguous one when there is
  // one; for Monarch's permuted reads, the less scattered one).
  const SliceLoader la{p.a, p.a_dtype, p.a_stride_m, p.a_stride_k, p.M, p.K,
                       p.a_stride_k < p.a_stride_m};
  const SliceLoader lb{p.b, p.b_dtype, p.b_stride_n, p.b_stride_k, p.N, p.K,
                       p.b_stride_k < p.b_stride_n};
  const int64_t tiles_per_batch = tiles_m * tiles_n;
  const int64_t total = tiles_per_batch * p.batch;

  for (int64_t tile = blockIdx.x; tile < total; tile += gridDim.x) {
    const int64_t z = tile / tiles_per_batch;
    const int64_t t = tile - z * tiles_per_batch;
    const int64_t m0 = (t / tiles_n) * kBM, n0 = (t % tiles_n) * kBN;
    const int64_t a_off = z * p.a_batch_stride, b_off = z * p.b_batch_stride;

    float acc[4][4] = {};
    float ra[4], rb[4];
    la.load(ra, a_off, m0, 0);
    lb.load(rb, b_off, n0, 0);
    for (int64_t k0 = 0; k0 < p.K; k0 += kBK) {
      __syncthreads();  // the previous slice has been consumed by every thread
      la.store(As, ra);
      lb.store(Bs, rb);
      __syncthreads();
      if (k0 + kBK < p.K) {
        la.load(ra, a_off, m0, k0 + kBK);
        lb.load(rb, b_off, n0, k0 + kBK);
      }
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        const float4 a = *reinterpret_cast<const float4*>(&As[kk][ty * 4]);
        const float4 b = *reinterpret_cast<const float4*>(&Bs[kk][tx * 4]);
        const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }

    // Epilogue, in the documented order: alpha * scales * acc + beta * C + bias, then the
    // activation.
    const bool use_c = p.c != nullptr && p.beta != 0.0f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int64_t m = m0 + ty * 4 + i;
      if (m >= p.M) continue;
      float row_scale = p.alpha;
      if (p.scale_a != nullptr) row_scale *= p.scale_a[p.scale_a_per_row ? m : 0];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t n = n0 + tx * 4 + j;
        if (n >= p.N) continue;
        float scale = row_scale;
        if (p.scale_b != nullptr) scale *= p.scale_b[p.scale_b_per_col ? n : 0];
        float v = scale * acc[i][j];
        if (use_c) {
          v += p.beta * load_float(p.c, p.c_dtype,
                                   z * p.c_batch_stride + m * p.c_stride_m + n * p.c_stride_n);
        }
        if (p.bias != nullptr) {
          v += load_float(p.bias, p.bias_dtype, z * p.bias_batch_stride + n * p.bias_stride_n);
        }
        store_float(p.d, p.d_dtype, z * p.d_batch_stride + m * p.d_stride_m + n * p.d_stride_n,
                    activate(v, p.activation));
      }
    }
  }
}

}  // namespace

fk_status_t launch_gemm(const GemmArgs& args, cudaStream_t stream) {
  if (args.M <= 0 || args.N <= 0 || args.batch <= 0) return FK_SUCCESS;
  const int64_t tiles_m = (args.M + kBM - 1) / kBM, tiles_n = (args.N + kBN - 1) / kBN;
  gemm_tiled_kernel<<<grid_for(tiles_m * tiles_n * args.batch), kThreads, 0, stream>>>(
      args, tiles_m, tiles_n);
  return check_launch("cuda.generic.gemm kernel");
}

fk_status_t gemm(const ExecContext& ctx, const GemmProblem& p) {
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  GemmArgs g;
  g.a_dtype = p.ab_dtype;
  g.b_dtype = p.b_dtype;
  g.c_dtype = p.cd_dtype;
  g.d_dtype = p.cd_dtype;
  g.bias_dtype = p.bias_dtype;
  g.a = p.a;
  g.b = p.b;
  g.c = p.c;
  g.bias = p.bias;
  g.d = p.d;
  g.batch = p.batch;
  g.M = p.M;
  g.N = p.N;
  g.K = p.K < 0 ? 0 : p.K;
  g.a_batch_stride = p.a_batch_stride;
  g.a_stride_m = p.a_stride_m;
  g.a_stride_k = p.a_stride_k;
  g.b_batch_stride = p.b_batch_stride;
  g.b_stride_k = p.b_stride_k;
  g.b_stride_n = p.b_stride_n;
  g.c_batch_stride = p.c_batch_stride;
  g.c_stride_m = p.c_stride_m;
  g.c_stride_n = p.c_stride_n;
  g.d_batch_stride = p.d_batch_stride;
  g.d_stride_m = p.d_stride_m;
  g.d_stride_n = p.d_stride_n;
  g.bias_batch_stride = 0;
  g.bias_stride_n = 1;
  g.alpha = p.alpha;
  g.beta = p.beta;
  g.activation = p.activation;
  g.scale_a = p.scale_a;
  g.scale_b = p.scale_b;
  g.scale_a_per_row = p.scale_a_per_row;
  g.scale_b_per_col = p.scale_b_per_col;
  return launch_gemm(g, static_cast<cudaStream_t>(ctx.stream));
}

}  // namespace generic
}  // namespace cuda
}  // namespace flashkit
