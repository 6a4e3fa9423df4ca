// GPU suite, Hopper GEMM (src/cuda/gemm/sm90): shapes, layouts and epilogues that the sm90
// kernel takes, checked against the float64 reference (tests/reference/reference.hpp) on fresh
// random inputs with poisoned outputs, and the shapes it does not take, which must fall back to
// the generic kernel and still be right.
//
// On a compute capability 9.0 device with a library built with the sm90 GEMM
// (FLASHKIT_TEST_EXPECT_SM90_GEMM, set by CMake), every eligible case must report the variant
// "cuda.sm90.gemm" (unless FLASHKIT_KERNEL_FAMILY pins another family); elsewhere the cases
// still run and check values on whatever variant the dispatcher picks.
//
// Operands are stored with leading dimensions rounded up to 8 elements (16 bytes, the copy
// engine's alignment) plus `pad` more, so that odd extents (1, 7, 127, 129, 4097) exercise the
// kernel's tails rather than the fallback.
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

#include "gemm_check.hpp"

namespace {

using fkgemm::Case;
using fkgemm::ab_by_index;
using fkgemm::cd_by_index;
using fktest::DT;

// True when eligible problems must run on the sm90 kernel here.
bool expect_sm90() {
#if defined(FLASHKIT_TEST_EXPECT_SM90_GEMM)
  static const bool v = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    const char* fam = std::getenv("FLASHKIT_KERNEL_FAMILY");
    const bool family_ok =
        !fam || !*fam || std::strcmp(fam, "auto") == 0 || std::strcmp(fam, "sm90") == 0;
    return major == 9 && minor == 0 && family_ok;
  }();
  return v;
#else
  return false;
#endif
}

fkgemm::Target target() { return {fkgpu::auto_context(), "cuda.sm90.gemm", expect_sm90()}; }
void run(const Case& c, uint64_t tag) { fkgemm::run(c, tag, target()); }

// FLASHKIT_SM90_GEMM_SKINNY=<v> while in scope (read by the library on every call). Since the
// table gives sub-wave 16-bit grids of at most 32 k-tiles to the skinny kernel, the cases meant
// for the 128 x 256 kernel on such shapes switch it off ("0").
struct ForceSkinny : fktest::ScopedEnv {
  explicit ForceSkinny(const char* v) : ScopedEnv("FLASHKIT_SM90_GEMM_SKINNY", v) {}
};

}  // namespace

TEST_CASE("sm90 gemm: M N K in {1 7 127 129} with every transpose dtype and epilogue",
          "[gpu][gemm][sm90]") {
  fkgemm::cases_small_extents(target(), 0);
}

// The same small shapes and epilogues on the 128 x 256 kernel: by default most of them now run
// the skinny kernel (sub-wave grids, heuristics.h pick_skinny).
TEST_CASE("sm90 gemm: small extents and every epilogue with the skinny kernel off",
          "[gpu][gemm][sm90]") {
  ForceSkinny off("0");
  fkgemm::cases_small_extents(target(), 1);
  fkgemm::cases_epilogues(target(), 1);
}

TEST_CASE("sm90 gemm: extents of 4097 (many tiles and tails in both raster orders)", "[gpu][gemm][sm90]") {
  fkgemm::cases_4097_extents(target(), 0);
}

TEST_CASE("sm90 gemm: more tiles than SMs (persistent loop and grouped raster)", "[gpu][gemm][sm90]") {
  fkgemm::cases_many_tiles(target(), 136, 22000);
}

TEST_CASE("sm90 gemm: split-K on grids smaller than the GPU", "[gpu][gemm][sm90]") {
  fkgemm::cases_split_k(target(), 0);
}

TEST_CASE("sm90 gemm: K = 0 writes act(beta C + bias)", "[gpu][gemm][sm90]") {
  fkgemm::cases_k0(target(), 0);
}

TEST_CASE("sm90 gemm: every epilogue on every output dtype", "[gpu][gemm][sm90]") {
  fkgemm::cases_epilogues(target(), 0);
}

TEST_CASE("sm90 gemm: transposes and layouts through strides", "[gpu][gemm][sm90]") {
  fkgemm::cases_layouts(target(), 0);
}

TEST_CASE("sm90 gemm: strided batch and broadcast", "[gpu][gemm][sm90]") {
  fkgemm::cases_batch(target(), 0);
}

TEST_CASE("sm90 gemm: batch 65536 x (8 64 8) above the 65535 grid limit", "[gpu][gemm][sm90]") {
  fkgemm::cases_batch_65536(target(), 0);
}

TEST_CASE("sm90 gemm: unaligned operands: a and b fall back, c and d stay on the kernel", "[gpu][gemm][sm90]") {
  fkgemm::cases_unaligned(target(), 0);
}

TEST_CASE("sm90 gemm: fp8 (e4m3/e5m2) with per-tensor, per-row and per-column scales",
          "[gpu][gemm][sm90][fp8]") {
  // K-major A (M, K) and B stored (N, K) (trans_b): the Hopper kernel's fp8 layout.
  const DT fp8[] = {DT::E4M3, DT::E5M2};
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 127, 129}, {129, 7, 127}, {300, 520, 4097},
                               {1000, 257, 64}, {16, 4096, 1024}};
  int i = 0;
  for (DT a8 : fp8)
    for (DT b8 : fp8)
      for (const auto& s : shapes) {
        Case c;
        c.scaled = true;
        c.ab = a8;
        c.b_dt_set = true;
        c.b_dt = b8;
        c.M = s[0];
        c.N = s[1];
        c.K = s[2];
        c.trans_b = true;
        c.cd = cd_by_index(i);
        c.scale_a = i % 3;
        c.scale_b = (i + 1) % 3;
        c.with_bias = (i % 2) == 0;
        c.act = i % 4;
        c.with_c = (i % 5) == 1;
        c.beta = c.with_c ? 0.5f : 0.0f;
        c.alpha = (i % 3) == 2 ? 0.5f : 1.0f;
        c.batch = (i % 7) == 3 ? 3 : 0;
        run(c, 30000 + uint64_t(i++));
      }
  // Layouts the fp8 kernel does not read (A transposed = M-major, B (K, N)): generic, correct.
  Case t;
  t.scaled = true;
  t.ab = DT::E4M3;
  t.M = 70;
  t.N = 90;
  t.K = 48;
  t.trans_a = true;
  t.scale_a = 2;
  t.scale_b = 2;
  t.eligible = false;
  run(t, 30900);
  // 16-bit inputs with scales take the generic kernel too.
  Case h;
  h.scaled = true;
  h.ab = DT::BF16;
  h.M = 65;
  h.N = 130;
  h.K = 70;
  h.scale_a = 1;
  h.scale_b = 2;
  h.eligible = false;
  run(h, 30901);
  // fp8 rows the copy engine cannot read: a row pitch of K + 1 bytes, or bases of a and b one
  // byte past a 16-byte boundary. Both go to the generic kernel and stay correct.
  Case u;
  u.scaled = true;
  u.ab = DT::E4M3;
  u.trans_b = true;
  u.M = 96;
  u.N = 80;
  u.K = 64;
  u.ld_pad = 1;
  u.scale_a = 2;
  u.scale_b = 1;
  u.eligible = false;
  run(u, 30902);
  u.ld_pad = 0;
  u.off_ab = 1;
  u.cd = DT::F16;
  u.with_bias = true;
  u.act = 1;
  run(u, 30903);
}

// The copy-engine store of D (epilogue.cuh, epilogue_store_tma) is taken when D is row-major
// with a 16-byte aligned base, row pitch and batch stride and there is no C term; other D
// layouts keep the register-store path inside the same kernel (both report "cuda.sm90.gemm",
// so the path is fixed by construction here: D's pitch decides it).
TEST_CASE("sm90 gemm: copy-engine store of D (tails, dtypes, epilogues, batch)",
          "[gpu][gemm][sm90][tma_store]") {
  const DT cds[] = {DT::BF16, DT::F16, DT::F32};
  // Tails in M and N (rows past M and columns past N clipped by the copy engine; an fp32 chunk
  // whose second box starts past N), tiles of one 64-column chunk (box reuse after a short tile:
  // 300 tiles over at most 132 CTAs), split-K and K = 0. N is a multiple of 8, so every row of D
  // is a whole number of 16-byte units (the copy engine writes whole units: other N take the
  // register path, as the small-extent cases above check without padding writes).
  const int64_t shapes[][3] = {{300, 520, 200}, {1, 40, 70}, {129, 24, 64}, {38400, 40, 8},
                               {16, 4096, 1024}, {200, 312, 0}, {65, 296, 129}};
  int i = 0;
  for (const auto& s : shapes)
    for (DT cd : cds) {
      Case c;
      c.M = s[0];
      c.N = s[1];
      c.K = s[2];
      c.ab = ab_by_index(i);
      c.cd = cd;
      c.with_bias = (i % 3) != 1;
      c.bias_dt = (i % 2) ? DT::BF16 : DT::F32;
      c.act = i % 4;
      c.alpha = (i % 5) == 2 ? -0.5f : 1.0f;
      c.trans_a = (i % 4) == 3;
      c.trans_b = (i % 3) == 2;
      c.batch = (i % 7) == 4 ? 3 : 0;
      run(c, 40000 + uint64_t(i++));
    }
}

TEST_CASE("sm90 gemm: D pitch not 16-byte aligned keeps the register-store path",
          "[gpu][gemm][sm90][tma_store]") {
  // A and B aligned (the sm90 kernel takes the problem); D's rows padded by 1 element (no vector
  // stores either: the general path) or 4 (8-byte aligned fp16/bf16 rows: the typed fast path).
  const int64_t pads[] = {1, 4, 1, 4};
  const DT cds[] = {DT::BF16, DT::F16, DT::F32, DT::BF16};
  for (int i = 0; i < 4; ++i) {
    Case c;
    c.M = 300;
    c.N = 264;
    c.K = 130;
    c.cd = cds[i];
    c.ld_pad_d = pads[i];
    c.with_bias = true;
    c.act = 1 + i % 3;
    c.batch = i == 3 ? 2 : 0;
    run(c, 41000 + uint64_t(i));
  }
  // C present (beta != 0): register path with a 16-byte aligned D.
  Case c;
  c.M = 257;
  c.N = 300;
  c.K = 64;
  c.with_c = true;
  c.beta = 0.5f;
  c.with_bias = true;
  c.act = 2;
  run(c, 41010);
}

// A small case for compute-sanitizer (memcheck / racecheck): both warpgroups, two chunks with
// the box alternation, tails.
TEST_CASE("sm90 gemm: small copy-engine store case for the sanitizers",
          "[gpu][gemm][sm90][tma_store_small]") {
  ForceSkinny off("0");  // both consumer warpgroups of the 128 x 256 kernel
  Case c;
  c.M = 200;
  c.N = 136;
  c.K = 72;
  c.with_bias = true;
  c.act = 2;
  run(c, 42000);
  c.cd = DT::F32;
  c.N = 300;
  run(c, 42001);
}

// The 4-stage ring (heuristics.h, pick_stages) with 2 copy-engine boxes a warpgroup: the
// heuristics give it to every split-K launch (grids of at most half the GPU's SMs in tiles, K of
// at least 8 k-tiles) and to tiles of at most 32 k-tiles, so these shapes took it by
// construction on the H200 (132 SMs). The table now gives these sub-wave grids to the skinny
// kernel (heuristics.h, pick_skinny), so the case switches it off: the 128 x 256 kernel, with D
// through both boxes (16-bit D alternating them, fp32
// D filling the pair per chunk), C on the register path, tails, M <= 64 (the second consumer
// warpgroup idle: Mainloop::skip), split-K slices of uneven k-tile counts (K tails), and more
// tiles than CTAs (the box alternation carried from tile to tile). Longer K (the
// 4097-extent and epilogue cases) keeps the 3-stage ring. FLASHKIT_SM90_GEMM_STAGES=3|4 in the
// environment forces one ring on every case (FLASHKIT_SM90_GEMM_SPLITK=interleave, the other
// split-K order).
TEST_CASE("sm90 gemm: 4-stage ring on split-K shapes (2 boxes, idle warpgroup)",
          "[gpu][gemm][sm90][deep_ring]") {
  ForceSkinny off("0");  // the 128 x 256 kernel's 4-stage ring on every shape
  // The 144-tile shapes would take a ping-pong schedule (a full GPU of tiles, few k-tiles).
  fktest::ScopedEnv coop("FLASHKIT_SM90_GEMM_SCHEDULE", "cooperative");
  struct S {
    int64_t M, N, K;
    DT ab, cd;
    bool trans_a, trans_b, with_c;
  };
  const S shapes[] = {
      {16, 2048, 4096, DT::BF16, DT::BF16, false, false, false},  // 8 tiles x 16 splits
      {100, 1000, 2500, DT::F16, DT::F32, false, true, false},    // fp32 D, one box pair
      {70, 520, 1500, DT::BF16, DT::BF16, true, false, true},     // C: register path
      {1, 4096, 8192, DT::BF16, DT::F16, false, true, false},     // one row
      {129, 1000, 2048, DT::F16, DT::F16, true, true, false},     // 2 tile rows, 1 live row
      {24, 1000, 4100, DT::BF16, DT::BF16, false, true, false},   // 65 k-tiles, 16 slices
      {1100, 4000, 130, DT::BF16, DT::F32, false, false, false},  // 144 tiles, no split
      {1100, 4000, 130, DT::F16, DT::F16, true, true, false},     // 144 tiles, 16-bit D
  };
  int i = 0;
  for (const S& sh : shapes) {
    Case c;
    c.M = sh.M;
    c.N = sh.N;
    c.K = sh.K;
    c.ab = sh.ab;
    c.cd = sh.cd;
    c.trans_a = sh.trans_a;
    c.trans_b = sh.trans_b;
    c.with_c = sh.with_c;
    c.beta = sh.with_c ? 0.5f : 0.0f;
    c.with_bias = (i % 2) == 0;
    c.act = i % 4;
    run(c, 43000 + uint64_t(i++));
  }
  // fp8 through the same ring: per-row and per-column scales, bf16 and fp32 out.
  for (int j = 0; j < 2; ++j) {
    Case c;
    c.scaled = true;
    c.ab = DT::E4M3;
    c.b_dt_set = true;
    c.b_dt = j == 0 ? DT::E4M3 : DT::E5M2;
    c.M = j == 0 ? 64 : 128;
    c.N = 1024;
    c.K = 4096;
    c.trans_b = true;
    c.cd = j == 0 ? DT::BF16 : DT::F32;
    c.scale_a = 2;
    c.scale_b = 2 - j;
    c.with_bias = j == 1;
    c.act = 2;
    run(c, 43100 + uint64_t(j));
  }
  // No split-K (79 tiles), 4-stage ring (K = 200: 4 k-tiles), M = 40: the second warpgroup
  // idle on every tile of a persistent CTA's loop.
  Case c;
  c.M = 40;
  c.N = 20000;
  c.K = 200;
  c.with_bias = true;
  c.act = 1;
  run(c, 43200);
}

namespace {

// Collects the sm90 GEMM's schedule lines of the FK_LOG_DEBUG log while in scope.
struct ScheduleLog {
  std::vector<std::string> lines;
  ScheduleLog() { fk_set_log_callback(&ScheduleLog::sink, FK_LOG_DEBUG, this); }
  ~ScheduleLog() { fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr); }
  static void sink(fk_log_level_t, const char* msg, void* self) {
    if (std::strncmp(msg, "cuda.sm90.gemm: schedule ", 25) == 0)
      static_cast<ScheduleLog*>(self)->lines.emplace_back(msg);
  }
};

// FLASHKIT_SM90_GEMM_SCHEDULE=<v> while in scope (read by the library on every call).
struct ForceSchedule : fktest::ScopedEnv {
  explicit ForceSchedule(const char* v) : ScopedEnv("FLASHKIT_SM90_GEMM_SCHEDULE", v) {}
};

// Runs c and, where the sm90 kernel must take it, checks that its one launch ran `schedule`.
void run_schedule(const Case& c, uint64_t tag, const char* schedule) {
  ScheduleLog log;
  run(c, tag);
  if (expect_sm90() && c.eligible) {
    INFO("schedule lines: " << log.lines.size()
                            << (log.lines.empty() ? std::string() : ", last: " + log.lines.back()));
    REQUIRE(!log.lines.empty());
    CHECK(log.lines.back().find(std::string("schedule ") + schedule + ",") != std::string::npos);
  }
}

}  // namespace

// The cooperative kernel's 3-stage ring (more than 32 k-tiles: 4 copy-engine boxes a warpgroup,
// the 16-bit lean epilogue staging its whole tile at once) on more tiles than CTAs, so each CTA
// reuses its boxes from tile to tile and takes its next tile's coordinates while the last wgmma
// batch of the current one runs (kernel.cuh): batch 9 (the coordinates' batch index), M 520
// (the last tile row's second warpgroup has no rows: Mainloop::skip), N 600 (a 24-column chunk
// tail), K 2112 (33 k-tiles). Plain bf16 D, then fp16 D with a bias and ReLU.
TEST_CASE("sm90 gemm: cooperative 3-stage ring over more tiles than SMs (whole-tile staging)",
          "[gpu][gemm][sm90][coop_tiles]") {
  ForceSkinny off("0");
  fktest::ScopedEnv coop("FLASHKIT_SM90_GEMM_SCHEDULE", "cooperative");
  Case c;
  c.batch = 9;
  c.M = 520;
  c.N = 600;
  c.K = 2112;
  c.alpha = 0.5f;
  run_schedule(c, 43000, "cooperative");
  c.cd = DT::F16;
  c.ab = DT::F16;
  c.with_bias = true;
  c.act = 1;  // ReLU
  c.trans_b = true;
  run_schedule(c, 43001, "cooperative");
}

// The ping-pong schedule (kernel.cuh, pingpong_consumer), forced on shapes that the heuristics
// would mostly give the cooperative one: each consumer warpgroup owns a 64-row half of the tile
// (bottom halves past M skipped, top halves with tails), turns handed over between the
// warpgroups across several tiles per CTA (264 or 162 tiles over at most 132 CTAs), ring
// positions stepped over the other warpgroup's stages (k-tile counts below, at and above the
// 4-stage ring),
// every epilogue (copy-engine stores of 16-bit and fp32 D, the register path with C, column-major
// D, unaligned D pitch), every transpose, fp16/bf16/fp8 inputs, batches, K = 0. None of these
// shapes splits K (a split-K launch keeps the cooperative schedule, checked last).
// Both ping-pong kinds run every shape: "pingpong64" (64-row halves of 128 x 256 tiles) and
// "pingpong128" (each warpgroup its own 128 x 128 tiles: N tails at 128, halves past M inside a
// warpgroup's tile, the CTA's units dealt to the two warpgroups in turn, odd unit counts).
TEST_CASE("sm90 gemm: ping-pong schedule (tails, layouts, epilogues, fp8)",
          "[gpu][gemm][sm90][pingpong]") {
  for (const char* kind : {"pingpong64", "pingpong128"}) {
  DYNAMIC_SECTION(kind) {
  ForceSchedule force(kind);
  struct S {
    int64_t M, N, K;
  };
  // The 128 x 256 kernel's schedule: most of these grids are sub-wave with few k-tiles, which
  // the table gives the skinny kernel (it has no ping-pong schedule).
  std::unique_ptr<ForceSkinny> skinny_off(new ForceSkinny("0"));
  // The last two: 16 k-tiles (longer than either ring) on CTAs that run several tiles, and
  // K = 0 over 165 (128-column) tiles, so the turn passes on units without stages.
  const S shapes[] = {{1, 7, 1},      {127, 129, 127}, {129, 264, 300}, {200, 136, 72},
                      {4100, 600, 72}, {4160, 520, 200}, {65, 296, 0},   {300, 40, 250},
                      {4100, 2000, 72}, {2200, 2100, 330}, {2180, 1100, 1000},
                      {4100, 600, 0}};
  const DT cds[] = {DT::BF16, DT::F16, DT::F32};
  int i = 0;
  for (const S& sh : shapes)
    for (int v = 0; v < 3; ++v) {
      Case c;
      c.M = sh.M;
      c.N = sh.N;
      c.K = sh.K;
      c.ab = ab_by_index(i);
      c.cd = cds[(i + v) % 3];
      c.trans_a = (i % 4) == 1 || (i % 4) == 3;
      c.trans_b = (i % 4) >= 2;
      c.with_bias = (i % 3) != 1;
      c.bias_dt = (i % 2) ? DT::BF16 : DT::F32;
      c.act = i % 4;
      c.alpha = (i % 5) == 2 ? -0.5f : 1.0f;
      c.with_c = v == 2 && (i % 2) == 0;  // C: the register-store path
      c.beta = c.with_c ? 0.5f : 0.0f;
      c.col_major_d = v == 2 && (i % 2) == 1;
      c.ld_pad_d = (v == 1 && (i % 3) == 0) ? 4 : -1;  // D pitch off 16 bytes: register path
      c.batch = ((i % 7) == 4 && c.K > 0) ? 2 : 0;  // (batched K = 0 is not the kernel's)
      if (c.M * c.N * std::max<int64_t>(c.K, 1) * std::max<int64_t>(c.batch, 1) > 400000000)
        c.batch = 0;
      run_schedule(c, 44000 + uint64_t(i++), kind);
    }
  // fp8 (K-major A and B), per-row and per-column scales, both output widths.
  const S fp8_shapes[] = {{300, 520, 896}, {129, 264, 127}, {4100, 600, 256}};
  int j = 0;
  for (const S& sh : fp8_shapes) {
    Case c;
    c.scaled = true;
    c.ab = DT::E4M3;
    c.b_dt_set = true;
    c.b_dt = (j % 2) ? DT::E5M2 : DT::E4M3;
    c.M = sh.M;
    c.N = sh.N;
    c.K = sh.K;
    c.trans_b = true;
    c.cd = (j % 2) ? DT::F32 : DT::BF16;
    c.scale_a = 2;
    c.scale_b = 2 - (j % 2);
    c.with_bias = true;
    c.act = 1 + j;
    run_schedule(c, 44500 + uint64_t(j++), kind);
  }
  skinny_off.reset();  // the table's own pick from here on
  // A split-K shape never takes ping-pong, even when it is asked for: its decode-sized M takes
  // the skinny kernel (M > 128: the cooperative schedule).
  Case k;
  k.M = 16;
  k.N = 2048;
  k.K = 4096;
  k.with_bias = true;
  k.act = 2;
  run_schedule(k, 44600, "skinny");
  k.M = 200;
  k.N = 520;
  k.K = 4096;  // 64 k-tiles: above the skinny kernel's sub-wave rule
  run_schedule(k, 44601, "cooperative");
  }
  }
}

// The copy-engine epilogue's lean path (epilogue.cuh, epilogue_store_tma: no activation, ReLU
// or the tanh GELU, per-column scales only without a bias; alpha, scale_a and a per-tensor scale_b
// folded into one factor a row, the bias or the column scales from shared memory, unrolled
// steps with XOR-ed swizzle addresses) on each schedule, every D 16-byte aligned (the copy
// engine's condition: N a multiple of 8):
// - fp8 (e4m3 A, e4m3 or e5m2 B) with per-tensor, per-row and per-column scales, unscaled,
//   bias or not, alpha 1, 0.5 and -0.5, bf16, fp16 and fp32 D (fp32: a pair of boxes a chunk);
// - bf16/fp16 inputs, bias or not, alpha 0.5 and -0.5, every transpose;
// - ReLU and the tanh GELU, with and without a bias;
// - the boundary: per-column scales with a bias, and the erf GELU, take the general path;
// - N tails inside a chunk (520 = 2 x 256 + 8, 600, 264, 136), M tails, and 4100 / 4160 rows
//   (99 tiles of 128 x 256, one a CTA; 165 of pingpong128's 128 x 128, two on some CTAs);
//   fp8 K up to 7 k-tiles (the 4-stage ring, 2 boxes a warpgroup), and
//   under the cooperative schedule one 16-bit shape of 33 k-tiles (the 3-stage ring, 4 boxes)
//   on 72 tiles (no split-K) with fp32, fp16 and bf16 D.
// The test checks values, not which path ran: fp32 D on pingpong128 takes the general path by
// design (see epilogue.cuh), and a change that sent every call to the general path would pass. Shapes that a schedule would split along K keep the cooperative
//   schedule, so none is used here.
TEST_CASE("sm90 gemm: lean copy-engine epilogue on every schedule", "[gpu][gemm][sm90][lean]") {
  for (const char* kind : {"cooperative", "pingpong64", "pingpong128"}) {
  DYNAMIC_SECTION(kind) {
  ForceSchedule force(kind);
  ForceSkinny skinny_off("0");
  struct S {
    int64_t M, N, K;
  };
  struct V {  // scale_a, scale_b (0 none, 1 per tensor, 2 per row / column), bias, alpha, act
    int sa, sb;
    bool bias;
    float alpha;
    int act;
  };
  const S shapes8[] = {{300, 520, 896}, {4100, 600, 256}, {129, 264, 127}};
  // The last two take the general path: column scales with a bias, and the erf GELU.
  const V v8[] = {{1, 1, false, 1.0f, 0}, {2, 1, true, 0.5f, 2},   {0, 0, true, -0.5f, 0},
                  {2, 0, false, 1.0f, 1}, {2, 2, false, 0.5f, 2},  {1, 2, false, 1.0f, 1},
                  {2, 2, false, -0.5f, 0}, {2, 2, true, 1.0f, 0}, {1, 1, true, 1.0f, 3}};
  uint64_t tag = 46000;
  for (int s = 0; s < 3; ++s)
    for (int v = 0; v < 9; ++v) {
      Case c;
      c.M = shapes8[s].M;
      c.N = shapes8[s].N;
      c.K = shapes8[s].K;
      c.scaled = true;
      c.ab = DT::E4M3;
      c.b_dt_set = true;
      c.b_dt = ((s + v) % 2) ? DT::E5M2 : DT::E4M3;
      c.trans_b = true;
      const DT cds[] = {DT::BF16, DT::F16, DT::F32};
      c.cd = cds[(s + v) % 3];
      c.scale_a = v8[v].sa;
      c.scale_b = v8[v].sb;
      c.with_bias = v8[v].bias;
      c.bias_dt = ((s + v) % 2) ? DT::BF16 : DT::F32;
      c.alpha = v8[v].alpha;
      c.act = v8[v].act;
      run_schedule(c, tag++, kind);
    }
  const S shapes16[] = {{129, 264, 300}, {4160, 520, 200}, {127, 136, 127}};
  for (int s = 0; s < 3; ++s)
    for (int w = 0; w < 4; ++w) {
      Case c;
      c.M = shapes16[s].M;
      c.N = shapes16[s].N;
      c.K = shapes16[s].K;
      c.ab = ((s + w) % 2) ? DT::F16 : DT::BF16;
      const DT cds[] = {DT::BF16, DT::F32, DT::F16};
      c.cd = cds[(s + w) % 3];
      c.trans_a = ((2 * s + w) % 4) == 1 || ((2 * s + w) % 4) == 3;
      c.trans_b = ((2 * s + w) % 4) >= 2;
      c.with_bias = w != 1;
      c.bias_dt = s == 1 ? DT::BF16 : DT::F32;
      c.alpha = w == 0 ? 0.5f : -0.5f;
      // GELU (tanh) + bias, none, ReLU + bias, bias alone (a plain linear layer)
      c.act = w == 0 ? 2 : (w == 2 ? 1 : 0);
      run_schedule(c, tag++, kind);
    }
  if (std::string(kind) == "cooperative") {
    // The 3-stage ring (33 k-tiles, 4 boxes a warpgroup) with each lean body: fp32 D with a
    // bias and the tanh GELU, fp16 D with a bias and the tanh GELU (the fused rows'
    // configuration), bf16 D with neither.
    const DT cds[] = {DT::F32, DT::F16, DT::BF16};
    for (int v = 0; v < 3; ++v) {
      Case c;
      c.M = 1152;
      c.N = 1832;  // fp32: the last chunk's second box holds 8 columns of 32
      c.K = 2112;
      c.cd = cds[v];
      c.with_bias = v < 2;
      c.alpha = 0.5f;
      c.act = v < 2 ? 2 : 0;
      run_schedule(c, tag++, kind);
    }
  }
  }
  }
}

// A small lean-path case for compute-sanitizer (memcheck / racecheck): fp8 with per-row and
// per-column scales (the column scales staged where the bias goes), four chunks over the 2
// boxes of the 4-stage ring; then 16-bit inputs with a bias and the tanh GELU on pingpong64's
// 4 boxes, with fp16 D and with fp32 D (a pair of boxes a chunk).
TEST_CASE("sm90 gemm: small lean epilogue case for the sanitizers",
          "[gpu][gemm][sm90][lean][lean_small][sanitize]") {
  ForceSkinny off("0");
  Case c;
  c.scaled = true;
  c.ab = DT::E4M3;
  c.trans_b = true;
  c.M = 264;
  c.N = 1032;
  c.K = 256;
  c.scale_a = 2;
  c.scale_b = 2;
  c.alpha = 0.5f;
  run(c, 46500);
  ForceSchedule force("pingpong64");
  Case h;
  h.M = 200;
  h.N = 520;
  h.K = 72;
  h.cd = DT::F16;
  h.with_bias = true;
  h.act = 2;  // the tanh GELU
  run_schedule(h, 46501, "pingpong64");
  h.cd = DT::F32;  // fp32 D: a pair of boxes a chunk
  run_schedule(h, 46502, "pingpong64");
}

// The table's picks (heuristics.h, pick_pingpong) on a 132-SM H200: many tiles with short K
// take ping-pong, split-K shapes the cooperative schedule. (The k-tile bounds, 32 and 64 with a
// fused epilogue, need shapes whose float64 reference is too slow for this suite: the benchmark's
// default column shows them, benchmarks/gemm.py --ab-schedule.)
TEST_CASE("sm90 gemm: schedule picked by the heuristics", "[gpu][gemm][sm90][pingpong]") {
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (sms != 132) {
    WARN("not a 132-SM device: the heuristics' picks are not checked");
    return;
  }
  Case a;  // 33 x 8 = 264 tiles, 2 k-tiles
  a.M = 4100;
  a.N = 2000;
  a.K = 72;
  run_schedule(a, 44700, "pingpong128");
  {
    fktest::ScopedEnv kind("FLASHKIT_SM90_GEMM_PINGPONG", "64");  // the A/B switch
    run_schedule(a, 44702, "pingpong64");
  }
  // fp8 inputs (K-major A and B, per-tensor and per-column scales) take the 64-row halves:
  // 264 tiles of 2 k-tiles of 128, so CTAs take several tiles of fewer k-tiles than either ring
  // has stages (the [pingpong] cases force fp8 ping-pong only at 4-99 tiles). (This case first
  // overran a device call's time limit: filling its fp8 inputs took seconds per run with the
  // old 256-code fp8_encode scan, tests/common/test_util.hpp.)
  Case f;
  f.M = 4100;
  f.N = 2000;
  f.K = 256;
  f.scaled = true;
  f.ab = DT::E4M3;
  f.b_dt_set = true;
  f.b_dt = DT::E4M3;
  f.trans_b = true;
  f.scale_a = 1;
  f.scale_b = 2;
  run_schedule(f, 44703, "pingpong64");
  {
    fktest::ScopedEnv kind("FLASHKIT_SM90_GEMM_PINGPONG", "128");
    run_schedule(f, 44704, "pingpong128");
  }
  Case b;  // 2 tiles, split-K (64 k-tiles: not the skinny kernel's sub-wave rule)
  b.M = 129;
  b.N = 300;
  b.K = 4096;
  run_schedule(b, 44701, "cooperative");
}

// A small case for the sanitizers on the 128-column ping-pong schedule with several tiles per
// CTA (289 tiles of 128 x 128 over 132 CTAs): turns handed over, both warpgroups storing at once
// from their own staging, 16-bit and fp32 D, bias and GELU, N and M tails.
TEST_CASE("sm90 gemm: small 128-column ping-pong case for the sanitizers",
          "[gpu][gemm][sm90][pingpong][pp128_small]") {
  ForceSchedule force("pingpong128");
  ForceSkinny off("0");
  Case c;
  c.M = 2100;
  c.N = 2100;
  c.K = 64;
  c.with_bias = true;
  c.act = 2;
  run_schedule(c, 42100, "pingpong128");
  c.cd = DT::F32;
  c.N = 2052;
  c.K = 72;
  run_schedule(c, 42101, "pingpong128");
}


// The skinny kernel (kernel.cuh, SkinnyKernel; heuristics.h, pick_skinny): 64 x 128 tiles, one
// consumer warpgroup, 8-deep ring, for decode-sized M with K-major A. First the table's picks
// (skinny for M <= 128 on grids the 128 x 256 kernel would split K, cooperative above, for
// M-major A and for short K), each checked against the float64 reference with D poisoned; then
// the kernel forced (FLASHKIT_SM90_GEMM_SKINNY=1[,splits[,krot]]) through split-K factors
// (including uneven slices and the rotated k-tile walk), N and K tails, both B layouts,
// fp16/bf16/fp8 inputs, bf16/fp16/fp32 D, bias, ReLU/GELU, alpha, beta C (the register-store
// path), column-major and unaligned D, batches and a single k-tile; last the cooperative kernel
// forced on split-K shapes (the path these shapes took before).
TEST_CASE("sm90 gemm: skinny kernel for decode-sized M (picks, tails, epilogues, fp8)",
          "[gpu][gemm][sm90][skinny]") {
  const DT cds[] = {DT::BF16, DT::F16, DT::F32};
  // The table's picks. N = 1000 and 1030: N tails inside a 128-wide tile (and, for D rows not
  // a multiple of 16 bytes, the register-store path); K = 1500 and 2100: K tails and uneven
  // split-K slices.
  struct P {
    int64_t M, N, K;
    bool trans_a, trans_b;
    const char* schedule;
  };
  const P picks[] = {
      {1, 1000, 1500, false, true, "skinny"},     {7, 1030, 2100, false, false, "skinny"},
      {16, 1000, 1500, false, true, "skinny"},    {64, 1024, 2048, false, false, "skinny"},
      {127, 1000, 1500, false, true, "skinny"},   {128, 1030, 2100, false, false, "skinny"},
      {129, 1000, 4100, false, true, "cooperative"},  // above two 64-row tiles, 65 k-tiles
      {16, 1000, 1500, true, false, "cooperative"},   // M-major A: not the skinny kernel's
      {16, 1000, 256, false, true, "cooperative"},    // 4 k-tiles: no split-K, no skinny
      {300, 900, 1000, false, true, "skinny"},        // sub-wave grid, 16 k-tiles, M > 128
      {300, 520, 2200, false, true, "cooperative"},   // sub-wave grid but 35 k-tiles
  };
  int i = 0;
  for (const P& pk : picks) {
    Case c;
    c.M = pk.M;
    c.N = pk.N;
    c.K = pk.K;
    c.trans_a = pk.trans_a;
    c.trans_b = pk.trans_b;
    c.ab = ab_by_index(i);
    c.cd = cds[i % 3];
    c.with_bias = (i % 2) == 0;
    c.act = i % 4;
    c.alpha = (i % 3) == 1 ? 0.75f : 1.0f;
    run_schedule(c, 45000 + uint64_t(i++), pk.schedule);
  }
  // The kernel forced, with split-K factors and the rotated walk.
  struct F {
    int64_t M, N, K;
    const char* spec;
  };
  const F forced[] = {
      {16, 1000, 1500, "1,5,1"},   // 5 uneven slices, rotated
      {1, 520, 4100, "1,16,0"},    // 65 k-tiles in 16 slices
      {100, 136, 700, "1,1,1"},    // no split, rotated, 2 tile rows
      {129, 264, 1100, "1,3,0"},   // 3 tile rows (the last with one row)
      {64, 2000, 640, "1,2,1"},    // 16 tiles, one full 64-row tile
      {33, 300, 64, "1"},          // one k-tile (the table needs 8)
      {16, 8192, 1024, "1"},       // 64 tiles over the GPU's SMs (split 2 on 132 SMs)
  };
  int j = 0;
  for (const F& f : forced) {
    ForceSkinny force(f.spec);
    for (int v = 0; v < 3; ++v) {
      Case c;
      c.M = f.M;
      c.N = f.N;
      c.K = f.K;
      c.ab = ab_by_index(j + v);
      c.cd = cds[(j + v) % 3];
      c.trans_b = ((j + v) % 2) == 1;
      c.with_bias = v != 1;
      c.bias_dt = (v % 2) ? DT::BF16 : DT::F32;
      c.act = (j + v) % 4;
      c.alpha = v == 1 ? -0.5f : 1.0f;
      c.with_c = v == 2 && (j % 2) == 0;  // C: the register-store path
      c.beta = c.with_c ? 0.5f : 0.0f;
      c.col_major_d = v == 2 && (j % 2) == 1;
      c.ld_pad_d = (v == 1 && (j % 3) == 0) ? 4 : -1;  // D pitch off 16 bytes: register path
      c.batch = (v == 0 && (j % 3) == 2 && c.K > 0) ? 3 : 0;
      if (c.M * c.N * std::max<int64_t>(c.K, 1) > 60000000) {  // keep the reference quick
        c.with_c = false;
        c.batch = 0;
        if (v > 0) continue;
      }
      run_schedule(c, 45100 + uint64_t(10 * j + v), "skinny");
    }
    ++j;
  }
  // fp8 (K-major A and B) through the skinny kernel: the table's pick and forced splits, per-row
  // and per-column scales, bf16 and fp32 D.
  const F fp8[] = {{16, 1000, 4096, ""}, {128, 520, 2000, "1,3,1"}, {7, 264, 1100, "1,1"}};
  int q = 0;
  for (const F& f : fp8) {
    std::unique_ptr<ForceSkinny> force;
    if (*f.spec) force.reset(new ForceSkinny(f.spec));
    Case c;
    c.scaled = true;
    c.ab = DT::E4M3;
    c.b_dt_set = true;
    c.b_dt = (q % 2) ? DT::E5M2 : DT::E4M3;
    c.M = f.M;
    c.N = f.N;
    c.K = f.K;
    c.trans_b = true;
    c.cd = (q % 2) ? DT::F32 : DT::BF16;
    c.scale_a = 2 - (q % 2);
    c.scale_b = 2;
    c.with_bias = q != 1;
    c.act = 1 + q;
    c.with_c = q == 2;
    c.beta = c.with_c ? 0.25f : 0.0f;
    run_schedule(c, 45200 + uint64_t(q), "skinny");
    ++q;
  }
  // The cooperative kernel forced on split-K shapes (the 4-stage ring, idle warpgroup), also with
  // the rotation flag set (which that kernel ignores: it walks K in order).
  const F coop[] = {{16, 1000, 1500, "0"}, {100, 520, 2100, "0,4,1"}, {1, 264, 4100, "0,16,1"}};
  int r = 0;
  for (const F& f : coop) {
    ForceSkinny force(f.spec);
    Case c;
    c.M = f.M;
    c.N = f.N;
    c.K = f.K;
    c.trans_b = (r % 2) == 0;
    c.cd = cds[r % 3];
    c.with_bias = true;
    c.act = 2;
    run_schedule(c, 45300 + uint64_t(r), "cooperative");
    ++r;
  }
}

// A small skinny case for compute-sanitizer (memcheck): split-K with the rotated walk, both
// 64-row halves of a 128-row tile, copy-engine stores; then C on the register path.
TEST_CASE("sm90 gemm: small skinny case for the sanitizers", "[gpu][gemm][sm90][skinny_small]") {
  ForceSkinny force("1,3,1");
  Case c;
  c.M = 100;
  c.N = 264;
  c.K = 600;
  c.with_bias = true;
  c.act = 2;
  run_schedule(c, 45400, "skinny");
  c.with_c = true;
  c.beta = 0.5f;
  c.cd = DT::F32;
  c.trans_b = true;
  run_schedule(c, 45401, "skinny");
}

// The decode kernel (decode.cu): M <= 32 rows of A against a weight stored (N, K) (K-major) or
// (K, N) (MN-major), streamed once. First the table's picks (a weight of at least 8 Mi elements,
// K >= 1024, the tile width of least waves x width: 16 to 112 rows K-major, 32 to 112 MN-major;
// M = 33, short K and explicit skinny requests go elsewhere), then the kernel forced
// (FLASHKIT_SM90_GEMM_DECODE=1) through every tile width, N tails, K tails (K not a multiple
// of 8, K = 1, a partial 256-k stage), M = 1 to 32 (one to four 8-token tiles; width 64 above
// 16 tokens), every output
// dtype, bias, ReLU/GELU, alpha, beta C, column-major D, padded leading dimensions and batches
// with their own or a broadcast weight.
TEST_CASE("sm90 gemm: decode kernel for M <= 32 against a large weight",
          "[gpu][gemm][sm90][decode]") {
  const DT cds[] = {DT::BF16, DT::F16, DT::F32};
  // The widths (and the table's picks) below are those of a 132-SM GPU (the H200); elsewhere
  // the forced cases check only that the decode kernel ran, the picks only values.
  int sms = 0, dev = 0;
  if (cudaGetDevice(&dev) == cudaSuccess)
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const bool h200 = sms == 132;
  struct P {
    int64_t M, N, K;
    bool trans_b;
    const char* schedule;
  };
  const P picks[] = {
      {16, 4096, 4096, true, "decode, 32-row tiles"},    // 128 CTAs
      {1, 2048, 8192, true, "decode, 16-row tiles"},     // 128 CTAs
      {9, 8192, 2048, true, "decode, 64-row tiles"},     // tokens 8..15 partly present
      {4, 14336, 1024, true, "decode, 112-row tiles"},   // 128 CTAs (64-row: 224, two waves)
      {16, 4096, 4096, false, "decode, 32-row tiles"},   // MN-major weight
      {12, 8200, 1024, false, "decode, 64-row tiles"},   // MN-major, 129 CTAs, an N tail
      {16, 14336, 1024, false, "decode, 112-row tiles"}, // MN-major, 128 CTAs
      {24, 8192, 1024, true, "decode, 64-row tiles"},    // the 32-token kernel, 3 live tiles
      {32, 8192, 1024, false, "decode, 64-row tiles"},   // 32 tokens, MN-major
      {33, 4096, 4096, true, "skinny"},                  // more rows than 32 tokens
      {20, 4096, 4096, true, "skinny"},                  // 17-32 tokens: width 64 only, 64 CTAs
      {16, 4096, 512, true, "skinny"},                   // K < 1024
  };
  int i = 0;
  for (const P& pk : picks) {
    Case c;
    c.M = pk.M;
    c.N = pk.N;
    c.K = pk.K;
    c.trans_b = pk.trans_b;
    c.ab = (i % 2) ? DT::F16 : DT::BF16;
    c.cd = cds[i % 3];
    c.with_bias = (i % 2) == 0;
    c.act = i % 4;
    c.alpha = (i % 3) == 1 ? 0.75f : 1.0f;
    if (h200)
      run_schedule(c, 45500 + uint64_t(i++), pk.schedule);
    else
      run(c, 45500 + uint64_t(i++));
  }
  // The kernel forced on shapes the table leaves to the others: tile widths, tails, epilogues.
  // Each width's cases here or above run more 256-k chunks than its ring has stages (K-major /
  // MN-major: 16: 12 / -, 32: 9 / 9, 48: 7 / 5, 64: 5 / 5, 80 and 96: 4 / 3, 112: 3 / 3; the
  // 32-token kernels, 64 wide: 4 / 4), so every stage is refilled.
  fktest::ScopedEnv force("FLASHKIT_SM90_GEMM_DECODE", "1");
  struct F {
    int64_t M, N, K;
    bool trans_b;
    const char* schedule;
  };
  const F forced[] = {
      {16, 1000, 1000, true, "decode, 16-row tiles"},  {7, 1030, 264, false, "decode, 32-row tiles"},
      {1, 7, 8, true, "decode, 16-row tiles"},         {9, 1000, 4096, false, "decode, 32-row tiles"},
      {16, 300, 2056, true, "decode, 16-row tiles"},   {2, 129, 520, false, "decode, 32-row tiles"},
      {16, 64, 256, true, "decode, 16-row tiles"},     {3, 5000, 16, true, "decode, 48-row tiles"},
      {2, 11008, 1300, true, "decode, 96-row tiles"},   {3, 10240, 1600, true, "decode, 80-row tiles"},
      {16, 6144, 2100, true, "decode, 48-row tiles"},   {16, 1000, 1001, true, "decode, 16-row tiles"},
      {5, 64, 7, true, "decode, 16-row tiles"},        {7, 1030, 999, false, "decode, 32-row tiles"},
      {10, 300, 1, true, "decode, 16-row tiles"},      {16, 8192, 1800, false, "decode, 64-row tiles"},
      {2, 11008, 1300, false, "decode, 96-row tiles"},  {3, 10240, 1100, false, "decode, 80-row tiles"},
      {16, 6144, 2100, false, "decode, 48-row tiles"},  {13, 14000, 1100, false, "decode, 112-row tiles"},
      {17, 1000, 3000, true, "decode, 64-row tiles"},  {31, 1030, 2100, false, "decode, 64-row tiles"},
      {20, 6144, 1500, true, "decode, 64-row tiles"},  {32, 8192, 1800, false, "decode, 64-row tiles"},
      {25, 129, 264, true, "decode, 64-row tiles"},
  };
  int j = 0;
  for (const F& f : forced) {
    Case c;
    c.M = f.M;
    c.N = f.N;
    c.K = f.K;
    c.trans_b = f.trans_b;
    c.ab = (j % 2) ? DT::BF16 : DT::F16;
    c.cd = cds[j % 3];
    c.with_bias = (j % 3) != 1;
    c.bias_dt = (j % 2) ? DT::F32 : DT::BF16;
    c.act = j % 4;
    c.alpha = (j % 2) ? 1.25f : 1.0f;
    c.with_c = (j % 4) == 2;
    c.beta = c.with_c ? -0.5f : 0.0f;
    c.col_major_d = (j % 4) == 3;
    c.ld_pad = (j % 3) == 2 ? 8 : 0;
    run_schedule(c, 45600 + uint64_t(j++), h200 ? f.schedule : "decode");
  }
  // Batches of 3 with the weight broadcast (rank 2) or their own, both layouts.
  for (int b = 0; b < 4; ++b) {
    Case c;
    c.batch = 3;
    c.M = 5;
    c.N = 520;
    c.K = 1032;
    c.trans_b = b < 2;
    c.broadcast_b = (b % 2) == 0;
    c.with_bias = true;
    c.act = 2;
    c.cd = (b % 2) == 0 ? DT::BF16 : DT::F32;
    run_schedule(c, 45700 + uint64_t(b), "decode");
  }
}

// A small decode case for compute-sanitizer: N and K tails, two token halves, C and bias, and
// more k chunks than ring stages (the refill after the barrier is what racecheck must see).
TEST_CASE("sm90 gemm: small decode case for the sanitizers", "[gpu][gemm][sm90][decode_small][sanitize]") {
  fktest::ScopedEnv force("FLASHKIT_SM90_GEMM_DECODE", "1");
  Case c;
  c.M = 11;
  c.N = 70;
  c.K = 3400;  // 14 chunks of 256: more than the 12-stage ring, so stages are refilled
  c.trans_b = true;
  c.with_bias = true;
  c.with_c = true;
  c.beta = 0.5f;
  c.act = 1;
  run_schedule(c, 45800, "decode, 16-row tiles");
  c.trans_b = false;  // the MN-major weight (ldmatrix.trans), N and K tails
  c.K = 3401;  // 14 chunks, a 9-stage ring
  c.with_c = false;
  c.beta = 0.0f;
  run_schedule(c, 45801, "decode, 32-row tiles");
  // The 32-token kernels (64 wide, 4-stage rings): 27 rows (4 tiles, the last partly live).
  c.M = 27;
  c.K = 1300;  // 6 chunks
  c.trans_b = true;
  run_schedule(c, 45802, "decode, 64-row tiles");
  c.trans_b = false;
  c.with_c = true;
  c.beta = 0.5f;
  run_schedule(c, 45803, "decode, 64-row tiles");
}

// Overlapping rows (a read-only sliding-window view: row m of A starts 8 elements after row
// m - 1, K = 64) and overlapping batches: legal inputs that describe_operand leaves to the
// sm80 / generic kernels (the driver's tensor-map rules do not cover them, and CuTe prints
// when the driver refuses one). Each must be served elsewhere and be right. Batches that
// interleave without overlapping (an (S, 3, 64) buffer as 3 batches of (S, 64): batch stride
// 64, row stride 192) stay on the Hopper kernel.
TEST_CASE("sm90 gemm: overlapping rows and batches go to another kernel", "[gpu][gemm][sm90]") {
  using fktest::HostTensor;
  using fkgpu::DeviceTensor;
  auto rng = fkgpu::rng_for(61000);
  struct Shape {
    int64_t batch, M, N, K, lda, batch_a;
    bool overlap;
  };
  for (const Shape& sh : {Shape{1, 256, 128, 64, 8, 0, true},
                          Shape{3, 128, 128, 64, 64, 64 * 64, true},
                          Shape{3, 128, 128, 64, 192, 64, false}}) {
    const bool overlap = sh.overlap;
    const int64_t M = sh.M, N = sh.N, K = sh.K;
    HostTensor a = sh.batch > 1 ? HostTensor(DT::BF16, {sh.batch, M, K}, {sh.batch_a, sh.lda, 1})
                                : HostTensor(DT::BF16, {M, K}, {sh.lda, 1});
    HostTensor b =
        sh.batch > 1 ? HostTensor(DT::BF16, {sh.batch, K, N}) : HostTensor(DT::BF16, {K, N});
    HostTensor d =
        sh.batch > 1 ? HostTensor(DT::F32, {sh.batch, M, N}) : HostTensor(DT::F32, {M, N});
    a.fill_normal(rng);
    b.fill_normal(rng);
    DeviceTensor da(a), db(b), dd(d);
    dd.poison();
    fk_gemm_params_t p;
    fk_gemm_params_init(&p);
    const char* variant = "?";
    REQUIRE_FK(fk_gemm_select_kernel(fkgpu::auto_context(), &p, &da, &db, nullptr, nullptr, &dd,
                                     &variant));
    INFO("batch " << sh.batch << ", lda " << sh.lda << ", batch stride " << sh.batch_a << ": "
                  << variant);
    if (overlap) {
      CHECK(std::string(variant) != "cuda.sm90.gemm");
    } else if (expect_sm90()) {
      CHECK(std::string(variant) == "cuda.sm90.gemm");
    }
    REQUIRE_FK(fk_gemm(fkgpu::auto_context(), nullptr, &p, &da, &db, nullptr, nullptr, &dd));
    dd.download();
    double worst = 0;
    for (int64_t l = 0; l < sh.batch; ++l)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double x = sh.batch > 1 ? a.get({l, m, k}) : a.get({m, k});
            const double y = sh.batch > 1 ? b.get({l, k, n}) : b.get({k, n});
            ref += x * y;
            mag += std::fabs(x * y);
          }
          const double got = sh.batch > 1 ? d.get({l, m, n}) : d.get({m, n});
          worst = std::max(worst, std::fabs(got - ref) / (mag + 1e-30));
        }
    CHECK(worst <= 1e-5);  // fp32 accumulation of exact bf16 products
  }
}

TEST_CASE("sm90 gemm: non-default stream", "[gpu][gemm][sm90]") {
  fkgemm::cases_stream(target(), 0);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
