// cuda.sm90.fftconv_direct: the convolution of rows up to 1152 long as a Toeplitz matrix
// product on Hopper's warpgroup MMA (wgmma m64n128k16, fp32 accumulation). Same result
// contract as the other FFT-convolution kernels (flashkit.h, fftconv group): y = postgate *
// (conv(v, k) + D * v), v = pregate * u, every mode; a row whose v, or whose channel's filter,
// holds a NaN or Inf gets NaN in every output.
//
// The product is the one of cuda.sm80.fftconv_direct (sm80/fftconv_direct.cu, which says why a
// direct product pays at these lengths): for channel c, Y_c = V_c T_c^T, T_c[n][s] = kk_c[n - s].
// What changes is how the operands reach the tensor cores:
// - One CTA per (channel, 64 batch rows), one to four warpgroups. The 64 rows of v are wgmma's
//   M; a warpgroup owns 128-position output tiles (N = 128) and walks the k-steps (16 input
//   positions) where the diagonals are not zero, issuing them all before it waits: both
//   operands come from shared memory through matrix descriptors (no-swizzle K-major layout), and
//   neither changes during the product. v is stored chunk-major for that: the 8-element chunk j
//   of row r at element (64 j + r) * 8, so that each 8 x 8 core matrix is 128 contiguous bytes
//   (A's LBO = 1 KB along K, SBO = 128 bytes along M).
// - B is T_c^T's 128 x 16 block, read by wgmma straight from shared memory through a matrix
//   descriptor, without T_c ever being stored. In the no-swizzle K-major layout a B operand is a
//   grid of 8 x 8 "core matrices" (8 rows of 16 contiguous bytes, 128 bytes each) at a byte
//   stride SBO along N and LBO along K. Number the tile's output positions backwards (column
//   n' of the tile is position N0 + 127 - n'): core matrix (i along N, j along K) then holds
//   kk[D - 8 (i + j) - r - c] (row r, column c; D = N0 + 127 - k0), a function of i + j only.
//   So the table of blocks Q_b[r][c] = kk[Dtop - 8 b - r - c] (Dtop = Lp - 1), 128 bytes each,
//   with LBO = SBO = 128 bytes, is every B operand at once: the k-step at k0 of tile N0 starts
//   at block (Lp - 128 - N0 + k0) / 8, and the next k-step 256 bytes further. The table covers
//   the diagonals -Lp - 7 .. Lp - 1: 32 Lp bytes (32 KB at seqlen 1K), built once per CTA.
//   The accumulator's columns come out in that backward order; the epilogue stores the pair
//   (n', n' + 1) as positions (p - 1, p).
// - The prologue is the sm80 kernel's (direct_common.cuh): the taps and rows loaded, the
//   power-of-two filter scale (fp16: largest tap in [2^13, 2^14); bf16: in [0.5, 1)), the NaN
//   flags. The epilogue goes a quarter tile at a time through shared memory (fp32, 10 KB per
//   warpgroup, in the region the taps used), so that each thread finishes 8 consecutive
//   positions of a row: 16-byte loads of the gates and of u, 16-byte stores of y; D * v exact
//   as in the sm80 kernel.
// - What it can run: fp16/bf16, seqlen <= 1152 (v's 64 rows, the table and the staging in
//   227 KB), every mode, D, gates (fp16 without a pregate, as for the sm80 kernel), any batch
//   (rows padded to groups of 64). AUTO: see kAuto*; FLASHKIT_FFTCONV_DIRECT=1 takes all it can
//   run, =0 nothing (the same switch as the sm80 kernel's).
// - Measured (H200, bf16, B 64, H 768, causal, D, not gated; benchmarks/RESULTS.md "The direct
//   convolution on wgmma"): L 256 / 512 / 1K 0.047 / 0.080 / 0.192 ms, 1.01-1.09x the sm80
//   kernel; gated calls were 0.93-1.0x, batch 32 0.7x, hence AUTO's window (kAuto*).
// - Calls whose rows suit the copy engine (seqlen a multiple of 8 up to 1024, 16-byte rows of
//   u, y and the gates) run the streamed form below (stream90_kernel: persistent CTAs, a
//   producer, the next item's rows loaded during the current item's tensor work; a wide launch
//   shape for seqlen > 640 and a narrow one, see stream_producer);
//   FLASHKIT_FFTCONV_DIRECT90_STREAM=0 keeps them on direct90_kernel. In direct90_kernel the
//   row loads, the tensor work and the epilogue run one after the other inside a CTA (ncu at L
//   1K: tensor loop 20% of the stall samples, prologue 38%, epilogue 36%).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "core/backend.h"
#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/check.h"
#include "cuda/common/device_guard.h"
#include "cuda/common/dtype.cuh"
#include "cuda/common/tma.cuh"
#include "cuda/fftconv/common/conv_io.cuh"
#include "cuda/fftconv/common/direct_common.cuh"
#include "cuda/fftconv/sm90/fftconv_direct90.h"

namespace flashkit {
namespace cuda {
namespace sm90 {
namespace {

using conv::DirectArgs;

constexpr int kRows = 64;     // batch rows per CTA: wgmma's M
constexpr int kTileN = 128;   // output positions per warpgroup tile: wgmma's N
constexpr int kMaxWG = 4;
constexpr int64_t kMaxL = 1152;
// Filter taps per thread in the prologue: 2 Lp over 128 W threads, W = min(4, max(1, Lp / 256)),
// is at most 6 (Lp = 384).
constexpr int kTapRegs = 8;
// Where AUTO picks it (measured on the H200 against cuda.sm80.fftconv_direct, same process,
// benchmarks/RESULTS.md "The direct convolution on wgmma"): 256 <= seqlen <= 1024, batch >= 64
// (1.01-1.09x there), and batch 32 0.7x (rows are padded to groups of 64). Gated calls measured
// 0.93-1.0x on direct90_kernel (the sm80 kernel's two blocks per multiprocessor hide the gates'
// loads better) and 1.44-1.64x on the streamed form ("Gated calls on the streamed form"), so
// AUTO takes them only where the streamed form runs.
constexpr int64_t kAutoMinL = 256, kAutoMaxL = 1024, kAutoMinBatch = 64;

// Shared memory: v (64 rows of Lp 16-bit elements, chunk-major), the descriptor table (Lp / 4
// blocks of 64 elements), then one region used twice: first the channel's taps on the
// diagonals -Lp .. Lp - 1 as fp32 (2 Lp floats; the prologue), then the warpgroups' output
// staging (the epilogue). The region also keeps compute-sanitizer quiet: a B operand spans 17
// blocks (2176 bytes) of the table, but the tool checks the 4096 bytes of a dense 128 x 16
// operand from its start, which for the last k-steps runs past the table.
constexpr int kCS = 8 * kRows;  // elements from one 8-element chunk of a row of v to the next
constexpr int kStageCols = 32;  // output positions per staging step (a quarter tile)
constexpr int kStageRow = kStageCols + 8;  // floats per staged row: 160 bytes, 32 mod 128
constexpr size_t kStageBytes = size_t(kRows) * kStageRow * sizeof(float);  // per warpgroup
constexpr size_t kZeroBytes = 256;  // the zero 8 x 16 B operand of the NaN check
// Warpgroups per CTA: one per two 128-position output tiles, at most four.
int warpgroups(int Lp) { return std::max(1, std::min(kMaxWG, Lp / kTileN / 2)); }
size_t smem_bytes(int Lp) {
  const size_t tail = std::max(size_t(2 * Lp) * sizeof(float) + 2048,
                               size_t(warpgroups(Lp)) * kStageBytes);
  return size_t(kRows) * size_t(Lp) * 2 + size_t(Lp / 4) * 128 + kZeroBytes + tail;
}

template <class T>
struct Mma;
template <>
struct Mma<__nv_bfloat16> {
  using Op = cute::SM90::GMMA::MMA_64x128x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K,
                                                           cute::SM90::GMMA::Major::K>;
};
template <>
struct Mma<__half> {
  using Op = cute::SM90::GMMA::MMA_64x128x16_F32F16F16_SS<cute::SM90::GMMA::Major::K,
                                                         cute::SM90::GMMA::Major::K>;
};

// acc += A (64 x 16) * B (16 x 128), both through descriptors, issued asynchronously.
template <class T, size_t... I>
__device__ __forceinline__ void mma_ss(float (&acc)[64], uint64_t desc_a, uint64_t desc_b,
                                       std::index_sequence<I...>) {
  Mma<T>::Op::fma(desc_a, desc_b, acc[I]...);
}

// The same on the tile's first 64 columns (acc[0..31]): for k-steps no later column reads.
template <class T>
struct Mma64;
template <>
struct Mma64<__nv_bfloat16> {
  using Op = cute::SM90::GMMA::MMA_64x64x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K,
                                                         cute::SM90::GMMA::Major::K>;
};
template <>
struct Mma64<__half> {
  using Op = cute::SM90::GMMA::MMA_64x64x16_F32F16F16_SS<cute::SM90::GMMA::Major::K,
                                                       cute::SM90::GMMA::Major::K>;
};
template <class T, size_t... I>
__device__ __forceinline__ void mma_ss64(float (&acc)[64], uint64_t desc_a, uint64_t desc_b,
                                         std::index_sequence<I...>) {
  Mma64<T>::Op::fma(desc_a, desc_b, acc[I]...);
}

// chk += A (64 x 16) * 0 (16 x 8): stays 0 in a row unless the row of A holds a NaN or an Inf
// (0 * Inf and 0 * NaN are NaN on the tensor cores as in IEEE arithmetic).
template <class T>
struct MmaCheck;
template <>
struct MmaCheck<__nv_bfloat16> {
  using Op = cute::SM90::GMMA::MMA_64x8x16_F32BF16BF16_SS<cute::SM90::GMMA::Major::K,
                                                         cute::SM90::GMMA::Major::K>;
};
template <>
struct MmaCheck<__half> {
  using Op = cute::SM90::GMMA::MMA_64x8x16_F32F16F16_SS<cute::SM90::GMMA::Major::K,
                                                       cute::SM90::GMMA::Major::K>;
};

// The k-steps output tile j (positions 128 j ..) reads: [kb, ke), multiples of 16, where the
// diagonals [dlo, dhi] meet the tile.
__device__ __forceinline__ int2 tile_krange(const DirectArgs& a, int j) {
  const int N0 = j * kTileN;
  int kb = N0 - a.dhi;
  kb = kb < 0 ? 0 : (kb & ~15);
  int ke = N0 + kTileN - a.dlo;
  ke = min(a.Lp, (ke + 15) & ~15);
  return make_int2(kb, ke);
}

template <class T>
__global__ void __launch_bounds__(kMaxWG * 128, 1) direct90_kernel(const DirectArgs a, int ahead) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* xs = reinterpret_cast<T*>(smem);
  T* table = reinterpret_cast<T*>(smem + size_t(kRows) * a.Lp * sizeof(T));
  T* zero = table + size_t(a.Lp / 4) * 64;
  float* taps = reinterpret_cast<float*>(zero + kZeroBytes / sizeof(T));
  float* stage_all = taps;  // the epilogue's staging, after the prologue
  __shared__ conv::DirectFlags<kRows> flags;

  const int tid = threadIdx.x, nthr = blockDim.x;
  const int64_t c = blockIdx.x / a.row_groups;
  const int64_t b0 = int64_t(blockIdx.x % a.row_groups) * kRows;
  const int L = static_cast<int>(a.L), Lp = a.Lp;

  // Taps, rows of v, the filter scale and the NaN flags (direct_common.cuh); the descriptor
  // table, row rho = 8 b + r of it holding kk[Lp - 1 - rho - c'], c' = 0..7, built while the row
  // copies are in flight.
  const int sexp = conv::direct_prologue<T, kRows, kTapRegs, kCS, false>(a, c, b0, xs, 8, taps, flags, [&](int se) {
    const float scale = ldexpf(1.0f, se);  // exact: 2^se is a normal or subnormal float
    for (int rho = tid; rho < 2 * Lp; rho += nthr) {
      float v[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int d = Lp - 1 - rho - j;
        v[j] = d >= -Lp ? taps[Lp + d] * scale : 0.0f;
      }
      *reinterpret_cast<uint4*>(table + size_t(rho) * 8) = conv::pack8<T>(v);
    }
    if (tid < int(kZeroBytes / 16)) reinterpret_cast<uint4*>(zero)[tid] = make_uint4(0u, 0u, 0u, 0u);
  });

  // wgmma reads its shared operands through the async proxy: every thread's writes of v and of
  // the table (generic proxy) are fenced for it before the barrier.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  // The rows of u of the block `ahead` places on (about the one this multiprocessor runs next,
  // ahead = the blocks resident at once), fetched into L2 during this block's tensor work, so
  // that its row copies read L2 instead of HBM: one bulk prefetch per 16-byte-aligned row.
  // Not with a pregate: prefetching both operands measured slower (benchmarks/RESULTS.md).
  if (tid < 32 && a.vec && a.pre == nullptr && blockIdx.x + ahead < gridDim.x) {
    const int64_t nb = blockIdx.x + ahead;
    const int64_t cn = nb / a.row_groups, bn = (nb % a.row_groups) * kRows;
    const uint32_t bytes = uint32_t(L) * sizeof(T) & ~15u;
    for (int r = tid; r < kRows && bn + r < a.batch && bytes > 0; r += 32) {
      const T* urow = static_cast<const T*>(a.u) + (bn + r) * a.u_bs + cn * a.u_cs;
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(urow), "r"(bytes) : "memory");
    }
  }

  // The warpgroup index through a shuffle from lane 0, so that ptxas knows it (and the k-loop
  // bounds derived from it) to be warp-uniform and does not serialise the wgmma chain.
  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int warp = (tid >> 5) & 3, lane = tid & 31, W = nthr >> 7;
  const int g = lane >> 2, t4 = lane & 3;
  // No swizzle (layout type 0); fields in 16-byte units. A (v): LBO = 1 KB (the next chunk of
  // 8 positions), SBO = 128 bytes (the next 8 rows). B (the table): LBO = SBO = 128 bytes.
  const uint64_t desc_a0 = (uint64_t(kCS * 2 >> 4) << 16) | (uint64_t(128 >> 4) << 32) |
                           uint64_t(sm80::smem_u32(xs) >> 4);
  const uint64_t desc_b0 = (uint64_t(128 >> 4) << 16) | (uint64_t(128 >> 4) << 32);
  const uint32_t tab = sm80::smem_u32(table);
  const float inv = ldexpf(1.0f, -sexp);
  const float Dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
  const bool kbad = flags.kbad != 0;
  {
    // Which rows of v hold a NaN or an Inf: v times a zero operand over all of seqlen, each
    // warpgroup for itself (Lp / 16 narrow k-steps); the warpgroup's threads together hold
    // every row and record the bad ones for the epilogue (flags.rowbad starts at 0; the
    // warpgroups write the same values, so a warpgroup that reads a flag while another still
    // writes it reads its own, earlier, write of the same value).
    float chk[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(chk[i]);
    uint64_t desc_a = desc_a0;
    const uint64_t desc_z = desc_b0 | uint64_t(sm80::smem_u32(zero) >> 4);
#pragma unroll 1
    for (int k0 = 0; k0 < Lp; k0 += 64) {  // Lp is a multiple of 128: whole groups of four
      cute::warpgroup_arrive();
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        MmaCheck<T>::Op::fma(desc_a, desc_z, chk[0], chk[1], chk[2], chk[3]);
        desc_a += 2 * kCS * 2 >> 4;
      }
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(chk[i]);
    if (t4 == 0) {
      if (!(chk[0] == 0.0f)) flags.rowbad[16 * warp + g] = 1;
      if (!(chk[2] == 0.0f)) flags.rowbad[16 * warp + g + 8] = 1;
    }
  }
  for (int ti = 0;; ++ti) {
    const int j = ti * W + ((ti & 1) ? W - 1 - wg : wg);  // snake: balances the causal triangle
    if (j >= a.ntiles) break;
    const int N0 = j * kTileN;
    const int2 kr = tile_krange(a, j);
    const int kb = kr.x, ke = kr.y;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
#pragma unroll
    for (int i = 0; i < 64; ++i) cute::warpgroup_fence_operand(acc[i]);
    // k-step k0: A from chunk k0 / 8 of v (+ 2 KB per step), B from table block
    // (Lp - 128 - N0 + k0) / 8 (+ 256 bytes per step).
    uint64_t desc_a = desc_a0 + uint64_t(kb / 8 * kCS * 2 >> 4);
    uint64_t desc_b = desc_b0 | uint64_t((tab + uint32_t(Lp - kTileN - N0 + kb) * 16) >> 4);
    // Groups of four k-steps, then single steps; at most two groups in flight (the operands
    // never change: the wait only bounds the queue).
    int k0 = kb;
#pragma unroll 1
    for (; k0 + 64 <= ke; k0 += 64) {
      cute::warpgroup_arrive();
#pragma unroll
      for (int s = 0; s < 4; ++s) {
        mma_ss<T>(acc, desc_a, desc_b, std::make_index_sequence<64>{});
        desc_a += 2 * kCS * 2 >> 4;
        desc_b += 16;
      }
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();
    }
#pragma unroll 1
    for (; k0 < ke; k0 += 16) {
      cute::warpgroup_arrive();
      mma_ss<T>(acc, desc_a, desc_b, std::make_index_sequence<64>{});
      desc_a += 2 * kCS * 2 >> 4;
      desc_b += 16;
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<1>();
    }
    cute::warpgroup_wait<0>();
#pragma unroll
    for (int i = 0; i < 64; ++i) cute::warpgroup_fence_operand(acc[i]);

    // Epilogue, a quarter tile (32 positions) at a time through this warpgroup's staging rows:
    // 1. acc[4 q + 2 h + e] is row 16 warp + g + 8 h, column n' = 8 q + 2 t4 + e, i.e. position
    //    N0 + 127 - n'; the pair (e = 1, e = 0) is positions (t, t + 1), t = N0 + 126 - 8 q -
    //    2 t4. Each thread writes its pairs of the quarter, scaled back, as fp32.
    // 2. Each thread then finishes two 8-position chunks of one row: D * v, the postgate, the
    //    row's NaN flag, one 16-byte store (16-byte loads of u, the pregate and the postgate)
    //    where the rows allow it and the chunk lies inside seqlen, element by element otherwise.
    float* stage = stage_all + size_t(wg) * (kStageBytes / sizeof(float));
    const int wtid = tid & 127;
#pragma unroll
    for (int s4 = 0; s4 < 4; ++s4) {
      // Positions N0 + 32 s4 .. + 31 are columns n' = 96 - 32 s4 .. 127 - 32 s4: q = 12 - 4 s4
      // .. 15 - 4 s4. The barrier before the writes keeps them behind the previous quarter's
      // reads.
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 16 * warp + g + 8 * h;
#pragma unroll
        for (int qq = 0; qq < 4; ++qq) {
          const int q = 12 - 4 * s4 + qq;
          const int tl = 126 - 8 * q - 2 * t4 - 32 * s4;  // position within the quarter
          *reinterpret_cast<float2*>(stage + r * kStageRow + tl) =
              make_float2(acc[4 * q + 2 * h + 1] * inv, acc[4 * q + 2 * h] * inv);
        }
      }
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
      for (int it = 0; it < 2; ++it) {
        const int ci = wtid + 128 * it;
        const int r = ci >> 2, cq = ci & 3;
        const int64_t b = b0 + r;
        const int t0 = N0 + 32 * s4 + 8 * cq;
        if (b >= a.batch || t0 >= L) continue;
        const bool nan = kbad || flags.rowbad[r] != 0;
        const float* src = stage + r * kStageRow + 8 * cq;
        float y[8];
        {
          const float4 lo = *reinterpret_cast<const float4*>(src);
          const float4 hi = *reinterpret_cast<const float4*>(src + 4);
          y[0] = lo.x, y[1] = lo.y, y[2] = lo.z, y[3] = lo.w;
          y[4] = hi.x, y[5] = hi.y, y[6] = hi.z, y[7] = hi.w;
        }
        T* yrow = static_cast<T*>(a.y) + b * a.y_bs + c * a.y_cs;
        const T* prow = a.post != nullptr
                            ? static_cast<const T*>(a.post) + b * a.post_bs + c * a.post_cs
                            : nullptr;
        const T* urow = static_cast<const T*>(a.u) + b * a.u_bs + c * a.u_cs;
        const T* grow = a.pre != nullptr
                            ? static_cast<const T*>(a.pre) + b * a.pre_bs + c * a.pre_cs
                            : nullptr;
        const T* vchunk = xs + size_t(r) * 8 + conv::vofs<kCS>(t0);  // 8 positions of v
        if (a.lean16 && t0 + 8 <= L) {
          uint4 pw = make_uint4(0u, 0u, 0u, 0u), uw = pw, gw = pw;
          if (prow != nullptr) pw = __ldg(reinterpret_cast<const uint4*>(prow + t0));
          if (a.D != nullptr && grow != nullptr) {
            uw = __ldg(reinterpret_cast<const uint4*>(urow + t0));
            gw = __ldg(reinterpret_cast<const uint4*>(grow + t0));
          }
          if (a.D != nullptr) {
            float v[8];
            if (grow != nullptr) {  // v = pregate * u in fp32 (the shared copy is rounded)
              float u8[8], g8[8];
              conv::unpack8<T>(uw, u8);
              conv::unpack8<T>(gw, g8);
#pragma unroll
              for (int e = 0; e < 8; ++e) v[e] = u8[e] * g8[e];
            } else {  // v = u, exact in shared memory
              conv::unpack8<T>(*reinterpret_cast<const uint4*>(vchunk), v);
            }
#pragma unroll
            for (int e = 0; e < 8; ++e) y[e] += Dc * v[e];
          }
          if (prow != nullptr) {
            float p8[8];
            conv::unpack8<T>(pw, p8);
#pragma unroll
            for (int e = 0; e < 8; ++e) y[e] *= p8[e];
          }
          if (nan) {
#pragma unroll
            for (int e = 0; e < 8; ++e) y[e] = __int_as_float(0x7fffffff);
          }
          *reinterpret_cast<uint4*>(yrow + t0) = conv::pack8<T>(y);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            const int t = t0 + e;
            if (t >= L) break;
            float ye = y[e];
            if (a.D != nullptr) {
              const float v = grow != nullptr ? static_cast<float>(urow[t]) *
                                                    static_cast<float>(grow[t])
                                              : static_cast<float>(vchunk[e]);
              ye += Dc * v;
            }
            if (prow != nullptr) ye *= static_cast<float>(prow[t]);
            if (nan) ye = __int_as_float(0x7fffffff);
            store_float(yrow, a.dtype, t, ye);
          }
        }
      }
    }
  }
}


// ---- The streamed form (see the file comment) ---------------------------------------------------
//
// A persistent CTA takes items (channel, 64 batch rows) in turn: W consumer warpgroups do the
// tensor work and the epilogue, one producer warp builds the next item's descriptor table and
// has the copy engine (TMA) load the next item's rows while the current item is still running.
// - v lies in Lp / 128 slots of 16 KB (128 positions of 64 rows), each two 8 KB boxes of 64
//   positions x 64 rows in the 128-byte swizzle that the copy engine writes and wgmma reads
//   (K-major A, SBO 1 KB; the k-step inside a 64-position box moves the start address by 32
//   bytes). Rows past the batch and positions past seqlen arrive as zeros. (A first version
//   loaded the chunk-major layout above with 16-byte-wide boxes: 0.174 ms at L 1K against
//   0.162 with 128-byte rows.)
// - Slot s has a full barrier (the copy engine's bytes) and an empty one (one arrival per
//   consumer warp). A warp releases a slot as soon as its wgmmas on it have completed and no
//   later tile of its warpgroup reads it; a tile's own slot is held through its epilogue when
//   there is a D (D * v reads it). The producer loads whichever of the next item's slots are
//   free, lowest first.
// - Each warpgroup takes its tiles from the highest position down and walks a tile's slots
//   downwards (FLASHKIT_FFTCONV_DIRECT90_WALK=up: upwards, 0.165 against 0.162 ms at L 1K), so
//   that under a causal filter the high slots are released first and the next item starts on
//   them while its low slots are still in flight.
// - Two descriptor tables (item parity); the producer builds item i + 1's while item i runs.
//   The item's taps arrive by 4-byte cp.async, all in flight at once, and the wide form's
//   warps 1-3 share the build. The first item of every CTA waits for its table: with 8
//   dependent rounds of tap loads on one warp it waited ~8 memory round trips, and L 1K went
//   0.138 -> 0.112 ms once the loads became one round trip (session 31).
// - Rows holding NaN or Inf: v times a zero operand on the tensor cores (as in
//   direct90_kernel), each slot checked by one warpgroup before its tiles (warpgroup w takes
//   walk positions [w cnt, (w + 1) cnt), so the last warpgroup, whose first tile is the
//   shortest, waits for the last-loaded slots); the flags go to shared memory (badrow, stamped
//   with the item number) and the chk barrier holds every first epilogue until all warps have
//   checked. Session 28's form, every warpgroup checking every slot during its first tile, cost
//   four times the check wgmmas (each reads a 2 KB A operand): 0.162 -> 0.155 ms at L 1K with
//   the per-warp staging below. (Tried: the producer warp scanning each slot once instead, x *
//   0 in packed 16-bit arithmetic: L 1K unchanged at 0.163 ms, L 512 -4%, L 256 slower and
//   unsteady; not kept. Session 31 again, on the wide form's otherwise idle producer warps 2-3
//   with the fixed table: L 1K 0.1117 against 0.1117 ms with the consumers' check; not kept.)
// - Under a causal-like band the upper four k-steps of a tile's diagonal slot reach only the
//   tile's last 64 positions: m64n64k16 on the first 32 accumulators (0.155 -> 0.152 ms at L 1K).
// - Gates (session 38): the producer prefetches the item's gate rows into L2 (one bulk prefetch
//   per row; in the wide form, the postgate's rows of each tile at the tile's start instead, by
//   the consumers: L 1K 0.197 -> 0.193 ms, session 39. Tried there, slower: both prefetches,
//   0.203; the pregate's rows with each slot's copy, 0.213; the table builders multiplying the
//   pregate in, 0.251, branch prepg). A pregate is multiplied into each slot in place by the
//   warpgroup that checks the slot, before its check (v = pregate * u rounded to T, as
//   direct_prologue rounds v); the tiles then wait on ready[s] instead of full[s], and D * v in
//   the epilogue uses that rounded v (the other direct kernels form it exactly from u and the
//   pregate: one more 2^-9 relative rounding on the D term, inside the same test bounds). The
//   postgate goes by 16-byte cp.async into the staging rows (quarter 0's before the tile's
//   wgmmas, the others as the quarter before is stored, their rows requested into L1 a quarter
//   ahead: 3-4%), where each pair reads its two values and writes y = postgate * (acc + D * v)
//   over them, rounded once. Measured (H200, bf16, B 64, H 768, causal, D, both gates): L 256 /
//   512 / 1K 0.055 / 0.100 / 0.197 ms, 1.46 / 1.44 / 1.64x cuda.sm80.fftconv_direct.
// - The epilogue stages a quarter tile (32 positions, 16-bit, 4 KB per warpgroup, 16-byte units
//   XOR-swizzled by row so that both the pair writes and the 16-byte reads are free of bank
//   conflicts) and stores 16 bytes per thread; each warp stages and stores its own 16 rows, so
//   only __syncwarp orders the two.
// - Measured (H200, bf16, B 64, H 768, causal, D; benchmarks/RESULTS.md "The first item's
//   table in one memory round trip" and the entries before it): L 256 / 512 / 1K 0.03-0.034 /
//   0.0557 / 0.1117 ms (L 1K 15.3-15.6x torch.fft, 44% of the HBM floor; direct90_kernel
//   0.047 / 0.080 / 0.192). Folding D into the tap on diagonal 0 (no slot read in the epilogue) measured 31%
//   slower at L 1K and doubled the largest error (branch dfold29); D * v stays exact. At L 1K
//   one CTA fills the multiprocessor (v's 128 KB, registers for four warpgroups). Where the
//   stall samples fall there now (ncu, session 31): the product walk ~39% (the first HGMMA of a
//   group 11%, mio: the tensor pipe busy), the epilogue ~28%, waits at an item's start ~5%
//   (31% before the table fix).
constexpr int64_t kStreamMaxL = 1024;
// The streamed kernel's producer. Wide form (3 or 4 consumer warpgroups: seqlen > 640, one CTA
// per SM): a whole warpgroup (setmaxnreg acts on warpgroups) of which warp 0 loads the slots
// and warps 1-3 build the tables (named barrier 1); it keeps 64 of the 96 registers each thread gets at launch,
// which lifts the consumers to 104 (setmaxnreg.inc only takes what this CTA gave back: 128 x 32
// >= 512 x 8). Narrow form (1 or 2 consumer warpgroups: seqlen <= 640; at seqlen <= 512 two or
// three CTAs fit an SM's shared memory): one warp does both, and every thread keeps 96
// registers: two CTAs of nine warps put five on one SM quarter, whose 16K registers allow 102
// each (a build at 105 registers measured 15% slower at L 512: by that count, one CTA per SM).
// ptxas needs 90 registers at launch for an m64n128 wgmma, so a narrower launch budget with
// setmaxnreg does not compile (C7602).
constexpr int stream_producer(bool wide) { return wide ? 128 : 32; }
constexpr int stream_threads(bool wide) { return (wide ? 4 : 2) * 128 + stream_producer(wide); }
// The 64 / 104 split above assumes 96 registers at launch: 65536 / 640 threads, rounded down to
// a multiple of 8. A change of the launch bounds must revisit the setmaxnreg values.
static_assert(stream_threads(true) == 640 && (65536 / stream_threads(true)) / 8 * 8 == 96 &&
                  128 * (96 - 64) >= 4 * 128 * (104 - 96),
              "stream90_kernel: setmaxnreg values out of step with the launch bounds");
constexpr int kMaxSlots = 8;  // Lp / 128 at kStreamMaxL
constexpr uint32_t kSlotBytes = 128u * kRows * 2u;
constexpr int kStageT = kRows * 32;  // 16-bit elements staged per warpgroup

struct StreamShared {
  // ready[s]: slot s holds v = pregate * u (calls with a pregate; one arrival per item).
  uint64_t full[kMaxSlots], empty[kMaxSlots], ready[kMaxSlots], tfull[2], tempty[2], chk[2];
  int sexp[2], kbad[2];
  int badrow[2][kRows];  // item number (it) for rows found holding a NaN / Inf, by parity
};

size_t stream_smem_bytes(int Lp) {
  return 1024 + size_t(kRows) * Lp * 2 + 2 * size_t(Lp / 4) * 128 + kZeroBytes + size_t(2 * Lp) * 4 +
         size_t(warpgroups(Lp)) * kStageT * 2;
}

// First and last slot (128 positions) the k-steps of output tile j read.
__device__ __forceinline__ int2 tile_slots(const DirectArgs& a, int j) {
  const int2 k = tile_krange(a, j);
  return make_int2(k.x >> 7, (k.y - 1) >> 7);
}

// Two 16-bit values of one 32-bit word as floats (low half first); bf16 in two integer ops.
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t w) {
  if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
  } else {
    return sm80::Elt<T>::unpack(w);
  }
}

template <class T, bool kWide>
__global__ void __launch_bounds__(stream_threads(true), 1)
    stream90_kernel(const DirectArgs a, const __grid_constant__ CUtensorMap umap, int64_t nitems,
                    int down, int post_l1, int post_near) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ StreamShared sh;
  const int Lp = a.Lp, nslots = a.ntiles;
  // v's slots in the 128-byte swizzle of the copy engine and of wgmma: 1024-byte aligned.
  T* xs = reinterpret_cast<T*>(smem + ((1024u - (sm80::smem_u32(smem) & 1023u)) & 1023u));
  T* tables = xs + size_t(kRows) * Lp;
  const size_t table_elems = size_t(Lp / 4) * 64;
  T* zero = tables + 2 * table_elems;
  float* taps = reinterpret_cast<float*>(zero + kZeroBytes / sizeof(T));
  T* stage_all = reinterpret_cast<T*>(taps + 2 * Lp);

  const int tid = threadIdx.x;
  const int W = (blockDim.x - stream_producer(kWide)) >> 7;
  const int L = static_cast<int>(a.L);
  if (tid == 0) {
    for (int s = 0; s < nslots; ++s) {
      tma::mbar_init(sm80::smem_u32(&sh.full[s]), 1);
      tma::mbar_init(sm80::smem_u32(&sh.empty[s]), 4 * W);
      tma::mbar_init(sm80::smem_u32(&sh.ready[s]), 128);
    }
    for (int p = 0; p < 2; ++p) {
      tma::mbar_init(sm80::smem_u32(&sh.tfull[p]), 1);
      tma::mbar_init(sm80::smem_u32(&sh.tempty[p]), 128 * W);  // every consumer thread
      tma::mbar_init(sm80::smem_u32(&sh.chk[p]), 4 * W);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (tid < int(kZeroBytes / 16)) reinterpret_cast<uint4*>(zero)[tid] = make_uint4(0u, 0u, 0u, 0u);
  if (tid < 2 * kRows) sh.badrow[tid / kRows][tid % kRows] = -1;
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();

  if (tid >= W * 128) {
    // ---- producer, item after item: the table, and the loads of the rows. Wide: a warpgroup
    // whose registers go to the consumers, warp 0 loading and warps 1-3 building the tables;
    // narrow: one warp doing both.
    int pw = 0;
    if constexpr (kWide) {
      asm volatile("setmaxnreg.dec.sync.aligned.u32 64;\n" ::: "memory");
      pw = (tid - W * 128) >> 5;
    }
    const int lane = tid & 31;
    int it = 0;
    for (int64_t item = blockIdx.x; item < nitems; item += gridDim.x, ++it) {
      const int64_t c = item / a.row_groups;
      const int b0 = static_cast<int>(item % a.row_groups) * kRows;
      const int p = it & 1;
      if (pw == 0 && (a.pre != nullptr || a.post != nullptr)) {
        // The item's gate rows into L2 (one bulk prefetch per row and gate; the rows are
        // 16-byte aligned and L a multiple of 8): the consumers read them while this item
        // runs, the pregate at its start and the postgate in the epilogues.
        for (int r = lane; r < kRows && b0 + r < a.batch; r += 32) {
          if (a.pre != nullptr)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(
                             static_cast<const T*>(a.pre) + (b0 + r) * a.pre_bs + c * a.pre_cs),
                         "r"(2 * L)
                         : "memory");
          if (a.post != nullptr && !(kWide && post_near))
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(
                             static_cast<const T*>(a.post) + (b0 + r) * a.post_bs + c * a.post_cs),
                         "r"(2 * L)
                         : "memory");
        }
      }
      if (!kWide || pw >= 1) {
        // The item's table: one warp (narrow) or warps 1-3 (wide), bt / nb the thread's index
        // among them and their count.
        const int bt = kWide ? tid - W * 128 - 32 : lane, nb = kWide ? 96 : 32;
        auto sync_builders = [&]() {
          if constexpr (kWide) {
            asm volatile("bar.sync 1, 96;\n" ::: "memory");
          } else {
            __syncwarp();
          }
        };
        if (it >= 2) tma::mbar_wait(sm80::smem_u32(&sh.tempty[p]), ((it >> 1) & 1) ^ 1);
        // Taps on the diagonals -Lp .. Lp - 1 (unscaled) into shared memory: fp32 filters by
        // 4-byte cp.async, every one of them in flight at once (one memory round trip; the
        // first item of every CTA waits for this), other dtypes by plain loads.
        auto tap_index = [&](int e) -> int64_t {  // filter index of diagonal e - Lp, or -1
          const int d = e - Lp;
          return (d >= a.dlo && d <= a.dhi) ? conv::diag_index(a, d) : -1;
        };
        const bool async_taps = a.k_dtype == DType::F32 && (reinterpret_cast<uintptr_t>(a.k) & 3u) == 0;
        if (async_taps) {
          const float* kc = static_cast<const float*>(a.k) + c * a.k_cs;
          for (int e = bt; e < 2 * Lp; e += nb) {
            const int64_t idx = tap_index(e);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sm80::smem_u32(taps + e)),
                         "l"(idx >= 0 ? kc + idx : kc), "r"(idx >= 0 ? 4 : 0)
                         : "memory");
          }
          sm80::cp_async_wait_all();
        } else {
          for (int e0 = 0; e0 < 2 * Lp; e0 += 8 * nb) {
            float tv[8];
#pragma unroll
            for (int s = 0; s < 8; ++s) {
              const int e = e0 + s * nb + bt;
              const int64_t idx = e < 2 * Lp ? tap_index(e) : -1;
              tv[s] = idx >= 0 ? load_float(a.k, a.k_dtype, c * a.k_cs + idx) : 0.0f;
            }
#pragma unroll
            for (int s = 0; s < 8; ++s) {
              const int e = e0 + s * nb + bt;
              if (e < 2 * Lp) taps[e] = tv[s];
            }
          }
        }
        sync_builders();
        // Their largest magnitude and whether one is not finite (the same rules as
        // direct_prologue), each warp over all of them.
        float m = 0.0f;
        int bad = 0;
        for (int e = 4 * lane; e < 2 * Lp; e += 128) {
          const float4 t4v = *reinterpret_cast<const float4*>(taps + e);
          const float tv[4] = {t4v.x, t4v.y, t4v.z, t4v.w};
#pragma unroll
          for (int s = 0; s < 4; ++s) {
            if (isfinite(tv[s])) {
              m = fmaxf(m, fabsf(tv[s]));
            } else {
              bad = 1;
            }
          }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        bad = __any_sync(0xffffffffu, bad);
        const int sexp = conv::tap_scale_exp<T>(m);
        // Table rows rho = 8 b + r hold kk[Lp - 1 - rho - c'], c' = 0..7: taps[2 Lp - 1 - rho - c'].
        // Each thread writes 8 consecutive rows from 15 scaled taps.
        const float scale = ldexpf(1.0f, sexp);
        T* table = tables + size_t(p) * table_elems;
        for (int rho0 = 8 * bt; rho0 < 2 * Lp; rho0 += 8 * nb) {
          float w[15];
#pragma unroll
          for (int i = 0; i < 15; ++i) {
            const int e = 2 * Lp - 1 - rho0 - i;  // rows rho0 + r need e = 2 Lp - 1 - rho0 - r - c'
            w[i] = e >= 0 ? taps[e] * scale : 0.0f;
          }
#pragma unroll
          for (int r = 0; r < 8; ++r) {
            float v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = w[r + j];
            *reinterpret_cast<uint4*>(table + size_t(rho0 + r) * 8) = conv::pack8<T>(v);
          }
        }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        // Every builder past its reads of taps (the next item's copies overwrite them) and
        // its table writes.
        sync_builders();
        if (bt == 0) {
          sh.sexp[p] = sexp;
          sh.kbad[p] = bad;
          tma::mbar_arrive(sm80::smem_u32(&sh.tfull[p]));
        }
      }
      if (pw == 0 && lane == 0) {
        // The rows: each slot as soon as every warp released the previous item's (lowest first
        // among those free at one look).
        unsigned pending = (1u << nslots) - 1u;
        while (pending != 0u) {
          bool issued = false;
          for (int s = 0; s < nslots; ++s) {
            if (!(pending & (1u << s)) || !tma::mbar_test(sm80::smem_u32(&sh.empty[s]), (it & 1) ^ 1))
              continue;
            tma::mbar_arm(sm80::smem_u32(&sh.full[s]), kSlotBytes);
            for (int hf = 0; hf < 2; ++hf)
              tma::load_3d(&umap, sm80::smem_u32(xs + size_t(s) * (kSlotBytes / 2) + hf * 64 * kRows),
                           sm80::smem_u32(&sh.full[s]), 128 * s + 64 * hf, b0, static_cast<int>(c));
            pending &= ~(1u << s);
            issued = true;
          }
          if (!issued) __nanosleep(64);
        }
      }
      __syncwarp();
    }
    return;
  }

  // ---- consumer warpgroups
  if constexpr (kWide) asm volatile("setmaxnreg.inc.sync.aligned.u32 104;\n" ::: "memory");
  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int warp = (tid >> 5) & 3, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int T_ = (a.ntiles + W - 1) / W;  // tile rounds (the last may be partial)
  // A (v) in the 128-byte swizzle, K-major: 8-row groups 1 KB apart (SBO), k-step k0 at
  // 64-position half-slot k0 / 64 (8 KB each) plus 32 bytes per 16 positions inside it.
  const uint64_t desc_a0 = (uint64_t(1) << 62) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 16) |
                           uint64_t(sm80::smem_u32(xs) >> 4);
  auto desc_v = [&](int k0) {
    return desc_a0 + uint64_t((k0 >> 6) * (8192 >> 4) + ((k0 >> 4) & 3) * (32 >> 4));
  };
  const uint64_t desc_b0 = (uint64_t(128 >> 4) << 16) | (uint64_t(128 >> 4) << 32);
  const uint64_t desc_z = desc_b0 | uint64_t(sm80::smem_u32(zero) >> 4);
  T* stage = stage_all + size_t(wg) * kStageT;
  auto tile_of = [&](int ti) { return ti * W + ((ti & 1) ? W - 1 - wg : wg); };
  // Rows of v holding a NaN or an Inf are found by wgmma against a zero operand, each slot by
  // one warpgroup before its tiles: warpgroup w takes the slots at walk positions [w cnt,
  // (w + 1) cnt), so that the first warpgroup (the longest first tile) checks the slots loaded
  // first and the last one waits for the last-loaded slot.
  const int cnt = (nslots + W - 1) / W;
  const int chk_lo = wg * cnt;
  const int chk_hi = min(nslots, chk_lo + cnt);  // walk positions [chk_lo, chk_hi)
  int it = 0;
  for (int64_t item = blockIdx.x; item < nitems; item += gridDim.x, ++it) {
    // Channel and first row (stream_runs: batch and channels fit in int).
    const int c = static_cast<int>(item / a.row_groups);
    const int b0 = static_cast<int>(item % a.row_groups) * kRows;
    const int p = it & 1;
    const float Dc = a.D != nullptr ? load_float(a.D, a.d_dtype, c) : 0.0f;
    {
      // This warpgroup's share of the check; its rows' flags to the item's badrow, then each
      // warp's arrival on chk[p]. The epilogues wait for all (before the first).
      float chk[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 1
      for (int n = chk_lo; n < chk_hi; ++n) {
        const int s = down ? nslots - 1 - n : n;
        if (a.pre != nullptr) {
          // v = pregate * u in place, rounded to T (as direct_prologue does), by this
          // warpgroup: 16-byte unit i = tid % 128 + 128 k of the slot is row r = (i / 8) % 64,
          // positions 128 s + 64 (i / 512) + 8 (i % 8) .. + 7, stored at unit (i % 8) ^ (r % 8)
          // of the row's 128 bytes in its 8 KB box (the copy engine's 128-byte swizzle). The
          // pregate's loads go out before the wait for the slot's rows.
          uint4 gq[8];
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            const int i = (tid & 127) + 128 * k;
            const int r = (i >> 3) & 63, t0 = 128 * s + 64 * (i >> 9) + 8 * (i & 7);
            gq[k] = make_uint4(0u, 0u, 0u, 0u);
            if (b0 + r < a.batch && t0 < L)
              gq[k] = __ldg(reinterpret_cast<const uint4*>(static_cast<const T*>(a.pre) +
                                                           (b0 + r) * a.pre_bs + int64_t(c) * a.pre_cs + t0));
          }
          tma::mbar_wait(sm80::smem_u32(&sh.full[s]), it & 1);
          const uint32_t sbase = sm80::smem_u32(xs) + uint32_t(s) * kSlotBytes;
#pragma unroll
          for (int k = 0; k < 8; ++k) {
            const int i = (tid & 127) + 128 * k;
            const int r = (i >> 3) & 63;
            const uint32_t ad = sbase + uint32_t(i >> 9) * 8192u + uint32_t(r) * 128u +
                                (uint32_t((i & 7) ^ (r & 7)) << 4);
            uint4 w;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                         : "r"(ad));
            float uv[8], gv[8];
            conv::unpack8<T>(w, uv);
            conv::unpack8<T>(gq[k], gv);
#pragma unroll
            for (int e = 0; e < 8; ++e) uv[e] *= gv[e];
            w = conv::pack8<T>(uv);
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(ad), "r"(w.x), "r"(w.y),
                         "r"(w.z), "r"(w.w)
                         : "memory");
          }
          // The writes before the tensor cores read them (this warpgroup's check below, every
          // warpgroup's tiles) and the epilogues' D * v: ready[s] counts this warpgroup's 128
          // threads, each arriving after its own writes (one arrival per warp after __syncwarp
          // is as correct, but compute-sanitizer's racecheck reported the other lanes' writes
          // against the epilogues' reads).
          asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
          tma::mbar_arrive(sm80::smem_u32(&sh.ready[s]));
          tma::mbar_wait(sm80::smem_u32(&sh.ready[s]), it & 1);  // this warpgroup's check
        } else {
          tma::mbar_wait(sm80::smem_u32(&sh.full[s]), it & 1);
        }
        const uint64_t ds = desc_v(128 * s);
        cute::warpgroup_arrive();
#pragma unroll
        for (int q = 0; q < 8; ++q)
          MmaCheck<T>::Op::fma(ds + uint64_t((q >> 2) * (8192 >> 4) + (q & 3) * 2), desc_z, chk[0],
                               chk[1], chk[2], chk[3]);
        cute::warpgroup_commit_batch();
      }
      cute::warpgroup_wait<0>();
#pragma unroll
      for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(chk[i]);
      if (t4 == 0) {
        if (!(chk[0] == 0.0f)) sh.badrow[p][16 * warp + g] = it;
        if (!(chk[2] == 0.0f)) sh.badrow[p][16 * warp + g + 8] = it;
      }
      __syncwarp();
      if (lane == 0) tma::mbar_arrive(sm80::smem_u32(&sh.chk[p]));
    }
    tma::mbar_wait(sm80::smem_u32(&sh.tfull[p]), (it >> 1) & 1);  // the item's table
    const int sexp = sh.sexp[p];
    const bool kbad = sh.kbad[p] != 0;
    const float inv = ldexpf(1.0f, -sexp);
    const uint32_t tab = sm80::smem_u32(tables + size_t(p) * table_elems);
    // chk[p] also orders the items across warpgroups: no warp passes its first epilogue of an
    // item before every warp began it, i.e. released every slot and the table of the item
    // before. A warpgroup that reads no slot s in two items in a row therefore cannot arrive on
    // empty[s] for the second while a warp still reads s for the first.
    // Slots this warp has released for the item (warp-uniform): a slot goes back to the
    // producer as soon as this warp's wgmmas on it completed and no later tile of its warpgroup
    // reads it (empty[s] counts the 4 W warps).
    unsigned released = 0, later = 0;  // later: the slots later tiles of the warpgroup read
    auto release = [&](int s) {
      if ((released | later) & (1u << s)) return;
      if (lane == 0) tma::mbar_arrive(sm80::smem_u32(&sh.empty[s]));
      released |= 1u << s;
    };
    // A tile's own slot is held through its epilogue where D * v reads it. (Named: with the
    // test written out at its two uses, ptxas spilled 12 bytes in the narrow form, not 8.)
    const bool hold_own = a.D != nullptr;
    // The postgate of quarter s4 of the tile at N0 into this warp's staging rows: lane's rows
    // 16 warp + lane / 4 (+ 8), its 16-byte unit at the address the stores below read (post_dst
    // and post_ok* are lb and ok* of the epilogue; one shared definition moved the narrow form's
    // register allocation, 8 -> 12 bytes of spill, so the epilogue keeps its own). The first
    // quarter's copies go out before the tile's tensor work, the others when the quarter before
    // is stored.
    const uint32_t post_dst = sm80::smem_u32(stage) + uint32_t(16 * warp + (lane >> 2)) * 64u +
                              uint32_t(((lane & 3) ^ ((lane >> 3) & 3)) << 4);
    const T* const post_row =
        a.post != nullptr ? static_cast<const T*>(a.post) + int64_t(b0 + 16 * warp + (lane >> 2)) * a.post_bs +
                                int64_t(c) * a.post_cs + 8 * (lane & 3)
                          : nullptr;
    const bool post_ok0 = b0 + 16 * warp + (lane >> 2) < a.batch;
    const bool post_ok1 = b0 + 16 * warp + 8 + (lane >> 2) < a.batch;
    auto stage_post_at = [&](int N0, int s4) {
      if (N0 + 32 * s4 + 8 * (lane & 3) < L) {
        if (post_ok0) sm80::cp_async_16(post_dst, post_row + N0 + 32 * s4, 16);
        if (post_ok1) sm80::cp_async_16(post_dst + 512u, post_row + 8 * a.post_bs + N0 + 32 * s4, 16);
      }
      sm80::cp_async_commit();
    };
    // Quarter s4's postgate rows (64 bytes each) requested into L1 (from L2, where the producer
    // put them), so that its copies, issued only once the quarter before is stored, wait for L1
    // rather than L2. Lanes 4 m and 4 m + 1: rows 16 warp + m and + 8, the segment's first and
    // last 16 bytes (rows are only 16-byte aligned: a segment may straddle two 128-byte lines).
    auto post_to_l1 = [&](int N0, int s4) {
      const int e = N0 + 32 * s4 + 24 * (lane & 1);
      if (post_l1 && (lane & 2) == 0 && s4 < 4 && e < L) {
        if (post_ok0) asm volatile("prefetch.global.L1 [%0];\n" ::"l"(post_row - 8 * (lane & 3) + e));
        if (post_ok1)
          asm volatile("prefetch.global.L1 [%0];\n" ::"l"(post_row - 8 * (lane & 3) + 8 * a.post_bs + e));
      }
    };
    bool first = true;
    for (int ti = T_ - 1; ti >= 0; --ti) {
      const int j = tile_of(ti);
      if (j >= a.ntiles) continue;
      const int N0 = j * kTileN;
      const int2 kr = tile_krange(a, j);
      const int kb = kr.x, ke = kr.y;
      const int2 sr = make_int2(kb >> 7, (ke - 1) >> 7);
      if (a.post != nullptr) {
        if (kWide && post_near && (tid & 127) < kRows && b0 + (tid & 127) < a.batch) {
          // The tile's postgate rows into L2 (one bulk prefetch per row by 64 of the
          // warpgroup's threads) for its epilogue, in place of the producer's per item.
          const T* pr = static_cast<const T*>(a.post) + int64_t(b0 + (tid & 127)) * a.post_bs +
                        int64_t(c) * a.post_cs + N0;
          asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(pr), "r"(2 * min(kTileN, L - N0))
                       : "memory");
        }
        stage_post_at(N0, 0);
        post_to_l1(N0, 1);
      }
      float acc[64];
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
#pragma unroll
      for (int i = 0; i < 64; ++i) cute::warpgroup_fence_operand(acc[i]);
      const int s_hi = sr.y, s_lo = sr.x;
      later = 0;
      for (int tj = ti - 1; tj >= 0; --tj) {
        const int jj = tile_of(tj);
        if (jj >= a.ntiles) continue;
        const int2 r2 = tile_slots(a, jj);
        later |= ((2u << r2.y) - 1u) & ~((1u << r2.x) - 1u);
      }
      int prev = -1;
#pragma unroll 1
      for (int n = 0; n <= s_hi - s_lo; ++n) {
        const int s = down ? s_hi - n : s_lo + n;
        tma::mbar_wait(sm80::smem_u32(a.pre != nullptr ? &sh.ready[s] : &sh.full[s]), it & 1);
        const int k_lo = max(kb, 128 * s), k_hi = min(ke, 128 * s + 128);
        // Each group of wgmmas has its own arrive and commit, and no group sits in a loop that
        // ptxas cannot unroll (else it injects warpgroup.arrive, C7519, and serialises them).
        if (k_lo < k_hi) {
          uint64_t db = desc_b0 | uint64_t((tab + uint32_t(Lp - kTileN - N0 + k_lo) * 16) >> 4);
          if (k_hi - k_lo == 128 && k_lo + a.dlo >= N0) {
            // The slot on the tile's diagonal under a causal-like band (outputs before k0 +
            // dlo get nothing from k-step k0): its upper four k-steps only reach the tile's
            // last 64 positions, the first 64 columns (numbered backwards), so m64n64k16.
            const uint64_t ds = desc_v(k_lo);
            cute::warpgroup_arrive();
#pragma unroll
            for (int q = 0; q < 4; ++q) {
              mma_ss<T>(acc, ds + uint64_t((q & 3) * 2), db, std::make_index_sequence<64>{});
              db += 16;
            }
            // The PTX ISA orders accumulator accesses between wgmmas of one shape only: fence
            // again before the n64 steps reuse acc[0..31].
            cute::warpgroup_arrive();
#pragma unroll
            for (int q = 4; q < 8; ++q) {
              mma_ss64<T>(acc, ds + uint64_t((8192 >> 4) + (q & 3) * 2), db,
                          std::make_index_sequence<32>{});
              db += 16;
            }
            cute::warpgroup_commit_batch();
          } else if (k_hi - k_lo == 128) {
            const uint64_t ds = desc_v(k_lo);
            cute::warpgroup_arrive();
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              mma_ss<T>(acc, ds + uint64_t((q >> 2) * (8192 >> 4) + (q & 3) * 2), db,
                        std::make_index_sequence<64>{});
              db += 16;
            }
            cute::warpgroup_commit_batch();
          } else {
#pragma unroll 1
            for (int k0 = k_lo; k0 < k_hi; k0 += 16) {
              cute::warpgroup_arrive();
              mma_ss<T>(acc, desc_v(k0), db, std::make_index_sequence<64>{});
              cute::warpgroup_commit_batch();
              db += 16;
            }
          }
        }
        cute::warpgroup_wait<1>();  // every group before slot s's last one has completed
        if (prev >= 0 && !(hold_own && prev == j)) release(prev);
        prev = s;
      }
      cute::warpgroup_wait<0>();
      if (!(hold_own && prev == j)) release(prev);
#pragma unroll
      for (int i = 0; i < 64; ++i) cute::warpgroup_fence_operand(acc[i]);
      if (first) tma::mbar_wait(sm80::smem_u32(&sh.chk[p]), (it >> 1) & 1);  // every warp's check
      const bool bad_lo = kbad || sh.badrow[p][16 * warp + g] == it;  // rows 16 warp + g, + 8
      const bool bad_hi = kbad || sh.badrow[p][16 * warp + g + 8] == it;
      // Epilogue, a quarter tile at a time (see direct90_kernel for the accumulator's layout):
      // y = acc 2^-sexp + D * v (v exact from this tile's slot), NaN for a bad row, rounded to
      // T into the staging rows; then 16-byte stores. Each warp stages and stores its own 16
      // rows, so a warp waits for no other. Pair (s4, h, qq) holds positions tl, tl + 1 of
      // quarter s4 with tl = 30 - 8 qq - 2 t4, of row r = 16 warp + g + 8 h (so r % 8 = g).
      // Every shared-memory address is a per-thread base and a constant: v's byte address is
      // (vb ^ (cc << 4)) + 8192 (s4 / 2) + 1024 h with cc = 4 (s4 % 2) + 3 - qq (the 128-byte
      // swizzle's unit cc ^ g, g folded into vb), the staging one sa + 512 h.
      const uint32_t vb = (sm80::smem_u32(xs) + uint32_t(N0) * 128u +
                           uint32_t(16 * warp + g) * 128u + uint32_t(12 - 4 * t4)) |
                          uint32_t(g << 4);
      const uint32_t sb = sm80::smem_u32(stage) + uint32_t(16 * warp + g) * 64u + uint32_t(12 - 4 * t4);
      const int gg = (g >> 1) & 3;
      // Stores: lane's row rr = 8 (2 warp + i2) + lane / 4 of the staging, 16-byte unit cq.
      const int cq = lane & 3;
      const uint32_t lb = sm80::smem_u32(stage) + uint32_t(16 * warp + (lane >> 2)) * 64u +
                          uint32_t((cq ^ ((lane >> 3) & 3)) << 4);
      T* const yrow = static_cast<T*>(a.y) + int64_t(b0 + 16 * warp + (lane >> 2)) * a.y_bs +
                      int64_t(c) * a.y_cs + (N0 + 8 * cq);
      const bool ok0 = b0 + 16 * warp + (lane >> 2) < a.batch;
      const bool ok1 = b0 + 16 * warp + 8 + (lane >> 2) < a.batch;
      auto epilogue = [&](auto has_d, auto post) {
        constexpr bool post_on = decltype(post)::value;
#pragma unroll
        for (int s4 = 0; s4 < 4; ++s4) {
          __syncwarp();
          // The postgate of this quarter (rows and chunks as the stores below) by 16-byte
          // copies into the staging rows, where each pair below reads its two values and
          // writes y over them (one rounding: y = postgate * (acc + D * v) in fp32).
          if (post_on) {
            if (s4 > 0) stage_post_at(N0, s4);
            sm80::cp_async_wait_all();
            __syncwarp();
            if (s4 > 0) post_to_l1(N0, s4 + 1);
          }
          auto ldv = [&](int qq, int h) {
            const uint32_t va = (vb ^ uint32_t((4 * (s4 & 1) + 3 - qq) << 4)) + uint32_t((s4 >> 1) * 8192);
            uint32_t w;
            asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w) : "r"(va + uint32_t(1024 * h)));
            return w;
          };
          // The wide form loads this quarter's v pairs before using any; the narrow one (96
          // registers) one pair at a time.
          uint32_t vw[4][2];
          if (has_d && kWide) {
#pragma unroll
            for (int qq = 0; qq < 4; ++qq)
#pragma unroll
              for (int h = 0; h < 2; ++h) vw[qq][h] = ldv(qq, h);
          }
#pragma unroll
          for (int qq = 0; qq < 4; ++qq) {
            const int q = 12 - 4 * s4 + qq;
            const uint32_t sa = sb + uint32_t(((3 - qq) ^ gg) << 4);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float y0 = acc[4 * q + 2 * h + 1] * inv, y1 = acc[4 * q + 2 * h] * inv;
              if (has_d) {
                const float2 v = unpack2<T>(kWide ? vw[qq][h] : ldv(qq, h));
                y0 = fmaf(Dc, v.x, y0);
                y1 = fmaf(Dc, v.y, y1);
              }
              if (post_on) {
                uint32_t w;
                asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w) : "r"(sa + uint32_t(512 * h)));
                const float2 pg = unpack2<T>(w);
                y0 *= pg.x;
                y1 *= pg.y;
              }
              if (h ? bad_hi : bad_lo) y0 = y1 = __int_as_float(0x7fffffff);
              asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sa + uint32_t(512 * h)),
                           "r"(sm80::Elt<T>::pack(y0, y1)));
            }
          }
          __syncwarp();
          if (N0 + 32 * s4 + 8 * cq < L) {
#pragma unroll
            for (int i2 = 0; i2 < 2; ++i2) {
              if (!(i2 ? ok1 : ok0)) continue;
              uint4 w;
              asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                           : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w)
                           : "r"(lb + uint32_t(512 * i2)));
              *reinterpret_cast<uint4*>(yrow + i2 * 8 * a.y_bs + 32 * s4) = w;
            }
          }
        }
      };
      if (a.post != nullptr) {
        if (a.D != nullptr)
          epilogue(std::true_type{}, std::true_type{});
        else
          epilogue(std::false_type{}, std::true_type{});
      } else if (a.D != nullptr) {
        epilogue(std::true_type{}, std::false_type{});
      } else {
        epilogue(std::false_type{}, std::false_type{});
      }
      // The slots this tile still held (its own, for D * v) that no later tile reads and, after
      // the last tile, the table: each warp arrives for the slots once past its reads.
      __syncwarp();
      for (int s = 0; s < nslots; ++s) release(s);
      // The table and sexp / kbad of this item parity go back to the producer: every thread
      // arrives (it read sexp and kbad; one arrival per warp after __syncwarp is as correct,
      // but compute-sanitizer's racecheck reported the other lanes' reads against the
      // producer's next writes once a CTA ran three items).
      if (later == 0u) tma::mbar_arrive(sm80::smem_u32(&sh.tempty[p]));
      first = false;
    }
  }
}


// Switches read at each call: on unless the variable is set to 0.
bool env_not_zero(const char* name) {
  const char* e = std::getenv(name);
  return e == nullptr || e[0] != '0';
}
// FLASHKIT_FFTCONV_DIRECT90_STREAM=0 keeps calls the streamed kernel could run on
// direct90_kernel (for comparison); anything else, or unset, lets it run them.
bool stream_enabled() { return env_not_zero("FLASHKIT_FFTCONV_DIRECT90_STREAM"); }

// FLASHKIT_FFTCONV_DIRECT90_WALK=up: the streamed kernel walks each tile's slots upwards;
// otherwise downwards (for comparison).
int walk_down() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_DIRECT90_WALK");
  return e != nullptr && e[0] == 'u' ? 0 : 1;
}

// FLASHKIT_FFTCONV_DIRECT90_POSTL1=0: the streamed kernel does not request the next quarter's
// postgate into L1 ahead of its copies (for comparison).
int post_l1_enabled() { return env_not_zero("FLASHKIT_FFTCONV_DIRECT90_POSTL1"); }

// FLASHKIT_FFTCONV_DIRECT90_POSTNEAR=0: the streamed kernel's wide form has the producer
// request each item's postgate rows into L2 at the item's start, as the narrow form does,
// rather than each tile's rows at the tile's start (for comparison).
int post_near_enabled() { return env_not_zero("FLASHKIT_FFTCONV_DIRECT90_POSTNEAR"); }

// FLASHKIT_FFTCONV_DIRECT90_MAX_CTAS=N (N >= 1) caps the streamed kernel's grid at N CTAs, so
// that a small problem runs several items per CTA (the sanitizer cases); unset or invalid: the
// CTAs resident at once.
int64_t stream_max_ctas() {
  const char* e = std::getenv("FLASHKIT_FFTCONV_DIRECT90_MAX_CTAS");
  const long long n = e != nullptr ? std::atoll(e) : 0;
  return n >= 1 ? static_cast<int64_t>(n) : INT64_MAX;
}

// FLASHKIT_FFTCONV_DIRECT90_GATED=0 keeps gated calls off the streamed kernel (AUTO then
// gives them to cuda.sm80.fftconv_direct, the rule before session 38; for comparison).
bool gated_stream_enabled() { return env_not_zero("FLASHKIT_FFTCONV_DIRECT90_GATED"); }

// What the streamed kernel needs beyond direct90_kernel's predicate: seqlen a multiple of 8
// up to kStreamMaxL (the copy engine loads whole 8-element chunks; zeros past seqlen), rows of
// u, y and the gates 16-byte aligned, coordinates within int32 and a tensor map the driver
// accepts (encode_u_map).
bool stream_runs(const FFTConvProblem& p, const DirectArgs& a) {
  if (!stream_enabled()) return false;
  if ((p.pregate != nullptr || p.postgate != nullptr) && !gated_stream_enabled()) return false;
  if (p.seqlen % 8 != 0 || p.seqlen > kStreamMaxL || !a.vec || !a.lean16) return false;
  if (p.batch > INT_MAX - kRows || p.channels > INT_MAX) return false;
  if ((p.batch > 1 && p.u_batch_stride <= 0) || (p.channels > 1 && p.u_channel_stride <= 0))
    return false;
  return true;
}

// u as the 3-D tensor (seqlen, batch, channels) with box (64, 64, 1) in the 128-byte swizzle:
// half a slot of v, 64 positions of 64 rows, as wgmma's K-major A reads it. False when the
// driver refuses it or lacks the call.
bool encode_u_map(const FFTConvProblem& p, CUtensorMap* map) {
  const EncodeTiledFn fn = encode_tiled();
  if (fn == nullptr) return false;
  const cuuint64_t dims[3] = {cuuint64_t(p.seqlen), cuuint64_t(p.batch), cuuint64_t(p.channels)};
  const cuuint64_t strides[2] = {cuuint64_t(p.batch > 1 ? p.u_batch_stride * 2 : 16),
                                 cuuint64_t(p.channels > 1 ? p.u_channel_stride * 2 : 16)};
  const cuuint32_t box[3] = {64u, cuuint32_t(kRows), 1u};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  const CUresult r = fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, const_cast<void*>(p.u), dims,
                        strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS;
}

}  // namespace

bool fftconv_direct_supported(const DeviceCaps& caps, const FFTConvProblem& p) {
  if (caps.cc_major != 9 || caps.cc_minor != 0) return false;
  const int setting = conv::direct_setting();
  if (setting == 0 || !conv::direct_runs(p, kMaxL, kRows)) return false;
  if (setting != 1 && (p.seqlen < kAutoMinL || p.seqlen > kAutoMaxL || p.batch < kAutoMinBatch))
    return false;
  const int Lp = static_cast<int>((p.seqlen + kTileN - 1) / kTileN * kTileN);
  // Gated calls in AUTO only where the streamed kernel takes them (direct90_kernel measured
  // 0.93-1.0x cuda.sm80.fftconv_direct on them).
  if (setting != 1 && (p.pregate != nullptr || p.postgate != nullptr)) {
    CUtensorMap map;
    if (!stream_runs(p, conv::make_direct_args(p, kTileN, kRows)) ||
        static_cast<int64_t>(stream_smem_bytes(Lp)) + 1024 > caps.smem_per_block_optin ||
        !encode_u_map(p, &map))
      return false;
  }
  // + 1024: the kernel's static shared memory counts against the same per-block limit.
  return static_cast<int64_t>(smem_bytes(Lp > 0 ? Lp : kTileN)) + 1024 <= caps.smem_per_block_optin;
}

fk_status_t fftconv_direct(const ExecContext& ctx, const FFTConvProblem& p) {
  if (p.batch <= 0 || p.channels <= 0 || p.seqlen <= 0) return FK_SUCCESS;
  if ((p.dtype != DType::F16 && p.dtype != DType::BF16) || p.seqlen > kMaxL || p.filter_len <= 0) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.fftconv_direct: problem outside the kernel's predicate");
  }
  DeviceGuard guard(ctx.device_ordinal);
  FK_RETURN_IF_ERROR(guard.status());
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);

  const DirectArgs a = conv::make_direct_args(p, kTileN, kRows);
  CUtensorMap umap;
  // The streamed form needs more shared memory than direct90_kernel (two tables): a device
  // with less per block than that runs direct90_kernel.
  const bool stream_fits = ctx.caps == nullptr || static_cast<int64_t>(stream_smem_bytes(a.Lp)) + 1024 <=
                                                      ctx.caps->smem_per_block_optin;
  if (stream_fits && stream_runs(p, a) && encode_u_map(p, &umap)) {
    const int wgs = warpgroups(a.Lp);
    const size_t smem = stream_smem_bytes(a.Lp);
    const int64_t nitems = p.channels * a.row_groups;
    const bool wide = wgs > 2;
    int down = walk_down();
    int post_l1 = post_l1_enabled();
    int post_near = post_near_enabled();
    const void* fn = p.dtype == DType::BF16
                         ? (wide ? reinterpret_cast<const void*>(stream90_kernel<__nv_bfloat16, true>)
                                 : reinterpret_cast<const void*>(stream90_kernel<__nv_bfloat16, false>))
                         : (wide ? reinterpret_cast<const void*>(stream90_kernel<__half, true>)
                                  : reinterpret_cast<const void*>(stream90_kernel<__half, false>));
    FK_RETURN_IF_ERROR(conv::allow_smem(fn, smem, "cuda.sm90.fftconv_direct: shared memory"));
    int per_sm = 0;
    FK_CUDA_TRY(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, wgs * 128 + stream_producer(wide), smem),
        "cuda.sm90.fftconv_direct: occupancy");
    const int sms = ctx.caps != nullptr ? ctx.caps->sm_count : 132;
    const int64_t grid =
        std::min(std::min<int64_t>(nitems, int64_t(std::max(1, per_sm)) * sms), stream_max_ctas());
    void* args[] = {const_cast<DirectArgs*>(&a), &umap, const_cast<int64_t*>(&nitems), &down, &post_l1, &post_near};
    FK_CUDA_TRY(cudaLaunchKernel(fn, dim3(static_cast<unsigned>(grid)), dim3(wgs * 128 + stream_producer(wide)),
                                 args, smem, stream),
                "cuda.sm90.fftconv_direct: streamed kernel launch");
    return check_launch("cuda.sm90.fftconv_direct streamed kernel");
  }
  const int64_t grid = p.channels * a.row_groups;
  if (grid > INT_MAX) {
    return set_error(FK_ERROR_NOT_SUPPORTED,
                     "cuda.sm90.fftconv_direct: channels x ceil(batch / 64) = %lld blocks exceeds "
                     "the grid limit",
                     static_cast<long long>(grid));
  }
  const int wgs = warpgroups(a.Lp);
  if (2 * a.Lp > kTapRegs * 128 * wgs) {
    return set_error(FK_ERROR_INTERNAL,
                     "cuda.sm90.fftconv_direct: %d taps exceed the block's registers", 2 * a.Lp);
  }
  const size_t smem = smem_bytes(a.Lp);
  // Blocks resident at once (228 KB of shared memory per multiprocessor, 1 KB reserved per
  // block, 384 bytes of the kernel's static shared memory): how far ahead the L2 prefetch looks.
  const int per_sm = std::max<int>(1, int((233472 - 1024) / (smem + 384 + 1024)));
  const int ahead = std::max(1, ctx.caps != nullptr ? ctx.caps->sm_count : 132) * per_sm;
  if (p.dtype == DType::BF16) {
    FK_RETURN_IF_ERROR(conv::allow_smem(reinterpret_cast<const void*>(direct90_kernel<__nv_bfloat16>),
                                        smem, "cuda.sm90.fftconv_direct: shared memory"));
    direct90_kernel<__nv_bfloat16><<<static_cast<unsigned>(grid), wgs * 128, smem, stream>>>(a, ahead);
  } else {
    FK_RETURN_IF_ERROR(conv::allow_smem(reinterpret_cast<const void*>(direct90_kernel<__half>),
                                        smem, "cuda.sm90.fftconv_direct: shared memory"));
    direct90_kernel<__half><<<static_cast<unsigned>(grid), wgs * 128, smem, stream>>>(a, ahead);
  }
  return check_launch("cuda.sm90.fftconv_direct kernel");
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
