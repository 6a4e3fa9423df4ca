// cuda.sm90.fftconv_direct: the convolution of short rows as a Toeplitz matrix product on
// Hopper's wgmma (fftconv_direct90.cu). Built only with the sm90 object library
// (FLASHKIT_WITH_SM90).
#pragma once

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

bool fftconv_direct_supported(const DeviceCaps& caps, const FFTConvProblem& p);
fk_status_t fftconv_direct(const ExecContext& ctx, const FFTConvProblem& p);

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
