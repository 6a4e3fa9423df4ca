// Tile-shape experiment for the sm80-class GEMM kernel (src/cuda/gemm/sm80/kernel.cuh) on the GPU
// at hand: instantiates the library's kernel template for several TileConfigs outside the library
// (no heuristics, no host validation), times each on the same rotated inputs and checks that every
// variant writes bit-identical D to the shipped mid tile (the accumulation order along k is the
// same whatever the warp layout, so any difference is a bug).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -Isrc -Iinclude -Xptxas -v \
//        -o gemm80_tiles benchmarks/micro/gemm80_tiles.cu
//   ./gemm80_tiles [reps]
//
// bf16 in, bf16 D, fp32 accumulation; A K-major (M, K) row-major, B N-major (K, N) row-major
// (layout KMN, what benchmarks/gemm.py's nn calls run). FLOPs = 2 M N K. Prints TFLOP/s (median
// of `reps` CUDA-event timings after 3 warm-ups, inputs rotated over sets totalling > 2x L2).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda/gemm/sm80/kernel.cuh"

using namespace flashkit;
using namespace flashkit::cuda::sm80;

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// Variants: the shipped mid and big tiles, and 16-warps-per-SM forms (64 x 32 or 32 x 64 warp
// tiles: 64 accumulators a thread, so 128 registers fit two 256-thread CTAs or one 512-thread CTA),
// and 12-warps-per-SM forms (three 128-thread CTAs of 72 KiB at up to 168 registers).
template <int BM, int BN, int BK, int WM, int WN, int S, int MINB>
struct Cfg : TileConfig<BM, BN, BK, WM, WN, S> {
  static constexpr int kMinBlocks = MINB;
};
using Mid = Cfg<128, 128, 64, 2, 2, 3, 2>;      // shipped: 4 warps of 64 x 64, 2 CTAs / SM
using Big = Cfg<128, 256, 64, 2, 4, 3, 1>;      // shipped: 8 warps of 64 x 64, 1 CTA / SM
using Mid8w = Cfg<128, 128, 64, 2, 4, 3, 2>;    // 8 warps of 64 x 32, 2 CTAs / SM
using Mid8t = Cfg<128, 128, 64, 4, 2, 3, 2>;    // 8 warps of 32 x 64, 2 CTAs / SM
using Big16 = Cfg<256, 128, 64, 4, 4, 3, 1>;    // 16 warps of 64 x 32, 1 CTA / SM
using Big16t = Cfg<128, 256, 64, 4, 4, 3, 1>;   // 16 warps of 32 x 64, 1 CTA / SM
using Narrow3 = Cfg<128, 64, 64, 2, 2, 3, 3>;   // 4 warps of 64 x 32, 3 CTAs / SM (12 warps)
using Wide3 = Cfg<64, 128, 64, 2, 2, 3, 3>;     // 4 warps of 32 x 64, 3 CTAs / SM (12 warps)

struct Problem {
  int M, N, K;
};

template <class C>
void fill_params(GemmParams& p, const Problem& pr, const void* a, const void* b, void* d) {
  std::memset(&p, 0, sizeof(p));
  p.a = a;
  p.b = b;
  p.a_ld = pr.K;
  p.b_ld = pr.N;
  p.M = pr.M;
  p.N = pr.N;
  p.K = pr.K;
  p.batch = 1;
  p.tiles_m = (pr.M + C::BM - 1) / C::BM;
  p.tiles_n = (pr.N + C::BN - 1) / C::BN;
  p.group_m = C::kGroupM;
  p.splits = 1;
  p.k_tiles_per_split = (pr.K + C::BK - 1) / C::BK;
  p.d = d;
  p.d_stride_m = pr.N;
  p.d_stride_n = 1;
  p.cd_dtype = DType::BF16;
  p.bias_dtype = DType::BF16;
  p.alpha = 1.0f;
  p.beta = 0.0f;
  p.activation = Activation::None;
  p.d_pairs = true;
  p.d_vec16 = true;
}

template <class C>
float run(const char* name, const Problem& pr, const std::vector<void*>& as,
          const std::vector<void*>& bs, void* d, int reps, bool print) {
  auto* k = &gemm_kernel<__nv_bfloat16, C, true, false>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmemBytes));
  CK(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                          int(cudaSharedmemCarveoutMaxShared)));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, C::kThreads, C::kSmemBytes));
  cudaFuncAttributes fa;
  CK(cudaFuncGetAttributes(&fa, k));
  std::vector<GemmParams> ps(as.size());
  for (size_t i = 0; i < as.size(); ++i) fill_params<C>(ps[i], pr, as[i], bs[i], d);
  const dim3 grid(unsigned(ps[0].tiles_m * ps[0].tiles_n), 1, 1);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int w = 0; w < 3; ++w) k<<<grid, C::kThreads, C::kSmemBytes>>>(ps[w % ps.size()]);
  CK(cudaGetLastError());
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    CK(cudaEventRecord(e0));
    k<<<grid, C::kThreads, C::kSmemBytes>>>(ps[r % ps.size()]);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  CK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  const float med = ms[ms.size() / 2];
  const double tf = 2.0 * pr.M * double(pr.N) * pr.K / (med * 1e-3) / 1e12;
  if (print)
    std::printf("  %-7s %4d thr %3d regs %5zu B local, %d CTA/SM: %8.4f ms %7.1f TFLOP/s\n", name,
                C::kThreads, fa.numRegs, size_t(fa.localSizeBytes), occ, med, tf);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return float(tf);
}

__global__ void fill_bf16(__nv_bfloat16* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    x[i] = __float2bfloat16(float(int(h & 0xffff) - 32768) / 32768.0f);
  }
}

template <class C>
bool same_as_ref(const char* name, const Problem& pr, const std::vector<void*>& as,
                 const std::vector<void*>& bs, void* d, const std::vector<uint16_t>& ref) {
  const size_t nd = size_t(pr.M) * pr.N;
  CK(cudaMemset(d, 0xff, nd * 2));  // poison (bf16 NaN)
  run<C>(name, pr, {as[0]}, {bs[0]}, d, 1, false);
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> got(nd);
  CK(cudaMemcpy(got.data(), d, nd * 2, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < nd; ++i) bad += got[i] != ref[i];
  if (bad) std::printf("  %-7s MISMATCH: %zu of %zu elements differ from mid\n", name, bad, nd);
  return bad == 0;
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  const Problem probs[] = {{4096, 4096, 4096}, {8192, 8192, 1024}, {4096, 12288, 4096},
                           {8192, 8192, 8192}, {1000, 1000, 264}};
  bool ok = true;
  for (const Problem& pr : probs) {
    const size_t na = size_t(pr.M) * pr.K, nb = size_t(pr.K) * pr.N, nd = size_t(pr.M) * pr.N;
    const size_t set_bytes = (na + nb) * 2;
    const int sets = int(std::max<size_t>(1, std::min<size_t>(8, (size_t(120) << 20) / set_bytes + 1)));
    std::vector<void*> as(sets), bs(sets);
    for (int s = 0; s < sets; ++s) {
      CK(cudaMalloc(&as[s], na * 2));
      CK(cudaMalloc(&bs[s], nb * 2));
      fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(as[s]), na, 17u + 2 * s);
      fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(bs[s]), nb, 91u + 2 * s);
    }
    void* d;
    CK(cudaMalloc(&d, nd * 2));
    std::printf("M %d N %d K %d (%d input sets)\n", pr.M, pr.N, pr.K, sets);
    // Reference: the shipped mid tile's D on set 0.
    CK(cudaMemset(d, 0xff, nd * 2));
    run<Mid>("mid", pr, {as[0]}, {bs[0]}, d, 1, false);
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> ref(nd);
    CK(cudaMemcpy(ref.data(), d, nd * 2, cudaMemcpyDeviceToHost));
    size_t nan = 0;
    for (size_t i = 0; i < nd; ++i) nan += (ref[i] & 0x7fff) > 0x7f80;
    if (nan) {
      std::printf("  mid left %zu NaN (poison) elements\n", nan);
      ok = false;
    }
    ok &= same_as_ref<Big>("big", pr, as, bs, d, ref);
    ok &= same_as_ref<Mid8w>("mid8w", pr, as, bs, d, ref);
    ok &= same_as_ref<Mid8t>("mid8t", pr, as, bs, d, ref);
    ok &= same_as_ref<Big16>("big16", pr, as, bs, d, ref);
    ok &= same_as_ref<Big16t>("big16t", pr, as, bs, d, ref);
    ok &= same_as_ref<Narrow3>("narrow3", pr, as, bs, d, ref);
    ok &= same_as_ref<Wide3>("wide3", pr, as, bs, d, ref);
    // Two rounds, interleaved, so that clock / power drift shows as round-to-round spread.
    for (int round = 0; round < 2; ++round) {
      std::printf(" round %d\n", round + 1);
      run<Mid>("mid", pr, as, bs, d, reps, true);
      run<Big>("big", pr, as, bs, d, reps, true);
      run<Mid8w>("mid8w", pr, as, bs, d, reps, true);
      run<Mid8t>("mid8t", pr, as, bs, d, reps, true);
      run<Big16>("big16", pr, as, bs, d, reps, true);
      run<Big16t>("big16t", pr, as, bs, d, reps, true);
      run<Narrow3>("narrow3", pr, as, bs, d, reps, true);
      run<Wide3>("wide3", pr, as, bs, d, reps, true);
    }
    for (int s = 0; s < sets; ++s) {
      CK(cudaFree(as[s]));
      CK(cudaFree(bs[s]));
    }
    CK(cudaFree(d));
  }
  std::printf(ok ? "all variants bit-identical to mid\n" : "MISMATCHES\n");
  return ok ? 0 : 1;
}
