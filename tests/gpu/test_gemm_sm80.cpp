// GPU suite, sm80-class GEMM (src/cuda/gemm/sm80) with the SM80 kernel family forced through the
// context options (kernel_family = FK_KERNEL_FAMILY_SM80), so that it runs on Hopper too: shapes,
// transposes, dtypes and epilogues checked against the float64 reference
// (tests/reference/reference.hpp) on fresh random inputs with poisoned outputs, and the problems
// it declines (unaligned operands, fp32 inputs), which must fall back to the generic kernel and
// stay right. On a device of compute capability >= 8.0 every eligible case must report the
// variant "cuda.sm80.gemm".
//
// Tile selection: the kernel logs its tile and split-K factor at FK_LOG_DEBUG; the cases meant
// for one tile check, through that log, that the launch ran the schedule of the heuristics
// table (src/cuda/gemm/sm80/heuristics.h, plain C++, evaluated here with this device's SM
// count and shared-memory opt-in), and on a device that can hold the tile (two 96 KiB CTAs per
// SM for the mid tile, as on the H100/H200) that this schedule is the intended tile. The big
// tile, which the table keeps for K > 4096 there (too slow for the float64 reference at a
// size that fills the GPU), is forced through FLASHKIT_SM80_GEMM_TILE=big on the same shapes.
//
// Operands are stored with leading dimensions rounded up to 8 elements (16 bytes, the cp.async
// alignment) plus `pad` more, so that odd extents (1, 7, 127, 129, 4097) exercise the kernel's
// zero-filled tails rather than the fallback.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../../src/cuda/gemm/sm80/heuristics.h"
#include "gemm_check.hpp"

namespace {

using fkgemm::Case;
using fkgemm::ab_by_index;
using fkgemm::cd_by_index;
using fktest::DT;

// True when eligible problems must run on the sm80 kernel here (compute capability >= 8.0).
bool expect_sm80() {
  static const bool v = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    return major >= 8;
  }();
  return v;
}

// Every case on a context with the SM80 family forced.
fkgemm::Target target() {
  return {fkgpu::context_for(FK_KERNEL_FAMILY_SM80), "cuda.sm80.gemm", expect_sm80()};
}
void run(const Case& c, uint64_t tag) { fkgemm::run(c, tag, target()); }

namespace hs = flashkit::cuda::sm80;

struct DeviceFacts {
  int sms = 0;
  int64_t smem_optin = 0;
};
const DeviceFacts& device_facts() {
  static const DeviceFacts f = [] {
    DeviceFacts d;
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return d;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess) d.sms = v;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) == cudaSuccess)
      d.smem_optin = v;
    return d;
  }();
  return f;
}

// The schedule the heuristics give case c on this device (in the kernel's coordinates: the
// host swaps A and B when A is M-major and B K-major), with the override `forced`.
hs::Schedule expected_schedule(const Case& c, hs::TileKind forced) {
  const bool swap = (c.trans_a || c.col_major_a) && c.trans_b;
  const DeviceFacts& f = device_facts();
  hs::Schedule s = hs::pick_schedule(swap ? c.N : c.M, swap ? c.M : c.N, c.K,
                                     std::max<int64_t>(c.batch, 1), f.sms, f.smem_optin, forced);
  if (s.splits > 1) {  // the host drops empty splits: ceil(k_tiles / ceil(k_tiles / splits))
    const int64_t k_tiles = hs::ceil_div(c.K, hs::tile_shape(s.tile).bk);
    s.splits = int32_t(hs::ceil_div(k_tiles, hs::ceil_div(k_tiles, s.splits)));
  }
  return s;
}

// Whether this device can run `tile` as the table intends (mid: two CTAs per SM).
bool device_holds(hs::TileKind tile) {
  const int64_t optin = device_facts().smem_optin;
  if (tile == hs::TileKind::Mid) return optin >= 2 * int64_t(hs::MidTile::kSmemBytes);
  return optin >= hs::tile_shape(tile).smem_bytes;
}

// Collects the sm80 GEMM's tile lines of the FK_LOG_DEBUG log while in scope.
struct TileLog {
  std::vector<std::string> lines;
  TileLog() { fk_set_log_callback(&TileLog::sink, FK_LOG_DEBUG, this); }
  ~TileLog() { fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr); }
  static void sink(fk_log_level_t, const char* msg, void* self) {
    if (std::strncmp(msg, "cuda.sm80.gemm: tile ", 21) == 0)
      static_cast<TileLog*>(self)->lines.emplace_back(msg);
  }
};

// FLASHKIT_SM80_GEMM_TILE=big|mid|small while in scope (nothing for Auto).
struct ForceTile {
  bool set = false;
  explicit ForceTile(hs::TileKind t) {
    const char* v = t == hs::TileKind::Big ? "big" : t == hs::TileKind::Mid ? "mid" : "small";
    if (t != hs::TileKind::Auto) set = setenv("FLASHKIT_SM80_GEMM_TILE", v, 1) == 0;
  }
  ~ForceTile() {
    if (set) unsetenv("FLASHKIT_SM80_GEMM_TILE");
  }
};

std::string tile_line(const hs::Schedule& s) {
  std::ostringstream o;
  o << "cuda.sm80.gemm: tile " << hs::tile_name(s.tile) << ", " << s.splits << " k-splits";
  return o.str();
}

// Runs c (with the tile `forced` unless Auto) and checks the launch's logged schedule against
// the table; where this device holds `want`, the table must have picked it (so the case covers
// the tile it is written for).
void run_tile(const Case& c, uint64_t tag, hs::TileKind want,
              hs::TileKind forced = hs::TileKind::Auto) {
  const hs::Schedule s = expected_schedule(c, forced);
  INFO("expected " << tile_line(s) << " (M " << c.M << " N " << c.N << " K " << c.K << ", "
                   << device_facts().sms << " SMs, opt-in smem " << device_facts().smem_optin
                   << ")");
  if (expect_sm80() && device_holds(want)) REQUIRE(s.tile == want);
  std::vector<std::string> lines;
  {
    ForceTile f(forced);
    TileLog log;
    run(c, tag);
    lines = log.lines;
  }
  if (expect_sm80()) {
    REQUIRE(lines.size() == 1);
    REQUIRE(lines[0] == tile_line(s));
  }
}

}  // namespace

TEST_CASE("sm80 gemm: M N K in {1 7 127 129} with every transpose dtype and epilogue",
          "[gpu][gemm][sm80]") {
  fkgemm::cases_small_extents(target(), 1000000);
}

TEST_CASE("sm80 gemm: extents of 4097 (many tiles and tails in both raster orders)", "[gpu][gemm][sm80]") {
  fkgemm::cases_4097_extents(target(), 1000000);
}

TEST_CASE("sm80 gemm: more tiles than SMs (grouped raster; mid tiles, then big tiles forced)",
          "[gpu][gemm][sm80]") {
  // The shared case set (2100 x 3000, K 40: a bf16 GELU case and a transposed fp16 -> fp32
  // case with C), each launch's tile checked against the table.
  for (hs::TileKind forced : {hs::TileKind::Auto, hs::TileKind::Big}) {
    Case c;
    c.M = 2100;
    c.N = 3000;
    c.K = 40;
    const hs::TileKind want = forced == hs::TileKind::Auto ? hs::TileKind::Mid : forced;
    const hs::Schedule s = expected_schedule(c, forced);
    if (expect_sm80() && device_holds(want)) REQUIRE(s.tile == want);
    std::vector<std::string> lines;
    {
      ForceTile f(forced);
      TileLog log;
      fkgemm::cases_many_tiles(target(), c.K, forced == hs::TileKind::Auto ? 122000 : 122010);
      lines = log.lines;
    }
    if (expect_sm80()) {
      REQUIRE(lines.size() == 2);  // 3000 x 2100 after the swap of the transposed case: same tile
      for (const std::string& l : lines) REQUIRE(l == tile_line(s));
    }
  }
}

TEST_CASE("sm80 gemm: big and mid tiles over several k-tiles (whole-tile copies, then the K tail)",
          "[gpu][gemm][sm80]") {
  // 9 x 17 big tiles (>= one per SM; forced) and 9 x 33 mid tiles (the table's pick), K =
  // 4 x 64 + 8: interior tiles copy their first whole k-tiles without bounds work, then the
  // bounds-checked path covers the tail; the last tile row and column take the bounds-checked
  // path throughout. K-major B keeps the float64 reference fast.
  Case c;
  c.M = 1100;
  c.N = 4097;
  c.K = 264;
  c.trans_b = true;
  c.ab = DT::BF16;
  c.cd = DT::BF16;
  c.with_bias = true;
  c.with_c = true;
  c.beta = 0.25f;
  run_tile(c, 122600, hs::TileKind::Big, hs::TileKind::Big);
  run_tile(c, 122601, hs::TileKind::Mid);
}

TEST_CASE("sm80 gemm: big and mid tiles with tails in every layout (4097 columns)",
          "[gpu][gemm][sm80]") {
  for (int i = 0; i < 8; ++i) {
    Case c;
    c.M = 1100;
    c.N = 4097;
    c.K = 24;
    c.trans_a = (i & 1) != 0;
    c.trans_b = (i & 2) != 0;
    c.ab = ab_by_index(i);
    c.cd = cd_by_index(i);
    c.with_bias = true;
    c.with_c = (i % 2) == 1;
    c.beta = c.with_c ? -0.5f : 0.0f;
    c.act = (i + 1) % 4;
    c.col_major_d = (i & 3) == 2;
    if (i < 4) {
      run_tile(c, 122500 + uint64_t(i), hs::TileKind::Big, hs::TileKind::Big);
    } else {
      run_tile(c, 122500 + uint64_t(i), hs::TileKind::Mid);
    }
  }
}

TEST_CASE("sm80 gemm: mid tiles split along K for skinny problems", "[gpu][gemm][sm80]") {
  // 2 x 15 mid tiles and K = 64 x 64 + 4: the table splits K 8 ways (9 k-tiles each, the last
  // split 2 k-tiles ending in the tail) so that 240 CTAs cover the GPU, the shape of a
  // decode-sized M of 128..256 against large N and K. Then A M-major and B K-major (the host
  // swaps them: 17 x 2 tiles, K split 5 ways) with C into fp32. K-major B keeps the float64
  // reference fast.
  Case c;
  c.M = 150;
  c.N = 1920;
  c.K = 4100;
  c.trans_b = true;
  c.with_bias = true;
  c.bias_dt = DT::BF16;
  c.act = 2;
  run_tile(c, 122700, hs::TileKind::Mid);
  c.M = 136;
  c.N = 2050;
  c.K = 2600;
  c.trans_a = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.with_bias = false;
  c.with_c = true;
  c.beta = -0.75f;
  c.act = 0;
  run_tile(c, 122701, hs::TileKind::Mid);
}

TEST_CASE("sm80 gemm: split-K on grids smaller than the GPU", "[gpu][gemm][sm80]") {
  fkgemm::cases_split_k(target(), 1000000);
}

TEST_CASE("sm80 gemm: K = 0 writes act(beta C + bias)", "[gpu][gemm][sm80]") {
  fkgemm::cases_k0(target(), 1000000);
}

TEST_CASE("sm80 gemm: every epilogue on every output dtype", "[gpu][gemm][sm80]") {
  fkgemm::cases_epilogues(target(), 1000000);
}

// The plain-D epilogue (16-byte stores, no C: kernel.cuh, epilogue_octet) on a problem the host
// swaps (A M-major, B K-major, column-major D: D^T = B^T A^T), where the bias runs along the
// kernel's M: each bias dtype with each activation, alpha 0.1, and an M tail (263).
TEST_CASE("sm80 gemm: column-major D with a bias along the swapped problem's M",
          "[gpu][gemm][sm80]") {
  const DT bias_dts[] = {DT::F32, DT::F16, DT::BF16};
  uint64_t tag = 1000500;
  for (int64_t M : {264, 263})
    for (DT bdt : bias_dts)
      for (int act = 0; act < 4; ++act) {
        if (M == 263 && act != 2) continue;
        Case c;
        c.M = M;
        c.N = 150;
        c.K = 200;
        c.trans_a = true;
        c.trans_b = true;
        c.col_major_d = true;
        c.with_bias = true;
        c.bias_dt = bdt;
        c.alpha = 0.1f;
        c.act = act;
        run(c, tag++);
      }
}

TEST_CASE("sm80 gemm: transposes and layouts through strides", "[gpu][gemm][sm80]") {
  fkgemm::cases_layouts(target(), 1000000);
}

TEST_CASE("sm80 gemm: strided batch and broadcast", "[gpu][gemm][sm80]") {
  fkgemm::cases_batch(target(), 1000000);
}

TEST_CASE("sm80 gemm: batch 65536 x (8 64 8) above the 65535 grid limit", "[gpu][gemm][sm80]") {
  fkgemm::cases_batch_65536(target(), 1000000);
}

TEST_CASE("sm80 gemm: unaligned operands: a and b fall back, c and d stay on the kernel", "[gpu][gemm][sm80]") {
  fkgemm::cases_unaligned(target(), 1000000);
}

TEST_CASE("sm80 gemm: fp8 inputs and fk_gemm_scaled scales are declined", "[gpu][gemm][sm80]") {
  Case t;
  t.scaled = true;
  t.ab = DT::E4M3;
  t.M = 70;
  t.N = 90;
  t.K = 48;
  t.trans_b = true;
  t.scale_a = 2;
  t.scale_b = 1;
  t.eligible = false;
  run(t, 140900);
  Case h;
  h.scaled = true;
  h.ab = DT::BF16;
  h.M = 65;
  h.N = 130;
  h.K = 70;
  h.scale_a = 1;
  h.scale_b = 2;
  h.eligible = false;
  run(h, 140901);
}

TEST_CASE("sm80 gemm: non-default stream", "[gpu][gemm][sm80]") {
  fkgemm::cases_stream(target(), 1000000);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
