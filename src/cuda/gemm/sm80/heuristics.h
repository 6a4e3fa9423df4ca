// The sm80-class GEMM's tile shapes and the table that picks one per problem (plain C++, shared
// by the host code and the kernels).
//
//   big:   128 x 256 x 64, 8 warps of 64 x 64, 3 stages (144 KiB of shared memory): large M and
//          N on GPUs whose per-block opt-in limit allows it (A100: 163 KiB, H100/H200: 227 KiB;
//          not sm_86/sm_89 at 99 KiB, which take the small tiles); 64-deep k-tiles halve the
//          barriers, waits and copy issue per MMA of the earlier 32-deep, 4-stage 96 KiB tile
//   small:  64 x  64 x 32, 4 warps of 32 x 32, 4 stages (32 KiB): skinny or small problems,
//          several CTAs per SM, with split-K when the output tiles cannot fill the GPU
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
using SmallTile = TileConfig<64, 64, 32, 2, 2, 4>;

enum class TileKind : int { Big = 0, Small = 1 };

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

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Big tiles whenever they fill the GPU at least once (one 8-warp CTA per SM); otherwise small
// tiles (about 4 CTAs per SM resident), and split K when even those leave SMs idle and K is
// long: each split keeps at least 8 k-tiles (256 of K), at most 16 splits, and the fp32
// partials stay under 64 MiB.
inline Schedule pick_schedule(int64_t M, int64_t N, int64_t K, int64_t batch, int sm_count,
                              int64_t smem_optin) {
  const int64_t sms = sm_count > 0 ? sm_count : 1;
  const int64_t big_tiles = ceil_div(M, BigTile::BM) * ceil_div(N, BigTile::BN) * batch;
  if (smem_optin >= BigTile::kSmemBytes && big_tiles >= sms) return {TileKind::Big, 1};
  const int64_t small_tiles = ceil_div(M, SmallTile::BM) * ceil_div(N, SmallTile::BN) * batch;
  int64_t splits = 1;
  const int64_t resident = sms * 4;
  if (batch == 1 && small_tiles < resident) {
    const int64_t k_tiles = ceil_div(K, SmallTile::BK);
    splits = std::min<int64_t>({resident / small_tiles, k_tiles / 8, 16});
    const int64_t cap = (int64_t(64) << 20) / (4 * std::max<int64_t>(M * N, 1));
    splits = std::max<int64_t>(1, std::min(splits, cap));
  }
  return {TileKind::Small, int32_t(splits)};
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
