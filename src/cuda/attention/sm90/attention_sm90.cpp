// Entry point and predicate of the Hopper attention kernel ("cuda.sm90.attention"): which
// problems it takes, and the translation of an AttentionProblem into its arguments; also the
// predicate and workspace size of its fp8 instantiation ("cuda.sm90.attention_fp8", whose entry
// point and V^T pass are in attention_fp8_sm90.cu), which share those rules.
//
// It takes fp16 and bf16; head_dim 64, 96, 128, 192 or 256 natively and every other multiple
// of 8 up to 256 padded to the next of those (launch.h, padded_head_dim); the batched form
// (seqlen_k >= 1) and the varlen form (cu_seqlens; sequences of length 0 included); KV caches
// (fk_attention_kvcache_forward: cache_seqlens, and pages of a multiple of 16 keys, read by
// the copy engine a key tile or a 16-row box at a time; cache_ok below); MHA/GQA/MQA,
// causal, sliding window, softcap and LSE; provided the copy engine can read Q, K and V: 16-byte
// aligned base pointers and row, head and batch strides that are multiples of 8 elements (a
// stride whose extent is 1 is never used and is not checked; varlen has no batch stride), below
// 2^40 bytes; the output needs the same alignment (16-byte stores, or the copy engine). Everything else is
// declined and the next row (cuda.sm80.attention) takes it.
#include "cuda/attention/sm90/attention_sm90.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "core/backend.h"
#include "cuda/attention/sm90/launch.h"
#include "cuda/attention/sm90/tile_pairs.h"
#include "cuda/attention/common/logits.h"
#include "cuda/attention/common/strides.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {
namespace {

constexpr int64_t kMaxLen = int64_t(1) << 30;
constexpr int64_t kMaxTmaStride = int64_t(1) << 39;  // elements (2^40 bytes)

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }
// A stride the copy engine takes: a multiple of 16 bytes (elements of elem_bytes).
bool stride_ok(int64_t stride, int64_t extent, int64_t elem_bytes = 2) {
  return extent <= 1 || (stride > 0 && stride % (16 / elem_bytes) == 0 && stride < kMaxTmaStride);
}

// Diagnostic overrides, each read once per process: FLASHKIT_SM90_ATTENTION_OVERLAP=0 runs the
// consumers' plain S / softmax / P V order instead of the overlapped one;
// FLASHKIT_SM90_ATTENTION_PINGPONG=0 lets the consumer warpgroups issue GEMMs at will;
// FLASHKIT_SM90_ATTENTION_SECTIONS=0 walks masked problems longest tile first over all heads at
// once; FLASHKIT_SM90_ATTENTION_PAIRS=0 keeps causal calls in that order instead of pairs;
// FLASHKIT_SM90_ATTENTION_WIDE_STORE=0 writes the output as 4-byte pairs;
// FLASHKIT_SM90_ATTENTION_TMA_STORE=1 has the copy engine write it from shared memory at
// head_dim <= 128 (kernel.cuh; measured no faster than the register stores, slower at head_dim
// 128, so off by default); FLASHKIT_SM90_ATTENTION_CAUSAL_WIDE=0 keeps long causal calls on the
// masked key-tile width; FLASHKIT_SM90_ATTENTION_WG3=0 keeps head_dim 64 on two consumer
// warpgroups (128-row tiles), =2 gives it three (192-row tiles) also in short masked calls;
// FLASHKIT_SM90_ATTENTION_INDEX64=1 numbers the work tiles with 64-bit divisions, the path of
// numberings past 31 bits (tile_scheduler.cuh), so that the tests cover it;
// FLASHKIT_SM90_ATTENTION_NARROW=0 keeps short unmasked head_dim 128 calls on 176-key tiles, =2
// puts every unmasked head_dim 128 call not over a KV cache (any length, any number of query
// rows) on the 128-key, three-stage tiles (launch.h); FLASHKIT_SM90_ATTENTION_HI_MASK=0 masks
// every partial key tile by both bounds (softmax.cuh); FLASHKIT_SM90_FP8_VT=0 gives every fp8
// head_dim 256 call the V^T pass, =2 the transposition in shared memory (fp8_vt_in_kernel);
// FLASHKIT_SM90_ATTENTION_QPACK=0 keeps batched and KV-cache calls of a few query rows on one
// head per work tile instead of packed GQA tiles, =2 packs them also where one head a tile fits
// one wave (build_args; NARROW=2 and KEYS64=2 do not reach the packed calls, which run the
// KV-cache instantiation).
bool env_flag(const char* name) {
  const char* e = std::getenv(name);
  return !(e != nullptr && e[0] == '0');
}
bool env_opt_in(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] == '1';
}
// '0' -> 0, '2' -> 2, anything else (or unset) -> 1, the table's choice.
int env_mode(const char* name) {
  const char* e = std::getenv(name);
  return e != nullptr && e[0] == '0' ? 0 : e != nullptr && e[0] == '2' ? 2 : 1;
}
struct Flags {
  bool overlap = env_flag("FLASHKIT_SM90_ATTENTION_OVERLAP");
  bool pingpong = env_flag("FLASHKIT_SM90_ATTENTION_PINGPONG");
  bool sections = env_flag("FLASHKIT_SM90_ATTENTION_SECTIONS");
  bool pairs = env_flag("FLASHKIT_SM90_ATTENTION_PAIRS");
  bool wide_store = env_flag("FLASHKIT_SM90_ATTENTION_WIDE_STORE");
  bool tma_store = env_opt_in("FLASHKIT_SM90_ATTENTION_TMA_STORE");
  bool causal_wide = env_flag("FLASHKIT_SM90_ATTENTION_CAUSAL_WIDE");
  int wg3 = env_mode("FLASHKIT_SM90_ATTENTION_WG3");
  bool index64 = env_opt_in("FLASHKIT_SM90_ATTENTION_INDEX64");
  int keys64 = env_mode("FLASHKIT_SM90_ATTENTION_KEYS64");
  int narrow = env_mode("FLASHKIT_SM90_ATTENTION_NARROW");
  bool hi_mask = env_flag("FLASHKIT_SM90_ATTENTION_HI_MASK");
  int qpack = env_mode("FLASHKIT_SM90_ATTENTION_QPACK");
  int fp8_vt = env_mode("FLASHKIT_SM90_FP8_VT");
};
const Flags& flags() {
  static const Flags f;
  return f;
}

// A paged cache as the copy engine sees it: one sequence of rows where pages sit page_size rows
// apart (a contiguous pool, and split-KV's 128-row virtual pages of a contiguous cache, whose
// last page may be partial: total_k rows exist), else num_pages batch entries of page_size
// rows, which needs every page whole (num_pages x page_size <= total_k).
bool pages_merged(const AttentionProblem& p) {
  return p.k_batch_stride == p.page_size * p.k_row_stride &&
         p.v_batch_stride == p.page_size * p.v_row_stride && p.total_k <= kMaxLen;
}

// Key-tile width over a paged cache: the masked one (128 keys at head_dim <= 128, 112 at 192, 80
// at 256), which the launch takes for pages.
int64_t paged_block_n(const AttentionProblem& p) {
  return block_n_for(padded_head_dim(p.head_dim), true);
}

// KV caches (batched form): any seqused_k; a block_table whose pages are a multiple of 16 keys
// (those that are not a multiple of the key tile arrive in 16-row boxes), int32 table indices
// and copy-engine coordinates.
bool cache_ok(const DeviceCaps& caps, const AttentionProblem& p) {
  if (p.varlen) return false;
  if (p.block_table == nullptr) return true;
  if (p.page_size < 16 || p.page_size % 16 != 0 || p.page_size > kMaxLen) return false;
  // Decode-sized calls (at most 16 query rows per KV head after the GQA packing) over pages
  // that are not a multiple of the key tile are left to the sm80-class kernel wherever it takes
  // them: on its decode tiles the 16-row boxes lost (32 copies per 128-key tile at head_dim 128
  // bound the stream; H200, bf16, GQA 32/8, pages of 16: 251 us vs 147 us at 64 x 2k keys, 97
  // vs 101 at 1 x 32k); at head_dim 192/256 (its 128-row tiles) the comparison is not timed,
  // so those stay where 0.5.0 ran them. The boxes take the rest (prefill, and pages the sm80
  // row declines, which otherwise fall to the generic kernel).
  if (p.page_size % paged_block_n(p) != 0 && p.seqlen_q <= 16 && sm80::attention_supported(caps, p))
    return false;
  if (p.num_pages < 1 || p.num_pages > kMaxLen || p.block_table_stride < 0) return false;
  return pages_merged(p) || p.num_pages * p.page_size <= p.total_k;
}

// What both entry points need: a CUDA problem on compute capability 9.0, sizes the kernel's
// 32-bit tile numbering and coordinates hold, whole GQA groups, a finite softmax_scale.
bool hopper_problem_ok(const DeviceCaps& caps, const AttentionProblem& p) {
  if (p.device != Device::Cuda) return false;
  if (caps.cc_major != 9 || caps.cc_minor != 0) return false;
  if (p.seqlen_q > kMaxLen || p.seqlen_k > kMaxLen || p.nheads > kMaxLen || p.batch > kMaxLen)
    return false;
  if (p.nheads_k <= 0 || p.nheads % p.nheads_k != 0) return false;
  if (!std::isfinite(p.softmax_scale)) return false;
  const int64_t m_blocks = (p.seqlen_q + kBlockM - 1) / kBlockM;
  return m_blocks * p.nheads * p.batch <= INT32_MAX;
}

}  // namespace

bool attention_supported(const DeviceCaps& caps, const AttentionProblem& p) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  if (!hopper_problem_ok(caps, p)) return false;
  if (attention_uses_kvcache(p) && !cache_ok(caps, p)) return false;
  if (p.head_dim < 8 || p.head_dim > 256 || p.head_dim % 8 != 0) return false;
  if (smem_bytes_for(padded_head_dim(p.head_dim)) > caps.smem_per_block_optin) return false;
  if (p.varlen) {
    if (p.cu_seqlens_q == nullptr || p.cu_seqlens_k == nullptr) return false;
    if (p.total_q > kMaxLen || p.total_k > kMaxLen || p.total_k < 1) return false;
  } else if (p.seqlen_k < 1 || p.seqlen_q < 1) {
    return false;
  }
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.out)) return false;
  return attn::all_strides(p, [](int64_t stride, int64_t extent) { return stride_ok(stride, extent); });
}

// The fp8 kernel (attention_fp8_sm90.cu): batched e4m3 calls at head_dim 128 or 256 without
// softcap and with softmax_scale > 0; q and k read by the copy engine from the caller's tensors
// (16-byte rule for 1-byte elements), out written as by the 16-bit kernel; v at head_dim 128 as
// well when it keeps that rule (fp8_v_direct), else from a contiguous copy made first, and at
// head_dim 256 the same where few query rows read each key (fp8_vt_in_kernel), else by the
// V^T pass; both passes take any strides, and their grids hold batch and
// nheads_k up to 65535.
bool attention_fp8_supported(const DeviceCaps& caps, const AttentionProblem& p) {
  if (p.dtype != DType::F8E4M3 || !hopper_problem_ok(caps, p)) return false;
  if (p.varlen || attention_uses_kvcache(p)) return false;
  if (p.head_dim != 128 && p.head_dim != 256) return false;
  if (p.softcap != 0.0f || !(p.softmax_scale > 0.0f)) return false;
  if (p.seqlen_q < 1 || p.seqlen_k < 1 || p.batch < 1) return false;
  if (p.nheads_k > 65535 || p.batch > 65535) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.out)) return false;
  const int d = int(p.head_dim);
  if (smem_bytes_for(d, fp8_block_n(d), kBlockM, kFp8Stages) > caps.smem_per_block_optin)
    return false;
  return stride_ok(p.q_row_stride, p.seqlen_q, 1) && stride_ok(p.q_head_stride, p.nheads, 1) &&
         stride_ok(p.q_batch_stride, p.batch, 1) && stride_ok(p.k_row_stride, p.seqlen_k, 1) &&
         stride_ok(p.k_head_stride, p.nheads_k, 1) && stride_ok(p.k_batch_stride, p.batch, 1) &&
         stride_ok(p.o_row_stride, p.seqlen_q) && stride_ok(p.o_head_stride, p.nheads) &&
         stride_ok(p.o_batch_stride, p.batch);
}

bool fp8_v_direct(const AttentionProblem& p) {
  return aligned16(p.v) && stride_ok(p.v_row_stride, p.seqlen_k, 1) &&
         stride_ok(p.v_head_stride, p.nheads_k, 1) && stride_ok(p.v_batch_stride, p.batch, 1);
}

namespace {
// How many query rows read each key of a kv head, counted the way the kernel reads keys: each
// 128-row query tile reads the keys from its first row's lowest to its last row's highest
// visible one under the bottom-right aligned window (causal included), so R = (nheads /
// nheads_k) x 128 x (those keys summed over the query tiles) / seqlen_k. Summed over at most
// 64 tiles, at the centres of equal bands, then scaled: a heuristic's input, not an exact count.
double fp8_reads_per_key(const AttentionProblem& p) {
  const int64_t sq = p.seqlen_q, sk = p.seqlen_k, off = sk - sq;
  if (sq < 1 || sk < 1 || p.nheads_k < 1) return 0.0;
  const int64_t tiles = (sq + kBlockM - 1) / kBlockM;
  const int64_t n = std::min<int64_t>(tiles, 64);
  double keys = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t t = n == tiles ? j : (2 * j + 1) * tiles / (2 * n);
    const int64_t first = t * kBlockM, last = std::min(sq - 1, first + kBlockM - 1);
    const int64_t hi = p.window_right < 0 ? sk - 1 : std::min(sk - 1, last + off + p.window_right);
    const int64_t lo = p.window_left < 0 ? 0 : std::max<int64_t>(0, first + off - p.window_left);
    keys += double(std::max<int64_t>(0, hi - lo + 1));
  }
  return double(p.nheads / p.nheads_k) * double(kBlockM) * keys * (double(tiles) / double(n)) /
         double(sk);
}
}  // namespace

bool fp8_vt_in_kernel(const AttentionProblem& p) {
  if (p.head_dim != 256) return true;
  const int mode = flags().fp8_vt;
  return mode == 2 || (mode == 1 && fp8_reads_per_key(p) <= kFp8VtInKernelMaxReads);
}

uint64_t attention_fp8_workspace(const AttentionProblem& p) {
  if (!fp8_vt_in_kernel(p)) return workspace_for({fp8_vt_bytes(p.batch, p.nheads_k, p.head_dim, p.seqlen_k)});
  if (fp8_v_direct(p)) return 0;
  return workspace_for({fp8_v_copy_bytes(p.batch, p.nheads_k, p.head_dim, p.seqlen_k)});
}

fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p) {
  if (p.batch <= 0 || p.nheads <= 0 || p.seqlen_q <= 0) return FK_SUCCESS;
  if (!attention_supported(*ctx.caps, p)) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.attention: problem outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  const AttnArgs a = build_args(ctx, p);
  const bool bf16 = p.dtype == DType::BF16;
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  switch (padded_head_dim(p.head_dim)) {
    case 64: return launch_hdim64(a, bf16, stream);
    case 96: return launch_hdim96(a, bf16, stream);
    case 128: return launch_hdim128(a, bf16, stream);
    case 192: return launch_hdim192(a, bf16, stream);
    default: return launch_hdim256(a, bf16, stream);
  }
}

int32_t gqa_pack(const DeviceCaps& caps, const AttentionProblem& p, bool any_wave) {
  // build_args' comment below says when and why.
  if (p.varlen || (p.dtype != DType::F16 && p.dtype != DType::BF16) || flags().qpack == 0)
    return 1;
  if (p.nheads_k <= 0 || p.nheads % p.nheads_k != 0 || p.seqlen_q <= 0 || p.seqlen_q > kBlockM / 2)
    return 1;
  const int64_t group = p.nheads / p.nheads_k;
  if (group <= 1) return 1;
  if (!any_wave && flags().qpack != 2 &&
      int64_t(p.batch) * p.nheads <= std::max<int64_t>(1, caps.sm_count))
    return 1;
  int32_t rows = 16;
  while (rows < p.seqlen_q) rows *= 2;
  int32_t pack = kBlockM / rows;
  while (pack > 1 && group % pack != 0) pack /= 2;
  return pack;
}

int64_t split_heads_per_tile(const DeviceCaps& caps, const AttentionProblem& p) {
  return attention_uses_kvcache(p) ? gqa_pack(caps, p, true) : 1;
}

AttnArgs build_args(const ExecContext& ctx, const AttentionProblem& p) {
  const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;
  const int64_t batches = p.varlen ? 1 : p.batch;
  const bool paged = p.block_table != nullptr;
  const bool merged = paged && pages_merged(p);
  // K/V as the copy engine sees them: rows per batch entry and entries (launch.h).
  const int64_t rows_k = merged ? p.total_k : paged ? p.page_size : p.varlen ? p.total_k : p.seqlen_k;
  const int64_t batches_k = merged ? 1 : paged ? p.num_pages : batches;
  AttnArgs a;
  const int64_t eb = dtype_bytes(p.dtype);  // q, k, v: 16-bit, or e4m3 (the fp8 kernel)
  a.q = p.q;
  a.k = p.k;
  a.v = p.v;
  a.out = p.out;
  a.lse = p.lse;
  a.q_batch_stride = tma_stride(p.q_batch_stride, batches, eb);
  a.q_row_stride = tma_stride(p.q_row_stride, rows_q, eb);
  a.q_head_stride = tma_stride(p.q_head_stride, p.nheads, eb);
  a.k_batch_stride = tma_stride(p.k_batch_stride, batches_k, eb);
  a.k_row_stride = tma_stride(p.k_row_stride, rows_k, eb);
  a.k_head_stride = tma_stride(p.k_head_stride, p.nheads_k, eb);
  a.v_batch_stride = tma_stride(p.v_batch_stride, batches_k, eb);
  a.v_row_stride = tma_stride(p.v_row_stride, rows_k, eb);
  a.v_head_stride = tma_stride(p.v_head_stride, p.nheads_k, eb);
  a.o_batch_stride = p.o_batch_stride;
  a.o_row_stride = p.o_row_stride;
  a.o_head_stride = p.o_head_stride;
  a.lse_batch_stride = p.lse_batch_stride;
  a.lse_head_stride = p.lse_head_stride;
  a.lse_row_stride = p.lse_row_stride;
  a.cu_seqlens_q = p.varlen ? p.cu_seqlens_q : nullptr;
  a.cu_seqlens_k = p.varlen ? p.cu_seqlens_k : nullptr;
  a.tma_rows_q = int32_t(rows_q);
  a.tma_rows_k = int32_t(rows_k);
  a.tma_batch = int32_t(batches);
  a.tma_batch_k = int32_t(batches_k);
  a.seqused_k = p.seqused_k;
  a.block_table = p.block_table;
  a.block_table_stride = p.block_table_stride;
  a.page_size = int32_t(p.page_size);
  a.num_pages = int32_t(p.num_pages);
  a.pages_merged = merged ? 1 : 0;
  a.page_boxes = paged && p.page_size % paged_block_n(p) != 0 ? 1 : 0;
  a.batch = int32_t(p.batch);
  a.nheads = int32_t(p.nheads);
  a.nheads_k = int32_t(p.nheads_k);
  a.group = int32_t(p.nheads / p.nheads_k);
  // Packed GQA tiles (launch.h, q_pack; mainloop.cuh, load_cache): KV-cache and batched calls
  // with a few query rows per head and several query heads per KV head (speculative decoding,
  // chunked prefill over a cache or over materialised keys) put q_pack heads of one group into
  // each 128-row work tile, R =
  // 128 / q_pack rows each, the smallest R in {16, 32, 64} that holds seqlen_q and the largest
  // q_pack (a power of two) that divides the group. Each tile then reads its key and value
  // tiles once for q_pack heads, and the tensor cores work on q_pack times as many live rows:
  // at seqlen_q = 4, group 8, a tile holds 32 real rows instead of 4. Most one-query calls come
  // here already packed by attention_api.cpp (pack_gqa_decode: the group's heads as rows, group
  // 1); those it leaves (a window that hides keys, an lse whose heads are not contiguous,
  // FLASHKIT_ATTENTION_GQA_PACK=0) are packed here, 4 or 8 heads a tile. The split-KV plan
  // (attn::plan_split_kv) counts packed tiles over KV caches (split_heads_per_tile: its inner
  // call's chunk-sequences pack; not timed), one head a tile otherwise; few_rows_one_wave
  // below counts packed tiles.
  // Only where one head a tile would fill more than one wave (batch x nheads > SMs): in one
  // wave packing leaves the wave count at one and each tile costs more. H100, bf16, causal,
  // QPACK=0 (A) against packed (B), benchmarks/ab/s55_qpack_device.sh (RESULTS, "Packed GQA
  // tiles over KV caches", session 56): 64 sequences of 2048 keys, 2-16 queries, B / A
  // 0.17-0.19 at 16 / 2 heads (head_dim 64), 0.23-0.25 at 32 / 4, 0.43-0.45 at 32 / 8 (head_dim
  // 128); 8 of 8192 keys 0.54-0.58 at 32 / 4 and 32 / 8 (256 tiles), but 1.12-1.18 at 16 / 2
  // (128 tiles, one wave), which now stays unpacked.
  // FLASHKIT_SM90_ATTENTION_QPACK=0 turns it off, =2 packs in one wave too (tests, timing).
  // Batched calls run it on the KV-cache instantiation (launch.cuh), a contiguous cache whose
  // every sequence holds seqlen_k keys, so that the plain kernels stay as they are; not the fp8
  // kernel (attention_fp8_sm90.cu builds its arguments here too).
  {
    const int32_t pack = gqa_pack(*ctx.caps, p, false);
    if (pack > 1) {
      a.q_pack = pack;
      a.q_pack_rows = kBlockM / pack;
      a.q_pack_shift = 0;
      while ((1 << a.q_pack_shift) < a.q_pack_rows) ++a.q_pack_shift;
      a.nheads /= pack;  // packed heads (the copy engine's Q view keeps them all: mainloop.cuh)
      a.group /= pack;
    }
  }
  a.seqlen_q = int32_t(p.seqlen_q);
  a.seqlen_k = int32_t(p.seqlen_k);
  a.head_dim = int32_t(p.head_dim);
  a.window_left = int32_t(p.window_left < 0 ? -1 : p.window_left);
  a.window_right = p.causal ? 0 : int32_t(p.window_right < 0 ? -1 : p.window_right);
  const attn::LogitScale ls = attn::logit_scale(p.softmax_scale, p.softcap);
  a.softcap = ls.softcap ? 1 : 0;
  a.scale_log2 = ls.scale_log2;
  a.cap_pre = ls.cap_pre;
  a.cap_post = ls.cap_post;
  // Causal calls over at least 8192 keys take the unmasked key-tile width (192 at head_dim 64,
  // 176 at 128): the diagonal tiles whose waste the narrower masked tile limits are a small
  // share there. H200: 1.04-1.06x at head_dim 64 and 1.02-1.03x at 128, 8k and 16k keys
  // (RESULTS, "Causal calls over long keys on the wide tiles"); shorter ones are untimed.
  a.wide_masked = flags().causal_wide && p.causal && p.window_left < 0 && !attention_uses_kvcache(p) &&
                          p.seqlen_k >= 8192
                      ? 1
                      : 0;
  // head_dim 64, plain kernel: three consumer warpgroups of 64 rows (192-row tiles) over 128-key
  // tiles, as FlashAttention-3 runs head_dim 64: every key tile read from shared memory serves
  // 192 query rows. H200, bf16 (RESULTS, "head_dim 64 on three consumer warpgroups"): 1.16-1.25x
  // the two-warpgroup kernels unmasked (512 to 16k keys, including the 192-key tiles from 4k),
  // 1.01x / 1.10x / 1.13x causal at 4k / 8k / 16k keys (session 14). Causal below that they
  // were measured with head sections, which the 192-row tiles no longer take (below); without
  // them (session 22, RESULTS "Head sections and the 192-row tiles"): 1.098x at 2k keys, 0.930x
  // / 0.939x at 512 / 1k (more rows on the diagonal), so masked calls take 192-row tiles from
  // kMaskedRows192Keys keys on and keep 128-row tiles below. A sliding window counts by its
  // span (left + right + 1 keys, the keys a row sees), not by seqlen_k (windows not timed). Not
  // where one 128-row tile holds every query (decode, split-KV's inner calls), nor over KV
  // caches. Batched causal calls with seqlen_q <= seqlen_k and at least a wave of 192-row
  // tiles take them from kCausalRows192Keys keys (H100, session 53, with causal tiles in pairs,
  // RESULTS "head_dim 64 causal on 192-row tiles from 1152 keys": 192 / 128 rows 1.095 / 1.023
  // / 1.148 / 1.080 at 1152 / 1280 / 1536 / 1792 keys, 0.959 / 0.937 at 1024 / 512; 32 heads,
  // batch x seqlen 16384, seqlen_q = seqlen_k); other masked calls (windows, more queries than
  // keys, varlen, less than a wave) keep kMaskedRows192Keys, as measured before the pairs.
  constexpr int64_t kMaskedRows192Keys = 2048;
  constexpr int64_t kCausalRows192Keys = 1152;
  const bool masked_call = a.window_left >= 0 || a.window_right >= 0;
  int64_t span = p.seqlen_k;
  if (a.window_left >= 0 && a.window_right >= 0)
    span = std::min<int64_t>(span, int64_t(a.window_left) + a.window_right + 1);
  const int64_t sms = ctx.caps->sm_count > 0 ? ctx.caps->sm_count : 1;
  const bool causal_wave192 = a.window_left < 0 && a.window_right == 0 && !p.varlen &&
                              p.seqlen_q <= p.seqlen_k &&
                              (int64_t(p.seqlen_q) + kBlockM3 - 1) / kBlockM3 * p.batch * p.nheads >= sms;
  const int64_t rows192_keys = causal_wave192 ? kCausalRows192Keys : kMaskedRows192Keys;
  if (padded_head_dim(p.head_dim) == 64 && !attention_uses_kvcache(p) && p.seqlen_q > kBlockM &&
      flags().wg3 != 0 && (flags().wg3 == 2 || !masked_call || span >= rows192_keys))
    a.block_m = kBlockM3;
  // Query rows per tile and head: block_m, or q_pack_rows under packed GQA tiles (nheads then
  // counts packed heads).
  const int64_t tile_rows = a.q_pack > 1 ? a.q_pack_rows : a.block_m;
  a.num_m_blocks = int32_t((p.seqlen_q + tile_rows - 1) / tile_rows);
  a.total_tiles = int64_t(a.num_m_blocks) * a.nheads * p.batch;
  a.longest_first = (a.window_left >= 0 || a.window_right >= 0) ? 1 : 0;
  a.grid = int32_t(std::min<int64_t>(a.total_tiles, sms));
  // Varlen few-row tiles in a single wave (split-KV decode's inner call: a GQA group of rows
  // per tile, one CTA per SM) run the plain S / softmax / P V order: measured on the H200
  // (RESULTS, "Split-KV decode"), it streams K/V 8-16% faster there (57% vs 50% of copy
  // bandwidth at 1 x 32k keys). With several waves (64 x 2k keys: 93% vs 90%) the overlapped
  // order stays ahead; plain batched calls keep it too (batched one-row MHA decode in one wave:
  // 95% overlapped vs 94% plain). KV-cache calls (batched; split-KV's inner call over a cache
  // is one) follow the varlen rule. A split MHA decode (one row per tile) takes the plain order
  // by this rule, unmeasured.
  const bool few_rows_one_wave =
      (p.varlen || attention_uses_kvcache(p)) && p.seqlen_q <= 64 && a.total_tiles <= sms;
  a.overlap = flags().overlap && !few_rows_one_wave ? 1 : 0;
  a.pingpong = flags().pingpong ? 1 : 0;
  a.o_wide = flags().wide_store ? 1 : 0;
  // Copy-engine output stores: the plain kernel's batched calls at head_dim <= 128 (kernel.cuh).
  a.o_tma = flags().tma_store && !p.varlen && !attention_uses_kvcache(p) && a.q_pack == 1 &&
                    padded_head_dim(p.head_dim) <= 128
                ? 1
                : 0;
  // Not for the 192-row tiles (head_dim 64, three consumer warpgroups; masked calls over at
  // least kMaskedRows192Keys keys): H200, causal 4096 keys, bf16 (RESULTS.md, "Head sections
  // and the 192-row tiles", session 22): 391 TFLOP/s with sections, 429 without (+9.6%), while the
  // 128-row head_dim 64 calls read the same either way (512-2048 keys, 0.99-1.00x) and head_dim
  // 128 / 256 run 6-25% faster with them where they apply.
  if (a.longest_first && flags().sections && a.block_m == kBlockM &&
      int64_t(p.batch) * a.nheads * 4 >= a.grid) {
    // Head sections (tile_scheduler.cuh) where the all-heads longest-first order loses L2 reuse:
    // with at least a quarter as many (batch, head) pairs as CTAs, one wave of that order holds
    // at most about four query tiles of a head, whose next ones come waves later, so short
    // causal problems with many heads read their keys and values from device memory about once
    // per query tile. Sections hold the heads whose keys and values fit in about half the L2
    // (whole GQA groups). With fewer heads, consecutive query tiles of a head share a wave and
    // the plain order keeps its load balance: sections of about one to three waves there (8k
    // and 16k causal at head_dim 256, 16k at 128) were measured 2-37% slower (with static
    // round-robin tiles some CTAs then get the longest tile of every section).
    const int64_t l2 = ctx.caps->l2_bytes > 0 ? ctx.caps->l2_bytes : (int64_t(48) << 20);
    const int64_t kv_head_bytes =
        int64_t(p.seqlen_k) * padded_head_dim(p.head_dim) * 2 * int64_t(sizeof(uint16_t));
    const int64_t kv_heads = std::max<int64_t>(1, (l2 / 2) / std::max<int64_t>(1, kv_head_bytes));
    const int64_t heads = kv_heads * a.group;
    if (heads < int64_t(p.batch) * a.nheads) a.section_heads = int32_t(heads);
  }
  // Causal calls: tiles in pairs of equal work (tile_scheduler.cuh), which keep a head's keys
  // and values in L2 and the static round robin balanced without head sections (H100, session
  // 52: head_dim 128 causal over 8k keys, without sections there, read K and V ~15 times from
  // device memory, DRAM at 60% of peak and the clock 6% below cuDNN's). Batched calls without a
  // left window only (varlen tiles past a shorter sequence's end would leave pairs unequal;
  // KV caches keep their order), on 128-row tiles or an even count of 192-row tiles (head_dim
  // 64 over >= 2048 keys, batched causal calls since session 53 over >= 1152: the grid's odd
  // counts there, 11 at 2048 keys and 43 at 8192, left the busiest CTA 14% / 6% above the mean
  // in a simulation of the grid, where 128-row tiles stay within 1.031-1.038 of it, the even
  // 192-row counts 1.031-1.055, and longest first within 1.031-1.127;
  // benchmarks/ab/s52_pairs_sim.py), with seqlen_q <= seqlen_k (more
  // queries than keys leave the first tiles without keys, so tile i and n - 1 - i no longer add
  // up to one amount: a review's model put the busiest CTA at 1.25-1.45x the mean there against
  // 1.12-1.21x longest first), and only with at least one wave of pairs (fewer would run on
  // fewer CTAs than tiles). Varlen causal calls of at most kSeqPairsMaxBatch sequences on
  // 128-row tiles, whose longest sequence (max_seqlen_q) has at least kSeqPairsMinTiles query
  // tiles, take pairs per sequence (the kernel lays them out from cu_seqlens_q:
  // tile_scheduler.cuh, seq_prefix), which leave no whole waves of empty positions as the
  // longest-first numbering padded to the longest sequence does. H100, bf16, causal (RESULTS,
  // "Varlen causal calls in pairs per sequence", session 54), against the head-sectioned
  // longest-first order: the varlen row (7 sequences of 512-4453 tokens, 16 heads,
  // head_dim 128) 1.31-1.36x, 32 sequences of 64-4096 tokens 1.14-1.15x (1.40-1.41x at
  // head_dim 256, 8 heads), 31 of 64-500 and one of 6000 1.31-1.34x, 48 of 128-1000
  // 1.03-1.05x; but 128 sequences of 96-400 tokens (at most 4 tiles: pairs of unequal work
  // across sequences, half pairs for odd counts) 0.86x, hence the bound. The bound and the
  // wave test count every sequence as the longest (the host reads no lengths when
  // max_seqlen_q / max_seqlen_k are given): many short sequences with one of 6 tiles or more
  // took the pairs: 127 sequences of 96-400 tokens and one of 800 (7 tiles) measured 0.90-0.92x
  // (session 56, H100), so the rows of q per sequence (total_q / batch, the mean length where q
  // holds just the sequences) must also reach kSeqPairsMinMeanRows, 3 tiles: the gains above
  // had means of 3.6 tiles (31 of 64-500 and one of 6000) and more, the losses 1.9-2. Where the
  // real pairs are fewer than the CTAs the kernel spreads the tiles instead
  // (tile_scheduler.cuh, seq_index).
  // FLASHKIT_SM90_ATTENTION_PAIRS=0 keeps the longest-first order.
  {
    constexpr int32_t kSeqPairsMinTiles = 6;
    constexpr int64_t kSeqPairsMinMeanRows = 3 * kBlockM;
    const int64_t bh = int64_t(p.batch) * p.nheads;
    const int64_t per_bh = (int64_t(a.num_m_blocks) + 1) / 2;
    const bool varlen_ok = !p.varlen || (a.block_m == kBlockM && p.batch <= kSeqPairsMaxBatch &&
                                         a.num_m_blocks >= kSeqPairsMinTiles &&
                                         p.total_q >= kSeqPairsMinMeanRows * p.batch &&
                                         2 * (bh * per_bh + sms) < (int64_t(1) << 31));
    if (a.longest_first && flags().pairs && a.window_left < 0 && a.window_right == 0 &&
        (a.block_m == kBlockM || a.num_m_blocks % 2 == 0) && p.seqlen_q <= p.seqlen_k &&
        varlen_ok &&
        !attention_uses_kvcache(p) && a.num_m_blocks > 1 && bh * per_bh >= sms) {
      set_pairs(a, sms);  // tile_pairs.h
    }
  }
  set_index_divisors(a);
  if (flags().index64) a.index32 = 0;
  // head_dim 256, short keys (seqlen_k, the longest sequence under varlen): 64-key tiles instead
  // of 80, up to 512 keys, or 1024 under a causal or window mask. 512 keys are 6.4 tiles of 80
  // (the last holds 32 keys, 60% padding: 8.6% of the work), and the diagonal of a causal
  // 128-row tile wastes more of an 80-key tile (causal 512: 29% of the work against 20%; 1024:
  // 16% against 11%). H200, bf16, seqlen_q = seqlen_k, batch x seqlen = 16384, 8 heads
  // (RESULTS.md, "head_dim 256 on 64-key tiles for short keys", session 23; 64-key / 80-key
  // tiles): 512 keys 1.061 unmasked, 1.102 causal; 1024 keys 0.980 unmasked, 1.053 causal; 2048
  // and 4096 keys 0.91-0.97. Only for more than one 128-row tile of queries (what was timed):
  // decode and split-KV's inner calls (at most 128 rows) keep the 80-key tiles. fp16, windows
  // and the padded head dims (200-248) follow the rule untimed. Not over KV caches (their pages
  // are cut for the masked width). FLASHKIT_SM90_ATTENTION_KEYS64=0 never, =2 on every plain
  // (not KV-cache) head_dim 256 call (measurement).
  constexpr int64_t kKeys64Max = 512, kKeys64MaxMasked = 1024;
  const bool keys64_len = p.seqlen_q > kBlockM && (p.seqlen_k <= kKeys64Max ||
                                                   (masked_call && p.seqlen_k <= kKeys64MaxMasked));
  // Short unmasked head_dim 128 calls: 128-key tiles, three stages (launch.h, kNarrowMaxKeys).
  a.narrow = padded_head_dim(p.head_dim) == 128 && !attention_uses_kvcache(p) && !masked_call &&
                     flags().narrow != 0 &&
                     (flags().narrow == 2 || (p.seqlen_q > kBlockM && p.seqlen_k <= kNarrowMaxKeys))
                 ? 1
                 : 0;
  a.keys64 = padded_head_dim(p.head_dim) == 256 && !attention_uses_kvcache(p) && flags().keys64 != 0 &&
                     (flags().keys64 == 2 || keys64_len)
                 ? 1
                 : 0;
  a.hi_mask = flags().hi_mask ? 1 : 0;
  if (a.q_pack > 1) {
    // Packed calls run the KV-cache instantiation (launch.cuh), which reads none of the plain
    // kernel's tile choices: cleared so that the arguments say what runs.
    a.wide_masked = a.narrow = a.keys64 = a.o_tma = 0;
  }
  return a;
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
