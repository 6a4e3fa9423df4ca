// The sm80-class attention kernel (src/cuda/attention/sm80/), forced through a context with
// kernel_family = SM80, against a float64 reference under FlashAttention's tolerance rule
// (tests/test_flash_attn.py in FlashAttention-2 and hopper/test_flash_attn.py in -3):
//
//   max |out - ref| <= 2 * max |naive - ref| + atol
//
// where `ref` is the exact result on the (quantised) inputs in float64 and `naive` is the same
// math done the plain way in the input dtype (FlashAttention's `attention_ref(upcast=False,
// reorder_ops=True)`: scale applied to K and rounded, scores rounded, softcap steps rounded,
// softmax probabilities rounded, output rounded), and atol = 2 max |(ref + 0.3 - 0.3) - ref| in
// the dtype, the rounding noise at magnitude 0.3 (FlashAttention-3's fwd_atol).
//
// Grid: head dims {32, 64, 72, 96, 128, 160, 192, 256} x (seqlen_q, seqlen_k) in {(1, 1),
// (113, 203), (128, 217), (239, 1), (1023, 1024), (1024, 1023)} x {fp16, bf16}, each case with
// a masking combination (causal x window x softcap) and a head layout (MHA, GQA, MQA) rotated so
// that every head dim meets each; plus (4224, 4224), varlen with empty sequences, strided
// (padded) tensors, and the variant select_kernel names. Outputs are poisoned (0xFF: NaN)
// before each run; padding between logical elements must stay poisoned.
//
// The reference runs on all host cores (one task per 64 query rows of one head).
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "attention_check.hpp"

namespace {

using namespace fkattn;
using fktest::DT;
using fktest::HostTensor;
using fkgpu::DeviceTensor;

const fk_context_t* sm80() { return context_for(FK_KERNEL_FAMILY_SM80); }

constexpr const char* kPacked = "cuda.sm80.attention_packed";

// FLASHKIT_ATTENTION_PACK=<v> while in scope (read by the library on every call): "0" keeps
// varlen problems on the per-sequence tiles, "1" packs every varlen problem.
struct ForcePack : fktest::ScopedEnv {
  explicit ForcePack(const char* v) : ScopedEnv("FLASHKIT_ATTENTION_PACK", v) {}
};

// A varlen case: per-sequence query and key lengths, heads, head_dim, dtype, a mask of
// apply_mask, and the tensors padded (8 elements a row) on odd positions `i`.
struct Varlen {
  std::vector<int64_t> lq, lk;
  int64_t h, hk, d;
  DT dt;
  int mask;
};

Case varlen_case(const Varlen& x, int i) {
  Case c;
  c.varlen = true;
  c.pr.lq = x.lq;
  c.pr.lk = x.lk;
  c.pr.nheads = x.h;
  c.pr.nheads_k = x.hk;
  c.pr.d = x.d;
  c.pr.dt = x.dt;
  apply_mask(c, x.mask);
  c.pad = (i % 2) ? 8 : 0;
  return c;
}

bool have_sm80() {
  if (sm80() == nullptr) {
    WARN("no CUDA device of compute capability >= 8.0: sm80 attention cases skipped");
    return false;
  }
  return true;
}

}  // namespace

TEST_CASE("sm80 attention: head dims x seqlens x masks (FlashAttention tolerance)",
          "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  const int64_t head_dims[] = {32, 64, 72, 96, 128, 160, 192, 256};
  const int64_t seqlens[][2] = {{1, 1}, {113, 203}, {128, 217}, {239, 1}, {1023, 1024}, {1024, 1023}};
  const int64_t heads[][2] = {{2, 2}, {4, 2}, {3, 1}};  // MHA, GQA, MQA
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens)
      for (DT dt : {DT::F16, DT::BF16}) {
        const bool big = sl[0] * sl[1] > 1000000;
        const auto& hh = heads[i % 3];
        Case c = batched(big ? 1 : 2, sl[0], sl[1], hh[0], hh[1], d, dt);
        apply_mask(c, i / 2 + i % 2);  // fp16 and bf16 of one shape get different masks
        c.pad = (i % 4 == 3) ? 8 : 0;
        run_case(sm80(), c, 1000 + uint64_t(i));
        ++i;
      }
}

TEST_CASE("sm80 attention: long sequence (4224, 4224)", "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  Case c = batched(1, 4224, 4224, 2, 1, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm80(), c, 2000);
  Case d = batched(1, 4224, 4224, 1, 1, 64, DT::F16);
  run_case(sm80(), d, 2001);
}

TEST_CASE("sm80 attention: one-sided windows (upper bound only, lower bound only)",
          "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  // Calls without a left window mask their partial key tiles by the upper bound alone
  // (softmax.cuh, mask_hi): right-only windows of several widths over more queries than keys
  // (rows that see no key), fewer, and a key tail; left-only windows keep the two-sided mask.
  // FLASHKIT_SM80_ATTENTION_HI_MASK=0 runs the same cases on the two-sided mask.
  const int64_t head_dims[] = {64, 96, 128, 256};
  const int64_t shapes[][2] = {{300, 200}, {200, 517}, {257, 1000}};
  const int64_t rights[] = {0, 17, 150};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sh : shapes) {
      Case c = batched(2, sh[0], sh[1], 4, i % 2 ? 2 : 4, d, i % 2 ? DT::BF16 : DT::F16);
      c.pr.wl = -1;
      c.pr.wr = rights[i % 3];
      if (i % 4 == 3) c.pr.softcap = 20.0;
      run_case(sm80(), c, 2100 + uint64_t(i));
      Case l = batched(1, sh[0], sh[1], 2, 1, d, i % 2 ? DT::F16 : DT::BF16);
      l.pr.wl = rights[(i + 1) % 3] + 40;
      l.pr.wr = -1;
      run_case(sm80(), l, 2150 + uint64_t(i));
      ++i;
    }
}

TEST_CASE("sm80 attention: whole key tiles (the kernel without masking)",
          "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  // Calls without a left window or softcap, with a positive scale, seqlen_k a multiple of the key
  // tile (64 or 128 rows) and head_dim equal to its bucket run the kEven kernel (kernel.cuh),
  // compiled without the two-sided mask, softcap and zero-fill code (causal and right-only
  // windows keep the upper-bound mask); query lengths stay arbitrary (partial query tiles, more
  // queries than keys). FLASHKIT_SM80_ATTENTION_EVEN=0 runs the same cases on the general kernel.
  const int64_t head_dims[] = {64, 96, 128, 256};
  const int64_t shapes[][2] = {{1, 128}, {200, 256}, {513, 384}, {64, 1024}};
  for (const char* even : {"1", "0"}) {
    fktest::ScopedEnv env("FLASHKIT_SM80_ATTENTION_EVEN", even);
    int i = 0;
    for (int64_t d : head_dims)
      for (const auto& sh : shapes) {
        Case c = batched(i % 3 == 2 ? 1 : 2, sh[0], sh[1], 4, i % 2 ? 2 : 4, d,
                         i % 2 ? DT::BF16 : DT::F16);
        c.pad = (i % 4 == 1) ? 8 : 0;
        if (i % 4 == 2) c.pr.scale = 0.3;
        run_case(sm80(), c, 2300 + uint64_t(i) + (even[0] == '0' ? 50 : 0));
        // Causal and right-only windows take the same kernel with the upper-bound mask.
        Case m = c;
        if (i % 2 == 0) {
          m.pr.causal = true;
        } else {
          m.pr.wl = -1;
          m.pr.wr = i % 3 == 0 ? 0 : 40 + 30 * (i % 3);
        }
        run_case(sm80(), m, 2400 + uint64_t(i) + (even[0] == '0' ? 50 : 0));
        ++i;
      }
  }
}

TEST_CASE("sm80 attention: narrow tiles for head_dim 129-256 (GPUs with 99 KB per block)",
          "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  // Where the default 128 x 64 tile (128 KB) does not fit the device (99 KB per block on sm_86,
  // sm_89, sm_120), head_dim 129-256 runs 64 x 64 tiles of 4 warps (96 KB; tile_size.h,
  // kNarrowKind) instead of the generic kernel. FLASHKIT_SM80_ATTENTION_NARROW=1 forces them
  // here: masks, softcap, GQA / MQA, padded head dims, partial query and key tiles, and varlen
  // with empty sequences.
  fktest::ScopedEnv narrow("FLASHKIT_SM80_ATTENTION_NARROW", "1");
  const int64_t head_dims[] = {160, 192, 200, 256};
  const int64_t shapes[][2] = {{1, 1}, {63, 65}, {200, 517}, {1023, 1024}};
  const int64_t heads[][2] = {{2, 2}, {4, 2}, {3, 1}};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sh : shapes) {
      const auto& hh = heads[i % 3];
      Case c = batched(sh[0] * sh[1] > 100000 ? 1 : 2, sh[0], sh[1], hh[0], hh[1], d,
                       i % 2 ? DT::BF16 : DT::F16);
      apply_mask(c, i);
      c.pad = (i % 4 == 3) ? 8 : 0;
      run_case(sm80(), c, 3500 + uint64_t(i));
      ++i;
    }
  const Varlen vs[] = {
      {{300, 129, 1}, {257, 128, 500}, 6, 3, 256, DT::BF16, 4},
      {{77, 0, 250}, {0, 10, 250}, 2, 1, 200, DT::F16, 6},
  };
  for (const Varlen& x : vs) run_case(sm80(), varlen_case(x, i), 3550 + uint64_t(i++));
}

TEST_CASE("sm80 attention: varlen with empty sequences", "[gpu][attention][sm80][varlen]") {
  if (!have_sm80()) return;
  const Varlen vs[] = {
      {{5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 64, DT::BF16, 0},
      {{5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 128, DT::F16, 1},
      {{200, 17, 33}, {150, 300, 33}, 3, 1, 96, DT::F16, 2},
      {{0, 0}, {5, 0}, 2, 2, 32, DT::BF16, 1},
      {{300, 129, 1}, {257, 128, 500}, 6, 3, 256, DT::BF16, 4},
      {{77, 0, 250}, {0, 10, 250}, 2, 1, 200, DT::F16, 6},
  };
  // Each case on the per-sequence tiles, then packed (query tiles across sequence ends).
  for (const char* pack : {"0", "1"}) {
    ForcePack force(pack);
    int i = 0;
    for (const Varlen& x : vs) {
      Case c = varlen_case(x, i);
      // The packed kernel exists for the head-dim buckets 64 and 128 (tile_size.h), and has
      // nothing to do without query rows (the per-sequence row takes those).
      int64_t rows = 0;
      for (int64_t l : x.lq) rows += l;
      if (*pack == '1' && rows > 0 && (x.d <= 64 || (x.d > 96 && x.d <= 128)))
        c.expect_variant = kPacked;
      run_case(sm80(), c, (*pack == '1' ? 3100 : 3000) + uint64_t(i++));
    }
  }
}

TEST_CASE("sm80 attention: packed varlen, many short sequences", "[gpu][attention][sm80][varlen]") {
  if (!have_sm80()) return;
  // Sentence-embedding batches: 64 sequences of 1-40 tokens (the demo's kind), sequences that
  // straddle tile boundaries at 127/128/129 rows, every mask, MHA/GQA, both dtypes, head dims
  // of both packed buckets (64, 128) and padded ones (32, 40, 120).
  std::vector<int64_t> demo;
  for (int b = 0; b < 64; ++b) demo.push_back(1 + (b * 37) % 40);
  const Varlen vs[] = {
      {demo, demo, 12, 12, 32, DT::BF16, 0},
      {demo, demo, 4, 2, 64, DT::F16, 1},
      {{127, 1, 128, 2, 129, 0, 3, 125}, {127, 1, 128, 2, 129, 0, 3, 125}, 2, 1, 128, DT::BF16, 2},
      {{17, 9, 30, 1, 11, 40, 5, 20, 8, 26}, {20, 9, 31, 4, 11, 39, 5, 21, 8, 25}, 3, 1, 120,
       DT::F16, 4},
      {{10, 12, 9, 14, 11, 13, 8, 15, 10, 12}, {10, 12, 9, 14, 11, 13, 8, 15, 10, 12}, 2, 2, 40,
       DT::BF16, 6},
  };
  auto make = [&](const Varlen& x, int i) {
    Case c = varlen_case(x, i);
    c.expect_variant = kPacked;
    return c;
  };
  // The table packs the demo's kind by itself, on the AUTO context too (on Hopper it is listed
  // before the sm90 row).
  const char* forced = std::getenv("FLASHKIT_KERNEL_FAMILY");
  const fk_context_t* autoc = context_for(FK_KERNEL_FAMILY_AUTO);
  if (autoc != nullptr && !(forced && *forced && std::string(forced) != "auto"))
    run_case(autoc, make(vs[0], 0), 3200);
  run_case(sm80(), make(vs[1], 1), 3201);
  // Not packed by the table: decode-like batches (one query against 2048 keys per sequence),
  // where a packed tile would walk all keys of its sequences on few blocks.
  Case dec = varlen_case({std::vector<int64_t>(16, 1), std::vector<int64_t>(16, 2048), 4, 2, 64,
                          DT::BF16, 1},
                         0);
  dec.run = false;
  run_case(sm80(), dec, 3202);
  ForcePack force("1");
  int i = 0;
  for (const Varlen& x : vs) run_case(sm80(), make(x, i), 3210 + uint64_t(i++));
}

TEST_CASE("sm80 attention: fully masked rows and empty keys", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Causal with seqlen_q > seqlen_k: the first rows see no key (out 0, lse -inf).
  Case c = batched(2, 40, 9, 2, 2, 64, DT::F16);
  c.pr.causal = true;
  run_case(sm80(), c, 4000);
  // Window (2, 0) with seqlen_q > seqlen_k.
  c.pr.causal = false;
  c.pr.wl = 2;
  c.pr.wr = 0;
  c.pr.dt = DT::BF16;
  run_case(sm80(), c, 4001);
  // seqlen_k = 0.
  Case e = batched(2, 17, 0, 2, 1, 128, DT::BF16);
  run_case(sm80(), e, 4002);
}

TEST_CASE("sm80 attention: small cases", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  Case c = batched(2, 19, 45, 4, 2, 40, DT::F16);
  c.pr.causal = true;
  c.pr.softcap = 10.0;
  c.pad = 8;
  run_case(sm80(), c, 5000);
  Case d = batched(1, 70, 133, 2, 1, 256, DT::BF16);
  d.pr.wl = 4;
  d.pr.wr = 7;
  d.with_lse = false;
  run_case(sm80(), d, 5001);
  Case v;
  v.varlen = true;
  v.pr.lq = {3, 0, 17, 130};
  v.pr.lk = {0, 4, 20, 65};
  v.pr.nheads = 2;
  v.pr.nheads_k = 1;
  v.pr.d = 96;
  v.pr.dt = DT::BF16;
  v.pr.causal = true;
  run_case(sm80(), v, 5002);
  ForcePack force("1");  // the same varlen problem (head_dim 64) with its query tiles packed
  v.expect_variant = kPacked;
  v.pr.d = 64;
  v.pr.wl = 5;
  run_case(sm80(), v, 5003);
}

TEST_CASE("sm80 attention: head dims that are not multiples of 8", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Rows 8-aligned through the pitch; the kernel zero-fills the columns past head_dim and writes
  // the last partial 16-byte chunk element by element (the gap up to the pitch stays poisoned).
  const int64_t dims[][2] = {{36, 40}, {100, 104}, {250, 256}, {3, 8}};
  int i = 0;
  for (const auto& dp : dims) {
    Case c = batched(2, 50 + 37 * i, 77, 2, 1, dp[0], i % 2 ? DT::BF16 : DT::F16);
    c.row_pitch = dp[1];
    apply_mask(c, i + 1);
    run_case(sm80(), c, 5500 + uint64_t(i++));
  }
  // The same on the decode tiles (at most 16 query rows per sequence and head; buckets 64 and
  // 128): their epilogue writes the partial last chunk through the same shared-memory layout.
  const int64_t decode_dims[][3] = {{36, 40, 1}, {100, 104, 16}, {20, 24, 7}};
  for (const auto& dp : decode_dims) {
    Case c = batched(3, dp[2], 90 + 31 * i, 4, 2, dp[0], i % 2 ? DT::BF16 : DT::F16);
    c.row_pitch = dp[1];
    apply_mask(c, i + 2);
    run_case(sm80(), c, 5500 + uint64_t(i++));
  }
}

TEST_CASE("sm80 attention: select_kernel names the variant", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Not eligible: fp32 inputs; strides that are not multiples of 8 elements (cp.async 16 B).
  Case f = batched(1, 33, 40, 2, 2, 64, DT::F32);
  f.expect_variant = "cuda.generic.attention";
  f.run = false;
  run_case(sm80(), f, 6000);
  Case s = batched(1, 33, 40, 2, 2, 64, DT::BF16);
  s.pad = 3;
  s.expect_variant = "cuda.generic.attention";
  run_case(sm80(), s, 6001);
  Case o = batched(1, 33, 40, 2, 2, 33, DT::F16);  // head stride 33
  o.expect_variant = "cuda.generic.attention";
  run_case(sm80(), o, 6002);

  // AUTO: the sm80 kernel serves every cc >= 8.0 device, including compute capability 9.0
  // until a Hopper attention kernel is listed before it.
  const fk_context_t* autoc = context_for(FK_KERNEL_FAMILY_AUTO);
  REQUIRE(autoc != nullptr);
  fk_context_info_t info;
  fk_context_info_init(&info);
  REQUIRE_FK(fk_context_get_info(autoc, &info));
  Case a = batched(1, 65, 65, 2, 2, 128, DT::BF16);
  // FLASHKIT_KERNEL_FAMILY (e.g. =generic, to test the fallback) overrides AUTO contexts.
  const char* forced = std::getenv("FLASHKIT_KERNEL_FAMILY");
  const bool family_forced = forced && *forced && std::string(forced) != "auto";
  if (info.cc_major == 9 && info.cc_minor == 0 && !family_forced) {
    fk_attention_params_t params;
    fk_attention_params_init(&params);
    HostTensor q(DT::BF16, {1, 65, 2, 128}), out(DT::BF16, {1, 65, 2, 128});
    DeviceTensor dq(q), dout(out);
    const char* variant = "?";
    REQUIRE_FK(fk_attention_select_kernel(autoc, &params, &dq, &dq, &dq, nullptr, nullptr,
                                               &dout, nullptr, &variant));
    const std::string name = variant;
    CHECK((name == "cuda.sm80.attention" || name == "cuda.sm90.attention"));
  } else {
    run_case(autoc, a, 6003);
  }
  // Generic forced: the sm80 row is skipped.
  const fk_context_t* gen = context_for(FK_KERNEL_FAMILY_GENERIC);
  REQUIRE(gen != nullptr);
  Case g = batched(1, 20, 20, 1, 1, 64, DT::F16);
  g.expect_variant = "cuda.generic.attention";
  run_case(gen, g, 6004);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
