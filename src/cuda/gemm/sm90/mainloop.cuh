// Mainloop of the Hopper GEMM: the copy engine (TMA) fills a ring of shared-memory stages with
// 128 x 64 tiles of A and 256 x 64 tiles of B (the skinny kernel: 64 x 64 and 128 x 64, one
// consumer warpgroup, 8 stages; kernel.cuh); two consumer warpgroups multiply them with wgmma
// (64 x 256 x 16 per instruction, each warpgroup owning 64 rows of the 128-row tile: CUTLASS's
// "cooperative" split), fp32 accumulators in registers. With BlockM = 64 (the ping-pong
// schedule, kernel.cuh) a stage holds 64 rows of A and is read by one warpgroup. The ring is
// guarded by a pair of mbarriers per stage (cutlass::PipelineTmaAsync): "full" completes when
// the copy engine has written a stage's bytes, "empty" when all its consumer threads (256, or
// 128 under ping-pong) are done reading it.
//
// Layouts: each operand is either K-major (unit stride along K: A row-major, B stored N x K) or
// MN-major (unit stride along M or N); wgmma reads either from shared memory (the transpose
// bits of the instruction), so the four transpose combinations cost one template flag each
// and no data movement. Tails in M, N and K come from the copy engine's out-of-bounds fill
// (zeros), which contribute nothing to the sums; the epilogue masks the stores.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// The default of the mainloop's optional hooks (the tracing build's stamps: trace.h).
struct NoHook {
  __device__ __forceinline__ void operator()() const {}
  __device__ __forceinline__ void operator()(int) const {}
};

// MmaWarpgroups: the warpgroups that multiply one stage together (BlockM / 64, each 64 rows),
// or 1 for a 128-row stage that one warpgroup multiplies alone (the 128-column ping-pong
// schedule, kernel.cuh: two 64 x BlockN wgmma per k-step).
template <class ElementA_, class ElementB_, bool KMajorA, bool KMajorB, int Stages,
          int BlockM = kTileM, int BlockN = kTileN, int MmaWarpgroups = BlockM / 64>
struct Mainloop {
  // cute::half_t or cute::bfloat16_t (both operands), or cute::float_e4m3_t /
  // cute::float_e5m2_t (each operand its own, K-major only).
  using ElementA = ElementA_;
  using ElementB = ElementB_;
  static_assert(sizeof(ElementA) == sizeof(ElementB), "operands of one width");
  static constexpr bool kFp8 = sizeof(ElementA) == 1;
  static_assert(!kFp8 || (KMajorA && KMajorB), "wgmma reads 8-bit operands K-major only");
  static constexpr int kTileK = kTileKBytes / int(sizeof(ElementA));
  // Rows of A per stage: the CTA tile's 128 (cooperative schedule: both consumer warpgroups
  // multiply each stage, 64 rows each) or one warpgroup's 64 (ping-pong schedule, kernel.cuh:
  // each stage feeds one warpgroup's half of a tile; the other half reads B again, from L2).
  static constexpr int kBlockM = BlockM;
  static_assert(BlockM == kTileM || BlockM == kTileM / 2, "128 or 64 rows per stage");
  static constexpr int kMmaWarpgroups = MmaWarpgroups;
  static_assert(MmaWarpgroups == BlockM / 64 || MmaWarpgroups == 1, "64 rows a warpgroup, or one");
  // Columns of B per stage: the CTA tile's 256, or 128 for the skinny kernel (kernel.cuh,
  // SkinnyKernel: one consumer warpgroup on 64 x 128 tiles, a deeper ring).
  static constexpr int kBlockN = BlockN;
  static_assert(BlockN == kTileN || BlockN == kSkinnyN, "256 or 128 columns per stage");
  using TileShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::Int<kTileK>>;
  // Ring depth (heuristics.h, pick_stages): 3 stages (144 KB) beside 64 KB of epilogue staging
  // (a whole 16-bit tile, so that D's stores drain under the next tile's mainloop), or 4 stages
  // (192 KB) beside 32 KB of staging (half a tile: the epilogue waits for its own first stores
  // once per tile) for launches that stream operands with little reuse (split-K, skinny M).
  static constexpr int kStages = Stages;
  static_assert(Stages == 3 || Stages == 4 || Stages == kSkinnyStages || Stages == kPp128Stages,
                "ring of 3 or 4 stages (the skinny kernel's: kSkinnyStages; the 128-column "
                "ping-pong schedule's: kPp128Stages)");

  static constexpr cute::GMMA::Major kMajorA = KMajorA ? cute::GMMA::Major::K : cute::GMMA::Major::MN;
  static constexpr cute::GMMA::Major kMajorB = KMajorB ? cute::GMMA::Major::K : cute::GMMA::Major::MN;

  // 128-byte swizzled shared-memory tiles, the layout both the copy engine writes and wgmma
  // reads without bank conflicts. MN-major tiles are stacked K-atom first so that each 64-wide
  // panel along M/N is one contiguous copy-engine box.
  using AtomA = std::conditional_t<KMajorA, cute::GMMA::Layout_K_SW128_Atom<ElementA>,
                                   cute::GMMA::Layout_MN_SW128_Atom<ElementA>>;
  using AtomB = std::conditional_t<KMajorB, cute::GMMA::Layout_K_SW128_Atom<ElementB>,
                                   cute::GMMA::Layout_MN_SW128_Atom<ElementB>>;
  using OrderA = std::conditional_t<KMajorA, cute::Step<cute::_1, cute::_2, cute::_3>,
                                    cute::Step<cute::_2, cute::_1, cute::_3>>;
  using OrderB = std::conditional_t<KMajorB, cute::Step<cute::_1, cute::_2, cute::_3>,
                                    cute::Step<cute::_2, cute::_1, cute::_3>>;
  using SmemLayoutA = decltype(cute::tile_to_shape(
      AtomA{}, cute::make_shape(cute::Int<kBlockM>{}, cute::Int<kTileK>{}, cute::Int<kStages>{}),
      OrderA{}));
  using SmemLayoutB = decltype(cute::tile_to_shape(
      AtomB{}, cute::make_shape(cute::Int<kBlockN>{}, cute::Int<kTileK>{}, cute::Int<kStages>{}),
      OrderB{}));

  // Two warpgroups stacked along M (one for 64-row stages), each issuing 64 x 256 x 16 (x 32
  // for fp8) wgmma with both operands in shared memory.
  using TiledMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<ElementA, ElementB, float, TileShape, kMajorA, kMajorB>(),
      cute::Layout<cute::Shape<cute::Int<kMmaWarpgroups>, cute::_1, cute::_1>>{}));
  // The 128 x BlockN tile's two-warpgroup MMA, by which the epilogue and split-K address a
  // consumer thread's accumulators (thread 128 w + i of it holds rows 64 w + ... of the tile);
  // one warpgroup's fragment of the 64-row TiledMma is laid out as either half of this one.
  using TileMmaShape = cute::Shape<cute::Int<kTileM>, cute::Int<kBlockN>, cute::Int<kTileK>>;
  using TileMma = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<ElementA, ElementB, float, TileMmaShape, kMajorA, kMajorB>(),
      cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));

  // Global strides of A (M, K, L) and B (N, K, L); the unit stride is static so that CuTe
  // builds the copy-engine box along it.
  using StrideA = std::conditional_t<KMajorA, cute::Stride<int64_t, cute::_1, int64_t>,
                                     cute::Stride<cute::_1, int64_t, int64_t>>;
  using StrideB = std::conditional_t<KMajorB, cute::Stride<int64_t, cute::_1, int64_t>,
                                     cute::Stride<cute::_1, int64_t, int64_t>>;
  // The copy engine moves raw 16- or 8-bit words (no conversion on the way).
  using TmaElement = std::conditional_t<kFp8, uint8_t, uint16_t>;

  using Pipeline = cutlass::PipelineTmaAsync<kStages>;
  using PipelineState = typename Pipeline::PipelineState;

  static constexpr uint32_t kTmaTransactionBytes =
      uint32_t((kBlockM + kBlockN) * kTileK * sizeof(ElementA));

  template <class Stride>
  static auto gmem_tensor(const TmaElement* ptr, Stride stride) {
    return cute::make_tensor(ptr, cute::make_layout(cute::repeat_like(Stride{}, int32_t(0)), stride));
  }
  using TmaA = decltype(cute::make_tma_copy_A_sm90(
      cute::SM90_TMA_LOAD{}, gmem_tensor(static_cast<const TmaElement*>(nullptr), StrideA{}),
      SmemLayoutA{}(cute::_, cute::_, cute::Int<0>{}), TileShape{},
      cute::Shape<cute::_1, cute::_1, cute::_1>{}));
  using TmaB = decltype(cute::make_tma_copy_B_sm90(
      cute::SM90_TMA_LOAD{}, gmem_tensor(static_cast<const TmaElement*>(nullptr), StrideB{}),
      SmemLayoutB{}(cute::_, cute::_, cute::Int<0>{}), TileShape{},
      cute::Shape<cute::_1, cute::_1, cute::_1>{}));

  struct Params {
    TmaA tma_a;
    TmaB tma_b;
    int32_t M, N;
    int32_t K_tma;     // K extent of the copy-engine views (>= 1)
    int32_t batch_a, batch_b;  // 1 when broadcast
  };

  struct SharedStorage {
    cute::array_aligned<ElementA, cute::cosize_v<SmemLayoutA>, 1024> a;
    cute::array_aligned<ElementB, cute::cosize_v<SmemLayoutB>, 1024> b;
  };

  // Host: the copy-engine descriptors for one problem (OperandDesc already checked by the
  // predicate: aligned base, ld and batch stride).
  static Params make_params(const GemmArgs& g) {
    using namespace cute;
    Params p;
    p.M = int32_t(g.M);
    p.N = int32_t(g.N);
    p.K_tma = int32_t(g.K > 0 ? g.K : 1);
    p.batch_a = int32_t(g.a.batch);
    p.batch_b = int32_t(g.b.batch);
    auto stride_of = [](const OperandDesc& o) {
      if constexpr (std::is_same_v<StrideA, Stride<int64_t, _1, int64_t>>) {
        return StrideA{o.ld, _1{}, o.batch_stride};
      } else {
        return StrideA{_1{}, o.ld, o.batch_stride};
      }
    };
    auto stride_of_b = [](const OperandDesc& o) {
      if constexpr (std::is_same_v<StrideB, Stride<int64_t, _1, int64_t>>) {
        return StrideB{o.ld, _1{}, o.batch_stride};
      } else {
        return StrideB{_1{}, o.ld, o.batch_stride};
      }
    };
    Tensor ta = make_tensor(static_cast<const TmaElement*>(g.a.ptr),
                            make_layout(make_shape(p.M, p.K_tma, p.batch_a), stride_of(g.a)));
    Tensor tb = make_tensor(static_cast<const TmaElement*>(g.b.ptr),
                            make_layout(make_shape(p.N, p.K_tma, p.batch_b), stride_of_b(g.b)));
    p.tma_a = make_tma_copy_A_sm90(SM90_TMA_LOAD{}, ta, SmemLayoutA{}(_, _, Int<0>{}), TileShape{},
                                   Shape<_1, _1, _1>{});
    p.tma_b = make_tma_copy_B_sm90(SM90_TMA_LOAD{}, tb, SmemLayoutB{}(_, _, Int<0>{}), TileShape{},
                                   Shape<_1, _1, _1>{});
    return p;
  }

  __device__ __forceinline__ static void prefetch_descriptors(const Params& p) {
    cute::prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_b.get_tma_descriptor());
  }

  // Producer (one thread): enqueues k-tiles k_begin, k_begin + k_step, ... below k_end of output
  // tile (m, n), batch l; m counts blocks of kBlockM rows, n blocks of kBlockN columns. With
  // Rotate (the skinny kernel) and k_rot > 0 the walk starts at the k_rot-th of those k-tiles
  // and wraps around (the consumer sums the same stages in a different order;
  // TileCoord::k_rot); without, the walk is in order (the cooperative and ping-pong kernels:
  // their producer loop as before the skinny kernel, whose 168-register budget has no room to
  // spare).
  // `p` must be the kernel's __grid_constant__ parameter: the copy engine reads its descriptor
  // from there.
  // `first` runs once the first stage's loads are issued (the tracing build's stamp).
  template <bool Rotate = false, class First = NoHook>
  __device__ __forceinline__ static void load(const Params& p, Pipeline& pipeline, PipelineState& write,
                              SharedStorage& smem, int32_t m, int32_t n, int64_t l,
                              int32_t k_begin, int32_t k_end, int32_t k_step,
                              int32_t k_rot = 0, First first = First{}) {
    using namespace cute;
    Tensor sA = make_tensor(make_smem_ptr(smem.a.data()), SmemLayoutA{});  // (BM, BK, PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.data()), SmemLayoutB{});  // (BN, BK, PIPE)
    Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.M, p.K_tma, p.batch_a));  // (M, K, L)
    Tensor mB = p.tma_b.get_tma_tensor(make_shape(p.N, p.K_tma, p.batch_b));  // (N, K, L)
    Tensor gA = local_tile(mA, TileShape{}, make_coord(_, _, _), Step<_1, X, _1>{});  // (BM,BK,m,k,l)
    Tensor gB = local_tile(mB, TileShape{}, make_coord(_, _, _), Step<X, _1, _1>{});  // (BN,BK,n,k,l)
    const int32_t la = p.batch_a == 1 ? 0 : int32_t(l);
    const int32_t lb = p.batch_b == 1 ? 0 : int32_t(l);
    auto cta_a = p.tma_a.get_slice(Int<0>{});
    auto cta_b = p.tma_b.get_slice(Int<0>{});
    Tensor tAgA = cta_a.partition_S(gA(_, _, m, _, la));  // (TMA, TMA_M, TMA_K, k)
    Tensor tAsA = cta_a.partition_D(sA);                  // (TMA, TMA_M, TMA_K, PIPE)
    Tensor tBgB = cta_b.partition_S(gB(_, _, n, _, lb));
    Tensor tBsB = cta_b.partition_D(sB);
    auto issue = [&](int32_t k) {
      pipeline.producer_acquire(write);
      auto* full = pipeline.producer_get_barrier(write);
      const int stage = write.index();
      copy(p.tma_a.with(*full, 0), tAgA(_, _, _, k), tAsA(_, _, _, stage));
      copy(p.tma_b.with(*full, 0), tBgB(_, _, _, k), tBsB(_, _, _, stage));
      ++write;
    };
    if constexpr (Rotate) {
      const int32_t count = k_end > k_begin ? (k_end - k_begin + k_step - 1) / k_step : 0;
      const int32_t rot = (k_rot > 0 && k_rot < count) ? k_rot : 0;
      for (int32_t i = 0; i < count; ++i) {
        const int32_t q = i + rot;  // position i of the walk
        issue(k_begin + (q >= count ? q - count : q) * k_step);
      }
    } else {
      (void)k_rot;
      for (int32_t k = k_begin; k < k_end; k += k_step) {
        issue(k);
        if (k == k_begin) first();
      }
    }
  }

  // Consumer warpgroups: accum = sum over the next k_tiles (>= 1) stages. One wgmma batch
  // stays in flight: stage k is released once the batch of stage k + 1 is issued and the one of
  // stage k has retired.
  // `issued()` runs once every stage has been waited for and the last batch issued, before
  // its wait (the ping-pong schedule hands the tensor cores to the other warpgroup there).
  // `ready` runs once the first stage is full, `refill` once the stage of k-tile kStages is;
  // `tick(i)` in the k-loop around each full-stage wait (0 before, 1 after) and each wait for
  // the previous wgmma batch (2, 3) (the tracing build's stamps and counters).
  template <class Accum, class Issued, class Ready = NoHook, class Refill = NoHook,
            class Tick = NoHook>
  __device__ __forceinline__ static void mma(Pipeline& pipeline, PipelineState& read,
                                             SharedStorage& smem, Accum& accum, int32_t k_tiles,
                                             int mma_thread, Issued issued, Ready ready = Ready{},
                                             Refill refill = Refill{}, Tick tick = Tick{}) {
    using namespace cute;
    Tensor sA = make_tensor(make_smem_ptr(smem.a.data()), SmemLayoutA{});
    Tensor sB = make_tensor(make_smem_ptr(smem.b.data()), SmemLayoutB{});
    TiledMma tiled_mma;
    // All threads of a warpgroup share the shared-memory descriptors: slice by the warpgroup's
    // first thread (a warp-uniform value).
    const int wg = kMmaWarpgroups == 1 ? 0 : __shfl_sync(0xffffffffu, mma_thread / 128, 0);
    auto thr = tiled_mma.get_slice(wg * 128);
    Tensor tCsA = thr.partition_A(sA);  // (MMA, MMA_M, MMA_K, PIPE)
    Tensor tCsB = thr.partition_B(sB);  // (MMA, MMA_N, MMA_K, PIPE)
    Tensor tCrA = thr.make_fragment_A(tCsA);
    Tensor tCrB = thr.make_fragment_B(tCsB);

    PipelineState release = read;
    warpgroup_fence_operand(accum);
    {
      pipeline.consumer_wait(read);
      ready();
      const int stage = read.index();
      warpgroup_arrive();
      // The first k-block overwrites the accumulators (scale-d = 0): no separate clear.
      tiled_mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int kb = 0; kb < size<2>(tCrA); ++kb) {
        cute::gemm(tiled_mma, tCrA(_, _, kb, stage), tCrB(_, _, kb, stage), accum);
        tiled_mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      ++read;
    }
    warpgroup_fence_operand(accum);
    CUTE_NO_UNROLL
    for (int32_t k = 1; k < k_tiles; ++k) {
      tick(0);
      pipeline.consumer_wait(read);
      tick(1);
      if (k == kStages) refill();
      const int stage = read.index();
      warpgroup_fence_operand(accum);
      warpgroup_arrive();
      cute::gemm(tiled_mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), accum);
      warpgroup_commit_batch();
      tick(2);
      warpgroup_wait<1>();  // the batch of the previous stage has retired
      tick(3);
      warpgroup_fence_operand(accum);
      pipeline.consumer_release(release);
      ++release;
      ++read;
    }
    issued();
    warpgroup_wait<0>();
    warpgroup_fence_operand(accum);
    pipeline.consumer_release(release);
  }

  // A consumer warpgroup whose 64 rows of the tile all lie past M (skinny problems: M <= 64
  // leaves the second warpgroup nothing to compute) takes part in the ring's protocol without
  // issuing MMAs: it waits for each stage and releases it at once, so the tensor cores do the
  // useful half only. Its accumulators are never stored (the epilogue and split-K skip rows
  // past M).
  __device__ __forceinline__ static void skip(Pipeline& pipeline, PipelineState& read,
                                              int32_t k_tiles) {
    CUTE_NO_UNROLL
    for (int32_t k = 0; k < k_tiles; ++k) {
      pipeline.consumer_wait(read);
      pipeline.consumer_release(read);
      ++read;
    }
  }
};

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
