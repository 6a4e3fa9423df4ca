// Host side of one kernel instantiation: copy-engine descriptors, parameter block, launch.
// Included by the per-head-dim translation units (launch_hdim*.cu), fp16 and bf16 each.
#pragma once

// wgmma's N = 176 (and the other shapes that are not 8 x 2^k) are behind this switch; without
// it CuTe's op selector splits an N = 176 tile into eleven N = 16 instructions. Set before any
// CuTe header, identically in every attention translation unit (each includes this file first).
#ifndef CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#define CUTE_SM90_EXTENDED_MMA_SHAPES_ENABLED
#endif

#include <cuda_runtime_api.h>

#if defined(FLASHKIT_ATTENTION_TRACE)
#include <cstdio>
#endif


#include "cuda/attention/sm90/kernel.cuh"
#include "cuda/attention/sm90/launch.h"
#include "cuda/common/check.h"

namespace flashkit {
namespace cuda {
namespace sm90_attention {

// CuTe leaves a descriptor zeroed when the driver refuses to encode it; the predicate should
// make that impossible, and this turns it into a status instead of a device fault.
inline bool descriptor_encoded(const void* desc, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(desc);
  for (size_t i = 0; i < bytes; ++i)
    if (p[i] != 0) return true;
  return false;
}

// The fp8 kernel's extra arguments (attention_fp8_sm90.cu): the descale factors and, where a
// pass writes V^T first (head_dim 256 with many query rows per key), the keys per row of that
// copy.
struct Fp8Launch {
  AttentionFp8Descales descales;
  int32_t vt_keys = 0;
};

template <class Element, int kHeadDim, int kBlockN, bool kCache, int kBlockM_ = kBlockM,
          int kStages_ = stages_for(kHeadDim), bool kVtInKernel_ = true>
fk_status_t launch_kernel(const AttnArgs& a, cudaStream_t stream, const Fp8Launch* fp8 = nullptr) {
  using Kernel = AttentionKernel<Element, kHeadDim, kBlockN, kCache, kBlockM_, kStages_, kVtInKernel_>;
  if (a.block_m != kBlockM_) {
    return set_error(FK_ERROR_INTERNAL, "cuda.sm90.attention: tile height differs from the host's count");
  }
  typename Kernel::Params params;
  if constexpr (Kernel::kFp8) {
    if (fp8 == nullptr) return set_error(FK_ERROR_INTERNAL, "cuda.sm90.attention_fp8: no fp8 arguments");
    params.mainloop = Kernel::Mainloop::make_params(a, fp8->vt_keys);
    params.fp8.d = fp8->descales;
  } else {
    params.mainloop = Kernel::Mainloop::make_params(a);
  }
  params.args = a;
  bool encoded =
      descriptor_encoded(params.mainloop.tma_q.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) &&
      descriptor_encoded(params.mainloop.tma_k.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) &&
      descriptor_encoded(params.mainloop.tma_v.get_tma_descriptor(), sizeof(cute::TmaDescriptor));
  if constexpr (kCache) {
    encoded = encoded &&
              descriptor_encoded(params.mainloop.tma_kb.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) &&
              descriptor_encoded(params.mainloop.tma_vb.get_tma_descriptor(), sizeof(cute::TmaDescriptor)) &&
              descriptor_encoded(params.mainloop.tma_qb.get_tma_descriptor(), sizeof(cute::TmaDescriptor));
  }
  if constexpr (Kernel::kTmaStore) {
    if (a.o_tma) {
      using namespace cute;
      params.o_store.shape_o = typename Kernel::Mainloop::ShapeG{a.tma_rows_q, a.head_dim, a.nheads, a.tma_batch};
      auto o = Kernel::gmem_o(
          static_cast<Element*>(a.out), params.o_store.shape_o,
          typename Kernel::Mainloop::StrideRowMajor{tma_stride(a.o_row_stride, a.tma_rows_q), _1{},
                                                    tma_stride(a.o_head_stride, a.nheads),
                                                    tma_stride(a.o_batch_stride, a.tma_batch)});
      params.o_store.tma_o = make_tma_copy(SM90_TMA_STORE{}, o, typename Kernel::SmemLayoutOHalf{});
      encoded = encoded && descriptor_encoded(params.o_store.tma_o.get_tma_descriptor(),
                                              sizeof(cute::TmaDescriptor));
    }
  }
  if (!encoded) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.attention: the driver refused a tensor-map descriptor");
  }
  auto* kernel = &attention_sm90_kernel<Kernel>;
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   Kernel::kSmemBytes),
              "cuda.sm90.attention: raising the kernel's shared-memory limit");
#if defined(FLASHKIT_ATTENTION_TRACE)
  // Diagnostic build (trace.h): a zeroed stamp buffer per launch, appended to the file named by
  // FLASHKIT_SM90_ATTENTION_TRACE after the launch, one line per (CTA, role, tile slot) with
  // stamps.
  const char* trace_path = nullptr;
  FK_RETURN_IF_ERROR(TraceStamps::begin("FLASHKIT_SM90_ATTENTION_TRACE", a.grid, stream,
                                        &params.trace, &trace_path,
                                        "cuda.sm90.attention: trace buffer"));
#endif
  kernel<<<dim3(unsigned(a.grid)), dim3(Kernel::kThreads), Kernel::kSmemBytes, stream>>>(params);
#if defined(FLASHKIT_ATTENTION_TRACE)
  TraceStamps::finish(params.trace, trace_path, a.grid, stream, [&](FILE* f, int launch) {
    std::fprintf(f, "# launch %d batch %d nheads %d seqlen_q %d seqlen_k %d head_dim %d "
                    "causal %d window_left %d grid %d tiles %lld consumers %d block_m %d "
                    "block_n %d q_pack %d\n",
                 launch, int(a.batch), int(a.nheads), int(a.seqlen_q), int(a.seqlen_k),
                 int(a.head_dim), int(a.window_right == 0), int(a.window_left), int(a.grid),
                 static_cast<long long>(a.total_tiles), int(Kernel::kConsumers),
                 int(Kernel::kBlockM), int(Kernel::Mainloop::kBlockN), int(a.q_pack));
  });
#endif
  return check_launch("cuda.sm90.attention kernel");
}

// The plain kernel, or its KV-cache instantiation where the call reads a cache (AttnArgs::
// seqused_k / block_table); caches take the masked key-tile width (launch.h), so that pages hold
// whole tiles of it. Unmasked head_dim 64 calls over at least kLongKeys keys take 192-key tiles;
// wide_masked (long causal calls) counts as unmasked here. head_dim 64 calls that the host gave
// 192-row tiles (AttnArgs::block_m) take the three-consumer kernel over 128-key tiles; head_dim
// 256 calls that it gave AttnArgs::keys64 (short keys) the kernel over 64-key tiles; unmasked
// head_dim 128 calls that it gave AttnArgs::narrow (short keys) 128-key tiles, three stages.
// Packed GQA tiles (AttnArgs::q_pack) run on the KV-cache instantiation, batched calls too.
template <class Element, int kHeadDim>
fk_status_t launch(const AttnArgs& a, cudaStream_t stream) {
  if (a.seqused_k != nullptr || a.block_table != nullptr || a.q_pack > 1)
    return launch_kernel<Element, kHeadDim, block_n_for(kHeadDim, true), true>(a, stream);
  if constexpr (kHeadDim == 64) {
    if (a.block_m == kBlockM3) return launch_kernel<Element, kHeadDim, 128, false, kBlockM3>(a, stream);
  }
  if constexpr (kHeadDim == 256) {
    if (a.keys64) return launch_kernel<Element, kHeadDim, 64, false>(a, stream);
  }
  const bool masked = (a.window_left >= 0 || a.window_right >= 0) && !a.wide_masked;
  if constexpr (block_n_long_for(kHeadDim) != block_n_for(kHeadDim, false)) {
    if (!masked && a.seqlen_k >= kLongKeys)
      return launch_kernel<Element, kHeadDim, block_n_long_for(kHeadDim), false>(a, stream);
  }
  if constexpr (kHeadDim == 128) {
    if (!masked && a.narrow)
      return launch_kernel<Element, kHeadDim, 128, false, kBlockM, kNarrowStages>(a, stream);
  }
  if constexpr (block_n_for(kHeadDim, true) != block_n_for(kHeadDim, false)) {
    if (!masked) return launch_kernel<Element, kHeadDim, block_n_for(kHeadDim, false), false>(a, stream);
  }
  return launch_kernel<Element, kHeadDim, block_n_for(kHeadDim, true), false>(a, stream);
}

}  // namespace sm90_attention
}  // namespace cuda
}  // namespace flashkit
