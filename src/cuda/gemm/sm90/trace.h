// Per-tile phase stamps of the Hopper GEMM (diagnostic builds only: cmake -DFLASHKIT_GEMM_TRACE=ON;
// the release kernels carry none of this). With FLASHKIT_SM90_GEMM_TRACE=<file> in the
// environment, each launch of the cooperative kernel gets a zeroed buffer of stamps and the
// launcher appends them to <file> after the launch (it synchronises the stream: the timing of
// a traced call is not the release kernel's). Stamps are %globaltimer nanoseconds, written by
// the producer thread (role 0) and thread 0 of each consumer warpgroup (roles 1 and 2), for the
// first kTraceTiles tiles a CTA takes:
//   producer: 0 at the top of the tile, 1 after its first stage's load is issued (the ring slot
//             was free), 2 after the tile's last load is issued;
//   consumer: 0 at the top of the tile, 1 when its first stage is full, 2 when its last MMA has
//             retired, 3 after its epilogue.
// Read with benchmarks/ab/gemm_trace.py.
#pragma once

#include <cstdint>

namespace flashkit {
namespace cuda {
namespace sm90 {

constexpr int kTraceTiles = 32, kTraceRoles = 3, kTraceStamps = 4;

#if defined(FLASHKIT_GEMM_TRACE)
// Stamp `what` of (CTA, role, slot) into `trace` (nullptr: not tracing).
__device__ __forceinline__ void trace_stamp(uint64_t* trace, int role, int slot, int what) {
  if (trace == nullptr || slot >= kTraceTiles) return;
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  trace[((int64_t(blockIdx.x) * kTraceRoles + role) * kTraceTiles + slot) * kTraceStamps + what] = ns;
}
#endif

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
