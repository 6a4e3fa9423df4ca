// cuda.sm80.fftconv_reg: the register-resident FFT convolution for fft_size 256..32768, and
// 65536 for rows up to 32768 long (fftconv_reg.cu). Declared here rather than in core/backend.h so that the kernel family keeps
// its entry points inside src/cuda/fftconv/.
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

bool fftconv_reg_supported(const DeviceCaps& caps, const FFTConvProblem& p);
fk_status_t fftconv_reg(const ExecContext& ctx, const FFTConvProblem& p);
// Scratch of fftconv_reg(): the filter spectrum of a plan whose filter is not constant, and at
// fft_size 65536 the first pass's result (256 KB per block: min(row pairs, multiprocessors)).
uint64_t fftconv_reg_workspace(const DeviceCaps& caps, const FFTConvProblem& p);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
