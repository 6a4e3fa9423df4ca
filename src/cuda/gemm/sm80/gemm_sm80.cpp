// Entry point and predicate of the sm80-class GEMM ("cuda.sm80.gemm"): which problems it takes,
// the mapping of a validated GemmProblem onto the kernel's view (operand layouts, the A/B swap
// that turns the fourth layout into one of the three instantiated ones), the schedule from the
// heuristics table, and the launch.
//
// It takes fp16 and bf16 inputs (fp32 accumulation; fp16, bf16 or fp32 output) whose A and B
// each have a unit stride along one of their two dimensions, with the other stride, the batch
// stride and the base address 16-byte aligned (what the 16-byte cp.async copies need; a stride
// whose extent is 1 is never used and is not checked), on a device of compute capability >= 8.0.
// C, D and bias may have any strides. fp32 or fp8 inputs, fk_gemm_scaled's scales and
// unaligned operands go to the generic kernel.
//
// Each launch logs its tile and split-K factor at FK_LOG_DEBUG ("cuda.sm80.gemm: tile mid
// 128x128x64, 4 k-splits"), which the GPU test reads to check the heuristics' pick.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/backend.h"
#include "core/error.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"
#include "cuda/gemm/sm80/heuristics.h"
#include "cuda/gemm/sm80/launch.h"
#include "cuda/gemm/sm80/params.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

constexpr int64_t kMaxI32 = (int64_t(1) << 31) - 1;

bool aligned(const void* p, uintptr_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) % bytes) == 0;
}

struct Operand {
  const void* ptr = nullptr;
  int64_t ld = 0, batch_stride = 0;
  bool k_major = false, mn_major = false;
};

// X(row, k) = ptr + l * s_l + row * s_row + k * s_k, 2-byte elements.
bool describe(const void* ptr, int64_t rows, int64_t k, int64_t s_row, int64_t s_k, int64_t s_l,
              int64_t batch, Operand* o) {
  if (!aligned(ptr, 16)) return false;
  const auto ld_ok = [](int64_t s) { return s > 0 && s % 8 == 0 && s <= kMaxI32 * 8; };
  o->ptr = ptr;
  o->k_major = (s_k == 1 || k == 1) && (rows == 1 || ld_ok(s_row));
  o->mn_major = (s_row == 1 || rows == 1) && (k == 1 || ld_ok(s_k));
  if (!o->k_major && !o->mn_major) return false;
  if (batch <= 1 || s_l == 0) {
    o->batch_stride = 0;
  } else {
    if (s_l % 8 != 0) return false;
    o->batch_stride = s_l;
  }
  return true;
}

// Diagnostics (not part of the API; read per call so that a test can scope them):
// FLASHKIT_SM80_GEMM_TILE=big|mid|small forces a tile where it fits the device, and
// FLASHKIT_SM80_GEMM_SPLITS=<1..16> the split-K factor of batch-1 problems.
TileKind forced_tile() {
  const char* e = std::getenv("FLASHKIT_SM80_GEMM_TILE");
  if (e == nullptr) return TileKind::Auto;
  if (std::strcmp(e, "big") == 0) return TileKind::Big;
  if (std::strcmp(e, "mid") == 0) return TileKind::Mid;
  if (std::strcmp(e, "small") == 0) return TileKind::Small;
  return TileKind::Auto;
}

int32_t forced_splits() {
  const char* e = std::getenv("FLASHKIT_SM80_GEMM_SPLITS");
  const long v = e != nullptr ? std::strtol(e, nullptr, 10) : 0;
  return (v >= 1 && v <= 16) ? int32_t(v) : 0;
}

int64_t ld_for(bool k_major, int64_t rows, int64_t k, int64_t s_row, int64_t s_k) {
  if (k_major) return rows == 1 ? 8 : s_row;
  return k == 1 ? 8 : s_k;
}

bool build(const DeviceCaps& caps, const GemmProblem& p, GemmParams* g, TileKind* tile,
           Layout* layout) {
  if (p.device != Device::Cuda || caps.cc_major < 8) return false;
  if (p.ab_dtype != DType::F16 && p.ab_dtype != DType::BF16) return false;
  if (p.b_dtype != p.ab_dtype || p.scale_a != nullptr || p.scale_b != nullptr) return false;
  if (p.cd_dtype != DType::F16 && p.cd_dtype != DType::BF16 && p.cd_dtype != DType::F32) return false;
  if (p.M < 1 || p.N < 1 || p.K < 0 || p.batch < 1) return false;
  if (p.M > kMaxI32 - 256 || p.N > kMaxI32 - 256 || p.K > kMaxI32 - 64 || p.batch > kMaxI32)
    return false;
  const int64_t k = p.K > 0 ? p.K : 1;
  Operand a, b;
  if (!describe(p.a, p.M, k, p.a_stride_m, p.a_stride_k, p.a_batch_stride, p.batch, &a)) return false;
  if (!describe(p.b, p.N, k, p.b_stride_n, p.b_stride_k, p.b_batch_stride, p.batch, &b)) return false;

  // Layouts, preferring those that need no swap.
  bool swap = false, a_k = true, b_k = false;
  if (a.k_major && b.mn_major) {
    a_k = true, b_k = false;
  } else if (a.k_major && b.k_major) {
    a_k = true, b_k = true;
  } else if (a.mn_major && b.mn_major) {
    a_k = false, b_k = false;
  } else {  // A M-major, B K-major: D^T = B^T A^T has a K-major A and an M-major B
    a_k = false, b_k = true;
    swap = true;
  }
  *layout = (a_k && b_k) ? Layout::KK : (a_k || swap) ? Layout::KMN : Layout::MNMN;

  const int64_t a_ld = ld_for(a_k, p.M, k, p.a_stride_m, p.a_stride_k);
  const int64_t b_ld = ld_for(b_k, p.N, k, p.b_stride_n, p.b_stride_k);
  const int64_t M = swap ? p.N : p.M, N = swap ? p.M : p.N;
  g->a = swap ? b.ptr : a.ptr;
  g->a_ld = swap ? b_ld : a_ld;
  g->a_batch_stride = swap ? b.batch_stride : a.batch_stride;
  g->b = swap ? a.ptr : b.ptr;
  g->b_ld = swap ? a_ld : b_ld;
  g->b_batch_stride = swap ? a.batch_stride : b.batch_stride;
  g->M = int32_t(M);
  g->N = int32_t(N);
  g->K = int32_t(p.K);
  g->batch = int32_t(p.batch);

  Schedule s = pick_schedule(M, N, p.K, p.batch, caps.sm_count, caps.smem_per_block_optin,
                             forced_tile());
  *tile = s.tile;
  const TileShape shape = tile_shape(s.tile);
  const int64_t tiles_m = ceil_div(M, shape.bm), tiles_n = ceil_div(N, shape.bn);
  if (tiles_m * tiles_n > kMaxI32) return false;
  g->tiles_m = int32_t(tiles_m);
  g->tiles_n = int32_t(tiles_n);
  g->group_m = 8;
  const int64_t k_tiles = ceil_div(p.K, shape.bk);
  if (const int32_t fs = forced_splits(); fs > 0 && p.batch == 1 && k_tiles >= 1)
    s.splits = int32_t(std::min<int64_t>(fs, k_tiles));
  g->splits = s.splits;
  g->k_tiles_per_split = int32_t(s.splits > 1 ? ceil_div(k_tiles, s.splits) : (k_tiles > 0 ? k_tiles : 1));
  if (s.splits > 1) g->splits = int32_t(ceil_div(k_tiles, g->k_tiles_per_split));

  g->d = p.d;
  g->c = p.c;
  g->bias = p.bias;
  g->d_batch_stride = p.d_batch_stride;
  g->d_stride_m = swap ? p.d_stride_n : p.d_stride_m;
  g->d_stride_n = swap ? p.d_stride_m : p.d_stride_n;
  g->c_batch_stride = p.c_batch_stride;
  g->c_stride_m = swap ? p.c_stride_n : p.c_stride_m;
  g->c_stride_n = swap ? p.c_stride_m : p.c_stride_n;
  g->cd_dtype = p.cd_dtype;
  g->bias_dtype = p.bias_dtype;
  g->alpha = p.alpha;
  g->beta = p.beta;
  g->activation = p.activation;
  g->bias_along_m = swap;
  const int64_t dsize = dtype_bytes(p.cd_dtype);
  g->d_pairs = g->d_stride_n == 1 && aligned(p.d, uintptr_t(2 * dsize)) &&
               (M == 1 || g->d_stride_m % 2 == 0) && (p.batch == 1 || p.d_batch_stride % 2 == 0);
  const int64_t per16 = 16 / dsize;  // elements per 16 bytes
  g->d_vec16 = g->d_stride_n == 1 && aligned(p.d, 16) && (M == 1 || g->d_stride_m % per16 == 0) &&
               (p.batch == 1 || p.d_batch_stride % per16 == 0);
  g->partials = nullptr;
  return true;
}

}  // namespace

bool gemm_supported(const DeviceCaps& caps, const GemmProblem& p) {
  GemmParams g;
  TileKind tile;
  Layout layout;
  return build(caps, p, &g, &tile, &layout);
}

namespace {
// Split-K scratch: `splits` fp32 partial products of the whole (M, N) output.
size_t partials_bytes(const GemmParams& g) {
  return size_t(g.splits) * size_t(g.M) * size_t(g.N) * sizeof(float);
}
}  // namespace

uint64_t gemm_workspace(const DeviceCaps& caps, const GemmProblem& p) {
  GemmParams g;
  TileKind tile;
  Layout layout;
  if (!build(caps, p, &g, &tile, &layout) || g.splits <= 1) return 0;
  return workspace_for({partials_bytes(g)});
}

fk_status_t gemm(const ExecContext& ctx, const GemmProblem& p) {
  GemmParams g;
  TileKind tile;
  Layout layout;
  if (!build(*ctx.caps, p, &g, &tile, &layout)) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm80.gemm: called for a problem it does not support");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  ScratchArena arena(ctx);
  if (g.splits > 1) {
    void* partials = nullptr;
    FK_RETURN_IF_ERROR(arena.alloc(partials_bytes(g), &partials, "cuda.sm80.gemm split-K partials"));
    g.partials = static_cast<float*>(partials);
  }
  if (log_enabled(FK_LOG_DEBUG)) {
    log_message(FK_LOG_DEBUG, "cuda.sm80.gemm: tile %s, %d k-splits", tile_name(tile),
                int(g.splits));
  }
  const fk_status_t st = p.ab_dtype == DType::BF16 ? launch_gemm_bf16(g, tile, layout, stream)
                                                   : launch_gemm_f16(g, tile, layout, stream);
  if (st != FK_SUCCESS || g.splits <= 1) return st;
  return launch_splitk_reduce(g, stream);
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
