// KV-cache test inputs for fk_attention_kvcache_forward (tests/cpu and tests/gpu
// test_attention_kvcache.cpp): builds q, a contiguous or paged k/v cache, cache_seqlens and
// block_table from a description, and gathers each sequence's valid keys back into dense rows for
// the float64 reference. Written from the header's definition of the paged layout only (key n of
// sequence b is row n % page_block_size of page block_table[b][n / page_block_size]), so the
// reference shares no paging code with src/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference.hpp"
#include "test_util.hpp"

namespace fkkv {

using fktest::DT;
using fktest::HostTensor;

struct Layout {
  int64_t batch = 3, seqlen_q = 1, nheads = 4, nheads_k = 2, head_dim = 32;
  DT dt = DT::F32;
  bool paged = true;
  int64_t page = 16;        // page_block_size (paged)
  int64_t max_blocks = 4;   // max_blocks_per_seq (paged); capacity = max_blocks * page
  int64_t seqlen_cache = 0; // capacity of a contiguous cache
  std::vector<int32_t> seqlens;  // cache_seqlens (size batch) unless null_seqlens
  bool null_seqlens = false;     // cache_seqlens NULL: every sequence holds capacity keys
  bool shuffle = true;           // pages in a random physical order
  bool share = false;            // every sequence's first page is sequence 0's (prefix caching)
  int64_t spare_pages = 2;       // pool pages no sequence uses (random, never read)
  int64_t pool_pad = 0;          // extra elements per row of every non-last dim of the k cache
  int64_t v_pool_pad = -1;       // the same for the v cache (-1: pool_pad)
  int64_t table_pad = 0;         // block_table row stride = max_blocks + table_pad
  int64_t io_pad = 0;            // extra elements per row of q, out and lse
  bool garbage = true;           // unused block_table entries hold -7, 1e9, num_blocks, -1
  bool nan_tail = false;         // cache rows no sequence holds are NaN (unwritten memory)
};

inline int64_t capacity(const Layout& L) { return L.paged ? L.max_blocks * L.page : L.seqlen_cache; }

inline std::vector<int64_t> pad_strides(const std::vector<int64_t>& shape, int64_t pad) {
  std::vector<int64_t> st(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1) + pad;
  return st;
}

struct Tensors {
  HostTensor q, k, v, out, lse, seqlens, table;
  std::vector<int64_t> lens;  // valid keys per sequence (capacity where cache_seqlens is NULL)
  int64_t num_blocks = 0;
  const DLTensor* seqlens_arg() const { return seqlens.shape.empty() ? nullptr : seqlens.view(); }
  const DLTensor* table_arg() const { return table.shape.empty() ? nullptr : table.view(); }
};

// Random q and cache (normal), outputs poisoned, page table built as described.
inline Tensors build(const Layout& L, std::mt19937_64& rng) {
  Tensors t;
  const int64_t B = L.batch, cap = capacity(L);
  t.lens.assign(size_t(B), cap);
  if (!L.null_seqlens)
    for (int64_t b = 0; b < B; ++b) t.lens[size_t(b)] = L.seqlens.at(size_t(b));
  t.q.init(L.dt, {B, L.seqlen_q, L.nheads, L.head_dim},
           pad_strides({B, L.seqlen_q, L.nheads, L.head_dim}, L.io_pad));
  t.out.init(L.dt, t.q.shape, t.q.strides);
  t.lse.init(DT::F32, {B, L.nheads, L.seqlen_q}, pad_strides({B, L.nheads, L.seqlen_q}, L.io_pad));
  std::vector<int64_t> cshape;
  if (L.paged) {
    // Pages sequence b reads: ceil(lens[b] / page), every entry when cache_seqlens is NULL.
    std::vector<int64_t> need(static_cast<size_t>(B), 0);
    int64_t distinct = 0;
    for (int64_t b = 0; b < B; ++b) {
      need[size_t(b)] = L.null_seqlens ? L.max_blocks : (t.lens[size_t(b)] + L.page - 1) / L.page;
      distinct += need[size_t(b)];
      if (L.share && b > 0 && need[size_t(b)] > 0 && need[0] > 0) --distinct;
    }
    t.num_blocks = distinct + L.spare_pages;
    std::vector<int32_t> phys(size_t(t.num_blocks));
    for (int64_t i = 0; i < t.num_blocks; ++i) phys[size_t(i)] = int32_t(i);
    if (L.shuffle) std::shuffle(phys.begin(), phys.end(), rng);
    t.table.init(DT::I32, {B, L.max_blocks}, {L.max_blocks + L.table_pad, 1});
    std::fill(t.table.bytes.begin(), t.table.bytes.end(), uint8_t(0x5A));  // padding: junk too
    const int32_t junk[] = {-7, 1000000000, int32_t(t.num_blocks), -1};
    size_t next = 0;
    int64_t shared_page = -1;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < L.max_blocks; ++j) {
        int32_t e;
        if (j < need[size_t(b)]) {
          if (L.share && j == 0 && b > 0 && shared_page >= 0) {
            e = int32_t(shared_page);
          } else {
            e = phys[next++];
          }
          if (b == 0 && j == 0) shared_page = e;
        } else {
          e = L.garbage ? junk[size_t(b + j) % 4] : 0;
        }
        t.table.set({b, j}, e);
      }
    cshape = {t.num_blocks, L.page, L.nheads_k, L.head_dim};
  } else {
    cshape = {B, L.seqlen_cache, L.nheads_k, L.head_dim};
  }
  t.k.init(L.dt, cshape, pad_strides(cshape, L.pool_pad));
  t.v.init(L.dt, cshape, pad_strides(cshape, L.v_pool_pad >= 0 ? L.v_pool_pad : L.pool_pad));
  if (!L.null_seqlens) {
    t.seqlens = fktest::int32_tensor(L.seqlens);
  }
  t.q.fill_normal(rng);
  t.k.fill_normal(rng);
  t.v.fill_normal(rng);
  if (L.nan_tail) {
    // Rows that no sequence's first lens[b] keys reach (a page's tail, unused pages and
    // capacity) become NaN: a kernel may read them but must not let them reach the output.
    const int64_t blocks = cshape[0], rows = cshape[1];
    std::vector<uint8_t> held(size_t(blocks * rows), 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < t.lens[size_t(b)]; ++n) {
        const int64_t blk = L.paged ? int64_t(t.table.get({b, n / L.page})) : b;
        const int64_t row = L.paged ? n % L.page : n;
        held[size_t(blk * rows + row)] = 1;
      }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t blk = 0; blk < blocks; ++blk)
      for (int64_t row = 0; row < rows; ++row)
        if (!held[size_t(blk * rows + row)])
          for (int64_t h = 0; h < L.nheads_k; ++h)
            for (int64_t x = 0; x < L.head_dim; ++x) {
              t.k.set({blk, row, h, x}, nan);
              t.v.set({blk, row, h, x}, nan);
            }
  }
  t.out.poison();
  t.lse.poison();
  return t;
}

// Sequence b's first lens[b] keys (or values) of `cache`, dense (len, nheads_k, head_dim), as
// doubles; through block_table when the cache is paged.
inline std::vector<double> gather(const Layout& L, const Tensors& t, const HostTensor& cache,
                                  int64_t b) {
  const int64_t len = t.lens[size_t(b)], Hk = L.nheads_k, D = L.head_dim;
  std::vector<double> r(size_t(len * Hk * D));
  for (int64_t n = 0; n < len; ++n) {
    int64_t blk = b, row = n;
    if (L.paged) {
      blk = int64_t(t.table.get({b, n / L.page}));
      row = n % L.page;
    }
    for (int64_t h = 0; h < Hk; ++h)
      for (int64_t x = 0; x < D; ++x) r[size_t((n * Hk + h) * D + x)] = cache.get({blk, row, h, x});
  }
  return r;
}

// Every sequence's valid keys (or values) one after another, (sum lens, nheads_k, head_dim), in
// the cache's dtype (the values are copied exactly).
inline HostTensor gather_packed(const Layout& L, const Tensors& t, const HostTensor& cache) {
  int64_t total = 0;
  for (auto l : t.lens) total += l;
  HostTensor r(L.dt, {total, L.nheads_k, L.head_dim});
  int64_t row0 = 0;
  for (int64_t b = 0; b < L.batch; ++b) {
    const std::vector<double> g = gather(L, t, cache, b);
    const int64_t len = t.lens[size_t(b)];
    for (int64_t n = 0; n < len; ++n)
      for (int64_t h = 0; h < L.nheads_k; ++h)
        for (int64_t x = 0; x < L.head_dim; ++x)
          r.set({row0 + n, h, x}, g[size_t((n * L.nheads_k + h) * L.head_dim + x)]);
    row0 += len;
  }
  return r;
}

// Float64 reference, one sequence at a time with seqlen_k = lens[b]: out (batch, seqlen_q,
// nheads, head_dim) and lse (batch, nheads, seqlen_q), compact.
inline void reference(const Layout& L, const Tensors& t, const fkref::AttentionParams& p,
                      std::vector<double>& out, std::vector<double>& lse) {
  const int64_t B = L.batch, sq = L.seqlen_q, H = L.nheads, D = L.head_dim;
  out.assign(size_t(B * sq * H * D), 0.0);
  lse.assign(size_t(B * H * sq), 0.0);
  const std::vector<double> q = t.q.to_vector();
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<double> qb(q.begin() + b * sq * H * D, q.begin() + (b + 1) * sq * H * D);
    std::vector<double> ob, lb;
    fkref::attention(qb, gather(L, t, t.k, b), gather(L, t, t.v, b), 1, sq, t.lens[size_t(b)], H,
                     L.nheads_k, D, p, ob, lb);
    std::copy(ob.begin(), ob.end(), out.begin() + b * sq * H * D);
    std::copy(lb.begin(), lb.end(), lse.begin() + b * H * sq);
  }
}

}  // namespace fkkv
