// Entry point and predicate of the sm80-class attention kernel ("cuda.sm80.attention"): which
// problems it takes, and the translation of an AttentionProblem into its Params.
//
// It takes fp16 and bf16 (fp32 stays on the generic path), every head_dim up to 256 (padded to
// the next bucket of tile_size.h), batched and varlen forms, GQA/MQA, causal, sliding window,
// softcap and LSE, provided the 16-byte cp.async copies are legal: 16-byte aligned base
// pointers and row, head and batch strides that are multiples of 8 elements (a stride whose
// extent is 1 is never used and is not checked), and a device whose opt-in shared memory per
// block holds the bucket's tiles (head_dim > 128 needs 128 KiB: A100 and Hopper yes, Ada and
// consumer Blackwell at 99 KiB no). Everything else goes to the generic kernel.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/backend.h"
#include "cuda/attention/sm80/attention_packed.h"
#include "cuda/attention/sm80/launch.h"
#include "cuda/attention/sm80/params.h"
#include "cuda/attention/sm80/tile_size.h"
#include "cuda/attention/common/logits.h"
#include "cuda/attention/common/strides.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

constexpr int64_t kMaxLen = int64_t(1) << 30;  // positions stay in int32 inside the kernel

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Diagnostic switches, read on every call, on unless set to "0" (docs/design.md):
// FLASHKIT_SM80_ATTENTION_DECODE=0 keeps calls with at most 16 query rows on the default 128-row
// tiles instead of the decode tiles; FLASHKIT_SM80_ATTENTION_HI_MASK=0 gives partial key tiles of
// causal calls without a left window the two-sided mask instead of the upper bound alone
// (softmax.cuh); FLASHKIT_SM80_ATTENTION_EVEN=0 runs the calls that qualify for the even kernels
// (Params::even) on the general kernel.
bool env_on(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr || std::strcmp(env, "0") != 0;
}
bool stride_ok(int64_t stride, int64_t extent) { return extent <= 1 || stride % 8 == 0; }

// Whether a (non-packed) call runs the decode tiles (tile_size.h): the predicate's page rule and
// the launch both ask here.
bool uses_decode_tiles(const AttentionProblem& p, int bucket) {
  return decode_bucket(bucket) && p.seqlen_q <= kDecodeRows &&
         env_on("FLASHKIT_SM80_ATTENTION_DECODE");
}

// Whether a (non-packed, non-decode) call in `bucket` runs the narrow tiles (tile_size.h): where
// the default tile does not fit the device's per-block shared memory, or forced by
// FLASHKIT_SM80_ATTENTION_NARROW=1 (read on every call; the GPU tests use it on the H200).
bool uses_narrow_tiles(const DeviceCaps& caps, int bucket) {
  if (bucket != 256) return false;
  const char* env = std::getenv("FLASHKIT_SM80_ATTENTION_NARROW");
  if (env != nullptr && std::strcmp(env, "1") == 0) return true;
  return static_cast<int64_t>(SmemLayout<256>::kBytes) > caps.smem_per_block_optin;
}

}  // namespace

bool attention_supported(const DeviceCaps& caps, const AttentionProblem& p) {
  if (p.dtype != DType::F16 && p.dtype != DType::BF16) return false;
  if (p.device != Device::Cuda) return false;
  const int bucket = head_dim_bucket(p.head_dim);
  if (bucket == 0) return false;
  const bool narrow = uses_narrow_tiles(caps, bucket);
  const size_t smem = narrow ? SmemLayout<256, kNarrowKind>::kBytes : smem_bytes_for_bucket(bucket);
  if (static_cast<int64_t>(smem) > caps.smem_per_block_optin) return false;
  if (p.seqlen_q > kMaxLen || p.seqlen_k > kMaxLen || p.nheads > kMaxLen || p.batch > kMaxLen)
    return false;
  // Varlen with max_seqlen given: a (wrong) entry can make one sequence as long as all rows.
  if (p.varlen && (p.total_q > kMaxLen || p.total_k > kMaxLen)) return false;
  if (p.nheads_k <= 0 || p.nheads % p.nheads_k != 0) return false;
  if (!std::isfinite(p.softmax_scale)) return false;
  const int64_t block_m = narrow ? TileShape<256, kNarrowKind>::kBlockM : block_m_for_bucket(bucket);
  const int64_t m_blocks = (p.seqlen_q + block_m - 1) / block_m;
  if (m_blocks * p.nheads > INT32_MAX || m_blocks * p.nheads * p.batch > INT32_MAX) return false;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.out)) return false;
  // KV cache: batched queries only; pages a power of two rows (shift and mask in the loads).
  if (attention_uses_kvcache(p)) {
    if (p.varlen) return false;
    if (p.block_table != nullptr) {
      if (p.page_size < 1 || (p.page_size & (p.page_size - 1)) != 0) return false;
      if (p.num_pages < 1 || p.num_pages > INT32_MAX) return false;
      // Pages smaller than a key tile: decode tiles only (kernel.cuh, load_kv).
      if (!uses_decode_tiles(p, bucket) && p.page_size < block_n_for_bucket(bucket)) return false;
    }
  }
  return attn::all_strides(p, stride_ok);
}

// Packing (attention_packed.h): FLASHKIT_ATTENTION_PACK=0 never, =1 every varlen problem the
// kernel takes, unset (or anything else) when the sequences (queries and keys) average at most
// a quarter of a query tile and packing more than halves the grid (per-sequence tiles: batch x the longest
// sequence's tiles; the host knows no single length when max_seqlen_q is given): the demo's 64
// sentences of 1-67 tokens (1128 rows) take 9 packed tiles of 128 rows per head instead of 64.
// Read on every call (tests and benchmarks switch it).
bool attention_packed_supported(const DeviceCaps& caps, const AttentionProblem& p) {
  if (!p.varlen || p.batch <= 0 || p.total_q <= 0 || attention_uses_kvcache(p)) return false;
  const char* env = std::getenv("FLASHKIT_ATTENTION_PACK");
  const int force = env == nullptr ? -1 : std::strcmp(env, "0") == 0 ? 0 : std::strcmp(env, "1") == 0 ? 1 : -1;
  if (force == 0) return false;
  if (!attention_supported(caps, p)) return false;
  const int bucket = head_dim_bucket(p.head_dim);
  if (!packed_bucket(bucket)) return false;
  if (static_cast<int64_t>(packed_smem_bytes_for_bucket(bucket)) > caps.smem_per_block_optin)
    return false;
  const int64_t block_m = block_m_for_bucket(bucket);
  const int64_t packed_tiles = (p.total_q + block_m - 1) / block_m;
  if (packed_tiles * p.nheads > INT32_MAX) return false;
  if (force == 1) return true;
  // Keys short too: a packed tile walks every key of the sequences its rows belong to, so a
  // decode-like batch (1-16 queries against thousands of keys each) would put all of its keys
  // on a handful of blocks (review: ~5x slower at 128 sequences of 1 x 4096, 32 heads).
  const int64_t per_sequence_tiles = p.batch * ((p.seqlen_q + block_m - 1) / block_m);
  return p.total_q * 4 <= p.batch * block_m && p.total_k * 4 <= p.batch * block_m &&
         per_sequence_tiles > 2 * packed_tiles;
}

namespace {

fk_status_t run(const ExecContext& ctx, const AttentionProblem& p, bool packed) {
  if (p.batch <= 0 || p.nheads <= 0 || p.seqlen_q <= 0) return FK_SUCCESS;
  if (!(packed ? attention_packed_supported(*ctx.caps, p) : attention_supported(*ctx.caps, p))) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.attention: problem outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());

  Params k{};
  k.q = p.q;
  k.k = p.k;
  k.v = p.v;
  k.out = p.out;
  k.lse = p.lse;
  k.cu_seqlens_q = p.varlen ? p.cu_seqlens_q : nullptr;
  k.cu_seqlens_k = p.varlen ? p.cu_seqlens_k : nullptr;
  k.q_batch_stride = p.q_batch_stride;
  k.q_row_stride = p.q_row_stride;
  k.q_head_stride = p.q_head_stride;
  k.k_batch_stride = p.k_batch_stride;
  k.k_row_stride = p.k_row_stride;
  k.k_head_stride = p.k_head_stride;
  k.v_batch_stride = p.v_batch_stride;
  k.v_row_stride = p.v_row_stride;
  k.v_head_stride = p.v_head_stride;
  k.o_batch_stride = p.o_batch_stride;
  k.o_row_stride = p.o_row_stride;
  k.o_head_stride = p.o_head_stride;
  k.lse_batch_stride = p.lse_batch_stride;
  k.lse_head_stride = p.lse_head_stride;
  k.batch = static_cast<int32_t>(p.batch);
  k.nheads = static_cast<int32_t>(p.nheads);
  k.group = static_cast<int32_t>(p.nheads / p.nheads_k);
  k.seqlen_q = static_cast<int32_t>(p.seqlen_q);
  k.seqlen_k = static_cast<int32_t>(p.seqlen_k);
  k.total_q = p.total_q;
  k.total_k = p.total_k;
  k.head_dim = static_cast<int32_t>(p.head_dim);
  const int bucket = head_dim_bucket(p.head_dim);
  k.decode = !packed && uses_decode_tiles(p, bucket);
  k.narrow = !packed && !k.decode && uses_narrow_tiles(*ctx.caps, bucket) ? 1 : 0;
  const int64_t block_m = k.decode ? kDecodeRows
                          : k.narrow ? TileShape<256, kNarrowKind>::kBlockM
                                     : block_m_for_bucket(bucket);
  k.num_m_blocks = static_cast<int32_t>(((packed ? p.total_q : p.seqlen_q) + block_m - 1) / block_m);
  k.packed = packed ? 1 : 0;
  // Window sizes come from int32 parameters; causal is the window (left, 0).
  k.window_left = static_cast<int32_t>(p.window_left < 0 ? -1 : p.window_left);
  k.window_right = p.causal ? 0 : static_cast<int32_t>(p.window_right < 0 ? -1 : p.window_right);
  const attn::LogitScale ls = attn::logit_scale(p.softmax_scale, p.softcap);
  k.softcap = ls.softcap;
  k.scale_log2 = ls.scale_log2;
  k.cap_pre = ls.cap_pre;
  k.cap_post = ls.cap_post;
  k.seqused_k = p.seqused_k;
  k.block_table = p.block_table;
  k.block_table_stride = p.block_table_stride;
  k.page_shift = 0;
  while (p.block_table != nullptr && (int64_t(1) << k.page_shift) < p.page_size) ++k.page_shift;
  k.num_pages = static_cast<int32_t>(p.num_pages);
  // Upper-bound-only mask for causal and right-window calls without a left window (H200,
  // session 35: causal head_dim 64 512-2048 keys +2.7-6.9%, 128 +0.7-1.7%, 256 +0.4-1.1%);
  // unmasked calls keep the two-sided one on their sequence-end tile (-0.1 to -1.2% with it).
  k.hi_mask = env_on("FLASHKIT_SM80_ATTENTION_HI_MASK") && k.window_right >= 0 ? 1 : 0;
  // The even kernels (kernel.cuh kEven): no per-element work on any key tile but, for causal and
  // right-only windows, the upper-bound mask.
  const bool even = env_on("FLASHKIT_SM80_ATTENTION_EVEN") && !packed && !k.decode && !k.narrow &&
                    k.window_left < 0 && (k.window_right < 0 || k.hi_mask != 0) && !k.softcap &&
                    k.scale_log2 > 0.0f && k.cu_seqlens_q == nullptr &&
                    k.seqused_k == nullptr && k.block_table == nullptr &&
                    p.head_dim == bucket && p.seqlen_k % block_n_for_bucket(bucket) == 0;
  k.even = even ? (k.window_right >= 0 ? 2 : 1) : 0;

  const bool bf16 = p.dtype == DType::BF16;
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  switch (head_dim_bucket(p.head_dim)) {
    case 64: return launch_hdim64(k, bf16, stream);
    case 96: return launch_hdim96(k, bf16, stream);
    case 128: return launch_hdim128(k, bf16, stream);
    default: return launch_hdim256(k, bf16, stream);
  }
}

}  // namespace

fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p) { return run(ctx, p, false); }

fk_status_t attention_packed(const ExecContext& ctx, const AttentionProblem& p) {
  return run(ctx, p, true);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
