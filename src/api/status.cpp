// Version and status-code text.
#include "core/error.h"
#include "core/tensor.h"
#include "flashkit/flashkit.h"

#define FK_STR2(x) #x
#define FK_STR(x) FK_STR2(x)

namespace flashkit {
const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::I32: return "int32";
    case DType::F8E4M3: return "float8_e4m3fn";
    case DType::F8E5M2: return "float8_e5m2";
  }
  return "unknown";
}
}  // namespace flashkit

extern "C" {

unsigned fk_get_version_number(void) { return FK_VERSION_NUMBER; }

const char* fk_get_version(void) {
  return FK_STR(FK_VERSION_MAJOR) "." FK_STR(FK_VERSION_MINOR) "." FK_STR(FK_VERSION_PATCH);
}

fk_status_t fk_status_category(fk_status_t status) {
  int s = static_cast<int>(status);
  if (s == 0) return FK_SUCCESS;
  switch (s / 100) {
    case 1: return FK_ERROR_INVALID_ARGUMENT;
    case 2: return FK_ERROR_NOT_SUPPORTED;
    case 3: return FK_ERROR_OUT_OF_MEMORY;
    case 4: return FK_ERROR_DEVICE;
    default: return FK_ERROR_INTERNAL;
  }
}

const char* fk_status_string(fk_status_t status) {
  switch (status) {
    case FK_SUCCESS: return "success";
    case FK_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case FK_ERROR_NULL_POINTER: return "invalid argument: null pointer";
    case FK_ERROR_BAD_STRUCT_SIZE: return "invalid argument: bad struct_size";
    case FK_ERROR_DTYPE_MISMATCH: return "invalid argument: dtype mismatch";
    case FK_ERROR_SHAPE_MISMATCH: return "invalid argument: shape mismatch";
    case FK_ERROR_BAD_STRIDES: return "invalid argument: bad strides";
    case FK_ERROR_WRONG_DEVICE: return "invalid argument: wrong device";
    case FK_ERROR_MISALIGNED: return "invalid argument: misaligned pointer";
    case FK_ERROR_NOT_SUPPORTED: return "not supported";
    case FK_ERROR_BACKEND_UNAVAILABLE: return "not supported: backend unavailable";
    case FK_ERROR_OUT_OF_MEMORY: return "out of memory";
    case FK_ERROR_WORKSPACE_TOO_SMALL: return "out of memory: workspace too small";
    case FK_ERROR_DEVICE: return "device error";
    case FK_ERROR_KERNEL_LAUNCH: return "device error: kernel launch failed";
    case FK_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* fk_backend_name(fk_backend_t backend) {
  switch (backend) {
    case FK_BACKEND_AUTO: return "auto";
    case FK_BACKEND_CPU: return "cpu";
    case FK_BACKEND_CUDA: return "cuda";
  }
  return "unknown";
}

const char* fk_kernel_family_name(fk_kernel_family_t family) {
  switch (family) {
    case FK_KERNEL_FAMILY_AUTO: return "auto";
    case FK_KERNEL_FAMILY_CPU: return "cpu";
    case FK_KERNEL_FAMILY_GENERIC: return "generic";
    case FK_KERNEL_FAMILY_SM80: return "sm80";
    case FK_KERNEL_FAMILY_SM90: return "sm90";
  }
  return "unknown";
}

}  // extern "C"
