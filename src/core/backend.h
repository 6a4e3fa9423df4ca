// What a kernel entry point receives besides its problem: which context, stream and scratch.
// Every backend's entry points have the same signatures, so the dispatch tables
// (src/dispatch/) can list them side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>

#include "core/problems.h"
#include "flashkit/flashkit.h"

namespace flashkit {

struct DeviceCaps {
  int32_t cc_major = 0, cc_minor = 0, sm_count = 0;
  int64_t l2_bytes = 0, smem_per_block_optin = 0;
  // Peak DRAM bandwidth in bytes per second (dram_bytes_per_s below: H100 SXM 3.35e12, H200
  // ~4.9e12); 0 where the driver does not report it (rules that read it then stand aside).
  int64_t dram_bytes_per_s = 0;
  char name[128] = {0};
};

// Peak DRAM bytes per second from the driver's memory clock (kHz) and bus width (bits): two
// transfers a clock, bus width / 8 bytes each; 0 for values that are not positive.
inline int64_t dram_bytes_per_s(int64_t memory_clock_khz, int64_t bus_width_bits) {
  if (memory_clock_khz <= 0 || bus_width_bits <= 0) return 0;
  return 2 * memory_clock_khz * 1000 * (bus_width_bits / 8);
}

struct ExecContext {
  const fk_context_t* context = nullptr;
  int32_t num_threads = 1;  // CPU backend worker threads
  int32_t device_ordinal = -1;
  const DeviceCaps* caps = nullptr;
  void* stream = nullptr;  // cudaStream_t
  void* workspace = nullptr;
  uint64_t workspace_bytes = 0;
};

// Scratch carved from a caller workspace (fk_launch_t::workspace; cuda/common/scratch.h's
// ScratchArena): every buffer takes its size rounded up to kScratchAlign bytes (a zero-byte
// request takes one unit), and the workspace's start is first aligned to kScratchAlign.
constexpr uint64_t kScratchAlign = 256;
// Workspace bytes with which buffers of these sizes all come from the caller's workspace,
// whatever its start address: the rounded sizes plus kScratchAlign - 1 for the start. A size
// of 0 is a buffer the call does not take (no call site asks the arena for 0 bytes); 0 when it
// takes none. What the fk_*_workspace_size() queries report.
inline uint64_t workspace_for(std::initializer_list<uint64_t> buffers) {
  uint64_t total = 0;
  for (uint64_t b : buffers) total += (b + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  return total == 0 ? 0 : total + kScratchAlign - 1;
}

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
// Workspace bytes with which a variant's run allocates nothing (workspace_for() of its scratch
// buffers) for a problem it supports; nullptr in a dispatch row: the variant takes no scratch.
template <class Problem>
using WorkspaceFn = uint64_t (*)(const DeviceCaps&, const Problem&);

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
// Every valid problem on every GPU this build runs on (50 KB of shared memory at head_dim 256
// with K^T and V in one buffer); false only where a block would need more than the device
// allows, and then no CUDA row takes the call.
bool attention_supported(const DeviceCaps&, const AttentionProblem&);
fk_status_t attention(const ExecContext&, const AttentionProblem&);
fk_status_t gemm(const ExecContext&, const GemmProblem&);
fk_status_t monarch(const ExecContext&, const MonarchProblem&);
fk_status_t blockdiag(const ExecContext&, const BlockdiagProblem&);
fk_status_t fftconv(const ExecContext&, const FFTConvProblem&);
uint64_t monarch_workspace(const DeviceCaps&, const MonarchProblem&);
uint64_t fftconv_workspace(const DeviceCaps&, const FFTConvProblem&);
}  // namespace generic
namespace sm80 {
// mma.sync + cp.async kernels (compute capability >= 8.0); each with the predicate of its
// dispatch-table row.
bool attention_supported(const DeviceCaps&, const AttentionProblem&);
fk_status_t attention(const ExecContext&, const AttentionProblem&);
bool gemm_supported(const DeviceCaps&, const GemmProblem&);
fk_status_t gemm(const ExecContext&, const GemmProblem&);
uint64_t gemm_workspace(const DeviceCaps&, const GemmProblem&);
bool monarch_supported(const DeviceCaps&, const MonarchProblem&);
fk_status_t monarch(const ExecContext&, const MonarchProblem&);
bool blockdiag_supported(const DeviceCaps&, const BlockdiagProblem&);
fk_status_t blockdiag(const ExecContext&, const BlockdiagProblem&);
// Monarch as two block-diagonal calls with the permutations as transposes (monarch_unfused.cu).
bool monarch_unfused_supported(const DeviceCaps&, const MonarchProblem&);
fk_status_t monarch_unfused(const ExecContext&, const MonarchProblem&);
uint64_t monarch_unfused_workspace(const DeviceCaps&, const MonarchProblem&);
bool fftconv_supported(const DeviceCaps&, const FFTConvProblem&);
fk_status_t fftconv(const ExecContext&, const FFTConvProblem&);
uint64_t fftconv_workspace(const DeviceCaps&, const FFTConvProblem&);
}  // namespace sm80
}  // namespace cuda
#endif

}  // namespace flashkit
