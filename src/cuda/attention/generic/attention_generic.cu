// Generic CUDA attention forward: FlashAttention's online softmax (Dao et al. 2022, Algorithm 1;
// FlashAttention-2, Dao 2023, Section 3.1: rescale the running output once per key tile, divide
// by the row sum once at the end) on CUDA cores in fp32. It accepts every valid
// AttentionProblem: head_dim 1..256, any strides, batched or varlen (cu_seqlens read on the
// device), empty sequences, GQA/MQA, bottom-right aligned causal mask and sliding window,
// softcap, and sizes past 2^31 elements (all offsets are 64-bit). The score matrix never leaves
// the multiprocessor.
//
// Work split. A block (4 warps) owns a tile of query rows of one (batch, head); each warp owns
// kRows of those rows. Key/value tiles of 32 rows are staged in shared memory as fp32 and shared
// by all the block's rows. Within a warp, lane j computes the score of key j for each of its
// rows (so the row max/sum are warp shuffles), and for P.V lane l accumulates output dims
// l, l+32, ... while p_j is broadcast from lane j with a shuffle.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/backend.h"
#include "cuda/attention/common/logits.h"
#include "cuda/attention/common/kvcache.h"
#include "cuda/attention/common/varlen.h"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/scratch.h"

namespace flashkit {
namespace cuda {
namespace generic {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kKeyTile = 32;          // one key per lane
constexpr int kKtPitch = kKeyTile + 1;  // K^T rows padded: the transposing store is conflict-free

// Head-dim bucket: kDMax / 32 output dims per lane. Rows per warp shrink for the largest bucket
// to keep the accumulators (kRows * kDMax / 32 floats) in registers.
template <int kDMax>
struct Cfg {
  static constexpr int kDimsPerLane = kDMax / 32;
  static constexpr int kRows = kDMax <= 128 ? 8 : 4;
  static constexpr int kBlockRows = kRows * kWarps;
  // Register budget: blocks per SM the compiler must allow (65536 / (128 * n) registers per
  // thread). The largest bucket is limited to 2 blocks by its 81 KB of shared memory anyway;
  // 3 keeps the others' accumulators out of local memory (4 spills them).
  static constexpr int kMinBlocks = kDMax >= 256 ? 2 : 3;
};

// Shared memory of one block for a head_dim padded to a multiple of 4 (`dpad`). `kv_shared`:
// one buffer holds the K^T tile, then the V tile (see the kernel): 50 KB instead of 81 KB at
// head_dim 256, for GPUs with 64 KB per block (Turing).
template <int kDMax>
size_t smem_bytes(int dpad, bool kv_shared) {
  const size_t kt = static_cast<size_t>(dpad) * kKtPitch, v = static_cast<size_t>(kKeyTile) * dpad;
  return sizeof(float) * (static_cast<size_t>(Cfg<kDMax>::kBlockRows) * dpad +
                          (kv_shared ? std::max(kt, v) : kt + v));
}

template <int kDMax>
__global__ void __launch_bounds__(kThreads, Cfg<kDMax>::kMinBlocks)
    attention_fwd_kernel(const AttentionProblem p, int64_t q_tiles, int dpad, bool kv_shared) {
  using C = Cfg<kDMax>;
  constexpr int kRows = C::kRows, kDpl = C::kDimsPerLane, kBR = C::kBlockRows;
  extern __shared__ __align__(16) float smem[];
  float* sQ = smem;                  // [kBR][dpad]
  float* sKt = sQ + kBR * dpad;      // [dpad][kKtPitch]  (K transposed)
  // [kKeyTile][dpad]; with kv_shared in sKt's place, loaded once the scores are in registers.
  float* sV = kv_shared ? sKt : sKt + dpad * kKtPitch;

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int D = static_cast<int>(p.head_dim);
  // Scores in base 2 (exp2f is one instruction): x = log2(e) * s, s = scale * q.k, or
  // s = softcap * tanh(scale * q.k / softcap) with Gemma 2's cap (attention/common/logits.h).
  const attn::LogitScale ls = attn::logit_scale(p.softmax_scale, p.softcap);
  const bool capped = ls.softcap;
  const float pre = capped ? ls.cap_pre : ls.scale_log2;
  const float post = capped ? ls.cap_post : 1.0f;
  const int64_t group = p.nheads / p.nheads_k;
  const int64_t right = p.causal ? 0 : p.window_right;  // causal is the window (left, 0)
  const int64_t left = p.window_left;

  const int64_t total = q_tiles * p.nheads * p.batch;
  for (int64_t work = blockIdx.x; work < total; work += gridDim.x) {
    // Consecutive blocks share (batch, head) so their K/V tiles meet in L2; the last query
    // tiles (the longest under a causal mask) are started first.
    const int64_t tile = q_tiles - 1 - work % q_tiles;
    const int64_t h = (work / q_tiles) % p.nheads;
    const int64_t b = work / (q_tiles * p.nheads);
    const int64_t hk = h / group;

    int64_t row0_q = 0, row0_k = 0, len_q = p.seqlen_q, len_k = p.seqlen_k;
    if (p.varlen) {
      attn::varlen_rows(p.cu_seqlens_q, b, p.total_q, &row0_q, &len_q);
      attn::varlen_rows(p.cu_seqlens_k, b, p.total_k, &row0_k, &len_k);
    }
    if (p.seqused_k != nullptr) len_k = attn::cache_len(p.seqused_k, b, p.seqlen_k);
    const int64_t i_begin = tile * kBR;
    if (i_begin >= len_q) continue;  // uniform across the block
    const int64_t i_end = min(i_begin + kBR, len_q);
    // Bottom-right alignment: query row i sits at key position i + shift.
    const int64_t shift = len_k - len_q;

    const int64_t q_off = b * p.q_batch_stride + row0_q * p.q_row_stride + h * p.q_head_stride;
    const int64_t k_off = b * p.k_batch_stride + row0_k * p.k_row_stride + hk * p.k_head_stride;
    const int64_t v_off = b * p.v_batch_stride + row0_k * p.v_row_stride + hk * p.v_head_stride;

    __syncthreads();  // the previous work item's readers of sQ are done
    for (int r = warp; r < kBR; r += kWarps) {
      const int64_t i = i_begin + r;
      for (int d = lane; d < dpad; d += 32) {
        sQ[r * dpad + d] = (i < i_end && d < D)
                               ? load_float(p.q, p.dtype, q_off + i * p.q_row_stride + d)
                               : 0.0f;
      }
    }

    // Keys any row of this tile may see.
    int64_t j_lo = left >= 0 ? i_begin + shift - left : 0;
    int64_t j_hi = right >= 0 ? (i_end - 1) + shift + right : len_k - 1;
    j_lo = max(j_lo, int64_t(0));
    j_hi = min(j_hi, len_k - 1);

    float m[kRows], l[kRows], acc[kRows][kDpl];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
#pragma unroll
      for (int t = 0; t < kDpl; ++t) acc[r][t] = 0.0f;
    }

    if (j_lo <= j_hi) {
      for (int64_t j0 = (j_lo / kKeyTile) * kKeyTile; j0 <= j_hi; j0 += kKeyTile) {
        __syncthreads();  // everyone is done with the previous K/V tile (and sQ is written)
        // K^T and V rows jj of this tile (with kv_shared, K^T only: `want_v` false).
        auto load_kv = [&](bool want_k, bool want_v) {
          for (int jj = warp; jj < kKeyTile; jj += kWarps) {
            const int64_t j = j0 + jj;
            const bool in = j < len_k;
            int64_t kj = k_off + j * p.k_row_stride, vj = v_off + j * p.v_row_stride;
            if (in && p.block_table != nullptr) {  // paged: row j % page_size of j's page
              const int64_t pg = attn::cache_page(p.block_table, p.block_table_stride, b, j,
                                                  p.page_size, p.num_pages);
              const int64_t r = j % p.page_size;
              kj = pg * p.k_batch_stride + r * p.k_row_stride + hk * p.k_head_stride;
              vj = pg * p.v_batch_stride + r * p.v_row_stride + hk * p.v_head_stride;
            }
            for (int d = lane; d < dpad; d += 32) {
              const bool ok = in && d < D;
              if (want_k) sKt[d * kKtPitch + jj] = ok ? load_float(p.k, p.dtype, kj + d) : 0.0f;
              if (want_v) sV[jj * dpad + d] = ok ? load_float(p.v, p.dtype, vj + d) : 0.0f;
            }
          }
        };
        load_kv(true, !kv_shared);
        __syncthreads();

        // S = Q K^T for this warp's rows and key j0 + lane.
        float s[kRows];
#pragma unroll
        for (int r = 0; r < kRows; ++r) s[r] = 0.0f;
        const float* qw = sQ + warp * kRows * dpad;
        for (int d = 0; d < dpad; d += 4) {
          const float k0 = sKt[(d + 0) * kKtPitch + lane];
          const float k1 = sKt[(d + 1) * kKtPitch + lane];
          const float k2 = sKt[(d + 2) * kKtPitch + lane];
          const float k3 = sKt[(d + 3) * kKtPitch + lane];
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const float4 qv = *reinterpret_cast<const float4*>(qw + r * dpad + d);
            s[r] = fmaf(qv.x, k0, fmaf(qv.y, k1, fmaf(qv.z, k2, fmaf(qv.w, k3, s[r]))));
          }
        }

        // Mask, then the online softmax update of each row. With rel = j - (position of the
        // warp's first row), row r keeps key j iff r - left <= rel <= r + right: one 64-bit
        // subtraction per tile instead of per row.
        const int64_t j = j0 + lane;
        const int64_t rel = j - (i_begin + warp * kRows + shift);
        const int rows_left = static_cast<int>(i_end - i_begin) - warp * kRows;
        const bool key_ok = j < len_k;
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          bool keep = key_ok && r < rows_left;
          if (left >= 0) keep = keep && rel >= r - left;
          if (right >= 0) keep = keep && rel <= r + right;
          float x = s[r] * pre;
          if (capped) x = tanhf(x) * post;
          x = keep ? x : -INFINITY;
          const float m_new = fmaxf(m[r], warp_max(x));
          float pj = 0.0f, corr = 1.0f;
          // A row that has seen no key yet keeps m = -inf; exp2(-inf - -inf) would be NaN.
          if (m_new != -INFINITY) {
            pj = exp2f(x - m_new);
            corr = exp2f(m[r] - m_new);
          }
          m[r] = m_new;
          l[r] = l[r] * corr + pj;  // lane-partial sums, reduced once at the end
#pragma unroll
          for (int t = 0; t < kDpl; ++t) acc[r][t] *= corr;
          s[r] = pj;
        }

        if (kv_shared) {  // V over K^T, once every warp's scores are in registers
          __syncthreads();
          load_kv(false, true);
          __syncthreads();
        }

        // O += P V: V row jj is read once and used for all kRows rows.
#pragma unroll 4
        for (int jj = 0; jj < kKeyTile; ++jj) {
          float vv[kDpl];
#pragma unroll
          for (int t = 0; t < kDpl; ++t) {
            const int d = lane + 32 * t;
            vv[t] = d < dpad ? sV[jj * dpad + d] : 0.0f;
          }
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const float pj = __shfl_sync(0xffffffffu, s[r], jj);
#pragma unroll
            for (int t = 0; t < kDpl; ++t) acc[r][t] = fmaf(pj, vv[t], acc[r][t]);
          }
        }
      }
    }

    // Epilogue: O / l and lse = ln(sum exp(s)) = (m + log2 l) / log2(e); a row that saw no key
    // gives O = 0 and lse = -inf.
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float lsum = warp_sum(l[r]);
      const int64_t i = i_begin + warp * kRows + r;
      if (i >= i_end) continue;
      const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
      const int64_t o_off =
          b * p.o_batch_stride + (row0_q + i) * p.o_row_stride + h * p.o_head_stride;
#pragma unroll
      for (int t = 0; t < kDpl; ++t) {
        const int d = lane + 32 * t;
        if (d < D) store_float(p.out, p.dtype, o_off + d, acc[r][t] * inv);
      }
      if (p.lse != nullptr && lane == 0) {
        p.lse[b * p.lse_batch_stride + h * p.lse_head_stride + (row0_q + i) * p.lse_row_stride] =
            lsum > 0.0f ? (m[r] + log2f(lsum)) * 0.6931471805599453f
                        : (lsum == 0.0f ? -INFINITY : lsum);  // NaN scores: NaN
      }
    }
  }
}

// Shared memory of the block that runs `head_dim` (its bucket's kernel).
size_t smem_for_head_dim(int64_t head_dim, bool kv_shared) {
  const int dpad = static_cast<int>((head_dim + 3) / 4 * 4);
  if (head_dim <= 32) return smem_bytes<32>(dpad, kv_shared);
  if (head_dim <= 64) return smem_bytes<64>(dpad, kv_shared);
  if (head_dim <= 128) return smem_bytes<128>(dpad, kv_shared);
  return smem_bytes<256>(dpad, kv_shared);
}

// One buffer for the K^T and V tiles (an extra barrier per key tile) where the two do not fit
// beside each other: Turing's 64 KB per block above head_dim 200 (81 KB at 256, 50 KB shared).
// FLASHKIT_GENERIC_ATTENTION_SHARED_KV=1 forces it (read on every call; the GPU tests use it).
bool kv_shared_for(int64_t head_dim, int64_t smem_optin) {
  const char* env = std::getenv("FLASHKIT_GENERIC_ATTENTION_SHARED_KV");
  if (env != nullptr && std::strcmp(env, "1") == 0) return true;
  return smem_optin > 0 && smem_for_head_dim(head_dim, false) > size_t(smem_optin);
}

template <int kDMax>
fk_status_t launch(const AttentionProblem& p, int64_t smem_optin, cudaStream_t stream) {
  const int dpad = static_cast<int>((p.head_dim + 3) / 4 * 4);
  const int64_t q_tiles = (p.seqlen_q + Cfg<kDMax>::kBlockRows - 1) / Cfg<kDMax>::kBlockRows;
  const bool kv_shared = kv_shared_for(p.head_dim, smem_optin);
  const size_t smem = smem_bytes<kDMax>(dpad, kv_shared);
  auto kernel = attention_fwd_kernel<kDMax>;
  if (smem_optin > 0 && smem > size_t(smem_optin)) {
    // No GPU this build runs on has less than 64 KB per block (50 KB needed at head_dim 256).
    return set_error(FK_ERROR_NOT_SUPPORTED,
                     "cuda.generic.attention: head_dim %lld needs %zu bytes of shared memory per "
                     "block and this GPU allows %lld; the CPU backend takes it",
                     static_cast<long long>(p.head_dim), smem, static_cast<long long>(smem_optin));
  }
  if (smem > 48 * 1024) {
    // Above 48 KB a kernel must opt in to dynamic shared memory (largest case: 81 KB at
    // head_dim 256 with separate K^T and V tiles).
    FK_RETURN_IF_ERROR(raise_dynamic_smem_limit(
        reinterpret_cast<const void*>(kernel), smem,
        "cuda.generic.attention: cudaFuncSetAttribute(max dynamic shared memory)"));
  }
  kernel<<<grid_for(q_tiles * p.nheads * p.batch), kThreads, smem, stream>>>(p, q_tiles, dpad,
                                                                            kv_shared);
  return check_launch("cuda.generic.attention kernel");
}

}  // namespace

bool attention_supported(const DeviceCaps& caps, const AttentionProblem& p) {
  return caps.smem_per_block_optin <= 0 || p.head_dim > 256 ||
         smem_for_head_dim(p.head_dim, true) <= size_t(caps.smem_per_block_optin);
}

fk_status_t attention(const ExecContext& ctx, const AttentionProblem& p) {
  if (p.batch <= 0 || p.nheads <= 0 || p.seqlen_q <= 0 || p.head_dim <= 0) return FK_SUCCESS;
  if (p.nheads_k <= 0 || p.nheads % p.nheads_k != 0 || p.head_dim > 256) {
    return set_error(FK_ERROR_INTERNAL, "cuda.generic.attention: unvalidated problem");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const int64_t optin = ctx.caps != nullptr ? ctx.caps->smem_per_block_optin : 0;
  if (p.head_dim <= 32) return launch<32>(p, optin, stream);
  if (p.head_dim <= 64) return launch<64>(p, optin, stream);
  if (p.head_dim <= 128) return launch<128>(p, optin, stream);
  return launch<256>(p, optin, stream);
}

}  // namespace generic
}  // namespace cuda
}  // namespace flashkit
