// The split-KV planner's rules (src/cuda/attention/common/split_kv_plan.h): which attention
// problems have their keys split into chunks, into how many, and the varlen segments that
// follow, checked on the host against the numbers worked out by hand. The GPU suite runs the
// split itself against the float64 reference (tests/gpu/test_attention_sm90.cpp, "[split]").
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "cuda/attention/common/split_kv_plan.h"
#include "cuda/attention/sm90/attention_sm90.h"
#include "test_util.hpp"

namespace {

using flashkit::AttentionProblem;
using flashkit::DeviceCaps;
using flashkit::DType;
using flashkit::cuda::attn::plan_split_kv;
using flashkit::cuda::attn::SplitKvPlan;

DeviceCaps h200() {
  DeviceCaps c;
  c.cc_major = 9;
  c.sm_count = 132;
  c.dram_bytes_per_s = flashkit::dram_bytes_per_s(3200000, 6144);  // 3.2 GHz, 6144 bits
  return c;
}

DeviceCaps h100() {
  DeviceCaps c = h200();
  c.dram_bytes_per_s = flashkit::dram_bytes_per_s(2619000, 5120);  // H100 SXM's attributes
  return c;
}

// A batched bf16 problem with compact (batch, seqlen, heads, head_dim) tensors; seqlen_q rows
// per (batch, head) as the kernels see them (a packed GQA decode has `group` rows).
AttentionProblem decode(int64_t batch, int64_t seqlen_q, int64_t seqlen_k, int64_t nheads,
                        int64_t head_dim = 128) {
  AttentionProblem p{};
  p.dtype = DType::BF16;
  p.device = flashkit::Device::Cuda;
  p.batch = batch;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.total_q = batch * seqlen_q;
  p.total_k = batch * seqlen_k;
  p.nheads = p.nheads_k = nheads;
  p.head_dim = head_dim;
  p.q_row_stride = p.o_row_stride = nheads * head_dim;
  p.q_batch_stride = p.o_batch_stride = seqlen_q * nheads * head_dim;
  p.k_row_stride = p.v_row_stride = nheads * head_dim;
  p.k_batch_stride = p.v_batch_stride = seqlen_k * nheads * head_dim;
  p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = head_dim;
  p.softmax_scale = 0.088f;
  p.window_left = p.window_right = -1;
  return p;
}

// `p` over a paged KV cache of 256 pages of 128 keys (the planner reads no table entry),
// causal without a left window: speculative decoding's shape.
AttentionProblem causal_over_pages(AttentionProblem p) {
  static const int32_t table[4] = {0, 0, 0, 0};
  p.block_table = table;
  p.page_size = 128;
  p.num_pages = 256;
  p.causal = true;
  p.window_right = 0;
  return p;
}

struct Env : fktest::ScopedEnv {
  explicit Env(const char* v) : ScopedEnv("FLASHKIT_ATTENTION_SPLIT_KV", v) {}
};

}  // namespace

TEST_CASE("split-KV plan: the automatic choice (FlashAttention-2's wave-efficiency rule)",
          "[cpu][attention][split]") {
  Env env(nullptr);
  SplitKvPlan plan;
  SECTION("1 x 32k keys, 8 KV heads (a packed GQA group of 4 rows): 14 chunks of 2432 keys") {
    // 8 tiles; the best efficiency up to 32 chunks is 128/132; the fewest chunks within 85% of
    // it: 8n/132 >= 0.824 -> n = 14, chunk ceil(32768/14) = 2341 -> 2432 (multiple of 128).
    REQUIRE(plan_split_kv(h200(), decode(1, 4, 32768, 8), &plan));
    CHECK(plan.nsplit == 14);
    CHECK(plan.chunk == 2432);
    CHECK(plan.rows == 32768);
    CHECK_FALSE(plan.gaps);
    CHECK(plan.segments == 14);
  }
  SECTION("8 x 8k keys, 8 KV heads: 2 chunks of 4096 keys, 128 tiles") {
    REQUIRE(plan_split_kv(h200(), decode(8, 4, 8192, 8), &plan));
    CHECK(plan.nsplit == 2);
    CHECK(plan.chunk == 4096);
    CHECK(plan.segments == 16);
  }
  SECTION("a KV-cache slice: sequences 6000 rows apart, 5000 keys used: gap segments") {
    AttentionProblem p = decode(3, 2, 5000, 3);
    p.k_batch_stride = p.v_batch_stride = 6000 * p.k_row_stride;
    REQUIRE(plan_split_kv(h200(), p, &plan));
    CHECK(plan.rows == 6000);
    CHECK(plan.gaps);
    CHECK(plan.segments == 3 * plan.nsplit + 2);
    CHECK(plan.chunk % 128 == 0);
    CHECK((plan.nsplit - 1) * plan.chunk < 5000);
    CHECK(plan.nsplit * plan.chunk >= 5000);
  }
  SECTION("one query row, causal or with a left window reaching key 0: split") {
    AttentionProblem p = decode(1, 1, 9000, 8);
    p.causal = true;
    p.window_right = 0;
    CHECK(plan_split_kv(h200(), p, &plan));
    p.window_left = 8999;
    CHECK(plan_split_kv(h200(), p, &plan));
  }
  SECTION("not split") {
    AttentionProblem p = decode(1, 16, 4096, 8);
    p.causal = true;  // causal rows each see a different key range
    p.window_right = 0;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 1, 9000, 8);
    p.window_left = 100;  // a window hiding keys
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 1, 9000, 8);
    p.dtype = DType::F32;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 1, 9000, 8);
    p.varlen = true;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(16, 4, 2048, 8);  // 128 tiles: the GPU is nearly full
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 1, 1000, 8);  // fewer keys than two chunks of 512
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 129, 9000, 8);  // more rows than one query tile
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(2, 1, 9000, 8);
    p.v_batch_stride += p.v_row_stride;  // k and v with different pitches between sequences
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(2, 1, 9000, 8);
    p.k_batch_stride += 8;  // a batch stride that is not a whole number of rows
    p.v_batch_stride += 8;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    p = decode(1, 1, 9000, 8);
    p.device = flashkit::Device::Host;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
  }
}

TEST_CASE("split-KV plan: FLASHKIT_ATTENTION_SPLIT_KV", "[cpu][attention][split]") {
  SplitKvPlan plan;
  SECTION("0 and 1 never split") {
    for (const char* v : {"0", "1"}) {
      Env env(v);
      CHECK_FALSE(plan_split_kv(h200(), decode(1, 4, 32768, 8), &plan));
    }
  }
  SECTION("N forces ceil(seqlen_k / min(N, 32, seqlen_k))-key chunks on any size") {
    {
      Env env("3");
      REQUIRE(plan_split_kv(h200(), decode(3, 5, 77, 2), &plan));  // 5 rows, 77 keys, 6 tiles
      CHECK(plan.nsplit == 3);
      CHECK(plan.chunk == 26);
    }
    {
      Env env("32");
      REQUIRE(plan_split_kv(h200(), decode(2, 1, 40, 1), &plan));  // 20 chunks of 2 keys
      CHECK(plan.nsplit == 20);
      CHECK(plan.chunk == 2);
      REQUIRE(plan_split_kv(h200(), decode(2, 1, 64, 1), &plan));
      CHECK(plan.nsplit == 32);
    }
    {
      Env env("99");  // capped at 32
      REQUIRE(plan_split_kv(h200(), decode(1, 1, 9000, 8), &plan));
      CHECK(plan.nsplit <= 32);
    }
    {
      Env env("7");  // forcing still needs a mask that hides no key
      AttentionProblem p = decode(1, 16, 4096, 8);
      p.causal = true;
      p.window_right = 0;
      CHECK_FALSE(plan_split_kv(h200(), p, &plan));
    }
  }
  SECTION("anything else is the automatic choice") {
    Env env("many");
    REQUIRE(plan_split_kv(h200(), decode(1, 4, 32768, 8), &plan));
    CHECK(plan.nsplit == 14);
  }
}

TEST_CASE("split-KV plan: KV caches (fk_attention_kvcache_forward) split in whole pages",
          "[cpu][attention][split][kvcache]") {
  Env env(nullptr);
  static const int32_t dummy[4] = {0, 0, 0, 0};
  SECTION("paged, pages of 16: chunks stay multiples of 128 keys") {
    AttentionProblem p = decode(1, 4, 32768, 8);  // 1 x 32k, GQA 32/8 packed: 8 tiles
    p.block_table = dummy;
    p.page_size = 16;
    p.num_pages = 2048;
    p.k_batch_stride = p.v_batch_stride = 16 * p.k_row_stride;  // the pool's page stride
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan));
    CHECK(plan.kvcache);
    CHECK(plan.page == 16);
    // Waves of 2 x 132 slots for caches: 8n / 264 >= 0.85 x 256 / 264 -> n = 28, chunk
    // ceil(32768 / 28) = 1171 -> 1280 (whole 128-key tiles and 16-key pages) -> 26 chunks.
    CHECK(plan.nsplit == 26);
    CHECK(plan.chunk == 1280);
    CHECK(plan.chunk % 16 == 0);
  }
  SECTION("the Hopper row's wave: one CTA per SM") {
    AttentionProblem p = decode(1, 4, 32768, 8);
    p.block_table = dummy;
    p.page_size = 128;
    p.num_pages = 256;
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan, 1));
    // Waves of 132 slots: 8n / 132 -> best 1.0 at n = 33 (> 32); within 85%: the first n with
    // 8n / (ceil(8n / 132) x 132) >= 0.85 x max over n <= 32 (8 x 16 / 132 = 0.97) -> n = 14,
    // chunk ceil(32768 / 14) = 2341 -> 2432 (whole 128-key tiles) -> 14 chunks.
    CHECK(plan.nsplit == 14);
    CHECK(plan.chunk == 2432);
    SplitKvPlan two;
    REQUIRE(plan_split_kv(h200(), p, &two));  // the default: two blocks per SM
    CHECK(two.nsplit > plan.nsplit);
  }
  SECTION("paged, pages of 384 (not a power of two): chunks of lcm(128, 384) multiples") {
    AttentionProblem p = decode(1, 4, 32768, 8);
    p.block_table = dummy;
    p.page_size = 384;
    p.num_pages = 100;
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan));
    CHECK(plan.chunk % 384 == 0);
    CHECK(plan.nsplit == (32768 + plan.chunk - 1) / plan.chunk);
  }
  SECTION("contiguous with cache_seqlens: 128-row virtual pages") {
    AttentionProblem p = decode(2, 4, 8192, 8);
    p.seqused_k = dummy;
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan));
    CHECK(plan.page == 128);
    CHECK(plan.pages_per_seq == 64);
    // Sequences not a whole number of 128-row pages apart: not split.
    p.k_batch_stride = p.v_batch_stride = 8200 * p.k_row_stride;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
  }
  SECTION("a page longer than the cache: nothing to split") {
    AttentionProblem p = decode(1, 4, 1024, 8);
    p.block_table = dummy;
    p.page_size = 2048;
    p.seqlen_k = 1024;
    SplitKvPlan plan;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
  }
  SECTION("varlen queries over a cache are never split") {
    AttentionProblem p = decode(1, 4, 32768, 8);
    p.seqused_k = dummy;
    p.varlen = true;
    SplitKvPlan plan;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan));
  }
}

// Causal queries over a KV cache (speculative decoding: a few query rows per sequence, each row
// seeing the keys up to its own position, bottom-right aligned): chunks cut from the sequence's
// end (chunk_keys) under the inner call's mask (causal, window_left = chunk - 1, aligned to the
// chunk's own end). Every query row must see each of its keys in exactly one chunk and no
// other key, for any sequence length up to the capacity, any page size, and more query rows
// than keys.
TEST_CASE("split-KV plan: causal queries over a KV cache, chunks from the end",
          "[cpu][attention][split][kvcache]") {
  Env env(nullptr);
  static const int32_t dummy[4] = {0, 0, 0, 0};
  SECTION("planned: causal rows over a cache, not a left window, not batched calls") {
    AttentionProblem p = causal_over_pages(decode(1, 4, 32768, 8));
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan, 1));
    CHECK(plan.kvcache);
    CHECK(plan.causal);
    CHECK(plan.nsplit == 14);  // as the unmasked call (same tiles, same rule)
    CHECK(plan.pages_per_chunk == plan.chunk / 128 + 1 + 1);  // ceil(3 / 128) + 1 extra
    p.seqlen_q = 128;
    REQUIRE(plan_split_kv(h200(), p, &plan, 1));
    CHECK(plan.pages_per_chunk == plan.chunk / 128 + 1 + 1);
    p.seqlen_q = 129;  // more than one query tile: not planned
    CHECK_FALSE(plan_split_kv(h200(), p, &plan, 1));
    p.seqlen_q = 4;
    p.window_left = 1000;  // a left window: the chunks' window would have to be two-sided
    CHECK_FALSE(plan_split_kv(h200(), p, &plan, 1));
    p.window_left = -1;
    SplitKvPlan forced;
    Env two("2");
    REQUIRE(plan_split_kv(h200(), p, &forced, 1));
    CHECK(forced.causal);
    CHECK(forced.nsplit == 2);
    AttentionProblem batched = decode(1, 4, 32768, 8);  // no cache: the varlen inner call
    batched.causal = true;                               // cannot overlap its chunks
    batched.window_right = 0;
    CHECK_FALSE(plan_split_kv(h200(), batched, &forced, 1));
  }
  SECTION("unmasked plans keep chunk / page entries and unmoved chunks") {
    AttentionProblem p = decode(1, 4, 32768, 8);
    p.block_table = dummy;
    p.page_size = 64;
    p.num_pages = 512;
    SplitKvPlan plan;
    REQUIRE(plan_split_kv(h200(), p, &plan, 1));
    CHECK_FALSE(plan.causal);
    CHECK(plan.pages_per_chunk == plan.chunk / 64);
    int64_t first = -1, len = -1;
    flashkit::cuda::attn::chunk_keys(1000, 0, plan.chunk, 64, 4, false, &first, &len);
    CHECK(first == 0);
    CHECK(len == std::min<int64_t>(1000, plan.chunk));
  }
  SECTION("every row sees each of its keys in exactly one chunk") {
    uint64_t seed = 0x5eed5;
    auto next = [&](int64_t n) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      return int64_t((seed >> 33) % uint64_t(n));
    };
    int64_t cases = 0, bad = 0;
    for (int t = 0; t < 600; ++t) {
      const int64_t page = (t % 4 == 0) ? 16 : (t % 4 == 1) ? 128 : (t % 4 == 2) ? 48 : 256;
      const int64_t unit = std::lcm<int64_t>(128, page);
      const int64_t chunk = unit * (1 + next(4));
      const int64_t nsplit = 2 + next(6);
      const int64_t seqlen_k = chunk * (nsplit - 1) + 1 + next(chunk);  // ceil(seqlen_k / chunk) = nsplit
      const int64_t q = 1 + next(t % 3 == 0 ? 128 : 20);
      // lengths: full, empty, shorter than the queries, one past a chunk boundary, random
      const int64_t lens[] = {seqlen_k, 0, q / 2, std::min(seqlen_k, chunk + 1), next(seqlen_k + 1)};
      const int64_t ppc = chunk / page + (q - 1 + page - 1) / page + 1;
      for (int64_t len_b : lens) {
        std::vector<int> seen(size_t(seqlen_k) * size_t(q), 0);
        for (int64_t c = 0; c < nsplit; ++c) {
          int64_t first = 0, n = 0;
          flashkit::cuda::attn::chunk_keys(len_b, c, chunk, page, q, true, &first, &n);
          bad += n < 0 || n > ppc * page || first * page + n > len_b;  // within the sequence
          for (int64_t i = 0; i < q; ++i) {
            const int64_t hi = n - q + i;  // the inner call's mask, aligned to the chunk's end
            for (int64_t k = std::max<int64_t>(0, hi - (chunk - 1)); k <= hi && k < n; ++k)
              ++seen[size_t(i) * size_t(seqlen_k) + size_t(first * page + k)];
          }
        }
        for (int64_t i = 0; i < q; ++i)
          for (int64_t key = 0; key < seqlen_k; ++key) {
            const int want = key <= len_b - q + i && key < len_b ? 1 : 0;
            bad += seen[size_t(i) * size_t(seqlen_k) + size_t(key)] != want;
          }
        ++cases;
      }
    }
    INFO(cases << " cases");
    CHECK(cases == 3000);
    CHECK(bad == 0);
  }
}

// The Hopper row counts packed GQA tiles over KV caches (heads_per_tile: its inner call's
// chunk-sequences pack several query heads a tile): 4 sequences x 32 heads of 4 causal queries
// are 128 tiles of one head (no split), but 32 tiles of 4 heads (split in 4, as measured in
// session 57: 0.63-0.87 of the unsplit time). Causal rows split only where the tiles fill at
// most a quarter of the wave and batch x seqlen_q x nheads <= kMaxCausalRows (the cells that
// were slower split).
TEST_CASE("split-KV plan: packed GQA tiles counted by heads_per_tile",
          "[cpu][attention][split][kvcache]") {
  Env env(nullptr);
  AttentionProblem p = causal_over_pages(decode(4, 4, 8192, 32));
  p.nheads_k = 8;
  SplitKvPlan plan;
  CHECK_FALSE(plan_split_kv(h200(), p, &plan, 1));
  REQUIRE(plan_split_kv(h200(), p, &plan, 1, 4));
  // 32 tiles x n over waves of 132: best 0.97 (n = 4, 8, 12, 16; n <= 16: 8192 / 512); the
  // fewest within 85% of it: n = 4, chunks of 2048 keys.
  CHECK(plan.nsplit == 4);
  CHECK(plan.chunk == 2048);
  CHECK(plan.causal);
  SplitKvPlan one;
  CHECK_FALSE(plan_split_kv(h200(), p, &one, 1, 1));
  p.batch = 1;  // 32 heads / 4 = 8 tiles: more chunks than with one head a tile
  SplitKvPlan packed, unpacked;
  REQUIRE(plan_split_kv(h200(), p, &packed, 1, 4));
  REQUIRE(plan_split_kv(h200(), p, &unpacked, 1, 1));
  CHECK(packed.nsplit > unpacked.nsplit);
  SECTION("causal rows: at most a quarter of the wave, at most kMaxCausalRows rows x heads") {
    p.batch = 8;  // 64 packed tiles (32 / 8 heads): half a wave, not split (measured slower)
    CHECK_FALSE(plan_split_kv(h200(), p, &plan, 1, 4));
    p.nheads_k = 4;  // 32 / 4 heads, 8 a tile: 32 tiles
    p.seqlen_q = 8;  // 8 x 8 x 32 = 2048 rows x heads: split
    p.total_q = p.batch * p.seqlen_q;
    REQUIRE(plan_split_kv(h200(), p, &plan, 1, 8));
    CHECK(plan.nsplit == 4);
    p.seqlen_q = 16;  // 4096: not split (measured 1.02-1.10x slower)
    p.total_q = p.batch * p.seqlen_q;
    CHECK_FALSE(plan_split_kv(h200(), p, &plan, 1, 8));
    p.causal = false;  // the unmasked call keeps FlashAttention-2's rule alone
    p.window_right = -1;
    CHECK(plan_split_kv(h200(), p, &plan, 1, 8));
    p.causal = true;
    p.window_right = 0;
    Env forced("3");  // a forced count ignores the rule
    REQUIRE(plan_split_kv(h200(), p, &plan, 1, 8));
    CHECK(plan.nsplit == 3);
  }
}

TEST_CASE("DeviceCaps: peak DRAM bandwidth from the driver's memory clock and bus width",
          "[cpu][attention][split]") {
  // Two transfers a clock of bus width / 8 bytes: H100 SXM (2619 MHz, 5120 bits) 3.352 TB/s.
  CHECK(flashkit::dram_bytes_per_s(2619000, 5120) == int64_t(3352320000000));
  CHECK(flashkit::dram_bytes_per_s(3200000, 6144) == int64_t(4915200000000));
  CHECK(flashkit::dram_bytes_per_s(0, 5120) == 0);
  CHECK(flashkit::dram_bytes_per_s(2619000, 0) == 0);
  CHECK(flashkit::dram_bytes_per_s(-1, 5120) == 0);
}

TEST_CASE("split-KV plan: tiles that already stream near the DRAM bandwidth stay unsplit",
          "[cpu][attention][split]") {
  Env env(nullptr);
  SplitKvPlan plan;
  // The Hopper row's rate: batched calls at head_dim 128 only (where it was measured).
  using flashkit::cuda::sm90_attention::split_tile_bytes_per_s;
  const int64_t gbps40 = 40000000000;
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8)) == gbps40);
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8, 120)) == 0);
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8, 104)) == 0);
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8, 96)) == 0);
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8, 64)) == 0);
  CHECK(split_tile_bytes_per_s(h100(), decode(8, 4, 8192, 8, 192)) == 0);
  CHECK(split_tile_bytes_per_s(h100(), causal_over_pages(decode(8, 4, 8192, 8))) == 0);
  // 8 x 8k keys, 8 KV heads: 64 tiles x 40 GB/s = 2.56 TB/s, 76% of an H100's 3.35 TB/s
  // (>= 2/3: unsplit) and 52% of an H200's 4.9 TB/s (split in 2, as without the rule).
  const AttentionProblem p = decode(8, 4, 8192, 8);
  CHECK_FALSE(plan_split_kv(h100(), p, &plan, 1, 1, gbps40));
  REQUIRE(plan_split_kv(h200(), p, &plan, 1, 1, gbps40));
  CHECK(plan.nsplit == 2);
  // Without a rate, or where the driver reported no bandwidth, the rule stands aside.
  REQUIRE(plan_split_kv(h100(), p, &plan, 1, 1, 0));
  CHECK(plan.nsplit == 2);
  DeviceCaps unknown = h100();
  unknown.dram_bytes_per_s = 0;
  REQUIRE(plan_split_kv(unknown, p, &plan, 1, 1, gbps40));
  CHECK(plan.nsplit == 2);
  // The boundary on an H100: tiles x 40 GB/s x 3 >= 3.352 TB/s x 2 from 56 tiles (55.9).
  CHECK(plan_split_kv(h100(), decode(55, 4, 8192, 1), &plan, 1, 1, gbps40));
  CHECK_FALSE(plan_split_kv(h100(), decode(56, 4, 8192, 1), &plan, 1, 1, gbps40));
  // On the H200: 4.9152e12 x 2 / 3 / 40e9 = 81.9, unsplit from 82 tiles.
  CHECK(plan_split_kv(h200(), decode(81, 4, 8192, 1), &plan, 1, 1, gbps40));
  CHECK_FALSE(plan_split_kv(h200(), decode(82, 4, 8192, 1), &plan, 1, 1, gbps40));
  // The tiles it counts are packed ones: 8 sequences x 32 heads at 8 heads a tile are 32 tiles
  // (split), at 4 heads a tile 64 (unsplit).
  CHECK(plan_split_kv(h100(), decode(8, 4, 8192, 32), &plan, 1, 8, gbps40));
  CHECK_FALSE(plan_split_kv(h100(), decode(8, 4, 8192, 32), &plan, 1, 4, gbps40));
  // Fewer tiles split as before: 4 x 8k (32 tiles) in 4 chunks (128 tiles of 132), 1 x 32k in 14.
  REQUIRE(plan_split_kv(h100(), decode(4, 4, 8192, 8), &plan, 1, 1, gbps40));
  CHECK(plan.nsplit == 4);
  REQUIRE(plan_split_kv(h100(), decode(1, 4, 32768, 8), &plan, 1, 1, gbps40));
  CHECK(plan.nsplit == 14);
  // Forced chunk counts ignore it.
  Env forced("2");
  REQUIRE(plan_split_kv(h100(), p, &plan, 1, 1, gbps40));
  CHECK(plan.nsplit == 2);
}

TEST_CASE("split-KV plan: the Hopper row's split fits one wave (one_wave)",
          "[cpu][attention][split]") {
  Env env(nullptr);
  SplitKvPlan plan;
  // 132 SMs, one CTA each. Without one_wave, FlashAttention-2's rule takes the fewest chunks
  // within 85% of the best efficiency over any number of waves: 68 tiles in 5 chunks (340
  // tiles, 2.6 waves), 48 in 5 (240, 1.8 waves).
  REQUIRE(plan_split_kv(h200(), decode(68, 4, 8192, 1), &plan, 1, 1, 0, false));
  CHECK(plan.nsplit == 5);
  REQUIRE(plan_split_kv(h200(), decode(48, 4, 8192, 1), &plan, 1, 1, 0, false));
  CHECK(plan.nsplit == 5);
  // With it: FA2's pick where it fits one wave, else the most chunks that do.
  REQUIRE(plan_split_kv(h200(), decode(48, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 2);  // 96 tiles; 3 chunks would be 144
  REQUIRE(plan_split_kv(h200(), decode(40, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 3);  // 120 tiles
  REQUIRE(plan_split_kv(h200(), decode(66, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 2);  // 132 tiles: exactly one wave
  // From 67 tiles two chunks no longer fit: unsplit (the wave rule alone splits up to 105).
  CHECK_FALSE(plan_split_kv(h200(), decode(67, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK_FALSE(plan_split_kv(h200(), decode(96, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK(plan_split_kv(h200(), decode(96, 4, 8192, 1), &plan, 1, 1, 0, false));
  // Where FA2's pick already fits one wave the choice is unchanged: 32 tiles in 4 chunks,
  // 8 tiles over 32k keys in 14, 20 tiles in 6, 17 in 7 (its best efficiency is still taken
  // over every count: over the one-wave counts alone its 85% threshold would fall and take 6),
  // 9 tiles over 32k keys in 13.
  struct Unchanged {
    int64_t batch, seqlen_k, nheads, nsplit;
  };
  for (const Unchanged u : {Unchanged{17, 8192, 1, 7}, Unchanged{9, 32768, 1, 13},
                            Unchanged{4, 8192, 8, 4}, Unchanged{1, 32768, 8, 14},
                            Unchanged{20, 8192, 1, 6}}) {
    for (const bool ow : {false, true}) {
      REQUIRE(plan_split_kv(h200(), decode(u.batch, 4, u.seqlen_k, u.nheads), &plan, 1, 1, 0, ow));
      CHECK(plan.nsplit == u.nsplit);
    }
  }
  // Few keys bound it as before: 48 tiles over 1024 keys (two chunks of 512 at most).
  REQUIRE(plan_split_kv(h200(), decode(48, 4, 1024, 1), &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 2);
  // KV caches count the same wave (the Hopper row's one block per SM): 68 sequences of one
  // KV head over pages of 128 keys stay unsplit, 48 split in 2.
  CHECK_FALSE(plan_split_kv(h200(), causal_over_pages(decode(68, 1, 8192, 1)), &plan, 1, 1, 0, true));
  AttentionProblem c = causal_over_pages(decode(48, 1, 8192, 1));
  c.causal = false;
  c.window_right = -1;
  REQUIRE(plan_split_kv(h200(), c, &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 2);
  CHECK(plan.kvcache);
  // The bandwidth rule still applies first: 64 tiles at 40 GB/s on an H100 stay unsplit.
  CHECK_FALSE(plan_split_kv(h100(), decode(64, 4, 8192, 1), &plan, 1, 1, 40000000000, true));
  // Forced chunk counts ignore it.
  Env forced("4");
  REQUIRE(plan_split_kv(h200(), decode(96, 4, 8192, 1), &plan, 1, 1, 0, true));
  CHECK(plan.nsplit == 4);
}
