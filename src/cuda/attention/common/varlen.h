// Sequence bounds of the varlen form, read from cu_seqlens on the device.
//
// When the caller passes max_seqlen_q/k (fk_attention_params_t), the host does not read
// cu_seqlens (that would wait for the stream), so the kernels cannot assume the entries were
// checked. Each entry is clamped to [0, total] and each end to at least its start: wrong entries
// then give an unspecified result but never an address outside the packed tensors. Valid entries
// pass through unchanged.
#pragma once

#include <cstdint>

namespace flashkit {
namespace cuda {
namespace attn {

template <class Int>
__device__ __forceinline__ void varlen_rows(const int32_t* cu_seqlens, int64_t b, int64_t total,
                                            Int* row0, Int* len) {
  const int64_t lo = min(max(int64_t(cu_seqlens[b]), int64_t(0)), total);
  const int64_t hi = min(max(int64_t(cu_seqlens[b + 1]), lo), total);
  *row0 = Int(lo);
  *len = Int(hi - lo);
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
