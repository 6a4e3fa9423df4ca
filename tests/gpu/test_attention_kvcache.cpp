// fk_attention_kvcache_forward (0.5.0) on the CUDA backend: queries over a contiguous or paged
// KV cache, FlashAttention's flash_attn_with_kvcache contract. Every case runs three times on the
// same inputs: on the AUTO context, with FK_KERNEL_FAMILY_SM80 forced and with
// FK_KERNEL_FAMILY_GENERIC forced, and each time checks the variant select_kernel names:
//   cuda.sm90.attention   AUTO on an H100/H200: contiguous caches, and pages of a multiple of
//                         16 keys except decode over pages below its key tile that the sm80
//                         row takes (sm90_eligible());
//   cuda.sm80.attention   fp16/bf16, head_dim % 8 == 0, rows 16-byte aligned, page_block_size
//                         a power of two (or a contiguous cache) and at least a key tile
//                         unless the call takes the decode tiles, AUTO or SM80 forced;
//   cuda.generic.attention everything else (page 48 off Hopper, fp32, head_dim 36) and GENERIC
//                         forced.
// (The header's rule: head_dim a multiple of 8, so head_dim 72 is expected on the sm80 kernel;
// expected_variant() is the one place that encodes it.)
//
// Reference: each sequence's first cache_seqlens[b] keys are gathered out of the pages by the
// test (tests/reference/kvcache.hpp, from the header's definition of the layout) into packed
// rows, and fkattn::check_result (attention_check.hpp) applies FlashAttention's tolerance rule
// against the float64 reference with seqlen_k = cache_seqlens[b] (max |out - ref| <= 2 max
// |naive - ref| + atol; lse within 2e-4 relative; padding untouched). fp32 outputs, for which
// the rule's naive fp32 error is no bound for a kernel summing 4096 terms, are held to 5e-5 of
// the output magnitude instead. Outputs are poisoned before each run and the cache must come
// back unchanged.
//
// Grid: decode (seqlen_q 1, GQA 32/8) and chunked prefill (seqlen_q 37, causal) x head_dim
// {64, 128, 256, 72} x page_block_size {16, 64, 256, 48} (and decode over pages of 1, 2 and 8
// keys, the sm80 decode tiles' page loops), fp16/bf16 alternating, batches mixing
// cache_seqlens 0, partial last pages, page boundaries and full capacity, pages shuffled and
// shared between sequences, garbage past each row's used entries; contiguous caches with and
// without cache_seqlens; KV-cache batch 1 with 4096+ keys; pages of 32, 128 and 512 keys (the
// Hopper row's box and tile paths) on merged and padded pools, head_dim 192 and 256 pages, long
// split decodes; padded strides; one fp32 case; a
// graph-capture case (the call must not wait for the stream: captured once, replayed with new
// inputs and new cache_seqlens); out-of-range entries (clamped, no fault); 2-64 queries with GQA
// groups (the Hopper kernel's packed GQA tiles).
#include <catch2/catch.hpp>

#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "attention_check.hpp"
#include "gpu_test_util.hpp"
#include "reference/kvcache.hpp"
#include "test_util.hpp"

namespace {

using fkgpu::DeviceTensor;
using fkgpu::rng_for;
using fkkv::Layout;
using fkkv::Tensors;
using fktest::DT;
using fktest::HostTensor;

constexpr const char* kSm80 = "cuda.sm80.attention";
constexpr const char* kGeneric = "cuda.generic.attention";

struct Mask {
  bool causal = false;
  int64_t wl = -1, wr = -1;
  double softcap = 0;
  double scale = std::numeric_limits<double>::quiet_NaN();
};

// FLASHKIT_KERNEL_FAMILY overrides AUTO contexts: generic or sm90 leave the sm80 row out.
bool auto_is_generic() {
  const char* f = std::getenv("FLASHKIT_KERNEL_FAMILY");
  return f && (std::string(f) == "generic" || std::string(f) == "sm90");
}

// Query rows per (sequence, KV head) the kernels see: one-query GQA calls have their group's
// heads packed into the rows (batched, a window that hides no key, lse heads contiguous).
int64_t packed_rows(const Layout& L, const Mask& m, bool with_lse) {
  const bool pack = L.seqlen_q == 1 && L.nheads > L.nheads_k &&
                    (m.wl < 0 || m.wl >= fkkv::capacity(L) - 1) && (!with_lse || L.io_pad == 0);
  return pack ? L.nheads / L.nheads_k : L.seqlen_q;
}

bool sm80_base(const Layout& L) {
  const bool half = L.dt == DT::F16 || L.dt == DT::BF16;
  const bool pow2 = !L.paged || (L.page & (L.page - 1)) == 0;
  const int64_t vpad = L.v_pool_pad >= 0 ? L.v_pool_pad : L.pool_pad;
  const bool aligned =
      L.head_dim % 8 == 0 && L.pool_pad % 8 == 0 && vpad % 8 == 0 && L.io_pad % 8 == 0;
  return half && pow2 && aligned;
}

// The sm80 kernel's decode tiles: head_dim 64/128 buckets and at most 16 rows per (sequence,
// KV head), counted after the GQA packing of one-query calls.
bool sm80_decode_tiles(const Layout& L, const Mask& m, bool with_lse) {
  const int64_t bucket = L.head_dim <= 64 ? 64 : L.head_dim <= 96 ? 96 : L.head_dim <= 128 ? 128 : 256;
  return sm80_base(L) && (bucket == 64 || bucket == 128) && packed_rows(L, m, with_lse) <= 16;
}

bool sm80_eligible(const Layout& L, const Mask& m, bool with_lse) {
  if (!sm80_base(L)) return false;
  if (!L.paged) return true;
  // Pages smaller than the kernel's key tile (64 keys; 128 at head_dim <= 64) only with its
  // decode tiles.
  const int64_t block_n = L.head_dim <= 64 ? 128 : 64;
  return L.page >= block_n || sm80_decode_tiles(L, m, with_lse);
}

// The Hopper row (cuda.sm90.attention) reads contiguous caches with or without cache_seqlens,
// and pages of a multiple of 16 keys (a page per key tile where the page is a multiple of the
// tile, else 16-row boxes: 48 included); fp16/bf16 with rows 16-byte aligned, like the sm80 row.
// Decode-sized calls (at most 16 rows per KV head after the GQA packing) over pages that are
// not a multiple of its key tile it leaves to the sm80 row wherever that row takes them.
bool sm90_eligible(const Layout& L, const Mask& m, bool with_lse) {
  const bool half = L.dt == DT::F16 || L.dt == DT::BF16;
  const int64_t vpad = L.v_pool_pad >= 0 ? L.v_pool_pad : L.pool_pad;
  const bool aligned =
      L.head_dim % 8 == 0 && L.pool_pad % 8 == 0 && vpad % 8 == 0 && L.io_pad % 8 == 0;
  if (!(half && aligned && L.head_dim <= 256)) return false;
  if (!L.paged) return true;
  if (L.page % 16 != 0) return false;
  const int64_t block_n = L.head_dim <= 128 ? 128 : L.head_dim <= 192 ? 112 : 80;
  return L.page % block_n == 0 || packed_rows(L, m, with_lse) > 16 ||
         !sm80_eligible(L, m, with_lse);
}

std::string expected_variant(const Layout& L, const Mask& m, bool with_lse,
                             fk_kernel_family_t family) {
  if (family == FK_KERNEL_FAMILY_GENERIC) return kGeneric;
  if (family == FK_KERNEL_FAMILY_AUTO && sm90_eligible(L, m, with_lse) && fkattn::auto_takes_sm90())
    return "cuda.sm90.attention";
  if (family == FK_KERNEL_FAMILY_AUTO && auto_is_generic()) return kGeneric;
  return sm80_eligible(L, m, with_lse) ? kSm80 : kGeneric;
}

const char* family_name(fk_kernel_family_t f) {
  switch (f) {
    case FK_KERNEL_FAMILY_AUTO: return "auto";
    case FK_KERNEL_FAMILY_SM80: return "sm80 forced";
    case FK_KERNEL_FAMILY_GENERIC: return "generic forced";
    default: return "?";
  }
}

std::string describe(const Layout& L, const Mask& m, bool with_lse) {
  std::ostringstream s;
  s << (L.paged ? "paged" : "contiguous") << " b" << L.batch << " sq" << L.seqlen_q << " h"
    << L.nheads << "/" << L.nheads_k << " d" << L.head_dim << " " << fktest::dt_name(L.dt);
  if (L.paged) s << " page " << L.page << " x " << L.max_blocks;
  else s << " seqlen_cache " << L.seqlen_cache;
  s << " cache_seqlens";
  if (L.null_seqlens) s << " NULL";
  else
    for (auto x : L.seqlens) s << " " << x;
  s << (L.share ? " shared" : "") << (L.shuffle ? " shuffled" : "") << " pads " << L.pool_pad
    << "/" << L.v_pool_pad << "/" << L.table_pad << "/" << L.io_pad
    << (m.causal ? " causal" : "") << " window(" << m.wl << "," << m.wr << ") softcap "
    << m.softcap << " scale " << m.scale << (with_lse ? "" : " no-lse") << ", seed "
    << fktest::test_seed();
  return s.str();
}

fk_attention_params_t params_of(const Mask& m) {
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.causal = m.causal;
  p.window_size_left = int32_t(m.wl);
  p.window_size_right = int32_t(m.wr);
  p.softcap = float(m.softcap);
  p.softmax_scale = float(m.scale);
  return p;
}

// attention_check.hpp's description of the same problem: one query block of seqlen_q rows per
// sequence, seqlen_k = cache_seqlens[b] (keys packed by gather_packed).
fkattn::Case check_case(const Layout& L, const Tensors& t, const Mask& m, bool with_lse) {
  fkattn::Case c;
  c.pr.nheads = L.nheads;
  c.pr.nheads_k = L.nheads_k;
  c.pr.d = L.head_dim;
  c.pr.dt = L.dt;
  c.pr.causal = m.causal;
  c.pr.wl = m.wl;
  c.pr.wr = m.wr;
  c.pr.softcap = m.softcap;
  c.pr.scale = m.scale;
  c.pr.lq.assign(size_t(L.batch), L.seqlen_q);
  c.pr.lk = t.lens;
  c.with_lse = with_lse;
  return c;
}

// fp32: relative to the output magnitude (see the file comment); lse as check_result does.
void check_fp32(const fkattn::Case& c, const HostTensor& q, const HostTensor& k,
                const HostTensor& v, const HostTensor& out, const HostTensor& lse) {
  const fkattn::Reference ref = fkattn::reference(c.pr, q.to_vector(), k.to_vector(), v.to_vector());
  const std::vector<double> got = out.to_vector();
  double err = 0, mag = 0;
  int64_t unwritten = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    mag = std::max(mag, std::fabs(ref.out[i]));
    if (std::isnan(got[i])) ++unwritten;
    else err = std::max(err, std::fabs(got[i] - ref.out[i]));
  }
  INFO("fp32 max err " << err << ", magnitude " << mag << ", unwritten " << unwritten);
  CHECK(unwritten == 0);
  CHECK(err <= 5e-5 * (1 + mag));
  CHECK(fkgpu::padding_written(out) == 0);
  if (!c.with_lse) {
    CHECK(lse.all_poison());
    return;
  }
  const int64_t B = int64_t(c.pr.lq.size()), sq = c.pr.lq[0], H = c.pr.nheads, tq = B * sq;
  int64_t bad = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < sq; ++i) {
        const double want = ref.lse[size_t(h * tq + b * sq + i)], have = lse.get({b, h, i});
        const bool ok = std::isinf(want) ? have == want
                                         : std::fabs(have - want) <= 2e-4 * (1 + std::fabs(want));
        if (!ok) ++bad;
      }
  INFO("lse: " << bad << " bad");
  CHECK(bad == 0);
  CHECK(fkgpu::padding_written(lse) == 0);
}

// Device copies of a case's tensors; cache_seqlens and block_table only where given.
struct DeviceCase {
  DeviceTensor q, k, v, out, lse;
  std::unique_ptr<DeviceTensor> seqlens, table;
  explicit DeviceCase(Tensors& t) : q(t.q), k(t.k), v(t.v), out(t.out), lse(t.lse) {
    if (t.seqlens_arg()) seqlens.reset(new DeviceTensor(t.seqlens));
    if (t.table_arg()) table.reset(new DeviceTensor(t.table));
  }
  const DLTensor* sl() const { return seqlens ? &seqlens->dl : nullptr; }
  const DLTensor* bt() const { return table ? &table->dl : nullptr; }
};

struct Workspace {
  void* ptr = nullptr;
  ~Workspace() { cudaFree(ptr); }
};

// One case: select_kernel's name, workspace_size, forward (with a caller workspace of the
// queried size on every other family) and the checks, on the AUTO, SM80-forced and
// GENERIC-forced contexts in turn.
void run(const Layout& L, const Mask& m, uint64_t tag, bool with_lse = true) {
  INFO(describe(L, m, with_lse));
  auto rng = rng_for(tag);
  Tensors t = fkkv::build(L, rng);
  const HostTensor kp = fkkv::gather_packed(L, t, t.k), vp = fkkv::gather_packed(L, t, t.v);
  const fkattn::Case c = check_case(L, t, m, with_lse);
  const std::vector<uint8_t> k_before = t.k.bytes, v_before = t.v.bytes;
  DeviceCase d(t);
  const fk_attention_params_t params = params_of(m);
  const DLTensor* lse_arg = with_lse ? &d.lse.dl : nullptr;
  int ran = 0;
  for (fk_kernel_family_t fam :
       {FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_GENERIC}) {
    const fk_context_t* ctx = fkgpu::context_for(fam);
    if (ctx == nullptr) {
      WARN("no context for family " << family_name(fam) << " (" << fk_get_last_error_message()
                                    << "): skipped");
      continue;
    }
    INFO("context: " << family_name(fam));
    const char* variant = "?";
    REQUIRE_FK(fk_attention_kvcache_select_kernel(ctx, &params, &d.q, &d.k, &d.v, d.sl(), d.bt(),
                                                  &d.out, lse_arg, &variant));
    INFO("variant " << variant);
    CHECK(std::string(variant) == expected_variant(L, m, with_lse, fam));
    uint64_t ws = 0;
    REQUIRE_FK(fk_attention_kvcache_workspace_size(ctx, &params, &d.q, &d.k, &d.v, d.sl(),
                                                   d.bt(), &d.out, lse_arg, &ws));
    INFO("workspace_size " << ws);
    fk_launch_t launch;
    fk_launch_init(&launch);
    Workspace w;
    if (ws > 0 && (tag + ran) % 2 == 0) {
      REQUIRE_CUDA(cudaMalloc(&w.ptr, ws));
      launch.workspace = w.ptr;
      launch.workspace_bytes = ws;
    }
    d.out.poison();
    d.lse.poison();
    REQUIRE_FK(fk_attention_kvcache_forward(ctx, &launch, &params, &d.q, &d.k, &d.v, d.sl(),
                                            d.bt(), &d.out, lse_arg));
    d.out.download();
    d.lse.download();
    d.k.download();
    d.v.download();
    CHECK(t.k.bytes == k_before);  // the cache is read, never written
    CHECK(t.v.bytes == v_before);
    if (L.dt == DT::F32) check_fp32(c, t.q, kp, vp, t.out, t.lse);
    else fkattn::check_result(c, t.q, kp, vp, t.out, t.lse);
    ++ran;
  }
  CHECK(ran > 0);
}

Layout paged(int64_t page, int64_t capacity_keys, std::vector<int32_t> seqlens, int64_t sq,
             int64_t h, int64_t hk, int64_t d, DT dt) {
  Layout L;
  L.paged = true;
  L.page = page;
  L.max_blocks = (capacity_keys + page - 1) / page;
  L.batch = int64_t(seqlens.size());
  L.seqlens = std::move(seqlens);
  L.seqlen_q = sq;
  L.nheads = h;
  L.nheads_k = hk;
  L.head_dim = d;
  L.dt = dt;
  L.share = true;
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

// cache_seqlens for a paged layout: 0, one key, a partial last page, a page boundary, full
// capacity and a middle length (each at most the capacity).
std::vector<int32_t> mixed_lengths(const Layout& L, int64_t min_len = 0) {
  const int64_t cap = L.max_blocks * L.page, p = L.page;
  std::vector<int64_t> v = {0, 1, p * (L.max_blocks / 2) + p / 2 + 1,
                            p * std::max<int64_t>(1, L.max_blocks - 1), cap, cap / 3 + 2};
  std::vector<int32_t> r;
  for (int64_t x : v) r.push_back(int32_t(std::min(cap, std::max(x, min_len))));
  return r;
}

const int64_t kHeadDims[] = {64, 128, 256, 72};
const int64_t kPages[] = {16, 64, 256, 48};

}  // namespace

TEST_CASE("gpu kvcache: paged decode, GQA 32/8, head dims x page sizes",
          "[gpu][attention][kvcache]") {
  const fk_context_t* probe = fkgpu::context_for(FK_KERNEL_FAMILY_AUTO);
  if (!probe) {
    WARN("no CUDA context: kvcache cases skipped");
    return;
  }
  int i = 0;
  for (int64_t d : kHeadDims)
    for (int64_t page : kPages) {
      Layout L = paged(page, 1100, {}, 1, 32, 8, d, i % 2 ? DT::BF16 : DT::F16);
      L.seqlens = mixed_lengths(L);
      L.batch = int64_t(L.seqlens.size());
      Mask m;
      switch (i % 4) {
        case 0: break;
        case 1: m.causal = true; break;           // one query: hides nothing
        case 2: m.softcap = 30; break;
        case 3: m.wl = 200; m.wr = 0; break;      // a left window that hides keys
      }
      run(L, m, 40000 + uint64_t(i));
      ++i;
    }
}

TEST_CASE("gpu kvcache: pages of 1, 2 and 8 keys (the sm80 decode tiles' page loops)",
          "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) {
    WARN("no CUDA context: kvcache cases skipped");
    return;
  }
  // Pages smaller than the rows a decode-tile thread's copies step by (4 at head_dim 64, 2 at
  // 128) take the per-row page loop of load_kv_tile_paged; 8 the per-page loop. Decode with
  // GQA 32/8 packs 4 rows per KV head, so both the sm80 row (AUTO and forced) and the generic
  // row run; the Hopper row takes no page under 16 keys.
  int i = 0;
  for (int64_t d : {int64_t(64), int64_t(128)})
    for (int64_t page : {int64_t(1), int64_t(2), int64_t(8)}) {
      Layout L = paged(page, 300, {}, 1, 32, 8, d, i % 2 ? DT::BF16 : DT::F16);
      L.seqlens = mixed_lengths(L);
      L.batch = int64_t(L.seqlens.size());
      Mask m;
      if (i % 3 == 1) m.softcap = 20;
      if (i % 3 == 2) { m.wl = 70; m.wr = 0; }
      run(L, m, 42000 + uint64_t(i), i % 2 == 0);
      ++i;
    }
}

TEST_CASE("gpu kvcache: paged chunked prefill (seqlen_q 37, causal), head dims x page sizes",
          "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) {
    WARN("no CUDA context: kvcache cases skipped");
    return;
  }
  int i = 0;
  for (int64_t d : kHeadDims)
    for (int64_t page : kPages) {
      // Sequences shorter than 37 keys have rows that see none (out 0, lse -inf).
      Layout L = paged(page, 700, {}, 37, (i % 2) ? 32 : 8, (i % 2) ? 8 : 2, d,
                       i % 2 ? DT::F16 : DT::BF16);
      const int64_t cap = L.max_blocks * page;
      L.seqlens = {37, 20, 0, int32_t(cap), int32_t(std::min(cap, page * 3 + 5)), 700};
      L.batch = int64_t(L.seqlens.size());
      Mask m;
      m.causal = true;
      if (i % 3 == 1) m.wl = 64;
      if (i % 5 == 2) m.softcap = 15;
      run(L, m, 41000 + uint64_t(i), i % 7 != 3);
      ++i;
    }
}

// Speculative decoding and short chunks over a cache: 2-64 queries per sequence with GQA
// groups of 2-16, where the Hopper kernel packs up to 8 query heads of a group into one 128-row
// tile (launch.h, q_pack: 16 / 32 / 64 rows a head) where one head a tile would fill more than
// a wave (here the 32-head shapes, 5-6 sequences; scripts/gpu-check.sh runs this case again
// under FLASHKIT_SM90_ATTENTION_QPACK=2, which packs every shape); groups of 3 and MHA stay
// unpacked, and 65+ queries too; one query under a window that hides keys (attention_api.cpp's decode packing
// declines it, so the kernel packs 8 heads). Contiguous caches, pages of 128 / 256 keys (the
// key-tile path) and of 48 keys (16-row key boxes; more than 16 queries, where the sm80 row's
// decode tiles do not take the call; calls of up to 16 queries over pages below the key tile
// go to the sm80 row, expected_variant), every mask kind, lse on and off; the sm80 and generic
// families check the same inputs.
TEST_CASE("gpu kvcache: GQA heads packed into one tile (2-64 queries)", "[gpu][attention][kvcache][qpack]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) {
    WARN("no CUDA context: kvcache cases skipped");
    return;
  }
  struct Shape {
    int64_t sq, h, hk, d;
  };
  const Shape shapes[] = {{2, 32, 4, 128},  {4, 16, 2, 64},   {7, 32, 8, 128}, {16, 16, 2, 256},
                          {17, 8, 4, 128},  {33, 12, 2, 64},  {64, 8, 2, 96},  {5, 6, 2, 128},
                          {3, 16, 16, 128}, {65, 16, 2, 128}, {12, 32, 2, 192}, {1, 16, 2, 64},
                          {24, 16, 4, 128}, {1, 32, 4, 128}};
  int i = 0;
  for (const Shape& sh : shapes) {
    for (int variant = 0; variant < 3; ++variant) {
      const DT dt = (i % 2) ? DT::F16 : DT::BF16;
      Layout L;
      if (variant == 0) {
        L = contiguous(600, {}, sh.sq, sh.h, sh.hk, sh.d, dt);
        L.seqlens = {600, 1, int32_t(sh.sq), 0, 257, int32_t(sh.sq) + 129};
      } else {
        const int64_t page = variant == 2 ? 256 : sh.d > 128 ? 64 : sh.sq > 16 ? 48 : 128;
        L = paged(page, 700, {}, sh.sq, sh.h, sh.hk, sh.d, dt);
        const int64_t cap = L.max_blocks * page;
        L.seqlens = {int32_t(cap), int32_t(sh.sq), 0, int32_t(std::min<int64_t>(cap, page + 3)), 300};
      }
      L.batch = int64_t(L.seqlens.size());
      Mask m;
      switch (sh.sq == 1 ? 4 : i % 4) {
        case 0: m.causal = true; break;
        case 1: m.causal = true; m.wl = 37; break;
        case 2: m.wl = 20; m.wr = 5; m.softcap = 12; break;
        case 4: m.causal = true; m.wl = 10; break;  // hides keys: no decode packing
        default: break;  // no mask
      }
      run(L, m, 47000 + uint64_t(i), i % 3 != 1);
      ++i;
    }
  }
}

// The same, small, for the sanitizers (memcheck, racecheck): two packed shapes, 4 and 8 heads a
// tile, a contiguous and a paged cache; 9 sequences x 16 heads each, more than a wave of one
// head a tile on 132 SMs, so that the default rule packs both (build_args).
TEST_CASE("gpu kvcache: packed GQA tiles, small", "[gpu][attention][kvcache][qpack][sanitize]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) {
    WARN("no CUDA context: kvcache cases skipped");
    return;
  }
  Layout L = contiguous(200, {200, 3, 50, 7, 120, 9, 1, 30, 64}, 4, 16, 2, 64, DT::BF16);
  Mask m;
  m.causal = true;
  run(L, m, 47900);
  Layout P = paged(128, 300, {300, 17, 0, 128, 129, 256, 1, 64, 300}, 17, 16, 4, 128, DT::F16);
  Mask w;
  w.causal = true;
  w.wl = 30;
  run(P, w, 47901);
}

TEST_CASE("gpu kvcache: contiguous cache with and without cache_seqlens",
          "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) return;
  int i = 0;
  for (DT dt : {DT::F16, DT::BF16})
    for (int64_t sq : {1, 37}) {
      Layout L = contiguous(600, {0, 1, 37, 256, 600, 333}, sq, 16, 4, 128, dt);
      L.nan_tail = true;  // rows past each length: unwritten memory
      Mask m;
      m.causal = sq > 1;
      run(L, m, 42000 + uint64_t(i++));
    }
  Layout N = contiguous(300, {0, 0, 0}, 37, 8, 8, 64, DT::BF16);
  N.null_seqlens = true;
  N.seqlens.clear();
  Mask m;
  m.causal = true;
  run(N, m, 42100);
  N.seqlen_q = 1;
  N.nheads = 32;
  N.nheads_k = 8;
  run(N, Mask{}, 42101);
}

TEST_CASE("gpu kvcache: NULL cache_seqlens on a paged cache", "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) return;
  int i = 0;
  for (int64_t page : kPages) {
    Layout L = paged(page, 512, {0, 0, 0}, i % 2 ? 37 : 1, 32, 8, 128, DT::F16);
    L.null_seqlens = true;
    L.seqlens.clear();
    Mask m;
    m.causal = true;
    run(L, m, 42200 + uint64_t(i++));
  }
}

TEST_CASE("gpu kvcache: batch 1 with 4096+ keys", "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) return;
  Layout a = paged(64, 4224, {4200}, 1, 32, 8, 128, DT::BF16);
  run(a, Mask{}, 43000);
  Layout b = paged(16, 4608, {4608}, 37, 32, 8, 64, DT::F16);
  Mask causal;
  causal.causal = true;
  run(b, causal, 43001);
  Layout c = paged(256, 5000, {4133}, 1, 32, 8, 256, DT::F16);
  c.shuffle = true;
  run(c, Mask{}, 43002);
  Layout e = paged(48, 4500, {4497}, 37, 32, 8, 128, DT::BF16);  // generic off Hopper
  run(e, causal, 43003);
  Layout f = contiguous(4500, {4133}, 37, 32, 8, 128, DT::BF16);
  run(f, causal, 43004);
  // A large capacity where one sequence holds nothing and the other half of it: if the keys
  // are split into chunks (split-KV), chunks past a sequence's length are empty.
  Layout g = paged(64, 8192, {0, 4100}, 1, 32, 8, 128, DT::F16);
  run(g, Mask{}, 43005);
}

TEST_CASE("gpu kvcache: pages of 32, 128 and 512 keys (the Hopper row's two page paths)",
          "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) return;
  // Pages of 128 and 512 keys at head_dim 64, 72 (padded to 96) and 128: on an H100/H200 AUTO
  // reads them on the Hopper row, a key tile per page lookup; pages of 32 there come in 16-row
  // boxes (prefill; decode takes the sm80 decode tiles). The pool is either one sequence of rows
  // (contiguous pages) or, with padded rows, pages further apart than page_size rows. Rows no
  // sequence holds are NaN: the kernels read them with a tile but must not let them through.
  int i = 0;
  for (int64_t d : {64, 72, 128})
    for (int64_t page : {32, 128, 512}) {
      Layout L = paged(page, 1300, {}, 1, 32, 8, d, i % 2 ? DT::BF16 : DT::F16);
      L.seqlens = mixed_lengths(L);
      L.batch = int64_t(L.seqlens.size());
      L.nan_tail = true;
      if (i % 3 == 1) L.pool_pad = 8;
      Mask m;
      if (i % 2) m.softcap = 20;
      run(L, m, 47000 + uint64_t(i));
      // Chunked prefill: 150 causal rows (two query tiles), a left window on every other one.
      Layout P = paged(page, 1100, {150, 0, 1100, int32_t(page + 3)}, 150, 8, 2, d,
                       i % 2 ? DT::F16 : DT::BF16);
      if (i % 3 == 2) P.pool_pad = 16;
      P.nan_tail = true;
      Mask c;
      c.causal = true;
      if (i % 2) c.wl = 100;
      run(P, c, 47100 + uint64_t(i), i % 4 != 3);
      ++i;
    }
  // Long decodes the keys of which are split into chunks of whole pages, on a padded pool.
  Layout S = paged(128, 8192, {8000}, 1, 32, 8, 128, DT::BF16);
  S.nan_tail = true;
  S.pool_pad = 8;
  run(S, Mask{}, 47200);
  Layout T = paged(16, 8192, {7990}, 1, 32, 8, 128, DT::F16);
  T.nan_tail = true;
  T.pool_pad = 16;
  run(T, Mask{}, 47201);
  // head_dim 192 (112-key tiles: seven boxes) and 256 (80-key tiles, a page of 256 not a
  // multiple: boxes too).
  Layout U = paged(64, 900, {900, 0, 333}, 37, 8, 2, 192, DT::BF16);
  U.nan_tail = true;
  Mask c;
  c.causal = true;
  run(U, c, 47202);
  Layout W = paged(256, 1300, {1300, 1, 700}, 1, 16, 2, 256, DT::F16);
  W.nan_tail = true;
  run(W, Mask{}, 47203);
}

TEST_CASE("gpu kvcache: padded strides, fp32, head_dim 36", "[gpu][attention][kvcache]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) return;
  // Pads that are multiples of 8 elements keep rows 16-byte aligned (sm80); 3 does not.
  for (int64_t pad : {8, 3}) {
    Layout L = paged(64, 800, {800, 65, 0, 300}, 5, 8, 2, 128, DT::BF16);
    L.pool_pad = pad;
    L.v_pool_pad = pad * 2;
    L.table_pad = 7;
    L.io_pad = pad;
    Mask m;
    m.causal = true;
    run(L, m, 44000 + uint64_t(pad));
  }
  Layout f = paged(16, 600, {600, 17, 0, 250}, 1, 8, 2, 64, DT::F32);
  run(f, Mask{}, 44100);
  Layout f2 = contiguous(300, {300, 31, 0}, 37, 4, 1, 64, DT::F32);
  Mask causal;
  causal.causal = true;
  run(f2, causal, 44101);
  Layout o = paged(16, 400, {400, 3, 129}, 37, 4, 2, 36, DT::F16);
  run(o, causal, 44200);
}

TEST_CASE("gpu kvcache: out-of-range entries are clamped, never a fault",
          "[gpu][attention][kvcache][sanitize]") {
  const fk_context_t* ctx = fkgpu::context_for(FK_KERNEL_FAMILY_AUTO);
  if (!ctx) return;
  // The header: on CUDA a wrong entry gives a wrong result but never an access outside k_cache
  // and v_cache. Run such entries (under compute-sanitizer this is the check) on every family.
  for (fk_kernel_family_t fam :
       {FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_GENERIC}) {
    const fk_context_t* c = fkgpu::context_for(fam);
    if (!c) continue;
    INFO("context: " << family_name(fam));
    // Pages of 16 (below a key tile: sm80 decode tiles), 48 (the Hopper row's 16-row boxes
    // under AUTO) and 128 (a key tile: the Hopper row's tile path).
    for (int64_t page : {16, 48, 128}) {
      auto rng = rng_for(45000 + uint64_t(page));
      Layout L = paged(page, 256, {5, 256, 30}, 3, 8, 2, 64, DT::F16);
      Tensors t = fkkv::build(L, rng);
      t.seqlens.set({0}, -5);
      t.seqlens.set({1}, 1000000);  // past the capacity
      t.table.set({2, 0}, -3);
      t.table.set({2, 1}, 1000000000);
      DeviceCase d(t);
      d.out.poison();
      fk_attention_params_t p;
      fk_attention_params_init(&p);
      p.causal = 1;
      REQUIRE_FK(fk_attention_kvcache_forward(c, nullptr, &p, &d.q, &d.k, &d.v, d.sl(), d.bt(),
                                              &d.out, &d.lse));
      d.out.download();
      CHECK(fkgpu::padding_written(t.out) == 0);
    }
  }
}

TEST_CASE("gpu kvcache: arguments in the wrong memory", "[gpu][attention][kvcache][validation]") {
  const fk_context_t* ctx = fkgpu::context_for(FK_KERNEL_FAMILY_AUTO);
  if (!ctx) return;
  auto rng = rng_for(45100);
  Layout L = paged(16, 64, {5, 64}, 1, 4, 2, 64, DT::F16);
  Tensors t = fkkv::build(L, rng);
  DeviceCase d(t);
  // Host-resident cache_seqlens / block_table with a CUDA context.
  for (int which = 0; which < 2; ++which) {
    const DLTensor* sl = which == 0 ? t.seqlens.view() : d.sl();
    const DLTensor* bt = which == 1 ? t.table.view() : d.bt();
    const char* name = which == 0 ? "cache_seqlens" : "block_table";
    const fk_status_t st =
        fk_attention_kvcache_forward(ctx, nullptr, nullptr, &d.q, &d.k, &d.v, sl, bt, &d.out,
                                     &d.lse);
    const std::string msg = fk_get_last_error_message();
    INFO(name << ": " << fk_status_string(st) << ": " << msg);
    CHECK(st == FK_ERROR_WRONG_DEVICE);
    CHECK(msg.find(name) != std::string::npos);
  }
  // max_seqlen_k given: refused as on the CPU backend.
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.max_seqlen_k = 64;
  const fk_status_t st = fk_attention_kvcache_forward(ctx, nullptr, &p, &d.q, &d.k, &d.v, d.sl(),
                                                      d.bt(), &d.out, &d.lse);
  CHECK(st == FK_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(fk_get_last_error_message()).find("max_seqlen_k") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Graph capture: the call reads cache_seqlens and block_table on the device only, so it can be
// captured. Captured once (after a warm-up call), replayed twice with new q/k/v and new
// cache_seqlens uploaded into the same buffers: the replay must use the new lengths.
// ---------------------------------------------------------------------------------------------
namespace {

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

void upload(DeviceTensor& d) {
  REQUIRE_CUDA(cudaMemcpy(d.base, d.host->bytes.data(), d.host->bytes.size(),
                          cudaMemcpyHostToDevice));
}

void graph_case(fk_kernel_family_t fam, Layout L, const Mask& m, bool caller_workspace,
                uint64_t tag) {
  const fk_context_t* ctx = fkgpu::context_for(fam);
  if (!ctx) {
    WARN("no context for family " << family_name(fam) << ": graph case skipped");
    return;
  }
  // Built at capacity (every page distinct) with every table entry valid, so that the lengths
  // can change freely between replays.
  L.garbage = false;
  L.seqlens.assign(size_t(L.batch), int32_t(fkkv::capacity(L)));
  INFO(describe(L, m, true) << ", context " << family_name(fam)
                            << (caller_workspace ? ", caller workspace" : ""));
  auto rng = rng_for(tag);
  Tensors t = fkkv::build(L, rng);
  DeviceCase d(t);
  const fk_attention_params_t params = params_of(m);
  const char* variant = "?";
  REQUIRE_FK(fk_attention_kvcache_select_kernel(ctx, &params, &d.q, &d.k, &d.v, d.sl(), d.bt(),
                                                &d.out, &d.lse, &variant));
  CHECK(std::string(variant) == expected_variant(L, m, true, fam));
  Stream s;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  Workspace w;
  if (caller_workspace) {
    uint64_t ws = 0;
    REQUIRE_FK(fk_attention_kvcache_workspace_size(ctx, &params, &d.q, &d.k, &d.v, d.sl(),
                                                   d.bt(), &d.out, &d.lse, &ws));
    if (ws > 0) {
      REQUIRE_CUDA(cudaMalloc(&w.ptr, ws));
      launch.workspace = w.ptr;
      launch.workspace_bytes = ws;
    }
  }
  auto call = [&] {
    return fk_attention_kvcache_forward(ctx, &launch, &params, &d.q, &d.k, &d.v, d.sl(), d.bt(),
                                        &d.out, &d.lse);
  };
  REQUIRE_FK(call());  // warm-up, outside the capture
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  Graph g;
  REQUIRE_CUDA(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal));
  const fk_status_t st = call();
  const std::string msg = fk_get_last_error_message();
  const cudaError_t end = cudaStreamEndCapture(s.s, &g.graph);
  INFO("call under capture -> " << fk_status_string(st) << ": " << msg);
  REQUIRE(st == FK_SUCCESS);
  REQUIRE_CUDA(end);
  REQUIRE_CUDA(cudaGraphInstantiate(&g.exec, g.graph, 0));
  const int64_t cap = fkkv::capacity(L);
  for (int rep = 0; rep < 2; ++rep) {
    INFO("graph launch " << rep + 1);
    t.q.fill_normal(rng);
    t.k.fill_normal(rng);
    t.v.fill_normal(rng);
    std::uniform_int_distribution<int64_t> len(0, cap);
    for (int64_t b = 0; b < L.batch; ++b) {
      const int64_t n = b == 0 ? cap : b == 1 ? 0 : len(rng);
      t.lens[size_t(b)] = n;
      t.seqlens.set({b}, double(n));
    }
    upload(d.q);
    upload(d.k);
    upload(d.v);
    upload(*d.seqlens);
    d.out.poison();
    d.lse.poison();
    REQUIRE_CUDA(cudaGraphLaunch(g.exec, s.s));
    REQUIRE_CUDA(cudaStreamSynchronize(s.s));
    d.out.download();
    d.lse.download();
    const HostTensor kp = fkkv::gather_packed(L, t, t.k), vp = fkkv::gather_packed(L, t, t.v);
    fkattn::check_result(check_case(L, t, m, true), t.q, kp, vp, t.out, t.lse);
  }
}

}  // namespace

TEST_CASE("gpu kvcache: graph capture and replay with new cache_seqlens",
          "[gpu][attention][kvcache][graph]") {
  if (!fkgpu::context_for(FK_KERNEL_FAMILY_AUTO)) {
    WARN("no CUDA context: kvcache graph cases skipped");
    return;
  }
  Layout dec = paged(64, 2048, {0, 0, 0, 0, 0, 0}, 1, 32, 8, 128, DT::BF16);
  Layout pre = paged(16, 1024, {0, 0, 0}, 37, 8, 2, 64, DT::F16);
  Mask causal;
  causal.causal = true;
  int i = 0;
  for (fk_kernel_family_t fam :
       {FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_GENERIC}) {
    graph_case(fam, dec, Mask{}, i % 2 == 0, 46000 + uint64_t(i));
    ++i;
    graph_case(fam, pre, causal, i % 2 == 0, 46000 + uint64_t(i));
    ++i;
  }
  Layout p48 = paged(48, 1000, {0, 0, 0}, 1, 32, 8, 128, DT::F16);  // AUTO: generic off Hopper
  graph_case(FK_KERNEL_FAMILY_AUTO, p48, Mask{}, true, 46100);
  Layout contig = contiguous(900, {0, 0, 0, 0}, 1, 32, 8, 128, DT::BF16);
  graph_case(FK_KERNEL_FAMILY_AUTO, contig, Mask{}, false, 46101);
  Layout p256 = paged(256, 2048, {0, 0, 0, 0}, 1, 32, 8, 128, DT::BF16);  // sm90 on Hopper
  graph_case(FK_KERNEL_FAMILY_AUTO, p256, Mask{}, true, 46102);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
