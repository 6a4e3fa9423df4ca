// The Hopper GEMM's heuristics table: one place that picks, per problem, what the kernel leaves
// to run time. One CTA tile (128 x 256 x 64: wgmma's 64 x 256 instruction twice) with a ring of
// 3 stages plus 64 KB of epilogue staging for the copy-engine stores of D, or 4 stages plus
// 32 KB (227 KB either way); the table chooses the ring depth, the grid, the tile order (raster
// direction and group size of the grouped raster, tile_scheduler.cuh) and the split-K factor.
//
// Tuning knobs for benchmarking (not part of the API), read once per process:
// FLASHKIT_SM90_GEMM_GROUP=<1..64>, FLASHKIT_SM90_GEMM_RASTER=m|n and
// FLASHKIT_SM90_GEMM_SPLITS=<1..64> and FLASHKIT_SM90_GEMM_STAGES=3|4 override the table,
// FLASHKIT_SM90_GEMM_SPLITK=interleave gives split-K unit s the k-tiles s, s + splits, ...;
// FLASHKIT_SM90_GEMM_EPILOGUE=regs keeps D on the register-store epilogue, =generic also drops
// its typed fast path; FLASHKIT_SM90_GEMM_IDLE=0 lets warpgroups whose rows are all past M
// multiply zeros as before. FLASHKIT_SM90_GEMM_SCHEDULE=pingpong|cooperative overrides the
// schedule (pick_pingpong); unlike the others it is read on every call, so that one process can
// time both schedules (benchmarks/gemm.py --ab-schedule). FLASHKIT_SM90_GEMM_SKINNY=<on>[,<splits>
// [,<krot>]] (also read on every call: benchmarks/gemm.py --sweep-skinny) forces the skinny
// kernel on (1, where A is K-major) or off (0), optionally with a split-K factor (1..64, either
// kernel) and the rotated k-tile walk on or off (pick_krot; the skinny kernel only); an empty
// field keeps the table's choice.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// The diagnostic overrides, read from the environment once per process (not on every call:
// getenv walks the whole environment). 0 / -1 mean "no override".
struct TuningOverrides {
  int32_t group = 0;         // FLASHKIT_SM90_GEMM_GROUP, 1..64
  int32_t raster_n = -1;     // FLASHKIT_SM90_GEMM_RASTER, m -> 0, n -> 1
  int32_t splits = 0;        // FLASHKIT_SM90_GEMM_SPLITS, 1..64
  bool generic_epilogue = false;  // FLASHKIT_SM90_GEMM_EPILOGUE=generic
  bool register_epilogue = false;  // FLASHKIT_SM90_GEMM_EPILOGUE=regs (no copy-engine stores)
  int32_t stages = 0;        // FLASHKIT_SM90_GEMM_STAGES, 3 or 4
  bool no_idle_skip = false;  // FLASHKIT_SM90_GEMM_IDLE=0
  bool splitk_interleave = false;  // FLASHKIT_SM90_GEMM_SPLITK=interleave
};

// The per-call overrides of FLASHKIT_SM90_GEMM_SKINNY=<on>[,<splits>[,<krot>]] (-1 / 0: no
// override; an empty field leaves its setting to the table).
struct CallOverrides {
  int32_t skinny = -1;  // 0 off, 1 on
  int32_t splits = 0;   // 1..64
  int32_t krot = -1;    // 0 off, 1 on
};

inline CallOverrides call_overrides() {
  CallOverrides o;
  const char* v = std::getenv("FLASHKIT_SM90_GEMM_SKINNY");
  if (v == nullptr) return o;
  for (int field = 0; field < 3 && *v != 0; ++field) {
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    if (end != v) {
      if (field == 0) o.skinny = x != 0 ? 1 : 0;
      if (field == 1 && x >= 1 && x <= 64) o.splits = int32_t(x);
      if (field == 2) o.krot = x != 0 ? 1 : 0;
    }
    while (*end != 0 && *end != ',') ++end;  // skip to the next field
    v = *end == ',' ? end + 1 : end;
  }
  return o;
}

// FLASHKIT_SM90_GEMM_DECODE (read per call): "0" never runs the decode kernel (decode.cu), "1"
// runs it on every problem whose layout it takes; unset or anything else, the table decides
// (decode_pick).
inline int decode_override() {
  const char* v = std::getenv("FLASHKIT_SM90_GEMM_DECODE");
  if (v == nullptr) return -1;
  if (std::strcmp(v, "0") == 0) return 0;
  if (std::strcmp(v, "1") == 0) return 1;
  return -1;
}

inline const TuningOverrides& tuning_overrides() {
  static const TuningOverrides t = [] {
    TuningOverrides o;
    auto ranged = [](const char* name) -> int32_t {
      const char* s = std::getenv(name);
      const long v = s ? std::strtol(s, nullptr, 10) : 0;
      return (v >= 1 && v <= 64) ? int32_t(v) : 0;
    };
    o.group = ranged("FLASHKIT_SM90_GEMM_GROUP");
    o.splits = ranged("FLASHKIT_SM90_GEMM_SPLITS");
    if (const char* r = std::getenv("FLASHKIT_SM90_GEMM_RASTER")) {
      if (std::strcmp(r, "m") == 0) o.raster_n = 0;
      if (std::strcmp(r, "n") == 0) o.raster_n = 1;
    }
    const char* e = std::getenv("FLASHKIT_SM90_GEMM_EPILOGUE");
    o.generic_epilogue = e && std::strcmp(e, "generic") == 0;
    o.register_epilogue = e && std::strcmp(e, "regs") == 0;
    const int32_t st = ranged("FLASHKIT_SM90_GEMM_STAGES");
    o.stages = (st == 3 || st == 4) ? st : 0;
    const char* idle = std::getenv("FLASHKIT_SM90_GEMM_IDLE");
    o.no_idle_skip = idle && std::strcmp(idle, "0") == 0;
    const char* sk = std::getenv("FLASHKIT_SM90_GEMM_SPLITK");
    o.splitk_interleave = sk && std::strcmp(sk, "interleave") == 0;
    return o;
  }();
  return t;
}

struct ScheduleChoice {
  int32_t group;
  bool raster_n;
};

// Rows: the first whose condition holds wins. Conditions are on the tile grid of one batch.
//  - Tall grids (more tile rows than columns): group along N, so one group's B panel is the
//    narrow dimension and A streams once per group.
//  - Otherwise group 8 tile rows (1024 rows of A) per column sweep: with 132 CTAs in flight
//    that is an 8 x 16 patch of tiles, about 1 K x 4 K of D, whose panels stay in L2 (50 MB).
//  - Grids narrower than a group degrade to a plain row-major walk by construction.
inline ScheduleChoice pick_schedule(int64_t tiles_m, int64_t tiles_n) {
  ScheduleChoice c;
  if (tiles_m > 2 * tiles_n) {
    c = {8, true};
  } else {
    c = {8, false};
  }
  const TuningOverrides& o = tuning_overrides();
  if (o.group) c.group = o.group;
  if (o.raster_n >= 0) c.raster_n = o.raster_n == 1;
  return c;
}

// Split-K for grids too small to fill the GPU (decode-sized M against large N and K): cut K
// into `splits` slices so that tiles x splits units cover about one wave, each slice at least
// 4 k-tiles (256 of K) long so the pipeline still runs full, at most 16 so the partials
// (128 KB per unit, summed once by the tile's last unit) stay a small fraction of the traffic.
// FLASHKIT_SM90_GEMM_SPLITS=<n> overrides (1 turns split-K off).
// The rule both kernels share (`split` false: no split-K unless overridden): enough slices for
// total_tiles x slices to cover about one wave of `sms`, each at least `min_slice` k-tiles, at
// most 16; then the override, and never more slices than k-tiles.
inline int32_t wave_splits(bool split, int64_t total_tiles, int64_t k_tiles, int64_t sms,
                           int64_t min_slice) {
  int64_t s = 1;
  if (split && total_tiles > 0) {
    s = sms / total_tiles;
    if (s > k_tiles / min_slice) s = k_tiles / min_slice;
    if (s > 16) s = 16;
    if (s < 1) s = 1;
  }
  if (tuning_overrides().splits) s = tuning_overrides().splits;
  if (s > k_tiles) s = k_tiles > 0 ? k_tiles : 1;
  return int32_t(s);
}

inline int32_t pick_splits(int64_t total_tiles, int64_t k_tiles, int32_t sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  return wave_splits(k_tiles >= 8 && total_tiles * 2 <= sms, total_tiles, k_tiles, sms, 4);
}

// Ring depth: 4 stages (32 KB of epilogue staging) or 3 (64 KB), kernel.cuh. Measured on the
// H200 (benchmarks/RESULTS.md, "Ring depth, idle warpgroups, split-K order"; one device run,
// one process per setting): 4 stages ran fp8 4096^3 in 118 us against 132 (116 us in the next
// run), fp8 8192 x 8192 x 1024 4% faster, and the long-K shapes (8192^3, 64-128 k-tiles) and
// the split-K shapes within the run-to-run spread, so the deeper ring goes to tiles of at most
// 32 k-tiles, where the ring's refill after each tile's epilogue weighs most, and to split-K
// units (one unit per CTA: the smaller staging costs them nothing).
// FLASHKIT_SM90_GEMM_STAGES=3|4 overrides.
inline int32_t pick_stages(int32_t splits, int64_t total_tiles, int32_t k_tiles) {
  (void)total_tiles;
  int32_t st = (splits > 1 || k_tiles <= 32) ? 4 : 3;
  if (tuning_overrides().stages) st = tuning_overrides().stages;
  return st;
}

// Schedule: ping-pong (kernel.cuh, pingpong_consumer: each consumer warpgroup multiplies its own
// 64-row half of the tile while the other runs its epilogue) or cooperative (both warpgroups on
// one tile, the epilogue exposed once per tile). Ping-pong reads B twice per tile (once per half,
// the second time from L2): 40 KB of copy-engine loads per 64 x 256 x 64 step against 24 KB, so
// its mainloop tops out near 13 TB/s of L2-to-SM traffic (~660 bf16 TFLOP/s) and it pays only
// where the per-tile epilogue weighs against the mainloop. Measured on the H200 (benchmarks/
// RESULTS.md, "Ping-pong schedule", both schedules in one process), ping-pong / cooperative:
// bf16 8192 x 8192 x 1024 (16 k-tiles) 1.23, bias + GELU at 4096^3 (64 k-tiles) 1.14, fp8
// (128-wide k-tiles) 1.09 / 1.09 / 1.04 at K = 1024, 4096^3, 4096 x 12288 x 4096 (8-32 k-tiles);
// 0.89-0.92 at bf16 4096^3, 8192^3, 16384^3, 4096 x 12288 x 4096 (64-256 k-tiles), 0.87 at fp8
// 16384^3, 0.98-0.99 at bias + GELU 8192^3 and fp8 8192^3 (64-128 k-tiles). Hence: a full GPU of
// tiles with at most 32 k-tiles, or at most 64 with a fused epilogue (bias, activation, beta C).
// Never with split-K (its reduction is tile-wide).
// FLASHKIT_SM90_GEMM_SCHEDULE=pingpong|cooperative overrides (read per call; split-K still
// keeps the cooperative schedule).
// Which ping-pong: 16-bit inputs take kPingPong128 (whole 128 x 128 tiles per warpgroup, B
// loaded once), fp8 inputs kPingPong64. Measured on the H200 (RESULTS.md, "128-column ping-pong",
// the three schedules in one process), pingpong128 / pingpong64 where ping-pong is picked: bf16
// 8192 x 8192 x 1024 1.02, bias + GELU at 4096^3 1.11; fp8 8192 x 8192 x 1024 0.91, 4096^3
// 0.97, 4096 x 12288 x 4096 1.01. FLASHKIT_SM90_GEMM_PINGPONG=64|128 picks the kind for every
// dtype (A/B measurement). `total_tiles` counts 128 x 256 tiles. Returns a GemmArgs::pingpong
// value. FLASHKIT_SM90_GEMM_SCHEDULE=pingpong64|pingpong128 forces either.
inline int32_t pick_pingpong(int32_t splits, int64_t total_tiles, int32_t k_tiles, bool fused,
                             int32_t sm_count, bool fp8) {
  if (splits > 1) return kCooperative;
  const char* kind = std::getenv("FLASHKIT_SM90_GEMM_PINGPONG");
  int32_t pp = fp8 ? kPingPong64 : kPingPong128;
  if (kind != nullptr && std::strcmp(kind, "64") == 0) pp = kPingPong64;
  if (kind != nullptr && std::strcmp(kind, "128") == 0) pp = kPingPong128;
  if (const char* v = std::getenv("FLASHKIT_SM90_GEMM_SCHEDULE")) {
    if (std::strcmp(v, "pingpong") == 0) return pp;
    if (std::strcmp(v, "pingpong64") == 0) return kPingPong64;
    if (std::strcmp(v, "pingpong128") == 0) return kPingPong128;
    if (std::strcmp(v, "cooperative") == 0) return kCooperative;
  }
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  return (total_tiles >= sms && (k_tiles <= 32 || (fused && k_tiles <= 64))) ? pp : kCooperative;
}

// The name of a schedule in the FK_LOG_DEBUG launch line (the GPU tests read it).
inline const char* schedule_name(bool skinny, int32_t pingpong) {
  if (skinny) return "skinny";
  return pingpong == kPingPong64 ? "pingpong64"
                                 : (pingpong == kPingPong128 ? "pingpong128" : "cooperative");
}

// The skinny kernel (kernel.cuh, SkinnyKernel: 64 x 128 tiles, one consumer warpgroup, 8-deep
// ring) for decode-sized problems: A K-major, M at most two of its 64-row tiles, and a
// 128 x 256 grid too small to fill the GPU (the cooperative kernel would split K: at most half
// the SMs in tiles, at least 8 k-tiles). `coop_tiles` counts the 128 x 256 tiles of all batches.
// Measured on the H200 (benchmarks/RESULTS.md, "Skinny kernel ... (branch gemm9)", run 2, one
// process, same inputs, per-call events), this table's picks against the cooperative kernel
// forced: (M, N, K) = (16, 8192, 8192) bf16 43.3 / 43.8 us (a @ b / a @ w.T) against 47.3 /
// 48.8; M = 128 40.6 / 41.8 against 56.5 / 58.8; fp8 M = 16 29.1 against 38.5, M = 128 26.7
// against 45.2.
// Also the small 16-bit GEMMs of a small model's layers (at most half a wave of 128 x 256 tiles,
// 6 to 32 k-tiles), where the 128 x 256 grid leaves most SMs idle: the demo's
// (all-MiniLM-L6-v2, 1128 tokens) bf16 + bias GEMMs measured on the H200 (RESULTS.md, "GPU
// check summary", 15:30 UTC; GPU us per call, skinny forced against the old pick): 1128 x 1152 x
// 384 11.7 against 12.9, 1128 x 384 x 384 7.1 against 12.7, 1128 x 1536 x 384 + GELU 14.3
// against 17.4, 1128 x 384 x 1536 10.4 against 23.9 (cuBLAS 4.3-10.0). FP8 keeps the first rule
// (not measured at these sizes).
// (M <= 32 against a large weight goes to the decode kernel before this rule is asked: decode.h.)
inline bool pick_skinny(bool a_k_major, int64_t M, int64_t coop_tiles, int64_t k_tiles,
                        int32_t sm_count, bool fp8 = false) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  if (!a_k_major) return false;
  if (M <= 2 * kSkinnyM && k_tiles >= 8 && coop_tiles * 2 <= sms) return true;
  // Bounded by what was measured: at most half a wave of 128 x 256 tiles, 6-32 k-tiles.
  return !fp8 && coop_tiles * 2 <= sms && k_tiles >= 6 && k_tiles <= 32;
}

// Split-K for the skinny kernel: as many slices as keep tiles x splits within one CTA per SM,
// but each slice at least 64 k-tiles (1 MB of B for a 64 x 128 tile of 16-bit inputs): split-K
// costs a few microseconds a launch (the counters' memset, the partial stores, the last unit's
// reduction). H200 (RESULTS.md, runs 1 and 2): M = 16 x 8192 x 8192 bf16 (128 k-tiles) 43.3 /
// 43.8 us with 2 rotated slices against 48.2 / 47.7 unsplit (64 CTAs) and 47.6 / 46.8 with 4
// (run 1); fp8 (64 k-tiles) unsplit 38.2 against 43.5 with 2 slices in run 1, 28.4 against
// 28.9 in run 2. FLASHKIT_SM90_GEMM_SPLITS (per process) and FLASHKIT_SM90_GEMM_SKINNY=1,<n>
// (per call) override.
inline int32_t pick_skinny_splits(int64_t total_tiles, int64_t k_tiles, int32_t sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  return wave_splits(true, total_tiles, k_tiles, sms, 64);
}

// The rotated k-tile walk (TileSchedulerParams::k_rotate): the skinny kernel's split-K launches
// of one 64-row tile row. H200, M = 16 x 8192 x 8192 bf16, 2 slices: 43.3 / 43.8 us (a @ b /
// a @ w.T) rotated against 45.5 / 46.6 in order (run 2; run 1 44.0 / 43.8 against 45.0 / 46.6).
// Not with two tile rows: each unit's rotation is its own, so the two 64-row halves of a column
// no longer read B's k-tiles together and the second read misses L2 (M = 128, unsplit, forced
// rotated: 52.5 / 52.0 against 40.2 / 41.9 us). The cooperative kernel gained nothing from it
// (run 1, split 4: 48.3 / 48.2 against 47.0 / 47.9 us) and walks K in order whatever the flag
// (Mainloop::load<false>: the rotation's arithmetic in its producer loop cost spills).
inline bool pick_krot(bool skinny, int32_t splits, int64_t tiles_m) {
  return skinny && splits > 1 && tiles_m == 1;
}

// Persistent grid: one CTA per SM (the kernel's 227 KB of shared memory allows no second), or
// one per tile when there are fewer tiles.
inline int32_t pick_grid(int64_t total_tiles, int32_t sm_count) {
  const int64_t sms = sm_count > 0 ? sm_count : 132;
  return int32_t(total_tiles < sms ? (total_tiles > 0 ? total_tiles : 1) : sms);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
