// fk_attention_kvcache_forward / _select_kernel / _workspace_size (0.5.0) on the CPU backend:
// queries over a contiguous or paged KV cache (FlashAttention's flash_attn_with_kvcache
// contract) against the float64 reference run one sequence at a time with seqlen_k =
// cache_seqlens[b] on that sequence's keys gathered out of the pages by the test
// (tests/reference/kvcache.hpp). Inputs random, outputs poisoned; the cache must come back
// unchanged. Then one case per validation rule: the status, the argument named in the message,
// the same status from select_kernel and workspace_size, and outputs left untouched.
#include <sstream>
#include <string>
#include <utility>

#include "cpu_test_helpers.hpp"
#include "reference/kvcache.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::HostTensor;
using fkkv::Layout;
using fkkv::Tensors;

struct Opts {
  bool causal = false;
  int32_t wl = -1, wr = -1;
  float softcap = 0.0f;
  float scale = NAN;
  bool with_lse = true;
  int threads = 2;
};

fk_attention_params_t params_of(const Opts& o) {
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = o.causal;
  p.window_size_left = o.wl;
  p.window_size_right = o.wr;
  p.softcap = o.softcap;
  p.softmax_scale = o.scale;
  return p;
}

fkref::AttentionParams ref_of(const Opts& o) {
  fkref::AttentionParams r;
  r.softmax_scale = o.scale;
  r.causal = o.causal;
  r.window_left = o.wl;
  r.window_right = o.wr;
  r.softcap = o.softcap;
  return r;
}

std::string describe(const Layout& L, const Opts& o) {
  std::ostringstream s;
  s << (L.paged ? "paged" : "contiguous") << " b" << L.batch << " sq" << L.seqlen_q << " h"
    << L.nheads << "/" << L.nheads_k << " d" << L.head_dim << " " << fktest::dt_name(L.dt);
  if (L.paged) s << " page " << L.page << " x " << L.max_blocks;
  else s << " seqlen_cache " << L.seqlen_cache;
  s << " cache_seqlens";
  if (L.null_seqlens) s << " NULL";
  else for (auto x : L.seqlens) s << " " << x;
  s << (L.share ? " shared" : "") << (L.shuffle ? " shuffled" : "") << " pads " << L.pool_pad
    << "/" << L.v_pool_pad << "/" << L.table_pad << "/" << L.io_pad
    << (o.causal ? " causal" : "") << " window(" << o.wl << "," << o.wr << ") softcap "
    << o.softcap << " scale " << o.scale << (o.with_lse ? "" : " no-lse") << " threads "
    << o.threads << ", seed " << fktest::test_seed();
  return s.str();
}

void run(const Layout& L, const Opts& o, uint64_t tag) {
  INFO(describe(L, o));
  auto rng = fkcpu::rng_for(tag);
  Tensors t = fkkv::build(L, rng);
  const std::vector<uint8_t> k_before = t.k.bytes, v_before = t.v.bytes, bt_before = t.table.bytes;
  const fk_context_t* ctx = fkcpu::cpu_context(o.threads);
  const fk_attention_params_t p = params_of(o);
  const DLTensor* lse = o.with_lse ? t.lse.view() : nullptr;

  const char* variant = nullptr;
  fk_status_t st = fk_attention_kvcache_select_kernel(ctx, &p, &t.q, &t.k, &t.v, t.seqlens_arg(),
                                                      t.table_arg(), &t.out, lse, &variant);
  INFO("select_kernel: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  REQUIRE(variant != nullptr);
  CHECK(std::string(variant) == "cpu.attention");
  uint64_t ws = 12345;
  st = fk_attention_kvcache_workspace_size(ctx, &p, &t.q, &t.k, &t.v, t.seqlens_arg(),
                                           t.table_arg(), &t.out, lse, &ws);
  INFO("workspace_size: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  CHECK(ws == 0);

  st = fk_attention_kvcache_forward(ctx, nullptr, &p, &t.q, &t.k, &t.v, t.seqlens_arg(),
                                    t.table_arg(), &t.out, lse);
  INFO("fk_attention_kvcache_forward: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  CHECK(t.k.bytes == k_before);  // the cache is read, never written
  CHECK(t.v.bytes == v_before);
  CHECK(t.table.bytes == bt_before);

  std::vector<double> ref_out, ref_lse;
  fkkv::reference(L, t, ref_of(o), ref_out, ref_lse);
  check_output(t.out, ref_out, L.dt, "out");
  if (o.with_lse) check_output(t.lse, ref_lse, DT::F32, "lse");  // else the library never sees lse
}

// A paged decode/prefill layout: batch = seqlens.size(), capacity max_blocks * page.
Layout paged(int64_t page, int64_t max_blocks, std::vector<int32_t> seqlens, int64_t sq,
             int64_t h, int64_t hk, int64_t d, DT dt) {
  Layout L;
  L.paged = true;
  L.page = page;
  L.max_blocks = max_blocks;
  L.batch = int64_t(seqlens.size());
  L.seqlens = std::move(seqlens);
  L.seqlen_q = sq;
  L.nheads = h;
  L.nheads_k = hk;
  L.head_dim = d;
  L.dt = dt;
  return L;
}

Layout contiguous(int64_t seqlen_cache, std::vector<int32_t> seqlens, int64_t sq, int64_t h,
                  int64_t hk, int64_t d, DT dt) {
  Layout L;
  L.paged = false;
  L.seqlen_cache = seqlen_cache;
  L.batch = int64_t(seqlens.size());
  L.seqlens = std::move(seqlens);
  L.seqlen_q = sq;
  L.nheads = h;
  L.nheads_k = hk;
  L.head_dim = d;
  L.dt = dt;
  return L;
}

// cache_seqlens for `page` and `max_blocks`: 0, one key, a partial last page, an exact page
// boundary, full capacity, and a middle length.
std::vector<int32_t> mixed_lengths(int64_t page, int64_t max_blocks) {
  const int64_t cap = page * max_blocks;
  std::vector<int32_t> v = {0, 1, int32_t(std::min(cap, page * (max_blocks / 2) + page / 2 + 1)),
                            int32_t(page * std::max<int64_t>(1, max_blocks - 1)), int32_t(cap),
                            int32_t(cap / 3 + 2)};
  for (auto& x : v) x = int32_t(std::min<int64_t>(x, cap));
  return v;
}

}  // namespace

TEST_CASE("cpu kvcache: paged decode, page sizes 1/16/64/48, every dtype",
          "[cpu][attention][kvcache]") {
  uint64_t tag = 20000;
  const int64_t pages[][2] = {{1, 70}, {16, 9}, {64, 3}, {48, 4}};  // page, max_blocks
  for (const auto& pg : pages)
    for (DT dt : fkcpu::kFloatTypes) {
      Layout L = paged(pg[0], pg[1], mixed_lengths(pg[0], pg[1]), 1, 8, 2, 64, dt);
      Opts o;
      o.causal = (tag % 2) == 0;  // with one query causal hides nothing: both must agree
      DYNAMIC_SECTION("page " << pg[0] << " " << fktest::dt_name(dt)) { run(L, o, ++tag); }
    }
}

TEST_CASE("cpu kvcache: shared pages (prefix caching), unshuffled pool, no spare pages",
          "[cpu][attention][kvcache]") {
  uint64_t tag = 20100;
  for (int64_t page : {1, 16, 48}) {
    Layout L = paged(page, 5, {int32_t(3 * page + 1), int32_t(page), int32_t(5 * page), 0,
                               int32_t(2 * page - 1)},
                     3, 4, 1, 32, DT::F32);
    L.share = true;
    Opts o;
    o.causal = true;
    DYNAMIC_SECTION("shared, page " << page) { run(L, o, ++tag); }
    L.share = false;
    L.shuffle = false;
    L.spare_pages = 0;
    L.seqlens[3] = 1;  // no sequence empty: the pool is exactly the pages in use
    DYNAMIC_SECTION("identity order, page " << page) { run(L, o, ++tag); }
  }
}

TEST_CASE("cpu kvcache: chunked prefill with causal, window, softcap, GQA and MQA",
          "[cpu][attention][kvcache]") {
  struct M {
    bool causal;
    int32_t wl, wr;
    float softcap;
    float scale;
  };
  const M masks[] = {{true, -1, -1, 0, NAN},  {false, -1, -1, 0, NAN}, {true, 20, -1, 0, NAN},
                     {false, 16, 3, 0, NAN},  {false, -1, 0, 10, NAN}, {true, -1, -1, 30, 0.3f},
                     {false, 5, 5, 5, -0.2f}, {true, 0, -1, 0, NAN}};
  const int64_t heads[][2] = {{4, 4}, {8, 2}, {6, 1}};
  uint64_t tag = 20200;
  int i = 0;
  for (const M& m : masks)
    for (DT dt : fkcpu::kFloatTypes) {
      const auto& hh = heads[i % 3];
      // seqlen_q 7 (some sequences shorter: their first rows see no key under causal) and 40
      // (more than one 32-row query block).
      const int64_t sq = (i % 2) ? 40 : 7;
      const int64_t page = (i % 4 == 3) ? 48 : 16;
      Layout L = paged(page, 8, {int32_t(sq), 3, int32_t(8 * page), 0, int32_t(5 * page + 7)},
                       sq, hh[0], hh[1], 40, dt);
      L.share = i % 2 == 1;
      Opts o;
      o.causal = m.causal;
      o.wl = m.wl;
      o.wr = m.wr;
      o.softcap = m.softcap;
      o.scale = m.scale;
      DYNAMIC_SECTION("mask " << (i / 3) << " " << fktest::dt_name(dt) << " h" << hh[0] << "/"
                              << hh[1] << " sq " << sq << " page " << page) {
        run(L, o, ++tag);
      }
      ++i;
    }
}

TEST_CASE("cpu kvcache: NULL cache_seqlens (every sequence at capacity)",
          "[cpu][attention][kvcache]") {
  uint64_t tag = 20300;
  for (int64_t page : {1, 16, 64, 48})
    for (int64_t sq : {1, 9}) {
      Layout L = paged(page, 3, {0, 0, 0}, sq, 4, 2, 32, DT::BF16);
      L.null_seqlens = true;
      L.seqlens.clear();
      L.share = false;
      Opts o;
      o.causal = sq > 1;
      DYNAMIC_SECTION("page " << page << " sq " << sq) { run(L, o, ++tag); }
    }
  SECTION("contiguous cache, NULL cache_seqlens") {
    Layout L = contiguous(77, {0, 0}, 5, 4, 4, 24, DT::F16);
    L.null_seqlens = true;
    L.seqlens.clear();
    Opts o;
    o.causal = true;
    run(L, o, 20350);
  }
}

TEST_CASE("cpu kvcache: contiguous cache with cache_seqlens", "[cpu][attention][kvcache]") {
  uint64_t tag = 20400;
  for (DT dt : fkcpu::kFloatTypes)
    for (int64_t sq : {1, 13}) {
      Layout L = contiguous(150, {0, 1, 64, 150, 97}, sq, 6, 2, 64, dt);
      Opts o;
      o.causal = sq > 1;
      o.wl = sq > 1 ? 50 : -1;
      DYNAMIC_SECTION(fktest::dt_name(dt) << " sq " << sq) { run(L, o, ++tag); }
    }
  SECTION("padded strides, MQA, softcap") {
    Layout L = contiguous(90, {33, 90, 2}, 4, 3, 1, 48, DT::F32);
    L.pool_pad = 5;
    L.v_pool_pad = 2;
    L.io_pad = 3;
    Opts o;
    o.softcap = 8;
    o.causal = true;
    run(L, o, 20450);
  }
}

TEST_CASE("cpu kvcache: padded strides (non-compact pool, block_table row stride > "
          "max_blocks_per_seq, padded q/out/lse)",
          "[cpu][attention][kvcache]") {
  uint64_t tag = 20500;
  for (DT dt : fkcpu::kFloatTypes)
    for (int64_t page : {16, 48}) {
      Layout L = paged(page, 6, {int32_t(page * 6), int32_t(page + 3), 0, 7}, 3, 4, 2, 40, dt);
      L.pool_pad = 3;
      L.v_pool_pad = 7;
      L.table_pad = 5;
      L.io_pad = 2;
      L.share = true;
      Opts o;
      o.causal = true;
      DYNAMIC_SECTION(fktest::dt_name(dt) << " page " << page) { run(L, o, ++tag); }
    }
}

TEST_CASE("cpu kvcache: no lse, thread counts, head dims", "[cpu][attention][kvcache]") {
  uint64_t tag = 20600;
  for (int threads : {1, 3})
    for (int64_t d : {1, 8, 72, 128, 256}) {
      Layout L = paged(16, 5, {70, 17, 80, 0}, 2, 4, 2, d, d == 72 ? DT::BF16 : DT::F32);
      Opts o;
      o.threads = threads;
      o.with_lse = d != 128;
      o.causal = true;
      DYNAMIC_SECTION("threads " << threads << " d " << d) { run(L, o, ++tag); }
    }
}

TEST_CASE("cpu kvcache: rows that see no key give 0 and lse -inf", "[cpu][attention][kvcache]") {
  // seqlen_q 10 over 4 valid keys, causal: rows 0..5 sit before key 0; a sequence with 0 keys
  // sees nothing at all.
  auto rng = fkcpu::rng_for(20700);
  Layout L = paged(4, 3, {4, 0}, 10, 2, 1, 16, DT::F16);
  Tensors t = fkkv::build(L, rng);
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = 1;
  REQUIRE(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, &p, &t.q, &t.k, &t.v,
                                       &t.seqlens, &t.table, &t.out, &t.lse) == FK_SUCCESS);
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 10; ++i) {
      const bool sees = i >= 6;
      INFO("h " << h << " row " << i);
      CHECK(std::isinf(t.lse.get({1, h, i})));
      if (sees) {
        CHECK(std::isfinite(t.lse.get({0, h, i})));
      } else {
        CHECK(std::isinf(t.lse.get({0, h, i})));
        CHECK(t.lse.get({0, h, i}) < 0);
      }
      for (int64_t x = 0; x < 16; ++x) {
        CHECK(t.out.get({1, i, h, x}) == 0.0);
        if (!sees) CHECK(t.out.get({0, i, h, x}) == 0.0);
      }
    }
  }
  Opts o;
  o.causal = true;
  run(L, o, 20701);
}

TEST_CASE("cpu kvcache: batch of one (block_table row stride unused), empty query",
          "[cpu][attention][kvcache]") {
  Layout L = paged(16, 10, {150}, 3, 2, 2, 32, DT::F32);
  L.table_pad = 9;
  Opts o;
  o.causal = true;
  run(L, o, 20800);
  // seqlen_q 0: nothing to compute, success, outputs (empty) untouched.
  auto rng = fkcpu::rng_for(20801);
  Layout E = paged(16, 2, {5, 20}, 0, 2, 1, 32, DT::F32);
  Tensors t = fkkv::build(E, rng);
  REQUIRE(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr, &t.q, &t.k, &t.v,
                                       &t.seqlens, &t.table, &t.out, &t.lse) == FK_SUCCESS);
  CHECK(t.out.all_poison());
  CHECK(t.lse.all_poison());
}

// The launch rules (one shared check, here through fk_attention_kvcache_forward, which no
// other deterministic test passes a launch to): struct_size, flags, a NULL workspace with a
// size, and a workspace range that wraps around the address space. Outputs stay poisoned.
TEST_CASE("cpu kvcache: launch rules", "[cpu][attention][kvcache][validation]") {
  auto rng = fkcpu::rng_for(20900);
  Layout P = paged(16, 4, {40, 7}, 3, 2, 1, 32, DT::F32);
  Tensors t = fkkv::build(P, rng);
  auto run = [&](const fk_launch_t* launch) {
    return fk_attention_kvcache_forward(fkcpu::cpu_context(), launch, nullptr, &t.q, &t.k, &t.v,
                                        &t.seqlens, &t.table, &t.out, &t.lse);
  };
  auto msg = []() { return std::string(fk_get_last_error_message()); };
  fk_launch_t launch;
  REQUIRE(fk_launch_init(&launch) == FK_SUCCESS);
  launch.struct_size = 3;
  CHECK(run(&launch) == FK_ERROR_BAD_STRUCT_SIZE);
  CHECK(msg().find("launch") != std::string::npos);
  fk_launch_init(&launch);
  launch.flags = 2;
  CHECK(run(&launch) == FK_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("launch: flags must be 0") != std::string::npos);
  fk_launch_init(&launch);
  launch.workspace_bytes = 64;
  CHECK(run(&launch) == FK_ERROR_NULL_POINTER);
  CHECK(msg().find("launch: workspace is NULL but workspace_bytes is 64") != std::string::npos);
  launch.workspace = reinterpret_cast<void*>(~uintptr_t(0) - 15);
  CHECK(run(&launch) == FK_ERROR_INVALID_ARGUMENT);
  CHECK(msg().find("wraps around the address space") != std::string::npos);
  CHECK(t.out.all_poison());
  CHECK(t.lse.all_poison());
}

TEST_CASE("cpu kvcache: NULL-cache-seqlens result equals fk_attention_forward on the same "
          "contiguous cache",
          "[cpu][attention][kvcache]") {
  auto rng = fkcpu::rng_for(20900);
  Layout L = contiguous(61, {0, 0}, 17, 4, 2, 32, DT::BF16);
  L.null_seqlens = true;
  L.seqlens.clear();
  Tensors t = fkkv::build(L, rng);
  HostTensor out2(t.out.dtype, t.out.shape, t.out.strides), lse2(DT::F32, t.lse.shape, t.lse.strides);
  out2.poison();
  lse2.poison();
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = 1;
  p.window_size_left = 9;
  REQUIRE(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, &p, &t.q, &t.k, &t.v,
                                       nullptr, nullptr, &t.out, &t.lse) == FK_SUCCESS);
  REQUIRE(fk_attention_forward(fkcpu::cpu_context(), nullptr, &p, &t.q, &t.k, &t.v, nullptr,
                               nullptr, &out2, &lse2) == FK_SUCCESS);
  CHECK(t.out.bytes == out2.bytes);
  CHECK(t.lse.bytes == lse2.bytes);
}

// =============================================================================================
// Validation: one case per rule.
// =============================================================================================
namespace {

// A valid paged problem (batch 3, page 16, 4 pages per sequence) the rules below break.
struct Valid {
  Layout L;
  Tensors t;
  Valid() {
    L = paged(16, 4, {20, 64, 5}, 2, 4, 2, 32, DT::F16);
    auto rng = fkcpu::rng_for(21000);
    t = fkkv::build(L, rng);
  }
};

// Calls the three entry points with these arguments; each must return `want` with `name` in
// the message, and forward must leave out and lse untouched.
void expect_error(const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* sl,
                  const DLTensor* bt, HostTensor& out, HostTensor& lse, fk_status_t want,
                  const char* name, const fk_attention_params_t* params = nullptr,
                  const fk_context_t* ctx = nullptr) {
  if (!ctx) ctx = fkcpu::cpu_context();
  out.poison();
  lse.poison();
  const fk_status_t st =
      fk_attention_kvcache_forward(ctx, nullptr, params, q, k, v, sl, bt, &out, &lse);
  const std::string msg = fk_get_last_error_message();
  INFO("forward -> " << fk_status_string(st) << ": " << msg);
  CHECK(st == want);
  CHECK(msg.find(name) != std::string::npos);
  CHECK(out.all_poison());
  CHECK(lse.all_poison());
  const char* variant = nullptr;
  const fk_status_t st2 =
      fk_attention_kvcache_select_kernel(ctx, params, q, k, v, sl, bt, &out, &lse, &variant);
  const std::string msg2 = fk_get_last_error_message();
  INFO("select_kernel -> " << fk_status_string(st2) << ": " << msg2);
  CHECK(st2 == want);
  CHECK(msg2.find(name) != std::string::npos);
  uint64_t ws = 0;
  const fk_status_t st3 =
      fk_attention_kvcache_workspace_size(ctx, params, q, k, v, sl, bt, &out, &lse, &ws);
  const std::string msg3 = fk_get_last_error_message();
  INFO("workspace_size -> " << fk_status_string(st3) << ": " << msg3);
  CHECK(st3 == want);
  CHECK(msg3.find(name) != std::string::npos);
}

void expect_error(Valid& v, const DLTensor* sl, const DLTensor* bt, fk_status_t want,
                  const char* name) {
  expect_error(&v.t.q, &v.t.k, &v.t.v, sl, bt, v.t.out, v.t.lse, want, name);
}

}  // namespace

TEST_CASE("cpu kvcache validation: the valid problem passes", "[cpu][attention][kvcache][validation]") {
  Valid v;
  REQUIRE(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr, &v.t.q, &v.t.k,
                                       &v.t.v, &v.t.seqlens, &v.t.table, &v.t.out,
                                       &v.t.lse) == FK_SUCCESS);
  CHECK_FALSE(v.t.out.all_poison());
}

TEST_CASE("cpu kvcache validation: block_table dtype", "[cpu][attention][kvcache][validation]") {
  Valid v;
  for (DT dt : {DT::F32, DT::F16}) {
    HostTensor bt(dt, v.t.table.shape);
    expect_error(v, &v.t.seqlens, &bt, FK_ERROR_DTYPE_MISMATCH, "block_table");
  }
  HostTensor bt64(DT::I32, v.t.table.shape);
  bt64.dl.dtype = DLDataType{kDLInt, 64, 1};
  expect_error(v, &v.t.seqlens, &bt64, FK_ERROR_DTYPE_MISMATCH, "block_table");
  HostTensor btu(DT::I32, v.t.table.shape);
  btu.dl.dtype = DLDataType{kDLUInt, 32, 1};
  expect_error(v, &v.t.seqlens, &btu, FK_ERROR_DTYPE_MISMATCH, "block_table");
}

TEST_CASE("cpu kvcache validation: block_table rank", "[cpu][attention][kvcache][validation]") {
  Valid v;
  HostTensor r1 = fktest::int32_tensor({0, 1, 2});
  expect_error(v, &v.t.seqlens, &r1, FK_ERROR_SHAPE_MISMATCH, "block_table");
  HostTensor r3(DT::I32, {3, 4, 1});
  expect_error(v, &v.t.seqlens, &r3, FK_ERROR_SHAPE_MISMATCH, "block_table");
}

TEST_CASE("cpu kvcache validation: block_table batch", "[cpu][attention][kvcache][validation]") {
  Valid v;
  for (int64_t rows : {2, 4}) {
    HostTensor bt(DT::I32, {rows, 4});
    expect_error(v, &v.t.seqlens, &bt, FK_ERROR_SHAPE_MISMATCH, "block_table");
  }
}

TEST_CASE("cpu kvcache validation: block_table last dimension not contiguous",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  HostTensor bt(DT::I32, {3, 4}, {8, 2});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < 4; ++j) bt.set({b, j}, v.t.table.get({b, j}));
  expect_error(v, &v.t.seqlens, &bt, FK_ERROR_BAD_STRIDES, "block_table");
}

TEST_CASE("cpu kvcache validation: cache_seqlens dtype, rank, batch, contiguity",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  SECTION("dtype") {
    HostTensor f(DT::F32, {3});
    expect_error(v, &f, &v.t.table, FK_ERROR_DTYPE_MISMATCH, "cache_seqlens");
    HostTensor i64(DT::I32, {3});
    i64.dl.dtype = DLDataType{kDLInt, 64, 1};
    expect_error(v, &i64, &v.t.table, FK_ERROR_DTYPE_MISMATCH, "cache_seqlens");
  }
  SECTION("rank") {
    HostTensor r2(DT::I32, {3, 1});
    expect_error(v, &r2, &v.t.table, FK_ERROR_SHAPE_MISMATCH, "cache_seqlens");
    HostTensor r0(DT::I32, {});
    expect_error(v, &r0, &v.t.table, FK_ERROR_SHAPE_MISMATCH, "cache_seqlens");
  }
  SECTION("batch") {
    HostTensor s2 = fktest::int32_tensor({1, 2}), s4 = fktest::int32_tensor({1, 2, 3, 4});
    expect_error(v, &s2, &v.t.table, FK_ERROR_SHAPE_MISMATCH, "cache_seqlens");
    expect_error(v, &s4, &v.t.table, FK_ERROR_SHAPE_MISMATCH, "cache_seqlens");
  }
  SECTION("not contiguous") {
    HostTensor s(DT::I32, {3}, {2});
    s.set({0}, 1);
    s.set({1}, 2);
    s.set({2}, 3);
    expect_error(v, &s, &v.t.table, FK_ERROR_BAD_STRIDES, "cache_seqlens");
  }
  SECTION("contiguous cache: the same rules") {
    Layout L = contiguous(40, {3, 40, 0}, 2, 4, 2, 32, DT::F32);
    auto rng = fkcpu::rng_for(21100);
    Tensors t = fkkv::build(L, rng);
    HostTensor f(DT::F32, {3}), r2(DT::I32, {3, 1});
    HostTensor s2 = fktest::int32_tensor({1, 2});
    expect_error(&t.q, &t.k, &t.v, &f, nullptr, t.out, t.lse, FK_ERROR_DTYPE_MISMATCH,
                 "cache_seqlens");
    expect_error(&t.q, &t.k, &t.v, &r2, nullptr, t.out, t.lse, FK_ERROR_SHAPE_MISMATCH,
                 "cache_seqlens");
    expect_error(&t.q, &t.k, &t.v, &s2, nullptr, t.out, t.lse, FK_ERROR_SHAPE_MISMATCH,
                 "cache_seqlens");
  }
}

TEST_CASE("cpu kvcache validation: cache_seqlens entries outside [0, capacity]",
          "[cpu][attention][kvcache][validation]") {
  Valid v;  // capacity 4 x 16 = 64
  for (int32_t bad : {-1, 65, INT32_MIN, INT32_MAX}) {
    HostTensor s = fktest::int32_tensor({20, bad, 5});
    INFO("entry " << bad);
    expect_error(v, &s, &v.t.table, FK_ERROR_INVALID_ARGUMENT, "cache_seqlens");
    CHECK(std::string(fk_get_last_error_message()).find("entry 1") != std::string::npos);
  }
  // Capacity itself is fine (every page of the row then read).
  HostTensor ok = fktest::int32_tensor({64, 64, 64});
  HostTensor bt(DT::I32, {3, 4});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t j = 0; j < 4; ++j) bt.set({b, j}, double((b * 4 + j) % v.t.num_blocks));
  v.t.out.poison();
  CHECK(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr, &v.t.q, &v.t.k,
                                     &v.t.v, &ok, &bt, &v.t.out, nullptr) == FK_SUCCESS);
  SECTION("contiguous cache: capacity is seqlen_cache") {
    Layout L = contiguous(40, {3, 40, 0}, 2, 4, 2, 32, DT::F32);
    auto rng = fkcpu::rng_for(21200);
    Tensors t = fkkv::build(L, rng);
    HostTensor s = fktest::int32_tensor({3, 41, 0});
    expect_error(&t.q, &t.k, &t.v, &s, nullptr, t.out, t.lse, FK_ERROR_INVALID_ARGUMENT,
                 "cache_seqlens");
  }
}

TEST_CASE("cpu kvcache validation: block_table entries outside [0, num_blocks) in the used "
          "range; past it anything goes",
          "[cpu][attention][kvcache][validation]") {
  Valid v;  // seqlens {20, 64, 5}: pages used 2, 4, 1
  const int32_t nb = int32_t(v.t.num_blocks);
  struct Bad {
    int64_t b, j;
    int32_t value;
  };
  for (const Bad& x : {Bad{0, 1, -1}, Bad{1, 3, nb}, Bad{2, 0, 1000000000}, Bad{1, 0, INT32_MIN}}) {
    HostTensor bt = v.t.table;
    bt.refresh();
    bt.set({x.b, x.j}, x.value);
    INFO("entry [" << x.b << "][" << x.j << "] = " << x.value << ", num_blocks " << nb);
    expect_error(v, &v.t.seqlens, &bt, FK_ERROR_INVALID_ARGUMENT, "block_table");
    std::ostringstream where;
    where << "[" << x.b << "][" << x.j << "]";
    CHECK(std::string(fk_get_last_error_message()).find(where.str()) != std::string::npos);
  }
  // The entries past ceil(cache_seqlens / page) of each row are not read: garbage accepted.
  HostTensor bt = v.t.table;
  bt.refresh();
  bt.set({0, 2}, -7);
  bt.set({0, 3}, 1000000000);
  bt.set({2, 1}, INT32_MIN);
  bt.set({2, 3}, nb);
  v.t.out.poison();
  CHECK(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr, &v.t.q, &v.t.k,
                                     &v.t.v, &v.t.seqlens, &bt, &v.t.out, &v.t.lse) == FK_SUCCESS);
  // With NULL cache_seqlens every sequence is at capacity: every entry is read and checked.
  expect_error(v, nullptr, &bt, FK_ERROR_INVALID_ARGUMENT, "block_table");
}

TEST_CASE("cpu kvcache validation: page_block_size 0", "[cpu][attention][kvcache][validation]") {
  Valid v;
  HostTensor k(DT::F16, {5, 0, 2, 32}), vv(DT::F16, {5, 0, 2, 32});
  HostTensor sl = fktest::int32_tensor({0, 0, 0});
  HostTensor bt(DT::I32, {3, 4});
  expect_error(&v.t.q, &k, &vv, &sl, &bt, v.t.out, v.t.lse, FK_ERROR_SHAPE_MISMATCH, "k_cache");
  expect_error(&v.t.q, &k, &vv, nullptr, &bt, v.t.out, v.t.lse, FK_ERROR_SHAPE_MISMATCH,
               "page_block_size");
}

TEST_CASE("cpu kvcache validation: a page pool with no pages while block_table has columns",
          "[cpu][attention][kvcache][validation]") {
  // A shape rule, checked before any value is read (on CUDA cache_seqlens lives on the
  // device): it holds even when every sequence is empty and no entry would be read.
  Valid v;
  HostTensor k(DT::F16, {0, 16, 2, 32}), vv(DT::F16, {0, 16, 2, 32});
  HostTensor sl = fktest::int32_tensor({0, 0, 0});
  HostTensor bt(DT::I32, {3, 4});
  expect_error(&v.t.q, &k, &vv, &sl, &bt, v.t.out, v.t.lse, FK_ERROR_SHAPE_MISMATCH,
               "k_cache: the page pool has no pages (num_blocks 0) but block_table lists 4");
  expect_error(&v.t.q, &k, &vv, nullptr, &bt, v.t.out, v.t.lse, FK_ERROR_SHAPE_MISMATCH, "num_blocks 0");
}

TEST_CASE("cpu kvcache validation: max_seqlen_q / max_seqlen_k must be 0",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  for (int which = 0; which < 4; ++which) {
    fk_attention_params_t p;
    fk_attention_params_init(&p);
    const char* name = (which % 2 == 0) ? "max_seqlen_q" : "max_seqlen_k";
    const int64_t value = which < 2 ? 2 : -1;
    if (which % 2 == 0) p.max_seqlen_q = value;
    else p.max_seqlen_k = value;
    INFO(name << " = " << value);
    expect_error(&v.t.q, &v.t.k, &v.t.v, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_INVALID_ARGUMENT, name, &p);
  }
}

TEST_CASE("cpu kvcache validation: v_cache disagreeing with k_cache",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  const std::vector<int64_t> s = v.t.k.shape;  // (num_blocks, 16, 2, 32)
  const std::vector<int64_t> wrong[] = {{s[0] + 1, s[1], s[2], s[3]},
                                        {s[0], s[1] * 2, s[2], s[3]},
                                        {s[0], s[1], s[2] * 2, s[3]},
                                        {s[0], s[1], s[2], s[3] * 2},
                                        {s[0], s[1], s[2]}};
  for (const auto& w : wrong) {
    HostTensor vv(DT::F16, w);
    INFO("v_cache shape " << vv.shape.size() << "-d, dims " << w[0] << " " << w[1]);
    expect_error(&v.t.q, &v.t.k, &vv, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_SHAPE_MISMATCH, "v_cache");
  }
  HostTensor vf(DT::F32, s);
  expect_error(&v.t.q, &v.t.k, &vf, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
               FK_ERROR_DTYPE_MISMATCH, "v_cache");
  SECTION("contiguous cache") {
    Layout L = contiguous(40, {3, 40, 0}, 2, 4, 2, 32, DT::F32);
    auto rng = fkcpu::rng_for(21300);
    Tensors t = fkkv::build(L, rng);
    HostTensor v2(DT::F32, {3, 41, 2, 32}), v3(DT::F32, {2, 40, 2, 32});
    expect_error(&t.q, &t.k, &v2, &t.seqlens, nullptr, t.out, t.lse, FK_ERROR_SHAPE_MISMATCH,
                 "v_cache");
    expect_error(&t.q, &t.k, &v3, &t.seqlens, nullptr, t.out, t.lse, FK_ERROR_SHAPE_MISMATCH,
                 "v_cache");
  }
}

TEST_CASE("cpu kvcache validation: k_cache rank, batch, heads, head_dim, dtype",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  const std::vector<int64_t> s = v.t.k.shape;
  for (const std::vector<int64_t>& w :
       {std::vector<int64_t>{s[0] * s[1], s[2], s[3]}, std::vector<int64_t>{1, s[0], s[1], s[2], s[3]}}) {
    HostTensor k(DT::F16, w), vv(DT::F16, w);
    INFO("rank " << w.size());
    expect_error(&v.t.q, &k, &vv, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_SHAPE_MISMATCH, "k_cache");
  }
  {
    HostTensor k(DT::F16, {s[0], s[1], 3, s[3]}), vv(DT::F16, {s[0], s[1], 3, s[3]});  // 4 % 3
    expect_error(&v.t.q, &k, &vv, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_SHAPE_MISMATCH, "k_cache");
  }
  {
    HostTensor k(DT::F16, {s[0], s[1], s[2], 16}), vv(DT::F16, {s[0], s[1], s[2], 16});
    expect_error(&v.t.q, &k, &vv, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_SHAPE_MISMATCH, "k_cache");
  }
  {
    HostTensor k(DT::BF16, s), vv(DT::BF16, s);
    expect_error(&v.t.q, &k, &vv, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_DTYPE_MISMATCH, "k_cache");
  }
  {
    HostTensor k(DT::F16, s, {s[1] * s[2] * s[3] * 2, s[2] * s[3] * 2, s[3] * 2, 2});
    expect_error(&v.t.q, &k, &v.t.v, &v.t.seqlens, &v.t.table, v.t.out, v.t.lse,
                 FK_ERROR_BAD_STRIDES, "k_cache");
  }
  SECTION("contiguous cache: batch must be q's") {
    HostTensor k(DT::F16, {2, 40, 2, 32}), vv(DT::F16, {2, 40, 2, 32});
    HostTensor sl = fktest::int32_tensor({1, 2, 3});
    expect_error(&v.t.q, &k, &vv, &sl, nullptr, v.t.out, v.t.lse, FK_ERROR_SHAPE_MISMATCH,
                 "k_cache");
  }
}

TEST_CASE("cpu kvcache validation: a capacity beyond the int32 range of cache_seqlens",
          "[cpu][attention][kvcache][validation]") {
  // batch 1, one query, 2 heads on 1 KV head, head_dim 8, fp16.
  HostTensor q(DT::F16, {1, 1, 2, 8}), out(DT::F16, {1, 1, 2, 8}), lse(DT::F32, {1, 2, 1});
  SECTION("paged: max_blocks_per_seq x page_block_size > 2^31 - 1, with and without cache_seqlens") {
    // 2^20 table entries (4 MB) of pages of 4096 keys: capacity 2^32. One page in the pool.
    HostTensor k(DT::F16, {1, 4096, 1, 8}), v(DT::F16, {1, 4096, 1, 8});
    HostTensor bt(DT::I32, {1, int64_t(1) << 20});
    HostTensor sl = fktest::int32_tensor({5});
    expect_error(&q.dl, &k.dl, &v.dl, &sl.dl, &bt.dl, out, lse, FK_ERROR_SHAPE_MISMATCH,
                 "int32 range of cache_seqlens");
    expect_error(&q.dl, &k.dl, &v.dl, nullptr, &bt.dl, out, lse, FK_ERROR_SHAPE_MISMATCH,
                 "int32 range of cache_seqlens");
    // One entry fewer than 2^19 (2^31 - 4096 keys) is in range.
    HostTensor bt_ok(DT::I32, {1, (int64_t(1) << 19) - 1});
    out.poison();
    CHECK(fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr, &q.dl, &k.dl,
                                       &v.dl, &sl.dl, &bt_ok.dl, &out.dl, &lse.dl) == FK_SUCCESS);
  }
  SECTION("contiguous: seqlen_cache > 2^31 - 1 (a view; no data is read)") {
    HostTensor k(DT::F16, {1, 16, 1, 8}), v(DT::F16, {1, 16, 1, 8});
    int64_t huge[4] = {1, int64_t(1) << 31, 1, 8};
    k.dl.shape = huge;
    k.dl.strides = nullptr;
    v.dl.shape = huge;
    v.dl.strides = nullptr;
    HostTensor sl = fktest::int32_tensor({5});
    expect_error(&q.dl, &k.dl, &v.dl, &sl.dl, nullptr, out, lse, FK_ERROR_SHAPE_MISMATCH,
                 "k_cache");
    expect_error(&q.dl, &k.dl, &v.dl, nullptr, nullptr, out, lse, FK_ERROR_SHAPE_MISMATCH,
                 "k_cache");
  }
}

TEST_CASE("cpu kvcache validation: q, out, lse shapes and overlap",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  {
    HostTensor q3(DT::F16, {6, 4, 32});  // varlen-style q is not accepted here
    HostTensor o3(DT::F16, {6, 4, 32});
    HostTensor lse(DT::F32, {4, 6});
    expect_error(&q3, &v.t.k, &v.t.v, &v.t.seqlens, &v.t.table, o3, lse, FK_ERROR_SHAPE_MISMATCH,
                 "q");
  }
  {
    HostTensor lse(DT::F32, {3, 4, 3});
    expect_error(&v.t.q, &v.t.k, &v.t.v, &v.t.seqlens, &v.t.table, v.t.out, lse,
                 FK_ERROR_SHAPE_MISMATCH, "lse");
  }
  {
    // out aliasing the key cache.
    HostTensor out = v.t.out;
    out.refresh();
    out.dl.data = v.t.k.bytes.data();
    const fk_status_t st = fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr,
                                                        &v.t.q, &v.t.k, &v.t.v, &v.t.seqlens,
                                                        &v.t.table, out.view(), nullptr);
    INFO(fk_get_last_error_message());
    CHECK(st == FK_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(fk_get_last_error_message()).find("out") != std::string::npos);
  }
  {
    // lse aliasing block_table. The table is widened to 8 columns (96 bytes, lse's size) so
    // that lse lies wholly inside it: with the 4-column table lse ran past its end, and
    // whichever allocation the heap put there (cache_seqlens, once) was named instead.
    HostTensor bt(DT::I32, {3, 8});
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 8; ++j) bt.set({b, j}, j < 4 ? v.t.table.get({b, j}) : 0.0);
    HostTensor lse(DT::F32, {3, 4, 2});
    REQUIRE(lse.bytes.size() == bt.bytes.size());
    lse.dl.data = bt.bytes.data();
    v.t.out.poison();
    const fk_status_t st = fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, nullptr,
                                                        &v.t.q, &v.t.k, &v.t.v, &v.t.seqlens,
                                                        &bt, &v.t.out, lse.view());
    INFO(fk_get_last_error_message());
    CHECK(st == FK_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(fk_get_last_error_message()).find("block_table") != std::string::npos);
    CHECK(v.t.out.all_poison());
  }
}

TEST_CASE("cpu kvcache validation: NULL outputs of select_kernel / workspace_size, device",
          "[cpu][attention][kvcache][validation]") {
  Valid v;
  const fk_context_t* ctx = fkcpu::cpu_context();
  CHECK(fk_attention_kvcache_select_kernel(ctx, nullptr, &v.t.q, &v.t.k, &v.t.v, &v.t.seqlens,
                                           &v.t.table, &v.t.out, &v.t.lse,
                                           nullptr) == FK_ERROR_NULL_POINTER);
  CHECK(fk_attention_kvcache_workspace_size(ctx, nullptr, &v.t.q, &v.t.k, &v.t.v, &v.t.seqlens,
                                            &v.t.table, &v.t.out, &v.t.lse,
                                            nullptr) == FK_ERROR_NULL_POINTER);
  CHECK(fk_attention_kvcache_forward(nullptr, nullptr, nullptr, &v.t.q, &v.t.k, &v.t.v,
                                     &v.t.seqlens, &v.t.table, &v.t.out,
                                     &v.t.lse) == FK_ERROR_NULL_POINTER);
  HostTensor sl = v.t.seqlens;
  sl.refresh();
  sl.dl.device = DLDevice{kDLCUDA, 0};
  expect_error(v, &sl, &v.t.table, FK_ERROR_WRONG_DEVICE, "cache_seqlens");
  HostTensor bt = v.t.table;
  bt.refresh();
  bt.dl.device = DLDevice{kDLCUDA, 0};
  expect_error(v, &v.t.seqlens, &bt, FK_ERROR_WRONG_DEVICE, "block_table");
}

TEST_CASE("cpu kvcache: block_table row stride 0 (every sequence reads one row)",
          "[cpu][attention][kvcache]") {
  // "row stride arbitrary (>= 0)": a broadcast row is a valid table.
  for (DT dt : {DT::F32, DT::BF16}) {
    auto rng = fkcpu::rng_for(22000 + uint64_t(dt));
    Layout L = paged(16, 5, {50, 33, 49, 0}, 3, 4, 2, 32, dt);
    Tensors t = fkkv::build(L, rng);
    HostTensor bt(DT::I32, {L.batch, L.max_blocks}, {0, 1});
    for (int64_t j = 0; j < L.max_blocks; ++j) bt.set({0, j}, t.table.get({0, j}));
    t.table = std::move(bt);
    t.table.refresh();
    fk_attention_params_t p;
    fk_attention_params_init(&p);
    p.causal = 1;
    p.softmax_scale = 2.0f;  // > 1: applied to q.k rather than folded into q
    INFO(fktest::dt_name(dt) << ", seed " << fktest::test_seed());
    const fk_status_t st = fk_attention_kvcache_forward(fkcpu::cpu_context(), nullptr, &p, &t.q,
                                                        &t.k, &t.v, &t.seqlens, &t.table, &t.out,
                                                        &t.lse);
    INFO(fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    fkref::AttentionParams rp;
    rp.causal = true;
    rp.softmax_scale = 2.0;
    std::vector<double> ref_out, ref_lse;
    fkkv::reference(L, t, rp, ref_out, ref_lse);
    check_output(t.out, ref_out, dt, "out");
    check_output(t.lse, ref_lse, DT::F32, "lse");
  }
}

TEST_CASE("cpu kvcache: empty shapes (batch 0, max_blocks_per_seq 0, seqlen_cache 0 with NULL "
          "data)",
          "[cpu][attention][kvcache]") {
  const fk_context_t* ctx = fkcpu::cpu_context();
  SECTION("batch 0") {
    auto rng = fkcpu::rng_for(22100);
    Layout L = paged(16, 3, {}, 1, 4, 2, 32, DT::F16);
    Tensors t = fkkv::build(L, rng);
    const fk_status_t st = fk_attention_kvcache_forward(ctx, nullptr, nullptr, &t.q, &t.k, &t.v,
                                                        &t.seqlens, &t.table, &t.out, &t.lse);
    INFO(fk_get_last_error_message());
    CHECK(st == FK_SUCCESS);
  }
  SECTION("max_blocks_per_seq 0: capacity 0, every row sees no key") {
    auto rng = fkcpu::rng_for(22101);
    Layout L = paged(16, 0, {0, 0}, 3, 4, 2, 32, DT::F32);
    Tensors t = fkkv::build(L, rng);
    const fk_status_t st = fk_attention_kvcache_forward(ctx, nullptr, nullptr, &t.q, &t.k, &t.v,
                                                        &t.seqlens, &t.table, &t.out, &t.lse);
    INFO(fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    std::vector<double> ref_out, ref_lse;
    fkkv::reference(L, t, fkref::AttentionParams{}, ref_out, ref_lse);
    check_output(t.out, ref_out, DT::F32, "out");
    check_output(t.lse, ref_lse, DT::F32, "lse");
  }
  SECTION("contiguous seqlen_cache 0, k/v data NULL") {
    auto rng = fkcpu::rng_for(22102);
    Layout L = contiguous(0, {0, 0}, 2, 4, 2, 32, DT::BF16);
    Tensors t = fkkv::build(L, rng);
    t.k.dl.data = nullptr;
    t.v.dl.data = nullptr;
    const fk_status_t st = fk_attention_kvcache_forward(ctx, nullptr, nullptr, &t.q, &t.k, &t.v,
                                                        &t.seqlens, nullptr, &t.out, &t.lse);
    INFO(fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 2; ++i) {
          CHECK(std::isinf(t.lse.get({b, h, i})));
          CHECK(t.out.get({b, i, h, 5}) == 0.0);
        }
  }
}
