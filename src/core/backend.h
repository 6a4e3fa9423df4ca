// What a kernel entry point receives besides its problem: which context, stream and scratch.
// Every backend's entry points have the same signatures, so the dispatch tables
// (src/dispatch/) can list them side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "core/problems.h"
#include "flashkit/flashkit.h"

namespace flashkit {

struct DeviceCaps {
  int32_t cc_major = 0, cc_minor = 0, sm_count = 0;
  int64_t l2_bytes = 0, smem_per_block_optin = 0;
  char name[128] = {0};
};

struct ExecContext {
  const fk_context_t* context = nullptr;
  int32_t num_threads = 1;  // CPU backend worker threads
  int32_t device_ordinal = -1;
  const DeviceCaps* caps = nullptr;
  void* stream = nullptr;  // cudaStream_t
  void* workspace = nullptr;
  uint64_t workspace_bytes = 0;
};

// Per-plan state of an FFT convolution that backends may fill lazily (twiddles, DFT matrices,
// cached filter spectra). Guard every access with `mutex`.
struct FFTConvPlanState {
  std::mutex mutex;
  std::shared_ptr<void> cpu_cache;
  std::shared_ptr<void> cuda_cache;
};

// Kernel entry-point signatures, one per op.
using AttentionFn = fk_status_t (*)(const ExecContext&, const AttentionProblem&);
using GemmFn = fk_status_t (*)(const ExecContext&, const GemmProblem&);
using MonarchFn = fk_status_t (*)(const ExecContext&, const MonarchProblem&);
using BlockdiagFn = fk_status_t (*)(const ExecContext&, const BlockdiagProblem&);
using FFTConvFn = fk_status_t (*)(const ExecContext&, const FFTConvProblem&);

namespace cpu {
fk_status_t attention(const ExecContext&, const AttentionProblem&);
fk_status_t gemm(const ExecContext&, const GemmProblem&);
fk_status_t monarch(const ExecContext&, const MonarchProblem&);
fk_status_t blockdiag(const ExecContext&, const BlockdiagProblem&);
fk_status_t fftconv(const ExecContext&, const FFTConvProblem&);
}  // namespace cpu

#if defined(FLASHKIT_WITH_CUDA)
namespace cuda {
namespace generic {
fk_status_t attention(const ExecContext&, const AttentionProblem&);
fk_status_t gemm(const ExecContext&, const GemmProblem&);
fk_status_t monarch(const ExecContext&, const MonarchProblem&);
fk_status_t blockdiag(const ExecContext&, const BlockdiagProblem&);
fk_status_t fftconv(const ExecContext&, const FFTConvProblem&);
}  // namespace generic
namespace sm80 {
// mma.sync + cp.async kernels (compute capability >= 8.0); each with the predicate of its
// dispatch-table row.
bool attention_supported(const DeviceCaps&, const AttentionProblem&);
fk_status_t attention(const ExecContext&, const AttentionProblem&);
bool gemm_supported(const DeviceCaps&, const GemmProblem&);
fk_status_t gemm(const ExecContext&, const GemmProblem&);
bool monarch_supported(const DeviceCaps&, const MonarchProblem&);
fk_status_t monarch(const ExecContext&, const MonarchProblem&);
bool blockdiag_supported(const DeviceCaps&, const BlockdiagProblem&);
fk_status_t blockdiag(const ExecContext&, const BlockdiagProblem&);
bool fftconv_supported(const DeviceCaps&, const FFTConvProblem&);
fk_status_t fftconv(const ExecContext&, const FFTConvProblem&);
}  // namespace sm80
}  // namespace cuda
#endif

}  // namespace flashkit
