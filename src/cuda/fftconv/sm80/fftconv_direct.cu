// cuda.sm80.fftconv_direct: the convolution of rows up to 2048 long as a Toeplitz matrix
// product on the tensor cores (mma.sync m16n8k16, fp32 accumulation). Same result contract as
// the FFT kernels (flashkit.h, fftconv group): y = postgate * (conv(v, k) + D * v), v = pregate
// * u, every mode, and a row whose v, or whose channel's filter, holds a NaN or Inf gets NaN in
// every output, as an FFT would give.
//
// Why a direct product in an FFT family: for one channel c, the convolution of all batch rows is
// Y_c = V_c T_c^T with T_c[n][s] = kk_c[n - s] (Toeplitz; kk_c is the filter placed on the
// diagonals per mode, conv_io.cuh's load_filter). At seqlen L that is L^2 multiply-adds per row
// (half for causal), against ~5 N log2 N for an FFT of size N = 2L, but on the tensor cores,
// whose rate is ~16x the fp32 rate the FFT's twiddles and radix steps run at. With the filter
// shared by the batch (the case of Hyena and M2 layers, and of the issue 8 benchmark: B 64,
// H 768), T_c is read from shared memory once per 32 rows. Measured on the H200: see
// benchmarks/RESULTS.md ("Direct convolution for short rows").
//
// How it is built:
// - One CTA per (channel, 32 batch rows): v for its 32 rows (L rounded up to 64, zero-filled,
//   pregate applied in fp32, rounded to the plan's 16-bit dtype) in shared memory, and the
//   channel's diagonal table: entry e holds the pair (kk[d], kk[d - 1]), d = e - Lp, packed as
//   one 32-bit register. The B fragment of mma.sync (k 2t, 2t + 1 of column g) for the 16 x 8
//   block of T at (n0, k0) is entry n0 - k0 + g - 2t, and its second register the entry 8
//   below: every B fragment is two 32-bit shared loads, and the eight n8 tiles of a k-step share
//   nine entries. A fragments (v) come by ldmatrix from rows padded by 16 bytes (conflict-free).
// - Each warp owns 64-position output tiles, 32 rows x 64 = 2 x 8 mma tiles of fp32
//   accumulators, and walks only the k-steps where the diagonal table is not zero (causal: k <=
//   n; bidirectional: |n - k| <= R). Tiles are dealt in a snake (warp w takes tiles w and 2W - 1
//   - w of each pair of rounds), which balances the causal triangle.
// - The filter is scaled by a power of two per channel (fp16: largest tap in [2^13, 2^14), so
//   taps down to 2^-27 of it stay normal; bf16: in [0.5, 1), keeping fp32's range for the
//   accumulators) and the output scaled back in fp32 (exact).
// - Epilogue straight from the accumulators: D * v from the shared v (exact: v = u), or with a
//   pregate from u and the pregate in fp32 (the shared v is rounded), the postgate from global
//   memory, 4-byte stores of element pairs where y is aligned, scalar stores otherwise.
// - What it can run: fp16/bf16, seqlen <= 2048, every mode, D, gates (fp16 without a pregate:
//   v = pregate * u can leave the fp16 range, where the FFT kernel scales its rows), any batch
//   (rows padded to groups of 32). AUTO takes only the window where it measured faster than
//   the FFT kernel (kAuto* below: 256 <= seqlen <= 1024, batch >= 24);
//   FLASHKIT_FFTCONV_DIRECT=1 takes all it can run (tests), =0 nothing.
// - Not yet: the copies of a block's rows and its epilogue do not overlap its tensor work (two
//   blocks per multiprocessor, in step): at L 1K, B 64 it runs 0.20 ms for 54.8 GFLOP (~270
//   TFLOP/s). A persistent, double-buffered or wgmma (sm_90a) version is the next step.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <type_traits>
#include <cstdint>
#include <cstdlib>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/fftconv/common/conv_io.cuh"
#include "cuda/fftconv/common/direct_common.cuh"
#include "cuda/fftconv/sm80/fftconv_direct.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

constexpr int kRows = 32;    // batch rows per CTA: two m16 tiles per warp
constexpr int kTileN = 64;   // output positions per warp tile: eight n8 tiles
constexpr int kMaxWarps = 8;
constexpr int64_t kMaxL = 2048;
// Where AUTO picks it (measured on the H200 against cuda.sm80.fftconv_reg, benchmarks/RESULTS.md
// "Direct convolution for short rows"): 256 <= seqlen <= 1024 and batch >= 24, gated or not
// (1.03-1.70x there). Outside, the FFT kernel was faster: seqlen 2048 (0.91x not gated; the
// tensor work grows as seqlen^2) and batch 16 (0.84-0.92x; rows are padded to groups of 32);
// below seqlen 256 it was not measured.
constexpr int64_t kAutoMinL = 256, kAutoMaxL = 1024, kAutoMinBatch = 24;

using conv::DirectArgs;

// v (kRows rows of Lp + 8 16-bit elements), the pair table (2 Lp words) and the channel's taps
// on the diagonals -Lp .. Lp - 1 as fp32 (2 Lp floats).
size_t smem_bytes(int Lp) {
  return size_t(kRows) * size_t(Lp + 8) * 2 + size_t(2 * Lp) * (sizeof(uint32_t) + sizeof(float));
}

// Filter taps per thread: 2 Lp over 32 W threads, W = min(8, max(1, Lp / 128)), is at most 16.
constexpr int kTapRegs = 16;

template <class T>
__global__ void __launch_bounds__(kMaxWarps * 32, 2) direct_kernel(const DirectArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  uint32_t* pt = reinterpret_cast<uint32_t*>(smem + size_t(kRows) * a.xs * sizeof(T));
  float* taps = reinterpret_cast<float*>(pt + 2 * a.Lp);  // taps[Lp + d] = kk[d], d in [-Lp, Lp)
  __shared__ conv::DirectFlags<kRows> flags;

  const int tid = threadIdx.x, nthr = blockDim.x;
  const int64_t c = blockIdx.x / a.row_groups;
  const int64_t b0 = int64_t(blockIdx.x % a.row_groups) * kRows;
  const int L = static_cast<int>(a.L), Lp = a.Lp;

  // 1-3 (direct_common.cuh): taps, rows of v, the filter scale, NaN flags; the diagonal table
  // built while the row copies are in flight.
  const int sexp = conv::direct_prologue<T, kRows, kTapRegs, 8, true>(a, c, b0, xs, a.xs, taps, flags, [&](int se) {
    for (int e = tid; e < 2 * Lp; e += nthr) {
      // (kk[d], kk[d - 1]) for d = e - Lp; kk[-Lp] is never reached by an output (zero).
      pt[e] = Elt<T>::pack(ldexpf(taps[e], se), e > 0 ? ldexpf(taps[e - 1], se) : 0.0f);
    }
  });

  // 4. The product, one 32 x 64 output tile per warp at a time.
  const int warp = tid >> 5, lane = tid & 31, W = nthr >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const uint32_t a_lane = smem_u32(xs) + ((lane & 15) * a.xs + (lane >> 4) * 8) * sizeof(T);
  const float inv = ldexpf(1.0f, -sexp);
  const float Dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
  const bool kbad = flags.kbad != 0;
  for (int ti = 0;; ++ti) {
    const int j = ti * W + ((ti & 1) ? W - 1 - warp : warp);
    if (j >= a.ntiles) break;
    const int N0 = j * kTileN;
    int kb = N0 - a.dhi;
    kb = kb < 0 ? 0 : (kb & ~15);
    int ke = N0 + kTileN - a.dlo;
    ke = min(Lp, (ke + 15) & ~15);
    float acc[2][8][4];
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][n][i] = 0.0f;
    for (int k0 = kb; k0 < ke; k0 += 16) {
      uint32_t af[2][4];
      ldsm_x4(af[0], a_lane + k0 * sizeof(T));
      ldsm_x4(af[1], a_lane + (16 * a.xs + k0) * sizeof(T));
      const uint32_t* pq = pt + (N0 - k0 + g - 2 * t4 + Lp - 8);
      uint32_t q[9];
#pragma unroll
      for (int i = 0; i < 9; ++i) q[i] = pq[8 * i];
#pragma unroll
      for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int n = 0; n < 8; ++n) Elt<T>::mma(acc[m][n], af[m], q[n + 1], q[n]);
    }
    // Epilogue: rows 16 m + g (+ 8 for the second register pair), positions N0 + 8 n + 2 t4.
    // A tile inside the row whose rows allow element pairs takes the lean path, four n8 tiles
    // at a time (direct_common.cuh: loads first, then stores); the tile at the end of the row
    // and unaligned rows take the general one.
    const bool full = a.lean && N0 + kTileN <= L;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * m + g + 8 * h;
        const int64_t b = b0 + r;
        if (b >= a.batch) continue;
        const conv::DirectRow<T> row(a, b, c, xs + size_t(r) * a.xs, kbad || flags.rowbad[r] != 0);
        if (full) {
#pragma unroll
          for (int n0 = 0; n0 < 8; n0 += 4) {
            int t[4];
            float y0[4], y1[4];
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              t[n] = N0 + 8 * (n0 + n) + 2 * t4;
              y0[n] = acc[m][n0 + n][2 * h] * inv;
              y1[n] = acc[m][n0 + n][2 * h + 1] * inv;
            }
            conv::store_pairs_lean<T, 4, 8>(a, row, Dc, t, y0, y1);
          }
          continue;
        }
#pragma unroll 1
        for (int n = 0; n < 8; ++n) {
          const int t = N0 + 8 * n + 2 * t4;
          if (t >= L) break;
          // acc[m][n] with a run-time n: select the pair without indexing registers.
          float y0 = 0.0f, y1 = 0.0f;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            if (k == n) {
              y0 = acc[m][k][2 * h] * inv;
              y1 = acc[m][k][2 * h + 1] * inv;
            }
          }
          conv::store_pair<T, 8>(a, row, Dc, t, y0, y1);
        }
      }
  }
}

}  // namespace

bool fftconv_direct_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major < 8) return false;
  const int setting = conv::direct_setting();
  if (setting == 0 || !conv::direct_runs(p, kMaxL, kRows)) return false;
  if (setting != 1 && (p.seqlen < kAutoMinL || p.seqlen > kAutoMaxL || p.batch < kAutoMinBatch))
    return false;
  const int Lp = static_cast<int>((p.seqlen + kTileN - 1) / kTileN * kTileN);
  // + 1024: the kernel's static shared memory counts against the same per-block limit.
  return static_cast<int64_t>(smem_bytes(Lp > 0 ? Lp : kTileN)) + 1024 <= caps.smem_per_block_optin;
}

fk_status_t fftconv_direct(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  if ((p.dtype != DType::F16 && p.dtype != DType::BF16) || p.seqlen > kMaxL || p.filter_len <= 0) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.fftconv_direct: problem outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);

  const DirectArgs a = conv::make_direct_args(p, kTileN, kRows);
  const int64_t grid = p.channels * a.row_groups;
  if (grid > INT_MAX) {
    return set_error(FK_ERROR_NOT_SUPPORTED,
                     "cuda.sm80.fftconv_direct: channels x ceil(batch / 32) = %lld blocks exceeds "
                     "the grid limit",
                     static_cast<long long>(grid));
  }
  const int warps = std::max(1, std::min(kMaxWarps, a.ntiles / 2));
  if (2 * a.Lp > kTapRegs * 32 * warps) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.fftconv_direct: %d taps exceed the block's registers",
                     2 * a.Lp);
  }
  const size_t smem = smem_bytes(a.Lp);
  if (p.dtype == DType::BF16) {
    FK_RETURN_IF_ERROR(conv::allow_smem(reinterpret_cast<const void*>(direct_kernel<__nv_bfloat16>),
                                        smem, "cuda.sm80.fftconv_direct: shared memory"));
    direct_kernel<__nv_bfloat16><<<static_cast<unsigned>(grid), warps * 32, smem, stream>>>(a);
  } else {
    FK_RETURN_IF_ERROR(conv::allow_smem(reinterpret_cast<const void*>(direct_kernel<__half>), smem,
                                        "cuda.sm80.fftconv_direct: shared memory"));
    direct_kernel<__half><<<static_cast<unsigned>(grid), warps * 32, smem, stream>>>(a);
  }
  return check_launch("cuda.sm80.fftconv_direct kernel");
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
