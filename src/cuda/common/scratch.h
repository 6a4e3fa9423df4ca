// Per-call device scratch memory. A call first carves its buffers out of the caller's
// workspace (fk_launch_t::workspace) and, when that is absent or too small, allocates
// stream-ordered memory (cudaMallocAsync) that is freed on the same stream when the call
// returns, so nothing waits on the GPU. Devices without memory pools fall back to cudaMalloc;
// only then does the release have to synchronise the stream before cudaFree.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/backend.h"
#include "cuda/common/check.h"

namespace flashkit {
namespace cuda {

class ScratchArena {
 public:
  explicit ScratchArena(const ExecContext& ctx)
      : stream_(static_cast<cudaStream_t>(ctx.stream)),
        ws_(static_cast<char*>(ctx.workspace)),
        ws_left_(ctx.workspace ? ctx.workspace_bytes : 0) {
    // Align the start of the caller's workspace; it is only promised element alignment.
    uintptr_t p = reinterpret_cast<uintptr_t>(ws_);
    size_t pad = static_cast<size_t>((kAlign - p % kAlign) % kAlign);
    if (ws_ && ws_left_ > pad) {
      ws_ += pad;
      ws_left_ -= pad;
    } else {
      ws_ = nullptr;
      ws_left_ = 0;
    }
  }
  ~ScratchArena() {
    bool synced = false;
    for (int i = 0; i < count_; ++i) {
      if (owned_[i].pooled) {
        (void)cudaFreeAsync(owned_[i].ptr, stream_);
      } else {
        if (!synced) (void)cudaStreamSynchronize(stream_);
        synced = true;
        (void)cudaFree(owned_[i].ptr);
      }
    }
  }
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;

  // Bytes a buffer of `bytes` takes out of the caller's workspace (for capacity planning).
  static size_t rounded(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
  // Workspace bytes still free, and where they start (256-byte aligned; nullptr when none).
  size_t workspace_left() const { return ws_left_; }
  void* workspace_next() const { return ws_left_ ? ws_ : nullptr; }

  // Returns a 256-byte aligned device buffer valid until the arena is destroyed, ordered on the
  // call's stream. `what` names the buffer in the error message.
  fk_status_t alloc(size_t bytes, void** out, const char* what) {
    *out = nullptr;
    size_t need = rounded(bytes == 0 ? 1 : bytes);
    if (ws_ && need <= ws_left_) {
      *out = ws_;
      ws_ += need;
      ws_left_ -= need;
      return FK_SUCCESS;
    }
    if (count_ == kMaxOwned) return set_error(FK_ERROR_INTERNAL, "%s: too many scratch buffers", what);
    int dev = 0, pools = 0;
    FK_CUDA_TRY(cudaGetDevice(&dev), what);
    FK_CUDA_TRY(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev), what);
    void* p = nullptr;
    if (pools) {
      FK_CUDA_TRY(cudaMallocAsync(&p, need, stream_), what);
    } else {
      FK_CUDA_TRY(cudaMalloc(&p, need), what);
    }
    owned_[count_++] = Owned{p, pools != 0};
    *out = p;
    return FK_SUCCESS;
  }

 private:
  static constexpr size_t kAlign = kScratchAlign;  // core/backend.h: workspace_for()
  static constexpr int kMaxOwned = 8;
  struct Owned {
    void* ptr;
    bool pooled;
  };
  cudaStream_t stream_;
  char* ws_;
  size_t ws_left_;
  Owned owned_[kMaxOwned] = {};
  int count_ = 0;
};

// Blocks to launch for `work` independent tiles processed by a grid-stride loop. The cap keeps
// grid.x legal (2^31 - 1) for any problem size; kernels loop over the rest in 64-bit.
inline unsigned grid_for(int64_t work) {
  const int64_t cap = 0x7fffffff;
  if (work < 1) return 1;
  return static_cast<unsigned>(work < cap ? work : cap);
}

}  // namespace cuda
}  // namespace flashkit
