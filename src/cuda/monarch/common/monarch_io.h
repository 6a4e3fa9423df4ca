// What the fused Monarch kernels (sm80 and sm90) read of a MonarchProblem: operands, extents
// and strides in elements. Their kernel argument structs derive from it and add their own plan
// fields (tiling, shared-memory layout).
#pragma once

#include <cstdint>

#include "core/problems.h"

namespace flashkit {
namespace cuda {
namespace monarch_io {

struct MonarchIO {
  const void* x;
  const void* w1;
  const void* w2;
  const void* bias;  // nullptr: none
  void* out;
  int64_t tokens, x_stride, out_stride;
  int32_t p, q, r, s, nb2;
  int32_t bias_dtype;  // DType
};

inline MonarchIO from_problem(const MonarchProblem& p) {
  MonarchIO io;
  io.x = p.x;
  io.w1 = p.w1;
  io.w2 = p.w2;
  io.bias = p.bias;
  io.out = p.out;
  io.tokens = p.tokens;
  io.x_stride = p.x_row_stride;
  io.out_stride = p.out_row_stride;
  io.p = static_cast<int32_t>(p.p);
  io.q = static_cast<int32_t>(p.q);
  io.r = static_cast<int32_t>(p.r);
  io.s = static_cast<int32_t>(p.s);
  io.nb2 = static_cast<int32_t>(p.nblocks2);
  io.bias_dtype = static_cast<int32_t>(p.bias_dtype);
  return io;
}

}  // namespace monarch_io
}  // namespace cuda
}  // namespace flashkit
