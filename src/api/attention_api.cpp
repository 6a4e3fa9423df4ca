// fk_attention_forward: argument checking (every rule in the header's attention group) and
// dispatch. Kernels receive a fully resolved AttentionProblem.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/run_op.h"
#include "api/validate.h"
#include "core/attention_fp8.h"
#include "core/cuda_runtime.h"
#include "core/half.h"
#include "dispatch/dispatch.h"
#if defined(FLASHKIT_WITH_SM90)
#include "cuda/attention/sm90/attention_sm90.h"
#endif

using namespace flashkit;

namespace {

// Reads cu_seqlens (host or device) and checks: starts at 0, non-decreasing, ends at total.
// Returns the largest sequence length in *max_len. `given_max` (> 0: the caller's max_seqlen,
// named `max_name`) skips the read of device-resident cu_seqlens, so the call does not wait for
// the stream: the kernels clamp the entries they read (see fk_attention_params_t); host-resident
// ones are still read and checked, and the longest sequence must not exceed it.
fk_status_t check_cu_seqlens(const fk_context_t* ctx, const fk_launch_t& launch,
                             const char* name, const TensorView& cu, int64_t total,
                             const char* max_name, int64_t given_max, int64_t* max_len) {
  if (given_max > 0 && cu.device != Device::Host) {
    *max_len = std::min(given_max, total);  // no sequence is longer than all rows together
    return FK_SUCCESS;
  }
  const int64_t n = cu.shape[0];
  std::vector<int32_t> host(static_cast<size_t>(n));
  if (cu.device == Device::Host) {
    const int32_t* p = static_cast<const int32_t*>(cu.data);
    for (int64_t i = 0; i < n; ++i) host[i] = p[i];
  } else {
    // Reading device-resident entries waits for the stream, which a stream being captured into
    // a CUDA graph cannot do (the capture would end in an error): the caller must say how long
    // the longest sequence is.
    bool capturing = false;
    FK_RETURN_IF_ERROR(cuda::stream_is_capturing(launch.stream, ctx->device_ordinal, &capturing));
    if (capturing) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "%s: must be given (> 0) while the launch stream is being captured into a "
                       "CUDA graph: %s is in device memory and reading it back would wait for "
                       "the stream",
                       max_name, name);
    }
    FK_RETURN_IF_ERROR(cuda::copy_to_host_sync(host.data(), cu.data, n * sizeof(int32_t),
                                               ctx->device_ordinal, launch.stream));
  }
  if (host[0] != 0) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "%s: first entry must be 0, got %d", name,
                     host[0]);
  }
  int64_t mx = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (host[i] < host[i - 1]) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "%s: not monotonic: entry %" PRId64 " (%d) < entry %" PRId64 " (%d)", name,
                       i, host[i], i - 1, host[i - 1]);
    }
    mx = std::max<int64_t>(mx, host[i] - host[i - 1]);
  }
  if (host[n - 1] != total) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: last entry %d must equal the packed row count %" PRId64, name,
                     host[n - 1], total);
  }
  if (given_max > 0 && mx > given_max) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: %" PRId64 " is below the longest sequence in %s (%" PRId64 ")",
                     max_name, given_max, name, mx);
  }
  *max_len = mx;
  return FK_SUCCESS;
}

// GQA decode, one query per sequence (batched form): the group's query heads become the rows of
// one tile, FlashAttention's swap of seqlen_q and the group size (flash_api.cpp,
// "seqlenq_ngroups_swapped"). Each key/value head is then read once per sequence instead of once
// per query head, and a tile holds `group` useful rows instead of one. Exact: with one query the
// bottom-right causal mask and a left window reaching key 0 hide nothing, so the packed rows (all
// the same position) need no mask. Only a rewrite of strides: q (batch, 1, nheads, d) read as
// (batch, group, nheads_k, d), row stride = the head stride, head stride = group x it; out and lse
// likewise (lse only when its heads are contiguous, as its rows must be). CUDA backend only (the
// CPU kernel already shares each K/V tile across its group). FLASHKIT_ATTENTION_GQA_PACK=0
// (diagnostic) turns it off.
void pack_gqa_decode(const fk_context_t* ctx, AttentionProblem* p) {
  if (ctx->backend != FK_BACKEND_CUDA || p->varlen || p->seqlen_q != 1 || p->seqlen_k < 1 ||
      p->nheads_k < 1 || p->nheads <= p->nheads_k || p->nheads % p->nheads_k != 0)
    return;
  if (p->window_left >= 0 && p->window_left < p->seqlen_k - 1) return;  // the window hides keys
  if (p->lse != nullptr && p->lse_head_stride != 1) return;
  if (const char* env = std::getenv("FLASHKIT_ATTENTION_GQA_PACK"); env && std::strcmp(env, "0") == 0)
    return;
  const int64_t group = p->nheads / p->nheads_k;
  p->seqlen_q = group;
  p->total_q = p->batch * group;
  p->nheads = p->nheads_k;
  p->q_row_stride = p->q_head_stride;
  p->q_head_stride *= group;
  p->o_row_stride = p->o_head_stride;
  p->o_head_stride *= group;
  if (p->lse != nullptr) {
    p->lse_row_stride = 1;  // = the original head stride
    p->lse_head_stride = group;
  }
  p->causal = false;
  p->window_left = p->window_right = -1;
}

// fk_attention_kvcache_forward's extra tensors (nullptr members: not given).
struct KvCacheArgs {
  const DLTensor* cache_seqlens;
  const DLTensor* block_table;
};

// Reads a host-resident int32 vector's entries and checks each against [lo, hi]; `what` names
// the quantity in the message.
fk_status_t check_host_entries(const char* name, const TensorView& t, int64_t row_stride,
                               int64_t rows, int64_t cols, int64_t lo, int64_t hi,
                               const int64_t* col_limit, const char* what) {
  const int32_t* d = static_cast<const int32_t*>(t.data);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = col_limit ? std::min(cols, col_limit[r]) : cols;
    for (int64_t c = 0; c < n; ++c) {
      const int64_t x = d[r * row_stride + c];
      if (x < lo || x > hi) {
        if (t.rank == 1) {
          return set_error(FK_ERROR_INVALID_ARGUMENT,
                           "%s: entry %" PRId64 " is %" PRId64 ", outside [%" PRId64 ", %" PRId64
                           "] (%s)",
                           name, c, x, lo, hi, what);
        }
        return set_error(FK_ERROR_INVALID_ARGUMENT,
                         "%s: entry [%" PRId64 "][%" PRId64 "] is %" PRId64
                         ", outside [%" PRId64 ", %" PRId64 "] (%s)",
                         name, r, c, x, lo, hi, what);
      }
    }
  }
  return FK_SUCCESS;
}

// The KV-cache form's extra checks, after build_problem's batched ones (k and v are the cache):
// cache_seqlens (batch,), block_table (batch, max_blocks_per_seq); p->seqlen_k becomes the
// capacity and the strides of a paged cache its pool's.
fk_status_t apply_kvcache(const fk_context_t* ctx, const KvCacheArgs& kv, const TensorView& q,
                          const TensorView& k, OptTensor* seqlens_out, OptTensor* table_out,
                          AttentionProblem* p) {
  OptTensor& sl = *seqlens_out;
  OptTensor& bt = *table_out;
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "cache_seqlens", kv.cache_seqlens, &sl, Accept::Int32));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "block_table", kv.block_table, &bt, Accept::Int32));
  for (const auto& [name, t] : {std::pair<const char*, OptTensor*>{"cache_seqlens", &sl},
                                std::pair<const char*, OptTensor*>{"block_table", &bt}}) {
    if (t->valid && t->t.dtype != DType::I32) {
      return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype must be int32, got %s", name,
                       dtype_name(t->t.dtype));
    }
  }
  const int64_t batch = q.shape[0];
  if (bt.valid) {
    FK_RETURN_IF_ERROR(expect_rank("block_table", bt.t, 2, "(batch, max_blocks_per_seq)"));
    FK_RETURN_IF_ERROR(expect_dim("block_table", bt.t, 0, "batch", batch, "q"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("block_table", bt.t, "max_blocks_per_seq"));
    const int64_t page = k.shape[1], pages = k.shape[0], per_seq = bt.t.shape[1];
    if (page < 1) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "k_cache: page_block_size (dimension 1 of the page pool) is 0; a page "
                       "holds at least one key");
    }
    if (per_seq > 0 && batch > 0 && pages < 1) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "k_cache: the page pool has no pages (num_blocks 0) but block_table "
                       "lists %" PRId64 " per sequence",
                       per_seq);
    }
    if (per_seq > INT32_MAX / page) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "block_table: capacity max_blocks_per_seq x page_block_size = %" PRId64
                       " x %" PRId64 " exceeds the int32 range of cache_seqlens",
                       per_seq, page);
    }
    p->block_table = static_cast<const int32_t*>(bt.t.data);
    p->block_table_stride = bt.t.shape[0] > 1 ? bt.t.stride[0] : per_seq;
    p->page_size = page;
    p->num_pages = pages;
    p->seqlen_k = per_seq * page;  // capacity
    p->total_k = pages * page;  // the pool's page stride stays in k/v_batch_stride
  } else {
    FK_RETURN_IF_ERROR(expect_dim("k_cache", k, 0, "batch", batch, "q"));
    if (p->seqlen_k > INT32_MAX) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "k_cache: seqlen_cache %" PRId64 " exceeds the int32 range of "
                       "cache_seqlens",
                       p->seqlen_k);
    }
  }
  if (sl.valid) {
    FK_RETURN_IF_ERROR(expect_rank("cache_seqlens", sl.t, 1, "(batch,)"));
    FK_RETURN_IF_ERROR(expect_dim("cache_seqlens", sl.t, 0, "batch", batch, "q"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("cache_seqlens", sl.t, "batch"));
    p->seqused_k = static_cast<const int32_t*>(sl.t.data);
  }
  // Host-resident entries (CPU backend) are checked; device ones are clamped by the kernels.
  if (q.device == Device::Host) {
    std::vector<int64_t> used(static_cast<size_t>(batch), p->seqlen_k);
    if (sl.valid) {
      FK_RETURN_IF_ERROR(check_host_entries("cache_seqlens", sl.t, 0, 1, batch, 0, p->seqlen_k,
                                            nullptr, "valid keys, at most the capacity"));
      for (int64_t b = 0; b < batch; ++b) used[b] = p->seqused_k[b];
    }
    if (bt.valid && batch > 0) {
      std::vector<int64_t> pages_used(static_cast<size_t>(batch));
      for (int64_t b = 0; b < batch; ++b) pages_used[b] = (used[b] + p->page_size - 1) / p->page_size;
      FK_RETURN_IF_ERROR(check_host_entries("block_table", bt.t, p->block_table_stride, batch,
                                            bt.t.shape[1], 0, p->num_pages - 1,
                                            pages_used.data(), "a page of k_cache"));
    }
  }
  return FK_SUCCESS;
}

// fk_attention_fp8_forward's extra tensors (descale_q, descale_k, descale_v; nullptr: not
// given) and where build_problem puts their resolved views.
struct Fp8Args {
  const DLTensor* descale[3];
  AttentionFp8Descales* out;
};
constexpr const char* kDescaleNames[3] = {"descale_q", "descale_k", "descale_v"};

fk_status_t build_problem(const fk_context_t* ctx, const fk_launch_t& launch,
                          const fk_attention_params_t* user_params, const DLTensor* q_,
                          const DLTensor* k_, const DLTensor* v_, const DLTensor* cuq_,
                          const DLTensor* cuk_, const DLTensor* out_, const DLTensor* lse_,
                          AttentionProblem* p, bool* empty, const KvCacheArgs* kv = nullptr,
                          const Fp8Args* fp8 = nullptr) {
  FK_RETURN_IF_ERROR(check_context(ctx));
  fk_attention_params_t prm;
  fk_attention_params_init(&prm);
  FK_RETURN_IF_ERROR(load_struct("params", user_params, &prm));
  if (kv && (prm.max_seqlen_q != 0 || prm.max_seqlen_k != 0)) {
    const bool on_q = prm.max_seqlen_q != 0;
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: %" PRId64 " given, but the KV-cache form does not use it (the lengths "
                     "come from q and cache_seqlens); leave it 0",
                     on_q ? "max_seqlen_q" : "max_seqlen_k",
                     on_q ? prm.max_seqlen_q : prm.max_seqlen_k);
  }
  const char* kname = kv ? "k_cache" : "k";
  const char* vname = kv ? "v_cache" : "v";

  if (prm.max_seqlen_q < 0 || prm.max_seqlen_k < 0) {
    const bool on_q = prm.max_seqlen_q < 0;
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "%s: %" PRId64 " is negative (0 means: read it from %s)",
                     on_q ? "max_seqlen_q" : "max_seqlen_k",
                     on_q ? prm.max_seqlen_q : prm.max_seqlen_k,
                     on_q ? "cu_seqlens_q" : "cu_seqlens_k");
  }

  TensorView q, k, v, out;
  OptTensor lse, cuq, cuk;
  const Accept qkv_accept = fp8 ? Accept::FloatOrFp8 : Accept::Float;
  FK_RETURN_IF_ERROR(to_view(ctx, "q", q_, &q, qkv_accept));
  FK_RETURN_IF_ERROR(to_view(ctx, kname, k_, &k, qkv_accept));
  FK_RETURN_IF_ERROR(to_view(ctx, vname, v_, &v, qkv_accept));
  // The fp8 form lets an fp8 out through to its own rule (DTYPE_MISMATCH: must be bf16).
  FK_RETURN_IF_ERROR(to_view(ctx, "out", out_, &out, qkv_accept));
  OptTensor dsc[3];
  if (fp8) {
    for (int i = 0; i < 3; ++i) {
      FK_RETURN_IF_ERROR(
          to_opt_view(ctx, kDescaleNames[i], fp8->descale[i], &dsc[i], Accept::Float32));
    }
  }
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "lse", lse_, &lse, Accept::Float32));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "cu_seqlens_q", cuq_, &cuq, Accept::Int32));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "cu_seqlens_k", cuk_, &cuk, Accept::Int32));

  if (cuq.valid != cuk.valid) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "%s: cu_seqlens_q and cu_seqlens_k must be given "
                     "together (varlen form) or both be NULL (batched form)",
                     cuq.valid ? "cu_seqlens_k" : "cu_seqlens_q");
  }
  const bool varlen = cuq.valid;
  const int r = varlen ? 3 : 4;  // rank of q, k, v, out
  const char* qdims = varlen ? "(total_q, nheads, head_dim)" : "(batch, seqlen_q, nheads, head_dim)";
  const bool paged = kv && kv->block_table;
  const char* kdims =
      varlen  ? "(total_k, nheads_k, head_dim)"
      : paged ? "(num_blocks, page_block_size, nheads_k, head_dim)"
      : kv    ? "(batch, seqlen_cache, nheads_k, head_dim)"
              : "(batch, seqlen_k, nheads_k, head_dim)";
  FK_RETURN_IF_ERROR(expect_rank("q", q, r, qdims));
  FK_RETURN_IF_ERROR(expect_rank(kname, k, r, kdims));
  FK_RETURN_IF_ERROR(expect_rank(vname, v, r, kdims));
  FK_RETURN_IF_ERROR(expect_rank("out", out, r, qdims));

  if (fp8) {
    if (q.dtype != DType::F8E4M3) {
      return set_error(FK_ERROR_DTYPE_MISMATCH,
                       "q: dtype %s, must be float8_e4m3fn (fk_attention_fp8_forward; fp32, fp16 "
                       "and bf16 inputs go to fk_attention_forward)",
                       dtype_name(q.dtype));
    }
    FK_RETURN_IF_ERROR(expect_same_dtype(kname, k, "q", q));
    FK_RETURN_IF_ERROR(expect_same_dtype(vname, v, "q", q));
    if (out.dtype != DType::BF16) {
      return set_error(FK_ERROR_DTYPE_MISMATCH,
                       "out: dtype %s, must be bf16 (the fp8 forward's output dtype)",
                       dtype_name(out.dtype));
    }
  } else {
    FK_RETURN_IF_ERROR(expect_float("q", q));
    FK_RETURN_IF_ERROR(expect_same_dtype(kname, k, "q", q));
    FK_RETURN_IF_ERROR(expect_same_dtype(vname, v, "q", q));
    FK_RETURN_IF_ERROR(expect_same_dtype("out", out, "q", q));
  }

  const int hd = r - 1, hh = r - 2;  // head_dim and head-count dimensions
  const int64_t head_dim = q.shape[hd];
  if (head_dim > FK_ATTENTION_MAX_HEAD_DIM) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "q: head_dim %" PRId64 " > %d", head_dim,
                     FK_ATTENTION_MAX_HEAD_DIM);
  }
  if (head_dim < 1) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "q: head_dim %" PRId64 " must be at least 1",
                     head_dim);
  }
  FK_RETURN_IF_ERROR(expect_dim(kname, k, hd, "head_dim", head_dim, "q"));
  FK_RETURN_IF_ERROR(expect_dim(vname, v, hd, "head_dim", head_dim, "q"));
  const int64_t nheads = q.shape[hh], nheads_k = k.shape[hh];
  FK_RETURN_IF_ERROR(expect_dim(vname, v, hh, "nheads_k", nheads_k, kname));
  if ((nheads_k == 0 && nheads != 0) || (nheads_k != 0 && nheads % nheads_k != 0)) {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "%s: nheads (%" PRId64 ", from q) must be a multiple of nheads_k (%" PRId64
                     ") for GQA/MQA",
                     kname, nheads, nheads_k);
  }
  for (int d = 0; d < r; ++d) {
    if (out.shape[d] != q.shape[d]) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "out: dimension %d is %" PRId64 " but q's is %" PRId64
                       " (out must have q's shape)",
                       d, out.shape[d], q.shape[d]);
    }
  }
  FK_RETURN_IF_ERROR(expect_dim(vname, v, 0,
                                varlen ? "total_k" : paged ? "num_blocks" : "batch", k.shape[0],
                                kname));
  if (!varlen) {
    if (!kv) FK_RETURN_IF_ERROR(expect_dim("k", k, 0, "batch", q.shape[0], "q"));
    FK_RETURN_IF_ERROR(expect_dim(vname, v, 1,
                                  paged ? "page_block_size" : kv ? "seqlen_cache" : "seqlen_k",
                                  k.shape[1], kname));
  }
  FK_RETURN_IF_ERROR(expect_last_contiguous("q", q, "head_dim"));
  FK_RETURN_IF_ERROR(expect_last_contiguous(kname, k, "head_dim"));
  FK_RETURN_IF_ERROR(expect_last_contiguous(vname, v, "head_dim"));
  FK_RETURN_IF_ERROR(expect_last_contiguous("out", out, "head_dim"));

  // Options.
  if (prm.window_size_left < -1) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.window_size_left: %d < -1",
                     prm.window_size_left);
  }
  if (prm.window_size_right < -1) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.window_size_right: %d < -1",
                     prm.window_size_right);
  }
  if (!(prm.softcap >= 0.0f) || std::isinf(prm.softcap)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "params.softcap: %g must be finite and >= 0 (0 disables it)",
                     static_cast<double>(prm.softcap));
  }
  if (std::isinf(prm.softmax_scale)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "params.softmax_scale: must be finite (NaN selects 1/sqrt(head_dim))");
  }

  p->dtype = q.dtype;
  p->device = q.device;
  p->q = q.data;
  p->k = k.data;
  p->v = v.data;
  p->out = out.data;
  p->lse = nullptr;
  p->varlen = varlen;
  p->nheads = nheads;
  p->nheads_k = nheads_k;
  p->head_dim = head_dim;
  p->softmax_scale = std::isnan(prm.softmax_scale)
                         ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))
                         : prm.softmax_scale;
  p->causal = prm.causal != 0;
  p->window_left = prm.window_size_left;
  p->window_right = p->causal ? 0 : prm.window_size_right;
  p->softcap = prm.softcap;

  if (varlen) {
    const TensorView& cq = cuq.t;
    const TensorView& ck = cuk.t;
    if (cq.dtype != DType::I32) {
      return set_error(FK_ERROR_DTYPE_MISMATCH, "cu_seqlens_q: dtype must be int32, got %s",
                       dtype_name(cq.dtype));
    }
    if (ck.dtype != DType::I32) {
      return set_error(FK_ERROR_DTYPE_MISMATCH, "cu_seqlens_k: dtype must be int32, got %s",
                       dtype_name(ck.dtype));
    }
    FK_RETURN_IF_ERROR(expect_rank("cu_seqlens_q", cq, 1, "(batch + 1,)"));
    FK_RETURN_IF_ERROR(expect_rank("cu_seqlens_k", ck, 1, "(batch + 1,)"));
    if (cq.shape[0] < 1) {
      return set_error(FK_ERROR_SHAPE_MISMATCH, "cu_seqlens_q: needs at least one entry (0)");
    }
    FK_RETURN_IF_ERROR(expect_dim("cu_seqlens_k", ck, 0, "length", cq.shape[0], "cu_seqlens_q"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("cu_seqlens_q", cq, "batch + 1"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("cu_seqlens_k", ck, "batch + 1"));
    p->batch = cq.shape[0] - 1;
    p->total_q = q.shape[0];
    p->total_k = k.shape[0];
    p->cu_seqlens_q = static_cast<const int32_t*>(cq.data);
    p->cu_seqlens_k = static_cast<const int32_t*>(ck.data);
    if (p->total_q > INT32_MAX) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "q: total rows %" PRId64 " exceed int32 cu_seqlens range", p->total_q);
    }
    if (p->total_k > INT32_MAX) {
      return set_error(FK_ERROR_SHAPE_MISMATCH,
                       "k: total rows %" PRId64 " exceed int32 cu_seqlens range", p->total_k);
    }
    FK_RETURN_IF_ERROR(check_cu_seqlens(ctx, launch, "cu_seqlens_q", cq, p->total_q,
                                        "max_seqlen_q", prm.max_seqlen_q, &p->seqlen_q));
    FK_RETURN_IF_ERROR(check_cu_seqlens(ctx, launch, "cu_seqlens_k", ck, p->total_k,
                                        "max_seqlen_k", prm.max_seqlen_k, &p->seqlen_k));
    p->q_batch_stride = p->k_batch_stride = p->v_batch_stride = p->o_batch_stride = 0;
    p->q_row_stride = q.stride[0];
    p->q_head_stride = q.stride[1];
    p->k_row_stride = k.stride[0];
    p->k_head_stride = k.stride[1];
    p->v_row_stride = v.stride[0];
    p->v_head_stride = v.stride[1];
    p->o_row_stride = out.stride[0];
    p->o_head_stride = out.stride[1];
  } else {
    p->batch = q.shape[0];
    p->seqlen_q = q.shape[1];
    p->seqlen_k = k.shape[1];
    p->total_q = p->batch * p->seqlen_q;
    p->total_k = p->batch * p->seqlen_k;
    p->cu_seqlens_q = p->cu_seqlens_k = nullptr;
    p->q_batch_stride = q.stride[0];
    p->q_row_stride = q.stride[1];
    p->q_head_stride = q.stride[2];
    p->k_batch_stride = k.stride[0];
    p->k_row_stride = k.stride[1];
    p->k_head_stride = k.stride[2];
    p->v_batch_stride = v.stride[0];
    p->v_row_stride = v.stride[1];
    p->v_head_stride = v.stride[2];
    p->o_batch_stride = out.stride[0];
    p->o_row_stride = out.stride[1];
    p->o_head_stride = out.stride[2];
  }
  OptTensor kv_seqlens, kv_table;
  if (kv) FK_RETURN_IF_ERROR(apply_kvcache(ctx, *kv, q, k, &kv_seqlens, &kv_table, p));
  if (fp8) {
    // The bf16 copies take 2 bytes per logical element (a broadcast view included): a size
    // past 2^62 bytes cannot be allocated anywhere; refused before any arithmetic wraps.
    const struct { const char* name; int64_t rows, heads; } copies[3] = {
        {"q", p->total_q, nheads}, {kname, p->total_k, nheads_k}, {vname, p->total_k, nheads_k}};
    for (const auto& c : copies) {
      int64_t n = 0;
      if (__builtin_mul_overflow(c.rows, c.heads, &n) || __builtin_mul_overflow(n, head_dim, &n) ||
          n > (int64_t(1) << 61)) {
        return set_error(FK_ERROR_OUT_OF_MEMORY,
                         "%s: its bf16 copy (2 bytes per logical element, %" PRId64 " rows x %" PRId64
                         " heads x %" PRId64 ") exceeds 2^62 bytes",
                         c.name, c.rows, c.heads, head_dim);
      }
    }
    *fp8->out = AttentionFp8Descales{};
    for (int i = 0; i < 3; ++i) {
      if (!dsc[i].valid) continue;
      const TensorView& t = dsc[i].t;  // fp32 (Accept::Float32)
      FK_RETURN_IF_ERROR(expect_rank(kDescaleNames[i], t, 2, "(batch, nheads_k)"));
      if (t.shape[0] != p->batch || t.shape[1] != nheads_k) {
        return set_error(FK_ERROR_SHAPE_MISMATCH,
                         "%s: shape (%" PRId64 ", %" PRId64 "), must be (batch, nheads_k) = (%" PRId64
                         ", %" PRId64 "): one factor per sequence and kv head (batch from %s, "
                         "nheads_k from %s; a per-tensor factor is a broadcast view, strides 0)",
                         kDescaleNames[i], t.shape[0], t.shape[1], int64_t(p->batch),
                         int64_t(nheads_k), varlen ? "cu_seqlens_q" : "q", kname);
      }
      fp8->out->ptr[i] = static_cast<const float*>(t.data);
      fp8->out->batch_stride[i] = t.shape[0] > 1 ? t.stride[0] : 0;
      fp8->out->head_stride[i] = t.shape[1] > 1 ? t.stride[1] : 0;
    }
  }
  const TensorView* dq_t = dsc[0].valid ? &dsc[0].t : nullptr;
  const TensorView* dk_t = dsc[1].valid ? &dsc[1].t : nullptr;
  const TensorView* dv_t = dsc[2].valid ? &dsc[2].t : nullptr;

  if (lse.valid) {
    const TensorView& l = lse.t;  // fp32 (to_opt_view with Accept::Float32)
    if (varlen) {
      FK_RETURN_IF_ERROR(expect_rank("lse", l, 2, "(nheads, total_q)"));
      FK_RETURN_IF_ERROR(expect_shape("lse", l, {{"nheads", nheads}, {"total_q", p->total_q}}, "q"));
      p->lse_batch_stride = 0;
      p->lse_head_stride = l.stride[0];
    } else {
      FK_RETURN_IF_ERROR(expect_rank("lse", l, 3, "(batch, nheads, seqlen_q)"));
      FK_RETURN_IF_ERROR(expect_shape("lse", l, {{"batch", p->batch}, {"nheads", nheads}, {"seqlen_q", p->seqlen_q}},
                                      "q"));
      p->lse_batch_stride = l.stride[0];
      p->lse_head_stride = l.stride[1];
    }
    FK_RETURN_IF_ERROR(expect_last_contiguous("lse", l, varlen ? "total_q" : "seqlen_q"));
    p->lse_row_stride = 1;
    p->lse = static_cast<float*>(l.data);
  } else {
    p->lse_batch_stride = p->lse_head_stride = p->lse_row_stride = 0;
  }
  // Outputs: no element written twice, no memory shared with an input.
  FK_RETURN_IF_ERROR(expect_no_self_overlap("out", out));
  const TensorView* sl_t = kv_seqlens.valid ? &kv_seqlens.t : nullptr;
  const TensorView* bt_t = kv_table.valid ? &kv_table.t : nullptr;
  FK_RETURN_IF_ERROR(expect_disjoint(
      "out", out, {{"q", &q, false}, {kname, &k, false}, {vname, &v, false},
                   {"cu_seqlens_q", cuq.valid ? &cuq.t : nullptr, false},
                   {"cu_seqlens_k", cuk.valid ? &cuk.t : nullptr, false},
                   {"cache_seqlens", sl_t, false}, {"block_table", bt_t, false},
                   {"descale_q", dq_t, false}, {"descale_k", dk_t, false},
                   {"descale_v", dv_t, false}}));
  if (lse.valid) {
    FK_RETURN_IF_ERROR(expect_no_self_overlap("lse", lse.t));
    FK_RETURN_IF_ERROR(expect_disjoint(
        "lse", lse.t, {{"q", &q, false}, {kname, &k, false}, {vname, &v, false},
                       {"out", &out, false},
                       {"cu_seqlens_q", cuq.valid ? &cuq.t : nullptr, false},
                       {"cu_seqlens_k", cuk.valid ? &cuk.t : nullptr, false},
                       {"cache_seqlens", sl_t, false}, {"block_table", bt_t, false},
                       {"descale_q", dq_t, false}, {"descale_k", dk_t, false},
                       {"descale_v", dv_t, false}}));
  }
  FK_RETURN_IF_ERROR(expect_workspace_disjoint(
      launch, {{"q", &q, false}, {kname, &k, false}, {vname, &v, false},
               {"cu_seqlens_q", cuq.valid ? &cuq.t : nullptr, false},
               {"cu_seqlens_k", cuk.valid ? &cuk.t : nullptr, false}, {"out", &out, false},
               {"lse", lse.valid ? &lse.t : nullptr, false}, {"cache_seqlens", sl_t, false},
               {"block_table", bt_t, false}, {"descale_q", dq_t, false},
               {"descale_k", dk_t, false}, {"descale_v", dv_t, false}}));
  // Nothing to compute when there are no output rows (batch, seqlen_q or nheads is 0).
  *empty = (p->total_q == 0 || nheads == 0 || p->batch == 0);
  // The fp8 form packs its bf16 problem instead (fp8_inner): the dequantisation reads p's
  // own layout.
  if (!*empty && !fp8) pack_gqa_decode(ctx, p);
  return FK_SUCCESS;
}

// ---- fk_attention_fp8_forward ------------------------------------------------------------

// The bf16 problem over copies at q, k, v (nullptr in the queries), GQA-packed like a bf16 call.
AttentionProblem fp8_inner(const fk_context_t* ctx, const AttentionProblem& p, void* q, void* k,
                           void* v) {
  AttentionProblem in = attention_fp8_inner(p, q, k, v);
  pack_gqa_decode(ctx, &in);
  return in;
}

const AttentionVariant* select_fp8(const fk_context_t* ctx, const AttentionProblem& p) {
  return select_attention(ctx, fp8_inner(ctx, p, nullptr, nullptr, nullptr));
}

// "<bf16 variant>+fp8_dequant", kept for the life of the process (names are static text).
const char* fp8_variant_name(const char* inner) {
  static std::mutex mu;
  static std::unordered_map<const char*, std::string> names;
  std::lock_guard<std::mutex> lock(mu);
  auto it = names.find(inner);
  if (it == names.end()) it = names.emplace(inner, std::string(inner) + "+fp8_dequant").first;
  return it->second.c_str();
}

struct Fp8RunState {
  const fk_context_t* ctx;
  const AttentionVariant* variant;
};

fk_status_t fp8_run_inner(const ExecContext& exec, AttentionProblem& inner, void* user) {
  const auto* st = static_cast<const Fp8RunState*>(user);
  pack_gqa_decode(st->ctx, &inner);
  return st->variant->run(exec, inner);
}

// The fp8 tensor-core kernel (Hopper): AUTO or a forced SM90 family, a problem it takes, and
// FLASHKIT_ATTENTION_FP8_DEQUANT not "1" (that runs the dequantise-then-bf16 path everywhere,
// read once per process).
constexpr const char* kFp8NativeName = "cuda.sm90.attention_fp8";
bool fp8_native(const fk_context_t* ctx, const AttentionProblem& p) {
#if defined(FLASHKIT_WITH_SM90)
  static const bool dequant_only = [] {
    const char* e = std::getenv("FLASHKIT_ATTENTION_FP8_DEQUANT");
    return e != nullptr && e[0] == '1' && e[1] == '\0';
  }();
  return !dequant_only && family_allowed(ctx, FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM90) &&
         cuda::sm90_attention::attention_fp8_supported(ctx->caps, p);
#else
  (void)ctx;
  (void)p;
  return false;
#endif
}

fk_status_t run_fp8(const fk_context_t* ctx, const fk_launch_t& l, const AttentionProblem& p,
                    const AttentionFp8Descales& d) {
#if defined(FLASHKIT_WITH_SM90)
  if (fp8_native(ctx, p)) {
    log_variant("attention_fp8", kFp8NativeName);
    return cuda::sm90_attention::attention_fp8(make_exec_context(ctx, &l), p, d);
  }
#endif
  const AttentionVariant* variant = select_fp8(ctx, p);
  if (!variant) return no_variant("attention_fp8");
  log_variant("attention_fp8", fp8_variant_name(variant->name));
  const ExecContext exec = make_exec_context(ctx, &l);
  if (ctx->backend == FK_BACKEND_CUDA) {
    Fp8RunState st{ctx, variant};
    return cuda::attention_fp8_dequant_run(exec, p, d, fp8_run_inner, &st);
  }
  // CPU: the same bf16 rounding of the dequantised values into host copies.
  std::vector<uint16_t> copies[3];
  const char* names[3] = {"q", "k", "v"};
  for (int t = 0; t < 3; ++t) {
    const Fp8Operand a = attention_fp8_operand(p, d, t);
    const int64_t n = a.elements();  // < 2^61 (build_problem)
    try {
      copies[t].resize(static_cast<size_t>(n));
    } catch (const std::exception&) {
      return set_error(FK_ERROR_OUT_OF_MEMORY,
                       "%s: host allocation of its bf16 copy (%" PRId64 " bytes) failed",
                       names[t], 2 * n);
    }
    int64_t b = 0;
    for (int64_t r = 0; r < a.rows; ++r) {
      int64_t off;
      if (a.cu) {
        while (b + 1 < a.batch && a.cu[b + 1] <= r) ++b;  // host entries, checked
        off = r * a.row_stride;
      } else {
        b = r / a.seqlen;
        off = b * a.batch_stride + (r - b * a.seqlen) * a.row_stride;
      }
      for (int64_t h = 0; h < a.heads; ++h) {
        const float scale =
            a.descale ? a.descale[b * a.descale_batch_stride + (h / a.group) * a.descale_head_stride]
                      : 1.0f;
        const uint8_t* in = a.src + off + h * a.head_stride;
        uint16_t* o = copies[t].data() + (r * a.heads + h) * a.head_dim;
        for (int64_t e = 0; e < a.head_dim; ++e)
          o[e] = float_to_bf16(fp8_e4m3_to_float(in[e]) * scale);
      }
    }
  }
  AttentionProblem inner =
      fp8_inner(ctx, p, copies[0].data(), copies[1].data(), copies[2].data());
  return variant->run(exec, inner);
}

}  // namespace

extern "C" {

fk_status_t fk_attention_params_init(fk_attention_params_t* params) {
  if (!params) return set_error(FK_ERROR_NULL_POINTER, "params: NULL");
  params->struct_size = sizeof *params;
  params->softmax_scale = NAN;
  params->causal = 0;
  params->window_size_left = -1;
  params->window_size_right = -1;
  params->softcap = 0.0f;
  params->max_seqlen_q = 0;
  params->max_seqlen_k = 0;
  return FK_SUCCESS;
}

fk_status_t fk_attention_forward(const fk_context_t* context, const fk_launch_t* launch,
                                 const fk_attention_params_t* params, const DLTensor* q,
                                 const DLTensor* k, const DLTensor* v,
                                 const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                                 const DLTensor* out, const DLTensor* lse) {
  return run_op<AttentionProblem>(
      "attention", context, launch,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse,
                             p, empty);
      },
      select_attention);
}

fk_status_t fk_attention_select_kernel(const fk_context_t* context,
                                       const fk_attention_params_t* params, const DLTensor* q,
                                       const DLTensor* k, const DLTensor* v,
                                       const DLTensor* cu_seqlens_q,
                                       const DLTensor* cu_seqlens_k, const DLTensor* out,
                                       const DLTensor* lse, const char** variant_name) {
  return name_op<AttentionProblem>(
      "attention", context, variant_name,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse,
                             p, empty);
      },
      select_attention);
}

fk_status_t fk_attention_workspace_size(const fk_context_t* context,
                                        const fk_attention_params_t* params, const DLTensor* q,
                                        const DLTensor* k, const DLTensor* v,
                                        const DLTensor* cu_seqlens_q,
                                        const DLTensor* cu_seqlens_k, const DLTensor* out,
                                        const DLTensor* lse, uint64_t* workspace_bytes) {
  return size_op<AttentionProblem>(
      "attention", context, workspace_bytes,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse,
                             p, empty);
      },
      select_attention);
}

fk_status_t fk_attention_fp8_forward(const fk_context_t* context, const fk_launch_t* launch,
                                     const fk_attention_params_t* params, const DLTensor* q,
                                     const DLTensor* k, const DLTensor* v,
                                     const DLTensor* descale_q, const DLTensor* descale_k,
                                     const DLTensor* descale_v, const DLTensor* cu_seqlens_q,
                                     const DLTensor* cu_seqlens_k, const DLTensor* out,
                                     const DLTensor* lse) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    fk_launch_t l;
    FK_RETURN_IF_ERROR(load_launch(launch, &l));
    AttentionProblem p{};
    AttentionFp8Descales d;
    const Fp8Args fp8{{descale_q, descale_k, descale_v}, &d};
    bool empty = false;
    FK_RETURN_IF_ERROR(build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k,
                                     out, lse, &p, &empty, nullptr, &fp8));
    if (empty) return FK_SUCCESS;
    return run_fp8(context, l, p, d);
  });
}

fk_status_t fk_attention_fp8_select_kernel(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k, const DLTensor* v, const DLTensor* descale_q, const DLTensor* descale_k,
    const DLTensor* descale_v, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
    const DLTensor* out, const DLTensor* lse, const char** variant_name) {
  AttentionFp8Descales d;
  const Fp8Args fp8{{descale_q, descale_k, descale_v}, &d};
  return query_op<AttentionProblem>(
      "attention_fp8", context, "variant_name", variant_name,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse,
                             p, empty, nullptr, &fp8);
      },
      select_fp8,
      [&](const AttentionVariant& v_, const AttentionProblem& p, bool) {
        *variant_name = fp8_native(context, p) ? kFp8NativeName : fp8_variant_name(v_.name);
      });
}

fk_status_t fk_attention_fp8_workspace_size(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k, const DLTensor* v, const DLTensor* descale_q, const DLTensor* descale_k,
    const DLTensor* descale_v, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
    const DLTensor* out, const DLTensor* lse, uint64_t* workspace_bytes) {
  AttentionFp8Descales d;
  const Fp8Args fp8{{descale_q, descale_k, descale_v}, &d};
  return query_op<AttentionProblem>(
      "attention_fp8", context, "workspace_bytes", workspace_bytes,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse,
                             p, empty, nullptr, &fp8);
      },
      select_fp8,
      [&](const AttentionVariant& v_, const AttentionProblem& p, bool empty) {
        *workspace_bytes = 0;
        if (empty || context->backend != FK_BACKEND_CUDA) return;
#if defined(FLASHKIT_WITH_SM90)
        if (fp8_native(context, p)) {
          *workspace_bytes = cuda::sm90_attention::attention_fp8_workspace(p);
          return;
        }
#endif
        const AttentionFp8Descales none{};  // the sizes do not depend on the factors
        const uint64_t nq = uint64_t(attention_fp8_operand(p, none, 0).elements()) * 2;
        const uint64_t nk = uint64_t(attention_fp8_operand(p, none, 1).elements()) * 2;
        const AttentionProblem in = fp8_inner(context, p, nullptr, nullptr, nullptr);
        *workspace_bytes =
            workspace_for({nq, nk, nk}) + (v_.workspace ? v_.workspace(context->caps, in) : 0);
      });
}

fk_status_t fk_attention_kvcache_forward(const fk_context_t* context, const fk_launch_t* launch,
                                         const fk_attention_params_t* params, const DLTensor* q,
                                         const DLTensor* k_cache, const DLTensor* v_cache,
                                         const DLTensor* cache_seqlens,
                                         const DLTensor* block_table, const DLTensor* out,
                                         const DLTensor* lse) {
  const KvCacheArgs kv{cache_seqlens, block_table};
  return run_op<AttentionProblem>(
      "attention_kvcache", context, launch,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k_cache, v_cache, nullptr, nullptr, out, lse,
                             p, empty, &kv);
      },
      select_attention);
}

fk_status_t fk_attention_kvcache_select_kernel(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* cache_seqlens,
    const DLTensor* block_table, const DLTensor* out, const DLTensor* lse,
    const char** variant_name) {
  const KvCacheArgs kv{cache_seqlens, block_table};
  return name_op<AttentionProblem>(
      "attention_kvcache", context, variant_name,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k_cache, v_cache, nullptr, nullptr, out, lse,
                             p, empty, &kv);
      },
      select_attention);
}

fk_status_t fk_attention_kvcache_workspace_size(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* cache_seqlens,
    const DLTensor* block_table, const DLTensor* out, const DLTensor* lse,
    uint64_t* workspace_bytes) {
  const KvCacheArgs kv{cache_seqlens, block_table};
  return size_op<AttentionProblem>(
      "attention_kvcache", context, workspace_bytes,
      [&](const fk_launch_t& l, AttentionProblem* p, bool* empty) {
        return build_problem(context, l, params, q, k_cache, v_cache, nullptr, nullptr, out, lse,
                             p, empty, &kv);
      },
      select_attention);
}

}  // extern "C"
