// Generic CUDA FFT convolution (Hyena, Poli et al. 2023; FlashFFTConv, Fu et al. 2023,
// Section 3): y = postgate * (conv(pregate * u, k) + D * (pregate * u)), every mode of
// flashkit.h, every power-of-two fft_size up to 2^22, fp32 arithmetic on CUDA cores.
//
// Why it is built this way:
// - Two real rows per complex FFT. Rows (b, c) and (b + 1, c) share channel c's filter, and
//   IFFT(FFT(v0 + i v1) * K) = (v0 * k) + i (v1 * k) when k is real, so the real and imaginary
//   parts of one complex convolution are the two rows' results: half the FFT work of a
//   complex-per-row scheme with no real-FFT post-processing.
// - No bit-reversal pass. The forward transform is a radix-2 decimation-in-frequency FFT
//   (natural order in, bit-reversed out) and the inverse a decimation-in-time FFT (bit-reversed
//   in, natural out). The filter spectrum is made by the same forward transform, so the
//   pointwise product happens in the same permuted order and the permutation cancels.
// - fft_size <= 8192 (64 KB of complex fp32): one block does load -> FFT -> multiply -> inverse
//   -> store for a row pair entirely in shared memory, one kernel for the whole call.
// - Larger sizes: the four-step FFT (Bailey 1990, "FFTs in external or hierarchical memory"):
//   N = N1 * N2 with N2 = 8192, so x[n1*N2 + n2] -> length-N1 FFTs down the columns, a twiddle
//   W_N^(n2*k1), length-N2 FFTs along the rows; each piece fits in shared memory. Three kernels
//   (column forward; row forward, multiply, row inverse; column inverse) through a global
//   workspace, which keeps the frequency order "transposed": again it cancels because the
//   filter spectrum goes through the same steps.
// - The filter spectrum is computed on the GPU, scaled by 1/N (exact: a power of two) so the
//   inverse needs no extra pass, and cached in the plan when the filter is declared constant.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/backend.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/fftconv_plan_cache.h"
#include "cuda/common/scratch.h"
#include "cuda/fftconv/common/conv_io.cuh"

namespace flashkit {
namespace cuda {
namespace generic {
namespace {

constexpr int kThreads = 256;
// Complex elements one block transforms in shared memory: 64 KB of float2, within the opt-in
// per-block limit of every sm_80+ GPU (99 KB on sm_86/89/120, more elsewhere).
constexpr int kLogSmemFFT = 13;
// Filter spectra above this size are computed per channel chunk for each call instead of cached.
constexpr int64_t kSpectrumBudget = int64_t(1) << 30;
// Workspace of the four-step path: rows in flight * N * 8 bytes stays under this.
constexpr int64_t kRowBudget = int64_t(256) << 20;

using conv::cmul;
using conv::cmul_conj;
using conv::load_v;
using conv::log2_exact;
using conv::twiddle_kernel;

struct FftArgs : conv::ConvIO {
  const float2* tw;  // tw[t] = exp(-2 pi i t / N), t < N / 2
  int log_n;
  // Four-step split (only when N exceeds one block's shared memory): N = N1 * N2, column tiles
  // of C = 2^log_c columns so that a tile (N1 x C) is one shared-memory load.
  int log_n1, log_n2, log_c;
  int64_t pairs;  // ceil(batch / 2): row pairs per channel
};

// W_N^e for any e >= 0, from the half table (W_N^(e + N/2) = -W_N^e).
__device__ __forceinline__ float2 twiddle(const FftArgs& a, int64_t e) {
  e &= a.N - 1;
  const int64_t half = a.N >> 1;
  if (e < half) return a.tw[e];
  const float2 t = a.tw[e - half];
  return make_float2(-t.x, -t.y);
}

__device__ __forceinline__ int bit_reverse(int x, int bits) {
  return bits == 0 ? 0 : static_cast<int>(__brev(static_cast<unsigned>(x)) >> (32 - bits));
}

// In-place radix-2 DIF FFTs over 2^log_count interleaved sequences of length 2^log_n held in
// shared memory: element e of sequence f is buf[(e << log_count) + f]. Natural order in,
// bit-reversed order out. Twiddles come from the length-N table (stride N / 2h), which serves
// every sub-length. Consecutive threads take consecutive sequences (or consecutive butterflies
// when there is one sequence), so shared accesses stay conflict-free in the common strides.
__device__ void fft_dif(float2* buf, int log_n, int log_count, const FftArgs& a) {
  const int half_total = 1 << (log_n - 1 + log_count);
  for (int s = log_n - 1; s >= 0; --s) {
    const int h = 1 << s;
    const int tw_shift = a.log_n - (s + 1);
    for (int bi = threadIdx.x; bi < half_total; bi += blockDim.x) {
      const int f = bi & ((1 << log_count) - 1);
      const int pi = bi >> log_count;
      const int j = pi & (h - 1);
      const int e0 = ((pi >> s) << (s + 1)) + j;
      const int i0 = (e0 << log_count) + f, i1 = ((e0 + h) << log_count) + f;
      const float2 x0 = buf[i0], x1 = buf[i1];
      const float2 w = a.tw[j << tw_shift];
      buf[i0] = make_float2(x0.x + x1.x, x0.y + x1.y);
      buf[i1] = cmul(make_float2(x0.x - x1.x, x0.y - x1.y), w);
    }
    __syncthreads();
  }
}

// Inverse (conjugate twiddles, unnormalised) radix-2 DIT: bit-reversed in, natural order out.
__device__ void fft_dit_inverse(float2* buf, int log_n, int log_count, const FftArgs& a) {
  const int half_total = 1 << (log_n - 1 + log_count);
  for (int s = 0; s < log_n; ++s) {
    const int h = 1 << s;
    const int tw_shift = a.log_n - (s + 1);
    for (int bi = threadIdx.x; bi < half_total; bi += blockDim.x) {
      const int f = bi & ((1 << log_count) - 1);
      const int pi = bi >> log_count;
      const int j = pi & (h - 1);
      const int e0 = ((pi >> s) << (s + 1)) + j;
      const int i0 = (e0 << log_count) + f, i1 = ((e0 + h) << log_count) + f;
      const float2 x0 = buf[i0];
      const float2 x1 = cmul_conj(buf[i1], a.tw[j << tw_shift]);
      buf[i0] = make_float2(x0.x + x1.x, x0.y + x1.y);
      buf[i1] = make_float2(x0.x - x1.x, x0.y - x1.y);
    }
    __syncthreads();
  }
}

// v = pregate * u at (b, c, n).
// Element n of the zero-padded complex signal of row pair `pair` of channel c.
__device__ __forceinline__ float2 load_signal(const FftArgs& a, int64_t c, int64_t pair,
                                              int64_t n) {
  float2 z = make_float2(0.0f, 0.0f);
  const int64_t b0 = 2 * pair;
  if (n < a.L) {
    z.x = load_v(a, b0, c, n);
    if (b0 + 1 < a.batch) z.y = load_v(a, b0 + 1, c, n);
  }
  return z;
}

// Element n of channel c's length-N filter (conv::load_filter's placement per mode), already
// scaled by 1/N (the inverse FFT's factor).
__device__ __forceinline__ float load_filter(const FftArgs& a, int64_t c, int64_t n) {
  return conv::load_filter(a, c, n, 1.0f / static_cast<float>(a.N));
}

// Writes y at (b0, c, n) and (b0 + 1, c, n) from the two halves of the complex result.
__device__ __forceinline__ void store_output(const FftArgs& a, int64_t c, int64_t pair, int64_t n,
                                             float2 conv) {
  const int64_t b0 = 2 * pair;
  const float dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const int64_t b = b0 + q;
    if (b >= a.batch) break;
    float val = q == 0 ? conv.x : conv.y;
    if (a.D != nullptr) val = fmaf(dc, load_v(a, b, c, n), val);
    if (a.post != nullptr) val *= load_float(a.post, a.dtype, b * a.post_bs + c * a.post_cs + n);
    store_float(a.y, a.dtype, b * a.y_bs + c * a.y_cs + n, val);
  }
}

// tw[t] = exp(-2 pi i t / N), rounded once from double precision (sincospi is exact in its
// argument's scaling, so the table carries no accumulated error).
// ---- fft_size <= 8192: everything in one block ---------------------------------------------

// spec[cl * N + .] = DIF(filter of channel c0 + cl) / N, for cl < count.
__global__ void __launch_bounds__(kThreads) filter_spectrum_fused_kernel(const FftArgs a,
                                                                         float2* spec,
                                                                         int64_t c0,
                                                                         int64_t count) {
  extern __shared__ float2 buf[];
  const int n = 1 << a.log_n;
  for (int64_t cl = blockIdx.x; cl < count; cl += gridDim.x) {
    for (int i = threadIdx.x; i < n; i += blockDim.x)
      buf[i] = make_float2(load_filter(a, c0 + cl, i), 0.0f);
    __syncthreads();
    if (a.log_n > 0) fft_dif(buf, a.log_n, 0, a);
    for (int i = threadIdx.x; i < n; i += blockDim.x) spec[cl * n + i] = buf[i];
    __syncthreads();
  }
}

// One block per (channel, row pair): load, forward, multiply, inverse, epilogue.
__global__ void __launch_bounds__(kThreads) conv_fused_kernel(const FftArgs a,
                                                              const float2* spec, int64_t c0,
                                                              int64_t count) {
  extern __shared__ float2 buf[];
  const int n = 1 << a.log_n;
  const int64_t total = count * a.pairs;
  for (int64_t work = blockIdx.x; work < total; work += gridDim.x) {
    // Row pairs of one channel are adjacent in the grid, so its spectrum stays in L2.
    const int64_t cl = work / a.pairs, pair = work % a.pairs, c = c0 + cl;
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = load_signal(a, c, pair, i);
    __syncthreads();
    if (a.log_n > 0) fft_dif(buf, a.log_n, 0, a);
    const float2* sc = spec + cl * n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = cmul(buf[i], sc[i]);
    __syncthreads();
    if (a.log_n > 0) fft_dit_inverse(buf, a.log_n, 0, a);
    for (int i = threadIdx.x; i < a.L; i += blockDim.x) store_output(a, c, pair, i, buf[i]);
    __syncthreads();
  }
}

// ---- fft_size > 8192: four-step through global memory --------------------------------------
// Row `r` of a work group is the complex length-N sequence ws[r * N ...], laid out as an
// N1 x N2 matrix. Sources: kind 0 = signal row pairs (row r0 + r of the channel chunk, i.e.
// channel c0 + (r0 + r) / pairs, pair (r0 + r) % pairs); kind 1 = filter of channel c0 + r.

enum SourceKind : int { kSignal = 0, kFilter = 1 };

// Column step, forward: length-N1 DIF down each column of a C-column tile, then the twiddle
// W_N^(n2 * k1), written to ws in place order [p1][n2] (k1 = bitrev(p1)).
__global__ void __launch_bounds__(kThreads) columns_forward_kernel(const FftArgs a, float2* ws,
                                                                   int kind, int64_t c0,
                                                                   int64_t r0, int64_t rows) {
  extern __shared__ float2 buf[];
  const int n1_count = 1 << a.log_n1, n2_count = 1 << a.log_n2, cols = 1 << a.log_c;
  const int tile_count = n2_count >> a.log_c;
  const int tile_elems = n1_count << a.log_c;
  const int64_t total = rows * tile_count;
  for (int64_t work = blockIdx.x; work < total; work += gridDim.x) {
    const int64_t r = work / tile_count;
    const int n2_0 = static_cast<int>(work % tile_count) << a.log_c;
    int64_t c, pair = 0;
    if (kind == kSignal) {
      c = c0 + (r0 + r) / a.pairs;
      pair = (r0 + r) % a.pairs;
    } else {
      c = c0 + r;
    }
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
      const int n1 = i >> a.log_c, n2 = n2_0 + (i & (cols - 1));
      const int64_t nn = (int64_t(n1) << a.log_n2) + n2;
      buf[i] = kind == kSignal ? load_signal(a, c, pair, nn)
                               : make_float2(load_filter(a, c, nn), 0.0f);
    }
    __syncthreads();
    fft_dif(buf, a.log_n1, a.log_c, a);
    float2* row = ws + r * a.N;
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
      const int p1 = i >> a.log_c, n2 = n2_0 + (i & (cols - 1));
      const int64_t k1 = bit_reverse(p1, a.log_n1);
      row[(int64_t(p1) << a.log_n2) + n2] = cmul(buf[i], twiddle(a, k1 * n2));
    }
    __syncthreads();
  }
}

// Row step: length-N2 DIF along each row. With a spectrum: multiply (same permuted order) and
// run the inverse DIT in place; without one (making a filter spectrum): store the forward result.
__global__ void __launch_bounds__(kThreads) rows_kernel(const FftArgs a, float2* ws,
                                                        const float2* spec, int64_t r0,
                                                        int64_t rows) {
  extern __shared__ float2 buf[];
  const int n1_count = 1 << a.log_n1, n2_count = 1 << a.log_n2;
  const int64_t total = rows * n1_count;
  for (int64_t work = blockIdx.x; work < total; work += gridDim.x) {
    const int64_t r = work / n1_count;
    const int p1 = static_cast<int>(work % n1_count);
    float2* seg = ws + r * a.N + (int64_t(p1) << a.log_n2);
    for (int i = threadIdx.x; i < n2_count; i += blockDim.x) buf[i] = seg[i];
    __syncthreads();
    fft_dif(buf, a.log_n2, 0, a);
    if (spec != nullptr) {
      // Spectrum of this row's channel, relative to the chunk whose first row is r0 = 0.
      const int64_t cl = (r0 + r) / a.pairs;
      const float2* sc = spec + cl * a.N + (int64_t(p1) << a.log_n2);
      for (int i = threadIdx.x; i < n2_count; i += blockDim.x) buf[i] = cmul(buf[i], sc[i]);
      __syncthreads();
      fft_dit_inverse(buf, a.log_n2, 0, a);
    }
    for (int i = threadIdx.x; i < n2_count; i += blockDim.x) seg[i] = buf[i];
    __syncthreads();
  }
}

// Column step, inverse: conjugate twiddle, length-N1 DIT up each column (bit-reversed k1 in,
// natural n1 out), then the epilogue on x[n1 * N2 + n2] for positions < L.
__global__ void __launch_bounds__(kThreads) columns_inverse_kernel(const FftArgs a,
                                                                   const float2* ws, int64_t c0,
                                                                   int64_t r0, int64_t rows) {
  extern __shared__ float2 buf[];
  const int n1_count = 1 << a.log_n1, n2_count = 1 << a.log_n2, cols = 1 << a.log_c;
  const int tile_count = n2_count >> a.log_c;
  const int tile_elems = n1_count << a.log_c;
  const int64_t total = rows * tile_count;
  for (int64_t work = blockIdx.x; work < total; work += gridDim.x) {
    const int64_t r = work / tile_count;
    const int n2_0 = static_cast<int>(work % tile_count) << a.log_c;
    const int64_t c = c0 + (r0 + r) / a.pairs, pair = (r0 + r) % a.pairs;
    const float2* row = ws + r * a.N;
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
      const int p1 = i >> a.log_c, n2 = n2_0 + (i & (cols - 1));
      const int64_t k1 = bit_reverse(p1, a.log_n1);
      buf[i] = cmul_conj(row[(int64_t(p1) << a.log_n2) + n2], twiddle(a, k1 * n2));
    }
    __syncthreads();
    fft_dit_inverse(buf, a.log_n1, a.log_c, a);
    for (int i = threadIdx.x; i < tile_elems; i += blockDim.x) {
      const int n1 = i >> a.log_c, n2 = n2_0 + (i & (cols - 1));
      const int64_t nn = (int64_t(n1) << a.log_n2) + n2;
      if (nn < a.L) store_output(a, c, pair, nn, buf[i]);
    }
    __syncthreads();
  }
}

// ---- host side -------------------------------------------------------------------------------

fk_status_t launch_twiddles(float2* tw, int64_t n, cudaStream_t stream) {
  const int64_t half = n / 2;
  if (half == 0) return FK_SUCCESS;
  const int64_t blocks = std::min<int64_t>((half + 255) / 256, 4096);
  twiddle_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(tw, n);
  return check_launch("cuda.generic.fftconv twiddle kernel");
}

fk_status_t allow_smem(const void* kernel, size_t bytes) {
  return conv::allow_smem(kernel, bytes,
                          "cuda.generic.fftconv: cudaFuncSetAttribute(max dynamic shared memory)");
}

int block_threads(int64_t butterflies) {
  return static_cast<int>(std::min<int64_t>(kThreads, std::max<int64_t>(32, butterflies)));
}

// spec[cl * N ...] = spectrum of channels c0 .. c0 + count - 1.
fk_status_t compute_spectrum(const FftArgs& a, bool four_step, float2* spec, int64_t c0,
                             int64_t count, cudaStream_t stream) {
  if (!four_step) {
    const size_t smem = sizeof(float2) << a.log_n;
    FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(filter_spectrum_fused_kernel), smem));
    filter_spectrum_fused_kernel<<<grid_for(count), block_threads(a.N / 2), smem, stream>>>(
        a, spec, c0, count);
    return check_launch("cuda.generic.fftconv filter spectrum kernel");
  }
  const size_t smem = sizeof(float2) << kLogSmemFFT;
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(columns_forward_kernel), smem));
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(rows_kernel), smem));
  const int64_t tiles = int64_t(1) << (a.log_n2 - a.log_c);
  columns_forward_kernel<<<grid_for(count * tiles), kThreads, smem, stream>>>(a, spec, kFilter,
                                                                              c0, 0, count);
  FK_RETURN_IF_ERROR(check_launch("cuda.generic.fftconv column kernel (filter)"));
  rows_kernel<<<grid_for(count << a.log_n1), kThreads, smem, stream>>>(a, spec, nullptr, 0, count);
  return check_launch("cuda.generic.fftconv row kernel (filter)");
}

// Scratch sizes of fftconv(): per-call spectra (a chunk of channels), the four-step rows, and
// the twiddles when there is no plan.
struct GenericScratch {
  int64_t spec_chunk;  // channels per spectrum chunk
  uint64_t spec;       // bytes of the spectrum chunk; 0 when the plan caches the spectrum
  uint64_t rows;       // bytes of the four-step workspace (ws_rows rows); 0 for fused sizes
  uint64_t tw;         // bytes of the per-call twiddles; 0 with a plan
};

static GenericScratch generic_scratch(const FFTConvProblem& p) {
  GenericScratch g{};
  const int64_t N = p.fft_size;
  const int64_t row_bytes = N * static_cast<int64_t>(sizeof(float2));
  g.spec_chunk = std::max<int64_t>(1, std::min<int64_t>(p.channels, kSpectrumBudget / row_bytes));
  const bool cached = p.state != nullptr && p.filter_constant &&
                      row_bytes * p.channels <= kSpectrumBudget;
  g.spec = cached ? 0 : uint64_t(g.spec_chunk * row_bytes);
  if (log2_exact(N) > kLogSmemFFT) {
    // run_convolution(): rows in flight for the first (largest) chunk of channels.
    const int64_t rows_total = (cached ? p.channels : g.spec_chunk) * ((p.batch + 1) / 2);
    g.rows = uint64_t(std::max<int64_t>(1, std::min<int64_t>(rows_total, kRowBudget / row_bytes)) *
                      row_bytes);
  }
  g.tw = p.state ? 0 : sizeof(float2) * uint64_t(std::max<int64_t>(1, N / 2));
  return g;
}

// Convolves every row pair of channels c0 .. c0 + count - 1 with spec (their spectra).
fk_status_t run_convolution(const FftArgs& a, bool four_step, const float2* spec, int64_t c0,
                            int64_t count, ScratchArena& arena, float2** ws, int64_t* ws_rows,
                            cudaStream_t stream) {
  if (!four_step) {
    const size_t smem = sizeof(float2) << a.log_n;
    FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(conv_fused_kernel), smem));
    conv_fused_kernel<<<grid_for(count * a.pairs), block_threads(a.N / 2), smem, stream>>>(
        a, spec, c0, count);
    return check_launch("cuda.generic.fftconv fused kernel");
  }
  const size_t smem = sizeof(float2) << kLogSmemFFT;
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(columns_forward_kernel), smem));
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(rows_kernel), smem));
  FK_RETURN_IF_ERROR(allow_smem(reinterpret_cast<const void*>(columns_inverse_kernel), smem));
  const int64_t rows_total = count * a.pairs;
  if (*ws == nullptr) {
    // One workspace for all chunks of this call: stream order serialises its reuse. Its rows
    // (*ws_rows) come from generic_scratch(), what fftconv_workspace() reports.
    const int64_t row_bytes = a.N * static_cast<int64_t>(sizeof(float2));
    void* p = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(static_cast<size_t>(*ws_rows * row_bytes), &p,
                                   "fftconv: four-step workspace"));
    *ws = static_cast<float2*>(p);
  }
  const int64_t tiles = int64_t(1) << (a.log_n2 - a.log_c);
  for (int64_t r0 = 0; r0 < rows_total; r0 += *ws_rows) {
    const int64_t rows = std::min<int64_t>(*ws_rows, rows_total - r0);
    columns_forward_kernel<<<grid_for(rows * tiles), kThreads, smem, stream>>>(a, *ws, kSignal,
                                                                               c0, r0, rows);
    FK_RETURN_IF_ERROR(check_launch("cuda.generic.fftconv column kernel"));
    rows_kernel<<<grid_for(rows << a.log_n1), kThreads, smem, stream>>>(a, *ws, spec, r0, rows);
    FK_RETURN_IF_ERROR(check_launch("cuda.generic.fftconv row kernel"));
    columns_inverse_kernel<<<grid_for(rows * tiles), kThreads, smem, stream>>>(a, *ws, c0, r0,
                                                                               rows);
    FK_RETURN_IF_ERROR(check_launch("cuda.generic.fftconv inverse column kernel"));
  }
  return FK_SUCCESS;
}

}  // namespace

uint64_t fftconv_workspace(const DeviceCaps&, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return 0;
  const GenericScratch g = generic_scratch(p);
  return workspace_for({g.tw, g.spec, g.rows});
}

fk_status_t fftconv(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  const int64_t N = p.fft_size;
  FK_RETURN_IF_ERROR(conv::check_plan(p, 0, 22, "cuda.generic.fftconv"));
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  int device = 0;
  FK_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");

  FftArgs a;
  static_cast<conv::ConvIO&>(a) = conv::conv_io(p);
  a.log_n = log2_exact(N);
  a.pairs = (p.batch + 1) / 2;
  const bool four_step = a.log_n > kLogSmemFFT;
  if (four_step) {
    a.log_n2 = kLogSmemFFT;
    a.log_n1 = a.log_n - kLogSmemFFT;   // 1 .. 9
    a.log_c = kLogSmemFFT - a.log_n1;   // a column tile is N1 x C = 8192 elements
  } else {
    a.log_n1 = 0;
    a.log_n2 = a.log_n;
    a.log_c = 0;
  }

  ScratchArena arena(ctx);
  const int64_t spec_row_bytes = N * static_cast<int64_t>(sizeof(float2));
  const int64_t spec_all_bytes = spec_row_bytes * p.channels;
  // The plan's cached tables, held until this call has enqueued its last kernel.
  std::shared_ptr<FFTConvFamilyCache> family;
  std::shared_ptr<FFTConvDeviceTable> cached_spec;

  // Twiddles: plan-owned when there is a plan state, else per call.
  const size_t tw_bytes = sizeof(float2) * static_cast<size_t>(std::max<int64_t>(1, N / 2));
  if (p.state != nullptr) {
    std::lock_guard<std::mutex> lock(p.state->mutex);
    FK_RETURN_IF_ERROR(fftconv_family_twiddles(
        fftconv_cuda_cache(p.state)->generic, device, N, tw_bytes, stream,
        [&](void* tw) { return launch_twiddles(static_cast<float2*>(tw), N, stream); },
        &family));
    a.tw = static_cast<const float2*>(family->twiddles->data);
    if (p.filter_constant && spec_all_bytes <= kSpectrumBudget) {
      FK_RETURN_IF_ERROR(fftconv_cached_spectrum(
          *family, FFTConvSpectrumKey::of(p, device, 0), static_cast<size_t>(spec_all_bytes),
          stream,
          [&](void* spec) {
            return compute_spectrum(a, four_step, static_cast<float2*>(spec), 0, p.channels,
                                    stream);
          },
          &cached_spec));
    }
  } else {
    void* tw = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(tw_bytes, &tw, "fftconv: twiddle table"));
    a.tw = static_cast<float2*>(tw);
    FK_RETURN_IF_ERROR(launch_twiddles(static_cast<float2*>(tw), N, stream));
  }

  const GenericScratch sc = generic_scratch(p);  // what fftconv_workspace() reports
  float2* ws = nullptr;
  int64_t ws_rows = sc.rows > 0 ? int64_t(sc.rows) / (N * int64_t(sizeof(float2))) : 0;
  if (cached_spec) {
    return run_convolution(a, four_step, static_cast<const float2*>(cached_spec->data), 0,
                           p.channels, arena, &ws, &ws_rows, stream);
  }
  // Spectra per chunk of channels, in scratch memory reused (in stream order) by every chunk.
  const int64_t chunk = sc.spec_chunk;
  void* spec = nullptr;
  FK_RETURN_IF_ERROR(arena.alloc(static_cast<size_t>(sc.spec), &spec,
                                 "fftconv: filter spectrum"));
  for (int64_t c0 = 0; c0 < p.channels; c0 += chunk) {
    const int64_t count = std::min<int64_t>(chunk, p.channels - c0);
    FK_RETURN_IF_ERROR(
        compute_spectrum(a, four_step, static_cast<float2*>(spec), c0, count, stream));
    FK_RETURN_IF_ERROR(run_convolution(a, four_step, static_cast<float2*>(spec), c0, count, arena,
                                       &ws, &ws_rows, stream));
  }
  return FK_SUCCESS;
}

}  // namespace generic
}  // namespace cuda
}  // namespace flashkit
