// One test per validation rule: the status, a message naming the argument, and outputs left
// untouched (poisoned before the call, still poisoned after). Plus context, logging and
// thread-local error behaviour.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_util.hpp"

using fktest::DT;
using fktest::HostTensor;

namespace {

struct Ctx {
  fk_context_t* ctx = nullptr;
  Ctx() {
    fk_context_options_t o;
    fk_context_options_init(&o);
    o.backend = FK_BACKEND_CPU;
    REQUIRE(fk_context_create(&o, &ctx) == FK_SUCCESS);
  }
  ~Ctx() { fk_context_destroy(ctx); }
};

std::string last() { return fk_get_last_error_message(); }

// Expects `status` and a message containing every fragment.
void expect_error(fk_status_t got, fk_status_t want, std::vector<std::string> fragments) {
  INFO("message: " << last());
  CHECK(got == want);
  for (auto& f : fragments) CHECK(last().find(f) != std::string::npos);
}

// A valid attention problem (batched) that each test breaks in one way.
struct Attn {
  HostTensor q, k, v, out, lse;
  fk_attention_params_t prm;
  Attn(DT t = DT::F32, int64_t b = 2, int64_t sq = 5, int64_t sk = 7, int64_t h = 4,
       int64_t hk = 2, int64_t d = 8) {
    std::mt19937_64 rng(fktest::test_seed());
    q.init(t, {b, sq, h, d});
    k.init(t, {b, sk, hk, d});
    v.init(t, {b, sk, hk, d});
    out.init(t, {b, sq, h, d});
    lse.init(DT::F32, {b, h, sq});
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    out.poison();
    lse.poison();
    fk_attention_params_init(&prm);
  }
  fk_status_t run(fk_context_t* c, const DLTensor* cq = nullptr, const DLTensor* ck = nullptr,
                  bool with_lse = true) {
    return fk_attention_forward(c, nullptr, &prm, q.view(), k.view(), v.view(), cq, ck,
                                out.view(), with_lse ? lse.view() : nullptr);
  }
  bool untouched() const { return out.all_poison() && lse.all_poison(); }
};

struct Gemm {
  HostTensor a, b, c, bias, d;
  fk_gemm_params_t prm;
  Gemm(int64_t M = 3, int64_t N = 4, int64_t K = 5) {
    std::mt19937_64 rng(fktest::test_seed() + 1);
    a.init(DT::F32, {M, K});
    b.init(DT::F32, {K, N});
    c.init(DT::F32, {M, N});
    bias.init(DT::F32, {N});
    d.init(DT::F32, {M, N});
    a.fill_normal(rng);
    b.fill_normal(rng);
    c.fill_normal(rng);
    bias.fill_normal(rng);
    d.poison();
    fk_gemm_params_init(&prm);
  }
  fk_status_t run(fk_context_t* ctx, bool with_c = false, bool with_bias = false) {
    return fk_gemm(ctx, nullptr, &prm, a.view(), b.view(), with_c ? c.view() : nullptr,
                   with_bias ? bias.view() : nullptr, d.view());
  }
};

}  // namespace

TEST_CASE("context: creation rules", "[validation][context]") {
  fk_context_options_t o;
  fk_context_t* ctx = reinterpret_cast<fk_context_t*>(0x1);
  fk_context_options_init(&o);
  SECTION("NULL out-parameter") {
    expect_error(fk_context_create(&o, nullptr), FK_ERROR_NULL_POINTER, {"context"});
  }
  SECTION("wrong struct_size") {
    o.struct_size = 7;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_BAD_STRUCT_SIZE, {"options", "struct_size"});
    CHECK(ctx == reinterpret_cast<fk_context_t*>(0x1));
  }
  SECTION("unknown backend") {
    o.backend = 9;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.backend"});
  }
  SECTION("unknown or CPU kernel family") {
    o.kernel_family = 17;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.kernel_family"});
    o.kernel_family = FK_KERNEL_FAMILY_CPU;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.kernel_family"});
  }
  SECTION("negative device ordinal") {
    o.device_ordinal = -2;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.device_ordinal"});
  }
  SECTION("threads outside 0..4096") {
    o.num_threads = -1;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.num_threads"});
    o.num_threads = 1000000;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.num_threads"});
  }
  SECTION("a kernel family forced on the CPU backend") {
    o.backend = FK_BACKEND_CPU;
    o.kernel_family = FK_KERNEL_FAMILY_SM90;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_NOT_SUPPORTED, {"options.kernel_family", "CPU"});
    // The environment variable is a CUDA-wide default: a CPU context ignores it.
    o.kernel_family = FK_KERNEL_FAMILY_AUTO;
    {
      fktest::ScopedEnv env("FLASHKIT_KERNEL_FAMILY", "sm80");
      fk_context_t* c = nullptr;
      CHECK(fk_context_create(&o, &c) == FK_SUCCESS);
      fk_context_destroy(c);
    }
  }
  SECTION("nonzero flags") {
    o.flags = 4;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"options.flags"});
  }
  SECTION("CUDA device ordinal beyond the visible devices") {
    o.backend = FK_BACKEND_CUDA;
    o.device_ordinal = 4096;
    expect_error(fk_context_create(&o, &ctx), FK_ERROR_BACKEND_UNAVAILABLE, {"CUDA"});
  }
  SECTION("unparsable environment variable") {
    {
      fktest::ScopedEnv env("FLASHKIT_BACKEND", "tpu");
      expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"FLASHKIT_BACKEND", "tpu"});
    }
    {
      fktest::ScopedEnv env("FLASHKIT_KERNEL_FAMILY", "sm70");
      expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT, {"FLASHKIT_KERNEL_FAMILY"});
    }
    for (const char* bad : {"lots", " 4", "+2", "-1", "0", "4097", "99999999999999999999", "3x"}) {
      fktest::ScopedEnv env("FLASHKIT_NUM_THREADS", bad);
      expect_error(fk_context_create(&o, &ctx), FK_ERROR_INVALID_ARGUMENT,
                   {"FLASHKIT_NUM_THREADS", std::string("'") + bad + "'"});
    }
    for (const char* good : {"1", "3", "007"}) {
      fktest::ScopedEnv env("FLASHKIT_NUM_THREADS", good);
      fk_context_t* c = nullptr;
      fk_context_options_t cpu_o;
      fk_context_options_init(&cpu_o);
      cpu_o.backend = FK_BACKEND_CPU;
      REQUIRE(fk_context_create(&cpu_o, &c) == FK_SUCCESS);
      fk_context_info_t info;
      fk_context_info_init(&info);
      REQUIRE(fk_context_get_info(c, &info) == FK_SUCCESS);
      CHECK(info.num_threads == std::atoi(good));
      fk_context_destroy(c);
    }
  }
  SECTION("a CUDA backend chosen by the environment is named in the error") {
    {
      fktest::ScopedEnv env("FLASHKIT_BACKEND", "cuda");
      o.device_ordinal = 4096;  // beyond any machine's devices; or a build without CUDA
      expect_error(fk_context_create(&o, &ctx), FK_ERROR_BACKEND_UNAVAILABLE,
                   {"CUDA", "FLASHKIT_BACKEND"});
    }
  }
  SECTION("environment selects the CPU backend under AUTO") {
    {
      fktest::ScopedEnv env("FLASHKIT_BACKEND", "cpu");
      fk_context_t* c = nullptr;
      REQUIRE(fk_context_create(&o, &c) == FK_SUCCESS);
      fk_context_info_t info;
      fk_context_info_init(&info);
      REQUIRE(fk_context_get_info(c, &info) == FK_SUCCESS);
      CHECK(info.backend == FK_BACKEND_CPU);
      CHECK(info.kernel_family == FK_KERNEL_FAMILY_CPU);
      CHECK(info.num_threads >= 1);
      CHECK(std::string(info.device_name) == "cpu");
      fk_context_destroy(c);
    }
  }
  SECTION("info needs an initialised struct") {
    Ctx c;
    fk_context_info_t info{};
    expect_error(fk_context_get_info(c.ctx, &info), FK_ERROR_BAD_STRUCT_SIZE, {"info"});
    expect_error(fk_context_get_info(nullptr, &info), FK_ERROR_NULL_POINTER, {"context"});
  }
  SECTION("destroying NULL is a no-op") { CHECK(fk_context_destroy(nullptr) == FK_SUCCESS); }
}

TEST_CASE("status: categories and strings", "[validation][status]") {
  CHECK(fk_status_category(FK_SUCCESS) == FK_SUCCESS);
  CHECK(fk_status_category(FK_ERROR_MISALIGNED) == FK_ERROR_INVALID_ARGUMENT);
  CHECK(fk_status_category(FK_ERROR_BACKEND_UNAVAILABLE) == FK_ERROR_NOT_SUPPORTED);
  CHECK(fk_status_category(FK_ERROR_WORKSPACE_TOO_SMALL) == FK_ERROR_OUT_OF_MEMORY);
  CHECK(fk_status_category(FK_ERROR_KERNEL_LAUNCH) == FK_ERROR_DEVICE);
  CHECK(fk_status_category(FK_ERROR_INTERNAL) == FK_ERROR_INTERNAL);
  CHECK(std::string(fk_status_string(FK_ERROR_SHAPE_MISMATCH)).find("shape") != std::string::npos);
  CHECK(std::string(fk_status_string(static_cast<fk_status_t>(12345))) == "unknown status");
  CHECK(std::string(fk_backend_name(FK_BACKEND_CUDA)) == "cuda");
  CHECK(std::string(fk_kernel_family_name(FK_KERNEL_FAMILY_SM90)) == "sm90");
}

// fk_status_category() of values that are not codes of the header: 100..499 map to their
// hundred (room for codes a later version appends), 0 to FK_SUCCESS, everything else (1..99,
// negative, 500 and above) to FK_ERROR_INTERNAL. The values go through the C enum type as the
// test of fk_status_string() above passes 12345.
TEST_CASE("status: categories of values that are not codes", "[validation][status]") {
  auto category = [](int v) { return static_cast<int>(fk_status_category(static_cast<fk_status_t>(v))); };
  CHECK(category(150) == FK_ERROR_INVALID_ARGUMENT);
  CHECK(category(199) == FK_ERROR_INVALID_ARGUMENT);
  CHECK(category(250) == FK_ERROR_NOT_SUPPORTED);
  CHECK(category(399) == FK_ERROR_OUT_OF_MEMORY);
  CHECK(category(499) == FK_ERROR_DEVICE);
  CHECK(category(0) == FK_SUCCESS);
  for (int v : {1, 50, 99, -1, -50, -100, -150, 500, 501, 550, 600, 12345}) {
    INFO("value " << v);
    CHECK(category(v) == FK_ERROR_INTERNAL);
  }
}

// The init and info functions refuse a NULL struct, naming it.
TEST_CASE("context and launch: NULL structs for the init and info functions",
          "[validation][context]") {
  expect_error(fk_context_options_init(nullptr), FK_ERROR_NULL_POINTER, {"options: NULL"});
  expect_error(fk_context_info_init(nullptr), FK_ERROR_NULL_POINTER, {"info: NULL"});
  expect_error(fk_launch_init(nullptr), FK_ERROR_NULL_POINTER, {"launch: NULL"});
  Ctx c;
  expect_error(fk_context_get_info(c.ctx, nullptr), FK_ERROR_NULL_POINTER, {"info: NULL"});
  // A NULL context is named before a NULL info.
  expect_error(fk_context_get_info(nullptr, nullptr), FK_ERROR_NULL_POINTER, {"context"});
}

TEST_CASE("errors: the last-error message is thread-local", "[validation][status]") {
  Ctx c;
  Gemm g;
  g.prm.alpha = INFINITY;
  REQUIRE(g.run(c.ctx) == FK_ERROR_INVALID_ARGUMENT);
  const std::string mine = last();
  CHECK(mine.find("params.alpha") != std::string::npos);
  std::thread t([&] {
    Gemm g2;
    g2.prm.activation = 42;
    CHECK(g2.run(c.ctx) == FK_ERROR_INVALID_ARGUMENT);
    CHECK(last().find("params.activation") != std::string::npos);
  });
  t.join();
  CHECK(last() == mine);
}

TEST_CASE("logging: callback receives the variant and errors", "[validation][log]") {
  struct Sink {
    std::vector<std::string> lines;
  } sink;
  auto cb = [](fk_log_level_t, const char* msg, void* ud) {
    static_cast<Sink*>(ud)->lines.emplace_back(msg);
  };
  expect_error(fk_set_log_callback(cb, static_cast<fk_log_level_t>(9), &sink),
               FK_ERROR_INVALID_ARGUMENT, {"max_level"});
  {
    // Removed on every path out of this scope: a failed REQUIRE below must not leave a
    // callback pointing at this stack frame for the tests that run after this one.
    struct RemoveCallback {
      ~RemoveCallback() { fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr); }
    } remove;
    REQUIRE(fk_set_log_callback(cb, FK_LOG_DEBUG, &sink) == FK_SUCCESS);
    Ctx c;
    Gemm g;
    REQUIRE(g.run(c.ctx) == FK_SUCCESS);
    g.prm.beta = 1.0f;
    CHECK(g.run(c.ctx) == FK_ERROR_INVALID_ARGUMENT);
  }
  bool saw_variant = false, saw_error = false;
  for (auto& l : sink.lines) {
    if (l.find("cpu.gemm") != std::string::npos) saw_variant = true;
    if (l.find("beta") != std::string::npos) saw_error = true;
  }
  CHECK(saw_variant);
  CHECK(saw_error);
}

TEST_CASE("logging: a callback that calls flashkit", "[validation][log]") {
  // Calls from inside the callback re-entered the library's log lock on the same thread (a
  // hang): now their messages are dropped, fk_set_log_callback refuses, and the outer call's
  // last-error message survives what the callback's calls set.
  struct State {
    int delivered = 0;
    fk_status_t inner_call = FK_SUCCESS, inner_set = FK_SUCCESS;
    std::string inner_set_msg;
    fk_context_t* ctx = nullptr;
  } st;
  auto cb = [](fk_log_level_t, const char*, void* ud) {
    auto* s = static_cast<State*>(ud);
    ++s->delivered;
    Gemm g;
    g.prm.beta = 1.0f;  // beta without c: refused, and logged at ERROR (not delivered)
    s->inner_call = g.run(s->ctx);
    s->inner_set = fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr);
    s->inner_set_msg = fk_get_last_error_message();
  };
  Ctx c;
  st.ctx = c.ctx;
  struct RemoveCallback {
    ~RemoveCallback() { fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr); }
  } remove;
  REQUIRE(fk_set_log_callback(cb, FK_LOG_ERROR, &st) == FK_SUCCESS);
  Gemm outer(3, 4, 5);
  DLTensor d = *outer.d.view();
  int64_t bad_shape[2] = {7, 4};  // d's rows differ from a's
  d.shape = bad_shape;
  d.strides = nullptr;
  // The message the failing call sets with no callback installed, for comparison.
  REQUIRE(fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr) == FK_SUCCESS);
  REQUIRE(fk_gemm(c.ctx, nullptr, &outer.prm, outer.a.view(), outer.b.view(), nullptr, nullptr,
                  &d) == FK_ERROR_SHAPE_MISMATCH);
  const std::string plain_msg = fk_get_last_error_message();
  REQUIRE(fk_set_log_callback(cb, FK_LOG_ERROR, &st) == FK_SUCCESS);
  CHECK(fk_gemm(c.ctx, nullptr, &outer.prm, outer.a.view(), outer.b.view(), nullptr, nullptr,
                &d) == FK_ERROR_SHAPE_MISMATCH);
  const std::string outer_msg = fk_get_last_error_message();
  CHECK(st.delivered == 1);
  CHECK(st.inner_call == FK_ERROR_INVALID_ARGUMENT);
  CHECK(st.inner_set == FK_ERROR_INVALID_ARGUMENT);
  CHECK(st.inner_set_msg.find("inside the log callback") != std::string::npos);
  CHECK(outer_msg == plain_msg);  // the outer call's own message, restored
  CHECK(outer_msg.find("beta") == std::string::npos);
  CHECK(outer.d.all_poison());
  // Still installed (the inner removal was refused): the next error is delivered too.
  CHECK(fk_gemm(c.ctx, nullptr, &outer.prm, outer.a.view(), outer.b.view(), nullptr, nullptr,
                &d) == FK_ERROR_SHAPE_MISMATCH);
  CHECK(st.delivered == 2);
  REQUIRE(fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr) == FK_SUCCESS);
  CHECK(fk_gemm(c.ctx, nullptr, &outer.prm, outer.a.view(), outer.b.view(), nullptr, nullptr,
                &d) == FK_ERROR_SHAPE_MISMATCH);
  CHECK(st.delivered == 2);
}

TEST_CASE("logging: fk_set_log_callback waits for a delivery in progress", "[validation][log]") {
  // The header's promise that bindings rely on to free the old callback's state: while thread A
  // is inside the callback (entered, then sleeping), thread B's fk_set_log_callback(NULL)
  // returns only after A's callback has returned.
  struct Probe {
    std::atomic<int> entered{0}, left{0};
  } probe;
  auto cb = [](fk_log_level_t, const char*, void* ud) {
    auto* p = static_cast<Probe*>(ud);
    if (p->entered.fetch_add(1) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      p->left.store(1);
    }
  };
  struct RemoveCallback {
    ~RemoveCallback() { fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr); }
  } remove;
  REQUIRE(fk_set_log_callback(cb, FK_LOG_DEBUG, &probe) == FK_SUCCESS);
  Ctx c;
  std::thread a([&] {
    Gemm g;
    CHECK(g.run(c.ctx) == FK_SUCCESS);  // logs the variant at DEBUG
  });
  while (probe.entered.load() == 0) std::this_thread::yield();
  REQUIRE(fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr) == FK_SUCCESS);
  const int left_when_returned = probe.left.load();
  a.join();
  CHECK(left_when_returned == 1);
}

TEST_CASE("attention: validation rules", "[validation][attention]") {
  Ctx c;
  SECTION("valid call succeeds and reports its kernel") {
    Attn a;
    REQUIRE(a.run(c.ctx) == FK_SUCCESS);
    const char* name = nullptr;
    REQUIRE(fk_attention_select_kernel(c.ctx, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                       nullptr, a.out.view(), a.lse.view(), &name) == FK_SUCCESS);
    CHECK(std::string(name) == "cpu.attention");
  }
  SECTION("NULL context") {
    Attn a;
    expect_error(a.run(nullptr), FK_ERROR_NULL_POINTER, {"context"});
    CHECK(a.untouched());
  }
  SECTION("NULL q") {
    Attn a;
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, nullptr, a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"q"});
    CHECK(a.untouched());
  }
  SECTION("an empty (zero-initialised) DLTensor is reported as missing data") {
    Attn a;
    DLTensor empty{};
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, &empty, a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"q: data is NULL"});
    CHECK(a.untouched());
  }
  SECTION("NULL data with a nonzero size") {
    Attn a;
    a.v.dl.data = nullptr;
    expect_error(a.run(c.ctx), FK_ERROR_NULL_POINTER, {"v", "data"});
    CHECK(a.untouched());
  }
  SECTION("wrong params struct_size") {
    Attn a;
    a.prm.struct_size = 8;
    expect_error(a.run(c.ctx), FK_ERROR_BAD_STRUCT_SIZE, {"params"});
    CHECK(a.untouched());
  }
  SECTION("wrong launch struct_size and flags") {
    Attn a;
    fk_launch_t l;
    fk_launch_init(&l);
    l.struct_size = 1;
    expect_error(fk_attention_forward(c.ctx, &l, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), nullptr),
                 FK_ERROR_BAD_STRUCT_SIZE, {"launch"});
    fk_launch_init(&l);
    l.flags = 1;
    expect_error(fk_attention_forward(c.ctx, &l, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), nullptr),
                 FK_ERROR_INVALID_ARGUMENT, {"launch", "flags"});
    CHECK(a.untouched());
  }
  SECTION("dtype mismatch between q and k") {
    Attn a;
    a.k.init(DT::F16, {2, 7, 2, 8});
    expect_error(a.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"k", "fp16", "fp32"});
    CHECK(a.untouched());
  }
  SECTION("unsupported dtype (int32 q)") {
    Attn a;
    a.q.dl.dtype = DLDataType{kDLInt, 32, 1};
    expect_error(a.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"q", "int32", "fp32, fp16 or bf16"});
    CHECK(a.untouched());
  }
  SECTION("a dtype is named in words (float64 q)") {
    Attn a;
    a.q.dl.dtype = DLDataType{kDLFloat, 64, 1};
    expect_error(a.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"q: dtype is float64", "fp32, fp16 or bf16"});
    CHECK(a.untouched());
  }
  SECTION("fp8 codes are reserved but not supported") {
    Attn a;
    a.q.dl.dtype = DLDataType{FK_DLPACK_FLOAT8_E4M3FN, 8, 1};
    expect_error(a.run(c.ctx), FK_ERROR_NOT_SUPPORTED, {"q", "fp8"});
    CHECK(a.untouched());
  }
  SECTION("wrong rank") {
    Attn a;
    a.q.dl.ndim = 3;
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"q", "rank 4"});
    CHECK(a.untouched());
  }
  SECTION("last dimension not contiguous") {
    Attn a;
    a.k.init(DT::F32, {2, 7, 2, 8}, {7 * 2 * 16, 2 * 16, 16, 2});
    expect_error(a.run(c.ctx), FK_ERROR_BAD_STRIDES, {"k", "contiguous"});
    CHECK(a.untouched());
  }
  SECTION("negative stride") {
    Attn a;
    a.q.strides[1] = -a.q.strides[1];
    expect_error(a.run(c.ctx), FK_ERROR_BAD_STRIDES, {"q", "negative"});
    CHECK(a.untouched());
  }
  SECTION("nheads not divisible by nheads_k") {
    Attn a(DT::F32, 1, 3, 3, 6, 4, 8);
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"nheads", "multiple"});
    CHECK(a.untouched());
  }
  SECTION("head_dim above 256") {
    Attn a(DT::F32, 1, 2, 2, 1, 1, 300);
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"q: head_dim 300 > 256"});
    CHECK(a.untouched());
  }
  SECTION("head_dim of v differs") {
    Attn a;
    a.v.init(DT::F32, {2, 7, 2, 4});
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"v", "head_dim"});
    CHECK(a.untouched());
  }
  SECTION("batch mismatch") {
    Attn a;
    a.k.init(DT::F32, {3, 7, 2, 8});
    a.v.init(DT::F32, {3, 7, 2, 8});
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"batch"});
    CHECK(a.untouched());
  }
  SECTION("out shape differs from q") {
    Attn a;
    a.out.init(DT::F32, {2, 6, 4, 8});
    a.out.poison();
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"out"});
    CHECK(a.untouched());
  }
  SECTION("host tensor's device is not the context's") {
    Attn a;
    a.v.dl.device = DLDevice{kDLCUDA, 0};
    expect_error(a.run(c.ctx), FK_ERROR_WRONG_DEVICE, {"v", "CPU"});
    CHECK(a.untouched());
  }
  SECTION("a wrong device is named in DLPack's words, not only as a number") {
    Attn a;
    a.k.dl.device = DLDevice{kDLCUDA, 0};
    expect_error(a.run(c.ctx), FK_ERROR_WRONG_DEVICE, {"k", "kDLCUDA (2)", "kDLCPU"});
    a.k.dl.device = DLDevice{kDLCUDAManaged, 0};
    expect_error(a.run(c.ctx), FK_ERROR_WRONG_DEVICE, {"k", "kDLCUDAManaged (13)"});
    a.k.dl.device = DLDevice{static_cast<DLDeviceType>(99), 0};
    expect_error(a.run(c.ctx), FK_ERROR_WRONG_DEVICE, {"k", "device type 99"});
    CHECK(a.untouched());
  }
  SECTION("misaligned data pointer") {
    Attn a;
    a.q.dl.byte_offset = 2;  // fp32 needs 4-byte alignment
    expect_error(a.run(c.ctx), FK_ERROR_MISALIGNED, {"q", "aligned"});
    CHECK(a.untouched());
  }
  SECTION("lse must be fp32 with shape (batch, nheads, seqlen_q)") {
    Attn a;
    HostTensor bad(DT::F16, {2, 4, 5});
    bad.poison();
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), bad.view()),
                 FK_ERROR_DTYPE_MISMATCH, {"lse: dtype is float16, must be fp32"});
    HostTensor bad2(DT::F32, {2, 5, 4});
    bad2.poison();
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), bad2.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"lse"});
    CHECK(a.out.all_poison());
    CHECK(bad.all_poison());
    CHECK(bad2.all_poison());
  }
  SECTION("window sizes below -1") {
    Attn a;
    a.prm.window_size_left = -3;
    expect_error(a.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"window_size_left"});
    a.prm.window_size_left = -1;
    a.prm.window_size_right = -2;
    expect_error(a.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"window_size_right"});
    CHECK(a.untouched());
  }
  SECTION("softcap negative or infinite, scale infinite") {
    Attn a;
    a.prm.softcap = -1.0f;
    expect_error(a.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"softcap"});
    a.prm.softcap = INFINITY;
    expect_error(a.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"softcap"});
    a.prm.softcap = 0.0f;
    a.prm.softmax_scale = INFINITY;
    expect_error(a.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"softmax_scale"});
    CHECK(a.untouched());
  }
  SECTION("varlen rules") {
    std::mt19937_64 rng(fktest::test_seed() + 7);
    HostTensor q(DT::F32, {9, 2, 8}), k(DT::F32, {11, 2, 8}), v(DT::F32, {11, 2, 8});
    HostTensor out(DT::F32, {9, 2, 8});
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    out.poison();
    auto cu = [](std::vector<int32_t> vals) { return fktest::int32_tensor(vals); };
    fk_attention_params_t prm;
    fk_attention_params_init(&prm);
    auto run = [&](const HostTensor* cq, const HostTensor* ck) {
      return fk_attention_forward(c.ctx, nullptr, &prm, q.view(), k.view(), v.view(),
                                  cq ? cq->view() : nullptr, ck ? ck->view() : nullptr,
                                  out.view(), nullptr);
    };
    HostTensor good_q = cu({0, 4, 4, 9}), good_k = cu({0, 5, 6, 11});
    SECTION("only one of the two") {
      expect_error(run(std::addressof(good_q), nullptr), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_k", "together"});
    }
    SECTION("not monotonic") {
      HostTensor bad = cu({0, 5, 4, 9});
      expect_error(run(std::addressof(bad), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_q", "monotonic"});
    }
    SECTION("first entry not 0") {
      HostTensor bad = cu({1, 5, 6, 11});
      expect_error(run(std::addressof(good_q), std::addressof(bad)), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_k", "first"});
    }
    SECTION("last entry not the row count") {
      HostTensor bad = cu({0, 4, 4, 8});
      expect_error(run(std::addressof(bad), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_q", "last"});
    }
    SECTION("lengths differ") {
      HostTensor bad = cu({0, 11});
      expect_error(run(std::addressof(good_q), std::addressof(bad)), FK_ERROR_SHAPE_MISMATCH, {"cu_seqlens_k"});
    }
    SECTION("not int32") {
      HostTensor bad(DT::F32, {4});
      expect_error(run(std::addressof(bad), std::addressof(good_k)), FK_ERROR_DTYPE_MISMATCH, {"cu_seqlens_q", "int32"});
    }
    SECTION("max_seqlen_q negative") {
      prm.max_seqlen_q = -1;
      expect_error(run(std::addressof(good_q), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"max_seqlen_q", "-1", "negative"});
    }
    SECTION("max_seqlen_k negative") {
      prm.max_seqlen_k = -2;
      expect_error(run(std::addressof(good_q), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"max_seqlen_k", "-2", "negative"});
    }
    SECTION("max_seqlen_q below the longest sequence (host cu_seqlens are always read)") {
      prm.max_seqlen_q = 4;  // the longest q sequence has 5 rows
      expect_error(run(std::addressof(good_q), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"max_seqlen_q: 4", "cu_seqlens_q (5)"});
    }
    SECTION("max_seqlen_k below the longest sequence") {
      prm.max_seqlen_k = 1;
      expect_error(run(std::addressof(good_q), std::addressof(good_k)), FK_ERROR_INVALID_ARGUMENT, {"max_seqlen_k: 1", "cu_seqlens_k (5)"});
    }
    SECTION("the 0.1 struct size (24 bytes, before max_seqlen_q/k) is refused") {
      prm.struct_size = 24;
      expect_error(run(std::addressof(good_q), std::addressof(good_k)), FK_ERROR_BAD_STRUCT_SIZE, {"params", "24", "40"});
    }
    SECTION("valid call with an empty sequence succeeds") {
      REQUIRE(run(std::addressof(good_q), std::addressof(good_k)) == FK_SUCCESS);
      return;
    }
    CHECK(out.all_poison());
  }
  SECTION("zero-sized batch succeeds without touching anything") {
    Attn a(DT::F32, 0, 5, 7, 4, 2, 8);
    CHECK(a.run(c.ctx) == FK_SUCCESS);
    CHECK(a.untouched());
  }
}

TEST_CASE("gemm: validation rules", "[validation][gemm]") {
  Ctx c;
  SECTION("inner dimensions differ") {
    Gemm g;
    g.b.init(DT::F32, {6, 4});
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"b", "K"});
    CHECK(g.d.all_poison());
  }
  SECTION("d shape") {
    Gemm g;
    g.d.init(DT::F32, {3, 5});
    g.d.poison();
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"d", "N"});
    CHECK(g.d.all_poison());
  }
  SECTION("negative strides: refused on a dimension of extent > 1, not read on extent 1") {
    // flashkit.h, "Common errors", FK_ERROR_BAD_STRIDES: an extent-1 dimension's stride
    // addresses nothing, so (1, K) with strides (-7, 1) is a valid row (as in PyTorch).
    std::mt19937_64 rng(fktest::test_seed() + 2);
    Gemm g(1, 4, 5);
    g.a.init(DT::F32, {1, 5}, {-7, 1});
    g.d.init(DT::F32, {1, 4}, {-3, 1});
    g.a.fill_normal(rng);
    g.d.poison();
    REQUIRE(g.run(c.ctx) == FK_SUCCESS);
    for (int64_t j = 0; j < 4; ++j) {
      double want = 0;
      for (int64_t p = 0; p < 5; ++p) want += g.a.get({0, p}) * g.b.get({p, j});
      CHECK(std::fabs(g.d.get({0, j}) - want) <= 1e-5 * (1 + std::fabs(want)));
    }
    Gemm h(2, 4, 5);
    // Refused before any element is read (its row 1 would lie before the buffer: not filled).
    h.a.init(DT::F32, {2, 5}, {-7, 1});
    expect_error(h.run(c.ctx), FK_ERROR_BAD_STRIDES, {"a", "negative"});
    CHECK(h.d.all_poison());
  }
  SECTION("beta without c") {
    Gemm g;
    g.prm.beta = 0.5f;
    expect_error(g.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"c", "beta"});
    CHECK(g.d.all_poison());
  }
  SECTION("bias length") {
    Gemm g;
    g.bias.init(DT::F32, {3});
    expect_error(g.run(c.ctx, false, true), FK_ERROR_SHAPE_MISMATCH, {"bias"});
    CHECK(g.d.all_poison());
  }
  SECTION("unknown activation, non-finite alpha and beta") {
    Gemm g;
    g.prm.activation = 7;
    expect_error(g.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"params.activation"});
    g.prm.activation = 0;
    g.prm.alpha = NAN;
    expect_error(g.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"params.alpha"});
    g.prm.alpha = 1;
    g.prm.beta = INFINITY;
    expect_error(g.run(c.ctx, true), FK_ERROR_INVALID_ARGUMENT, {"params.beta"});
    CHECK(g.d.all_poison());
  }
  SECTION("a and b dtypes differ; c and d dtypes differ") {
    Gemm g;
    g.b.init(DT::BF16, {5, 4});
    expect_error(g.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"b"});
    Gemm h;
    h.c.init(DT::F16, {3, 4});
    h.prm.beta = 1;
    expect_error(h.run(c.ctx, true), FK_ERROR_DTYPE_MISMATCH, {"c"});
    CHECK(g.d.all_poison());
    CHECK(h.d.all_poison());
  }
  SECTION("batch counts disagree") {
    Gemm g;
    g.a.init(DT::F32, {2, 3, 5});
    g.d.init(DT::F32, {3, 3, 4});
    g.d.poison();
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"a", "batch"});
    CHECK(g.d.all_poison());
  }
  SECTION("rank") {
    Gemm g;
    g.a.dl.ndim = 1;
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"a", "rank"});
    CHECK(g.d.all_poison());
  }
  SECTION("M = 0 succeeds without writing") {
    Gemm g(0, 4, 5);
    CHECK(g.run(c.ctx) == FK_SUCCESS);
  }
}

// A valid fk_gemm_scaled problem: fp8 a (M, K) and b given as (N, K) with trans_b, scales
// per row of a and per column of b.
struct ScaledGemm {
  HostTensor a, b, sa, sb, d;
  fk_gemm_params_t prm;
  ScaledGemm(int64_t M = 3, int64_t N = 4, int64_t K = 5) {
    std::mt19937_64 rng(fktest::test_seed() + 11);
    a.init(DT::E4M3, {M, K});
    b.init(DT::E5M2, {N, K});
    sa.init(DT::F32, {M});
    sb.init(DT::F32, {N});
    d.init(DT::BF16, {M, N});
    a.fill_normal(rng);
    b.fill_normal(rng);
    sa.fill_uniform(rng, 0.5, 2.0);
    sb.fill_uniform(rng, 0.5, 2.0);
    d.poison();
    fk_gemm_params_init(&prm);
    prm.trans_b = 1;
  }
  fk_status_t run(fk_context_t* ctx) {
    return fk_gemm_scaled(ctx, nullptr, &prm, a.view(), b.view(), sa.view(), sb.view(), nullptr,
                          nullptr, d.view());
  }
};

TEST_CASE("gemm_scaled: validation rules", "[validation][gemm]") {
  Ctx c;
  SECTION("valid (fp8 e4m3 x e5m2, per-row and per-column scales)") {
    ScaledGemm g;
    CHECK(g.run(c.ctx) == FK_SUCCESS);
    CHECK_FALSE(g.d.all_poison());
  }
  SECTION("fk_gemm refuses fp8 and names fk_gemm_scaled") {
    ScaledGemm g;
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr,
                         g.d.view()),
                 FK_ERROR_NOT_SUPPORTED, {"a", "fk_gemm_scaled"});
    CHECK(g.d.all_poison());
  }
  SECTION("fp8 a with a bf16 b") {
    ScaledGemm g;
    g.b.init(DT::BF16, {4, 5});
    expect_error(g.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"b", "fp8"});
    CHECK(g.d.all_poison());
  }
  SECTION("fp8 type code with 16 bits") {
    ScaledGemm g;
    g.a.dl.dtype = DLDataType{FK_DLPACK_FLOAT8_E4M3FN, 16, 1};
    expect_error(g.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"a", "8"});
    CHECK(g.d.all_poison());
  }
  SECTION("fp8 output") {
    ScaledGemm g;
    g.d.init(DT::E4M3, {3, 4});
    g.d.poison();
    expect_error(g.run(c.ctx), FK_ERROR_NOT_SUPPORTED, {"d", "fp8"});
    CHECK(g.d.all_poison());
  }
  SECTION("scale not fp32") {
    ScaledGemm g;
    g.sa.init(DT::F16, {3});
    expect_error(g.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"scale_a", "must be fp32"});
    CHECK(last().find("fp16 or") == std::string::npos);  // never lists dtypes it refuses
    CHECK(g.d.all_poison());
  }
  SECTION("scale of rank 2") {
    ScaledGemm g;
    g.sb.init(DT::F32, {1, 4});
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"scale_b", "rank"});
    CHECK(g.d.all_poison());
  }
  SECTION("scale length neither 1 nor M / N") {
    ScaledGemm g;
    g.sa.init(DT::F32, {4});
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"scale_a", "length 4"});
    ScaledGemm h;
    h.sb.init(DT::F32, {3});
    expect_error(h.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"scale_b", "length 3"});
    CHECK(g.d.all_poison());
    CHECK(h.d.all_poison());
  }
  SECTION("an unknown 8-bit dtype: the message lists the fp8 types accepted") {
    ScaledGemm g;
    g.a.dl.dtype = DLDataType{11, 8, 1};  // float8_e4m3fnuz: not accepted
    expect_error(g.run(c.ctx), FK_ERROR_DTYPE_MISMATCH, {"a", "float8_e4m3fn", "float8_e5m2"});
    CHECK(g.d.all_poison());
  }
  SECTION("scale not contiguous") {
    ScaledGemm g;
    g.sa.init(DT::F32, {3}, {2});
    expect_error(g.run(c.ctx), FK_ERROR_BAD_STRIDES, {"scale_a", "contiguous", "stride 2"});
    CHECK(g.d.all_poison());
  }
  SECTION("d overlapping a scale") {
    ScaledGemm g;
    g.d.init(DT::F32, {3, 4});
    g.sb.dl.data = g.d.bytes.data();
    g.sb.dl.dtype = DLDataType{kDLFloat, 32, 1};
    expect_error(g.run(c.ctx), FK_ERROR_INVALID_ARGUMENT, {"scale_b"});
  }
}

TEST_CASE("monarch and blockdiag: validation rules", "[validation][monarch]") {
  Ctx c;
  std::mt19937_64 rng(fktest::test_seed() + 3);
  HostTensor x(DT::F32, {5, 16}), w1(DT::F32, {4, 4, 4}), w2(DT::F32, {4, 4, 4});
  HostTensor out(DT::F32, {5, 16});
  x.fill_normal(rng);
  w1.fill_normal(rng);
  w2.fill_normal(rng);
  out.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  // A `return` in this first section once hid every section after it: Catch finds a section's
  // siblings only by passing them, so the case ran "valid" alone (2 assertions).
  bool wrote = false;
  SECTION("valid") {
    CHECK(fk_monarch(c.ctx, nullptr, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view()) ==
          FK_SUCCESS);
    wrote = true;
  }
  SECTION("factor shapes do not chain") {
    HostTensor bad(DT::F32, {3, 4, 4});
    expect_error(fk_monarch(c.ctx, nullptr, &prm, x.view(), w1.view(), bad.view(), nullptr, out.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"w2", "nblocks2"});
  }
  SECTION("x width is not nblocks1 * p") {
    HostTensor bad(DT::F32, {5, 12});
    expect_error(fk_monarch(c.ctx, nullptr, &prm, bad.view(), w1.view(), w2.view(), nullptr, out.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"x", "n"});
  }
  SECTION("weights not compact") {
    HostTensor bad(DT::F32, {4, 4, 4}, {32, 8, 1});
    expect_error(fk_monarch(c.ctx, nullptr, &prm, x.view(), bad.view(), w2.view(), nullptr, out.view()),
                 FK_ERROR_BAD_STRIDES, {"w1", "compact"});
  }
  SECTION("nonzero flags") {
    prm.flags = 1;
    expect_error(fk_monarch(c.ctx, nullptr, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"params.flags"});
  }
  SECTION("blockdiag width and bias length") {
    HostTensor w(DT::F32, {4, 3, 4}), o(DT::F32, {5, 12}), bias(DT::F32, {11});
    o.poison();
    expect_error(fk_blockdiag_linear(c.ctx, nullptr, &prm, x.view(), w.view(), bias.view(), o.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"bias"});
    HostTensor o2(DT::F32, {5, 13});
    o2.poison();
    expect_error(fk_blockdiag_linear(c.ctx, nullptr, &prm, x.view(), w.view(), nullptr, o2.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"out", "n_out"});
    CHECK(o.all_poison());
    CHECK(o2.all_poison());
  }
  if (!wrote) CHECK(out.all_poison());
}

TEST_CASE("fftconv: plan and call validation rules", "[validation][fftconv]") {
  Ctx c;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.channels = 3;
  o.seqlen = 100;
  fk_fftconv_plan_t* plan = nullptr;
  SECTION("fft_size too small for causal mode") {
    o.fft_size = 128;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.fft_size", "too small", "199"});
    CHECK(plan == nullptr);
  }
  SECTION("circular mode accepts the same size") {
    o.fft_size = 128;
    o.mode = FK_FFTCONV_CIRCULAR;
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    fk_fftconv_plan_options_t got;
    fk_fftconv_plan_options_init(&got);
    REQUIRE(fk_fftconv_plan_get_options(plan, &got) == FK_SUCCESS);
    CHECK(got.fft_size == 128);
    CHECK(got.filter_len == 100);
    fk_fftconv_plan_destroy(plan);
  }
  SECTION("auto fft_size is the smallest valid power of two") {
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    fk_fftconv_plan_options_t got;
    fk_fftconv_plan_options_init(&got);
    REQUIRE(fk_fftconv_plan_get_options(plan, &got) == FK_SUCCESS);
    CHECK(got.fft_size == 256);
    fk_fftconv_plan_destroy(plan);
  }
  SECTION("fft_size not a power of two") {
    o.fft_size = 300;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"fft_size", "power of two"});
  }
  SECTION("fft_size above 2^22") {
    o.fft_size = int64_t(1) << 23;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT, {"fft_size"});
  }
  SECTION("a problem that needs more than fft_size 2^22 names what the caller gave") {
    // Causal with the default filter (0: seqlen): seqlen 2^21 + 1 needs 2^22 + 1.
    o.seqlen = (int64_t(1) << 21) + 1;
    o.filter_len = 0;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.seqlen: 2097153 (with filter_len 0", "fft_size 4194305", "2^22"});
    CHECK(plan == nullptr);
    // With an explicit filter_len both are named (circular: fft_size >= filter_len).
    o.mode = FK_FFTCONV_CIRCULAR;
    o.seqlen = 16;
    o.filter_len = (int64_t(1) << 22) + 1;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.filter_len: 4194305 with seqlen 16", "fft_size 4194305"});
    CHECK(plan == nullptr);
  }
  SECTION("bidirectional needs an odd filter") {
    o.mode = FK_FFTCONV_BIDIRECTIONAL;
    o.filter_len = 10;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"filter_len", "odd"});
    // The default (0: seqlen) names itself when seqlen is even.
    o.filter_len = 0;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.filter_len: 0 means seqlen (100)", "odd"});
    CHECK(plan == nullptr);
    // An odd seqlen is its own default; an empty sequence plans with one tap, as every mode
    // plans empty problems.
    for (int64_t L : {101, 0}) {
      o.seqlen = L;
      REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
      fk_fftconv_plan_options_t got;
      fk_fftconv_plan_options_init(&got);
      REQUIRE(fk_fftconv_plan_get_options(plan, &got) == FK_SUCCESS);
      CHECK(got.filter_len == (L == 0 ? 1 : L));
      fk_fftconv_plan_destroy(plan);
      plan = nullptr;
    }
  }
  SECTION("negative sizes, unknown mode and flags, bad dtype") {
    o.channels = -1;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT, {"options.channels"});
    // A causal plan needs only the first seqlen taps, but k (channels, filter_len) must exist.
    o.channels = 3;
    o.filter_len = INT64_MAX;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.channels x options.filter_len", "2^61"});
    o.channels = int64_t(1) << 60;
    o.filter_len = 4;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.channels x options.filter_len"});
    o.filter_len = 2;  // 2^61 taps: the limit itself is allowed
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    fk_fftconv_plan_destroy(plan);
    plan = nullptr;
    o.filter_len = 0;
    o.channels = 3;
    o.mode = 5;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT, {"options.mode"});
    o.mode = 0;
    o.flags = 8;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT, {"options.flags"});
    o.flags = 0;
    o.dtype = DLDataType{kDLInt, 32, 1};
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_DTYPE_MISMATCH, {"options.dtype"});
    o.struct_size = 4;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_BAD_STRUCT_SIZE, {"options"});
    CHECK(plan == nullptr);
  }
  SECTION("call arguments") {
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    std::mt19937_64 rng(fktest::test_seed() + 5);
    HostTensor u(DT::F32, {2, 3, 100}), k(DT::F32, {3, 100}), y(DT::F32, {2, 3, 100});
    u.fill_normal(rng);
    k.fill_normal(rng);
    y.poison();
    HostTensor u_bad(DT::F32, {2, 4, 100});
    expect_error(fk_fftconv_forward(plan, nullptr, u_bad.view(), k.view(), nullptr, nullptr, nullptr, y.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"u", "channels"});
    HostTensor u_f16(DT::F16, {2, 3, 100});
    expect_error(fk_fftconv_forward(plan, nullptr, u_f16.view(), k.view(), nullptr, nullptr, nullptr, y.view()),
                 FK_ERROR_DTYPE_MISMATCH, {"u", "plan"});
    HostTensor k_bad(DT::F32, {3, 99});
    expect_error(fk_fftconv_forward(plan, nullptr, u.view(), k_bad.view(), nullptr, nullptr, nullptr, y.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"k", "filter_len"});
    HostTensor D_bad(DT::F32, {2});
    expect_error(fk_fftconv_forward(plan, nullptr, u.view(), k.view(), D_bad.view(), nullptr, nullptr, y.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"D", "channels"});
    HostTensor gate_bad(DT::F32, {1, 3, 100});
    expect_error(fk_fftconv_forward(plan, nullptr, u.view(), k.view(), nullptr, gate_bad.view(), nullptr, y.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"pregate", "batch"});
    expect_error(fk_fftconv_forward(nullptr, nullptr, u.view(), k.view(), nullptr, nullptr, nullptr, y.view()),
                 FK_ERROR_NULL_POINTER, {"plan"});
    CHECK(y.all_poison());
    const char* name = nullptr;
    REQUIRE(fk_fftconv_select_kernel(plan, u.view(), k.view(), nullptr, nullptr, nullptr, y.view(), &name) == FK_SUCCESS);
    CHECK(std::string(name) == "cpu.fftconv");
    fk_fftconv_plan_destroy(plan);
  }
}

// One test per per-tensor rule of fk_fftconv_forward / _select_kernel / plan creation that the
// cases above do not reach (an audit of every rejection path, session 38): the rank of each
// tensor, the dtype of y and the gates, y writing one address twice or sharing memory with D,
// a workspace over an input, and NULL handles and out-parameters. y stays poisoned.
TEST_CASE("fftconv: per-tensor rank, dtype, overlap and NULL rules", "[validation][fftconv]") {
  Ctx c;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.channels = 3;
  o.seqlen = 16;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(plan,
                                                                                fk_fftconv_plan_destroy);
  std::mt19937_64 rng(fktest::test_seed() + 13);
  HostTensor u(DT::F32, {2, 3, 16}), k(DT::F32, {3, 16}), D(DT::F32, {3}), pre(DT::F32, {2, 3, 16}),
      post(DT::F32, {2, 3, 16}), y(DT::F32, {2, 3, 16});
  for (HostTensor* t : {std::addressof(u), std::addressof(k), std::addressof(D), std::addressof(pre),
                        std::addressof(post)})
    t->fill_normal(rng);
  y.poison();
  struct Args {
    const DLTensor *u, *k, *D, *pre, *post, *y;
  };
  const Args good{u.view(), k.view(), D.view(), pre.view(), post.view(), y.view()};
  auto run = [&](Args a, const fk_launch_t* launch = nullptr) {
    return fk_fftconv_forward(plan, launch, a.u, a.k, a.D, a.pre, a.post, a.y);
  };
  SECTION("the rank of each tensor") {
    HostTensor r2(DT::F32, {3, 16}), r3(DT::F32, {1, 3, 16}), k1(DT::F32, {16}), d2(DT::F32, {3, 1});
    Args a = good;
    a.y = r2.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"y: expected rank 3", "got rank 2"});
    a = good;
    a.pre = r2.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"pregate: expected rank 3"});
    a = good;
    a.post = r2.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"postgate: expected rank 3"});
    a = good;
    a.u = r2.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"u: expected rank 3"});
    a = good;
    a.k = k1.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"k: expected rank 2", "(channels, filter_len)"});
    a = good;
    a.D = d2.view();
    expect_error(run(a), FK_ERROR_SHAPE_MISMATCH, {"D: expected rank 1", "(channels,)"});
  }
  SECTION("y and the gates in the plan's dtype") {
    HostTensor h(DT::F16, {2, 3, 16});
    for (int which = 0; which < 3; ++which) {
      Args a = good;
      const char* name = which == 0 ? "y" : which == 1 ? "pregate" : "postgate";
      (which == 0 ? a.y : which == 1 ? a.pre : a.post) = h.view();
      INFO(name);
      expect_error(run(a), FK_ERROR_DTYPE_MISMATCH,
                   {std::string(name) + ": dtype fp16 differs from the plan's dtype fp32"});
    }
  }
  SECTION("y writing two elements to one address") {
    HostTensor ys(DT::F32, {2, 3, 16}, {0, 16, 1});  // both batch rows at one address
    ys.poison();
    Args a = good;
    a.y = ys.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"y", "one address"});
    CHECK(ys.all_poison());
  }
  SECTION("y sharing memory with D") {
    HostTensor d_in_y(DT::F32, {3});
    d_in_y.dl.data = y.bytes.data();  // D's 12 bytes inside y
    Args a = good;
    a.D = d_in_y.view();
    expect_error(run(a), FK_ERROR_INVALID_ARGUMENT, {"y: overlaps D in memory"});
  }
  SECTION("a workspace over an input") {
    fk_launch_t launch;
    REQUIRE(fk_launch_init(&launch) == FK_SUCCESS);
    launch.workspace = pre.bytes.data();
    launch.workspace_bytes = 64;
    expect_error(run(good, &launch), FK_ERROR_INVALID_ARGUMENT, {"launch.workspace: overlaps pregate"});
    launch.workspace = D.bytes.data();  // 4 of D's 12 bytes: no other tensor's memory
    launch.workspace_bytes = 4;
    expect_error(run(good, &launch), FK_ERROR_INVALID_ARGUMENT, {"launch.workspace: overlaps D"});
  }
  SECTION("NULL handles and out-parameters") {
    fk_fftconv_plan_t* p2 = nullptr;
    expect_error(fk_fftconv_plan_create(nullptr, &o, &p2), FK_ERROR_NULL_POINTER, {"context"});
    expect_error(fk_fftconv_plan_create(c.ctx, nullptr, &p2), FK_ERROR_NULL_POINTER, {"options"});
    expect_error(fk_fftconv_plan_create(c.ctx, &o, nullptr), FK_ERROR_NULL_POINTER, {"plan"});
    CHECK(p2 == nullptr);
    const char* name = "untouched";
    expect_error(fk_fftconv_select_kernel(nullptr, u.view(), k.view(), nullptr, nullptr, nullptr,
                                          y.view(), &name),
                 FK_ERROR_NULL_POINTER, {"plan"});
    CHECK(std::string(name) == "untouched");
    expect_error(fk_fftconv_select_kernel(plan, u.view(), k.view(), nullptr, nullptr, nullptr,
                                          y.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"variant_name"});
    CHECK(fk_fftconv_plan_options_init(nullptr) == FK_ERROR_NULL_POINTER);
    fk_fftconv_plan_options_t got;
    fk_fftconv_plan_options_init(&got);
    CHECK(fk_fftconv_plan_get_options(nullptr, &got) == FK_ERROR_NULL_POINTER);
    CHECK(fk_fftconv_plan_get_options(plan, nullptr) == FK_ERROR_NULL_POINTER);
  }
  SECTION("each tensor's last dimension contiguous") {
    // Stride 2 along the last dimension of each.
    HostTensor act_s(DT::F32, {2, 3, 16}, {96, 32, 2}), k_s(DT::F32, {3, 16}, {32, 2}),
        D_s(DT::F32, {3}, {2}), y_s(DT::F32, {2, 3, 16}, {96, 32, 2});
    for (HostTensor* t : {std::addressof(act_s), std::addressof(k_s), std::addressof(D_s)})
      t->fill_normal(rng);
    y_s.poison();
    Args a = good;
    a.u = act_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"u: the last dimension (seqlen) must be contiguous", "stride 2"});
    a = good;
    a.y = y_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"y: the last dimension (seqlen) must be contiguous"});
    a = good;
    a.pre = act_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"pregate: the last dimension (seqlen) must be contiguous"});
    a = good;
    a.post = act_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"postgate: the last dimension (seqlen) must be contiguous"});
    a = good;
    a.k = k_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"k: the last dimension (filter_len) must be contiguous"});
    a = good;
    a.D = D_s.view();
    expect_error(run(a), FK_ERROR_BAD_STRIDES, {"D: the last dimension (channels) must be contiguous"});
    uint64_t bytes = 77;
    expect_error(fk_fftconv_workspace_size(plan, u.view(), k_s.view(), nullptr, nullptr, nullptr, y.view(),
                                           &bytes),
                 FK_ERROR_BAD_STRIDES, {"k: the last dimension"});
    CHECK(bytes == 77u);
    CHECK(y_s.all_poison());
  }
  CHECK(y.all_poison());
}

// The same for fk_monarch and fk_blockdiag_linear: each tensor's rank, dtypes that must match,
// out writing one address twice or sharing memory with a weight or the bias, a workspace over
// out, and NULL out-parameters. out stays poisoned.
TEST_CASE("monarch and blockdiag: per-tensor rank, dtype, overlap and NULL rules",
          "[validation][monarch]") {
  Ctx c;
  std::mt19937_64 rng(fktest::test_seed() + 17);
  HostTensor x(DT::F32, {5, 16}), w1(DT::F32, {4, 4, 4}), w2(DT::F32, {4, 4, 4}), w(DT::F32, {4, 4, 4});
  HostTensor bias(DT::F32, {16}), out(DT::F32, {5, 16});
  for (HostTensor* t : {std::addressof(x), std::addressof(w1), std::addressof(w2), std::addressof(w),
                        std::addressof(bias)})
    t->fill_normal(rng);
  out.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  auto monarch = [&](const DLTensor* xx, const DLTensor* a, const DLTensor* b, const DLTensor* bb,
                     const DLTensor* oo, const fk_launch_t* launch = nullptr) {
    return fk_monarch(c.ctx, launch, &prm, xx, a, b, bb, oo);
  };
  auto blockdiag = [&](const DLTensor* xx, const DLTensor* ww, const DLTensor* bb, const DLTensor* oo) {
    return fk_blockdiag_linear(c.ctx, nullptr, &prm, xx, ww, bb, oo);
  };
  SECTION("ranks") {
    HostTensor r2(DT::F32, {4, 16}), r1(DT::F32, {80}), r3(DT::F32, {1, 5, 16}), b2(DT::F32, {16, 1});
    expect_error(monarch(x.view(), r2.view(), w2.view(), nullptr, out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"w1: expected rank 3"});
    expect_error(monarch(x.view(), w1.view(), r2.view(), nullptr, out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"w2: expected rank 3"});
    expect_error(blockdiag(x.view(), r2.view(), nullptr, out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"w: expected rank 3"});
    expect_error(monarch(r1.view(), w1.view(), w2.view(), nullptr, out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"x: expected rank 2"});
    expect_error(monarch(x.view(), w1.view(), w2.view(), nullptr, r3.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"out: expected rank 2"});
    expect_error(monarch(x.view(), w1.view(), w2.view(), b2.view(), out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"bias: expected rank 1"});
    expect_error(blockdiag(x.view(), w.view(), b2.view(), out.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"bias: expected rank 1"});
  }
  SECTION("dtypes that must match") {
    HostTensor w_h(DT::F16, {4, 4, 4}), out_h(DT::F16, {5, 16});
    out_h.poison();
    expect_error(monarch(x.view(), w1.view(), w_h.view(), nullptr, out.view()), FK_ERROR_DTYPE_MISMATCH,
                 {"w2: dtype fp16 differs from w1's dtype fp32"});
    expect_error(monarch(x.view(), w_h.view(), w_h.view(), nullptr, out.view()), FK_ERROR_DTYPE_MISMATCH,
                 {"w1: dtype fp16 differs from x's dtype fp32"});
    expect_error(monarch(x.view(), w1.view(), w2.view(), nullptr, out_h.view()), FK_ERROR_DTYPE_MISMATCH,
                 {"out: dtype fp16 differs from x's dtype fp32"});
    expect_error(blockdiag(x.view(), w_h.view(), nullptr, out.view()), FK_ERROR_DTYPE_MISMATCH,
                 {"w: dtype fp16 differs from x's dtype fp32"});
    CHECK(out_h.all_poison());
  }
  SECTION("out writing two elements to one address") {
    HostTensor os(DT::F32, {5, 16}, {0, 1});
    os.poison();
    expect_error(monarch(x.view(), w1.view(), w2.view(), nullptr, os.view()), FK_ERROR_BAD_STRIDES,
                 {"out", "one address"});
    expect_error(blockdiag(x.view(), w.view(), nullptr, os.view()), FK_ERROR_BAD_STRIDES,
                 {"out", "one address"});
    CHECK(os.all_poison());
  }
  SECTION("out sharing memory with a weight or the bias") {
    HostTensor in_out(DT::F32, {4, 4, 4}), b_in_out(DT::F32, {16});
    in_out.dl.data = out.bytes.data();  // 256 bytes over out's 320
    b_in_out.dl.data = out.bytes.data();
    expect_error(monarch(x.view(), in_out.view(), w2.view(), nullptr, out.view()), FK_ERROR_INVALID_ARGUMENT,
                 {"out: overlaps w1"});
    expect_error(monarch(x.view(), w1.view(), in_out.view(), nullptr, out.view()), FK_ERROR_INVALID_ARGUMENT,
                 {"out: overlaps w2"});
    expect_error(monarch(x.view(), w1.view(), w2.view(), b_in_out.view(), out.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"out: overlaps bias"});
    expect_error(blockdiag(x.view(), in_out.view(), nullptr, out.view()), FK_ERROR_INVALID_ARGUMENT,
                 {"out: overlaps w"});
    expect_error(blockdiag(x.view(), w.view(), b_in_out.view(), out.view()), FK_ERROR_INVALID_ARGUMENT,
                 {"out: overlaps bias"});
  }
  SECTION("a workspace over out") {
    fk_launch_t launch;
    REQUIRE(fk_launch_init(&launch) == FK_SUCCESS);
    launch.workspace = out.bytes.data();
    launch.workspace_bytes = 16;
    expect_error(monarch(x.view(), w1.view(), w2.view(), nullptr, out.view(), &launch),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace: overlaps out"});
    expect_error(fk_blockdiag_linear(c.ctx, &launch, &prm, x.view(), w.view(), nullptr, out.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace: overlaps out"});
  }
  SECTION("NULL out-parameters and context") {
    expect_error(fk_monarch_select_kernel(c.ctx, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view(),
                                          nullptr),
                 FK_ERROR_NULL_POINTER, {"variant_name"});
    expect_error(fk_blockdiag_linear_select_kernel(c.ctx, &prm, x.view(), w.view(), nullptr, out.view(),
                                                   nullptr),
                 FK_ERROR_NULL_POINTER, {"variant_name"});
    expect_error(fk_monarch_workspace_size(c.ctx, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view(),
                                           nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    const char* name = "untouched";
    expect_error(fk_monarch_select_kernel(nullptr, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view(),
                                          &name),
                 FK_ERROR_NULL_POINTER, {"context"});
    CHECK(std::string(name) == "untouched");
    uint64_t bytes = 12345;
    expect_error(fk_blockdiag_linear_workspace_size(nullptr, &prm, x.view(), w.view(), nullptr, out.view(),
                                                    &bytes),
                 FK_ERROR_NULL_POINTER, {"context"});
    CHECK(bytes == 12345u);
    CHECK(fk_monarch_params_init(nullptr) == FK_ERROR_NULL_POINTER);
  }
  CHECK(out.all_poison());
}

// Attention and GEMM rules that an audit of every rejection path (session 38) found reached by
// no deterministic test: ranks and dtypes of out / k / v / lse / cu_seqlens, an empty
// cu_seqlens, head_dim 0, outputs writing one address twice or sharing memory with an input,
// GEMM batch and rank rules, a workspace over an input, and NULL out-parameters. Outputs stay
// poisoned.
TEST_CASE("attention and gemm: per-tensor rules", "[validation][attention][gemm]") {
  Ctx c;
  SECTION("attention: ranks and dtypes of k, v, out and lse") {
    Attn a;
    HostTensor r3(DT::F32, {2, 7, 16}), out_h(DT::F16, {2, 5, 4, 8}), v_h(DT::F16, {2, 7, 2, 8}),
        lse2(DT::F32, {2, 4});
    out_h.poison();
    auto run = [&](const DLTensor* k, const DLTensor* v, const DLTensor* out, const DLTensor* lse) {
      return fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), k, v, nullptr, nullptr, out, lse);
    };
    expect_error(run(r3.view(), a.v.view(), a.out.view(), nullptr), FK_ERROR_SHAPE_MISMATCH,
                 {"k: expected rank 4"});
    expect_error(run(a.k.view(), r3.view(), a.out.view(), nullptr), FK_ERROR_SHAPE_MISMATCH,
                 {"v: expected rank 4"});
    expect_error(run(a.k.view(), a.v.view(), r3.view(), nullptr), FK_ERROR_SHAPE_MISMATCH,
                 {"out: expected rank 4"});
    expect_error(run(a.k.view(), v_h.view(), a.out.view(), nullptr), FK_ERROR_DTYPE_MISMATCH,
                 {"v: dtype fp16 differs from q's dtype fp32"});
    expect_error(run(a.k.view(), a.v.view(), out_h.view(), nullptr), FK_ERROR_DTYPE_MISMATCH,
                 {"out: dtype fp16 differs from q's dtype fp32"});
    expect_error(run(a.k.view(), a.v.view(), a.out.view(), lse2.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"lse: expected rank 3", "(batch, nheads, seqlen_q)"});
    CHECK(out_h.all_poison());
    CHECK(a.untouched());
  }
  SECTION("attention: head_dim 0") {
    Attn a(DT::F32, 2, 5, 7, 4, 2, 0);
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"q: head_dim 0 must be at least 1"});
  }
  SECTION("attention: cu_seqlens of rank 2 or with no entry") {
    Attn a(DT::F32, 1, 5, 7, 4, 2, 8);
    HostTensor q(DT::F32, {5, 4, 8}), k(DT::F32, {7, 2, 8}), v(DT::F32, {7, 2, 8}), out(DT::F32, {5, 4, 8});
    out.poison();
    HostTensor cq = fktest::int32_tensor({0, 5}), ck = fktest::int32_tensor({0, 7});
    HostTensor empty = fktest::int32_tensor({}), two(DT::I32, {2, 1});
    auto run = [&](const HostTensor& x, const HostTensor& y) {
      return fk_attention_forward(c.ctx, nullptr, &a.prm, q.view(), k.view(), v.view(), x.view(),
                                  y.view(), out.view(), nullptr);
    };
    expect_error(run(two, ck), FK_ERROR_SHAPE_MISMATCH, {"cu_seqlens_q: expected rank 1"});
    expect_error(run(cq, two), FK_ERROR_SHAPE_MISMATCH, {"cu_seqlens_k: expected rank 1"});
    expect_error(run(empty, empty), FK_ERROR_SHAPE_MISMATCH, {"cu_seqlens_q: needs at least one entry"});
    CHECK(out.all_poison());
  }
  SECTION("attention: out or lse writing one address twice, lse over an input") {
    Attn a;
    HostTensor out_s(DT::F32, {2, 5, 4, 8}, {0, 32, 8, 1}), lse_s(DT::F32, {2, 4, 5}, {0, 5, 1});
    out_s.poison();
    lse_s.poison();
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                      nullptr, out_s.view(), nullptr),
                 FK_ERROR_BAD_STRIDES, {"out", "one address"});
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                      nullptr, a.out.view(), lse_s.view()),
                 FK_ERROR_BAD_STRIDES, {"lse", "one address"});
    DLTensor lse_in_k = *a.lse.view();
    lse_in_k.data = a.k.bytes.data();  // lse's 160 bytes inside k's 448
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                      nullptr, a.out.view(), &lse_in_k),
                 FK_ERROR_INVALID_ARGUMENT, {"lse: overlaps k"});
    CHECK(out_s.all_poison());
    CHECK(lse_s.all_poison());
    CHECK(a.untouched());
  }
  SECTION("attention: NULL out-parameters and params") {
    Attn a;
    expect_error(fk_attention_select_kernel(c.ctx, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                            nullptr, a.out.view(), nullptr, nullptr),
                 FK_ERROR_NULL_POINTER, {"variant_name"});
    CHECK(fk_attention_params_init(nullptr) == FK_ERROR_NULL_POINTER);
    CHECK(a.untouched());
  }
  SECTION("gemm: d over c unless the same view, d over a scale") {
    Gemm g;
    DLTensor c_in_d = *g.c.view();
    c_in_d.data = g.d.bytes.data();
    c_in_d.byte_offset = 4;  // one element off: overlapping, not the same view
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), &c_in_d, nullptr, g.d.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"d: overlaps c", "unless they are the exact same view"});
    CHECK(g.d.all_poison());
  }
  SECTION("gemm: ranks and batches") {
    Gemm g;
    HostTensor r1(DT::F32, {20}), a3(DT::F32, {2, 3, 5}), b3(DT::F32, {2, 5, 4}), c3(DT::F32, {2, 3, 4}),
        bias2(DT::F32, {4, 1});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), r1.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"b: expected rank 2"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, r1.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"d: expected rank 2"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), r1.view(), nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"c: expected rank 2"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, a3.view(), g.b.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"a: batch 2 but d has no batch dimension"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), b3.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"b: batch 2 but d has no batch dimension"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), c3.view(), nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"c: batch 2 but d has no batch dimension"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, bias2.view(), g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"bias: expected rank 1"});
    CHECK(g.d.all_poison());
  }
  SECTION("attention: dimensions and contiguity of k, v, lse and q") {
    Attn a;
    HostTensor k6(DT::F32, {2, 7, 2, 6}), v1(DT::F32, {2, 7, 1, 8}), vb(DT::F32, {1, 7, 2, 8}),
        vs(DT::F32, {2, 6, 2, 8}), lh(DT::F32, {2, 3, 5}), lb(DT::F32, {1, 4, 5}), lq(DT::F32, {2, 4, 6}),
        ls(DT::F32, {2, 4, 5}, {40, 10, 2}), qs(DT::F32, {2, 5, 4, 8}, {320, 64, 16, 2});
    auto run = [&](const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* lse) {
      return fk_attention_forward(c.ctx, nullptr, &a.prm, q, k, v, nullptr, nullptr, a.out.view(), lse);
    };
    expect_error(run(a.q.view(), k6.view(), a.v.view(), nullptr), FK_ERROR_SHAPE_MISMATCH, {"k: head_dim is 6"});
    expect_error(run(a.q.view(), a.k.view(), v1.view(), nullptr), FK_ERROR_SHAPE_MISMATCH, {"v:", "1"});
    expect_error(run(a.q.view(), a.k.view(), vb.view(), nullptr), FK_ERROR_SHAPE_MISMATCH, {"v:", "1"});
    expect_error(run(a.q.view(), a.k.view(), vs.view(), nullptr), FK_ERROR_SHAPE_MISMATCH, {"v:", "6"});
    expect_error(run(a.q.view(), a.k.view(), a.v.view(), lh.view()), FK_ERROR_SHAPE_MISMATCH, {"lse: nheads is 3 but q gives 4; expected (batch, nheads, seqlen_q) = (2, 4, 5), got (2, 3, 5)"});
    expect_error(run(a.q.view(), a.k.view(), a.v.view(), lb.view()), FK_ERROR_SHAPE_MISMATCH, {"lse: batch is 1"});
    expect_error(run(a.q.view(), a.k.view(), a.v.view(), lq.view()), FK_ERROR_SHAPE_MISMATCH, {"lse: seqlen_q is 6"});
    expect_error(run(a.q.view(), a.k.view(), a.v.view(), ls.view()), FK_ERROR_BAD_STRIDES,
                 {"lse: the last dimension (seqlen_q) must be contiguous", "stride 2"});
    expect_error(run(qs.view(), a.k.view(), a.v.view(), nullptr), FK_ERROR_BAD_STRIDES,
                 {"q: the last dimension (head_dim) must be contiguous"});
    CHECK(a.untouched());
  }
  SECTION("attention: cu_seqlens rules the varlen section leaves out") {
    Attn a(DT::F32, 1, 5, 7, 4, 2, 8);
    HostTensor q(DT::F32, {9, 4, 8}), k(DT::F32, {11, 2, 8}), v(DT::F32, {11, 2, 8}), out(DT::F32, {9, 4, 8});
    out.poison();
    auto cu = [](std::vector<int32_t> vals) { return fktest::int32_tensor(vals); };
    HostTensor gq = cu({0, 4, 9}), gk = cu({0, 5, 11});
    auto run = [&](const HostTensor* x, const HostTensor* y) {
      return fk_attention_forward(c.ctx, nullptr, &a.prm, q.view(), k.view(), v.view(),
                                  x ? x->view() : nullptr, y ? y->view() : nullptr, out.view(), nullptr);
    };
    expect_error(run(nullptr, std::addressof(gk)), FK_ERROR_INVALID_ARGUMENT, {"together"});
    HostTensor q1 = cu({1, 4, 9}), kdown = cu({0, 6, 5}), klast = cu({0, 5, 10});
    expect_error(run(std::addressof(q1), std::addressof(gk)), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_q", "first"});
    expect_error(run(std::addressof(gq), std::addressof(kdown)), FK_ERROR_INVALID_ARGUMENT,
                 {"cu_seqlens_k", "monotonic"});
    expect_error(run(std::addressof(gq), std::addressof(klast)), FK_ERROR_INVALID_ARGUMENT, {"cu_seqlens_k", "last"});
    HostTensor strided(DT::I32, {3}, {2});
    expect_error(run(std::addressof(strided), std::addressof(gk)), FK_ERROR_BAD_STRIDES,
                 {"cu_seqlens_q: the last dimension", "contiguous"});
    CHECK(out.all_poison());
  }
  SECTION("gemm: dimensions of d and c, batches of b and c, bias and scale layout") {
    Gemm g;
    HostTensor d2(DT::F32, {2, 4}), c2(DT::F32, {2, 4}), c5(DT::F32, {3, 5}), bias_s(DT::F32, {4}, {2});
    d2.poison();
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, d2.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"d: M is 2 but a gives 3"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), c2.view(), nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"c: M is 2"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), c5.view(), nullptr, g.d.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"c: N is 5"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, bias_s.view(), g.d.view()),
                 FK_ERROR_BAD_STRIDES, {"bias", "contiguous"});
    HostTensor a3(DT::F32, {2, 3, 5}), b3(DT::F32, {3, 5, 4}), c3(DT::F32, {3, 3, 4}), d3(DT::F32, {2, 3, 4});
    d3.poison();
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, a3.view(), b3.view(), nullptr, nullptr, d3.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"b", "batch"});
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, a3.view(), g.b.view(), c3.view(), nullptr, d3.view()),
                 FK_ERROR_SHAPE_MISMATCH, {"c", "batch"});
    ScaledGemm sg;
    sg.sa.init(DT::F32, {3, 1});
    expect_error(sg.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"scale_a", "got rank 2"});
    ScaledGemm sh;
    sh.sb.init(DT::F32, {4}, {2});
    expect_error(sh.run(c.ctx), FK_ERROR_BAD_STRIDES, {"scale_b: must be contiguous", "stride 2"});
    CHECK(d2.all_poison());
    CHECK(d3.all_poison());
    CHECK(g.d.all_poison());
    CHECK(sg.d.all_poison());
    CHECK(sh.d.all_poison());
  }
  SECTION("gemm: a workspace over an input, NULL out-parameters") {
    Gemm g;
    fk_launch_t launch;
    REQUIRE(fk_launch_init(&launch) == FK_SUCCESS);
    launch.workspace = g.b.bytes.data();
    launch.workspace_bytes = 8;
    expect_error(fk_gemm(c.ctx, &launch, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace: overlaps b"});
    expect_error(fk_gemm_select_kernel(c.ctx, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view(),
                                       nullptr),
                 FK_ERROR_NULL_POINTER, {"variant_name"});
    expect_error(fk_gemm_workspace_size(c.ctx, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view(),
                                        nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    CHECK(fk_gemm_params_init(nullptr) == FK_ERROR_NULL_POINTER);
    CHECK(g.d.all_poison());
  }
}

// The tensor-view rules no deterministic test reached (one shared function for every tensor of
// every entry point; here through fk_gemm_scaled's d and a): vector dtypes, a NULL shape,
// a negative extent, a negative rank; and the launch rules through fk_gemm_scaled.
TEST_CASE("tensors and launch: generic rules through fk_gemm_scaled", "[validation][tensor][gemm]") {
  Ctx c;
  ScaledGemm g;
  auto run = [&](const fk_launch_t* launch, const DLTensor* a, const DLTensor* d) {
    return fk_gemm_scaled(c.ctx, launch, &g.prm, a, g.b.view(), g.sa.view(), g.sb.view(), nullptr,
                          nullptr, d);
  };
  SECTION("vector dtype, NULL shape, negative extent, negative rank") {
    DLTensor d = *g.d.view();
    d.dtype.lanes = 2;
    expect_error(run(nullptr, g.a.view(), &d), FK_ERROR_DTYPE_MISMATCH, {"d: vector dtypes (lanes 2)"});
    d.dtype.lanes = 0;
    expect_error(run(nullptr, g.a.view(), &d), FK_ERROR_DTYPE_MISMATCH, {"d: malformed dtype (lanes 0)"});
    DLTensor a = *g.a.view();
    a.shape = nullptr;
    expect_error(run(nullptr, &a, g.d.view()), FK_ERROR_NULL_POINTER, {"a: shape is NULL"});
    int64_t neg[2] = {3, -5};
    a = *g.a.view();
    a.shape = neg;
    expect_error(run(nullptr, &a, g.d.view()), FK_ERROR_SHAPE_MISMATCH,
                 {"a: dimension 1 has negative extent -5"});
    a = *g.a.view();
    a.ndim = -1;
    expect_error(run(nullptr, &a, g.d.view()), FK_ERROR_SHAPE_MISMATCH, {"a: rank -1 is not supported"});
  }
  SECTION("launch: struct_size, flags, NULL workspace with a size, a wrapping range") {
    fk_launch_t launch;
    REQUIRE(fk_launch_init(&launch) == FK_SUCCESS);
    launch.struct_size = 3;
    expect_error(run(&launch, g.a.view(), g.d.view()), FK_ERROR_BAD_STRUCT_SIZE, {"launch"});
    fk_launch_init(&launch);
    launch.flags = 1;
    expect_error(run(&launch, g.a.view(), g.d.view()), FK_ERROR_INVALID_ARGUMENT, {"launch: flags must be 0"});
    fk_launch_init(&launch);
    launch.workspace_bytes = 32;
    expect_error(run(&launch, g.a.view(), g.d.view()), FK_ERROR_NULL_POINTER,
                 {"launch: workspace is NULL but workspace_bytes is 32"});
    launch.workspace = reinterpret_cast<void*>(~uintptr_t(0) - 15);
    expect_error(run(&launch, g.a.view(), g.d.view()), FK_ERROR_INVALID_ARGUMENT,
                 {"wraps around the address space"});
  }
  CHECK(g.d.all_poison());
}

TEST_CASE("outputs: no sharing memory with inputs, no self-overlap, no overflowing extents",
          "[validation][overlap]") {
  Ctx c;
  SECTION("gemm: d overlapping a is refused; d == c (same view) is the in-place form") {
    Gemm g(4, 4, 4);
    std::mt19937_64 rng(fktest::test_seed() + 11);
    HostTensor buf(DT::F32, {5, 4});  // a = rows 0..3, d = rows 1..4 of one buffer
    buf.fill_normal(rng);
    int64_t shape[2] = {4, 4};
    DLTensor a_view = *buf.view(), d_view = *buf.view();
    a_view.shape = d_view.shape = shape;
    a_view.strides = d_view.strides = nullptr;
    d_view.byte_offset = 4 * sizeof(float);
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, &a_view, g.b.view(), nullptr, nullptr, &d_view),
                 FK_ERROR_INVALID_ARGUMENT, {"d", "overlaps a"});
    // In place: d is exactly c, beta = 1.
    HostTensor cd(DT::F32, {4, 4});
    cd.fill_normal(rng);
    const std::vector<double> c0 = cd.to_vector();
    g.prm.beta = 1.0f;
    REQUIRE(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), cd.view(), nullptr, cd.view()) ==
            FK_SUCCESS);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double ref = c0[size_t(i * 4 + j)];
        for (int64_t k = 0; k < 4; ++k) ref += g.a.get({i, k}) * g.b.get({k, j});
        CHECK(std::fabs(cd.get({i, j}) - ref) <= 1e-4 * (1 + std::fabs(ref)));
      }
  }
  SECTION("attention: out may not be q, lse may not overlap out") {
    Attn a;
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.q.view(), nullptr),
                 FK_ERROR_INVALID_ARGUMENT, {"out", "overlaps q"});
    DLTensor lse_in_out = *a.lse.view();
    lse_in_out.data = a.out.bytes.data();  // lse (2*4*5 floats) inside out's memory
    expect_error(fk_attention_forward(c.ctx, nullptr, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                      nullptr, nullptr, a.out.view(), &lse_in_out),
                 FK_ERROR_INVALID_ARGUMENT, {"lse", "overlaps out"});
    CHECK(a.untouched());
  }
  SECTION("an output writing two elements to one address") {
    Gemm g(5, 4, 3);
    HostTensor d(DT::F32, {5, 4}, {0, 1});  // every row at the same address
    d.poison();
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, d.view()),
                 FK_ERROR_BAD_STRIDES, {"d", "one address"});
    CHECK(d.all_poison());
  }
  SECTION("extents whose element count or span overflows 64 bits") {
    Attn a;
    int64_t huge[4] = {int64_t(1) << 40, int64_t(1) << 40, 4, 16};
    a.q.dl.shape = huge;
    a.q.dl.strides = nullptr;
    expect_error(a.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"q", "overflows"});
    Gemm g;
    int64_t big_stride[2] = {int64_t(1) << 62, 1};
    g.a.dl.strides = big_stride;
    expect_error(g.run(c.ctx), FK_ERROR_SHAPE_MISMATCH, {"a", "2^62"});
    CHECK(a.untouched());
    CHECK(g.d.all_poison());
  }
  SECTION("fftconv: an enormous seqlen is refused at once (no overflow in size arithmetic)") {
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    o.channels = 1;
    fk_fftconv_plan_t* plan = nullptr;
    for (int64_t len : {(int64_t(1) << 61) + 1, (int64_t(1) << 62) + 1, INT64_MAX}) {
      o.seqlen = len;
      expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                   {"options.seqlen", "2^22"});
    }
    o.seqlen = 16;
    o.mode = FK_FFTCONV_CIRCULAR;
    o.filter_len = INT64_MAX;
    expect_error(fk_fftconv_plan_create(c.ctx, &o, &plan), FK_ERROR_INVALID_ARGUMENT,
                 {"options.filter_len"});
    CHECK(plan == nullptr);
  }
}

TEST_CASE("tensors: data + byte_offset must be an address, no wrap around the address space",
          "[validation][tensor]") {
  // A sum that wraps to exactly 0 once passed the NULL check (made on data alone) and was
  // written through.
  Ctx c;
  Gemm g;
  DLTensor d = *g.d.view();
  d.data = reinterpret_cast<void*>(uintptr_t(4096));
  d.byte_offset = uint64_t(0) - 4096;  // data + byte_offset == 0
  expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, &d),
               FK_ERROR_NULL_POINTER, {"d: data", "wraps"});
  d.byte_offset = uint64_t(0) - 2048;  // past the top, to 2048
  expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, &d),
               FK_ERROR_NULL_POINTER, {"d: data", "wraps"});
  // A start just below the top whose 48 bytes (3 x 4 floats) run past it.
  d.data = reinterpret_cast<void*>(~uintptr_t(0) - 15);
  d.byte_offset = 0;
  expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, &d),
               FK_ERROR_NULL_POINTER, {"d: data + byte_offset", "wraps"});
  // An input the same way.
  DLTensor a = *g.a.view();
  a.data = reinterpret_cast<void*>(uintptr_t(64));
  a.byte_offset = uint64_t(0) - 64;
  expect_error(fk_gemm(c.ctx, nullptr, &g.prm, &a, g.b.view(), nullptr, nullptr, g.d.view()),
               FK_ERROR_NULL_POINTER, {"a: data", "wraps"});
  CHECK(g.d.all_poison());
  // An empty tensor addresses nothing, so its end is not checked, but the sum itself must
  // not wrap either; data + byte_offset == 0 is the NULL data an empty tensor may have.
  Gemm e(0, 4, 5);
  DLTensor de = *e.d.view();
  de.data = reinterpret_cast<void*>(uintptr_t(4096));
  de.byte_offset = uint64_t(0) - 2048;
  expect_error(fk_gemm(c.ctx, nullptr, &e.prm, e.a.view(), e.b.view(), nullptr, nullptr, &de),
               FK_ERROR_NULL_POINTER, {"d: data", "wraps"});
  de.data = nullptr;
  de.byte_offset = 0;
  CHECK(fk_gemm(c.ctx, nullptr, &e.prm, e.a.view(), e.b.view(), nullptr, nullptr, &de) ==
        FK_SUCCESS);
  // A byte_offset past 2^62 on a real pointer does not wrap, but points into no allocation
  // (one such offset passed validation and crashed the CPU kernel): refused, for inputs and
  // outputs, and with NULL data on an empty tensor; 2^62 itself is within the rule.
  for (uint64_t off : {(uint64_t(1) << 63), (uint64_t(1) << 62) + 64}) {
    DLTensor a2 = *g.a.view();
    a2.byte_offset = off;
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, &a2, g.b.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"a: byte_offset", "2^62"});
    DLTensor d2 = *g.d.view();
    d2.byte_offset = off;
    expect_error(fk_gemm(c.ctx, nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, &d2),
                 FK_ERROR_INVALID_ARGUMENT, {"d: byte_offset", "2^62"});
  }
  CHECK(g.d.all_poison());
  DLTensor de2 = *e.d.view();
  de2.data = nullptr;
  de2.byte_offset = (uint64_t(1) << 62) + 1;
  expect_error(fk_gemm(c.ctx, nullptr, &e.prm, e.a.view(), e.b.view(), nullptr, nullptr, &de2),
               FK_ERROR_INVALID_ARGUMENT, {"d: byte_offset", "2^62"});
  de2.byte_offset = uint64_t(1) << 62;
  CHECK(fk_gemm(c.ctx, nullptr, &e.prm, e.a.view(), e.b.view(), nullptr, nullptr, &de2) ==
        FK_SUCCESS);
}

TEST_CASE("launch workspace: a range that wraps around the address space",
          "[validation][workspace]") {
  // The overlap checks compare the range's ends; a wrapped end once let an overlapping
  // workspace through.
  Ctx c;
  Gemm g;
  fk_launch_t l;
  fk_launch_init(&l);
  l.workspace = const_cast<void*>(g.d.view()->data);
  l.workspace_bytes = ~uint64_t(0) - 32;
  expect_error(fk_gemm(c.ctx, &l, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view()),
               FK_ERROR_INVALID_ARGUMENT, {"launch: workspace", "wraps"});
  CHECK(g.d.all_poison());
}

TEST_CASE("launch workspace: must not overlap a tensor of the call", "[validation][workspace]") {
  // Each op refuses a workspace that overlaps one of its tensors (input or output), naming it,
  // with the outputs untouched; a disjoint workspace is accepted (the CPU backend ignores it).
  Ctx c;
  std::vector<float> spare(4096);
  fk_launch_t l;
  fk_launch_init(&l);
  auto use = [&](const HostTensor& t, uint64_t bytes) {
    l.workspace = const_cast<void*>(static_cast<const void*>(t.view()->data));
    l.workspace_bytes = bytes;
  };
  SECTION("gemm: over a, over d; disjoint") {
    Gemm g(3, 4, 5);
    use(g.a, 8);
    expect_error(fk_gemm(c.ctx, &l, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps a"});
    use(g.d, 4);
    expect_error(fk_gemm(c.ctx, &l, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps d"});
    CHECK(g.d.all_poison());
    l.workspace = spare.data();
    l.workspace_bytes = spare.size() * sizeof(float);
    CHECK(fk_gemm(c.ctx, &l, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr, g.d.view()) ==
          FK_SUCCESS);
  }
  SECTION("attention: over lse") {
    Attn a;
    use(a.lse, 16);
    expect_error(fk_attention_forward(c.ctx, &l, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                      nullptr, a.out.view(), a.lse.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps lse"});
    CHECK(a.untouched());
  }
  SECTION("monarch and blockdiag_linear: over w2, over x") {
    std::mt19937_64 rng(fktest::test_seed() + 13);
    HostTensor x(DT::F32, {5, 16}), w1(DT::F32, {4, 4, 4}), w2(DT::F32, {4, 4, 4});
    HostTensor out(DT::F32, {5, 16});
    x.fill_normal(rng);
    w1.fill_normal(rng);
    w2.fill_normal(rng);
    out.poison();
    fk_monarch_params_t prm;
    fk_monarch_params_init(&prm);
    use(w2, 256);
    expect_error(fk_monarch(c.ctx, &l, &prm, x.view(), w1.view(), w2.view(), nullptr, out.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps w2"});
    use(x, 4);
    expect_error(fk_blockdiag_linear(c.ctx, &l, &prm, x.view(), w1.view(), nullptr, out.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps x"});
    CHECK(out.all_poison());
  }
  SECTION("fftconv: over y") {
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    o.channels = 3;
    o.seqlen = 100;
    fk_fftconv_plan_t* plan = nullptr;
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    std::mt19937_64 rng(fktest::test_seed() + 14);
    HostTensor u(DT::F32, {2, 3, 100}), k(DT::F32, {3, 100}), y(DT::F32, {2, 3, 100});
    u.fill_normal(rng);
    k.fill_normal(rng);
    y.poison();
    use(y, 1);
    expect_error(fk_fftconv_forward(plan, &l, u.view(), k.view(), nullptr, nullptr, nullptr, y.view()),
                 FK_ERROR_INVALID_ARGUMENT, {"launch.workspace", "overlaps y"});
    CHECK(y.all_poison());
    fk_fftconv_plan_destroy(plan);
  }
}

TEST_CASE("workspace size queries: validation and the CPU backend's zero", "[validation][workspace]") {
  // The queries validate exactly like their ops (same status, same message, output untouched)
  // and report 0 on the CPU backend, which takes no scratch. The CUDA suite checks the sizes
  // against real calls (tests/gpu/test_graph_capture.cpp).
  Ctx c;
  uint64_t bytes = 12345;
  SECTION("attention") {
    Attn a;
    REQUIRE(fk_attention_workspace_size(c.ctx, &a.prm, a.q.view(), a.k.view(), a.v.view(), nullptr,
                                        nullptr, a.out.view(), a.lse.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    expect_error(fk_attention_workspace_size(c.ctx, &a.prm, a.q.view(), a.k.view(), a.v.view(),
                                             nullptr, nullptr, a.out.view(), a.lse.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    HostTensor bad(DT::F32, {2, 5, 4, 300});
    bytes = 7;
    expect_error(fk_attention_workspace_size(c.ctx, &a.prm, bad.view(), a.k.view(), a.v.view(),
                                             nullptr, nullptr, a.out.view(), nullptr, &bytes),
                 FK_ERROR_SHAPE_MISMATCH, {"head_dim"});
    CHECK(bytes == 7);
    CHECK(a.untouched());
  }
  SECTION("gemm and gemm_scaled") {
    Gemm g(3, 4, 5);
    REQUIRE(fk_gemm_workspace_size(c.ctx, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr,
                                   g.d.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    bytes = 1;
    REQUIRE(fk_gemm_scaled_workspace_size(c.ctx, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr,
                                          nullptr, nullptr, g.d.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    HostTensor wrong(DT::F32, {6, 4});
    expect_error(fk_gemm_workspace_size(c.ctx, &g.prm, g.a.view(), wrong.view(), nullptr, nullptr,
                                        g.d.view(), &bytes),
                 FK_ERROR_SHAPE_MISMATCH, {"b"});
    expect_error(fk_gemm_workspace_size(nullptr, &g.prm, g.a.view(), g.b.view(), nullptr, nullptr,
                                        g.d.view(), &bytes),
                 FK_ERROR_NULL_POINTER, {"context"});
    expect_error(fk_gemm_scaled_workspace_size(c.ctx, &g.prm, g.a.view(), g.b.view(), nullptr,
                                               nullptr, nullptr, nullptr, g.d.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    CHECK(g.d.all_poison());
  }
  SECTION("monarch and blockdiag_linear") {
    std::mt19937_64 rng(fktest::test_seed() + 11);
    HostTensor x(DT::F32, {5, 16}), w1(DT::F32, {4, 4, 4}), w2(DT::F32, {4, 4, 4});
    HostTensor out(DT::F32, {5, 16});
    x.fill_normal(rng);
    w1.fill_normal(rng);
    w2.fill_normal(rng);
    out.poison();
    fk_monarch_params_t prm;
    fk_monarch_params_init(&prm);
    REQUIRE(fk_monarch_workspace_size(c.ctx, &prm, x.view(), w1.view(), w2.view(), nullptr,
                                      out.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    bytes = 1;
    REQUIRE(fk_blockdiag_linear_workspace_size(c.ctx, &prm, x.view(), w1.view(), nullptr,
                                               out.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    HostTensor bad(DT::F32, {3, 4, 4});
    expect_error(fk_monarch_workspace_size(c.ctx, &prm, x.view(), w1.view(), bad.view(), nullptr,
                                           out.view(), &bytes),
                 FK_ERROR_SHAPE_MISMATCH, {"w2", "nblocks2"});
    expect_error(fk_blockdiag_linear_workspace_size(c.ctx, &prm, x.view(), w1.view(), nullptr,
                                                    out.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    CHECK(out.all_poison());
  }
  SECTION("fftconv") {
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    o.channels = 3;
    o.seqlen = 100;
    fk_fftconv_plan_t* plan = nullptr;
    REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
    std::mt19937_64 rng(fktest::test_seed() + 12);
    HostTensor u(DT::F32, {2, 3, 100}), k(DT::F32, {3, 100}), y(DT::F32, {2, 3, 100});
    u.fill_normal(rng);
    k.fill_normal(rng);
    y.poison();
    REQUIRE(fk_fftconv_workspace_size(plan, u.view(), k.view(), nullptr, nullptr, nullptr,
                                      y.view(), &bytes) == FK_SUCCESS);
    CHECK(bytes == 0);
    HostTensor short_k(DT::F32, {2, 100});
    expect_error(fk_fftconv_workspace_size(plan, u.view(), short_k.view(), nullptr, nullptr,
                                           nullptr, y.view(), &bytes),
                 FK_ERROR_SHAPE_MISMATCH, {"k"});
    expect_error(fk_fftconv_workspace_size(nullptr, u.view(), k.view(), nullptr, nullptr, nullptr,
                                           y.view(), &bytes),
                 FK_ERROR_NULL_POINTER, {"plan"});
    expect_error(fk_fftconv_workspace_size(plan, u.view(), k.view(), nullptr, nullptr, nullptr,
                                           y.view(), nullptr),
                 FK_ERROR_NULL_POINTER, {"workspace_bytes"});
    CHECK(y.all_poison());
    fk_fftconv_plan_destroy(plan);
  }
}

// Rules the audit of every rejection path found without a deterministic test of their exact
// status (some were reached only by the fuzz suite, which checks the category): packed query
// rows past the int32 range of cu_seqlens, fk_fftconv_plan_get_options on an unprepared struct,
// the last dimension of each Monarch / FFT-convolution tensor, the compactness of w and w2, and
// a CUDA tensor on a CPU context. Outputs stay poisoned.
TEST_CASE("attention: more than 2^31 - 1 packed query rows name q", "[validation][attention]") {
  // Refused before any element is read or written (test_fuzz.cpp does the same for k): the
  // extents describe 8 GiB that the small buffers below do not hold.
  Ctx c;
  const int64_t rows = int64_t(INT32_MAX) + 1;
  std::vector<float> mem(64, 0.0f), outbuf(64, 0.0f);
  std::vector<int32_t> cu{0, 2};
  int64_t q_shape[3] = {rows, 1, 1}, kv_shape[3] = {2, 1, 1}, cu_shape[1] = {2};
  auto raw = [](void* data, int64_t* shape, int ndim, DLDataType dt) {
    DLTensor t{};
    t.data = data;
    t.device = DLDevice{kDLCPU, 0};
    t.ndim = ndim;
    t.dtype = dt;
    t.shape = shape;
    t.strides = nullptr;
    return t;
  };
  const DLDataType f32{kDLFloat, 32, 1}, i32{kDLInt, 32, 1};
  DLTensor q = raw(mem.data(), q_shape, 3, f32), k = raw(mem.data(), kv_shape, 3, f32),
           v = raw(mem.data(), kv_shape, 3, f32), out = raw(outbuf.data(), q_shape, 3, f32),
           cuq = raw(cu.data(), cu_shape, 1, i32), cuk = raw(cu.data(), cu_shape, 1, i32);
  fk_attention_params_t prm;
  fk_attention_params_init(&prm);
  expect_error(fk_attention_forward(c.ctx, nullptr, &prm, &q, &k, &v, &cuq, &cuk, &out, nullptr),
               FK_ERROR_SHAPE_MISMATCH, {"q: total rows 2147483648", "int32"});
  const char* name = "untouched";
  expect_error(fk_attention_select_kernel(c.ctx, &prm, &q, &k, &v, &cuq, &cuk, &out, nullptr, &name),
               FK_ERROR_SHAPE_MISMATCH, {"q: total rows"});
  CHECK(std::string(name) == "untouched");
  for (float f : outbuf) CHECK(f == 0.0f);
}

TEST_CASE("fftconv: fk_fftconv_plan_get_options needs a prepared struct", "[validation][fftconv]") {
  Ctx c;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.channels = 3;
  o.seqlen = 16;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE(fk_fftconv_plan_create(c.ctx, &o, &plan) == FK_SUCCESS);
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(plan,
                                                                                fk_fftconv_plan_destroy);
  for (uint32_t size : {0u, 4u, uint32_t(sizeof(fk_fftconv_plan_options_t) + 8)}) {
    INFO("struct_size " << size);
    fk_fftconv_plan_options_t got;
    std::memset(&got, 0x5a, sizeof got);
    got.struct_size = size;
    expect_error(fk_fftconv_plan_get_options(plan, &got), FK_ERROR_BAD_STRUCT_SIZE,
                 {"options: struct_size", "fk_fftconv_plan_options_init"});
    CHECK(got.struct_size == size);  // untouched
    CHECK(got.channels == int64_t(0x5a5a5a5a5a5a5a5a));
  }
}

TEST_CASE("monarch and blockdiag: each last dimension contiguous, weights compact",
          "[validation][monarch]") {
  Ctx c;
  std::mt19937_64 rng(fktest::test_seed() + 19);
  HostTensor x(DT::F32, {5, 16}), w1(DT::F32, {4, 4, 4}), w2(DT::F32, {4, 4, 4}), w(DT::F32, {4, 4, 4});
  HostTensor bias(DT::F32, {16}), out(DT::F32, {5, 16});
  for (HostTensor* t : {std::addressof(x), std::addressof(w1), std::addressof(w2), std::addressof(w),
                        std::addressof(bias)})
    t->fill_normal(rng);
  out.poison();
  // Every element at stride 2: the same shapes, last dimension not contiguous.
  HostTensor xs(DT::F32, {5, 16}, {32, 2}), outs(DT::F32, {5, 16}, {32, 2}), bs(DT::F32, {16}, {2});
  HostTensor wpad(DT::F32, {4, 4, 4}, {32, 8, 1});  // rows padded: not compact
  xs.fill_normal(rng);
  bs.fill_normal(rng);
  wpad.fill_normal(rng);
  outs.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  auto monarch = [&](const HostTensor& xx, const HostTensor& a, const HostTensor& b, const HostTensor* bb,
                     const HostTensor& oo) {
    return fk_monarch(c.ctx, nullptr, &prm, xx.view(), a.view(), b.view(), bb ? bb->view() : nullptr,
                      oo.view());
  };
  auto blockdiag = [&](const HostTensor& xx, const HostTensor& ww, const HostTensor* bb, const HostTensor& oo) {
    return fk_blockdiag_linear(c.ctx, nullptr, &prm, xx.view(), ww.view(), bb ? bb->view() : nullptr,
                               oo.view());
  };
  expect_error(monarch(xs, w1, w2, nullptr, out), FK_ERROR_BAD_STRIDES,
               {"x: the last dimension (n) must be contiguous", "stride 2"});
  expect_error(monarch(x, w1, w2, nullptr, outs), FK_ERROR_BAD_STRIDES,
               {"out: the last dimension (n_out) must be contiguous", "stride 2"});
  expect_error(monarch(x, w1, w2, std::addressof(bs), out), FK_ERROR_BAD_STRIDES,
               {"bias: the last dimension (n_out) must be contiguous", "stride 2"});
  expect_error(monarch(x, w1, wpad, nullptr, out), FK_ERROR_BAD_STRIDES,
               {"w2: must be compact row-major", "stride 8, expected 4"});
  expect_error(blockdiag(xs, w, nullptr, out), FK_ERROR_BAD_STRIDES,
               {"x: the last dimension (n) must be contiguous"});
  expect_error(blockdiag(x, w, nullptr, outs), FK_ERROR_BAD_STRIDES,
               {"out: the last dimension (n_out) must be contiguous"});
  expect_error(blockdiag(x, w, std::addressof(bs), out), FK_ERROR_BAD_STRIDES,
               {"bias: the last dimension (n_out) must be contiguous"});
  expect_error(blockdiag(x, wpad, nullptr, out), FK_ERROR_BAD_STRIDES,
               {"w: must be compact row-major", "stride 8, expected 4"});
  // The queries refuse the same way.
  const char* name = "untouched";
  expect_error(fk_blockdiag_linear_select_kernel(c.ctx, &prm, x.view(), w.view(), bs.view(), out.view(),
                                                 &name),
               FK_ERROR_BAD_STRIDES, {"bias: the last dimension"});
  CHECK(std::string(name) == "untouched");
  CHECK(out.all_poison());
  CHECK(outs.all_poison());
}

TEST_CASE("tensors: a CUDA device tensor on a CPU context", "[validation][tensor]") {
  // The CPU backend takes kDLCPU and kDLCUDAHost memory and never reads device_id: a kDLCUDA
  // tensor is refused for its device type (whatever its device_id), naming the tensor.
  Ctx c;
  std::mt19937_64 rng(fktest::test_seed() + 29);
  HostTensor x(DT::F32, {5, 16}), w(DT::F32, {4, 4, 4}), out(DT::F32, {5, 16});
  x.fill_normal(rng);
  w.fill_normal(rng);
  out.poison();
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  x.dl.device = DLDevice{kDLCUDA, 1};
  expect_error(fk_blockdiag_linear(c.ctx, nullptr, &prm, x.view(), w.view(), nullptr, out.view()),
               FK_ERROR_WRONG_DEVICE, {"x: tensor is on kDLCUDA (2)", "CPU backend"});
  CHECK(out.all_poison());
  // Pinned host memory with any device_id is accepted.
  x.dl.device = DLDevice{kDLCUDAHost, 1};
  CHECK(fk_blockdiag_linear(c.ctx, nullptr, &prm, x.view(), w.view(), nullptr, out.view()) == FK_SUCCESS);
}

#if defined(__linux__)
#include <pthread.h>

namespace {
// A log callback that ends its thread (pthread_exit), as a logger may on a fatal condition: the
// forced unwinding must pass through the library (its exception guards once swallowed it, and
// glibc aborted the process: "FATAL: exception not rethrown").
void exit_thread_callback(fk_log_level_t, const char*, void*) { pthread_exit(nullptr); }
void mark_cleanup(void* flag) { *static_cast<int*>(flag) = 1; }
struct ExitArgs {
  bool guarded_call;
  int cleanup_ran = 0;
  int returned = 0;
};
void* exit_thread_worker(void* p) {
  auto* a = static_cast<ExitArgs*>(p);
  pthread_cleanup_push(mark_cleanup, &a->cleanup_ran);
  if (a->guarded_call) {
    fk_context_options_t o;
    fk_context_options_init(&o);
    o.flags = 7;  // refused inside the call's exception guard: logs at ERROR
    fk_context_t* c = nullptr;
    (void)fk_context_create(&o, &c);
  } else {
    (void)fk_context_options_init(nullptr);  // refused before any guard: logs at ERROR
  }
  a->returned = 1;
  pthread_cleanup_pop(0);
  return nullptr;
}
}  // namespace

TEST_CASE("validation: a log callback may end its thread (forced unwinding passes)", "[validation][log]") {
  REQUIRE(fk_set_log_callback(exit_thread_callback, FK_LOG_ERROR, nullptr) == FK_SUCCESS);
  for (bool guarded_call : {false, true}) {
    ExitArgs a{guarded_call};
    pthread_t t;
    REQUIRE(pthread_create(&t, nullptr, exit_thread_worker, &a) == 0);
    REQUIRE(pthread_join(t, nullptr) == 0);
    CHECK(a.cleanup_ran == 1);
    CHECK(a.returned == 0);
  }
  REQUIRE(fk_set_log_callback(nullptr, FK_LOG_ERROR, nullptr) == FK_SUCCESS);
}
#endif
