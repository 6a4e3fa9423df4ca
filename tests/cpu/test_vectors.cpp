// The shared test vectors (tests/vectors/, format in its README) on the CPU backend: every case
// of MANIFEST, fed as fp32 tensors, checked elementwise against the stored float64 outputs with
// |got - expected| <= 1e-4 + 1e-4 |expected|. The Python, Java and Rust suites check the same
// files, so passing here and there proves the bindings compute what C computes.
//
// The vectors folder is found from this source file's path, or FLASHKIT_VECTORS_DIR.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

using fktest::DT;
using fktest::HostTensor;

// ---------------------------------------------------------------------------------------------
// FKV1 reader
// ---------------------------------------------------------------------------------------------

struct Array {
  int dtype = 0;  // 0 float64, 1 int32
  std::vector<int64_t> shape;
  std::vector<double> f64;
  std::vector<int32_t> i32;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }
};

using Case = std::map<std::string, Array>;

bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

// FLASHKIT_VECTORS_DIR, else the source tree this file was compiled from, else tests/vectors
// under the working directory or one of its parents (a test binary carried to another machine
// and run from a copy of the repository).
std::string vectors_dir() {
  if (const char* env = std::getenv("FLASHKIT_VECTORS_DIR")) return env;
  const std::string here = __FILE__;  // .../tests/cpu/test_vectors.cpp
  const size_t cut = here.rfind("/cpu/");
  if (cut != std::string::npos && file_exists(here.substr(0, cut) + "/vectors/MANIFEST"))
    return here.substr(0, cut) + "/vectors";
  std::string up = ".";
  for (int depth = 0; depth < 6; ++depth, up += "/..")
    if (file_exists(up + "/tests/vectors/MANIFEST")) return up + "/tests/vectors";
  FAIL("tests/vectors not found: set FLASHKIT_VECTORS_DIR");
  return {};
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Little-endian cursor (no host-endianness assumptions).
struct Cursor {
  const std::vector<uint8_t>& b;
  size_t pos = 0;
  uint64_t le(int n) {
    if (pos + size_t(n) > b.size()) throw std::runtime_error("truncated FKV file");
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(b[pos + size_t(i)]) << (8 * i);
    pos += size_t(n);
    return v;
  }
};

Case load_case(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "FKV1", 4) != 0)
    throw std::runtime_error(path + ": not an FKV1 file");
  Cursor c{bytes, 4};
  const uint32_t count = uint32_t(c.le(4));
  Case out;
  for (uint32_t a = 0; a < count; ++a) {
    const size_t nlen = size_t(c.le(2));
    if (c.pos + nlen > bytes.size()) throw std::runtime_error("truncated FKV file");
    std::string name(reinterpret_cast<const char*>(bytes.data() + c.pos), nlen);
    c.pos += nlen;
    Array arr;
    arr.dtype = int(c.le(1));
    const int rank = int(c.le(1));
    for (int r = 0; r < rank; ++r) arr.shape.push_back(int64_t(c.le(8)));
    const int64_t n = arr.numel();
    for (int64_t i = 0; i < n; ++i) {
      if (arr.dtype == 0) {
        const uint64_t bits = c.le(8);
        double d;
        std::memcpy(&d, &bits, 8);
        arr.f64.push_back(d);
      } else if (arr.dtype == 1) {
        arr.i32.push_back(int32_t(uint32_t(c.le(4))));
      } else {
        throw std::runtime_error(path + ": unknown dtype code");
      }
    }
    out[name] = std::move(arr);
  }
  if (c.pos != bytes.size()) throw std::runtime_error(path + ": trailing bytes");
  return out;
}

std::vector<std::pair<std::string, std::string>> load_manifest(const std::string& dir) {
  std::ifstream f(dir + "/MANIFEST");
  REQUIRE(f.good());
  std::vector<std::pair<std::string, std::string>> cases;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, op;
    ls >> name >> op;
    cases.emplace_back(name, op);
  }
  return cases;
}

// ---------------------------------------------------------------------------------------------
// Case helpers
// ---------------------------------------------------------------------------------------------

bool has(const Case& c, const char* n) { return c.count(n) != 0; }

const Array& get(const Case& c, const char* n) {
  auto it = c.find(n);
  INFO("array " << n);
  REQUIRE(it != c.end());
  return it->second;
}

double scalar_f(const Case& c, const char* n) {
  const Array& a = get(c, n);
  REQUIRE(a.shape.empty());
  return a.dtype == 0 ? a.f64[0] : double(a.i32[0]);
}
int32_t scalar_i(const Case& c, const char* n) { return int32_t(scalar_f(c, n)); }

// An fp32 (or int32) tensor holding the array's values; the values are exact in fp32.
std::unique_ptr<HostTensor> tensor_of(const Array& a) {
  auto t = std::make_unique<HostTensor>(a.dtype == 1 ? DT::I32 : DT::F32, a.shape);
  int64_t i = 0;
  t->for_each([&](const std::vector<int64_t>& idx) {
    t->set(idx, a.dtype == 1 ? double(a.i32[size_t(i)]) : a.f64[size_t(i)]);
    ++i;
  });
  return t;
}

std::unique_ptr<HostTensor> opt_tensor(const Case& c, const char* n) {
  return has(c, n) ? tensor_of(get(c, n)) : nullptr;
}

const DLTensor* view(const std::unique_ptr<HostTensor>& t) { return t ? t->view() : nullptr; }

// An fp32 output of the expected array's shape, poisoned so unwritten elements show as NaN.
std::unique_ptr<HostTensor> output_for(const Array& expected) {
  auto t = std::make_unique<HostTensor>(DT::F32, expected.shape);
  t->poison();
  return t;
}

void check_matches(const HostTensor& got, const Array& expected, const std::string& what) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == expected.f64.size());
  int64_t bad = 0, first_bad = -1;
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double e = expected.f64[i];
    bool ok;
    if (std::isinf(e)) ok = g[i] == e;  // -inf lse must be exact
    else ok = std::isfinite(g[i]) && std::fabs(g[i] - e) <= 1e-4 + 1e-4 * std::fabs(e);
    if (!ok) {
      if (first_bad < 0) first_bad = int64_t(i);
      ++bad;
    }
    if (std::isfinite(e) && std::isfinite(g[i])) worst = std::max(worst, std::fabs(g[i] - e));
  }
  INFO(what << ": " << bad << " of " << g.size() << " elements out of tolerance; max abs error "
            << worst
            << (first_bad >= 0 ? "; first at flat index " + std::to_string(first_bad) + ": got " +
                                     std::to_string(g[size_t(first_bad)]) + ", expected " +
                                     std::to_string(expected.f64[size_t(first_bad)])
                               : std::string()));
  CHECK(bad == 0);
}

struct ContextDeleter {
  void operator()(fk_context_t* c) const { fk_context_destroy(c); }
};

const fk_context_t* cpu_ctx() {
  static std::unique_ptr<fk_context_t, ContextDeleter> ctx = [] {
    fk_context_options_t o;
    fk_context_options_init(&o);
    o.backend = FK_BACKEND_CPU;
    o.num_threads = 2;
    fk_context_t* c = nullptr;
    fk_context_create(&o, &c);
    return std::unique_ptr<fk_context_t, ContextDeleter>(c);
  }();
  INFO("fk_context_create: " << fk_get_last_error_message());
  REQUIRE(ctx != nullptr);
  return ctx.get();
}

#define FK_REQUIRE_OK(call)                                                       \
  do {                                                                            \
    const fk_status_t st_ = (call);                                               \
    INFO(#call << " -> " << fk_status_string(st_) << ": " << fk_get_last_error_message()); \
    REQUIRE(st_ == FK_SUCCESS);                                                   \
  } while (0)

// ---------------------------------------------------------------------------------------------
// One runner per op
// ---------------------------------------------------------------------------------------------

void run_attention(const Case& c, const std::string& name) {
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = scalar_i(c, "causal");
  p.softmax_scale = float(scalar_f(c, "softmax_scale"));
  p.window_size_left = scalar_i(c, "window_left");
  p.window_size_right = scalar_i(c, "window_right");
  p.softcap = float(scalar_f(c, "softcap"));
  auto q = tensor_of(get(c, "q")), k = tensor_of(get(c, "k")), v = tensor_of(get(c, "v"));
  auto cq = opt_tensor(c, "cu_seqlens_q"), ck = opt_tensor(c, "cu_seqlens_k");
  auto out = output_for(get(c, "out")), lse = output_for(get(c, "lse"));
  const char* variant = nullptr;
  FK_REQUIRE_OK(fk_attention_select_kernel(cpu_ctx(), &p, q->view(), k->view(), v->view(),
                                           view(cq), view(ck), out->view(), lse->view(),
                                           &variant));
  REQUIRE(variant != nullptr);
  FK_REQUIRE_OK(fk_attention_forward(cpu_ctx(), nullptr, &p, q->view(), k->view(), v->view(),
                                     view(cq), view(ck), out->view(), lse->view()));
  check_matches(*out, get(c, "out"), name + ".out");
  check_matches(*lse, get(c, "lse"), name + ".lse");
}

void run_gemm(const Case& c, const std::string& name) {
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.trans_a = scalar_i(c, "trans_a");
  p.trans_b = scalar_i(c, "trans_b");
  p.alpha = float(scalar_f(c, "alpha"));
  p.beta = float(scalar_f(c, "beta"));
  p.activation = scalar_i(c, "activation");
  auto a = tensor_of(get(c, "a")), b = tensor_of(get(c, "b"));
  auto cc = opt_tensor(c, "c"), bias = opt_tensor(c, "bias");
  auto d = output_for(get(c, "d"));
  const char* variant = nullptr;
  FK_REQUIRE_OK(fk_gemm_select_kernel(cpu_ctx(), &p, a->view(), b->view(), view(cc),
                                      view(bias), d->view(), &variant));
  FK_REQUIRE_OK(fk_gemm(cpu_ctx(), nullptr, &p, a->view(), b->view(), view(cc), view(bias),
                        d->view()));
  check_matches(*d, get(c, "d"), name + ".d");
}

void run_monarch(const Case& c, const std::string& name) {
  fk_monarch_params_t p;
  fk_monarch_params_init(&p);
  auto x = tensor_of(get(c, "x")), w1 = tensor_of(get(c, "w1")), w2 = tensor_of(get(c, "w2"));
  auto bias = opt_tensor(c, "bias");
  auto out = output_for(get(c, "out"));
  const char* variant = nullptr;
  FK_REQUIRE_OK(fk_monarch_select_kernel(cpu_ctx(), &p, x->view(), w1->view(), w2->view(),
                                         view(bias), out->view(), &variant));
  FK_REQUIRE_OK(fk_monarch(cpu_ctx(), nullptr, &p, x->view(), w1->view(), w2->view(),
                           view(bias), out->view()));
  check_matches(*out, get(c, "out"), name + ".out");
}

void run_blockdiag(const Case& c, const std::string& name) {
  fk_monarch_params_t p;
  fk_monarch_params_init(&p);
  auto x = tensor_of(get(c, "x")), w = tensor_of(get(c, "w"));
  auto bias = opt_tensor(c, "bias");
  auto out = output_for(get(c, "out"));
  const char* variant = nullptr;
  FK_REQUIRE_OK(fk_blockdiag_linear_select_kernel(cpu_ctx(), &p, x->view(), w->view(),
                                                  view(bias), out->view(), &variant));
  FK_REQUIRE_OK(fk_blockdiag_linear(cpu_ctx(), nullptr, &p, x->view(), w->view(), view(bias),
                                    out->view()));
  check_matches(*out, get(c, "out"), name + ".out");
}

void run_fftconv(const Case& c, const std::string& name) {
  const Array& ua = get(c, "u");
  const Array& ka = get(c, "k");
  REQUIRE(ua.shape.size() == 3);
  REQUIRE(ka.shape.size() == 2);
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = scalar_i(c, "mode");
  o.channels = ua.shape[1];
  o.seqlen = ua.shape[2];
  o.filter_len = ka.shape[1];
  o.fft_size = scalar_i(c, "fft_size");
  struct PlanDeleter {
    void operator()(fk_fftconv_plan_t* p) const { fk_fftconv_plan_destroy(p); }
  };
  fk_fftconv_plan_t* raw = nullptr;
  FK_REQUIRE_OK(fk_fftconv_plan_create(cpu_ctx(), &o, &raw));
  std::unique_ptr<fk_fftconv_plan_t, PlanDeleter> plan(raw);
  auto u = tensor_of(ua), k = tensor_of(ka);
  auto D = opt_tensor(c, "D"), pre = opt_tensor(c, "pregate"), post = opt_tensor(c, "postgate");
  auto y = output_for(get(c, "y"));
  const char* variant = nullptr;
  FK_REQUIRE_OK(fk_fftconv_select_kernel(plan.get(), u->view(), k->view(), view(D), view(pre),
                                         view(post), y->view(), &variant));
  FK_REQUIRE_OK(fk_fftconv_forward(plan.get(), nullptr, u->view(), k->view(), view(D),
                                   view(pre), view(post), y->view()));
  check_matches(*y, get(c, "y"), name + ".y");
}

}  // namespace

TEST_CASE("shared test vectors: every MANIFEST case on the CPU backend", "[vectors][cpu]") {
  const std::string dir = vectors_dir();
  const auto cases = load_manifest(dir);
  REQUIRE(cases.size() >= 9);
  for (const auto& [name, op] : cases) {
    SECTION(name) {
      INFO("case " << name << " (" << op << ") from " << dir);
      const Case c = load_case(dir + "/" + name + ".fkv");
      if (op == "attention") run_attention(c, name);
      else if (op == "gemm") run_gemm(c, name);
      else if (op == "monarch") run_monarch(c, name);
      else if (op == "blockdiag") run_blockdiag(c, name);
      else if (op == "fftconv") run_fftconv(c, name);
      else FAIL("unknown op " << op);
    }
  }
}

TEST_CASE("shared test vectors: the FKV1 reader refuses a wrong magic", "[vectors][cpu]") {
  const std::string path = vectors_dir() + "/MANIFEST";  // a real file that is not FKV
  CHECK_THROWS_AS(load_case(path), std::runtime_error);
}
