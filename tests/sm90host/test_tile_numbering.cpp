// The Hopper attention kernel's work-tile numbering (tile_scheduler.cuh), run on the host: the
// scheduler's index arithmetic is plain C++ under CUDA's __device__ annotations (ignored by the
// host compiler here), and AttnArgs' divisors are CUTLASS's host-and-device FastDivmod. For
// every order the kernel takes (query tiles of a head together; longest first over all heads;
// longest first in head sections of any width; causal tiles in pairs, tile_pairs.h) and both
// index paths (multiply-high divisors, 64-bit divisions), over many shapes and grids: each
// (batch, head, query tile) comes exactly once, every other position is an empty tile, the KV
// head is head / group, and under the pairs the two positions a CTA takes one wave apart hold
// query tiles i and num_m_blocks - 1 - i of one head; the same per sequence for the varlen
// pairs (a prefix over the sequences, as the kernel builds it). Needs no GPU (built where the sm90
// kernels are: CUTLASS headers present).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <device_launch_parameters.h>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

// tile_scheduler.cuh calls min / max unqualified (CUDA's device overloads in the kernel build).
using std::max;
using std::min;

#include "cuda/attention/sm90/tile_pairs.h"
#include "cuda/attention/sm90/tile_scheduler.cuh"

namespace {

using flashkit::cuda::sm90_attention::AttnArgs;
using flashkit::cuda::sm90_attention::set_index_divisors;
using flashkit::cuda::sm90_attention::set_pairs;
using flashkit::cuda::sm90_attention::TileScheduler;
using flashkit::cuda::sm90_attention::WorkTile;

enum class Order { kHeadsTogether, kLongestFirst, kSections, kPairs };

struct Shape {
  int32_t batch, nheads, group, num_m_blocks, grid;
};

// AttnArgs as attention_sm90.cpp builds them for a batched causal call of this shape (the
// order and its members set directly; sections of `section_heads` heads).
AttnArgs args_for(const Shape& s, Order order, int32_t block_m, int32_t section_heads, bool index64) {
  AttnArgs a;
  a.batch = s.batch;
  a.nheads = s.nheads;
  a.nheads_k = s.nheads / s.group;
  a.group = s.group;
  a.num_m_blocks = s.num_m_blocks;
  a.seqlen_q = s.num_m_blocks * block_m - block_m / 3;  // a partial last tile
  a.seqlen_k = a.seqlen_q + 5;
  a.window_right = 0;  // causal
  a.block_m = block_m;
  a.total_tiles = int64_t(s.num_m_blocks) * s.nheads * s.batch;
  a.longest_first = order == Order::kHeadsTogether ? 0 : 1;
  a.grid = int32_t(std::min<int64_t>(a.total_tiles, s.grid));
  if (order == Order::kSections) a.section_heads = section_heads;
  if (order == Order::kPairs) set_pairs(a, s.grid);
  set_index_divisors(a);
  if (index64) a.index32 = 0;
  return a;
}

std::string describe(const Shape& s, Order order, int32_t block_m, int32_t sec, bool index64) {
  std::ostringstream o;
  o << "batch " << s.batch << " heads " << s.nheads << " group " << s.group << " tiles "
    << s.num_m_blocks << " (" << block_m << " rows) grid " << s.grid << " order " << int(order)
    << " section_heads " << sec << (index64 ? " index64" : " index32");
  return o.str();
}

template <int kBlockM>
void check(const Shape& s, Order order, int32_t sec, bool index64) {
  INFO(describe(s, order, kBlockM, sec, index64));
  const AttnArgs a = args_for(s, order, kBlockM, sec, index64);
  REQUIRE(a.index32 == (index64 ? 0 : 1));
  const TileScheduler<128, false, kBlockM> sched(a);
  std::set<std::tuple<int, int, int>> seen;
  std::vector<WorkTile> at(size_t(a.total_tiles));
  int64_t bad_hk = 0, bad_empty = 0, repeated = 0;
  for (int64_t t = 0; t < a.total_tiles; ++t) {
    const WorkTile w = sched.tile(t);
    at[size_t(t)] = w;
    if (w.empty) {
      // Only pair holes are empty here (every query tile of a batched call holds rows).
      bad_empty += order == Order::kPairs && w.m_block == a.num_m_blocks ? 0 : 1;
      continue;
    }
    bad_hk += w.hk == w.h / s.group ? 0 : 1;
    if (w.b < 0 || w.b >= s.batch || w.h < 0 || w.h >= s.nheads || w.m_block < 0 ||
        w.m_block >= s.num_m_blocks || !seen.insert({w.b, w.h, w.m_block}).second)
      ++repeated;
  }
  CHECK(bad_hk == 0);
  CHECK(bad_empty == 0);
  CHECK(repeated == 0);
  CHECK(int64_t(seen.size()) == int64_t(s.batch) * s.nheads * s.num_m_blocks);
  if (order == Order::kPairs) {
    int64_t unequal = 0;
    for (int64_t t = 0; t < a.total_tiles; ++t) {
      const int64_t wave = t / a.grid;
      if (wave & 1) continue;
      const WorkTile& lo = at[size_t(t + a.grid)];  // the same CTA, one wave later
      const WorkTile& hi = at[size_t(t)];
      if (hi.empty) {  // a pair past the last: its second position is empty too
        unequal += lo.empty ? 0 : 1;
        continue;
      }
      // An odd count's middle tile comes first, its partner a hole.
      const bool partner_hole = lo.empty && s.num_m_blocks % 2 == 1 && hi.m_block == s.num_m_blocks / 2;
      if (!partner_hole && (lo.empty || lo.b != hi.b || lo.h != hi.h ||
                            lo.m_block != s.num_m_blocks - 1 - hi.m_block || hi.m_block < lo.m_block))
        ++unequal;
    }
    CHECK(unequal == 0);
  }
}

}  // namespace

namespace {

// Varlen causal pairs (seq_prefix): sequences of these query lengths (keys the same), the
// longest taken as seqlen_q unless `max_len` (> 0) says less (a caller's max_seqlen_q below a
// sequence: its rows past max_len get no tile), set up as attention_sm90.cpp does and the
// prefix built as kernel.cuh's warp 0 does it, one sequence at a time.
template <int kBlockM>
void check_varlen(const std::vector<int32_t>& lens, int32_t nheads, int32_t group, int32_t grid,
                  int32_t max_len, bool index64) {
  std::ostringstream o;
  o << "lens";
  for (int32_t l : lens) o << " " << l;
  o << " heads " << nheads << " group " << group << " grid " << grid << " max_len " << max_len
    << (index64 ? " index64" : " index32");
  INFO(o.str());
  const int32_t batch = int32_t(lens.size());
  std::vector<int32_t> cu(size_t(batch) + 1, 0);
  for (int32_t b = 0; b < batch; ++b) cu[size_t(b) + 1] = cu[size_t(b)] + lens[size_t(b)];
  const int32_t longest = *std::max_element(lens.begin(), lens.end());
  AttnArgs a;
  a.batch = batch;
  a.nheads = nheads;
  a.nheads_k = nheads / group;
  a.group = group;
  a.seqlen_q = a.seqlen_k = max_len > 0 ? max_len : longest;
  a.cu_seqlens_q = a.cu_seqlens_k = cu.data();
  a.tma_rows_q = a.tma_rows_k = cu.back();
  a.window_right = 0;
  a.block_m = kBlockM;
  a.num_m_blocks = (a.seqlen_q + kBlockM - 1) / kBlockM;
  a.total_tiles = int64_t(a.num_m_blocks) * nheads * batch;
  a.longest_first = 1;
  set_pairs(a, grid);
  set_index_divisors(a);
  if (index64) a.index32 = 0;
  using Sched = TileScheduler<128, false, kBlockM>;
  std::vector<int32_t> prefix(size_t(Sched::kSeqPairsTotal) + 1, 0);
  for (int32_t b = 0; b < batch; ++b)
    prefix[size_t(b) + 1] = prefix[size_t(b)] + Sched::seq_pairs(a, lens[size_t(b)]);
  const int64_t pairs_total = prefix[size_t(batch)];
  prefix[size_t(Sched::kSeqPairsTotal)] = int32_t(2 * ((pairs_total + grid - 1) / grid) * grid);
  const Sched sched(a, prefix.data());
  REQUIRE(sched.seq_mode());
  const int64_t total = prefix[size_t(Sched::kSeqPairsTotal)];
  CHECK(total <= a.total_tiles);
  std::set<std::tuple<int, int, int>> seen;
  std::vector<WorkTile> at(static_cast<size_t>(total));
  int64_t bad = 0, expected = 0;
  for (int32_t b = 0; b < batch; ++b)
    expected += int64_t(nheads) * ((std::min(lens[size_t(b)], a.seqlen_q) + kBlockM - 1) / kBlockM);
  for (int64_t t = 0; t < total; ++t) {
    const WorkTile w = sched.tile(t);
    at[size_t(t)] = w;
    if (w.empty) continue;
    const int32_t n = (std::min(lens[size_t(w.b)], a.seqlen_q) + kBlockM - 1) / kBlockM;
    if (w.b < 0 || w.b >= batch || w.h < 0 || w.h >= nheads || w.hk != w.h / group ||
        w.m_block < 0 || w.m_block >= n || w.row0_q != cu[size_t(w.b)] ||
        w.len_q != lens[size_t(w.b)] || !seen.insert({w.b, w.h, w.m_block}).second)
      ++bad;
  }
  CHECK(bad == 0);
  CHECK(int64_t(seen.size()) == expected);
  // Fewer pairs than CTAs: the longer tiles of all pairs first, then the shorter ones, so no
  // CTA runs two tiles while 2 x pairs <= grid (positions 0 .. 2 pairs - 1, the rest empty).
  if (pairs_total < grid) {
    CHECK(total == 2 * int64_t(grid));
    int64_t misplaced = 0;
    for (int64_t t = 0; t < total; ++t) {
      const WorkTile& w = at[size_t(t)];
      if (w.empty) continue;
      const int32_t n = (std::min(lens[size_t(w.b)], a.seqlen_q) + kBlockM - 1) / kBlockM;
      const bool longer = 2 * w.m_block >= n - 1;
      misplaced += t >= 2 * pairs_total || (t < pairs_total) != longer ? 1 : 0;
    }
    CHECK(misplaced == 0);
    return;
  }
  // Both tiles of a pair on one CTA, one wave apart: i and n - 1 - i of one (sequence, head),
  // the longer first; an odd count's middle tile alone; empty pairs only past the last.
  int64_t unequal = 0, late_pairs = 0;
  bool past_last = false;
  for (int64_t t = 0; t < total; ++t) {
    if ((t / grid) & 1) continue;
    const WorkTile& hi = at[size_t(t)];
    const WorkTile& lo = at[size_t(t + grid)];
    if (hi.empty) {
      unequal += lo.empty ? 0 : 1;
      past_last = true;
      continue;
    }
    late_pairs += past_last ? 1 : 0;
    const int32_t n = (std::min(lens[size_t(hi.b)], a.seqlen_q) + kBlockM - 1) / kBlockM;
    const bool middle = lo.empty && n % 2 == 1 && hi.m_block == n / 2;
    if (!middle && (lo.empty || lo.b != hi.b || lo.h != hi.h || lo.m_block != n - 1 - hi.m_block ||
                    hi.m_block < lo.m_block))
      ++unequal;
  }
  CHECK(unequal == 0);
  CHECK(late_pairs == 0);
  // Positions past the scheduler's own count are never walked; the last wave holds a pair.
  CHECK(sched.valid(total - 1));
  CHECK(!sched.valid(total));
}

}  // namespace

TEST_CASE("sm90 tile numbering: varlen causal pairs per sequence (host)", "[sm90host]") {
  const std::vector<std::vector<int32_t>> sets = {
      {3000, 1500, 4096, 512, 2048, 777, 4453},  // benchmarks/attention.py's varlen row
      {1},
      {0, 0, 300},
      {128, 0, 129, 127, 1, 256, 0},
      {900, 300, 1200, 50, 0, 700, 1100},
  };
  for (const auto& lens : sets)
    for (int32_t nheads : {1, 3, 16})
      for (int32_t group : {1, 3})
        for (int32_t grid : {1, 7, 132})
          for (bool index64 : {false, true}) {
            if (nheads % group) continue;
            check_varlen<128>(lens, nheads, group, grid, 0, index64);
          }
  // A caller's max_seqlen_q below the longest sequence: only its first max_len rows get tiles.
  check_varlen<128>({1000, 200, 700}, 4, 2, 132, 300, false);
  // ... and far above it (the host's bound then counts 4 pairs a head; the sequences have 13).
  check_varlen<128>({1000, 200, 700}, 4, 2, 132, 8000, false);
  check_varlen<128>({1000, 200, 700}, 4, 2, 7, 8000, true);
  // kSeqPairsMaxBatch sequences of mixed lengths (two passes of the warp scan's 32 in kernel.cuh
  // and more).
  std::vector<int32_t> many;
  for (int32_t b = 0; b < flashkit::cuda::sm90_attention::kSeqPairsMaxBatch; ++b)
    many.push_back((b * 389) % 1500);
  check_varlen<128>(many, 2, 1, 132, 0, false);
  check_varlen<128>(many, 2, 1, 132, 0, true);
}

TEST_CASE("sm90 tile numbering: every query tile exactly once, in every order (host)", "[sm90host]") {
  std::vector<Shape> shapes;
  for (int32_t batch : {1, 2, 3})
    for (int32_t nheads : {1, 4, 6, 35})
      for (int32_t group : {1, 2, 3})
        for (int32_t n : {1, 2, 3, 4, 7, 8, 11, 16})
          for (int32_t grid : {1, 5, 132, 133}) {
            if (nheads % group) continue;
            shapes.push_back({batch, nheads, group, n, grid});
          }
  for (const Shape& s : shapes)
    for (bool index64 : {false, true}) {
      const int32_t bh = s.batch * s.nheads;
      check<128>(s, Order::kHeadsTogether, 0, index64);
      check<128>(s, Order::kLongestFirst, 0, index64);
      check<192>(s, Order::kLongestFirst, 0, index64);
      for (int32_t sec : {1, 2, 3, bh - 1, bh}) {
        if (sec < 1 || sec > bh) continue;
        check<128>(s, Order::kSections, sec, index64);
      }
      // The host takes the pairs only with more than one tile and a wave of pairs or more; the
      // numbering is checked on every shape.
      check<128>(s, Order::kPairs, 0, index64);
      check<192>(s, Order::kPairs, 0, index64);
    }
}

// Packed GQA tiles over a KV cache (launch.h, q_pack; attention_sm90.cpp, build_args): the
// KV-cache scheduler's tiles with AttnArgs as build_args makes them (nheads and group in packed
// heads, num_m_blocks in tiles of q_pack_rows queries), checked against the definition: every
// (batch, packed head, query block) once, the KV head of every query head the tile holds, the
// key tiles [n_min, n_max) exactly those holding a key some query of the tile sees (bottom-right
// aligned causal / window), [all_lo, all_hi] seen by every query; and the tile-row mapping
// (qpack_row) a bijection onto (head, row) that keeps each 16-row box of the producer's Q
// loads (mainloop.cuh, load_cache) on one head and consecutive rows.
TEST_CASE("sm90 tile numbering: packed GQA tiles over a KV cache (host)", "[sm90host]") {
  using flashkit::cuda::sm90_attention::qpack_row;
  using flashkit::cuda::sm90_attention::QPackRow;
  constexpr int kN = 128;  // key tile
  for (int32_t pack : {1, 2, 4, 8}) {
    AttnArgs a;
    a.q_pack = pack;
    a.q_pack_rows = 128 / pack;
    a.q_pack_shift = 7 - (pack == 1 ? 0 : pack == 2 ? 1 : pack == 4 ? 2 : 3);
    int64_t bad = 0;
    for (int row = 0; row < 128; ++row) {
      const QPackRow pr = qpack_row(a, row);
      bad += pr.head >= 0 && pr.head < pack && pr.row >= 0 && pr.row < a.q_pack_rows &&
                     pr.head * a.q_pack_rows + pr.row == row
                 ? 0
                 : 1;
      const QPackRow box = qpack_row(a, row / 16 * 16);  // the producer's box of this row
      bad += box.head == pr.head && box.row + row % 16 == pr.row ? 0 : 1;
    }
    INFO("q_pack " << pack);
    CHECK(bad == 0);
  }
  int cases = 0;
  for (int32_t sq : {1, 2, 5, 16, 17, 31, 33, 64, 100})
    for (int32_t group : {2, 4, 6, 8, 16})
      for (int32_t pack : {2, 4, 8})
        for (int mask = 0; mask < 4; ++mask) {  // none, causal, causal + left 40, left 3 right 9
          if (group % pack != 0) continue;
          for (int32_t sk : {1, 100, 300}) {
            AttnArgs a;
            const int32_t batch = 3, nheads_k = 2, nheads = nheads_k * group;
            a.batch = batch;
            a.nheads_k = nheads_k;
            a.q_pack = pack;
            a.q_pack_rows = 128 / pack;
            a.q_pack_shift = 7 - (pack == 2 ? 1 : pack == 4 ? 2 : 3);
            a.nheads = nheads / pack;
            a.group = group / pack;
            a.seqlen_q = sq;
            a.seqlen_k = sk;
            a.window_left = mask == 2 ? 40 : mask == 3 ? 3 : -1;
            a.window_right = mask == 1 || mask == 2 ? 0 : mask == 3 ? 9 : -1;
            a.num_m_blocks = (sq + a.q_pack_rows - 1) / a.q_pack_rows;
            a.total_tiles = int64_t(a.num_m_blocks) * a.nheads * batch;
            a.longest_first = mask != 0 ? 1 : 0;
            a.grid = int32_t(std::min<int64_t>(a.total_tiles, 7));
            set_index_divisors(a);
            REQUIRE(a.index32 == 1);
            INFO("seqlen_q " << sq << " seqlen_k " << sk << " group " << group << " q_pack " << pack
                             << " mask " << mask);
            const TileScheduler<kN, true> sched(a);
            std::set<std::tuple<int, int, int>> seen;
            int64_t bad_hk = 0, bad_keys = 0, bad_all = 0, bad_empty = 0, repeated = 0;
            const int64_t shift = int64_t(sk) - sq;
            auto lo_of = [&](int64_t i) {
              return a.window_left >= 0 ? std::max<int64_t>(0, i + shift - a.window_left) : 0;
            };
            auto hi_of = [&](int64_t i) {
              return a.window_right >= 0 ? std::min<int64_t>(sk - 1, i + shift + a.window_right) : sk - 1;
            };
            for (int64_t t = 0; t < a.total_tiles; ++t) {
              const WorkTile w = sched.tile(t);
              const int64_t q0 = int64_t(w.m_block) * a.q_pack_rows;
              const int64_t q1 = std::min<int64_t>(q0 + a.q_pack_rows, sq);  // past the last
              bad_empty += w.empty == (q0 >= sq) && w.m0 == q0 ? 0 : 1;
              if (w.empty) continue;
              if (w.b < 0 || w.b >= batch || w.h < 0 || w.h >= a.nheads || w.m_block < 0 ||
                  w.m_block >= a.num_m_blocks || !seen.insert({w.b, w.h, w.m_block}).second)
                ++repeated;
              for (int g = 0; g < pack; ++g) bad_hk += (w.h * pack + g) / group == w.hk ? 0 : 1;
              // Key tiles holding a key some query of the tile sees, by the definition.
              int64_t need_min = -1, need_max = -1;
              for (int64_t i = q0; i < q1; ++i) {
                const int64_t lo = lo_of(i), hi = hi_of(i);
                if (hi < lo) continue;
                need_min = need_min < 0 ? lo / kN : std::min(need_min, lo / kN);
                need_max = std::max(need_max, hi / kN + 1);
              }
              if (need_min < 0) {
                bad_keys += w.n_max <= w.n_min ? 0 : 1;
              } else {
                bad_keys += w.n_min == need_min && w.n_max == need_max ? 0 : 1;
              }
              for (int64_t i = q0; i < q1; ++i)  // rows that see no key need no bound
                bad_all += hi_of(i) < lo_of(i) || (w.all_lo >= lo_of(i) && w.all_hi <= hi_of(i)) ? 0 : 1;
            }
            CHECK(bad_hk == 0);
            CHECK(bad_keys == 0);
            CHECK(bad_all == 0);
            CHECK(bad_empty == 0);
            CHECK(repeated == 0);
            CHECK(int64_t(seen.size()) == int64_t(batch) * a.nheads * a.num_m_blocks);
            ++cases;
          }
        }
  CHECK(cases > 300);
}
