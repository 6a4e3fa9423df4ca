// The variant tables, one per op, fastest first. Adding a kernel = adding a row here.
#include "dispatch/dispatch.h"

#if defined(FLASHKIT_WITH_CUDA)
#include "cuda/attention/common/split_kv.h"
#include "cuda/attention/sm80/attention_packed.h"
#include "cuda/fftconv/sm80/fftconv_direct.h"
#include "cuda/fftconv/sm80/fftconv_reg.h"
#endif
#if defined(FLASHKIT_WITH_SM90)
#include "cuda/attention/sm90/attention_sm90.h"
#include "cuda/fftconv/sm90/fftconv_direct90.h"
#include "cuda/gemm/sm90/gemm_sm90.h"
#include "cuda/monarch/sm90/monarch_sm90.h"
#endif

namespace flashkit {

bool family_allowed(const fk_context_t* ctx, fk_backend_t backend, fk_kernel_family_t family) {
  if (backend != ctx->backend) return false;
  if (backend == FK_BACKEND_CPU) return true;
  if (family == FK_KERNEL_FAMILY_GENERIC) return true;
  if (ctx->forced_family != FK_KERNEL_FAMILY_AUTO && ctx->forced_family != family) return false;
  switch (family) {
    case FK_KERNEL_FAMILY_SM90: return ctx->caps.cc_major == 9 && ctx->caps.cc_minor == 0;
    case FK_KERNEL_FAMILY_SM80: return ctx->caps.cc_major >= 8;
    default: return false;
  }
}

#define FK_COUNT(t) (sizeof(t) / sizeof((t)[0]))

static const AttentionVariant kAttention[] = {
#if defined(FLASHKIT_WITH_CUDA)
    // Varlen batches of many short sequences (cc >= 8.0, Hopper included): query tiles packed
    // across sequence ends (attention_packed.h); its predicate takes only what packing pays for.
    {"cuda.sm80.attention_packed", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::attention_packed_supported, cuda::sm80::attention_packed, nullptr},
#endif
#if defined(FLASHKIT_WITH_SM90)
    // Hopper (FlashAttention-3 class): declines what it does not take, the sm80 row serves it.
    // The CUDA rows run few-tile decode calls with their keys split (split_kv.h).
    {"cuda.sm90.attention", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM90,
     cuda::sm90_attention::attention_supported,
     cuda::attn::run_with_split<cuda::sm90_attention::attention_supported,
                                cuda::sm90_attention::attention, 1,
                                cuda::sm90_attention::split_heads_per_tile,
                                cuda::sm90_attention::split_tile_bytes_per_s, true>,
     cuda::attn::workspace_with_split<cuda::sm90_attention::attention_supported, 1,
                                      cuda::sm90_attention::split_heads_per_tile,
                                      cuda::sm90_attention::split_tile_bytes_per_s, true>},
#endif
#if defined(FLASHKIT_WITH_CUDA)
    // sm80-class kernel: every cc >= 8.0 (family_allowed() admits SM80 there), and what the
    // sm90 row declines on compute capability 9.0.
    {"cuda.sm80.attention", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::attention_supported,
     cuda::attn::run_with_split<cuda::sm80::attention_supported, cuda::sm80::attention>,
     cuda::attn::workspace_with_split<cuda::sm80::attention_supported>},
    {"cuda.generic.attention", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_GENERIC,
     cuda::generic::attention_supported,
     cuda::attn::run_with_split<cuda::generic::attention_supported, cuda::generic::attention>,
     cuda::attn::workspace_with_split<cuda::generic::attention_supported>},
#endif
    {"cpu.attention", FK_BACKEND_CPU, FK_KERNEL_FAMILY_CPU, nullptr, cpu::attention, nullptr},
};

static const GemmVariant kGemm[] = {
#if defined(FLASHKIT_WITH_SM90)
    {"cuda.sm90.gemm", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM90, cuda::sm90::gemm_supported,
     cuda::sm90::gemm, cuda::sm90::gemm_workspace},
#endif
#if defined(FLASHKIT_WITH_CUDA)
    // mma.sync + cp.async kernel for every cc >= 8.0 device; on Hopper it runs when the sm90
    // row declines or the SM80 family is forced.
    {"cuda.sm80.gemm", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80, cuda::sm80::gemm_supported,
     cuda::sm80::gemm, cuda::sm80::gemm_workspace},
    {"cuda.generic.gemm", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_GENERIC, nullptr, cuda::generic::gemm,
     nullptr},
#endif
    {"cpu.gemm", FK_BACKEND_CPU, FK_KERNEL_FAMILY_CPU, nullptr, cpu::gemm, nullptr},
};

static const MonarchVariant kMonarch[] = {
#if defined(FLASHKIT_WITH_SM90)
    // Hopper thread-block-cluster kernel: weights resident in the cluster's shared memory
    // (nblocks2 in {8, 16, 32, 64}, s in {32, 64, 128}; see its predicate); the sm80 row serves
    // what it declines.
    {"cuda.sm90.monarch", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM90, cuda::sm90::monarch_supported,
     cuda::sm90::monarch, nullptr},
#endif
#if defined(FLASHKIT_WITH_CUDA)
    // The two factors as block-diagonal kernel calls with the permutations as tiled transposes,
    // a chunk of tokens at a time through scratch (monarch_unfused.cu): at the block-diagonal
    // kernel's rate, ahead of the fused sm80-class kernel, which streams both factors' weights
    // through every token tile (benchmarks/RESULTS.md, "Unfused Monarch").
    {"cuda.sm80.monarch_unfused", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::monarch_unfused_supported, cuda::sm80::monarch_unfused,
     cuda::sm80::monarch_unfused_workspace},
    // Fused sm80-class kernel (fp16/bf16, block sizes multiples of 16; see its predicate).
    {"cuda.sm80.monarch", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80, cuda::sm80::monarch_supported,
     cuda::sm80::monarch, nullptr},
    {"cuda.generic.monarch", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_GENERIC, nullptr,
     cuda::generic::monarch, cuda::generic::monarch_workspace},
#endif
    {"cpu.monarch", FK_BACKEND_CPU, FK_KERNEL_FAMILY_CPU, nullptr, cpu::monarch, nullptr},
};

static const BlockdiagVariant kBlockdiag[] = {
#if defined(FLASHKIT_WITH_CUDA)
    {"cuda.sm80.blockdiag_linear", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::blockdiag_supported, cuda::sm80::blockdiag, nullptr},
    {"cuda.generic.blockdiag_linear", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_GENERIC, nullptr,
     cuda::generic::blockdiag, nullptr},
#endif
    {"cpu.blockdiag_linear", FK_BACKEND_CPU, FK_KERNEL_FAMILY_CPU, nullptr, cpu::blockdiag,
     nullptr},
};

static const FFTConvVariant kFFTConv[] = {
#if defined(FLASHKIT_WITH_SM90)
    // The same Toeplitz product on wgmma, Hopper only (AUTO: 256 <= seqlen <= 1024, batch >= 64,
    // gated calls only on its streamed form; FLASHKIT_FFTCONV_DIRECT=1: seqlen <= 1152, any batch, gates; fp16 only
    // without a pregate).
    {"cuda.sm90.fftconv_direct", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM90,
     cuda::sm90::fftconv_direct_supported, cuda::sm90::fftconv_direct, nullptr},
#endif
#if defined(FLASHKIT_WITH_CUDA)
    // Short rows with a batch sharing each filter (AUTO: 256 <= seqlen <= 1024, batch >= 24,
    // fp16 without a pregate; FLASHKIT_FFTCONV_DIRECT=1: seqlen <= 2048, any batch): the
    // convolution as a Toeplitz matrix product on mma.sync (fp16/bf16, every mode; no
    // workspace).
    {"cuda.sm80.fftconv_direct", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::fftconv_direct_supported, cuda::sm80::fftconv_direct, nullptr},
    // Register-resident FFT convolution (two rows per complex transform, 32 x 32 Monarch DFTs
    // on mma.sync with fp16 operands): fp16/bf16, fft_size 256..32768, and 65536 for seqlen
    // <= 32768 (two 32K-point passes).
    {"cuda.sm80.fftconv_reg", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80,
     cuda::sm80::fftconv_reg_supported, cuda::sm80::fftconv_reg,
     cuda::sm80::fftconv_reg_workspace},
    // Fused tensor-core FFT convolution: fp16/bf16, fft_size 256..32768 (one sequence per
    // block in shared memory); larger sizes and fp32 go to the generic row.
    {"cuda.sm80.fftconv", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_SM80, cuda::sm80::fftconv_supported,
     cuda::sm80::fftconv, cuda::sm80::fftconv_workspace},
    {"cuda.generic.fftconv", FK_BACKEND_CUDA, FK_KERNEL_FAMILY_GENERIC, nullptr,
     cuda::generic::fftconv, cuda::generic::fftconv_workspace},
#endif
    {"cpu.fftconv", FK_BACKEND_CPU, FK_KERNEL_FAMILY_CPU, nullptr, cpu::fftconv, nullptr},
};

const AttentionVariant* select_attention(const fk_context_t* ctx, const AttentionProblem& p) {
  return select_variant(ctx, kAttention, FK_COUNT(kAttention), p);
}
const GemmVariant* select_gemm(const fk_context_t* ctx, const GemmProblem& p) {
  return select_variant(ctx, kGemm, FK_COUNT(kGemm), p);
}
const MonarchVariant* select_monarch(const fk_context_t* ctx, const MonarchProblem& p) {
  return select_variant(ctx, kMonarch, FK_COUNT(kMonarch), p);
}
const BlockdiagVariant* select_blockdiag(const fk_context_t* ctx, const BlockdiagProblem& p) {
  return select_variant(ctx, kBlockdiag, FK_COUNT(kBlockdiag), p);
}
const FFTConvVariant* select_fftconv(const fk_context_t* ctx, const FFTConvProblem& p) {
  return select_variant(ctx, kFFTConv, FK_COUNT(kFFTConv), p);
}

}  // namespace flashkit
