// What the host side of the Hopper GEMM hands to a kernel instantiation: the problem with its
// operands resolved to the two layouts the copy engine and wgmma take (K-major or MN-major),
// the epilogue's operands, and the tile order. Plain C++ (no CuTe), so the predicate and the
// argument checks (gemm_sm90.cpp) compile with the host compiler.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/backend.h"

namespace flashkit {
namespace cuda {
namespace sm90 {

// The CTA tile: 128 x 256 output, K steps of 128 bytes (64 fp16/bf16 or 128 fp8 elements: one
// 128-byte swizzle row), a 3- or 4-deep ring (GemmArgs::stages; what the ring leaves of the
// 227 KB stages D for the copy-engine stores).
constexpr int kTileM = 128, kTileN = 256, kTileKBytes = 128;
// The skinny kernel (kernel.cuh, SkinnyKernel; heuristics.h, pick_skinny): decode-sized M
// against large N and K. One consumer warpgroup on 64 x 128 tiles, an 8-deep ring of 24 KB
// stages (16-bit: 8 KB of A, 16 KB of B), one CTA per SM.
constexpr int kSkinnyM = 64, kSkinnyN = 128, kSkinnyStages = 8;
// The 128-column ping-pong schedule (kernel.cuh, pingpong128_consumer; GemmArgs::pingpong ==
// kPingPong128): 128 x 128 tiles, each multiplied by one consumer warpgroup alone, a 6-deep ring
// of 32 KB stages (128 rows of A and 128 of B).
constexpr int kPp128N = 128, kPp128Stages = 6;
enum : int32_t { kCooperative = 0, kPingPong64 = 1, kPingPong128 = 2 };
constexpr int tile_k_for(DType t) { return kTileKBytes / dtype_bytes(t); }

// One of A (rows = M) or B (rows = N): logical X(row, k) at
// ptr + l * batch_stride + row * (k_major ? ld : 1) + k * (k_major ? 1 : ld).
struct OperandDesc {
  const void* ptr = nullptr;
  int64_t rows = 0, k = 0;
  bool k_major = true;       // unit stride along K; otherwise along rows
  int64_t ld = 0;            // the other stride, in elements (a multiple of 8)
  int64_t batch = 1;         // 1 when broadcast over the batch
  int64_t batch_stride = 0;  // elements (a multiple of 8)
};

// The epilogue: D(l, m, n) = act(alpha * sa * sb * acc + beta * C(l, m, n) + bias(n)). Plain
// data, read by the kernel from its parameter space. The scales (fk_gemm_scaled) are applied
// only by the fp8 instantiations; the predicate sends 16-bit problems with scales elsewhere.
struct EpilogueParams {
  void* d = nullptr;
  const void* c = nullptr;     // nullptr: no C term
  const void* bias = nullptr;  // nullptr: no bias
  int32_t d_dtype = 0, c_dtype = 0, bias_dtype = 0;  // DType values
  int32_t M = 0, N = 0;
  int64_t d_batch_stride = 0, d_stride_m = 0, d_stride_n = 0;
  int64_t c_batch_stride = 0, c_stride_m = 0, c_stride_n = 0;
  float alpha = 1.0f, beta = 0.0f;
  int32_t activation = 0;  // Activation
  // Threads walk m (column-major D) instead of n.
  int32_t col_mode = 0;
  // 4-element vector accesses along the walked dimension are legal (unit stride, aligned).
  int32_t d_vec = 0, c_vec = 0;
  // Use the unrolled, typed path for interior chunks (FLASHKIT_SM90_GEMM_EPILOGUE=generic turns
  // it off, for diagnosis).
  int32_t fast_epilogue = 1;
  // fp8: scale_a[m] (or [0]) and scale_b[n] (or [0]); nullptr = 1.
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  int32_t scale_a_per_row = 0, scale_b_per_col = 0;
  // Write D through shared memory with the copy engine (epilogue.cuh, epilogue_store_tma): set
  // by the host when D is row-major with a 16-byte aligned base, row pitch and batch stride
  // and there is no C term; the launcher clears it if the driver refuses D's tensor map.
  // FLASHKIT_SM90_GEMM_EPILOGUE=regs (or =generic) keeps the register-store path.
  int32_t tma_store = 0;
  // Host only (D's tensor map): batch count and the byte strides of rows and batches, already
  // made valid for the copy engine where an extent of 1 leaves a stride free.
  int64_t d_map_batch = 1, d_map_row_bytes = 0, d_map_batch_bytes = 0;
};

// The persistent work order: tiles are numbered batch-major; inside a batch, groups of `group`
// tile rows (raster_n = 0) or tile columns (raster_n = 1) are walked column by column (row by
// row), so the CTAs running at one time share operand panels in L2. With split-K each tile is
// `splits` consecutive work units, unit s covering k-tiles [s k_tiles / splits,
// (s + 1) k_tiles / splits) (or every splits-th k-tile from s: splitk_interleave).
struct TileSchedulerParams {
  int64_t total_tiles = 0;
  int64_t total_units = 0;  // total_tiles * splits
  int64_t tiles_per_batch = 0;
  int32_t tiles_m = 0, tiles_n = 0;
  int32_t group = 8;
  int32_t raster_n = 0;
  int32_t k_tiles = 0;  // ceil(K / tile_k_for(dtype))
  int32_t splits = 1;   // 1 <= splits <= max(k_tiles, 1)
  // Split-K order: 0 (default), unit s covers the contiguous slice [s k_tiles / splits,
  // (s + 1) k_tiles / splits); 1, k-tiles s, s + splits, ... (FLASHKIT_SM90_GEMM_SPLITK=
  // interleave, for measurement: slower on the H200).
  int32_t splitk_interleave = 0;
  // A consumer warpgroup whose rows of the tile are all past M skips its MMAs (kernel.cuh);
  // FLASHKIT_SM90_GEMM_IDLE=0 turns it off, for measurement.
  int32_t skip_idle_rows = 1;
  // Each unit's producer starts its k-tile walk at a unit-dependent k-tile and wraps around
  // (TileCoord::k_rot), so that the CTAs streaming B at one time read it at scattered K offsets
  // rather than all at the same offset of their slices (heuristics.h, pick_krot).
  int32_t k_rotate = 0;
  // Rows and columns of one tile: kTileM x kTileN, or kSkinnyM x kSkinnyN for the skinny kernel
  // (tiles_m, tiles_n count these).
  int32_t tile_rows = kTileM, tile_cols = kTileN;
};

// Split-K reduction: every unit of a tile stores its fp32 partial tile; the last unit to finish
// (an atomic counter per tile) adds the others' partials and runs the epilogue.
struct SplitKParams {
  float* partials = nullptr;    // total_tiles * splits * tile_rows * tile_cols floats
  int32_t* counters = nullptr;  // total_tiles, zero before the launch
};

struct GemmArgs {
  DType ab_dtype = DType::BF16;  // A's dtype
  DType b_dtype = DType::BF16;   // differs from A's only for the two fp8 formats
  OperandDesc a, b;
  int64_t M = 0, N = 0, K = 0;
  EpilogueParams epilogue;
  TileSchedulerParams scheduler;
  SplitKParams splitk;
  int32_t grid = 1;  // persistent CTAs
  int32_t stages = 3;  // ring depth, 3 or 4 (heuristics.h, pick_stages); the ping-pong kinds: 4 / kPp128Stages
  // Schedule (heuristics.h, pick_pingpong): kCooperative, or one of the two ping-pong
  // schedules, where one consumer warpgroup's epilogue runs under the other's MMAs. Never with
  // split-K. kPingPong64 (kernel.cuh, pingpong_consumer): each warpgroup owns a 64-row half of
  // a 128 x 256 tile; 4 stages of 64-row A and all of B. kPingPong128 (pingpong128_consumer):
  // each warpgroup owns whole 128 x 128 tiles (scheduler tiles of kTileM x kPp128N);
  // kPp128Stages stages.
  int32_t pingpong = 0;
  // Skinny kernel (kernel.cuh, SkinnyKernel; heuristics.h, pick_skinny): 64 x 128 tiles, one
  // consumer warpgroup, kSkinnyStages stages; A K-major only. Excludes pingpong.
  bool skinny = false;
};

// One launcher per input dtype (launch_bf16.cu, launch_f16.cu), each holding the four layout
// instantiations (A and B each K- or MN-major); fp8 (launch_fp8_e4m3.cu / _e5m2.cu, by A's
// format) has K-major A and B only (wgmma reads 8-bit operands K-major), one instantiation per
// (A, B) format pair.
fk_status_t launch_bf16(const GemmArgs& args, cudaStream_t stream);
fk_status_t launch_f16(const GemmArgs& args, cudaStream_t stream);
fk_status_t launch_fp8_e4m3(const GemmArgs& args, cudaStream_t stream);
fk_status_t launch_fp8_e5m2(const GemmArgs& args, cudaStream_t stream);

}  // namespace sm90
}  // namespace cuda
}  // namespace flashkit
