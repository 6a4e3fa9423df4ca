// CUDA error -> fk_status_t mapping. Every CUDA runtime call and every kernel launch in the CUDA
// backend goes through these, so a failure always reaches the caller as a status plus a sentence
// naming the operation and the CUDA error (the library never prints or aborts).
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace flashkit {
namespace cuda {

// Records `err` (which must not be cudaSuccess) with set_error() and returns its status:
// allocation failures are FK_ERROR_OUT_OF_MEMORY, errors that mean "this kernel could not be
// started" (bad grid, too many resources, no image for this GPU) are FK_ERROR_KERNEL_LAUNCH, and
// everything else (sticky faults of earlier kernels, driver trouble) is FK_ERROR_DEVICE.
fk_status_t cuda_error(cudaError_t err, const char* what);

inline fk_status_t check(cudaError_t err, const char* what) {
  return err == cudaSuccess ? FK_SUCCESS : cuda_error(err, what);
}

// Checks (and clears) the launch error of the kernel just enqueued. It does not wait for the
// kernel: faults during execution surface at a later synchronising call, as in all of CUDA.
fk_status_t check_launch(const char* kernel);

// Makes `kernel` (on the current device) accept launches with `bytes` of dynamic shared memory:
// raises its cudaFuncAttributeMaxDynamicSharedMemorySize when it is below `bytes`, and never
// lowers it. For kernels whose dynamic shared memory depends on the call: setting the attribute
// to each call's own size let two host threads lower it under each other's launch (the launch
// then failed). The check and the raise are one step under a process-wide lock. `what` names
// the operation in the error message.
fk_status_t raise_dynamic_smem_limit(const void* kernel, size_t bytes, const char* what);

}  // namespace cuda
}  // namespace flashkit

// Returns from the enclosing function with the mapped status if a CUDA call failed.
#define FK_CUDA_TRY(expr, what) FK_RETURN_IF_ERROR(::flashkit::cuda::check((expr), (what)))
