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

struct DirectArgs : conv::ConvIO {
  int Lp;          // seqlen rounded up to kTileN
  int xs;          // shared-memory row stride of v, elements (Lp + 8)
  int ntiles;      // Lp / kTileN
  int dlo, dhi;    // kk[d] == 0 for d outside [dlo, dhi]
  int row_groups;  // ceil(batch / kRows)
  int vec;         // u and pregate rows 16-byte aligned: 16-byte loads
  int pair_y;      // y rows 4-byte aligned: stores of element pairs
  int pair_post;   // postgate rows 4-byte aligned
  int lean;        // pair_y, pair_post where there is a postgate, vec where D * v needs u and
                   // the pregate: the epilogue's lean path may run
};

// v (kRows rows of Lp + 8 16-bit elements), the pair table (2 Lp words) and the channel's taps
// on the diagonals -Lp .. Lp - 1 as fp32 (2 Lp floats).
size_t smem_bytes(int Lp) {
  return size_t(kRows) * size_t(Lp + 8) * 2 + size_t(2 * Lp) * (sizeof(uint32_t) + sizeof(float));
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
  uint4 w;
  w.x = Elt<T>::pack(v[0], v[1]);
  w.y = Elt<T>::pack(v[2], v[3]);
  w.z = Elt<T>::pack(v[4], v[5]);
  w.w = Elt<T>::pack(v[6], v[7]);
  return w;
}

template <class T>
__device__ __forceinline__ void unpack8(const uint4& r, float (&v)[8]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = Elt<T>::unpack(w[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// Index into channel c's filter row of the tap on diagonal d = n - s of T, d in [dlo, dhi]
// (conv_io.cuh's load_filter at position d mod N), or -1 where that diagonal is zero.
__device__ __forceinline__ int64_t diag_index(const DirectArgs& a, int d) {
  int64_t idx = d;
  switch (a.mode) {
    case FFTConvMode::Causal: break;
    case FFTConvMode::Circular: idx = d >= 0 ? d : d + a.N; break;
    case FFTConvMode::Bidirectional: idx = (a.filter_len - 1) / 2 + d; break;
  }
  return idx < a.filter_len ? idx : -1;
}

// Elements t and t + 1 of a row (the second only if `two`; 0 otherwise), as one 4-byte load
// where `pair` says the row allows it.
template <class T>
__device__ __forceinline__ float2 load_pair(const T* row, int t, bool two, bool pair) {
  if (pair && two) return Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(row + t));
  const float lo = static_cast<float>(row[t]);
  return make_float2(lo, two ? static_cast<float>(row[t + 1]) : 0.0f);
}

constexpr int kLoadBatch = 4;  // 16-byte chunks in flight per thread while v is loaded
// Filter taps per thread: 2 Lp over 32 W threads, W = min(8, max(1, Lp / 128)), is at most 16.
constexpr int kTapRegs = 16;

template <class T>
__global__ void __launch_bounds__(kMaxWarps * 32, 2) direct_kernel(const DirectArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  uint32_t* pt = reinterpret_cast<uint32_t*>(smem + size_t(kRows) * a.xs * sizeof(T));
  float* taps = reinterpret_cast<float*>(pt + 2 * a.Lp);  // taps[Lp + d] = kk[d], d in [-Lp, Lp)
  __shared__ unsigned int s_kmax;
  __shared__ int s_kbad;
  __shared__ int s_rowbad[kRows];

  const int tid = threadIdx.x, nthr = blockDim.x;
  const int64_t c = blockIdx.x / a.row_groups;
  const int64_t b0 = int64_t(blockIdx.x % a.row_groups) * kRows;
  const int L = static_cast<int>(a.L), Lp = a.Lp;
  if (tid == 0) {
    s_kmax = 0;
    s_kbad = 0;
  }
  if (tid < kRows) s_rowbad[tid] = 0;
  __syncthreads();

  // 1. The channel's taps on the diagonals -Lp .. Lp - 1, unscaled (zero off [dlo, dhi]): the
  //    loads go out first and land in shared memory after the row loads below are issued.
  float tv[kTapRegs];
#pragma unroll
  for (int s = 0; s < kTapRegs; ++s) {
    const int d = tid + s * nthr - Lp;
    const int64_t idx = (d >= a.dlo && d <= a.dhi) ? diag_index(a, d) : -1;
    tv[s] = idx >= 0 ? load_float(a.k, a.k_dtype, c * a.k_cs + idx) : 0.0f;
  }

  // 2. u for the CTA's rows: 16-byte cp.async where the row allows it (all of a thread's chunks
  //    in flight at once), scalar loads in an unaligned row or the last partial chunk, zeros
  //    past seqlen and past the batch.
  const int cpr = Lp / 8;  // 8-element chunks per row
  const int total = kRows * cpr;
  {  // copies
    for (int i = tid; i < total; i += nthr) {
      const int r = i / cpr, t0 = (i % cpr) * 8;
      const int64_t b = b0 + r;
      T* dst = xs + size_t(r) * a.xs + t0;
      if (b < a.batch && t0 < L) {
        const int64_t off = b * a.u_bs + c * a.u_cs + t0;
        if (a.vec && t0 + 8 <= L) {
          cp_async_16(smem_u32(dst), static_cast<const T*>(a.u) + off, 16);
        } else {
          float v[8];
#pragma unroll
          for (int j = 0; j < 8; ++j) v[j] = t0 + j < L ? load_float(a.u, a.dtype, off + j) : 0.0f;
          const uint4 w = pack8<T>(v);
          *reinterpret_cast<uint4*>(dst) = w;
        }
      } else {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0u, 0u, 0u, 0u);
      }
    }
    cp_async_commit();
  }
#pragma unroll
  for (int s = 0; s < kTapRegs; ++s) {
    const int e = tid + s * nthr;
    if (e < 2 * Lp) taps[e] = tv[s];
  }

  // 3. The channel's largest tap and whether any tap is not finite; the diagonal table, scaled
  //    by a power of two so that the largest tap lies in [2^13, 2^14) for fp16 (taps down to
  //    2^-27 of the largest stay normal) and in [0.5, 1) for bf16 (whose range is
  //    fp32's: a larger scale would only move the accumulators toward overflow). Then v = pregate * u in place (each thread
  //    its own chunks, once its copies landed; the pregate's loads kLoadBatch chunks at a time)
  //    and whether each row is finite.
  __syncthreads();
  {
    float m = 0.0f;
    int bad = 0;
    for (int e = tid; e < 2 * Lp; e += nthr) {
      const float v = taps[e];
      if (isfinite(v)) {
        m = fmaxf(m, fabsf(v));
      } else {
        bad = 1;
      }
    }
    if (m > 0.0f) atomicMax(&s_kmax, __float_as_uint(m));
    if (bad) s_kbad = 1;
  }
  __syncthreads();
  const float kmax = __uint_as_float(s_kmax);
  int sexp = 0;
  if (kmax > 0.0f) {
    int e = 0;
    frexpf(kmax, &e);
    sexp = min((std::is_same<T, __half>::value ? 14 : 0) - e, 120);
  }
  for (int e = tid; e < 2 * Lp; e += nthr) {
    // (kk[d], kk[d - 1]) for d = e - Lp; kk[-Lp] is never reached by an output (zero).
    pt[e] = Elt<T>::pack(ldexpf(taps[e], sexp), e > 0 ? ldexpf(taps[e - 1], sexp) : 0.0f);
  }

  cp_async_wait<0>();
  for (int i0 = tid; i0 < total; i0 += kLoadBatch * nthr) {
    uint4 rp[kLoadBatch];
    if (a.pre != nullptr) {
#pragma unroll
      for (int s = 0; s < kLoadBatch; ++s) {
        const int i = i0 + s * nthr;
        const int r = i / cpr, t0 = (i % cpr) * 8;
        const int64_t b = b0 + r;
        if (i < total && a.vec && b < a.batch && t0 + 8 <= L) {
          rp[s] = __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(a.pre) +
                                                       b * a.pre_bs + c * a.pre_cs + t0));
        }
      }
    }
#pragma unroll
    for (int s = 0; s < kLoadBatch; ++s) {
      const int i = i0 + s * nthr;
      if (i >= total) break;
      const int r = i / cpr, t0 = (i % cpr) * 8;
      const int64_t b = b0 + r;
      if (b >= a.batch || t0 >= L) continue;
      T* dst = xs + size_t(r) * a.xs + t0;
      float v[8];
      unpack8<T>(*reinterpret_cast<const uint4*>(dst), v);
      if (a.pre != nullptr) {
        if (a.vec && t0 + 8 <= L) {
          float p[8];
          unpack8<T>(rp[s], p);
#pragma unroll
          for (int j = 0; j < 8; ++j) v[j] *= p[j];
        } else {
          const int64_t off = b * a.pre_bs + c * a.pre_cs + t0;
#pragma unroll
          for (int j = 0; j < 8; ++j)
            v[j] *= t0 + j < L ? load_float(a.pre, a.dtype, off + j) : 0.0f;
        }
        const uint4 w = pack8<T>(v);
        *reinterpret_cast<uint4*>(dst) = w;
        unpack8<T>(w, v);  // a finite fp32 product can round to Inf in 16 bits
      }
      bool bad = false;
#pragma unroll
      for (int j = 0; j < 8; ++j) bad |= !isfinite(v[j]);
      if (bad) s_rowbad[r] = 1;
    }
  }
  __syncthreads();

  // 4. The product, one 32 x 64 output tile per warp at a time.
  const int warp = tid >> 5, lane = tid & 31, W = nthr >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const uint32_t a_lane = smem_u32(xs) + ((lane & 15) * a.xs + (lane >> 4) * 8) * sizeof(T);
  const float inv = ldexpf(1.0f, -sexp);
  const float Dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
  const bool kbad = s_kbad != 0;
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
    // A tile inside the row whose rows allow element pairs takes the lean path: the row's
    // global loads (postgate; u and the pregate for an exact D * v) all issued first, then
    // 4-byte stores; the tile at the end of the row and unaligned rows take the general one.
    const bool full = a.lean && N0 + kTileN <= L;
    const bool d_exact = a.D != nullptr && a.pre != nullptr;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * m + g + 8 * h;
        const int64_t b = b0 + r;
        if (b >= a.batch) continue;
        const bool nan = kbad || s_rowbad[r] != 0;
        T* yrow = static_cast<T*>(a.y) + b * a.y_bs + c * a.y_cs;
        const T* prow = a.post != nullptr
                            ? static_cast<const T*>(a.post) + b * a.post_bs + c * a.post_cs
                            : nullptr;
        const T* urow = static_cast<const T*>(a.u) + b * a.u_bs + c * a.u_cs;
        const T* grow = a.pre != nullptr
                            ? static_cast<const T*>(a.pre) + b * a.pre_bs + c * a.pre_cs
                            : nullptr;
        const T* vrow = xs + size_t(r) * a.xs;
        if (full) {
#pragma unroll
          for (int n0 = 0; n0 < 8; n0 += 4) {  // four n8 tiles at a time: loads, then stores
            uint32_t pw[4], uw[4], gw[4];
            if (prow != nullptr) {
#pragma unroll
              for (int n = 0; n < 4; ++n)
                pw[n] = __ldg(reinterpret_cast<const unsigned int*>(prow + N0 + 8 * (n0 + n) +
                                                                    2 * t4));
            }
            if (d_exact) {
#pragma unroll
              for (int n = 0; n < 4; ++n) {
                const int t = N0 + 8 * (n0 + n) + 2 * t4;
                uw[n] = __ldg(reinterpret_cast<const unsigned int*>(urow + t));
                gw[n] = __ldg(reinterpret_cast<const unsigned int*>(grow + t));
              }
            }
#pragma unroll
            for (int n = 0; n < 4; ++n) {
              const int t = N0 + 8 * (n0 + n) + 2 * t4;
              float y0 = acc[m][n0 + n][2 * h] * inv, y1 = acc[m][n0 + n][2 * h + 1] * inv;
              if (a.D != nullptr) {
                float2 v;
                if (d_exact) {  // v = pregate * u in fp32 (the shared copy is rounded)
                  const float2 u = Elt<T>::unpack(uw[n]), q = Elt<T>::unpack(gw[n]);
                  v = make_float2(u.x * q.x, u.y * q.y);
                } else {  // v = u, exact in shared memory
                  v = Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(vrow + t));
                }
                y0 += Dc * v.x;
                y1 += Dc * v.y;
              }
              if (prow != nullptr) {
                const float2 p = Elt<T>::unpack(pw[n]);
                y0 *= p.x;
                y1 *= p.y;
              }
              if (nan) y0 = y1 = __int_as_float(0x7fffffff);
              *reinterpret_cast<uint32_t*>(yrow + t) = Elt<T>::pack(y0, y1);
            }
          }
          continue;
        }
#pragma unroll 1
        for (int n = 0; n < 8; ++n) {
          const int t = N0 + 8 * n + 2 * t4;
          if (t >= L) break;
          const bool two = t + 1 < L;
          // acc[m][n] with a run-time n: select the pair without indexing registers.
          float y0 = 0.0f, y1 = 0.0f;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            if (k == n) {
              y0 = acc[m][k][2 * h] * inv;
              y1 = acc[m][k][2 * h + 1] * inv;
            }
          }
          if (a.D != nullptr) {
            float2 v;
            if (d_exact) {
              const float2 u = load_pair(urow, t, two, a.vec != 0);
              const float2 q = load_pair(grow, t, two, a.vec != 0);
              v = make_float2(u.x * q.x, u.y * q.y);
            } else {
              v = Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(vrow + t));
            }
            y0 += Dc * v.x;
            y1 += Dc * v.y;
          }
          if (prow != nullptr) {
            const float2 p = load_pair(prow, t, two, a.pair_post != 0);
            y0 *= p.x;
            y1 *= p.y;
          }
          if (nan) y0 = y1 = __int_as_float(0x7fffffff);
          if (a.pair_y && two) {
            *reinterpret_cast<uint32_t*>(yrow + t) = Elt<T>::pack(y0, y1);
          } else {
            store_float(yrow, a.dtype, t, y0);
            if (two) store_float(yrow, a.dtype, t + 1, y1);
          }
        }
      }
  }
}

// 0: declines everything; 1: takes everything it can run (any batch, gates, seqlen <= 2048);
// -1 (unset, other values): the measured window (kAuto*).
int direct_setting() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_DIRECT");
  if (e == nullptr) return -1;
  if (e[0] == '0') return 0;
  if (e[0] == '1') return 1;
  return -1;
}

}  // namespace

bool fftconv_direct_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major < 8) return false;
  const int setting = direct_setting();
  if (setting == 0) return false;
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  if (p.dtype == DType::F16 && p.pregate != nullptr) return false;
  if (p.seqlen > kMaxL || p.filter_len <= 0) return false;
  if (setting != 1 && (p.seqlen < kAutoMinL || p.seqlen > kAutoMaxL || p.batch < kAutoMinBatch))
    return false;
  if (p.channels * ((p.batch + kRows - 1) / kRows) > INT_MAX) return false;  // one block each
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

  DirectArgs a;
  static_cast<conv::ConvIO&>(a) = conv::conv_io(p);
  const int L = static_cast<int>(p.seqlen);
  a.Lp = (L + kTileN - 1) / kTileN * kTileN;
  a.xs = a.Lp + 8;
  a.ntiles = a.Lp / kTileN;
  const int64_t fl = p.filter_len;
  switch (p.mode) {
    case FFTConvMode::Causal:
      a.dlo = 0;
      a.dhi = static_cast<int>(std::min<int64_t>(fl, L)) - 1;
      break;
    case FFTConvMode::Circular:
      // d >= 0: tap d; d < 0: tap d + N, which exists when d + N < filter_len.
      a.dhi = static_cast<int>(std::min<int64_t>(fl, L)) - 1;
      a.dlo = fl - 1 - p.fft_size >= -(int64_t(L) - 1) ? -(L - 1) : 0;
      break;
    case FFTConvMode::Bidirectional: {
      const int64_t R = std::min<int64_t>((fl - 1) / 2, L - 1);
      a.dlo = -static_cast<int>(R);
      a.dhi = static_cast<int>(R);
      break;
    }
  }
  a.row_groups = static_cast<int>((p.batch + kRows - 1) / kRows);
  a.vec = conv::rows_aligned(p.u, 16, p.u_batch_stride, p.u_channel_stride) &&
          conv::rows_aligned(p.pregate, 16, p.pre_batch_stride, p.pre_channel_stride);
  a.pair_y = conv::rows_aligned(p.y, 4, p.y_batch_stride, p.y_channel_stride);
  a.pair_post = conv::rows_aligned(p.postgate, 4, p.post_batch_stride, p.post_channel_stride);
  a.lean = a.pair_y && a.pair_post && (p.D == nullptr || p.pregate == nullptr || a.vec);

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
