// Host entry of the Hopper GEMM: the dispatch predicate, the mapping of a validated GemmProblem
// onto the kernel's operand descriptions (which of each operand's strides is the unit one),
// the schedule from the heuristics table, and the per-dtype launch. Each launch logs its schedule
// at FK_LOG_DEBUG ("cuda.sm90.gemm: schedule pingpong128, 6 stages, 1 k-splits"; the GPU tests
// read it to check which kernel ran).
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "core/error.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"
#include "cuda/gemm/sm90/decode.h"
#include "cuda/gemm/sm90/gemm_sm90.h"
#include "cuda/gemm/sm90/heuristics.h"
#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {
namespace {

constexpr int64_t kMaxI32 = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxTmaStrideBytes = int64_t(1) << 40;
constexpr int64_t kAlignBytes = 16;  // the copy engine's alignment of bases and strides

bool aligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}
int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// True when no two elements of a view with a unit-stride extent `inner` and two outer
// dimensions (stride s1, extent n1; stride s2, extent n2) share an address, by the usual
// sufficient rule: the smaller outer stride spans `inner`, the larger spans the smaller's whole
// extent. Batches may sit inside a row pitch (an (S, H, D) buffer as H batches of (S, D)).
bool disjoint_outer(int64_t inner, int64_t s1, int64_t n1, int64_t s2, int64_t n2) {
  if (n1 <= 1) return n2 <= 1 || s2 >= inner;
  if (n2 <= 1) return s1 >= inner;
  if (s1 > s2) {
    std::swap(s1, s2);
    std::swap(n1, n2);
  }
  return s1 >= inner && s2 >= (n1 - 1) * s1 + inner;
}

// Operand X(row, k) = ptr + l * s_l + row * s_row + k * s_k (elements of `esize` bytes),
// `batch` batches. Fails when the copy engine cannot read it: no unit stride along either
// dimension, or a base address, leading dimension or batch stride that is not 16-byte aligned.
bool describe_operand(const void* ptr, int64_t esize, int64_t rows, int64_t k, int64_t s_row,
                      int64_t s_k, int64_t s_l, int64_t batch, OperandDesc* o) {
  if (!aligned(ptr, kAlignBytes)) return false;
  const int64_t kAlignElems = kAlignBytes / esize;
  const auto ld_ok = [&](int64_t s) { return s > 0 && s % kAlignElems == 0; };
  // A dimension of extent 1 never advances, so its stride is free.
  const bool k_major = (s_k == 1 || k == 1) && (rows == 1 || ld_ok(s_row));
  const bool mn_major = (s_row == 1 || rows == 1) && (k == 1 || ld_ok(s_k));
  if (!k_major && !mn_major) return false;
  o->ptr = ptr;
  o->rows = rows;
  o->k = k;
  o->k_major = k_major;
  const int64_t inner = k_major ? k : rows;  // extent along the unit stride
  const int64_t outer = k_major ? rows : k;
  o->ld = outer == 1 ? round_up(inner < 1 ? 1 : inner, kAlignElems) : (k_major ? s_row : s_k);
  // Rows (or batches) that overlap, a legal read-only view such as a sliding window, are left
  // to the sm80 / generic kernels: the driver's rules for such tensor maps are not documented,
  // and CuTe writes to std::cerr when the driver refuses one (the library never prints).
  if (outer > 1 && o->ld < inner) return false;
  if (batch <= 1 || s_l == 0) {
    o->batch = 1;  // one matrix, or the same one for every batch
    o->batch_stride = o->ld * (outer < 1 ? 1 : outer);
  } else {
    if (!ld_ok(s_l) || !disjoint_outer(inner, o->ld, outer, s_l, batch)) return false;
    o->batch = batch;
    o->batch_stride = s_l;
  }
  return o->ld * esize < kMaxTmaStrideBytes && o->batch_stride * esize < kMaxTmaStrideBytes;
}

bool build_args(const DeviceCaps& caps, const GemmProblem& p, GemmArgs* g) {
  if (p.device != Device::Cuda) return false;
  const bool fp8 = is_fp8(p.ab_dtype);
  if (fp8) {
    if (!is_fp8(p.b_dtype)) return false;
  } else {
    if (p.ab_dtype != DType::F16 && p.ab_dtype != DType::BF16) return false;
    // 16-bit inputs with dequantisation scales are rare; the generic kernel takes them.
    if (p.b_dtype != p.ab_dtype || p.scale_a != nullptr || p.scale_b != nullptr) return false;
  }
  if (p.cd_dtype != DType::F16 && p.cd_dtype != DType::BF16 && p.cd_dtype != DType::F32) return false;
  if (p.M < 1 || p.N < 1 || p.K < 0 || p.batch < 1) return false;
  if (p.M > kMaxI32 || p.N > kMaxI32 || p.K > kMaxI32 || p.batch > kMaxI32) return false;
  g->ab_dtype = p.ab_dtype;
  g->b_dtype = p.b_dtype;
  g->M = p.M;
  g->N = p.N;
  g->K = p.K;
  const int64_t k = p.K > 0 ? p.K : 1;
  const int64_t esize = dtype_bytes(p.ab_dtype);
  if (!describe_operand(p.a, esize, p.M, k, p.a_stride_m, p.a_stride_k, p.a_batch_stride, p.batch,
                        &g->a))
    return false;
  if (!describe_operand(p.b, esize, p.N, k, p.b_stride_n, p.b_stride_k, p.b_batch_stride, p.batch,
                        &g->b))
    return false;
  // wgmma reads 8-bit operands K-major only (A row-major (M, K), B stored (N, K)).
  if (fp8 && (!g->a.k_major || !g->b.k_major)) return false;

  const int64_t tile_k = tile_k_for(p.ab_dtype);
  const int64_t k_tiles = (p.K + tile_k - 1) / tile_k;
  const CallOverrides co = call_overrides();
  // The skinny kernel (64 x 128 tiles) or the 128 x 256 one.
  const int64_t coop_tiles = ((p.M + kTileM - 1) / kTileM) * ((p.N + kTileN - 1) / kTileN) * p.batch;
  bool skinny = pick_skinny(g->a.k_major, p.M, coop_tiles, k_tiles, caps.sm_count, fp8);
  if (co.skinny >= 0) skinny = co.skinny == 1 && g->a.k_major;
  g->skinny = skinny;
  const int64_t tile_rows = skinny ? kSkinnyM : kTileM, tile_cols = skinny ? kSkinnyN : kTileN;
  const int64_t tiles_m = (p.M + tile_rows - 1) / tile_rows;
  TileSchedulerParams& s = g->scheduler;
  s.tile_rows = int32_t(tile_rows);
  s.tiles_m = int32_t(tiles_m);
  // The tile grid for tiles `cols` wide, and its rasterisation (false: too many tiles).
  auto set_tile_cols = [&](int64_t cols) {
    const int64_t tiles_n = (p.N + cols - 1) / cols;
    if (tiles_m * tiles_n > kMaxI32) return false;
    s.tile_cols = int32_t(cols);
    s.tiles_n = int32_t(tiles_n);
    s.tiles_per_batch = tiles_m * tiles_n;
    s.total_tiles = s.tiles_per_batch * p.batch;
    const ScheduleChoice choice = pick_schedule(tiles_m, tiles_n);
    s.group = choice.group;
    s.raster_n = choice.raster_n ? 1 : 0;
    return true;
  };
  if (!set_tile_cols(tile_cols)) return false;
  s.k_tiles = int32_t(k_tiles);
  s.splits = skinny ? pick_skinny_splits(s.total_tiles, s.k_tiles, caps.sm_count)
                   : pick_splits(s.total_tiles, s.k_tiles, caps.sm_count);
  if (co.splits > 0) s.splits = co.splits > s.k_tiles ? (s.k_tiles > 0 ? s.k_tiles : 1) : co.splits;
  s.total_units = s.total_tiles * s.splits;
  s.skip_idle_rows = tuning_overrides().no_idle_skip ? 0 : 1;
  s.splitk_interleave = tuning_overrides().splitk_interleave ? 1 : 0;
  s.k_rotate = pick_krot(skinny, s.splits, s.tiles_m) ? 1 : 0;
  if (co.krot >= 0) s.k_rotate = co.krot;
  g->grid = pick_grid(s.total_units, caps.sm_count);
  if (skinny) {
    g->stages = kSkinnyStages;
    g->pingpong = kCooperative;
  } else {
    g->stages = pick_stages(s.splits, s.total_tiles, s.k_tiles);
    const bool fused = p.bias != nullptr || p.activation != Activation::None || p.c != nullptr;
    g->pingpong = pick_pingpong(s.splits, s.total_tiles, s.k_tiles, fused, caps.sm_count, fp8);
    if (g->pingpong == kPingPong64) g->stages = 4;  // its one ring
    if (g->pingpong == kPingPong128) {
      // 128 x 128 tiles (never split: pick_pingpong), its one ring.
      g->stages = kPp128Stages;
      if (!set_tile_cols(kPp128N)) return false;
      s.total_units = s.total_tiles;
      g->grid = pick_grid(s.total_units, caps.sm_count);
    }
  }

  EpilogueParams& e = g->epilogue;
  e.d = p.d;
  e.c = p.c;  // nullptr unless beta != 0
  e.bias = p.bias;
  e.d_dtype = int32_t(p.cd_dtype);
  e.c_dtype = int32_t(p.cd_dtype);
  e.bias_dtype = int32_t(p.bias_dtype);
  e.M = int32_t(p.M);
  e.N = int32_t(p.N);
  e.d_batch_stride = p.d_batch_stride;
  e.d_stride_m = p.d_stride_m;
  e.d_stride_n = p.d_stride_n;
  e.c_batch_stride = p.c_batch_stride;
  e.c_stride_m = p.c_stride_m;
  e.c_stride_n = p.c_stride_n;
  e.alpha = p.alpha;
  e.beta = p.beta;
  e.activation = int32_t(p.activation);
  // Threads walk D's unit-stride dimension; column-major D (or a single column) walks m.
  const bool col_mode = (p.d_stride_m == 1 && p.d_stride_n == 1) ? (p.N == 1 && p.M > 1)
                                                                  : p.d_stride_m == 1;
  e.col_mode = col_mode ? 1 : 0;
  e.scale_a = p.scale_a;
  e.scale_b = p.scale_b;
  e.scale_a_per_row = p.scale_a_per_row ? 1 : 0;
  e.scale_b_per_col = p.scale_b_per_col ? 1 : 0;
  const int64_t dsize = dtype_bytes(p.cd_dtype);
  const int64_t slow_extent = col_mode ? p.N : p.M;
  const auto vec_ok = [&](const void* ptr, int64_t fast_stride, int64_t slow_stride,
                          int64_t batch_stride) {
    return ptr != nullptr && fast_stride == 1 && aligned(ptr, uintptr_t(4 * dsize)) &&
           (slow_extent == 1 || slow_stride % 4 == 0) && (p.batch == 1 || batch_stride % 4 == 0);
  };
  e.d_vec = vec_ok(p.d, col_mode ? p.d_stride_m : p.d_stride_n,
                   col_mode ? p.d_stride_n : p.d_stride_m, p.d_batch_stride) ? 1 : 0;
  e.c_vec = vec_ok(p.c, col_mode ? p.c_stride_m : p.c_stride_n,
                   col_mode ? p.c_stride_n : p.c_stride_m, p.c_batch_stride) ? 1 : 0;
  e.fast_epilogue = tuning_overrides().generic_epilogue ? 0 : 1;
  // Copy-engine stores of D (epilogue.cuh, epilogue_store_tma): row-major D (unit stride along
  // N) whose base, row pitch and batch stride are 16-byte aligned, rows a whole number of
  // 16-byte units long (N a multiple of 8 for 16-bit D, of 4 for fp32), and no C term (C is read
  // on the register path). Anything else keeps the register-store path.
  {
    const bool row_major = !col_mode && (p.d_stride_n == 1 || p.N == 1);
    const int64_t row_bytes =
        p.M == 1 ? round_up(p.N * dsize, kAlignBytes) : p.d_stride_m * dsize;
    const int64_t batch_bytes =
        p.batch == 1 ? round_up(row_bytes * p.M, kAlignBytes) : p.d_batch_stride * dsize;
    // The copy engine writes whole 16-byte units: a row whose length is not a multiple of 16
    // bytes would get the bytes past N up to the next unit overwritten.
    const bool whole_units = (p.N * dsize) % kAlignBytes == 0;
    const bool ok = row_major && whole_units && e.c == nullptr && aligned(p.d, kAlignBytes) &&
                    row_bytes > 0 &&
                    row_bytes % kAlignBytes == 0 && row_bytes < kMaxTmaStrideBytes &&
                    batch_bytes > 0 && batch_bytes % kAlignBytes == 0 &&
                    batch_bytes < kMaxTmaStrideBytes && e.fast_epilogue &&
                    !tuning_overrides().register_epilogue;
    e.tma_store = ok ? 1 : 0;
    e.d_map_batch = p.batch;
    e.d_map_row_bytes = row_bytes;
    e.d_map_batch_bytes = batch_bytes;
  }
  return true;
}

// The decode kernel's switch for this call: FLASHKIT_SM90_GEMM_DECODE, and off whenever
// FLASHKIT_SM90_GEMM_SKINNY is set (a request about the other kernels) unless DECODE is 1.
int decode_force() {
  const int f = decode_override();
  if (f >= 0) return f;
  const char* skinny = std::getenv("FLASHKIT_SM90_GEMM_SKINNY");
  return (skinny != nullptr && *skinny != 0) ? 0 : -1;
}

}  // namespace

bool gemm_supported(const DeviceCaps& caps, const GemmProblem& p) {
  if (caps.cc_major != 9 || caps.cc_minor != 0) return false;
  GemmArgs g;
  return build_args(caps, p, &g);
}

namespace {

// Split-K scratch: the partial tiles (fp32) and one arrival counter per output tile.
struct SplitKBytes {
  size_t partials, counters;
};
SplitKBytes splitk_bytes(const GemmArgs& g) {
  const size_t tiles = size_t(g.scheduler.total_tiles);
  const size_t unit_floats = size_t(g.scheduler.tile_rows) * size_t(g.scheduler.tile_cols);
  return {tiles * size_t(g.scheduler.splits) * unit_floats * sizeof(float),
          tiles * sizeof(int32_t)};
}

}  // namespace

uint64_t gemm_workspace(const DeviceCaps& caps, const GemmProblem& p) {
  if (decode_pick(caps, p, decode_force()) > 0) return 0;  // no split-K
  GemmArgs g;
  if (!build_args(caps, p, &g) || g.scheduler.splits <= 1) return 0;
  const SplitKBytes b = splitk_bytes(g);
  return workspace_for({b.partials, b.counters});
}

fk_status_t gemm(const ExecContext& ctx, const GemmProblem& p) {
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  // Decode-sized M against a large weight (either layout): the weight-streaming kernel
  // (decode.cu).
  if (const int block_n = decode_pick(*ctx.caps, p, decode_force()))
    return decode_gemm(ctx, p, block_n);
  GemmArgs g;
  if (!build_args(*ctx.caps, p, &g)) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.gemm: called for a problem it does not support");
  }
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  // Split-K scratch: the partial tiles and one arrival counter per tile (zeroed on the stream).
  ScratchArena arena(ctx);
  if (g.scheduler.splits > 1) {
    const SplitKBytes bytes = splitk_bytes(g);  // what gemm_workspace() reports
    void* partials = nullptr;
    void* counters = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(bytes.partials, &partials, "cuda.sm90.gemm split-K partials"));
    FK_RETURN_IF_ERROR(arena.alloc(bytes.counters, &counters, "cuda.sm90.gemm split-K counters"));
    FK_CUDA_TRY(cudaMemsetAsync(counters, 0, bytes.counters, stream),
                "cuda.sm90.gemm: clearing the split-K counters");
    g.splitk.partials = static_cast<float*>(partials);
    g.splitk.counters = static_cast<int32_t*>(counters);
  }
  if (log_enabled(FK_LOG_DEBUG)) {
    log_message(FK_LOG_DEBUG, "cuda.sm90.gemm: schedule %s, %d stages, %d k-splits%s",
                schedule_name(g.skinny, g.pingpong), int(g.stages),
                int(g.scheduler.splits), g.scheduler.k_rotate ? ", rotated k" : "");
  }
  switch (g.ab_dtype) {
    case DType::BF16: return launch_bf16(g, stream);
    case DType::F16: return launch_f16(g, stream);
    case DType::F8E4M3: return launch_fp8_e4m3(g, stream);
    default: return launch_fp8_e5m2(g, stream);
  }
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
