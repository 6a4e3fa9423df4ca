// Makes the context's device current for the duration of one call and restores the caller's
// device afterwards: a flashkit call must not change which device later CUDA calls of the
// application go to (the current device is per host thread in the CUDA runtime).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/common/check.h"

namespace flashkit {
namespace cuda {

class DeviceGuard {
 public:
  // ordinal < 0 keeps whatever device is current.
  explicit DeviceGuard(int ordinal) {
    if (ordinal < 0) return;
    status_ = check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (status_ != FK_SUCCESS || previous_ == ordinal) return;
    status_ = check(cudaSetDevice(ordinal), "cudaSetDevice");
    switched_ = status_ == FK_SUCCESS;
  }
  ~DeviceGuard() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  fk_status_t status() const { return status_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  fk_status_t status_ = FK_SUCCESS;
};

}  // namespace cuda
}  // namespace flashkit
