// Plain float64 reference implementations of every flashkit operation: the oracle that every
// backend (CPU and CUDA) is tested against. Written from the definitions in
// include/flashkit/flashkit.h only, deliberately naive (direct loops, no blocking, no FFT, no
// online softmax) so that it shares no algorithm, and no code, with src/.
//
// Conventions of every function here:
// - Tensors are std::vector<double> holding the *logical* elements in compact row-major order
//   of the shape named in the comment. fktest::HostTensor::to_vector() produces exactly that
//   from any strided (padded) tensor, so a test does
//       auto ref = fkref::gemm(a.to_vector(), ...);
//       auto st = fktest::compare(d.to_vector(), ref);
// - Optional operands are passed as pointers (nullptr = absent) or, where noted, empty vectors.
// - Inputs are used as given: feed the values actually stored in the (fp16/bf16) tensors, so the
//   reference is the exact result on the quantised inputs.
// - Results are returned (or written to out-parameters) as compact row-major doubles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "test_util.hpp"

namespace fkref {

// Rounds a double to the nearest value representable in `t` (round to nearest even), e.g. to
// emulate "the same math done naively in the input dtype" for error budgets.
inline double round_to(fktest::DT t, double x) {
  switch (t) {
    case fktest::DT::F32: return double(float(x));
    case fktest::DT::F16: return fktest::half_bits_to_float(fktest::float_to_half_bits(float(x)));
    case fktest::DT::BF16: return fktest::bf16_bits_to_float(fktest::float_to_bf16_bits(float(x)));
    case fktest::DT::I32: return std::nearbyint(x);
    case fktest::DT::E4M3: return fktest::fp8_value(fktest::fp8_encode(x, true), true);
    case fktest::DT::E5M2: return fktest::fp8_value(fktest::fp8_encode(x, false), false);
  }
  return x;
}

// =============================================================================================
// Attention
// =============================================================================================

// Options, with the public API's meaning (fk_attention_params_t).
struct AttentionParams {
  double softmax_scale = std::numeric_limits<double>::quiet_NaN();  // NaN: 1/sqrt(head_dim)
  bool causal = false;
  int64_t window_left = -1;   // -1: unbounded
  int64_t window_right = -1;  // -1: unbounded; causal forces 0
  double softcap = 0;         // 0: off
  // The value each probability P = exp(s - rowmax) takes in the P V product, the row sums
  // keeping the exact P (nullptr: exact). A low-precision P (the fp8 forward rounds P to e4m3,
  // FlashAttention-3 Section 3.3) gives the error budget of the same math done naively.
  double (*round_p)(double) = nullptr;
};

namespace detail {

// One (sequence, head) pair: rows [0, lq) of q against rows [0, lk) of k/v. Element (i, d) of
// q is q[q0 + i*q_rs + d]; likewise k, v, out. lse_out(i) receives row i's log-sum-exp.
template <class LseStore>
inline void attention_one(const std::vector<double>& q, int64_t q0, int64_t q_rs,
                          const std::vector<double>& k, int64_t k0, int64_t k_rs,
                          const std::vector<double>& v, int64_t v0, int64_t v_rs,
                          std::vector<double>& out, int64_t o0, int64_t o_rs, int64_t lq,
                          int64_t lk, int64_t d, const AttentionParams& p, LseStore lse_out) {
  const double scale = std::isnan(p.softmax_scale) ? 1.0 / std::sqrt(double(d)) : p.softmax_scale;
  const int64_t wl = p.window_left;
  const int64_t wr = p.causal ? 0 : p.window_right;
  std::vector<double> s(size_t(std::max<int64_t>(lk, 1)));
  std::vector<char> keep(size_t(std::max<int64_t>(lk, 1)));
  for (int64_t i = 0; i < lq; ++i) {
    const int64_t pos = i + lk - lq;  // bottom-right alignment
    double mx = -std::numeric_limits<double>::infinity();
    bool any = false;
    for (int64_t j = 0; j < lk; ++j) {
      double dot = 0;
      for (int64_t x = 0; x < d; ++x) dot += q[size_t(q0 + i * q_rs + x)] * k[size_t(k0 + j * k_rs + x)];
      double sc = scale * dot;
      if (p.softcap > 0) sc = p.softcap * std::tanh(sc / p.softcap);
      bool ok = true;
      if (wl >= 0 && j < pos - wl) ok = false;
      if (wr >= 0 && j > pos + wr) ok = false;
      keep[size_t(j)] = ok;
      s[size_t(j)] = sc;
      if (ok) {
        any = true;
        mx = std::max(mx, sc);
      }
    }
    if (!any) {
      for (int64_t x = 0; x < d; ++x) out[size_t(o0 + i * o_rs + x)] = 0.0;
      lse_out(i, -std::numeric_limits<double>::infinity());
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < lk; ++j) {
      s[size_t(j)] = keep[size_t(j)] ? std::exp(s[size_t(j)] - mx) : 0.0;
      sum += s[size_t(j)];
    }
    if (p.round_p)  // the row sum above keeps the exact P
      for (int64_t j = 0; j < lk; ++j) s[size_t(j)] = p.round_p(s[size_t(j)]);
    for (int64_t x = 0; x < d; ++x) {
      double acc = 0;
      for (int64_t j = 0; j < lk; ++j) acc += s[size_t(j)] * v[size_t(v0 + j * v_rs + x)];
      out[size_t(o0 + i * o_rs + x)] = acc / sum;
    }
    lse_out(i, mx + std::log(sum));
  }
}

}  // namespace detail

// Batched attention.
//   q   (batch, seqlen_q, nheads,   head_dim)
//   k,v (batch, seqlen_k, nheads_k, head_dim)
//   out (batch, seqlen_q, nheads,   head_dim)       [resized here]
//   lse (batch, nheads, seqlen_q), natural log; -inf for rows that see no key  [resized here]
inline void attention(const std::vector<double>& q, const std::vector<double>& k,
                      const std::vector<double>& v, int64_t batch, int64_t seqlen_q,
                      int64_t seqlen_k, int64_t nheads, int64_t nheads_k, int64_t head_dim,
                      const AttentionParams& p, std::vector<double>& out,
                      std::vector<double>& lse) {
  out.assign(size_t(batch * seqlen_q * nheads * head_dim), 0.0);
  lse.assign(size_t(batch * nheads * seqlen_q), 0.0);
  const int64_t group = nheads / nheads_k;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < nheads; ++h) {
      const int64_t hk = h / group;
      const int64_t q0 = (b * seqlen_q * nheads + h) * head_dim;
      const int64_t k0 = (b * seqlen_k * nheads_k + hk) * head_dim;
      const int64_t l0 = (b * nheads + h) * seqlen_q;
      detail::attention_one(q, q0, nheads * head_dim, k, k0, nheads_k * head_dim, v, k0,
                            nheads_k * head_dim, out, q0, nheads * head_dim, seqlen_q, seqlen_k,
                            head_dim, p, [&](int64_t i, double l) { lse[size_t(l0 + i)] = l; });
    }
}

// Variable-length attention.
//   q, out (total_q, nheads, head_dim); k, v (total_k, nheads_k, head_dim)
//   cu_q, cu_k (batch + 1): sequence b is rows [cu[b], cu[b+1])
//   lse (nheads, total_q)                            [out and lse resized here]
inline void attention_varlen(const std::vector<double>& q, const std::vector<double>& k,
                             const std::vector<double>& v, const std::vector<int32_t>& cu_q,
                             const std::vector<int32_t>& cu_k, int64_t nheads, int64_t nheads_k,
                             int64_t head_dim, const AttentionParams& p,
                             std::vector<double>& out, std::vector<double>& lse) {
  const int64_t total_q = cu_q.empty() ? 0 : cu_q.back();
  out.assign(size_t(total_q * nheads * head_dim), 0.0);
  lse.assign(size_t(nheads * total_q), 0.0);
  const int64_t group = nheads / nheads_k;
  const int64_t batch = int64_t(cu_q.size()) - 1;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t rq = cu_q[size_t(b)], lq = cu_q[size_t(b + 1)] - rq;
    const int64_t rk = cu_k[size_t(b)], lk = cu_k[size_t(b + 1)] - rk;
    for (int64_t h = 0; h < nheads; ++h) {
      const int64_t hk = h / group;
      const int64_t q0 = (rq * nheads + h) * head_dim;
      const int64_t k0 = (rk * nheads_k + hk) * head_dim;
      const int64_t l0 = h * total_q + rq;
      detail::attention_one(q, q0, nheads * head_dim, k, k0, nheads_k * head_dim, v, k0,
                            nheads_k * head_dim, out, q0, nheads * head_dim, lq, lk, head_dim, p,
                            [&](int64_t i, double l) { lse[size_t(l0 + i)] = l; });
    }
  }
}

// =============================================================================================
// GEMM
// =============================================================================================

// Activation codes are fk_activation_t's values.
inline double activation(int act, double x) {
  switch (act) {
    case 1: return x < 0 ? 0.0 : x;  // ReLU (NaN stays NaN, as torch.relu)
    case 2: {  // GELU, tanh approximation: 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)), no cancellation
      if (x == -HUGE_VAL) return 0.0;  // the limit
      const double c = std::sqrt(2.0 / 3.14159265358979323846);
      return x / (1.0 + std::exp(-2.0 * c * (x + 0.044715 * x * x * x)));
    }
    case 3:  // exact GELU, 0.5 x erfc(-x / sqrt(2)) (no cancellation in the negative tail)
      if (x == -HUGE_VAL) return 0.0;
      return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    default: return x;
  }
}

struct GemmParams {
  bool trans_a = false;  // a stored (K, M)
  bool trans_b = false;  // b stored (N, K)
  double alpha = 1, beta = 0;
  int activation = 0;  // fk_activation_t
};

// D = act(alpha * op(A) op(B) + beta * C + bias), batched with broadcast.
//   a    (a_batch, M, K), or (a_batch, K, M) when trans_a; a_batch is 1 (broadcast) or batch
//   b    (b_batch, K, N), or (b_batch, N, K) when trans_b; b_batch is 1 or batch
//   c    nullptr or (c_batch, M, N), c_batch 1 or batch; read only when beta != 0
//   bias nullptr or (N,)
// Returns d (batch, M, N).
inline std::vector<double> gemm(const std::vector<double>& a, int64_t a_batch,
                                const std::vector<double>& b, int64_t b_batch,
                                const std::vector<double>* c, int64_t c_batch,
                                const std::vector<double>* bias, int64_t batch, int64_t M,
                                int64_t N, int64_t K, const GemmParams& p) {
  std::vector<double> d(size_t(batch * M * N));
  for (int64_t bt = 0; bt < batch; ++bt) {
    const int64_t ab = a_batch == 1 ? 0 : bt, bb = b_batch == 1 ? 0 : bt,
                  cb = c_batch == 1 ? 0 : bt;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t kk = 0; kk < K; ++kk) {
          const double av = p.trans_a ? a[size_t((ab * K + kk) * M + m)] : a[size_t((ab * M + m) * K + kk)];
          const double bv = p.trans_b ? b[size_t((bb * N + n) * K + kk)] : b[size_t((bb * K + kk) * N + n)];
          acc += av * bv;
        }
        double t = p.alpha * acc;
        if (c && p.beta != 0) t += p.beta * (*c)[size_t((cb * M + m) * N + n)];
        if (bias) t += (*bias)[size_t(n)];
        d[size_t((bt * M + m) * N + n)] = activation(p.activation, t);
      }
  }
  return d;
}

// =============================================================================================
// Monarch and block-diagonal linear
// =============================================================================================

// Block-diagonal linear: out[t, i*q + a] = sum_c w[i, a, c] * x[t, i*p + c] (+ bias[i*q + a]).
//   x (tokens, nblocks*p), w (nblocks, q, p), bias nullptr or (nblocks*q,).
// Returns out (tokens, nblocks*q).
inline std::vector<double> blockdiag(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>* bias, int64_t tokens,
                                     int64_t nblocks, int64_t q, int64_t p) {
  std::vector<double> out(size_t(tokens * nblocks * q));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t i = 0; i < nblocks; ++i)
      for (int64_t a = 0; a < q; ++a) {
        double acc = 0;
        for (int64_t c = 0; c < p; ++c)
          acc += w[size_t((i * q + a) * p + c)] * x[size_t(t * nblocks * p + i * p + c)];
        if (bias) acc += (*bias)[size_t(i * q + a)];
        out[size_t(t * nblocks * q + i * q + a)] = acc;
      }
  return out;
}

// Two-factor Monarch, m2's blockdiag_butterfly_multiply(x, w1, w2), exactly as the header's
// monarch group writes it:
//   y1[t, i*q + a]          = sum_c w1[i, a, c] * x[t, i*p + c]
//   z[t, j, b]              = y1[t, b*nblocks2 + j]            (j < nblocks2, b < r)
//   out[t, m*nblocks2 + j]  = sum_b w2[j, m, b] * z[t, j, b]   (+ bias[m*nblocks2 + j])
//   x (tokens, nblocks1*p), w1 (nblocks1, q, p), w2 (nblocks2, s, r), nblocks1*q == nblocks2*r,
//   bias nullptr or (nblocks2*s,).
// Returns out (tokens, nblocks2*s).
inline std::vector<double> monarch(const std::vector<double>& x, const std::vector<double>& w1,
                                   const std::vector<double>& w2,
                                   const std::vector<double>* bias, int64_t tokens,
                                   int64_t nblocks1, int64_t q, int64_t p, int64_t nblocks2,
                                   int64_t s, int64_t r) {
  if (nblocks1 * q != nblocks2 * r) throw std::invalid_argument("monarch: nblocks1*q != nblocks2*r");
  const int64_t mid = nblocks1 * q;
  std::vector<double> out(size_t(tokens * nblocks2 * s));
  std::vector<double> y1(static_cast<size_t>(mid));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < nblocks1; ++i)
      for (int64_t a = 0; a < q; ++a) {
        double acc = 0;
        for (int64_t c = 0; c < p; ++c)
          acc += w1[size_t((i * q + a) * p + c)] * x[size_t(t * nblocks1 * p + i * p + c)];
        y1[size_t(i * q + a)] = acc;
      }
    for (int64_t j = 0; j < nblocks2; ++j)
      for (int64_t m = 0; m < s; ++m) {
        double acc = 0;
        for (int64_t bb = 0; bb < r; ++bb)
          acc += w2[size_t((j * s + m) * r + bb)] * y1[size_t(bb * nblocks2 + j)];
        const int64_t o = m * nblocks2 + j;
        if (bias) acc += (*bias)[size_t(o)];
        out[size_t(t * nblocks2 * s + o)] = acc;
      }
  }
  return out;
}

// =============================================================================================
// FFT convolution (by direct summation; no FFT)
// =============================================================================================

enum class ConvMode { Causal = 0, Circular = 1, Bidirectional = 2 };  // fk_fftconv_mode_t

// The fft_size that fk_fftconv_plan_create picks for fft_size = 0: the smallest power of two
// the mode needs (header, fftconv group). filter_len here is already resolved (0 -> seqlen).
inline int64_t default_fft_size(ConvMode mode, int64_t seqlen, int64_t filter_len) {
  int64_t need = 1;
  switch (mode) {
    case ConvMode::Causal: need = seqlen + std::min(filter_len, seqlen) - 1; break;
    case ConvMode::Circular: need = std::max(seqlen, filter_len); break;
    case ConvMode::Bidirectional: {
      const int64_t R = (filter_len - 1) / 2;
      need = seqlen + std::min(R, seqlen - 1);
      break;
    }
  }
  int64_t n = 1;
  while (n < need) n *= 2;
  return n;
}

// y = postgate * (conv(v, k) + D[c] * v), v = pregate * u, for every (batch, channel):
//   u, pregate, postgate, y (batch, channels, seqlen); k (channels, filter_len); D (channels,).
//   pregate / postgate / D: nullptr when absent.
//   fft_size is used only by the circular mode (its period); pass the plan's resolved value.
//   causal:        conv[t] = sum_{s=0}^{t} k[s] v[t-s]                (k[s] = 0 for s >= filter_len)
//   circular:      conv[t] = sum_{s=0}^{fft_size-1} k[s] v[(t-s) mod fft_size], k, v zero-padded
//   bidirectional: conv[t] = sum_{j=-R}^{R} k[R+j] v[t-j], v = 0 outside [0, seqlen),
//                  filter_len = 2R+1
// Returns y (batch, channels, seqlen).
inline std::vector<double> fftconv(const std::vector<double>& u, const std::vector<double>& k,
                                   const std::vector<double>* D,
                                   const std::vector<double>* pregate,
                                   const std::vector<double>* postgate, int64_t batch,
                                   int64_t channels, int64_t seqlen, int64_t filter_len,
                                   ConvMode mode, int64_t fft_size) {
  std::vector<double> y(size_t(batch * channels * seqlen));
  std::vector<double> vv(static_cast<size_t>(seqlen));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t row = (b * channels + c) * seqlen;
      for (int64_t t = 0; t < seqlen; ++t)
        vv[size_t(t)] = u[size_t(row + t)] * (pregate ? (*pregate)[size_t(row + t)] : 1.0);
      const double* kc = k.data() + c * filter_len;
      for (int64_t t = 0; t < seqlen; ++t) {
        double acc = 0;
        switch (mode) {
          case ConvMode::Causal:
            for (int64_t s = 0; s <= t && s < filter_len; ++s) acc += kc[s] * vv[size_t(t - s)];
            break;
          case ConvMode::Circular: {
            // Taps s = 0..S-1 in order, v's index (t - s) mod fft_size: t - s itself while
            // s <= t, then t - s + fft_size (one wrap: seqlen <= fft_size), which lies inside v
            // only from s = t + fft_size - seqlen + 1 on. (The same terms in the same order as
            // a per-tap modulo, without its cost: 32K-point rows took minutes.)
            const int64_t S = std::min(filter_len, fft_size);
            for (int64_t s = 0; s <= t && s < S; ++s) acc += kc[s] * vv[size_t(t - s)];
            for (int64_t s = std::max(t + 1, t + fft_size - seqlen + 1); s < S; ++s)
              acc += kc[s] * vv[size_t(t - s + fft_size)];
            break;
          }
          case ConvMode::Bidirectional: {
            const int64_t R = (filter_len - 1) / 2;
            for (int64_t j = -R; j <= R; ++j) {
              const int64_t idx = t - j;
              if (idx >= 0 && idx < seqlen) acc += kc[R + j] * vv[size_t(idx)];
            }
            break;
          }
        }
        if (D) acc += (*D)[size_t(c)] * vv[size_t(t)];
        if (postgate) acc *= (*postgate)[size_t(row + t)];
        y[size_t(row + t)] = acc;
      }
    }
  return y;
}

}  // namespace fkref
