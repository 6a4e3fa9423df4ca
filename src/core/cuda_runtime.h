// The few CUDA runtime services the API layer needs (device discovery, reading back small
// index tensors). Implemented in src/cuda/common/runtime.cu, or by src/core/cuda_stub.cpp in a
// CPU-only build, so src/api/ never includes CUDA headers.
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "core/problems.h"

namespace flashkit {
namespace cuda {

// True when the library was built with nvcc.
bool compiled();

// Number of CUDA devices usable by this process (0 when the driver is missing).
int device_count();

// Reads compute capability, SM count, L2 size, opt-in shared memory and name.
fk_status_t query_device(int ordinal, DeviceCaps* caps);

// Copies `bytes` from device memory to host memory ordered on `stream`, then waits for it.
fk_status_t copy_to_host_sync(void* dst, const void* src, size_t bytes, int ordinal,
                              void* stream);

// Whether `stream` is being captured into a CUDA graph (cudaStreamIsCapturing), where a call
// must not wait for the GPU: it would end the capture with an error.
fk_status_t stream_is_capturing(void* stream, int ordinal, bool* capturing);

// fk_attention_fp8_forward on the CUDA backend: dequantises p's fp8 q, k, v (with `d`'s
// factors) into bf16 copies from the call's scratch (the launch workspace first), enqueues it
// on the call's stream, then calls `run_inner(exec', inner, user)` with `inner` = p over the
// copies (dtype bf16, contiguous strides in p's unpacked layout) and exec' the remaining
// workspace. The scratch is released (stream-ordered) after run_inner returns.
using AttentionInnerRun = fk_status_t (*)(const ExecContext& exec, AttentionProblem& inner,
                                          void* user);
fk_status_t attention_fp8_dequant_run(const ExecContext& exec, const AttentionProblem& p,
                                      const AttentionFp8Descales& d, AttentionInnerRun run_inner,
                                      void* user);

}  // namespace cuda
}  // namespace flashkit
