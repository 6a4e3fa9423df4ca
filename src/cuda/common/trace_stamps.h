// Per-tile stamp buffers of the diagnostic (tracing) builds of the Hopper kernels
// (src/cuda/gemm/sm90/trace.h, src/cuda/attention/sm90/trace.h): the buffer layout, the
// device-side writes, and the launcher's allocation and dump to the file named in the
// environment. Release builds never call any of this.
// Layout: kStamps 64-bit words per (CTA, role, tile slot), roles and slots per CTA fixed by
// the family; a slot whose word 0 is still 0 had no tile. The dump appends one header line
// (written by the family) and one line "launch,cta,role,slot,word0,..." per used slot.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/common/check.h"

namespace flashkit {
namespace cuda {
namespace trace {

// The launches traced in this process, numbered in one sequence over every kernel.
inline int next_launch() {
  static int n = 0;
  return n++;
}

template <int kRoles, int kTiles, int kStamps>
struct Stamps {
  static constexpr size_t kWordsPerCta = size_t(kRoles) * kTiles * kStamps;

#if defined(__CUDACC__)
  // The words of (this CTA, role, slot); nullptr for no buffer or a slot past kTiles.
  __device__ __forceinline__ static uint64_t* slot(uint64_t* buf, int role, int s) {
    if (buf == nullptr || s >= kTiles) return nullptr;
    return buf + ((int64_t(blockIdx.x) * kRoles + role) * kTiles + s) * kStamps;
  }
  __device__ __forceinline__ static void value(uint64_t* buf, int role, int s, int what,
                                               uint64_t v) {
    if (uint64_t* w = slot(buf, role, s)) w[what] = v;
  }
  // The SM's cycle counter (the roles of one CTA share an SM: their stamps compare directly).
  __device__ __forceinline__ static void clock(uint64_t* buf, int role, int s, int what) {
    if (uint64_t* w = slot(buf, role, s)) w[what] = uint64_t(clock64());
  }
  // %globaltimer (ns): the launch's time line across SMs.
  __device__ __forceinline__ static void timer(uint64_t* buf, int role, int s, int what) {
    if (uint64_t* w = slot(buf, role, s)) {
      uint64_t v;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v)::"memory");
      w[what] = v;
    }
  }
#endif

  // Host: a zeroed buffer for `ctas` CTAs on `stream` when the environment variable `env` names
  // a file (its name in *path), else *buf stays nullptr.
  static fk_status_t begin(const char* env, int64_t ctas, cudaStream_t stream, uint64_t** buf,
                           const char** path, const char* who) {
    *buf = nullptr;
    *path = std::getenv(env);
    if (*path == nullptr || **path == 0) return FK_SUCCESS;
    const size_t bytes = size_t(ctas) * kWordsPerCta * 8;
    FK_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(buf), bytes), who);
    const cudaError_t e = cudaMemsetAsync(*buf, 0, bytes, stream);
    if (e != cudaSuccess) {
      cudaFree(*buf);
      *buf = nullptr;
      return check(e, who);
    }
    return FK_SUCCESS;
  }

  // Host, after the launch: synchronises `stream`, frees `buf` and appends the used slots to
  // `path` after the line that header(FILE*, launch index) writes. No-op for a null buffer.
  template <class Header>
  static void finish(uint64_t* buf, const char* path, int64_t ctas, cudaStream_t stream,
                     Header header) {
    if (buf == nullptr) return;
    const size_t words = size_t(ctas) * kWordsPerCta;
    std::vector<uint64_t> host(words);
    const cudaError_t e1 =
        cudaMemcpyAsync(host.data(), buf, words * 8, cudaMemcpyDeviceToHost, stream);
    const cudaError_t e2 = cudaStreamSynchronize(stream);
    cudaFree(buf);
    const int launch = next_launch();
    if (e1 != cudaSuccess || e2 != cudaSuccess) return;
    FILE* f = std::fopen(path, "a");
    if (f == nullptr) return;
    header(f, launch);
    for (size_t row = 0; row < words / kStamps; ++row) {
      const uint64_t* w = &host[row * kStamps];
      if (w[0] == 0) continue;  // no tile in this slot
      std::fprintf(f, "%d,%zu,%zu,%zu", launch, row / (size_t(kRoles) * kTiles),
                   (row / kTiles) % kRoles, row % kTiles);
      for (int i = 0; i < kStamps; ++i)
        std::fprintf(f, ",%llu", static_cast<unsigned long long>(w[i]));
      std::fprintf(f, "\n");
    }
    std::fclose(f);
  }
};

}  // namespace trace
}  // namespace cuda
}  // namespace flashkit
