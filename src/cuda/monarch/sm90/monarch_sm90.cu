// Hopper fused Monarch multiply ("cuda.sm90.monarch"): a thread-block cluster of C CTAs keeps
// both factors resident in shared memory and passes the intermediate through distributed shared
// memory. sm_90a only (cluster launch, mapa / st.shared::cluster, barrier.cluster); the MMAs are
// mma.sync m16n8k16 (fp16/bf16 in, fp32 accumulate) fed by ldmatrix.
//
// Semantics (flashkit.h, monarch group; m2's blockdiag_butterfly_multiply):
//   y1[t, k] = sum_c w1[k/q, k%q, c] x[t, (k/q)*p + c]        k < mid = nblocks1*q
//   z[t, j, b] = y1[t, b*nblocks2 + j]                         (the permutation P^T)
//   out[t, m*nblocks2 + j] = sum_b w2[j, m, b] z[t, j, b] + bias[m*nblocks2 + j]
// with z rounded to the I/O dtype, as m2's code does in fp16/bf16.
//
// Why a cluster: every output of a token depends on all n inputs of the token, and the two
// factors are needed for every token (n = 4096, 64 blocks of 64: 1 MB of bf16 weights). A CTA
// that streamed the weights from L2 per token tile would move more bytes than the tile's HBM
// traffic unless the tile held >= ~128 whole token rows, which do not fit one multiprocessor.
// So the C CTAs of a cluster split the weights instead: CTA c keeps w1 blocks
// [c*B1, (c+1)*B1) (B1 = nblocks1 / C) and w2 blocks j in [8c, 8c+8) (nblocks2 = 8C) in shared
// memory for the whole kernel, and the cluster walks 32-token tiles (persistent clusters):
//   1. CTA c loads x[tile, its B1*p columns] (cp.async, two buffers: the next tile's load is in
//      flight during this tile's work) and computes its share of y1 transposed, y1^T = w1 x^T
//      (M = the q outputs of a block, N = 32 tokens; warp w owns UPW m-tiles of one block).
//   2. Each accumulator row is one mid-index k, i.e. one (j, b); a thread holds 8 of its tokens
//      (the 4 n-tiles' column pairs) and sends them as one 16-byte st.shared::cluster into
//      z[j % 8][b][8 tokens] of the CTA that owns j. The tokens inside z are stored in the
//      order rho' = 8*(rho%8/2) + 2*(rho/8) + rho%2 (rho = the token's row in the tile), which
//      is exactly what a thread holds, so no shuffles are needed; stage 2 undoes it when it
//      stores.
//   3. Cluster barrier (release/acquire), then stage 2 locally: out^T = w2[j] z[j]^T for the 8
//      j of this CTA (M = s outputs, N = 32 tokens, K = r; z read with ldmatrix.trans). Each
//      warp owns a 16 x (8*NT2) sub-tile for all 8 j, so a thread holds its outputs of 8
//      consecutive j (the output permutation puts j innermost) and writes them as one 16-byte
//      store.
//   4. Cluster arrive (z may be overwritten) and on to the next tile; the wait for that arrive
//      comes only before the next tile's remote stores, so it overlaps stage 1.
// Shared memory rows are swizzled in 16-byte units (no padding: n = 4096 uses 224 KB of the
// 227 KB: 64 KB of w1, 64 KB of w2, 2 x 32 KB of x, 32 KB of z).
// HBM traffic: x read once, out written once, the weights once per cluster.
//
// Measured (H200, bf16, n = 4096 = 64 blocks of 64, 16384 tokens, benchmarks/monarch.py):
// 0.265 ms = 24% of the 4.2 TB/s copy bandwidth (target 80%, ~76 us); 4.1x the sm80 kernel,
// 6.4x the m2 two-bmm reference, 2.6x dense torch.matmul. 15 clusters of 8 are resident (120
// of 132 SMs; the GPC layout), one CTA of 8 warps per SM. ncu: IPC 1.0, 7.9 cycles per issued
// instruction per warp, tensor pipe ~10% busy, DRAM 20%: latency-bound on the serial chain
// stage 1 -> remote stores -> cluster barrier -> stage 2 per tile, with only 8 warps to hide it.
// Two variants were measured in the same process and dropped (branch history, commits a142285
// and e373447): exchanging the output pieces through DSMEM so each CTA stores whole 1 KB row
// segments (L2 write requests 8.4M -> 1.05M) ran at 0.275 ms, and additionally keeping the w2
// fragments in registers (stage-2 ldmatrix traffic halved) at 0.308 ms; their stall profile
// was led by "membar" (3.0 of ~10 cycles per issued instruction): barrier.cluster.arrive.release
// waits until the thread's remote (and earlier global) stores are complete. Next steps: remote
// stores as st.async with mbarrier complete_tx signalling (no release fence) and per-CTA
// full/empty barriers instead of cluster-wide ones; a second z buffer so that stage 1 of the
// next tile overlaps stage 2 (needs shared memory: smaller x tiles); wgmma (M = 64 = block).
//
// Declined (the sm80 kernel then serves): nblocks2 not 8, 16, 32 or 64; nblocks1 not a
// multiple of the cluster size; s not 32, 64 or 128; block sizes not multiples of 16; a share
// of the weights that does not fit (e.g. n = 16384, 128 blocks of 128); shapes whose stage-1
// work does not split into 8 warps as above.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/monarch/sm90/monarch_sm90.h"

namespace flashkit {
namespace cuda {
namespace sm90 {
namespace monarch_cluster {

using sm80::cp_async_16;
using sm80::cp_async_16_full;
using sm80::cp_async_commit;
using sm80::cp_async_wait;
using sm80::Elt;
using sm80::ldsm_x4;
using sm80::ldsm_x4_trans;
using sm80::smem_u32;

constexpr int kThreads = 256;
constexpr int kTile = 32;  // tokens per tile
constexpr int kJ = 8;      // w2 blocks per CTA

struct Params {
  const void* x;
  const void* w1;
  const void* w2;
  const void* bias;  // nullptr: none
  void* out;
  int64_t tokens, x_stride, out_stride;
  int32_t p, q, r, s, nb2;
  int32_t B1;        // w1 blocks per CTA
  int32_t tiles;     // ceil(tokens / kTile)
  int32_t bias_dtype;
  int32_t w2_off, x_off, x_bytes, z_off;  // shared-memory byte offsets (w1 at 0)
};

// Byte offset of 16-byte unit `unit` of row `row` in a swizzled array of `U` units per row
// (U = 2, 4 or a multiple of 8): the 8 rows of an ldmatrix phase land in 8 bank groups.
__device__ __forceinline__ uint32_t swz(int row, int unit, int U) {
  const int su = U >= 8 ? unit ^ (row & 7) : U == 4 ? unit ^ ((row >> 1) & 3) : unit ^ ((row >> 2) & 1);
  return static_cast<uint32_t>((row * U + su) * 16);
}

__device__ __forceinline__ void ldsm_x2_trans(uint32_t (&r)[2], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr));
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_nctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t map_shared_rank(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_cluster_v4(uint32_t addr, uint4 v) {
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

template <class T, int UPW, int NT2>
__global__ void __launch_bounds__(kThreads, 1) monarch_cluster_kernel(const Params P) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, qd = lane & 3;
  const int C = static_cast<int>(cluster_nctarank());
  const int c = static_cast<int>(cluster_ctarank());
  const int cluster = static_cast<int>(blockIdx.x) / C;
  const int nclusters = static_cast<int>(gridDim.x) / C;
  const int my_tiles = P.tiles > cluster ? (P.tiles - 1 - cluster) / nclusters + 1 : 0;

  const uint32_t s_base = smem_u32(smem);
  const uint32_t s_w1 = s_base, s_w2 = s_base + P.w2_off, s_x = s_base + P.x_off;
  const uint32_t s_z = s_base + P.z_off;
  const int U1 = P.p / 8;          // w1 row units
  const int U2 = P.r / 8;          // w2 row units
  const int UX = P.B1 * P.p / 8;   // x row units
  const int B1 = P.B1;
  const T* x = static_cast<const T*>(P.x);
  T* out = static_cast<T*>(P.out);

  // ---- resident weights: this CTA's w1 blocks [c*B1, (c+1)*B1) and w2 blocks [8c, 8c+8)
  {
    const T* w1 = static_cast<const T*>(P.w1) + static_cast<int64_t>(c) * B1 * P.q * P.p;
    const int n1 = B1 * P.q * U1;
    for (int idx = tid; idx < n1; idx += kThreads) {
      const int row = idx / U1, unit = idx - row * U1;
      cp_async_16_full(s_w1 + swz(row, unit, U1), w1 + static_cast<int64_t>(row) * P.p + unit * 8);
    }
    const T* w2 = static_cast<const T*>(P.w2) + static_cast<int64_t>(c) * kJ * P.s * P.r;
    const int n2 = kJ * P.s * U2;
    for (int idx = tid; idx < n2; idx += kThreads) {
      const int row = idx / U2, unit = idx - row * U2;
      cp_async_16_full(s_w2 + swz(row, unit, U2), w2 + static_cast<int64_t>(row) * P.r + unit * 8);
    }
  }
  // x[tile, c*B1*p ...] -> buffer b.
  auto load_x = [&](int k, int b) {
    const int64_t t0 = static_cast<int64_t>(cluster + k * nclusters) * kTile;
    const uint32_t dst = s_x + b * P.x_bytes;
    const T* src0 = x + static_cast<int64_t>(c) * B1 * P.p;
    const int n = kTile * UX;
    for (int idx = tid; idx < n; idx += kThreads) {
      const int row = idx / UX, unit = idx - row * UX;
      const int64_t t = t0 + row;
      const bool ok = t < P.tokens;
      cp_async_16(dst + swz(row, unit, UX), ok ? src0 + t * P.x_stride + unit * 8 : src0,
                  ok ? 16 : 0);
    }
  };
  if (my_tiles > 0) load_x(0, 0);
  cp_async_commit();
  if (my_tiles > 1) load_x(1, 1);
  cp_async_commit();

  // ---- stage-1 role: warp w owns m-tiles mt0 .. mt0+UPW-1 of local w1 block blk.
  const int QT = P.q / 16;
  const int blk = (warp * UPW) / QT;
  const int mt0 = (warp * UPW) - blk * QT;
  // Remote z addresses of this thread's accumulator rows (fixed for the whole kernel): row a
  // of block c*B1+blk is mid-index k, k = b*nb2 + j goes to CTA j/8, z[j%8][b][8 tokens].
  uint32_t raddr[UPW][2];
#pragma unroll
  for (int e = 0; e < UPW; ++e)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int a = (mt0 + e) * 16 + g + 8 * h;
      const int k = (c * B1 + blk) * P.q + a;
      const int j = k % P.nb2, b = k / P.nb2;
      const int R = (j % kJ) * P.r + b;
      raddr[e][h] = map_shared_rank(s_z + swz(R, qd, 4), static_cast<uint32_t>(j / kJ));
    }
  // ldmatrix lane addresses (offsets without the k step).
  const int a_row1 = blk * P.q + mt0 * 16 + (lane & 15);  // w1 rows, + e*16
  const int a_unit = lane >> 4;
  const int xb_row = ((lane >> 4) << 3) + (lane & 7);     // x rows (tokens), + 16 per n pair
  const int xb_unit = blk * (P.p / 8) + ((lane >> 3) & 1);

  // ---- stage-2 role: warp w owns w2 rows mt2*16.. (an m-tile) and z token n-tiles
  // ntb .. ntb+NT2-1 (in rho' order), for all 8 j.
  const int mt2 = (warp * NT2) / 4;
  const int ntb = (warp * NT2) % 4;
  const DType bias_dt = static_cast<DType>(P.bias_dtype);
  float bias_r[2][kJ];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) {
      const int m = mt2 * 16 + g + 8 * h;
      bias_r[h][jj] = P.bias ? load_float(P.bias, bias_dt,
                                          static_cast<int64_t>(m) * P.nb2 + c * kJ + jj)
                             : 0.0f;
    }

  cluster_arrive();  // phase A of "tile -1": z is free (also: every CTA of the cluster runs)
  for (int k = 0; k < my_tiles; ++k) {
    const int buf = k & 1;
    cp_async_wait<1>();
    __syncthreads();

    // ------------------------------------------------------------ stage 1: y1^T = w1 x^T
    float acc[UPW][4][4];
#pragma unroll
    for (int e = 0; e < UPW; ++e)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[e][nt][i] = 0.0f;
    {
      const uint32_t xbase = s_x + buf * P.x_bytes;
      for (int ks = 0; ks < P.p / 16; ++ks) {
        uint32_t bx[2][4];
#pragma unroll
        for (int np = 0; np < 2; ++np)
          ldsm_x4(bx[np], xbase + swz(np * 16 + xb_row, xb_unit + ks * 2, UX));
#pragma unroll
        for (int e = 0; e < UPW; ++e) {
          uint32_t a[4];
          ldsm_x4(a, s_w1 + swz(a_row1 + e * 16, ks * 2 + a_unit, U1));
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            Elt<T>::mma(acc[e][nt], a, bx[nt >> 1][(nt & 1) * 2], bx[nt >> 1][(nt & 1) * 2 + 1]);
        }
      }
    }
    __syncthreads();  // x buffer `buf` is free: the tile after next goes there
    if (k + 2 < my_tiles) load_x(k + 2, buf);
    cp_async_commit();

    cluster_wait();  // every CTA is done reading its z (previous tile)
#pragma unroll
    for (int e = 0; e < UPW; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint4 v;
        v.x = Elt<T>::pack(acc[e][0][2 * h], acc[e][0][2 * h + 1]);
        v.y = Elt<T>::pack(acc[e][1][2 * h], acc[e][1][2 * h + 1]);
        v.z = Elt<T>::pack(acc[e][2][2 * h], acc[e][2][2 * h + 1]);
        v.w = Elt<T>::pack(acc[e][3][2 * h], acc[e][3][2 * h + 1]);
        st_cluster_v4(raddr[e][h], v);
      }
    cluster_arrive();
    cluster_wait();  // z of this tile complete in every CTA

    // ------------------------------------------------------------ stage 2: out^T = w2 z^T
    uint32_t pk[NT2][4][kJ / 2];
    float ev[NT2][4];
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) {
      float acc2[NT2][4];
#pragma unroll
      for (int nt = 0; nt < NT2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc2[nt][i] = 0.0f;
      const int arow = jj * P.s + mt2 * 16 + (lane & 15);
      for (int ks = 0; ks < P.r / 16; ++ks) {
        uint32_t a[4];
        ldsm_x4(a, s_w2 + swz(arow, ks * 2 + a_unit, U2));
        const int R = jj * P.r + ks * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
        if constexpr (NT2 == 1) {
          uint32_t bz[2];
          ldsm_x2_trans(bz, s_z + swz(R, ntb, 4));
          Elt<T>::mma(acc2[0], a, bz[0], bz[1]);
        } else {
#pragma unroll
          for (int np = 0; np < NT2 / 2; ++np) {
            uint32_t bz[4];
            ldsm_x4_trans(bz, s_z + swz(R, ntb + np * 2 + (lane >> 4), 4));
            Elt<T>::mma(acc2[np * 2], a, bz[0], bz[1]);
            Elt<T>::mma(acc2[np * 2 + 1], a, bz[2], bz[3]);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < NT2; ++nt)
#pragma unroll
        for (int pos = 0; pos < 4; ++pos) {
          const float v = acc2[nt][pos] + bias_r[pos >> 1][jj];
          if ((jj & 1) == 0)
            ev[nt][pos] = v;
          else
            pk[nt][pos][jj >> 1] = Elt<T>::pack(ev[nt][pos], v);
        }
    }
    cluster_arrive();  // this CTA's z reads are done (the values are in registers)

    const int64_t t0 = static_cast<int64_t>(cluster + k * nclusters) * kTile;
#pragma unroll
    for (int nt = 0; nt < NT2; ++nt)
#pragma unroll
      for (int pos = 0; pos < 4; ++pos) {
        // z column nu = (ntb+nt)*8 + 2*qd + (pos&1) holds tile row rho = 8*qd + 2*(ntb+nt) + (pos&1).
        const int64_t tok = t0 + 8 * qd + 2 * (ntb + nt) + (pos & 1);
        if (tok < P.tokens) {
          const int m = mt2 * 16 + g + 8 * (pos >> 1);
          T* dst = out + tok * P.out_stride + static_cast<int64_t>(m) * P.nb2 + c * kJ;
          *reinterpret_cast<uint4*>(dst) =
              make_uint4(pk[nt][pos][0], pk[nt][pos][1], pk[nt][pos][2], pk[nt][pos][3]);
        }
      }
  }
  cluster_wait();  // matches the last arrive: no CTA leaves while another may still access it
  cp_async_wait<0>();
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool stride_ok(int64_t stride, int64_t rows) { return rows <= 1 || stride % 8 == 0; }
bool units_ok(int64_t u) { return u == 2 || u == 4 || (u > 0 && u % 8 == 0); }

struct Config {
  bool ok = false;
  int C = 0, B1 = 0, UPW = 0, NT2 = 0;
  int64_t w2_off = 0, x_off = 0, x_bytes = 0, z_off = 0, smem = 0, tiles = 0;
};

Config config(const DeviceCaps& caps, const MonarchProblem& p) {
  Config c;
  if (p.device != Device::Cuda || (p.dtype != DType::F16 && p.dtype != DType::BF16)) return c;
  if (caps.cc_major != 9) return c;
  if (p.nblocks1 <= 0 || p.nblocks2 <= 0 || p.p <= 0 || p.q <= 0 || p.r <= 0 || p.s <= 0)
    return c;
  if (p.nblocks1 * p.q > (int64_t(1) << 30) || p.nblocks2 * p.s > (int64_t(1) << 30)) return c;
  if (p.p % 16 || p.q % 16 || p.r % 16) return c;
  if (p.s != 32 && p.s != 64 && p.s != 128) return c;
  const int64_t C = p.nblocks2 / kJ;
  if (p.nblocks2 % kJ || (C != 1 && C != 2 && C != 4 && C != 8)) return c;
  if (p.nblocks1 % C) return c;
  const int64_t B1 = p.nblocks1 / C;
  if (!units_ok(p.p / 8) || !units_ok(p.r / 8) || !units_ok(B1 * p.p / 8)) return c;
  const int64_t QT = p.q / 16, U1 = B1 * QT;
  if (U1 % 8) return c;
  const int64_t UPW = U1 / 8;
  if ((UPW != 1 && UPW != 2 && UPW != 4) || QT % UPW) return c;
  if (!aligned16(p.x) || !aligned16(p.w1) || !aligned16(p.w2) || !aligned16(p.out)) return c;
  if (!stride_ok(p.x_row_stride, p.tokens) || !stride_ok(p.out_row_stride, p.tokens)) return c;
  if (p.tokens > (int64_t(1) << 31) * kTile / 2) return c;  // tile index fits int32
  const int64_t w1_bytes = B1 * p.q * p.p * 2, w2_bytes = kJ * p.s * p.r * 2;
  const int64_t x_bytes = kTile * B1 * p.p * 2, z_bytes = kJ * p.r * kTile * 2;
  const int64_t smem = w1_bytes + w2_bytes + 2 * x_bytes + z_bytes;
  if (smem > caps.smem_per_block_optin) return c;
  c.ok = true;
  c.C = static_cast<int>(C);
  c.B1 = static_cast<int>(B1);
  c.UPW = static_cast<int>(UPW);
  c.NT2 = static_cast<int>(p.s / 32);
  c.w2_off = w1_bytes;
  c.x_off = w1_bytes + w2_bytes;
  c.x_bytes = x_bytes;
  c.z_off = c.x_off + 2 * x_bytes;
  c.smem = smem;
  c.tiles = (p.tokens + kTile - 1) / kTile;
  return c;
}

using KernelFn = void (*)(const Params);

template <class T>
KernelFn pick(int UPW, int NT2) {
#define FK_MONARCH_CASE(u, n) \
  if (UPW == u && NT2 == n) return monarch_cluster_kernel<T, u, n>;
  FK_MONARCH_CASE(1, 1)
  FK_MONARCH_CASE(1, 2)
  FK_MONARCH_CASE(1, 4)
  FK_MONARCH_CASE(2, 1)
  FK_MONARCH_CASE(2, 2)
  FK_MONARCH_CASE(2, 4)
  FK_MONARCH_CASE(4, 1)
  FK_MONARCH_CASE(4, 2)
  FK_MONARCH_CASE(4, 4)
#undef FK_MONARCH_CASE
  return nullptr;
}

// Clusters of this kernel that can be resident at once on the current device (cached per
// device, kernel and cluster size; the answer depends on the chip's GPC layout).
fk_status_t max_clusters(KernelFn kernel, int device, int C, int64_t smem, int* result) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, int, int64_t>, int> cache;
  const auto key = std::make_tuple(device, reinterpret_cast<const void*>(kernel), C, smem);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      *result = it->second;
      return FK_SUCCESS;
    }
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(C), 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(C);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  int n = 0;
  FK_CUDA_TRY(cudaOccupancyMaxActiveClusters(&n, kernel, &cfg),
              "cuda.sm90.monarch: cudaOccupancyMaxActiveClusters");
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = n;
  *result = n;
  return FK_SUCCESS;
}

}  // namespace monarch_cluster

using namespace monarch_cluster;

bool monarch_supported(const DeviceCaps& caps, const MonarchProblem& p) {
  return config(caps, p).ok;
}

fk_status_t monarch(const ExecContext& ctx, const MonarchProblem& p) {
  if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0) return FK_SUCCESS;
  const Config c = config(*ctx.caps, p);
  if (!c.ok)
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.monarch: problem outside the kernel's predicate");
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  const KernelFn kernel =
      p.dtype == DType::BF16 ? pick<__nv_bfloat16>(c.UPW, c.NT2) : pick<__half>(c.UPW, c.NT2);
  if (kernel == nullptr)
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.monarch: no kernel for this configuration");
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   static_cast<int>(c.smem)),
              "cuda.sm90.monarch: cudaFuncSetAttribute");
  int dev = 0;
  FK_CUDA_TRY(cudaGetDevice(&dev), "cuda.sm90.monarch: cudaGetDevice");
  int clusters = 0;
  FK_RETURN_IF_ERROR(max_clusters(kernel, dev, c.C, c.smem, &clusters));
  if (clusters <= 0) {
    // The cluster cannot be made resident here (e.g. a partitioned GPU): the sm80-class kernel.
    if (sm80::monarch_supported(*ctx.caps, p)) return sm80::monarch(ctx, p);
    return set_error(FK_ERROR_KERNEL_LAUNCH,
                     "cuda.sm90.monarch: no cluster of this size fits the device");
  }
  Params k{};
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
  k.B1 = c.B1;
  k.tiles = static_cast<int32_t>(c.tiles);
  k.bias_dtype = static_cast<int32_t>(p.bias_dtype);
  k.w2_off = static_cast<int32_t>(c.w2_off);
  k.x_off = static_cast<int32_t>(c.x_off);
  k.x_bytes = static_cast<int32_t>(c.x_bytes);
  k.z_off = static_cast<int32_t>(c.z_off);

  const int64_t grid_clusters = std::min<int64_t>(c.tiles, clusters);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(grid_clusters * c.C), 1, 1);
  cfg.blockDim = dim3(kThreads, 1, 1);
  cfg.dynamicSmemBytes = static_cast<size_t>(c.smem);
  cfg.stream = static_cast<cudaStream_t>(ctx.stream);
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = static_cast<unsigned>(c.C);
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  FK_CUDA_TRY(cudaLaunchKernelEx(&cfg, kernel, k), "cuda.sm90.monarch kernel launch");
  return check_launch("cuda.sm90.monarch kernel");
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
