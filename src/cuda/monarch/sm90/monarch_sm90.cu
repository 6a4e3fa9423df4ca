// Hopper fused Monarch multiply ("cuda.sm90.monarch"): a thread-block cluster of C CTAs keeps
// both factors resident in shared memory and passes the intermediate through distributed shared
// memory. sm_90a only (cluster launch, mapa, st.async, mbarrier, the copy engine); the MMAs are
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
//   1. Warp w owns UPW m-tiles of one local w1 block; the WPB = (q/16)/UPW warps of a block load
//      that block's x columns of the tile themselves (NX = 1 to 3 buffers, block-major), so x
//      needs a warp barrier (WPB = 1) or a named barrier of those warps, never a CTA-wide one.
//      The compile-time square shapes (WPB = 1) load x with the copy engine: lane 0 issues one
//      32 x p box (swizzled like swz(), the copy engine's 32/64/128-byte pattern) completing on
//      the warp's own mbarrier; other shapes use cp.async. Stage 1 computes the warp's share of
//      y1 transposed, y1^T = w1 x^T (M = the q outputs of a block, N = 32 tokens); in the
//      compile-time shapes the warp's w1 block stays in registers (64 registers at 64 x 64,
//      loaded once from a staging copy in the z buffers), so stage 1 reads only x from shared
//      memory.
//   2. Each accumulator row is one mid-index k, i.e. one (j, b); a thread holds 8 of its tokens
//      (the 4 n-tiles' column pairs) and sends them as one 16-byte st.async into
//      z[j % 8][b][8 tokens] of the CTA that owns j; its completion counts 16 bytes on that
//      CTA's full[zb] mbarrier (NZ = 1 or 2 z buffers). The tokens inside z are stored in the
//      order rho' = 8*(rho%8/2) + 2*(rho/8) + rho%2 (rho = the token's row in the tile), which
//      is exactly what a thread holds, so no shuffles are needed; stage 2 undoes it when it
//      stores. Before writing buffer zb a warp waits on its own CTA's empty[zb] mbarrier.
//   3. Each warp waits on its own CTA's full[zb] (1 arrival, armed with expect_tx(z bytes) by
//      thread 0, + the z bytes of the C producers), then runs stage 2 locally: out^T = w2[j]
//      z[j]^T for the 8 j of this CTA (M = s outputs, N = 32 tokens, K = r; z read with
//      ldmatrix.trans). Each warp owns a 16 x (8*NT2) sub-tile for all 8 j, so a thread holds
//      its outputs of 8 consecutive j (the output permutation puts j innermost): 16 bytes.
//   4. Once its z reads have returned, lanes 0..C-1 of each warp arrive on empty[zb] of CTA
//      `lane` (C * 8 arrivals per phase), then the warp stores its outputs: where the staging
//      area fits, into its own 16-byte-row staging area (4 runs of 2*NT2 tokens x 16 rows m x
//      8 j) that lane 0 hands to the copy engine (4 boxes of a 3-D tensor map of out, after
//      fence.proxy.async), else as 16-byte register stores. No thread ever waits for its own
//      global or remote stores (no release fence in the loop), and there is no CTA- or
//      cluster-wide barrier in the loop: the warps of a CTA drift apart by up to NZ tiles.
//   With two z buffers the loop is skewed by one tile: each iteration runs stage 1 (and the z
//   hand-off) of tile k + 1, then stage 2 of tile k, so the wait for tile k's z from the other
//   CTAs is covered by a whole stage 1.
// Shared memory rows are swizzled in 16-byte units (no padding). Buffers, first that fits: two x,
// two z and the output staging area (n = 4096: 64 KB of w2, 2 x 32 KB of x, 2 x 32 KB of z,
// 32 KB of staging = 224 KB of the 227 KB; w1 in registers), then three x and two z with
// register stores, then fewer (see config). The benchmark's square shapes (64 blocks of 64 in
// clusters of 8, 32 of 32 in clusters of 4, and 16 of 64 in clusters of 2) are compiled with
// the block size and B1 as constants (the k loops unroll, the swizzled addresses fold, w1 fits
// in registers); other shapes use the run-time version of the same kernel.
// HBM traffic: x read once, out written once, the weights once per cluster.
//
// History. v1 (commit 1040ed7; H200, bf16, n = 4096, 16384 tokens): one z buffer handed over with
// cluster-wide barriers: 0.265 ms = 24% of the 4.2 TB/s copy bandwidth, 6.4x the m2 two-bmm
// reference, 2.6x dense torch.matmul; ncu: IPC 1.0, 8 warps per SM, tensor pipe ~10%, DRAM 20%, top
// stall the membar of barrier.cluster.arrive.release (it waits until the thread's remote and
// earlier global stores are complete). Two variants of v1 were measured and dropped (commits
// a142285, e373447): output pieces exchanged through DSMEM so that whole 1 KB row segments are
// stored (0.275 ms), and w2 fragments kept in registers (0.308 ms). v2 (branch monarch4): mbarrier
// handoff as above, double-buffered z, per-warp x loads, compile-time square shapes. PTX notes:
// mbarrier.arrive.release.cluster on a remote barrier and barrier.cluster.arrive.release compile to
// MEMBAR.ALL.GPU (they wait for the thread's outstanding global stores), try_wait.acquire.cluster
// to a wait + CCTL.IVALL; the loop uses the default (CTA-scope) forms, as CUTLASS's cluster
// pipelines do. Measured (H200, 2026-11-30, branch monarch4 commit 49079c3, benchmarks/monarch.py,
// one process per library on one machine): n = 4096, 16384 tokens 0.207 ms = 31% of 4.2 TB/s (v1
// 0.271 ms in the same session: 1.31x), 8.2x the two-bmm reference, 3.3x dense torch.matmul; 65536
// tokens 0.783 ms (v1 1.001); n = 1024: 0.046 / 0.156 ms (34% / 41%). One z and two x buffers at n
// = 4096 (FK_MONARCH90_PREFER_Z2=0): 0.208 / 0.786 ms, i.e. the second z buffer gains nothing
// measurable; the cluster-scope barrier forms (FK_MONARCH90_CLUSTER_SCOPE=1): 0.221 / 0.853 ms. v2
// profiled (ncu, n = 4096, 16384 tokens, one launch; branch monarch5): 205 us, DRAM 25%, L2 55%, L1
// 60%, issue slots 15% busy, 8 warps per SM (12.5% occupancy), 11.6 cycles per issued instruction.
// Stall samples: 27% long-scoreboard waits on the source registers of the scattered 16-byte output
// stores (each STG touches 32 lines, so the LSU drains slowly and the next pack into the same
// registers waits), 10% the wait for z right after stage 1, 14% mio and 13% short scoreboard
// (ldmatrix), ~4% the cp.async wait for x. v3 (this version, branch monarch5): w1 in registers, the
// one-tile skew, the copy engine for x and for the output. Measured (H200, 2026-11-30, same process
// as the anchors, bf16): n = 4096, 16384 tokens 0.165 ms = 39% of 4.2 TB/s (v2 0.208 ms on the same
// machine: 1.26x), 10.3x the two-bmm reference, 4.2x dense torch.matmul; 65536 tokens 0.652 ms (v2
// 0.781); n = 1024 0.043 / 0.147 ms (v2 0.045 / 0.153). Steps on the same machine (n = 4096 / 1024,
// 16384 tokens): w1 in registers + skew + three x buffers with register stores 0.174 / 0.037 ms
// (and 0.657 / 0.120 ms at 65536 tokens); + copy-engine output stores (two x buffers) 0.179 /
// 0.046; + copy-engine x loads 0.164 / 0.043. So the copy-engine output stores lose (16-byte box
// rows keep the copy engine's queue full: ~24% of the stall samples wait to issue UTMASTG/UTMALDG;
// the staging stores are 4-way bank-conflicted, lanes 8 apart share banks; fence.proxy.async ~6%),
// while the copy-engine x loads win. Copy-engine x loads with register stores, measured afterwards
// on merged main: better at n = 1024, worse at n = 4096 (16384 tokens), equal at n = 4096 / 65536
// tokens, hence register stores for 32 x 32 blocks only (config()). v3's profile: 159 us, DRAM 33%,
// L2 70%, L1 68%, issue slots 17% busy, stalls: long scoreboard 38% (mostly the copy-engine issue),
// wait 19%, short scoreboard 18% (ldmatrix -> HMMA). Still short of the 80% target: one CTA of 8
// warps per SM (the weights fill shared memory) and stage 2's ldmatrix traffic (each warp re-reads
// w2 and z fragments: ~2000 shared wavefronts per tile of ~3300) leave the SM latency- and
// L1-bound.
// Tried afterwards and dropped (branch monarch9; H200, bf16, n = 4096, 16384 tokens, each timed in
// the same device call as main's library, which ran 0.157-0.164 ms; benchmarks/RESULTS.md):
//  - stage 2 by wgmma m64n16k16 (each warpgroup one 16-token half of z for all 8 j, z stored as
//    two halves with the 32-byte swizzle; 32 HGMMA per warpgroup and tile, 244 registers):
//    0.185 ms. ncu: 184 us, 9.0 cycles per issued instruction, top stall the L1TEX scoreboard
//    (36%, the output stores as before): the warpgroup waits for its whole wgmma batch in lock
//    step, and the N = 16 products read 2.5 KB of operands per 32 KFLOP.
//  - output exchange (commit ed11ca4, FK_MONARCH90_OX): CTA d receives through DSMEM (st.async)
//    the outputs of rows m in [8d, 8d+8), i.e. whole 1 KB row segments of each token, and stores
//    them with two 256 x 32 copy-engine boxes per tile (a receive buffer in place of the staging
//    area, full/empty mbarriers, the store issued by a rotating warp one tile later): 0.193 ms.
//    ncu: 190 us, L2 36% of peak (from 60-70%), but 14.7 cycles per issued instruction, 41% of
//    the stall samples the short scoreboard of MIO operations (the st.async source registers: each
//    CTA now sends 2 x 2048 16-byte st.async per tile, z and out).
//  - the exchange + stage 2 by wgmma m64n32k16 (each warpgroup 4 j for all 32 tokens, so a thread
//    sends 8-byte pieces, twice as many): 0.243 ms (ncu 240 us).
// So DSMEM messages cost more than the 16-byte copy-engine rows they replace, and the z hand-off
// itself (2048 st.async of 16 bytes per CTA and tile) is the next suspect. Next: stage z in local
// shared memory and move it with bulk DSMEM copies (cp.async.bulk.shared::cluster, one 4 KB copy
// per destination CTA and tile; needs ~32 KB, e.g. the output staging area with register stores,
// measured 6% slower on their own), or two CTAs per SM (clusters of 16, half the weights).
//
// Declined (the sm80 kernel then serves): nblocks2 not 8, 16, 32 or 64; nblocks1 not a
// multiple of the cluster size; s not 32, 64 or 128; block sizes not multiples of 16; a share
// of the weights that does not fit (e.g. n = 16384, 128 blocks of 128); shapes whose stage-1
// work does not split into 8 warps as above.
#include <cuda.h>  // CUtensorMap (the output's tensor map; encoded through the runtime's entry point)
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
#include "cuda/common/tma.cuh"
#include "cuda/monarch/common/monarch_io.h"
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

struct Params : monarch_io::MonarchIO {
  int32_t B1;        // w1 blocks per CTA
  int32_t tiles;     // ceil(tokens / kTile)
  int32_t w1_off, w2_off, x_off, x_bytes, z_off;  // shared-memory byte offsets (w1: where it
                                                  // lives, or is staged when kept in registers)
  int32_t z_bytes, bar_off;
  int32_t nx, nz;    // x buffers (1 to 3) and z buffers (1 or 2)
  int32_t o_off;     // > 0: output staging area (8 warps x NT2 x 2 KB), stored by the copy engine
                     // through omap; 0: 16-byte register stores
  int32_t xtma;      // 1: x tiles loaded by the copy engine through xmap (one box per warp)
  CUtensorMap omap;  // out as (j: nb2, m: s, token: tokens), box (8, 16, 2 * NT2), no swizzle
  CUtensorMap xmap;  // x as (column, token), box (p, 32), swizzled like swz(row, unit, p / 8)
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
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// ---- mbarriers (shared::cta addresses unless named remote). FK_MONARCH90_CLUSTER_SCOPE = 1
// builds the cluster-scope forms (release.cluster arrive, acquire.cluster wait) for comparison.
#ifndef FK_MONARCH90_CLUSTER_SCOPE
#define FK_MONARCH90_CLUSTER_SCOPE 0
#endif
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_arm(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// Waits until the phase of parity `parity` of the local barrier `bar` has completed (default
// acquire.cta: with .cluster, ptxas adds an L1 invalidation after every wait; the data guarded
// here lives in shared memory and arrives through st.async complete_tx, as CUTLASS's cluster
// pipelines wait on remote TMA multicast).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
#if FK_MONARCH90_CLUSTER_SCOPE
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
#else
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
#endif
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// One arrival on a barrier of another CTA (or this one) of the cluster (mapa'd address). The
// default semantics (release at CTA scope), as CUTLASS's cluster consumer release: with
// .release.cluster, ptxas emits MEMBAR.ALL.GPU first, which waits for this thread's
// outstanding global stores. What it signals is "my reads of z are done" (a WAR hand-off):
// the release orders the earlier ldmatrix reads before the arrive for this CTA's own warps
// (all that matters in a cluster of 1; ptxas needs no fence for that), and a remote producer
// sees the arrive only after a round trip through the cluster network, after which its
// st.async travels back.
__device__ __forceinline__ void mbar_arrive_remote(uint32_t rbar) {
#if FK_MONARCH90_CLUSTER_SCOPE
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(rbar)
               : "memory");
#else
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(rbar) : "memory");
#endif
}
// 16-byte store into the shared memory of a CTA of the cluster; its completion counts 16 bytes
// on that CTA's barrier `rbar` (same CTA as `addr`). No fence, no wait in the issuing thread.
__device__ __forceinline__ void st_async_v4(uint32_t addr, uint4 v, uint32_t rbar) {
  asm volatile(
      "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1,%2,%3,%4}, [%5];\n" ::"r"(
          addr),
      "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(rbar)
      : "memory");
}
// One arrival (release, CTA scope) on a barrier of this CTA.
__device__ __forceinline__ void mbar_arrive_local(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Plain 16-byte store through a shared::cluster address (a cluster of 1: st.async needs a
// cluster of at least 2 CTAs; compute-sanitizer reports it as an invalid write otherwise).
__device__ __forceinline__ void st_cluster_v4(uint32_t addr, uint4 v) {
  asm volatile("st.shared::cluster.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
// ---- copy-engine (TMA) stores of the output from shared memory
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1,
                                             int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
// Copy-engine load of a box of x into this CTA's shared memory; completes `bytes` on `bar`.
__device__ __forceinline__ void tma_load_2d(const CUtensorMap* map, uint32_t dst, uint32_t bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
      "%4}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1)
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// The issuing thread's bulk stores have finished reading shared memory.
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, uint32_t a, uint32_t b, uint32_t c,
                                             uint32_t d) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// KB, KB1: 0, or the block size (p = q = r = s = KB) and w1 blocks per CTA known at compile
// time (the benchmark's square shapes): then the k loops unroll and the swizzled addresses fold.
template <class T, int UPW, int NT2, int KB, int KB1>
__global__ void __launch_bounds__(kThreads, 1) monarch_cluster_kernel(
    const __grid_constant__ Params P) {
  extern __shared__ __align__(128) unsigned char smem[];
  // The warp index through a shuffle from lane 0, so that the compiler knows it is uniform
  // over the warp: the copy-engine loads and stores whose coordinates derive from it then take
  // uniform registers directly instead of an ELECT / R2UR / BRA.U.ANY loop around each one.
  const int tid = threadIdx.x, warp = __shfl_sync(0xffffffffu, tid >> 5, 0), lane = tid & 31;
  const int g = lane >> 2, qd = lane & 3;
  const int C = static_cast<int>(cluster_nctarank());
  const int c = static_cast<int>(cluster_ctarank());
  const int cluster = static_cast<int>(blockIdx.x) / C;
  const int nclusters = static_cast<int>(gridDim.x) / C;
  const int my_tiles = P.tiles > cluster ? (P.tiles - 1 - cluster) / nclusters + 1 : 0;
  const int NX = P.nx, NZ = P.nz;

  const uint32_t s_base = smem_u32(smem);
  const uint32_t s_w1 = s_base + P.w1_off, s_w2 = s_base + P.w2_off, s_x = s_base + P.x_off;
  const uint32_t s_z = s_base + P.z_off;
  // Barriers: full[b] (z buffer b holds the tile: 1 arrival + z_bytes of st.async), empty[b]
  // (every warp of every CTA has read z buffer b of its tile: C * 8 arrivals).
  const uint32_t s_full = s_base + P.bar_off, s_empty = s_full + 16;
  const int p = KB ? KB : P.p, q = KB ? KB : P.q, r = KB ? KB : P.r, s = KB ? KB : P.s;
  const int B1 = KB1 ? KB1 : P.B1;
  // Compile-time shapes keep the warp's w1 block in registers (UPW m-tiles x KS1 k-steps of
  // A fragments: 64 registers at 64 x 64); w1 is then staged once through the z buffers.
  constexpr bool kW1R = KB != 0;
  constexpr int KS1 = KB ? KB / 16 : 1;
  const int U1 = p / 8;            // w1 row units
  const int U2 = r / 8;            // w2 row units
  const T* x = static_cast<const T*>(P.x);
  T* out = static_cast<T*>(P.out);

  // A cluster of 1 stores z with plain stores and every thread arrives on full (no bytes).
  const bool solo = C == 1;
  const uint32_t full_bytes = solo ? 0u : static_cast<uint32_t>(P.z_bytes);
  if (tid == 0) {
    for (int b = 0; b < NZ; ++b) {
      mbar_init(s_full + 8 * b, solo ? 1 + kThreads : 1);
      mbar_init(s_empty + 8 * b, static_cast<uint32_t>(C * (kThreads / 32)));
    }
    mbar_init_fence();
    for (int b = 0; b < NZ && b < my_tiles; ++b) mbar_arm(s_full + 8 * b, full_bytes);
  }
  // Barriers initialised (and every CTA of the cluster runs); wait below. With w1 in registers
  // the arrive also says "this CTA's z buffers (the w1 staging area) may be written".
  if constexpr (!kW1R) cluster_arrive();

  // ---- resident weights: this CTA's w1 blocks [c*B1, (c+1)*B1) and w2 blocks [8c, 8c+8)
  {
    const T* w1 = static_cast<const T*>(P.w1) + static_cast<int64_t>(c) * B1 * q * p;
    const int n1 = B1 * q * U1;
    for (int idx = tid; idx < n1; idx += kThreads) {
      const int row = idx / U1, unit = idx - row * U1;
      cp_async_16_full(s_w1 + swz(row, unit, U1), w1 + static_cast<int64_t>(row) * p + unit * 8);
    }
    const T* w2 = static_cast<const T*>(P.w2) + static_cast<int64_t>(c) * kJ * s * r;
    const int n2 = kJ * s * U2;
    for (int idx = tid; idx < n2; idx += kThreads) {
      const int row = idx / U2, unit = idx - row * U2;
      cp_async_16_full(s_w2 + swz(row, unit, U2), w2 + static_cast<int64_t>(row) * r + unit * 8);
    }
  }
  cp_async_commit();

  // ---- stage-1 role: warp w owns m-tiles mt0 .. mt0+UPW-1 of local w1 block blk; the WPB
  // warps of one block (wi = index among them) load that block's x columns themselves, so x
  // needs only a warp (WPB = 1) or named (WPB > 1) barrier, never a CTA-wide one.
  const int QT = q / 16;
  const int blk = (warp * UPW) / QT;
  const int mt0 = (warp * UPW) - blk * QT;
  const int WPB = QT / UPW;
  const int wi = warp - blk * WPB;
  auto x_sync = [&]() {
    if (WPB == 1)
      __syncwarp();
    else
      named_barrier_sync(1 + blk, WPB * 32);
  };
  // x[tile k, this block's p columns] -> buffer b.
  // x buffers are block-major: block blk's 32 x p tile at xblk, rows swizzled like w1's (the
  // copy engine's 32/64/128-byte swizzle for p = 16/32/64).
  const uint32_t xblk = static_cast<uint32_t>(blk * kTile * p * 2);
  // With the copy engine (kernels with one warp per w1 block, WPB = 1), lane 0 of each warp
  // loads its block's box and arms the warp's barrier xbar[b]; needs a 1024-byte aligned base.
  const bool xtma = P.xtma != 0 && (s_base & 1023) == 0;
  const uint32_t s_xbar = s_base + P.bar_off + 32 + warp * 24;
  if (xtma && lane == 0) {
    for (int b = 0; b < NX; ++b) mbar_init(s_xbar + 8 * b, 1);
    mbar_init_fence();
    fence_proxy_async_smem();
  }
  __syncwarp();
  auto load_x = [&](int k, int b) {
    const int64_t t0 = static_cast<int64_t>(cluster + k * nclusters) * kTile;
    const uint32_t dst = s_x + b * P.x_bytes + xblk;
    if (xtma) {
      if (lane == 0) {
        mbar_arm(s_xbar + 8 * b, static_cast<uint32_t>(kTile * p * 2));
        tma_load_2d(&P.xmap, dst, s_xbar + 8 * b, (c * B1 + blk) * p, static_cast<int>(t0));
      }
      return;
    }
    const T* src0 = x + static_cast<int64_t>(c * B1 + blk) * p;
    const int n = kTile * U1;
    for (int idx = wi * 32 + lane; idx < n; idx += WPB * 32) {
      const int row = idx / U1, unit = idx - row * U1;
      const int64_t t = t0 + row;
      const bool ok = t < P.tokens;
      cp_async_16(dst + swz(row, unit, U1), ok ? src0 + t * P.x_stride + unit * 8 : src0,
                  ok ? 16 : 0);
    }
  };
  for (int b = 0; b < NX; ++b) {
    if (b < my_tiles) load_x(b, b);
    cp_async_commit();
  }
  // Waits until at most n + (this thread's x groups still allowed in flight) groups remain.
  auto x_wait = [&](int n) {
    if (n >= 3)
      cp_async_wait<3>();
    else if (n == 2)
      cp_async_wait<2>();
    else if (n == 1)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
  };

  // Remote z addresses of this thread's accumulator rows (fixed for the whole kernel): row a
  // of block c*B1+blk is mid-index k, k = b*nb2 + j goes to CTA j/8, z[j%8][b][8 tokens]; with
  // the full barrier of that CTA (buffer 0; buffer 1 is z_bytes / 8 bytes further).
  uint32_t raddr[UPW][2], rfull[UPW][2];
#pragma unroll
  for (int e = 0; e < UPW; ++e)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int a = (mt0 + e) * 16 + g + 8 * h;
      const int k = (c * B1 + blk) * q + a;
      const int j = k % P.nb2, b = k / P.nb2;
      const int R = (j % kJ) * r + b;
      raddr[e][h] = map_shared_rank(s_z + swz(R, qd, 4), static_cast<uint32_t>(j / kJ));
      rfull[e][h] = map_shared_rank(s_full, static_cast<uint32_t>(j / kJ));
    }
  // Lanes 0..C-1 of every warp signal "z buffer read" to CTA `lane`.
  const uint32_t rempty = map_shared_rank(s_empty, static_cast<uint32_t>(lane < C ? lane : 0));
  // ldmatrix lane addresses (offsets without the k step).
  const int a_row1 = blk * q + mt0 * 16 + (lane & 15);  // w1 rows, + e*16
  const int a_unit = lane >> 4;
  const int xb_row = ((lane >> 4) << 3) + (lane & 7);     // x rows (tokens), + 16 per n pair
  const int xb_unit = (lane >> 3) & 1;

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

  x_wait(NX);       // the weights (the first group) have landed; the x loads may be in flight
  __syncthreads();  // the weights are visible to every warp
  uint32_t a1[kW1R ? UPW : 1][KS1][4];
  if constexpr (kW1R) {
#pragma unroll
    for (int e = 0; e < UPW; ++e)
#pragma unroll
      for (int ks = 0; ks < KS1; ++ks)
        ldsm_x4(a1[e][ks], s_w1 + swz(a_row1 + e * 16, ks * 2 + a_unit, U1));
    cluster_arrive();  // these reads of the staging area are done (release)
  }
  cluster_wait();   // every barrier of the cluster is initialised
  // Stage 1 of tile k and its z hand-off (to every CTA's z buffer zb).
  auto produce = [&](int k) {
    const int xbuf = k % NX;
    const int zb = NZ == 2 ? (k & 1) : 0;
    const uint32_t use = NZ == 2 ? static_cast<uint32_t>(k >> 1) : static_cast<uint32_t>(k);
    if (xtma) {
      mbar_wait(s_xbar + 8 * xbuf, static_cast<uint32_t>(k / NX) & 1);  // the box has landed
    } else {
      x_wait(NX - 1);
      x_sync();  // x of this tile (this block's columns) is visible to the block's warps
    }

    // ------------------------------------------------------------ stage 1: y1^T = w1 x^T
    float acc[UPW][4][4];
#pragma unroll
    for (int e = 0; e < UPW; ++e)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[e][nt][i] = 0.0f;
    {
      const uint32_t xbase = s_x + xbuf * P.x_bytes + xblk;
#pragma unroll
      for (int ks = 0; ks < p / 16; ++ks) {
        uint32_t bx[2][4];
#pragma unroll
        for (int np = 0; np < 2; ++np)
          ldsm_x4(bx[np], xbase + swz(np * 16 + xb_row, xb_unit + ks * 2, U1));
#pragma unroll
        for (int e = 0; e < UPW; ++e) {
          uint32_t a[4];
          if constexpr (kW1R) {
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = a1[e][kW1R ? ks : 0][i];
          } else {
            ldsm_x4(a, s_w1 + swz(a_row1 + e * 16, ks * 2 + a_unit, U1));
          }
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            Elt<T>::mma(acc[e][nt], a, bx[nt >> 1][(nt & 1) * 2], bx[nt >> 1][(nt & 1) * 2 + 1]);
        }
      }
    }
    // The block's warps are done with x buffer `xbuf` (their ldmatrix results fed the MMAs
    // issued above): tile k + NX goes there.
    x_sync();
    if (k + NX < my_tiles) load_x(k + NX, xbuf);
    if (!xtma) cp_async_commit();

    // z buffer zb of every CTA is free once its readers of tile k - NZ have signalled.
    if (k >= NZ) mbar_wait(s_empty + 8 * zb, (use - 1) & 1);
    const uint32_t zoff = zb * P.z_bytes;
#pragma unroll
    for (int e = 0; e < UPW; ++e)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint4 v;
        v.x = Elt<T>::pack(acc[e][0][2 * h], acc[e][0][2 * h + 1]);
        v.y = Elt<T>::pack(acc[e][1][2 * h], acc[e][1][2 * h + 1]);
        v.z = Elt<T>::pack(acc[e][2][2 * h], acc[e][2][2 * h + 1]);
        v.w = Elt<T>::pack(acc[e][3][2 * h], acc[e][3][2 * h + 1]);
        if (solo)
          st_cluster_v4(raddr[e][h] + zoff, v);
        else
          st_async_v4(raddr[e][h] + zoff, v, rfull[e][h] + 8 * zb);
      }
    if (solo) mbar_arrive_local(s_full + 8 * zb);
  };
  // Stage 2 of tile k (its z complete in this CTA's buffer zb) and the output stores.
  auto consume = [&](int k) {
    const int zb = NZ == 2 ? (k & 1) : 0;
    const uint32_t use = NZ == 2 ? static_cast<uint32_t>(k >> 1) : static_cast<uint32_t>(k);
    const uint32_t zoff = zb * P.z_bytes;
    mbar_wait(s_full + 8 * zb, use & 1);  // z of this tile complete (all CTAs' stores landed)
    if (tid == 0 && k + NZ < my_tiles) mbar_arm(s_full + 8 * zb, full_bytes);

    // ------------------------------------------------------------ stage 2: out^T = w2 z^T

    const uint32_t zbase = s_z + zoff;
    uint32_t pk[NT2][4][kJ / 2];
    float ev[NT2][4];
#pragma unroll
    for (int jj = 0; jj < kJ; ++jj) {
      float acc2[NT2][4];
#pragma unroll
      for (int nt = 0; nt < NT2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc2[nt][i] = 0.0f;
      const int arow = jj * s + mt2 * 16 + (lane & 15);
      for (int ks = 0; ks < r / 16; ++ks) {
        uint32_t a[4];
        ldsm_x4(a, s_w2 + swz(arow, ks * 2 + a_unit, U2));
        const int R = jj * r + ks * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
        if constexpr (NT2 == 1) {
          uint32_t bz[2];
          ldsm_x2_trans(bz, zbase + swz(R, ntb, 4));
          Elt<T>::mma(acc2[0], a, bz[0], bz[1]);
        } else {
#pragma unroll
          for (int np = 0; np < NT2 / 2; ++np) {
            uint32_t bz[4];
            ldsm_x4_trans(bz, zbase + swz(R, ntb + np * 2 + (lane >> 4), 4));
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
    // This warp's z reads are done: tell every CTA, if anyone will wait for it (the producers
    // of tile k + NZ). ptxas issues the arrive right after the last ldmatrix of z (before the
    // last MMAs); the release orders those reads before it (see mbar_arrive_remote).
    __syncwarp();
    if (lane < C && k + NZ < my_tiles) {
      if (solo)
        mbar_arrive_local(s_empty + 8 * zb);
      else
        mbar_arrive_remote(rempty + 8 * zb);
    }

    const int64_t t0 = static_cast<int64_t>(cluster + k * nclusters) * kTile;
    if (P.o_off) {
      // Copy-engine stores: the warp's outputs go to its own staging area as 4 runs (one per qd)
      // of 2*NT2 consecutive tokens x 16 rows m x 8 j (16 bytes), i.e. the box of omap; lane 0
      // then stores the 4 boxes (rows past the last token are clipped by the copy engine).
      const uint32_t ow = s_base + P.o_off + warp * (NT2 * 2048);
      if (lane == 0) bulk_wait_read();  // this area's stores of the previous tile have read it
      __syncwarp();
#pragma unroll
      for (int nt = 0; nt < NT2; ++nt)
#pragma unroll
        for (int pos = 0; pos < 4; ++pos) {
          const int tt = 2 * nt + (pos & 1);  // token within the run
          st_shared_v4(ow + (((qd * 2 * NT2 + tt) * 16) + g + 8 * (pos >> 1)) * 16, pk[nt][pos][0],
                       pk[nt][pos][1], pk[nt][pos][2], pk[nt][pos][3]);
        }
      fence_proxy_async_smem();  // the generic-proxy writes above, before the copy engine reads
      __syncwarp();
      if (lane == 0) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int64_t tr = t0 + 8 * r + 2 * ntb;
          if (tr < P.tokens)
            tma_store_3d(&P.omap, ow + r * (2 * NT2) * 256, c * kJ, mt2 * 16, static_cast<int>(tr));
        }
        bulk_commit();
      }
      return;
    }
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
  };
  // With two z buffers the loop is skewed by one tile: stage 1 of tile k + 1 (and its z
  // hand-off) runs before stage 2 of tile k, so the wait for tile k's z from the other CTAs is
  // covered by a whole stage 1 instead of following it.
  if (NZ == 2 && my_tiles > 0) produce(0);
  for (int k = 0; k < my_tiles; ++k) {
    const int kp = NZ == 2 ? k + 1 : k;
    if (kp < my_tiles) produce(kp);
    consume(k);
  }
  cp_async_wait<0>();
  if (P.o_off && lane == 0) bulk_wait_all();
  // No CTA leaves while another may still access its shared memory (every incoming st.async and
  // arrive has been waited for already; this is belt and braces, once per kernel).
  cluster_arrive();
  cluster_wait();
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
bool stride_ok(int64_t stride, int64_t rows) { return rows <= 1 || stride % 8 == 0; }
bool units_ok(int64_t u) { return u == 2 || u == 4 || (u > 0 && u % 8 == 0); }

struct Config {
  bool ok = false;
  bool w1reg = false;  // a compile-time square shape: w1 in registers (the KB kernels)
  bool xtma = false;   // x tiles by the copy engine (the KB kernels: one warp per w1 block)
  int C = 0, B1 = 0, UPW = 0, NT2 = 0, nx = 0, nz = 0;
  int64_t o_off = 0, o_bytes = 0;  // output staging for the copy-engine stores (0: none)
  int64_t w1_off = 0, w2_off = 0, x_off = 0, x_bytes = 0, z_off = 0, z_bytes = 0, bar_off = 0, smem = 0,
          tiles = 0;
};

// Buffering preference when not everything fits: a second z buffer (stage 1 of the next tile
// overlaps stage 2 of this one across the cluster) before a second x buffer.
// Copy-engine x loads (the KB kernels) and output stores (where the staging area fits and the
// output blocks are 64 or 128 rows). Measured on the H200 with the copy-engine x loads
// (benchmarks/RESULTS.md, "v3 on merged main, and the register-store variant"): with 32 x 32
// blocks (n = 1024) register stores and a third x buffer run 21% faster (65536 tokens: 0.116
// against 0.147 ms), with 64 x 64 blocks the staged stores 6% faster (16384 tokens, n = 4096:
// 0.164 against 0.174 ms), so s = 32 keeps its stores in registers. FK_MONARCH90_TMA_OUT=0
// turns the staged stores off for every shape (the build all [monarch] cases also passed with).
#ifndef FK_MONARCH90_TMA_X
#define FK_MONARCH90_TMA_X 1
#endif
#ifndef FK_MONARCH90_TMA_OUT
#define FK_MONARCH90_TMA_OUT 1
#endif
#ifndef FK_MONARCH90_PREFER_Z2
#define FK_MONARCH90_PREFER_Z2 1
#endif

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
  const int64_t bars = 32 + 8 * 24;  // full[2], empty[2], then 3 x barriers per warp
  // The square shapes compiled with constant block sizes (see pick) keep w1 in registers; it is
  // staged once through the z buffers, which must hold it.
  const bool sq = p.p == p.q && p.q == p.r && p.r == p.s;
  const bool w1reg = sq && ((UPW == 4 && p.s == 64 && B1 == 8) || (UPW == 2 && p.s == 32 && B1 == 8));
  const int64_t base = (w1reg ? 0 : w1_bytes) + w2_bytes;
  // The copy-engine output path stages s x 32 tokens x 16 bytes (a run's token coordinate
  // must fit int32; the row stride must be a multiple of 16 bytes); not for s = 32 (above).
  const bool ostage = FK_MONARCH90_TMA_OUT && p.s != 32 &&
                      p.tokens < (int64_t(1) << 31) - 2 * kTile && p.out_row_stride % 8 == 0;
  const int64_t o_bytes = ostage ? p.s * kTile * 16 : 0;
  // (nx, nz, staged output) in order of preference; the first that fits is taken. Two x
  // buffers and the staged output beat three x buffers with register stores; a second z
  // buffer (stage 1 of the next tile overlaps stage 2 of this one) comes before a second x
  // buffer.
  const int pref[7][3] = {{2, 2, 1},
                          {w1reg ? 3 : 2, 2, 0},
                          {2, 2, 0},
                          {1, 2, 1},
                          {FK_MONARCH90_PREFER_Z2 ? 1 : 2, FK_MONARCH90_PREFER_Z2 ? 2 : 1, 0},
                          {2, 1, 1},
                          {FK_MONARCH90_PREFER_Z2 ? 2 : 1, FK_MONARCH90_PREFER_Z2 ? 1 : 2, 0}};
  int nx = 0, nz = 0;
  bool ost = false;
  for (const auto& pr : pref) {
    if (pr[2] && !ostage) continue;
    const int64_t bytes = base + pr[0] * x_bytes + pr[1] * z_bytes + (pr[2] ? o_bytes : 0) + bars;
    if (bytes <= caps.smem_per_block_optin && (!w1reg || w1_bytes <= pr[1] * z_bytes)) {
      nx = pr[0];
      nz = pr[1];
      ost = pr[2] != 0;
      break;
    }
  }
  if (nx == 0) return c;
  c.ok = true;
  c.C = static_cast<int>(C);
  c.B1 = static_cast<int>(B1);
  c.UPW = static_cast<int>(UPW);
  c.NT2 = static_cast<int>(p.s / 32);
  c.nx = nx;
  c.nz = nz;
  c.w1reg = w1reg;
  // Copy-engine x loads: the KB kernels (WPB = 1), rows of 32, 64 or 128 bytes (the swizzle
  // widths), token coordinates in int32.
  c.xtma = FK_MONARCH90_TMA_X && w1reg && (p.p == 16 || p.p == 32 || p.p == 64) &&
           p.tokens < (int64_t(1) << 31) - 2 * kTile;
  c.w2_off = w1reg ? 0 : w1_bytes;
  c.x_off = base;
  c.x_bytes = x_bytes;
  c.z_off = c.x_off + nx * x_bytes;
  c.w1_off = w1reg ? c.z_off : 0;
  c.z_bytes = z_bytes;
  c.o_bytes = ost ? o_bytes : 0;
  c.o_off = ost ? c.z_off + nz * z_bytes : 0;
  c.bar_off = c.z_off + nz * z_bytes + c.o_bytes;
  c.smem = c.bar_off + bars;
  c.tiles = (p.tokens + kTile - 1) / kTile;
  return c;
}

using KernelFn = void (*)(const Params);

// x as (column: nblocks1 * p, token: tokens) in elements, box (p, 32), swizzled in units of p*2
// bytes (32, 64 or 128), as the kernel's swz(row, unit, p / 8). False when the driver refuses it.
bool encode_x_map(const MonarchProblem& p, CUtensorMap* map) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr) return false;
  const int64_t cols = p.nblocks1 * p.p;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(p.tokens)};
  const cuuint64_t strides[1] = {cuuint64_t((p.tokens > 1 ? p.x_row_stride : cols) * 2)};
  const cuuint32_t box[2] = {cuuint32_t(p.p), cuuint32_t(kTile)};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUtensorMapSwizzle sw = p.p == 64   ? CU_TENSOR_MAP_SWIZZLE_128B
                                : p.p == 32 ? CU_TENSOR_MAP_SWIZZLE_64B
                                            : CU_TENSOR_MAP_SWIZZLE_32B;
  const CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, const_cast<void*>(p.x), dims,
                        strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

// The output as (j: nb2, m: s, token: tokens) in elements, box (8, 16, 2 * NT2): one run of a
// warp's staged outputs (see the kernel's store). False when the driver refuses it.
bool encode_out_map(const MonarchProblem& p, int NT2, CUtensorMap* map) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr) return false;
  const cuuint64_t dims[3] = {cuuint64_t(p.nblocks2), cuuint64_t(p.s), cuuint64_t(p.tokens)};
  const cuuint64_t strides[2] = {cuuint64_t(p.nblocks2 * 2),
                                 cuuint64_t((p.tokens > 1 ? p.out_row_stride : p.nblocks2 * p.s) * 2)};
  const cuuint32_t box[3] = {cuuint32_t(kJ), 16u, cuuint32_t(2 * NT2)};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, p.out, dims, strides, box,
                        elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                        CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

template <class T>
KernelFn pick(int UPW, int NT2, int KB, int KB1) {
  // The benchmark's square shapes with compile-time block sizes (n = 4096: 64 blocks of 64 in
  // clusters of 8; n = 1024: 32 blocks of 32 in clusters of 4).
  if (UPW == 4 && NT2 == 2 && KB == 64 && KB1 == 8) return monarch_cluster_kernel<T, 4, 2, 64, 8>;
  if (UPW == 2 && NT2 == 1 && KB == 32 && KB1 == 8) return monarch_cluster_kernel<T, 2, 1, 32, 8>;
#define FK_MONARCH_CASE(u, n) \
  if (UPW == u && NT2 == n) return monarch_cluster_kernel<T, u, n, 0, 0>;
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
  const int KB = c.w1reg ? static_cast<int>(p.p) : 0;
  const KernelFn kernel = p.dtype == DType::BF16 ? pick<__nv_bfloat16>(c.UPW, c.NT2, KB, c.B1)
                                                 : pick<__half>(c.UPW, c.NT2, KB, c.B1);
  if (kernel == nullptr)
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.monarch: no kernel for this configuration");
  FK_RETURN_IF_ERROR(raise_dynamic_smem_limit(reinterpret_cast<const void*>(kernel),
                                              size_t(c.smem), "cuda.sm90.monarch: cudaFuncSetAttribute"));
  int dev = 0;
  FK_CUDA_TRY(cudaGetDevice(&dev), "cuda.sm90.monarch: cudaGetDevice");
  int clusters = 0;
  FK_RETURN_IF_ERROR(max_clusters(kernel, dev, c.C, c.smem, &clusters));
  if (clusters <= 0) {
    // The cluster cannot be made resident here (e.g. a partitioned GPU): the sm80-class kernel.
    // Not the generic one: it takes scratch, and this row's workspace query (select_kernel and
    // fk_monarch_workspace_size answer for it) promised none; so the call is refused. Moving
    // the residency check into monarch_supported would let dispatch pick the generic row.
    if (sm80::monarch_supported(*ctx.caps, p)) return sm80::monarch(ctx, p);
    return set_error(FK_ERROR_KERNEL_LAUNCH,
                     "cuda.sm90.monarch: no cluster of this size fits the device");
  }
  Params k{};
  static_cast<monarch_io::MonarchIO&>(k) = monarch_io::from_problem(p);
  k.B1 = c.B1;
  k.tiles = static_cast<int32_t>(c.tiles);
  k.w1_off = static_cast<int32_t>(c.w1_off);
  k.w2_off = static_cast<int32_t>(c.w2_off);
  k.x_off = static_cast<int32_t>(c.x_off);
  k.x_bytes = static_cast<int32_t>(c.x_bytes);
  k.z_off = static_cast<int32_t>(c.z_off);
  k.z_bytes = static_cast<int32_t>(c.z_bytes);
  k.bar_off = static_cast<int32_t>(c.bar_off);
  k.nx = c.nx;
  k.nz = c.nz;
  k.o_off = 0;
  k.xtma = c.xtma && encode_x_map(p, &k.xmap) ? 1 : 0;
  if (c.o_off > 0 && encode_out_map(p, c.NT2, &k.omap)) k.o_off = static_cast<int32_t>(c.o_off);

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
