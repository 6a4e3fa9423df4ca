// Attention on the CPU backend against the float64 reference: batched and varlen forms, every
// option (causal, window, softcap, scale), GQA/MQA, fully masked rows, padded strides, every
// supported head dim, fp32/fp16/bf16.
#include "cpu_test_helpers.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::HostTensor;

struct AttnCase {
  int64_t batch = 2, seqlen_q = 33, seqlen_k = 47, nheads = 4, nheads_k = 2, head_dim = 64;
  bool causal = false;
  int32_t window_left = -1, window_right = -1;
  float softcap = 0.0f;
  float softmax_scale = NAN;
  bool padded = false;  // non-compact strides on every tensor
  bool with_lse = true;
  DT dtype = DT::F32;
  int threads = 2;
};

fk_attention_params_t to_params(const AttnCase& c) {
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = c.causal;
  p.window_size_left = c.window_left;
  p.window_size_right = c.window_right;
  p.softcap = c.softcap;
  p.softmax_scale = c.softmax_scale;
  return p;
}

fkref::AttentionParams to_ref(const AttnCase& c) {
  fkref::AttentionParams r;
  r.softmax_scale = c.softmax_scale;
  r.causal = c.causal;
  r.window_left = c.window_left;
  r.window_right = c.window_right;
  r.softcap = c.softcap;
  return r;
}

HostTensor make(DT t, std::vector<int64_t> shape, bool padded, int64_t pad) {
  if (!padded) return HostTensor(t, shape);
  return HostTensor(t, shape, fkcpu::padded_strides(shape, pad));
}

void run_batched(const AttnCase& c, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  HostTensor q = make(c.dtype, {c.batch, c.seqlen_q, c.nheads, c.head_dim}, c.padded, 3);
  HostTensor k = make(c.dtype, {c.batch, c.seqlen_k, c.nheads_k, c.head_dim}, c.padded, 5);
  HostTensor v = make(c.dtype, {c.batch, c.seqlen_k, c.nheads_k, c.head_dim}, c.padded, 1);
  HostTensor out = make(c.dtype, {c.batch, c.seqlen_q, c.nheads, c.head_dim}, c.padded, 2);
  HostTensor lse = make(DT::F32, {c.batch, c.nheads, c.seqlen_q}, c.padded, 4);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  out.poison();
  lse.poison();

  const fk_attention_params_t params = to_params(c);
  const fk_status_t st =
      fk_attention_forward(fkcpu::cpu_context(c.threads), nullptr, &params, &q, &k, &v, nullptr,
                           nullptr, &out, c.with_lse ? &lse : nullptr);
  INFO("fk_attention_forward: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);

  std::vector<double> ref_out, ref_lse;
  fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), c.batch, c.seqlen_q, c.seqlen_k,
                   c.nheads, c.nheads_k, c.head_dim, to_ref(c), ref_out, ref_lse);
  check_output(out, ref_out, c.dtype, "out");
  // Without lse the library never sees the tensor, so there is nothing to check on it (a
  // CHECK that it stayed poisoned could not fail).
  if (c.with_lse) check_output(lse, ref_lse, DT::F32, "lse");
}

// Varlen: q/out (total_q, nheads, d), k/v (total_k, nheads_k, d), lse (nheads, total_q).
void run_varlen(const AttnCase& c, const std::vector<int32_t>& cu_q,
                const std::vector<int32_t>& cu_k, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  const int64_t total_q = cu_q.back(), total_k = cu_k.back();
  HostTensor q = make(c.dtype, {total_q, c.nheads, c.head_dim}, c.padded, 3);
  HostTensor k = make(c.dtype, {total_k, c.nheads_k, c.head_dim}, c.padded, 5);
  HostTensor v = make(c.dtype, {total_k, c.nheads_k, c.head_dim}, c.padded, 1);
  HostTensor out = make(c.dtype, {total_q, c.nheads, c.head_dim}, c.padded, 2);
  HostTensor lse = make(DT::F32, {c.nheads, total_q}, c.padded, 4);
  HostTensor cq = fktest::int32_tensor(cu_q), ck = fktest::int32_tensor(cu_k);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  out.poison();
  lse.poison();

  const fk_attention_params_t params = to_params(c);
  const fk_status_t st = fk_attention_forward(fkcpu::cpu_context(c.threads), nullptr, &params,
                                              &q, &k, &v, &cq, &ck, &out,
                                              c.with_lse ? &lse : nullptr);
  INFO("fk_attention_forward (varlen): " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);

  std::vector<double> ref_out, ref_lse;
  fkref::attention_varlen(q.to_vector(), k.to_vector(), v.to_vector(), cu_q, cu_k, c.nheads,
                          c.nheads_k, c.head_dim, to_ref(c), ref_out, ref_lse);
  check_output(out, ref_out, c.dtype, "out");
  if (c.with_lse) check_output(lse, ref_lse, DT::F32, "lse");
}

}  // namespace

TEST_CASE("cpu attention: every dtype, plain and causal", "[cpu][attention]") {
  uint64_t tag = 100;
  for (DT dt : fkcpu::kFloatTypes)
    for (int causal = 0; causal < 2; ++causal) {
      AttnCase c;
      c.dtype = dt;
      c.causal = causal;
      DYNAMIC_SECTION(fktest::dt_name(dt) << " causal=" << causal) { run_batched(c, ++tag); }
    }
}

TEST_CASE("cpu attention: head dims", "[cpu][attention]") {
  uint64_t tag = 200;
  for (int64_t d : {32, 64, 72, 96, 128, 160, 256, 1, 8}) {
    for (DT dt : {DT::F32, DT::BF16}) {
      AttnCase c;
      c.head_dim = d;
      c.dtype = dt;
      c.seqlen_q = 19;
      c.seqlen_k = 70;  // more than one 64-key tile
      c.causal = (d % 64) != 0;
      DYNAMIC_SECTION("d=" << d << " " << fktest::dt_name(dt)) { run_batched(c, ++tag); }
    }
  }
}

TEST_CASE("cpu attention: lengths not multiples of the tile sizes", "[cpu][attention]") {
  uint64_t tag = 300;
  const int64_t lens[][2] = {{1, 1}, {1, 130}, {65, 65}, {127, 129}, {130, 63}, {200, 200}};
  for (auto& l : lens)
    for (int causal = 0; causal < 2; ++causal) {
      AttnCase c;
      c.batch = 1;
      c.nheads = 2;
      c.nheads_k = 1;
      c.head_dim = 40;
      c.seqlen_q = l[0];
      c.seqlen_k = l[1];
      c.causal = causal;
      DYNAMIC_SECTION("sq=" << l[0] << " sk=" << l[1] << " causal=" << causal) {
        run_batched(c, ++tag);
      }
    }
}

TEST_CASE("cpu attention: seqlen_q > seqlen_k with causal gives fully masked rows",
          "[cpu][attention]") {
  // Bottom-right alignment: row i sees keys j <= i + sk - sq, so rows i < sq - sk see none.
  for (DT dt : fkcpu::kFloatTypes) {
    AttnCase c;
    c.dtype = dt;
    c.seqlen_q = 90;
    c.seqlen_k = 30;
    c.causal = true;
    c.head_dim = 32;
    DYNAMIC_SECTION(fktest::dt_name(dt)) {
      run_batched(c, 400 + uint64_t(dt));
      // And explicitly: row 0 of every head is zero with lse -inf.
      auto rng = fkcpu::rng_for(401);
      HostTensor q(dt, {1, 90, 4, 32}), k(dt, {1, 30, 2, 32}), v(dt, {1, 30, 2, 32});
      HostTensor out(dt, {1, 90, 4, 32}), lse(DT::F32, {1, 4, 90});
      q.fill_normal(rng);
      k.fill_normal(rng);
      v.fill_normal(rng);
      out.poison();
      lse.poison();
      fk_attention_params_t p;
      fk_attention_params_init(&p);
      p.causal = 1;
      REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &q, &k, &v, nullptr,
                                   nullptr, &out, &lse) == FK_SUCCESS);
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t i = 0; i < 60; ++i) {
          CHECK(std::isinf(lse.get({0, h, i})));
          CHECK(lse.get({0, h, i}) < 0);
          for (int64_t x = 0; x < 32; x += 7) CHECK(out.get({0, i, h, x}) == 0.0);
        }
        CHECK(std::isfinite(lse.get({0, h, 60})));
      }
    }
  }
}

TEST_CASE("cpu attention: seqlen_k == 0 gives zeros and -inf", "[cpu][attention]") {
  AttnCase c;
  c.seqlen_k = 0;
  run_batched(c, 450);
}

TEST_CASE("cpu attention: keys scoring -inf over whole key tiles, NaN inputs",
          "[cpu][attention]") {
  // Keys [0, n) score -inf (k's first component -inf, q positive). Once they fill a whole
  // 64-key tile, the running max of that tile is -inf; the rescaling must not turn exp(-inf -
  // -inf) into NaN (FlashAttention's guard: subtract 0 instead). The exact result is finite.
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {1, 63, 64, 65, 128, 150}) {
    DYNAMIC_SECTION("n = " << n) {
      auto rng = fkcpu::rng_for(470 + uint64_t(n));
      HostTensor q(DT::F32, {1, 5, 2, 16}), k(DT::F32, {1, 200, 1, 16}), v(DT::F32, {1, 200, 1, 16});
      HostTensor out(DT::F32, {1, 5, 2, 16}), lse(DT::F32, {1, 2, 5});
      q.fill_uniform(rng, 0.1, 1.0);
      k.fill_normal(rng);
      v.fill_normal(rng);
      for (int64_t j = 0; j < n; ++j) k.set({0, j, 0, 0}, -inf);
      out.poison();
      lse.poison();
      fk_attention_params_t p;
      fk_attention_params_init(&p);
      REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &q, &k, &v, nullptr,
                                   nullptr, &out, &lse) == FK_SUCCESS);
      std::vector<double> ref_out, ref_lse;
      fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), 1, 5, 200, 2, 1, 16,
                       fkref::AttentionParams{}, ref_out, ref_lse);
      check_output(out, ref_out, DT::F32, "out");
      check_output(lse, ref_lse, DT::F32, "lse");
    }
  }
  SECTION("a NaN in one query row: that row's out and lse are NaN, the others finite") {
    // lse NaN, not -inf: -inf means "this row saw no key".
    auto rng = fkcpu::rng_for(480);
    HostTensor q(DT::F32, {1, 5, 2, 16}), k(DT::F32, {1, 90, 1, 16}), v(DT::F32, {1, 90, 1, 16});
    HostTensor out(DT::F32, {1, 5, 2, 16}), lse(DT::F32, {1, 2, 5});
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    q.set({0, 3, 1, 7}, NAN);
    fk_attention_params_t p;
    fk_attention_params_init(&p);
    REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &q, &k, &v, nullptr, nullptr,
                                 &out, &lse) == FK_SUCCESS);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 5; ++i) {
        const bool bad = h == 1 && i == 3;
        INFO("head " << h << " row " << i);
        CHECK(std::isnan(lse.get({0, h, i})) == bad);
        if (!bad) CHECK(std::isfinite(lse.get({0, h, i})));
        for (int64_t x = 0; x < 16; ++x) CHECK(std::isnan(out.get({0, i, h, x})) == bad);
      }
  }
}

TEST_CASE("cpu attention: long key ranges keep fp32 accuracy, and v near the fp32 limit",
          "[cpu][attention]") {
  // Equal scores (q = 0): out is the mean of v over the keys, computed here in float64. One fp32
  // accumulator over every key lost ~1% at 2^20 keys (each 0.1 added to a sum near 1e5); the
  // backend sums each 64-key tile in fp32 and the tiles in float64.
  auto rng = fkcpu::rng_for(490);
  const int64_t nk = int64_t(1) << 20, d = 8;
  HostTensor q(DT::F32, {1, 1, 1, d}), k(DT::F32, {1, nk, 1, d}), v(DT::F32, {1, nk, 1, d});
  HostTensor out(DT::F32, {1, 1, 1, d}), lse(DT::F32, {1, 1, 1});
  for (int64_t x = 0; x < d; ++x) q.set({0, 0, 0, x}, 0.0);
  k.fill_normal(rng);
  v.fill_uniform(rng, 0.05, 0.15);
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  out.poison();
  REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &q, &k, &v, nullptr, nullptr,
                               &out, &lse) == FK_SUCCESS);
  for (int64_t x = 0; x < d; ++x) {
    double mean = 0;
    for (int64_t j = 0; j < nk; ++j) mean += v.get({0, j, 0, x});
    mean /= double(nk);
    INFO("column " << x);
    CHECK(std::fabs(out.get({0, 0, 0, x}) - mean) <= 2e-6 * mean);
  }
  CHECK(std::fabs(lse.get({0, 0, 0}) - std::log(double(nk))) <= 1e-6 * std::log(double(nk)));

  // |v| = 1e35 over 4096 equal keys: the exact output 1e35 fits, though 4096 x 1e35 does not
  // (the header's safe range is |v| <= 3.4e38 / seqlen_k; 1e35 x 64 keys per tile fits).
  const int64_t n2 = 4096;
  HostTensor k2(DT::F32, {1, n2, 1, d}), v2(DT::F32, {1, n2, 1, d});
  k2.fill_normal(rng);
  for (int64_t j = 0; j < n2; ++j)
    for (int64_t x = 0; x < d; ++x) v2.set({0, j, 0, x}, x % 2 ? 1e35 : -1e35);
  out.poison();
  REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &q, &k2, &v2, nullptr, nullptr,
                               &out, nullptr) == FK_SUCCESS);
  for (int64_t x = 0; x < d; ++x) {
    INFO("column " << x << ": " << out.get({0, 0, 0, x}));
    CHECK(std::fabs(out.get({0, 0, 0, x}) - (x % 2 ? 1e35 : -1e35)) <= 1e29);
  }
}

TEST_CASE("cpu attention: GQA and MQA", "[cpu][attention]") {
  uint64_t tag = 500;
  const int64_t heads[][2] = {{8, 8}, {8, 4}, {8, 2}, {8, 1}, {3, 1}, {6, 3}};
  for (auto& h : heads)
    for (DT dt : {DT::F32, DT::F16}) {
      AttnCase c;
      c.nheads = h[0];
      c.nheads_k = h[1];
      c.dtype = dt;
      c.head_dim = 48;
      c.causal = h[1] == 1;
      DYNAMIC_SECTION(h[0] << "/" << h[1] << " " << fktest::dt_name(dt)) { run_batched(c, ++tag); }
    }
}

TEST_CASE("cpu attention: sliding window and softcap", "[cpu][attention]") {
  struct W {
    int32_t left, right;
    bool causal;
    float softcap;
  };
  const W ws[] = {{8, 8, false, 0},  {16, -1, false, 0}, {-1, 4, false, 0}, {0, 0, false, 0},
                  {20, 0, true, 0},  {5, -1, true, 0},    {-1, -1, false, 30.0f},
                  {12, 3, false, 5}, {-1, -1, true, 2.5f}, {3, 70, false, 50}};
  uint64_t tag = 600;
  for (const W& w : ws)
    for (DT dt : fkcpu::kFloatTypes) {
      AttnCase c;
      c.window_left = w.left;
      c.window_right = w.right;
      c.causal = w.causal;
      c.softcap = w.softcap;
      c.dtype = dt;
      c.seqlen_q = 70;
      c.seqlen_k = 100;
      c.head_dim = 32;
      DYNAMIC_SECTION("window (" << w.left << "," << w.right << ") causal=" << w.causal
                                 << " softcap=" << w.softcap << " " << fktest::dt_name(dt)) {
        run_batched(c, ++tag);
      }
    }
  SECTION("window that leaves rows with no key (seqlen_q > seqlen_k)") {
    AttnCase c;
    c.seqlen_q = 80;
    c.seqlen_k = 20;
    c.window_left = 2;
    c.window_right = 1;
    run_batched(c, 690);
  }
}

TEST_CASE("cpu attention: softmax_scale", "[cpu][attention]") {
  uint64_t tag = 700;
  for (float s : {0.5f, 0.0f, -0.3f, 2.0f}) {
    AttnCase c;
    c.softmax_scale = s;
    c.head_dim = 16;
    DYNAMIC_SECTION("scale " << s) { run_batched(c, ++tag); }
  }
}

TEST_CASE("cpu attention: padded strides, no lse, thread counts", "[cpu][attention]") {
  uint64_t tag = 800;
  for (DT dt : fkcpu::kFloatTypes)
    for (int threads : {1, 3}) {
      AttnCase c;
      c.padded = true;
      c.dtype = dt;
      c.threads = threads;
      c.causal = true;
      c.seqlen_q = 50;
      c.seqlen_k = 77;
      DYNAMIC_SECTION(fktest::dt_name(dt) << " threads=" << threads) { run_batched(c, ++tag); }
    }
  SECTION("no lse") {
    AttnCase c;
    c.with_lse = false;
    run_batched(c, 850);
  }
}

TEST_CASE("cpu attention: varlen", "[cpu][attention]") {
  // Sequences: normal, empty q, empty k with nonempty q (all rows masked), q longer than k,
  // longer than one tile.
  const std::vector<int32_t> cu_q = {0, 5, 5, 40, 77, 150, 151};
  const std::vector<int32_t> cu_k = {0, 9, 12, 12, 30, 160, 161};
  uint64_t tag = 900;
  for (DT dt : fkcpu::kFloatTypes)
    for (int mode = 0; mode < 4; ++mode) {
      AttnCase c;
      c.dtype = dt;
      c.nheads = 4;
      c.nheads_k = mode == 3 ? 1 : 2;
      c.head_dim = 40;
      c.causal = mode == 1;
      if (mode == 2) {
        c.window_left = 6;
        c.window_right = 2;
        c.softcap = 10;
      }
      c.padded = mode == 3;
      DYNAMIC_SECTION(fktest::dt_name(dt) << " mode " << mode) {
        run_varlen(c, cu_q, cu_k, ++tag);
      }
    }
  SECTION("all sequences empty but one") {
    AttnCase c;
    run_varlen(c, {0, 0, 0, 7, 7}, {0, 3, 3, 3, 3}, 950);
  }
}

TEST_CASE("cpu attention: varlen, NaN in one sequence's v stays in that sequence",
          "[cpu][attention][varlen]") {
  // The same call twice, v of sequence 1 finite and then all NaN: every other sequence's rows
  // must come out bit for bit the same (and match the float64 reference), sequence 1's NaN.
  const std::vector<int32_t> cu_q{0, 5, 40, 77, 150}, cu_k{0, 9, 30, 160, 161};
  for (DT dt : fkcpu::kFloatTypes)
    for (bool causal : {false, true}) {
      DYNAMIC_SECTION(fktest::dt_name(dt) << (causal ? " causal" : "")) {
        std::mt19937_64 rng(fktest::test_seed() + 29);
        HostTensor q(dt, {150, 4, 32}), k(dt, {161, 2, 32}), v(dt, {161, 2, 32});
        HostTensor cq = fktest::int32_tensor(cu_q), ck = fktest::int32_tensor(cu_k);
        q.fill_normal(rng);
        k.fill_normal(rng);
        v.fill_normal(rng);
        fk_attention_params_t prm;
        fk_attention_params_init(&prm);
        prm.causal = causal;
        auto run = [&](HostTensor& out, HostTensor& lse) {
          out.poison();
          lse.poison();
          const fk_status_t st = fk_attention_forward(fkcpu::cpu_context(3), nullptr, &prm,
                                                      q.view(), k.view(), v.view(), cq.view(),
                                                      ck.view(), out.view(), lse.view());
          INFO(fk_get_last_error_message());
          REQUIRE(st == FK_SUCCESS);
        };
        HostTensor out_a(dt, {150, 4, 32}), lse_a(DT::F32, {4, 150});
        run(out_a, lse_a);
        fkref::AttentionParams rp;
        rp.causal = causal;
        std::vector<double> ref_out, ref_lse;
        fkref::attention_varlen(q.to_vector(), k.to_vector(), v.to_vector(), cu_q, cu_k, 4, 2, 32,
                                rp, ref_out, ref_lse);
        check_output(out_a, ref_out, dt, "out");
        for (int64_t r = cu_k[1]; r < cu_k[2]; ++r)
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t d = 0; d < 32; ++d) v.set({r, h, d}, std::nan(""));
        HostTensor out_b(dt, {150, 4, 32}), lse_b(DT::F32, {4, 150});
        run(out_b, lse_b);
        const std::vector<double> a = out_a.to_vector(), b = out_b.to_vector();
        int64_t changed = 0, nan_in_seq1 = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          const int64_t row = int64_t(i) / (4 * 32);
          if (row >= cu_q[1] && row < cu_q[2]) {
            nan_in_seq1 += std::isnan(b[i]) ? 1 : 0;
          } else if (!(a[i] == b[i])) {
            ++changed;
          }
        }
        CHECK(changed == 0);
        CHECK(nan_in_seq1 > 0);
        CHECK(lse_a.to_vector() == lse_b.to_vector());  // v does not enter the lse
      }
    }
}

TEST_CASE("cpu attention: varlen with max_seqlen_q/k given", "[cpu][attention][varlen]") {
  // One problem three ways: defaults; exact maxima; larger maxima. Each against the float64
  // reference.
  std::mt19937_64 rng(fktest::test_seed() + 11);
  const std::vector<int32_t> cu_q{0, 4, 4, 9}, cu_k{0, 5, 6, 11};
  HostTensor q(DT::F32, {9, 2, 8}), k(DT::F32, {11, 1, 8}), v(DT::F32, {11, 1, 8});
  HostTensor cq = fktest::int32_tensor(cu_q), ck = fktest::int32_tensor(cu_k);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  fkref::AttentionParams rp;
  rp.causal = true;
  std::vector<double> ref_out, ref_lse;
  fkref::attention_varlen(q.to_vector(), k.to_vector(), v.to_vector(), cu_q, cu_k, 2, 1, 8, rp,
                          ref_out, ref_lse);
  for (int way = 0; way < 3; ++way) {
    INFO("way " << way);
    fk_attention_params_t prm;
    fk_attention_params_init(&prm);
    prm.causal = 1;
    if (way == 1) prm.max_seqlen_q = 5, prm.max_seqlen_k = 5;
    if (way == 2) prm.max_seqlen_q = 1000, prm.max_seqlen_k = 7;
    HostTensor out(DT::F32, {9, 2, 8}), lse(DT::F32, {2, 9});
    out.poison();
    lse.poison();
    const fk_status_t st = fk_attention_forward(fkcpu::cpu_context(2), nullptr, &prm,
                                                q.view(), k.view(), v.view(), cq.view(),
                                                ck.view(), out.view(), lse.view());
    INFO(fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    check_output(out, ref_out, DT::F32, "out");
    check_output(lse, ref_lse, DT::F32, "lse");
  }
}
