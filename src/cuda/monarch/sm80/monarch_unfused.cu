// Unfused Monarch multiply ("cuda.sm80.monarch_unfused"): the two block-diagonal factors run as
// two calls of the sm80-class block-diagonal kernel ("cuda.sm80.blockdiag_linear"), with the
// Monarch permutations as two tiled transposes between and after them, through a scratch that
// holds a chunk of tokens at a time.
//
// Semantics (flashkit.h, monarch group; Dao et al. 2022, "Monarch", Section 3; m2's
// blockdiag_butterfly_multiply), mid = nblocks1 * q = nblocks2 * r:
//   y1[t, k]        = sum_c w1[k/q, k%q, c] x[t, (k/q)*p + c]          (blockdiag, factor 1)
//   z[t, j*r + b]   = y1[t, b*nblocks2 + j]                            (transpose r x nblocks2)
//   y2[t, j*s + m]  = sum_b w2[j, m, b] z[t, j*r + b] + bias[m*nblocks2 + j]  (blockdiag, factor 2)
//   out[t, m*nblocks2 + j] = y2[t, j*s + m]                           (transpose nblocks2 x s)
// y1, z and y2 are rounded to the input dtype as the fused kernels' shared-memory z is; the bias
// is added in fp32 before the one rounding of y2 (it is permuted into the scratch first).
//
// Why: the fused sm80-class kernel keeps z in shared memory but streams both factors' weights
// through every token tile; with 128 blocks of 128 (n = 16384, 8 MB of weights, more than a
// Hopper cluster holds) it ran at 3% of the H200's copy bandwidth (7.6 ms at 16384 tokens, where
// the block-diagonal kernel alone takes 0.8 ms). Each pass here streams at the block-diagonal
// kernel's rate. Scratch: two buffers of chunk x max(mid, nblocks2 * s) elements, 128 MiB
// together by default; on the H200 larger chunks ran faster (fewer, fuller waves of the
// block-diagonal kernel) although smaller ones would stay in L2 (benchmarks/RESULTS.md,
// "Unfused Monarch": 8 / 32 / 128 / 512 MiB -> 3.51 / 2.37 / 2.15 / 2.04 ms at n = 16384).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "core/backend.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace sm80 {
namespace {

constexpr int kTile = 64;           // transpose tile: 64 x 64 elements
constexpr int kPitch = kTile + 2;   // shared-memory row pitch (elements): 2-way conflicts at most
constexpr int kThreads = 256;       // 8 warps
constexpr int64_t kChunkAlign = 128;  // tokens: the block-diagonal kernel's token tile

// out[t][c][r] = in[t][r][c] for r < R, c < C (16-bit elements), t < T; rows of a token are
// contiguous (in: r*C + c, out: c*R + r) and tokens lie in_ld / out_ld elements apart. R, C,
// in_ld, out_ld even and both bases 4-byte aligned (pairs move as 32-bit words). One block per
// (token, 64 x 64 tile), flattened into grid.x.
__global__ void __launch_bounds__(kThreads) transpose16_kernel(const uint16_t* __restrict__ in,
                                                               int64_t in_ld,
                                                               uint16_t* __restrict__ out,
                                                               int64_t out_ld, int R, int C,
                                                               int tiles_r, int tiles_c) {
  __shared__ __align__(16) uint16_t tile[kTile * kPitch];
  const int per_token = tiles_r * tiles_c;
  const int64_t t = blockIdx.x / per_token;
  const int rem = static_cast<int>(blockIdx.x - t * per_token);
  const int r0 = (rem / tiles_c) * kTile, c0 = (rem % tiles_c) * kTile;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const uint16_t* src = in + t * in_ld;
  uint16_t* dst = out + t * out_ld;
  // Load: one tile row per warp and step, lane = column pair (128 contiguous bytes a warp).
  const int c = c0 + 2 * lane;
#pragma unroll
  for (int i = 0; i < kTile / 8; ++i) {
    const int rr = warp + 8 * i, r = r0 + rr;
    uint32_t v = 0;
    if (r < R && c < C) v = *reinterpret_cast<const uint32_t*>(src + int64_t(r) * C + c);
    *reinterpret_cast<uint32_t*>(&tile[rr * kPitch + 2 * lane]) = v;
  }
  __syncthreads();
  // Store: one output row (a tile column) per warp and step, lane = row pair.
  const int r = r0 + 2 * lane;
#pragma unroll
  for (int i = 0; i < kTile / 8; ++i) {
    const int cc = warp + 8 * i, col = c0 + cc;
    if (col < C && r < R) {
      const uint32_t lo = tile[(2 * lane) * kPitch + cc], hi = tile[(2 * lane + 1) * kPitch + cc];
      *reinterpret_cast<uint32_t*>(dst + int64_t(col) * R + r) = lo | (hi << 16);
    }
  }
}

// perm[j*s + m] = bias[m*nb2 + j] for elements of `bytes` bytes (2 or 4).
template <class E>
__global__ void permute_bias_kernel(const E* __restrict__ bias, E* __restrict__ perm, int nb2,
                                    int s) {
  const int64_t n = int64_t(nb2) * s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = i / s, m = i - j * s;
    perm[i] = bias[m * nb2 + j];
  }
}

bool aligned(const void* ptr, uintptr_t a) { return reinterpret_cast<uintptr_t>(ptr) % a == 0; }

// FLASHKIT_MONARCH_UNFUSED=0 (diagnostic, read on every call): the variant declines, so the
// fused kernels take what they support. FLASHKIT_MONARCH_UNFUSED_CHUNK_MB: scratch budget in MiB
// (both buffers together; default 128).
bool unfused_on() {
  const char* env = std::getenv("FLASHKIT_MONARCH_UNFUSED");
  return env == nullptr || env[0] != '0';
}
int64_t chunk_budget_bytes() {
  const char* env = std::getenv("FLASHKIT_MONARCH_UNFUSED_CHUNK_MB");
  const long long mb = env ? std::atoll(env) : 0;
  return (mb > 0 && mb <= (1 << 20) ? mb : 128) << 20;
}

struct Plan {
  int64_t cols = 0;   // scratch buffer columns: max(mid, nblocks2 * s)
  int64_t chunk = 0;  // tokens per pass
  size_t buf_bytes = 0, bias_bytes = 0;
};

Plan plan_for(const MonarchProblem& p) {
  Plan pl;
  const int64_t mid = p.nblocks1 * p.q;
  pl.cols = std::max(mid, p.nblocks2 * p.s);
  const int64_t per_token = pl.cols * 2 * 2;  // two 16-bit buffers
  int64_t chunk = chunk_budget_bytes() / per_token / kChunkAlign * kChunkAlign;
  chunk = std::max(chunk, kChunkAlign);
  pl.chunk = std::min(chunk, p.tokens);
  pl.buf_bytes = size_t(pl.chunk) * size_t(pl.cols) * 2;
  pl.bias_bytes = p.bias ? size_t(p.nblocks2 * p.s) * size_t(dtype_bytes(p.bias_dtype)) : 0;
  return pl;
}

// The block-diagonal call of one factor over a chunk: x (x_ld apart) times w -> out (out_ld).
BlockdiagProblem factor_call(const MonarchProblem& p, const void* x, int64_t x_ld, const void* w,
                             int64_t nblocks, int64_t q, int64_t pp, const void* bias, void* out,
                             int64_t out_ld, int64_t tokens) {
  BlockdiagProblem b{};
  b.device = p.device;
  b.dtype = p.dtype;
  b.bias_dtype = p.bias_dtype;
  b.x = x;
  b.w = w;
  b.bias = bias;
  b.out = out;
  b.tokens = tokens;
  b.nblocks = nblocks;
  b.q = q;
  b.p = pp;
  b.x_row_stride = x_ld;
  b.out_row_stride = out_ld;
  return b;
}
// Factor 1: x -> y1 (out_ld apart); factor 2: z -> y2, both ld apart, with the permuted bias.
BlockdiagProblem factor1(const MonarchProblem& p, const void* x, void* out, int64_t tokens,
                         int64_t out_ld) {
  return factor_call(p, x, p.x_row_stride, p.w1, p.nblocks1, p.q, p.p, nullptr, out, out_ld,
                     tokens);
}
BlockdiagProblem factor2(const MonarchProblem& p, const void* z, const void* bias, void* out,
                         int64_t tokens, int64_t ld) {
  return factor_call(p, z, ld, p.w2, p.nblocks2, p.s, p.r, bias, out, ld, tokens);
}

// A stand-in for the scratch in the predicate, aligned as ScratchArena's buffers are.
void* stand_in() { return reinterpret_cast<void*>(uintptr_t(kScratchAlign)); }

fk_status_t transpose(const void* in, int64_t in_ld, void* out, int64_t out_ld, int64_t tokens,
                      int64_t R, int64_t C, cudaStream_t stream) {
  const int tiles_r = static_cast<int>((R + kTile - 1) / kTile);
  const int tiles_c = static_cast<int>((C + kTile - 1) / kTile);
  const int64_t blocks = tokens * tiles_r * tiles_c;
  transpose16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const uint16_t*>(in), in_ld, static_cast<uint16_t*>(out), out_ld,
      static_cast<int>(R), static_cast<int>(C), tiles_r, tiles_c);
  return check_launch("cuda.sm80.monarch_unfused transpose kernel");
}

}  // namespace

bool monarch_unfused_supported(const DeviceCaps& caps, const MonarchProblem& p) {
  if (!unfused_on()) return false;
  if (p.device != Device::Cuda || (p.dtype != DType::F16 && p.dtype != DType::BF16)) return false;
  if (p.tokens <= 0 || p.nblocks1 <= 0 || p.nblocks2 <= 0 || p.q <= 0 || p.s <= 0) return false;
  const int64_t mid = p.nblocks1 * p.q;
  if (mid != p.nblocks2 * p.r) return false;
  // Transposes move pairs: r, s and nblocks2 even; out 4-byte aligned with an even row stride.
  if (p.r % 2 != 0 || p.s % 2 != 0 || p.nblocks2 % 2 != 0) return false;
  if (!aligned(p.out, 4) || (p.tokens > 1 && p.out_row_stride % 2 != 0)) return false;
  if (p.bias != nullptr && (!aligned(p.bias, 4) || (dtype_bytes(p.bias_dtype) != 2 &&
                                                      dtype_bytes(p.bias_dtype) != 4)))
    return false;
  // Columns and the per-token tile count stay in 32-bit arithmetic, the grid below 2^31.
  const Plan pl = plan_for(p);
  if (pl.cols > (int64_t(1) << 30)) return false;
  const int64_t t1 = ((p.r + kTile - 1) / kTile) * ((p.nblocks2 + kTile - 1) / kTile);
  const int64_t t2 = ((p.nblocks2 + kTile - 1) / kTile) * ((p.s + kTile - 1) / kTile);
  if (std::max(t1, t2) * pl.chunk >= (int64_t(1) << 31)) return false;
  // Both factors within the block-diagonal kernel's predicate, on 256-byte aligned scratch.
  void* s = stand_in();
  return blockdiag_supported(caps, factor1(p, p.x, s, pl.chunk, pl.cols)) &&
         blockdiag_supported(caps, factor2(p, s, p.bias ? s : nullptr, s, pl.chunk, pl.cols));
}

uint64_t monarch_unfused_workspace(const DeviceCaps&, const MonarchProblem& p) {
  const Plan pl = plan_for(p);
  return pl.bias_bytes ? workspace_for({pl.buf_bytes, pl.buf_bytes, pl.bias_bytes})
                       : workspace_for({pl.buf_bytes, pl.buf_bytes});
}

fk_status_t monarch_unfused(const ExecContext& ctx, const MonarchProblem& p) {
  if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0) return FK_SUCCESS;
  if (!monarch_unfused_supported(*ctx.caps, p))
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm80.monarch_unfused: problem outside the variant's predicate");
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const Plan pl = plan_for(p);
  ScratchArena arena(ctx);
  void *a = nullptr, *b = nullptr, *bias = nullptr;
  FK_RETURN_IF_ERROR(arena.alloc(pl.buf_bytes, &a, "cuda.sm80.monarch_unfused: scratch 1"));
  FK_RETURN_IF_ERROR(arena.alloc(pl.buf_bytes, &b, "cuda.sm80.monarch_unfused: scratch 2"));
  if (p.bias) {
    FK_RETURN_IF_ERROR(arena.alloc(pl.bias_bytes, &bias, "cuda.sm80.monarch_unfused: bias"));
    const int64_t n = p.nblocks2 * p.s;
    const int grid = static_cast<int>(std::min<int64_t>((n + 255) / 256, 1024));
    if (dtype_bytes(p.bias_dtype) == 2)
      permute_bias_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint16_t*>(p.bias),
                                                    static_cast<uint16_t*>(bias),
                                                    static_cast<int>(p.nblocks2),
                                                    static_cast<int>(p.s));
    else
      permute_bias_kernel<<<grid, 256, 0, stream>>>(static_cast<const uint32_t*>(p.bias),
                                                    static_cast<uint32_t*>(bias),
                                                    static_cast<int>(p.nblocks2),
                                                    static_cast<int>(p.s));
    FK_RETURN_IF_ERROR(check_launch("cuda.sm80.monarch_unfused bias permutation kernel"));
  }
  const int64_t elem = 2;
  for (int64_t t0 = 0; t0 < p.tokens; t0 += pl.chunk) {
    const int64_t tc = std::min(pl.chunk, p.tokens - t0);
    const char* x = static_cast<const char*>(p.x) + t0 * p.x_row_stride * elem;
    char* out = static_cast<char*>(p.out) + t0 * p.out_row_stride * elem;
    // y1 -> a; z -> b; y2 -> a; out.
    FK_RETURN_IF_ERROR(blockdiag(ctx, factor1(p, x, a, tc, pl.cols)));
    FK_RETURN_IF_ERROR(transpose(a, pl.cols, b, pl.cols, tc, p.r, p.nblocks2, stream));
    FK_RETURN_IF_ERROR(blockdiag(ctx, factor2(p, b, bias, a, tc, pl.cols)));
    FK_RETURN_IF_ERROR(transpose(a, pl.cols, out, p.out_row_stride, tc, p.nblocks2, p.s, stream));
  }
  return FK_SUCCESS;
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
