// The Hopper attention forward kernel (FlashAttention-3 class, Shah et al. 2024): a persistent,
// warp-specialised composition of the mainloop (mainloop.cuh), the online softmax
// (softmax.cuh), the epilogue (epilogue.cuh) and the tile scheduler (tile_scheduler.cuh).
//
// 384 threads in three warpgroups (512 in four for the 192-row tiles, below). Warpgroup 0 is the
// producer: it gives registers back (setmaxnreg 40) and one thread issues the copy-engine loads
// of every tile the CTA owns: Q once per tile (its own full/empty mbarrier pair; the next tile's
// Q is loaded as soon as every consumer warpgroup is done with the current one), then K and V
// tiles through their rings, running ahead across tile boundaries (the fp8 kernel with V
// transposed in shared memory: V into a raw ring, which the warpgroup's other three warps
// transpose into the V ring; mainloop.cuh, kVtInSmem). Warpgroups 1 and 2 are the consumers
// (setmaxnreg 232):
// each owns 64 query rows and, per key tile, issues S = Q K^T, masks, updates the online
// softmax, and issues O += P V with P in registers; then it writes its rows of O and LSE.
// The S GEMM of key tile n - 1 is issued together with the P V GEMM of tile n, so the
// softmax of one tile runs while the tensor cores work on the other (FA3 Section 3.2).
// Register split: 40 for the producer (24 made ptxas spill the copy-engine coordinates) and
// 232 for each consumer thread: 40 * 128 + 232 * 256 = 168 * 384, exactly the CTA's allocation
// at launch. setmaxnreg.inc only takes registers this CTA's own warps gave back, so a producer
// count of 48 (which would still fit the SM's 64K) hangs the consumers at their setmaxnreg.
// The head_dim 64 kernel of 192-row tiles (kBlockM3) runs 512 threads: three consumer
// warpgroups of 64 rows each (setmaxnreg 160, the producer 32), taking GEMM turns round robin;
// each key tile read from shared memory then serves 192 query rows instead of 128.
//
// Status on the H200 (benchmarks/RESULTS.md, "The standard grid on main 10e8d3b", session 23):
// 0.785-1.16x cuDNN 9.19 over the standard grid (median 0.98; head_dim 64 unmasked 1.10-1.16x
// from 2k keys), worst at short causal calls (head_dim 64 on 128-row tiles, head_dim 256, which
// since takes 64-key tiles over short keys: "head_dim 256 on 64-key tiles for short keys"; and
// unmasked head_dim 128 up to 1024 keys takes 128-key tiles through three K/V stages, session
// 34: +5.4% at 512 keys; partial key tiles of calls without a left window masked by the upper
// bound alone at head dims up to 128, session 35: short causal +1.6-3.6%). Against cuDNN's
// kernel in Nsight Compute (RESULTS, "The Hopper attention kernel against cuDNN's in Nsight
// Compute"): the same DRAM bytes, and the gap is a
// cost per work tile, ~1,650 warp instructions per warp outside the key loop's repeats against
// cuDNN's ~300 (its 128-key tiles never mask a 512- or 4096-key call; ours leave a partial one).
// Tried and removed (RESULTS, "Branch attn6" and "attn7"): an L2 prefetch of
// the next work tile, a quarter of head_dim 64's exp2 on the FMA pipe, a second Q buffer, the
// epilogue chained after the next tile's first S GEMM. Kept: causal head sections
// (tile_scheduler.cuh), 16-byte output stores (epilogue.cuh), and the optional copy-engine
// output stores below (off by default: no faster). Register allocation matters as much as any
// of these: the same head_dim 128 kernel measured 1.02-1.20x slower when ptxas put spill reloads
// inside the key-tile loop; tests/sass/check_sass.py keeps them out of it at head_dim <= 128.
#pragma once

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cutlass/cutlass.h>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "core/problems.h"
#include "cuda/attention/sm90/epilogue.cuh"
#include "cuda/attention/sm90/mainloop.cuh"
#include "cuda/attention/sm90/softmax.cuh"
#include "cuda/attention/sm90/tile_scheduler.cuh"
#include "cuda/attention/sm90/trace.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

template <class Element, int kHeadDim, int kBlockN, bool kCache, int kBlockM_ = kBlockM,
          int kStages_ = stages_for(kHeadDim), bool kVtInKernel_ = true>
struct AttentionKernel {
  using Mainloop =
      sm90_attention::Mainloop<Element, kHeadDim, kBlockN, kCache, kBlockM_, kStages_, kVtInKernel_>;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kConsumers = Mainloop::kConsumers;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  // Two consumers: 40 * 128 + 232 * 256 = 168 * 384 registers. Three (head_dim 64, as
  // FlashAttention-3 splits them): 32 * 128 + 160 * 384 = 128 * 512, the whole register file.
  static constexpr uint32_t kProducerRegisters = kConsumers == 2 ? 40 : 32;
  static constexpr uint32_t kConsumerRegisters = kConsumers == 2 ? 232 : 160;
  static_assert(kConsumers == 2 || (!kCache && kHeadDim <= 64 && kBlockN <= 128),
                "three consumer warpgroups: the plain head_dim 64 kernel over 128-key tiles only");

  // Copy-engine output stores (AttnArgs::o_tma): each consumer warpgroup writes its 64 rows of
  // O, rounded, into a staging tile and one thread stores it with the copy engine, which the
  // warpgroup does not wait for. The staging tiles lie in a V-ring stage that both warpgroups
  // are done with (the one before the last; its release is waited for on the ring's empty
  // barrier), which the producer refills only after `o_free` (both warpgroups' stores have read
  // their staging) for a V of the next work tile (its first with two stages, its second with
  // three). The 128 rows fit in one stage where the
  // key tile is at least 128 rows (head_dim <= 128). Batched problems only (varlen rows past a
  // sequence belong to the next one); the KV-cache instantiation keeps the register stores.
  static constexpr bool kFp8 = Mainloop::kFp8;
  // The output's type: the input's, or bf16 for the fp8 kernel.
  using OutElement = std::conditional_t<kFp8, cute::bfloat16_t, Element>;
  static constexpr bool kTmaStore = !kCache && !kFp8 && kHeadDim <= 128 && kConsumers == 2;
  static_assert(!kTmaStore || (kBlockN >= kBlockM && Mainloop::kStages >= 2),
                "the output staging must fit in a V stage that is not the last one read");
  using SmemLayoutOHalf = decltype(cute::tile_to_shape(
      typename Mainloop::AtomK{}, cute::Shape<cute::_64, cute::Int<kHeadDim>>{}));
  static auto gmem_o(Element* ptr, typename Mainloop::ShapeG shape,
                     typename Mainloop::StrideRowMajor stride) {
    return cute::make_tensor(cute::make_gmem_ptr(ptr), cute::make_layout(shape, stride));
  }
  using TmaO = decltype(cute::make_tma_copy(cute::SM90_TMA_STORE{},
                                            gmem_o(nullptr, typename Mainloop::ShapeG{},
                                                   typename Mainloop::StrideRowMajor{}),
                                            SmemLayoutOHalf{}));
  template <bool kWith, class Dummy = void>
  struct OStore {};
  template <class Dummy>
  struct OStore<true, Dummy> {
    TmaO tma_o;
    typename Mainloop::ShapeG shape_o;
  };

  // The fp8 kernel's descale factors (fk_attention_fp8_forward): fp32, (batch, nheads_k),
  // nullptr for 1; S is scaled by descale_q x descale_k with the softmax scale, O by descale_v.
  template <bool kWith, class Dummy = void>
  struct Fp8Scales {};
  template <class Dummy>
  struct Fp8Scales<true, Dummy> {
    AttentionFp8Descales d;  // q, k, v
    __device__ __forceinline__ float at(int t, int32_t b, int32_t hk) const {
      return d.ptr[t] ? d.ptr[t][int64_t(b) * d.batch_stride[t] + int64_t(hk) * d.head_stride[t]] : 1.0f;
    }
  };

  struct Params {
    typename Mainloop::Params mainloop;
    AttnArgs args;
    OStore<kTmaStore> o_store;  // last: the parameter block otherwise keeps its layout
    Fp8Scales<kFp8> fp8;
#if defined(FLASHKIT_ATTENTION_TRACE)
    uint64_t* trace;  // trace.h (diagnostic builds)
#endif
  };

  struct SharedStorage {
    typename Mainloop::SharedStorage mainloop;
    typename Mainloop::Pipeline::SharedStorage pipe_k;
    typename Mainloop::Pipeline::SharedStorage pipe_v;
    alignas(8) uint64_t q_full;
    alignas(8) uint64_t q_empty;
    alignas(8) uint64_t o_free;  // copy-engine output stores: both staging tiles read out
    // Varlen causal pairs (tile_scheduler.cuh, seq_prefix): the pairs before each sequence,
    // then the positions walked.
    int32_t seq_prefix[kSeqPairsMaxBatch + 2];
  };
  static constexpr int kSmemBytes = int(sizeof(SharedStorage));
  static_assert(kSmemBytes <= smem_bytes_for(kHeadDim, kBlockN, kBlockM, Mainloop::kStages),
                "launch.h's shared-memory bound is too low");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory over the sm_90 per-block limit");
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, 1)
    attention_sm90_kernel(__grid_constant__ const typename Kernel::Params params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using namespace cute;
  using Mainloop = typename Kernel::Mainloop;
  using Pipeline = typename Mainloop::Pipeline;
  using Element = typename Mainloop::Element;
  constexpr int kBlockN = Mainloop::kBlockN;

  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Kernel::SharedStorage*>(smem_raw);
  const AttnArgs& a = params.args;

  const int warp = cutlass::canonical_warp_idx_sync();
  const int warpgroup = warp / 4;
  if (threadIdx.x == 0) {
    Mainloop::prefetch_descriptors(params.mainloop);
    cutlass::arch::ClusterTransactionBarrier::init(&smem.q_full, 1);
    cutlass::arch::ClusterBarrier::init(&smem.q_empty, 128 * Kernel::kConsumers);
    cutlass::arch::ClusterBarrier::init(&smem.o_free, 2);
    if constexpr (Kernel::kTmaStore) {
      if (a.o_tma) cute::prefetch_tma_descriptor(params.o_store.tma_o.get_tma_descriptor());
    }
    if constexpr (Mainloop::kVtInSmem) {  // the raw V ring (mainloop.cuh)
      for (int st = 0; st < Mainloop::kStages; ++st) {
        cutlass::arch::ClusterTransactionBarrier::init(&smem.mainloop.raw_full[st], 1);
        cutlass::arch::ClusterBarrier::init(&smem.mainloop.raw_empty[st], Mainloop::kTransposers);
      }
    }
  }

  typename Pipeline::Params pp;
  pp.transaction_bytes = Mainloop::kKVBytes;
  pp.role = warpgroup == 0 ? Pipeline::ThreadCategory::Producer : Pipeline::ThreadCategory::Consumer;
  pp.is_leader = threadIdx.x == 0;
  pp.num_consumers = 128 * Kernel::kConsumers;
  Pipeline pipe_k(smem.pipe_k, pp, Shape<_1, _1, _1>{});
  // kVtInSmem: the V^T ring is filled by the transposing threads, each arriving once per stage.
  if constexpr (Mainloop::kVtInSmem) pp.num_producers = Mainloop::kTransposers;
  Pipeline pipe_v(smem.pipe_v, pp, Shape<_1, _1, _1>{});
  using Scheduler = TileScheduler<kBlockN, Mainloop::kCache, Kernel::kBlockM, !Kernel::kFp8>;
  // Varlen causal pairs: warp 0 lays out every sequence's pairs (tile_scheduler.cuh), an
  // inclusive scan of 32 sequences at a time over cu_seqlens_q (batch <= kSeqPairsMaxBatch).
  if (Scheduler::kSeqPairs && a.pairs && a.cu_seqlens_q != nullptr && warp == 0) {
    const int lane = int(threadIdx.x) % 32;
    int32_t carry = 0;
    if (lane == 0) smem.seq_prefix[0] = 0;
    for (int base = 0; base < a.batch; base += 32) {
      const int s = base + lane;
      int32_t v = 0;
      if (s < a.batch) {
        int32_t row0, len;
        attn::varlen_rows(a.cu_seqlens_q, s, a.tma_rows_q, &row0, &len);
        v = Scheduler::seq_pairs(a, len);
      }
      CUTE_UNROLL
      for (int d = 1; d < 32; d *= 2) {
        const int32_t u = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += u;
      }
      if (s < a.batch) smem.seq_prefix[s + 1] = carry + v;
      carry += __shfl_sync(0xffffffffu, v, 31);
    }
    // 31 bits: the host's bound on every sequence as long as seqlen_q.
    if (lane == 0) smem.seq_prefix[Scheduler::kSeqPairsTotal] = 2 * ((carry + a.grid - 1) / a.grid) * a.grid;
  }
  cutlass::arch::fence_barrier_init();
  __syncthreads();  // barrier initialisation (and the pairs' prefix) visible to every thread

  Scheduler scheduler(a, smem.seq_prefix);
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<Kernel::kProducerRegisters>();
    if (threadIdx.x == 0) {
      auto write_k = cutlass::make_producer_start_state<Pipeline>();
      auto write_v = cutlass::make_producer_start_state<Pipeline>();
      int iter = 0;  // tiles with rows (varlen skips the empty ones everywhere)
#if defined(FLASHKIT_ATTENTION_TRACE)
      uint64_t* const trace = params.trace;
#endif
      for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
#if defined(FLASHKIT_ATTENTION_TRACE)
        trace_stamp(trace, 0, iter, 6);
        trace_stamp(trace, 0, iter, 0);
#endif
        const WorkTile w = scheduler.tile(t);
        if (w.empty) continue;
#if defined(FLASHKIT_ATTENTION_TRACE)
        trace_stamp(trace, 0, iter, 1);
#endif
        // Q of the previous tile released by every consumer warpgroup.
        if (iter > 0) cutlass::arch::ClusterBarrier::wait(&smem.q_empty, (iter - 1) & 1);
#if defined(FLASHKIT_ATTENTION_TRACE)
        trace_stamp(trace, 0, iter, 2);
#endif
        const uint64_t* o_free = Kernel::kTmaStore && a.o_tma && iter > 0 ? &smem.o_free : nullptr;
        Mainloop::load(params.mainloop, a, pipe_k, pipe_v, write_k, write_v, smem.mainloop,
                       &smem.q_full, w.m_block, w.h, w.hk, w.b, w.row0_q, w.row0_k, w.n_min,
                       w.n_max, o_free, (iter - 1) & 1);
#if defined(FLASHKIT_ATTENTION_TRACE)
        trace_stamp(trace, 0, iter, 3);
        trace_stamp(trace, 0, iter, 7);
        trace_value(trace, 0, iter, 8, uint64_t(w.n_max - w.n_min));
#endif
        ++iter;
      }
      // Keep the CTA alive until the consumers have drained every stage in flight.
      pipe_k.producer_tail(write_k);
      if constexpr (!Mainloop::kVtInSmem) pipe_v.producer_tail(write_v);
    } else if constexpr (Mainloop::kVtInSmem) {
      // Warps 1-3: each V tile from the raw ring into the V^T ring, transposed (mainloop.cuh,
      // transpose_v_tile), in the order the copy thread loads them. All 96 threads wait for the
      // raw tile and for a free V^T stage, write their part, fence it for the tensor cores
      // (generic-proxy writes read by wgmma) and arrive on both rings.
      if (warp >= 1) {
        const int tt = int(threadIdx.x) - 32;
        const uint32_t raw0 = cute::cast_smem_ptr_to_uint(smem.mainloop.vraw.data());
        const uint32_t vt0 = cute::cast_smem_ptr_to_uint(smem.mainloop.v.data());
        typename Mainloop::PipelineState read_raw;  // stage 0, phase 0
        auto write_vt = cutlass::make_producer_start_state<Pipeline>();
        for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
          const WorkTile w = scheduler.tile(t);
          if (w.empty) continue;
          for (int32_t n = w.n_max - 1; n >= w.n_min; --n) {
            cutlass::arch::ClusterTransactionBarrier::wait(&smem.mainloop.raw_full[read_raw.index()],
                                                           read_raw.phase());
            smem.pipe_v.empty_barrier_[write_vt.index()].wait(write_vt.phase());
            Mainloop::transpose_v_tile(raw0 + uint32_t(read_raw.index()) * Mainloop::kKVBytes,
                                       vt0 + uint32_t(write_vt.index()) * Mainloop::kKVBytes, tt);
            cutlass::arch::fence_view_async_shared();
            cutlass::arch::ClusterBarrier::arrive(&smem.mainloop.raw_empty[read_raw.index()]);
            smem.pipe_v.full_barrier_[write_vt.index()].arrive();
            ++read_raw;
            ++write_vt;
          }
        }
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Kernel::kConsumerRegisters>();
    const int mma_thread = int(threadIdx.x) - 128;
    const int wg = __shfl_sync(0xffffffffu, mma_thread / 128, 0);
    const int lane = int(threadIdx.x) % 32;
    const int quad_t = lane % 4;
    // Tile row of the thread's first row (its second is 8 below).
    const int row0 = wg * 64 + (warp % 4) * 16 + lane / 4;
    // The same row and quad index, for use inside the tile loop. With three consumers (160
    // registers each) ptxas spilled such per-thread constants and reloaded them in the key-tile
    // loop; there they are computed again from %tid.x (a volatile read, so that they are not
    // hoisted back into long-lived registers).
    auto tid_now = []() -> int {
      uint32_t tid;
      asm volatile("mov.u32 %0, %%tid.x;" : "=r"(tid));
      return int(tid);
    };
    auto tile_row0 = [&]() -> int {
      if constexpr (Kernel::kConsumers == 3) {
        const int tid = tid_now();
        return (tid / 128 - 1) * 64 + (tid / 32 % 4) * 16 + tid % 32 / 4;
      } else {
        return row0;
      }
    };
    auto tile_quad_t = [&]() -> int {
      if constexpr (Kernel::kConsumers == 3) {
        return tid_now() % 4;
      } else {
        return quad_t;
      }
    };

    typename Mainloop::TiledMmaQK mma_qk;
    typename Mainloop::TiledMmaPV mma_pv;
    auto thr_qk = mma_qk.get_slice(wg * 128);
    auto thr_pv = mma_pv.get_slice(wg * 128);
    Tensor sQ = make_tensor(make_smem_ptr(smem.mainloop.q.data()), typename Mainloop::SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(smem.mainloop.k.data()), typename Mainloop::SmemLayoutK{});
    Tensor sVt = make_tensor(make_smem_ptr(smem.mainloop.v.data()), typename Mainloop::SmemLayoutVt{});
    Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ));   // (MMA, MMA_M, MMA_K)
    Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));   // (MMA, MMA_N, MMA_K, PIPE)
    Tensor tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sVt));  // (MMA, MMA_N, MMA_K, PIPE)
    constexpr int kBlockM = Kernel::kBlockM;
    Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});
    Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<Mainloop::kHeadDim>>{});
    Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv, Shape<Int<kBlockM>, Int<kBlockN>>{}));

    // Ping-pong (FA3 Section 3.2): named barrier `wg` is this warpgroup's turn to issue GEMMs;
    // after issuing it passes the turn to the next one (round robin over two or three). The
    // last warpgroup opens warpgroup 0's first turn. All walk the same tiles with the same
    // number of GEMM rounds, so the turns stay matched (the last pass is left pending when the
    // CTA exits). Barriers 0 .. kConsumers - 1; the ones below start at 2 and 4 and exist only
    // with two consumers (KV caches, copy-engine stores).
    const bool pingpong = a.pingpong && a.overlap;
    auto turn_wait = [&]() {
      if (pingpong) cutlass::arch::NamedBarrier::sync(256, wg);
    };
    auto turn_pass = [&]() {
      if (pingpong) cutlass::arch::NamedBarrier::arrive(256, wg + 1 == Kernel::kConsumers ? 0 : wg + 1);
    };
    if (pingpong && wg == Kernel::kConsumers - 1) cutlass::arch::NamedBarrier::arrive(256, 0);

    // Rows past a sequence: the rows of a work tile's last key tile past the sequence's length
    // are, over a KV cache, whatever the cache holds there (a page's tail, unused capacity:
    // memory the caller may never have written, NaN or Inf), and in the varlen form the next
    // sequence's rows (or, in split-KV's inner call over a KV slice, the gap between two
    // sequences). Their P is 0, but 0 x NaN is NaN in the P V GEMM, so before a work tile's
    // key-tile loop each consumer warpgroup waits for the V stage of that tile (the first one
    // the tile reads), zeroes those rows (all write the same zeros, 16 bytes at a time: 8
    // head_dim elements are contiguous in a swizzle atom's row) and fences them for the tensor
    // cores. K needs nothing: the mask replaces those scores. Batched calls read such rows only
    // past a tensor's end, where the copy engine fills zeros. This stays outside the loops: in
    // them it moved ptxas's spills into the 176-key loop. Barriers kConsumers .. 2 kConsumers - 1
    // (after the turn barriers; with two consumers the copy-engine stores' 4 and 5 follow).
    const bool v_tail = Mainloop::kCache || a.cu_seqlens_k != nullptr;
    auto clear_v_tail = [&](const WorkTile& w, const typename Mainloop::PipelineState& st) {
      const int valid = w.len_k - (w.n_max - 1) * kBlockN;  // keys in tile n_max - 1
      if (valid >= kBlockN || w.n_max <= w.n_min) return;
      if constexpr (Kernel::kFp8) return;  // batched calls only (the copy engine's zero fill)
      pipe_v.consumer_wait(st);
      constexpr int kChunks = Mainloop::kHeadDim / 8;  // 16-byte pieces of a key row
      for (int e = mma_thread % 128; e < (kBlockN - valid) * kChunks; e += 128)
        *reinterpret_cast<uint4*>(&sVt(8 * (e % kChunks), valid + e / kChunks, st.index())) =
            make_uint4(0u, 0u, 0u, 0u);
      cutlass::arch::fence_view_async_shared();
      cutlass::arch::NamedBarrier::sync(128, Kernel::kConsumers + wg);
    };

    auto to_p = [](const auto& s_frag, auto& p_frag) {
      if constexpr (Kernel::kFp8) {
        convert_fragment_fp8(s_frag, p_frag);
      } else {
        convert_fragment(s_frag, p_frag);
      }
    };
    const bool raw = !a.softcap && a.scale_log2 > 0.0f;
    const float scale = raw ? a.scale_log2 : 1.0f;
    typename Mainloop::PipelineState read_k, read_v;  // stage 0, phase 0
    int64_t v_reads = 0;  // V tiles consumed so far (one ring release each)
    int iter = 0;
#if defined(FLASHKIT_ATTENTION_TRACE)
    uint64_t* const trace = mma_thread % 128 == 0 ? params.trace : nullptr;
    const int role = 1 + mma_thread / 128;
#endif
    for (int64_t t = scheduler.first(); scheduler.valid(t); t = scheduler.next(t)) {
#if defined(FLASHKIT_ATTENTION_TRACE)
      trace_stamp(trace, role, iter, 6);
      trace_stamp(trace, role, iter, 0);
#endif
      const WorkTile w = scheduler.tile(t);
      if (w.empty) continue;
#if defined(FLASHKIT_ATTENTION_TRACE)
      trace_stamp(trace, role, iter, 1);
#endif
      OnlineSoftmax softmax;
      constexpr bool kLazyMax = Mainloop::kHeadDim > 128;  // softmax.cuh, step
      // fp8: this (sequence, kv head)'s factors (the host takes no softcap there). A product
      // that is not positive (negative descale factors, 0, NaN) cannot scale raw scores inside
      // the softmax (its row max would be a minimum), so such tiles turn the scores into logits
      // first, as calls with a softcap do.
      float tile_scale = scale;
      bool raw_tile = raw;
      float logit_scale = a.scale_log2;
      if constexpr (Kernel::kFp8) {
        // The product of the three factors in double, rounded once: any two of them alone
        // may overflow or underflow fp32 where the whole factor is a normal number
        // (descales of 2^70 and 2^59 with softmax_scale 2^-126), and a zero stays zero.
        const float dq = params.fp8.at(0, w.b, w.hk), dk = params.fp8.at(1, w.b, w.hk);
        raw_tile = raw && ((dq > 0.0f && dk > 0.0f) || (dq < 0.0f && dk < 0.0f));
        logit_scale = float(double(a.scale_log2) * double(dq) * double(dk));
        tile_scale = raw_tile ? float(double(scale) * double(dq) * double(dk)) : 1.0f;
      }
      softmax.init();
      clear(tOrO);
      cutlass::arch::ClusterBarrier::wait(&smem.q_full, iter & 1);
#if defined(FLASHKIT_ATTENTION_TRACE)
      trace_stamp(trace, role, iter, 2);
#endif
      if (v_tail) clear_v_tail(w, read_v);  // V of tile n_max - 1, the first one read
      // This warpgroup is done with Q once the tile's last S GEMM has completed, so the producer
      // may load the next tile's Q under the last softmax, the last P V and the epilogue
      // instead of after them (FA3 releases Q early the same way).
      // The overlapped order below always releases Q inside (at the tile's last S GEMM); the
      // other orders release it after the loop. The three-consumer kernel uses that fact
      // instead of a flag, which ptxas kept in local memory there (a spill inside the key-tile
      // loop); the two-consumer kernels keep the flag (their register allocation, measured
      // sensitive, stays as it was).
      const bool overlapped = a.overlap && w.n_max > w.n_min;
      bool q_released = false;
      auto release_q = [&]() {
        if constexpr (Kernel::kConsumers == 3) {
          cutlass::arch::ClusterBarrier::arrive(&smem.q_empty);
        } else {
          if (!q_released) cutlass::arch::ClusterBarrier::arrive(&smem.q_empty);
          q_released = true;
        }
      };
      // Query row (in the sequence) of the thread's tile row r0 + 8 r: m0 + r0 + 8 r, or under
      // packed GQA tiles (KV-cache instantiation, launch.h, q_pack) m0 + (r0 + 8 r) mod
      // q_pack_rows (tile rows are head-major there). The plain kernels keep the sum in 64 bits
      // from m0 on, as before the packing (their SASS unchanged).
      auto query_of = [&](int r0, int r) -> int64_t {
        if constexpr (Mainloop::kCache) {
          return int64_t(w.m0) + qpack_row(a, r0 + 8 * r).row;
        } else {
          return int64_t(w.m0) + r0 + 8 * r;
        }
      };
      // Scores of key tile n -> base-2 logits, masked where some row sees only part of it.
      auto logits_and_mask = [&](int n) {
        if (!raw_tile) OnlineSoftmax::to_logits(tSrS, a.softcap != 0, logit_scale, a.cap_pre, a.cap_post);
        const int n0 = n * kBlockN;
        if (n0 < w.all_lo || n0 + kBlockN - 1 > w.all_hi) {
          int lo[2], hi[2];
          const int r0 = tile_row0();
          if constexpr (Mainloop::kHeadDim <= 128) {
            // Calls without a left window: the upper bound alone (softmax.cuh, mask_hi). H200,
            // session 35: head_dim 64 causal 512-4096 keys +1.6-3.6%, head_dim 128 +0.4-2.3%;
            // at head_dim 256 the same code read -2.7% on causal 16k keys, so the kernels above
            // 128 (192 untimed) keep the two-sided mask only, and their SASS as before.
            CUTE_UNROLL
            for (int r = 0; r < 2; ++r) hi[r] = scheduler.key_hi(w, query_of(r0, r));
            if (a.window_left < 0 && a.hi_mask) {
              OnlineSoftmax::mask_hi(tSrS, n0 + 2 * tile_quad_t(), hi);
            } else {
              CUTE_UNROLL
              for (int r = 0; r < 2; ++r) lo[r] = scheduler.key_lo(w, query_of(r0, r));
              OnlineSoftmax::mask(tSrS, n0 + 2 * tile_quad_t(), lo, hi);
            }
          } else {
            CUTE_UNROLL
            for (int r = 0; r < 2; ++r) {
              lo[r] = scheduler.key_lo(w, query_of(r0, r));
              hi[r] = scheduler.key_hi(w, query_of(r0, r));
            }
            OnlineSoftmax::mask(tSrS, n0 + 2 * tile_quad_t(), lo, hi);
          }
        }
      };
      if (overlapped) {
        // FlashAttention-3's intra-warpgroup pipelining (Section 3.2): the S GEMM of the next
        // key tile and the P V GEMM of the current one are in flight together while the
        // softmax of the next tile runs; O is rescaled once P V has retired.
        float corr[2];
        pipe_k.consumer_wait(read_k);
#if defined(FLASHKIT_ATTENTION_TRACE)
        trace_stamp(trace, role, iter, 3);
#endif
        turn_wait();
        Mainloop::template wg_gemm<true, false>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS);
        turn_pass();
        warpgroup_wait<0>();
        pipe_k.consumer_release(read_k);
        ++read_k;
        if (w.n_max - 1 == w.n_min) release_q();  // that was the tile's only S GEMM
        logits_and_mask(w.n_max - 1);
        softmax.step<kLazyMax>(tSrS, tile_scale, corr);  // O is still 0: no rescale
        to_p(tSrS, tOrP);
        for (int n = w.n_max - 2; n >= w.n_min; --n) {
          pipe_k.consumer_wait(read_k);
          pipe_v.consumer_wait(read_v);
          turn_wait();
          Mainloop::template wg_gemm<true, false>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS);
          Mainloop::template wg_gemm<false, true>(mma_pv, tOrP, tOrV(_, _, _, read_v.index()), tOrO);
          turn_pass();
          warpgroup_wait<1>();  // S of tile n has landed; P V of tile n + 1 may still run
          pipe_k.consumer_release(read_k);
          ++read_k;
          if (n == w.n_min) release_q();  // the tile's last S GEMM has read Q
          logits_and_mask(n);
          softmax.step<kLazyMax>(tSrS, tile_scale, corr);
          warpgroup_wait<0>();
          pipe_v.consumer_release(read_v);
          ++read_v;
          OnlineSoftmax::rescale<kLazyMax>(tOrO, corr);
          to_p(tSrS, tOrP);
        }
        pipe_v.consumer_wait(read_v);
        turn_wait();
        Mainloop::template wg_gemm<false, true>(mma_pv, tOrP, tOrV(_, _, _, read_v.index()), tOrO);
        turn_pass();
        warpgroup_wait<0>();
        pipe_v.consumer_release(read_v);
        ++read_v;
      } else {
        // Plain order (FLASHKIT_SM90_ATTENTION_OVERLAP=0, for diagnosis): S, softmax, P V.
        for (int n = w.n_max - 1; n >= w.n_min; --n) {
          float corr[2];
          pipe_k.consumer_wait(read_k);
          Mainloop::template wg_gemm<true, false>(mma_qk, tSrQ, tSrK(_, _, _, read_k.index()), tSrS);
          warpgroup_wait<0>();
          pipe_k.consumer_release(read_k);
          ++read_k;
          logits_and_mask(n);
          softmax.step<kLazyMax>(tSrS, tile_scale, corr);
          OnlineSoftmax::rescale<kLazyMax>(tOrO, corr);
          to_p(tSrS, tOrP);
          pipe_v.consumer_wait(read_v);
          Mainloop::template wg_gemm<false, true>(mma_pv, tOrP, tOrV(_, _, _, read_v.index()), tOrO);
          warpgroup_wait<0>();
          pipe_v.consumer_release(read_v);
          ++read_v;
        }
      }
      if (Kernel::kConsumers != 3 || !overlapped) release_q();  // no-op when the mainloop released Q already
#if defined(FLASHKIT_ATTENTION_TRACE)
      trace_stamp(trace, role, iter, 4);
#endif
      v_reads += w.n_max - w.n_min;
      float lse[2];
      softmax.finalize(tOrO, lse);
      if constexpr (Kernel::kFp8) {
        const float dv = params.fp8.at(2, w.b, w.hk);
        CUTE_UNROLL
        for (int i = 0; i < size(tOrO); ++i) tOrO(i) *= dv;
      }
      bool stored = false;
      if constexpr (Kernel::kTmaStore) {
        if (a.o_tma) {
          // The V stage read before the last one (stage 1 while only one has been read):
          // wait until both warpgroups have released it.
          int stage = 1;
          if (v_reads >= 2) {
            const int64_t use = v_reads - 2;
            stage = int(use % Mainloop::kStages);
            smem.pipe_v.empty_barrier_[stage].wait(uint32_t((use / Mainloop::kStages) & 1));
          }
          Tensor sO = make_tensor(
              make_smem_ptr(smem.mainloop.v.data() + (int64_t(stage) * kBlockN + wg * 64) * Mainloop::kHeadDim),
              typename Kernel::SmemLayoutOHalf{});
          // The warpgroup's previous store has read its staging: its issuing thread waited for
          // that before arriving here (tiles without a key read no V, so nothing else orders it).
          cutlass::arch::NamedBarrier::sync(128, 4 + wg);
          stage_output<Element>(tOrO, sO, row0 - wg * 64, quad_t);
          cutlass::arch::fence_view_async_shared();  // visible to the copy engine ...
          cutlass::arch::NamedBarrier::sync(128, 4 + wg);  // ... from every thread of the warpgroup
          if (mma_thread % 128 == 0) {
            auto& tma_o = params.o_store.tma_o;
            Tensor mO = tma_o.get_tma_tensor(params.o_store.shape_o);
            Tensor gO = local_tile(mO(_, _, w.h, w.b), Shape<_64, Int<Mainloop::kHeadDim>>{},
                                   make_coord(w.m_block * 2 + wg, _0{}));
            auto co = tma_o.get_slice(_0{});
            copy(tma_o, co.partition_S(sO), co.partition_D(gO));
            tma_store_arrive();
            tma_store_wait<0>();  // the staging has been read: the producer may refill it
            cutlass::arch::ClusterBarrier::arrive(&smem.o_free);
          }
          store_lse(a, lse, w.b, w.h, w.m0, row0, quad_t, w.row0_q, w.len_q);
          stored = true;
        }
      }
      if (!stored) {
        // KV-cache instantiation: rows mapped by qpack_row (identity unless the tile packs GQA
        // heads).
        store_output<typename Kernel::OutElement, Mainloop::kCache>(a, tOrO, lse, w.b, w.h, w.m0, tile_row0(),
                                                                  tile_quad_t(), w.row0_q, w.len_q);
      }
#if defined(FLASHKIT_ATTENTION_TRACE)
      trace_stamp(trace, role, iter, 5);
      trace_stamp(trace, role, iter, 7);
      trace_value(trace, role, iter, 8, uint64_t(w.n_max - w.n_min));
#endif
      ++iter;
    }
  }
#endif
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
