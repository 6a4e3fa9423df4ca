// FFT convolution on the CPU backend against direct float64 summation: causal, circular and
// bidirectional modes; non-power-of-two seqlen; automatic and explicit fft_size; short filters
// (the direct path) and long ones (the FFT path); filters longer than what can reach an output;
// gates and the D skip term; padded strides; the constant-filter cache; one plan used from
// several threads at once.
#include <thread>

#include "cpu_test_helpers.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::HostTensor;

struct ConvCase {
  int mode = FK_FFTCONV_CAUSAL;
  int64_t batch = 2, channels = 3, seqlen = 100;
  int64_t filter_len = 0;  // 0: seqlen
  int64_t fft_size = 0;    // 0: automatic
  bool pregate = false, postgate = false, with_d = false;
  DT dtype = DT::F32, k_dt = DT::F32, d_dt = DT::F32;
  bool padded = false;
  bool constant_filter = false;
  int threads = 2;
  double u_scale = 1.0, pre_scale = 1.5, k_scale = 1.0;
};

struct Plan {
  fk_fftconv_plan_t* plan = nullptr;
  ~Plan() { fk_fftconv_plan_destroy(plan); }
};

HostTensor act(DT t, int64_t b, int64_t c, int64_t l, bool padded, int64_t pad) {
  if (!padded) return HostTensor(t, {b, c, l});
  return HostTensor(t, {b, c, l}, fkcpu::padded_strides({b, c, l}, pad));
}

// fp32 FFTs accumulate more rounding than a dot product: widen the bounds a little.
constexpr double kSlack = 3.0;

struct ConvData {
  HostTensor u, k, D, pre, post, y;
};

ConvData make_data(const ConvCase& c, int64_t filter_len, std::mt19937_64& rng) {
  ConvData d;
  d.u = act(c.dtype, c.batch, c.channels, c.seqlen, c.padded, 3);
  d.pre = act(c.dtype, c.batch, c.channels, c.seqlen, c.padded, 1);
  d.post = act(c.dtype, c.batch, c.channels, c.seqlen, c.padded, 2);
  d.y = act(c.dtype, c.batch, c.channels, c.seqlen, c.padded, 5);
  d.k = c.padded ? HostTensor(c.k_dt, {c.channels, filter_len}, {filter_len + 7, 1})
                 : HostTensor(c.k_dt, {c.channels, filter_len});
  d.D = HostTensor(c.d_dt, {c.channels});
  d.u.fill_normal(rng, c.u_scale);
  // Decaying filters, as long-convolution models learn them, keep outputs O(1).
  d.k.for_each([&](const std::vector<int64_t>& i) {
    std::normal_distribution<double> nd;
    d.k.set(i, c.k_scale * nd(rng) / std::sqrt(1.0 + double(i[1])));
  });
  d.D.fill_normal(rng);
  d.pre.fill_uniform(rng, -c.pre_scale, c.pre_scale);
  d.post.fill_uniform(rng, -1.5, 1.5);
  d.y.poison();
  return d;
}

std::vector<double> reference(const ConvCase& c, const ConvData& d, int64_t filter_len,
                              int64_t fft_size) {
  const std::vector<double> D = d.D.to_vector(), pre = d.pre.to_vector(),
                            post = d.post.to_vector();
  return fkref::fftconv(d.u.to_vector(), d.k.to_vector(), c.with_d ? &D : nullptr,
                        c.pregate ? &pre : nullptr, c.postgate ? &post : nullptr, c.batch,
                        c.channels, c.seqlen, filter_len, fkref::ConvMode(c.mode), fft_size);
}

void create_plan(const ConvCase& c, Plan& pl, fk_fftconv_plan_options_t& resolved) {
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = c.mode;
  o.channels = c.channels;
  o.seqlen = c.seqlen;
  o.filter_len = c.filter_len;
  o.fft_size = c.fft_size;
  o.dtype = fktest::dl_dtype(c.dtype);
  o.flags = c.constant_filter ? FK_FFTCONV_FILTER_CONSTANT : 0u;
  const fk_status_t st = fk_fftconv_plan_create(fkcpu::cpu_context(c.threads), &o, &pl.plan);
  INFO("fk_fftconv_plan_create: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  fk_fftconv_plan_options_init(&resolved);
  REQUIRE(fk_fftconv_plan_get_options(pl.plan, &resolved) == FK_SUCCESS);
  const int64_t fl = c.filter_len ? c.filter_len : c.seqlen;
  CHECK(resolved.filter_len == fl);
  if (c.fft_size) {
    CHECK(resolved.fft_size == c.fft_size);
  } else {
    CHECK(resolved.fft_size ==
          fkref::default_fft_size(fkref::ConvMode(c.mode), c.seqlen, fl));
  }
}

fk_status_t forward(const ConvCase& c, const Plan& pl, ConvData& d) {
  return fk_fftconv_forward(pl.plan, nullptr, &d.u, &d.k, c.with_d ? &d.D : nullptr,
                            c.pregate ? &d.pre : nullptr, c.postgate ? &d.post : nullptr, &d.y);
}

void run_conv(const ConvCase& c, uint64_t tag) {
  auto rng = fkcpu::rng_for(tag);
  Plan pl;
  fk_fftconv_plan_options_t resolved;
  create_plan(c, pl, resolved);
  ConvData d = make_data(c, resolved.filter_len, rng);
  const fk_status_t st = forward(c, pl, d);
  INFO("fk_fftconv_forward: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  check_output(d.y, reference(c, d, resolved.filter_len, resolved.fft_size), c.dtype, "y",
               kSlack);
}

const char* mode_name(int m) {
  return m == FK_FFTCONV_CAUSAL ? "causal" : m == FK_FFTCONV_CIRCULAR ? "circular" : "bidir";
}

}  // namespace

TEST_CASE("cpu fftconv: modes x dtypes, full-length filters (FFT path)", "[cpu][fftconv]") {
  uint64_t tag = 3000;
  for (int mode : {FK_FFTCONV_CAUSAL, FK_FFTCONV_CIRCULAR, FK_FFTCONV_BIDIRECTIONAL})
    for (DT dt : fkcpu::kFloatTypes) {
      ConvCase c;
      c.mode = mode;
      c.dtype = dt;
      // Long enough for the FFT path (the CPU backend sums short filters directly);
      // bidirectional needs an odd filter_len.
      c.seqlen = mode == FK_FFTCONV_BIDIRECTIONAL ? 301 : 300;
      DYNAMIC_SECTION(mode_name(mode) << " " << fktest::dt_name(dt)) { run_conv(c, ++tag); }
    }
}

TEST_CASE("cpu fftconv: gates and D", "[cpu][fftconv]") {
  uint64_t tag = 3100;
  for (int mode : {FK_FFTCONV_CAUSAL, FK_FFTCONV_CIRCULAR, FK_FFTCONV_BIDIRECTIONAL})
    for (int g = 0; g < 4; ++g)
      for (int64_t fl : {int64_t(0), int64_t(7)}) {  // FFT path and direct path
        ConvCase c;
        c.mode = mode;
        c.seqlen = 201;  // full-length filters take the FFT path, 7 taps the direct one
        c.filter_len = fl;
        c.pregate = g & 1;
        c.postgate = (g >> 1) & 1;
        c.with_d = g != 0;
        c.dtype = g == 3 ? DT::BF16 : DT::F32;
        c.k_dt = g == 2 ? DT::F16 : DT::F32;
        c.d_dt = g == 1 ? DT::BF16 : DT::F32;
        DYNAMIC_SECTION(mode_name(mode) << " gates " << g << " filter_len " << fl) {
          run_conv(c, ++tag);
        }
      }
}

TEST_CASE("cpu fftconv: filter lengths and explicit fft_size", "[cpu][fftconv]") {
  struct F {
    int mode;
    int64_t seqlen, filter_len, fft_size;
  };
  const F fs[] = {
      // causal: short (direct), medium, longer than seqlen (taps >= seqlen never matter)
      {FK_FFTCONV_CAUSAL, 100, 3, 0},
      {FK_FFTCONV_CAUSAL, 100, 40, 0},
      {FK_FFTCONV_CAUSAL, 100, 300, 0},
      {FK_FFTCONV_CAUSAL, 100, 100, 512},
      {FK_FFTCONV_CAUSAL, 1, 1, 0},
      {FK_FFTCONV_CAUSAL, 2, 5, 0},
      {FK_FFTCONV_CAUSAL, 1000, 1000, 0},
      {FK_FFTCONV_CAUSAL, 129, 64, 256},
      {FK_FFTCONV_CAUSAL, 500, 400, 2048},
      // circular: period fft_size, wrap-around matters when filter_len + seqlen > fft_size
      {FK_FFTCONV_CIRCULAR, 100, 128, 128},
      {FK_FFTCONV_CIRCULAR, 100, 100, 256},
      {FK_FFTCONV_CIRCULAR, 100, 5, 128},
      {FK_FFTCONV_CIRCULAR, 60, 64, 64},
      {FK_FFTCONV_CIRCULAR, 64, 64, 0},
      {FK_FFTCONV_CIRCULAR, 3, 8, 8},
      {FK_FFTCONV_CIRCULAR, 300, 512, 512},
      // bidirectional: short, long, radius beyond seqlen (taps with |j| >= seqlen dropped)
      {FK_FFTCONV_BIDIRECTIONAL, 100, 5, 0},
      {FK_FFTCONV_BIDIRECTIONAL, 100, 41, 0},
      {FK_FFTCONV_BIDIRECTIONAL, 100, 201, 0},
      {FK_FFTCONV_BIDIRECTIONAL, 100, 501, 0},
      {FK_FFTCONV_BIDIRECTIONAL, 100, 99, 1024},
      {FK_FFTCONV_BIDIRECTIONAL, 1, 3, 0},
      {FK_FFTCONV_BIDIRECTIONAL, 50, 1, 0},
  };
  uint64_t tag = 3200;
  for (const F& f : fs)
    for (DT dt : {DT::F32, DT::F16}) {
      ConvCase c;
      c.mode = f.mode;
      c.seqlen = f.seqlen;
      c.filter_len = f.filter_len;
      c.fft_size = f.fft_size;
      c.dtype = dt;
      c.with_d = true;
      DYNAMIC_SECTION(mode_name(f.mode) << " L=" << f.seqlen << " F=" << f.filter_len
                                        << " N=" << f.fft_size << " " << fktest::dt_name(dt)) {
        run_conv(c, ++tag);
      }
    }
}

TEST_CASE("cpu fftconv: padded strides, batch and channel counts, threads", "[cpu][fftconv]") {
  uint64_t tag = 3300;
  const int64_t bc[][2] = {{1, 1}, {1, 5}, {7, 1}, {3, 4}};
  for (auto& x : bc)
    for (int threads : {1, 3}) {
      ConvCase c;
      c.batch = x[0];
      c.channels = x[1];
      c.padded = true;
      c.threads = threads;
      c.pregate = c.postgate = c.with_d = true;
      c.mode = (x[0] + x[1]) % 2 ? FK_FFTCONV_BIDIRECTIONAL : FK_FFTCONV_CAUSAL;
      c.seqlen = 201;
      DYNAMIC_SECTION("batch " << x[0] << " channels " << x[1] << " threads " << threads) {
        run_conv(c, ++tag);
      }
    }
}

TEST_CASE("cpu fftconv: constant-filter cache", "[cpu][fftconv]") {
  ConvCase c;
  c.constant_filter = true;
  c.seqlen = 300;  // long enough for the FFT path, where the spectrum is cached
  c.with_d = true;
  auto rng = fkcpu::rng_for(3400);
  Plan pl;
  fk_fftconv_plan_options_t resolved;
  create_plan(c, pl, resolved);
  ConvData d = make_data(c, resolved.filter_len, rng);
  // Twice with the same filter (second call hits the cache), then with a different filter
  // tensor (another pointer): the cache must not be used for it.
  for (int call = 0; call < 2; ++call) {
    d.y.poison();
    REQUIRE(forward(c, pl, d) == FK_SUCCESS);
    check_output(d.y, reference(c, d, resolved.filter_len, resolved.fft_size), c.dtype, "y",
                 kSlack);
  }
  ConvData d2 = make_data(c, resolved.filter_len, rng);
  REQUIRE(forward(c, pl, d2) == FK_SUCCESS);
  check_output(d2.y, reference(c, d2, resolved.filter_len, resolved.fft_size), c.dtype, "y",
               kSlack);
}

TEST_CASE("cpu fftconv: one plan used by several threads at once", "[cpu][fftconv]") {
  for (int constant = 0; constant < 2; ++constant) {
    ConvCase c;
    c.seqlen = 200;
    c.channels = 4;
    c.batch = 3;
    c.constant_filter = constant;
    Plan pl;
    fk_fftconv_plan_options_t resolved;
    create_plan(c, pl, resolved);
    auto rng = fkcpu::rng_for(3500 + uint64_t(constant));
    constexpr int kCallers = 4;
    std::vector<ConvData> data;
    for (int i = 0; i < kCallers; ++i) data.push_back(make_data(c, resolved.filter_len, rng));
    std::vector<fk_status_t> status(kCallers, FK_SUCCESS);
    std::vector<std::thread> threads;
    for (int i = 0; i < kCallers; ++i)
      threads.emplace_back([&, i] {
        ConvData& d = data[size_t(i)];
        // With the constant-filter flag every caller passes the same filter tensor.
        const HostTensor& k = constant ? data[0].k : d.k;
        for (int rep = 0; rep < 5; ++rep) {
          const fk_status_t st = fk_fftconv_forward(pl.plan, nullptr, &d.u, &k, nullptr,
                                                    nullptr, nullptr, &d.y);
          if (st != FK_SUCCESS) status[size_t(i)] = st;
        }
      });
    for (auto& t : threads) t.join();
    for (int i = 0; i < kCallers; ++i) {
      INFO("caller " << i << " constant=" << constant);
      REQUIRE(status[size_t(i)] == FK_SUCCESS);
      ConvData& d = data[size_t(i)];
      if (constant) d.k = data[0].k;  // for the reference: values only
      check_output(d.y, reference(c, d, resolved.filter_len, resolved.fft_size), c.dtype, "y",
                   kSlack);
    }
  }
}

TEST_CASE("cpu fftconv: scales near fp32's exponent limits", "[cpu][fftconv]") {
  // The CPU form of the GPU case "sm80 fftconv_reg: scales near fp32's exponent limits": bf16
  // rows whose products with the pregate are fp32 subnormals (u ~ 2^-66, pregate ~ 2^-70), and
  // ungated rows of bf16 subnormals (~2^-133), against filters large enough for normal outputs;
  // filter lengths past the direct path's, so the FFT path runs.
  int i = 0;
  for (int64_t L : {300, 2048}) {
    ConvCase c;
    c.dtype = DT::BF16;
    c.seqlen = L;
    c.postgate = true;
    c.pregate = true;
    c.u_scale = std::ldexp(1.0, -66);
    c.pre_scale = std::ldexp(1.0, -70);
    c.k_scale = 1e30;
    INFO("L " << L << ", gated, u ~ 2^-66, pregate ~ 2^-70");
    run_conv(c, 9100 + uint64_t(i++));
    c.pregate = false;
    c.u_scale = std::ldexp(1.0, -133);
    c.k_scale = 1e35;
    INFO("L " << L << ", u ~ 2^-133");
    run_conv(c, 9100 + uint64_t(i++));
  }
}
