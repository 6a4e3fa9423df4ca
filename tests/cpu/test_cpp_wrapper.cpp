// The header-only C++ layer (include/flashkit/flashkit.hpp) as a C++ server uses it: views over
// const (input) data and over 16-bit/fp8 bit patterns, every op the C ABI has (gemm_scaled
// included), and one Context shared by several threads, each getting its own fk::Error.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "flashkit/flashkit.hpp"

namespace {

// d[i][j] = sum_k a[i][k] * b[k][j] in double, row-major.
std::vector<double> matmul(const std::vector<float>& a, const std::vector<float>& b, int M, int N,
                           int K) {
  std::vector<double> d(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) d[size_t(i) * N + j] += double(a[size_t(i) * K + k]) * b[size_t(k) * N + j];
  return d;
}

std::vector<float> iota_values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * float(int(i % 7) - 3);
  return v;
}

}  // namespace

TEST_CASE("C++ wrapper: views over const input data", "[cpp]") {
  const int M = 3, N = 4, K = 5;
  const std::vector<float> a = iota_values(size_t(M) * K, 0.5f);  // a server's const weights
  const std::vector<float> b = iota_values(size_t(K) * N, 0.25f);
  std::vector<float> d(size_t(M) * N, -1.0f);
  fk::Context ctx = fk::Context::cpu(1);
  const fk_gemm_params_t p = fk::gemm_params();
  ctx.gemm(&p, fk::Tensor::cpu(a.data(), {M, K}), fk::Tensor::cpu(b.data(), {K, N}), nullptr,
           nullptr, fk::Tensor::cpu(d.data(), {M, N}));
  const std::vector<double> ref = matmul(a, b, M, N, K);
  for (size_t i = 0; i < d.size(); ++i) CHECK(d[i] == Approx(ref[i]).margin(1e-5));

  const std::vector<int32_t> cu = {0, 2, 5};
  fk::Tensor t = fk::Tensor::cpu(cu.data(), {3});
  CHECK(t.get()->dtype.code == kDLInt);
  CHECK(t.get()->data == static_cast<const void*>(cu.data()));
}

TEST_CASE("C++ wrapper: views of any dtype (f16/bf16/fp8 bit patterns)", "[cpp]") {
  // bf16 bit patterns of 1.0 and 2.0; attention over them must accept the view.
  const std::vector<uint16_t> ones(2 * 1 * 1 * 8, 0x3F80);
  std::vector<uint16_t> out(ones.size(), 0);
  fk::Tensor q = fk::Tensor::cpu(ones.data(), fk::dtype::bf16, {2, 1, 1, 8});
  fk::Tensor o = fk::Tensor::cpu(out.data(), fk::dtype::bf16, {2, 1, 1, 8});
  CHECK(q.get()->dtype.code == kDLBfloat);
  CHECK(q.get()->dtype.bits == 16);
  fk::Context ctx = fk::Context::cpu(1);
  const fk_attention_params_t p = fk::attention_params();
  ctx.attention_forward(&p, q, q, q, nullptr, nullptr, o);
  for (uint16_t x : out) CHECK(x == 0x3F80);  // softmax over equal keys of value 1 gives 1

  // Strides go with any dtype, and the named dtypes are DLPack's.
  fk::Tensor s = fk::Tensor::cpu(ones.data(), fk::dtype::f16, {2, 4}, {8, 1});
  CHECK(s.get()->strides[0] == 8);
  CHECK(fk::dtype::f32.code == kDLFloat);
  CHECK(fk::dtype::f32.bits == 32);
  CHECK(fk::dtype::i32.code == kDLInt);
  CHECK(fk::dtype::float8_e4m3fn.code == FK_DLPACK_FLOAT8_E4M3FN);
  CHECK(fk::dtype::float8_e5m2.code == FK_DLPACK_FLOAT8_E5M2);
  CHECK(fk::dtype::float8_e5m2.bits == 8);
}

TEST_CASE("C++ wrapper: gemm_scaled and its select_kernel", "[cpp]") {
  const int M = 2, N = 3, K = 4;
  const std::vector<float> a = iota_values(size_t(M) * K, 1.0f), b = iota_values(size_t(K) * N, 0.5f);
  const std::vector<float> scale_a = {2.0f, -1.0f};  // per row of A
  const std::vector<float> scale_b = {0.5f};         // per tensor
  std::vector<float> d(size_t(M) * N, -1.0f);
  fk::Context ctx = fk::Context::cpu(1);
  const fk_gemm_params_t p = fk::gemm_params();
  const fk::Tensor ta = fk::Tensor::cpu(a.data(), {M, K}), tb = fk::Tensor::cpu(b.data(), {K, N});
  const fk::Tensor sa = fk::Tensor::cpu(scale_a.data(), {M}), sb = fk::Tensor::cpu(scale_b.data(), {1});
  const fk::Tensor td = fk::Tensor::cpu(d.data(), {M, N});
  CHECK(ctx.gemm_scaled_select_kernel(&p, ta, tb, sa, sb, nullptr, nullptr, td) == "cpu.gemm");
  // The CPU backend takes no scratch: no workspace needed.
  CHECK(ctx.gemm_scaled_workspace_size(&p, ta, tb, sa, sb, nullptr, nullptr, td) == 0);
  CHECK(ctx.gemm_workspace_size(&p, ta, tb, nullptr, nullptr, td) == 0);
  ctx.gemm_scaled(&p, ta, tb, sa, sb, nullptr, nullptr, td);
  const std::vector<double> ref = matmul(a, b, M, N, K);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      CHECK(d[size_t(i) * N + j] == Approx(scale_a[size_t(i)] * 0.5 * ref[size_t(i) * N + j]).margin(1e-5));

  // A wrong scale throws fk::Error naming it; d is untouched.
  const std::vector<float> bad_scale = {1.0f, 1.0f, 1.0f};
  std::fill(d.begin(), d.end(), -1.0f);
  try {
    ctx.gemm_scaled(&p, ta, tb, fk::Tensor::cpu(bad_scale.data(), {3}), sb, nullptr, nullptr, td);
    FAIL("no error");
  } catch (const fk::Error& e) {
    CHECK(e.status() == FK_ERROR_SHAPE_MISMATCH);
    CHECK(std::string(e.what()).find("scale_a") != std::string::npos);
  }
  for (float x : d) CHECK(x == -1.0f);
}

TEST_CASE("C++ wrapper: one Context shared by threads, errors per thread", "[cpp]") {
  const int M = 9, N = 7, K = 11;
  const fk::Context ctx = fk::Context::cpu(2);
  std::atomic<int> wrong{0};
  auto worker = [&](int seed) {
    const std::vector<float> a = iota_values(size_t(M) * K, 0.1f * float(seed + 1));
    const std::vector<float> b = iota_values(size_t(K) * N, 0.2f);
    std::vector<float> d(size_t(M) * N);
    const std::vector<double> ref = matmul(a, b, M, N, K);
    const fk_gemm_params_t p = fk::gemm_params();
    for (int it = 0; it < 100; ++it) {
      ctx.gemm(&p, fk::Tensor::cpu(a.data(), {M, K}), fk::Tensor::cpu(b.data(), {K, N}), nullptr,
               nullptr, fk::Tensor::cpu(d.data(), {M, N}));
      for (size_t i = 0; i < d.size(); ++i)
        if (std::fabs(d[i] - ref[i]) > 1e-4) ++wrong;
      // Each thread's error carries the message of its own failure (a's K differs per thread).
      const int bad_k = K - 1 - seed;
      try {
        ctx.gemm(&p, fk::Tensor::cpu(a.data(), {M, bad_k}), fk::Tensor::cpu(b.data(), {K, N}),
                 nullptr, nullptr, fk::Tensor::cpu(d.data(), {M, N}));
        ++wrong;
      } catch (const fk::Error& e) {
        if (std::string(e.what()).find("a gives K = " + std::to_string(bad_k)) == std::string::npos) ++wrong;
      }
    }
  };
  std::thread t1(worker, 0), t2(worker, 1);
  t1.join();
  t2.join();
  CHECK(wrong == 0);
}

// A plan made from a Context keeps that context alive (shared ownership), so the C ABI's order
// (plans first) holds whatever the order of the C++ objects. An audit found that a plan
// returned from a factory past its local Context, or one whose Context was reassigned, read
// the destroyed context (ASan: heap-use-after-free in fk_fftconv_forward).
namespace {
fk::FFTConvPlan causal_plan(int64_t channels, int64_t seqlen, int64_t filter_len) {
  fk::Context local = fk::Context::cpu(1);  // destroyed at return; the plan keeps its context
  fk_fftconv_plan_options_t o = fk::fftconv_plan_options();
  o.channels = channels;
  o.seqlen = seqlen;
  o.filter_len = filter_len;
  return fk::FFTConvPlan(local, o);
}

// y = causal conv(u, k) per channel, float64, against the plan's output.
void check_causal_conv(const fk::FFTConvPlan& plan, int64_t H, int64_t L, int64_t F, float seed) {
  std::vector<float> u = iota_values(size_t(H * L), 0.37f * seed), k = iota_values(size_t(H * F), 0.11f * seed);
  std::vector<float> y(size_t(H * L), -1.0f);
  plan.forward(fk::Tensor::cpu(u.data(), {1, H, L}), fk::Tensor::cpu(k.data(), {H, F}), nullptr, nullptr,
               nullptr, fk::Tensor::cpu(y.data(), {1, H, L}));
  double worst = 0.0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t t = 0; t < L; ++t) {
      double want = 0.0;
      for (int64_t j = 0; j < F && j <= t; ++j) want += double(k[size_t(h * F + j)]) * u[size_t(h * L + t - j)];
      worst = std::max(worst, std::fabs(double(y[size_t(h * L + t)]) - want) / (1.0 + std::fabs(want)));
    }
  CHECK(worst <= 1e-5);
}
}  // namespace

TEST_CASE("C++ wrapper: a plan keeps its Context alive", "[cpp]") {
  fk_fftconv_plan_options_t o = fk::fftconv_plan_options();
  o.channels = 3;
  o.seqlen = 20;
  o.filter_len = 5;
  SECTION("made from a temporary Context") {
    fk::FFTConvPlan plan(fk::Context::cpu(1), o);
    CHECK(plan.options().fft_size == 32);
    check_causal_conv(plan, 3, 20, 5, 1.0f);
  }
  SECTION("returned from a function past its local Context") {
    fk::FFTConvPlan plan = causal_plan(3, 20, 5);
    check_causal_conv(plan, 3, 20, 5, 2.0f);
  }
  SECTION("its Context reassigned, moved from or destroyed first") {
    fk::Context ctx = fk::Context::cpu(1);
    fk::FFTConvPlan plan(ctx, o);
    ctx = fk::Context::cpu(2);  // the first context lives on in the plan
    check_causal_conv(plan, 3, 20, 5, 3.0f);
    fk::FFTConvPlan second(ctx, o);
    { fk::Context gone = std::move(ctx); }
    CHECK_FALSE(ctx);
    check_causal_conv(second, 3, 20, 5, 4.0f);
    second = std::move(plan);  // destroys the second plan, then drops the second context
    check_causal_conv(second, 3, 20, 5, 5.0f);
    CHECK_FALSE(plan);
  }
  SECTION("adopted with its Context") {
    fk_fftconv_plan_t* raw = nullptr;
    fk::FFTConvPlan plan = fk::FFTConvPlan::adopt(nullptr);
    {
      fk::Context ctx = fk::Context::cpu(1);
      fk::check(fk_fftconv_plan_create(ctx.get(), &o, &raw));
      plan = fk::FFTConvPlan::adopt(raw, ctx);
    }
    check_causal_conv(plan, 3, 20, 5, 6.0f);
  }
  SECTION("release() hands over the plan with its share of the context") {
    std::shared_ptr<void> keep;
    fk_fftconv_plan_t* raw = causal_plan(3, 20, 5).release(keep);  // the only share: now `keep`
    REQUIRE(raw != nullptr);
    CHECK(keep);
    fk::FFTConvPlan again = fk::FFTConvPlan::adopt(raw);  // destroyed before `keep`
    check_causal_conv(again, 3, 20, 5, 7.0f);
    std::shared_ptr<void> none;
    fk::FFTConvPlan adopted = fk::FFTConvPlan::adopt(nullptr);
    CHECK(adopted.release(none) == nullptr);
    CHECK_FALSE(none);
  }
  SECTION("a moved-from Context makes no plan") {
    fk::Context ctx = fk::Context::cpu(1);
    fk::Context other = std::move(ctx);
    CHECK_THROWS_AS(fk::FFTConvPlan(ctx, o), fk::Error);
    CHECK(fk::Context::adopt(nullptr).get() == nullptr);
  }
}

// A pointer to an element type without its own overload, with a braced shape, would bind to
// cpu(const void*, DLDataType, ...) and read the shape as the dtype: refused at compile time.
template <class P, class = void>
struct CpuTakesShapeAndStrides : std::false_type {};
template <class P>
struct CpuTakesShapeAndStrides<
    P, decltype(void(fk::Tensor::cpu(std::declval<P>(), std::vector<int64_t>{4, 4},
                                     std::vector<int64_t>{4, 1})))> : std::true_type {};

TEST_CASE("C++ wrapper: Tensor views refuse what the C library would misread", "[cpp]") {
  static_assert(!CpuTakesShapeAndStrides<const double*>::value, "double* with a shape");
  static_assert(!CpuTakesShapeAndStrides<const uint16_t*>::value, "uint16_t* without a dtype");
  static_assert(CpuTakesShapeAndStrides<const float*>::value, "float* keeps its overload");
  std::vector<float> a(6, 1.0f);
  // Fewer strides than dimensions: the library would read past the vector.
  try {
    fk::Tensor t = fk::Tensor::cpu(a.data(), {2, 3}, {1});
    FAIL("a short strides list was accepted");
  } catch (const fk::Error& e) {
    CHECK(e.status() == FK_ERROR_BAD_STRIDES);
    CHECK(std::string(e.what()).find("1 strides for rank 2") != std::string::npos);
  }
  // A moved-from view is empty (no data), so passing it by mistake is refused, not a view of
  // the first element.
  fk::Tensor t = fk::Tensor::cpu(a.data(), {2, 3});
  fk::Tensor u = std::move(t);
  CHECK(u.get()->data == a.data());
  CHECK(t.get()->data == nullptr);  // NOLINT(bugprone-use-after-move): the point of the test
  CHECK(t.get()->ndim == 0);
  fk::Tensor w;
  w = std::move(u);
  CHECK(u.get()->data == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK(w.get()->data == a.data());
  CHECK(w.shape() == std::vector<int64_t>{2, 3});
}

TEST_CASE("C++ wrapper: attention over a paged KV cache", "[cpp][kvcache]") {
  // One sequence, one head, head_dim 2; pool of 3 pages of 2 keys; the sequence's 3 keys are
  // rows 0-1 of page 2 and row 0 of page 0 (row 1 of page 0 and page 1 are never read).
  const std::vector<float> q = {0.7f, -1.3f};
  const std::vector<float> kc = {0.5f, 2.0f, 9.0f, 9.0f, 9.0f, 9.0f, 9.0f, 9.0f, -1.0f, 0.25f, 1.5f, -0.5f};
  const std::vector<float> vc = {3.0f, -2.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f, 7.0f, 1.0f, 0.5f, -4.0f, 2.5f};
  const std::vector<int32_t> table = {2, 0}, lens = {3};
  std::vector<float> out(2, -1.0f);
  fk::Context ctx = fk::Context::cpu(1);
  const fk_attention_params_t p = fk::attention_params();
  const fk::Tensor tq = fk::Tensor::cpu(q.data(), {1, 1, 1, 2});
  const fk::Tensor tk = fk::Tensor::cpu(kc.data(), {3, 2, 1, 2}), tv = fk::Tensor::cpu(vc.data(), {3, 2, 1, 2});
  const fk::Tensor tl = fk::Tensor::cpu(lens.data(), {1}), tt = fk::Tensor::cpu(table.data(), {1, 2});
  const fk::Tensor to = fk::Tensor::cpu(out.data(), {1, 1, 1, 2});
  CHECK(ctx.attention_kvcache_select_kernel(&p, tq, tk, tv, tl, tt, to) == "cpu.attention");
  CHECK(ctx.attention_kvcache_workspace_size(&p, tq, tk, tv, tl, tt, to) == 0);
  ctx.attention_kvcache_forward(&p, tq, tk, tv, tl, tt, to);
  // Keys in order: page 2 rows 0, 1, then page 0 row 0.
  const double keys[3][2] = {{-1.0, 0.25}, {1.5, -0.5}, {0.5, 2.0}};
  const double vals[3][2] = {{1.0, 0.5}, {-4.0, 2.5}, {3.0, -2.0}};
  double w[3], sum = 0, ref[2] = {0, 0};
  for (int j = 0; j < 3; ++j) {
    w[j] = std::exp((0.7 * keys[j][0] - 1.3 * keys[j][1]) / std::sqrt(2.0));
    sum += w[j];
  }
  for (int j = 0; j < 3; ++j)
    for (int x = 0; x < 2; ++x) ref[x] += w[j] / sum * vals[j][x];
  CHECK(out[0] == Approx(ref[0]).margin(1e-5));
  CHECK(out[1] == Approx(ref[1]).margin(1e-5));
  // A page index outside the pool is refused on the CPU backend, naming the table.
  const std::vector<int32_t> bad = {2, 3};
  CHECK_THROWS_WITH(ctx.attention_kvcache_forward(&p, tq, tk, tv, tl,
                                                  fk::Tensor::cpu(bad.data(), {1, 2}), to),
                    Catch::Contains("block_table"));
}

namespace {
struct LogSeen {
  std::atomic<int> debug{0};
};
void count_debug(fk_log_level_t level, const char*, void* user_data) {
  if (level == FK_LOG_DEBUG) static_cast<LogSeen*>(user_data)->debug.fetch_add(1);
}
void set_inside(fk_log_level_t, const char*, void* user_data) {
  // Called from inside a delivery: the library refuses, the wrapper throws; nothing escapes.
  try {
    fk::set_log_callback(nullptr);
  } catch (const fk::Error& e) {
    if (e.category() == FK_ERROR_INVALID_ARGUMENT) static_cast<LogSeen*>(user_data)->debug.fetch_add(100);
  }
}
}  // namespace

TEST_CASE("C++ wrapper: a capturing callable as the log callback", "[cpp]") {
  fk::Context ctx = fk::Context::cpu(1);
  const std::vector<float> a = iota_values(6, 0.5f), b = iota_values(6, -0.25f);
  std::vector<float> d(4, -1.0f);
  const fk::Tensor ta = fk::Tensor::cpu(a.data(), {2, 3}), tb = fk::Tensor::cpu(b.data(), {3, 2});
  const fk::Tensor td = fk::Tensor::cpu(d.data(), {2, 2});
  const fk_gemm_params_t gp = fk::gemm_params();
  auto check_product = [&] {
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        double want = 0.0;
        for (int k = 0; k < 3; ++k) want += double(a[size_t(i * 3 + k)]) * b[size_t(k * 2 + j)];
        CHECK(d[size_t(i * 2 + j)] == Approx(want).margin(1e-5));
      }
  };
  auto token = std::make_shared<int>(0);
  std::vector<std::string> lines;
  fk::set_log_callback([token, &lines](fk_log_level_t level, const char* message) {
    if (level == FK_LOG_DEBUG) lines.emplace_back(message);
  }, FK_LOG_DEBUG);
  CHECK(token.use_count() == 2);
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  check_product();
  REQUIRE_FALSE(lines.empty());
  CHECK(lines.back().find("cpu.gemm") != std::string::npos);

  // A throwing callable: dropped by the wrapper, so the call still runs (with a function
  // pointer the library fails the call with FK_ERROR_INTERNAL). Installing it releases the
  // previous callable's captures.
  int thrown = 0;
  fk::set_log_callback([&thrown](fk_log_level_t, const char*) {
    ++thrown;
    throw std::runtime_error("a logger that throws");
  }, FK_LOG_DEBUG);
  CHECK(token.use_count() == 1);
  std::fill(d.begin(), d.end(), -1.0f);
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(thrown >= 1);
  check_product();

  // From inside the callable: the library refuses (fk::Error), no deadlock, and it stays.
  int refused = 0;
  const auto remove_from_inside = [&refused](fk_log_level_t, const char*) {
    try {
      fk::set_log_callback(nullptr);
    } catch (const fk::Error&) {
      ++refused;
    }
  };
  fk::set_log_callback(remove_from_inside, FK_LOG_DEBUG);
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(refused >= 1);
  const int before = refused;
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(refused > before);

  // A move-only callable; an empty std::function removes the callback.
  int moved = 0;
  auto owned = std::make_unique<int>(5);
  fk::set_log_callback([&moved, p = std::move(owned)](fk_log_level_t, const char*) { moved += *p; },
                       FK_LOG_DEBUG);
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(moved >= 5);
  fk::set_log_callback(std::function<void(fk_log_level_t, const char*)>(), FK_LOG_DEBUG);
  const int after_empty = moved;
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(moved == after_empty);

  // A refused install changes nothing, and the refused callable is never called: an invalid
  // level (the library's error message goes to the installed callable), and an install from
  // inside a delivery.
  int installed_errors = 0, refused_calls = 0, inner_refusals = 0;
  fk::set_log_callback([&](fk_log_level_t level, const char*) {
    if (level == FK_LOG_ERROR) ++installed_errors;
    try {
      fk::set_log_callback([&refused_calls](fk_log_level_t, const char*) { ++refused_calls; },
                           FK_LOG_DEBUG);
    } catch (const fk::Error&) {
      ++inner_refusals;
    }
  }, FK_LOG_DEBUG);
  CHECK_THROWS_AS(fk::set_log_callback([&refused_calls](fk_log_level_t, const char*) { ++refused_calls; },
                                       fk_log_level_t(9)),
                  fk::Error);
  CHECK(installed_errors == 1);
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(inner_refusals >= 2);
  CHECK(refused_calls == 0);

  // An invalid level changes nothing; nullptr removes the callable.
  fk::set_log_callback(remove_from_inside, FK_LOG_DEBUG);
  CHECK_THROWS_AS(fk::set_log_callback([](fk_log_level_t, const char*) {}, fk_log_level_t(9)), fk::Error);
  const int kept = refused;
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(refused > kept);
  fk::set_log_callback(nullptr);
  const int removed = refused;
  ctx.gemm(&gp, ta, tb, nullptr, nullptr, td);
  CHECK(refused == removed);
}

namespace {
void throwing_logger(fk_log_level_t, const char*, void* user_data) {
  ++*static_cast<int*>(user_data);
  throw std::runtime_error("a C++ logger that throws on every message");
}
}  // namespace

TEST_CASE("C++ wrapper: a function-pointer callback that throws does not fail the call", "[cpp]") {
  // The library drops the exception: the logged call goes on (before, it failed with
  // FK_ERROR_INTERNAL, and with an ERROR-level callback the exception left the C call).
  fk::Context ctx = fk::Context::cpu(1);
  const std::vector<float> a = iota_values(4, 0.5f);
  std::vector<float> d(4, -1.0f);
  const fk::Tensor ta = fk::Tensor::cpu(a.data(), {2, 2}), td = fk::Tensor::cpu(d.data(), {2, 2});
  const fk_gemm_params_t gp = fk::gemm_params();
  int calls = 0;
  fk::set_log_callback(&throwing_logger, FK_LOG_DEBUG, &calls);
  ctx.gemm(&gp, ta, ta, nullptr, nullptr, td);
  CHECK(calls >= 1);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      CHECK(d[size_t(i * 2 + j)] == Approx(double(a[size_t(i * 2)]) * a[size_t(j)] +
                                           double(a[size_t(i * 2 + 1)]) * a[size_t(2 + j)]).margin(1e-6));
  // A failing call logs at ERROR level: the callback throws there too, and the caller still
  // gets the library's own error.
  std::vector<float> b(6, 1.0f);
  try {
    ctx.gemm(&gp, ta, fk::Tensor::cpu(b.data(), {3, 2}), nullptr, nullptr, td);
    FAIL("a K mismatch was accepted");
  } catch (const fk::Error& e) {
    CHECK(e.category() == FK_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("K is 3") != std::string::npos);
  }
  fk::set_log_callback(nullptr);
}

TEST_CASE("C++ wrapper: version, names, log callback, adopting a plan, strided int32 views", "[cpp]") {
  CHECK(fk::version() == fk_get_version());
  CHECK(fk::version_number() == unsigned(FK_VERSION_NUMBER));
  CHECK(std::string(fk::backend_name(FK_BACKEND_CPU)) == "cpu");
  CHECK(std::string(fk::kernel_family_name(FK_KERNEL_FAMILY_SM90)) == fk_kernel_family_name(FK_KERNEL_FAMILY_SM90));

  fk::Context ctx = fk::Context::cpu(1);
  std::vector<float> a = iota_values(4, 0.5f), d(4);
  const fk::Tensor ta = fk::Tensor::cpu(a.data(), {2, 2});
  const fk::Tensor td = fk::Tensor::cpu(d.data(), {2, 2});
  const fk_gemm_params_t gp = fk::gemm_params();
  LogSeen seen;
  fk::set_log_callback(count_debug, FK_LOG_DEBUG, &seen);
  ctx.gemm(&gp, ta, ta, nullptr, nullptr, td);
  CHECK(seen.debug.load() >= 1);  // the variant line
  fk::set_log_callback(set_inside, FK_LOG_DEBUG, &seen);
  ctx.gemm(&gp, ta, ta, nullptr, nullptr, td);
  CHECK(seen.debug.load() >= 101);  // the inner call was refused with an fk::Error
  fk::set_log_callback(nullptr);
  const int n = seen.debug.load();
  ctx.gemm(&gp, ta, ta, nullptr, nullptr, td);
  CHECK(seen.debug.load() == n);  // removed
  try {
    fk::set_log_callback(count_debug, fk_log_level_t(9), &seen);
    FAIL("an invalid level was accepted");
  } catch (const fk::Error& e) {
    CHECK(e.status() == FK_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("max_level") != std::string::npos);
  }

  // A plan made through the C API, owned by the wrapper.
  fk_fftconv_plan_options_t o = fk::fftconv_plan_options();
  o.channels = 1;
  o.seqlen = 8;
  o.filter_len = 2;
  fk_fftconv_plan_t* raw = nullptr;
  fk::check(fk_fftconv_plan_create(ctx.get(), &o, &raw));
  fk::FFTConvPlan plan = fk::FFTConvPlan::adopt(raw);
  CHECK(plan.get() == raw);
  CHECK(plan.options().fft_size >= 8);
  std::vector<float> u = iota_values(8, 0.25f), k = {1.0f, 0.5f}, y(8);
  plan.forward(fk::Tensor::cpu(u.data(), {1, 1, 8}), fk::Tensor::cpu(k.data(), {1, 2}), nullptr,
               nullptr, nullptr, fk::Tensor::cpu(y.data(), {1, 1, 8}));
  for (int t = 0; t < 8; ++t) {
    const double want = double(k[0]) * u[size_t(t)] + (t > 0 ? double(k[1]) * u[size_t(t - 1)] : 0.0);
    CHECK(std::fabs(y[size_t(t)] - want) <= 1e-5);
  }

  // A row-padded int32 view: cu_seqlens taken from every other element of a buffer.
  std::vector<int32_t> padded = {0, -1, 3, -1, 5, -1};
  const fk::Tensor cu = fk::Tensor::cpu(padded.data(), {3}, {2});
  const DLTensor* dl = cu;
  CHECK(dl->strides[0] == 2);
  CHECK(dl->dtype.code == kDLInt);
}
