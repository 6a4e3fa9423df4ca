// The sm80-class attention kernel (src/cuda/attention/sm80/), forced through a context with
// kernel_family = SM80, against a float64 reference under FlashAttention's tolerance rule
// (tests/test_flash_attn.py in FlashAttention-2 and hopper/test_flash_attn.py in -3):
//
//   max |out - ref| <= 2 * max |naive - ref| + atol
//
// where `ref` is the exact result on the (quantised) inputs in float64 and `naive` is the same
// math done the plain way in the input dtype (FlashAttention's `attention_ref(upcast=False,
// reorder_ops=True)`: scale applied to K and rounded, scores rounded, softcap steps rounded,
// softmax probabilities rounded, output rounded), and atol = 2 max |(ref + 0.3 - 0.3) - ref| in
// the dtype, the rounding noise at magnitude 0.3 (FlashAttention-3's fwd_atol).
//
// Grid: head dims {32, 64, 72, 96, 128, 160, 192, 256} x (seqlen_q, seqlen_k) in {(1, 1),
// (113, 203), (128, 217), (239, 1), (1023, 1024), (1024, 1023)} x {fp16, bf16}, each case with
// a masking combination (causal x window x softcap) and a head layout (MHA, GQA, MQA) rotated so
// that every head dim meets each; plus (4224, 4224), varlen with empty sequences, strided
// (padded) tensors, and the variant select_kernel names. Outputs are poisoned (0xFF: NaN)
// before each run; padding between logical elements must stay poisoned.
//
// The reference runs on all host cores (one task per 64 query rows of one head).
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdint>
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

namespace {

using fktest::DT;
using fktest::HostTensor;
using fkgpu::DeviceTensor;
using fkgpu::padded;
using fkgpu::padding_written;
using fkgpu::rng_for;

// A CUDA context with the given family forced; nullptr when the device cannot run it (then the
// cases are skipped with a warning, e.g. on a pre-Ampere GPU).
const fk_context_t* context_for(fk_kernel_family_t family) {
  struct Holder {
    fk_context_t* ctx = nullptr;
    bool tried = false;
    ~Holder() { fk_context_destroy(ctx); }
  };
  static Holder holders[5];
  Holder& h = holders[int(family)];
  if (!h.tried) {
    h.tried = true;
    fk_context_options_t o;
    fk_context_options_init(&o);
    o.backend = FK_BACKEND_CUDA;
    o.kernel_family = family;
    if (fk_context_create(&o, &h.ctx) != FK_SUCCESS) h.ctx = nullptr;
  }
  return h.ctx;
}
const fk_context_t* sm80() { return context_for(FK_KERNEL_FAMILY_SM80); }

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

Reference reference(const Problem& pr, const std::vector<double>& q, const std::vector<double>& k,
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
};

// Strides for `shape` (..., heads, d) with every d-row `pitch` elements apart.
std::vector<int64_t> pitched(const std::vector<int64_t>& shape, int64_t pitch) {
  std::vector<int64_t> st(shape.size(), 1);
  st[shape.size() - 2] = pitch;
  for (int i = int(shape.size()) - 3; i >= 0; --i)
    st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1);
  return st;
}

std::string describe(const Case& c) {
  std::ostringstream o;
  o << (c.varlen ? "varlen" : "batched") << " b" << c.pr.lq.size() << " lq";
  for (auto x : c.pr.lq) o << " " << x;
  o << " lk";
  for (auto x : c.pr.lk) o << " " << x;
  o << " h" << c.pr.nheads << "/" << c.pr.nheads_k << " d" << c.pr.d << " "
    << fktest::dt_name(c.pr.dt) << (c.pr.causal ? " causal" : "") << " window(" << c.pr.wl
    << "," << c.pr.wr << ") softcap " << c.pr.softcap << " scale " << c.pr.scale << " pad "
    << c.pad << " row_pitch " << c.row_pitch << (c.with_lse ? "" : " no-lse");
  return o.str();
}

void run_case(const fk_context_t* ctx, const Case& c, uint64_t tag) {
  INFO(describe(c) << ", seed " << fktest::test_seed());
  const Problem& pr = c.pr;
  auto rng = rng_for(tag);
  const int64_t B = int64_t(pr.lq.size());
  int64_t tq = 0, tk = 0;
  for (int64_t b = 0; b < B; ++b) {
    tq += pr.lq[size_t(b)];
    tk += pr.lk[size_t(b)];
  }
  std::vector<int64_t> qs, ks, ls;
  if (c.varlen) {
    qs = {tq, pr.nheads, pr.d};
    ks = {tk, pr.nheads_k, pr.d};
    ls = {pr.nheads, tq};
  } else {
    qs = {B, pr.lq[0], pr.nheads, pr.d};
    ks = {B, pr.lk[0], pr.nheads_k, pr.d};
    ls = {B, pr.nheads, pr.lq[0]};
  }
  auto strides = [&](const std::vector<int64_t>& s) {
    return c.row_pitch ? pitched(s, c.row_pitch) : padded(s, c.pad);
  };
  HostTensor q(pr.dt, qs, strides(qs)), k(pr.dt, ks, strides(ks)), v(pr.dt, ks, strides(ks)),
      out(pr.dt, qs, strides(qs)),
      lse(DT::F32, ls, padded(ls, c.pad ? 1 : 0));
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  HostTensor cq(DT::I32, {B + 1}), ck(DT::I32, {B + 1});
  {
    int64_t aq = 0, ak = 0;
    for (int64_t b = 0; b <= B; ++b) {
      cq.set({b}, double(aq));
      ck.set({b}, double(ak));
      if (b < B) {
        aq += pr.lq[size_t(b)];
        ak += pr.lk[size_t(b)];
      }
    }
  }

  DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(cq), dck(ck);
  dout.poison();
  dlse.poison();
  fk_attention_params_t params;
  fk_attention_params_init(&params);
  params.softmax_scale = float(pr.scale);
  params.causal = pr.causal;
  params.window_size_left = int32_t(pr.wl);
  params.window_size_right = int32_t(pr.wr);
  params.softcap = float(pr.softcap);
  const DLTensor* cu_q = c.varlen ? &dcq : nullptr;
  const DLTensor* cu_k = c.varlen ? &dck : nullptr;
  const DLTensor* lse_arg = c.with_lse ? &dlse : nullptr;
  const char* variant = "?";
  REQUIRE_FK(fk_attention_select_kernel(ctx, &params, &dq, &dk, &dv, cu_q, cu_k, &dout,
                                             lse_arg, &variant));
  INFO("variant " << variant);
  CHECK(std::string(variant) == c.expect_variant);
  if (!c.run) return;
  REQUIRE_FK(
      fk_attention_forward(ctx, nullptr, &params, &dq, &dk, &dv, cu_q, cu_k, &dout, lse_arg));
  dout.download();
  dlse.download();

  // The reference works on (total, heads, d) rows; batched tensors are that already.
  Problem rp = pr;
  const Reference ref = reference(rp, q.to_vector(), k.to_vector(), v.to_vector());
  const std::vector<double> got = out.to_vector();
  double err = 0, err_naive = 0, noise = 0;
  int64_t unwritten = 0, worst = -1;
  for (size_t i = 0; i < got.size(); ++i) {
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
  CHECK(unwritten == 0);
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

bool have_sm80() {
  if (sm80() == nullptr) {
    WARN("no CUDA device of compute capability >= 8.0: sm80 attention cases skipped");
    return false;
  }
  return true;
}

Case batched(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t hk, int64_t d, DT dt) {
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
void apply_mask(Case& c, int which) {
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

}  // namespace

TEST_CASE("sm80 attention: head dims x seqlens x masks (FlashAttention tolerance)",
          "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  const int64_t head_dims[] = {32, 64, 72, 96, 128, 160, 192, 256};
  const int64_t seqlens[][2] = {{1, 1}, {113, 203}, {128, 217}, {239, 1}, {1023, 1024}, {1024, 1023}};
  const int64_t heads[][2] = {{2, 2}, {4, 2}, {3, 1}};  // MHA, GQA, MQA
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens)
      for (DT dt : {DT::F16, DT::BF16}) {
        const bool big = sl[0] * sl[1] > 1000000;
        const auto& hh = heads[i % 3];
        Case c = batched(big ? 1 : 2, sl[0], sl[1], hh[0], hh[1], d, dt);
        apply_mask(c, i / 2 + i % 2);  // fp16 and bf16 of one shape get different masks
        c.pad = (i % 4 == 3) ? 8 : 0;
        run_case(sm80(), c, 1000 + uint64_t(i));
        ++i;
      }
}

TEST_CASE("sm80 attention: long sequence (4224, 4224)", "[gpu][attention][sm80]") {
  if (!have_sm80()) return;
  Case c = batched(1, 4224, 4224, 2, 1, 128, DT::BF16);
  c.pr.causal = true;
  run_case(sm80(), c, 2000);
  Case d = batched(1, 4224, 4224, 1, 1, 64, DT::F16);
  run_case(sm80(), d, 2001);
}

TEST_CASE("sm80 attention: varlen with empty sequences", "[gpu][attention][sm80][varlen]") {
  if (!have_sm80()) return;
  struct V {
    std::vector<int64_t> lq, lk;
    int64_t h, hk, d;
    DT dt;
    int mask;
  };
  const V vs[] = {
      {{5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 64, DT::BF16, 0},
      {{5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 128, DT::F16, 1},
      {{200, 17, 33}, {150, 300, 33}, 3, 1, 96, DT::F16, 2},
      {{0, 0}, {5, 0}, 2, 2, 32, DT::BF16, 1},
      {{300, 129, 1}, {257, 128, 500}, 6, 3, 256, DT::BF16, 4},
      {{77, 0, 250}, {0, 10, 250}, 2, 1, 200, DT::F16, 6},
  };
  int i = 0;
  for (const V& x : vs) {
    Case c;
    c.varlen = true;
    c.pr.lq = x.lq;
    c.pr.lk = x.lk;
    c.pr.nheads = x.h;
    c.pr.nheads_k = x.hk;
    c.pr.d = x.d;
    c.pr.dt = x.dt;
    apply_mask(c, x.mask);
    c.pad = (i % 2) ? 8 : 0;
    run_case(sm80(), c, 3000 + uint64_t(i++));
  }
}

TEST_CASE("sm80 attention: fully masked rows and empty keys", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Causal with seqlen_q > seqlen_k: the first rows see no key (out 0, lse -inf).
  Case c = batched(2, 40, 9, 2, 2, 64, DT::F16);
  c.pr.causal = true;
  run_case(sm80(), c, 4000);
  // Window (2, 0) with seqlen_q > seqlen_k.
  c.pr.causal = false;
  c.pr.wl = 2;
  c.pr.wr = 0;
  c.pr.dt = DT::BF16;
  run_case(sm80(), c, 4001);
  // seqlen_k = 0.
  Case e = batched(2, 17, 0, 2, 1, 128, DT::BF16);
  run_case(sm80(), e, 4002);
}

TEST_CASE("sm80 attention: small cases", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  Case c = batched(2, 19, 45, 4, 2, 40, DT::F16);
  c.pr.causal = true;
  c.pr.softcap = 10.0;
  c.pad = 8;
  run_case(sm80(), c, 5000);
  Case d = batched(1, 70, 133, 2, 1, 256, DT::BF16);
  d.pr.wl = 4;
  d.pr.wr = 7;
  d.with_lse = false;
  run_case(sm80(), d, 5001);
  Case v;
  v.varlen = true;
  v.pr.lq = {3, 0, 17, 130};
  v.pr.lk = {0, 4, 20, 65};
  v.pr.nheads = 2;
  v.pr.nheads_k = 1;
  v.pr.d = 96;
  v.pr.dt = DT::BF16;
  v.pr.causal = true;
  run_case(sm80(), v, 5002);
}

TEST_CASE("sm80 attention: head dims that are not multiples of 8", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Rows 8-aligned through the pitch; the kernel zero-fills the columns past head_dim and writes
  // the last partial 16-byte chunk element by element (the gap up to the pitch stays poisoned).
  const int64_t dims[][2] = {{36, 40}, {100, 104}, {250, 256}, {3, 8}};
  int i = 0;
  for (const auto& dp : dims) {
    Case c = batched(2, 50 + 37 * i, 77, 2, 1, dp[0], i % 2 ? DT::BF16 : DT::F16);
    c.row_pitch = dp[1];
    apply_mask(c, i + 1);
    run_case(sm80(), c, 5500 + uint64_t(i++));
  }
}

TEST_CASE("sm80 attention: select_kernel names the variant", "[gpu][attention][sm80][sanitize]") {
  if (!have_sm80()) return;
  // Not eligible: fp32 inputs; strides that are not multiples of 8 elements (cp.async 16 B).
  Case f = batched(1, 33, 40, 2, 2, 64, DT::F32);
  f.expect_variant = "cuda.generic.attention";
  f.run = false;
  run_case(sm80(), f, 6000);
  Case s = batched(1, 33, 40, 2, 2, 64, DT::BF16);
  s.pad = 3;
  s.expect_variant = "cuda.generic.attention";
  run_case(sm80(), s, 6001);
  Case o = batched(1, 33, 40, 2, 2, 33, DT::F16);  // head stride 33
  o.expect_variant = "cuda.generic.attention";
  run_case(sm80(), o, 6002);

  // AUTO: the sm80 kernel serves every cc >= 8.0 device, including compute capability 9.0
  // until a Hopper attention kernel is listed before it.
  const fk_context_t* autoc = context_for(FK_KERNEL_FAMILY_AUTO);
  REQUIRE(autoc != nullptr);
  fk_context_info_t info;
  fk_context_info_init(&info);
  REQUIRE_FK(fk_context_get_info(autoc, &info));
  Case a = batched(1, 65, 65, 2, 2, 128, DT::BF16);
  // FLASHKIT_KERNEL_FAMILY (e.g. =generic, to test the fallback) overrides AUTO contexts.
  const char* forced = std::getenv("FLASHKIT_KERNEL_FAMILY");
  const bool family_forced = forced && *forced && std::string(forced) != "auto";
  if (info.cc_major == 9 && info.cc_minor == 0 && !family_forced) {
    fk_attention_params_t params;
    fk_attention_params_init(&params);
    HostTensor q(DT::BF16, {1, 65, 2, 128}), out(DT::BF16, {1, 65, 2, 128});
    DeviceTensor dq(q), dout(out);
    const char* variant = "?";
    REQUIRE_FK(fk_attention_select_kernel(autoc, &params, &dq, &dq, &dq, nullptr, nullptr,
                                               &dout, nullptr, &variant));
    const std::string name = variant;
    CHECK((name == "cuda.sm80.attention" || name == "cuda.sm90.attention"));
  } else {
    run_case(autoc, a, 6003);
  }
  // Generic forced: the sm80 row is skipped.
  const fk_context_t* gen = context_for(FK_KERNEL_FAMILY_GENERIC);
  REQUIRE(gen != nullptr);
  Case g = batched(1, 20, 20, 1, 1, 64, DT::F16);
  g.expect_variant = "cuda.generic.attention";
  run_case(gen, g, 6004);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
