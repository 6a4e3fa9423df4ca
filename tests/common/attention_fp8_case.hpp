// The tensors of an fk_attention_fp8_forward call (host side), shared by the CPU and GPU
// suites: e4m3fn q, k, v with random (batch, nheads_k) descale factors, batched or varlen, and
// the float64 reference's view of them (the dequantised values) plus the bf16 tensors the
// library promises to compute on.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "reference/reference.hpp"
#include "test_util.hpp"

namespace fktest {

// The fp8 call's tensors (batched or varlen) with random descales, and the dequantised values.
struct Fp8AttnCase {
  int64_t batch = 3, seqlen_q = 21, seqlen_k = 37, nheads = 4, nheads_k = 2, head_dim = 24;
  std::vector<int32_t> cu_q, cu_k;  // varlen when not empty
  bool padded = false;              // non-compact strides on every tensor, descales included
  bool v_padded = false;            // non-compact strides on v alone (batched), padded by v_pad
  int64_t v_pad = 1;                // elements added per dimension (16: still 16-byte strides)
  bool descales = true;             // false: NULL descales (factor 1)
  fk_attention_params_t prm;

  HostTensor q, k, v, dq, dk, dv, out, lse, cq, ck;

  bool varlen() const { return !cu_q.empty(); }

  static HostTensor make(DT t, std::vector<int64_t> shape, bool padded, int64_t pad) {
    if (!padded) return HostTensor(t, shape);
    std::vector<int64_t> st(shape.size(), 1);
    for (int i = int(shape.size()) - 2; i >= 0; --i)
      st[size_t(i)] = st[size_t(i) + 1] * std::max<int64_t>(shape[size_t(i) + 1], 1) + pad;
    return HostTensor(t, shape, st);
  }

  void build(std::mt19937_64& rng) {
    if (varlen()) {
      batch = int64_t(cu_q.size()) - 1;
      const int64_t tq = cu_q.back(), tk = cu_k.back();
      q = make(DT::E4M3, {tq, nheads, head_dim}, padded, 3);
      k = make(DT::E4M3, {tk, nheads_k, head_dim}, padded, 5);
      v = make(DT::E4M3, {tk, nheads_k, head_dim}, padded, 1);
      out = make(DT::BF16, {tq, nheads, head_dim}, padded, 2);
      lse = make(DT::F32, {nheads, tq}, padded, 4);
      cq = fktest::int32_tensor(cu_q);
      ck = fktest::int32_tensor(cu_k);
    } else {
      q = make(DT::E4M3, {batch, seqlen_q, nheads, head_dim}, padded, 3);
      k = make(DT::E4M3, {batch, seqlen_k, nheads_k, head_dim}, padded, 5);
      v = make(DT::E4M3, {batch, seqlen_k, nheads_k, head_dim}, padded || v_padded,
               padded ? 1 : v_pad);
      out = make(DT::BF16, {batch, seqlen_q, nheads, head_dim}, padded, 2);
      lse = make(DT::F32, {batch, nheads, seqlen_q}, padded, 4);
    }
    // Inputs as an fp8 quantiser leaves them: values up to a few units, many exponents.
    q.fill_normal(rng, 2.0);
    k.fill_normal(rng, 2.0);
    v.fill_normal(rng, 2.0);
    for (HostTensor* d : {std::addressof(dq), std::addressof(dk), std::addressof(dv)}) {
      *d = make(DT::F32, {batch, nheads_k}, padded, 3);
      d->fill_uniform(rng, 0.05, 0.6);
    }
    out.poison();
    lse.poison();
    fk_attention_params_init(&prm);
  }

  // Sequence of packed row r (varlen) or of row index r of the batched (batch * seqlen) rows.
  int64_t sequence(const std::vector<int32_t>& cu, int64_t seqlen, int64_t r) const {
    if (cu.empty()) return r / seqlen;
    int64_t b = 0;
    while (b + 1 < batch && cu[size_t(b + 1)] <= r) ++b;
    return b;
  }

  // x's values times their factors, row-major over x's logical shape (rows, heads, head_dim).
  std::vector<double> dequantised(const HostTensor& x, const HostTensor& d, bool is_q) const {
    std::vector<double> vals = x.to_vector();
    const int64_t heads = is_q ? nheads : nheads_k, group = is_q ? nheads / nheads_k : 1;
    const int64_t rows = int64_t(vals.size()) / (heads * head_dim);
    const std::vector<int32_t>& cu = is_q ? cu_q : cu_k;
    const int64_t seqlen = is_q ? seqlen_q : seqlen_k;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t b = sequence(cu, seqlen, r);
      for (int64_t h = 0; h < heads; ++h) {
        const double s = descales ? d.get({b, h / group}) : 1.0;
        for (int64_t e = 0; e < head_dim; ++e) vals[size_t((r * heads + h) * head_dim + e)] *= s;
      }
    }
    return vals;
  }

  fkref::AttentionParams ref_params() const {
    fkref::AttentionParams r;
    r.softmax_scale = prm.softmax_scale;
    r.causal = prm.causal != 0;
    r.window_left = prm.window_size_left;
    r.window_right = prm.window_size_right;
    r.softcap = prm.softcap;
    return r;
  }

  // The float64 reference on the dequantised inputs: out and lse, row-major. round_p: the
  // value P takes in the P V product (fkref::AttentionParams::round_p; nullptr: exact);
  // abs_v: |v| in place of v (for error bounds).
  void reference(std::vector<double>& ref_out, std::vector<double>& ref_lse,
                 double (*round_p)(double) = nullptr, bool abs_v = false) const {
    const std::vector<double> qr = dequantised(q, dq, true), kr = dequantised(k, dk, false);
    std::vector<double> vr = dequantised(v, dv, false);
    if (abs_v)
      for (double& x : vr) x = std::fabs(x);
    fkref::AttentionParams rp = ref_params();
    rp.round_p = round_p;
    if (varlen()) {
      fkref::attention_varlen(qr, kr, vr, cu_q, cu_k, nheads, nheads_k, head_dim, rp, ref_out,
                              ref_lse);
    } else {
      fkref::attention(qr, kr, vr, batch, seqlen_q, seqlen_k, nheads, nheads_k, head_dim, rp,
                       ref_out, ref_lse);
    }
  }

  // P rounded to the nearest e4m3 value, as the fp8 tensor-core kernel feeds it to P V.
  static double e4m3_round(double x) { return fp8_value(fp8_encode(x, true), true); }

  // The bf16 tensors the library promises to compute on: dequantised, rounded once to bf16.
  HostTensor bf16_copy(const HostTensor& x, const HostTensor& d, bool is_q) const {
    HostTensor c(DT::BF16, x.shape);
    const std::vector<double> vals = dequantised(x, d, is_q);
    size_t i = 0;
    c.for_each([&](const std::vector<int64_t>& idx) { c.set(idx, vals[i++]); });
    return c;
  }
};

// Whether the Hopper fp8 kernel transposes V tiles in shared memory for this batched call (and
// so needs no scratch for a v on the copy engine's 16-byte rule), by flashkit.h's rule:
// head_dim 128 always; head_dim 256 when R = (nheads / nheads_k) x 128 x (the keys each 128-row
// query tile attends, from its first row's lowest to its last row's highest visible key,
// summed over the tiles) / seqlen_k is at most 640 (here summed over every tile; the library
// samples 64 tiles, so the cases that use this stay far from 640).
// FLASHKIT_SM90_FP8_VT=0 / 2 (read once per process by the library) give head_dim 256 the
// V^T pass / the transposition at every size.
inline bool fp8_vt_in_kernel(const Fp8AttnCase& c) {
  if (c.head_dim != 256) return true;
  const char* e = std::getenv("FLASHKIT_SM90_FP8_VT");
  if (e != nullptr && e[0] == '0') return false;
  if (e != nullptr && e[0] == '2') return true;
  const int64_t sq = c.seqlen_q, sk = c.seqlen_k, off = sk - sq;
  const int64_t wl = c.prm.window_size_left, wr = c.prm.causal ? 0 : c.prm.window_size_right;
  double keys = 0;
  for (int64_t first = 0; first < sq; first += 128) {
    const int64_t last = std::min(sq - 1, first + 127);
    const int64_t hi = wr < 0 ? sk - 1 : std::min(sk - 1, last + off + wr);
    const int64_t lo = wl < 0 ? 0 : std::max<int64_t>(0, first + off - wl);
    keys += double(std::max<int64_t>(0, hi - lo + 1));
  }
  return double(c.nheads / c.nheads_k) * 128.0 * keys / double(sk) <= 640.0;
}

}  // namespace fktest
