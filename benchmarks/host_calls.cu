// Host time per call of flashkit's C ABI on the CUDA backend, next to the CUDA runtime calls a
// launch is made of, so that the library's own host time can be split from the runtime's.
//
// Every call is issued while the GPU is held busy by a spinning kernel, so a launch never waits
// for the queue; each row is the median over 400 calls of the host time (steady_clock).
//
// Build (here; the device has the same nvcc):
//   nvcc -O2 -std=c++17 -arch=sm_90 -Iinclude -Ibuild-gpu/include -I/usr/include \
//        benchmarks/host_calls.cu -o host_calls -Lbuild-gpu -lflashkit -cudart static
// Run:  LD_LIBRARY_PATH=<lib folder> ./host_calls
// (the shapes are the demo's: all-MiniLM-L6-v2, 1128 tokens, hidden 384, 12 heads of 32)
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "flashkit/flashkit.h"

namespace {

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
__global__ void empty_kernel() {}

double median_us(const std::function<void()>& fn, int n = 400) {
  fn();
  cudaDeviceSynchronize();
  spin<<<1, 1>>>(4000000000LL);  // ~2 s at ~2 GHz, longer than the n calls take
  std::vector<double> t(n);
  for (int i = 0; i < n; ++i) {
    const auto a = std::chrono::steady_clock::now();
    fn();
    t[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
  }
  cudaDeviceSynchronize();
  std::sort(t.begin(), t.end());
  return t[n / 2];
}

// A DLTensor with its own shape and strides (the pointers follow the struct when it is copied).
struct Tensor {
  DLTensor t;
  int64_t shape[4];
  int64_t strides[4];
  Tensor() = default;
  Tensor(const Tensor& o) { *this = o; }
  Tensor& operator=(const Tensor& o) {
    t = o.t;
    std::memcpy(shape, o.shape, sizeof(shape));
    std::memcpy(strides, o.strides, sizeof(strides));
    t.shape = shape;
    t.strides = strides;
    return *this;
  }
};

Tensor make(void* data, std::vector<int64_t> shape, DLDataType dt) {
  Tensor x;
  std::memset(&x, 0, sizeof(x));
  int64_t acc = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    x.shape[i] = shape[i];
    x.strides[i] = acc;
    acc *= shape[i];
  }
  x.t.data = data;
  x.t.device = {kDLCUDA, 0};
  x.t.ndim = int(shape.size());
  x.t.dtype = dt;
  x.t.shape = x.shape;
  x.t.strides = x.strides;
  return x;
}

void* dalloc(size_t bytes) {
  void* p = nullptr;
  cudaMalloc(&p, bytes);
  cudaMemset(p, 0, bytes);
  return p;
}

void row(const char* what, double us) { std::printf("%-58s %8.2f us\n", what, us); }

}  // namespace

int main() {
  cudaFree(nullptr);
  const DLDataType bf16{kDLBfloat, 16, 1}, f32{kDLFloat, 32, 1}, i32{kDLInt, 32, 1};
  const int64_t T = 1128, H = 384, nh = 12, hd = 32;

  // The CUDA runtime pieces of a launch.
  row("cudaLaunchKernel (empty kernel, <<<1, 32>>>)", median_us([] { empty_kernel<<<1, 32>>>(); }));
  row("cudaFuncSetAttribute (max dynamic shared memory)", median_us([] {
        cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100000);
      }));
  row("cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)", median_us([] {
        void* p = nullptr;
        cudaDriverEntryPointQueryResult q;
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q);
      }));
  void* enc_ptr = nullptr;
  cudaDriverEntryPointQueryResult qr;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &enc_ptr, 12000, cudaEnableDefault, &qr);
  void* buf = dalloc(T * 3 * H * 2);
  row("cuTensorMapEncodeTiled (2-D bf16, 128-byte swizzle)", median_us([&] {
        alignas(64) CUtensorMap map;
        const cuuint64_t dims[2] = {cuuint64_t(H), cuuint64_t(T)};
        const cuuint64_t strides[1] = {cuuint64_t(H * 2)};
        const cuuint32_t box[2] = {64, 64}, es[2] = {1, 1};
        reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(enc_ptr)(
            &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, buf, dims, strides, box, es,
            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      }));
  row("cudaGetDevice", median_us([] { int d; cudaGetDevice(&d); }));
  row("cudaGetLastError", median_us([] { (void)cudaGetLastError(); }));
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  row("cudaMallocAsync + cudaFreeAsync (1 MB)", median_us([&] {
        void* p = nullptr;
        cudaMallocAsync(&p, 1 << 20, stream);
        cudaFreeAsync(p, stream);
      }));

  // flashkit calls (the default context: the Hopper family on an H200).
  fk_context_options_t o;
  fk_context_options_init(&o);
  fk_context_t* ctx = nullptr;
  if (fk_context_create(&o, &ctx) != FK_SUCCESS) {
    std::printf("fk_context_create failed: %s\n", fk_get_last_error_message());
    return 1;
  }
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = nullptr;  // the legacy stream, where the spinning kernel runs
  Tensor x = make(dalloc(T * H * 2), {T, H}, bf16);
  Tensor w = make(dalloc(3 * H * H * 2), {3 * H, H}, bf16);
  Tensor bias = make(dalloc(3 * H * 4), {3 * H}, f32);
  Tensor d = make(buf, {T, 3 * H}, bf16);
  fk_gemm_params_t gp;
  fk_gemm_params_init(&gp);
  gp.trans_b = 1;
  const char* name = nullptr;
  fk_status_t st = fk_gemm_select_kernel(ctx, &gp, &x.t, &w.t, nullptr, &bias.t, &d.t, &name);
  std::printf("gemm variant: %s (status %d)\n", st == FK_SUCCESS ? name : fk_get_last_error_message(), int(st));
  row("fk_gemm_select_kernel (validation + dispatch, no launch)", median_us([&] {
        fk_gemm_select_kernel(ctx, &gp, &x.t, &w.t, nullptr, &bias.t, &d.t, &name);
      }));
  row("fk_gemm 1128 x 1152 x 384 bf16 + bias (demo's QKV)", median_us([&] {
        fk_gemm(ctx, &launch, &gp, &x.t, &w.t, nullptr, &bias.t, &d.t);
      }));
  gp.trans_b = 0;
  Tensor w2 = make(w.t.data, {H, 3 * H}, bf16);
  row("fk_gemm same, B not transposed", median_us([&] {
        fk_gemm(ctx, &launch, &gp, &x.t, &w2.t, nullptr, &bias.t, &d.t);
      }));

  // Attention: varlen (64 sequences of 8..29 tokens, packed qkv) and batched (8 x 128).
  std::vector<int32_t> cu(65, 0);
  for (int i = 0; i < 64; ++i) cu[i + 1] = cu[i] + 8 + (i * 7) % 22;
  const int64_t total = cu[64];
  int32_t* dcu = static_cast<int32_t*>(dalloc(65 * 4));
  cudaMemcpy(dcu, cu.data(), 65 * 4, cudaMemcpyHostToDevice);
  void* qkv = dalloc(total * 3 * nh * hd * 2);
  auto view = [&](int which) {
    Tensor t = make(static_cast<char*>(qkv) + which * nh * hd * 2, {total, nh, hd}, bf16);
    t.strides[0] = 3 * nh * hd;
    return t;
  };
  Tensor q = view(0), k = view(1), v = view(2);
  Tensor out = make(dalloc(total * nh * hd * 2), {total, nh, hd}, bf16);
  Tensor cut = make(dcu, {65}, i32);
  fk_attention_params_t ap;
  fk_attention_params_init(&ap);
  ap.max_seqlen_q = ap.max_seqlen_k = 29;
  st = fk_attention_select_kernel(ctx, &ap, &q.t, &k.t, &v.t, &cut.t, &cut.t, &out.t, nullptr, &name);
  std::printf("varlen attention variant: %s (status %d)\n", st == FK_SUCCESS ? name : fk_get_last_error_message(), int(st));
  if (st != FK_SUCCESS) {
    std::printf("attention rows skipped\n");
    return 0;
  }
  row("fk_attention_select_kernel varlen (no launch)", median_us([&] {
        fk_attention_select_kernel(ctx, &ap, &q.t, &k.t, &v.t, &cut.t, &cut.t, &out.t, nullptr, &name);
      }));
  row("fk_attention_forward varlen, both max_seqlen given", median_us([&] {
        fk_attention_forward(ctx, &launch, &ap, &q.t, &k.t, &v.t, &cut.t, &cut.t, &out.t, nullptr);
      }));
  Tensor qb = make(dalloc(8 * 128 * nh * hd * 2), {8, 128, nh, hd}, bf16);
  Tensor ob = make(dalloc(8 * 128 * nh * hd * 2), {8, 128, nh, hd}, bf16);
  fk_attention_params_init(&ap);
  row("fk_attention_forward batched 8 x 128, 12 x 32", median_us([&] {
        fk_attention_forward(ctx, &launch, &ap, &qb.t, &qb.t, &qb.t, nullptr, nullptr, &ob.t, nullptr);
      }));
  cudaDeviceSynchronize();
  std::printf("last CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
  fk_context_destroy(ctx);
  return 0;
}
