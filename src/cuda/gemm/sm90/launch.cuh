// Host side of one kernel instantiation: copy-engine descriptors, parameter block, grid, launch.
// Included by the per-dtype translation units (launch_bf16.cu, launch_f16.cu, launch_fp8_*.cu),
// which list the instantiations: 4 layouts (fp8: 2 B formats) x 3 kernels each (cooperative
// with 3 or 4 stages, ping-pong), plus the skinny kernel for K-major A (16-bit: B K- or
// MN-major; fp8: 2 B formats).
#pragma once

#include <cuda_runtime_api.h>

#include <cstring>
#if defined(FLASHKIT_GEMM_TRACE)
#include <cstdio>
#endif

#include "cuda/common/check.h"
#include "cuda/gemm/sm90/kernel.cuh"
#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// CuTe leaves a descriptor zeroed when the driver refuses to encode it (and writes the reason
// to std::cerr); the predicate (describe_operand: alignment, stride limits, no overlapping rows)
// should make that impossible, and this turns it into a status instead of a device fault.
inline bool descriptor_encoded(const void* desc, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(desc);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != 0) return true;
  return false;
}

// D's tensor map for the copy-engine store path: dimensions (N, M, L) with N the unit stride,
// box 128 bytes x 64 rows x 1 batch, 128-byte swizzle (epilogue_store_tma). False when the
// driver refuses it; the caller then keeps the register-store path.
inline bool encode_d_map(const EpilogueParams& e, cute::TmaDescriptor* map) {
  const DType dt = static_cast<DType>(e.d_dtype);
  const int64_t es = dtype_bytes(dt);
  const cuuint64_t dims[3] = {cuuint64_t(e.N), cuuint64_t(e.M), cuuint64_t(e.d_map_batch)};
  const cuuint64_t strides[2] = {cuuint64_t(e.d_map_row_bytes), cuuint64_t(e.d_map_batch_bytes)};
  const cuuint32_t box[3] = {cuuint32_t(128 / es), cuuint32_t(kEpiRows), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = CUTLASS_CUDA_DRIVER_WRAPPER_CALL(cuTensorMapEncodeTiled)(
      map, es == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, e.d,
      dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS && descriptor_encoded(map, sizeof(*map));
}

// One launch of `kernel` (an instantiation of gemm_sm90_kernel or gemm_sm90_skinny_kernel for
// Kernel).
template <class Kernel>
fk_status_t launch_kernel(const GemmArgs& g, cudaStream_t stream,
                          void (*kernel)(const typename Kernel::Params)) {
  typename Kernel::Params params;
  params.mainloop = Kernel::Mainloop::make_params(g);
  if (!descriptor_encoded(params.mainloop.tma_a.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) ||
      !descriptor_encoded(params.mainloop.tma_b.get_tma_descriptor(), sizeof(cute::TmaDescriptor))) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.gemm: the driver refused a tensor-map descriptor (M %lld, N %lld, "
                     "K %lld)", static_cast<long long>(g.M), static_cast<long long>(g.N),
                     static_cast<long long>(g.K));
  }
  params.epilogue = g.epilogue;
  std::memset(&params.d_map, 0, sizeof(params.d_map));
  if (params.epilogue.tma_store && !encode_d_map(params.epilogue, &params.d_map)) {
    params.epilogue.tma_store = 0;
  }
  params.scheduler = g.scheduler;
  params.splitk = g.splitk;
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   Kernel::kSmemBytes),
              "cuda.sm90.gemm: raising the kernel's shared-memory limit");
#if defined(FLASHKIT_GEMM_TRACE)
  // Diagnostic build (trace.h): a zeroed stamp buffer per launch of the cooperative kernel,
  // appended to the file named by FLASHKIT_SM90_GEMM_TRACE after the launch, one line per
  // (CTA, role, tile slot) that has stamps.
  const char* trace_path = nullptr;
  params.trace = nullptr;
  if (Kernel::kSchedule == kCooperative) {
    FK_RETURN_IF_ERROR(TraceStamps::begin("FLASHKIT_SM90_GEMM_TRACE", g.grid, stream,
                                          &params.trace, &trace_path, "cuda.sm90.gemm: trace buffer"));
  }
#endif
  kernel<<<dim3(unsigned(g.grid)), dim3(Kernel::kThreads), Kernel::kSmemBytes, stream>>>(params);
#if defined(FLASHKIT_GEMM_TRACE)
  TraceStamps::finish(params.trace, trace_path, g.grid, stream, [&](FILE* f, int launch) {
    std::fprintf(f, "# launch %d M %lld N %lld K %lld grid %d schedule %d stages %d splits %d "
                    "k_tiles %d tiles %lld\n",
                 launch, static_cast<long long>(g.M), static_cast<long long>(g.N),
                 static_cast<long long>(g.K), int(g.grid), int(g.pingpong), int(g.stages),
                 int(g.scheduler.splits), int(g.scheduler.k_tiles),
                 static_cast<long long>(g.scheduler.total_tiles));
  });
#endif
  return check_launch("cuda.sm90.gemm kernel");
}

template <class ElementA, class ElementB, bool KMajorA, bool KMajorB, int Stages, int Schedule>
fk_status_t launch_config(const GemmArgs& g, cudaStream_t stream) {
  using Kernel = GemmKernel<ElementA, ElementB, KMajorA, KMajorB, Stages, Schedule>;
  return launch_kernel<Kernel>(g, stream, &gemm_sm90_kernel<Kernel>);
}

// The skinny kernel (GemmArgs::skinny): K-major A only, so two instantiations per 16-bit input
// dtype (B K- or MN-major) and one per fp8 format pair.
template <class ElementA, class ElementB, bool KMajorB>
fk_status_t launch_skinny(const GemmArgs& g, cudaStream_t stream) {
  using Kernel = SkinnyKernel<ElementA, ElementB, true, KMajorB>;
  return launch_kernel<Kernel>(g, stream, &gemm_sm90_skinny_kernel<Kernel>);
}

// Schedule and ring depth (GemmArgs::pingpong, ::stages): four kernels per layout, the
// cooperative schedule with 3 or 4 stages, the 64-row ping-pong schedule (4 stages of 64-row
// A) and the 128-column one (kPp128Stages stages of 128 x 128 tiles).
template <class ElementA, class ElementB, bool KMajorA, bool KMajorB>
fk_status_t launch_layout(const GemmArgs& g, cudaStream_t stream) {
  if (g.pingpong == kPingPong64)
    return launch_config<ElementA, ElementB, KMajorA, KMajorB, 4, kPingPong64>(g, stream);
  if (g.pingpong == kPingPong128)
    return launch_config<ElementA, ElementB, KMajorA, KMajorB, kPp128Stages, kPingPong128>(g, stream);
  return g.stages == 4
             ? launch_config<ElementA, ElementB, KMajorA, KMajorB, 4, kCooperative>(g, stream)
             : launch_config<ElementA, ElementB, KMajorA, KMajorB, 3, kCooperative>(g, stream);
}

template <class Element>
fk_status_t launch_dtype(const GemmArgs& g, cudaStream_t stream) {
  if (g.skinny) {
    if (!g.a.k_major) {
      return set_error(FK_ERROR_INTERNAL, "cuda.sm90.gemm: the skinny kernel reads K-major A only");
    }
    return g.b.k_major ? launch_skinny<Element, Element, true>(g, stream)
                       : launch_skinny<Element, Element, false>(g, stream);
  }
  if (g.a.k_major) {
    return g.b.k_major ? launch_layout<Element, Element, true, true>(g, stream)
                       : launch_layout<Element, Element, true, false>(g, stream);
  }
  return g.b.k_major ? launch_layout<Element, Element, false, true>(g, stream)
                     : launch_layout<Element, Element, false, false>(g, stream);
}

// fp8 A of format ElementA: K-major A and B only (the predicate guarantees it), B's format
// chosen at run time.
template <class ElementA>
fk_status_t launch_fp8(const GemmArgs& g, cudaStream_t stream) {
  if (!g.a.k_major || !g.b.k_major) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.gemm: fp8 operands must be K-major");
  }
  if (g.skinny) {
    return g.b_dtype == DType::F8E4M3 ? launch_skinny<ElementA, cute::float_e4m3_t, true>(g, stream)
                                      : launch_skinny<ElementA, cute::float_e5m2_t, true>(g, stream);
  }
  return g.b_dtype == DType::F8E4M3
             ? launch_layout<ElementA, cute::float_e4m3_t, true, true>(g, stream)
             : launch_layout<ElementA, cute::float_e5m2_t, true, true>(g, stream);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
