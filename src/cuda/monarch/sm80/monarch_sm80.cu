// sm80-class fused Monarch multiply ("cuda.sm80.monarch") and block-diagonal linear
// ("cuda.sm80.blockdiag_linear"): mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate), ldmatrix and
// cp.async; compiled into the fat binary (sm_90a, sm_80, compute_80 PTX), so it also serves Hopper
// (both ops do 2 * block-size FLOP per byte of x and out: mma.sync has the arithmetic rate).
//
// Monarch (semantics in flashkit.h, monarch group; m2's blockdiag_butterfly_multiply):
//   y1[t, k] = sum_c w1[k/q, k%q, c] x[t, (k/q)*p + c]        k < mid = nblocks1*q
//   z[t, j, b] = y1[t, b*nblocks2 + j]                         (the permutation P^T)
//   out[t, m*nblocks2 + j] = sum_b w2[j, m, b] z[t, j, b] + bias[m*nblocks2 + j]
// A work item is kT tokens and a group J of jb consecutive second-factor blocks
// (j0 .. j0+jb-1); the intermediate never leaves shared memory:
//   stage 1: the mid-indices k = b*nblocks2 + j (j in J, all b) fall into runs of 16
//     consecutive k inside one first-factor block i (needs q % 16 == 0 and jb | 16 or 16 | jb),
//     so each run is a [kT tokens x 16 rows of w1[i]] GEMM over p. The results are written to
//     shared memory already permuted, as z[jj][t][b] (one kT x r plane per j in J).
//   stage 2: for each j in J, out[t, m] = z[jj] (kT x r) times w2[j]^T (r x s). Each thread keeps
//     its outputs of 8 consecutive j (packed pairs) in registers and writes them as one 16-byte
//     store (the P permutation of the output makes j the contiguous index).
// CTAs are persistent (a grid that is a multiple of the group count, one CTA per
// multiprocessor) and stream x blocks with w1 row slices (stage 1) and w2 blocks (stage 2)
// through one cp.async ring that runs across both stages and across work items.
// HBM traffic: x read once (the CTAs of one token tile run side by side, so the nblocks2/jb
// groups re-read x from L2), out written once, weights from L2.
//
// Block-diagonal linear: a work item is 128 tokens x one block i, the whole [128 x q] tile over
// p; persistent CTAs (two per multiprocessor) with a ring of 2-4 items in flight; output staged
// in shared memory for 16-byte stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/monarch/common/monarch_io.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace monarch_detail {

constexpr int kThreads = 256;
constexpr int kMaxItems = 8;  // 16-byte stage-1 pieces per thread and step
constexpr int kPad = 8;  // elements after every shared-memory row: an odd number of 16-byte
                         // chunks per row, so the 8 rows of an ldmatrix phase hit 8 bank groups

struct MonarchParams : monarch_io::MonarchIO {
  int32_t jb;              // second-factor blocks per CTA
  int32_t jshift;          // log2(16 / jb): b values per stage-1 run
  int32_t groups;          // nb2 / jb
  int32_t runs;            // stage-1 runs of 16 mid-indices per CTA: r * jb / 16
  int32_t runs_per_chunk;  // runs per pipeline stage
  int32_t ns;              // ring entries (2..8): ns - 1 load steps in flight
  int32_t entry_elems;     // elements per ring entry
  int32_t w2_split;        // stage-2 steps per j: w2[j] loaded in this many row slices
  int32_t jps;             // j per stage-2 step when w2_split == 1 (a power of two <= jb)
  int64_t items;           // work items: token tiles x groups
  int32_t tiles_per_warp;  // stage-2 m16n8 output tiles per warp (1, 2 or 4)
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
  int32_t w_offset;     // elements: the w tile starts here inside a ring entry
  int32_t entry_elems;  // elements per ring entry (x tile or output tile, then the w tile)
  int32_t ns;           // ring entries (2..8)
  int64_t items;        // token tiles x nblocks
  // kStationary: CTA b serves block b / splits and token tiles [tile0, tile1) of its split
  // (balanced), with w resident at the start of shared memory and the ring after it; w_offset
  // is then the ring's offset and entry_elems an x / output tile only.
  int32_t splits;
  int64_t tiles;        // token tiles: ceil(tokens / kBdTokens)
};

// Two 8x8 b16 matrices; lanes 0-15 give the row addresses (lanes 8i..8i+7: matrix i).
__device__ __forceinline__ void ldsm_x2(uint32_t (&r)[2], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr));
}

// cp.async.wait_group with a run-time count (0..7).
__device__ __forceinline__ void cp_async_wait_dyn(int n) {
  switch (n) {
    case 0: cp_async_wait<0>(); break;
    case 1: cp_async_wait<1>(); break;
    case 2: cp_async_wait<2>(); break;
    case 3: cp_async_wait<3>(); break;
    case 4: cp_async_wait<4>(); break;
    case 5: cp_async_wait<5>(); break;
    case 6: cp_async_wait<6>(); break;
    default: cp_async_wait<7>(); break;
  }
}

template <class T, int kT>
__global__ void __launch_bounds__(kThreads, 1) monarch_kernel(const MonarchParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* z = reinterpret_cast<T*>(smem);
  T* ring = reinterpret_cast<T*>(smem + P.z_bytes);
  const T* x = static_cast<const T*>(P.x);
  const T* w1 = static_cast<const T*>(P.w1);
  const T* w2 = static_cast<const T*>(P.w2);
  T* out = static_cast<T*>(P.out);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, qd = lane % 4;
  const int zp = P.r + kPad;  // z row pitch (elements)
  const int plane = kT * zp;  // one j's kT x r plane
  const int xp = P.p + kPad;
  const int run_elems = (kT + 16) * xp;  // x tile (kT rows) then the 16-row w1 slice
  const int R = P.runs_per_chunk;
  const int cpr = P.p / 8;  // 16-byte pieces per row
  const int nchunks = (P.runs + R - 1) / R;
  const int split = P.w2_split;          // stage-2 steps per j (row slices of w2[j])
  const int jps = P.jps;                 // j per stage-2 step (split == 1)
  const int s_rows = P.s / split;        // w2 rows per slice
  const int steps = nchunks + (split > 1 ? P.jb * split : P.jb / jps);  // per work item
  const int ns = P.ns;
  const int entry = P.entry_elems;
  const int w2p = P.r + kPad;

  // Work items (token tile, group of jb second-factor blocks), round-robin over the CTAs; the
  // grid is a multiple of the group count, so a CTA keeps one group and the CTAs that share a
  // token tile run side by side (x is re-read from L2).
  const int64_t my_items =
      P.items > blockIdx.x ? (P.items - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  auto item_t0 = [&](int64_t k) {
    return static_cast<int64_t>((blockIdx.x + k * gridDim.x) / P.groups) * kT;
  };
  const int j0 = static_cast<int>(blockIdx.x % static_cast<unsigned>(P.groups)) * P.jb;

  // First mid-index of run u: runs walk b (16/jb values of b per run when jb < 16). The run's
  // 16 rows of w1 are the rows k0 .. k0+15 of w1 seen as (nblocks1*q, p); its x block is k0 / q.
  auto run_k0 = [&](int u) { return (u << P.jshift) * P.nb2 + j0; };

  // This thread's 16-byte pieces of a full chunk (slot, row in the run, column), fixed for
  // the whole kernel: the config keeps a chunk within kMaxItems pieces per thread.
  uint32_t item[kMaxItems];
  {
    const int items_total = R * (kT + 16) * cpr;
#pragma unroll
    for (int e = 0; e < kMaxItems; ++e) {
      const int idx = tid + e * kThreads;
      const int row = idx / cpr, col = (idx - row * cpr) * 8;
      const int slot = row / (kT + 16), rr = row - slot * (kT + 16);
      item[e] = idx < items_total
                    ? (uint32_t(slot) << 24) | (uint32_t(rr) << 12) | uint32_t(col)
                    : 0xFFFFFFFFu;
    }
  }

  // Issues the loads of local step `ls` of work item `k` into ring entry `e`.
  auto load_step = [&](int64_t k, int ls, int e) {
    T* base = ring + e * entry;
    if (ls < nchunks) {
      const int64_t t0 = item_t0(k);
      const int u0 = ls * R;
      const int nr = min(R, P.runs - u0);
      int k0s[4], xcs[4];
#pragma unroll
      for (int sl = 0; sl < 4; ++sl) {
        k0s[sl] = run_k0(u0 + sl);
        xcs[sl] = sl < nr ? (k0s[sl] / P.q) * P.p : 0;
      }
#pragma unroll
      for (int it = 0; it < kMaxItems; ++it) {
        if (item[it] == 0xFFFFFFFFu) continue;
        const int slot = static_cast<int>(item[it] >> 24);
        const int rr = static_cast<int>((item[it] >> 12) & 0xFFF);
        const int col = static_cast<int>(item[it] & 0xFFF);
        if (slot >= nr) continue;
        int k0 = k0s[0], xc = xcs[0];
#pragma unroll
        for (int sl = 1; sl < 4; ++sl)
          if (slot == sl) {
            k0 = k0s[sl];
            xc = xcs[sl];
          }
        T* dst = base + slot * run_elems + rr * xp + col;
        if (rr < kT) {
          const int64_t t = t0 + rr;
          const bool ok = t < P.tokens;
          const T* src = ok ? x + t * P.x_stride + xc + col : x;
          cp_async_16(smem_u32(dst), src, ok ? 16 : 0);
        } else {
          const T* src = w1 + static_cast<int64_t>(k0 + rr - kT) * P.p + col;
          cp_async_16_full(smem_u32(dst), src);
        }
      }
    } else {
      const int q2 = ls - nchunks;
      const int jj = split > 1 ? q2 / split : q2 * jps, h = split > 1 ? q2 - jj * split : 0;
      const T* src0 = w2 + (static_cast<int64_t>(j0 + jj) * P.s + h * s_rows) * P.r;
      const int cpr2 = P.r / 8;
      const int total = s_rows * cpr2 * (split > 1 ? 1 : jps);  // jps blocks are contiguous
      for (int idx = tid; idx < total; idx += kThreads) {
        const int row = idx / cpr2, col = (idx - row * cpr2) * 8;
        cp_async_16_full(smem_u32(base + row * w2p + col), src0 + row * P.r + col);
      }
    }
  };

  // Stage-2 tiles of this warp: tpw m16n8 output tiles in one 16-token row mt, columns
  // nt0 .. nt0+tpw-1 (m = 8 * column), all inside one w2 row slice.
  constexpr int kWarpsPerRun = kT / 16;
  const int nnt = P.s / 8;
  const int tpw = P.tiles_per_warp;
  const int id0 = warp * tpw;
  const bool active2 = id0 < kWarpsPerRun * nnt;
  const int mt2 = id0 / nnt, nt0 = id0 - mt2 * nnt;
  const int my_h = (nt0 * 8) / s_rows;  // the w2 row slice this warp's tiles lie in
  const int G = P.jb < 8 ? P.jb : 8;    // j values per store
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

  // z offsets of this thread's stage-1 accumulators (the warp's m-tile row is fixed), per
  // (n-tile, column parity): column col of run u is mid-index k = k0(u) + col, i.e.
  // jj = col (jb = 16) or col & (jb - 1), and b = (u << jshift) + (col >> log2(jb)).
  int zoff[4];
  {
    const int lg = 4 - P.jshift;
    const int mt = warp % kWarpsPerRun;
#pragma unroll
    for (int nh = 0; nh < 4; ++nh) {
      const int col = (nh / 2) * 8 + 2 * qd + (nh % 2);
      zoff[nh] = (col & (P.jb - 1)) * plane + (mt * 16 + g) * zp + (col >> lg);
    }
  }

  // `issue` (the next step's loads) runs once per thread per step, right after the step's MMAs
  // are issued, so the load issue overlaps the MMA latency.
  auto compute_step = [&](int64_t k, int ls, int e, auto&& issue) {
    const T* base = ring + e * entry;
    if (ls < nchunks) {
      // ---------------------------------------------------- stage 1: z = P^T R x, one chunk
      const int slot = warp / kWarpsPerRun, mt = warp % kWarpsPerRun;
      const int u = ls * R + slot;
      if (slot >= R || u >= P.runs) {
        issue();
        return;
      }
      const T* xs = base + slot * run_elems;
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
      issue();
      // Scatter into the permuted layout z[jj][t][b] (offsets precomputed per thread).
      const int bu = u << P.jshift;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          T* zc = z + zoff[nt * 2 + h] + bu;
          zc[0] = from_float<T>(acc[nt][h]);
          zc[8 * zp] = from_float<T>(acc[nt][2 + h]);
        }
      return;
    }
    // ------------------------------------------------------ stage 2: out = P L z, one j slice
    const int q2 = ls - nchunks;
    const int jfirst = split > 1 ? q2 / split : q2 * jps;
    const int hslice = split > 1 ? q2 - jfirst * split : 0;
    if (!active2 || hslice != my_h) {
      issue();
      return;
    }
    const int nj = split > 1 ? 1 : jps;
    for (int jl = 0; jl < nj; ++jl) {
      const int jj = jfirst + jl;
      float acc[4][4];
#pragma unroll
      for (int t = 0; t < 4; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[t][i] = 0.0f;
      const T* zs = z + jj * plane;
      const T* wsl = base + jl * P.s * w2p;
      const int row0 = nt0 * 8 - my_h * s_rows;  // first w2 row of this warp in the slice
      const uint32_t a_addr = smem_u32(zs + (mt2 * 16 + (lane % 16)) * zp + (lane / 16) * 8);
      const uint32_t b_addr =
          smem_u32(wsl + (row0 + (lane % 8)) * w2p + ((lane / 8) % 2) * 8);
      for (int kk = 0; kk < P.r; kk += 16) {
        uint32_t a[4];
        ldsm_x4(a, a_addr + kk * 2);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          if (t < tpw) {
            uint32_t b[2];
            ldsm_x2(b, b_addr + (t * 8 * w2p + kk) * 2);
            Elt<T>::mma(acc[t], a, b[0], b[1]);
          }
        }
      }
      if (jl == 0) issue();
      const int hh = (jj % G) / 2;
      const int j = j0 + jj;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        if (t < tpw) {
#pragma unroll
          for (int pos = 0; pos < 4; ++pos) {
            float v = acc[t][pos];
            if (P.bias) {
              const int m = (nt0 + t) * 8 + 2 * qd + (pos & 1);
              v += load_float(P.bias, bias_dt, static_cast<int64_t>(m) * P.nb2 + j);
            }
            if ((jj & 1) == 0) {
              ev[t][pos] = v;
            } else {
              const uint32_t word = Elt<T>::pack(ev[t][pos], v);
#pragma unroll
              for (int w = 0; w < 4; ++w)
                if (w == hh) pk[t][pos][w] = word;
            }
          }
        }
      }
      if (jj % G == G - 1) {
        const int64_t t0 = item_t0(k);
        const int jbase = j0 + jj - (G - 1);
#pragma unroll
        for (int t = 0; t < 4; ++t) {
          if (t < tpw) {
#pragma unroll
            for (int pos = 0; pos < 4; ++pos) {
              const int64_t tok = t0 + mt2 * 16 + g + (pos >> 1) * 8;
              if (tok < P.tokens) {
                const int m = (nt0 + t) * 8 + 2 * qd + (pos & 1);
                T* dst = out + tok * P.out_stride + static_cast<int64_t>(m) * P.nb2 + jbase;
                if (G == 8) {
                  *reinterpret_cast<uint4*>(dst) =
                      make_uint4(pk[t][pos][0], pk[t][pos][1], pk[t][pos][2], pk[t][pos][3]);
                } else if (G == 4) {
                  *reinterpret_cast<uint2*>(dst) = make_uint2(pk[t][pos][0], pk[t][pos][1]);
                } else {
                  *reinterpret_cast<uint32_t*>(dst) = pk[t][pos][0];
                }
              }
            }
          }
        }
      }
    }
  };

  // One ring of ns entries for every load of every work item (x blocks + w1 slices, then the
  // w2 slices), ns - 1 steps in flight, across phase and item boundaries. Before step c,
  // (ns - 1) + c groups are committed (empty ones too), so waiting until ns - 2 are pending
  // completes step c's loads; the barrier after the wait also retires step c - 1 (its compute,
  // including z writes before z reads), whose entry the next load reuses.
  int64_t lk = 0;
  int lls = 0;
  for (int e = 0; e < ns - 1; ++e) {
    if (lk < my_items) load_step(lk, lls, e);
    cp_async_commit();
    if (++lls == steps) {
      lls = 0;
      ++lk;
    }
  }
  int64_t ck = 0;
  int cls = 0, ce = 0;
  const int64_t total_steps = my_items * steps;
  for (int64_t c = 0; c < total_steps; ++c) {
    cp_async_wait_dyn(ns - 2);
    __syncthreads();
    compute_step(ck, cls, ce, [&]() {
      if (lk < my_items) load_step(lk, lls, ce == 0 ? ns - 1 : ce - 1);
      cp_async_commit();
      if (++lls == steps) {
        lls = 0;
        ++lk;
      }
    });
    if (++cls == steps) {
      cls = 0;
      ++ck;
    }
    if (++ce == ns) ce = 0;
  }
  cp_async_wait<0>();
}

// Block-diagonal linear: a work item is 128 tokens of block i (the [128 x q] tile over p);
// warp w owns tokens 16w..16w+15 and all q outputs (q / 8 <= 16 m16n8 tiles). Persistent CTAs
// walk their items through a ring of ns entries (x tile + w tile each), ns - 1 items in flight;
// the finished tile is staged in its entry's x region for 16-byte stores.
// kStationary (calls with several token tiles per block): each CTA keeps one block's w in
// shared memory and walks a run of that block's token tiles, so the ring entries carry x tiles
// only (half the bytes per item at p = q, and more entries in flight).
constexpr int kBdTokens = 128;

template <class T, bool kStationary>
__global__ void __launch_bounds__(kThreads, 2) blockdiag_kernel(const BlockdiagParams P) {
  extern __shared__ __align__(16) unsigned char smem[];
  T* const wres = reinterpret_cast<T*>(smem);  // kStationary: the resident w tile
  T* ring = kStationary ? wres + P.w_offset : reinterpret_cast<T*>(smem);
  const T* x = static_cast<const T*>(P.x);
  const T* w = static_cast<const T*>(P.w);
  T* out = static_cast<T*>(P.out);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, qd = lane % 4;
  const int xp = P.p + kPad, op = P.q + kPad;
  const int cpr = P.p / 8, cpo = P.q / 8;
  const int nnt = P.q / 8;
  const int ns = P.ns;
  const DType bias_dt = static_cast<DType>(P.bias_dtype);
  // Stationary: this CTA's block sblock and its run of token tiles, from token tbase on.
  int sblock = 0;
  int64_t tbase = 0, my_items;
  if constexpr (kStationary) {
    sblock = static_cast<int>(blockIdx.x / P.splits);
    const int64_t split = blockIdx.x % P.splits;
    const int64_t tile0 = split * P.tiles / P.splits;
    my_items = (split + 1) * P.tiles / P.splits - tile0;
    tbase = tile0 * kBdTokens;
    // w of the block, in the first cp.async group (with item 0's x tile).
    for (int idx = tid; idx < P.q * cpr; idx += kThreads) {
      const int row = idx / cpr, col = (idx - row * cpr) * 8;
      cp_async_16_full(smem_u32(wres + row * xp + col),
                       w + (static_cast<int64_t>(sblock) * P.q + row) * P.p + col);
    }
  } else {
    my_items = P.items > blockIdx.x ? (P.items - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  }
  // Item k of this CTA: block i, first token t0.
  auto item = [&](int64_t k, int& i, int64_t& t0) {
    if constexpr (kStationary) {
      // The block is the same for every item: hidden from the compiler, which otherwise
      // precomputes every copy's source address once and keeps them all live (spills at 128
      // registers).
      i = sblock;
      asm volatile("" : "+r"(i));
      t0 = tbase + k * kBdTokens;
    } else {
      const int64_t it = blockIdx.x + k * gridDim.x;
      i = static_cast<int>(it % P.nblocks);
      t0 = (it / P.nblocks) * kBdTokens;
    }
  };

  auto load_item = [&](int64_t k, int e) {
    int i;
    int64_t t0;
    item(k, i, t0);
    T* xs = ring + e * P.entry_elems;
    T* ws = xs + P.w_offset;
    for (int idx = tid; idx < kBdTokens * cpr; idx += kThreads) {
      const int row = idx / cpr, col = (idx - row * cpr) * 8;
      const int64_t t = t0 + row;
      const bool ok = t < P.tokens;
      const T* src = ok ? x + t * P.x_stride + static_cast<int64_t>(i) * P.p + col : x;
      cp_async_16(smem_u32(xs + row * xp + col), src, ok ? 16 : 0);
    }
    if constexpr (!kStationary) {
      for (int idx = tid; idx < P.q * cpr; idx += kThreads) {
        const int row = idx / cpr, col = (idx - row * cpr) * 8;
        cp_async_16_full(smem_u32(ws + row * xp + col),
                         w + (static_cast<int64_t>(i) * P.q + row) * P.p + col);
      }
    }
  };

  for (int e = 0; e < ns - 1; ++e) {
    if (e < my_items) load_item(e, e);
    cp_async_commit();
  }
  int ce = 0;
  for (int64_t k = 0; k < my_items; ++k) {
    cp_async_wait_dyn(ns - 2);
    __syncthreads();  // item k landed; item k - 1 (its entry is the next load's) fully retired
    if (k + ns - 1 < my_items) load_item(k + ns - 1, ce == 0 ? ns - 1 : ce - 1);
    cp_async_commit();

    int i;
    int64_t t0;
    item(k, i, t0);
    T* xs = ring + ce * P.entry_elems;
    const T* ws = kStationary ? wres : xs + P.w_offset;
    float acc[16][4];
#pragma unroll
    for (int e = 0; e < 16; ++e)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[e][c] = 0.0f;
    const uint32_t a_addr = smem_u32(xs + (warp * 16 + (lane % 16)) * xp + (lane / 16) * 8);
    const uint32_t b_addr =
        smem_u32(ws + ((lane / 16) * 8 + (lane % 8)) * xp + ((lane / 8) % 2) * 8);
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
        *reinterpret_cast<uint32_t*>(xs + row * op + a) =
            Elt<T>::pack(acc[e][0] + b0, acc[e][1] + b1);
        *reinterpret_cast<uint32_t*>(xs + (row + 8) * op + a) =
            Elt<T>::pack(acc[e][2] + b0, acc[e][3] + b1);
      }
    }
    __syncthreads();
    for (int idx = tid; idx < kBdTokens * cpo; idx += kThreads) {
      const int row = idx / cpo, col = (idx - row * cpo) * 8;
      const int64_t t = t0 + row;
      if (t < P.tokens)
        *reinterpret_cast<uint4*>(out + t * P.out_stride + static_cast<int64_t>(i) * P.q + col) =
            *reinterpret_cast<const uint4*>(xs + row * op + col);
    }
    if (++ce == ns) ce = 0;
  }
  cp_async_wait<0>();
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
  int ns = 0, w2_split = 0, jps = 1;
  int64_t entry_elems = 0, items = 0, z_bytes = 0, smem_bytes = 0, ctas = 0;
};

MonarchConfig monarch_config(const DeviceCaps& caps, const MonarchProblem& p) {
  MonarchConfig c;
  if (p.device != Device::Cuda || (p.dtype != DType::F16 && p.dtype != DType::BF16)) return c;
  if (!dims_ok(p.p, 256) || !dims_ok(p.q, 1 << 20) || !dims_ok(p.r, 256) || !dims_ok(p.s, 128))
    return c;
  if (p.nblocks1 <= 0 || p.nblocks2 <= 0) return c;
  // The kernel indexes x's columns, z and out in 32-bit arithmetic ((k0 / q) * p among them).
  if (p.nblocks1 * p.q > (int64_t(1) << 30) || p.nblocks2 * p.s > (int64_t(1) << 30) ||
      p.nblocks1 * p.p > (int64_t(1) << 30))
    return c;
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
    const int64_t avail = caps.smem_per_block_optin - z_bytes;
    if (avail <= 0) continue;
    // Runs per stage-1 step: the most (fewer steps, less per-step overhead) that keep at least
    // 3 ring entries (2 steps in flight), else one run with whatever depth fits (at least 2). w2[j] is loaded in 1, 2 or 4
    // row slices, the fewest whose slice is no larger than a stage-1 step (each warp's stage-2
    // tiles must lie in one slice).
    for (int R = 8 / (kT / 16); R >= 1; R /= 2) {
      if (int64_t(R) * (kT + 16) * (pp / 8) > int64_t(kMaxItems) * kThreads) continue;
      const int64_t e1 = int64_t(R) * (kT + 16) * (pp + kPad) * 2;
      int split = 0;
      int64_t e2 = 0;
      for (int sp : {1, 2, 4}) {
        if (s % sp != 0 || (s / sp) % (tpw2 * 8) != 0) break;
        split = sp;
        e2 = (s / sp) * (r + kPad) * 2;
        if (e2 <= e1) break;
      }
      if (split == 0) continue;
      const int64_t entry = std::max(e1, e2);
      const int64_t ns = std::min<int64_t>(8, avail / entry);
      if (ns < (R > 1 ? 3 : 2)) continue;
      // j per stage-2 step: as many whole w2 blocks (a power of two, at most jb) as an entry
      // holds, when w2[j] is not split.
      int jps = 1;
      if (split == 1)
        while (jps * 2 <= jb && int64_t(jps) * 2 * s * (r + kPad) * 2 <= entry) jps *= 2;
      const int64_t tiles = (p.tokens + kT - 1) / kT;
      const int64_t groups = p.nblocks2 / jb;
      const int64_t items = tiles * groups;
      // Persistent grid: a multiple of the group count, at most one CTA per multiprocessor.
      const int64_t per_wave = std::max<int64_t>(groups, (caps.sm_count / groups) * groups);
      c.ok = true;
      c.kT = kT;
      c.jb = jb;
      c.groups = static_cast<int>(groups);
      c.runs = static_cast<int>(r * jb / 16);
      c.runs_per_chunk = R;
      c.ns = static_cast<int>(ns);
      c.entry_elems = entry / 2;
      c.w2_split = split;
      c.jps = jps;
      c.items = items;
      c.tiles_per_warp = static_cast<int>(tpw2);
      c.z_bytes = z_bytes;
      c.smem_bytes = z_bytes + ns * entry;
      c.ctas = std::min(items, per_wave);
      return c;
    }
  }
  return c;
}

struct BlockdiagConfig {
  bool ok = false;
  bool stationary = false;
  int ns = 0, splits = 1;
  int64_t w_offset = 0, entry_elems = 0, smem_bytes = 0, items = 0, ctas = 0, tiles = 0;
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
  c.entry_elems = c.w_offset + p.q * (p.p + kPad);
  // Two CTAs per multiprocessor, each with as many entries (2..4) as half the shared memory
  // holds; one CTA with 2 entries if that is all that fits.
  const int64_t entry_bytes = c.entry_elems * 2;
  // Two CTAs per multiprocessor: the multiprocessor holds the opt-in limit + 1 KB, and each
  // CTA also takes the 1 KB the system reserves per block (half the opt-in limit alone
  // over-counted by 512 bytes: A100, p = 96, q = 16 planned two CTAs where one fits).
  const int64_t half = (caps.smem_per_block_optin - 1024) / 2;
  int64_t ns = std::min<int64_t>(4, half / entry_bytes);
  int per_sm = 2;
  if (ns < 2) {
    ns = std::min<int64_t>(4, caps.smem_per_block_optin / entry_bytes);
    per_sm = 1;
  }
  if (ns < 2) return c;
  c.ns = static_cast<int>(ns);
  c.smem_bytes = ns * entry_bytes;
  c.tiles = (p.tokens + kBdTokens - 1) / kBdTokens;
  c.items = c.tiles * p.nblocks;
  c.ctas = std::min<int64_t>(c.items, std::max<int64_t>(1, int64_t(caps.sm_count) * per_sm));
  c.ok = true;
  // Stationary w (blockdiag_kernel's kStationary) where the item ring above runs one CTA per
  // multiprocessor (large blocks: 128 x 128 among them) and at least 3 x-only entries fit
  // beside w (at most 6). On the H200 that was 19-22% faster at 128 x 128 blocks, while at
  // 64 x 64 and 32 x 32, where the ring runs two CTAs per multiprocessor, the stationary kernel
  // (one CTA: two spilled at 128 registers) was 15-27% slower (benchmarks/RESULTS.md,
  // "Stationary w in the block-diagonal kernel").
  // FLASHKIT_BLOCKDIAG_STATIONARY=0 (diagnostic, read on every call) keeps the item ring.
  // Branch bdws2 (not measured yet): the stationary kernel now fits two CTAs per
  // multiprocessor without spilling (the block index hidden from the compiler), so it is tried
  // wherever it fits, two CTAs per multiprocessor where they fit.
  const char* env = std::getenv("FLASHKIT_BLOCKDIAG_STATIONARY");
  if (env != nullptr && env[0] == '0') return c;
  const int64_t w_bytes = p.q * (p.p + kPad) * 2;  // a multiple of 16 bytes
  const int64_t x_bytes = std::max(x_elems, o_elems) * 2;
  int64_t sns = (half - w_bytes) / x_bytes;
  int sper_sm = 2;
  if (sns < 3) {
    sns = (caps.smem_per_block_optin - w_bytes) / x_bytes;
    sper_sm = 1;
  }
  if (sns < 3) return c;
  c.stationary = true;
  c.ns = static_cast<int>(std::min<int64_t>(6, sns));
  c.w_offset = w_bytes / 2;
  c.entry_elems = x_bytes / 2;
  c.smem_bytes = w_bytes + c.ns * x_bytes;
  const int64_t slots = std::max<int64_t>(1, int64_t(caps.sm_count) * sper_sm);
  c.splits = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(slots / p.nblocks, c.tiles)));
  c.ctas = p.nblocks * c.splits;
  return c;
}

template <class Kernel, class Params>
fk_status_t launch(Kernel kernel, const Params& params, int64_t ctas, int64_t smem,
                   cudaStream_t stream, const char* name) {
  FK_RETURN_IF_ERROR(
      raise_dynamic_smem_limit(reinterpret_cast<const void*>(kernel), size_t(smem), name));
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
  static_cast<monarch_io::MonarchIO&>(k) = monarch_io::from_problem(p);
  k.jb = c.jb;
  k.jshift = c.jb == 16 ? 0 : c.jb == 8 ? 1 : c.jb == 4 ? 2 : 3;
  k.groups = c.groups;
  k.runs = c.runs;
  k.runs_per_chunk = c.runs_per_chunk;
  k.ns = c.ns;
  k.entry_elems = static_cast<int32_t>(c.entry_elems);
  k.w2_split = c.w2_split;
  k.jps = c.jps;
  k.items = c.items;
  k.tiles_per_warp = c.tiles_per_warp;
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
  k.entry_elems = static_cast<int32_t>(c.entry_elems);
  k.ns = c.ns;
  k.items = c.items;
  k.splits = c.splits;
  k.tiles = c.tiles;
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const char* name = "cuda.sm80.blockdiag_linear kernel";
  if (c.stationary)
    return p.dtype == DType::BF16
               ? launch(blockdiag_kernel<__nv_bfloat16, true>, k, c.ctas, c.smem_bytes, stream, name)
               : launch(blockdiag_kernel<__half, true>, k, c.ctas, c.smem_bytes, stream, name);
  return p.dtype == DType::BF16
             ? launch(blockdiag_kernel<__nv_bfloat16, false>, k, c.ctas, c.smem_bytes, stream, name)
             : launch(blockdiag_kernel<__half, false>, k, c.ctas, c.smem_bytes, stream, name);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
