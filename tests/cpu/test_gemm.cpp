// GEMM on the CPU backend against the float64 reference: every transpose combination, every
// activation, bias, alpha/beta, K = 0 with and without C, degenerate and odd sizes, sizes that
// cross the CPU kernel's cache blocks, strided (padded and column-major) operands, batches with
// broadcast, and every dtype combination.
#include "cpu_test_helpers.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::absolute;
using fktest::HostTensor;

enum Layout { kCompact = 0, kPadded = 1, kColMajor = 2 };

struct GemmCase {
  int64_t batch = 0;  // 0: rank-2 operands
  int64_t M = 37, N = 29, K = 41;
  bool ta = false, tb = false;
  float alpha = 1.0f, beta = 0.0f;
  bool with_c = false, with_bias = false;
  int act = FK_ACTIVATION_NONE;
  DT ab = DT::F32, cd = DT::F32, bias_dt = DT::F32;
  Layout layout = kCompact;
  bool a_bcast = false, b_bcast = false, c_bcast = false;  // rank-2 operand, broadcast
  bool b_stride0 = false;  // b rank 3 with batch stride 0
  bool poison_c = false;   // c given but beta == 0: must not be read
  bool poison_ab = false;  // alpha == 0: a and b hold NaN (and scales Inf) and must not be read
  int threads = 2;
  // fk_gemm_scaled: b's dtype when it differs from a's (the two fp8 formats), and the scales:
  // 0 none, 1 per-tensor (1,), 2 per-row of a (M,) / per-column of b (N,), 3 per-tensor 0-d
  // (torch's scalar scale tensors).
  bool scaled = false;
  bool b_dt_set = false;
  DT b_dt = DT::F32;
  int scale_a = 0, scale_b = 0;
};

// A (rows, cols) matrix, with a leading batch dimension when batch > 0.
HostTensor mat(DT t, int64_t batch, int64_t rows, int64_t cols, Layout layout) {
  std::vector<int64_t> shape, st;
  int64_t rs, cs, bs;
  switch (layout) {
    case kPadded: rs = cols + 3; cs = 1; bs = rows * rs + 5; break;
    case kColMajor: rs = 1; cs = rows + 2; bs = cols * cs + 1; break;
    default: rs = cols; cs = 1; bs = rows * cols; break;
  }
  if (batch > 0) {
    shape = {batch, rows, cols};
    st = {bs, rs, cs};
  } else {
    shape = {rows, cols};
    st = {rs, cs};
  }
  return HostTensor(t, shape, st);
}

void run_gemm(const GemmCase& c, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  const int64_t bd = c.batch;  // d's batch
  HostTensor a = c.ta ? mat(c.ab, c.a_bcast ? 0 : bd, c.K, c.M, c.layout)
                      : mat(c.ab, c.a_bcast ? 0 : bd, c.M, c.K, c.layout);
  HostTensor b;
  if (c.b_stride0 && bd > 0) {
    // Batch stride 0: one matrix seen by every batch.
    std::vector<int64_t> shape = c.tb ? std::vector<int64_t>{bd, c.N, c.K}
                                      : std::vector<int64_t>{bd, c.K, c.N};
    b = HostTensor(c.b_dt_set ? c.b_dt : c.ab, shape, {0, shape[2], 1});
  } else {
    const DT bt = c.b_dt_set ? c.b_dt : c.ab;
    b = c.tb ? mat(bt, c.b_bcast ? 0 : bd, c.N, c.K, c.layout)
             : mat(bt, c.b_bcast ? 0 : bd, c.K, c.N, c.layout);
  }
  const auto scale_shape = [](int mode, int64_t full) {
    return mode == 2 ? std::vector<int64_t>{full}
                     : mode == 3 ? std::vector<int64_t>{} : std::vector<int64_t>{1};
  };
  HostTensor sa(DT::F32, scale_shape(c.scale_a, c.M)), sb(DT::F32, scale_shape(c.scale_b, c.N));
  const auto scale_at = [](const HostTensor& s, int mode, int64_t i) {
    return mode == 3 ? s.get({}) : s.get({mode == 2 ? i : 0});
  };
  sa.fill_uniform(rng, 0.25, 4.0);
  sb.fill_uniform(rng, 0.25, 4.0);
  HostTensor cm = mat(c.cd, c.c_bcast ? 0 : bd, c.M, c.N, c.layout);
  HostTensor bias(c.bias_dt, {c.N});
  HostTensor d = mat(c.cd, bd, c.M, c.N, c.layout);
  a.fill_normal(rng);
  b.fill_normal(rng);
  cm.fill_normal(rng);
  bias.fill_normal(rng);
  if (c.poison_c) cm.poison();
  if (c.poison_ab) {
    a.poison();  // 0xFF bytes: NaN in every float dtype (fp8 e4m3fn included)
    b.poison();
    sa.for_each([&](const std::vector<int64_t>& i) { sa.set(i, INFINITY); });
    sb.for_each([&](const std::vector<int64_t>& i) { sb.set(i, INFINITY); });
  }
  d.poison();

  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.trans_a = c.ta;
  p.trans_b = c.tb;
  p.alpha = c.alpha;
  p.beta = c.beta;
  p.activation = c.act;
  const fk_status_t st =
      c.scaled ? fk_gemm_scaled(fkcpu::cpu_context(c.threads), nullptr, &p, &a, &b,
                                c.scale_a ? &sa : nullptr, c.scale_b ? &sb : nullptr,
                                c.with_c ? &cm : nullptr, c.with_bias ? &bias : nullptr, &d)
               : fk_gemm(fkcpu::cpu_context(c.threads), nullptr, &p, &a, &b,
                         c.with_c ? &cm : nullptr, c.with_bias ? &bias : nullptr, &d);
  INFO("fk_gemm: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);

  fkref::GemmParams rp;
  rp.trans_a = c.ta;
  rp.trans_b = c.tb;
  rp.alpha = c.alpha;
  rp.beta = c.beta;
  rp.activation = c.act;
  const int64_t nb = std::max<int64_t>(bd, 1);
  std::vector<double> av = a.to_vector(), bv = b.to_vector();
  if (c.poison_ab) {  // the product is dropped: the reference sees zeros (and unit scales)
    std::fill(av.begin(), av.end(), 0.0);
    std::fill(bv.begin(), bv.end(), 0.0);
  }
  const std::vector<double> cv = cm.to_vector(), biasv = bias.to_vector();
  const auto batch_of = [](const HostTensor& t) { return t.shape.size() == 3 ? t.shape[0] : 1; };
  // The scales, folded into the operands in float64: a's row m times scale_a[m], b's column n
  // times scale_b[n] (a and b are logical row-major (rows, cols) here, transposes included).
  if (c.scale_a && !c.poison_ab) {
    const int64_t rows = c.ta ? c.K : c.M, cols = c.ta ? c.M : c.K;
    for (size_t i = 0; i < av.size(); ++i) {
      const int64_t r = int64_t(i) / cols % rows, col = int64_t(i) % cols;
      const int64_t m = c.ta ? col : r;
      av[i] *= scale_at(sa, c.scale_a, m);
    }
  }
  if (c.scale_b && !c.poison_ab) {
    const int64_t rows = c.tb ? c.N : c.K, cols = c.tb ? c.K : c.N;
    for (size_t i = 0; i < bv.size(); ++i) {
      const int64_t r = int64_t(i) / cols % rows, col = int64_t(i) % cols;
      const int64_t n = c.tb ? r : col;
      bv[i] *= scale_at(sb, c.scale_b, n);
    }
  }
  const std::vector<double> ref =
      fkref::gemm(av, batch_of(a), bv, batch_of(b), c.with_c && !c.poison_c ? &cv : nullptr,
                  batch_of(cm), c.with_bias ? &biasv : nullptr, nb, c.M, c.N, c.K, rp);
  // The scale of the rounding errors: the same epilogue on |A| |B|, |C|, |bias|.
  const std::vector<double> aa = absolute(av), ba = absolute(bv), ca = absolute(cv),
                            biasa = absolute(biasv);
  fkref::GemmParams sp = rp;
  sp.alpha = std::fabs(rp.alpha);
  sp.beta = std::fabs(rp.beta);
  sp.activation = FK_ACTIVATION_NONE;
  const std::vector<double> scale =
      fkref::gemm(aa, batch_of(a), ba, batch_of(b), c.with_c && !c.poison_c ? &ca : nullptr,
                  batch_of(cm), c.with_bias ? &biasa : nullptr, nb, c.M, c.N, c.K, sp);
  // Outputs are also rounded to their own dtype: relative to |ref| itself.
  std::vector<double> mag(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) mag[i] = std::max(scale[i], std::fabs(ref[i]));
  check_output(d, ref, c.cd, "d", 1.0, &mag);
}

}  // namespace

TEST_CASE("cpu gemm: transposes x dtypes", "[cpu][gemm]") {
  uint64_t tag = 1000;
  for (DT ab : fkcpu::kFloatTypes)
    for (DT cd : fkcpu::kFloatTypes)
      for (int t = 0; t < 4; ++t) {
        GemmCase c;
        c.ab = ab;
        c.cd = cd;
        c.ta = t & 1;
        c.tb = (t >> 1) & 1;
        DYNAMIC_SECTION(fktest::dt_name(ab) << "->" << fktest::dt_name(cd) << " ta=" << c.ta
                                            << " tb=" << c.tb) {
          run_gemm(c, ++tag);
        }
      }
}

TEST_CASE("cpu gemm: sizes across cache blocks and odd sizes", "[cpu][gemm]") {
  const int64_t sizes[][3] = {{1, 1, 1},   {1, 300, 17}, {130, 1, 33}, {1, 1, 600},
                              {65, 257, 3}, {130, 300, 600}, {7, 9, 257}, {64, 256, 256}};
  uint64_t tag = 1100;
  for (auto& s : sizes)
    for (int t = 0; t < 4; t += 3) {
      GemmCase c;
      c.M = s[0];
      c.N = s[1];
      c.K = s[2];
      c.ta = t & 1;
      c.tb = (t >> 1) & 1;
      DYNAMIC_SECTION(s[0] << "x" << s[1] << "x" << s[2] << " t=" << t) { run_gemm(c, ++tag); }
    }
}

TEST_CASE("cpu gemm: epilogue (alpha, beta, C, bias, activations)", "[cpu][gemm]") {
  uint64_t tag = 1200;
  for (int act : {FK_ACTIVATION_NONE, FK_ACTIVATION_RELU, FK_ACTIVATION_GELU_TANH,
                  FK_ACTIVATION_GELU_ERF})
    for (int variant = 0; variant < 3; ++variant) {
      GemmCase c;
      c.act = act;
      c.alpha = variant == 0 ? 1.0f : -0.75f;
      c.with_c = variant >= 1;
      c.beta = variant >= 1 ? 0.5f : 0.0f;
      c.with_bias = variant != 1;
      c.bias_dt = variant == 2 ? DT::BF16 : DT::F32;
      c.cd = variant == 2 ? DT::F16 : DT::F32;
      DYNAMIC_SECTION("act " << act << " variant " << variant) { run_gemm(c, ++tag); }
    }
  SECTION("c given with beta 0 is not read") {
    GemmCase c;
    c.with_c = true;
    c.poison_c = true;
    c.beta = 0.0f;
    c.with_bias = true;
    run_gemm(c, 1290);
  }
  SECTION("alpha 0") {
    GemmCase c;
    c.alpha = 0.0f;
    c.with_c = true;
    c.beta = 2.0f;
    run_gemm(c, 1291);
  }
}

TEST_CASE("cpu gemm: K = 0", "[cpu][gemm]") {
  uint64_t tag = 1300;
  for (int with_c = 0; with_c < 2; ++with_c)
    for (int with_bias = 0; with_bias < 2; ++with_bias)
      for (int act : {FK_ACTIVATION_NONE, FK_ACTIVATION_GELU_ERF}) {
        GemmCase c;
        c.K = 0;
        c.with_c = with_c;
        c.beta = with_c ? 1.5f : 0.0f;
        c.with_bias = with_bias;
        c.act = act;
        c.batch = 2;
        DYNAMIC_SECTION("c=" << with_c << " bias=" << with_bias << " act=" << act) {
          run_gemm(c, ++tag);
        }
      }
}

TEST_CASE("cpu gemm: alpha = 0 reads neither a nor b (BLAS convention)", "[cpu][gemm]") {
  // a and b full of NaN (scales Inf for gemm_scaled): d must still be act(beta c + bias).
  uint64_t tag = 1350;
  for (int scaled = 0; scaled < 2; ++scaled)
    for (int with_c = 0; with_c < 2; ++with_c) {
      GemmCase c;
      c.alpha = 0.0f;
      c.poison_ab = true;
      c.with_c = with_c;
      c.beta = with_c ? -0.75f : 0.0f;
      c.with_bias = true;
      c.act = with_c ? FK_ACTIVATION_GELU_TANH : FK_ACTIVATION_RELU;
      c.ta = with_c;
      if (scaled) {
        c.scaled = true;
        c.ab = DT::E4M3;
        c.cd = DT::BF16;
        c.scale_a = 2;
        c.scale_b = 1;
      }
      DYNAMIC_SECTION("scaled=" << scaled << " c=" << with_c) { run_gemm(c, ++tag); }
    }
}

TEST_CASE("cpu gemm: NaN in a row of A stays NaN through every activation", "[cpu][gemm]") {
  // torch's convention (torch.relu(nan) is nan): an activation never hides a NaN. Row 1 of A
  // holds one NaN, so row 1 of D is NaN for every activation and rows 0 and 2 are finite.
  for (int act : {FK_ACTIVATION_NONE, FK_ACTIVATION_RELU, FK_ACTIVATION_GELU_TANH,
                  FK_ACTIVATION_GELU_ERF}) {
    auto rng = fkcpu::rng_for(1390 + uint64_t(act));
    HostTensor a(DT::F32, {3, 5}), b(DT::F32, {5, 4}), d(DT::F32, {3, 4});
    a.fill_normal(rng);
    b.fill_normal(rng);
    a.set({1, 2}, NAN);
    d.poison();
    fk_gemm_params_t p;
    fk_gemm_params_init(&p);
    p.activation = act;
    REQUIRE(fk_gemm(fkcpu::cpu_context(), nullptr, &p, &a, &b, nullptr, nullptr, &d) ==
            FK_SUCCESS);
    INFO("activation " << act);
    for (int64_t n = 0; n < 4; ++n) {
      CHECK(std::isnan(d.get({1, n})));
      CHECK(std::isfinite(d.get({0, n})));
      CHECK(std::isfinite(d.get({2, n})));
    }
  }
}

TEST_CASE("cpu gemm: GELU at +-inf, NaN and deep in the negative tail", "[cpu][gemm]") {
  // D = act(a b) with K = 1 and b = 1: d[m, n] = a[m]. GELU(-inf) is its limit 0 (the formulas
  // give -inf x 0 = NaN), +inf stays +inf, NaN stays NaN; the negative tail keeps its relative
  // accuracy (1 + erf(x / sqrt(2)) lost every digit below x ~ -6).
  const float xs[] = {-INFINITY, INFINITY, NAN, -5.0f, -8.0f, -12.0f, -0.5f, 3.0f, 1e30f, -1e30f};
  const int64_t M = int64_t(sizeof(xs) / sizeof(xs[0]));
  for (int act : {FK_ACTIVATION_GELU_TANH, FK_ACTIVATION_GELU_ERF}) {
    HostTensor a(DT::F32, {M, 1}), b(DT::F32, {1, 2}), d(DT::F32, {M, 2});
    for (int64_t m = 0; m < M; ++m) a.set({m, 0}, xs[m]);
    b.set({0, 0}, 1.0);
    b.set({0, 1}, 1.0);
    d.poison();
    fk_gemm_params_t p;
    fk_gemm_params_init(&p);
    p.activation = act;
    REQUIRE(fk_gemm(fkcpu::cpu_context(), nullptr, &p, &a, &b, nullptr, nullptr, &d) == FK_SUCCESS);
    for (int64_t m = 0; m < M; ++m) {
      const double x = xs[m], got = d.get({m, 1});
      INFO("activation " << act << ", x = " << x << ", got " << got);
      if (std::isnan(x)) {
        CHECK(std::isnan(got));
        CHECK(std::isnan(d.get({m, 0})));
      } else if (std::isinf(x)) {
        CHECK(got == (x > 0 ? x : 0.0));
        CHECK(d.get({m, 0}) == got);
      } else {
        CHECK(d.get({m, 0}) == got);
        const double want = fkref::activation(act, x);
        CHECK(std::fabs(got - want) <= 1e-5 * std::fabs(want) + 1e-37);
      }
    }
  }
}

TEST_CASE("cpu gemm: strided operands", "[cpu][gemm]") {
  uint64_t tag = 1400;
  for (Layout l : {kPadded, kColMajor})
    for (int t = 0; t < 4; ++t)
      for (DT dt : {DT::F32, DT::BF16}) {
        GemmCase c;
        c.layout = l;
        c.ta = t & 1;
        c.tb = (t >> 1) & 1;
        c.ab = dt;
        c.cd = dt;
        c.with_c = true;
        c.beta = -1.0f;
        c.with_bias = true;
        c.M = 70;
        c.N = 260;
        c.K = 33;
        DYNAMIC_SECTION("layout " << l << " t=" << t << " " << fktest::dt_name(dt)) {
          run_gemm(c, ++tag);
        }
      }
}

TEST_CASE("cpu gemm: batched with broadcast", "[cpu][gemm]") {
  uint64_t tag = 1500;
  for (int v = 0; v < 6; ++v) {
    GemmCase c;
    c.batch = 3;
    c.with_c = true;
    c.beta = 0.25f;
    c.with_bias = true;
    c.a_bcast = v == 1;
    c.b_bcast = v == 2 || v == 5;
    c.c_bcast = v == 3 || v == 5;
    c.b_stride0 = v == 4;
    c.layout = v == 5 ? kPadded : kCompact;
    c.ta = v == 2;
    c.tb = v >= 3;
    c.threads = v == 0 ? 1 : 3;
    DYNAMIC_SECTION("variant " << v) { run_gemm(c, ++tag); }
  }
}

TEST_CASE("cpu gemm_scaled: fp8 and scales", "[cpu][gemm]") {
  uint64_t tag = 1600;
  const DT fp8[] = {DT::E4M3, DT::E5M2};
  for (DT a8 : fp8)
    for (DT b8 : fp8)
      for (int v = 0; v < 4; ++v) {
        GemmCase c;
        c.scaled = true;
        c.ab = a8;
        c.b_dt_set = true;
        c.b_dt = b8;
        c.cd = v == 1 ? DT::F32 : DT::BF16;
        c.M = 45;
        c.N = 70;
        c.K = 300;  // crosses a K panel of the CPU kernel
        c.tb = v != 2;
        c.ta = v == 3;
        c.scale_a = v % 3;
        c.scale_b = (v + 1) % 3;
        c.with_bias = v >= 2;
        c.with_c = v == 3;
        c.beta = v == 3 ? 0.5f : 0.0f;
        c.alpha = v == 1 ? 0.75f : 1.0f;
        c.act = v == 2 ? FK_ACTIVATION_GELU_TANH : FK_ACTIVATION_NONE;
        c.batch = v == 1 ? 2 : 0;
        DYNAMIC_SECTION(fktest::dt_name(a8) << "x" << fktest::dt_name(b8) << " v" << v) {
          run_gemm(c, ++tag);
        }
      }
  // Non-fp8 inputs take scales too.
  GemmCase c;
  c.scaled = true;
  c.ab = DT::BF16;
  c.scale_a = 2;
  c.scale_b = 1;
  run_gemm(c, ++tag);
  // 0-d per-tensor scales (torch's scalar tensors), on both operands and mixed with (N,).
  GemmCase z;
  z.scaled = true;
  z.ab = DT::E4M3;
  z.tb = true;
  z.M = 9;
  z.N = 12;
  z.K = 40;
  z.scale_a = 3;
  z.scale_b = 3;
  run_gemm(z, ++tag);
  z.scale_b = 2;
  run_gemm(z, ++tag);
}

TEST_CASE("cpu gemm: epilogue order at the edge of fp32's range", "[cpu][gemm]") {
  // The CPU form of the GPU case "gpu gemm: epilogue order at the edge of fp32's range":
  // alpha * acc + beta * c before the bias (acc = 3e38, c = -acc, bias = 3e38), and the fp8
  // factor alpha * scale_a * scale_b formed before it scales the sum (scales 1e20, alpha 1e-35).
  const int64_t M = 8, N = 8, K = 16;
  HostTensor a(DT::BF16, {M, K}), b(DT::BF16, {K, N}), c(DT::F32, {M, N}), bias(DT::F32, {N}),
      d(DT::F32, {M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) a.set({m, k}, k == 0 ? 1.5e19 : 0.0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) b.set({k, n}, k == 0 ? 2e19 : 0.0);
  const double acc = a.get({0, 0}) * b.get({0, 0});
  REQUIRE(acc > 2.9e38);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) c.set({m, n}, -acc);
  for (int64_t n = 0; n < N; ++n) bias.set({n}, 3e38);
  d.poison();
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.beta = 1.0f;
  REQUIRE(fk_gemm(fkcpu::cpu_context(1), nullptr, &p, &a, &b, &c, &bias, &d) ==
          FK_SUCCESS);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) CHECK(d.get({m, n}) == bias.get({n}));

  HostTensor a8(DT::E4M3, {M, K}), b8(DT::E4M3, {N, K}), sa(DT::F32, {1}), sb(DT::F32, {N}),
      d8(DT::F32, {M, N});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) a8.set({m, k}, 448.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) b8.set({n, k}, 448.0);
  sa.set({0}, 1e20);
  for (int64_t n = 0; n < N; ++n) sb.set({n}, 1e20);
  d8.poison();
  fk_gemm_params_init(&p);
  p.trans_b = 1;
  p.alpha = 1e-35f;
  REQUIRE(fk_gemm_scaled(fkcpu::cpu_context(1), nullptr, &p, &a8, &b8, &sa, &sb,
                         nullptr, nullptr, &d8) == FK_SUCCESS);
  const double want = double((1e-35f * 1e20f) * 1e20f) * 16.0 * 448.0 * 448.0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) CHECK(std::fabs(d8.get({m, n}) - want) <= 1e-5 * want);
}

TEST_CASE("cpu gemm: overlapping rows of an input (a sliding-window view)", "[cpu][gemm]") {
  // Inputs may share addresses between elements (read-only views): row m of a starts 8
  // elements after row m - 1 with K = 64. The Hopper kernel leaves such operands to the others.
  auto rng = fkcpu::rng_for(4200);
  const int64_t M = 40, N = 24, K = 64;
  HostTensor a(DT::BF16, {M, K}, {8, 1}), b(DT::BF16, {K, N}), d(DT::F32, {M, N});
  a.fill_normal(rng);
  b.fill_normal(rng);
  d.poison();
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  REQUIRE(fk_gemm(fkcpu::cpu_context(2), nullptr, &p, &a, &b, nullptr, nullptr, &d) ==
          FK_SUCCESS);
  std::vector<double> ref(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += a.get({m, k}) * b.get({k, n});
      ref[size_t(m * N + n)] = acc;
    }
  check_output(d, ref, DT::F32, "d");
}
