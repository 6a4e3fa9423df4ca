// The sm80-class GEMM's tile shapes and the table that picks one per problem (plain C++, shared
// by the host code, the kernels and the GPU test, which checks the pick).
//
//   big:   128 x 256 x 64, 8 warps of 64 x 64, 3 stages (144 KiB of shared memory), one CTA per
//          SM: long K (> 4096) on GPUs whose per-block opt-in limit allows it (H100/H200:
//          227 KiB), and every grid that fills the GPU on GPUs too small for two mid CTAs per SM
//          (A100: 163 KiB)
//   mid:   128 x 128 x 64, 4 warps of 64 x 64, 3 stages (96 KiB), two CTAs per SM where the
//          opt-in limit holds two (227 KiB parts): K <= 4096, and skinny problems (M, N > 64)
//          with split-K. Each SM then runs two independent pipelines: one CTA's barriers,
//          prologue and epilogue overlap the other's MMAs. Mid vs big on the H200 (bf16, nn,
//          TFLOP/s, 2026-11-30, two runs; benchmarks/RESULTS.md): 434/434 vs 413/416 at
//          4096^3, 318/331 vs 264/283 at (8192, 8192, 1024), 435/444 vs 417/393 at (4096,
//          12288, 4096); at 8192^3 429 vs 433 in one run and 421 vs 370 in the other (within
//          the run-to-run spread), 411 vs 434 at 16384^3: the big tile stays for K > 4096.
//          (128, 8192, 8192): mid with 4 splits 281 TFLOP/s, small with 2 (the old pick) 230
//   small:  64 x  64 x 32, 4 warps of 32 x 32, 4 stages (32 KiB): M or N <= 64 and GPUs with
//          99 KiB per block (sm_86/sm_89), several CTAs per SM, with split-K when the output
//          tiles cannot fill the GPU
//
// Diagnostics (not part of the API, read per call by gemm_sm80.cpp): FLASHKIT_SM80_GEMM_TILE=
// big|mid|small forces a tile where it fits the device (the tests use it to cover the big tile),
// FLASHKIT_SM80_GEMM_SPLITS=<1..16> the split-K factor.
#pragma once

#include <algorithm>
#include <cstdint>

namespace flashkit {
namespace cuda {
namespace sm80 {

template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct TileConfig {
  static constexpr int BM = BM_, BN = BN_, BK = BK_;
  static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_, STAGES = STAGES_;
  static constexpr int kThreads = WARPS_M * WARPS_N * 32;
  static constexpr int WTM = BM / WARPS_M, WTN = BN / WARPS_N;  // warp tile
  static constexpr int MI = WTM / 16, NI = WTN / 8;             // m16n8k16 MMAs per k16 step
  static constexpr int kABytes = BM * BK * 2, kBBytes = BN * BK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemBytes = kStageBytes * STAGES;
  static constexpr int kMinBlocks = kThreads >= 256 ? 1 : (MI * NI >= 32 ? 2 : 3);
  static constexpr int kGroupM = 8;  // raster: tile rows per group sweeping n together
  // Epilogue staging in the (then idle) pipeline stages: fp32 rows of BN + 8 floats (the pad
  // puts the 8 fragment rows of a half-warp float2 store on distinct banks), as many warp rows
  // per pass as fit.
  static constexpr int kEpiLd = BN + 8;
  static constexpr int kEpiWarpRows = (BM * kEpiLd * 4 <= kSmemBytes) ? WARPS_M : 1;
  static constexpr int kEpiPasses = WARPS_M / kEpiWarpRows;
  static constexpr int kEpiRows = kEpiWarpRows * WTM;
  static_assert(kEpiRows * kEpiLd * 4 <= kSmemBytes, "epilogue staging fits the stages");
};

using BigTile = TileConfig<128, 256, 64, 2, 4, 3>;
using MidTile = TileConfig<128, 128, 64, 2, 2, 3>;
using SmallTile = TileConfig<64, 64, 32, 2, 2, 4>;

enum class TileKind : int { Big = 0, Mid = 1, Small = 2, Auto = -1 };

// Operand layouts of one kernel instantiation (the host swaps A and B for the fourth one).
enum class Layout : int {
  KK = 0,    // A K-major (row-major (M, K)), B K-major (stored (N, K))
  KMN = 1,   // A K-major, B N-major (row-major (K, N))
  MNMN = 2,  // A M-major (stored (K, M)), B N-major
};

struct Schedule {
  TileKind tile;
  int32_t splits;
};

struct TileShape {
  int bm, bn, bk, smem_bytes;
};

inline TileShape tile_shape(TileKind t) {
  switch (t) {
    case TileKind::Big: return {BigTile::BM, BigTile::BN, BigTile::BK, BigTile::kSmemBytes};
    case TileKind::Mid: return {MidTile::BM, MidTile::BN, MidTile::BK, MidTile::kSmemBytes};
    default: return {SmallTile::BM, SmallTile::BN, SmallTile::BK, SmallTile::kSmemBytes};
  }
}

inline const char* tile_name(TileKind t) {
  switch (t) {
    case TileKind::Big: return "big 128x256x64";
    case TileKind::Mid: return "mid 128x128x64";
    default: return "small 64x64x32";
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t tile_count(TileKind t, int64_t M, int64_t N, int64_t batch) {
  const TileShape s = tile_shape(t);
  return ceil_div(M, s.bm) * ceil_div(N, s.bn) * batch;
}

// Split-K factor that brings `tiles` output tiles up to about `slots` resident CTAs (batch 1
// only): each split keeps at least 8 k-tiles, at most 16 splits, fp32 partials under 64 MiB.
inline int32_t split_k(TileKind t, int64_t tiles, int64_t slots, int64_t M, int64_t N, int64_t K,
                       int64_t batch) {
  if (batch != 1 || tiles >= slots) return 1;
  const int64_t k_tiles = ceil_div(K, tile_shape(t).bk);
  int64_t splits = std::min<int64_t>({slots / tiles, k_tiles / 8, 16});
  const int64_t cap = (int64_t(64) << 20) / (4 * std::max<int64_t>(M * N, 1));
  return int32_t(std::max<int64_t>(1, std::min(splits, cap)));
}

// The table (M, N, K in the kernel's coordinates; the first row that holds wins):
//  1. big tiles when they fill the GPU at least once and either K > 4096 or the device cannot
//     hold two mid CTAs per SM (A100);
//  2. mid tiles, two per SM, when M and N exceed 64 and the mid tiles, split along K when they
//     are fewer than two per SM (each split at least 8 k-tiles = 512 of K), give at least one
//     CTA per SM (e.g. (128, 8192, 8192): 64 tiles x 4 splits);
//  3. small tiles (about 4 CTAs per SM resident), split along K when even those leave SMs idle.
// `forced` (the diagnostic override) takes any tile whose shared memory fits the device.
inline Schedule pick_schedule(int64_t M, int64_t N, int64_t K, int64_t batch, int sm_count,
                              int64_t smem_optin, TileKind forced = TileKind::Auto) {
  const int64_t sms = sm_count > 0 ? sm_count : 1;
  const bool big_fits = smem_optin >= BigTile::kSmemBytes;
  const bool mid_pairs = smem_optin >= 2 * int64_t(MidTile::kSmemBytes);  // two CTAs per SM
  if (forced != TileKind::Auto && smem_optin >= tile_shape(forced).smem_bytes) {
    const int64_t per_sm = forced == TileKind::Big ? 1 : (forced == TileKind::Mid ? 2 : 4);
    return {forced, split_k(forced, tile_count(forced, M, N, batch), sms * per_sm, M, N, K, batch)};
  }
  if (big_fits && tile_count(TileKind::Big, M, N, batch) >= sms && (!mid_pairs || K > 4096))
    return {TileKind::Big, 1};
  if (mid_pairs && M > 64 && N > 64) {
    const int64_t tiles = tile_count(TileKind::Mid, M, N, batch);
    const int32_t splits = split_k(TileKind::Mid, tiles, 2 * sms, M, N, K, batch);
    if (tiles * splits >= sms) return {TileKind::Mid, splits};
  }
  const int64_t small_tiles = tile_count(TileKind::Small, M, N, batch);
  return {TileKind::Small, split_k(TileKind::Small, small_tiles, sms * 4, M, N, K, batch)};
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
