// cuda.sm80.fftconv_direct: the convolution of short rows as a Toeplitz matrix product on the
// tensor cores (fftconv_direct.cu). Declared here rather than in core/backend.h so that the
// kernel family keeps its entry points inside src/cuda/fftconv/.
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

bool fftconv_direct_supported(const DeviceCaps& caps, const FFTConvProblem& p);
fk_status_t fftconv_direct(const ExecContext& ctx, const FFTConvProblem& p);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
