// What the two direct (Toeplitz) convolution kernels share: cuda.sm80.fftconv_direct
// (sm80/fftconv_direct.cu, mma.sync) and cuda.sm90.fftconv_direct (sm90/fftconv_direct90.cu,
// wgmma). Both compute, for one channel c and a group of batch rows, Y_c = V_c T_c^T with
// T_c[n][s] = kk_c[n - s] (kk_c: the filter placed on the diagonals per mode), and both start
// the same way (direct_prologue below): the channel's taps, the rows of v = pregate * u in shared
// memory, a power-of-two filter scale, and which rows or taps are not finite. They differ in how
// T_c reaches the tensor cores and in the shape of their accumulator tiles; the epilogue's
// per-pair work (D * v, the postgate, NaN rows, the store) is store_pairs below.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/fftconv/common/conv_io.cuh"

namespace flashkit {
namespace cuda {
namespace conv {

struct DirectArgs : ConvIO {
  int Lp;          // seqlen rounded up to the kernel's output tile
  int xs;          // shared-memory row stride of v, elements (Lp + 8)
  int ntiles;      // Lp / output tile
  int dlo, dhi;    // kk[d] == 0 for d outside [dlo, dhi]
  int row_groups;  // ceil(batch / rows per CTA)
  int vec;         // u and pregate rows 16-byte aligned: 16-byte loads
  int pair_y;      // y rows 4-byte aligned: stores of element pairs
  int pair_post;   // postgate rows 4-byte aligned
  int lean;        // pair_y, pair_post where there is a postgate, vec where D * v needs u and
                   // the pregate: the epilogue's lean path may run
  int lean16;      // the same with 16-byte rows of y and the postgate (the sm90 kernel's
                   // chunked epilogue)
};

// The plan fields both kernels derive the same way, for output tiles of `tile_n` positions and
// CTAs of `rows` batch rows.
inline DirectArgs make_direct_args(const FFTConvProblem& p, int tile_n, int rows) {
  DirectArgs a;
  static_cast<ConvIO&>(a) = conv_io(p);
  const int L = static_cast<int>(p.seqlen);
  a.Lp = (L + tile_n - 1) / tile_n * tile_n;
  a.xs = a.Lp + 8;
  a.ntiles = a.Lp / tile_n;
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
  a.row_groups = static_cast<int>((p.batch + rows - 1) / rows);
  a.vec = rows_aligned(p.u, 16, p.u_batch_stride, p.u_channel_stride) &&
          rows_aligned(p.pregate, 16, p.pre_batch_stride, p.pre_channel_stride);
  a.pair_y = rows_aligned(p.y, 4, p.y_batch_stride, p.y_channel_stride);
  a.pair_post = rows_aligned(p.postgate, 4, p.post_batch_stride, p.post_channel_stride);
  a.lean = a.pair_y && a.pair_post && (p.D == nullptr || p.pregate == nullptr || a.vec);
  a.lean16 = rows_aligned(p.y, 16, p.y_batch_stride, p.y_channel_stride) &&
             rows_aligned(p.postgate, 16, p.post_batch_stride, p.post_channel_stride) &&
             (p.D == nullptr || p.pregate == nullptr || a.vec);
  return a;
}

// FLASHKIT_FFTCONV_DIRECT, read at each call by both direct kernels' predicates: 0 declines
// everything, 1 takes everything the kernel can run, -1 (unset, other values) its measured
// window.
inline int direct_setting() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_DIRECT");
  if (e == nullptr) return -1;
  if (e[0] == '0') return 0;
  if (e[0] == '1') return 1;
  return -1;
}

// What both direct kernels need of a problem whatever the window: fp16/bf16 (fp16 without a
// pregate: v = pregate * u could leave the fp16 range), seqlen <= max_L, a filter, and one
// block per (channel, group of `rows` batch rows) within the grid limit.
inline bool direct_runs(const FFTConvProblem& p, int64_t max_L, int64_t rows) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  if (p.dtype == DType::F16 && p.pregate != nullptr) return false;
  if (p.seqlen > max_L || p.filter_len <= 0) return false;
  return p.channels * ((p.batch + rows - 1) / rows) <= INT_MAX;
}

template <class T>
__device__ __forceinline__ uint4 pack8(const float (&v)[8]) {
  uint4 w;
  w.x = sm80::Elt<T>::pack(v[0], v[1]);
  w.y = sm80::Elt<T>::pack(v[2], v[3]);
  w.z = sm80::Elt<T>::pack(v[4], v[5]);
  w.w = sm80::Elt<T>::pack(v[6], v[7]);
  return w;
}

template <class T>
__device__ __forceinline__ void unpack8(const uint4& r, float (&v)[8]) {
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = sm80::Elt<T>::unpack(w[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// Index into channel c's filter row of the tap on diagonal d = n - s of T, d in [dlo, dhi]
// (load_filter at position d mod N), or -1 where that diagonal is zero.
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
  if (pair && two) return sm80::Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(row + t));
  const float lo = static_cast<float>(row[t]);
  return make_float2(lo, two ? static_cast<float>(row[t + 1]) : 0.0f);
}

// Offset of element t within a row of v in shared memory whose 8-element chunks lie kCS elements
// apart: 8 for plain rows (the sm80 kernel), 8 * rows for the sm90 kernel's chunk-major layout
// (chunk j of every row together: wgmma's no-swizzle core matrices).
template <int kCS>
__device__ __forceinline__ int vofs(int t) {
  return kCS == 8 ? t : (t >> 3) * kCS + (t & 7);
}

// Chunk i (of kRows * Lp / 8) of the CTA's rows of v: row r, first element t0. Plain rows go
// row by row; the chunk-major layout goes down the rows two chunks at a time, so that a pair of
// threads reads one 32-byte sector of a row and a warp's shared stores do not collide.
template <int kRows, int kCS>
__device__ __forceinline__ void chunk_of(int i, int cpr, int& r, int& t0) {
  if (kCS == 8) {
    r = i / cpr;
    t0 = (i % cpr) * 8;
  } else {
    r = (i >> 1) % kRows;
    t0 = 8 * (2 * (i / (2 * kRows)) + (i & 1));
  }
}

// Flags the prologue leaves in (static) shared memory.
template <int kRows>
struct DirectFlags {
  unsigned int kmax;  // the channel's largest |tap|, as fp32 bits
  int kbad;           // a tap is not finite
  int rowbad[kRows];  // row r of v holds a value that is not finite (after rounding)
};

constexpr int kLoadBatch = 4;  // 16-byte chunks in flight per thread while v is loaded

// The power-of-two scale 2^sexp for taps whose largest magnitude is kmax (0: no scale): fp16
// taps to [2^13, 2^14), bf16 to [0.5, 1); at most 2^120 up and at most 2^-126 down, so that the
// scale back, 2^-sexp, stays a finite fp32 (bf16 taps of 2^127 and more would otherwise be
// scaled back by 2^128 = Inf).
template <class T>
__device__ __forceinline__ int tap_scale_exp(float kmax) {
  if (!(kmax > 0.0f)) return 0;
  int e = 0;
  frexpf(kmax, &e);
  return max(min((std::is_same<T, __half>::value ? 14 : 0) - e, 120), -126);
}

// Steps 1-3 of both kernels, run by every thread of the CTA, ending with a CTA barrier:
// 1. Channel c's taps on the diagonals -Lp .. Lp - 1, unscaled (zero off [dlo, dhi]), into
//    taps[Lp + d]: the loads go out first and land in shared memory after the row loads.
// 2. u for rows b0 .. b0 + kRows - 1 into xs (element t of row r at xs + r * rs + vofs<kCS>(t),
//    Lp elements per row; chunk_of gives each thread's chunks): 16-byte
//    cp.async where the row allows it, scalar loads in an unaligned row or the last partial
//    chunk, zeros past seqlen and past the batch.
// 3. The largest tap and whether any tap is not finite; the power-of-two scale 2^sexp that puts
//    the largest tap in [2^13, 2^14) for fp16 (taps down to 2^-27 of the largest stay normal)
//    and in [0.5, 1) for bf16 (whose range is fp32's: a larger scale would only move the
//    accumulators toward overflow; [1, 4) for taps of 2^127 and more, see below); build_table(sexp) (the kernel's own form of T, from taps,
//    while the row copies are in flight); then v = pregate * u in place (each thread its own
//    chunks, once its copies landed; the pregate's loads kLoadBatch chunks at a time) and,
//    with kCheckRows, whether each row is finite (the sm90 kernel finds that on its tensor
//    cores instead, and skips the pass when there is no pregate).
// Returns sexp.
template <class T, int kRows, int kTapRegs, int kCS, bool kCheckRows, class BuildTable>
__device__ __forceinline__ int direct_prologue(const DirectArgs& a, int64_t c, int64_t b0, T* xs,
                                               int rs, float* taps, DirectFlags<kRows>& f,
                                               BuildTable&& build_table) {
  const int tid = threadIdx.x, nthr = blockDim.x;
  const int L = static_cast<int>(a.L), Lp = a.Lp;
  if (tid == 0) {
    f.kmax = 0;
    f.kbad = 0;
  }
  if (tid < kRows) f.rowbad[tid] = 0;
  __syncthreads();

  float tv[kTapRegs];
#pragma unroll
  for (int s = 0; s < kTapRegs; ++s) {
    const int d = tid + s * nthr - Lp;
    const int64_t idx = (d >= a.dlo && d <= a.dhi) ? diag_index(a, d) : -1;
    tv[s] = idx >= 0 ? load_float(a.k, a.k_dtype, c * a.k_cs + idx) : 0.0f;
  }

  const int cpr = Lp / 8;  // 8-element chunks per row
  const int total = kRows * cpr;
  {  // copies
    for (int i = tid; i < total; i += nthr) {
      int r, t0;
      chunk_of<kRows, kCS>(i, cpr, r, t0);
      const int64_t b = b0 + r;
      T* dst = xs + size_t(r) * rs + vofs<kCS>(t0);
      if (b < a.batch && t0 < L) {
        const int64_t off = b * a.u_bs + c * a.u_cs + t0;
        if (a.vec && t0 + 8 <= L) {
          sm80::cp_async_16(sm80::smem_u32(dst), static_cast<const T*>(a.u) + off, 16);
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
    sm80::cp_async_commit();
  }
#pragma unroll
  for (int s = 0; s < kTapRegs; ++s) {
    const int e = tid + s * nthr;
    if (e < 2 * Lp) taps[e] = tv[s];
  }

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
    if (m > 0.0f) atomicMax(&f.kmax, __float_as_uint(m));
    if (bad) f.kbad = 1;
  }
  __syncthreads();
  const int sexp = tap_scale_exp<T>(__uint_as_float(f.kmax));
  build_table(sexp);

  sm80::cp_async_wait<0>();
  for (int i0 = tid; (kCheckRows || a.pre != nullptr) && i0 < total; i0 += kLoadBatch * nthr) {
    uint4 rp[kLoadBatch];
    if (a.pre != nullptr) {
#pragma unroll
      for (int s = 0; s < kLoadBatch; ++s) {
        const int i = i0 + s * nthr;
        int r, t0;
        chunk_of<kRows, kCS>(i, cpr, r, t0);
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
      int r, t0;
      chunk_of<kRows, kCS>(i, cpr, r, t0);
      const int64_t b = b0 + r;
      if (b >= a.batch || t0 >= L) continue;
      T* dst = xs + size_t(r) * rs + vofs<kCS>(t0);
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
      if (kCheckRows) {
        bool bad = false;
#pragma unroll
        for (int j = 0; j < 8; ++j) bad |= !isfinite(v[j]);
        if (bad) f.rowbad[r] = 1;
      }
    }
  }
  __syncthreads();
  return sexp;
}

// One batch row's operands for the epilogue (v: element t at v + vofs<kCS>(t)).
template <class T, int kCS = 8>
struct DirectRow {
  T* y;             // y row
  const T* post;    // postgate row, or nullptr
  const T* u;       // u row
  const T* pre;     // pregate row, or nullptr
  const T* v;       // the row of v in shared memory
  bool nan;         // the row's v or the channel's taps hold a NaN or Inf

  __device__ __forceinline__ DirectRow(const DirectArgs& a, int64_t b, int64_t c, const T* vrow,
                                       bool nan_row)
      : y(static_cast<T*>(a.y) + b * a.y_bs + c * a.y_cs),
        post(a.post != nullptr ? static_cast<const T*>(a.post) + b * a.post_bs + c * a.post_cs
                               : nullptr),
        u(static_cast<const T*>(a.u) + b * a.u_bs + c * a.u_cs),
        pre(a.pre != nullptr ? static_cast<const T*>(a.pre) + b * a.pre_bs + c * a.pre_cs
                             : nullptr),
        v(vrow),
        nan(nan_row) {}
};

// y[t], y[t + 1] of a row from the scaled-back products y0, y1 at NP pairs t[i], all inside the
// row (t[i] + 1 < L) where the row allows the lean path (a.lean): the row's global loads
// (postgate; u and the pregate for an exact D * v) all issued first, then 4-byte stores.
// D * v is exact: v from the shared copy (v = u there, no pregate) or pregate * u in fp32.
template <class T, int NP, int kCS>
__device__ __forceinline__ void store_pairs_lean(const DirectArgs& a, const DirectRow<T, kCS>& row,
                                                 float Dc, const int (&t)[NP], float (&y0)[NP],
                                                 float (&y1)[NP]) {
  const bool d_exact = a.D != nullptr && a.pre != nullptr;
  uint32_t pw[NP], uw[NP], gw[NP];
  if (row.post != nullptr) {
#pragma unroll
    for (int n = 0; n < NP; ++n)
      pw[n] = __ldg(reinterpret_cast<const unsigned int*>(row.post + t[n]));
  }
  if (d_exact) {
#pragma unroll
    for (int n = 0; n < NP; ++n) {
      uw[n] = __ldg(reinterpret_cast<const unsigned int*>(row.u + t[n]));
      gw[n] = __ldg(reinterpret_cast<const unsigned int*>(row.pre + t[n]));
    }
  }
#pragma unroll
  for (int n = 0; n < NP; ++n) {
    if (a.D != nullptr) {
      float2 v;
      if (d_exact) {
        const float2 u = sm80::Elt<T>::unpack(uw[n]), q = sm80::Elt<T>::unpack(gw[n]);
        v = make_float2(u.x * q.x, u.y * q.y);
      } else {
        v = sm80::Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(row.v + vofs<kCS>(t[n])));
      }
      y0[n] += Dc * v.x;
      y1[n] += Dc * v.y;
    }
    if (row.post != nullptr) {
      const float2 p = sm80::Elt<T>::unpack(pw[n]);
      y0[n] *= p.x;
      y1[n] *= p.y;
    }
    if (row.nan) y0[n] = y1[n] = __int_as_float(0x7fffffff);
    *reinterpret_cast<uint32_t*>(row.y + t[n]) = sm80::Elt<T>::pack(y0[n], y1[n]);
  }
}

// The same for one pair anywhere in the row (t < L; y[t + 1] only if t + 1 < L) and any row
// alignment.
template <class T, int kCS>
__device__ __forceinline__ void store_pair(const DirectArgs& a, const DirectRow<T, kCS>& row, float Dc,
                                           int t, float y0, float y1) {
  const int L = static_cast<int>(a.L);
  const bool two = t + 1 < L;
  if (a.D != nullptr) {
    float2 v;
    if (a.pre != nullptr) {
      const float2 u = load_pair(row.u, t, two, a.vec != 0);
      const float2 q = load_pair(row.pre, t, two, a.vec != 0);
      v = make_float2(u.x * q.x, u.y * q.y);
    } else {
      v = sm80::Elt<T>::unpack(*reinterpret_cast<const uint32_t*>(row.v + vofs<kCS>(t)));
    }
    y0 += Dc * v.x;
    y1 += Dc * v.y;
  }
  if (row.post != nullptr) {
    const float2 p = load_pair(row.post, t, two, a.pair_post != 0);
    y0 *= p.x;
    y1 *= p.y;
  }
  if (row.nan) y0 = y1 = __int_as_float(0x7fffffff);
  if (a.pair_y && two) {
    *reinterpret_cast<uint32_t*>(row.y + t) = sm80::Elt<T>::pack(y0, y1);
  } else {
    store_float(row.y, a.dtype, t, y0);
    if (two) store_float(row.y, a.dtype, t + 1, y1);
  }
}

}  // namespace conv
}  // namespace cuda
}  // namespace flashkit
