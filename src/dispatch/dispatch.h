// Kernel variant tables. Each op has one table, fastest first; each entry names its backend,
// family and a predicate over the device and the validated problem. The first entry that
// matches the context runs. The generic CUDA entry and the CPU entry accept every valid
// problem, so a valid call never fails for lack of a kernel (ggml's backend registry and
// FlashAttention's per-arch tables are the models).
#pragma once

#include <cstddef>

#include "core/backend.h"
#include "core/context.h"

namespace flashkit {

template <class Problem, class Fn>
struct Variant {
  const char* name;           // reported by fk_*_select_kernel(), e.g. "cuda.generic.gemm"
  fk_backend_t backend;       // CPU or CUDA
  fk_kernel_family_t family;  // CPU, GENERIC, SM80, SM90
  bool (*supports)(const DeviceCaps&, const Problem&);  // nullptr: every valid problem
  Fn run;
  WorkspaceFn<Problem> workspace;  // nullptr: takes no scratch (fk_*_workspace_size() reports 0)
};

using AttentionVariant = Variant<AttentionProblem, AttentionFn>;
using GemmVariant = Variant<GemmProblem, GemmFn>;
using MonarchVariant = Variant<MonarchProblem, MonarchFn>;
using BlockdiagVariant = Variant<BlockdiagProblem, BlockdiagFn>;
using FFTConvVariant = Variant<FFTConvProblem, FFTConvFn>;

// True when the context may run kernels of `family`: its own backend, a family the device can
// run, and (when a family is forced) that family or the generic fallback.
bool family_allowed(const fk_context_t* ctx, fk_backend_t backend, fk_kernel_family_t family);

template <class Problem, class Fn>
const Variant<Problem, Fn>* select_variant(const fk_context_t* ctx,
                                           const Variant<Problem, Fn>* table, size_t n,
                                           const Problem& p) {
  for (size_t i = 0; i < n; ++i) {
    const auto& v = table[i];
    if (!family_allowed(ctx, v.backend, v.family)) continue;
    if (v.supports && !v.supports(ctx->caps, p)) continue;
    return &v;
  }
  return nullptr;
}

const AttentionVariant* select_attention(const fk_context_t* ctx, const AttentionProblem& p);
const GemmVariant* select_gemm(const fk_context_t* ctx, const GemmProblem& p);
const MonarchVariant* select_monarch(const fk_context_t* ctx, const MonarchProblem& p);
const BlockdiagVariant* select_blockdiag(const fk_context_t* ctx, const BlockdiagProblem& p);
const FFTConvVariant* select_fftconv(const fk_context_t* ctx, const FFTConvProblem& p);

}  // namespace flashkit
