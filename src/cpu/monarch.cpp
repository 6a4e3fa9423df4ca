// CPU Monarch multiply and block-diagonal linear.
//
// Monarch (Dao et al. 2022, Section 3, Definition 3.1: M = P L P^T R) in the factor shapes of
// m2's blockdiag_butterfly_multiply, exactly as the header's monarch group defines it:
//   y1[t, i*q + a]         = sum_c w1[i, a, c] x[t, i*p + c]        (R = blockdiag(w1))
//   z[t, j, b]             = y1[t, b*nblocks2 + j]                   (P: (r, nblocks2) transpose)
//   out[t, m*nblocks2 + j] = sum_b w2[j, m, b] z[t, j, b]           (L = blockdiag(w2), then P)
// Each block product is a small GEMM over a tile of tokens. The weights are converted once per
// call to fp32 and transposed to (block, in, out), so the innermost loop runs along output
// features with unit stride (vectorisable without reassociating a dot product), and a tile of
// kTokens tokens reuses each weight block while it is in cache.
#include <algorithm>
#include <vector>

#include "core/backend.h"
#include "cpu/common.h"
#include "cpu/parallel.h"

namespace flashkit {
namespace cpu {
namespace {

constexpr int64_t kTokens = 16;  // tokens per work item

// w (nblocks, q, p) of dtype t -> wt (nblocks, p, q) fp32.
std::vector<float> pack_transposed(const ExecContext& ctx, const void* w, DType t, int64_t nblocks,
                                   int64_t q, int64_t p) {
  std::vector<float> wt(static_cast<size_t>(nblocks * p * q));
  if (wt.empty()) return wt;  // an empty factor (p or q is 0): nothing to pack
  parallel_for(nblocks, ctx.num_threads, 1, [&](int64_t b0, int64_t b1, int) {
    std::vector<float> tmp(static_cast<size_t>(p));
    for (int64_t i = b0; i < b1; ++i)
      for (int64_t a = 0; a < q; ++a) {
        load_run(w, t, (i * q + a) * p, p, tmp.data());
        float* dst = wt.data() + i * p * q + a;
        for (int64_t c = 0; c < p; ++c) dst[c * q] = tmp[size_t(c)];
      }
  });
  return wt;
}

// Y (T, nblocks*q) = blockdiag(W) applied to X (T, nblocks*p), fp32, W packed (nblocks, p, q).
FK_CPU_CLONES
void blockdiag_tile(const float* x, int64_t T, int64_t nblocks, int64_t q, int64_t p,
                    const float* wt, float* y) {
  const int64_t nin = nblocks * p, nout = nblocks * q;
  for (int64_t i = 0; i < nblocks; ++i) {
    const float* wi = wt + i * p * q;
    for (int64_t t = 0; t < T; ++t) {
      float* yb = y + t * nout + i * q;
      const float* xb = x + t * nin + i * p;
      std::fill(yb, yb + q, 0.0f);
      for (int64_t c = 0; c < p; ++c) {
        const float xc = xb[c];
        const float* w = wi + c * q;
        for (int64_t a = 0; a < q; ++a) yb[a] += xc * w[a];
      }
    }
  }
}

// L = blockdiag(w2) on z (T, nblocks2, r); the result of block j, output m, lands at
// o[t, m*nblocks2 + j] (the second P). w2t packed (nblocks2, r, s); ob is (s) scratch.
FK_CPU_CLONES
void second_factor(const float* z, int64_t T, int64_t nb2, int64_t s, int64_t r, int64_t mid,
                   int64_t nout, const float* w2t, float* o, float* ob) {
  for (int64_t j = 0; j < nb2; ++j) {
    const float* wj = w2t + j * r * s;
    for (int64_t t = 0; t < T; ++t) {
      const float* zj = z + t * mid + j * r;
      std::fill(ob, ob + s, 0.0f);
      for (int64_t b = 0; b < r; ++b) {
        const float zb = zj[b];
        const float* w = wj + b * s;
        for (int64_t m = 0; m < s; ++m) ob[m] += zb * w[m];
      }
      float* orow = o + t * nout;
      for (int64_t m = 0; m < s; ++m) orow[m * nb2 + j] = ob[m];
    }
  }
}

}  // namespace

fk_status_t blockdiag(const ExecContext& ctx, const BlockdiagProblem& p) {
  return run_guarded("blockdiag_linear", [&]() -> fk_status_t {
    if (p.tokens <= 0 || p.nblocks <= 0 || p.q <= 0) return FK_SUCCESS;
    const int64_t nin = p.nblocks * p.p, nout = p.nblocks * p.q;
    const std::vector<float> wt = pack_transposed(ctx, p.w, p.dtype, p.nblocks, p.q, p.p);
    std::vector<float> bias;
    if (p.bias) {
      bias.resize(size_t(nout));
      load_run(p.bias, p.bias_dtype, 0, nout, bias.data());
    }
    const int64_t n = (p.tokens + kTokens - 1) / kTokens;
    // Every worker's scratch before any store: an allocation failure (std::bad_alloc, turned
    // into FK_ERROR_OUT_OF_MEMORY by run_guarded) must leave out untouched, which it would not
    // if a later chunk's allocation failed after earlier chunks were stored.
    struct Scratch {
      std::vector<float> x, y;
    };
    std::vector<Scratch> scratch(size_t(parallel_workers(n, ctx.num_threads, 1)));
    for (Scratch& w : scratch) {
      w.x.resize(size_t(kTokens * nin));
      w.y.resize(size_t(kTokens * nout));
    }
    parallel_for(n, ctx.num_threads, 1, [&](int64_t b0, int64_t b1, int worker) {
      std::vector<float>& x = scratch[size_t(worker)].x;
      std::vector<float>& y = scratch[size_t(worker)].y;
      for (int64_t tile = b0; tile < b1; ++tile) {
        const int64_t t0 = tile * kTokens, T = std::min(kTokens, p.tokens - t0);
        for (int64_t t = 0; t < T; ++t)
          load_run(p.x, p.dtype, (t0 + t) * p.x_row_stride, nin, x.data() + t * nin);
        blockdiag_tile(x.data(), T, p.nblocks, p.q, p.p, wt.data(), y.data());
        for (int64_t t = 0; t < T; ++t) {
          float* yr = y.data() + t * nout;
          if (p.bias)
            for (int64_t o = 0; o < nout; ++o) yr[o] += bias[size_t(o)];
          store_run(p.out, p.dtype, (t0 + t) * p.out_row_stride, nout, yr);
        }
      }
    });
    return FK_SUCCESS;
  });
}

fk_status_t monarch(const ExecContext& ctx, const MonarchProblem& p) {
  return run_guarded("monarch", [&]() -> fk_status_t {
    if (p.tokens <= 0 || p.nblocks2 <= 0 || p.s <= 0) return FK_SUCCESS;
    const int64_t nin = p.nblocks1 * p.p;
    const int64_t mid = p.nblocks1 * p.q;  // == nblocks2 * r
    const int64_t nout = p.nblocks2 * p.s;
    const std::vector<float> w1t = pack_transposed(ctx, p.w1, p.dtype, p.nblocks1, p.q, p.p);
    const std::vector<float> w2t = pack_transposed(ctx, p.w2, p.dtype, p.nblocks2, p.s, p.r);
    std::vector<float> bias;
    if (p.bias) {
      bias.resize(size_t(nout));
      load_run(p.bias, p.bias_dtype, 0, nout, bias.data());
    }
    const int64_t nb2 = p.nblocks2, r = p.r, s = p.s;
    const int64_t n = (p.tokens + kTokens - 1) / kTokens;
    // Every worker's scratch before any store (see blockdiag).
    struct Scratch {
      std::vector<float> x, y1, z, o, ob;
    };
    std::vector<Scratch> scratch(size_t(parallel_workers(n, ctx.num_threads, 1)));
    for (Scratch& w : scratch) {
      w.x.resize(size_t(kTokens * nin));
      w.y1.resize(size_t(kTokens * mid));
      w.z.resize(size_t(kTokens * mid));  // (T, nblocks2, r)
      w.o.resize(size_t(kTokens * nout));
      w.ob.resize(size_t(s));
    }
    parallel_for(n, ctx.num_threads, 1, [&](int64_t b0, int64_t b1, int worker) {
      Scratch& w = scratch[size_t(worker)];
      std::vector<float>& x = w.x;
      std::vector<float>& y1 = w.y1;
      std::vector<float>& z = w.z;
      std::vector<float>& o = w.o;
      std::vector<float>& ob = w.ob;
      for (int64_t tile = b0; tile < b1; ++tile) {
        const int64_t t0 = tile * kTokens, T = std::min(kTokens, p.tokens - t0);
        for (int64_t t = 0; t < T; ++t)
          load_run(p.x, p.dtype, (t0 + t) * p.x_row_stride, nin, x.data() + t * nin);
        blockdiag_tile(x.data(), T, p.nblocks1, p.q, p.p, w1t.data(), y1.data());
        // The permutation P: read y1 as an (r, nblocks2) grid and transpose it, so each of
        // L's blocks sees its r inputs contiguously.
        for (int64_t t = 0; t < T; ++t) {
          const float* yr = y1.data() + t * mid;
          float* zr = z.data() + t * mid;
          for (int64_t b = 0; b < r; ++b)
            for (int64_t j = 0; j < nb2; ++j) zr[j * r + b] = yr[b * nb2 + j];
        }
        second_factor(z.data(), T, nb2, s, r, mid, nout, w2t.data(), o.data(), ob.data());
        for (int64_t t = 0; t < T; ++t) {
          float* orow = o.data() + t * nout;
          if (p.bias)
            for (int64_t c = 0; c < nout; ++c) orow[c] += bias[size_t(c)];
          store_run(p.out, p.dtype, (t0 + t) * p.out_row_stride, nout, orow);
        }
      }
    });
    return FK_SUCCESS;
  });
}

}  // namespace cpu
}  // namespace flashkit
