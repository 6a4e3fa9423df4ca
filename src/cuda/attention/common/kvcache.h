// KV-cache addressing on the device (fk_attention_kvcache_forward; AttentionProblem::seqused_k
// and block_table). The entries stay in device memory and are never checked on the host, so
// each one is clamped before use: a sequence length to [0, capacity], a page index to
// [0, num_pages - 1]. Wrong entries then give an unspecified result but never an address
// outside k_cache and v_cache; valid entries pass through unchanged.
#pragma once

#include <cstdint>

namespace flashkit {
namespace cuda {
namespace attn {

// Valid keys of sequence b: seqused_k[b] clamped to [0, capacity].
__device__ __forceinline__ int64_t cache_len(const int32_t* seqused_k, int64_t b,
                                             int64_t capacity) {
  return min(max(int64_t(seqused_k[b]), int64_t(0)), capacity);
}

// Page holding key n of sequence b (n < capacity), clamped to the pool.
__device__ __forceinline__ int64_t cache_page(const int32_t* block_table, int64_t table_stride,
                                              int64_t b, int64_t n, int64_t page_size,
                                              int64_t num_pages) {
  const int64_t e = block_table[b * table_stride + n / page_size];
  return min(max(e, int64_t(0)), num_pages - 1);
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
