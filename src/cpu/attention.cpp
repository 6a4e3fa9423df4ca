// CPU attention forward: FlashAttention's tiled online softmax (Dao et al. 2022, Algorithm 1;
// FlashAttention-2, Dao 2023, Section 3.1, with the rescaling deferred to the end) on fp32
// scratch tiles. The score matrix is never materialised beyond one (rows x kBlockK) tile.
//
// One work item is (sequence b, key/value head hk, block of kBlockQ query rows) and covers every
// query head of hk's GQA group, so each K/V tile is converted to fp32 once and reused by the
// whole group (the reason FlashAttention packs GQA heads together).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "cpu/common.h"
#include "cpu/parallel.h"

namespace flashkit {
namespace cpu {
namespace {

constexpr int64_t kBlockQ = 32;  // query rows per work item
constexpr int64_t kBlockK = 64;  // keys per tile

struct WorkItem {
  int64_t b;   // sequence
  int64_t hk;  // key/value head
  int64_t i0;  // first query row (within the sequence)
};

struct SeqInfo {
  int64_t lq, lk;      // lengths
  int64_t rq, rk;      // first packed row (varlen) or 0 (batched)
};

inline SeqInfo seq_info(const AttentionProblem& p, int64_t b) {
  if (p.varlen) {
    const int64_t rq = p.cu_seqlens_q[b], rk = p.cu_seqlens_k[b];
    return {p.cu_seqlens_q[b + 1] - rq, p.cu_seqlens_k[b + 1] - rk, rq, rk};
  }
  // KV cache: the valid keys of sequence b (entries checked by the API on host memory).
  return {p.seqlen_q, p.seqused_k ? int64_t(p.seqused_k[b]) : p.seqlen_k, 0, 0};
}

// Element offset of key/value row n (0-based within sequence b, whose rows start at row0) for
// one (batch_stride, row_stride) pair: through the page table when the cache is paged.
inline int64_t kv_row_offset(const AttentionProblem& p, int64_t b, int64_t row0, int64_t n,
                             int64_t batch_stride, int64_t row_stride) {
  if (p.block_table) {
    const int64_t page = p.block_table[b * p.block_table_stride + n / p.page_size];
    return page * batch_stride + (n % p.page_size) * row_stride;
  }
  return b * batch_stride + (row0 + n) * row_stride;
}

inline int64_t round_up8(int64_t x) { return (x + 7) / 8 * 8; }

struct Scratch {
  std::vector<float> q;    // (group, kBlockQ, d), pre-multiplied by softmax_scale if |scale| <= 1
  // (group, kBlockQ, dp) unnormalised output, dp = d rounded up to 8, and (group, kBlockQ) the
  // running denominator: float64 across key tiles (each tile's sums are fp32), so that neither
  // loses precision over long key ranges (one fp32 accumulator over every key lost 2.4e-3
  // relative at 2^22 keys) nor overflows where the output itself fits (|v| near FLT_MAX).
  std::vector<double> acc;
  std::vector<float> m;    // (group, kBlockQ) running row max
  std::vector<double> l;
  std::vector<float> kt;   // (d, kBlockK): K tile transposed, so q.K runs along keys
  std::vector<float> v;    // (kBlockK, dp), columns d..dp zero
  std::vector<float> s;    // (max(kBlockK, d)) scores of one row; also a K row while loading
  std::vector<float> pv;   // (dp) one row's P V over one key tile; the output row when storing
};

static_assert(kBlockK == 64, "row_scores keeps 64 scores in eight 8-lane registers");

// s[0..64) = q . K_tile (K tile transposed, keys beyond the tile's end are zero columns).
FK_CPU_INLINE void row_scores(const float* q, const float* kt, int64_t d, float* s) {
  v8f s0 = {}, s1 = {}, s2 = {}, s3 = {};
  v8f s4 = {}, s5 = {}, s6 = {}, s7 = {};
  for (int64_t x = 0; x < d; ++x) {
    const float qx = q[x];
    const float* kx = kt + x * kBlockK;
    v8f k0, k1, k2, k3, k4, k5, k6, k7;
    load8(k0, kx);
    load8(k1, kx + 8);
    load8(k2, kx + 16);
    load8(k3, kx + 24);
    load8(k4, kx + 32);
    load8(k5, kx + 40);
    load8(k6, kx + 48);
    load8(k7, kx + 56);
    s0 += qx * k0;
    s1 += qx * k1;
    s2 += qx * k2;
    s3 += qx * k3;
    s4 += qx * k4;
    s5 += qx * k5;
    s6 += qx * k6;
    s7 += qx * k7;
  }
  store8(s, s0);
  store8(s + 8, s1);
  store8(s + 16, s2);
  store8(s + 24, s3);
  store8(s + 32, s4);
  store8(s + 40, s5);
  store8(s + 48, s6);
  store8(s + 56, s7);
}

// acc[0..dp) += sum_{jj in [lo, hi)} p[jj] * V[jj, 0..dp), four 8-lane accumulators at a time
// so the FMA chains are independent. The caller passes a zeroed acc per key tile and adds it to
// the row's float64 running output (Scratch::acc).
FK_CPU_INLINE void accumulate_pv(const float* p, const float* v, int64_t dp, int64_t lo,
                                 int64_t hi, float* acc) {
  int64_t x = 0;
  for (; x + 32 <= dp; x += 32) {
    v8f a0, a1, a2, a3;
    load8(a0, acc + x);
    load8(a1, acc + x + 8);
    load8(a2, acc + x + 16);
    load8(a3, acc + x + 24);
    for (int64_t jj = lo; jj < hi; ++jj) {
      const float pj = p[jj];
      const float* vr = v + jj * dp + x;
      v8f v0, v1, v2, v3;
      load8(v0, vr);
      load8(v1, vr + 8);
      load8(v2, vr + 16);
      load8(v3, vr + 24);
      a0 += pj * v0;
      a1 += pj * v1;
      a2 += pj * v2;
      a3 += pj * v3;
    }
    store8(acc + x, a0);
    store8(acc + x + 8, a1);
    store8(acc + x + 16, a2);
    store8(acc + x + 24, a3);
  }
  for (; x < dp; x += 8) {
    v8f a0;
    load8(a0, acc + x);
    for (int64_t jj = lo; jj < hi; ++jj) {
      v8f v0;
      load8(v0, v + jj * dp + x);
      a0 += p[jj] * v0;
    }
    store8(acc + x, a0);
  }
}

FK_CPU_CLONES
void run_item(const AttentionProblem& p, const WorkItem& it, Scratch& w) {
  const int64_t d = p.head_dim, dp = round_up8(d);
  const int64_t group = p.nheads / p.nheads_k;
  const SeqInfo si = seq_info(p, it.b);
  const int64_t rows = std::min(kBlockQ, si.lq - it.i0);
  const int64_t off = si.lk - si.lq;  // bottom-right alignment: row i sits at key i + off
  const int64_t wl = p.window_left;
  const int64_t wr = p.causal ? 0 : p.window_right;
  const float cap = p.softcap;
  // 1 / cap overflows for a subnormal cap (< ~2.9e-39, accepted: finite and > 0); those caps
  // divide instead, so that a zero score stays 0 rather than 0 * inf = NaN.
  const float inv_cap = cap > 0 ? 1.0f / cap : 0.0f;
  const bool cap_divides = cap > 0 && !std::isfinite(inv_cap);
  const float neg_inf = -std::numeric_limits<float>::infinity();
  // The header leaves only scores that overflow fp32 unguarded, so the scale must not overflow
  // on its own: it is folded into q when |scale| <= 1 (scale * q cannot overflow), and applied
  // to q.k otherwise (|q.k| <= |score| then). (The CUDA kernels scale q.k after forming it in
  // any case; flashkit.h states their tighter limits.)
  const float scale = p.softmax_scale;
  const bool post_scale = !(std::fabs(scale) <= 1.0f);

  // Load the query tile of every head of the group.
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = it.hk * group + g;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t qoff = it.b * p.q_batch_stride + (si.rq + it.i0 + r) * p.q_row_stride +
                           h * p.q_head_stride;
      load_run(p.q, p.dtype, qoff, d, &w.q[size_t((g * kBlockQ + r) * d)],
               post_scale ? 1.0f : scale);
    }
  }
  std::fill(w.acc.begin(), w.acc.end(), 0.0);
  std::fill(w.m.begin(), w.m.end(), neg_inf);
  std::fill(w.l.begin(), w.l.end(), 0.0);

  // Keys any row of this tile may see; tiles outside are skipped entirely (the causal/window
  // block skipping of FlashAttention-2, Section 3.1.1).
  int64_t jlo = 0, jhi = si.lk;
  if (wl >= 0) jlo = std::max<int64_t>(jlo, it.i0 + off - wl);
  if (wr >= 0) jhi = std::min<int64_t>(jhi, it.i0 + rows - 1 + off + wr + 1);

  for (int64_t j0 = jlo; j0 < jhi; j0 += kBlockK) {
    const int64_t nk = std::min(kBlockK, jhi - j0);
    for (int64_t jj = 0; jj < nk; ++jj) {
      const int64_t krow =
          kv_row_offset(p, it.b, si.rk, j0 + jj, p.k_batch_stride, p.k_row_stride) +
          it.hk * p.k_head_stride;
      float* tmp = w.s.data();
      load_run(p.k, p.dtype, krow, d, tmp);
      for (int64_t x = 0; x < d; ++x) w.kt[size_t(x * kBlockK + jj)] = tmp[x];
      const int64_t vrow =
          kv_row_offset(p, it.b, si.rk, j0 + jj, p.v_batch_stride, p.v_row_stride) +
          it.hk * p.v_head_stride;
      load_run(p.v, p.dtype, vrow, d, &w.v[size_t(jj * dp)]);
    }
    if (nk < kBlockK) {  // a last partial tile: zero the unused key columns
      for (int64_t x = 0; x < d; ++x)
        std::fill(&w.kt[size_t(x * kBlockK + nk)], &w.kt[size_t(x * kBlockK + kBlockK)], 0.0f);
    }
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t pos = it.i0 + r + off;
        int64_t lo = 0, hi = nk;  // valid keys of this row within the tile, [lo, hi)
        if (wl >= 0) lo = std::max<int64_t>(lo, pos - wl - j0);
        if (wr >= 0) hi = std::min<int64_t>(hi, pos + wr - j0 + 1);
        if (lo >= hi) continue;
        float* s = w.s.data();
        row_scores(&w.q[size_t((g * kBlockQ + r) * d)], w.kt.data(), d, s);
        if (post_scale) {
          for (int64_t jj = lo; jj < hi; ++jj) s[jj] *= scale;
        }
        if (cap > 0) {
          if (cap_divides) {
            for (int64_t jj = lo; jj < hi; ++jj) s[jj] = cap * std::tanh(s[jj] / cap);
          } else {
            for (int64_t jj = lo; jj < hi; ++jj) s[jj] = cap * std::tanh(s[jj] * inv_cap);
          }
        }
        float mx = neg_inf;
        for (int64_t jj = lo; jj < hi; ++jj) mx = std::max(mx, s[jj]);
        const size_t ri = size_t(g * kBlockQ + r);
        const float m_new = std::max(w.m[ri], mx);
        // While every score seen so far is -inf (keys of -inf score filling whole tiles), m_new
        // is -inf and exp(-inf - -inf) would be NaN: subtract 0 instead, so those scores give
        // 0 and the row goes on (FlashAttention's guard).
        const float m_sub = m_new == neg_inf ? 0.0f : m_new;
        const float corr = std::exp(w.m[ri] - m_sub);  // 0 on the first visited tile
        float sum = 0.0f;
        for (int64_t jj = lo; jj < hi; ++jj) {
          s[jj] = std::exp(s[jj] - m_sub);
          sum += s[jj];
        }
        w.m[ri] = m_new;
        w.l[ri] = w.l[ri] * corr + sum;
        double* acc = &w.acc[ri * size_t(dp)];
        float* pv = w.pv.data();
        std::fill(pv, pv + dp, 0.0f);
        accumulate_pv(s, w.v.data(), dp, lo, hi, pv);
        if (corr != 1.0f) {
          for (int64_t x = 0; x < dp; ++x) acc[x] = acc[x] * corr + pv[x];
        } else {
          for (int64_t x = 0; x < dp; ++x) acc[x] += pv[x];
        }
      }
    }
  }

  // Normalise once at the end (FlashAttention-2's deferred rescaling) and write out. A row that
  // saw no key keeps l == 0: output 0 and lse -inf, as the header requires. A NaN score (NaN in
  // the inputs) makes l NaN: out and lse NaN (std::max above skips NaN, so m alone would not).
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = it.hk * group + g;
    for (int64_t r = 0; r < rows; ++r) {
      const size_t ri = size_t(g * kBlockQ + r);
      const double* acc = &w.acc[ri * size_t(dp)];
      const double l = w.l[ri];
      const double inv = l > 0 ? 1.0 / l : 0.0;
      float* row = w.pv.data();
      for (int64_t x = 0; x < d; ++x) row[x] = static_cast<float>(acc[x] * inv);
      const int64_t i = si.rq + it.i0 + r;
      const int64_t ooff = it.b * p.o_batch_stride + i * p.o_row_stride + h * p.o_head_stride;
      store_run(p.out, p.dtype, ooff, d, row);
      if (p.lse) {
        const float lse = l > 0 ? static_cast<float>(double(w.m[ri]) + std::log(l))
                                : (l == 0.0 ? neg_inf : static_cast<float>(l));
        p.lse[it.b * p.lse_batch_stride + h * p.lse_head_stride + i * p.lse_row_stride] = lse;
      }
    }
  }
}

}  // namespace

fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p) {
  return run_guarded("attention", [&]() -> fk_status_t {
    if (p.batch <= 0 || p.nheads <= 0 || p.nheads_k <= 0 || p.head_dim <= 0) return FK_SUCCESS;
    std::vector<WorkItem> items;
    for (int64_t b = 0; b < p.batch; ++b) {
      const SeqInfo si = seq_info(p, b);
      for (int64_t hk = 0; hk < p.nheads_k; ++hk)
        for (int64_t i0 = 0; i0 < si.lq; i0 += kBlockQ) items.push_back({b, hk, i0});
    }
    const int64_t n = int64_t(items.size());
    if (n == 0) return FK_SUCCESS;

    const int workers = parallel_workers(n, ctx.num_threads, 1);
    const int64_t group = p.nheads / p.nheads_k;
    const int64_t d = p.head_dim;
    std::vector<Scratch> scratch(static_cast<size_t>(workers));
    for (auto& w : scratch) {
      w.q.resize(size_t(group * kBlockQ * d));
      w.acc.resize(size_t(group * kBlockQ * round_up8(d)));
      w.m.resize(size_t(group * kBlockQ));
      w.l.resize(size_t(group * kBlockQ));
      w.kt.resize(size_t(d * kBlockK));
      w.v.resize(size_t(kBlockK * round_up8(d)));
      w.s.resize(size_t(std::max(kBlockK, d)));
      w.pv.resize(size_t(round_up8(d)));
    }
    parallel_for(n, ctx.num_threads, 1, [&](int64_t begin, int64_t end, int worker) {
      for (int64_t t = begin; t < end; ++t) run_item(p, items[size_t(t)], scratch[size_t(worker)]);
    });
    return FK_SUCCESS;
  });
}

}  // namespace cpu
}  // namespace flashkit
