// fk_attention_kvcache_forward on the CUDA rows with the keys split (split_kv.h): decode, and
// causal rows (speculative decoding, short prefill chunks), over a paged or contiguous KV cache
// whose tiles do not fill the GPU runs as chunk-sequences of whole pages, each with its own
// length and block_table row (built on the device), merged by LSE.
// Checked against the float64 reference (attention_check.hpp) on the cache gathered per
// sequence on the host, independently of the library's paging; the workspace query shows
// whether a call is split. Pages are shuffled, some shared between sequences, and table
// entries past a sequence's pages hold garbage that must never be read.
#include "attention_check.hpp"

#if defined(FLASHKIT_TEST_WITH_CUDA)

namespace {

using namespace fkattn;

struct KvCase {
  int64_t batch = 1, seqlen_q = 1, nheads = 32, nheads_k = 8, d = 128;
  DT dt = DT::BF16;
  int64_t page = 16;      // 0: contiguous cache (batch, capacity, nheads_k, d)
  int64_t capacity = 4096;
  std::vector<int64_t> lens;  // cache_seqlens; empty: NULL (every sequence full)
  bool causal = false;
  double softcap = 0;
  int64_t cache_pad = 0;  // contiguous cache: extra rows per sequence (slice of a longer one)
  const char* variant = "cuda.sm80.attention";  // off Hopper (expected_variant)
  int expect_ws = 1;      // workspace query: 1 nonzero (split), 0 zero
};

// The Hopper row (AUTO on an H100/H200) reads contiguous caches and pages of a multiple of 16
// keys, except decode-sized calls over pages that are not a multiple of its key tile where the
// sm80 row takes them (test_attention_kvcache.cpp, sm90_eligible()).
std::string expected_variant(const KvCase& c) {
  const bool half = c.dt == DT::F16 || c.dt == DT::BF16;
  const int64_t block_n = c.d <= 128 ? 128 : c.d <= 192 ? 112 : 80;
  const bool pow2 = (c.page & (c.page - 1)) == 0;
  const int64_t rows = c.seqlen_q == 1 && c.nheads > c.nheads_k ? c.nheads / c.nheads_k : c.seqlen_q;
  const bool decode_tiles = (c.d <= 64 || (c.d > 96 && c.d <= 128)) && rows <= 16;
  const bool sm80_takes = pow2 && (c.page >= (c.d <= 64 ? 128 : 64) || decode_tiles);
  const bool small_decode_page = c.page % block_n != 0 && rows <= 16 && sm80_takes;
  if (half && c.page % 16 == 0 && !small_decode_page && auto_takes_sm90())
    return "cuda.sm90.attention";
  return c.variant;
}

void run_kv(const fk_context_t* ctx, const KvCase& c, uint64_t tag) {
  auto rng = rng_for(tag);
  const int64_t B = c.batch, Hk = c.nheads_k, D = c.d;
  std::vector<int64_t> lens = c.lens.empty() ? std::vector<int64_t>(size_t(B), c.capacity) : c.lens;
  INFO("kv case b" << B << " sq" << c.seqlen_q << " h" << c.nheads << "/" << Hk << " d" << D
                   << " " << fktest::dt_name(c.dt) << " page " << c.page << " capacity "
                   << c.capacity << (c.causal ? " causal" : "") << " softcap " << c.softcap
                   << " lens[0] " << lens[0] << " seed " << fktest::test_seed());
  HostTensor q(c.dt, {B, c.seqlen_q, c.nheads, D});
  q.fill_normal(rng);
  // The cache: a page pool with a shuffled table (two sequences share their first page when
  // batch > 1: prefix caching), or a contiguous cache.
  const bool paged = c.page > 0;
  const int64_t per_seq = paged ? (c.capacity + c.page - 1) / c.page : 0;
  const int64_t npages = paged ? B * per_seq + 3 : 0;
  HostTensor kc, vc, table, seqlens(DT::I32, {B});
  if (paged) {
    kc.init(c.dt, {npages, c.page, Hk, D});
    vc.init(c.dt, {npages, c.page, Hk, D});
    table.init(DT::I32, {B, per_seq});
    std::vector<int64_t> perm(static_cast<size_t>(npages));
    for (int64_t i = 0; i < npages; ++i) perm[size_t(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < per_seq; ++j) {
        const int64_t used = (lens[size_t(b)] + c.page - 1) / c.page;
        int64_t e = perm[size_t(b * per_seq + j)];
        if (b == 1 && j == 0) e = perm[0];             // shared with sequence 0
        if (j >= used) e = (j % 2) ? -7 : 1000000000;  // never read
        table.set({b, j}, double(e));
      }
  } else {
    kc.init(c.dt, {B, c.capacity, Hk, D},
            HostTensor(c.dt, {B, c.capacity + c.cache_pad, Hk, D}).strides);
    vc.init(c.dt, {B, c.capacity, Hk, D},
            HostTensor(c.dt, {B, c.capacity + c.cache_pad, Hk, D}).strides);
  }
  kc.fill_normal(rng);
  vc.fill_normal(rng);
  for (int64_t b = 0; b < B; ++b) seqlens.set({b}, double(lens[size_t(b)]));
  // Gathered keys, packed (total_k, Hk, D), for the reference.
  int64_t total_k = 0;
  for (auto l : lens) total_k += l;
  HostTensor kp(c.dt, {std::max<int64_t>(total_k, 1), Hk, D}),
      vp(c.dt, {std::max<int64_t>(total_k, 1), Hk, D});
  for (int64_t b = 0, r = 0; b < B; ++b)
    for (int64_t n = 0; n < lens[size_t(b)]; ++n, ++r) {
      int64_t pg = b, row = n;
      if (paged) {
        pg = int64_t(table.get({b, n / c.page}));
        row = n % c.page;
      }
      for (int64_t h = 0; h < Hk; ++h)
        for (int64_t x = 0; x < D; ++x) {
          kp.set({r, h, x}, kc.get({pg, row, h, x}));
          vp.set({r, h, x}, vc.get({pg, row, h, x}));
        }
    }
  HostTensor out(c.dt, {B, c.seqlen_q, c.nheads, D}), lse(DT::F32, {B, c.nheads, c.seqlen_q});
  fkgpu::DeviceTensor dq(q), dk(kc), dv(vc), dl(seqlens), dout(out), dlse(lse);
  std::unique_ptr<fkgpu::DeviceTensor> dt;
  if (paged) dt = std::make_unique<fkgpu::DeviceTensor>(table);
  dout.poison();
  dlse.poison();
  Case cs;
  cs.pr.nheads = c.nheads;
  cs.pr.nheads_k = Hk;
  cs.pr.d = D;
  cs.pr.dt = c.dt;
  cs.pr.causal = c.causal;
  cs.pr.softcap = c.softcap;
  cs.pr.lq.assign(size_t(B), c.seqlen_q);
  cs.pr.lk = lens;
  fk_attention_params_t params = params_of(cs.pr);
  const DLTensor* sl = c.lens.empty() ? nullptr : &dl;
  const DLTensor* bt = paged ? &*dt : nullptr;
  const char* variant = "?";
  REQUIRE_FK(fk_attention_kvcache_select_kernel(ctx, &params, &dq, &dk, &dv, sl, bt, &dout,
                                                &dlse, &variant));
  CHECK(std::string(variant) == expected_variant(c));
  uint64_t ws = 0;
  REQUIRE_FK(fk_attention_kvcache_workspace_size(ctx, &params, &dq, &dk, &dv, sl, bt, &dout,
                                                 &dlse, &ws));
  INFO("workspace " << ws);
  CHECK((ws > 0) == (c.expect_ws > 0));
  REQUIRE_FK(fk_attention_kvcache_forward(ctx, nullptr, &params, &dq, &dk, &dv, sl, bt, &dout,
                                          &dlse));
  dout.download();
  dlse.download();
  check_result(cs, q, kp, vp, out, lse);
}

struct SplitEnv : fktest::ScopedEnv {
  explicit SplitEnv(const char* v) : ScopedEnv("FLASHKIT_ATTENTION_SPLIT_KV", v) {}
};

}  // namespace

TEST_CASE("attention kvcache: split-KV decode over paged and contiguous caches",
          "[gpu][attention][kvcache][split]") {
  const fk_context_t* ctx = fkgpu::auto_context();
  SECTION("automatic") {
    SplitEnv env(nullptr);
    KvCase a;  // batch 1, 8 KV heads, pages of 16, partial last page
    a.capacity = 9000;
    a.lens = {8999};
    run_kv(ctx, a, 97000);
    KvCase b = a;  // pages of 256 (one table entry per key tile)
    b.page = 256;
    b.lens = {9000};
    run_kv(ctx, b, 97001);
    KvCase c;  // contiguous cache, a slice of a longer one, lengths 0 / short / full
    c.batch = 3;
    c.page = 0;
    c.capacity = 6000;
    c.cache_pad = 144;  // rows per sequence 6144: whole 128-row virtual pages
    c.nheads = 16;
    c.nheads_k = 4;
    c.d = 64;
    c.dt = DT::F16;
    c.lens = {0, 700, 6000};
    c.softcap = 15.0;
    run_kv(ctx, c, 97002);
    KvCase d = a;  // causal one-row decode: still split (the row sees every key)
    d.causal = true;
    d.batch = 2;
    d.lens = {5000, 1};
    d.page = 32;
    run_kv(ctx, d, 97003);
    KvCase e = a;  // batch 32 x 8 KV heads fill the GPU: not split
    e.batch = 32;
    e.capacity = 1024;
    e.lens.assign(32, 1000);
    e.lens[3] = 0;
    e.expect_ws = 0;
    run_kv(ctx, e, 97004);
    KvCase f = a;  // chunked prefill with causal rows: split in chunks cut from the end
    f.seqlen_q = 37;  // (split_kv_plan.h, chunk_keys), masked by a window of chunk - 1 keys
    f.causal = true;
    f.page = 64;  // a whole key tile: the 128-row kernel reads pages of 64 keys and more
    f.lens = {4000};
    run_kv(ctx, f, 97005);
    KvCase f2 = f;  // speculative decoding: 5 causal queries, two sequences, one shorter than
    f2.seqlen_q = 5;  // the queries (rows that see no key), pages of 16
    f2.batch = 2;
    f2.page = 16;
    f2.lens = {8191, 3};
    run_kv(ctx, f2, 97007);
    KvCase f3 = f;  // a whole query tile of causal rows over a contiguous cache, head_dim 64
    f3.seqlen_q = 128;
    f3.page = 0;
    f3.capacity = 6144;
    f3.d = 64;
    f3.nheads = 16;
    f3.nheads_k = 2;
    f3.dt = DT::F16;
    f3.lens = {6100};
    run_kv(ctx, f3, 97008);
    KvCase g = a;  // page 48 (not a power of two): generic off Hopper; chunks of 384 keys
    g.page = 48;
    g.d = 64;
    g.variant = "cuda.generic.attention";
    run_kv(ctx, g, 97006);
  }
  SECTION("forced") {
    SplitEnv env("5");
    KvCase a;  // 3 sequences, several rows, pages of 16
    a.batch = 3;
    a.seqlen_q = 4;
    a.nheads = 8;
    a.nheads_k = 2;
    a.d = 256;
    a.page = 64;  // head_dim 256 has no decode tiles: pages of at least a key tile
    a.capacity = 700;
    a.lens = {700, 129, 1};
    run_kv(ctx, a, 97100);
    KvCase b = a;  // contiguous, fp16, head_dim 96
    b.page = 0;
    b.capacity = 768;  // sequences 6 x 128 rows apart
    b.d = 96;
    b.dt = DT::F16;
    b.lens = {650, 0, 300};
    run_kv(ctx, b, 97101);
    KvCase c = a;  // causal rows, 5 chunks of 128 keys (the last ones short or empty), pages
    c.causal = true;  // of 64 and 16, queries beyond a sequence's keys, softcap
    c.seqlen_q = 20;
    c.d = 128;
    c.lens = {700, 129, 7};
    run_kv(ctx, c, 97102);
    c.page = 16;  // below the sm80 row's key tile at 20 rows: generic off Hopper
    c.variant = "cuda.generic.attention";
    c.softcap = 20.0;
    c.lens = {650, 300, 21};
    run_kv(ctx, c, 97103);
    KvCase d = b;  // causal rows over a contiguous cache, fp16, head_dim 96
    d.causal = true;
    d.seqlen_q = 64;
    d.lens = {768, 63, 500};
    run_kv(ctx, d, 97104);
  }
}

TEST_CASE("attention kvcache: causal split-KV small case", "[gpu][attention][kvcache][sanitize]") {
  SplitEnv env("3");
  KvCase a;
  a.batch = 2;
  a.seqlen_q = 6;
  a.causal = true;
  a.nheads = 8;
  a.nheads_k = 2;
  a.d = 64;
  a.capacity = 300;
  a.lens = {300, 4};
  run_kv(fkgpu::auto_context(), a, 97201);
}

TEST_CASE("attention kvcache: split-KV small case", "[gpu][attention][kvcache][sanitize]") {
  SplitEnv env("3");
  KvCase a;
  a.batch = 2;
  a.nheads = 8;
  a.nheads_k = 2;
  a.d = 64;
  a.capacity = 300;
  a.lens = {300, 77};
  run_kv(fkgpu::auto_context(), a, 97200);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
