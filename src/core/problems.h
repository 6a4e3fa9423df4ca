// One problem struct per operation: every pointer, extent, stride and option a kernel needs,
// already validated by src/api/. Kernels read only these (never DLTensors). Each struct is
// what FlashAttention's `Flash_fwd_params` is to its kernels: the single contract between
// validation/dispatch and the kernel families.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace flashkit {

// ---------------------------------------------------------------------------------------------
// Attention. Batched form: q (batch, seqlen_q, nheads, head_dim) etc. Varlen form: q
// (total_q, nheads, head_dim); kernels then take sequence b as rows
// [cu_seqlens_q[b], cu_seqlens_q[b+1]) and batch = number of sequences.
// For uniform indexing both forms are described with explicit strides:
//   element (b, i, h, d) of q is at q.data + b*q_batch_stride + (row0_q(b) + i)*q_row_stride
//   + h*q_head_stride + d, where row0_q(b) = cu_seqlens_q[b] (varlen) or 0 (batched), and
//   q_batch_stride = 0 in the varlen form.
// ---------------------------------------------------------------------------------------------
struct AttentionProblem {
  DType dtype;  // of q, k, v, out
  Device device;
  void* q;
  void* k;
  void* v;
  void* out;
  float* lse;  // nullptr when not requested
  const int32_t* cu_seqlens_q;  // nullptr in the batched form; device memory on CUDA
  const int32_t* cu_seqlens_k;
  bool varlen;

  int64_t batch;
  int64_t seqlen_q;  // batched: the extent; varlen: max over sequences (read from cu_seqlens,
                     // or the caller's max_seqlen_q capped at total_q; see varlen.h)
  int64_t seqlen_k;  // batched: the extent; varlen: the same for the keys
  int64_t total_q;   // varlen: rows of q; batched: batch * seqlen_q
  int64_t total_k;   // varlen: rows of k/v; paged KV cache: rows of the pool that exist
                     // (num_pages x page_size, less where the last page is partial)
  int64_t nheads;
  int64_t nheads_k;
  int64_t head_dim;  // of q and k and v (equal)

  // Strides in elements.
  int64_t q_batch_stride, q_row_stride, q_head_stride;
  int64_t k_batch_stride, k_row_stride, k_head_stride;
  int64_t v_batch_stride, v_row_stride, v_head_stride;
  int64_t o_batch_stride, o_row_stride, o_head_stride;
  // lse element (b, h, i): lse + b*lse_batch_stride + h*lse_head_stride + (row0_q(b) + i)
  // * lse_row_stride. Varlen: lse is (nheads, total_q), lse_batch_stride = 0.
  int64_t lse_batch_stride, lse_head_stride, lse_row_stride;

  float softmax_scale;  // resolved (never NaN)
  bool causal;
  // Window with bottom-right alignment, resolved: -1 means unbounded. causal => right = 0.
  int64_t window_left;
  int64_t window_right;
  float softcap;  // 0 = off

  // KV cache (fk_attention_kvcache_forward; batched q only, varlen false). seqused_k: (batch,)
  // valid keys of each sequence, the mask's seqlen_k per sequence (nullptr: seqlen_k); kernels
  // clamp entries to [0, seqlen_k]. block_table: paged k/v. Key n of sequence b is then at
  // k + page * k_batch_stride + (n % page_size) * k_row_stride (+ head), with page =
  // block_table[b * block_table_stride + n / page_size] clamped to [0, num_pages - 1];
  // seqlen_k = max_blocks_per_seq * page_size is the capacity. Rows that read these set them.
  const int32_t* seqused_k = nullptr;
  const int32_t* block_table = nullptr;
  int64_t block_table_stride = 0;
  int64_t page_size = 0;
  int64_t num_pages = 0;
};

// fk_attention_fp8_forward's descale factors, fp32 (batch, nheads_k) each, in the order q, k, v
// (nullptr: factor 1). The factor of head h (a kv head for k and v; query head h uses kv head
// h / (nheads / nheads_k)) of sequence b is ptr[b * batch_stride + h * head_stride].
struct AttentionFp8Descales {
  const float* ptr[3] = {nullptr, nullptr, nullptr};
  int64_t batch_stride[3] = {0, 0, 0};
  int64_t head_stride[3] = {0, 0, 0};
};

// fk_attention_fp8_forward's bf16 problem: `p` (fp8, unpacked layout) over contiguous bf16
// copies of q, k and v in p's layout ((batch, seqlen, heads, head_dim) or, varlen, (total,
// heads, head_dim)).
inline AttentionProblem attention_fp8_inner(const AttentionProblem& p, void* q, void* k,
                                            void* v) {
  AttentionProblem in = p;
  in.dtype = DType::BF16;
  in.q = q;
  in.k = k;
  in.v = v;
  in.q_head_stride = in.k_head_stride = in.v_head_stride = p.head_dim;
  in.q_row_stride = p.nheads * p.head_dim;
  in.k_row_stride = in.v_row_stride = p.nheads_k * p.head_dim;
  in.q_batch_stride = p.varlen ? 0 : p.seqlen_q * p.nheads * p.head_dim;
  in.k_batch_stride = in.v_batch_stride = p.varlen ? 0 : p.seqlen_k * p.nheads_k * p.head_dim;
  return in;
}

// True when `p` reads a KV cache's per-sequence lengths or page table (kernel rows that do
// not implement them decline such problems).
inline bool attention_uses_kvcache(const AttentionProblem& p) {
  return p.seqused_k != nullptr || p.block_table != nullptr;
}

// ---------------------------------------------------------------------------------------------
// GEMM: D = act(alpha * op(A) @ op(B) + beta * C + bias). All operands described as logical
// matrices with explicit strides, so transposes and column-major layouts are already folded
// in: logical A(m, k) is at a + batch*a_batch_stride + m*a_stride_m + k*a_stride_k.
// ---------------------------------------------------------------------------------------------
enum class Activation : int32_t { None = 0, Relu = 1, GeluTanh = 2, GeluErf = 3 };

struct GemmProblem {
  Device device;
  DType ab_dtype;  // A (and B, except when both are fp8 of different formats)
  DType b_dtype;   // B: equal to ab_dtype unless A and B are fp8 of different formats
  DType cd_dtype;  // C and D
  DType bias_dtype;
  const void* a;
  const void* b;
  const void* c;     // nullptr when beta == 0 or absent
  const void* bias;  // nullptr when absent; contiguous (N,)
  void* d;

  int64_t batch, M, N, K;
  int64_t a_batch_stride, a_stride_m, a_stride_k;
  int64_t b_batch_stride, b_stride_k, b_stride_n;
  int64_t c_batch_stride, c_stride_m, c_stride_n;
  int64_t d_batch_stride, d_stride_m, d_stride_n;
  // Convenience for fast paths: the transpose flags the caller gave (informational; the
  // strides above are authoritative).
  bool trans_a, trans_b;

  float alpha, beta;
  Activation activation;

  // fk_gemm_scaled's dequantisation scales (fp32, device memory on CUDA), nullptr = 1:
  // scale_a has M values (per row) when scale_a_per_row, else one; scale_b N values (per
  // column) when scale_b_per_col, else one. Always nullptr for fk_gemm.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  bool scale_a_per_row = false;
  bool scale_b_per_col = false;
};

// ---------------------------------------------------------------------------------------------
// Monarch (m2's blockdiag_butterfly_multiply): x (tokens, nblocks1*p), w1 (nblocks1, q, p),
// w2 (nblocks2, s, r), nblocks1*q == nblocks2*r, out (tokens, nblocks2*s). Weights compact.
// ---------------------------------------------------------------------------------------------
struct MonarchProblem {
  Device device;
  DType dtype;  // x, w1, w2, out
  DType bias_dtype;
  const void* x;
  const void* w1;
  const void* w2;
  const void* bias;  // nullptr or (nblocks2*s,)
  void* out;
  int64_t tokens;
  int64_t nblocks1, q, p;  // w1 shape
  int64_t nblocks2, s, r;  // w2 shape
  int64_t x_row_stride, out_row_stride;  // elements; last dim contiguous
};

// Block-diagonal linear: x (tokens, nblocks*p), w (nblocks, q, p), out (tokens, nblocks*q).
struct BlockdiagProblem {
  Device device;
  DType dtype;
  DType bias_dtype;
  const void* x;
  const void* w;
  const void* bias;  // nullptr or (nblocks*q,)
  void* out;
  int64_t tokens, nblocks, q, p;
  int64_t x_row_stride, out_row_stride;
};

// ---------------------------------------------------------------------------------------------
// FFT convolution. u, y, gates (batch, channels, seqlen); k (channels, filter_len); D
// (channels,). Mode and fft_size come from the plan (already validated: fft_size a power of
// two large enough for the mode).
// ---------------------------------------------------------------------------------------------
enum class FFTConvMode : int32_t { Causal = 0, Circular = 1, Bidirectional = 2 };

struct FFTConvPlanState;  // backend-owned per-plan state (twiddles, cached filter spectrum)

struct FFTConvProblem {
  Device device;
  DType dtype;  // u, y, gates
  DType k_dtype;
  DType d_dtype;
  FFTConvMode mode;
  int64_t batch, channels, seqlen, filter_len, fft_size;
  bool filter_constant;  // plan flag FK_FFTCONV_FILTER_CONSTANT

  const void* u;
  const void* k;
  const void* D;         // nullptr if absent
  const void* pregate;   // nullptr if absent
  const void* postgate;  // nullptr if absent
  void* y;
  // Strides in elements; last dim of u/y/gates/k contiguous; D contiguous.
  int64_t u_batch_stride, u_channel_stride;
  int64_t y_batch_stride, y_channel_stride;
  int64_t pre_batch_stride, pre_channel_stride;
  int64_t post_batch_stride, post_channel_stride;
  int64_t k_channel_stride;

  FFTConvPlanState* state;  // owned by the plan; backends cache here (guarded by its mutex)
};

}  // namespace flashkit
