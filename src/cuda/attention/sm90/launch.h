// What the host side of the Hopper attention kernel hands to an instantiation: the
// AttentionProblem reduced to the values the device needs (softmax constants precomputed, the
// window bounds resolved) plus the persistent schedule. Plain C++ (no CuTe; CUTLASS's
// FastDivmod only), so the predicate in attention_sm90.cpp compiles with the host compiler.
#pragma once

#include <cuda_runtime_api.h>

#include <cutlass/fast_math.h>

#include <cstdint>

#include "flashkit/flashkit.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// Tiles: 128 query rows per CTA (two consumer warpgroups of 64 rows), key tiles of kBlockN
// rows streamed through a ring of kStages K and V buffers. head_dim 64 also has a kernel with
// three consumer warpgroups (kBlockM3 = 192 rows, 128-key tiles, as FlashAttention-3 runs
// head_dim 64), chosen per call by AttnArgs::block_m (attention_sm90.cpp). head_dim is the whole tile width.
// head_dim 128 takes 176-key tiles when nothing is masked (fewer softmax rounds per key, as
// FlashAttention-3 does), except short unmasked calls (AttnArgs::narrow: 128-key tiles, three
// stages, below), and 128-key tiles under causal/window masks (less waste on the diagonal);
// head_dim 256 takes 80 (the Q tile and two 80 x 256 stages of K and V fill
// shared memory: 224 KiB of the 227 KiB), or 64 over short keys (AttnArgs::keys64).
constexpr int kBlockM = 128;
constexpr int kBlockM3 = 192;
constexpr int block_n_for(int head_dim, bool masked) {
  return head_dim <= 96 ? 128 : head_dim <= 128 ? (masked ? 128 : 176) : head_dim <= 192 ? 112 : 80;
}
// head_dim 64, nothing masked, at least kLongKeys keys (the longest sequence under varlen):
// 192-key tiles. On the H200 they measured 1.06-1.07x at 8k and 16k keys, 1.00x at 2k, and
// 0.87-0.90x at 512 and 1k (benchmarks/RESULTS.md, "head_dim 64: 192-key tiles for long keys").
constexpr int kLongKeys = 4096;
constexpr int block_n_long_for(int head_dim) {
  return head_dim <= 64 ? 192 : block_n_for(head_dim, false);
}
// The kernel's head_dim for a problem's (a multiple of 8 up to 256): Q, K and V come in through
// the copy engine with zeros past the real head_dim (its out-of-bounds fill), so S = Q K^T is
// exact and the padded columns of O are zero and never stored.
constexpr int padded_head_dim(int64_t head_dim) {
  return head_dim <= 64 ? 64 : head_dim <= 96 ? 96 : head_dim <= 128 ? 128 : head_dim <= 192 ? 192 : 256;
}
// K/V ring depth of a kernel (Mainloop's kStages_ parameter defaults to this): three stages at
// head_dim 64, two above. The short unmasked head_dim 128 kernel (kNarrowStages, below) takes
// three; at 128 keys three were also tried for the masked kernel and lost (H200, session 34:
// causal 512 keys -4 to -6%), so it keeps two.
constexpr int stages_for(int head_dim) { return head_dim <= 64 ? 3 : 2; }
// Unmasked head_dim 128 calls of more than kBlockM query rows over at most kNarrowMaxKeys keys
// (the longest sequences under varlen; not over KV caches) run 128-key tiles through three K/V
// stages (Q and three K and V tiles: 224 KiB, as cuDNN 9.19 runs head_dim 128 on this GPU:
// 128-key tiles, 227 KiB of shared memory) instead of 176-key tiles through two: no partial,
// masked key tile at 512 or 1024 keys, and one more tile in flight. H200, bf16
// (benchmarks/RESULTS.md, "Short unmasked head_dim 128 calls on 128-key tiles, three stages",
// session 34): +5.4% at 512 keys, +0.9% at 1024. In the first build's call (every unmasked call
// on these tiles, against a build 1-2% slower than main) even at 2048 keys and -1.3% to -4.1%
// from 4096 on, hence the bound. Calls of at most kBlockM query rows (decode, packed GQA
// decode, split-KV's inner calls) are untimed on them and keep 176-key tiles. This kernel sets
// head_dim 128's shared-memory need (smem_bytes_for: 231,424 of the 232,448 bytes Hopper allows).
constexpr int kNarrowStages = 3;
constexpr int64_t kNarrowMaxKeys = 1024;
// The copy engine wants a legal stride even along a dimension it never advances (extent 1):
// 16 bytes, in elements of elem_bytes.
constexpr int64_t tma_stride(int64_t stride, int64_t extent, int64_t elem_bytes = 2) {
  return extent <= 1 ? 16 / elem_bytes : stride;
}
// The fp8 kernel (cuda.sm90.attention_fp8, attention_fp8_sm90.cu): 128-key tiles at head_dim
// 128, 64 at 256 (its O accumulator takes 128 registers a thread), two K/V stages. head_dim 64
// is left to the dequantising path: an fp8 kernel of this shape measured 0.73-0.93x flashkit's
// bf16 call there (whose head_dim 64 kernel runs three consumer warpgroups), slower than
// dequantising first. 192-key tiles at head_dim 128 (FlashAttention-3's width with V
// transposed in memory) measured +2.4-2.6% at 8k / 16k keys unmasked and 1.7-10% slower at 512
// to 4k keys, and ptxas spills two values inside their key-tile loop (tests/sass/check_sass.py,
// rule 2): not built (H200, session 41: RESULTS.md, "FP8 attention on the fp8 tensor cores").
constexpr int kFp8Stages = 2;
constexpr int fp8_block_n(int head_dim) { return head_dim <= 128 ? 128 : 64; }
// head_dim 256 transposes V tiles in shared memory (as head_dim 128 does) where each key is
// read by at most this many query rows (counted per 128-row query tile: attention_sm90.cpp,
// fp8_reads_per_key), and otherwise reads a V^T copy that a pass writes first
// (fp8_vt_in_kernel): the transposition's cost grows with the key tiles the work tiles visit,
// the pass's with the keys. H200, session 44 (RESULTS.md, "head_dim 256: V transposed in shared
// memory where few query rows read each key"): 512 keys 14-20% faster (512 and 320 reads a
// key), 1k causal 7.5% faster (576), 1k unmasked 1.4% and 1.5k causal 1% slower (1024 and
// 832), 2k-4k 5-24% slower.
constexpr double kFp8VtInKernelMaxReads = 640.0;
// head_dim 256: keys per row of its V^T copy (a pass before the kernel writes it): seqlen_k
// rounded up to the 16-key groups of the permutation (16 bytes: the copy engine's stride rule as
// well), and the copy's bytes.
constexpr int64_t fp8_vt_keys(int64_t seqlen_k) { return (seqlen_k + 15) / 16 * 16; }
constexpr uint64_t fp8_vt_bytes(int64_t batch, int64_t nheads_k, int64_t head_dim,
                                int64_t seqlen_k) {
  return uint64_t(batch) * uint64_t(nheads_k) * uint64_t(head_dim) * uint64_t(fp8_vt_keys(seqlen_k));
}
// V transposed in shared memory (head_dim 128; head_dim 256 with few query rows per key): V is
// read by the copy engine as K is; a v whose base or strides break the 16-byte rule is first
// copied into a contiguous scratch (batch, seqlen_k, nheads_k, head_dim) of these bytes.
constexpr uint64_t fp8_v_copy_bytes(int64_t batch, int64_t nheads_k, int64_t head_dim,
                                    int64_t seqlen_k) {
  return uint64_t(batch) * uint64_t(seqlen_k) * uint64_t(nheads_k) * uint64_t(head_dim);
}
// Shared memory of one CTA: Q, the K and V rings, barriers (rounded up generously; the
// kernel's own static_assert checks its exact size stays below this).
constexpr int64_t smem_bytes_for(int head_dim, int block_n, int block_m = kBlockM,
                                 int stages = 0) {
  return (int64_t(block_m) * head_dim +
          2 * int64_t(stages > 0 ? stages : stages_for(head_dim)) * block_n * head_dim) * 2 +
         2048;
}
constexpr int64_t smem_bytes_for(int head_dim) {
  const int64_t plain = smem_bytes_for(head_dim, block_n_for(head_dim, false));
  const int64_t masked = smem_bytes_for(head_dim, block_n_for(head_dim, true));
  const int64_t longer = smem_bytes_for(head_dim, block_n_long_for(head_dim));
  const int64_t three = head_dim <= 64 ? smem_bytes_for(head_dim, 128, kBlockM3) : 0;
  const int64_t narrow = head_dim == 128 ? smem_bytes_for(head_dim, 128, kBlockM, kNarrowStages) : 0;
  const int64_t two = plain > masked ? (plain > narrow ? plain : narrow) : (masked > narrow ? masked : narrow);
  const int64_t most = two > longer ? two : longer;
  return most > three ? most : three;
}

// The most sequences a varlen causal call may have to take its tiles in pairs (AttnArgs::pairs):
// the kernel keeps a prefix over them in shared memory (kernel.cuh).
constexpr int kSeqPairsMaxBatch = 128;

struct AttnArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  float* lse = nullptr;  // nullptr: not requested

  // Element strides (head_dim contiguous). The ones of extent-1 dimensions are replaced by a
  // legal dummy (never used) so that the copy engine's descriptors encode.
  int64_t q_batch_stride = 0, q_row_stride = 0, q_head_stride = 0;
  int64_t k_batch_stride = 0, k_row_stride = 0, k_head_stride = 0;
  int64_t v_batch_stride = 0, v_row_stride = 0, v_head_stride = 0;
  int64_t o_batch_stride = 0, o_row_stride = 0, o_head_stride = 0;
  int64_t lse_batch_stride = 0, lse_head_stride = 0, lse_row_stride = 1;

  // Varlen: sequence b is rows [cu_seqlens_q[b], cu_seqlens_q[b + 1]) of q (device memory);
  // nullptr in the batched form.
  const int32_t* cu_seqlens_q = nullptr;
  const int32_t* cu_seqlens_k = nullptr;

  int32_t batch = 0, nheads = 0, nheads_k = 0, group = 1;  // group = nheads / nheads_k
  int32_t seqlen_q = 0, seqlen_k = 0;  // varlen: the longest sequences
  // The copy engine's view: rows of q and of k/v per batch entry (varlen: total_q / total_k in
  // one batch entry; batched: seqlen_q / seqlen_k in `batch` entries; a paged cache: see
  // pages_merged), and the k/v entries (tma_batch_k, below: tma_batch, or the pages, or 1).
  int32_t tma_rows_q = 0, tma_rows_k = 0, tma_batch = 0;
  int32_t head_dim = 0;
  // Window, bottom-right aligned, causal folded in as right = 0; -1 = unbounded.
  int32_t window_left = -1, window_right = -1;

  // Base-2 logits: x = s * scale_log2, or with softcap x = tanh(s * cap_pre) * cap_post.
  int32_t softcap = 0;
  float scale_log2 = 0.0f, cap_pre = 0.0f, cap_post = 0.0f;

  // Persistent schedule: tiles (m_block, head, batch), `grid` CTAs walking them round robin.
  int32_t num_m_blocks = 0;
  int64_t total_tiles = 0;
  int32_t longest_first = 0;  // masked problems: the longest query tiles of every head first
  int32_t grid = 1;
  // Intra-warpgroup overlap of the two GEMMs and the softmax (FLASHKIT_SM90_ATTENTION_OVERLAP=0
  // turns it off, for diagnosis).
  int32_t overlap = 1;
  // Inter-warpgroup ping-pong: the consumer warpgroups take turns (round robin) issuing their
  // GEMMs, so one's softmax runs while another's GEMMs occupy the tensor cores
  // (FLASHKIT_SM90_ATTENTION_PINGPONG=0 turns it off, for diagnosis).
  int32_t pingpong = 1;
  // Masked problems: the tile order walks the heads in sections of `section_heads` (batch,
  // head) pairs whose keys and values fit in about half the L2, longest query tiles first
  // within each section (0: one section of every head). See attention_sm90.cpp for when.
  int32_t section_heads = 0;

  // Members added for KV caches (0.5.1) come last, so that the plain kernel's parameter block
  // keeps its layout (and ptxas its register allocation: a reordered block measured 3% slower
  // at head_dim 128, unmasked).
  int32_t tma_batch_k = 0;
  // KV cache (batched form only; AttentionProblem::seqused_k / block_table). seqused_k: the
  // keys of sequence b, clamped to [0, seqlen_k] (nullptr: seqlen_k). block_table: key n of
  // sequence b lies on page block_table[b * block_table_stride + n / page_size] (clamped to
  // [0, num_pages - 1]), at row n % page_size of it; page_size is a multiple of kBlockN (a key
  // tile never straddles two pages) or of 16 (page_boxes). The copy engine sees the pool either
  // as one sequence of rows (pages_merged = 1: page p starts at row p * page_size, tma_rows_k
  // rows in all, so a partial last page ends where the memory does) or as num_pages batch
  // entries of page_size rows (pages_merged = 0: pages further apart than page_size rows).
  const int32_t* seqused_k = nullptr;
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int32_t page_size = 0, num_pages = 0, pages_merged = 0;
  // Pages that are not a multiple of kBlockN (but of 16 keys): each key tile arrives as 16-row
  // boxes, each from its own page (mainloop.cuh, load_boxes).
  int32_t page_boxes = 0;
  // Output rows written as 16-byte pieces after a transpose across each quad (epilogue.cuh;
  // FLASHKIT_SM90_ATTENTION_WIDE_STORE=0 writes the 4-byte pairs of the fragment, for diagnosis).
  // Legal wherever the kernel runs: out is 16-byte aligned and its strides multiples of 8.
  int32_t o_wide = 1;
  // Output tiles written by the copy engine from shared memory (kernel.cuh, kTmaStore: the
  // plain kernel at head_dim <= 128, batched problems), only where
  // FLASHKIT_SM90_ATTENTION_TMA_STORE=1 asks for it.
  int32_t o_tma = 0;
  // Causal calls over long keys on the unmasked key-tile width (launch.cuh; see
  // attention_sm90.cpp for when).
  int32_t wide_masked = 0;
  // Query rows per work tile: kBlockM, or kBlockM3 (head_dim 64, plain kernel: three consumer
  // warpgroups over 128-key tiles). num_m_blocks counts tiles of this height.
  int32_t block_m = kBlockM;
  // The tile numbering's divisions (tile_scheduler.cuh) as multiply-high and shift, with the
  // multipliers computed here on the host (set_index_divisors), where every dividend and
  // divisor fits in 31 bits (index32 = 1; else the kernel divides in 64 bits). Each was a
  // 64-bit division of ~100 instructions on the consumers' path between two work tiles; H200,
  // bf16, 18 cells of 512-4096 keys: median +2.1%, +4-7% on short causal calls (RESULTS.md,
  // "Tile numbering by multiply-high divisors", session 22).
  int32_t index32 = 0;
  cutlass::FastDivmod div_m_blocks;   // num_m_blocks
  cutlass::FastDivmod div_bh;         // batch * nheads
  cutlass::FastDivmod div_heads;      // nheads
  cutlass::FastDivmod div_group;      // group
  cutlass::FastDivmod div_sec_tiles;  // section_heads * num_m_blocks
  cutlass::FastDivmod div_sec;        // section_heads
  cutlass::FastDivmod div_sec_last;   // the last section's width (batch * nheads - its first)
  // head_dim 256, plain kernel: 64-key tiles instead of 80 (attention_sm90.cpp, when).
  int32_t keys64 = 0;
  // head_dim 128, nothing masked: 128-key tiles through kNarrowStages K/V stages instead of
  // 176-key tiles (attention_sm90.cpp, when).
  int32_t narrow = 0;
  // Calls without a left window mask their partial key tiles by the upper bound alone
  // (softmax.cuh, mask_hi; FLASHKIT_SM90_ATTENTION_HI_MASK=0 takes the two-sided mask, for
  // diagnosis and A/B).
  int32_t hi_mask = 1;
  // Causal calls (no left window, batched, not over a KV cache) with at least a wave of pairs:
  // the work tiles numbered in pairs of equal work, query tile i of a (batch, head) with tile
  // num_m_blocks - 1 - i, the pairs of a head consecutive, each CTA taking both tiles of a pair
  // one wave apart (tile_scheduler.cuh; attention_sm90.cpp for when). total_tiles then counts
  // positions: 2 ceil(num_pairs / grid) grid, the holes empty tiles.
  // Varlen causal calls of at most kSeqPairsMaxBatch sequences take pairs per sequence, laid
  // out by the kernel from cu_seqlens_q (pairs with cu_seqlens_q set;
  // tile_scheduler.cuh, seq_prefix); total_tiles and num_pairs then bound what the kernel
  // counts (every sequence as long as seqlen_q).
  int32_t pairs = 0;
  int32_t pairs_per_bh = 0;  // ceil(num_m_blocks / 2)
  int64_t num_pairs = 0;     // batch * nheads * pairs_per_bh
  cutlass::FastDivmod div_grid;   // grid (pairs)
  cutlass::FastDivmod div_pairs;  // pairs_per_bh (pairs)
  // Packed GQA tiles (read by the KV-cache instantiation only, which batched calls then run:
  // launch.cuh; attention_sm90.cpp, when): a 128-row work
  // tile holds q_pack query heads of one GQA group, q_pack_rows = kBlockM / q_pack rows each,
  // head-major: tile rows [g R, (g + 1) R) are queries m_block R .. m_block R + R - 1 of query
  // head h q_pack + g (R = q_pack_rows = 1 << q_pack_shift; qpack_row below). nheads and group
  // above then count packed heads (the real ones divided by q_pack) and num_m_blocks tiles of
  // R queries. Off: 1, kBlockM, 7. (FlashAttention-3 packs the query heads of a group the
  // same way for few queries per group, its PackGQA; flashkit's one-query decode does it by a
  // stride rewrite, attention_api.cpp.)
  int32_t q_pack = 1;
  int32_t q_pack_rows = kBlockM;
  int32_t q_pack_shift = 7;
};

// Packed GQA tiles: the query head (offset from the packed head's first, h q_pack) and the
// query row (offset from the work tile's first, m_block R) of tile row `row` (0 .. kBlockM - 1).
// Off (q_pack_shift 7, q_pack_rows 128): head offset 0, row `row`.
struct QPackRow {
  int32_t head, row;
};
__host__ __device__ __forceinline__ QPackRow qpack_row(const AttnArgs& a, int row) {
  return {row >> a.q_pack_shift, row & (a.q_pack_rows - 1)};
}

// Fills AttnArgs::index32 and the div_* members from batch, nheads, group, num_m_blocks,
// total_tiles, section_heads and (pairs) grid and pairs_per_bh (call after those are final).
inline void set_index_divisors(AttnArgs& a) {
  constexpr int64_t kMax = (int64_t(1) << 31) - 1;
  const int64_t bh = int64_t(a.batch) * a.nheads;
  const int64_t sec = a.section_heads > 0 ? a.section_heads : 1;
  const int64_t sec_tiles = sec * a.num_m_blocks;
  a.index32 = a.total_tiles <= kMax && bh <= kMax && sec_tiles <= kMax && a.num_m_blocks > 0 &&
                      a.nheads > 0 && a.group > 0 && bh > 0
                  ? 1
                  : 0;
  if (!a.index32) return;
  a.div_m_blocks = cutlass::FastDivmod(a.num_m_blocks);
  a.div_bh = cutlass::FastDivmod(int(bh));
  a.div_heads = cutlass::FastDivmod(a.nheads);
  a.div_group = cutlass::FastDivmod(a.group);
  a.div_sec_tiles = cutlass::FastDivmod(int(sec_tiles));
  a.div_sec = cutlass::FastDivmod(int(sec));
  const int64_t last_width = bh - ((bh - 1) / sec) * sec;  // 1 .. sec
  a.div_sec_last = cutlass::FastDivmod(int(last_width));
  if (a.pairs) {
    a.div_grid = cutlass::FastDivmod(a.grid);
    a.div_pairs = cutlass::FastDivmod(a.pairs_per_bh);
  }
}

// One launcher per head dim (launch_hdim*.cu), each instantiating fp16 and bf16.
fk_status_t launch_hdim64(const AttnArgs& a, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim96(const AttnArgs& a, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim128(const AttnArgs& a, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim192(const AttnArgs& a, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim256(const AttnArgs& a, bool bf16, cudaStream_t stream);

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
