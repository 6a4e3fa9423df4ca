// Monarch multiply and block-diagonal linear on the CPU backend against the float64 reference:
// square and rectangular blocks, bias, odd token counts, padded rows, every dtype. One case
// also checks the reference itself against Dao et al.'s dense form M = P L P^T R for square
// blocks, so the index mapping is pinned by two independent derivations.
#include "cpu_test_helpers.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::HostTensor;

struct MonarchCase {
  int64_t tokens = 37;
  int64_t nblocks1 = 4, q = 4, p = 4;  // w1 (nblocks1, q, p)
  int64_t nblocks2 = 4, s = 4, r = 4;  // w2 (nblocks2, s, r)
  bool with_bias = false;
  DT dtype = DT::F32, bias_dt = DT::F32;
  int64_t pad = 0;  // extra elements per row of x and out
  int threads = 2;
};

HostTensor rows(DT t, int64_t n, int64_t width, int64_t pad) {
  if (pad == 0) return HostTensor(t, {n, width});
  return HostTensor(t, {n, width}, {width + pad, 1});
}

void run_monarch(const MonarchCase& c, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  const int64_t nin = c.nblocks1 * c.p, nout = c.nblocks2 * c.s;
  HostTensor x = rows(c.dtype, c.tokens, nin, c.pad);
  HostTensor w1(c.dtype, {c.nblocks1, c.q, c.p}), w2(c.dtype, {c.nblocks2, c.s, c.r});
  HostTensor bias(c.bias_dt, {nout});
  HostTensor out = rows(c.dtype, c.tokens, nout, c.pad + 1);
  x.fill_normal(rng);
  w1.fill_normal(rng, 1.0 / std::sqrt(double(c.p)));
  w2.fill_normal(rng, 1.0 / std::sqrt(double(c.r)));
  bias.fill_normal(rng);
  out.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  const fk_status_t st = fk_monarch(fkcpu::cpu_context(c.threads), nullptr, &prm, &x, &w1, &w2,
                                    c.with_bias ? &bias : nullptr, &out);
  INFO("fk_monarch: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  const std::vector<double> bv = bias.to_vector();
  const std::vector<double> ref =
      fkref::monarch(x.to_vector(), w1.to_vector(), w2.to_vector(), c.with_bias ? &bv : nullptr,
                     c.tokens, c.nblocks1, c.q, c.p, c.nblocks2, c.s, c.r);
  check_output(out, ref, c.dtype, "out");
}

void run_blockdiag(const MonarchCase& c, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  const int64_t nin = c.nblocks1 * c.p, nout = c.nblocks1 * c.q;
  HostTensor x = rows(c.dtype, c.tokens, nin, c.pad);
  HostTensor w(c.dtype, {c.nblocks1, c.q, c.p});
  HostTensor bias(c.bias_dt, {nout});
  HostTensor out = rows(c.dtype, c.tokens, nout, c.pad + 2);
  x.fill_normal(rng);
  w.fill_normal(rng, 1.0 / std::sqrt(double(c.p)));
  bias.fill_normal(rng);
  out.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  const fk_status_t st = fk_blockdiag_linear(fkcpu::cpu_context(c.threads), nullptr, &prm, &x,
                                             &w, c.with_bias ? &bias : nullptr, &out);
  INFO("fk_blockdiag_linear: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  const std::vector<double> bv = bias.to_vector();
  const std::vector<double> ref = fkref::blockdiag(x.to_vector(), w.to_vector(),
                                                   c.with_bias ? &bv : nullptr, c.tokens,
                                                   c.nblocks1, c.q, c.p);
  check_output(out, ref, c.dtype, "out");
}

}  // namespace

TEST_CASE("cpu monarch: square blocks, every dtype", "[cpu][monarch]") {
  uint64_t tag = 2000;
  for (DT dt : fkcpu::kFloatTypes)
    for (int64_t b : {2, 8, 16})
      for (int bias = 0; bias < 2; ++bias) {
        MonarchCase c;
        c.nblocks1 = c.q = c.p = c.nblocks2 = c.s = c.r = b;
        c.dtype = dt;
        c.with_bias = bias;
        c.bias_dt = bias ? DT::BF16 : DT::F32;
        DYNAMIC_SECTION(fktest::dt_name(dt) << " b=" << b << " bias=" << bias) {
          run_monarch(c, ++tag);
        }
      }
}

TEST_CASE("cpu monarch: rectangular blocks", "[cpu][monarch]") {
  struct Shape {
    int64_t nb1, q, p, nb2, s, r;
  };
  // nb1 * q == nb2 * r in every row.
  const Shape shapes[] = {{4, 10, 6, 5, 7, 8},  {2, 6, 3, 3, 5, 4},  {8, 4, 16, 4, 16, 8},
                          {1, 12, 5, 3, 2, 4},  {6, 1, 2, 2, 9, 3},  {3, 8, 8, 24, 1, 1},
                          {5, 3, 7, 1, 11, 15}};
  uint64_t tag = 2100;
  for (const Shape& sh : shapes)
    for (DT dt : {DT::F32, DT::F16}) {
      MonarchCase c;
      c.nblocks1 = sh.nb1;
      c.q = sh.q;
      c.p = sh.p;
      c.nblocks2 = sh.nb2;
      c.s = sh.s;
      c.r = sh.r;
      c.dtype = dt;
      c.with_bias = true;
      c.tokens = 19;
      DYNAMIC_SECTION(sh.nb1 << "x" << sh.q << "x" << sh.p << " / " << sh.nb2 << "x" << sh.s
                             << "x" << sh.r << " " << fktest::dt_name(dt)) {
        run_monarch(c, ++tag);
      }
    }
}

TEST_CASE("cpu monarch: token counts, padded rows, threads", "[cpu][monarch]") {
  uint64_t tag = 2200;
  for (int64_t tokens : {1, 15, 16, 17, 101})
    for (int threads : {1, 3}) {
      MonarchCase c;
      c.tokens = tokens;
      c.pad = 5;
      c.threads = threads;
      c.dtype = DT::BF16;
      c.with_bias = true;
      c.nblocks1 = 4;
      c.q = 6;
      c.p = 5;
      c.nblocks2 = 3;
      c.s = 7;
      c.r = 8;
      DYNAMIC_SECTION("tokens " << tokens << " threads " << threads) { run_monarch(c, ++tag); }
    }
}

TEST_CASE("cpu blockdiag_linear", "[cpu][monarch]") {
  uint64_t tag = 2300;
  struct Shape {
    int64_t nb, q, p;
  };
  const Shape shapes[] = {{4, 16, 16}, {3, 7, 5}, {1, 33, 20}, {8, 2, 9}, {5, 1, 1}};
  for (const Shape& sh : shapes)
    for (DT dt : fkcpu::kFloatTypes)
      for (int bias = 0; bias < 2; ++bias) {
        MonarchCase c;
        c.nblocks1 = sh.nb;
        c.q = sh.q;
        c.p = sh.p;
        c.dtype = dt;
        c.with_bias = bias;
        c.bias_dt = dt;
        c.tokens = 23;
        c.pad = bias ? 3 : 0;
        DYNAMIC_SECTION(sh.nb << "x" << sh.q << "x" << sh.p << " " << fktest::dt_name(dt)
                              << " bias=" << bias) {
          run_blockdiag(c, ++tag);
        }
      }
}

TEST_CASE("reference monarch equals Dao et al.'s dense M = P L P^T R (square blocks)",
          "[cpu][monarch][reference]") {
  // P is the reshape-transpose permutation of n = b*b: (P x)[i*b + j] = x[j*b + i]
  // (an involution, so P^T = P); R = blockdiag(w1), L = blockdiag(w2).
  const int64_t b = 4, n = b * b;
  auto rng = fkcpu::rng_for(2400);
  std::normal_distribution<double> nd;
  std::vector<double> w1(static_cast<size_t>(n * b)), w2(static_cast<size_t>(n * b)),
      x(static_cast<size_t>(n));
  for (auto& v : w1) v = nd(rng);
  for (auto& v : w2) v = nd(rng);
  for (auto& v : x) v = nd(rng);
  auto blockdiag_dense = [&](const std::vector<double>& w) {
    std::vector<double> m(size_t(n * n), 0.0);
    for (int64_t i = 0; i < b; ++i)
      for (int64_t a = 0; a < b; ++a)
        for (int64_t c = 0; c < b; ++c) m[size_t((i * b + a) * n + i * b + c)] = w[size_t((i * b + a) * b + c)];
    return m;
  };
  std::vector<double> P(size_t(n * n), 0.0);
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < b; ++j) P[size_t((i * b + j) * n + j * b + i)] = 1.0;
  auto matvec = [&](const std::vector<double>& m, const std::vector<double>& v) {
    std::vector<double> y(size_t(n), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) y[size_t(i)] += m[size_t(i * n + j)] * v[size_t(j)];
    return y;
  };
  const std::vector<double> dense =
      matvec(P, matvec(blockdiag_dense(w2), matvec(P, matvec(blockdiag_dense(w1), x))));
  const std::vector<double> ref = fkref::monarch(x, w1, w2, nullptr, 1, b, b, b, b, b, b);
  for (int64_t i = 0; i < n; ++i) CHECK(ref[size_t(i)] == Approx(dense[size_t(i)]).margin(1e-12));
}
