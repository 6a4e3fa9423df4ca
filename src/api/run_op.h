// The common tail of every op's entry points: validate the arguments into a problem, pick the
// first matching variant from the op's dispatch table, then run it (fk_<op>) or name it
// (fk_<op>_select_kernel). Each src/api/<op>_api.cpp supplies only its `build` function.
#pragma once

#include "api/validate.h"

namespace flashkit {

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
    if (!variant) return set_error(FK_ERROR_INTERNAL, "%s: no kernel variant matched", op);
    log_variant(op, variant->name);
    return variant->run(make_exec_context(context, &l), p);
  });
}

template <class Problem, class Build, class Select>
fk_status_t name_op(const char* op, const fk_context_t* context, const char** variant_name,
                    Build&& build, Select select) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    if (!variant_name) return set_error(FK_ERROR_NULL_POINTER, "variant_name: NULL");
    fk_launch_t l;
    fk_launch_init(&l);
    Problem p{};
    bool empty = false;
    FK_RETURN_IF_ERROR(build(l, &p, &empty));
    const auto* variant = select(context, p);
    if (!variant) return set_error(FK_ERROR_INTERNAL, "%s: no kernel variant matched", op);
    *variant_name = variant->name;
    return FK_SUCCESS;
  });
}

// fk_<op>_workspace_size(): validates like the op, then asks the selected variant what
// scratch it would take (0 for a zero-sized problem or a variant without scratch).
template <class Problem, class Build, class Select>
fk_status_t size_op(const char* op, const fk_context_t* context, uint64_t* workspace_bytes,
                    Build&& build, Select select) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    if (!workspace_bytes) return set_error(FK_ERROR_NULL_POINTER, "workspace_bytes: NULL");
    fk_launch_t l;
    fk_launch_init(&l);
    Problem p{};
    bool empty = false;
    FK_RETURN_IF_ERROR(build(l, &p, &empty));
    if (empty) {
      *workspace_bytes = 0;
      return FK_SUCCESS;
    }
    const auto* variant = select(context, p);
    if (!variant) return set_error(FK_ERROR_INTERNAL, "%s: no kernel variant matched", op);
    *workspace_bytes = variant->workspace ? variant->workspace(context->caps, p) : 0;
    return FK_SUCCESS;
  });
}

}  // namespace flashkit
