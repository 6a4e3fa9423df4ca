// fk_attention_fp8_forward's inputs as its dequantisation reads them, shared by the CPU loop
// (src/api/attention_api.cpp) and the CUDA kernel (src/cuda/attention/common/fp8_dequant.cu).
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {

// One of q, k, v: (rows, heads, head_dim) e4m3fn codes with head_dim contiguous. Its bf16 copy
// is contiguous in the same order (attention_fp8_inner's strides).
struct Fp8Operand {
  const uint8_t* src;
  int64_t rows;       // total rows (batched: batch * seqlen)
  int64_t seqlen;     // batched: rows per sequence (>= 1); varlen: unused
  const int32_t* cu;  // varlen: (batch + 1,) row offsets, else nullptr
  int64_t batch;
  int64_t heads;      // heads of this tensor
  int64_t group;      // heads per descale column (q: nheads / nheads_k; k, v: 1)
  int64_t head_dim;
  int64_t batch_stride, row_stride, head_stride;  // of src, elements (batch_stride: batched)
  const float* descale;  // nullptr: factor 1
  int64_t descale_batch_stride, descale_head_stride;

  int64_t elements() const { return rows * heads * head_dim; }
};

// Operand t (0 q, 1 k, 2 v) of the fp8 problem `p` (unpacked layout) with its factors `d`.
inline Fp8Operand attention_fp8_operand(const AttentionProblem& p, const AttentionFp8Descales& d,
                                        int t) {
  const bool is_q = t == 0;
  Fp8Operand a{};
  a.src = static_cast<const uint8_t*>(t == 0 ? p.q : t == 1 ? p.k : p.v);
  a.rows = is_q ? p.total_q : p.total_k;
  const int64_t seqlen = is_q ? p.seqlen_q : p.seqlen_k;
  a.seqlen = seqlen > 0 ? seqlen : 1;
  a.cu = p.varlen ? (is_q ? p.cu_seqlens_q : p.cu_seqlens_k) : nullptr;
  a.batch = p.batch;
  a.heads = is_q ? p.nheads : p.nheads_k;
  a.group = is_q && p.nheads_k > 0 && p.nheads / p.nheads_k > 0 ? p.nheads / p.nheads_k : 1;
  a.head_dim = p.head_dim;
  a.batch_stride = t == 0 ? p.q_batch_stride : t == 1 ? p.k_batch_stride : p.v_batch_stride;
  a.row_stride = t == 0 ? p.q_row_stride : t == 1 ? p.k_row_stride : p.v_row_stride;
  a.head_stride = t == 0 ? p.q_head_stride : t == 1 ? p.k_head_stride : p.v_head_stride;
  a.descale = d.ptr[t];
  a.descale_batch_stride = d.batch_stride[t];
  a.descale_head_stride = d.head_stride[t];
  return a;
}

}  // namespace flashkit
