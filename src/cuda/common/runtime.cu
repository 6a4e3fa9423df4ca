// The CUDA runtime services of src/core/cuda_runtime.h, plus the CUDA error mapping shared by
// every CUDA kernel family (src/cuda/common/check.h).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "core/cuda_runtime.h"
#include "core/error.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"

namespace flashkit {
namespace cuda {

fk_status_t cuda_error(cudaError_t err, const char* what) {
  fk_status_t status = FK_ERROR_DEVICE;
  switch (err) {
    case cudaErrorMemoryAllocation:
      status = FK_ERROR_OUT_OF_MEMORY;
      break;
    case cudaErrorInvalidConfiguration:
    case cudaErrorLaunchOutOfResources:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorJitCompilerNotFound:
    case cudaErrorInvalidSource:
    case cudaErrorSharedObjectInitFailed:
      status = FK_ERROR_KERNEL_LAUNCH;
      break;
    default:
      break;
  }
  return set_error(status, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

fk_status_t check_launch(const char* kernel) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return FK_SUCCESS;
  // A sticky fault of an earlier kernel also shows up here; cuda_error() reports it as a
  // device error rather than as this kernel's launch failure.
  return cuda_error(err, kernel);
}

fk_status_t raise_dynamic_smem_limit(const void* kernel, size_t bytes, const char* what) {
  // One lock for every kernel: the query and the raise are short host calls, and no other code
  // sets this attribute on the kernels that come here. The error is reported after the lock is
  // released: set_error() runs the log callback, which may call flashkit (and come back here).
  static std::mutex lock;
  cudaError_t err = cudaSuccess;
  {
    std::lock_guard<std::mutex> hold(lock);
    cudaFuncAttributes attr;
    err = cudaFuncGetAttributes(&attr, kernel);
    if (err == cudaSuccess &&
        (attr.maxDynamicSharedSizeBytes < 0 || size_t(attr.maxDynamicSharedSizeBytes) < bytes)) {
      err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes));
    }
  }
  return check(err, what);
}

bool compiled() { return true; }

int device_count() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    // No driver or no device: clear the (non-sticky) error so it does not leak into the
    // application's next cudaGetLastError(), and report "no devices".
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

fk_status_t query_device(int ordinal, DeviceCaps* caps) {
  if (caps == nullptr) return set_error(FK_ERROR_NULL_POINTER, "caps: NULL");
  int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "device_ordinal %d: %d CUDA device(s) present",
                     ordinal, count);
  }
  DeviceCaps c;
  int v = 0;
  FK_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, ordinal),
              "cudaDeviceGetAttribute(compute capability major)");
  c.cc_major = v;
  FK_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMinor, ordinal),
              "cudaDeviceGetAttribute(compute capability minor)");
  c.cc_minor = v;
  FK_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, ordinal),
              "cudaDeviceGetAttribute(multiprocessor count)");
  c.sm_count = v;
  FK_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, ordinal),
              "cudaDeviceGetAttribute(L2 cache size)");
  c.l2_bytes = v;
  FK_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal),
              "cudaDeviceGetAttribute(max shared memory per block opt-in)");
  c.smem_per_block_optin = v;
  // Not fatal: a heuristic's input (DeviceCaps::dram_bytes_per_s), 0 when unknown.
  int clock_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, ordinal) == cudaSuccess &&
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal) == cudaSuccess)
    c.dram_bytes_per_s = dram_bytes_per_s(clock_khz, bus_bits);
  else
    (void)cudaGetLastError();  // not left for a later launch check to report
  cudaDeviceProp prop;
  std::memset(&prop, 0, sizeof(prop));
  FK_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  std::snprintf(c.name, sizeof(c.name), "%s", prop.name);
  *caps = c;
  return FK_SUCCESS;
}

fk_status_t copy_to_host_sync(void* dst, const void* src, size_t bytes, int ordinal,
                              void* stream) {
  if (bytes == 0) return FK_SUCCESS;
  DeviceGuard guard(ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  FK_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s),
              "cudaMemcpyAsync (device to host)");
  FK_CUDA_TRY(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  return FK_SUCCESS;
}

fk_status_t stream_is_capturing(void* stream, int ordinal, bool* capturing) {
  *capturing = false;
  DeviceGuard guard(ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  FK_CUDA_TRY(cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &st),
              "cudaStreamIsCapturing");
  *capturing = st != cudaStreamCaptureStatusNone;
  return FK_SUCCESS;
}

}  // namespace cuda
}  // namespace flashkit
