// sm80-class fused Monarch multiply ("cuda.sm80.monarch") and block-diagonal linear
// ("cuda.sm80.blockdiag_linear"): mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate), ldmatrix and
// cp.async; compiled into the fat binary (sm_90a, sm_80, compute_80 PTX), so it also serves Hopper:
// both ops are memory-bound, and mma.sync has the arithmetic rate they need.
//
// Monarch (semantics in flashkit.h, monarch group; m2's blockdiag_butterfly_multiply):
//   y1[t, k] = sum_c w1[k/q, k%q, c] x[t, (k/q)*p + c]        k < mid = nblocks1*q
//   z[t, j, b] = y1[t, b*nblocks2 + j]                         (the permutation P^T)
//   out[t, m*nblocks2 + j] = sum_b w2[j, m, b] z[t, j, b] + bias[m*nblocks2 + j]
// One CTA owns kT tokens and a group J of jb consecutive second-factor blocks (j0 .. j0+jb-1);
// the intermediate never leaves shared memory:
//   stage 1: the mid-indices k = b*nblocks2 + j (j in J, all b) fall into runs of 16
//     consecutive k inside one first-factor block i (needs q % 16 == 0 and jb | 16 or 16 | jb),
//     so each run is a [kT tokens x 16 rows of w1[i]] GEMM over p. The results are written
//     to shared memory already permuted, as z[jj][t][b] (one kT x r plane per j in J).
//     x blocks and w1 row slices stream through a two-stage cp.async pipeline.
//   stage 2: for each j in J, out[t, m] = z[jj] (kT x r) times w2[j]^T (r x s); w2[j] streams
//     through a two-stage pipeline. Each thread keeps its outputs of 8 consecutive j (packed
//     pairs) in registers and writes them as one 16-byte store (the P permutation of the output
//     makes j the contiguous index), so out is written once, in full 16-byte pieces.
// HBM traffic: x read once (the CTAs of one token tile are adjacent in launch order, so the
// nblocks2/jb groups re-read x from L2), out written once, weights from L2.
//
// Block-diagonal linear: one CTA = 128 tokens x one block i, the whole [128 x q] tile over p
// in one shared-memory load; output staged in shared memory for 16-byte stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace monarch_detail {

constexpr int kThreads = 256;
constexpr int kPad = 8;  // elements after every shared-memory row: an odd number of 16-byte
                         // chunks per row, so the 8 rows of an ldmatrix phase hit 8 bank groups

struct MonarchParams {
  const void* x;
  const void* w1;
  const void* w2;
  const void* bias;  // nullptr: none
  void* out;
  int64_t tokens, x_stride, out_stride;
  int32_t p, q, r, s, nb2;
  int32_t jb;              // second-factor blocks per CTA
  int32_t groups;          // nb2 / jb
  int32_t runs;            // stage-1 runs of 16 mid-indices per CTA: r * jb / 16
  int32_t runs_per_chunk;  // runs per pipeline stage
  int32_t tiles_per_warp;  // stage-2 m16n8 output tiles per warp (1, 2 or 4)
  int32_t bias_dtype;      // DType
  int32_t z_bytes;         // the pipeline buffers start here
};

struct BlockdiagParams {
  const void* x;
  const void* w;
  const void* bias;
  void* out;
  int64_t tokens, x_stride, out_stride;
  int32_t nblocks, p, q;
  int32_t bias_dtype;
  int32_t w_offset;  // elements: the w tile starts here in shared memory
};

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Two 8x8 b16 matrices; lanes 0-15 give the row addresses (lanes 8i..8i+7: matrix i).
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr));
}

template <class T, int kT>
__global__ void __launch_bounds__(kThreads, 1) monarch_kernel(const MonarchParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* z = reinterpret_cast<T*>(smem);
  T* buf = reinterpret_cast<T*>(smem + P.z_bytes);
  const T* x = static_cast<const T*>(P.x);
  const T* w1 = static_cast<const T*>(P.w1);
  const T* w2 = static_cast<const T*>(P.w2);
  T* out = static_cast<T*>(P.out);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, qd = lane % 4;
  const int grp = static_cast<int>(blockIdx.x % static_cast<unsigned>(P.groups));
  const int64_t t0 = static_cast<int64_t>(blockIdx.x / static_cast<unsigned>(P.groups)) * kT;
  const int j0 = grp * P.jb;
  const int zp = P.r + kPad;  // z row pitch (elements)
  const int plane = kT * zp;  // one j's kT x r plane

  // ------------------------------------------------------------------ stage 1: z = P^T R x
  const int xp = P.p + kPad;
  const int run_elems = (kT + 16) * xp;  // x tile (kT rows) then the 16-row w1 slice
  const int R = P.runs_per_chunk;
  const int chunk_elems = R * run_elems;
  const int nchunks = (P.runs + R - 1) / R;
  const int cpr = P.p / 8;  // 16-byte pieces per row
  // First mid-index of run u: runs walk b (16/jb values of b per run when jb < 16).
  auto run_k0 = [&](int u) { return (u * 16 / P.jb) * P.nb2 + j0; };

  auto load_chunk = [&](int c, int stage) {
    T* base = buf + stage * chunk_elems;
    const int u0 = c * R;
    const int nr = min(R, P.runs - u0);
    const int total = nr * (kT + 16) * cpr;
    for (int idx = tid; idx < total; idx += kThreads) {
      const int row = idx / cpr, col = (idx - row * cpr) * 8;
      const int slot = row / (kT + 16), rr = row - slot * (kT + 16);
      const int k0 = run_k0(u0 + slot);
      const int i = k0 / P.q, a0 = k0 - i * P.q;
      T* dst = base + slot * run_elems + rr * xp + col;
      if (rr < kT) {
        const int64_t t = t0 + rr;
        const bool ok = t < P.tokens;
        const T* src = ok ? x + t * P.x_stride + static_cast<int64_t>(i) * P.p + col : x;
        cp_async_16(smem_u32(dst), src, ok ? 16 : 0);
      } else {
        const T* src = w1 + (static_cast<int64_t>(i) * P.q + a0 + (rr - kT)) * P.p + col;
        cp_async_16_full(smem_u32(dst), src);
      }
    }
  };

  constexpr int kWarpsPerRun = kT / 16;
  auto compute_chunk = [&](int c, int stage) {
    const int slot = warp / kWarpsPerRun, mt = warp % kWarpsPerRun;
    const int u = c * R + slot;
    if (slot >= R || u >= P.runs) return;
    const T* xs = buf + stage * chunk_elems + slot * run_elems;
    const T* ws = xs + kT * xp;
    float acc[2][4];
#pragma unroll
    for (int a = 0; a < 2; ++a)
#pragma unroll
      for (int b = 0; b < 4; ++b) acc[a][b] = 0.0f;
    const uint32_t a_addr = smem_u32(xs + (mt * 16 + (lane % 16)) * xp + (lane / 16) * 8);
    const uint32_t b_addr =
        smem_u32(ws + ((lane / 16) * 8 + (lane % 8)) * xp + ((lane / 8) % 2) * 8);
    for (int kk = 0; kk < P.p; kk += 16) {
      uint32_t a[4], b[4];
      ldsm_x4(a, a_addr + kk * 2);
      ldsm_x4(b, b_addr + kk * 2);
      Elt<T>::mma(acc[0], a, b[0], b[1]);
      Elt<T>::mma(acc[1], a, b[2], b[3]);
    }
    // Scatter into the permuted layout z[jj][t][b], k = k0 + column.
    const int k0 = run_k0(u);
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int k = k0 + nt * 8 + 2 * qd + h;
        const int b = k / P.nb2, jj = k - b * P.nb2 - j0;
        T* zc = z + jj * plane + b;
        const int t = mt * 16 + g;
        zc[t * zp] = from_float<T>(acc[nt][h]);
        zc[(t + 8) * zp] = from_float<T>(acc[nt][2 + h]);
      }
  };

  load_chunk(0, 0);
  cp_async_commit();
  for (int c = 0; c < nchunks; ++c) {
    if (c + 1 < nchunks) {
      load_chunk(c + 1, (c + 1) & 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    compute_chunk(c, c & 1);
    __syncthreads();
  }

  // ------------------------------------------------------------------ stage 2: out = P L z
  const int w2p = P.r + kPad;
  const int w2_elems = P.s * w2p;
  auto load_w2 = [&](int jj, int stage) {
    T* dst0 = buf + stage * w2_elems;
    const T* src0 = w2 + static_cast<int64_t>(j0 + jj) * P.s * P.r;
    const int cpr2 = P.r / 8;
    const int total = P.s * cpr2;
    for (int idx = tid; idx < total; idx += kThreads) {
      const int row = idx / cpr2, col = (idx - row * cpr2) * 8;
      cp_async_16_full(smem_u32(dst0 + row * w2p + col), src0 + row * P.r + col);
    }
  };

  const int nnt = P.s / 8;
  const int tpw = P.tiles_per_warp;
  const int id0 = warp * tpw;
  const bool active = id0 < kWarpsPerRun * nnt;
  const int mt = id0 / nnt, nt0 = id0 - mt * nnt;  // all of a warp's tiles share mt
  const int G = P.jb < 8 ? P.jb : 8;               // j values per store
  const DType bias_dt = static_cast<DType>(P.bias_dtype);
  uint32_t pk[4][4][4];  // [tile][position][pair of j]
  float ev[4][4];        // the even j of the pair being built
#pragma unroll
  for (int e = 0; e < 4; ++e)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      ev[e][i] = 0.0f;
#pragma unroll
      for (int h = 0; h < 4; ++h) pk[e][i][h] = 0u;
    }

  load_w2(0, 0);
  cp_async_commit();
  for (int jj = 0; jj < P.jb; ++jj) {
    if (jj + 1 < P.jb) {
      load_w2(jj + 1, (jj + 1) & 1);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (active) {
      float acc[4][4];
#pragma unroll
      for (int e = 0; e < 4; ++e)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[e][i] = 0.0f;
      const T* zs = z + jj * plane;
      const T* ws = buf + (jj & 1) * w2_elems;
      const uint32_t a_addr = smem_u32(zs + (mt * 16 + (lane % 16)) * zp + (lane / 16) * 8);
      const uint32_t b_addr = smem_u32(ws + (nt0 * 8 + (lane % 8)) * w2p + ((lane / 8) % 2) * 8);
      for (int kk = 0; kk < P.r; kk += 16) {
        uint32_t a[4];
        ldsm_x4(a, a_addr + kk * 2);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (e < tpw) {
            uint32_t b[2];
            ldsm_x2(b, b_addr + (e * 8 * w2p + kk) * 2);
            Elt<T>::mma(acc[e], a, b[0], b[1]);
          }
        }
      }
      const int h = (jj % G) / 2;
      const int j = j0 + jj;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (e < tpw) {
#pragma unroll
          for (int pos = 0; pos < 4; ++pos) {
            float v = acc[e][pos];
            if (P.bias) {
              const int m = (nt0 + e) * 8 + 2 * qd + (pos & 1);
              v += load_float(P.bias, bias_dt, static_cast<int64_t>(m) * P.nb2 + j);
            }
            if ((jj & 1) == 0) {
              ev[e][pos] = v;
            } else {
              const uint32_t word = Elt<T>::pack(ev[e][pos], v);
#pragma unroll
              for (int hh = 0; hh < 4; ++hh)
                if (hh == h) pk[e][pos][hh] = word;
            }
          }
        }
      }
      if (jj % G == G - 1) {
        const int jbase = j0 + jj - (G - 1);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (e < tpw) {
#pragma unroll
            for (int pos = 0; pos < 4; ++pos) {
              const int64_t t = t0 + mt * 16 + g + (pos >> 1) * 8;
              if (t < P.tokens) {
                const int m = (nt0 + e) * 8 + 2 * qd + (pos & 1);
                T* dst = out + t * P.out_stride + static_cast<int64_t>(m) * P.nb2 + jbase;
                if (G == 8) {
                  *reinterpret_cast<uint4*>(dst) =
                      make_uint4(pk[e][pos][0], pk[e][pos][1], pk[e][pos][2], pk[e][pos][3]);
                } else if (G == 4) {
                  *reinterpret_cast<uint2*>(dst) = make_uint2(pk[e][pos][0], pk[e][pos][1]);
                } else {
                  *reinterpret_cast<uint32_t*>(dst) = pk[e][pos][0];
                }
              }
            }
          }
        }
      }
    }
    __syncthreads();
  }
}

// Block-diagonal linear: CTA = 128 tokens of block i; warp w owns tokens 16w..16w+15 and all q
// outputs (q / 8 <= 16 m16n8 tiles).
constexpr int kBdTokens = 128;

template <class T>
__global__ void __launch_bounds__(kThreads, 2) blockdiag_kernel(const BlockdiagParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* ws = xs + P.w_offset;
  const T* x = static_cast<const T*>(P.x);
  const T* w = static_cast<const T*>(P.w);
  T* out = static_cast<T*>(P.out);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, qd = lane % 4;
  const int i = static_cast<int>(blockIdx.x % static_cast<unsigned>(P.nblocks));
  const int64_t t0 = static_cast<int64_t>(blockIdx.x / static_cast<unsigned>(P.nblocks)) * kBdTokens;
  const int xp = P.p + kPad;
  const int cpr = P.p / 8;

  for (int idx = tid; idx < kBdTokens * cpr; idx += kThreads) {
    const int row = idx / cpr, col = (idx - row * cpr) * 8;
    const int64_t t = t0 + row;
    const bool ok = t < P.tokens;
    const T* src = ok ? x + t * P.x_stride + static_cast<int64_t>(i) * P.p + col : x;
    cp_async_16(smem_u32(xs + row * xp + col), src, ok ? 16 : 0);
  }
  for (int idx = tid; idx < P.q * cpr; idx += kThreads) {
    const int row = idx / cpr, col = (idx - row * cpr) * 8;
    cp_async_16_full(smem_u32(ws + row * xp + col),
                     w + (static_cast<int64_t>(i) * P.q + row) * P.p + col);
  }
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();

  const int nnt = P.q / 8;
  float acc[16][4];
#pragma unroll
  for (int e = 0; e < 16; ++e)
#pragma unroll
    for (int k = 0; k < 4; ++k) acc[e][k] = 0.0f;
  const uint32_t a_addr = smem_u32(xs + (warp * 16 + (lane % 16)) * xp + (lane / 16) * 8);
  const uint32_t b_addr = smem_u32(ws + ((lane / 16) * 8 + (lane % 8)) * xp + ((lane / 8) % 2) * 8);
  for (int kk = 0; kk < P.p; kk += 16) {
    uint32_t a[4];
    ldsm_x4(a, a_addr + kk * 2);
#pragma unroll
    for (int e = 0; e < 16; e += 2) {
      if (e < nnt) {
        uint32_t b[4];
        ldsm_x4(b, b_addr + (e * 8 * xp + kk) * 2);
        Elt<T>::mma(acc[e], a, b[0], b[1]);
        Elt<T>::mma(acc[e + 1], a, b[2], b[3]);
      }
    }
  }
  __syncthreads();  // everyone is done reading xs: it becomes the output tile

  const int op = P.q + kPad;
  const DType bias_dt = static_cast<DType>(P.bias_dtype);
#pragma unroll
  for (int e = 0; e < 16; ++e) {
    if (e < nnt) {
      const int a = e * 8 + 2 * qd;
      float b0 = 0.0f, b1 = 0.0f;
      if (P.bias) {
        b0 = load_float(P.bias, bias_dt, static_cast<int64_t>(i) * P.q + a);
        b1 = load_float(P.bias, bias_dt, static_cast<int64_t>(i) * P.q + a + 1);
      }
      const int row = warp * 16 + g;
      *reinterpret_cast<uint32_t*>(xs + row * op + a) = Elt<T>::pack(acc[e][0] + b0, acc[e][1] + b1);
      *reinterpret_cast<uint32_t*>(xs + (row + 8) * op + a) =
          Elt<T>::pack(acc[e][2] + b0, acc[e][3] + b1);
    }
  }
  __syncthreads();
  const int cpo = P.q / 8;
  for (int idx = tid; idx < kBdTokens * cpo; idx += kThreads) {
    const int row = idx / cpo, col = (idx - row * cpo) * 8;
    const int64_t t = t0 + row;
    if (t < P.tokens)
      *reinterpret_cast<uint4*>(out + t * P.out_stride + static_cast<int64_t>(i) * P.q + col) =
          *reinterpret_cast<const uint4*>(xs + row * op + col);
  }
}

// ---------------------------------------------------------------------------------------------
// Host side: configuration (shared by the predicate and the launch) and entry points.
// ---------------------------------------------------------------------------------------------

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool stride_ok(int64_t stride, int64_t rows) { return rows <= 1 || stride % 8 == 0; }
bool dims_ok(int64_t d, int64_t max) { return d > 0 && d % 16 == 0 && d <= max; }

struct MonarchConfig {
  bool ok = false;
  int kT = 0, jb = 0, groups = 0, runs = 0, runs_per_chunk = 0, tiles_per_warp = 0;
  int64_t z_bytes = 0, smem_bytes = 0, ctas = 0;
};

MonarchConfig monarch_config(const DeviceCaps& caps, const MonarchProblem& p) {
  MonarchConfig c;
  if (p.device != Device::Cuda || (p.dtype != DType::F16 && p.dtype != DType::BF16)) return c;
  if (!dims_ok(p.p, 256) || !dims_ok(p.q, 1 << 20) || !dims_ok(p.r, 256) || !dims_ok(p.s, 128))
    return c;
  if (p.nblocks1 <= 0 || p.nblocks2 <= 0) return c;
  if (p.nblocks1 * p.q > (int64_t(1) << 30) || p.nblocks2 * p.s > (int64_t(1) << 30)) return c;
  int jb;
  if (p.nblocks2 >= 16) {
    if (p.nblocks2 % 16 != 0) return c;
    jb = 16;
  } else {
    if (p.nblocks2 != 2 && p.nblocks2 != 4 && p.nblocks2 != 8) return c;
    jb = static_cast<int>(p.nblocks2);
  }
  if (!aligned16(p.x) || !aligned16(p.w1) || !aligned16(p.w2) || !aligned16(p.out)) return c;
  if (!stride_ok(p.x_row_stride, p.tokens) || !stride_ok(p.out_row_stride, p.tokens)) return c;
  const int64_t s = p.s, r = p.r, pp = p.p;
  for (int kT : {64, 32}) {
    const int64_t tiles_total = (kT / 16) * (s / 8);
    const int64_t tpw = (tiles_total + 7) / 8;
    const int64_t tpw2 = tpw <= 1 ? 1 : tpw <= 2 ? 2 : tpw <= 4 ? 4 : 0;
    if (tpw2 == 0 || (s / 8) % tpw2 != 0) continue;
    const int64_t z_bytes = int64_t(jb) * kT * (r + kPad) * 2;
    const int64_t s2 = 2 * s * (r + kPad) * 2;
    for (int R = 8 / (kT / 16); R >= 1; R /= 2) {
      const int64_t s1 = 2 * int64_t(R) * (kT + 16) * (pp + kPad) * 2;
      const int64_t total = z_bytes + std::max(s1, s2);
      if (total > caps.smem_per_block_optin) continue;
      const int64_t tiles = (p.tokens + kT - 1) / kT;
      const int64_t ctas = tiles * (p.nblocks2 / jb);
      if (ctas > INT32_MAX) return c;
      c.ok = true;
      c.kT = kT;
      c.jb = jb;
      c.groups = static_cast<int>(p.nblocks2 / jb);
      c.runs = static_cast<int>(r * jb / 16);
      c.runs_per_chunk = R;
      c.tiles_per_warp = static_cast<int>(tpw2);
      c.z_bytes = z_bytes;
      c.smem_bytes = total;
      c.ctas = ctas;
      return c;
    }
  }
  return c;
}

struct BlockdiagConfig {
  bool ok = false;
  int64_t w_offset = 0, smem_bytes = 0, ctas = 0;
};

BlockdiagConfig blockdiag_config(const DeviceCaps& caps, const BlockdiagProblem& p) {
  BlockdiagConfig c;
  if (p.device != Device::Cuda || (p.dtype != DType::F16 && p.dtype != DType::BF16)) return c;
  if (!dims_ok(p.p, 256) || !dims_ok(p.q, 128) || p.nblocks <= 0) return c;
  if (p.nblocks * p.q > (int64_t(1) << 30) || p.nblocks * p.p > (int64_t(1) << 30)) return c;
  if (!aligned16(p.x) || !aligned16(p.w) || !aligned16(p.out)) return c;
  if (!stride_ok(p.x_row_stride, p.tokens) || !stride_ok(p.out_row_stride, p.tokens)) return c;
  const int64_t x_elems = kBdTokens * (p.p + kPad);
  const int64_t o_elems = kBdTokens * (p.q + kPad);
  c.w_offset = std::max(x_elems, o_elems);
  c.smem_bytes = (c.w_offset + p.q * (p.p + kPad)) * 2;
  if (c.smem_bytes > caps.smem_per_block_optin) return c;
  c.ctas = (p.tokens + kBdTokens - 1) / kBdTokens * p.nblocks;
  if (c.ctas > INT32_MAX) return c;
  c.ok = true;
  return c;
}

template <class Kernel, class Params>
fk_status_t launch(Kernel kernel, const Params& params, int64_t ctas, int64_t smem,
                   cudaStream_t stream, const char* name) {
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(smem)),
              name);
  kernel<<<static_cast<unsigned>(ctas), kThreads, static_cast<size_t>(smem), stream>>>(params);
  return check_launch(name);
}

}  // namespace monarch_detail

using namespace monarch_detail;

bool monarch_supported(const DeviceCaps& caps, const MonarchProblem& p) {
  return monarch_config(caps, p).ok;
}

bool blockdiag_supported(const DeviceCaps& caps, const BlockdiagProblem& p) {
  return blockdiag_config(caps, p).ok;
}

fk_status_t monarch(const ExecContext& ctx, const MonarchProblem& p) {
  if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0) return FK_SUCCESS;
  const MonarchConfig c = monarch_config(*ctx.caps, p);
  if (!c.ok) return set_error(FK_ERROR_INTERNAL, "cuda.sm80.monarch: problem outside the kernel's predicate");
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  MonarchParams k{};
  k.x = p.x;
  k.w1 = p.w1;
  k.w2 = p.w2;
  k.bias = p.bias;
  k.out = p.out;
  k.tokens = p.tokens;
  k.x_stride = p.x_row_stride;
  k.out_stride = p.out_row_stride;
  k.p = static_cast<int32_t>(p.p);
  k.q = static_cast<int32_t>(p.q);
  k.r = static_cast<int32_t>(p.r);
  k.s = static_cast<int32_t>(p.s);
  k.nb2 = static_cast<int32_t>(p.nblocks2);
  k.jb = c.jb;
  k.groups = c.groups;
  k.runs = c.runs;
  k.runs_per_chunk = c.runs_per_chunk;
  k.tiles_per_warp = c.tiles_per_warp;
  k.bias_dtype = static_cast<int32_t>(p.bias_dtype);
  k.z_bytes = static_cast<int32_t>(c.z_bytes);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const char* name = "cuda.sm80.monarch kernel";
  const bool bf16 = p.dtype == DType::BF16;
  if (c.kT == 64)
    return bf16 ? launch(monarch_kernel<__nv_bfloat16, 64>, k, c.ctas, c.smem_bytes, stream, name)
                : launch(monarch_kernel<__half, 64>, k, c.ctas, c.smem_bytes, stream, name);
  return bf16 ? launch(monarch_kernel<__nv_bfloat16, 32>, k, c.ctas, c.smem_bytes, stream, name)
              : launch(monarch_kernel<__half, 32>, k, c.ctas, c.smem_bytes, stream, name);
}

fk_status_t blockdiag(const ExecContext& ctx, const BlockdiagProblem& p) {
  if (p.tokens <= 0 || p.nblocks <= 0 || p.q <= 0) return FK_SUCCESS;
  const BlockdiagConfig c = blockdiag_config(*ctx.caps, p);
  if (!c.ok)
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm80.blockdiag_linear: problem outside the kernel's predicate");
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  BlockdiagParams k{};
  k.x = p.x;
  k.w = p.w;
  k.bias = p.bias;
  k.out = p.out;
  k.tokens = p.tokens;
  k.x_stride = p.x_row_stride;
  k.out_stride = p.out_row_stride;
  k.nblocks = static_cast<int32_t>(p.nblocks);
  k.p = static_cast<int32_t>(p.p);
  k.q = static_cast<int32_t>(p.q);
  k.bias_dtype = static_cast<int32_t>(p.bias_dtype);
  k.w_offset = static_cast<int32_t>(c.w_offset);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const char* name = "cuda.sm80.blockdiag_linear kernel";
  return p.dtype == DType::BF16
             ? launch(blockdiag_kernel<__nv_bfloat16>, k, c.ctas, c.smem_bytes, stream, name)
             : launch(blockdiag_kernel<__half>, k, c.ctas, c.smem_bytes, stream, name);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
