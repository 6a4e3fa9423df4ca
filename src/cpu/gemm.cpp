// CPU GEMM with fused epilogue: D = act(alpha * sa[m] * sb[n] * A B + beta * C + bias), fp32
// accumulation (sa, sb: fk_gemm_scaled's dequantisation scales, 1 for fk_gemm).
//
// The loop structure is the cache-blocked GEMM of Goto & van de Geijn ("Anatomy of
// High-Performance Matrix Multiplication", ACM TOMS 34(3), 2008: packed panels and the GEBP
// inner kernel), simplified: each work item owns one (kMc x kNc) tile of D, walks K in kKc
// panels, packs the A panel into kMr-row micro-panels and the B panel into kNr-column
// micro-panels of fp32 — which also folds every stride, transpose and dtype into one layout —
// and runs a register-blocked kMr x kNr micro-kernel over them. Packed panels are zero-padded
// to whole micro-tiles so the micro-kernel has no edge cases.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/backend.h"
#include "cpu/common.h"
#include "cpu/parallel.h"

namespace flashkit {
namespace cpu {
namespace {

constexpr int64_t kMc = 72;   // rows of D per work item (a multiple of kMr)
constexpr int64_t kNc = 256;  // columns of D per work item (a multiple of kNr)
constexpr int64_t kKc = 256;  // depth of one packed panel
// Micro-tile: 6 x 8 fp32 accumulators fit the 16 vector registers of baseline x86-64 (SSE) and
// of AVX2 with room for the B vector and the broadcast A value; each B load is reused 6 times.
constexpr int64_t kMr = 6;
constexpr int64_t kNr = 8;

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The GELUs are evaluated without cancellation in the negative tail (as the CUDA kernels' tanh
// form, src/cuda/common/activation.cuh): 0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u)) and
// 0.5 (1 + erf(z)) = 0.5 erfc(-z); `1 + erf` lost every digit below x ~ -6. GELU(-inf) is 0,
// its limit (the formulas give -inf x 0 = NaN); +inf stays +inf, NaN stays NaN.
float activate(Activation act, float x) {
  switch (act) {
    case Activation::Relu: return x < 0.0f ? 0.0f : x;  // NaN stays NaN (torch.relu)
    case Activation::GeluTanh: {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), Hendrycks & Gimpel 2016.
      if (x == -std::numeric_limits<float>::infinity()) return 0.0f;
      const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
      return x / (1.0f + std::exp(-2.0f * u));
    }
    case Activation::GeluErf:
      if (x == -std::numeric_limits<float>::infinity()) return 0.0f;
      return 0.5f * x * std::erfc(x * -0.7071067811865476f);
    case Activation::None:
    default: return x;
  }
}

struct Scratch {
  std::vector<float> a;    // A panel as kMr-row micro-panels: [i / kMr][k][i % kMr]
  std::vector<float> b;    // B panel as kNr-column micro-panels: [j / kNr][k][j % kNr]
  std::vector<float> acc;  // (kMc, kNc) accumulators of the tile
  std::vector<float> row;  // (kNc) epilogue row
};

// acc (kMr x kNr, row stride ldc) += A micro-panel (kc x kMr) * B micro-panel (kc x kNr). Both
// panels are read contiguously, as in Goto & van de Geijn's packed micro-kernel; the six
// accumulator rows are explicit vectors so they stay in registers.
static_assert(kMr == 6 && kNr == 8, "micro_kernel is written for a 6 x 8 tile");
FK_CPU_INLINE void micro_kernel(const float* a, const float* b, float* acc, int64_t kc,
                                int64_t ldc) {
  v8f c0 = {}, c1 = {}, c2 = {}, c3 = {}, c4 = {}, c5 = {};
  for (int64_t k = 0; k < kc; ++k) {
    v8f bk;
    load8(bk, b + k * kNr);
    const float* ak = a + k * kMr;
    c0 += ak[0] * bk;
    c1 += ak[1] * bk;
    c2 += ak[2] * bk;
    c3 += ak[3] * bk;
    c4 += ak[4] * bk;
    c5 += ak[5] * bk;
  }
  const v8f c[kMr] = {c0, c1, c2, c3, c4, c5};
  for (int64_t r = 0; r < kMr; ++r) {
    v8f sum;
    load8(sum, acc + r * ldc);
    sum += c[r];
    store8(acc + r * ldc, sum);
  }
}

// All micro-tiles of one packed (mcp x kc) A panel times one packed (kc x ncp) B panel. The
// B micro-panel (kc x kNr, 8 KiB) stays in L1 while every A micro-panel streams past it.
FK_CPU_CLONES
void macro_kernel(const float* a, const float* b, float* acc, int64_t mcp, int64_t ncp,
                  int64_t kc, int64_t ldc) {
  for (int64_t j = 0; j < ncp; j += kNr)
    for (int64_t i = 0; i < mcp; i += kMr)
      micro_kernel(a + i * kc, b + j * kc, acc + i * ldc + j, kc, ldc);
}

// The scales as host fp32 values: sa[M or 1], sb[N or 1] (empty: 1).
struct Scales {
  std::vector<float> a, b;
};

void run_tile(const GemmProblem& p, const float* bias, const Scales& sc, int64_t bt, int64_t m0,
              int64_t n0, Scratch& w) {
  const int64_t mc = std::min(kMc, p.M - m0), nc = std::min(kNc, p.N - n0);
  const int64_t mcp = round_up(mc, kMr), ncp = round_up(nc, kNr);
  const int64_t ldc = ncp;
  std::fill(w.acc.begin(), w.acc.begin() + mcp * ldc, 0.0f);
  float* tmp = w.row.data();  // one row or column while packing

  const int64_t a_base = bt * p.a_batch_stride, b_base = bt * p.b_batch_stride;
  for (int64_t k0 = 0; k0 < p.K; k0 += kKc) {
    const int64_t kc = std::min(kKc, p.K - k0);
    // Pack A (mc x kc) into kMr-row micro-panels, rows beyond mc zero.
    for (int64_t i = 0; i < mcp; ++i) {
      float* dst = &w.a[size_t((i / kMr) * kc * kMr + (i % kMr))];
      if (i >= mc) {
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr] = 0.0f;
        continue;
      }
      const int64_t row = a_base + (m0 + i) * p.a_stride_m + k0 * p.a_stride_k;
      if (p.a_stride_k == 1) {
        load_run(p.a, p.ab_dtype, row, kc, tmp);
        for (int64_t k = 0; k < kc; ++k) dst[k * kMr] = tmp[k];
      } else {
        for (int64_t k = 0; k < kc; ++k)
          dst[k * kMr] = load_as_float(p.a, p.ab_dtype, row + k * p.a_stride_k);
      }
    }
    // Pack B (kc x nc) into kNr-column micro-panels, columns beyond nc zero.
    for (int64_t k = 0; k < kc; ++k) {
      const int64_t row = b_base + (k0 + k) * p.b_stride_k + n0 * p.b_stride_n;
      if (p.b_stride_n == 1) {
        load_run(p.b, p.b_dtype, row, nc, tmp);
      } else {
        for (int64_t j = 0; j < nc; ++j)
          tmp[j] = load_as_float(p.b, p.b_dtype, row + j * p.b_stride_n);
      }
      for (int64_t j = nc; j < ncp; ++j) tmp[j] = 0.0f;
      for (int64_t j = 0; j < ncp; ++j)
        w.b[size_t((j / kNr) * kc * kNr + k * kNr + (j % kNr))] = tmp[j];
    }
    macro_kernel(w.a.data(), w.b.data(), w.acc.data(), mcp, ncp, kc, ldc);
  }

  // Epilogue: t = alpha * sa * sb * acc + beta * c + bias, then the activation, rounded once
  // to D.
  const bool has_c = p.c != nullptr && p.beta != 0.0f;
  for (int64_t i = 0; i < mc; ++i) {
    const float* acc = &w.acc[size_t(i * ldc)];
    float* out = w.row.data();
    float row_scale = p.alpha;
    if (!sc.a.empty()) row_scale *= sc.a[p.scale_a_per_row ? size_t(m0 + i) : 0];
    if (p.scale_b_per_col) {
      for (int64_t j = 0; j < nc; ++j) out[j] = row_scale * sc.b[size_t(n0 + j)] * acc[j];
    } else {
      const float s = sc.b.empty() ? row_scale : row_scale * sc.b[0];
      for (int64_t j = 0; j < nc; ++j) out[j] = s * acc[j];
    }
    if (has_c) {
      const int64_t crow = bt * p.c_batch_stride + (m0 + i) * p.c_stride_m + n0 * p.c_stride_n;
      for (int64_t j = 0; j < nc; ++j)
        out[j] += p.beta * load_as_float(p.c, p.cd_dtype, crow + j * p.c_stride_n);
    }
    if (bias) {
      for (int64_t j = 0; j < nc; ++j) out[j] += bias[n0 + j];
    }
    if (p.activation != Activation::None) {
      for (int64_t j = 0; j < nc; ++j) out[j] = activate(p.activation, out[j]);
    }
    const int64_t drow = bt * p.d_batch_stride + (m0 + i) * p.d_stride_m + n0 * p.d_stride_n;
    if (p.d_stride_n == 1) {
      store_run(p.d, p.cd_dtype, drow, nc, out);
    } else {
      for (int64_t j = 0; j < nc; ++j)
        store_from_float(p.d, p.cd_dtype, drow + j * p.d_stride_n, out[j]);
    }
  }
}

}  // namespace

fk_status_t gemm(const ExecContext& ctx, const GemmProblem& p) {
  return run_guarded("gemm", [&]() -> fk_status_t {
    if (p.batch <= 0 || p.M <= 0 || p.N <= 0) return FK_SUCCESS;
    const int64_t tm = (p.M + kMc - 1) / kMc, tn = (p.N + kNc - 1) / kNc;
    const int64_t n = p.batch * tm * tn;
    const int workers = parallel_workers(n, ctx.num_threads, 1);

    // Bias is shared by every tile: convert it once.
    std::vector<float> bias;
    if (p.bias) {
      bias.resize(size_t(p.N));
      load_run(p.bias, p.bias_dtype, 0, p.N, bias.data());
    }
    Scales sc;
    if (p.scale_a) sc.a.assign(p.scale_a, p.scale_a + (p.scale_a_per_row ? p.M : 1));
    if (p.scale_b) sc.b.assign(p.scale_b, p.scale_b + (p.scale_b_per_col ? p.N : 1));
    std::vector<Scratch> scratch(static_cast<size_t>(workers));
    for (auto& w : scratch) {
      w.a.resize(size_t(round_up(kMc, kMr) * kKc));
      w.b.resize(size_t(kKc * round_up(kNc, kNr)));
      w.acc.resize(size_t(round_up(kMc, kMr) * round_up(kNc, kNr)));
      w.row.resize(size_t(std::max(round_up(kNc, kNr), kKc)));
    }
    parallel_for(n, ctx.num_threads, 1, [&](int64_t begin, int64_t end, int worker) {
      Scratch& w = scratch[size_t(worker)];
      for (int64_t t = begin; t < end; ++t) {
        const int64_t bt = t / (tm * tn), rem = t % (tm * tn);
        run_tile(p, p.bias ? bias.data() : nullptr, sc, bt, (rem / tn) * kMc, (rem % tn) * kNc,
                 w);
      }
    });
    return FK_SUCCESS;
  });
}

}  // namespace cpu
}  // namespace flashkit
