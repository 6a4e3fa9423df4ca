// flashkit from C++ through the header-only RAII wrapper (flashkit/flashkit.hpp): causal
// attention and a causal FFT convolution on the CPU backend, printing the kernel variant each
// call runs and part of each result. Errors arrive as fk::Error (status + message).
//
// Build against flashkit installed in PREFIX (one command):
//   c++ -std=c++17 attention_fftconv.cpp
//       $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs flashkit) -Wl,-rpath,PREFIX/lib
// (without the rpath, run it with LD_LIBRARY_PATH=PREFIX/lib).
#include <cmath>
#include <cstdio>
#include <vector>

#include <flashkit/flashkit.hpp>

int main() {
  try {
    fk::Context ctx = fk::Context::cpu();
    std::printf("flashkit %s on %s\n", fk_get_version(), ctx.info().device_name);

    // Attention: (batch 1, seqlen 4, heads 2, head_dim 8), causal.
    const int64_t B = 1, L = 4, H = 2, D = 8;
    std::vector<float> q(B * L * H * D), k(q.size()), v(q.size()), out(q.size());
    for (size_t i = 0; i < q.size(); ++i) {
      q[i] = float(std::sin(0.1 * double(i)));
      k[i] = float(std::cos(0.2 * double(i)));
      v[i] = float(i % 7) - 3.0f;
    }
    const auto tq = fk::Tensor::cpu(q.data(), {B, L, H, D});
    const auto tk = fk::Tensor::cpu(k.data(), {B, L, H, D});
    const auto tv = fk::Tensor::cpu(v.data(), {B, L, H, D});
    const auto tout = fk::Tensor::cpu(out.data(), {B, L, H, D});
    fk_attention_params_t ap = fk::attention_params();
    ap.causal = 1;
    std::printf("attention variant: %s\n",
                ctx.attention_select_kernel(&ap, tq, tk, tv, nullptr, nullptr, tout).c_str());
    ctx.attention_forward(&ap, tq, tk, tv, nullptr, nullptr, tout);
    for (int64_t t = 0; t < L; ++t) {
      std::printf("  out[0,%lld,0,:4] =", static_cast<long long>(t));
      for (int64_t i = 0; i < 4; ++i) std::printf(" %8.4f", out[size_t((t * H) * D + i)]);
      std::printf("\n");
    }

    // FFT convolution: (batch 1, channels 2, seqlen 8), filter y[t] = u[t] + 0.5 u[t-1].
    const int64_t CH = 2, CL = 8;
    std::vector<float> u(size_t(CH * CL)), filt(size_t(CH * CL), 0.0f), y(u.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = float(i % size_t(CL));
    for (int64_t c = 0; c < CH; ++c) {
      filt[size_t(c * CL)] = 1.0f;
      filt[size_t(c * CL + 1)] = 0.5f;
    }
    fk_fftconv_plan_options_t po = fk::fftconv_plan_options();
    po.mode = FK_FFTCONV_CAUSAL;
    po.channels = CH;
    po.seqlen = CL;
    const fk::FFTConvPlan plan(ctx, po);
    const auto tu = fk::Tensor::cpu(u.data(), {1, CH, CL});
    const auto tf = fk::Tensor::cpu(filt.data(), {CH, CL});
    const auto ty = fk::Tensor::cpu(y.data(), {1, CH, CL});
    std::printf("fftconv variant: %s (fft_size %lld)\n",
                plan.select_kernel(tu, tf, nullptr, nullptr, nullptr, ty).c_str(),
                static_cast<long long>(plan.options().fft_size));
    plan.forward(tu, tf, nullptr, nullptr, nullptr, ty);
    for (int64_t c = 0; c < CH; ++c) {
      std::printf("  y[0,%lld,:] =", static_cast<long long>(c));
      for (int64_t t = 0; t < CL; ++t) std::printf(" %6.2f", y[size_t(c * CL + t)]);
      std::printf("\n");
    }
    for (int64_t t = 0; t < CL; ++t) {
      const double want = double(t) + 0.5 * double(t > 0 ? t - 1 : 0);
      if (std::fabs(y[size_t(t)] - want) > 1e-3) {
        std::fprintf(stderr, "fftconv mismatch at t=%lld\n", static_cast<long long>(t));
        return 1;
      }
    }

    // A bad argument surfaces as fk::Error with the library's message.
    try {
      ctx.attention_forward(&ap, tq, tk, tv, nullptr, nullptr, ty);  // wrong output shape
      std::fprintf(stderr, "expected fk::Error\n");
      return 1;
    } catch (const fk::Error& e) {
      std::printf("bad argument -> fk::Error (%s): %s\n", e.status_string(), e.what());
    }
    return 0;
  } catch (const fk::Error& e) {
    std::fprintf(stderr, "flashkit error %d (%s): %s\n", int(e.status()), e.status_string(),
                 e.what());
    return 1;
  }
}
