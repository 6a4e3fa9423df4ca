// The common tail of every op's entry points: validate the arguments into a problem, pick the
// first matching variant from the op's dispatch table, then run it (fk_<op>) or name it
// (fk_<op>_select_kernel). Each src/api/<op>_api.cpp supplies only its `build` function.
#pragma once

#include "api/validate.h"

namespace flashkit {

// No dispatch row takes a valid call: the last CUDA row (generic) declines only what the device
// cannot hold (generic attention on a GPU with less than 50 KB of shared memory per block:
// none that this build runs on).
inline fk_status_t no_variant(const char* op) {
  return set_error(FK_ERROR_NOT_SUPPORTED,
                   "%s: no kernel of this build takes this call on this device (its shared "
                   "memory per block is too small); the CPU backend runs every op",
                   op);
}

// `build(launch, &problem, &empty)` validates; `select(context, problem)` returns the variant.
template <class Problem, class Build, class Select>
fk_status_t run_op(const char* op, const fk_context_t* context, const fk_launch_t* launch,
                   Build&& build, Select select) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    fk_launch_t l;
    FK_RETURN_IF_ERROR(load_launch(launch, &l));
    Problem p{};
    bool empty = false;
    FK_RETURN_IF_ERROR(build(l, &p, &empty));
    if (empty) return FK_SUCCESS;  // zero-sized: nothing to launch
    const auto* variant = select(context, p);
    if (!variant) return no_variant(op);
    log_variant(op, variant->name);
    return variant->run(make_exec_context(context, &l), p);
  });
}

// The queries (fk_<op>_select_kernel, fk_<op>_workspace_size): validate like the op (default
// launch), select its variant, and hand it to `answer(variant, problem, empty)`, which fills the
// caller's out-parameter `out` (named `out_name`, checked for NULL first).
template <class Problem, class Build, class Select, class Out, class Answer>
fk_status_t query_op(const char* op, const fk_context_t* context, const char* out_name, Out* out,
                     Build&& build, Select select, Answer&& answer) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    if (!out) return set_error(FK_ERROR_NULL_POINTER, "%s: NULL", out_name);
    fk_launch_t l;
    fk_launch_init(&l);
    Problem p{};
    bool empty = false;
    FK_RETURN_IF_ERROR(build(l, &p, &empty));
    const auto* variant = select(context, p);
    if (!variant) return no_variant(op);
    answer(*variant, p, empty);
    return FK_SUCCESS;
  });
}

template <class Problem, class Build, class Select>
fk_status_t name_op(const char* op, const fk_context_t* context, const char** variant_name,
                    Build&& build, Select select) {
  return query_op<Problem>(op, context, "variant_name", variant_name, build, select,
                           [&](const auto& v, const Problem&, bool) { *variant_name = v.name; });
}

// fk_<op>_workspace_size(): what the selected variant's scratch would take (0 for a zero-sized
// problem or a variant without scratch).
template <class Problem, class Build, class Select>
fk_status_t size_op(const char* op, const fk_context_t* context, uint64_t* workspace_bytes,
                    Build&& build, Select select) {
  return query_op<Problem>(
      op, context, "workspace_bytes", workspace_bytes, build, select,
      [&](const auto& v, const Problem& p, bool empty) {
        *workspace_bytes = !empty && v.workspace ? v.workspace(context->caps, p) : 0;
      });
}

}  // namespace flashkit
