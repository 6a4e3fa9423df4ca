// The sm80-class GEMM kernel: mma.sync m16n8k16 (fp32 accumulators) fed by ldmatrix from
// XOR-swizzled shared-memory tiles, filled by a multistage cp.async pipeline (STAGES - 1 k-tiles
// in flight), with the next k16 step's fragments loaded into a second register set while the
// current step's MMAs issue. One CTA computes one BM x BN output tile of one batch entry (and
// one K range when split); tails in M, N and K are zero-filled by the copies themselves. The
// epilogue stages the accumulators through the idle pipeline stages and writes D row by row.
//
// Tiles (heuristics.h picks one per problem): big 128 x 256 x 64 (8 warps, one CTA per SM),
// mid 128 x 128 x 64 (4 warps, two CTAs per SM on Hopper, where one CTA's barriers, prologue
// and epilogue overlap the other's MMAs; split along K for skinny M), small 64 x 64 x 32. Warp
// tiles are 64 x 64 in the big and mid tiles (128 fp32 accumulators per thread, 246-254
// registers on sm_90a, so 8 warps per SM either way). On the H200 (SM80 family forced, bf16,
// 2026-11-30, benchmarks/RESULTS.md) this runs at 0.57 / 0.60 / 0.62 of cuBLAS at 4096^3 /
// 8192^3 / 16384^3, 0.45-0.47 at K = 1024, 0.73 at M = 128: about 70% of the mma.sync ceiling
// (629 TFLOP/s at 8 warps per SM); ncu of the mid kernel at K = 1024: tensor pipe 51% busy,
// 43% of issue gaps a fixed-latency dependency stall with 2 warps per scheduler.
//
// Mainloop details that matter for speed (read off the SASS; see benchmarks/RESULTS.md):
//   - one barrier per k-tile (bar.red.popc, whose zero count is OR-ed into the last k16 step's
//     A fragments): without that data dependency ptxas hoists the last step's MMAs above the
//     barrier, and after it every warp waits for its first ldmatrix of the next stage, issued
//     by all warps at once, with no MMA left to cover it;
//   - interior tiles copy whole k-tiles without bounds or zero-fill work (a separate loop over
//     the iterations whose loads are whole; 92 instead of ~235 non-MMA, non-ldmatrix
//     instructions per 64-deep k-tile of a 128 x 256 tile);
//   - the plain-D epilogue (no C, not split, 16-byte aligned rows) writes 8 columns per store.
//
// Shared-memory tiles (BK = 32; BK = 64 uses one 128-byte row per line):
//   K-major operand: BM (or BN) rows of 32 elements = 64 bytes = 4 chunks of 16 bytes. Two rows
//     share a 128-byte line whose 8 chunks are XOR-permuted by the line index, so the 8 row
//     addresses of one ldmatrix matrix fall on 8 different 16-byte bank groups.
//   MN-major operand: 32 rows (k) of BM (or BN) elements; the chunks of each 128-byte group are
//     XOR-permuted by k & 7, and ldmatrix.trans reads 8 consecutive k rows of one chunk.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/attention/sm80/primitives.cuh"
#include "cuda/common/activation.cuh"
#include "cuda/common/dtype.cuh"
#include "cuda/gemm/sm80/heuristics.h"
#include "cuda/gemm/sm80/params.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

// K-major tile of BK = 32 (64-byte rows: two rows per 128-byte line) or BK = 64 (one row per line).
template <int BK>
__device__ __forceinline__ uint32_t kmajor_off(int r, int c) {
  if constexpr (BK == 64) {
    return uint32_t(r * 128 + ((c ^ (r & 7)) << 4));
  } else {
    const int line = r >> 1;
    const int c8 = ((r & 1) << 2) | c;
    return uint32_t(line * 128 + ((c8 ^ (line & 7)) << 4));
  }
}

template <int COLS>
__device__ __forceinline__ uint32_t mnmajor_off(int r, int c) {
  return uint32_t(r * COLS * 2 + (((c & ~7) | ((c & 7) ^ (r & 7))) << 4));
}

// Copies one operand's ROWS x BK tile (ROWS along m or n) per k-tile into shared memory. Each
// thread owns kPer 16-byte chunks kRowsPerPass rows apart, all in the same column position, so
// one pointer, one validity bound and one shared offset describe them all.
template <int ROWS, int BK, bool KMAJOR, int THREADS>
struct TileLoader {
  static constexpr int kChunksPerRow = KMAJOR ? BK / 8 : ROWS / 8;  // rows: m/n (K-major) or k
  static constexpr int kRowsPerPass = THREADS / kChunksPerRow;
  static constexpr int kTileRows = KMAJOR ? ROWS : BK;
  static constexpr int kPer = kTileRows / kRowsPerPass;
  static_assert(THREADS % kChunksPerRow == 0 && kTileRows % kRowsPerPass == 0, "tile split");
  static_assert(kRowsPerPass % (BK == 32 ? 16 : 8) == 0 || !KMAJOR, "K-major passes keep the swizzle phase");
  static_assert(kRowsPerPass % 8 == 0, "MN-major passes keep the swizzle phase");
  static constexpr uint32_t kSmemPass =
      KMAJOR ? uint32_t(kRowsPerPass * BK * 2) : uint32_t(kRowsPerPass * ROWS * 2);

  const char* base;    // any valid address of the operand (source of zero-byte copies)
  const char* g;       // this thread's first chunk at the current k-tile
  int64_t pass_bytes;  // global distance between the thread's chunks
  int64_t kstep_bytes; // global distance between consecutive k-tiles
  uint32_t soff;
  int row0;      // K-major: tile row (m/n) of the first chunk; MN-major: k row
  int rows_left; // K-major: valid m/n rows from row0; MN-major: unused
  int col;       // K-major: k offset of the chunk in the tile; MN-major: unused
  int colbytes;  // MN-major: valid bytes of the chunk along m/n
  int K;

  // Operand X(r, k) (r along m or n) of the tile starting at row r0 (of `extent`), k-tile kt0.
  __device__ __forceinline__ TileLoader(const void* ptr, int64_t ld, int r0, int extent, int K_,
                                        int kt0, int tid) {
    base = static_cast<const char*>(ptr);
    K = K_;
    const int r = tid / kChunksPerRow, c = tid % kChunksPerRow;
    if constexpr (KMAJOR) {
      row0 = r;
      rows_left = extent - r0 - r;
      col = c * 8;
      colbytes = 16;
      g = base + ((int64_t(r0) + r) * ld + int64_t(kt0) * BK + c * 8) * 2;
      pass_bytes = int64_t(kRowsPerPass) * ld * 2;
      kstep_bytes = BK * 2;
      soff = kmajor_off<BK>(r, c);
    } else {
      row0 = r;
      rows_left = 0;
      col = 0;
      const int left = extent - r0 - c * 8;
      colbytes = left >= 8 ? 16 : (left > 0 ? left * 2 : 0);
      g = base + ((int64_t(kt0) * BK + r) * ld + r0 + c * 8) * 2;
      pass_bytes = int64_t(kRowsPerPass) * ld * 2;
      kstep_bytes = int64_t(BK) * ld * 2;
      soff = mnmajor_off<ROWS>(r, c);
    }
  }

  // Issues the copies of k-tile kt (tiles must be loaded in increasing order) into `stage`.
  // WHOLE: the caller knows that the tile lies inside the operand (all ROWS rows and all BK
  // columns of k), so the copies need no bounds, zero-fill or pointer selection.
  template <bool WHOLE = false>
  __device__ __forceinline__ void load(uint32_t stage, int kt) {
    if constexpr (WHOLE) {
#pragma unroll
      for (int i = 0; i < kPer; ++i)
        cp_async_16_full(stage + soff + uint32_t(i) * kSmemPass, g + i * pass_bytes);
    } else {
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        int bytes;
        if constexpr (KMAJOR) {
          const int kleft = K - kt * BK - col;
          const int kb = kleft >= 8 ? 16 : (kleft > 0 ? kleft * 2 : 0);
          bytes = (i * kRowsPerPass < rows_left) ? kb : 0;
        } else {
          bytes = (kt * BK + row0 + i * kRowsPerPass < K) ? colbytes : 0;
        }
        const char* src = bytes > 0 ? g + i * pass_bytes : base;
        cp_async_16(stage + soff + uint32_t(i) * kSmemPass, src, bytes);
      }
    }
    g += kstep_bytes;
  }
};

// alpha * acc + beta * C + bias, then the activation, for output element (m, n) of batch l.
__device__ __forceinline__ float epilogue_value(const GemmParams& p, int64_t l, int m, int n,
                                                float acc) {
  float x = p.alpha * acc;
  if (p.c != nullptr) {
    x += p.beta * load_float(p.c, p.cd_dtype,
                             l * p.c_batch_stride + int64_t(m) * p.c_stride_m +
                                 int64_t(n) * p.c_stride_n);
  }
  if (p.bias != nullptr) x += load_float(p.bias, p.bias_dtype, p.bias_along_m ? m : n);
  return activate(x, p.activation);
}

// epilogue_value for 8 consecutive columns n .. n + 7 of row m with no C term (the plain-D
// path): the same alpha * acc + bias, then the activation, with the bias dtype and the
// activation switched once per 8 values instead of once per value. The sm_80 SASS of the
// per-value form held a 5-way bias-dtype switch and a 4-way activation switch for each of the
// 8 values (~1100 instructions between the staging read and the 16-byte store of the 128 x 128
// kernel), a large share of a tile's instructions at K = 1024 (session 17, static count; the
// Hopper GEMM's copy-engine epilogue had the same problem, measured there: benchmarks/RESULTS.md,
// "Lean copy-engine epilogue").
__device__ __forceinline__ void epilogue_octet(const GemmParams& p, int m, int n, float (&x)[8]) {
  if (p.bias == nullptr) {
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] *= p.alpha;
  } else {
    float b[8];
    if (p.bias_along_m) {
      const float v = load_float(p.bias, p.bias_dtype, m);
#pragma unroll
      for (int e = 0; e < 8; ++e) b[e] = v;
    } else if (p.bias_dtype == DType::F32) {
      const float* bp = static_cast<const float*>(p.bias) + n;
#pragma unroll
      for (int e = 0; e < 8; ++e) b[e] = bp[e];
    } else if (p.bias_dtype == DType::BF16) {
      const __nv_bfloat16* bp = static_cast<const __nv_bfloat16*>(p.bias) + n;
#pragma unroll
      for (int e = 0; e < 8; ++e) b[e] = __bfloat162float(bp[e]);
    } else if (p.bias_dtype == DType::F16) {
      const __half* bp = static_cast<const __half*>(p.bias) + n;
#pragma unroll
      for (int e = 0; e < 8; ++e) b[e] = __half2float(bp[e]);
    } else {  // unreachable (the API takes fp32/fp16/bf16 biases); kept for safety
#pragma unroll
      for (int e = 0; e < 8; ++e) b[e] = load_float(p.bias, p.bias_dtype, n + e);
    }
    // Rounded twice, as epilogue_value rounds (alpha * acc, then + bias: no FMA), so every
    // element of D gets the same arithmetic whichever path stores it.
#pragma unroll
    for (int e = 0; e < 8; ++e) x[e] = __fadd_rn(__fmul_rn(p.alpha, x[e]), b[e]);
  }
  switch (p.activation) {
    case Activation::Relu:
#pragma unroll
      for (int e = 0; e < 8; ++e) x[e] = activate(x[e], Activation::Relu);
      break;
    case Activation::GeluTanh:
#pragma unroll
      for (int e = 0; e < 8; ++e) x[e] = activate(x[e], Activation::GeluTanh);
      break;
    case Activation::GeluErf:
#pragma unroll
      for (int e = 0; e < 8; ++e) x[e] = activate(x[e], Activation::GeluErf);
      break;
    default:
      break;
  }
}

// Stores output elements (m, n) and (m, n + 1) when inside D, or their raw fp32 sums when split.
__device__ __forceinline__ void store_pair(const GemmParams& p, int64_t l, int m, int n, float v0,
                                           float v1, int split) {
  if (m >= p.M || n >= p.N) return;
  const bool two = n + 1 < p.N;
  if (p.partials != nullptr) {
    float* dst = p.partials + (int64_t(split) * p.M + m) * p.N + n;
    dst[0] = v0;
    if (two) dst[1] = v1;
    return;
  }
  const float x0 = epilogue_value(p, l, m, n, v0);
  const int64_t off = l * p.d_batch_stride + int64_t(m) * p.d_stride_m + int64_t(n) * p.d_stride_n;
  if (two && p.d_pairs) {
    const float x1 = epilogue_value(p, l, m, n + 1, v1);
    switch (p.cd_dtype) {
      case DType::F16:
        *reinterpret_cast<__half2*>(static_cast<__half*>(p.d) + off) = __floats2half2_rn(x0, x1);
        break;
      case DType::BF16:
        *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(p.d) + off) =
            __floats2bfloat162_rn(x0, x1);
        break;
      default:
        *reinterpret_cast<float2*>(static_cast<float*>(p.d) + off) = make_float2(x0, x1);
        break;
    }
    return;
  }
  store_float(p.d, p.cd_dtype, off, x0);
  if (two) store_float(p.d, p.cd_dtype, off + p.d_stride_n, epilogue_value(p, l, m, n + 1, v1));
}

template <class T, class Cfg, bool A_K, bool B_K>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) gemm_kernel(const GemmParams p) {
  extern __shared__ __align__(128) char smem[];
  constexpr int MI = Cfg::MI, NI = Cfg::NI, S = Cfg::STAGES, BK = Cfg::BK, KK = BK / 16;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = warp / Cfg::WARPS_N, wn = warp % Cfg::WARPS_N;

  // Grouped raster: kGroupM tile rows sweep n together, so concurrent CTAs share A and B in L2.
  const int t = blockIdx.x;
  const int group = Cfg::kGroupM * p.tiles_n;
  const int first_m = (t / group) * Cfg::kGroupM;
  const int gm = min(p.tiles_m - first_m, Cfg::kGroupM);
  const int local = t % group;
  const int tile_m = first_m + local % gm, tile_n = local / gm;
  const int m0 = tile_m * Cfg::BM, n0 = tile_n * Cfg::BN;

  const int split = blockIdx.y;
  const int k_tiles = (p.K + Cfg::BK - 1) / Cfg::BK;
  const int kt0 = split * p.k_tiles_per_split;
  const int nk = max(0, min(k_tiles, kt0 + p.k_tiles_per_split) - kt0);

  const uint32_t smem0 = smem_u32(smem);

  // Per-lane ldmatrix offsets within a stage (see the fragment layouts in primitives.cuh).
  uint32_t a_off[A_K ? KK : MI], b_off[B_K ? KK : NI / 2];
  if constexpr (A_K) {
    const int r = wm * Cfg::WTM + (lane & 7) + ((lane >> 3) & 1) * 8, hi = lane >> 4;
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) a_off[kk] = kmajor_off<BK>(r, kk * 2 + hi);
  } else {
    const int r = (lane & 7) + (lane >> 4) * 8;
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
      a_off[mi] = mnmajor_off<Cfg::BM>(r, (wm * Cfg::WTM + mi * 16) / 8 + ((lane >> 3) & 1));
  }
  if constexpr (B_K) {
    const int r = wn * Cfg::WTN + (lane & 7) + (lane >> 4) * 8, hi = (lane >> 3) & 1;
#pragma unroll
    for (int kk = 0; kk < KK; ++kk) b_off[kk] = kmajor_off<BK>(r, kk * 2 + hi);
  } else {
    const int r = (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int pi = 0; pi < NI / 2; ++pi)
      b_off[pi] = mnmajor_off<Cfg::BN>(r, (wn * Cfg::WTN + pi * 16) / 8 + (lane >> 4));
  }

  for (int64_t l = blockIdx.z; l < p.batch; l += gridDim.z) {
    TileLoader<Cfg::BM, BK, A_K, Cfg::kThreads> la(
        static_cast<const T*>(p.a) + l * p.a_batch_stride, p.a_ld, m0, p.M, p.K, kt0, tid);
    TileLoader<Cfg::BN, BK, B_K, Cfg::kThreads> lb(
        static_cast<const T*>(p.b) + l * p.b_batch_stride, p.b_ld, n0, p.N, p.K, kt0, tid);

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
      for (int ni = 0; ni < NI; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < S - 1; ++s) {
      if (s < nk) {
        const uint32_t st = smem0 + uint32_t(s * Cfg::kStageBytes);
        la.load(st, kt0 + s);
        lb.load(st + Cfg::kABytes, kt0 + s);
      }
      cp_async_commit();
    }

    uint32_t af[2][MI][4], bf[2][NI][2];
    auto load_frags = [&](int buf, uint32_t st, int kk) {
      const uint32_t sa = st, sb = st + Cfg::kABytes;
#pragma unroll
      for (int mi = 0; mi < MI; ++mi) {
        if constexpr (A_K) {
          ldsm_x4(af[buf][mi], sa + a_off[kk] + uint32_t(mi * 16 * BK * 2));
        } else {
          ldsm_x4_trans(af[buf][mi], sa + a_off[mi] + uint32_t(kk * 16 * Cfg::BM * 2));
        }
      }
#pragma unroll
      for (int pi = 0; pi < NI / 2; ++pi) {
        uint32_t r[4];
        if constexpr (B_K) {
          ldsm_x4(r, sb + b_off[kk] + uint32_t(pi * 16 * BK * 2));
        } else {
          ldsm_x4_trans(r, sb + b_off[pi] + uint32_t(kk * 16 * Cfg::BN * 2));
        }
        bf[buf][2 * pi][0] = r[0];
        bf[buf][2 * pi][1] = r[1];
        bf[buf][2 * pi + 1][0] = r[2];
        bf[buf][2 * pi + 1][1] = r[3];
      }
    };

    cp_async_wait<S - 2>();
    __syncthreads();
    int read_stage = 0, write_stage = S - 1;
    if (nk > 0) load_frags(0, smem0, 0);

    // One k-tile of the mainloop; WHOLE: the k-tile it loads (if any) lies inside A and B.
    auto ktile = [&](int it, auto whole) {
#pragma unroll
      for (int kk = 0; kk < KK; ++kk) {
        if (kk == KK - 1) {
          cp_async_wait<S - 2>();
          // The barrier's (always zero) count is folded into this step's A fragments, so that
          // ptxas cannot hoist this step's MMAs above the barrier: they then cover the latency
          // of the next stage's first ldmatrix burst (all warps issue theirs at once) instead
          // of the tensor pipe idling until those fragments arrive.
          const uint32_t token = uint32_t(__syncthreads_count(0));
#pragma unroll
          for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int e = 0; e < 4; ++e) af[kk & 1][mi][e] |= token;
          read_stage = read_stage == S - 1 ? 0 : read_stage + 1;
        }
        load_frags((kk + 1) & 1, smem0 + uint32_t(read_stage * Cfg::kStageBytes), (kk + 1) % KK);
        if (kk == 0) {
          if (it + S - 1 < nk) {
            const uint32_t st = smem0 + uint32_t(write_stage * Cfg::kStageBytes);
            la.template load<decltype(whole)::value>(st, kt0 + it + S - 1);
            lb.template load<decltype(whole)::value>(st + Cfg::kABytes, kt0 + it + S - 1);
          }
          cp_async_commit();
          write_stage = write_stage == S - 1 ? 0 : write_stage + 1;
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int j = 0; j < NI; ++j) {
            const int ni = (mi & 1) ? NI - 1 - j : j;  // serpentine: reuse the last B fragment
            Elt<T>::mma(acc[mi][ni], af[kk & 1][mi], bf[kk & 1][ni][0], bf[kk & 1][ni][1]);
          }
      }
    };
    // Interior tiles first run the iterations whose loads are whole k-tiles (all but the K tail)
    // without per-copy bounds work; the rest, and edge tiles, take the bounds-checked copies.
    int it = 0;
    if (m0 + Cfg::BM <= p.M && n0 + Cfg::BN <= p.N) {
      const int whole_its = min(nk, p.K / BK - kt0 - (S - 1));
      for (; it < whole_its; ++it) ktile(it, std::true_type{});
    }
    for (; it < nk; ++it) ktile(it, std::false_type{});
    cp_async_wait<0>();
    __syncthreads();  // every warp is done with the stages: they now stage the accumulators

    // Epilogue through shared memory: each pass stages the fp32 accumulators of kEpiRows tile
    // rows, then all threads walk them in column pairs (coalesced C reads and D writes, and one
    // copy of the epilogue code rather than one per accumulator register).
    float* staged = reinterpret_cast<float*>(smem);
    constexpr int kLd = Cfg::kEpiLd;
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll 1
    for (int pass = 0; pass < Cfg::kEpiPasses; ++pass) {
      if (wm / Cfg::kEpiWarpRows == pass) {
        const int row0 = (wm % Cfg::kEpiWarpRows) * Cfg::WTM;
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
          for (int ni = 0; ni < NI; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int r = row0 + mi * 16 + g + h * 8;
              const int c = wn * Cfg::WTN + ni * 8 + 2 * t4;
              *reinterpret_cast<float2*>(staged + r * kLd + c) =
                  make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
            }
      }
      __syncthreads();
      const int mrow0 = m0 + pass * Cfg::kEpiRows;
      if (p.d_vec16 && p.c == nullptr && p.partials == nullptr) {
        // D written 8 columns (16 or 32 bytes) per thread and step (8 independent bias loads
        // and activations per step); no C to read.
        constexpr int kOcts = Cfg::BN / 8;
#pragma unroll 1
        for (int i = tid; i < Cfg::kEpiRows * kOcts; i += Cfg::kThreads) {
          const int r = i / kOcts, c = (i % kOcts) * 8;
          const int m = mrow0 + r, n = n0 + c;
          if (m >= p.M || n >= p.N) continue;
          const float4 lo = *reinterpret_cast<const float4*>(staged + r * kLd + c);
          const float4 hi = *reinterpret_cast<const float4*>(staged + r * kLd + c + 4);
          float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
          const int64_t off = l * p.d_batch_stride + int64_t(m) * p.d_stride_m + n;
          if (n + 8 <= p.N) {
            epilogue_octet(p, m, n, x);
            if (p.cd_dtype == DType::F32) {
              float4* d = reinterpret_cast<float4*>(static_cast<float*>(p.d) + off);
              d[0] = make_float4(x[0], x[1], x[2], x[3]);
              d[1] = make_float4(x[4], x[5], x[6], x[7]);
            } else {
              uint4 v;
              uint32_t* w = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                if (p.cd_dtype == DType::F16) {
                  const __half2 h = __floats2half2_rn(x[2 * e], x[2 * e + 1]);
                  w[e] = *reinterpret_cast<const uint32_t*>(&h);
                } else {
                  const __nv_bfloat162 h = __floats2bfloat162_rn(x[2 * e], x[2 * e + 1]);
                  w[e] = *reinterpret_cast<const uint32_t*>(&h);
                }
              }
              *reinterpret_cast<uint4*>(static_cast<char*>(p.d) + off * 2) = v;
            }
          } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
              if (n + e < p.N)
                store_float(p.d, p.cd_dtype, off + e, epilogue_value(p, l, m, n + e, x[e]));
          }
        }
      } else {
        constexpr int kHalfBN = Cfg::BN / 2;
#pragma unroll 1
        for (int i = tid; i < Cfg::kEpiRows * kHalfBN; i += Cfg::kThreads) {
          const int r = i / kHalfBN, c = (i % kHalfBN) * 2;
          const float2 v = *reinterpret_cast<const float2*>(staged + r * kLd + c);
          store_pair(p, l, mrow0 + r, n0 + c, v.x, v.y, split);
        }
      }
      __syncthreads();  // the staging area is rewritten by the next pass or batch entry
    }
  }
}

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
