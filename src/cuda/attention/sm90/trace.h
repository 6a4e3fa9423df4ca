// Per-tile phase stamps of the Hopper attention kernel (diagnostic builds only: cmake
// -DFLASHKIT_ATTENTION_TRACE=ON, which defines FLASHKIT_ATTENTION_TRACE for the head_dim 128
// sources; release kernels carry none of this). With FLASHKIT_SM90_ATTENTION_TRACE=<file> in
// the environment each launch gets a zeroed stamp buffer, and the launcher appends the stamps
// to <file> after the launch (it synchronises the stream). Written by the producer thread
// (role 0) and thread 0 of each consumer warpgroup (roles 1-3), for the first kTraceTiles
// tiles with rows that a CTA takes, kTraceStamps words per (CTA, role, tile slot):
//   consumer, SM clock: 0 top of the tile (before TileScheduler::tile), 1 its WorkTile known,
//     2 its Q in shared memory, 3 the first K tile in shared memory (the overlapped order),
//     4 the key loop done (the last P V retired), 5 the output and LSE stored;
//   producer, SM clock: 0 top, 1 WorkTile known, 2 the previous tile's Q released (the wait
//     before this tile's Q load), 3 every load of the tile issued;
//   6 and 7: %globaltimer (ns) at the top and at the last stamp (the launch's time line);
//   8: the tile's key-tile count (n_max - n_min).
// Read with benchmarks/ab/attn_trace.py.
#pragma once

#include <cstdint>

#include "cuda/common/trace_stamps.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

constexpr int kTraceTiles = 16, kTraceRoles = 4, kTraceStamps = 9;
using TraceStamps = trace::Stamps<kTraceRoles, kTraceTiles, kTraceStamps>;

#if defined(FLASHKIT_ATTENTION_TRACE)
// Word `what` (0-5: cycles, 6-7: global timer) of (CTA, role, slot); nullptr trace: nothing.
__device__ __forceinline__ void trace_stamp(uint64_t* trace, int role, int slot, int what) {
  if (what >= 6) {
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

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
