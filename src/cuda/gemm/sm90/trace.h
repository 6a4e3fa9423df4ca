// Per-tile phase stamps of the Hopper GEMM (diagnostic builds only: cmake -DFLASHKIT_GEMM_TRACE=ON;
// the release kernels carry none of this). With FLASHKIT_SM90_GEMM_TRACE=<file> in the
// environment, each launch of the cooperative kernel gets a zeroed buffer of stamps and the
// launcher appends them to <file> after the launch (it synchronises the stream: the timing of
// a traced call is not the release kernel's). Written by the producer thread (role 0) and
// thread 0 of each consumer warpgroup (roles 1 and 2), for the first kTraceTiles tiles a CTA
// takes, kTraceStamps words per (CTA, role, tile slot):
//   words 0-4, the SM's cycle counter (clock64; the roles of one CTA share an SM, so their
//   stamps compare directly):
//     producer: 0 top of the tile, 1 its first stage's loads issued (the ring slot was free),
//               2 its last loads issued;
//     consumer: 0 top of the tile, 1 its first stage full, 2 its last MMA retired, 3 its
//               epilogue done, 4 the stage of k-tile kStages full (the first one whose load
//               waited for a slot this tile released);
//   words 5 and 6, %globaltimer (ns) at the top and at the last stamp (2 or 3): the launch's
//   time line across SMs and the cycles-per-ns rate (the global timer may tick coarsely);
//   word 7: the tile's k-tile count;
//   consumer words 8-10, over the k-loop after the first stage: cycles spent waiting for full
//   stages, cycles spent waiting for the previous wgmma batch to retire, and how many of those
//   batch waits took more than 64 cycles (the tensor cores were still busy with it: while they
//   are, the consumer is not what holds them up).
// Read with benchmarks/ab/gemm_trace.py.
#pragma once

#include <cstdint>

#include "cuda/common/trace_stamps.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

constexpr int kTraceTiles = 32, kTraceRoles = 3, kTraceStamps = 11;
using TraceStamps = trace::Stamps<kTraceRoles, kTraceTiles, kTraceStamps>;

#if defined(FLASHKIT_GEMM_TRACE)
// Word `what` (0-4: cycles, 5-6: global timer) of (CTA, role, slot); nullptr trace: nothing.
__device__ __forceinline__ void trace_stamp(uint64_t* trace, int role, int slot, int what) {
  if (what >= 5) {
    TraceStamps::timer(trace, role, slot, what);
  } else {
    TraceStamps::clock(trace, role, slot, what);
  }
}
__device__ __forceinline__ void trace_value(uint64_t* trace, int role, int slot, int what,
                                            uint64_t v) {
  TraceStamps::value(trace, role, slot, what, v);
}
#endif

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
