// The copy engine (TMA) and mbarriers, for the sm_90a kernels that drive them by hand rather
// than through CuTe's pipelines (cuda.sm90.monarch, cuda.sm90.fftconv_direct's streamed form).
// Host: cuTensorMapEncodeTiled through the CUDA runtime's driver entry point, so that the
// library never links against libcuda. Device: CTA-scope mbarrier operations and the 3-D tensor
// load (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier" and
// "cp.async.bulk.tensor").
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only: nothing here calls libcuda directly)
#include <cuda_runtime_api.h>

#include <cstdint>

namespace flashkit {
namespace cuda {

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled as the driver provides it (looked up once), or nullptr when it does
// not; a failed lookup leaves no sticky runtime error behind.
inline EncodeTiledFn encode_tiled() {
  static const EncodeTiledFn fn = []() -> EncodeTiledFn {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &ptr, cudaEnableDefault, &q);
#endif
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || ptr == nullptr) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<EncodeTiledFn>(ptr);
  }();
  return fn;
}

#ifdef __CUDACC__
namespace tma {

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also expects `bytes` of copy-engine traffic before the phase completes.
__device__ __forceinline__ void mbar_arm(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// One arrival (release, CTA scope).
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Until the phase of parity `parity` has completed (acquire, CTA scope). A barrier whose first
// phase has not completed yet counts the "previous" phase, parity 1, as completed: a producer
// waits on an empty slot with parity 1 first.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
// Whether the phase of parity `parity` has completed, without waiting (acquire, CTA scope).
__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// A box of a 3-D tensor map into this CTA's shared memory at `dst`; completes its bytes on `bar`.
// Coordinates in elements, innermost first; out-of-range elements arrive as zeros.
__device__ __forceinline__ void load_3d(const void* map, uint32_t dst, uint32_t bar, int c0,
                                        int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, "
      "%4, %5}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

}  // namespace tma
#endif

}  // namespace cuda
}  // namespace flashkit
