// What the CUDA backend keeps in an FFT-convolution plan (FFTConvPlanState::cuda_cache), and the
// lifecycle of those buffers, shared by the generic and sm80 kernels.
// FFTConvPlanState has a single CUDA slot; every CUDA kernel family (generic, sm80, sm90) gets
// its own entry here so that one family never reads another's tables (their layouts differ).
// Access only under FFTConvPlanState::mutex.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

#include "core/backend.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"

namespace flashkit {
namespace cuda {

struct FFTConvCudaCache {
  std::shared_ptr<void> generic;  // src/cuda/fftconv/generic: an FFTConvFamilyCache
  std::shared_ptr<void> sm80;     // src/cuda/fftconv/sm80: an FFTConvFamilyCache
  std::shared_ptr<void> sm80_reg; // src/cuda/fftconv/sm80/fftconv_reg.cu: an FFTConvFamilyCache
  std::shared_ptr<void> sm90;
};

// Returns the plan's CUDA cache, creating it on first use. Call with state->mutex held.
inline FFTConvCudaCache* fftconv_cuda_cache(FFTConvPlanState* state) {
  if (!state->cuda_cache) state->cuda_cache = std::make_shared<FFTConvCudaCache>();
  return static_cast<FFTConvCudaCache*>(state->cuda_cache.get());
}

// A device buffer filled on some call's stream; `ready` lets calls on other streams wait for it.
// Freed when the last holder lets go (a newer table replaced it in the plan and every call that
// took it has enqueued its work): cudaFree waits for the device, so kernels still reading it on
// other streams finish first.
struct FFTConvDeviceTable {
  int device = -1;
  void* data = nullptr;
  cudaEvent_t ready = nullptr;
  ~FFTConvDeviceTable() {
    DeviceGuard guard(device);
    if (ready) (void)cudaEventDestroy(ready);
    if (data) (void)cudaFree(data);
  }
};

// Everything a cached filter spectrum depends on; `variant` is the family's own (e.g. sm80's
// operand split mode).
struct FFTConvSpectrumKey {
  int device = -1;
  const void* k = nullptr;
  DType k_dtype = DType::F32;
  int64_t k_cs = 0, channels = 0, filter_len = 0, L = 0, N = 0;
  FFTConvMode mode = FFTConvMode::Causal;
  int variant = 0;

  static FFTConvSpectrumKey of(const FFTConvProblem& p, int device, int variant) {
    FFTConvSpectrumKey key;
    key.device = device;
    key.k = p.k;
    key.k_dtype = p.k_dtype;
    key.k_cs = p.k_channel_stride;
    key.channels = p.channels;
    key.filter_len = p.filter_len;
    key.L = p.seqlen;
    key.N = p.fft_size;
    key.mode = p.mode;
    key.variant = variant;
    return key;
  }
  bool operator==(const FFTConvSpectrumKey& o) const {
    return device == o.device && k == o.k && k_dtype == o.k_dtype && k_cs == o.k_cs &&
           channels == o.channels && filter_len == o.filter_len && L == o.L && N == o.N &&
           mode == o.mode && variant == o.variant;
  }
};

// One family's entry: its twiddle table for (device, N) and at most one cached spectrum.
struct FFTConvFamilyCache {
  int device = -1;
  int64_t N = 0;
  std::shared_ptr<FFTConvDeviceTable> twiddles;
  FFTConvSpectrumKey spectrum_key;
  std::shared_ptr<FFTConvDeviceTable> spectrum;
};

// A new table of `bytes` on the current device, filled by fill(void* data) on `stream`, its
// `ready` event recorded after the fill.
template <class Fill>
fk_status_t fftconv_make_table(int device, size_t bytes, const char* what, cudaStream_t stream,
                               Fill&& fill, std::shared_ptr<FFTConvDeviceTable>* out) {
  auto t = std::make_shared<FFTConvDeviceTable>();
  t->device = device;
  FK_CUDA_TRY(cudaMalloc(&t->data, bytes), what);
  FK_CUDA_TRY(cudaEventCreateWithFlags(&t->ready, cudaEventDisableTiming),
              "fftconv: cudaEventCreate");
  FK_RETURN_IF_ERROR(fill(t->data));
  FK_CUDA_TRY(cudaEventRecord(t->ready, stream), "fftconv: cudaEventRecord");
  *out = std::move(t);
  return FK_SUCCESS;
}

// Under state->mutex: the family's entry in `slot` (one of FFTConvCudaCache's), with a twiddle
// table for (device, N) made by fill_twiddles(void*) when the entry is new or stale; `stream`
// then waits for the table.
template <class Fill>
fk_status_t fftconv_family_twiddles(std::shared_ptr<void>& slot, int device, int64_t N,
                                    size_t bytes, cudaStream_t stream, Fill&& fill_twiddles,
                                    std::shared_ptr<FFTConvFamilyCache>* out) {
  auto g = std::static_pointer_cast<FFTConvFamilyCache>(slot);
  if (!g || g->device != device || g->N != N) {
    auto fresh = std::make_shared<FFTConvFamilyCache>();
    fresh->device = device;
    fresh->N = N;
    FK_RETURN_IF_ERROR(fftconv_make_table(device, bytes, "fftconv: twiddle table", stream,
                                          fill_twiddles, &fresh->twiddles));
    slot = fresh;
    g = fresh;
  }
  FK_CUDA_TRY(cudaStreamWaitEvent(stream, g->twiddles->ready, 0), "fftconv: cudaStreamWaitEvent");
  *out = std::move(g);
  return FK_SUCCESS;
}

// Under state->mutex: the spectrum cached in `g` for `key`, recomputed by fill_spectrum(void*)
// when the filter (or anything else in the key) changed; `stream` then waits for it.
template <class Fill>
fk_status_t fftconv_cached_spectrum(FFTConvFamilyCache& g, const FFTConvSpectrumKey& key,
                                    size_t bytes, cudaStream_t stream, Fill&& fill_spectrum,
                                    std::shared_ptr<FFTConvDeviceTable>* out) {
  if (!g.spectrum || !(g.spectrum_key == key)) {
    std::shared_ptr<FFTConvDeviceTable> fresh;
    FK_RETURN_IF_ERROR(fftconv_make_table(key.device, bytes, "fftconv: cached filter spectrum",
                                          stream, fill_spectrum, &fresh));
    g.spectrum = fresh;
    g.spectrum_key = key;
  }
  FK_CUDA_TRY(cudaStreamWaitEvent(stream, g.spectrum->ready, 0), "fftconv: cudaStreamWaitEvent");
  *out = g.spectrum;
  return FK_SUCCESS;
}

}  // namespace cuda
}  // namespace flashkit
