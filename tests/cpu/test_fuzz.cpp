// Randomised property tests of the C ABI on the CPU backend, written the way a careless or
// hostile caller would use it:
// - valid problems drawn at random (empty and unit extents, GQA, every option, non-compact
//   strides in random dimension orders, byte offsets, varlen with empty sequences, broadcast
//   batches, every FFT-convolution mode, rectangular Monarch factors) against the float64
//   reference in tests/reference/reference.hpp;
// - invalid problems, one field broken at a time: a non-success status, a message that starts
//   with the argument's name, every output and input byte untouched, nothing printed;
// - numerical edge cases (NaN/Inf where the header says they are not read, huge scores under a
//   softcap, fully masked rows) and extents whose products overflow 64 bits.
// The iteration counts are fixed (the whole file runs in a few seconds); every iteration draws
// from fkcpu::rng_for(tag + iteration), so FLASHKIT_TEST_SEED reproduces a failure.
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <numeric>
#include <thread>

#include "cpu_test_helpers.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::absolute;
using fktest::HostTensor;

int64_t pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool coin(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
DT rand_dt(std::mt19937_64& rng) { return fkcpu::kFloatTypes[pick(rng, 0, 2)]; }

// An extent that is 0 or 1 now and then.
int64_t rand_len(std::mt19937_64& rng, int64_t hi) {
  const int64_t r = pick(rng, 0, 9);
  if (r == 0) return 0;
  if (r == 1) return 1;
  return pick(rng, 2, hi);
}

// Strides of `shape` with the dimensions laid out in a random order (the last one innermost
// when `keep_last`) and random padding after each: non-compact, yet no two elements share an
// address.
std::vector<int64_t> rand_strides(std::mt19937_64& rng, const std::vector<int64_t>& shape,
                                  bool keep_last) {
  const int r = int(shape.size());
  std::vector<int> order(static_cast<size_t>(r));
  std::iota(order.begin(), order.end(), 0);
  if (keep_last && r > 0) {
    std::shuffle(order.begin(), order.end() - 1, rng);
    std::rotate(order.rbegin(), order.rbegin() + 1, order.rend());  // last dim first
  } else {
    std::shuffle(order.begin(), order.end(), rng);
  }
  std::vector<int64_t> st(size_t(r), 1);
  int64_t s = 1;
  for (int d : order) {
    st[size_t(d)] = s;
    s = s * std::max<int64_t>(shape[size_t(d)], 1) + (coin(rng, 0.4) ? pick(rng, 1, 3) : 0);
  }
  return st;
}

// A tensor with random layout (compact 30% of the time) and a random element-aligned
// byte_offset (the data pointer moved back by as much).
// `bcast` (inputs only): now and then one dimension gets stride 0, every index along it
// reading the same elements (inputs may alias; outputs may not).
HostTensor make_t(std::mt19937_64& rng, DT t, std::vector<int64_t> shape, bool keep_last = true,
                  bool bcast = false) {
  std::vector<int64_t> st = coin(rng, 0.3) ? std::vector<int64_t>{} : rand_strides(rng, shape, keep_last);
  if (bcast && !shape.empty() && coin(rng, 0.2)) {
    if (st.empty()) st = rand_strides(rng, shape, keep_last);
    const int64_t last = int64_t(shape.size()) - (keep_last ? 2 : 1);
    if (last >= 0) st[size_t(pick(rng, 0, last))] = 0;
  }
  HostTensor h(t, shape, st);
  const uint64_t off = uint64_t(pick(rng, 0, 3) * fktest::dt_bytes(t));
  h.dl.data = h.bytes.data() - off;
  h.dl.byte_offset = off;
  return h;
}

// =============================================================================================
// Valid problems against the reference
// =============================================================================================

void fuzz_attention(std::mt19937_64& rng) {
  const DT dt = rand_dt(rng);
  const bool varlen = coin(rng, 0.3);
  const int64_t nheads_k = pick(rng, 1, 3), nheads = nheads_k * pick(rng, 1, 3);
  const int64_t hd = coin(rng, 0.25) ? std::vector<int64_t>{1, 2, 3, 7, 64, 128, 255, 256}[size_t(pick(rng, 0, 7))]
                                     : pick(rng, 1, 96);
  fkref::AttentionParams rp;
  fk_attention_params_t prm;
  fk_attention_params_init(&prm);
  prm.causal = coin(rng, 0.3);
  if (coin(rng, 0.3)) {
    auto window = [&] { return coin(rng, 0.1) ? INT32_MAX - int32_t(pick(rng, 0, 1)) : int32_t(pick(rng, -1, 6)); };
    prm.window_size_left = window();
    prm.window_size_right = window();
  }
  if (coin(rng, 0.25)) prm.softcap = coin(rng, 0.1) ? 1e-45f : float(uniform(rng, 0.5, 30));
  switch (pick(rng, 0, 7)) {
    case 0: case 1: case 2: case 3: break;  // NaN: 1/sqrt(head_dim)
    case 4: prm.softmax_scale = 0.0f; break;
    case 5: prm.softmax_scale = 1e-30f; break;  // scores ~1e-30 (a subnormal scale would make lse subnormal, ~6 bits)
    case 6:  // scores far beyond fp32 range are only safe under a softcap
      prm.softmax_scale = prm.softcap > 0 ? 1e30f : float(uniform(rng, -0.6, 0.6));
      break;
    default: prm.softmax_scale = float(uniform(rng, -0.6, 0.6));
  }
  rp.causal = prm.causal;
  rp.window_left = prm.window_size_left;
  rp.window_right = prm.window_size_right;
  rp.softcap = prm.softcap;
  rp.softmax_scale = prm.softmax_scale;
  const bool with_lse = coin(rng, 0.6);
  const int threads = int(pick(rng, 1, 3));
  // Keep the float64 reference cheap: about 2e5 multiply-adds per problem.
  const int64_t budget = 200000 / (nheads * hd) + 1;

  std::vector<int32_t> cuq{0}, cuk{0};
  int64_t batch = 0, sq = 0, sk = 0;
  if (varlen) {
    batch = pick(rng, 0, 4);
    for (int64_t b = 0; b < batch; ++b) {
      int64_t lq = rand_len(rng, 16), lk = rand_len(rng, 16);
      while (lq * lk * batch > budget && (lq > 1 || lk > 1)) (lq > lk ? lq : lk) /= 2;
      cuq.push_back(cuq.back() + int32_t(lq));
      cuk.push_back(cuk.back() + int32_t(lk));
    }
  } else {
    batch = coin(rng, 0.1) ? 0 : pick(rng, 1, 3);
    sq = rand_len(rng, 24);
    sk = rand_len(rng, 24);
    while (batch * sq * sk > budget && (sq > 1 || sk > 1)) (sq > sk ? sq : sk) /= 2;
  }
  const int64_t tq = cuq.back(), tk = cuk.back();
  const std::vector<int64_t> qs = varlen ? std::vector<int64_t>{tq, nheads, hd}
                                         : std::vector<int64_t>{batch, sq, nheads, hd};
  const std::vector<int64_t> ks = varlen ? std::vector<int64_t>{tk, nheads_k, hd}
                                         : std::vector<int64_t>{batch, sk, nheads_k, hd};
  const std::vector<int64_t> ls = varlen ? std::vector<int64_t>{nheads, tq}
                                         : std::vector<int64_t>{batch, nheads, sq};
  HostTensor q = make_t(rng, dt, qs, true, true), k = make_t(rng, dt, ks, true, true);
  HostTensor v = make_t(rng, dt, ks, true, true);
  HostTensor out = make_t(rng, dt, qs), lse = make_t(rng, DT::F32, ls);
  HostTensor cu_q = fktest::int32_tensor(cuq), cu_k = fktest::int32_tensor(cuk);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  out.poison();
  lse.poison();
  // No keys at all: k and v may come without data.
  if (k.numel() == 0 && coin(rng, 0.5)) k.dl.data = v.dl.data = nullptr;

  // k and v as one view (inputs may alias each other).
  const bool kv_same = coin(rng, 0.1);
  const HostTensor& vv = kv_same ? k : v;
  INFO("attention: dtype " << fktest::dt_name(dt) << " kv_same " << kv_same << " varlen " << varlen << " batch " << batch
                           << " sq " << sq << " sk " << sk << " total_q " << tq << " total_k "
                           << tk << " nheads " << nheads << "/" << nheads_k << " hd " << hd
                           << " causal " << prm.causal << " window " << prm.window_size_left
                           << "," << prm.window_size_right << " softcap " << prm.softcap
                           << " scale " << prm.softmax_scale << " lse " << with_lse);
  const fk_status_t st = fk_attention_forward(
      fkcpu::cpu_context(threads), nullptr, &prm, &q, &k, &vv, varlen ? &cu_q : nullptr,
      varlen ? &cu_k : nullptr, &out, with_lse ? &lse : nullptr);
  INFO("message: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  std::vector<double> ref_out, ref_lse;
  if (varlen) {
    fkref::attention_varlen(q.to_vector(), k.to_vector(), vv.to_vector(), cuq, cuk, nheads,
                            nheads_k, hd, rp, ref_out, ref_lse);
  } else {
    fkref::attention(q.to_vector(), k.to_vector(), vv.to_vector(), batch, sq, sk, nheads,
                     nheads_k, hd, rp, ref_out, ref_lse);
  }
  check_output(out, ref_out, dt, "out");
  // lse is a logarithm: its error is absolute, about eps times the scores' size, not relative
  // to its own value. A fuzzed problem where one row sees one key makes lse a single score that
  // can cancel to ~0.01 (seeds 100239 and 200268 did), so the bound is relative to max(1, |lse|).
  std::vector<double> lse_scale(ref_lse.size());
  for (size_t i = 0; i < ref_lse.size(); ++i)
    lse_scale[i] = std::isfinite(ref_lse[i]) ? std::max(1.0, std::fabs(ref_lse[i])) : 1.0;
  if (with_lse) check_output(lse, ref_lse, DT::F32, "lse", 1.0, &lse_scale);
  else CHECK(lse.all_poison());
}

void fuzz_gemm(std::mt19937_64& rng) {
  const bool batched = coin(rng, 0.5);
  const int64_t batch = batched ? pick(rng, 0, 3) : 1;
  const int64_t M = rand_len(rng, 40), N = rand_len(rng, 40), K = rand_len(rng, 40);
  fk_gemm_params_t prm;
  fk_gemm_params_init(&prm);
  prm.trans_a = coin(rng, 0.5);
  prm.trans_b = coin(rng, 0.5);
  prm.activation = int32_t(pick(rng, 0, 3));
  prm.alpha = coin(rng, 0.15) ? 0.0f : float(uniform(rng, -2, 2));
  const bool with_c = coin(rng, 0.5), with_bias = coin(rng, 0.4);
  prm.beta = with_c && coin(rng, 0.7) ? float(uniform(rng, -2, 2)) : 0.0f;
  const DT ab = rand_dt(rng), cd = rand_dt(rng), bias_dt = rand_dt(rng);
  const bool in_place = with_c && coin(rng, 0.3);
  // Operand batches: rank 2 (broadcast), batch 1 (broadcast) or the full batch.
  auto operand_batch = [&](bool* rank3) {
    *rank3 = batched ? coin(rng, 0.7) : coin(rng, 0.2);
    if (!*rank3) return int64_t(1);
    return batched && coin(rng, 0.7) ? batch : int64_t(1);
  };
  bool a3, b3, c3;
  const int64_t a_batch = operand_batch(&a3), b_batch = operand_batch(&b3);
  int64_t c_batch = operand_batch(&c3);
  if (in_place) {
    c3 = batched;
    c_batch = batch;
  }
  auto shape = [](bool rank3, int64_t nb, int64_t r, int64_t c) {
    return rank3 ? std::vector<int64_t>{nb, r, c} : std::vector<int64_t>{r, c};
  };
  HostTensor a = make_t(rng, ab, shape(a3, a_batch, prm.trans_a ? K : M, prm.trans_a ? M : K), false, true);
  HostTensor b = make_t(rng, ab, shape(b3, b_batch, prm.trans_b ? N : K, prm.trans_b ? K : N), false, true);
  HostTensor c = make_t(rng, cd, shape(c3, c_batch, M, N), false, !in_place);
  HostTensor d = make_t(rng, cd, shape(batched, batch, M, N), false);
  HostTensor bias = make_t(rng, bias_dt, {N});
  a.fill_normal(rng);
  b.fill_normal(rng);
  bias.fill_normal(rng);
  c.poison();
  d.poison();
  // BLAS: C is not read when beta == 0, so it may hold NaN.
  if (prm.beta != 0.0f) c.fill_normal(rng);
  HostTensor& dd = in_place ? c : d;
  const std::vector<double> av = a.to_vector(), bv = b.to_vector(), cv = c.to_vector(),
                            biasv = bias.to_vector();
  INFO("gemm: batch " << (batched ? batch : -1) << " M " << M << " N " << N << " K " << K
                      << " trans " << prm.trans_a << prm.trans_b << " batches " << (a3 ? a_batch : -1)
                      << "," << (b3 ? b_batch : -1) << "," << (c3 ? c_batch : -1) << " alpha "
                      << prm.alpha << " beta " << prm.beta << " c " << with_c << " in_place "
                      << in_place << " bias " << with_bias << " act " << prm.activation
                      << " dtypes " << fktest::dt_name(ab) << "/" << fktest::dt_name(cd));
  const fk_status_t st = fk_gemm(fkcpu::cpu_context(int(pick(rng, 1, 3))), nullptr, &prm, &a, &b,
                                 with_c ? &c : nullptr, with_bias ? &bias : nullptr, &dd);
  INFO("message: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  fkref::GemmParams rp;
  rp.trans_a = prm.trans_a;
  rp.trans_b = prm.trans_b;
  rp.alpha = prm.alpha;
  rp.beta = prm.beta;
  rp.activation = prm.activation;
  const bool read_c = with_c && prm.beta != 0.0f;
  const std::vector<double> ref = fkref::gemm(av, a_batch, bv, b_batch, read_c ? &cv : nullptr,
                                              c_batch, with_bias ? &biasv : nullptr, batch, M,
                                              N, K, rp);
  fkref::GemmParams sp = rp;
  sp.alpha = std::fabs(rp.alpha);
  sp.beta = std::fabs(rp.beta);
  sp.activation = 0;
  const std::vector<double> aa = absolute(av), ba = absolute(bv), ca = absolute(cv),
                            biasa = absolute(biasv);
  const std::vector<double> scale = fkref::gemm(aa, a_batch, ba, b_batch, read_c ? &ca : nullptr,
                                                c_batch, with_bias ? &biasa : nullptr, batch, M,
                                                N, K, sp);
  std::vector<double> mag(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) mag[i] = std::max(scale[i], std::fabs(ref[i]));
  check_output(dd, ref, cd, "d", 1.0, &mag);
}

void fuzz_fftconv(std::mt19937_64& rng) {
  const int mode = int(pick(rng, 0, 2));
  const DT dt = rand_dt(rng), k_dt = rand_dt(rng), d_dt = rand_dt(rng);
  const int64_t channels = coin(rng, 0.15) ? 111 : pick(rng, 1, 6);
  int64_t seqlen = coin(rng, 0.1) ? 1 : pick(rng, 2, channels > 6 ? 48 : 260);
  int64_t filter_len = 0;
  if (coin(rng, 0.6)) {
    filter_len = mode == FK_FFTCONV_BIDIRECTIONAL ? 2 * pick(rng, 0, seqlen) + 1
                                                  : pick(rng, 1, seqlen + 4);
  } else if (mode == FK_FFTCONV_BIDIRECTIONAL && seqlen % 2 == 0) {
    ++seqlen;  // filter_len 0 means seqlen, which must be odd here
  }
  const int64_t fl = filter_len ? filter_len : seqlen;
  const int64_t need = fkref::default_fft_size(fkref::ConvMode(mode), seqlen, fl);
  const int64_t fft_size = coin(rng, 0.5) ? 0 : need << pick(rng, 0, 1);
  const int64_t batch = coin(rng, 0.1) ? 0 : pick(rng, 1, 3);
  const bool pre = coin(rng, 0.4), post = coin(rng, 0.4), with_d = coin(rng, 0.5);
  const bool constant = coin(rng, 0.3);
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = mode;
  o.channels = channels;
  o.seqlen = seqlen;
  o.filter_len = filter_len;
  o.fft_size = fft_size;
  o.dtype = fktest::dl_dtype(dt);
  o.flags = constant ? FK_FFTCONV_FILTER_CONSTANT : 0u;
  const fk_context_t* ctx = fkcpu::cpu_context(int(pick(rng, 1, 3)));
  INFO("fftconv: mode " << mode << " channels " << channels << " seqlen " << seqlen
                        << " filter_len " << filter_len << " fft_size " << fft_size << " batch "
                        << batch << " gates " << pre << post << " D " << with_d << " constant "
                        << constant << " dtypes " << fktest::dt_name(dt) << "/"
                        << fktest::dt_name(k_dt) << "/" << fktest::dt_name(d_dt));
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE(fk_fftconv_plan_create(ctx, &o, &plan) == FK_SUCCESS);
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
      plan, fk_fftconv_plan_destroy);
  fk_fftconv_plan_options_t r;
  fk_fftconv_plan_options_init(&r);
  REQUIRE(fk_fftconv_plan_get_options(plan, &r) == FK_SUCCESS);
  CHECK(r.filter_len == fl);
  CHECK(r.fft_size == (fft_size ? fft_size : need));
  const std::vector<int64_t> act{batch, channels, seqlen};
  HostTensor u = make_t(rng, dt, act, true, true), y = make_t(rng, dt, act);
  HostTensor pg = make_t(rng, dt, act, true, true), qg = make_t(rng, dt, act, true, true);
  HostTensor k = make_t(rng, k_dt, {channels, fl}, true, true), D = make_t(rng, d_dt, {channels});
  u.fill_normal(rng);
  k.fill_normal(rng, 1.0 / std::sqrt(double(std::min(fl, seqlen))));
  D.fill_normal(rng);
  pg.fill_uniform(rng, -1.5, 1.5);
  qg.fill_uniform(rng, -1.5, 1.5);
  const std::vector<double> Dv = D.to_vector(), pv = pg.to_vector(), qv = qg.to_vector();
  const std::vector<double> ref =
      fkref::fftconv(u.to_vector(), k.to_vector(), with_d ? &Dv : nullptr, pre ? &pv : nullptr,
                     post ? &qv : nullptr, batch, channels, seqlen, fl, fkref::ConvMode(mode),
                     r.fft_size);
  for (int rep = 0; rep < (constant ? 2 : 1); ++rep) {  // a constant filter's cached spectrum
    y.poison();
    const fk_status_t st = fk_fftconv_forward(plan, nullptr, &u, &k, with_d ? &D : nullptr,
                                              pre ? &pg : nullptr, post ? &qg : nullptr, &y);
    INFO("message: " << fk_get_last_error_message() << ", call " << rep);
    REQUIRE(st == FK_SUCCESS);
    check_output(y, ref, dt, "y", 3.0);
  }
}

void fuzz_monarch(std::mt19937_64& rng) {
  const DT dt = rand_dt(rng), bias_dt = rand_dt(rng);
  const int64_t tokens = rand_len(rng, 20);
  const bool with_bias = coin(rng, 0.4);
  const fk_context_t* ctx = fkcpu::cpu_context(int(pick(rng, 1, 3)));
  if (coin(rng, 0.4)) {
    const int64_t nb = pick(rng, 0, 5), q = rand_len(rng, 12), p = rand_len(rng, 12);
    HostTensor x = make_t(rng, dt, {tokens, nb * p}, true, true), w(dt, {nb, q, p});
    HostTensor out = make_t(rng, dt, {tokens, nb * q}), bias = make_t(rng, bias_dt, {nb * q});
    x.fill_normal(rng);
    w.fill_normal(rng);
    bias.fill_normal(rng);
    out.poison();
    INFO("blockdiag: tokens " << tokens << " nblocks " << nb << " q " << q << " p " << p
                              << " bias " << with_bias << " " << fktest::dt_name(dt));
    const fk_status_t st =
        fk_blockdiag_linear(ctx, nullptr, nullptr, &x, &w, with_bias ? &bias : nullptr, &out);
    INFO("message: " << fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    const std::vector<double> bv = bias.to_vector(), abv = absolute(bv);
    // Rounding errors scale with sum |x||w| (+ |bias|), not with a result that cancels.
    const std::vector<double> sc = fkref::blockdiag(absolute(x.to_vector()), absolute(w.to_vector()),
                                                    with_bias ? &abv : nullptr, tokens, nb, q, p);
    check_output(out, fkref::blockdiag(x.to_vector(), w.to_vector(), with_bias ? &bv : nullptr,
                                       tokens, nb, q, p),
                 dt, "out", 1.0, &sc);
    return;
  }
  const int64_t nb1 = pick(rng, 0, 5), q = rand_len(rng, 8), p = rand_len(rng, 8);
  const int64_t mid = nb1 * q;
  int64_t nb2, r;
  if (mid == 0) {
    nb2 = pick(rng, 0, 4);
    r = nb2 == 0 ? pick(rng, 0, 5) : 0;
  } else {
    std::vector<int64_t> divs;
    for (int64_t dv = 1; dv <= mid; ++dv)
      if (mid % dv == 0) divs.push_back(dv);
    nb2 = divs[size_t(pick(rng, 0, int64_t(divs.size()) - 1))];
    r = mid / nb2;
  }
  const int64_t s = rand_len(rng, 8);
  HostTensor x = make_t(rng, dt, {tokens, nb1 * p}, true, true), w1(dt, {nb1, q, p}), w2(dt, {nb2, s, r});
  HostTensor out = make_t(rng, dt, {tokens, nb2 * s}), bias = make_t(rng, bias_dt, {nb2 * s});
  x.fill_normal(rng);
  w1.fill_normal(rng);
  w2.fill_normal(rng);
  bias.fill_normal(rng);
  out.poison();
  INFO("monarch: tokens " << tokens << " nb1 " << nb1 << " q " << q << " p " << p << " nb2 "
                          << nb2 << " s " << s << " r " << r << " bias " << with_bias << " "
                          << fktest::dt_name(dt));
  const fk_status_t st =
      fk_monarch(ctx, nullptr, nullptr, &x, &w1, &w2, with_bias ? &bias : nullptr, &out);
  INFO("message: " << fk_get_last_error_message());
  REQUIRE(st == FK_SUCCESS);
  const std::vector<double> bv = bias.to_vector(), abv = absolute(bv);
  // Rounding errors scale with the product of magnitudes, not with a result that cancels
  // (seed 7903177581613865916, iteration 920: a 15-term sum of size 3.5e-3).
  const std::vector<double> sc =
      fkref::monarch(absolute(x.to_vector()), absolute(w1.to_vector()), absolute(w2.to_vector()),
                     with_bias ? &abv : nullptr, tokens, nb1, q, p, nb2, s, r);
  check_output(out, fkref::monarch(x.to_vector(), w1.to_vector(), w2.to_vector(),
                                   with_bias ? &bv : nullptr, tokens, nb1, q, p, nb2, s, r),
               dt, "out", 1.0, &sc);
}

// =============================================================================================
// Invalid problems: one field broken at a time
// =============================================================================================

// Runs `f` with stdout and stderr redirected to a temporary file; returns what was written.
std::string captured(const std::function<void()>& f) {
  std::fflush(stdout);
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  if (!tmp) {
    f();
    return {};
  }
  const int saved1 = dup(1), saved2 = dup(2);
  dup2(fileno(tmp), 1);
  dup2(fileno(tmp), 2);
  f();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(saved1, 1);
  dup2(saved2, 2);
  close(saved1);
  close(saved2);
  std::string text;
  std::rewind(tmp);
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) text.append(buf, n);
  std::fclose(tmp);
  return text;
}

// A mutable copy of one argument's DLTensor (its own shape and stride arrays, room for rank 5).
struct Probe {
  std::string name;
  const HostTensor* t = nullptr;  // nullptr: the argument is absent (NULL)
  bool output = false, last_contig = true;
  DLTensor dl{};
  int64_t shape[5] = {1, 1, 1, 1, 1}, strides[5] = {1, 1, 1, 1, 1};
  bool null = false;
  void load() {
    null = t == nullptr;
    if (!t) return;
    dl = t->dl;
    for (int i = 0; i < dl.ndim; ++i) {
      shape[i] = t->shape[size_t(i)];
      strides[i] = t->strides[size_t(i)];
    }
    dl.shape = shape;
    dl.strides = strides;
  }
  const DLTensor* ptr() const { return null ? nullptr : &dl; }
};

// The problem under attack: its arguments (outputs poisoned), the call, and op-specific ways to
// break it, each returning the argument name the message must start with ("" = any argument).
struct Attack {
  std::vector<Probe> probes;
  std::function<fk_status_t()> call;
  std::vector<std::function<std::string(std::mt19937_64&)>> specials;
  std::function<void()> reset_params = [] {};
  Probe& arg(const std::string& n) {
    for (auto& p : probes)
      if (p.name == n) return p;
    throw std::logic_error("no argument " + n);
  }
};

// Breaks one tensor argument in a way to_view or a layout rule must refuse; returns the name
// the message must start with, or "" when the tensor cannot be broken that way (skip).
std::string break_tensor(std::mt19937_64& rng, Probe& p) {
  if (!p.t) return "";
  DLTensor& d = p.dl;
  int64_t numel = 1;
  for (int i = 0; i < d.ndim; ++i) numel *= p.shape[i];
  switch (pick(rng, 0, 11)) {
    case 0: {  // NULL is refused for required arguments only
      p.null = true;
      static const char* const required[] = {"q", "k", "v", "out", "a", "b", "d",
                                             "x", "w", "w1", "w2", "u", "y"};
      for (const char* r : required)
        if (p.name == r) return p.name;
      return "";
    }
    case 1: if (numel == 0) return ""; d.data = nullptr; d.byte_offset = 0; return p.name;
    case 2: d.dtype = DLDataType{kDLFloat, 64, 1}; return p.name;
    case 3: d.dtype.lanes = 2; return p.name;
    case 4: d.dtype = DLDataType{kDLUInt, 8, 1}; return p.name;
    case 5: d.ndim = pick(rng, 0, 1) ? 5 : -1; return p.name;
    case 6: if (d.ndim == 0) return ""; p.shape[pick(rng, 0, d.ndim - 1)] = -pick(rng, 1, 3); return p.name;
    case 7: {
      if (numel == 0) return "";
      std::vector<int> dims;
      for (int i = 0; i < d.ndim; ++i)
        if (p.shape[i] > 1) dims.push_back(i);
      if (dims.empty()) return "";
      p.strides[dims[size_t(pick(rng, 0, int64_t(dims.size()) - 1))]] = -pick(rng, 1, 5);
      return p.name;
    }
    case 8: if (numel == 0) return ""; d.byte_offset += 1; return p.name;
    case 9: {
      // A code outside DLDeviceType's enumerators (99) is written as its raw 32 bits: loading
      // it as the enum would be undefined behaviour in this test itself.
      const int32_t codes[] = {kDLCUDA, kDLOpenCL, kDLCUDAManaged, 99};
      std::memcpy(&d.device.device_type, &codes[size_t(pick(rng, 0, 3))], sizeof(int32_t));
      d.device.device_id = 0;
      return p.name;
    }
    case 10: if (d.ndim == 0) return ""; d.shape = nullptr; return p.name;
    default:
      if (!p.last_contig || d.ndim == 0 || numel == 0 || p.shape[d.ndim - 1] < 2) return "";
      p.strides[d.ndim - 1] = 2;
      return p.name;
  }
}

void attack(Attack& at, std::mt19937_64& rng, int iterations) {
  // Byte images of every argument, to prove nothing was written.
  std::vector<std::vector<uint8_t>> before;
  for (auto& p : at.probes) before.push_back(p.t ? p.t->bytes : std::vector<uint8_t>{});
  int refused = 0;
  for (int it = 0; it < iterations; ++it) {
    for (auto& p : at.probes) p.load();
    at.reset_params();
    std::string want;
    const bool special = !at.specials.empty() && coin(rng, 0.5);
    if (special) {
      want = at.specials[size_t(pick(rng, 0, int64_t(at.specials.size()) - 1))](rng);
    } else {
      Probe& p = at.probes[size_t(pick(rng, 0, int64_t(at.probes.size()) - 1))];
      want = break_tensor(rng, p);
      if (want.empty()) continue;
    }
    fk_status_t st = FK_SUCCESS;
    const std::string printed = captured([&] { st = at.call(); });
    const std::string msg = fk_get_last_error_message();
    INFO("iteration " << it << ": expected a message starting with '" << want << "', got status "
                      << int(st) << " '" << msg << "'");
    ++refused;
    CHECK(st != FK_SUCCESS);
    CHECK(fk_status_category(st) == FK_ERROR_INVALID_ARGUMENT);
    if (!want.empty()) CHECK(msg.compare(0, want.size() + 1, want + ":") == 0);
    else CHECK_FALSE(msg.empty());
    CHECK(printed.empty());
    for (size_t i = 0; i < at.probes.size(); ++i) {
      if (!at.probes[i].t) continue;
      INFO("argument " << at.probes[i].name << " changed");
      CHECK(at.probes[i].t->bytes == before[i]);
    }
  }
  CHECK(refused > iterations / 4);
}

}  // namespace

TEST_CASE("fuzz: random valid attention problems match the reference", "[fuzz][attention]") {
  for (int it = 0; it < 500; ++it) {
    auto rng = fkcpu::rng_for(0xF0000 + uint64_t(it));
    INFO("iteration " << it << ", FLASHKIT_TEST_SEED=" << fktest::test_seed());
    fuzz_attention(rng);
  }
}

TEST_CASE("fuzz: random valid GEMMs match the reference", "[fuzz][gemm]") {
  for (int it = 0; it < 1000; ++it) {
    auto rng = fkcpu::rng_for(0xF1000 + uint64_t(it));
    INFO("iteration " << it << ", FLASHKIT_TEST_SEED=" << fktest::test_seed());
    fuzz_gemm(rng);
  }
}

TEST_CASE("fuzz: random valid FFT convolutions match the reference", "[fuzz][fftconv]") {
  for (int it = 0; it < 400; ++it) {
    auto rng = fkcpu::rng_for(0xF2000 + uint64_t(it));
    INFO("iteration " << it << ", FLASHKIT_TEST_SEED=" << fktest::test_seed());
    fuzz_fftconv(rng);
  }
}

TEST_CASE("fuzz: random valid Monarch and block-diagonal problems match the reference",
          "[fuzz][monarch]") {
  for (int it = 0; it < 1000; ++it) {
    auto rng = fkcpu::rng_for(0xF3000 + uint64_t(it));
    INFO("iteration " << it << ", FLASHKIT_TEST_SEED=" << fktest::test_seed());
    fuzz_monarch(rng);
  }
}

namespace {

// A probe per argument, in call order.
Attack make_attack(std::vector<std::tuple<std::string, const HostTensor*, bool, bool>> args) {
  Attack at;
  at.probes.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    at.probes[i].name = std::get<0>(args[i]);
    at.probes[i].t = std::get<1>(args[i]);
    at.probes[i].output = std::get<2>(args[i]);
    at.probes[i].last_contig = std::get<3>(args[i]);
  }
  return at;
}

// Common launch/context breakage shared by every op: returns the expected name.
std::string break_launch(std::mt19937_64& rng, fk_launch_t& l, const fk_context_t** ctx) {
  switch (pick(rng, 0, 3)) {
    case 0: l.struct_size = uint32_t(pick(rng, 0, 3)) * 8; return "launch";
    case 1: l.flags = 1u << pick(rng, 0, 31); return "launch";
    case 2: l.workspace = nullptr; l.workspace_bytes = uint64_t(pick(rng, 1, 1 << 20)); return "launch";
    default: *ctx = nullptr; return "context";
  }
}

}  // namespace

TEST_CASE("fuzz: broken attention arguments are refused, nothing written or printed",
          "[fuzz][attention][validation]") {
  for (int round = 0; round < 8; ++round) {
    auto rng = fkcpu::rng_for(0xF4000 + uint64_t(round));
    const bool varlen = round % 2;
    const DT dt = rand_dt(rng);
    const int64_t hk = pick(rng, 1, 2), h = hk * pick(rng, 1, 2), d = pick(rng, 2, 8);
    const int64_t b = pick(rng, 1, 2), sq = pick(rng, 2, 5), sk = pick(rng, 2, 6);
    std::vector<int32_t> cq{0}, ck{0};
    for (int64_t i = 0; i < b; ++i) {
      cq.push_back(cq.back() + int32_t(pick(rng, 1, 4)));
      ck.push_back(ck.back() + int32_t(pick(rng, 1, 4)));
    }
    const std::vector<int64_t> qs = varlen ? std::vector<int64_t>{cq.back(), h, d}
                                           : std::vector<int64_t>{b, sq, h, d};
    const std::vector<int64_t> ks = varlen ? std::vector<int64_t>{ck.back(), hk, d}
                                           : std::vector<int64_t>{b, sk, hk, d};
    const std::vector<int64_t> ls = varlen ? std::vector<int64_t>{h, cq.back()}
                                           : std::vector<int64_t>{b, h, sq};
    HostTensor q = make_t(rng, dt, qs), k = make_t(rng, dt, ks), v = make_t(rng, dt, ks);
    HostTensor out = make_t(rng, dt, qs), lse = make_t(rng, DT::F32, ls);
    HostTensor cu_q = fktest::int32_tensor(cq), cu_k = fktest::int32_tensor(ck);
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    out.poison();
    lse.poison();
    Attack at = make_attack({{"q", std::addressof(q), false, true},
                             {"k", std::addressof(k), false, true},
                             {"v", std::addressof(v), false, true},
                             {"cu_seqlens_q", varlen ? std::addressof(cu_q) : nullptr, false, true},
                             {"cu_seqlens_k", varlen ? std::addressof(cu_k) : nullptr, false, true},
                             {"out", std::addressof(out), true, true},
                             {"lse", std::addressof(lse), true, true}});
    fk_attention_params_t prm;
    fk_launch_t launch;
    const fk_context_t* ctx = nullptr;
    at.reset_params = [&] {
      fk_attention_params_init(&prm);
      fk_launch_init(&launch);
      ctx = fkcpu::cpu_context(2);
    };
    at.call = [&] {
      auto& P = at.probes;
      return fk_attention_forward(ctx, &launch, &prm, P[0].ptr(), P[1].ptr(), P[2].ptr(),
                                  P[3].ptr(), P[4].ptr(), P[5].ptr(), P[6].ptr());
    };
    auto& S = at.specials;
    S.push_back([&](std::mt19937_64& g) { return break_launch(g, launch, &ctx); });
    S.push_back([&](std::mt19937_64& g) {
      switch (pick(g, 0, 7)) {
        case 0: prm.struct_size = uint32_t(pick(g, 0, 100)) * 2 + 1; return std::string("params");
        case 1: prm.window_size_left = int32_t(pick(g, INT32_MIN, -2)); return std::string("params.window_size_left");
        case 2: prm.window_size_right = int32_t(pick(g, -100, -2)); return std::string("params.window_size_right");
        case 3: prm.softcap = float(-uniform(g, 1e-30, 1e30)); return std::string("params.softcap");
        case 4: prm.softcap = coin(g, 0.5) ? NAN : INFINITY; return std::string("params.softcap");
        case 5: prm.softmax_scale = coin(g, 0.5) ? INFINITY : -INFINITY; return std::string("params.softmax_scale");
        case 6: prm.softcap = -0.0f - 1e-38f; return std::string("params.softcap");
        default: prm.struct_size = sizeof prm + 8; return std::string("params");
      }
    });
    // Shapes that disagree: the message may name either side, so only "some argument".
    S.push_back([&](std::mt19937_64& g) {
      Probe& p = at.arg(std::vector<std::string>{"q", "k", "v", "out", "lse"}[size_t(pick(g, 0, 4))]);
      p.shape[pick(g, 0, p.dl.ndim - 1)] += pick(g, 1, 3);
      return std::string("");
    });
    S.push_back([&](std::mt19937_64& g) {  // head_dim beyond 256 everywhere
      for (const char* n : {"q", "k", "v", "out"}) at.arg(n).shape[at.arg(n).dl.ndim - 1] = pick(g, 257, 1 << 20);
      return std::string("q");
    });
    S.push_back([&](std::mt19937_64&) {  // nheads not a multiple of nheads_k
      for (const char* n : {"k", "v"}) at.arg(n).shape[at.arg(n).dl.ndim - 2] = h + 1;
      return std::string("k");
    });
    S.push_back([&](std::mt19937_64& g) {  // an output placed in an input's memory
      Probe& o = at.arg(coin(g, 0.5) ? "out" : "lse");
      const HostTensor& in = *at.arg(std::vector<std::string>{"q", "k", "v"}[size_t(pick(g, 0, 2))]).t;
      o.dl.data = const_cast<uint8_t*>(in.bytes.data());
      o.dl.byte_offset = 0;
      o.dl.strides = nullptr;
      return o.name;
    });
    S.push_back([&](std::mt19937_64&) {  // lse inside out
      Probe& l = at.arg("lse");
      l.dl.data = at.arg("out").dl.data;
      l.dl.byte_offset = at.arg("out").dl.byte_offset;
      return std::string("lse");
    });
    if (varlen) {
      S.push_back([&](std::mt19937_64& g) {  // only one of the two
        const bool drop_q = coin(g, 0.5);
        at.arg(drop_q ? "cu_seqlens_q" : "cu_seqlens_k").null = true;
        return std::string(drop_q ? "cu_seqlens_q" : "cu_seqlens_k");
      });
      S.push_back([&](std::mt19937_64& g) {  // bad contents, in a scratch copy
        static thread_local std::vector<int32_t> bad;
        const bool is_q = coin(g, 0.5);
        Probe& p = at.arg(is_q ? "cu_seqlens_q" : "cu_seqlens_k");
        bad = is_q ? cq : ck;
        switch (pick(g, 0, 2)) {
          case 0: bad[0] = int32_t(pick(g, 1, 3)); break;
          case 1: bad.back() += int32_t(pick(g, 1, 3)) * (coin(g, 0.5) ? 1 : -1); break;
          default: {
            const size_t i = size_t(pick(g, 1, int64_t(bad.size()) - 1));
            bad[i] = bad[i - 1] - int32_t(pick(g, 1, 5));
          }
        }
        p.dl.data = bad.data();
        p.dl.byte_offset = 0;
        return p.name;
      });
    }
    attack(at, rng, 250);
  }
}

TEST_CASE("fuzz: broken GEMM arguments are refused, nothing written or printed",
          "[fuzz][gemm][validation]") {
  for (int round = 0; round < 8; ++round) {
    auto rng = fkcpu::rng_for(0xF5000 + uint64_t(round));
    const int64_t M = pick(rng, 2, 6), N = pick(rng, 2, 6), K = pick(rng, 2, 6);
    const bool batched = round % 2;
    const int64_t nb = pick(rng, 2, 3);
    auto shape = [&](int64_t r, int64_t c) {
      return batched ? std::vector<int64_t>{nb, r, c} : std::vector<int64_t>{r, c};
    };
    fk_gemm_params_t prm;
    fk_gemm_params_init(&prm);
    const bool ta = coin(rng, 0.5), tb = coin(rng, 0.5);
    const DT ab = rand_dt(rng), cd = rand_dt(rng);
    HostTensor a = make_t(rng, ab, shape(ta ? K : M, ta ? M : K), false);
    HostTensor b = make_t(rng, ab, shape(tb ? N : K, tb ? K : N), false);
    HostTensor c = make_t(rng, cd, shape(M, N), false), bias = make_t(rng, rand_dt(rng), {N});
    HostTensor d = make_t(rng, cd, shape(M, N), false);
    a.fill_normal(rng);
    b.fill_normal(rng);
    c.fill_normal(rng);
    bias.fill_normal(rng);
    d.poison();
    Attack at = make_attack({{"a", std::addressof(a), false, false},
                             {"b", std::addressof(b), false, false},
                             {"c", std::addressof(c), false, false},
                             {"bias", std::addressof(bias), false, true},
                             {"d", std::addressof(d), true, false}});
    fk_launch_t launch;
    const fk_context_t* ctx = nullptr;
    at.reset_params = [&] {
      fk_gemm_params_init(&prm);
      prm.trans_a = ta;
      prm.trans_b = tb;
      prm.beta = 0.5f;
      fk_launch_init(&launch);
      ctx = fkcpu::cpu_context(2);
    };
    at.call = [&] {
      auto& P = at.probes;
      return fk_gemm(ctx, &launch, &prm, P[0].ptr(), P[1].ptr(), P[2].ptr(), P[3].ptr(),
                     P[4].ptr());
    };
    auto& S = at.specials;
    S.push_back([&](std::mt19937_64& g) { return break_launch(g, launch, &ctx); });
    S.push_back([&](std::mt19937_64& g) {
      switch (pick(g, 0, 5)) {
        case 0: prm.struct_size = 4; return std::string("params");
        case 1: prm.activation = int32_t(coin(g, 0.5) ? pick(g, 4, 1000) : -pick(g, 1, 1000)); return std::string("params.activation");
        case 2: prm.alpha = coin(g, 0.5) ? NAN : -INFINITY; return std::string("params.alpha");
        case 3: prm.beta = coin(g, 0.5) ? NAN : INFINITY; return std::string("params.beta");
        case 4: at.arg("c").null = true; return std::string("c");  // beta != 0 without c
        default: prm.trans_a = !prm.trans_a; at.arg("a").shape[at.arg("a").dl.ndim - 1] += 1; return std::string("");
      }
    });
    S.push_back([&](std::mt19937_64& g) {  // disagreeing extents
      Probe& p = at.arg(std::vector<std::string>{"a", "b", "c", "bias", "d"}[size_t(pick(g, 0, 4))]);
      p.shape[pick(g, 0, p.dl.ndim - 1)] += pick(g, 1, 3);
      return std::string("");
    });
    S.push_back([&](std::mt19937_64& g) {  // d inside an input, or writing one address twice
      Probe& o = at.arg("d");
      if (coin(g, 0.3)) {
        o.strides[o.dl.ndim - 2] = 0;
        return std::string("d");
      }
      const std::string in = std::vector<std::string>{"a", "b", "bias"}[size_t(pick(g, 0, 2))];
      o.dl.data = const_cast<uint8_t*>(at.arg(in).t->bytes.data());
      o.dl.byte_offset = 0;
      return std::string("d");
    });
    attack(at, rng, 250);
  }
}

TEST_CASE("fuzz: broken Monarch and block-diagonal arguments are refused",
          "[fuzz][monarch][validation]") {
  for (int round = 0; round < 8; ++round) {
    auto rng = fkcpu::rng_for(0xF6000 + uint64_t(round));
    const bool mon = round % 2;
    const DT dt = rand_dt(rng);
    const int64_t T = pick(rng, 2, 5), nb1 = pick(rng, 2, 3), q = pick(rng, 2, 4), p = pick(rng, 2, 4);
    const int64_t nb2 = mon ? nb1 * q / (coin(rng, 0.5) ? q : 1) : nb1, r = nb1 * q / nb2, s = pick(rng, 2, 4);
    const int64_t nout = mon ? nb2 * s : nb1 * q;
    HostTensor x = make_t(rng, dt, {T, nb1 * p}), w1(dt, {nb1, q, p}), w2(dt, {nb2, s, r});
    HostTensor bias = make_t(rng, rand_dt(rng), {nout}), out = make_t(rng, dt, {T, nout});
    x.fill_normal(rng);
    w1.fill_normal(rng);
    w2.fill_normal(rng);
    bias.fill_normal(rng);
    out.poison();
    Attack at = mon ? make_attack({{"x", std::addressof(x), false, true},
                                   {"w1", std::addressof(w1), false, true},
                                   {"w2", std::addressof(w2), false, true},
                                   {"bias", std::addressof(bias), false, true},
                                   {"out", std::addressof(out), true, true}})
                    : make_attack({{"x", std::addressof(x), false, true},
                                   {"w", std::addressof(w1), false, true},
                                   {"bias", std::addressof(bias), false, true},
                                   {"out", std::addressof(out), true, true}});
    fk_monarch_params_t prm;
    fk_launch_t launch;
    const fk_context_t* ctx = nullptr;
    at.reset_params = [&] {
      fk_monarch_params_init(&prm);
      fk_launch_init(&launch);
      ctx = fkcpu::cpu_context(2);
    };
    at.call = [&] {
      auto& P = at.probes;
      return mon ? fk_monarch(ctx, &launch, &prm, P[0].ptr(), P[1].ptr(), P[2].ptr(), P[3].ptr(), P[4].ptr())
                 : fk_blockdiag_linear(ctx, &launch, &prm, P[0].ptr(), P[1].ptr(), P[2].ptr(), P[3].ptr());
    };
    auto& S = at.specials;
    S.push_back([&](std::mt19937_64& g) { return break_launch(g, launch, &ctx); });
    S.push_back([&](std::mt19937_64& g) {
      if (coin(g, 0.5)) {
        prm.flags = uint32_t(pick(g, 1, 1 << 30));
        return std::string("params.flags");
      }
      prm.struct_size = 0;
      return std::string("params");
    });
    S.push_back([&](std::mt19937_64& g) {  // weights must be compact
      Probe& w = at.arg(mon ? (coin(g, 0.5) ? "w1" : "w2") : "w");
      w.strides[pick(g, 0, 1)] += pick(g, 1, 3);
      return w.name;
    });
    S.push_back([&](std::mt19937_64& g) {
      Probe& pr = at.probes[size_t(pick(g, 0, int64_t(at.probes.size()) - 1))];
      pr.shape[pick(g, 0, pr.dl.ndim - 1)] += pick(g, 1, 3);
      return std::string("");
    });
    S.push_back([&](std::mt19937_64&) {
      Probe& o = at.arg("out");
      o.dl.data = const_cast<uint8_t*>(x.bytes.data());
      o.dl.byte_offset = 0;
      return std::string("out");
    });
    attack(at, rng, 250);
  }
}

TEST_CASE("fuzz: broken FFT-convolution plans and calls are refused",
          "[fuzz][fftconv][validation]") {
  // Plan options, one field broken at a time.
  for (int it = 0; it < 300; ++it) {
    auto rng = fkcpu::rng_for(0xF7000 + uint64_t(it));
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    o.mode = int32_t(pick(rng, 0, 2));
    o.channels = pick(rng, 1, 8);
    o.seqlen = 2 * pick(rng, 1, 64) + 1;
    std::string want;
    switch (pick(rng, 0, 9)) {
      case 0: o.struct_size = 8; want = "options"; break;
      case 1: o.mode = int32_t(coin(rng, 0.5) ? pick(rng, 3, 1000) : -pick(rng, 1, 1000)); want = "options.mode"; break;
      case 2: o.channels = -pick(rng, 1, INT64_MAX); want = "options.channels"; break;
      case 3: o.seqlen = -pick(rng, 1, INT64_MAX); want = "options.seqlen"; break;
      case 4: o.filter_len = -pick(rng, 1, INT64_MAX); want = "options.filter_len"; break;
      case 5: o.fft_size = coin(rng, 0.5) ? -pick(rng, 1, INT64_MAX) : 3 * (int64_t(1) << pick(rng, 7, 40)); want = "options.fft_size"; break;
      case 6: o.fft_size = int64_t(1) << pick(rng, 23, 62); want = "options.fft_size"; break;
      case 7: o.flags = 2u << pick(rng, 0, 30); want = "options.flags"; break;
      case 8: o.dtype = coin(rng, 0.5) ? DLDataType{kDLFloat, 64, 1} : DLDataType{kDLInt, 32, 1}; want = "options.dtype"; break;
      default:
        o.mode = FK_FFTCONV_BIDIRECTIONAL;
        o.filter_len = 2 * pick(rng, 1, 20);
        want = "options.filter_len";
    }
    fk_fftconv_plan_t* sentinel = reinterpret_cast<fk_fftconv_plan_t*>(uintptr_t(0x1234));
    fk_fftconv_plan_t* plan = sentinel;
    fk_status_t st = FK_SUCCESS;
    const std::string printed =
        captured([&] { st = fk_fftconv_plan_create(fkcpu::cpu_context(2), &o, &plan); });
    const std::string msg = fk_get_last_error_message();
    INFO("iteration " << it << ": want '" << want << "', status " << int(st) << " '" << msg << "'");
    CHECK(st != FK_SUCCESS);
    CHECK(fk_status_category(st) == FK_ERROR_INVALID_ARGUMENT);
    CHECK(msg.compare(0, want.size() + 1, want + ":") == 0);
    CHECK(plan == sentinel);
    CHECK(printed.empty());
    if (st == FK_SUCCESS && plan != sentinel) fk_fftconv_plan_destroy(plan);
  }
  // Forward calls.
  for (int round = 0; round < 6; ++round) {
    auto rng = fkcpu::rng_for(0xF8000 + uint64_t(round));
    const DT dt = rand_dt(rng);
    const int64_t B = pick(rng, 1, 3), C = pick(rng, 2, 5), L = 2 * pick(rng, 1, 20) + 1;
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    o.mode = int32_t(round % 3);
    o.channels = C;
    o.seqlen = L;
    o.dtype = fktest::dl_dtype(dt);
    fk_fftconv_plan_t* plan = nullptr;
    REQUIRE(fk_fftconv_plan_create(fkcpu::cpu_context(2), &o, &plan) == FK_SUCCESS);
    std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
        plan, fk_fftconv_plan_destroy);
    HostTensor u = make_t(rng, dt, {B, C, L}), k = make_t(rng, rand_dt(rng), {C, L});
    HostTensor D = make_t(rng, rand_dt(rng), {C}), pre = make_t(rng, dt, {B, C, L});
    HostTensor post = make_t(rng, dt, {B, C, L}), y = make_t(rng, dt, {B, C, L});
    for (HostTensor* t : {std::addressof(u), std::addressof(k), std::addressof(D), std::addressof(pre), std::addressof(post)}) t->fill_normal(rng);
    y.poison();
    Attack at = make_attack({{"u", std::addressof(u), false, true},
                             {"k", std::addressof(k), false, true},
                             {"D", std::addressof(D), false, true},
                             {"pregate", std::addressof(pre), false, true},
                             {"postgate", std::addressof(post), false, true},
                             {"y", std::addressof(y), true, true}});
    fk_launch_t launch;
    const fk_fftconv_plan_t* pl = plan;
    at.reset_params = [&] {
      fk_launch_init(&launch);
      pl = plan;
    };
    at.call = [&] {
      auto& P = at.probes;
      return fk_fftconv_forward(pl, &launch, P[0].ptr(), P[1].ptr(), P[2].ptr(), P[3].ptr(),
                                P[4].ptr(), P[5].ptr());
    };
    auto& S = at.specials;
    S.push_back([&](std::mt19937_64& g) {
      const fk_context_t* ctx = nullptr;
      std::string w = break_launch(g, launch, &ctx);
      if (w == "context") {
        pl = nullptr;
        return std::string("plan");
      }
      return w;
    });
    S.push_back([&](std::mt19937_64& g) {
      Probe& pr = at.probes[size_t(pick(g, 0, int64_t(at.probes.size()) - 1))];
      pr.shape[pick(g, 0, pr.dl.ndim - 1)] += pick(g, 1, 3);
      return std::string("");
    });
    S.push_back([&](std::mt19937_64& g) {
      Probe& o2 = at.arg("y");
      o2.dl.data = const_cast<uint8_t*>(at.arg(std::vector<std::string>{"u", "k", "pregate", "postgate"}[size_t(pick(g, 0, 3))]).t->bytes.data());
      o2.dl.byte_offset = 0;
      return std::string("y");
    });
    attack(at, rng, 250);
  }
}

// =============================================================================================
// Extents whose products overflow 64 bits
// =============================================================================================

namespace {

// A DLTensor over `data` with the given extents and strides (NULL = compact).
struct RawTensor {
  std::vector<int64_t> shape, strides;
  DLTensor dl{};
  RawTensor(void* data, DT t, std::vector<int64_t> shp, std::vector<int64_t> str = {})
      : shape(std::move(shp)), strides(std::move(str)) {
    dl.data = data;
    dl.device = DLDevice{kDLCPU, 0};
    dl.ndim = int(shape.size());
    dl.dtype = fktest::dl_dtype(t);
    dl.shape = shape.data();
    dl.strides = strides.empty() ? nullptr : strides.data();
  }
  const DLTensor* operator&() const { return &dl; }
};

std::string last_message() { return fk_get_last_error_message(); }

}  // namespace

TEST_CASE("fuzz: products of extents that overflow 64 bits are refused",
          "[fuzz][validation][overflow]") {
  const fk_context_t* ctx = fkcpu::cpu_context(2);
  // Backing store for tensors that are refused before any element is read.
  std::vector<float> store(64, 0.0f);
  void* mem = store.data();
  std::vector<float> outbuf(64, 0.0f);
  const int64_t big = int64_t(1) << 32;  // big * big wraps to 0
  const char* variant = nullptr;

  // An empty tensor (one extent 0) whose other extents multiply past 2^63: every product of
  // extents the entry points form (nblocks * p, nblocks1 * q, ...) must stay meaningful.
  SECTION("monarch: w1 (2^32, 0, 2^32): nblocks1 * p wraps to 0") {
    RawTensor x(mem, DT::F32, {2, 0}), w1(mem, DT::F32, {big, 0, big}), w2(mem, DT::F32, {1, 3, 0});
    RawTensor out(outbuf.data(), DT::F32, {2, 3});
    const fk_status_t st = fk_monarch_select_kernel(ctx, nullptr, &x, &w1, &w2, nullptr, &out, &variant);
    INFO("status " << int(st) << ": " << last_message());
    CHECK(st == FK_ERROR_SHAPE_MISMATCH);
    CHECK(last_message().rfind("w1:", 0) == 0);
  }
  SECTION("monarch: w2 (2^32, 2^32, 0) is refused (element count)") {
    RawTensor x(mem, DT::F32, {2, 0}), w1(mem, DT::F32, {0, 1, 1}), w2(mem, DT::F32, {big, big, 0});
    RawTensor out(outbuf.data(), DT::F32, {2, 0});
    const fk_status_t st = fk_monarch_select_kernel(ctx, nullptr, &x, &w1, &w2, nullptr, &out, &variant);
    INFO("status " << int(st) << ": " << last_message());
    CHECK(st == FK_ERROR_SHAPE_MISMATCH);
    CHECK(last_message().rfind("w2:", 0) == 0);
  }
  SECTION("blockdiag: w (2^32, 0, 2^32): nblocks * p wraps to 0") {
    RawTensor x(mem, DT::F32, {2, 0}), w(mem, DT::F32, {big, 0, big});
    RawTensor out(outbuf.data(), DT::F32, {2, 0});
    const fk_status_t st = fk_blockdiag_linear_select_kernel(ctx, nullptr, &x, &w, nullptr, &out, &variant);
    INFO("status " << int(st) << ": " << last_message());
    CHECK(st == FK_ERROR_SHAPE_MISMATCH);
    CHECK(last_message().rfind("w:", 0) == 0);
  }
  SECTION("a 1-byte tensor whose span is exactly INT64_MAX elements") {
    // (span + 1) * element size must not wrap: fp8 a with a stride of INT64_MAX (d placed below
    // a in memory, so the overlap check does not catch it by accident).
    RawTensor a(outbuf.data() + 32, DT::E4M3, {2, 1}, {INT64_MAX, 1});
    RawTensor b(outbuf.data() + 40, DT::E4M3, {1, 2});
    RawTensor d(outbuf.data(), DT::F32, {2, 2});
    const fk_status_t st =
        fk_gemm_scaled_select_kernel(ctx, nullptr, &a, &b, nullptr, nullptr, nullptr, nullptr, &d, &variant);
    INFO("status " << int(st) << ": " << last_message());
    CHECK(st == FK_ERROR_SHAPE_MISMATCH);
    CHECK(last_message().rfind("a:", 0) == 0);
  }
  SECTION("varlen attention: more than INT32_MAX packed key rows names k") {
    const int64_t rows = int64_t(INT32_MAX) + 1;
    RawTensor q(mem, DT::F32, {2, 1, 1}), k(mem, DT::F32, {rows, 1, 1}), v(mem, DT::F32, {rows, 1, 1});
    RawTensor out(outbuf.data(), DT::F32, {2, 1, 1});
    std::vector<int32_t> cu{0, 2};
    RawTensor cuq(cu.data(), DT::I32, {2}), cuk(cu.data(), DT::I32, {2});
    const fk_status_t st =
        fk_attention_select_kernel(ctx, nullptr, &q, &k, &v, &cuq, &cuk, &out, nullptr, &variant);
    INFO("status " << int(st) << ": " << last_message());
    CHECK(st == FK_ERROR_SHAPE_MISMATCH);
    CHECK(last_message().rfind("k:", 0) == 0);
  }
}

// =============================================================================================
// Numerical edge cases
// =============================================================================================

namespace {

// Rows of a (rows, cols) row-major vector pair that differ beyond `tol` (relative to 1 + |ref|),
// or whose NaN/Inf pattern differs.
std::vector<int64_t> bad_rows(const std::vector<double>& got, const std::vector<double>& ref,
                              int64_t cols, double tol) {
  std::vector<int64_t> rows;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = (std::isnan(got[i]) && std::isnan(ref[i])) ||
                    (std::isinf(ref[i]) && got[i] == ref[i]) ||
                    (std::isfinite(got[i]) && std::isfinite(ref[i]) &&
                     std::fabs(got[i] - ref[i]) <= tol * (1 + std::fabs(ref[i])));
    if (!ok && (rows.empty() || rows.back() != int64_t(i) / cols)) rows.push_back(int64_t(i) / cols);
  }
  return rows;
}

}  // namespace

TEST_CASE("fuzz: attention numerical edge cases", "[fuzz][attention][edge]") {
  const fk_context_t* ctx = fkcpu::cpu_context(2);
  auto rng = fkcpu::rng_for(0xF9000);
  SECTION("softcap with scores far beyond fp16 range") {
    for (DT dt : {DT::F32, DT::BF16}) {
      const int64_t B = 2, S = 9, H = 2, D = 16;
      HostTensor q(dt, {B, S, H, D}), k(dt, {B, S, H, D}), v(dt, {B, S, H, D});
      HostTensor out(dt, {B, S, H, D}), lse(DT::F32, {B, H, S});
      q.fill_normal(rng, 1e15);
      k.fill_normal(rng, 1e15);
      v.fill_normal(rng);
      out.poison();
      lse.poison();
      fk_attention_params_t prm;
      fk_attention_params_init(&prm);
      prm.softcap = 5.0f;
      prm.softmax_scale = 1.0f;
      prm.causal = 1;
      REQUIRE(fk_attention_forward(ctx, nullptr, &prm, &q, &k, &v, nullptr, nullptr, &out, &lse) ==
              FK_SUCCESS);
      fkref::AttentionParams rp;
      rp.softcap = 5.0;
      rp.softmax_scale = 1.0;
      rp.causal = true;
      std::vector<double> ro, rl;
      fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), B, S, S, H, H, D, rp, ro, rl);
      check_output(out, ro, dt, "out");
      check_output(lse, rl, DT::F32, "lse", 10.0);
    }
  }
  SECTION("fully masked rows give out = 0 and lse = -inf, whatever the inputs hold") {
    // seqlen_q 6 > seqlen_k 3, window (0, 0): query row i sees key i - 3 only, so rows 0..2 see
    // nothing; k and v are huge so that any leak would show.
    const int64_t B = 1, SQ = 6, SK = 3, H = 3, HK = 1, D = 5;
    HostTensor q(DT::F32, {B, SQ, H, D}), k(DT::F32, {B, SK, HK, D}), v(DT::F32, {B, SK, HK, D});
    HostTensor out(DT::F32, {B, SQ, H, D}), lse(DT::F32, {B, H, SQ});
    q.fill_normal(rng);
    k.fill_normal(rng, 1e30);
    v.fill_normal(rng, 1e30);
    out.poison();
    lse.poison();
    fk_attention_params_t prm;
    fk_attention_params_init(&prm);
    prm.window_size_left = 0;
    prm.window_size_right = 0;
    prm.softmax_scale = 1e-30f;
    REQUIRE(fk_attention_forward(ctx, nullptr, &prm, &q, &k, &v, nullptr, nullptr, &out, &lse) ==
            FK_SUCCESS);
    for (int64_t i = 0; i < SQ; ++i)
      for (int64_t h = 0; h < H; ++h) {
        INFO("row " << i << " head " << h);
        if (i < SQ - SK) {
          CHECK(lse.get({0, h, i}) == -INFINITY);
          for (int64_t d = 0; d < D; ++d) CHECK(out.get({0, i, h, d}) == 0.0);
        } else {
          // One key: softmax weight 1, out = that key's value exactly, lse = its score.
          CHECK(std::isfinite(lse.get({0, h, i})));
          for (int64_t d = 0; d < D; ++d)
            CHECK(out.get({0, i, h, d}) == v.get({0, i - (SQ - SK), 0, d}));
        }
      }
  }
  SECTION("softmax_scale > 1 with large queries: every score fits fp32, so no NaN") {
    // The header leaves only scores that overflow fp32 unguarded. Here |q| ~ 1e20, scale 1e19,
    // |k| ~ 1e-25: the scores are ~1e14, but scale * q alone (~1e39) does not fit fp32.
    for (float softcap : {0.0f, 30.0f}) {
      const int64_t B = 1, S = 6, H = 2, D = 8;
      HostTensor q(DT::F32, {B, S, H, D}), k(DT::F32, {B, S, H, D}), v(DT::F32, {B, S, H, D});
      HostTensor out(DT::F32, {B, S, H, D}), lse(DT::F32, {B, H, S});
      q.fill_normal(rng, 1e20);
      k.fill_normal(rng, 1e-25);
      v.fill_normal(rng);
      out.poison();
      lse.poison();
      fk_attention_params_t prm;
      fk_attention_params_init(&prm);
      prm.softmax_scale = 1e19f;
      prm.softcap = softcap;
      REQUIRE(fk_attention_forward(ctx, nullptr, &prm, &q, &k, &v, nullptr, nullptr, &out, &lse) ==
              FK_SUCCESS);
      fkref::AttentionParams rp;
      rp.softmax_scale = 1e19f;
      rp.softcap = softcap;
      std::vector<double> ro, rl;
      fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), B, S, S, H, H, D, rp, ro, rl);
      INFO("softcap " << softcap);
      check_output(out, ro, DT::F32, "out");
      check_output(lse, rl, DT::F32, "lse");
    }
  }
  SECTION("a subnormal softcap (finite and > 0, so accepted) with zero scores") {
    // 1 / softcap overflows fp32 for softcap < ~2.9e-39; a zero score must still be capped to
    // softcap * tanh(0) = 0, not 0 * inf = NaN. Query rows 0 and 3 are zero vectors.
    for (float softcap : {1e-45f, 1e-40f, 2e-39f}) {
      const int64_t B = 1, S = 5, H = 1, D = 4;
      HostTensor q(DT::F32, {B, S, H, D}), k(DT::F32, {B, S, H, D}), v(DT::F32, {B, S, H, D});
      HostTensor out(DT::F32, {B, S, H, D}), lse(DT::F32, {B, H, S});
      q.fill_normal(rng);
      k.fill_normal(rng);
      v.fill_normal(rng);
      for (int64_t x = 0; x < D; ++x) {
        q.set({0, 0, 0, x}, 0.0);
        q.set({0, 3, 0, x}, 0.0);
      }
      out.poison();
      lse.poison();
      fk_attention_params_t prm;
      fk_attention_params_init(&prm);
      prm.softcap = softcap;
      REQUIRE(fk_attention_forward(ctx, nullptr, &prm, &q, &k, &v, nullptr, nullptr, &out, &lse) ==
              FK_SUCCESS);
      fkref::AttentionParams rp;
      rp.softcap = softcap;
      std::vector<double> ro, rl;
      fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), B, S, S, H, H, D, rp, ro, rl);
      INFO("softcap " << softcap);
      check_output(out, ro, DT::F32, "out");
      check_output(lse, rl, DT::F32, "lse");
    }
  }
  SECTION("a NaN in one query row stays in that row") {
    const int64_t B = 2, S = 7, H = 2, D = 8;
    HostTensor q(DT::F32, {B, S, H, D}), k(DT::F32, {B, S, H, D}), v(DT::F32, {B, S, H, D});
    HostTensor out(DT::F32, {B, S, H, D});
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    q.set({1, 3, 0, 2}, NAN);
    out.poison();
    REQUIRE(fk_attention_forward(ctx, nullptr, nullptr, &q, &k, &v, nullptr, nullptr, &out,
                                 nullptr) == FK_SUCCESS);
    std::vector<double> ro, rl;
    fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), B, S, S, H, H, D, {}, ro, rl);
    // Rows of (batch, seqlen, head) with head_dim columns: only (1, 3, 0) may differ.
    const std::vector<int64_t> bad = bad_rows(out.to_vector(), ro, D, 1e-4);
    CHECK(bad.empty());
    for (int64_t d = 0; d < D; ++d) CHECK(std::isnan(out.get({1, 3, 0, d})));
  }
}

TEST_CASE("fuzz: GEMM numerical edge cases", "[fuzz][gemm][edge]") {
  const fk_context_t* ctx = fkcpu::cpu_context(2);
  auto rng = fkcpu::rng_for(0xFA000);
  SECTION("beta = 0 never reads C (NaN there), any K including 0, a/b without data at K = 0") {
    for (int64_t K : {0, 1, 37}) {
      for (int act = 0; act <= 3; ++act) {
        const int64_t M = 13, N = 11;
        HostTensor a(DT::F32, {M, K}), b(DT::F32, {K, N}), c(DT::F32, {M, N}), d(DT::F32, {M, N});
        HostTensor bias(DT::F32, {N});
        a.fill_normal(rng);
        b.fill_normal(rng);
        bias.fill_normal(rng);
        c.poison();  // NaN everywhere
        d.poison();
        if (K == 0) a.dl.data = b.dl.data = nullptr;
        fk_gemm_params_t prm;
        fk_gemm_params_init(&prm);
        prm.activation = act;
        prm.alpha = 0.75f;
        REQUIRE(fk_gemm(ctx, nullptr, &prm, &a, &b, &c, &bias, &d) == FK_SUCCESS);
        fkref::GemmParams rp;
        rp.alpha = 0.75;
        rp.activation = act;
        const std::vector<double> bv = bias.to_vector();
        const std::vector<double> ref =
            fkref::gemm(a.to_vector(), 1, b.to_vector(), 1, nullptr, 1, &bv, 1, M, N, K, rp);
        INFO("K " << K << " activation " << act);
        check_output(d, ref, DT::F32, "d");
      }
    }
  }
  SECTION("alpha = 0 and beta = 0 give exactly act(bias) (C holds NaN)") {
    // The header defines t = alpha * acc + beta * c + bias and promises only that C is not read
    // when beta == 0; A and B are read even when alpha == 0 (no BLAS-style quick return), so
    // inputs whose fp32 sum overflows (|acc| = inf) would give 0 * inf = NaN here. With sums
    // that fit, alpha * acc is a signed zero and d is act(bias) rounded to d's dtype, exactly.
    const int64_t M = 5, N = 6, K = 7;
    for (int act = 0; act <= 3; ++act) {
      HostTensor a(DT::BF16, {M, K}), b(DT::BF16, {K, N}), c(DT::BF16, {M, N}), d(DT::BF16, {M, N});
      HostTensor bias(DT::F16, {N});
      a.fill_normal(rng, 1e15);
      b.fill_normal(rng, 1e15);
      bias.fill_normal(rng);
      c.poison();
      d.poison();
      fk_gemm_params_t prm;
      fk_gemm_params_init(&prm);
      prm.alpha = 0.0f;
      prm.activation = act;
      REQUIRE(fk_gemm(ctx, nullptr, &prm, &a, &b, &c, &bias, &d) == FK_SUCCESS);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          const double want = fkref::round_to(DT::BF16, fkref::activation(act, bias.get({n})));
          INFO("activation " << act << " m " << m << " n " << n);
          CHECK(std::fabs(d.get({m, n}) - want) <= 1e-6 + 8e-3 * std::fabs(want));
        }
    }
  }
  SECTION("activations of huge and tiny pre-activations (K = 0: d = act(bias))") {
    const int64_t M = 3;
    const std::vector<double> vals{1e30, -1e30, 3e38, -3e38, 1e13, -1e13, 1e-30, -1e-30, 1e-45, 0.0};
    const int64_t N = int64_t(vals.size());
    for (int act = 0; act <= 3; ++act) {
      HostTensor a(DT::F32, {M, 0}), b(DT::F32, {0, N}), d(DT::F32, {M, N}), bias(DT::F32, {N});
      for (int64_t n = 0; n < N; ++n) bias.set({n}, vals[size_t(n)]);
      d.poison();
      fk_gemm_params_t prm;
      fk_gemm_params_init(&prm);
      prm.activation = act;
      REQUIRE(fk_gemm(ctx, nullptr, &prm, &a, &b, nullptr, &bias, &d) == FK_SUCCESS);
      for (int64_t n = 0; n < N; ++n) {
        const double x = bias.get({n});
        const double want = fkref::round_to(DT::F32, fkref::activation(act, x));
        INFO("activation " << act << " x " << x << " got " << d.get({0, n}) << " want " << want);
        CHECK(std::isfinite(d.get({0, n})));
        CHECK(std::fabs(d.get({0, n}) - want) <= 1e-6 * std::fabs(want) + 1e-30);
      }
    }
  }
  SECTION("a NaN or Inf in one row of A stays in that row of D") {
    for (double bad : {double(NAN), double(INFINITY)}) {
      const int64_t M = 70, N = 40, K = 300;  // several cache blocks on each side
      HostTensor a(DT::F32, {M, K}), b(DT::F32, {K, N}), d(DT::F32, {M, N});
      a.fill_normal(rng);
      b.fill_normal(rng);
      a.set({33, 150}, bad);
      d.poison();
      REQUIRE(fk_gemm(ctx, nullptr, nullptr, &a, &b, nullptr, nullptr, &d) == FK_SUCCESS);
      const std::vector<double> ref =
          fkref::gemm(a.to_vector(), 1, b.to_vector(), 1, nullptr, 1, nullptr, 1, M, N, K, {});
      const std::vector<int64_t> rows = bad_rows(d.to_vector(), ref, N, 1e-4);
      INFO("bad value " << bad);
      CHECK(rows.empty());
    }
  }
}

TEST_CASE("fuzz: FFT convolution and Monarch keep a NaN in its own row", "[fuzz][edge]") {
  const fk_context_t* ctx = fkcpu::cpu_context(2);
  auto rng = fkcpu::rng_for(0xFB000);
  SECTION("fftconv: NaN in u[b0, c0, :] leaves every other (batch, channel) row exact") {
    for (int mode = 0; mode <= 2; ++mode)
      for (int64_t fl : {int64_t(0), int64_t(5)}) {  // FFT path and direct path
        const int64_t B = 3, C = 5, L = 301;
        fk_fftconv_plan_options_t o;
        fk_fftconv_plan_options_init(&o);
        o.mode = mode;
        o.channels = C;
        o.seqlen = L;
        o.filter_len = fl;
        fk_fftconv_plan_t* plan = nullptr;
        REQUIRE(fk_fftconv_plan_create(ctx, &o, &plan) == FK_SUCCESS);
        std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
            plan, fk_fftconv_plan_destroy);
        const int64_t flen = fl ? fl : L;
        HostTensor u(DT::F32, {B, C, L}), k(DT::F32, {C, flen}), y(DT::F32, {B, C, L});
        u.fill_normal(rng);
        k.fill_normal(rng, 0.1);
        u.set({1, 2, 100}, NAN);
        y.poison();
        REQUIRE(fk_fftconv_forward(plan, nullptr, &u, &k, nullptr, nullptr, nullptr, &y) ==
                FK_SUCCESS);
        fk_fftconv_plan_options_t r;
        fk_fftconv_plan_options_init(&r);
        REQUIRE(fk_fftconv_plan_get_options(plan, &r) == FK_SUCCESS);
        const std::vector<double> ref = fkref::fftconv(u.to_vector(), k.to_vector(), nullptr, nullptr,
                                                       nullptr, B, C, L, flen, fkref::ConvMode(mode),
                                                       r.fft_size);
        const std::vector<double> got = y.to_vector();
        INFO("mode " << mode << " filter_len " << fl);
        for (int64_t b = 0; b < B; ++b)
          for (int64_t c = 0; c < C; ++c) {
            if (b == 1 && c == 2) continue;
            std::vector<double> g(got.begin() + (b * C + c) * L, got.begin() + (b * C + c + 1) * L);
            std::vector<double> rr(ref.begin() + (b * C + c) * L, ref.begin() + (b * C + c + 1) * L);
            INFO("row " << b << "," << c);
            CHECK(bad_rows(g, rr, L, 1e-4).empty());
          }
      }
  }
  SECTION("monarch: NaN in one token stays in that token's output row") {
    const int64_t T = 9, nb = 4, q = 4, p = 4;
    HostTensor x(DT::F32, {T, nb * p}), w1(DT::F32, {nb, q, p}), w2(DT::F32, {nb, q, q});
    HostTensor out(DT::F32, {T, nb * q});
    x.fill_normal(rng);
    w1.fill_normal(rng);
    w2.fill_normal(rng);
    x.set({4, 7}, NAN);
    out.poison();
    REQUIRE(fk_monarch(ctx, nullptr, nullptr, &x, &w1, &w2, nullptr, &out) == FK_SUCCESS);
    const std::vector<double> ref = fkref::monarch(x.to_vector(), w1.to_vector(), w2.to_vector(),
                                                   nullptr, T, nb, q, p, nb, q, q);
    const std::vector<int64_t> rows = bad_rows(out.to_vector(), ref, nb * q, 1e-4);
    CHECK(rows.empty());
  }
}

// =============================================================================================
// Concurrency: one context and one plan shared by several caller threads
// =============================================================================================

TEST_CASE("fuzz: concurrent calls on one context and one constant-filter plan",
          "[fuzz][fftconv][threads]") {
  // The header: contexts may be shared between threads; a plan may be used from several threads
  // at once as long as each call has its own output. Every thread brings its own filter, so the
  // plan's cached spectrum (FK_FFTCONV_FILTER_CONSTANT) keeps being replaced under the others.
  const fk_context_t* ctx = fkcpu::cpu_context(2);
  const int kThreads = 4, kCalls = 12;
  const int64_t B = 2, C = 3, L = 257;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = FK_FFTCONV_CAUSAL;
  o.channels = C;
  o.seqlen = L;
  o.flags = FK_FFTCONV_FILTER_CONSTANT;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE(fk_fftconv_plan_create(ctx, &o, &plan) == FK_SUCCESS);
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
      plan, fk_fftconv_plan_destroy);
  fk_fftconv_plan_options_t r;
  fk_fftconv_plan_options_init(&r);
  REQUIRE(fk_fftconv_plan_get_options(plan, &r) == FK_SUCCESS);
  auto rng = fkcpu::rng_for(0xFC000);
  std::vector<HostTensor> u(kThreads), k(kThreads), y(kThreads);
  std::vector<std::vector<double>> ref(kThreads);
  // GEMMs on the same context from the same threads.
  std::vector<HostTensor> a(kThreads), b(kThreads), d(kThreads);
  std::vector<std::vector<double>> gref(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    u[size_t(t)].init(DT::F32, {B, C, L});
    k[size_t(t)].init(DT::F32, {C, L});
    y[size_t(t)].init(DT::F32, {B, C, L});
    u[size_t(t)].fill_normal(rng);
    k[size_t(t)].fill_normal(rng, 0.1);
    ref[size_t(t)] = fkref::fftconv(u[size_t(t)].to_vector(), k[size_t(t)].to_vector(), nullptr,
                                    nullptr, nullptr, B, C, L, L, fkref::ConvMode::Causal,
                                    r.fft_size);
    a[size_t(t)].init(DT::F32, {33, 47});
    b[size_t(t)].init(DT::F32, {47, 29});
    d[size_t(t)].init(DT::F32, {33, 29});
    a[size_t(t)].fill_normal(rng);
    b[size_t(t)].fill_normal(rng);
    gref[size_t(t)] = fkref::gemm(a[size_t(t)].to_vector(), 1, b[size_t(t)].to_vector(), 1,
                                  nullptr, 1, nullptr, 1, 33, 29, 47, {});
  }
  std::vector<double> worst(kThreads, 0.0), gworst(kThreads, 0.0);
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < kThreads; ++t)
    pool.emplace_back([&, t] {
      for (int call = 0; call < kCalls; ++call) {
        HostTensor& yt = y[size_t(t)];
        yt.poison();
        if (fk_fftconv_forward(plan, nullptr, u[size_t(t)].view(), k[size_t(t)].view(), nullptr,
                               nullptr, nullptr, yt.view()) != FK_SUCCESS)
          ++failures[size_t(t)];
        const std::vector<double> got = yt.to_vector();
        for (size_t i = 0; i < got.size(); ++i)
          worst[size_t(t)] = std::max(worst[size_t(t)], std::isnan(got[i]) ? INFINITY
                                                                          : std::fabs(got[i] - ref[size_t(t)][i]));
        HostTensor& dt = d[size_t(t)];
        dt.poison();
        if (fk_gemm(ctx, nullptr, nullptr, a[size_t(t)].view(), b[size_t(t)].view(), nullptr,
                    nullptr, dt.view()) != FK_SUCCESS)
          ++failures[size_t(t)];
        const std::vector<double> gd = dt.to_vector();
        for (size_t i = 0; i < gd.size(); ++i)
          gworst[size_t(t)] = std::max(gworst[size_t(t)], std::isnan(gd[i]) ? INFINITY
                                                                           : std::fabs(gd[i] - gref[size_t(t)][i]));
      }
    });
  for (auto& th : pool) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(failures[size_t(t)] == 0);
    CHECK(worst[size_t(t)] < 1e-4);
    CHECK(gworst[size_t(t)] < 1e-4);
  }
}
