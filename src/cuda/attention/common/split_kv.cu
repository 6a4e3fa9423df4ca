// Split-KV decode: planning, the inner varlen problem, and the prepare and combine kernels
// (split_kv.h says what and why).
#include "cuda/attention/common/split_kv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace attn {
namespace {

using split_plan::ceil_div;
constexpr int64_t kElemBytes = 2;  // fp16/bf16 (split_kv_plan.h takes no other dtype)

// Scratch sizes, in the order they are carved.
struct ScratchSizes {
  uint64_t q, out, lse, cu;
};
ScratchSizes scratch_sizes(const AttentionProblem& p, const SplitKvPlan& plan) {
  const int64_t rows = plan.nsplit * p.batch * p.seqlen_q;  // query rows of the chunks
  const uint64_t qo = uint64_t(rows * p.nheads * p.head_dim * kElemBytes);
  // KV cache: each chunk-sequence's length and page row; else cu_seqlens_q / _k.
  const uint64_t ints = plan.kvcache
                            ? uint64_t(plan.nsplit * p.batch * (1 + plan.pages_per_chunk))
                            : uint64_t(2 * (plan.segments + 1));
  return {qo, qo, uint64_t(rows * p.nheads) * sizeof(float), ints * sizeof(int32_t)};
}

// 16-bit elements moved as 16-byte vectors of 8 where head_dim, the pointers and every stride
// allow it (vec_ok): the prepare and combine kernels ran one 2-byte element per thread, with
// five 64-bit divisions each, and took 16-30 us of a 40-100 us split call (H100, Nsight
// Compute, benchmarks/ab/s57_csplit_prof.sh: 1 x 32k keys, 16 causal queries, 32 / 4 heads:
// prepare 23.7 us for 4 MB of query copies, combine 16.8 us).
constexpr int64_t kVec = 8;
struct alignas(16) Vec8 {
  uint32_t w[4];
};
bool vec_ok(const void* base, int64_t head_dim, std::initializer_list<int64_t> strides) {
  if (head_dim % kVec != 0 || reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  for (int64_t s : strides)
    if (s % kVec != 0) return false;
  return true;
}

// Copies each sequence's queries to its chunks' rows (grid-stride over the source from t0):
// destination element (b, c, i, h, x) of the compact (batch, nsplit, seqlen_q, nheads,
// head_dim) scratch from q's (b, i, h, x), V elements (8: one Vec8; 1: one element) a thread,
// read once and written to all nsplit chunks. Both prepare kernels run it.
template <int V>
__device__ void copy_chunk_queries(int64_t batch, int64_t nsplit, int64_t seqlen_q, int64_t nheads,
                                   int64_t head_dim, const void* __restrict__ q, int64_t q_bs,
                                   int64_t q_rs, int64_t q_hs, void* __restrict__ q_split,
                                   int64_t t0, int64_t stride) {
  using T = std::conditional_t<V == 8, Vec8, uint16_t>;
  const int64_t vecs = head_dim / V;
  const int64_t n = batch * seqlen_q * nheads * vecs;
  const int64_t c_stride = seqlen_q * nheads * vecs;  // between chunk copies, in T
  for (int64_t e = t0; e < n; e += stride) {
    int64_t r = e;
    const int64_t xv = r % vecs;
    r /= vecs;
    const int64_t h = r % nheads;
    r /= nheads;
    const int64_t i = r % seqlen_q;
    const int64_t b = r / seqlen_q;
    const T v = *reinterpret_cast<const T*>(static_cast<const uint16_t*>(q) + b * q_bs + i * q_rs +
                                            h * q_hs + xv * V);
    T* dst = static_cast<T*>(q_split) + ((b * nsplit * seqlen_q + i) * nheads + h) * vecs + xv;
    for (int64_t c = 0; c < nsplit; ++c) dst[c * c_stride] = v;
  }
}

// KV cache: the batched paged problem the row runs. Chunk c of sequence b is sequence
// v = b * nsplit + c, with the queries of b (compact copy), seqused_k[v] = its keys in the
// chunk (0 past the sequence's end) and its own block_table row of pages_per_chunk pages
// (chunk_keys). Causal plans keep the causal mask, with window_left = chunk - 1.
AttentionProblem inner_problem_cache(const AttentionProblem& p, const SplitKvPlan& plan, void* q,
                                     void* out, float* lse, const int32_t* seqused,
                                     const int32_t* table) {
  AttentionProblem s = p;
  const int64_t vb = plan.nsplit * p.batch;
  s.q = q;
  s.out = out;
  s.lse = lse;
  s.batch = vb;
  s.seqlen_k = plan.pages_per_chunk * plan.page;  // capacity; seqused_k holds the lengths
  s.total_q = vb * p.seqlen_q;
  s.total_k = p.total_k;  // the caller's pool (problems.h); virtual pages below
  s.q_row_stride = s.o_row_stride = p.nheads * p.head_dim;
  s.q_head_stride = s.o_head_stride = p.head_dim;
  s.q_batch_stride = s.o_batch_stride = p.seqlen_q * p.nheads * p.head_dim;
  // lse (nheads, vb x seqlen_q), as the combine reads it.
  s.lse_batch_stride = p.seqlen_q;
  s.lse_head_stride = s.total_q;
  s.lse_row_stride = 1;
  s.seqused_k = seqused;
  s.block_table = table;
  s.block_table_stride = plan.pages_per_chunk;
  s.page_size = plan.page;
  if (p.block_table == nullptr) {  // virtual pages of a contiguous cache
    s.k_batch_stride = plan.page * p.k_row_stride;
    s.v_batch_stride = plan.page * p.v_row_stride;
    s.num_pages = (p.batch - 1) * plan.pages_per_seq + split_plan::ceil_div(p.seqlen_k, plan.page);
    s.total_k = (p.batch - 1) * plan.pages_per_seq * plan.page + p.seqlen_k;  // partial last page
  }
  s.causal = plan.causal;
  s.window_left = plan.causal ? plan.chunk - 1 : -1;
  s.window_right = plan.causal ? 0 : -1;
  return s;
}

// KV cache: the chunk-sequences' lengths and page rows, and the query copies (as
// split_kv_prepare). Entry j of v's row is page first + j of sequence b (chunk_keys): the
// caller's table entry (copied unclamped: the kernels clamp) or the virtual page id; entries
// past the caller's row (the last chunk may reach beyond the capacity) repeat page 0 of b and
// are never read (the chunk's length stops before them).
template <int V>
__global__ void split_kv_prepare_cache(int64_t batch, int64_t nsplit, int64_t chunk, int64_t page,
                                       int64_t cpp, bool causal,
                                       int64_t seqlen_k, const int32_t* __restrict__ seqused_k,
                                       const int32_t* __restrict__ block_table, int64_t bt_stride,
                                       int64_t pages_per_seq, int64_t seqlen_q, int64_t nheads,
                                       int64_t head_dim, const void* __restrict__ q, int64_t q_bs,
                                       int64_t q_rs, int64_t q_hs, void* __restrict__ q_split,
                                       int32_t* __restrict__ seqused, int32_t* __restrict__ table) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t t0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t vb = batch * nsplit, cap_pages = (seqlen_k + page - 1) / page;
  auto keys = [&](int64_t v, int64_t* first, int64_t* n) {
    const int64_t b = v / nsplit;
    const int64_t len =
        seqused_k ? min(max(int64_t(seqused_k[b]), int64_t(0)), seqlen_k) : seqlen_k;
    chunk_keys(len, v % nsplit, chunk, page, seqlen_q, causal, first, n);
  };
  for (int64_t v = t0; v < vb; v += stride) {
    int64_t first, n;
    keys(v, &first, &n);
    seqused[v] = int32_t(n);
  }
  for (int64_t e = t0; e < vb * cpp; e += stride) {
    const int64_t v = e / cpp, j = e % cpp;
    int64_t first, n;
    keys(v, &first, &n);
    const int64_t b = v / nsplit, src = first + j;
    const int64_t at = src < cap_pages ? src : 0;
    table[e] = block_table ? block_table[b * bt_stride + at] : int32_t(b * pages_per_seq + at);
  }
  copy_chunk_queries<V>(batch, nsplit, seqlen_q, nheads, head_dim, q, q_bs, q_rs, q_hs, q_split,
                        t0, stride);
}

// The varlen problem the row runs: chunk c of sequence b is sequence b * nsplit + c (plus one
// query-less sequence per gap), its queries a copy of sequence b's, compact (rows, heads, d).
AttentionProblem inner_problem(const AttentionProblem& p, const SplitKvPlan& plan, void* q,
                               void* out, float* lse, const int32_t* cu_q, const int32_t* cu_k) {
  AttentionProblem s = p;
  s.varlen = true;
  s.q = q;
  s.out = out;
  s.lse = lse;
  s.cu_seqlens_q = cu_q;
  s.cu_seqlens_k = cu_k;
  s.batch = plan.segments;
  s.seqlen_q = p.seqlen_q;
  // The longest key sequence: a chunk, or a gap (which has no queries, so no kernel reads its
  // keys; at most a kernel's tile-width choice reads the value, which changes speed only).
  s.seqlen_k = std::max(plan.chunk, plan.gaps ? plan.rows - p.seqlen_k : int64_t(0));
  s.total_q = plan.nsplit * p.batch * p.seqlen_q;
  s.total_k = (p.batch - 1) * plan.rows + p.seqlen_k;
  s.q_batch_stride = s.o_batch_stride = s.k_batch_stride = s.v_batch_stride = 0;
  s.q_row_stride = s.o_row_stride = p.nheads * p.head_dim;
  s.q_head_stride = s.o_head_stride = p.head_dim;
  s.lse_batch_stride = 0;
  s.lse_head_stride = s.total_q;
  s.lse_row_stride = 1;
  s.causal = false;
  s.window_left = s.window_right = -1;
  return s;
}

struct Geometry {
  int64_t batch, seqlen_q, seqlen_k, nheads, head_dim;
  int64_t nsplit, chunk, rows, segments;
  bool gaps;
  int64_t total_k;
};

// Entry s of cu_seqlens_q / cu_seqlens_k (s = segments: the totals).
__device__ void segment_start(const Geometry& g, int64_t s, int32_t* q0, int32_t* k0) {
  if (s >= g.segments) {
    *q0 = int32_t(g.nsplit * g.batch * g.seqlen_q);
    *k0 = int32_t(g.total_k);
    return;
  }
  const int64_t per = g.nsplit + (g.gaps ? 1 : 0);
  const int64_t b = s / per, c = s % per;
  if (c < g.nsplit) {
    *q0 = int32_t((b * g.nsplit + c) * g.seqlen_q);
    *k0 = int32_t(b * g.rows + c * g.chunk);
  } else {  // the gap after sequence b's keys: no queries
    *q0 = int32_t((b + 1) * g.nsplit * g.seqlen_q);
    *k0 = int32_t(b * g.rows + g.seqlen_k);
  }
}

// Writes cu_seqlens_q / _k and copies each sequence's queries to its chunks' rows.
template <int V>
__global__ void split_kv_prepare(Geometry g, const void* __restrict__ q, int64_t q_bs, int64_t q_rs,
                                 int64_t q_hs, void* __restrict__ q_split,
                                 int32_t* __restrict__ cu_q, int32_t* __restrict__ cu_k) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t t0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t s = t0; s <= g.segments; s += stride) segment_start(g, s, &cu_q[s], &cu_k[s]);
  copy_chunk_queries<V>(g.batch, g.nsplit, g.seqlen_q, g.nheads, g.head_dim, q, q_bs, q_rs, q_hs,
                        q_split, t0, stride);
}

// One thread per V consecutive output elements (b, i, h, x .. x + V - 1) (V = 8 where vec_ok
// holds for the chunks' outputs, else 1): the chunks' LSE of its row give the weights,
// exp(lse_c - max) / sum, and the output is the weighted sum of the chunks' elements, in fp32,
// rounded once to the output dtype; the row's first thread also writes its lse = max +
// log(sum). Loads are independent (no shuffles), 8 chunks' vectors in flight at once: the rows
// of a decode call are few (batch x query heads) and a warp-per-row version spent ~13 us on
// latency. vec_out: `out` takes 16-byte stores (vec_ok on its pointer and strides).
template <typename T, int V>
__global__ void __launch_bounds__(256)
    split_kv_combine(Geometry g, const void* __restrict__ out_split,
                     const float* __restrict__ lse_split, void* out, int64_t o_bs, int64_t o_rs,
                     int64_t o_hs, bool vec_out, float* lse, int64_t l_bs, int64_t l_hs,
                     int64_t l_rs) {
  static_assert(sizeof(T) == 2, "fp16 / bf16 only");
  const int64_t total_q = g.nsplit * g.batch * g.seqlen_q;
  const int64_t vecs = g.head_dim / V;
  const int64_t n_items = g.batch * g.seqlen_q * g.nheads * vecs;
  const int n = int(g.nsplit);
  const int64_t c_stride = g.seqlen_q * g.nheads * g.head_dim;  // between chunk rows, elements
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n_items;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t x = (e % vecs) * V;
    const int64_t w = e / vecs;
    const int64_t h = w % g.nheads;
    const int64_t i = (w / g.nheads) % g.seqlen_q;
    const int64_t b = w / (g.nheads * g.seqlen_q);
    const int64_t row0 = b * g.nsplit * g.seqlen_q + i;  // chunk c's row: row0 + c * seqlen_q
    const float* l = lse_split + h * total_q + row0;
    float ls[kMaxSplits];
    float m = -INFINITY;
#pragma unroll
    for (int c = 0; c < kMaxSplits; ++c) {
      ls[c] = c < n ? l[c * g.seqlen_q] : -INFINITY;
      // NaN-propagating max: a chunk with NaN scores has lse NaN, and the row must come out
      // NaN (fmaxf would drop it, and chunks that saw no key would then give 0 and -inf).
      m = (ls[c] > m || ls[c] != ls[c]) ? ls[c] : m;
    }
    const T* src = static_cast<const T*>(out_split) + (row0 * g.nheads + h) * g.head_dim + x;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.0f;
    float sum = 0.0f;
    if (m != -INFINITY) {  // else no chunk saw a key (causal rows past a short sequence's
                           // keys): zeros and lse -inf, as the unsplit kernels
      // Groups of 8 chunks, each group's loads issued together; unrolled whole so that ls[]
      // stays in registers.
#pragma unroll
      for (int c0 = 0; c0 < kMaxSplits; c0 += 8) {
        if (c0 >= n) break;
        alignas(16) T v[8][V];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int c = c0 + k;
          if (c < n) {
            if constexpr (V == 8) {
              *reinterpret_cast<Vec8*>(v[k]) = *reinterpret_cast<const Vec8*>(src + c * c_stride);
            } else {
              v[k][0] = src[c * c_stride];
            }
          }
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const int c = c0 + k;
          if (c < n) {
            const float wc = expf(ls[c] - m);
            sum += wc;
#pragma unroll
            for (int j = 0; j < V; ++j) acc[j] += wc * to_float(v[k][j]);
          }
        }
      }
#pragma unroll
      for (int j = 0; j < V; ++j) acc[j] /= sum;
    }
    alignas(16) T r[V];
#pragma unroll
    for (int j = 0; j < V; ++j) r[j] = from_float<T>(acc[j]);  // round to nearest even
    T* dst = static_cast<T*>(out) + b * o_bs + i * o_rs + h * o_hs + x;
    bool stored = false;
    if constexpr (V == 8) {
      if (vec_out) {  // one 16-byte store (a Vec8 or uint4 copy compiled to 4-byte ones)
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; ++j)
          w[j] = uint32_t(reinterpret_cast<const uint16_t&>(r[2 * j])) |
                 (uint32_t(reinterpret_cast<const uint16_t&>(r[2 * j + 1])) << 16);
        __stwb(reinterpret_cast<uint4*>(dst), make_uint4(w[0], w[1], w[2], w[3]));
        stored = true;
      }
    }
    if (!stored) {
#pragma unroll
      for (int j = 0; j < V; ++j) dst[j] = r[j];
    }
    if (lse != nullptr && x == 0)
      lse[b * l_bs + h * l_hs + i * l_rs] = m == -INFINITY ? -INFINITY : m + logf(sum);
  }
}

int grid_for(int64_t work, int64_t per_block) {
  return int(std::max<int64_t>(1, std::min<int64_t>(ceil_div(work, per_block), 8192)));
}

}  // namespace

bool split_kv_applies(const DeviceCaps& caps, const AttentionProblem& p,
                      bool (*supports)(const DeviceCaps&, const AttentionProblem&),
                      SplitKvPlan* plan, int64_t cache_blocks_per_sm, int64_t heads_per_tile,
                      int64_t tile_bytes_per_s, bool one_wave) {
  if (!plan_split_kv(caps, p, plan, cache_blocks_per_sm, heads_per_tile, tile_bytes_per_s,
                     one_wave))
    return false;
  if (supports == nullptr) return true;
  // The predicate sees the scratch as 256-byte aligned stand-ins (what the arena returns).
  void* const stand_in = reinterpret_cast<void*>(uintptr_t(kScratchAlign));
  const int32_t* const ints = static_cast<const int32_t*>(stand_in);
  const AttentionProblem s =
      plan->kvcache
          ? inner_problem_cache(p, *plan, stand_in, stand_in, static_cast<float*>(stand_in),
                                ints, ints)
          : inner_problem(p, *plan, stand_in, stand_in, static_cast<float*>(stand_in), ints,
                          ints);
  return supports(caps, s);
}

uint64_t split_kv_workspace(const AttentionProblem& p, const SplitKvPlan& plan) {
  const ScratchSizes z = scratch_sizes(p, plan);
  return workspace_for({z.q, z.out, z.lse, z.cu});
}

fk_status_t split_kv_run(const ExecContext& ctx, const AttentionProblem& p,
                         const SplitKvPlan& plan, AttentionFn inner) {
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  const ScratchSizes z = scratch_sizes(p, plan);
  ScratchArena arena(ctx);
  void *q = nullptr, *out = nullptr, *lse = nullptr, *cu = nullptr;
  FK_RETURN_IF_ERROR(arena.alloc(z.q, &q, "attention split-KV queries"));
  FK_RETURN_IF_ERROR(arena.alloc(z.out, &out, "attention split-KV outputs"));
  FK_RETURN_IF_ERROR(arena.alloc(z.lse, &lse, "attention split-KV lse"));
  FK_RETURN_IF_ERROR(arena.alloc(z.cu, &cu, "attention split-KV cu_seqlens"));
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  // The inner call carves nothing from the caller's workspace (the rows take no scratch).
  ExecContext inner_ctx = ctx;
  inner_ctx.workspace = nullptr;
  inner_ctx.workspace_bytes = 0;
  Geometry g{p.batch, p.seqlen_q, p.seqlen_k, p.nheads, p.head_dim, plan.nsplit,
             plan.chunk, plan.rows, plan.segments, plan.gaps,
             plan.kvcache ? 0 : (p.batch - 1) * plan.rows + p.seqlen_k};
  // Query copies: one thread per 8-element vector (or element) of q, written to every chunk.
  const bool vec_q = vec_ok(p.q, p.head_dim, {p.q_batch_stride, p.q_row_stride, p.q_head_stride});
  const int64_t copy = p.batch * p.seqlen_q * p.nheads * (vec_q ? p.head_dim / kVec : p.head_dim);
  if (plan.kvcache) {
    int32_t* seqused = static_cast<int32_t*>(cu);
    int32_t* table = seqused + plan.nsplit * p.batch;
    const int64_t ints = plan.nsplit * p.batch * (1 + plan.pages_per_chunk);
    auto prepare = vec_q ? split_kv_prepare_cache<8> : split_kv_prepare_cache<1>;
    prepare<<<grid_for(std::max(copy, ints), 256), 256, 0, stream>>>(
        p.batch, plan.nsplit, plan.chunk, plan.page, plan.pages_per_chunk, plan.causal,
        p.seqlen_k, p.seqused_k, p.block_table,
        p.block_table_stride, plan.pages_per_seq, p.seqlen_q, p.nheads, p.head_dim, p.q,
        p.q_batch_stride, p.q_row_stride, p.q_head_stride, q, seqused, table);
    FK_RETURN_IF_ERROR(check_launch("attention split-KV prepare"));
    FK_RETURN_IF_ERROR(inner(inner_ctx, inner_problem_cache(p, plan, q, out,
                                                            static_cast<float*>(lse), seqused,
                                                            table)));
  } else {
    int32_t* cu_q = static_cast<int32_t*>(cu);
    int32_t* cu_k = cu_q + (plan.segments + 1);
    auto prepare = vec_q ? split_kv_prepare<8> : split_kv_prepare<1>;
    prepare<<<grid_for(std::max(copy, plan.segments + 1), 256), 256, 0, stream>>>(
        g, p.q, p.q_batch_stride, p.q_row_stride, p.q_head_stride, q, cu_q, cu_k);
    FK_RETURN_IF_ERROR(check_launch("attention split-KV prepare"));
    FK_RETURN_IF_ERROR(inner(inner_ctx, inner_problem(p, plan, q, out, static_cast<float*>(lse),
                                                      cu_q, cu_k)));
  }

  // The chunks' outputs are compact (scratch, 256-byte aligned): 8-element vectors wherever
  // head_dim allows; 16-byte stores where `out` allows too.
  const bool vec = p.head_dim % kVec == 0;
  const bool vec_out =
      vec && vec_ok(p.out, p.head_dim, {p.o_batch_stride, p.o_row_stride, p.o_head_stride});
  const int64_t items = p.batch * p.seqlen_q * p.nheads * (vec ? p.head_dim / kVec : p.head_dim);
  const bool bf16 = p.dtype == DType::BF16;
  auto combine = bf16 ? (vec ? split_kv_combine<__nv_bfloat16, 8> : split_kv_combine<__nv_bfloat16, 1>)
                      : (vec ? split_kv_combine<__half, 8> : split_kv_combine<__half, 1>);
  combine<<<grid_for(items, 256), 256, 0, stream>>>(
      g, out, static_cast<const float*>(lse), p.out, p.o_batch_stride, p.o_row_stride,
      p.o_head_stride, vec_out, p.lse, p.lse_batch_stride, p.lse_head_stride, p.lse_row_stride);
  return check_launch("attention split-KV combine");
}

}  // namespace attn
}  // namespace cuda
}  // namespace flashkit
