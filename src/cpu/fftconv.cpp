// CPU FFT convolution: y = postgate * (conv(v, k) + D * v), v = pregate * u, per (batch,
// channel) row, by the convolution theorem on real FFTs of size fft_size (KissFFT's
// kiss_fftr / kiss_fftri), as in Hyena (Poli et al. 2023, Section 3.3) and FlashFFTConv (Fu et
// al. 2023, Section 3): conv = IFFT(FFT(v_padded) * FFT(k_placed)). The three modes differ only
// in where the taps are placed in the length-fft_size filter buffer:
//   causal:        k[s] at s, for s < min(filter_len, seqlen) (later taps never reach an output)
//   circular:      k[s] at s, for s < filter_len (<= fft_size)
//   bidirectional: k[R + j] at j mod fft_size, for |j| <= min(R, seqlen - 1)
// The plan guarantees fft_size is large enough that the circular wrap-around never lands on an
// output (causal: fft_size >= seqlen + taps - 1; bidirectional: fft_size >= seqlen + R').
//
// Short filters are computed directly (O(seqlen * taps)), which is cheaper than two FFTs when
// the effective tap count is below a few log2(fft_size); the result is the same sum.
//
// KissFFT's real-FFT state holds a scratch buffer that kiss_fftr writes, so a config must not be
// used by two threads at once. The plan therefore keeps a pool of configs in
// FFTConvPlanState::cpu_cache; each call checks out one pair per worker (creating more when
// needed) and returns them afterwards, all under the state's mutex. The pool also holds the
// filter spectrum when the plan says FK_FFTCONV_FILTER_CONSTANT.
#include <kiss_fftr.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "core/backend.h"
#include "cpu/common.h"
#include "cpu/parallel.h"

namespace flashkit {
namespace cpu {
namespace {

// One forward and one inverse real-FFT config of size nfft.
struct FftPair {
  kiss_fftr_cfg fwd = nullptr;
  kiss_fftr_cfg inv = nullptr;
};

struct FilterSpectrum {
  const void* k = nullptr;
  int64_t k_channel_stride = 0, channels = 0, filter_len = 0;
  DType k_dtype = DType::F32;
  std::vector<kiss_fft_cpx> data;  // (channels, nfft/2 + 1), already scaled by 1/nfft
};

// What a plan caches for the CPU backend (FFTConvPlanState::cpu_cache).
struct CpuFFTCache {
  int64_t nfft = 0;
  std::vector<FftPair> free_pairs;
  std::shared_ptr<const FilterSpectrum> spectrum;

  ~CpuFFTCache() {
    for (auto& pr : free_pairs) {
      kiss_fftr_free(pr.fwd);
      kiss_fftr_free(pr.inv);
    }
  }
};

FftPair make_pair(int64_t nfft) {
  FftPair pr;
  pr.fwd = kiss_fftr_alloc(int(nfft), 0, nullptr, nullptr);
  pr.inv = kiss_fftr_alloc(int(nfft), 1, nullptr, nullptr);
  if (!pr.fwd || !pr.inv) {
    kiss_fftr_free(pr.fwd);
    kiss_fftr_free(pr.inv);
    throw std::bad_alloc();
  }
  return pr;
}

// Checks `count` config pairs out of the plan's pool for one call and returns them on
// destruction, so concurrent calls on one plan never share a KissFFT scratch buffer.
class PairLease {
 public:
  PairLease(FFTConvPlanState* state, int64_t nfft, int count) : state_(state), nfft_(nfft) {
    std::unique_lock<std::mutex> lock;
    if (state_) {
      lock = std::unique_lock<std::mutex>(state_->mutex);
      cache_ = std::static_pointer_cast<CpuFFTCache>(state_->cpu_cache);
      if (!cache_ || cache_->nfft != nfft) {
        cache_ = std::make_shared<CpuFFTCache>();
        cache_->nfft = nfft;
        state_->cpu_cache = cache_;
      }
      spectrum_ = cache_->spectrum;
    }
    pairs_.reserve(size_t(count));
    while (int(pairs_.size()) < count && cache_ && !cache_->free_pairs.empty()) {
      pairs_.push_back(cache_->free_pairs.back());
      cache_->free_pairs.pop_back();
    }
    try {
      while (int(pairs_.size()) < count) pairs_.push_back(make_pair(nfft));
    } catch (...) {
      give_back_locked();
      throw;
    }
  }
  ~PairLease() {
    if (state_) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      give_back_locked();
    } else {
      give_back_locked();
    }
  }
  PairLease(const PairLease&) = delete;
  PairLease& operator=(const PairLease&) = delete;

  FftPair& operator[](int i) { return pairs_[size_t(i)]; }
  std::shared_ptr<const FilterSpectrum> spectrum() const { return spectrum_; }
  void set_spectrum(std::shared_ptr<const FilterSpectrum> s) {
    spectrum_ = s;
    if (state_) {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (cache_) cache_->spectrum = std::move(s);
    }
  }

 private:
  // Caller holds the state's mutex (or there is no state).
  void give_back_locked() {
    for (auto& pr : pairs_) {
      bool kept = false;
      if (cache_ && cache_->nfft == nfft_) {
        try {
          cache_->free_pairs.push_back(pr);
          kept = true;
        } catch (...) {
        }
      }
      if (!kept) {
        kiss_fftr_free(pr.fwd);
        kiss_fftr_free(pr.inv);
      }
    }
    pairs_.clear();
  }

  FFTConvPlanState* state_;
  int64_t nfft_;
  std::shared_ptr<CpuFFTCache> cache_;
  std::shared_ptr<const FilterSpectrum> spectrum_;
  std::vector<FftPair> pairs_;
};

// The taps of channel c that can reach an output, as (tap index in k, signed shift j):
// conv[t] += k[tap] * v[t - j]. Returns the range of shifts [jlo, jhi] and the tap of j.
struct TapRange {
  int64_t jlo, jhi, tap0;  // tap(j) = tap0 + j
};

TapRange tap_range(const FFTConvProblem& p) {
  switch (p.mode) {
    case FFTConvMode::Causal: return {0, std::min(p.filter_len, p.seqlen) - 1, 0};
    case FFTConvMode::Circular: return {0, p.filter_len - 1, 0};
    case FFTConvMode::Bidirectional:
    default: {
      const int64_t R = (p.filter_len - 1) / 2;
      const int64_t Re = std::min(R, p.seqlen - 1);
      return {-Re, Re, R};
    }
  }
}

// Spectrum of channel c's placed filter, scaled by 1/nfft (kiss_fftri is unnormalised).
void filter_spectrum(const FFTConvProblem& p, const TapRange& tr, int64_t c, FftPair& pr,
                     float* time, float* taps, kiss_fft_cpx* out) {
  const int64_t N = p.fft_size;
  std::fill(time, time + N, 0.0f);
  const int64_t ntaps = tr.jhi - tr.jlo + 1;
  if (ntaps > 0) {
    load_run(p.k, p.k_dtype, c * p.k_channel_stride + tr.tap0 + tr.jlo, ntaps, taps);
    for (int64_t j = tr.jlo; j <= tr.jhi; ++j) time[(j % N + N) % N] = taps[j - tr.jlo];
  }
  kiss_fftr(pr.fwd, time, out);
  const float scale = 1.0f / float(N);
  for (int64_t f = 0; f <= N / 2; ++f) {
    out[f].r *= scale;
    out[f].i *= scale;
  }
}

struct Scratch {
  std::vector<float> v, conv, time, taps, a, b;
  std::vector<kiss_fft_cpx> vf, kf;
};

// conv[t] = sum_j k[tap0 + j] v[t - j] directly; circular mode wraps t - j modulo N.
FK_CPU_CLONES
void direct_conv(const FFTConvProblem& p, const TapRange& tr, const float* taps, const float* v,
                 float* conv) {
  const int64_t L = p.seqlen, N = p.fft_size;
  std::fill(conv, conv + L, 0.0f);
  for (int64_t j = tr.jlo; j <= tr.jhi; ++j) {
    const float kj = taps[j - tr.jlo];
    // Non-wrapped part: t - j in [0, L).
    const int64_t t0 = std::max<int64_t>(0, j), t1 = std::min<int64_t>(L, L + j);
    for (int64_t t = t0; t < t1; ++t) conv[t] += kj * v[t - j];
    if (p.mode == FFTConvMode::Circular && j > 0) {
      // Wrapped part: t < j, index t - j + N must be < L.
      const int64_t w1 = std::min<int64_t>(j, j - N + L);
      for (int64_t t = 0; t < w1; ++t) conv[t] += kj * v[t - j + N];
    }
  }
}

}  // namespace

fk_status_t fftconv(const ExecContext& ctx, const FFTConvProblem& p) {
  return run_guarded("fftconv", [&]() -> fk_status_t {
    if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
    const int64_t L = p.seqlen, N = p.fft_size, C = p.channels;
    const TapRange tr = tap_range(p);
    const int64_t ntaps = std::max<int64_t>(0, tr.jhi - tr.jlo + 1);
    int64_t log2n = 0;
    while ((int64_t(1) << log2n) < N) ++log2n;
    // Per row, the FFT path costs two real FFTs of size N ~ 2 L, about 10 L log2 L flops at
    // KissFFT's scalar speed, against L * ntaps multiply-adds for direct summation, which
    // vectorise (FK_CPU_CLONES). Measured on x86-64 (L = 4096) the crossover is at a few hundred
    // taps; 16 log2 N stays below it. Sizes below 16 are always direct (kiss_fftr needs an
    // even size, and nothing is gained).
    const bool direct = N < 16 || ntaps <= 16 * log2n;

    // Work items: (channel, chunk of batches). Splitting the batch keeps every worker busy
    // when there are fewer channels than threads, at the cost of one filter FFT per chunk.
    const int threads = std::max(1, ctx.num_threads);
    const int64_t chunks = std::min<int64_t>(p.batch, std::max<int64_t>(1, (2 * threads + C - 1) / C));
    const int64_t per_chunk = (p.batch + chunks - 1) / chunks;
    const int64_t n = C * chunks;
    int workers = parallel_workers(n, threads, 1);
    if (!direct) {
      // Each FFT worker holds a config pair (twiddles and KissFFT's scratch, ~20 N bytes) and
      // its buffers (~16 N bytes): at fft_size 2^22 that is ~150 MB per worker, so cap the
      // workers to keep the total near 1 GiB.
      const int64_t per_worker = 36 * N;
      const int64_t cap = std::max<int64_t>(1, (int64_t(1) << 30) / per_worker);
      workers = int(std::min<int64_t>(workers, cap));
    }

    std::unique_ptr<PairLease> lease;
    std::shared_ptr<const FilterSpectrum> spec;
    if (!direct) {
      lease.reset(new PairLease(p.state, N, workers));
      if (p.filter_constant) {
        spec = lease->spectrum();
        if (spec && (spec->k != p.k || spec->k_channel_stride != p.k_channel_stride ||
                     spec->k_dtype != p.k_dtype || spec->channels != C ||
                     spec->filter_len != p.filter_len))
          spec.reset();
      }
    }
    std::vector<Scratch> scratch(static_cast<size_t>(workers));
    for (auto& w : scratch) {
      w.v.resize(size_t(L));
      w.conv.resize(size_t(direct ? L : N));
      w.a.resize(size_t(L));
      w.b.resize(size_t(L));
      w.taps.resize(size_t(std::max<int64_t>(ntaps, 1)));
      if (!direct) {
        w.time.resize(size_t(N));
        w.vf.resize(size_t(N / 2 + 1));
        w.kf.resize(size_t(N / 2 + 1));
      }
    }

    if (!direct && p.filter_constant && !spec) {
      // FK_FFTCONV_FILTER_CONSTANT: transform every channel's filter once and keep it.
      auto fresh = std::make_shared<FilterSpectrum>();
      fresh->k = p.k;
      fresh->k_channel_stride = p.k_channel_stride;
      fresh->k_dtype = p.k_dtype;
      fresh->channels = C;
      fresh->filter_len = p.filter_len;
      fresh->data.resize(size_t(C * (N / 2 + 1)));
      parallel_for(C, workers, 1, [&](int64_t c0, int64_t c1, int wk) {
        Scratch& w = scratch[size_t(wk)];
        for (int64_t c = c0; c < c1; ++c)
          filter_spectrum(p, tr, c, (*lease)[wk], w.time.data(), w.taps.data(),
                          &fresh->data[size_t(c * (N / 2 + 1))]);
      });
      spec = fresh;
      lease->set_spectrum(spec);
    }

    parallel_for(n, workers, 1, [&](int64_t i0, int64_t i1, int wk) {
      Scratch& w = scratch[size_t(wk)];
      for (int64_t item = i0; item < i1; ++item) {
        const int64_t c = item / chunks, b0 = (item % chunks) * per_chunk;
        const int64_t b1 = std::min(p.batch, b0 + per_chunk);
        if (b0 >= b1) continue;
        const kiss_fft_cpx* kf = nullptr;
        if (direct) {
          if (ntaps > 0)
            load_run(p.k, p.k_dtype, c * p.k_channel_stride + tr.tap0 + tr.jlo, ntaps,
                     w.taps.data());
        } else if (spec) {
          kf = &spec->data[size_t(c * (N / 2 + 1))];
        } else {
          filter_spectrum(p, tr, c, (*lease)[wk], w.time.data(), w.taps.data(), w.kf.data());
          kf = w.kf.data();
        }
        const float dc = p.D ? load_as_float(p.D, p.d_dtype, c) : 0.0f;
        for (int64_t b = b0; b < b1; ++b) {
          float* v = w.v.data();
          load_run(p.u, p.dtype, b * p.u_batch_stride + c * p.u_channel_stride, L, v);
          if (p.pregate) {
            load_run(p.pregate, p.dtype, b * p.pre_batch_stride + c * p.pre_channel_stride, L,
                     w.a.data());
            for (int64_t t = 0; t < L; ++t) v[t] *= w.a[size_t(t)];
          }
          float* conv = w.conv.data();
          if (direct) {
            direct_conv(p, tr, w.taps.data(), v, conv);
          } else {
            std::copy(v, v + L, w.time.begin());
            std::fill(w.time.begin() + L, w.time.end(), 0.0f);
            kiss_fftr((*lease)[wk].fwd, w.time.data(), w.vf.data());
            for (int64_t f = 0; f <= N / 2; ++f) {
              const kiss_fft_cpx x = w.vf[size_t(f)], k = kf[f];
              w.vf[size_t(f)].r = x.r * k.r - x.i * k.i;
              w.vf[size_t(f)].i = x.r * k.i + x.i * k.r;
            }
            kiss_fftri((*lease)[wk].inv, w.vf.data(), conv);
          }
          float* y = w.b.data();
          for (int64_t t = 0; t < L; ++t) y[t] = conv[t] + dc * v[t];
          if (p.postgate) {
            load_run(p.postgate, p.dtype, b * p.post_batch_stride + c * p.post_channel_stride,
                     L, w.a.data());
            for (int64_t t = 0; t < L; ++t) y[t] *= w.a[size_t(t)];
          }
          store_run(p.y, p.dtype, b * p.y_batch_stride + c * p.y_channel_stride, L, y);
        }
      }
    });
    return FK_SUCCESS;
  });
}

}  // namespace cpu
}  // namespace flashkit
