// What the CUDA backend keeps in an FFT-convolution plan (FFTConvPlanState::cuda_cache).
// FFTConvPlanState has a single CUDA slot; every CUDA kernel family (generic, sm80, sm90) gets
// its own typed entry here so that one family never misreads another's cache.
// Access only under FFTConvPlanState::mutex.
#pragma once

#include <memory>

#include "core/backend.h"

namespace flashkit {
namespace cuda {

struct FFTConvCudaCache {
  std::shared_ptr<void> generic;  // src/cuda/fftconv/generic
  std::shared_ptr<void> sm80;
  std::shared_ptr<void> sm90;
};

// Returns the plan's CUDA cache, creating it on first use. Call with state->mutex held.
inline FFTConvCudaCache* fftconv_cuda_cache(FFTConvPlanState* state) {
  if (!state->cuda_cache) state->cuda_cache = std::make_shared<FFTConvCudaCache>();
  return static_cast<FFTConvCudaCache*>(state->cuda_cache.get());
}

}  // namespace cuda
}  // namespace flashkit
