// The Hopper GEMM kernel: a persistent, warp-specialised composition of the mainloop
// (mainloop.cuh), the epilogue (epilogue.cuh) and the tile scheduler (tile_scheduler.cuh).
//
// 384 threads in three warpgroups. Warpgroup 0 is the producer: it gives most of its registers
// back (setmaxnreg 40) and one thread issues the copy-engine loads for every tile this CTA
// owns, running up to 3 or 4 stages ahead (the ring depth, a template parameter chosen by
// heuristics.h), across tile boundaries too. Warpgroups 1 and 2 are the consumers (setmaxnreg
// 232, for the 128 fp32 accumulators each thread holds), in one of three schedules (a template
// parameter, chosen per launch by heuristics.h, pick_pingpong; the third, the 128-column
// ping-pong, is described at pingpong128_consumer below):
//  - cooperative: they multiply each 128 x 256 tile together, 64 rows each, then each writes its
//    half of the tile through the epilogue while the producer already fills the ring with the
//    next tile's stages; the tensor cores idle during the epilogue. A consumer whose 64 rows all
//    lie past M (M <= 64, or the last tile row) only waits for and releases each stage
//    (Mainloop::skip). Under split-K a unit covers a slice of K and only the tile's last unit
//    runs the epilogue.
//  - ping-pong (pingpong_consumer below; issue 7): each consumer owns its own 64-row half of the
//    tile (warpgroup 1 the top halves, warpgroup 2 the bottom ones), the producer loads 64-row
//    stages of A (4 stages of 40 KB, beside 64 KB of store boxes) for the halves in turn, and
//    the two take turns at the tensor cores through a pair of named barriers: one's epilogue
//    runs under the other's MMAs. The cost: B is loaded once per half (the second time from L2),
//    1.67x the copy-engine traffic per FLOP, which caps the mainloop near 13 TB/s of L2-to-SM
//    traffic (~630-660 bf16 TFLOP/s). Never under split-K.
//
// Epilogue (issue 7): where D allows it (row-major, 16-byte aligned base, pitch and batch
// stride, rows a whole number of 16-byte units, no C term) the consumers stage D in shared
// memory, 64-row x 128-byte swizzled boxes, and hand each box to the copy engine
// (cp.async.bulk.tensor stores, one bulk group per box). Beside the 3-stage ring (and the
// ping-pong ring) a 16-bit tile has a box per 64-column chunk (64 KB for the CTA), so the
// consumers go back to the next tile's MMAs at once and the stores drain under them; a box is
// waited for only when the next tile reuses it. Beside the 4-stage cooperative ring there are 2
// boxes a warpgroup (32 KB), which 16-bit chunks alternate (fp32 chunks fill the pair). Other D
// (C term, column-major, unaligned) keeps the register-store path. The 4-stage ring goes to
// tiles of at most 32 k-tiles and to split-K.
// Measured on the H200 (benchmarks/RESULTS.md, "Ping-pong schedule (branch gemm8)", both
// schedules timed in one process, A B B A): ping-pong / cooperative 1.15-1.23 at bf16 8192 x
// 8192 x 1024 (0.76 -> 0.87-0.90x cuBLAS), 1.11-1.14 for bias + GELU at 4096^3 (1.05-1.10x
// cuBLAS + torch's epilogue), 1.09-1.13 for fp8 at K = 1024, 4096^3 and 4096 x 12288 x 4096;
// 0.89-0.96 on the long-K bf16 shapes (4096^3 and up, 64+ k-tiles), which keep the cooperative
// schedule (0.92-0.99x cuBLAS), as do the split-K (skinny M) shapes. FLASHKIT_SM90_GEMM_SCHEDULE=
// pingpong|cooperative overrides. Both schedules: 168 registers; ptxas reports no spills for
// the ping-pong kernels; for the cooperative ones (bf16, session 21) 8 bytes of spill stores
// with the 3-stage ring and 96 with the 4-stage one (32 before the next tile's indices were
// kept across the epilogue), none of them inside the k-loop.
//
// Skinny kernel (SkinnyKernel below, gemm_sm90_skinny_kernel; issue 7, the decode shapes): for
// M up to 128 with K-major A where the 128 x 256 grid would not fill the GPU (heuristics.h,
// pick_skinny), a second kernel of 256 threads: the producer warpgroup and one consumer
// warpgroup on 64 x 128 tiles, an 8-deep ring of 24 KB stages, one CTA per SM, split-K only
// while each slice keeps at least 64 k-tiles (pick_skinny_splits), the slices' k-tile walks
// rotated (pick_krot). It shares the mainloop (BlockM 64, BlockN 128), the split-K reduction and
// every epilogue path with the cooperative kernel: its 64-row tile is addressed as the top or
// bottom half of a 128-row tile. Two instantiations per 16-bit dtype (B K- or MN-major), one per
// fp8 format pair. Measured on the H200 (benchmarks/RESULTS.md, "Skinny kernel ... (branch gemm9)",
// run 2, (M, N, K) = (M, 8192, 8192), same process and inputs), this kernel / the cooperative
// one forced: bf16 M = 16 43.3 / 47.3 us (a @ b), 43.8 / 48.8 (a @ w.T); M = 128 40.6 / 56.5,
// 41.8 / 58.8; fp8 M = 16 29.1 / 38.5, M = 128 26.7 / 45.2. Against cuBLAS timed in batches of
// 10 back-to-back calls (host launch gaps out): bf16 0.81-0.83x at M = 16 (43 us against 35:
// ncu, DRAM at 67% of peak against cuBLAS's 82%), 0.93-0.94x at M = 128; fp8 1.11x and 1.27x.
// ptxas: 163 (bf16) / 166 (fp8) registers, no spills.
//
// Decode kernel (decode.cu, not this file): for M <= 32 token rows of 16-bit A against a weight
// of at least 8 Mi elements, gemm_sm90.cpp runs a third kernel before consulting the two above
// (decode_pick): each CTA streams BN (16-112) whole rows (or columns) of the weight through a
// cp.async ring with the tokens as mma.sync's N, no split-K. It took the skinny kernel's decode
// shapes: bf16 M = 16 x 8192 x 8192 36.1 us (a @ w.T) and 35.4 us (a @ b) against its 41.2,
// 0.96x cuBLAS in back-to-back calls (benchmarks/RESULTS.md, "Decode kernel").
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "cuda/gemm/sm90/epilogue.cuh"
#include "cuda/gemm/sm90/mainloop.cuh"
#include "cuda/gemm/sm90/tile_scheduler.cuh"
#include "cuda/gemm/sm90/trace.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// Schedule: GemmArgs::pingpong (heuristics.h pick_pingpong). kPingPong64 takes 4 stages,
// kPingPong128 kPp128Stages.
template <class ElementA, class ElementB, bool KMajorA, bool KMajorB, int Stages,
          int Schedule = kCooperative>
struct GemmKernel {
  static constexpr int kSchedule = Schedule;
  static constexpr bool kPingPong = Schedule != kCooperative;  // one warpgroup reads a stage
  static_assert(Schedule != kPingPong64 || Stages == 4,
                "the 64-row ping-pong schedule has one ring: 4 stages of 40 KB");
  static_assert(Schedule != kPingPong128 || Stages == kPp128Stages,
                "the 128-column ping-pong schedule has one ring: kPp128Stages stages of 32 KB");
  using Mainloop = sm90::Mainloop<ElementA, ElementB, KMajorA, KMajorB, Stages,
                                  Schedule == kPingPong64 ? kTileM / 2 : kTileM,
                                  Schedule == kPingPong128 ? kPp128N : kTileN,
                                  Schedule == kCooperative ? 2 : 1>;
  // The epilogue's copy-engine boxes take what the ring leaves: 4 per warpgroup (64 KB) beside
  // 3 stages of 48 KB or 4 of 40 KB (64-row ping-pong), 2 (32 KB) beside 4 stages of 48 KB or
  // 6 of 32 KB (128-column ping-pong).
  using EpiStorage =
      EpilogueStorage<((Stages == 3 || Schedule == kPingPong64) && Schedule != kPingPong128) ? 4 : 2>;
  static constexpr int kThreads = 384;
  static constexpr uint32_t kProducerRegisters = 40;
  static constexpr uint32_t kConsumerRegisters = 232;

  struct Params {
    typename Mainloop::Params mainloop;
    EpilogueParams epilogue;
    cute::TmaDescriptor d_map;  // D's tensor map (epilogue.tma_store only)
    TileSchedulerParams scheduler;
    SplitKParams splitk;
#if defined(FLASHKIT_GEMM_TRACE)
    uint64_t* trace;  // trace.h (nullptr: not tracing)
#endif
  };

  struct SharedStorage {
    typename Mainloop::SharedStorage mainloop;
    EpiStorage epilogue;
    typename Mainloop::Pipeline::SharedStorage pipeline;
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  // The epilogue's staging follows the mainloop's stages at a 1024-byte boundary (the copy
  // engine's 128-byte swizzle repeats every 1024 bytes of shared address).
  static_assert(sizeof(typename Mainloop::SharedStorage) % 1024 == 0, "epilogue staging alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 per-block limit");
};

// Named barriers of the ping-pong turn (ids 8 + w and 10 are the epilogue's and split-K's):
// consumer warpgroup w waits on kTurnBarrier + w for its turn at the tensor cores.
constexpr uint32_t kTurnBarrier = 3;

// Consumer warpgroup of the ping-pong schedule. Work unit i of the CTA is tile i's half h =
// warpgroup (rows 64 h .. 64 h + 63 of the tile): warpgroup 0 takes the top halves, warpgroup 1
// the bottom halves, and the producer fills the ring in that order (top, bottom, next tile's
// top, ...). The warpgroups take turns at the mainloop: each waits for its turn, waits for and
// multiplies its stages, hands the turn over as soon as its last wgmma batch is issued, and
// runs its epilogue (stores of D) while the other one's MMAs run. The turn also keeps the ring's
// parity waits sound: a warpgroup starts waiting on its stages only once the other has waited
// for all of its own, so no stage is more than one phase ahead of its waiter. Each warpgroup
// steps its ring position over the other's stages (PipelineState::advance). Split-K launches
// never take this schedule (the host picks the cooperative one: the partials' reduction is
// tile-wide).
template <class Kernel, class Pipeline, class Storage>
__device__ __forceinline__ void pingpong_consumer(const typename Kernel::Params& params,
                                                  Pipeline& pipeline, Storage& smem,
                                                  const TileScheduler& scheduler) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace cute;
  using Mainloop = typename Kernel::Mainloop;
  const int wg = int(threadIdx.x) / 128 - 1;          // 0: top halves, 1: bottom halves
  const int mma_thread = int(threadIdx.x) - 128;      // the epilogue's thread numbering
  typename Mainloop::TiledMma tiled_mma;
  Tensor accum = partition_fragment_C(tiled_mma, Shape<Int<kEpiRows>, Int<kTileN>>{});
  typename Mainloop::PipelineState read;  // stage 0, phase 0
  const bool tma_store = params.epilogue.tma_store != 0;
  TmaStoreState tma_state;
  const int64_t M = params.epilogue.M;
  bool first = true;
  for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
    const TileCoord tc = scheduler.coord(t);
    const int32_t k_count = tc.k_count();
    const int64_t row0 = int64_t(tc.m) * kTileM;
    // Warpgroup 1 steps over this tile's top half, which precedes its own in the ring.
    if (wg == 1 && k_count > 0 && row0 < M) read.advance(uint32_t(k_count));
    const bool live = row0 + wg * kEpiRows < M;
    // The other warpgroup's next unit: this tile's bottom half (always there, live or not), or
    // the next tile's top half (if this CTA has another tile). Without one, nobody waits for the
    // hand-over, so none is made (every bar.arrive below meets a bar.sync).
    const bool other_next = wg == 0 || scheduler.valid(scheduler.next(t));
    auto hand_over = [&] {
      if (other_next) cutlass::arch::NamedBarrier::arrive(256, kTurnBarrier + (1 - wg));
    };
    if (wg == 1 || !first) cutlass::arch::NamedBarrier::sync(256, kTurnBarrier + wg);
    first = false;
    if (k_count > 0 && live) {
      Mainloop::mma(pipeline, read, smem.mainloop, accum, k_count, mma_thread % 128, hand_over);
    } else {
      clear(accum);  // K = 0 (D = act(beta C + bias)), or rows past M (nothing stored)
      hand_over();
    }
    // Warpgroup 0 steps over this tile's bottom half, which follows its own.
    if (wg == 0 && k_count > 0 && row0 + kEpiRows < M) read.advance(uint32_t(k_count));
    if (tma_store) {
      epilogue_store_tma<typename Mainloop::TileMma, Mainloop::kFp8>(
          params.epilogue, &params.d_map, accum, smem.epilogue, mma_thread, tc.m, tc.n, tc.l,
          tma_state);
    } else if (live) {
      epilogue_store<typename Mainloop::TileMma, Mainloop::kFp8>(
          params.epilogue, accum, smem.epilogue, mma_thread, tc.m, tc.n, tc.l);
    }
  }
  // Shared memory must outlive the copy engine's reads of the last boxes.
  if (tma_store && mma_thread % 128 == 0) cute::tma_store_wait<0>();
#endif
}

// Consumer warpgroup of the 128-column ping-pong schedule (GemmArgs::pingpong ==
// kPingPong128; CUTLASS's "ping-pong" kernel): the scheduler's units are 128 x 128 tiles, and the
// CTA's units go to its two consumer warpgroups in turn (unit i of the CTA to warpgroup i % 2),
// each multiplying its whole tile alone (two 64 x 128 wgmma per k-step, 128 accumulators a
// thread) from stages that hold 128 rows of A and 128 of B; the producer loads the units in the
// CTA's order. The turn passes as in pingpong_consumer (named barriers kTurnBarrier + w, handed
// over once the last wgmma batch is issued, so the next unit's MMAs run under this epilogue),
// and each warpgroup steps its ring position over the other's units. Unlike the 64-row
// schedule, B is loaded once per tile: 32 KB per 128 x 128 x 64 step, 1.33x the cooperative
// schedule's copy-engine bytes per FLOP (the 64-row one: 1.67x). The epilogue stores the tile as
// its two 64-row halves, from this warpgroup's own staging (`own`).
template <class Kernel, class Pipeline, class Storage>
__device__ __forceinline__ void pingpong128_consumer(const typename Kernel::Params& params,
                                                     Pipeline& pipeline, Storage& smem,
                                                     const TileScheduler& scheduler) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace cute;
  using Mainloop = typename Kernel::Mainloop;
  const int wg = int(threadIdx.x) / 128 - 1;  // 0: the CTA's even units, 1: the odd ones
  const int t = int(threadIdx.x) % 128;
  typename Mainloop::TiledMma tiled_mma;
  Tensor accum = partition_fragment_C(tiled_mma, Shape<Int<kTileM>, Int<kPp128N>>{});
  static_assert(decltype(size<1>(accum))::value == 2, "two 64-row halves per thread");
  typename Mainloop::PipelineState read;  // stage 0, phase 0
  const bool tma_store = params.epilogue.tma_store != 0;
  TmaStoreState tma_state;
  int i = 0;
  for (int64_t u = scheduler.first(); scheduler.valid(u); u = scheduler.next(u), ++i) {
    const TileCoord tc = scheduler.coord(u);
    const int32_t k_count = tc.k_count();
    if ((i & 1) != wg) {  // the other warpgroup's unit: step over its stages
      if (k_count > 0) read.advance(uint32_t(k_count));
      continue;
    }
    // The next unit (the other warpgroup's) waits for this hand-over; without one, none is made.
    const bool other_next = scheduler.valid(scheduler.next(u));
    auto hand_over = [&] {
      if (other_next) cutlass::arch::NamedBarrier::arrive(256, kTurnBarrier + (1 - wg));
    };
    if (i > 0) cutlass::arch::NamedBarrier::sync(256, kTurnBarrier + wg);
    if (k_count > 0) {
      Mainloop::mma(pipeline, read, smem.mainloop, accum, k_count, t, hand_over);
    } else {
      clear(accum);  // K = 0: D = act(beta C + bias)
      hand_over();
    }
    CUTE_UNROLL
    for (int h = 0; h < 2; ++h) {
      // Half h of the tile: the 64 x 128 fragment of thread 128 h + t of the TileMma.
      Tensor half = accum(_, h, _);
      if (tma_store) {
        epilogue_store_tma<typename Mainloop::TileMma, Mainloop::kFp8, kPp128N>(
            params.epilogue, &params.d_map, half, smem.epilogue, 128 * h + t, tc.m, tc.n, tc.l,
            tma_state, wg);
      } else {
        epilogue_store<typename Mainloop::TileMma, Mainloop::kFp8, kPp128N>(
            params.epilogue, half, smem.epilogue, 128 * h + t, tc.m, tc.n, tc.l, wg);
      }
    }
  }
  // Shared memory must outlive the copy engine's reads of the last boxes.
  if (tma_store && t == 0) cute::tma_store_wait<0>();
#endif
}

// The start both kernels share: thread 0 prefetches the copy-engine descriptors, and the ring's
// barriers are initialised with warpgroup 0 as producer and kConsumers threads reading every
// stage (visible to all threads after the caller's __syncthreads()).
template <class Kernel, int kConsumers>
__device__ __forceinline__ typename Kernel::Mainloop::Pipeline kernel_start(
    const typename Kernel::Params& params, typename Kernel::SharedStorage& smem, int warpgroup) {
  using Mainloop = typename Kernel::Mainloop;
  using Pipeline = typename Mainloop::Pipeline;
  if (threadIdx.x == 0) {
    Mainloop::prefetch_descriptors(params.mainloop);
    if (params.epilogue.tma_store) cute::prefetch_tma_descriptor(&params.d_map);
  }
  typename Pipeline::Params pp;
  pp.transaction_bytes = Mainloop::kTmaTransactionBytes;
  pp.role = warpgroup == 0 ? Pipeline::ThreadCategory::Producer : Pipeline::ThreadCategory::Consumer;
  pp.is_leader = threadIdx.x == 0;
  pp.num_consumers = kConsumers;
  return Pipeline(smem.pipeline, pp, cute::Shape<cute::_1, cute::_1, cute::_1>{});
}

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1)
    gemm_sm90_kernel(__grid_constant__ const typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace cute;
  using Mainloop = typename Kernel::Mainloop;
  using Pipeline = typename Mainloop::Pipeline;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Kernel::SharedStorage*>(smem_raw);

  const int warp = cutlass::canonical_warp_idx_sync();
  const int warpgroup = warp / 4;
  // Ping-pong: every stage is read by one warpgroup only.
  Pipeline pipeline = kernel_start<Kernel, Kernel::kPingPong ? 128 : 256>(params, smem, warpgroup);
  __syncthreads();  // barrier initialisation visible to every thread

  TileScheduler scheduler(params.scheduler);
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<Kernel::kProducerRegisters>();
    if (threadIdx.x == 0) {
      auto write = cutlass::make_producer_start_state<Pipeline>();
#if defined(FLASHKIT_GEMM_TRACE)
      int next_slot = 0;
      uint64_t* const trace = Kernel::kSchedule == kCooperative ? params.trace : nullptr;
#endif
      for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
#if defined(FLASHKIT_GEMM_TRACE)
        const int slot = next_slot++;
        trace_stamp(trace, 0, slot, 5);
        trace_stamp(trace, 0, slot, 0);
#endif
        const TileCoord tc = scheduler.coord(t);
        if constexpr (Kernel::kSchedule == kPingPong64) {
          // The tile's two 64-row halves one after the other (the consumers' order); a half
          // whose rows all lie past M gets no stages.
          CUTE_UNROLL
          for (int h = 0; h < 2; ++h) {
            if (int64_t(tc.m) * kTileM + h * kEpiRows < params.epilogue.M) {
              Mainloop::load(params.mainloop, pipeline, write, smem.mainloop, 2 * tc.m + h, tc.n,
                             tc.l, tc.k_begin, tc.k_end, tc.k_step);
            }
          }
        } else {
#if defined(FLASHKIT_GEMM_TRACE)
          Mainloop::load(params.mainloop, pipeline, write, smem.mainloop, tc.m, tc.n, tc.l,
                         tc.k_begin, tc.k_end, tc.k_step, 0,
                         [&] { trace_stamp(trace, 0, slot, 1); });
          trace_stamp(trace, 0, slot, 2);
          trace_stamp(trace, 0, slot, 6);
          trace_value(trace, 0, slot, 7, uint64_t(tc.k_count()));
#else
          Mainloop::load(params.mainloop, pipeline, write, smem.mainloop, tc.m, tc.n, tc.l,
                         tc.k_begin, tc.k_end, tc.k_step);
#endif
        }
      }
      // Keep the CTA alive until the consumers have drained every stage in flight.
      pipeline.producer_tail(write);
    }
  } else if constexpr (Kernel::kSchedule == kPingPong64) {
    cutlass::arch::warpgroup_reg_alloc<Kernel::kConsumerRegisters>();
    pingpong_consumer<Kernel>(params, pipeline, smem, scheduler);
  } else if constexpr (Kernel::kSchedule == kPingPong128) {
    cutlass::arch::warpgroup_reg_alloc<Kernel::kConsumerRegisters>();
    pingpong128_consumer<Kernel>(params, pipeline, smem, scheduler);
  } else {
    cutlass::arch::warpgroup_reg_alloc<Kernel::kConsumerRegisters>();
    const int mma_thread = int(threadIdx.x) - 128;
    typename Mainloop::TiledMma tiled_mma;
    Tensor accum = partition_fragment_C(tiled_mma, Shape<Int<kTileM>, Int<kTileN>>{});
    typename Mainloop::PipelineState read;  // stage 0, phase 0
    const bool tma_store = params.epilogue.tma_store != 0;
    TmaStoreState tma_state;  // copy-engine path: box reuse across tiles
#if defined(FLASHKIT_GEMM_TRACE)
    uint64_t* const trace = mma_thread % 128 == 0 ? params.trace : nullptr;
    const int role = 1 + mma_thread / 128;
    int next_slot = 0;
#endif
    // Unsplit launches: the next tile's indices are worked out while the tensor cores run this
    // tile's last wgmma batch (Mainloop::mma's `issued` hook), not at the top of the next tile,
    // where TileScheduler::coord's divisions kept the tensor cores idle for ~1400 cycles a tile
    // (the tracing build on the H200, benchmarks/RESULTS.md, session 21). Only m, n and l stay
    // live across the epilogue (the whole TileCoord there cost ptxas spills).
    const bool unsplit = params.scheduler.splits == 1;
    int32_t next_m = 0, next_n = 0;
    int64_t next_l = 0;
    auto take_indices = [&](int64_t u) {
      if (unsplit && scheduler.valid(u)) {
        const TileCoord c = scheduler.coord(u);
        next_m = c.m;
        next_n = c.n;
        next_l = c.l;
      }
    };
    take_indices(scheduler.first());
    for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
#if defined(FLASHKIT_GEMM_TRACE)
      const int slot = next_slot++;  // (before any `continue`: split-K units keep their slots)
      trace_stamp(trace, role, slot, 5);
      trace_stamp(trace, role, slot, 0);
#endif
      const TileCoord tc = unsplit ? scheduler.unsplit(t, next_m, next_n, next_l) : scheduler.coord(t);
      auto prefetch_coord = [&] { take_indices(scheduler.next(t)); };
      // This warpgroup's 64 rows of the tile all past M (uniform over the warpgroup): keep the
      // ring moving, skip the MMAs (Mainloop::skip).
      const bool idle_rows = params.scheduler.skip_idle_rows != 0 &&
                             int64_t(tc.m) * kTileM + (mma_thread / 128) * kEpiRows >= params.epilogue.M;
      const int32_t k_count = tc.k_count();
      if (k_count > 0 && idle_rows) {
        Mainloop::skip(pipeline, read, k_count);
        prefetch_coord();
      } else if (k_count > 0) {
#if defined(FLASHKIT_GEMM_TRACE)
        uint64_t mark = 0, full_cycles = 0, mma_cycles = 0, busy = 0;
        Mainloop::mma(pipeline, read, smem.mainloop, accum, k_count, mma_thread, prefetch_coord,
                      [&] { trace_stamp(trace, role, slot, 1); },
                      [&] { trace_stamp(trace, role, slot, 4); },
                      [&](int i) {
                        const uint64_t c = uint64_t(clock64());
                        if (i == 0 || i == 2) {
                          mark = c;
                        } else if (i == 1) {
                          full_cycles += c - mark;
                        } else {
                          mma_cycles += c - mark;
                          busy += (c - mark) > 64 ? 1 : 0;
                        }
                      });
        trace_stamp(trace, role, slot, 2);
        trace_value(trace, role, slot, 7, uint64_t(k_count));
        trace_value(trace, role, slot, 8, full_cycles);
        trace_value(trace, role, slot, 9, mma_cycles);
        trace_value(trace, role, slot, 10, busy);
#else
        Mainloop::mma(pipeline, read, smem.mainloop, accum, k_count, mma_thread, prefetch_coord);
#endif
      } else {
        clear(accum);  // K = 0: D = act(beta C + bias)
        prefetch_coord();
      }
      if (params.scheduler.splits > 1 &&
          !splitk_reduce<typename Mainloop::TileMma>(
              params.splitk, params.scheduler.splits, accum, smem.epilogue, mma_thread, tc.tile,
              tc.split, params.epilogue.M - tc.m * kTileM)) {
        continue;  // another unit of this tile finishes it
      }
      if (tma_store) {
        epilogue_store_tma<typename Mainloop::TileMma, Mainloop::kFp8>(
            params.epilogue, &params.d_map, accum, smem.epilogue, mma_thread, tc.m, tc.n, tc.l,
            tma_state);
      } else {
        epilogue_store<typename Mainloop::TileMma, Mainloop::kFp8>(
            params.epilogue, accum, smem.epilogue, mma_thread, tc.m, tc.n, tc.l);
      }
#if defined(FLASHKIT_GEMM_TRACE)
      trace_stamp(trace, role, slot, 3);
      trace_stamp(trace, role, slot, 6);
#endif
    }
    // Shared memory must outlive the copy engine's reads of the last boxes.
    if (tma_store && mma_thread % 128 == 0) cute::tma_store_wait<0>();
  }
#endif
}

// The skinny kernel (issue 7, decode shapes; heuristics.h, pick_skinny): 256 threads, a
// producer warpgroup and one consumer warpgroup, 64 x 128 tiles (kSkinnyM x kSkinnyN) and an
// 8-deep ring of 24 KB stages (16-bit; fp8 the same bytes), one CTA per SM. Meant for M up to a
// few 64-row tiles against large N and K, where the problem is B's bytes: more, narrower tiles
// (N / 128 of them per 64 rows) and a deeper ring keep more of B in flight per SM than the
// 128 x 256 tile whose rows are mostly past M. The scheduler's units are 64 x 128 tiles (or K
// slices of them: split-K as in the cooperative kernel, the partials 64 x 128 per unit). The
// epilogue and split-K address the consumer's fragment as the top or bottom half of a 128-row
// tile (the ping-pong schedule's convention): 64-row tile m is half m % 2 of 128-row tile m / 2,
// so every epilogue path (copy-engine stores, register stores with C, column-major D, fp8
// scales) is shared with the other schedules.
template <class ElementA, class ElementB, bool KMajorA, bool KMajorB>
struct SkinnyKernel {
  static constexpr bool kPingPong = false;
  static constexpr int kSchedule = -1;  // none of GemmArgs::pingpong's (untraced: trace.h)
  using Mainloop = sm90::Mainloop<ElementA, ElementB, KMajorA, KMajorB, kSkinnyStages, kSkinnyM,
                                  kSkinnyN>;
  // One warpgroup's staging: 2 copy-engine boxes (16-bit chunks alternate them) or the
  // register path's 64 x 64 fp32 chunk.
  using EpiStorage = EpilogueStorage<2, 1>;
  static constexpr int kThreads = 256;

  struct Params {
    typename Mainloop::Params mainloop;
    EpilogueParams epilogue;
    cute::TmaDescriptor d_map;  // D's tensor map (epilogue.tma_store only)
    TileSchedulerParams scheduler;
    SplitKParams splitk;
#if defined(FLASHKIT_GEMM_TRACE)
    uint64_t* trace;  // trace.h (nullptr: not tracing)
#endif
  };

  struct SharedStorage {
    typename Mainloop::SharedStorage mainloop;
    EpiStorage epilogue;
    typename Mainloop::Pipeline::SharedStorage pipeline;
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  static_assert(sizeof(typename Mainloop::SharedStorage) % 1024 == 0, "epilogue staging alignment");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 per-block limit");
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1)
    gemm_sm90_skinny_kernel(__grid_constant__ const typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace cute;
  using Mainloop = typename Kernel::Mainloop;
  using Pipeline = typename Mainloop::Pipeline;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Kernel::SharedStorage*>(smem_raw);

  const int warp = cutlass::canonical_warp_idx_sync();
  const int warpgroup = warp / 4;
  Pipeline pipeline = kernel_start<Kernel, 128>(params, smem, warpgroup);  // one consumer group
  __syncthreads();  // barrier initialisation visible to every thread

  TileScheduler scheduler(params.scheduler);
  if (warpgroup == 0) {
    if (threadIdx.x == 0) {
      auto write = cutlass::make_producer_start_state<Pipeline>();
      for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
        const TileCoord tc = scheduler.coord(t);
        Mainloop::template load<true>(params.mainloop, pipeline, write, smem.mainloop, tc.m, tc.n,
                                      tc.l, tc.k_begin, tc.k_end, tc.k_step, tc.k_rot);
      }
      // Keep the CTA alive until the consumer has drained every stage in flight.
      pipeline.producer_tail(write);
    }
  } else {
    const int t = int(threadIdx.x) - 128;  // 0..127
    typename Mainloop::TiledMma tiled_mma;
    Tensor accum = partition_fragment_C(tiled_mma, Shape<Int<kSkinnyM>, Int<kSkinnyN>>{});
    typename Mainloop::PipelineState read;  // stage 0, phase 0
    const bool tma_store = params.epilogue.tma_store != 0;
    TmaStoreState tma_state;
    for (int64_t u = scheduler.first(); scheduler.valid(u); u = scheduler.next(u)) {
      const TileCoord tc = scheduler.coord(u);
      const int32_t k_count = tc.k_count();
      if (k_count > 0) {
        Mainloop::mma(pipeline, read, smem.mainloop, accum, k_count, t, [] {});
      } else {
        clear(accum);  // K = 0: D = act(beta C + bias)
      }
      // This 64-row tile as half (tc.m % 2) of 128-row tile tc.m / 2.
      const int32_t m128 = tc.m >> 1;
      const int half_thread = t + 128 * (tc.m & 1);
      if (params.scheduler.splits > 1 &&
          !splitk_reduce<typename Mainloop::TileMma, 128, kSkinnyN>(
              params.splitk, params.scheduler.splits, accum, smem.epilogue, half_thread, tc.tile,
              tc.split, int32_t(params.epilogue.M - int64_t(m128) * kTileM))) {
        continue;  // another unit of this tile finishes it
      }
      if (tma_store) {
        epilogue_store_tma<typename Mainloop::TileMma, Mainloop::kFp8, kSkinnyN>(
            params.epilogue, &params.d_map, accum, smem.epilogue, half_thread, m128, tc.n, tc.l,
            tma_state);
      } else {
        epilogue_store<typename Mainloop::TileMma, Mainloop::kFp8, kSkinnyN>(
            params.epilogue, accum, smem.epilogue, half_thread, m128, tc.n, tc.l);
      }
    }
    // Shared memory must outlive the copy engine's reads of the last boxes.
    if (tma_store && t == 0) cute::tma_store_wait<0>();
  }
#endif
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
