// The attention kernels' shared stride rule: every stride of q, k, v and out is checked against
// the extent it steps over, in the copy's view of the problem (varlen: one batch entry of
// total_q / total_k rows; batched: `batch` entries of seqlen_q / seqlen_k rows). What a stride
// must satisfy is the kernel's own predicate `ok(stride, extent)`.
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace attn {

// A paged KV cache (block_table) steps k and v by pages of page_size rows, num_pages of them.
template <class StrideOk>
bool all_strides(const AttentionProblem& p, StrideOk ok) {
  const int64_t rows_q = p.varlen ? p.total_q : p.seqlen_q;
  const int64_t batches = p.varlen ? 1 : p.batch;
  const bool paged = p.block_table != nullptr;
  const int64_t rows_k = paged ? p.page_size : p.varlen ? p.total_k : p.seqlen_k;
  const int64_t batches_k = paged ? p.num_pages : batches;
  return ok(p.q_row_stride, rows_q) && ok(p.q_head_stride, p.nheads) &&
         ok(p.q_batch_stride, batches) && ok(p.o_row_stride, rows_q) &&
         ok(p.o_head_stride, p.nheads) && ok(p.o_batch_stride, batches) &&
         ok(p.k_row_stride, rows_k) && ok(p.k_head_stride, p.nheads_k) &&
         ok(p.k_batch_stride, batches_k) && ok(p.v_row_stride, rows_k) &&
         ok(p.v_head_stride, p.nheads_k) && ok(p.v_batch_stride, batches_k);
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
