// The context object behind the opaque fk_context_t handle. Immutable after creation.
#pragma once

#include "core/backend.h"
#include "flashkit/flashkit.h"

struct fk_context {
  fk_backend_t backend = FK_BACKEND_CPU;          // resolved: CPU or CUDA
  fk_kernel_family_t forced_family = FK_KERNEL_FAMILY_AUTO;  // AUTO, GENERIC, SM80 or SM90
  fk_kernel_family_t best_family = FK_KERNEL_FAMILY_CPU;     // what AUTO resolves to
  int32_t device_ordinal = -1;
  int32_t num_threads = 1;
  flashkit::DeviceCaps caps;
};

namespace flashkit {

// Builds the ExecContext of one call from the context and the (validated) launch.
inline ExecContext make_exec_context(const fk_context_t* ctx, const fk_launch_t* launch) {
  ExecContext e;
  e.context = ctx;
  e.num_threads = ctx->num_threads;
  e.device_ordinal = ctx->device_ordinal;
  e.caps = &ctx->caps;
  if (launch) {
    e.stream = launch->stream;
    e.workspace = launch->workspace;
    e.workspace_bytes = launch->workspace_bytes;
  }
  return e;
}

}  // namespace flashkit
