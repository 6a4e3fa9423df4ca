// Persistent tile scheduler of the Hopper GEMM. The grid holds one CTA per SM (or fewer); CTA
// b takes work units b, b + grid, b + 2 grid, ... of one linear numbering (a unit is a tile, or
// one K slice of a tile under split-K), so the producer warp and both consumer warpgroups of a
// CTA walk the same sequence without talking to each other, and the producer can run ahead
// into the next tile while the consumers finish the current one.
//
// Numbering: batch-major (any batch count, in 64-bit), and inside one batch a grouped raster
// (the "super-grouping" of Triton's matmul tutorial and CUTLASS's swizzle): `group` tile rows
// are walked down each column before moving to the next column, so the ~132 tiles in flight at
// once cover a group x (132 / group) patch and reuse its A and B panels from L2 instead of
// streaming all of B for every row of tiles.
#pragma once

#include <cstdint>

#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

struct TileCoord {
  int32_t m, n;     // tile indices (units of kTileM, kTileN)
  int64_t l;        // batch index
  int64_t tile;     // linear tile index (split-K bookkeeping)
  int32_t split;    // which K slice of the tile this unit covers
  int32_t k_begin;  // k-tiles k_begin, k_begin + k_step, ... below k_end
  int32_t k_end;
  int32_t k_step;
  int32_t k_rot;    // the producer's walk starts at the k_rot-th k-tile and wraps (0: in order)
  __device__ __forceinline__ int32_t k_count() const {
    return k_end > k_begin ? (k_end - k_begin + k_step - 1) / k_step : 0;
  }
};

struct TileScheduler {
  const TileSchedulerParams& p;

  __device__ __forceinline__ explicit TileScheduler(const TileSchedulerParams& params) : p(params) {}

  __device__ __forceinline__ int64_t first() const { return blockIdx.x; }
  __device__ __forceinline__ int64_t next(int64_t t) const { return t + gridDim.x; }
  __device__ __forceinline__ bool valid(int64_t u) const { return u < p.total_units; }

  // Unit t of an unsplit launch (splits == 1) whose tile indices and batch index coord(t) gave
  // earlier: the rest of its TileCoord without coord's divisions (the consumers' k-loop has no
  // use for k_rot, the producer's load order).
  __device__ __forceinline__ TileCoord unsplit(int64_t t, int32_t m, int32_t n, int64_t l) const {
    TileCoord c;
    c.m = m;
    c.n = n;
    c.l = l;
    c.tile = t;
    c.split = 0;
    c.k_begin = 0;
    c.k_end = p.k_tiles;
    c.k_step = 1;
    c.k_rot = 0;
    return c;
  }

  // Work unit u: split u % splits of tile u / splits (a tile's splits run side by side, so the
  // last one finishes soon after the first and the partials are still in L2).
  __device__ __forceinline__ TileCoord coord(int64_t u) const {
    TileCoord c;
    const int64_t t = p.splits == 1 ? u : u / p.splits;
    c.tile = t;
    c.split = int32_t(u - t * p.splits);
    if (p.splitk_interleave) {
      // Diagnostic order (FLASHKIT_SM90_GEMM_SPLITK=interleave): unit s takes k-tiles s,
      // s + splits, ..., so the units of a tile read neighbouring k-tiles at the same time. Meant
      // to fetch K-major rows in longer runs per DRAM page; measured slower on the H200 (M = 16:
      // 40-51 against 46-59 TFLOP/s for the slices, benchmarks/RESULTS.md), so not the default.
      c.k_begin = c.split;
      c.k_end = p.k_tiles;
      c.k_step = p.splits;
    } else if (p.splits == 1) {  // (no divisions: this runs at the top of every tile)
      c.k_begin = 0;
      c.k_end = p.k_tiles;
      c.k_step = 1;
    } else {
      c.k_begin = int32_t(int64_t(c.split) * p.k_tiles / p.splits);
      c.k_end = int32_t(int64_t(c.split + 1) * p.k_tiles / p.splits);
      c.k_step = 1;
    }
    c.k_rot = 0;
    if (p.k_rotate) {
      // A multiplicative hash of the unit spreads the start offsets of the units in flight over
      // their slices (only the producer's load order changes).
      const int32_t count = c.k_count();
      // (32-bit arithmetic: a 64-bit remainder is a called subroutine, with a stack frame.)
      if (count > 1) c.k_rot = int32_t(((uint32_t(u) * 2654435761u) >> 8) % uint32_t(count));
    }
    c.l = t < p.tiles_per_batch ? 0 : t / p.tiles_per_batch;
    const int32_t r = static_cast<int32_t>(t - c.l * p.tiles_per_batch);
    // The grouped dimension (walked fastest inside a group) and the other one.
    const int32_t major = p.raster_n ? p.tiles_n : p.tiles_m;
    const int32_t minor = p.raster_n ? p.tiles_m : p.tiles_n;
    const int32_t per_group = p.group * minor;
    const int32_t g = r / per_group;
    const int32_t first_major = g * p.group;
    const int32_t rows = min(major - first_major, p.group);
    const int32_t in_group = r - g * per_group;
    const int32_t along = first_major + in_group % rows;
    const int32_t across = in_group / rows;
    c.m = p.raster_n ? across : along;
    c.n = p.raster_n ? along : across;
    return c;
  }
};

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
