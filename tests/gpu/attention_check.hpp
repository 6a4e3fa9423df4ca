// Shared by the attention GPU tests (test_attention_sm80.cpp, test_attention_sm90.cpp): a
// context with a forced kernel family, the float64 reference and the naive-in-dtype reference
// of FlashAttention's tolerance rule, and run_case(), which runs one problem through the C ABI
// with poisoned outputs and checks output, LSE, padding and the variant select_kernel names.
// The rule and the grid are described at the top of test_attention_sm80.cpp.
#pragma once

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reference/reference.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace fkattn {

// True when AUTO contexts try the Hopper row (cuda.sm90.attention) first: a compute capability
// 9.0 device, a library built with the sm90 kernels, and FLASHKIT_KERNEL_FAMILY unset (or sm90).
inline bool auto_takes_sm90() {
#if defined(FLASHKIT_TEST_EXPECT_SM90_ATTENTION)
  if (const char* f = std::getenv("FLASHKIT_KERNEL_FAMILY"); f && *f) return std::string(f) == "sm90";
  const fk_context_t* c = fkgpu::context_for(FK_KERNEL_FAMILY_AUTO);
  fk_context_info_t info;
  fk_context_info_init(&info);
  return c != nullptr && fk_context_get_info(c, &info) == FK_SUCCESS && info.cc_major == 9 &&
         info.cc_minor == 0;
#else
  return false;
#endif
}

using fktest::DT;
using fktest::HostTensor;
using fkgpu::DeviceTensor;
using fkgpu::padded;
using fkgpu::padding_written;
using fkgpu::rng_for;

using fkgpu::context_for;

// ---------------------------------------------------------------------------------------------
// Reference: exact (float64) and naive-in-dtype attention, rows (total, heads, d) compact.
// ---------------------------------------------------------------------------------------------
struct Problem {
  int64_t nheads = 1, nheads_k = 1, d = 64;
  DT dt = DT::BF16;
  bool causal = false;
  int64_t wl = -1, wr = -1;
  double softcap = 0;
  double scale = std::numeric_limits<double>::quiet_NaN();
  std::vector<int64_t> lq, lk;  // per sequence
};

struct Reference {
  std::vector<double> out, naive, lse;  // out/naive (total_q, h, d); lse (h, total_q)
};

inline Reference reference(const Problem& pr, const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v) {
  const int64_t H = pr.nheads, Hk = pr.nheads_k, D = pr.d, group = H / Hk;
  std::vector<int64_t> rq{0}, rk{0};
  for (size_t b = 0; b < pr.lq.size(); ++b) {
    rq.push_back(rq.back() + pr.lq[b]);
    rk.push_back(rk.back() + pr.lk[b]);
  }
  const int64_t total_q = rq.back();
  Reference r;
  r.out.assign(size_t(total_q * H * D), 0.0);
  r.naive.assign(r.out.size(), 0.0);
  r.lse.assign(size_t(H * total_q), 0.0);
  const double scale = std::isnan(pr.scale) ? 1.0 / std::sqrt(double(D)) : pr.scale;
  const int64_t wr = pr.causal ? 0 : pr.wr;
  auto R = [&](double x) { return fkref::round_to(pr.dt, x); };
  struct Task { int64_t b, h, i0, i1; };
  std::vector<Task> tasks;
  for (size_t b = 0; b < pr.lq.size(); ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i0 = 0; i0 < pr.lq[b]; i0 += 64)
        tasks.push_back({int64_t(b), h, i0, std::min(pr.lq[b], i0 + 64)});
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    std::vector<double> s, sn, ks;
    std::vector<char> keep;
    for (size_t t; (t = next.fetch_add(1)) < tasks.size();) {
      const Task& tk = tasks[t];
      const int64_t lq = pr.lq[size_t(tk.b)], lk = pr.lk[size_t(tk.b)];
      const int64_t hk = tk.h / group;
      auto qrow = [&](int64_t i) { return &q[size_t(((rq[size_t(tk.b)] + i) * H + tk.h) * D)]; };
      auto krow = [&](int64_t j) { return &k[size_t(((rk[size_t(tk.b)] + j) * Hk + hk) * D)]; };
      auto vrow = [&](int64_t j) { return &v[size_t(((rk[size_t(tk.b)] + j) * Hk + hk) * D)]; };
      // Naive: K * scale rounded once per tile of rows (FlashAttention's reorder_ops).
      ks.assign(size_t(std::max<int64_t>(lk, 1) * D), 0.0);
      for (int64_t j = 0; j < lk; ++j)
        for (int64_t x = 0; x < D; ++x) ks[size_t(j * D + x)] = R(krow(j)[x] * scale);
      s.assign(size_t(std::max<int64_t>(lk, 1)), 0.0);
      sn.assign(s.size(), 0.0);
      keep.assign(s.size(), 0);
      for (int64_t i = tk.i0; i < tk.i1; ++i) {
        const int64_t pos = i + lk - lq;
        const double* qi = qrow(i);
        double mx = -INFINITY, mxn = -INFINITY;
        bool any = false;
        for (int64_t j = 0; j < lk; ++j) {
          const double* kj = krow(j);
          double dot = 0, dotn = 0;
          for (int64_t x = 0; x < D; ++x) {
            dot += qi[x] * kj[x];
            dotn += qi[x] * ks[size_t(j * D + x)];
          }
          double sc = scale * dot, scn = R(dotn);
          if (pr.softcap > 0) {
            sc = pr.softcap * std::tanh(sc / pr.softcap);
            scn = R(R(std::tanh(R(scn / pr.softcap))) * pr.softcap);
          }
          bool ok = true;
          if (pr.wl >= 0 && j < pos - pr.wl) ok = false;
          if (wr >= 0 && j > pos + wr) ok = false;
          keep[size_t(j)] = ok;
          s[size_t(j)] = sc;
          sn[size_t(j)] = scn;
          if (ok) {
            any = true;
            mx = std::max(mx, sc);
            mxn = std::max(mxn, scn);
          }
        }
        double* o = &r.out[size_t(((rq[size_t(tk.b)] + i) * H + tk.h) * D)];
        double* on = &r.naive[size_t(((rq[size_t(tk.b)] + i) * H + tk.h) * D)];
        double& lse = r.lse[size_t(tk.h * total_q + rq[size_t(tk.b)] + i)];
        if (!any) {
          lse = -INFINITY;  // o, on stay 0
          continue;
        }
        double sum = 0, sumn = 0;
        for (int64_t j = 0; j < lk; ++j) {
          s[size_t(j)] = keep[size_t(j)] ? std::exp(s[size_t(j)] - mx) : 0.0;
          // torch's softmax of a low-precision tensor: fp32 inside, result rounded.
          sn[size_t(j)] = keep[size_t(j)] ? double(std::exp(float(sn[size_t(j)] - mxn))) : 0.0;
          sum += s[size_t(j)];
          sumn += sn[size_t(j)];
        }
        for (int64_t j = 0; j < lk; ++j) sn[size_t(j)] = R(sn[size_t(j)] / sumn);
        for (int64_t x = 0; x < D; ++x) {
          double acc = 0, accn = 0;
          for (int64_t j = 0; j < lk; ++j) {
            if (!keep[size_t(j)]) continue;
            acc += s[size_t(j)] * vrow(j)[x];
            accn += sn[size_t(j)] * vrow(j)[x];
          }
          o[x] = acc / sum;
          on[x] = R(accn);
        }
        lse = mx + std::log(sum);
      }
    }
  };
  const unsigned n = std::max(1u, std::min(32u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < n; ++t) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  return r;
}

// ---------------------------------------------------------------------------------------------
// One run: batched when `varlen` is false (then every lq/lk entry is the same).
// ---------------------------------------------------------------------------------------------
struct Case {
  Problem pr;
  bool varlen = false;
  int64_t pad = 0;  // extra elements after every row of every non-last dimension (multiple of 8
                    // keeps the sm80 kernel eligible)
  int64_t row_pitch = 0;  // nonzero: head-dim rows `row_pitch` elements apart (heads and rows
                          // packed at that pitch), for head dims that are not multiples of 8
  bool with_lse = true;
  bool run = true;  // false: only check the variant select_kernel names
  const char* expect_variant = "cuda.sm80.attention";
  // Batched k and v as the first seqlen_k rows of a (batch, kv_rows, nheads_k, d) cache
  // (kv_rows > seqlen_k; 0: their own compact or padded strides).
  int64_t kv_rows = 0;
  // With kv_rows: the cache rows past seqlen_k (never part of the views) hold NaN, as unwritten
  // cache memory may; a kernel that multiplies them by P = 0 makes the output NaN.
  bool nan_gaps = false;
  // fk_attention_workspace_size(): -1 unchecked, 0 must be 0 (no split-KV), 1 must be > 0.
  int expect_workspace = -1;
  // Varlen: these sequences' v rows are NaN. Their own rows are not checked; every other row must
  // stay finite and correct (a kernel whose last key tile multiplies the next sequence's v by
  // P = 0 gets NaN there).
  std::vector<int64_t> nan_v;
  // Varlen: max_seqlen_q and max_seqlen_k given (> 0; at least the longest sequence), so the
  // call reads nothing back; 0: not given.
  int64_t max_seqlen = 0;
};

// Strides for `shape` (..., heads, d) with every d-row `pitch` elements apart.
inline std::vector<int64_t> pitched(const std::vector<int64_t>& shape, int64_t pitch) {
  std::vector<int64_t> st(shape.size(), 1);
  st[shape.size() - 2] = pitch;
  for (int i = int(shape.size()) - 3; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1);
  return st;
}

inline std::string describe(const Case& c) {
  std::ostringstream o;
  o << (c.varlen ? "varlen" : "batched") << " b" << c.pr.lq.size() << " lq";
  for (auto x : c.pr.lq) o << " " << x;
  o << " lk";
  for (auto x : c.pr.lk) o << " " << x;
  o << " h" << c.pr.nheads << "/" << c.pr.nheads_k << " d" << c.pr.d << " "
    << fktest::dt_name(c.pr.dt) << (c.pr.causal ? " causal" : "") << " window(" << c.pr.wl
    << "," << c.pr.wr << ") softcap " << c.pr.softcap << " scale " << c.pr.scale << " pad "
    << c.pad << " row_pitch " << c.row_pitch << (c.with_lse ? "" : " no-lse");
  if (c.kv_rows) o << " kv_rows " << c.kv_rows << (c.nan_gaps ? " (NaN gaps)" : "");
  return o.str();
}

// Checks one run's out (FlashAttention's rule: at most twice the error of the same math done
// naively in the input dtype, plus two rounding steps) and lse (or, without lse, that it kept the
// poison) against the float64 reference on the inputs q, k, v as they were for that run.
inline void check_result(const Case& c, const HostTensor& q, const HostTensor& k,
                         const HostTensor& v, const HostTensor& out, const HostTensor& lse) {
  const Problem& pr = c.pr;
  const int64_t B = int64_t(pr.lq.size());
  int64_t tq = 0;
  for (int64_t b = 0; b < B; ++b) tq += pr.lq[size_t(b)];
  // The reference works on (total, heads, d) rows; batched tensors are that already.
  Problem rp = pr;
  const Reference ref = reference(rp, q.to_vector(), k.to_vector(), v.to_vector());
  const std::vector<double> got = out.to_vector();
  double err = 0, err_naive = 0, noise = 0;
  int64_t unwritten = 0, worst = -1;
  // Case::nan_v: the rows of those sequences are not checked (a kernel multiplies its own
  // sequence's v rows by P = 0 where a mask hides them, as torch's math path does, so a row that
  // sees none of the NaN keys may still come out NaN); every other row must be finite and right.
  std::vector<bool> skip(size_t(tq), false);
  for (int64_t j : c.nan_v) {
    int64_t row0 = 0;
    for (int64_t b = 0; b < j; ++b) row0 += pr.lq[size_t(b)];
    for (int64_t r = row0; r < row0 + pr.lq[size_t(j)]; ++r) skip[size_t(r)] = true;
  }
  int64_t nan_ref = 0;  // reference elements that see a NaN (the poison took)
  int64_t skipped_unwritten = 0;  // skipped rows still holding the output poison's bytes
  const size_t row_elems = size_t(pr.nheads * pr.d);
  const int esize = fktest::dt_bytes(out.dtype);
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(ref.out[i])) ++nan_ref;
    if (!c.nan_v.empty() && skip[i / row_elems]) {
      // A computed NaN is never all-ones bytes (the poison: sign set, every payload bit set).
      const int64_t r = int64_t(i / row_elems), h = int64_t(i % row_elems) / pr.d,
                    d = int64_t(i % size_t(pr.d));
      const uint8_t* b = out.bytes.data() + out.offset({r, h, d}) * esize;
      if (std::all_of(b, b + esize, [](uint8_t x) { return x == 0xFF; })) ++skipped_unwritten;
      continue;
    }
    if (std::isnan(got[i])) {
      ++unwritten;
      continue;
    }
    const double e = std::fabs(got[i] - ref.out[i]);
    if (e > err) {
      err = e;
      worst = int64_t(i);
    }
    err_naive = std::max(err_naive, std::fabs(ref.naive[i] - ref.out[i]));
    const double r = fkref::round_to(pr.dt, ref.out[i]);
    noise = std::max(noise, std::fabs(fkref::round_to(pr.dt, fkref::round_to(pr.dt, r + 0.3) - 0.3) - r));
  }
  const double atol = 2 * noise;
  INFO("max err " << err << " at " << worst << " (got " << (worst >= 0 ? got[size_t(worst)] : 0)
                  << ", ref " << (worst >= 0 ? ref.out[size_t(worst)] : 0) << "), naive err "
                  << err_naive << ", atol " << atol << ", unwritten " << unwritten);
  INFO("reference elements that see a NaN v: " << nan_ref << ", unwritten in the rows not compared: "
                                                 << skipped_unwritten);
  CHECK(unwritten == 0);
  CHECK(skipped_unwritten == 0);
  CHECK((nan_ref > 0) == !c.nan_v.empty());
  CHECK(err <= 2 * err_naive + atol);
  CHECK(padding_written(out) == 0);

  if (c.with_lse) {
    // ref.lse is (h, total_q); the batched LSE tensor is (b, h, seqlen_q).
    const std::vector<double> gl = lse.to_vector();
    int64_t bad = 0, first_bad = -1;
    double lse_err = 0;
    for (int64_t b = 0, row0 = 0; b < B; row0 += pr.lq[size_t(b)], ++b)
      for (int64_t h = 0; h < pr.nheads; ++h)
        for (int64_t i = 0; i < pr.lq[size_t(b)]; ++i) {
          const size_t gi = c.varlen ? size_t(h * tq + row0 + i)
                                     : size_t((b * pr.nheads + h) * pr.lq[0] + i);
          const double want = ref.lse[size_t(h * tq + row0 + i)], have = gl[gi];
          bool ok;
          if (std::isinf(want)) {
            ok = have == want;
          } else {
            const double e = std::fabs(have - want);
            ok = e <= 2e-4 * (1 + std::fabs(want));  // NaN fails too
            if (ok) lse_err = std::max(lse_err, e);
          }
          if (!ok && bad++ == 0) first_bad = int64_t(gi);
        }
    INFO("lse: " << bad << " bad, first at " << first_bad << ", max err of the good " << lse_err);
    CHECK(bad == 0);
    CHECK(padding_written(lse) == 0);
  } else {
    CHECK(lse.all_poison());
  }
}

// Logical shapes of a case's q (and out), k (and v) and lse: varlen (total, heads, d) rows and
// lse (heads, total_q), or batched (batch, seqlen, heads, d) and lse (batch, heads, seqlen_q).
struct Shapes {
  std::vector<int64_t> q, k, lse;
};
inline Shapes shapes_of(const Case& c) {
  const Problem& pr = c.pr;
  const int64_t B = int64_t(pr.lq.size());
  int64_t tq = 0, tk = 0;
  for (int64_t b = 0; b < B; ++b) {
    tq += pr.lq[size_t(b)];
    tk += pr.lk[size_t(b)];
  }
  if (c.varlen) return {{tq, pr.nheads, pr.d}, {tk, pr.nheads_k, pr.d}, {pr.nheads, tq}};
  return {{B, pr.lq[0], pr.nheads, pr.d}, {B, pr.lk[0], pr.nheads_k, pr.d},
          {B, pr.nheads, pr.lq[0]}};
}

// A (batch + 1,) int32 tensor holding the prefix sums of `lens`.
inline void fill_cu_seqlens(const std::vector<int64_t>& lens, HostTensor& cu) {
  const int64_t B = int64_t(lens.size());
  cu.init(DT::I32, {B + 1});
  int64_t acc = 0;
  for (int64_t b = 0; b <= B; ++b) {
    cu.set({b}, double(acc));
    if (b < B) acc += lens[size_t(b)];
  }
}

// The C ABI's params for a problem (max_seqlen_q/k not given).
inline fk_attention_params_t params_of(const Problem& pr) {
  fk_attention_params_t params;
  fk_attention_params_init(&params);
  params.softmax_scale = float(pr.scale);
  params.causal = pr.causal;
  params.window_size_left = int32_t(pr.wl);
  params.window_size_right = int32_t(pr.wr);
  params.softcap = float(pr.softcap);
  return params;
}

inline void run_case(const fk_context_t* ctx, const Case& c, uint64_t tag) {
  INFO(describe(c) << ", seed " << fktest::test_seed());
  const Problem& pr = c.pr;
  auto rng = rng_for(tag);
  const Shapes sh = shapes_of(c);
  const std::vector<int64_t>&qs = sh.q, &ks = sh.k, &ls = sh.lse;
  auto strides = [&](const std::vector<int64_t>& s) {
    return c.row_pitch ? pitched(s, c.row_pitch) : padded(s, c.pad);
  };
  auto kv_strides = [&]() {
    if (c.kv_rows == 0 || c.varlen) return strides(ks);
    std::vector<int64_t> cache = ks;
    cache[1] = c.kv_rows;
    return HostTensor(pr.dt, cache).strides;
  };
  HostTensor q(pr.dt, qs, strides(qs)), k(pr.dt, ks, kv_strides()), v(pr.dt, ks, kv_strides()),
      out(pr.dt, qs, strides(qs)),
      lse(DT::F32, ls, padded(ls, c.pad ? 1 : 0));
  if (c.nan_gaps) {  // all-ones bytes: NaN in fp32, fp16 and bf16; the views overwrite theirs
    std::fill(k.bytes.begin(), k.bytes.end(), uint8_t(0xFF));
    std::fill(v.bytes.begin(), v.bytes.end(), uint8_t(0xFF));
  }
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  for (int64_t j : c.nan_v) {  // varlen: every v row of sequence j
    int64_t row0 = 0;
    for (int64_t b = 0; b < j; ++b) row0 += pr.lk[size_t(b)];
    for (int64_t r = row0; r < row0 + pr.lk[size_t(j)]; ++r)
      for (int64_t h = 0; h < pr.nheads_k; ++h)
        for (int64_t d = 0; d < pr.d; ++d) v.set({r, h, d}, std::nan(""));
  }
  HostTensor cq, ck;
  fill_cu_seqlens(pr.lq, cq);
  fill_cu_seqlens(pr.lk, ck);
  DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(cq), dck(ck);
  dout.poison();
  dlse.poison();
  fk_attention_params_t params = params_of(pr);
  params.max_seqlen_q = params.max_seqlen_k = c.max_seqlen;
  const DLTensor* cu_q = c.varlen ? &dcq : nullptr;
  const DLTensor* cu_k = c.varlen ? &dck : nullptr;
  const DLTensor* lse_arg = c.with_lse ? &dlse : nullptr;
  const char* variant = "?";
  REQUIRE_FK(fk_attention_select_kernel(ctx, &params, &dq, &dk, &dv, cu_q, cu_k, &dout,
                                             lse_arg, &variant));
  INFO("variant " << variant);
  CHECK(std::string(variant) == c.expect_variant);
  if (c.expect_workspace >= 0) {
    uint64_t ws = 0;
    REQUIRE_FK(fk_attention_workspace_size(ctx, &params, &dq, &dk, &dv, cu_q, cu_k, &dout,
                                           lse_arg, &ws));
    INFO("workspace_size " << ws);
    CHECK((ws > 0) == (c.expect_workspace > 0));
  }
  if (!c.run) return;
  REQUIRE_FK(
      fk_attention_forward(ctx, nullptr, &params, &dq, &dk, &dv, cu_q, cu_k, &dout, lse_arg));
  dout.download();
  dlse.download();

  check_result(c, q, k, v, out, lse);
}

inline Case batched(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t hk, int64_t d, DT dt) {
  Case c;
  c.pr.lq.assign(size_t(b), sq);
  c.pr.lk.assign(size_t(b), sk);
  c.pr.nheads = h;
  c.pr.nheads_k = hk;
  c.pr.d = d;
  c.pr.dt = dt;
  return c;
}

// Masking combinations (causal x window x softcap) rotated over the grid.
inline void apply_mask(Case& c, int which) {
  switch (which % 8) {
    case 0: break;
    case 1: c.pr.causal = true; break;
    case 2: c.pr.wl = 37; c.pr.wr = 5; break;
    case 3: c.pr.softcap = 5.0; c.pr.scale = 0.5; break;
    case 4: c.pr.causal = true; c.pr.softcap = 30.0; break;
    case 5: c.pr.wl = 100; c.pr.wr = -1; c.pr.softcap = 15.0; break;
    case 6: c.pr.causal = true; c.pr.wl = 64; break;
    case 7: c.pr.wl = -1; c.pr.wr = 0; c.pr.scale = -0.2; break;
  }
}


}  // namespace fkattn
