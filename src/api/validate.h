// Argument checking shared by every entry point: turns a borrowed DLTensor into a TensorView
// or returns the status and message that name the argument and the rule it broke.
#pragma once

#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>

#include "core/context.h"
#include "core/error.h"
#include "core/tensor.h"
#include "core/unwind.h"
#include "flashkit/flashkit.h"

namespace flashkit {

// The element types an argument may have: fp32/fp16/bf16 (the default), int32 only (index
// tensors), fp32/fp16/bf16 and the two fp8 types (fk_gemm_scaled's a and b), or fp32 only
// (fk_gemm_scaled's scales).
enum class Accept { Float, Int32, FloatOrFp8, Float32 };

// Converts `t` (named `name` in messages) into `out`, checking: not NULL; rank <= kMaxRank;
// extents >= 0; strides >= 0; dtype one of `accept`; data not NULL when non-empty; data aligned
// to the element size; device usable by `ctx`.
fk_status_t to_view(const fk_context_t* ctx, const char* name, const DLTensor* t,
                    TensorView* out, Accept accept = Accept::Float);

// Same, for an optional tensor: NULL gives `out->valid == false`.
fk_status_t to_opt_view(const fk_context_t* ctx, const char* name, const DLTensor* t,
                        OptTensor* out, Accept accept = Accept::Float);

fk_status_t expect_rank(const char* name, const TensorView& t, int rank, const char* dims);
fk_status_t expect_last_contiguous(const char* name, const TensorView& t, const char* dim);
fk_status_t expect_compact(const char* name, const TensorView& t);
fk_status_t expect_float(const char* name, const TensorView& t);
fk_status_t expect_same_dtype(const char* name, const TensorView& t, const char* other_name,
                              const TensorView& other);
fk_status_t expect_dim(const char* name, const TensorView& t, int dim, const char* dim_name,
                       int64_t expected, const char* expected_from);
// One named dimension of a whole-shape check (expect_shape).
struct DimRule {
  const char* name;
  int64_t expected;
};
// Every dimension of `t` (its rank already checked) equal to the rule's: otherwise the first
// mismatching one as expect_dim words it, followed by the whole layout and both shapes, e.g.
// "lse: nheads is 37 but q gives 8; expected (batch, nheads, seqlen_q) = (2, 8, 37), got
// (2, 37, 8)".
fk_status_t expect_shape(const char* name, const TensorView& t, std::initializer_list<DimRule> dims,
                         const char* expected_from);
fk_status_t check_context(const fk_context_t* ctx);

// An output must not write two elements to one address: after sorting its dimensions by
// stride, each stride must exceed the span of the dimensions below it (a sufficient condition
// that rejects stride-0 broadcasting outputs and other self-overlapping views).
fk_status_t expect_no_self_overlap(const char* name, const TensorView& t);

// An output must not share memory with an input (byte ranges intersect). `same_ok` accepts the
// exact same view (same data, dtype, shape and strides): the in-place form GEMM allows for c.
struct NamedView {
  const char* name;
  const TensorView* view;  // nullptr: argument absent
  bool same_ok;
};
fk_status_t expect_disjoint(const char* out_name, const TensorView& out,
                            std::initializer_list<NamedView> inputs);

// The launch's workspace (fk_launch_t::workspace, workspace_bytes) must not share memory with
// any tensor of the call: its scratch would overwrite them. No workspace: nothing to check.
fk_status_t expect_workspace_disjoint(const fk_launch_t& launch,
                                      std::initializer_list<NamedView> tensors);

// Copies a caller's struct (whose first member is uint32_t struct_size) over defaults. Accepts
// exactly the size this library knows (sizeof(T)): the init functions write the whole struct, so
// a caller built against an older, shorter one would already have been overrun (a struct that
// grows is an ABI change: FK_ABI_VERSION); NULL keeps the defaults.
template <class T>
fk_status_t load_struct(const char* name, const T* user, T* out) {
  if (!user) return FK_SUCCESS;
  const size_t size = user->struct_size;
  if (size != sizeof(T)) {
    return set_error(FK_ERROR_BAD_STRUCT_SIZE,
                     "%s: struct_size %u is not %u; fill it with its fk_*_init() function",
                     name, static_cast<unsigned>(user->struct_size),
                     static_cast<unsigned>(sizeof(T)));
  }
  std::memcpy(out, user, sizeof(T));
  return FK_SUCCESS;
}

fk_status_t load_launch(const fk_launch_t* user, fk_launch_t* out);

// Runs `body` and converts escaping exceptions into statuses: the C ABI never throws.
template <class F>
fk_status_t guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return set_error(FK_ERROR_OUT_OF_MEMORY, "host allocation failed");
  } catch (const std::exception& e) {
    return set_error(FK_ERROR_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    rethrow_if_forced_unwind();  // thread cancellation (e.g. from a log callback) goes on
    return set_error(FK_ERROR_INTERNAL, "internal error: unknown exception");
  }
}

// Logs which variant ran (debug level) and returns its status.
void log_variant(const char* op, const char* variant);

}  // namespace flashkit
