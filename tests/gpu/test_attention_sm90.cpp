// The Hopper attention kernel (src/cuda/attention/sm90/), forced through a context with
// kernel_family = SM90, against the float64 reference under FlashAttention's tolerance rule
// (attention_check.hpp; the rule is described in test_attention_sm80.cpp):
//
//   max |out - ref| <= 2 * max |naive - ref| + atol
//
// Grid: head dims {64, 96, 128, 192, 256} (and 8, 32, 72, 160, 200, 248 padded to them) x (seqlen_q, seqlen_k) in {(1, 1), (113, 203), (128, 217),
// (239, 1), (1023, 1024), (1024, 1023)} x {fp16, bf16}, each case with a masking combination
// (causal, window, softcap) and a head layout (MHA, GQA, MQA) rotated over the grid; plus
// problems with more work tiles than SMs (the persistent loop, Q reloaded per tile), fully
// masked rows, the varlen form (empty sequences, sequences that end inside a tile, every mask,
// GQA/MQA, more sequences than SMs) and the problems the kernel declines, which must reach the
// sm80-class kernel under AUTO. Every eligible case must report the variant
// "cuda.sm90.attention".
//
// Runs only on a compute capability 9.0 device with a library built with the sm90 kernels
// (FLASHKIT_TEST_EXPECT_SM90_ATTENTION, set by CMake); elsewhere the cases are skipped.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "attention_check.hpp"

namespace {

using namespace fkattn;
using fktest::DT;

constexpr const char* kSm90 = "cuda.sm90.attention";

const fk_context_t* sm90() { return context_for(FK_KERNEL_FAMILY_SM90); }

bool have_sm90() {
#if defined(FLASHKIT_TEST_EXPECT_SM90_ATTENTION)
  const fk_context_t* c = sm90();
  if (c != nullptr) {
    fk_context_info_t info;
    fk_context_info_init(&info);
    if (fk_context_get_info(c, &info) == FK_SUCCESS && info.cc_major == 9 && info.cc_minor == 0)
      return true;
  }
  WARN("no compute capability 9.0 device: sm90 attention cases skipped");
#else
  WARN("library built without the sm90 kernels: sm90 attention cases skipped");
#endif
  return false;
}

Case sm90_case(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t hk, int64_t d, DT dt) {
  Case c = batched(b, sq, sk, h, hk, d, dt);
  c.expect_variant = kSm90;
  return c;
}

Case sm90_varlen(std::vector<int64_t> lq, std::vector<int64_t> lk, int64_t h, int64_t hk, int64_t d,
                 DT dt) {
  Case c;
  c.varlen = true;
  c.pr.lq = std::move(lq);
  c.pr.lk = std::move(lk);
  c.pr.nheads = h;
  c.pr.nheads_k = hk;
  c.pr.d = d;
  c.pr.dt = dt;
  c.expect_variant = kSm90;
  return c;
}

}  // namespace

TEST_CASE("sm90 attention: head dims x seqlens x masks (FlashAttention tolerance)",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  const int64_t head_dims[] = {64, 96, 128, 192, 256};
  const int64_t seqlens[][2] = {{1, 1}, {113, 203}, {128, 217}, {239, 1}, {1023, 1024}, {1024, 1023}};
  const int64_t heads[][2] = {{2, 2}, {4, 2}, {3, 1}};  // MHA, GQA, MQA
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens)
      for (DT dt : {DT::F16, DT::BF16}) {
        const bool big = sl[0] * sl[1] > 1000000;
        const auto& hh = heads[i % 3];
        Case c = sm90_case(big ? 1 : 2, sl[0], sl[1], hh[0], hh[1], d, dt);
        apply_mask(c, i / 2 + i % 2);  // fp16 and bf16 of one shape get different masks
        c.pad = (i % 4 == 3) ? 8 : 0;
        c.with_lse = i % 5 != 4;
        run_case(sm90(), c, 7000 + uint64_t(i));
        ++i;
      }
}

TEST_CASE("sm90 attention: other head dims, padded to the next native one",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // 8 -> 64, 32 -> 64, 72 -> 96, 160 -> 192, 200 and 248 -> 256: zeros past head_dim come from
  // the copy engine's out-of-bounds fill, and the padded output columns must stay unwritten
  // (rows are packed, so those columns are the next head's outputs, or past the tensor's end).
  const int64_t head_dims[] = {8, 32, 72, 160, 200, 248};
  const int64_t seqlens[][2] = {{113, 203}, {239, 1}, {128, 217}};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens) {
      Case c = sm90_case(2, sl[0], sl[1], i % 2 ? 4 : 2, 2, d, i % 2 ? DT::BF16 : DT::F16);
      apply_mask(c, i);
      c.with_lse = i % 3 != 2;
      run_case(sm90(), c, 7800 + uint64_t(i));
      ++i;
    }
  Case v = sm90_varlen({3, 0, 130, 17}, {5, 4, 65, 140}, 3, 1, 72, DT::BF16);
  v.pr.causal = true;
  run_case(sm90(), v, 7850);
  // 120 -> 128, unmasked, more than 128 query rows over at most 1024 keys: the short unmasked
  // head_dim 128 kernel (128-key tiles, three stages; launch.h kNarrowMaxKeys).
  Case n = sm90_case(2, 300, 700, 4, 2, 120, DT::BF16);
  run_case(sm90(), n, 7851);
}

TEST_CASE("sm90 attention: padded head dims on the edge and long seqlen pairs",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Issue 6 item 5's pairs (1, 1), (1023, 1024), (1024, 1023) and (4224, 4224) for the head dims
  // that run padded (32 -> 64, 72 -> 96, 160 -> 192): the one-row tile, a key tail of one row
  // past a whole tile, a query tail of one row, and many key tiles.
  const int64_t head_dims[] = {32, 72, 160};
  const int64_t seqlens[][2] = {{1, 1}, {1023, 1024}, {1024, 1023}};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens) {
      Case c = sm90_case(1, sl[0], sl[1], i % 2 ? 4 : 2, i % 2 ? 2 : 1, d,
                         i % 2 ? DT::BF16 : DT::F16);
      apply_mask(c, i);
      c.with_lse = i % 3 != 1;
      run_case(sm90(), c, 7870 + uint64_t(i));
      ++i;
    }
  for (int64_t d : head_dims) {
    Case c = sm90_case(1, 4224, 4224, 1, 1, d, i % 2 ? DT::BF16 : DT::F16);
    c.pr.causal = d != 72;
    c.with_lse = true;
    run_case(sm90(), c, 7870 + uint64_t(i));
    ++i;
  }
}

TEST_CASE("sm90 attention: causal x window x softcap, the full product on one shape",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // apply_mask rotates eight mask combinations across cases; here every combination of causal,
  // a two-sided window and softcap runs on the same shapes (a key tail, seqlen_q < seqlen_k),
  // for head_dim 64 and 128, both dtypes, with LSE.
  int i = 0;
  for (int64_t d : {int64_t(64), int64_t(128)})
    for (int m = 0; m < 8; ++m) {
      const bool odd = ((m ^ (m >> 1) ^ (m >> 2)) & 1) != 0;  // dtype by the parity of m
      Case c = sm90_case(2, 113, 203, 4, 2, d, odd != (d == 128) ? DT::BF16 : DT::F16);
      c.pr.causal = (m & 1) != 0;
      if (m & 2) {
        c.pr.wl = 37;
        c.pr.wr = 5;  // causal forces the right side to 0
      }
      if (m & 4) c.pr.softcap = 15.0;
      c.with_lse = true;
      run_case(sm90(), c, 7900 + uint64_t(i++));
    }
}

TEST_CASE("sm90 attention: softcap from nearly flat to far past the exponent range",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Softcap (tanh.approx, softcap.cuh) on every head_dim bucket: 64 on 128- and 192-row tiles,
  // 96 (72 padded), 128 and 256; softcaps from 0.5 (logits within +-0.72: P nearly flat) to 500
  // with softmax_scale 3 (logits of several hundred: exponents far below -127, flushed to 0),
  // masks that leave rows without keys (more queries than keys under causal), and a subnormal
  // cap_post (softcap 1e-40). (Written for branch softfma53's FMA-pipe exp2, not merged:
  // RESULTS "Softcap: part of the exp2 on the FMA pipe"; its old path, this one, passed it.)
  struct Shape {
    int64_t b, sq, sk, h, hk, d;
    DT dt;
    bool causal;
    int64_t wl, wr;
    double softcap, scale;
  };
  const double dflt = std::numeric_limits<double>::quiet_NaN();
  const Shape shapes[] = {
      {2, 300, 517, 4, 2, 64, DT::BF16, true, -1, -1, 30.0, dflt},
      {1, 800, 2100, 4, 4, 64, DT::F16, true, -1, -1, 500.0, 3.0},    // 192-row tiles
      {1, 700, 900, 6, 2, 64, DT::BF16, false, -1, -1, 0.5, dflt},    // unmasked: 192-row tiles
      {2, 257, 190, 6, 3, 72, DT::F16, true, -1, -1, 1.0, dflt},      // rows without keys
      {2, 190, 333, 4, 4, 96, DT::BF16, false, 40, 7, 20.0, 1.5},
      {1, 1030, 1030, 4, 1, 128, DT::BF16, true, -1, -1, 50.0, 1.5},
      {1, 300, 700, 2, 2, 128, DT::F16, false, -1, -1, 1e-40, dflt},  // subnormal cap_post
      {1, 260, 600, 2, 1, 256, DT::BF16, true, -1, -1, 500.0, 3.0},
  };
  uint64_t seed = 7960;
  for (const Shape& sh : shapes) {
    Case c = sm90_case(sh.b, sh.sq, sh.sk, sh.h, sh.hk, sh.d, sh.dt);
    c.pr.causal = sh.causal;
    c.pr.wl = sh.wl;
    c.pr.wr = sh.wr;
    c.pr.softcap = sh.softcap;
    c.pr.scale = sh.scale;
    c.with_lse = true;
    run_case(sm90(), c, seed++);
  }
}

TEST_CASE("sm90 attention: one-sided windows (upper bound only, lower bound only)",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Calls without a left window mask their partial key tiles by the upper bound alone
  // (softmax.cuh, mask_hi): right-only windows of several widths, over more queries than keys
  // (rows that see no key: O = 0, lse = -inf), fewer, and a key tail; left-only windows keep the
  // two-sided mask. Each head dim's own key-tile width (64 to 192 keys) cuts the diagonal
  // differently.
  const int64_t head_dims[] = {64, 128, 256};
  const int64_t shapes[][2] = {{300, 200}, {200, 517}, {257, 1000}};
  const int64_t rights[] = {0, 17, 150};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sh : shapes) {
      Case c = sm90_case(2, sh[0], sh[1], 4, i % 2 ? 2 : 4, d, i % 2 ? DT::BF16 : DT::F16);
      c.pr.wl = -1;
      c.pr.wr = rights[i % 3];
      if (i % 4 == 3) c.pr.softcap = 20.0;
      c.with_lse = true;
      run_case(sm90(), c, 7950 + uint64_t(i));
      Case l = sm90_case(1, sh[0], sh[1], 2, 1, d, i % 2 ? DT::F16 : DT::BF16);
      l.pr.wl = rights[(i + 1) % 3] + 40;
      l.pr.wr = -1;
      l.with_lse = true;
      run_case(sm90(), l, 7980 + uint64_t(i));
      ++i;
    }
  Case v = sm90_varlen({3, 0, 130, 300}, {5, 4, 265, 140}, 4, 2, 128, DT::BF16);
  v.pr.wl = -1;
  v.pr.wr = 9;
  v.with_lse = true;
  run_case(sm90(), v, 7999);
}

TEST_CASE("sm90 attention: padded head_dim small case", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  Case c = sm90_case(1, 70, 90, 2, 1, 72, DT::F16);  // 72 -> 96: the last head ends the buffer
  c.pr.causal = true;
  run_case(sm90(), c, 7860);
}

// Batched GQA calls of 2-64 queries: the kernel packs up to 8 query heads of a group into one
// 128-row tile (launch.h, q_pack), on its KV-cache instantiation; groups of 3, MHA and 65+
// queries stay unpacked, and one-query calls reach it only where attention_api.cpp's decode
// packing declines (a window that hides keys). Every mask of apply_mask, queries beyond the keys
// (causal rows that see none), keys fewer than a tile, padded rows, lse on and off, more packed
// tiles than SMs (64 x 4 = 256), padded head dims (72 -> 96, 40 -> 64). By default only shapes
// whose batch x nheads exceeds the SMs pack (64 x 32 on 132 SMs: build_args);
// scripts/gpu-check.sh runs the case again under FLASHKIT_SM90_ATTENTION_QPACK=2, which packs
// every eligible shape.
TEST_CASE("sm90 attention: GQA heads packed into one tile (batched, 2-64 queries)",
          "[gpu][attention][sm90][qpack]") {
  if (!have_sm90()) return;
  struct Shape {
    int64_t b, sq, sk, h, hk, d;
  };
  const Shape shapes[] = {{3, 4, 300, 16, 2, 128},  {2, 17, 150, 8, 2, 64},  {2, 33, 400, 12, 2, 96},
                          {2, 64, 64, 8, 4, 192},   {1, 7, 1000, 32, 4, 256}, {2, 2, 5, 16, 2, 128},
                          {2, 40, 20, 8, 2, 128},   {2, 5, 77, 6, 2, 128},   {2, 65, 200, 8, 2, 64},
                          {4, 16, 513, 32, 8, 128}, {2, 1, 300, 16, 2, 64},  {2, 9, 129, 16, 16, 128},
                          {64, 8, 1000, 32, 4, 128}, {3, 12, 260, 8, 2, 72}, {2, 24, 90, 8, 2, 40}};
  int i = 0;
  for (const Shape& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16}) {
      Case c = sm90_case(sh.b, sh.sq, sh.sk, sh.h, sh.hk, sh.d, dt);
      apply_mask(c, i);
      if (sh.sq == 1) {  // a window that hides keys: the API's decode packing declines
        c.pr.causal = true;
        c.pr.wl = 10;
        c.pr.wr = -1;
      }
      c.pad = (i % 3 == 2) ? 8 : 0;
      c.with_lse = i % 4 != 3;
      run_case(sm90(), c, 7300 + uint64_t(i));
      ++i;
    }
}

TEST_CASE("sm90 attention: packed GQA tiles, batched small case", "[gpu][attention][sm90][qpack][sanitize]") {
  if (!have_sm90()) return;
  // 8 heads of 16 rows a tile; 9 x 16 = 144 heads, more than a wave unpacked: packed by default
  Case c = sm90_case(9, 6, 140, 16, 2, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7390);
}

TEST_CASE("sm90 attention: more tiles than SMs (persistent loop)", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  Case c = sm90_case(3, 700, 700, 16, 4, 128, DT::BF16);  // 6 x 16 x 3 = 288 tiles
  c.pr.causal = true;
  run_case(sm90(), c, 7100);
  Case d = sm90_case(2, 600, 650, 24, 24, 64, DT::F16);  // 192 tiles of 192 rows
  run_case(sm90(), d, 7101);
  Case e = sm90_case(2, 520, 300, 12, 3, 256, DT::BF16);  // 120 tiles, causal seqlen_q > seqlen_k
  e.pr.causal = true;
  run_case(sm90(), e, 7102);
  // head_dim 256 past the 64-key tiles' range (AttnArgs::keys64: more than 128 query rows over
  // up to 512 keys, 1024 masked), so that the 80-key kernel keeps cases of its own beside the
  // short-query ones: 140 tiles over 600 keys (head_dim 248, padded; softcap; no LSE), causal
  // 1100 x 1100, and varlen over up to 700 keys (empty sequences, a key sequence ending inside
  // a tile, GQA).
  Case f = sm90_case(1, 130, 600, 70, 10, 248, DT::F16);
  f.pr.softcap = 20.0;
  f.with_lse = false;
  run_case(sm90(), f, 7103);
  Case g = sm90_case(1, 1100, 1100, 2, 1, 256, DT::BF16);
  g.pr.causal = true;
  run_case(sm90(), g, 7104);
  Case v = sm90_varlen({3, 0, 200, 17, 150}, {5, 700, 613, 0, 129}, 4, 2, 256, DT::BF16);
  run_case(sm90(), v, 7105);
}

TEST_CASE("sm90 attention: persistent loop small case for the sanitizers",
          "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  // More tiles than SMs, so each CTA walks several work tiles. With the optional copy-engine
  // output stores (FLASHKIT_SM90_ATTENTION_TMA_STORE=1, which scripts/gpu-check.sh sets for a
  // pass of its own) each CTA reuses its output staging (a V-ring stage, refilled only after the
  // stores have read it); the causal case with seqlen_q > seqlen_k gives a CTA a tile with keys
  // and then tiles with none (no V read there), the order the first version raced on.
  Case c = sm90_case(3, 300, 200, 16, 4, 128, DT::BF16);  // 3 x 16 x 3 = 144 tiles
  run_case(sm90(), c, 7110);
  Case d = sm90_case(3, 300, 40, 16, 4, 96, DT::F16);
  d.pr.causal = true;
  d.with_lse = true;
  run_case(sm90(), d, 7111);
  // 1 x 24 x 6 = 144 tiles of 128 rows (seqlen_q <= 128 keeps two consumer warpgroups), 3 stages
  Case e = sm90_case(6, 120, 300, 24, 8, 64, DT::BF16);
  e.pr.wl = 37;
  e.pr.wr = 5;
  run_case(sm90(), e, 7112);
  // 2 x 24 x 3 = 144 tiles of 192 rows (three consumer warpgroups): the Q hand-off and the
  // warpgroups' GEMM turns carried from one work tile to the next.
  Case f = sm90_case(3, 200, 150, 24, 8, 64, DT::F16);
  run_case(sm90(), f, 7113);
  // head_dim 128 unmasked over more than 1024 keys: the 176-key kernel (c above, over 200 keys,
  // takes the short unmasked calls' 128-key, three-stage kernel: launch.h kNarrowMaxKeys),
  // 2 x 70 = 140 tiles, so that its output staging is reused too.
  Case g = sm90_case(1, 130, 1100, 70, 10, 128, DT::BF16);
  run_case(sm90(), g, 7114);
}

TEST_CASE("sm90 attention: head_dim 64 over long keys (192-key tiles)", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Unmasked head_dim <= 64 with at least 4096 keys (the longest sequence under varlen) and at
  // most 128 query rows runs the 192-key tiles of two consumer warpgroups (more query rows take
  // the 192-row tiles, next case): ragged ends, GQA, softcap, a padded head_dim, fp16 and bf16.
  Case c = sm90_case(2, 120, 4500, 8, 2, 64, DT::BF16);
  run_case(sm90(), c, 7160);
  Case d = sm90_case(1, 100, 5000, 4, 4, 40, DT::F16);  // 40 -> 64
  d.pr.softcap = 20;
  d.with_lse = false;
  run_case(sm90(), d, 7161);
  Case v = sm90_varlen({3, 128, 0, 70}, {4100, 9, 5, 4301}, 4, 1, 64, DT::BF16);
  run_case(sm90(), v, 7162);
}

TEST_CASE("sm90 attention: head_dim 64 on three consumer warpgroups (192-row tiles)",
          "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // head_dim <= 64 with more than 128 query rows runs 192-row tiles (three consumer warpgroups,
  // 128-key tiles) unless it is masked over fewer than 2048 keys (causal: seqlen_k; a window:
  // its span, left + right + 1; 4096 before session 22; since session 53 1152 for batched
  // causal calls with seqlen_q <= seqlen_k and a wave of 192-row tiles), without head
  // sections: query rows ending in each of the three warpgroups' rows (193, 300, 383), causal
  // with seqlen_q > seqlen_k and < seqlen_k, a window, softcap, GQA/MQA, a padded head_dim,
  // more tiles than SMs, varlen with empty sequences.
  Case c = sm90_case(2, 193, 250, 4, 2, 64, DT::BF16);
  c.pr.softcap = 25;
  run_case(sm90(), c, 7180);
  Case d = sm90_case(1, 300, 4100, 6, 1, 64, DT::F16);  // causal, bottom-right aligned
  d.pr.causal = true;
  run_case(sm90(), d, 7181);
  Case d2 = sm90_case(2, 385, 2100, 16, 4, 64, DT::BF16);  // causal over 2048-4095 keys, GQA
  d2.pr.causal = true;
  run_case(sm90(), d2, 7188);
  // Causal over 1152-2047 keys with a wave of 192-row tiles (7 a head, 154 tiles): 192 rows;
  // the same with fewer heads (28 tiles) and a right-only window keep 128 rows.
  Case d3 = sm90_case(2, 1200, 1200, 11, 1, 64, DT::F16);
  d3.pr.causal = true;
  run_case(sm90(), d3, 7189);
  Case d4 = sm90_case(1, 700, 1160, 4, 4, 64, DT::BF16);
  d4.pr.causal = true;
  run_case(sm90(), d4, 7190);
  Case d5 = sm90_case(1, 700, 1160, 4, 4, 64, DT::BF16);
  d5.pr.wr = 30;
  run_case(sm90(), d5, 7191);
  Case e = sm90_case(1, 383, 4200, 2, 2, 56, DT::BF16);  // 56 -> 64
  e.pr.wl = 4000;  // a window spanning >= 4096 keys
  e.pr.wr = 150;
  e.pr.softcap = 30;
  run_case(sm90(), e, 7182);
  Case e2 = sm90_case(1, 383, 4200, 2, 2, 64, DT::F16);  // a narrow window: 128-row tiles
  e2.pr.wl = 100;
  e2.pr.wr = 20;
  run_case(sm90(), e2, 7187);
  Case f = sm90_case(4, 500, 300, 16, 4, 64, DT::F16);  // 3 x 16 x 4 = 192 tiles
  run_case(sm90(), f, 7183);
  Case g = sm90_case(1, 4300, 4096, 1, 1, 64, DT::BF16);  // causal, more queries than keys
  g.pr.causal = true;
  run_case(sm90(), g, 7184);
  Case v = sm90_varlen({0, 191, 192, 577, 5}, {7, 300, 192, 600, 1}, 4, 2, 64, DT::BF16);
  run_case(sm90(), v, 7185);
  Case w = sm90_varlen({200, 0, 330}, {4100, 10, 500}, 2, 1, 64, DT::F16);
  w.pr.causal = true;
  run_case(sm90(), w, 7186);
}

TEST_CASE("sm90 attention: 192-row tiles, small case for the sanitizers",
          "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  Case c = sm90_case(2, 200, 150, 3, 1, 64, DT::F16);  // the last tile's third warpgroup idle
  c.pr.softcap = 10;
  run_case(sm90(), c, 7190);
  Case d = sm90_case(1, 400, 260, 2, 2, 64, DT::BF16);
  run_case(sm90(), d, 7191);
}

TEST_CASE("sm90 attention: causal over long keys (wide key tiles)", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Causal calls over >= 8192 keys run the unmasked tile width (192 keys at head_dim 64, 176 at
  // 128): diagonal tiles, bottom-right alignment with seqlen_q < seqlen_k, GQA, ragged ends.
  // (head_dim 64 with more than 128 query rows runs the 192-row tiles instead.)
  Case c = sm90_case(2, 100, 8300, 4, 2, 64, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7170);
  Case d = sm90_case(1, 330, 9001, 2, 1, 128, DT::F16);
  d.pr.causal = true;
  run_case(sm90(), d, 7171);
}

TEST_CASE("sm90 attention: causal tile order in L2-sized head sections", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // 2048 keys at head_dim 128 are 1 MiB of K and V per KV head: with a 50-60 MiB L2 the
  // scheduler takes 25-30 KV heads per section (attention_sm90.cpp: >= grid / 4 (batch, head)
  // pairs), so 70 heads end on a narrower section, and the GQA case packs whole groups (2 query
  // heads per KV head) across the two batch entries; both have more tiles than SMs.
  Case c = sm90_case(2, 130, 2048, 35, 35, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7150);
  Case d = sm90_case(2, 130, 2048, 36, 18, 128, DT::F16);
  d.pr.causal = true;
  run_case(sm90(), d, 7151);
}

TEST_CASE("sm90 attention: causal tiles in pairs of equal work", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Causal batched calls with at least a wave of pairs (attention_sm90.cpp, AttnArgs::pairs):
  // query tile i and tile num_m_blocks - 1 - i of a head on one CTA. An odd tile count (the
  // middle tile's partner is a hole), a last wave of pairs that leaves CTAs idle, GQA groups,
  // seqlen_q < seqlen_k, head_dim 192 with an odd count, head_dim 256 and head_dim 64 on an
  // even count of 192-row tiles; and two shapes that keep the longest-first order: seqlen_q >
  // seqlen_k (rows that see no key) and an odd count of 192-row tiles.
  struct Shape {
    int64_t b, sq, sk, h, hk, d;
    DT dt;
  };
  const Shape shapes[] = {
      {1, 1100, 1100, 32, 4, 64, DT::BF16},   // 9 tiles: 5 pairs a head, 160 pairs
      {1, 1024, 1024, 34, 34, 128, DT::F16},  // 8 tiles: 136 pairs
      {2, 1000, 700, 40, 8, 96, DT::BF16},    // rows 0-299 see no key: not paired
      {1, 1300, 1300, 24, 8, 192, DT::F16},   // 11 tiles: 6 pairs a head, 144 pairs
      {1, 2300, 2300, 22, 22, 64, DT::F16},   // 12 192-row tiles: 132 pairs
      {1, 2100, 2100, 24, 8, 64, DT::BF16},   // 11 192-row tiles: not paired
      {1, 520, 520, 48, 16, 256, DT::BF16},   // 5 tiles: 3 pairs a head
  };
  uint64_t seed = 7160;
  for (const Shape& sh : shapes) {
    Case c = sm90_case(sh.b, sh.sq, sh.sk, sh.h, sh.hk, sh.d, sh.dt);
    c.pr.causal = true;
    run_case(sm90(), c, seed++);
  }
}

TEST_CASE("sm90 attention: causal pairs, small", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  // The smallest problems that take the paired numbering (a wave of pairs: 132 on an H100 or
  // H200), for the sanitizers: one pair a head (two tiles), and two pairs a head of three tiles
  // (the middle tile's partner a hole) with GQA.
  Case c = sm90_case(1, 256, 256, 132, 132, 64, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7170);
  Case d = sm90_case(1, 300, 300, 90, 30, 128, DT::F16);
  d.pr.causal = true;
  run_case(sm90(), d, 7171);
}

TEST_CASE("sm90 attention: long sequence (4224, 4224)", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  Case c = sm90_case(1, 4224, 4224, 2, 1, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7200);
  Case d = sm90_case(1, 4224, 4224, 1, 1, 64, DT::F16);
  run_case(sm90(), d, 7201);
}

TEST_CASE("sm90 attention: fully masked rows", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  // Causal with seqlen_q > seqlen_k: the first rows (and whole first tiles) see no key.
  Case c = sm90_case(2, 300, 9, 2, 2, 64, DT::F16);
  c.pr.causal = true;
  run_case(sm90(), c, 7300);
  Case w = sm90_case(2, 40, 9, 2, 1, 128, DT::BF16);
  w.pr.wl = 2;
  w.pr.wr = 0;
  run_case(sm90(), w, 7301);
}

TEST_CASE("sm90 attention: varlen (cu_seqlens) x head dims x masks", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Sequences of length 0 on either side, shorter and longer than a 128-row tile, ending inside
  // a key tile (the next sequence's rows are in the same copy-engine box), seqlen_q > seqlen_k.
  const std::vector<int64_t> lq = {3, 0, 130, 17, 256, 1, 300};
  const std::vector<int64_t> lk = {5, 4, 65, 0, 256, 200, 129};
  const int64_t head_dims[] = {64, 96, 128, 192, 256};
  const int64_t heads[][2] = {{2, 2}, {4, 2}, {3, 1}};  // MHA, GQA, MQA
  int i = 0;
  for (int64_t d : head_dims)
    for (int mask = 0; mask < 8; ++mask) {
      const auto& hh = heads[i % 3];
      Case c = sm90_varlen(lq, lk, hh[0], hh[1], d, i % 2 ? DT::BF16 : DT::F16);
      apply_mask(c, mask);
      c.with_lse = i % 4 != 3;
      run_case(sm90(), c, 7500 + uint64_t(i));
      ++i;
    }
}

TEST_CASE("sm90 attention: varlen with more sequences than SMs", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  std::vector<int64_t> lq, lk;
  for (int b = 0; b < 150; ++b) {
    lq.push_back((b * 37) % 200);        // includes empty sequences (b = 0)
    lk.push_back(1 + (b * 53) % 260);
  }
  Case c = sm90_varlen(lq, lk, 4, 1, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7600);
  Case d = sm90_varlen(lq, lk, 2, 2, 64, DT::F16);
  run_case(sm90(), d, 7601);
}

TEST_CASE("sm90 attention: varlen causal tiles in pairs per sequence", "[gpu][attention][sm90]") {
  if (!have_sm90()) return;
  // Varlen causal calls of at most kSeqPairsMaxBatch sequences with a wave of pairs (counting
  // every sequence as the longest; attention_sm90.cpp): each sequence's query tiles i and
  // n_s - 1 - i on one CTA, the kernel's prefix over cu_seqlens_q (tile_scheduler.cuh,
  // seq_prefix). Empty and one-row sequences, odd and even tile counts, GQA, a sequence with
  // more queries than keys (its first rows see no key), head dims 64 to 256, 128 sequences
  // (the most that take pairs: four passes of the prefix's warp scan, each adding the last's
  // total), and max_seqlen_q / max_seqlen_k given above the longest sequence (the host then
  // reads nothing: the pairs counted at the kernel's own lengths).
  struct Shape {
    std::vector<int64_t> lq, lk;
    int64_t h, hk, d;
    DT dt;
  };
  std::vector<int64_t> many_q, many_k;
  // The longest (800 rows, 7 tiles) past the gate's 6, the others 300-599 rows: a mean above
  // the gate's 3 tiles (kSeqPairsMinMeanRows; 127 sequences of 96-400 rows fall under it).
  for (int b = 0; b < 128; ++b) {
    many_q.push_back(b == 77 ? 800 : 300 + (b * 37) % 300);
    many_k.push_back(many_q.back() + b % 3);
  }
  const std::vector<Shape> shapes = {
      {{900, 300, 1200, 50, 0, 700, 1100}, {900, 300, 1200, 50, 0, 700, 1100}, 4, 4, 128, DT::BF16},
      {{513, 1, 700, 0, 1000, 129}, {550, 38, 737, 37, 1037, 166}, 12, 4, 64, DT::F16},
      {{700, 200, 333}, {500, 260, 800}, 24, 8, 96, DT::BF16},
      {{1280, 333, 129}, {1280, 333, 129}, 9, 3, 256, DT::F16},
      {{1100, 0, 385}, {1100, 5, 385}, 12, 12, 192, DT::BF16},
      {many_q, many_k, 2, 1, 128, DT::BF16},
  };
  uint64_t seed = 7650;
  for (const Shape& sh : shapes) {
    Case c = sm90_varlen(sh.lq, sh.lk, sh.h, sh.hk, sh.d, sh.dt);
    c.pr.causal = true;
    run_case(sm90(), c, seed++);
  }
  Case m = sm90_varlen(shapes[0].lq, shapes[0].lk, 4, 2, 128, DT::F16);
  m.pr.causal = true;
  m.max_seqlen = 2000;
  run_case(sm90(), m, 7657);
}

TEST_CASE("sm90 attention: varlen causal pairs, small", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  // A small varlen call that takes pairs per sequence, for the sanitizers: the longest of
  // three sequences has 6 tiles (the gate, attention_sm90.cpp), 1153 query rows (a mean above
  // the gate's 3 tiles, 384 rows), 15 heads on 5 (135 pairs counted at the longest, a wave on
  // 132 SMs).
  Case c = sm90_varlen({700, 3, 450}, {700, 9, 450}, 15, 5, 64, DT::F16);
  c.pr.causal = true;
  run_case(sm90(), c, 7660);
}

TEST_CASE("sm90 attention: varlen small case", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  Case c = sm90_varlen({3, 0, 17, 130}, {5, 4, 20, 65}, 2, 1, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm90(), c, 7700);
}

TEST_CASE("sm90 attention: declined problems reach the sm80-class kernel",
          "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  const fk_context_t* autoc = context_for(FK_KERNEL_FAMILY_AUTO);
  REQUIRE(autoc != nullptr);
  const char* forced = std::getenv("FLASHKIT_KERNEL_FAMILY");
  if (forced && *forced && std::string(forced) != "auto") {
    WARN("FLASHKIT_KERNEL_FAMILY set: AUTO selection not checked");
    return;
  }
  Case a = batched(1, 65, 65, 2, 2, 128, DT::BF16);  // eligible: AUTO picks the sm90 kernel
  a.expect_variant = kSm90;
  run_case(autoc, a, 7400);
  Case h = batched(1, 65, 80, 2, 1, 36, DT::F16);  // head_dim 36: not a multiple of 8
  h.row_pitch = 40;
  h.expect_variant = "cuda.sm80.attention";
  run_case(autoc, h, 7401);
  Case v = sm90_varlen({3, 0, 17, 130}, {5, 4, 20, 65}, 2, 1, 128, DT::BF16);  // AUTO: sm90
  run_case(autoc, v, 7402);
  Case v0 = sm90_varlen({3, 2}, {0, 0}, 2, 1, 128, DT::BF16);  // no key at all: declined
  v0.expect_variant = "cuda.sm80.attention";
  run_case(autoc, v0, 7405);
  Case k0 = batched(2, 17, 0, 2, 1, 128, DT::BF16);  // seqlen_k = 0
  k0.expect_variant = "cuda.sm80.attention";
  run_case(autoc, k0, 7403);
  Case s = batched(1, 33, 40, 2, 2, 64, DT::BF16);  // strides not multiples of 8 elements
  s.pad = 3;
  s.expect_variant = "cuda.generic.attention";
  run_case(autoc, s, 7404);
}

// GQA decode (one query per sequence): the API packs the group's query heads into the rows of
// one tile (attention_api.cpp, pack_gqa_decode). Every layout it rewrites (MQA, groups of 2, 4
// and 8, lse on and off) and every mask it accepts (causal, a left window reaching key 0,
// softcap), plus a window that hides keys (not packed), on the sm90 kernel and on the forced
// sm80-class kernel, against the float64 reference.
TEST_CASE("attention: GQA decode, query heads packed into one tile (sm90 and sm80)",
          "[gpu][attention][sm90][decode]") {
  struct Fam {
    fk_kernel_family_t family;
    const char* variant;
  } fams[] = {{FK_KERNEL_FAMILY_SM90, kSm90}, {FK_KERNEL_FAMILY_SM80, "cuda.sm80.attention"}};
  int i = 0;
  for (const Fam& f : fams) {
    if (f.family == FK_KERNEL_FAMILY_SM90 && !have_sm90()) continue;
    const fk_context_t* ctx = context_for(f.family);
    for (int64_t sk : {1, 77, 1000, 4100})
      for (auto heads : {std::pair<int64_t, int64_t>{8, 1}, {8, 2}, {32, 8}, {6, 3}})
        for (int64_t d : {64, 128}) {
          Case c = batched(3, 1, sk, heads.first, heads.second, d, (i % 2) ? DT::BF16 : DT::F16);
          c.expect_variant = f.variant;
          c.with_lse = i % 3 != 2;
          switch (i % 5) {
            case 0: break;
            case 1: c.pr.causal = true; break;
            case 2: c.pr.wl = sk + 3; c.pr.wr = 0; c.pr.softcap = 20.0; break;
            case 3: c.pr.wl = sk > 40 ? 31 : -1; c.pr.causal = true; break;  // 31: not packed
            case 4: c.pr.softcap = 5.0; c.pr.scale = 0.3; break;
          }
          run_case(ctx, c, 91000 + uint64_t(i++));
        }
  }
}

// Split-KV decode (src/cuda/attention/common/split_kv.h): calls with too few tiles for the GPU
// run their keys in chunks and merge them by LSE. The workspace size query shows whether a call
// is split (its scratch); each CUDA row keeps its name. Automatic cases (which split and which
// must not), then FLASHKIT_ATTENTION_SPLIT_KV=N forcing odd chunk counts onto small problems:
// several query rows, a KV-cache slice (gaps between sequences), chunks of 2 keys, 32 chunks,
// and =0 turning it off; fp32 is never split. Every case on every CUDA row.
struct SplitKvEnv : fktest::ScopedEnv {
  explicit SplitKvEnv(const char* v) : ScopedEnv("FLASHKIT_ATTENTION_SPLIT_KV", v) {}
};

struct CudaRow {
  fk_kernel_family_t family;
  const char* variant;
};

// Runs `body(ctx, row)` once per CUDA row present (sm90 on Hopper, sm80, generic), with that
// family's context.
template <class Body>
void for_each_cuda_row(Body&& body) {
  const CudaRow rows[] = {{FK_KERNEL_FAMILY_SM90, kSm90},
                          {FK_KERNEL_FAMILY_SM80, "cuda.sm80.attention"},
                          {FK_KERNEL_FAMILY_GENERIC, "cuda.generic.attention"}};
  for (const CudaRow& f : rows) {
    if (f.family == FK_KERNEL_FAMILY_SM90 && !have_sm90()) continue;
    const fk_context_t* ctx = context_for(f.family);
    if (ctx == nullptr) continue;
    INFO("family " << f.variant);
    body(ctx, f);
  }
}

// Runs `body(run)` once per CUDA row; `run(c, ws)` checks case c on that row, with its
// workspace query expected nonzero (ws 1) or zero (0).
template <class Body>
void for_each_split_row(uint64_t seed, Body&& body) {
  int i = 0;
  for_each_cuda_row([&](const fk_context_t* ctx, const CudaRow& f) {
    auto run = [&](Case c, int expect_ws) {
      c.expect_variant = c.pr.dt == DT::F32 ? "cuda.generic.attention" : f.variant;
      // A KV slice of several sequences (rows between them): the cache rows past seqlen_k
      // hold NaN. Every row splits such calls; the split's varlen form must not read them (the
      // Hopper kernel zeroes them in a sequence's last key tile, kernel.cuh clear_v_tail).
      c.nan_gaps = c.kv_rows > 0;
      c.expect_workspace = expect_ws;
      run_case(ctx, c, seed + uint64_t(i++));
    };
    body(run);
  });
}

TEST_CASE("attention: split-KV decode, key chunks merged by their LSE (sm90, sm80, generic)",
          "[gpu][attention][sm90][decode][split]") {
  SECTION("automatic") {
    SplitKvEnv env(nullptr);
    for_each_split_row(93000, [](auto&& run) {
      Case a = batched(1, 1, 9000, 32, 8, 128, DT::BF16);  // 8 tiles
      run(a, 1);
      Case b = batched(2, 1, 3000, 8, 8, 64, DT::F16);  // MHA, causal: one row sees every key
      b.pr.causal = true;
      b.with_lse = false;
      run(b, 1);
      Case c = batched(3, 1, 5000, 6, 3, 128, DT::BF16);  // KV-cache slice, window reaching 0
      c.kv_rows = 6000;
      c.pr.wl = 4999;
      c.pr.wr = 3;
      c.pr.softcap = 20.0;
      run(c, 1);
      Case d = batched(1, 16, 4096, 8, 2, 64, DT::BF16);  // 16 rows, no mask
      d.pr.scale = 0.3;
      run(d, 1);
      Case e = batched(2, 1, 3000, 8, 8, 64, DT::BF16);  // a window hiding keys: not split
      e.pr.wl = 100;
      run(e, 0);
      Case g = batched(1, 16, 4096, 8, 8, 64, DT::BF16);  // causal rows: not split
      g.pr.causal = true;
      run(g, 0);
      Case h = batched(16, 1, 2048, 32, 8, 128, DT::BF16);  // 128 tiles fill the GPU: not split
      run(h, 0);
      Case k = batched(2, 1, 2000, 4, 2, 40, DT::F32);  // fp32 (the generic row): not split
      k.run = false;
      run(k, 0);
    });
  }
  SECTION("forced chunk counts") {
    for_each_split_row(93500, [](auto&& run) {
      {
        SplitKvEnv env("3");
        Case a = batched(3, 5, 77, 4, 2, 32, DT::F16);  // KV-cache slice, 5 query rows
        a.kv_rows = 100;
        run(a, 1);
        Case d = batched(1, 3, 300, 4, 4, 64, DT::BF16);  // batch 1, 3 rows, softcap
        d.pr.softcap = 7.0;
        run(d, 1);
        Case b = batched(2, 1, 300, 4, 4, 64, DT::F32);  // fp32 is never split
        b.run = false;
        run(b, 0);
      }
      {
        SplitKvEnv env("32");
        Case a = batched(2, 1, 40, 8, 1, 96, DT::BF16);  // chunks of 2 keys (20 of them)
        run(a, 1);
        Case b = batched(2, 1, 64, 4, 2, 64, DT::F16);  // 32 chunks: every lane of the combine
        b.kv_rows = 70;
        run(b, 1);
      }
      {
        SplitKvEnv env("7");
        Case a = batched(1, 130, 1000, 2, 2, 256, DT::BF16);  // two query tiles
        a.pr.softcap = 10.0;
        a.pr.scale = -0.1;
        run(a, 1);
      }
      {
        SplitKvEnv env("0");
        Case a = batched(1, 1, 9000, 32, 8, 128, DT::BF16);
        run(a, 0);
      }
    });
  }
}

TEST_CASE("attention: split-KV small case", "[gpu][attention][sanitize][split]") {
  SplitKvEnv env("4");
  Case c = batched(2, 1, 300, 8, 2, 64, DT::BF16);
  // A KV slice (gap rows, NaN) that the row splits.
  c.kv_rows = 320;
  c.nan_gaps = c.kv_rows > 0;
  c.expect_workspace = 1;
  c.expect_variant = have_sm90() ? kSm90 : "cuda.sm80.attention";
  run_case(fkgpu::auto_context(), c, 93900);
}

// The prepare and combine kernels move 8-element (16-byte) vectors where head_dim, the
// pointers and the strides allow it, and single elements otherwise (split_kv.cu, vec_ok):
// head_dim 36 on 40-element rows (the generic row: the inner call's compact 36-element heads
// are not 16-byte aligned, so the other rows do not split it; one element a thread), and q and
// out rows padded by 3 elements over a KV slice (AUTO picks the generic row: element copies of
// q, vectors of the compact chunk outputs, element stores into out). The aligned path is every
// other split case.
TEST_CASE("attention: split-KV where the 16-byte copies do not apply",
          "[gpu][attention][sanitize][split]") {
  const fk_context_t* generic = context_for(FK_KERNEL_FAMILY_GENERIC);
  REQUIRE(generic != nullptr);
  SplitKvEnv env("3");
  Case h = batched(2, 3, 200, 4, 2, 36, DT::F16);
  h.row_pitch = 40;
  h.expect_variant = "cuda.generic.attention";
  h.expect_workspace = 1;
  run_case(generic, h, 93950);
  const char* forced = std::getenv("FLASHKIT_KERNEL_FAMILY");
  if (forced && *forced && std::string(forced) != "auto") {
    WARN("FLASHKIT_KERNEL_FAMILY set: AUTO selection not checked");
    return;
  }
  Case s = batched(2, 2, 250, 4, 2, 64, DT::BF16);
  s.pad = 3;
  s.kv_rows = 260;  // compact k / v rows, so that the split's plan takes them
  s.nan_gaps = true;
  s.pr.softcap = 9.0;
  s.expect_variant = "cuda.generic.attention";
  s.expect_workspace = 1;
  run_case(fkgpu::auto_context(), s, 93951);
}

// The online softmax keeps a row's running max until a key tile exceeds it by more than 2^8
// (logits.h, next_row_max): small scales move the max by less than that (P up to 256 in the
// 16-bit fragments), large ones by more (the rescaled path), the default in between. Whole key
// tiles (1024 keys: the sm80 even kernels) and partial ones, causal and not, fp16 and bf16,
// head_dim 192 and 256 (the Hopper kernel's lazy path) and 64 / 128, every CUDA row.
TEST_CASE("attention: running row maxima kept within 2^8 across key tiles (sm90, sm80, generic)",
          "[gpu][attention][sm90][rescale]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();  // the default 1 / sqrt(d)
  const int64_t kShapes[][2] = {{256, 1024}, {200, 1000}};  // (seqlen_q, seqlen_k)
  int i = 0;
  for_each_cuda_row([&](const fk_context_t* ctx, const CudaRow& f) {
    for (int64_t d : {64, 128, 192, 256})
      for (double scale : {0.05, nan, 0.5, 2.0})
        for (const auto& sl : kShapes) {
          // Every 8 consecutive runs take all 8 (shape, causal, dtype) combinations.
          Case c = batched(1, sl[0], sl[1], 2, 1, d, (i / 2 + i / 4) % 2 ? DT::BF16 : DT::F16);
          c.expect_variant = f.variant;
          c.pr.scale = scale;
          c.pr.causal = (i + i / 2) % 2 == 1;
          run_case(ctx, c, 79500 + uint64_t(i++));
        }
  });
}

// A key tile that runs past a sequence's end holds the next sequence's rows in the varlen form.
// Their P is 0, but 0 x NaN is NaN: each kernel must keep a non-finite v value inside its own
// sequence (the Hopper kernel zeroes those rows of its last key tile, kernel.cuh clear_v_tail;
// the sm80 and generic kernels never load them). Sequences 3 and 5 hold NaN v; sequences 1 and
// 4 end inside a key tile that reaches into them. Two- and three-consumer tiles at head_dim 64.
TEST_CASE("attention: varlen, NaN in one sequence's v stays there (sm90, sm80, generic)",
          "[gpu][attention][sm90][varlen_nan]") {
  const std::vector<int64_t> lq = {3, 130, 17, 256, 200, 31};
  const std::vector<int64_t> lk = {5, 65, 0, 200, 129, 77};
  int i = 0;
  for_each_cuda_row([&](const fk_context_t* ctx, const CudaRow& f) {
    for (int64_t d : {64, 128, 256})
      for (int mask : {0, 1, 5}) {
        Case c = sm90_varlen(lq, lk, 4, 2, d, i % 2 ? DT::BF16 : DT::F16);
        c.expect_variant = f.variant;
        apply_mask(c, mask);
        c.nan_v = {3, 5};
        run_case(ctx, c, 78000 + uint64_t(i++));
      }
  });
}

TEST_CASE("sm90 attention: varlen NaN v small case", "[gpu][attention][sm90][sanitize]") {
  if (!have_sm90()) return;
  Case c = sm90_varlen({3, 0, 17, 130}, {5, 4, 20, 65}, 2, 1, 128, DT::BF16);
  // sequence 0's only key tile reads rows 0-127 (128 keys: a short unmasked head_dim 128 call,
  // launch.h kNarrowMaxKeys; rows 0-175 on the 176-key tiles), sequence 2's among them
  c.nan_v = {2};
  run_case(sm90(), c, 79000);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
