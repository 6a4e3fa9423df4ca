// Mainloop of the Hopper attention kernel (FlashAttention-3, Shah et al. 2024, Section 3.1):
// the producer's copy-engine (TMA) loads and the two warpgroup GEMMs each consumer issues.
//
// Shared memory: the Q tile (kBlockM x head_dim), loaded once per work tile, and two rings of
// kStages key and value tiles (kBlockN x head_dim), each guarded by a
// cutlass::PipelineTmaAsync (a "full" mbarrier completed by the copy engine's byte count and an
// "empty" one completed when all consumer threads are done). K and V have separate rings
// so that S = Q K^T can start as soon as K has landed, while V is still in flight. The fp8
// kernel with V transposed in shared memory (kVtInSmem) adds a third ring of raw V tiles, and its V^T ring's full
// barrier completes on the arrivals of the 96 threads that transpose into it.
//
// GEMMs (wgmma, each consumer warpgroup owning 64 query rows of the 128- or 192-row tile):
//   S = Q K^T  : A = Q and B = K both from shared memory, K-major (head_dim contiguous);
//   O += P V   : A = P from registers (the S accumulators rounded to the input type in place:
//                wgmma's accumulator and register-A fragments cover the same (row, column)
//                pairs in the same order), B = V from shared memory, read as V^T (head_dim x
//                keys) with head_dim contiguous, the MN-major form wgmma's transpose bit takes.
// All tiles use the 128-byte swizzle both the copy engine writes and wgmma reads conflict-free
// (the 64-byte one at head_dim 96).
// Rows past the end of the tensor come in as zeros (the copy engine's out-of-bounds fill); the
// softmax masks the keys past the end of a sequence (varlen: those rows are the next sequence's).
#pragma once

#include <cute/tensor.hpp>
#include <type_traits>
#include <cutlass/arch/barrier.h>
#include <cutlass/pipeline/sm90_pipeline.hpp>

#include "cuda/attention/common/kvcache.h"
#include "cuda/attention/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// kCache: the instantiation that reads KV caches (AttnArgs::seqused_k / block_table); the
// plain one compiles none of that code (it cost the plain kernel up to 7% at head_dim 128 when
// both shared one producer: H200, 8k causal, RESULTS.md "Hopper kernel over KV caches").
// kBlockM_: query rows per work tile, 64 per consumer warpgroup (launch.h).
// kVtInKernel_ (fp8 only): V transposed in shared memory (kVtInSmem) rather than read from the
// V^T copy a pass writes first; ignored by the 16-bit kernels.
template <class Element_, int kHeadDim_, int kBlockN_, bool kCache_, int kBlockM_ = kBlockM,
          int kStages_ = stages_for(kHeadDim_), bool kVtInKernel_ = true>
struct Mainloop {
  using Element = Element_;  // cute::half_t, cute::bfloat16_t, or cute::float_e4m3_t (below)
  static constexpr int kHeadDim = kHeadDim_;
  // The FP8 forward (fk_attention_fp8_forward, attention_fp8_sm90.cu): e4m3 Q and K as given;
  // wgmma takes 8-bit operands K-major only (FA3 Section 3.3), so P V needs V^T with the keys
  // contiguous. Batched calls only.
  //   kVtInSmem (head_dim 128, and 256 where few query rows read each key): V tiles land as
  //     they are in a ring of their own (vraw, rows = keys) and three producer warps write each
  //     one transposed into the V^T ring the consumers read (transpose_v_tile below);
  //   otherwise (head_dim 256): V^T is a copy that a pass before the kernel
  //     writes (attention_fp8_sm90.cu), and the copy engine reads it. Which one a call takes:
  //     attention_sm90.cpp, fp8_vt_in_kernel.
  static constexpr bool kFp8 = sizeof(Element) == 1;
  static constexpr bool kVtInSmem = kFp8 && kVtInKernel_;
  static_assert(!kFp8 || !kCache_, "the fp8 kernel reads no KV cache");
  static constexpr int kBlockN = kBlockN_;
  static constexpr bool kCache = kCache_;
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kConsumers = kBlockM / 64;  // consumer warpgroups
  static_assert(kBlockM % 64 == 0 && kConsumers >= 2 && kConsumers <= 3, "64 query rows per consumer warpgroup");
  static constexpr int kStages = kStages_;
  static_assert(kHeadDim % 32 == 0, "head_dim must be a whole number of 64-byte swizzle atoms");

  using BM = cute::Int<kBlockM>;
  using BN = cute::Int<kBlockN>;
  using HD = cute::Int<kHeadDim>;

  // 128-byte swizzle (64-element rows) where head_dim is a multiple of 64; 64-byte swizzle
  // (32-element rows) for head_dim 96. fp8: 128-element rows (head_dim 128, 256).
  static constexpr int kRowBytes = kHeadDim * int(sizeof(Element));
  static_assert(!kFp8 || kRowBytes % 64 == 0, "fp8: head_dim a multiple of 64");
  using AtomK = std::conditional_t<kRowBytes % 128 == 0, cute::GMMA::Layout_K_SW128_Atom<Element>,
                                   cute::GMMA::Layout_K_SW64_Atom<Element>>;
  using AtomMN = std::conditional_t<kHeadDim % 64 == 0, cute::GMMA::Layout_MN_SW128_Atom<Element>,
                                    cute::GMMA::Layout_MN_SW64_Atom<Element>>;
  using SmemLayoutQ = decltype(cute::tile_to_shape(AtomK{}, cute::Shape<BM, HD>{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(AtomK{}, cute::Shape<BN, HD, cute::Int<kStages>>{}));
  // V^T: (head_dim, keys, stage), head_dim contiguous; stacked key-atom first so that each
  // head_dim panel of one swizzle atom is one contiguous copy-engine box.
  // fp8: V^T K-major (keys contiguous), 128-key swizzle atoms stacked along head_dim.
  using SmemLayoutVtMN = decltype(cute::tile_to_shape(
      AtomMN{}, cute::Shape<cute::Int<kFp8 ? 128 : kHeadDim>, BN, cute::Int<kStages>>{},
      cute::Step<cute::_2, cute::_1, cute::_3>{}));  // (unused: fp8)
  // 128-, 64- or 32-key atoms as kBlockN allows (one byte per key).
  using AtomVtK = std::conditional_t<
      kBlockN % 128 == 0, cute::GMMA::Layout_K_SW128_Atom<Element>,
      std::conditional_t<kBlockN % 64 == 0, cute::GMMA::Layout_K_SW64_Atom<Element>,
                         cute::GMMA::Layout_K_SW32_Atom<Element>>>;
  using SmemLayoutVtK = decltype(cute::tile_to_shape(
      AtomVtK{}, cute::Shape<HD, cute::Int<kFp8 ? kBlockN : 128>, cute::Int<kStages>>{}));  // (unused: 16-bit)
  static_assert(!kFp8 || kBlockN % 32 == 0, "fp8: key tiles of whole k32 blocks");
  using SmemLayoutVt = std::conditional_t<kFp8, SmemLayoutVtK, SmemLayoutVtMN>;
  // fp8: V tiles as they come, (keys, head_dim, stage) in K's layout, before the transposition.
  using SmemLayoutVraw = SmemLayoutK;
  // What the copy engine writes V into: the V^T ring, or the raw V ring (kVtInSmem).
  using SmemLayoutVload = std::conditional_t<kVtInSmem, SmemLayoutVraw, SmemLayoutVt>;

  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::GMMA::ss_op_selector<Element, Element, float, cute::Shape<BM, BN, HD>>(),
      cute::Layout<cute::Shape<cute::Int<kConsumers>, cute::_1, cute::_1>>{}));
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::GMMA::rs_op_selector<Element, Element, float, cute::Shape<BM, HD, BN>,
                                 cute::GMMA::Major::K,
                                 kFp8 ? cute::GMMA::Major::K : cute::GMMA::Major::MN>(),
      cute::Layout<cute::Shape<cute::Int<kConsumers>, cute::_1, cute::_1>>{}));

  // Paged caches whose pages are not a multiple of kBlockN (a multiple of kBoxRows keys): each
  // key tile arrives as kBoxRows-row boxes, one per (box, swizzle panel), each from its own
  // page. A box is two whole swizzle atoms of the tile's shared-memory layout (rows first in
  // K, keys first in V^T), so it lands at an atom-aligned offset with the same swizzle.
  static constexpr int kBoxRows = 16;
  static constexpr int kPanel = kHeadDim % 64 == 0 ? 64 : 32;  // swizzle atom width
  static constexpr int kPanels = kHeadDim / kPanel;
  static constexpr int kBoxes = kBlockN / kBoxRows;
  static_assert(kBlockN % kBoxRows == 0, "key tiles must be whole boxes");
  // (The fp8 kernel reads no cache: its box types are those of a 16-bit kernel, never used.)
  using BoxAtomK = std::conditional_t<kFp8, cute::GMMA::Layout_K_SW128_Atom<cute::bfloat16_t>, AtomK>;
  using BoxAtomMN = std::conditional_t<kFp8, cute::GMMA::Layout_MN_SW128_Atom<cute::bfloat16_t>, AtomMN>;
  using SmemLayoutKBox =
      decltype(cute::tile_to_shape(BoxAtomK{}, cute::Shape<cute::Int<kBoxRows>, cute::Int<kPanel>>{}));
  using SmemLayoutVtBox = decltype(cute::tile_to_shape(
      BoxAtomMN{}, cute::Shape<cute::Int<kPanel>, cute::Int<kBoxRows>>{}, cute::Step<cute::_2, cute::_1>{}));

  using Pipeline = cutlass::PipelineTmaAsync<kStages>;
  using PipelineState = typename Pipeline::PipelineState;
  static constexpr uint32_t kKVBytes = uint32_t(kBlockN * kHeadDim * sizeof(Element));
  static constexpr uint32_t kQBytes = uint32_t(kBlockM * kHeadDim * sizeof(Element));

  // Global views, rank 4: Q and K as (rows, head_dim, head, batch), V as (head_dim, rows, head,
  // batch). The unit stride is static so that CuTe builds the box along it.
  using ShapeG = cute::Shape<int32_t, int32_t, int32_t, int32_t>;
  using StrideRowMajor = cute::Stride<int64_t, cute::_1, int64_t, int64_t>;
  using StrideColMajor = cute::Stride<cute::_1, int64_t, int64_t, int64_t>;
  // V's global view: (head_dim, keys) with head_dim contiguous (16-bit); fp8: the V^T copy's
  // (head_dim, keys) with the keys contiguous, or (kVtInSmem) V's own (keys, head_dim) as K's.
  using StrideV = std::conditional_t<kFp8, StrideRowMajor, StrideColMajor>;
  template <class Stride>
  static auto gmem(const Element* ptr, ShapeG shape, Stride stride) {
    return cute::make_tensor(cute::make_gmem_ptr(ptr), cute::make_layout(shape, stride));
  }
  using TmaQ = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{},
                                            gmem(nullptr, ShapeG{}, StrideRowMajor{}),
                                            SmemLayoutQ{}));
  using TmaK = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{},
                                            gmem(nullptr, ShapeG{}, StrideRowMajor{}),
                                            SmemLayoutK{}(cute::_, cute::_, cute::Int<0>{})));
  using TmaV = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{},
                                            gmem(nullptr, ShapeG{}, StrideV{}),
                                            SmemLayoutVload{}(cute::_, cute::_, cute::Int<0>{})));

  using BoxElement = std::conditional_t<kFp8, cute::bfloat16_t, Element>;
  template <class Stride>
  static auto gmem_box(ShapeG shape, Stride stride) {
    return cute::make_tensor(cute::make_gmem_ptr(static_cast<const BoxElement*>(nullptr)),
                             cute::make_layout(shape, stride));
  }
  using TmaKBox = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{},
                                               gmem_box(ShapeG{}, StrideRowMajor{}),
                                               SmemLayoutKBox{}));
  using TmaVBox = decltype(cute::make_tma_copy(cute::SM90_TMA_LOAD{},
                                               gmem_box(ShapeG{}, StrideColMajor{}),
                                               SmemLayoutVtBox{}));

  // The box descriptors exist in the KV-cache instantiation only (an empty base otherwise), so
  // that the plain kernel's parameter block keeps its layout.
  template <bool kWith, class Dummy = void>
  struct BoxTmas {};
  template <class Dummy>
  struct BoxTmas<true, Dummy> {
    TmaKBox tma_kb;  // pages that are not a multiple of kBlockN
    TmaVBox tma_vb;
    TmaKBox tma_qb;  // packed GQA tiles: Q in kBoxRows-row boxes (load_cache)
  };
  struct Params : BoxTmas<kCache> {
    TmaQ tma_q;
    TmaK tma_k;
    TmaV tma_v;
    ShapeG shape_q, shape_k, shape_vt;
  };

  struct StoragePlain {
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>, 1024> q;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutK>, 1024> k;
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutVt>, 1024> v;
  };
  // kVtInSmem: also the raw V ring and its barriers (full: the copy engine's bytes; empty: the
  // kTransposers threads that read a stage out).
  struct StorageFp8 : StoragePlain {
    cute::array_aligned<Element, cute::cosize_v<SmemLayoutVraw>, 1024> vraw;
    alignas(8) uint64_t raw_full[kStages];
    alignas(8) uint64_t raw_empty[kStages];
  };
  using SharedStorage = std::conditional_t<kVtInSmem, StorageFp8, StoragePlain>;
  static constexpr int kTransposers = 96;  // producer warps 1-3 (kVtInSmem)

  static Params make_params(const AttnArgs& a, int32_t vt_keys = 0) {
    using namespace cute;
    Params p;
    // a.nheads counts packed heads under packed GQA tiles (launch.h, q_pack); q has them all.
    p.shape_q = ShapeG{a.tma_rows_q, a.head_dim, a.nheads * a.q_pack, a.tma_batch};
    p.shape_k = ShapeG{a.tma_rows_k, a.head_dim, a.nheads_k, a.tma_batch_k};
    // kVtInSmem: V as K, (keys, head_dim, head, batch); other fp8: the V^T copy holds vt_keys
    // (seqlen_k rounded up to 16) keys per row.
    p.shape_vt = kVtInSmem ? p.shape_k
                           : ShapeG{a.head_dim, kFp8 ? vt_keys : a.tma_rows_k, a.nheads_k, a.tma_batch_k};
    auto q = gmem(static_cast<const Element*>(a.q), p.shape_q,
                  StrideRowMajor{a.q_row_stride, _1{}, a.q_head_stride, a.q_batch_stride});
    auto k = gmem(static_cast<const Element*>(a.k), p.shape_k,
                  StrideRowMajor{a.k_row_stride, _1{}, a.k_head_stride, a.k_batch_stride});
    auto vt = [&] {
      if constexpr (kFp8) {
        return gmem(static_cast<const Element*>(a.v), p.shape_vt,
                    StrideV{a.v_row_stride, _1{}, a.v_head_stride, a.v_batch_stride});
      } else {
        return gmem(static_cast<const Element*>(a.v), p.shape_vt,
                    StrideV{_1{}, a.v_row_stride, a.v_head_stride, a.v_batch_stride});
      }
    }();
    p.tma_q = make_tma_copy(SM90_TMA_LOAD{}, q, SmemLayoutQ{});
    p.tma_k = make_tma_copy(SM90_TMA_LOAD{}, k, SmemLayoutK{}(_, _, Int<0>{}));
    p.tma_v = make_tma_copy(SM90_TMA_LOAD{}, vt, SmemLayoutVload{}(_, _, Int<0>{}));
    if constexpr (kCache) {
      p.tma_kb = make_tma_copy(SM90_TMA_LOAD{}, k, SmemLayoutKBox{});
      p.tma_vb = make_tma_copy(SM90_TMA_LOAD{}, vt, SmemLayoutVtBox{});
      p.tma_qb = make_tma_copy(SM90_TMA_LOAD{}, q, SmemLayoutKBox{});
    }
    return p;
  }

  __device__ __forceinline__ static void prefetch_descriptors(const Params& p) {
    cute::prefetch_tma_descriptor(p.tma_q.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_k.get_tma_descriptor());
    cute::prefetch_tma_descriptor(p.tma_v.get_tma_descriptor());
    if constexpr (kCache) {
      cute::prefetch_tma_descriptor(p.tma_kb.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.tma_vb.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.tma_qb.get_tma_descriptor());
    }
  }

  // Copy-engine coordinates of the rows starting at row `off` of page `page` (launch.h,
  // pages_merged): the row in the pool's one sequence of rows and batch entry 0, or the row in
  // the page and the page as the batch entry.
  __device__ __forceinline__ static void page_rows(const AttnArgs& a, int64_t page, int64_t off,
                                                   int64_t* row, int32_t* entry) {
    *row = a.pages_merged ? page * a.page_size + off : off;
    *entry = a.pages_merged ? 0 : int32_t(page);
  }

  // Small pages: key tile n of sequence b into the next ring stage of K and of V, kBoxes x
  // kPanels boxes each, all on that stage's barrier (the tile's byte count is the same). Box j
  // holds keys n * kBlockN + kBoxRows * j onwards, a clamped table entry's page (keys past the
  // capacity read the row's last entry: masked by the consumers like every key past the
  // sequence's length). The entries are read before the buffers are waited for.
  __device__ __forceinline__ static void load_boxes(const Params& p, const AttnArgs& a,
                                                    Pipeline& pipe_k, Pipeline& pipe_v,
                                                    PipelineState& write_k,
                                                    PipelineState& write_v, SharedStorage& smem,
                                                    int32_t hk, int32_t b, int32_t n) {
    using namespace cute;
    int32_t row[kBoxes], entry[kBoxes];  // copy-engine coordinates of each box
    CUTE_UNROLL
    for (int j = 0; j < kBoxes; ++j) {
      const int64_t key = min(int64_t(n) * kBlockN + kBoxRows * j, int64_t(a.seqlen_k) - 1);
      const int64_t page = attn::cache_page(a.block_table, a.block_table_stride, b, key,
                                            a.page_size, a.num_pages);
      int64_t r;
      page_rows(a, page, key % a.page_size, &r, &entry[j]);  // key % page_size: a box start
      row[j] = int32_t(r);
    }
    Tensor mK = p.tma_kb.get_tma_tensor(p.shape_k);
    Tensor mVt = p.tma_vb.get_tma_tensor(p.shape_vt);
    // (rows, panel, entry) boxes, addressed by box-aligned row and panel indices.
    Tensor gK = local_tile(mK(_, _, hk, _), Shape<Int<kBoxRows>, Int<kPanel>>{}, make_coord(_, _));
    Tensor gVt = local_tile(mVt(_, _, hk, _), Shape<Int<kPanel>, Int<kBoxRows>>{}, make_coord(_, _));
    auto ck = p.tma_kb.get_slice(_0{});
    auto cv = p.tma_vb.get_slice(_0{});
    Tensor tKg = ck.partition_S(gK);   // (TMA, TMA_R, TMA_P, row box, panel, entry)
    Tensor tVg = cv.partition_S(gVt);  // (TMA, TMA_P, TMA_R, panel, row box, entry)

    pipe_k.producer_acquire(write_k);
    {
      const int stage = write_k.index();
      CUTE_UNROLL
      for (int j = 0; j < kBoxes; ++j)
        CUTE_UNROLL
        for (int c = 0; c < kPanels; ++c) {
          Tensor sK = make_tensor(
              make_smem_ptr(smem.k.data() + SmemLayoutK{}.layout_b()(kBoxRows * j, kPanel * c, stage)),
              SmemLayoutKBox{});
          copy(p.tma_kb.with(*pipe_k.producer_get_barrier(write_k), 0),
               tKg(_, _, _, row[j] / kBoxRows, c, entry[j]), ck.partition_D(sK));
        }
    }
    ++write_k;
    pipe_v.producer_acquire(write_v);
    {
      const int stage = write_v.index();
      CUTE_UNROLL
      for (int j = 0; j < kBoxes; ++j)
        CUTE_UNROLL
        for (int c = 0; c < kPanels; ++c) {
          Tensor sV = make_tensor(
              make_smem_ptr(smem.v.data() +
                            SmemLayoutVt{}.layout_b()(kPanel * c, kBoxRows * j, stage)),
              SmemLayoutVtBox{});
          copy(p.tma_vb.with(*pipe_v.producer_get_barrier(write_v), 0),
               tVg(_, _, _, c, row[j] / kBoxRows, entry[j]), cv.partition_D(sV));
        }
    }
    ++write_v;
  }

  // Producer (one thread) of the cache instantiation (batched problems only: cache_ok): the Q
  // tile of (m_block, h, sequence b) on `q_full`, then key/value tiles n_max - 1 down to n_min,
  // K(n) before V(n). Its set-up repeats load_plain's with a batch-entry mode added (a page
  // under a paged cache); they are kept apart so that the plain kernel compiles exactly as
  // before (see kCache). Pages of whole key tiles: key tile n is looked up in block_table (its
  // first key's page), the next tile's entry read before this one's buffers are waited for;
  // other pages (a.page_boxes): load_boxes. `p` must live in the kernel's __grid_constant__
  // parameter (the copy engine reads the descriptors from there).
  __device__ __forceinline__ static void load_cache(const Params& p, const AttnArgs& a,
                                                    Pipeline& pipe_k, Pipeline& pipe_v,
                                                    PipelineState& write_k,
                                                    PipelineState& write_v, SharedStorage& smem,
                                                    uint64_t* q_full, int32_t m_block, int32_t h,
                                                    int32_t hk, int32_t b, int32_t n_min,
                                                    int32_t n_max) {
    using namespace cute;
    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(q_full, kQBytes);
    if (a.q_pack > 1) {
      // Packed GQA tile (launch.h, q_pack): tile rows [16 j, 16 j + 16) are queries
      // m_block R + (16 j mod R) onwards of query head h q_pack + 16 j / R (R = q_pack_rows, a
      // multiple of kBoxRows), one kBoxRows-row box per (j, swizzle panel) into the tile's
      // layout at an atom-aligned offset, as load_boxes places key boxes. Queries past seqlen_q
      // in a box that starts below it arrive as the copy engine's zeros; a box that would start
      // past it (R = 64 over at most 32 queries) reads the head's last box instead, as
      // load_boxes clamps keys past a cache: every box lies partly in the tensor, and the rows
      // it fills are never stored (the consumers store queries below seqlen_q only). All boxes
      // count their bytes: kQBytes.
      Tensor mQ = p.tma_qb.get_tma_tensor(p.shape_q);
      // (rows, panel, row box, panel index, head), addressed by box-aligned row and panel.
      Tensor gQ = local_tile(mQ(_, _, _, b), Shape<Int<kBoxRows>, Int<kPanel>>{}, make_coord(_, _));
      auto cq = p.tma_qb.get_slice(_0{});
      Tensor tQg = cq.partition_S(gQ);  // (TMA, TMA_R, TMA_P, row box, panel index, head)
      CUTE_UNROLL
      for (int j = 0; j < kBlockM / kBoxRows; ++j) {
        const QPackRow pr = qpack_row(a, kBoxRows * j);
        const int32_t qbox = min((m_block * a.q_pack_rows + pr.row) / kBoxRows, (a.seqlen_q - 1) / kBoxRows);
        const int32_t head = h * a.q_pack + pr.head;
        CUTE_UNROLL
        for (int c = 0; c < kPanels; ++c) {
          Tensor sQ = make_tensor(
              make_smem_ptr(smem.q.data() + SmemLayoutQ{}.layout_b()(kBoxRows * j, kPanel * c)),
              SmemLayoutKBox{});
          copy(p.tma_qb.with(*q_full, 0), tQg(_, _, _, qbox, c, head), cq.partition_D(sQ));
        }
      }
    } else {
      Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), SmemLayoutQ{});
      Tensor mQ = p.tma_q.get_tma_tensor(p.shape_q);
      Tensor gQ = local_tile(mQ(_, _, h, b), Shape<BM, HD>{}, make_coord(m_block, _0{}));  // (BM, D)
      auto cq = p.tma_q.get_slice(_0{});
      copy(p.tma_q.with(*q_full, 0), cq.partition_S(gQ), cq.partition_D(sQ));
    }
    if (a.page_boxes) {
      for (int32_t n = n_max - 1; n >= n_min; --n)
        load_boxes(p, a, pipe_k, pipe_v, write_k, write_v, smem, hk, b, n);
      return;
    }

    Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), SmemLayoutK{});
    Tensor sVt = make_tensor(make_smem_ptr(smem.v.data()), SmemLayoutVt{});
    Tensor mK = p.tma_k.get_tma_tensor(p.shape_k);
    Tensor mVt = p.tma_v.get_tma_tensor(p.shape_vt);
    // Key tiles of every batch entry (a page under a paged cache): (BN, D, n, entry).
    Tensor gK = local_tile(mK(_, _, hk, _), Shape<BN, HD>{}, make_coord(_, _0{}));
    Tensor gVt = local_tile(mVt(_, _, hk, _), Shape<HD, BN>{}, make_coord(_0{}, _));  // (D, BN, n, entry)
    auto ck = p.tma_k.get_slice(_0{});
    auto cv = p.tma_v.get_slice(_0{});
    Tensor tKgK = ck.partition_S(gK);  // (TMA, TMA_N, TMA_D, n, entry)
    Tensor tKsK = ck.partition_D(sK);  // (TMA, TMA_N, TMA_D, PIPE)
    Tensor tVgV = cv.partition_S(gVt);
    Tensor tVsV = cv.partition_D(sVt);

    auto page_of = [&](int32_t n) -> int64_t {
      return attn::cache_page(a.block_table, a.block_table_stride, b, int64_t(n) * kBlockN,
                              a.page_size, a.num_pages);
    };
    const bool paged = a.block_table != nullptr;
    int64_t page = paged && n_max > n_min ? page_of(n_max - 1) : 0;
    for (int32_t n = n_max - 1; n >= n_min; --n) {
      int32_t tile = n, entry = b;
      if (paged) {
        int64_t row;
        page_rows(a, page, (int64_t(n) * kBlockN) % a.page_size, &row, &entry);
        tile = int32_t(row / kBlockN);
        if (n > n_min) page = page_of(n - 1);  // in flight while the buffers are waited for
      }
      pipe_k.producer_acquire(write_k);
      copy(p.tma_k.with(*pipe_k.producer_get_barrier(write_k), 0), tKgK(_, _, _, tile, entry),
           tKsK(_, _, _, write_k.index()));
      ++write_k;
      pipe_v.producer_acquire(write_v);
      copy(p.tma_v.with(*pipe_v.producer_get_barrier(write_v), 0), tVgV(_, _, _, tile, entry),
           tVsV(_, _, _, write_v.index()));
      ++write_v;
    }
  }

  // Producer (one thread): the Q tile of (m_block, h, b) on `q_full`, then key/value tiles
  // n_max - 1 down to n_min (the order the consumers walk them), K(n) before V(n).
  // Varlen: b is 0 and the tiles start at the sequence's rows row0_q / row0_k of the packed
  // tensors (any row: the copy engine takes unaligned box coordinates); rows past the sequence
  // belong to the next one and are masked (keys) or not stored (queries) by the consumers.
  // `p` must live in the kernel's __grid_constant__ parameter (the copy engine reads the
  // descriptors from there). o_free (copy-engine output stores, kernel.cuh): the previous work
  // tile's output staging, which lies in the V ring, must have been read out (phase o_phase)
  // before the first V tile of this one is loaded; nullptr: nothing to wait for.
  __device__ __forceinline__ static void load_plain(const Params& p, Pipeline& pipe_k, Pipeline& pipe_v,
                                              PipelineState& write_k, PipelineState& write_v,
                                              SharedStorage& smem, uint64_t* q_full,
                                              int32_t m_block, int32_t h, int32_t hk, int32_t b,
                                              int32_t row0_q, int32_t row0_k,
                                              int32_t n_min, int32_t n_max,
                                              const uint64_t* o_free, int o_phase) {
    using namespace cute;
    Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), SmemLayoutQ{});
    Tensor sK = make_tensor(make_smem_ptr(smem.k.data()), SmemLayoutK{});
    Tensor sVt = make_tensor(make_smem_ptr(smem.v.data()), SmemLayoutVt{});
    Tensor mQ = p.tma_q.get_tma_tensor(p.shape_q);
    Tensor mK = p.tma_k.get_tma_tensor(p.shape_k);
    Tensor mVt = p.tma_v.get_tma_tensor(p.shape_vt);
    Tensor gQ = local_tile(domain_offset(make_coord(row0_q, _0{}), mQ(_, _, h, b)), Shape<BM, HD>{},
                           make_coord(m_block, _0{}));  // (BM, D)
    Tensor gK = local_tile(domain_offset(make_coord(row0_k, _0{}), mK(_, _, hk, b)), Shape<BN, HD>{},
                           make_coord(_, _0{}));  // (BN, D, n)
    auto gVt = [&] {
      if constexpr (kVtInSmem) {  // (BN, D, n), as K
        return local_tile(domain_offset(make_coord(row0_k, _0{}), mVt(_, _, hk, b)),
                          Shape<BN, HD>{}, make_coord(_, _0{}));
      } else {  // (D, BN, n)
        return local_tile(domain_offset(make_coord(_0{}, row0_k), mVt(_, _, hk, b)),
                          Shape<HD, BN>{}, make_coord(_0{}, _));
      }
    }();
    auto cq = p.tma_q.get_slice(_0{});
    auto ck = p.tma_k.get_slice(_0{});
    auto cv = p.tma_v.get_slice(_0{});
    Tensor tQgQ = cq.partition_S(gQ);
    Tensor tQsQ = cq.partition_D(sQ);
    Tensor tKgK = ck.partition_S(gK);  // (TMA, TMA_N, TMA_D, n)
    Tensor tKsK = ck.partition_D(sK);  // (TMA, TMA_N, TMA_D, PIPE)
    Tensor tVgV = cv.partition_S(gVt);
    auto tVsV = [&] {
      if constexpr (kVtInSmem) {
        return cv.partition_D(make_tensor(make_smem_ptr(smem.vraw.data()), SmemLayoutVraw{}));
      } else {
        return cv.partition_D(sVt);
      }
    }();

    cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(q_full, kQBytes);
    copy(p.tma_q.with(*q_full, 0), tQgQ, tQsQ);
    for (int32_t n = n_max - 1; n >= n_min; --n) {
      pipe_k.producer_acquire(write_k);
      copy(p.tma_k.with(*pipe_k.producer_get_barrier(write_k), 0), tKgK(_, _, _, n),
           tKsK(_, _, _, write_k.index()));
      ++write_k;
      if (o_free != nullptr && n == n_max - 1) cutlass::arch::ClusterBarrier::wait(o_free, o_phase);
      if constexpr (kVtInSmem) {  // into the raw ring (write_v counts its uses)
        const int st = write_v.index();
        cutlass::arch::ClusterBarrier::wait(&smem.raw_empty[st], write_v.phase());
        cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&smem.raw_full[st], kKVBytes);
        copy(p.tma_v.with(smem.raw_full[st], 0), tVgV(_, _, _, n), tVsV(_, _, _, st));
      } else {
        pipe_v.producer_acquire(write_v);
        copy(p.tma_v.with(*pipe_v.producer_get_barrier(write_v), 0), tVgV(_, _, _, n),
             tVsV(_, _, _, write_v.index()));
      }
      ++write_v;
    }
  }

  // The producer's loads of one work tile: load_cache where the kernel reads KV caches, else
  // load_plain (b: the sequence; varlen tensors are one batch entry, rows from row0_q/row0_k;
  // o_free / o_phase: see load_plain).
  __device__ __forceinline__ static void load(const Params& p, const AttnArgs& a,
                                              Pipeline& pipe_k, Pipeline& pipe_v,
                                              PipelineState& write_k, PipelineState& write_v,
                                              SharedStorage& smem, uint64_t* q_full,
                                              int32_t m_block, int32_t h, int32_t hk, int32_t b,
                                              int32_t row0_q, int32_t row0_k,
                                              int32_t n_min, int32_t n_max,
                                              const uint64_t* o_free, int o_phase) {
    if constexpr (kCache) {
      load_cache(p, a, pipe_k, pipe_v, write_k, write_v, smem, q_full, m_block, h, hk, b, n_min,
                 n_max);
    } else {
      load_plain(p, pipe_k, pipe_v, write_k, write_v, smem, q_full, m_block, h, hk,
                 a.cu_seqlens_q != nullptr ? 0 : b, row0_q, row0_k, n_min, n_max, o_free, o_phase);
    }
  }

  // kVtInSmem: one V tile transposed, raw ring stage -> V^T ring stage, by the kTransposers threads
  // (t = 0 .. 95). The V^T tile is (head_dim, keys) with the keys contiguous, and the keys of
  // each group of 16 in the order in which the P fragment holds them (softmax.cuh,
  // convert_fragment_fp8: position 4 q + e of a group holds key 2 q + (e & 1) + 8 (e >> 1)), so
  // that P goes from the S accumulators to the A operand without moving values between threads.
  // A warp's unit is one group of 16 keys over 128 head_dim columns (one raw column block):
  // lane l owns columns 4 l .. 4 l + 3. For each q it reads keys 2q, 2q + 1, 2q + 8, 2q + 9 at
  // those columns (four 4-byte loads; each load of the warp is one whole 128-byte row, every
  // bank once), turns the 4 x 4 bytes around with byte permutes, and after the four q holds the
  // group's 16 bytes for each of its 4 columns: four 16-byte stores. A lane first rotates its
  // words by rot = (l / 2) % 4 bytes, so that its j-th store goes to column 4 l + (j + rot) % 4:
  // then the 8 lanes of each store phase write 8 rows with distinct row % 8, i.e. 8 distinct
  // 16-byte bank groups of the swizzled V^T tile.
  // Offsets were checked against the CuTe layouts (SmemLayoutVraw, SmemLayoutVt) for every
  // element at both head dims; tests/gpu/test_attention_fp8.cpp checks the results.
  static constexpr int kRawColBlock = kBlockN * 128;  // raw tile: 128-byte column blocks
  __device__ __forceinline__ static void transpose_v_tile(uint32_t raw, uint32_t vt, int t) {
    static_assert(kVtInSmem && (kBlockN == 128 || kBlockN == 64) && (kHeadDim == 128 || kHeadDim == 256),
                  "fp8 tiles: 128 x 128 or 64 x 256");
    const int l = t & 31;
    const int rot = (l >> 1) & 3;
    const uint32_t sel = (0x32103210u >> (4 * rot)) & 0xffffu;  // byte i <- byte (i + rot) % 4
    constexpr int kGroups = kBlockN / 16, kUnits = kGroups * (kHeadDim / 128);
    for (int u = t >> 5; u < kUnits; u += kTransposers / 32) {
      const int c = u % kGroups, cb = u / kGroups;
      const uint32_t src = raw + uint32_t(cb * kRawColBlock + c * 2048 + 4 * (l & 3));
      uint32_t acc[4][4];  // [column j (rotated)][q]
      CUTE_UNROLL
      for (int q = 0; q < 4; ++q) {
        uint32_t w[4];
        CUTE_UNROLL
        for (int e = 0; e < 4; ++e) {
          const int r = 2 * q + (e & 1) + 8 * (e >> 1);  // row in the group; r % 8 = 2q + (e & 1)
          const uint32_t off = uint32_t(r * 128 + ((((l >> 2) ^ (2 * q + (e & 1))) & 7) << 4));
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(w[e]) : "r"(src + off));
          w[e] = __byte_perm(w[e], 0u, sel);
        }
        const uint32_t t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[2], w[3], 0x5140);
        const uint32_t u0 = __byte_perm(w[0], w[1], 0x7362), u1 = __byte_perm(w[2], w[3], 0x7362);
        acc[0][q] = __byte_perm(t0, t1, 0x5410);
        acc[1][q] = __byte_perm(t0, t1, 0x7632);
        acc[2][q] = __byte_perm(u0, u1, 0x5410);
        acc[3][q] = __byte_perm(u0, u1, 0x7632);
      }
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int d = cb * 128 + 4 * l + ((j + rot) & 3);  // V^T row (head_dim column)
        uint32_t off;
        if constexpr (kBlockN == 128) {  // 128-byte rows, chunk ^= row % 8
          off = uint32_t(d * 128 + ((c ^ (d & 7)) << 4));
        } else {  // 64-byte rows, chunk ^= (row / 2) % 4
          off = uint32_t(d * 64 + ((c ^ ((d >> 1) & 3)) << 4));
        }
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(vt + off), "r"(acc[j][0]),
                     "r"(acc[j][1]), "r"(acc[j][2]), "r"(acc[j][3])
                     : "memory");
      }
    }
  }

  // Issues one warpgroup GEMM C (+)= A B over all k-blocks of the operands (no wait).
  // kRegA: A is a register fragment (P), whose registers must be fenced as well.
  template <bool kZeroInit, bool kRegA, class TiledMma, class TA, class TB, class TC>
  __device__ __forceinline__ static void wg_gemm(TiledMma& mma, const TA& a, const TB& b, TC& c) {
    using namespace cute;
    if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
    warpgroup_fence_operand(c);
    warpgroup_arrive();
    if constexpr (kZeroInit) mma.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int kb = 0; kb < size<2>(a); ++kb) {
      cute::gemm(mma, a(_, _, kb), b(_, _, kb), c);
      mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(c);
    if constexpr (kRegA) warpgroup_fence_operand(const_cast<TA&>(a));
  }
};

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
