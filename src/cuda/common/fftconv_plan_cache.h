// What the CUDA backend keeps in an FFT-convolution plan (FFTConvPlanState::cuda_cache), and the
// lifecycle of those buffers, shared by the generic and sm80 kernels.
// FFTConvPlanState has a single CUDA slot; every CUDA kernel family (generic, sm80, sm90) gets
// its own entry here so that one family never reads another's tables (their layouts differ).
// Access only under FFTConvPlanState::mutex.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.h"
#include "core/cuda_runtime.h"
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
  bool captured = false;  // read by a call captured into a CUDA graph: kept until the plan dies
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
  // Replaced tables that a captured CUDA graph may still read (a graph holds raw pointers, and
  // nothing tells the plan when it is destroyed): freed with the plan.
  std::vector<std::shared_ptr<FFTConvDeviceTable>> pinned;

  // pinned plus the current tables that a capture has read, for the entry that replaces this.
  std::vector<std::shared_ptr<FFTConvDeviceTable>> captured_tables() const {
    std::vector<std::shared_ptr<FFTConvDeviceTable>> v = pinned;
    if (twiddles && twiddles->captured) v.push_back(twiddles);
    if (spectrum && spectrum->captured) v.push_back(spectrum);
    return v;
  }
};

// `stream` waits for table `t`. Under CUDA graph capture a wait on an event recorded outside
// the capture is invalid (it would end the capture in an error); the table was then built by an
// earlier call outside the capture, and it must be complete by now: the graph has no way to wait
// for it.
inline fk_status_t fftconv_wait_table(FFTConvDeviceTable& t, cudaStream_t stream,
                                      const char* what) {
  bool capturing = false;
  FK_RETURN_IF_ERROR(stream_is_capturing(stream, t.device, &capturing));
  if (!capturing) {
    FK_CUDA_TRY(cudaStreamWaitEvent(stream, t.ready, 0), "fftconv: cudaStreamWaitEvent");
    return FK_SUCCESS;
  }
  // Querying an event is among the calls a global-mode capture forbids on this thread; the
  // event is not part of the capture, so the query is safe with the thread's mode relaxed for it.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  FK_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode), "fftconv: capture mode");
  const cudaError_t q = cudaEventQuery(t.ready);
  FK_CUDA_TRY(cudaThreadExchangeStreamCaptureMode(&mode), "fftconv: capture mode");
  if (q == cudaSuccess) {
    t.captured = true;
    return FK_SUCCESS;
  }
  if (q != cudaErrorNotReady) FK_CUDA_TRY(q, "fftconv: cudaEventQuery");
  if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();  // not a failure
  return set_error(FK_ERROR_NOT_SUPPORTED,
                   "%s: still being built by an earlier call on another stream while this "
                   "stream is captured into a CUDA graph; synchronise that stream before the "
                   "capture",
                   what);
}

// A new table of `bytes` on the current device, filled by fill(void* data) on `stream`, its
// `ready` event recorded after the fill. Not under CUDA graph capture: the fill would only run
// when the graph is launched, while the plan would hand the table to every later call.
template <class Fill>
fk_status_t fftconv_make_table(int device, size_t bytes, const char* what, cudaStream_t stream,
                               Fill&& fill, std::shared_ptr<FFTConvDeviceTable>* out) {
  bool capturing = false;
  FK_RETURN_IF_ERROR(stream_is_capturing(stream, device, &capturing));
  if (capturing) {
    return set_error(FK_ERROR_NOT_SUPPORTED,
                     "%s: the plan builds it on its first call (and again when the filter, "
                     "dtype or device changes), which cannot happen while the launch stream is "
                     "captured into a CUDA graph; make one call with the same arguments before "
                     "the capture",
                     what);
  }
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
    if (g) fresh->pinned = g->captured_tables();
    FK_RETURN_IF_ERROR(fftconv_make_table(device, bytes, "fftconv: twiddle table", stream,
                                          fill_twiddles, &fresh->twiddles));
    slot = fresh;
    g = fresh;
  }
  FK_RETURN_IF_ERROR(fftconv_wait_table(*g->twiddles, stream, "fftconv: twiddle table"));
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
    if (g.spectrum && g.spectrum->captured) g.pinned.push_back(g.spectrum);
    g.spectrum = fresh;
    g.spectrum_key = key;
  }
  FK_RETURN_IF_ERROR(fftconv_wait_table(*g.spectrum, stream, "fftconv: cached filter spectrum"));
  *out = g.spectrum;
  return FK_SUCCESS;
}

}  // namespace cuda
}  // namespace flashkit
