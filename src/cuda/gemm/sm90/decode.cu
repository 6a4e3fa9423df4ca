// The decode GEMM ("schedule decode" of cuda.sm90.gemm; issue 7, the skinny shapes).
//
// What it is for: a decode step multiplies a handful of token rows A (M <= 32, K) by a linear
// layer's weight, stored (N, K) (K-major: B(k, n) = w[n, k], torch's `a @ w.T`) or (K, N)
// (MN-major: `a @ b`). Every weight element is
// used M times, so the work is reading the weight once from HBM: 2 N K bytes against 2 M N K
// FLOP (bf16 M = 16, N = K = 8192: 134 MB, 32 us at 4.2 TB/s, 4.3 GFLOP). The 64 x 128 tiles of
// the skinny kernel put M on wgmma's 64-row side (3/4 of each product wasted at M = 16) and split
// K to fill the GPU; ncu measured them at 67% of DRAM peak against cuBLAS's 82% (RESULTS.md,
// branch gemm9), whose kernel puts N on the 64-row side instead.
//
// How: CTA x owns BN consecutive weight rows n (BN = 16 to 112 in steps of 16; 32 to 112 for
// an MN-major weight) and walks all of K, 256 k per stage, through a cp.async ring of 3 to 12
// stages (~200-225 KB, one CTA per SM). decode_pick takes the BN of least waves x BN (a CTA's
// time is its BN rows' share of the stream): N = 8192 -> 64 (128 CTAs), 14336 -> 112 (128),
// 4096 -> 32 (128). The copies are plain coalesced streams: K-major, a warp copies one 512-byte
// run of a weight row; MN-major, consecutive threads copy the k rows' BN * 2-byte runs. A (M x
// 256 per stage, the rows past M zero-filled) comes from L2. The products are mma.sync
// m16n8k16 with the weight as the 16-row A operand (ldmatrix, or ldmatrix.trans for MN-major)
// and the tokens as N (one to four 8-token tiles; kernels for 16 or 32 rows of A, the 32-row
// ones only 64 wide): warp w takes k steps 2w and 2w + 1 of every
// stage for all BN rows, so each warp ends with a partial BN x TOK sum over its share of K; the
// eight partials are added in shared memory once, at the end, and the epilogue (alpha, beta C,
// bias, activation, any D/C strides and dtype) runs element by element in the documented order.
// No split-K, no workspace, no atomics: the result does not depend on the launch.
// Shared memory: K-major rows of 512 bytes with unit u of row r at u ^ (r & 7); MN-major k rows
// of 4, 8 or 16 units with the same XOR (or (r >> 1) & 3 for 4 units), so the 8 rows of an
// ldmatrix phase fall in 8 bank groups.
//
// Measured (H200, bf16, back-to-back calls, RESULTS.md "Decode kernel"): M = 16 x 8192 x 8192
// 36.1 us (a @ w.T) / 35.4 us (a @ b), the skinny kernel 41.2 / 41.2, cuBLAS 34.7-35.2: 3.7-3.8
// TB/s of weight. 4 x 28672 x 8192: 111 us, 4.2 TB/s. What is left to cuBLAS (0.90-0.99x on
// most decode shapes) looks like a fixed ~4 us per call (ramp-up and the tail of 128 streams;
// not profiled): the longest stream reaches 4.2 TB/s.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/activation.cuh"
#include "cuda/common/check.h"
#include "cuda/common/dtype.cuh"
#include "cuda/gemm/sm90/decode.h"

namespace flashkit {
namespace cuda {
namespace sm90 {
namespace {

using sm80::cp_async_16;
using sm80::cp_async_commit;
using sm80::cp_async_wait;
using sm80::Elt;
using sm80::ldsm_x4;
using sm80::ldsm_x4_trans;
using sm80::smem_u32;

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kChunkK = 256;            // k per ring stage
constexpr int kRowBytes = kChunkK * 2;  // one stage row of 16-bit elements
constexpr int kMaxTokens = 32;          // rows of A: 16 or 32 per kernel (TOK)

// The ring of one kernel: BN weight rows x 256 k per stage and TOK rows of A (16 or 32; the
// 64-wide 32-token rings have 4 stages, the 16-token ones 5). K-major: BN rows
// of 512 bytes. MN-major: 256 k rows of BN * 2 bytes, each in a row of kMnUnits 16-byte units
// (BN / 8 rounded up to 4, 8 or 16; the rest unused) so that the XOR swizzle stays within the
// row: a padded layout (rows of BN * 2 + 16 bytes, any width) measured 5-12% slower on the H200
// at the same widths, as its rows straddle 128-byte lines.
template <int BN, bool KMB, int TOK>
struct Shape {
  static constexpr int kMnUnits = BN <= 32 ? 4 : BN <= 64 ? 8 : 16;
  static constexpr int kWBytes = KMB ? BN * kRowBytes : kChunkK * kMnUnits * 16;
  static constexpr int kStageBytes = kWBytes + TOK * kRowBytes;
  static constexpr int kStages = (225 * 1024) / kStageBytes > 12 ? 12 : (225 * 1024) / kStageBytes;
  static constexpr int kSmem = kStages * kStageBytes;
  static_assert(kStages >= 3, "a ring of at least three stages");
  static_assert(kWarps * TOK * BN * 4 <= kSmem, "the reduction reuses the ring");
  static_assert((BN * 32) % kThreads == 0, "each thread copies whole 16-byte units");
  static_assert(BN >= 32 || KMB, "MN-major tiles are at least 32 columns wide");
};

struct DecodeParams {
  const void* a;
  const void* b;
  const void* c;     // nullptr: no beta C term
  const void* bias;  // nullptr or (N,)
  void* d;
  int32_t M, N, K, k_chunks;
  int64_t lda, ldb, a_batch, b_batch;
  int64_t c_stride_m, c_stride_n, c_batch;
  int64_t d_stride_m, d_stride_n, d_batch;
  float alpha, beta;
  int32_t activation, d_dtype, c_dtype, bias_dtype;
};

__device__ __forceinline__ uint32_t swz(int row, int unit) {
  return static_cast<uint32_t>(row * kRowBytes + ((unit ^ (row & 7)) << 4));
}
// The MN-major weight stage: 256 k rows of U = 4, 8 or 16 units, XOR-swizzled so that the 8
// consecutive k rows of an ldmatrix phase land in 8 bank groups.
template <int U>
__device__ __forceinline__ uint32_t mn_addr(int row, int unit) {
  const int su = U >= 8 ? unit ^ (row & 7) : unit ^ ((row >> 1) & 3);
  return static_cast<uint32_t>((row * U + su) * 16);
}
// Bytes of a 16-byte unit starting at element `i` of a run of `n` elements that lie in memory
// (zero-filled past the end).
__device__ __forceinline__ int unit_bytes(int i, int n) {
  const int left = n - i;  // elements (no overflow: both <= 2^30)
  return left >= 8 ? 16 : (left > 0 ? 2 * left : 0);
}

// KMB: the weight is K-major (stored (N, K), torch's `a @ w.T`); else MN-major (stored (K, N),
// `a @ b`), read with ldmatrix.trans.
template <class T, int BN, bool KMB, int TOK>
__global__ void __launch_bounds__(kThreads, 1) gemm_decode_kernel(const __grid_constant__ DecodeParams P) {
  using S = Shape<BN, KMB, TOK>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int n0 = static_cast<int>(blockIdx.x) * BN;
  const int64_t z = blockIdx.y;
  const T* A = static_cast<const T*>(P.a) + z * P.a_batch;
  const T* B = static_cast<const T*>(P.b) + z * P.b_batch;
  const uint32_t s0 = smem_u32(smem);

  // Stage `stage` <- k chunk `kc`: BN weight rows and TOK rows of A, 256 k each; what lies past
  // N, M or K is zero-filled.
  auto load = [&](int kc, int stage) {
    const uint32_t sw = s0 + stage * S::kStageBytes, sa = sw + S::kWBytes;
    const int k0 = kc * kChunkK;
#pragma unroll
    for (int i = 0; i < BN * 32 / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      if constexpr (KMB) {
        // A warp copies one 512-byte run of a weight row.
        const int row = idx >> 5, unit = idx & 31;
        const int n = n0 + row, k = k0 + unit * 8;
        const int bytes = n < P.N ? unit_bytes(k, P.K) : 0;
        cp_async_16(sw + swz(row, unit), bytes ? B + static_cast<int64_t>(n) * P.ldb + k : B, bytes);
      } else {
        // Consecutive threads copy the k rows' BN * 2-byte runs in order (U units each).
        constexpr int U = BN / 8;
        const int row = idx / U, unit = idx % U;
        const int n = n0 + unit * 8, k = k0 + row;
        const int bytes = k < P.K ? unit_bytes(n, P.N) : 0;
        const T* src = bytes ? B + static_cast<int64_t>(k) * P.ldb + n : B;
        cp_async_16(sw + mn_addr<S::kMnUnits>(row, unit), src, bytes);
      }
    }
#pragma unroll
    for (int i = 0; i < TOK * 32 / kThreads; ++i) {
      const int idx = tid + i * kThreads;
      const int row = idx >> 5, unit = idx & 31;
      const int k = k0 + unit * 8;
      const int bytes = row < P.M ? unit_bytes(k, P.K) : 0;
      cp_async_16(sa + swz(row, unit), bytes ? A + static_cast<int64_t>(row) * P.lda + k : A, bytes);
    }
  };

  const int KC = P.k_chunks;
#pragma unroll
  for (int s = 0; s < S::kStages - 1; ++s) {
    if (s < KC) load(s, s);
    cp_async_commit();
  }

  constexpr int NT = TOK / 8;  // 8-token column tiles
  float acc[BN / 16][NT][4];
#pragma unroll
  for (int mt = 0; mt < BN / 16; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
  const int live = (P.M + 7) / 8;  // column tiles with tokens (uniform)
  const int a_row = lane & 15, a_hi = lane >> 4;                      // weight rows, k half
  const int b_row = (lane & 7) + ((lane >> 4) << 3), b_hi = (lane >> 3) & 1;  // tokens, k half
  const int t_row = b_row, t_hi = b_hi;  // MN-major weight: k row, 8-row half of the m-tile

  for (int kc = 0; kc < KC; ++kc) {
    cp_async_wait<S::kStages - 2>();  // chunk kc has landed (this thread's copies)
    __syncthreads();                  // ... everyone's; and stage kc - 1 has been read
    {
      const int nk = kc + S::kStages - 1;
      if (nk < KC) load(nk, nk % S::kStages);
      cp_async_commit();
    }
    const uint32_t sw = s0 + (kc % S::kStages) * S::kStageBytes, sa = sw + S::kWBytes;
#pragma unroll
    for (int kk = 0; kk < 2; ++kk) {
      const int ks = warp * 2 + kk;  // this warp's 16-k steps of the chunk
      uint32_t bt[NT / 2][4];  // tokens 16h..16h+15: b0 b1 of tile 2h, b0 b1 of tile 2h + 1
#pragma unroll
      for (int h = 0; h < NT / 2; ++h) ldsm_x4(bt[h], sa + swz(16 * h + b_row, ks * 2 + b_hi));
#pragma unroll
      for (int mt = 0; mt < BN / 16; ++mt) {
        uint32_t a[4];
        if constexpr (KMB)
          ldsm_x4(a, sw + swz(mt * 16 + a_row, ks * 2 + a_hi));
        else
          ldsm_x4_trans(a, sw + mn_addr<S::kMnUnits>(ks * 16 + t_row, mt * 2 + t_hi));
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          if (nt == 0 || nt < live)
            Elt<T>::mma(acc[mt][nt], a, bt[nt >> 1][(nt & 1) * 2], bt[nt >> 1][(nt & 1) * 2 + 1]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: it holds the partial sums now

  // Partials red[warp][token][row] (fp32), then each output summed over the 8 warps.
  float* red = reinterpret_cast<float*>(smem);
  const int g = lane >> 2, qd = lane & 3;
#pragma unroll
  for (int mt = 0; mt < BN / 16; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int row = mt * 16 + g + (i >> 1) * 8, tok = nt * 8 + 2 * qd + (i & 1);
        red[(warp * TOK + tok) * BN + row] = acc[mt][nt][i];
      }
  __syncthreads();
  const DType d_dt = static_cast<DType>(P.d_dtype);
  const Activation act = static_cast<Activation>(P.activation);
  for (int o = tid; o < TOK * BN; o += kThreads) {
    const int tok = o / BN, row = o - tok * BN;
    const int n = n0 + row;
    if (tok >= P.M || n >= P.N) continue;
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += red[(w * TOK + tok) * BN + row];
    // The documented order: alpha * acc + beta * C + bias, then the activation.
    float v = P.alpha * sum;
    if (P.c != nullptr)
      v += P.beta * load_float(P.c, static_cast<DType>(P.c_dtype),
                               z * P.c_batch + tok * P.c_stride_m + n * P.c_stride_n);
    if (P.bias != nullptr) v += load_float(P.bias, static_cast<DType>(P.bias_dtype), n);
    store_float(P.d, d_dt, z * P.d_batch + tok * P.d_stride_m + n * P.d_stride_n, activate(v, act));
  }
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

template <class T, int BN, bool KMB, int TOK>
fk_status_t launch(const DecodeParams& k, int64_t batch, cudaStream_t stream) {
  using S = Shape<BN, KMB, TOK>;
  const auto kernel = gemm_decode_kernel<T, BN, KMB, TOK>;
  FK_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmem),
              "cuda.sm90.gemm (decode): raising the kernel's shared-memory limit");
  const dim3 grid(static_cast<unsigned>((k.N + BN - 1) / BN), static_cast<unsigned>(batch));
  kernel<<<grid, kThreads, S::kSmem, stream>>>(k);
  return check_launch("cuda.sm90.gemm decode kernel");
}

// 17-32 tokens: one width, 64 (decode_pick).
template <class T>
fk_status_t launch_bn(const DecodeParams& k, int64_t batch, int block_n, bool k_major_b,
                      cudaStream_t stream) {
  if (k.M > 16) {
    return k_major_b ? launch<T, 64, true, 32>(k, batch, stream)
                     : launch<T, 64, false, 32>(k, batch, stream);
  }
  if (!k_major_b) {
    switch (block_n) {
      case 112: return launch<T, 112, false, 16>(k, batch, stream);
      case 96: return launch<T, 96, false, 16>(k, batch, stream);
      case 80: return launch<T, 80, false, 16>(k, batch, stream);
      case 64: return launch<T, 64, false, 16>(k, batch, stream);
      case 48: return launch<T, 48, false, 16>(k, batch, stream);
      default: return launch<T, 32, false, 16>(k, batch, stream);
    }
  }
  switch (block_n) {
    case 112: return launch<T, 112, true, 16>(k, batch, stream);
    case 96: return launch<T, 96, true, 16>(k, batch, stream);
    case 80: return launch<T, 80, true, 16>(k, batch, stream);
    case 64: return launch<T, 64, true, 16>(k, batch, stream);
    case 48: return launch<T, 48, true, 16>(k, batch, stream);
    case 32: return launch<T, 32, true, 16>(k, batch, stream);
    default: return launch<T, 16, true, 16>(k, batch, stream);
  }
}

// The weight's layout: K-major (unit stride along K: stored (N, K)) or MN-major (stored (K, N)).
bool k_major_b(const GemmProblem& p) { return p.b_stride_k == 1 || p.K == 1; }

}  // namespace

int decode_pick(const DeviceCaps& caps, const GemmProblem& p, int force) {
  if (force == 0 || p.device != Device::Cuda) return 0;
  if (p.ab_dtype != DType::F16 && p.ab_dtype != DType::BF16) return 0;
  if (p.b_dtype != p.ab_dtype || p.scale_a != nullptr || p.scale_b != nullptr) return 0;
  if (p.cd_dtype != DType::F16 && p.cd_dtype != DType::BF16 && p.cd_dtype != DType::F32) return 0;
  if (p.M < 1 || p.M > kMaxTokens || p.N < 1 || p.K < 1) return 0;
  if (p.N > (int64_t(1) << 30) || p.K > (int64_t(1) << 30)) return 0;
  if (p.batch < 1 || p.batch > 65535) return 0;
  // A (M, K) with unit stride along K; the weight with unit stride along K or N; bases, rows
  // and batches 16-byte aligned (the copies are 16-byte units).
  if (p.a_stride_k != 1 && p.K > 1) return 0;
  if (!aligned16(p.a) || !aligned16(p.b)) return 0;
  if (p.M > 1 && (p.a_stride_m <= 0 || p.a_stride_m % 8 != 0)) return 0;
  const bool kmb = k_major_b(p);
  if (kmb) {
    if (p.N > 1 && (p.b_stride_n <= 0 || p.b_stride_n % 8 != 0)) return 0;
  } else {
    if (p.b_stride_n != 1 || p.b_stride_k <= 0 || p.b_stride_k % 8 != 0) return 0;
  }
  if (p.batch > 1 && (p.a_batch_stride % 8 != 0 || p.b_batch_stride % 8 != 0 ||
                      p.a_batch_stride < 0 || p.b_batch_stride < 0))
    return 0;
  // Tile rows: one CTA per SM (~200 KB of ring each), so a grid of w waves takes about w x BN
  // weight rows' time per SM; the BN of least waves x BN wins, the wider one on ties (fewer,
  // longer streams). N = 8192: 64 (128 CTAs); 14336: 112 (128); 4096: 32 (128).
  const int64_t sms = caps.sm_count > 0 ? caps.sm_count : 132;
  // MN-major tiles read BN * 2-byte runs of each k row: not 16 (32-byte runs).
  static const int kWidths[] = {112, 96, 80, 64, 48, 32, 16};
  int block_n = 0;
  int64_t best = 0;
  // 17-32 tokens: width 64 only. The 32-token kernels hold twice the A rows per stage (a ring
  // one stage shorter, twice the L2 reads of A); measured on the H200 (RESULTS.md, "Decode
  // kernel") 1.06-1.10x the skinny kernel at N = 8192 (width 64), 0.97-1.02x at N = 4096
  // (width 32), so narrower grids keep the skinny kernel.
  for (int i = p.M > 16 ? 3 : 0; i < (p.M > 16 ? 4 : (kmb ? 7 : 6)); ++i) {
    const int bn = kWidths[i];
    const int64_t ctas = ((p.N + bn - 1) / bn) * p.batch;
    const int64_t cost = ((ctas + sms - 1) / sms) * bn;
    if (block_n == 0 || cost < best) {
      block_n = bn;
      best = cost;
    }
  }
  if (force == 1) return block_n;
  // The table: weights of at least 8 Mi elements (16 MB), K >= 1024, and a grid that keeps 3/4
  // of the SMs streaming; smaller problems keep the skinny kernel, whose split-K fills the GPU.
  const int64_t ctas = ((p.N + block_n - 1) / block_n) * p.batch;
  const double elems = static_cast<double>(p.N) * static_cast<double>(p.K) * static_cast<double>(p.batch);
  if (p.K < 1024 || elems < 8.0 * (1 << 20) || ctas * 4 < sms * 3) return 0;
  return block_n;
}

fk_status_t decode_gemm(const ExecContext& ctx, const GemmProblem& p, int block_n) {
  const bool kmb = k_major_b(p);
  DecodeParams k{};
  k.a = p.a;
  k.b = p.b;
  k.c = (p.c != nullptr && p.beta != 0.0f) ? p.c : nullptr;
  k.bias = p.bias;
  k.d = p.d;
  k.M = static_cast<int32_t>(p.M);
  k.N = static_cast<int32_t>(p.N);
  k.K = static_cast<int32_t>(p.K);
  k.k_chunks = static_cast<int32_t>((p.K + kChunkK - 1) / kChunkK);
  k.lda = p.a_stride_m;
  k.ldb = kmb ? p.b_stride_n : p.b_stride_k;
  k.a_batch = p.batch > 1 ? p.a_batch_stride : 0;
  k.b_batch = p.batch > 1 ? p.b_batch_stride : 0;
  k.c_stride_m = p.c_stride_m;
  k.c_stride_n = p.c_stride_n;
  k.c_batch = p.c_batch_stride;
  k.d_stride_m = p.d_stride_m;
  k.d_stride_n = p.d_stride_n;
  k.d_batch = p.d_batch_stride;
  k.alpha = p.alpha;
  k.beta = p.beta;
  k.activation = static_cast<int32_t>(p.activation);
  k.d_dtype = static_cast<int32_t>(p.cd_dtype);
  k.c_dtype = static_cast<int32_t>(p.cd_dtype);
  k.bias_dtype = static_cast<int32_t>(p.bias_dtype);
  const cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  if (log_enabled(FK_LOG_DEBUG))
    log_message(FK_LOG_DEBUG, "cuda.sm90.gemm: schedule decode, %d-row tiles, %s weight", block_n,
                kmb ? "K-major" : "MN-major");
  if (p.ab_dtype == DType::BF16)
    return launch_bn<__nv_bfloat16>(k, p.batch, block_n, kmb, stream);
  return launch_bn<__half>(k, p.batch, block_n, kmb, stream);
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
