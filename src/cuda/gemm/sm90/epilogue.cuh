// Epilogue of the Hopper GEMM: D = act(alpha * acc + beta * C + bias[n]), in that order (the
// order flashkit.h documents), written in D's dtype (fp16, bf16 or fp32, a run-time switch).
//
// Each consumer warpgroup owns 64 rows x 256 columns of the tile. wgmma leaves a thread with
// pairs of adjacent columns in 8-column groups (PTX ISA, "wgmma.mma_async register fragments"),
// so storing straight from registers writes 4 bytes per thread and half-filled sectors. Instead
// the warpgroup stages 64 x 64 fp32 chunks in shared memory and reads them back with each
// thread holding 4 consecutive elements along D's unit-stride dimension: C is read and D written
// with 8- or 16-byte accesses, 16 threads covering one 64-element row segment. The staging row
// pitch of 68 words spreads the fragment writes over all 32 banks (two wavefronts per 256-byte
// warp store, the minimum). Column-major D stages transposed so that reads stay contiguous.
#pragma once

#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include <type_traits>

#include "cuda/common/activation.cuh"
#include "cuda/common/dtype.cuh"
#include "cuda/gemm/sm90/launch.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

constexpr int kEpiChunk = 64;              // columns (of the tile) staged per round
constexpr int kEpiPitch = kEpiChunk + 4;   // words per staged row
constexpr int kEpiRows = kTileM / 2;       // rows per consumer warpgroup

// The copy-engine store path (epilogue_store_tma) stages D in boxes of 64 rows x 128 bytes
// (64 fp16/bf16 or 32 fp32 columns), 128-byte swizzled, four boxes per consumer warpgroup (a
// warpgroup's whole 64 x 256 share of a 16-bit tile, half of an fp32 one) beside the 3-stage
// ring, two beside the 4-stage ring (EpilogueStorage's Boxes).
constexpr int kEpiBoxBytes = kEpiRows * 128;

// What the copy-engine path remembers between tiles (per thread, uniform over a warpgroup), in
// one register (it stays live across the mainloop): bit 0, the parity of the chunks stored so
// far (4 boxes, fp32: which box pair is next; 2 boxes, 16-bit: which box is next); bits 1-3, the
// chunks the previous tile stored (4 boxes, 16-bit: the box reuse rule).
struct TmaStoreState {
  uint32_t bits = 4u << 1;
};

// Warpgroups: consumer warpgroups with staging of their own (2; the skinny kernel's one
// warpgroup stores either half of a 128-row tile from the same buffers: slot()).
template <int Boxes, int Warpgroups = 2>
struct EpilogueStorage {
  static constexpr int kBoxes = Boxes;  // copy-engine boxes per consumer warpgroup (2 or 4)
  static constexpr int kWarpgroups = Warpgroups;
  static_assert(Boxes == 2 || Boxes == 4, "2 or 4 boxes a warpgroup");
  static_assert(Warpgroups == 1 || Warpgroups == 2, "1 or 2 consumer warpgroups");
  // The staging of the warpgroup that stores rows 64 wg .. 64 wg + 63 of the tile.
  __device__ __forceinline__ static int slot(int wg) { return Warpgroups == 1 ? 0 : wg; }
  // The two paths never run in one launch (EpilogueParams::tma_store is launch-uniform). The
  // storage starts 1024-byte aligned (it follows the mainloop's stages, whose size is a multiple
  // of 1024: kernel.cuh checks), as the 128-byte swizzle of the copy engine requires.
  static constexpr int kStageBytes = Warpgroups * kEpiRows * kEpiPitch * 4;
  static constexpr int kAllBoxBytes = Warpgroups * Boxes * kEpiBoxBytes;
  static constexpr int kBiasBytes = Warpgroups * kTileN * 4;
  // Copy-engine path: the tile's bias values (up to 256) in fp32, per warpgroup (the ping-pong
  // warpgroups may be on different tiles), never in the boxes (they may still be draining).
  // Beside 2 boxes a warpgroup they fit in the union's tail, which only the register path's
  // staging reaches (the 4-stage ring leaves < 1 KB of shared memory; the skinny kernel's one
  // warpgroup fills the tail exactly); beside 4, they get their own space.
  static constexpr bool kBiasInUnion = kStageBytes >= kAllBoxBytes + kBiasBytes;
  union {
    float stage[Warpgroups][kEpiRows * kEpiPitch];  // register-store path: one per warpgroup
    uint8_t box[Warpgroups][Boxes][kEpiBoxBytes];   // copy-engine path: [warpgroup][box]
    uint8_t raw[kStageBytes > kAllBoxBytes ? kStageBytes : kAllBoxBytes];
  };
  struct OwnBias {
    float values[Warpgroups][kTileN];
  };
  struct NoBias {};
  std::conditional_t<kBiasInUnion, NoBias, OwnBias> own_bias;
  int32_t splitk_last;                   // split-K: this CTA's unit finished its tile last

  // The bias staging of the warpgroup that stores rows 64 wg .. 64 wg + 63 of the tile.
  __device__ __forceinline__ float* bias_stage(int wg) {
    if constexpr (kBiasInUnion) {
      return reinterpret_cast<float*>(raw + kAllBoxBytes) + slot(wg) * kTileN;
    } else {
      return own_bias.values[slot(wg)];
    }
  }
};

// Split-K (tile_scheduler.cuh): a unit that covered only part of K stores its fp32 partial tile
// and counts itself in with an atomic; the unit that counts last adds the other partials into
// its accumulators and goes on to the epilogue (returns true); the others are done (false).
// No unit ever waits for another, so the persistent grid cannot deadlock whatever the order in
// which units run. Partials are laid out [element group j][consumer thread][4], so each
// warp's 16-byte accesses cover 512 contiguous bytes. Memory order (the CUDA programming guide's
// threadfence-reduction pattern): every thread fences its stores before the barrier that
// precedes the counting atomic, and the last unit fences again before it reads the partials,
// through L2 (ld.global.cg), never a stale L1 line.
// Threads whose rows are all past M (skinny problems: M = 16 uses 16 of the tile's 128 rows)
// neither store nor read partials: the epilogue never stores their values.
// Consumers: the consumer threads that own the unit's tile (256: both warpgroups of a 128-row
// tile; 128: the skinny kernel's one warpgroup, whose 64-row tile is either half of the 128 x
// BlockN TiledMma: `mma_thread` then numbers that half's threads, 128 w + i).
template <class TiledMma, int Consumers = 256, int BlockN = kTileN, class Accum, class Storage>
__device__ __forceinline__ bool splitk_reduce(const SplitKParams& sk, int32_t splits, Accum& accum,
                                              Storage& smem, int mma_thread, int64_t tile,
                                              int32_t split, int32_t rows_left) {
  constexpr int kVals = decltype(cute::size(accum))::value;  // 128 (64: BlockN 128) per thread
  TiledMma tiled_mma;
  auto thr = tiled_mma.get_slice(mma_thread);
  auto coords = thr.partition_C(cute::make_identity_tensor(
      cute::Shape<cute::Int<kTileM>, cute::Int<BlockN>>{}));
  // Element 0 is on the thread's upper row; its other row is 8 below.
  const bool live = cute::get<0>(coords(0)) < rows_left;
  constexpr int kUnitFloats = kVals * Consumers;  // one unit's partial tile
  static_assert(kUnitFloats == (Consumers / 128) * kEpiRows * BlockN, "consumers own the tile");
  const int slot = mma_thread % Consumers;
  float* own = sk.partials + (tile * splits + split) * int64_t(kUnitFloats);
  if (live) {
    CUTE_UNROLL
    for (int j = 0; j < kVals / 4; ++j) {
      *reinterpret_cast<float4*>(own + j * (4 * Consumers) + slot * 4) =
          make_float4(accum(4 * j), accum(4 * j + 1), accum(4 * j + 2), accum(4 * j + 3));
    }
  }
  __threadfence();
  cutlass::arch::NamedBarrier::sync(Consumers, 2);  // all partial stores fenced
  if (slot == 0) {
    const int32_t before = atomicAdd(sk.counters + tile, 1);
    smem.splitk_last = before == splits - 1 ? 1 : 0;
  }
  cutlass::arch::NamedBarrier::sync(Consumers, 2);
  const bool last = smem.splitk_last != 0;
  if (!last) return false;
  if (!live) return true;
  __threadfence();
  for (int32_t s = 0; s < splits; ++s) {
    if (s == split) continue;
    const float* other = sk.partials + (tile * splits + s) * int64_t(kUnitFloats);
    CUTE_UNROLL
    for (int j = 0; j < kVals / 4; ++j) {
      const float4 v =
          __ldcg(reinterpret_cast<const float4*>(other + j * (4 * Consumers) + slot * 4));
      accum(4 * j) += v.x;
      accum(4 * j + 1) += v.y;
      accum(4 * j + 2) += v.z;
      accum(4 * j + 3) += v.w;
    }
  }
  return true;
}

// Four consecutive elements starting at `base + off`, `step` apart (step 1 when `vec`).
__device__ __forceinline__ void load4(const void* base, int32_t dtype, int64_t off, int64_t step,
                                      int count, bool vec, float out[4]) {
  const DType t = static_cast<DType>(dtype);
  if (vec && count == 4) {
    if (t == DType::F32) {
      const float4 v = *reinterpret_cast<const float4*>(static_cast<const float*>(base) + off);
      out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    } else {
      const uint2 raw = *reinterpret_cast<const uint2*>(static_cast<const uint16_t*>(base) + off);
      if (t == DType::F16) {
        const float2 lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
        const float2 hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
        out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
      } else {
        const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
        const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
        out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
      }
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) out[j] = j < count ? load_float(base, t, off + j * step) : 0.0f;
}

__device__ __forceinline__ void store4(void* base, int32_t dtype, int64_t off, int64_t step,
                                       int count, bool vec, const float v[4]) {
  const DType t = static_cast<DType>(dtype);
  if (vec && count == 4) {
    if (t == DType::F32) {
      *reinterpret_cast<float4*>(static_cast<float*>(base) + off) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      uint2 raw;
      if (t == DType::F16) {
        const __half2 lo = __floats2half2_rn(v[0], v[1]), hi = __floats2half2_rn(v[2], v[3]);
        raw.x = *reinterpret_cast<const uint32_t*>(&lo);
        raw.y = *reinterpret_cast<const uint32_t*>(&hi);
      } else {
        const __nv_bfloat162 lo = __floats2bfloat162_rn(v[0], v[1]);
        const __nv_bfloat162 hi = __floats2bfloat162_rn(v[2], v[3]);
        raw.x = *reinterpret_cast<const uint32_t*>(&lo);
        raw.y = *reinterpret_cast<const uint32_t*>(&hi);
      }
      *reinterpret_cast<uint2*>(static_cast<uint16_t*>(base) + off) = raw;
    }
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (j < count) store_float(base, t, off + j * step, v[j]);
}

// Four consecutive elements of a buffer of `Out` (float, __half or __nv_bfloat16), 16- or
// 8-byte aligned, converted to or from fp32 (round to nearest even).
template <class Out>
__device__ __forceinline__ void load4v(const void* p, float out[4]) {
  if constexpr (std::is_same_v<Out, float>) {
    const float4 v = *static_cast<const float4*>(p);
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  } else {
    const uint2 raw = *static_cast<const uint2*>(p);
    float2 lo, hi;
    if constexpr (std::is_same_v<Out, __half>) {
      lo = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      hi = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
    } else {
      lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
      hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
    }
    out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
  }
}

template <class Out>
__device__ __forceinline__ void store4v(void* p, const float v[4]) {
  if constexpr (std::is_same_v<Out, float>) {
    *static_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
    uint2 raw;
    if constexpr (std::is_same_v<Out, __half>) {
      const __half2 lo = __floats2half2_rn(v[0], v[1]), hi = __floats2half2_rn(v[2], v[3]);
      raw.x = *reinterpret_cast<const uint32_t*>(&lo);
      raw.y = *reinterpret_cast<const uint32_t*>(&hi);
    } else {
      const __nv_bfloat162 lo = __floats2bfloat162_rn(v[0], v[1]);
      const __nv_bfloat162 hi = __floats2bfloat162_rn(v[2], v[3]);
      raw.x = *reinterpret_cast<const uint32_t*>(&lo);
      raw.y = *reinterpret_cast<const uint32_t*>(&hi);
    }
    *static_cast<uint2*>(p) = raw;
  }
}

// Fast path of one staged chunk for one thread: all 4 elements along the unit-stride dimension
// are inside D and vector-aligned (C too, when present), the dtype is a template parameter and
// the rows the thread visits are unrolled by 4, so the loads, math and stores of different rows
// overlap. The general path below runs ~4x the instructions per element, one row at a time
// (H200, 8192 x 8192 x K sweep: ~10 us per tile against ~7.6 us with this path, where one
// 64-wide k-step of the mainloop takes ~0.63 us). The thread's 4 elements along the unit-stride
// dimension are fixed for the chunk (row mode: the bias is read once).
//   buf_t: the thread's first staged element; d_off/c_off: its first output element (elements);
//   d_slow_step/c_slow_step: the strides of the slow dimension; slow0: global slow coordinate of
//   the thread's first row; rows advance by 8.
template <class Out>
__device__ __forceinline__ void epilogue_chunk_vec(const EpilogueParams& e, const float* buf_t,
                                                   int64_t d_off, int64_t d_slow_step,
                                                   int64_t c_off, int64_t c_slow_step,
                                                   int64_t slow0, int64_t slow_extent,
                                                   const float bias_fast[4], bool bias_slow,
                                                   float alpha) {
  const bool use_c = e.c != nullptr;
  const bool act = e.activation != int32_t(Activation::None);
  const DType bias_t = static_cast<DType>(e.bias_dtype);
  Out* d = static_cast<Out*>(e.d);
  const Out* c = static_cast<const Out*>(e.c);
  // Two rounds of 4 rows: the 4 staged rows are read first (independent shared loads in
  // flight together), then processed; unrolling all 8 would double the code (the activation
  // math is inlined per element) for little more overlap.
#pragma unroll 1
  for (int h = 0; h < kEpiRows / 32; ++h) {
    float4 a[4];
    CUTE_UNROLL
    for (int q = 0; q < 4; ++q) {
      a[q] = *reinterpret_cast<const float4*>(buf_t + (32 * h + 8 * q) * kEpiPitch);
    }
    CUTE_UNROLL
    for (int q = 0; q < 4; ++q) {
      const int g = 4 * h + q;
      if (slow0 + 8 * g >= slow_extent) break;
      float v[4];
      if (use_c) {  // alpha * acc + beta * C, then the bias (flashkit.h's order)
        float cv[4];
        load4v<Out>(c + c_off + 8 * g * c_slow_step, cv);
        v[0] = alpha * a[q].x;
        v[1] = alpha * a[q].y;
        v[2] = alpha * a[q].z;
        v[3] = alpha * a[q].w;
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = fmaf(e.beta, cv[j], v[j]) + bias_fast[j];
      } else {
        v[0] = fmaf(alpha, a[q].x, bias_fast[0]);
        v[1] = fmaf(alpha, a[q].y, bias_fast[1]);
        v[2] = fmaf(alpha, a[q].z, bias_fast[2]);
        v[3] = fmaf(alpha, a[q].w, bias_fast[3]);
      }
      if (bias_slow) {  // column-major D: the bias follows the walked-by-row dimension n
        const float b = load_float(e.bias, bias_t, slow0 + 8 * g);
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] += b;
      }
      if (act) {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = activate(v[j], static_cast<Activation>(e.activation));
      }
      store4v<Out>(d + d_off + 8 * g * d_slow_step, v);
    }
  }
}

// Writes one output tile (tile indices m_tile, n_tile of batch l) from the accumulators of
// consumer thread `mma_thread` (0..255). `accum` is the thread's wgmma fragment of the
// TiledMma's 128 x 256 tile. kScaled (the fp8 instantiations): the accumulators are multiplied
// by alpha * scale_a[m] * scale_b[n] as they are staged (the factor formed first, flashkit.h's
// order, so that it alone must be a normal number), then the rest of the epilogue.
// `own` >= 0: the staging slot and warpgroup barrier to use instead of those of the tile half
// that mma_thread names (the 128-column ping-pong schedule: one warpgroup stores both halves
// of its own tile while the other warpgroup may store the same half of another).
template <class TiledMma, bool kScaled, int BlockN = kTileN, class Accum, class Storage>
__device__ __forceinline__ void epilogue_store(const EpilogueParams& e, const Accum& accum,
                                               Storage& smem, int mma_thread,
                                               int32_t m_tile, int32_t n_tile, int64_t l,
                                               int own = -1) {
  using namespace cute;
  TiledMma tiled_mma;
  auto thr = tiled_mma.get_slice(mma_thread);
  // (row, col) inside the 128 x 256 tile of each accumulator element.
  Tensor coords = thr.partition_C(make_identity_tensor(Shape<Int<kTileM>, Int<BlockN>>{}));
  static_assert(decltype(size(coords))::value == decltype(size(accum))::value, "fragment shape");
  // wgmma's fragment: element i covers column group i / 4 (8 columns), so chunk `ch` of 64
  // columns is elements [32 ch, 32 ch + 32).
  constexpr int kPerChunk = decltype(size(accum))::value / (BlockN / kEpiChunk);
  static_assert(kPerChunk == 32, "64 x BlockN wgmma fragment expected");

  const int wg = mma_thread / 128, t = mma_thread % 128;
  const int bar = own >= 0 ? own : wg;  // this warpgroup's barrier
  float* buf = smem.stage[own >= 0 ? own : Storage::slot(wg)];
  const int row0 = wg * kEpiRows;  // first tile row of this warpgroup
  const bool col_mode = e.col_mode != 0;
  const int64_t m_base = int64_t(m_tile) * kTileM + row0;
  const int64_t n_tile0 = int64_t(n_tile) * BlockN;
  const int64_t d_off_l = l * e.d_batch_stride, c_off_l = l * e.c_batch_stride;
  const bool use_c = e.c != nullptr;

  // kScaled: the thread's fragment covers two rows (element i is on row r0 + 8 * ((i >> 1) & 1),
  // PTX ISA "wgmma.mma_async register fragments"); their scale_a values, read once per tile.
  float row_scale[2] = {1.0f, 1.0f};
  if constexpr (kScaled) {
    if (e.scale_a != nullptr) {
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        int64_t m = int64_t(m_tile) * kTileM + get<0>(coords(2 * h));
        m = m < e.M ? m : e.M - 1;  // rows past M are never stored
        row_scale[h] = e.scale_a[e.scale_a_per_row ? m : 0];
      }
    }
    // alpha joins the factor first: (alpha * scale_a[m]) * scale_b[n] (flashkit.h).
    row_scale[0] = e.alpha * row_scale[0];
    row_scale[1] = e.alpha * row_scale[1];
  }
  // What the staged value is still to be multiplied by: alpha, unless the scales took it.
  const float alpha = kScaled ? 1.0f : e.alpha;

  // Code size matters here as much as speed: this runs once per tile, after a mainloop long
  // enough to evict it from the instruction caches. A fully unrolled version (4 chunks x 8
  // groups x every dtype and activation path, ~20 000 instructions) measured ~100 us per tile on
  // the H200 (likely cause: its code fetched from L2 every tile). Only the register-to-shared
  // copy is unrolled (wgmma's registers need compile-time indices); the chunk loop stays rolled.
  constexpr int kChunks = BlockN / kEpiChunk;
#pragma unroll 1
  for (int ch = 0; ch < kChunks; ++ch) {
    const int64_t n_base = n_tile0 + ch * kEpiChunk;
    // Skip chunks entirely outside D (N tails); the condition is uniform over the warpgroup.
    if (n_base >= e.N) break;
    cutlass::arch::NamedBarrier::sync(128, bar);  // the previous chunk's reads are done
    CUTE_UNROLL
    for (int cc = 0; cc < kChunks; ++cc) {
      if (cc != ch) continue;
      CUTE_UNROLL
      for (int i = cc * kPerChunk; i < (cc + 1) * kPerChunk; i += 2) {
        const int r = get<0>(coords(i)) - row0;
        const int c = get<1>(coords(i)) - cc * kEpiChunk;  // c even, c + 1 is element i + 1
        float v0 = accum(i), v1 = accum(i + 1);
        if constexpr (kScaled) {
          float s0 = row_scale[(i >> 1) & 1], s1 = s0;
          if (e.scale_b != nullptr) {
            if (e.scale_b_per_col) {
              const int64_t n0 = n_base + c;  // past N: never stored, clamp the read
              s0 *= e.scale_b[n0 < e.N ? n0 : e.N - 1];
              s1 *= e.scale_b[n0 + 1 < e.N ? n0 + 1 : e.N - 1];
            } else {
              s0 *= e.scale_b[0];
              s1 = s0;
            }
          }
          v0 *= s0;
          v1 *= s1;
        }
        if (!col_mode) {
          *reinterpret_cast<float2*>(&buf[r * kEpiPitch + c]) = make_float2(v0, v1);
        } else {
          buf[c * kEpiPitch + r] = v0;
          buf[(c + 1) * kEpiPitch + r] = v1;
        }
      }
    }
    cutlass::arch::NamedBarrier::sync(128, bar);
    // Thread t always holds the same 4 elements along the unit-stride ("fast") dimension of
    // the chunk and visits rows (slow coordinate) t / 16 + 8 g.
    const int fast_l = (t % (kEpiChunk / 4)) * 4, slow_l = t / (kEpiChunk / 4);
    const int64_t fast0 = (col_mode ? m_base : n_base) + fast_l;
    const int64_t slow0 = (col_mode ? n_base : m_base) + slow_l;
    const int64_t fast_extent = col_mode ? e.M : e.N, slow_extent = col_mode ? e.N : e.M;
    const bool full4 = fast0 + 4 <= fast_extent;
    if (e.fast_epilogue && full4 && e.d_vec && (!use_c || e.c_vec)) {
      const int64_t d_fast = col_mode ? e.d_stride_m : e.d_stride_n;
      const int64_t d_slow = col_mode ? e.d_stride_n : e.d_stride_m;
      const int64_t c_fast = col_mode ? e.c_stride_m : e.c_stride_n;
      const int64_t c_slow = col_mode ? e.c_stride_n : e.c_stride_m;
      const int64_t d_off = d_off_l + slow0 * d_slow + fast0 * d_fast;
      const int64_t c_off = c_off_l + slow0 * c_slow + fast0 * c_fast;
      float bias_fast[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (e.bias != nullptr && !col_mode) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          bias_fast[j] = load_float(e.bias, static_cast<DType>(e.bias_dtype), fast0 + j);
        }
      }
      const bool bias_slow = e.bias != nullptr && col_mode;
      const float* buf_t = buf + slow_l * kEpiPitch + fast_l;
      switch (static_cast<DType>(e.d_dtype)) {
        case DType::F32:
          epilogue_chunk_vec<float>(e, buf_t, d_off, d_slow, c_off, c_slow, slow0, slow_extent,
                                    bias_fast, bias_slow, alpha);
          break;
        case DType::F16:
          epilogue_chunk_vec<__half>(e, buf_t, d_off, d_slow, c_off, c_slow, slow0, slow_extent,
                                     bias_fast, bias_slow, alpha);
          break;
        default:
          epilogue_chunk_vec<__nv_bfloat16>(e, buf_t, d_off, d_slow, c_off, c_slow, slow0,
                                            slow_extent, bias_fast, bias_slow, alpha);
          break;
      }
      continue;
    }
    // General path: tails, unaligned or non-unit-stride C/D (any strides), one group at a time.
#pragma unroll 1
    for (int g = 0; g < (kEpiRows * kEpiChunk) / (4 * 128); ++g) {
      const int lin = g * 128 + t;
      const int fast = (lin % (kEpiChunk / 4)) * 4;  // along D's unit-stride dimension
      const int slow = lin / (kEpiChunk / 4);
      const float4 acc4 = *reinterpret_cast<const float4*>(&buf[slow * kEpiPitch + fast]);
      const int64_t m = m_base + (col_mode ? fast : slow);
      const int64_t n = n_base + (col_mode ? slow : fast);
      if (m >= e.M || n >= e.N) continue;
      const int count = int(min<int64_t>(4, col_mode ? e.M - m : e.N - n));
      float v[4] = {alpha * acc4.x, alpha * acc4.y, alpha * acc4.z, alpha * acc4.w};
      if (use_c) {
        float cv[4];
        load4(e.c, e.c_dtype, c_off_l + m * e.c_stride_m + n * e.c_stride_n,
              col_mode ? e.c_stride_m : e.c_stride_n, count, e.c_vec != 0, cv);
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = fmaf(e.beta, cv[j], v[j]);
      }
      if (e.bias != nullptr) {
        const DType bt = static_cast<DType>(e.bias_dtype);
        if (col_mode) {
          const float b = load_float(e.bias, bt, n);
#pragma unroll
          for (int j = 0; j < 4; ++j) v[j] += b;
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j) v[j] += j < count ? load_float(e.bias, bt, n + j) : 0.0f;
        }
      }
      if (e.activation != int32_t(Activation::None)) {
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = activate(v[j], static_cast<Activation>(e.activation));
      }
      store4(e.d, e.d_dtype, d_off_l + m * e.d_stride_m + n * e.d_stride_n,
             col_mode ? e.d_stride_m : e.d_stride_n, count, e.d_vec != 0, v);
    }
  }
}

// Byte offset of (row r, byte b) inside a 64 x 128-byte box under the copy engine's 128-byte
// swizzle: the 16-byte unit u of row r sits at unit u ^ (r % 8). With that layout the wgmma
// fragment writes below are conflict-free (a warp's 8 rows land in 8 different units).
__device__ __forceinline__ uint32_t box_offset(int r, int b) {
  return uint32_t(r * 128 + ((((b >> 4) ^ r) & 7) << 4) + (b & 15));
}

// The copy-engine path: the same D = act(alpha * acc + bias) as epilogue_store (no C term: the
// host keeps C on the register path), written through shared memory with TMA stores
// (cp.async.bulk.tensor, one box of 64 rows x 128 bytes at a time). Per 64-column chunk, the
// warpgroup waits only until the box it is about to fill has been read out by an earlier store
// (cp.async.bulk.wait_group.read by the issuing thread, then a warpgroup barrier), each thread
// finishes its 32 values in registers and writes them swizzled, fences them to the async proxy,
// and one thread issues the store and commits it. With 16-bit D each chunk has a box of its own,
// so the epilogue never waits for its own stores: they drain while the warpgroup is already back
// in the next tile's mainloop, and chunk c of the next tile waits only for chunk c of this one
// (at most 3 newer bulk groups may still be reading). fp32 D fills a pair of boxes per chunk,
// alternating the two pairs (`st` carries the parity over the launch). The copy
// engine clips rows past M and columns past N (it writes whole 16-byte units, so the host sends
// here only D whose rows are a multiple of 16 bytes long). `d_map`: D's tensor map (N, M, L),
// box (128 bytes, 64, 1).
template <class TiledMma, bool kScaled, int BlockN = kTileN, class Accum, class Storage>
__device__ __forceinline__ void epilogue_store_tma(const EpilogueParams& e, const void* d_map,
                                                   const Accum& accum, Storage& smem,
                                                   int mma_thread, int32_t m_tile, int32_t n_tile,
                                                   int64_t l, TmaStoreState& st, int own = -1) {
  using namespace cute;
  TiledMma tiled_mma;
  auto thr = tiled_mma.get_slice(mma_thread);
  Tensor coords = thr.partition_C(make_identity_tensor(Shape<Int<kTileM>, Int<BlockN>>{}));
  constexpr int kPerChunk = decltype(size(accum))::value / (BlockN / kEpiChunk);
  static_assert(kPerChunk == 32, "64 x BlockN wgmma fragment expected");
  constexpr int kChunks = BlockN / kEpiChunk;

  const int wg = mma_thread / 128, t = mma_thread % 128;
  const int row0 = wg * kEpiRows;
  const int64_t m_base = int64_t(m_tile) * kTileM + row0;
  if (m_base >= e.M) {  // all of this warpgroup's rows are past M (uniform)
    st.bits &= 1u;        // stored no chunk
    return;
  }
  const int64_t n_tile0 = int64_t(n_tile) * BlockN;
  const int sw = own >= 0 ? own : Storage::slot(wg);  // this warpgroup's staging
  const int bar = own >= 0 ? own : wg;                 // and barrier (epilogue_store: `own`)
  const DType dt = static_cast<DType>(e.d_dtype);
  const bool wide = dt == DType::F32;
  const DType bias_t = static_cast<DType>(e.bias_dtype);
  const int32_t act = e.activation;

  float row_scale[2] = {1.0f, 1.0f};
  if constexpr (kScaled) {
    if (e.scale_a != nullptr) {
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        int64_t m = int64_t(m_tile) * kTileM + get<0>(coords(2 * h));
        m = m < e.M ? m : e.M - 1;  // rows past M are never stored
        row_scale[h] = e.scale_a[e.scale_a_per_row ? m : 0];
      }
    }
    // alpha joins the factor first: (alpha * scale_a[m]) * scale_b[n] (flashkit.h).
    row_scale[0] = e.alpha * row_scale[0];
    row_scale[1] = e.alpha * row_scale[1];
  }
  // What the staged value is still to be multiplied by: alpha, unless the scales took it.
  const float alpha = kScaled ? 1.0f : e.alpha;

  // The general path (the lean one below unrolls instead): values are finished 8 at a time
  // (two 8-column groups, 16 columns): the 128 accumulators
  // stay live through the epilogue, and ptxas compiles the kernel to 168 registers a thread
  // (the launch bound; setmaxnreg only raises the run-time allocation), so a larger working set
  // spills. The 8 are picked from the fragment by a switch over the 16 possible blocks
  // (register indices must be compile-time constants) and the math is one copy.
  constexpr int kQuarter = 8;  // values per step
  constexpr int kSteps = kPerChunk / kQuarter;
  constexpr int kBoxes = Storage::kBoxes;
  static_assert(kBoxes == kChunks || kBoxes == 2, "16-bit D: a box per chunk, or two alternating");
  // Every chunk commits one bulk group (issued and waited for by the warpgroup's thread 0).
  // 4 boxes, 16-bit D, box reuse: if the previous tile stored all 4 chunks, the store that last
  // used box c (its chunk c) has exactly 3 groups committed after it when chunk c is about to be
  // written here, so "at most 3 pending" is enough; after a shorter tile, drain everything once.
  // 2 boxes, 16-bit D: chunks alternate the boxes over the whole launch (`st` carries the
  // parity), so the newest group always used the other box: "at most 1 pending".
  if (kBoxes == 4 && !wide && (st.bits >> 1) < uint32_t(kChunks) && t == 0) tma_store_wait<0>();
  // The tile's bias, converted to fp32 once: two coalesced reads a thread, in parallel, instead
  // of a dependent read per 8 values in the loop below (measured on the H200 at 1128 x 384 x 384:
  // 43.5k cycles with bias against 27.3k without, benchmarks/RESULTS.md). The warpgroup barrier
  // at the first chunk orders these writes before every read; the previous tile's reads all
  // precede its last chunk's barrier, which every thread passed before coming here.
  // The lean path (below) takes D with no activation, ReLU or the tanh GELU, and per-column
  // scales only without a bias: it stages those scales where the bias would go.
  const bool col_scaled = kScaled && e.scale_b != nullptr && e.scale_b_per_col;
  // fp32 D only on the 256-column tiles: on pingpong128's (which inlines this twice) the extra
  // store bases pushed ptxas to 56-104-byte stack frames; the skinny kernel's 128-column tiles
  // keep the general path for fp32 D too.
  const bool lean = (act == int32_t(Activation::None) || act == int32_t(Activation::Relu) ||
                     act == int32_t(Activation::GeluTanh)) &&
                    !(col_scaled && e.bias != nullptr) && (!wide || BlockN == kTileN);
  if (e.bias != nullptr || (lean && col_scaled)) {
    float* sbias = smem.bias_stage(sw);
#pragma unroll 1
    for (int i = 0; i < BlockN / 128; ++i) {
      const int64_t n = n_tile0 + i * 128 + t;
      sbias[i * 128 + t] = n >= e.N                 ? 0.0f
                           : (e.bias != nullptr) ? load_float(e.bias, bias_t, n)
                                                 : e.scale_b[n];
    }
  }
  uint32_t parity = st.bits & 1u, done = 0;
  // Start of a chunk: the box it fills must have been read out by the store that used it last.
  // fp32 D fills a pair of boxes per chunk: with 4 boxes the two pairs alternate, with 2 the
  // one pair is reused by every chunk. Returns the box (the pair's first).
  auto chunk_begin = [&](int ch) -> int {
    ++done;
    const int buf = kBoxes == 4 ? (wide ? 2 * int(parity) : ch) : (wide ? 0 : int(parity));
    parity ^= 1u;
    if (t == 0) {
      if (kBoxes == 4) {
        if (wide) {
          tma_store_wait<1>();  // the newest group used the other pair
        } else {
          tma_store_wait<3>();
        }
      } else {
        if (wide) {
          tma_store_wait<0>();  // the only pair
        } else {
          tma_store_wait<1>();  // the newest group used the other box
        }
      }
    }
    cutlass::arch::NamedBarrier::sync(128, bar);
    return buf;
  };
  // End of a chunk: this thread's shared-memory writes, visible to the copy engine; then one
  // thread stores the box (or pair) and commits the bulk group.
  auto chunk_end = [&](int buf, int64_t n_base) {
    tma_store_fence();
    cutlass::arch::NamedBarrier::sync(128, bar);
    if (t == 0) {
      const int32_t m0 = int32_t(m_base), n0 = int32_t(n_base), l0 = int32_t(l);
      if (wide) {
        SM90_TMA_STORE_3D::copy(d_map, smem.box[sw][buf], n0, m0, l0);
        if (n_base + kEpiChunk / 2 < e.N) {
          SM90_TMA_STORE_3D::copy(d_map, smem.box[sw][buf + 1], n0 + kEpiChunk / 2, m0, l0);
        }
      } else {
        SM90_TMA_STORE_3D::copy(d_map, smem.box[sw][buf], n0, m0, l0);
      }
      tma_store_arrive();
    }
  };

  // The lean path: no activation, ReLU or the tanh GELU, per-column scales only without a bias
  // (the plain product or a fused linear layer, 16-bit D or fp32 D on 256-column tiles, and fp8
  // with per-tensor, per-row or per-column scales). The row factors fold into one per row,
  // alpha * scale_a[m] * scale_b (per tensor), the column factor
  // (a bias or a per-column scale_b) comes from shared memory, and the chunk and step loops are
  // unrolled, so the fragment is read in place (no switch), each value costs one FFMA (two
  // FMULs with column scales), and the swizzled store addresses are four per-thread bases XOR
  // the step (below). ncu on the H200 (fp8 8192 x 8192 x 1024, main
  // ee946f2): the general loop below ran ~170 instructions per 8 values (four global scale_b
  // reads with 64-bit clamps, the activation and dtype switches, the swizzle arithmetic), 50 of
  // the kernel's 65 M instructions; with K = 1024 a warpgroup's epilogue outlasted the other's
  // mainloop, so the ping-pong could not hide it (benchmarks/RESULTS.md).
  if (lean) {
    float ra[2] = {e.alpha, e.alpha};
    if constexpr (kScaled) {
      const float sb = (e.scale_b != nullptr && !col_scaled) ? e.scale_b[0] : 1.0f;
      ra[0] = row_scale[0] * sb;  // (alpha * scale_a[m]) * scale_b
      ra[1] = row_scale[1] * sb;
    }
    const bool f16 = dt == DType::F16;
    const bool has_bias = e.bias != nullptr;  // (then no column scales)
    // Value pair j (j = 0, 2, 4, 6) of step q sits at row r_j, columns c_j + 16 q and + 1, with
    // c_j < 16: byte 2 c_j + 32 q of the row, 16-byte unit (2 c_j >> 4) + 2 q. Under the
    // swizzle (box_offset) the unit's bits 1-2 only XOR with r % 8, so its offset is
    // box_offset(r_j, 2 c_j) ^ (q << 5).
    // fp32 D: value pair j of step q is at byte 4 c_j + 64 (q & 1) of box buf + (q >> 1) (a
    // pair of boxes holds the chunk's 64 columns, 32 each); its unit (c_j >> 2) + 4 (q & 1)
    // only XORs bit 2 with r % 8, so the offset is box_offset(r_j, 4 c_j) ^ ((q & 1) << 6).
    uint32_t base[4], base_w[4];
    CUTE_UNROLL
    for (int p = 0; p < 4; ++p) {
      const int r = get<0>(coords(2 * p)) - row0, c = get<1>(coords(2 * p));
      base[p] = box_offset(r, 2 * c);
      base_w[p] = BlockN == kTileN ? box_offset(r, 4 * c) : 0u;
    }
    const float* bias0 = smem.bias_stage(sw) + get<1>(coords(0));  // columns of values 0, 1
    const float* bias1 = smem.bias_stage(sw) + get<1>(coords(4));  // and of values 4, 5
    // One unrolled body per kind of output, picked once per call rather than tested at every
    // step, so that the plain 16-bit product keeps the compact code it had before activations
    // and fp32 D joined the lean path (the first build with the tests inside the steps ran fp8
    // 8192 x 8192 x 1024 13% slower on the H200: benchmarks/RESULTS.md, "Lean epilogue for ReLU,
    // tanh GELU and fp32 D, picked once per call").
    // kKind 0: 16-bit D, no activation; 1: 16-bit D with ReLU or the tanh GELU; 2: fp32 D with
    // any of those (256-column tiles only).
    // Whole-tile staging (16-bit D, a box per chunk): one wait, barrier and fence per tile
    // instead of per chunk. The boxes were read out by the previous tile's stores long ago
    // (a whole mainloop ran since), so the wait is free; the stores go out back to back.
    constexpr bool kWhole = kBoxes == 4;
    auto body = [&](auto kind) {
      constexpr int kKind = decltype(kind)::value;
      constexpr bool whole = kWhole && kKind != 2;
      if constexpr (whole) {
        if (t == 0) tma_store_wait<0>();
        cutlass::arch::NamedBarrier::sync(128, bar);
      }
      CUTE_UNROLL
      for (int ch = 0; ch < kChunks; ++ch) {
        const int64_t n_base = n_tile0 + ch * kEpiChunk;
        if (n_base >= e.N) break;  // chunks past N (uniform over the warpgroup)
        // (The whole-tile path leaves `done` at 0: it commits one bulk group for all its
        // chunks, so a later tile must drain everything before reusing a box, not count on
        // the per-chunk groups of the box reuse rule.)
        int buf = ch;
        if constexpr (!whole) buf = chunk_begin(ch);
        uint8_t* box = smem.box[sw][buf];
        CUTE_UNROLL
        for (int q = 0; q < kSteps; ++q) {
          float v[kQuarter];
          CUTE_UNROLL
          for (int j = 0; j < kQuarter; ++j) {
            v[j] = accum((ch * kSteps + q) * kQuarter + j);
          }
          float2 b0 = make_float2(0.0f, 0.0f), b1 = b0;
          if (has_bias || col_scaled) {  // values j and j ^ 2 share a column
            b0 = *reinterpret_cast<const float2*>(bias0 + ch * kEpiChunk + 16 * q);
            b1 = *reinterpret_cast<const float2*>(bias1 + ch * kEpiChunk + 16 * q);
          }
          const float b[kQuarter] = {b0.x, b0.y, b0.x, b0.y, b1.x, b1.y, b1.x, b1.y};
          if (col_scaled) {
            CUTE_UNROLL
            for (int j = 0; j < kQuarter; ++j) v[j] *= ra[(j >> 1) & 1] * b[j];  // factor first
          } else {
            CUTE_UNROLL
            for (int j = 0; j < kQuarter; ++j) v[j] = fmaf(v[j], ra[(j >> 1) & 1], b[j]);
          }
          if constexpr (kKind != 0) {
            if (act == int32_t(Activation::GeluTanh)) {
              CUTE_UNROLL
              for (int j = 0; j < kQuarter; ++j) v[j] = activate(v[j], Activation::GeluTanh);
            } else if (act == int32_t(Activation::Relu)) {
              CUTE_UNROLL
              for (int j = 0; j < kQuarter; ++j) v[j] = activate(v[j], Activation::Relu);
            }
          }
          if constexpr (kKind == 2) {
            uint8_t* wbox = smem.box[sw][buf + (q >> 1)];
            CUTE_UNROLL
            for (int p = 0; p < 4; ++p) {
              *reinterpret_cast<float2*>(wbox + (base_w[p] ^ uint32_t((q & 1) << 6))) =
                  make_float2(v[2 * p], v[2 * p + 1]);
            }
          } else if (f16) {
            CUTE_UNROLL
            for (int p = 0; p < 4; ++p) {
              *reinterpret_cast<__half2*>(box + (base[p] ^ uint32_t(q << 5))) =
                  __floats2half2_rn(v[2 * p], v[2 * p + 1]);
            }
          } else {
            CUTE_UNROLL
            for (int p = 0; p < 4; ++p) {
              *reinterpret_cast<__nv_bfloat162*>(box + (base[p] ^ uint32_t(q << 5))) =
                  __floats2bfloat162_rn(v[2 * p], v[2 * p + 1]);
            }
          }
        }
        if constexpr (!whole) chunk_end(buf, n_base);
      }
      if constexpr (whole) {
        tma_store_fence();
        cutlass::arch::NamedBarrier::sync(128, bar);
        if (t == 0) {
          CUTE_UNROLL
          for (int ch = 0; ch < kChunks; ++ch) {
            const int64_t n_base = n_tile0 + ch * kEpiChunk;
            if (n_base >= e.N) break;
            SM90_TMA_STORE_3D::copy(d_map, smem.box[sw][ch], int32_t(n_base), int32_t(m_base),
                                    int32_t(l));
          }
          tma_store_arrive();
        }
      }
    };
    if constexpr (BlockN == kTileN) {
      if (wide) {
        body(std::integral_constant<int, 2>{});
      } else if (act != int32_t(Activation::None)) {
        body(std::integral_constant<int, 1>{});
      } else {
        body(std::integral_constant<int, 0>{});
      }
    } else {  // (no fp32 D here: `lean` excludes it)
      if (act != int32_t(Activation::None)) {
        body(std::integral_constant<int, 1>{});
      } else {
        body(std::integral_constant<int, 0>{});
      }
    }
    st.bits = (done << 1) | parity;
    return;
  }

  // The general path (the erf GELU, per-column scales with a bias, fp32 D on 128-column tiles):
  // one copy of the math, 8 values a step, the chunk and step loops rolled.
#pragma unroll 1
  for (int ch = 0; ch < kChunks; ++ch) {
    const int64_t n_base = n_tile0 + ch * kEpiChunk;
    if (n_base >= e.N) break;  // chunks past N (uniform over the warpgroup)
    const int buf = chunk_begin(ch);
#pragma unroll 1
    for (int q = 0; q < kSteps; ++q) {
      float v[kQuarter];
      constexpr int kBlocks = kChunks * kSteps;
      static_assert(kBlocks == 16 || kBlocks == 8, "16 (BlockN 256) or 8 (128) blocks of 8 values");
      switch (ch * kSteps + q) {  // one jump, then 8 moves
#define FLASHKIT_EPI_PICK(S)                                                    \
  case S:                                                                       \
    if constexpr ((S) < kBlocks) {                                              \
      CUTE_UNROLL                                                               \
      for (int j = 0; j < kQuarter; ++j) v[j] = accum((S) * kQuarter + j);     \
    }                                                                           \
    break;
        FLASHKIT_EPI_PICK(0) FLASHKIT_EPI_PICK(1) FLASHKIT_EPI_PICK(2) FLASHKIT_EPI_PICK(3)
        FLASHKIT_EPI_PICK(4) FLASHKIT_EPI_PICK(5) FLASHKIT_EPI_PICK(6) FLASHKIT_EPI_PICK(7)
        FLASHKIT_EPI_PICK(8) FLASHKIT_EPI_PICK(9) FLASHKIT_EPI_PICK(10) FLASHKIT_EPI_PICK(11)
        FLASHKIT_EPI_PICK(12) FLASHKIT_EPI_PICK(13) FLASHKIT_EPI_PICK(14)
        default:  // the last block (15, or 7 for BlockN 128)
          CUTE_UNROLL
          for (int j = 0; j < kQuarter; ++j) v[j] = accum((kBlocks - 1) * kQuarter + j);
          break;
#undef FLASHKIT_EPI_PICK
      }
      // Value j of step q sits at the column of fragment element j, plus 16 q (element i is
      // column group i / 4: 8 elements span 16 columns).
      const int64_t n_q = n_base + 16 * q;
      if constexpr (kScaled) {
        // Row scale by (j >> 1) & 1; column scale shared by j and j ^ 2 (4 reads for 8 values).
        float cs[kQuarter];
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) {
          if ((j >> 1) & 1) {
            cs[j] = cs[j ^ 2];
          } else if (e.scale_b == nullptr) {
            cs[j] = 1.0f;
          } else {
            int64_t n = n_q + get<1>(coords(j));
            n = n < e.N ? n : e.N - 1;  // past N: never stored, clamp the read
            cs[j] = e.scale_b[e.scale_b_per_col ? n : 0];
          }
        }
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] *= row_scale[(j >> 1) & 1] * cs[j];
      }
      if (e.bias != nullptr) {
        // Values j and j ^ 2 share a column (rows r and r + 8); values 2i and 2i + 1 are
        // adjacent columns: two 8-byte shared-memory reads for 8 values.
        const float* bq = smem.bias_stage(sw) + ch * kEpiChunk + 16 * q;
        const float2 b0 = *reinterpret_cast<const float2*>(bq + get<1>(coords(0)));
        const float2 b1 = *reinterpret_cast<const float2*>(bq + get<1>(coords(4)));
        const float b[kQuarter] = {b0.x, b0.y, b0.x, b0.y, b1.x, b1.y, b1.x, b1.y};
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] = alpha * v[j] + b[j];
      } else {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] = alpha * v[j] + 0.0f;
      }
      if (act == int32_t(Activation::Relu)) {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] = activate(v[j], Activation::Relu);
      } else if (act == int32_t(Activation::GeluTanh)) {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] = activate(v[j], Activation::GeluTanh);
      } else if (act == int32_t(Activation::GeluErf)) {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; ++j) v[j] = activate(v[j], Activation::GeluErf);
      }
      if (wide) {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; j += 2) {
          const int r = get<0>(coords(j)) - row0, c = get<1>(coords(j)) + 16 * q;  // c even
          *reinterpret_cast<float2*>(&smem.box[sw][buf + (c >> 5)][box_offset(r, (c & 31) * 4)]) =
              make_float2(v[j], v[j + 1]);
        }
      } else if (dt == DType::F16) {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; j += 2) {
          const int r = get<0>(coords(j)) - row0, c = get<1>(coords(j)) + 16 * q;
          *reinterpret_cast<__half2*>(&smem.box[sw][buf][box_offset(r, c * 2)]) =
              __floats2half2_rn(v[j], v[j + 1]);
        }
      } else {
        CUTE_UNROLL
        for (int j = 0; j < kQuarter; j += 2) {
          const int r = get<0>(coords(j)) - row0, c = get<1>(coords(j)) + 16 * q;
          *reinterpret_cast<__nv_bfloat162*>(&smem.box[sw][buf][box_offset(r, c * 2)]) =
              __floats2bfloat162_rn(v[j], v[j + 1]);
        }
      }
    }
    chunk_end(buf, n_base);
  }
  st.bits = (done << 1) | parity;
}

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
