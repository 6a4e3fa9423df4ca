// Tensor-core issue ceilings on the GPU at hand, for bounding what an sm80-class kernel
// (mma.sync, no wgmma) can reach on Hopper: each warp issues chains of independent
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate) on register operands, no memory traffic.
// FLOPs per mma: 2 * 16 * 8 * 16 = 4096. Prints TFLOP/s (median of 9 CUDA-event timings).
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -o mma_peak benchmarks/micro/mma_peak.cu   (or -arch=sm_80)
//   ./mma_peak
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

constexpr int kChains = 8;  // independent accumulators per warp (covers the mma latency)

__global__ void mma_loop(int iters, float* sink) {
  unsigned a0 = 0x3c003c00u ^ threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
  unsigned b0 = 0x3c003c00u ^ (threadIdx.x * 7), b1 = b0 + 5;
  float c[kChains][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int k = 0; k < kChains; ++k) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(c[k][0]), "+f"(c[k][1]), "+f"(c[k][2]), "+f"(c[k][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float s = 0;
#pragma unroll
  for (int k = 0; k < kChains; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
  if (s == 123.456f) sink[threadIdx.x] = s;  // keeps the loop alive
}

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  float* sink;
  cudaMalloc(&sink, 1024 * sizeof(float));
  const int iters = 4096;
  std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
  for (int warps_per_sm : {4, 8, 16}) {
    const int threads = 128 * (warps_per_sm >= 8 ? 2 : 1);
    const int blocks = prop.multiProcessorCount * warps_per_sm * 32 / threads;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    mma_loop<<<blocks, threads>>>(iters, sink);  // warm-up
    std::vector<float> ms;
    for (int r = 0; r < 9; ++r) {
      cudaEventRecord(e0);
      mma_loop<<<blocks, threads>>>(iters, sink);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t;
      cudaEventElapsedTime(&t, e0, e1);
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double flops = double(blocks) * (threads / 32) * iters * kChains * 4096.0;
    std::printf("mma.sync m16n8k16 bf16->f32, %2d warps/SM: %.3f ms, %.1f TFLOP/s\n", warps_per_sm,
                ms[4], flops / (ms[4] * 1e-3) / 1e12);
  }
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("CUDA error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  return 0;
}
