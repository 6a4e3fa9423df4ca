// GPU suite, Monarch and block-diagonal linear: the fused sm80-class kernels
// (src/cuda/monarch/sm80/) forced through a context with kernel_family = SM80, the Hopper cluster
// kernel (src/cuda/monarch/sm90/) through kernel_family = SM90 (on compute capability 9.0 with
// the sm90 kernels built, FLASHKIT_TEST_EXPECT_SM90_GEMM; skipped elsewhere) and checked to be
// AUTO's choice there, and every dtype
// on the AUTO context (fp32 and the shapes the fused kernels decline run the generic kernels),
// with caller workspaces and streams; against float64 references on fresh random inputs,
// outputs poisoned (0xFF: NaN) before every run, padding between rows checked untouched.
//
// Tolerance: the kernels round the intermediate z to the input dtype (as m2's PyTorch code does
// when it runs in fp16/bf16) and the output once; the bound per element is
//   |out - ref| <= tol * (|ref| + rms(ref)),  tol = 4 eps (fp16: 2^-9, bf16: 2^-6)
// plus relative L2 <= eps, with eps the dtype's unit roundoff x 2 (fp16 2^-10, bf16 2^-7;
// fp32: 1e-5 for the fp32 accumulations of the generic kernels).
//
// cuda.sm80.monarch_unfused (two block-diagonal calls and two transposes, ahead of the fused
// sm80-class kernel in the SM80 family) runs the cases that expect it; the other SM80-forced cases
// switch it off (FLASHKIT_MONARCH_UNFUSED=0) so that they keep testing the fused kernel.
//
// Also: the variant select_kernel names (declined shapes go to cuda.generic.*), and a check of
// the argument mapping against m2's blockdiag_butterfly_multiply written out here from its
// documented einsum/rearrange steps (Dao et al. 2022; HazyResearch/m2,
// bert/src/mm/blockdiag_butterfly_multiply.py): w1_bfly = our w1 (k, q, p), w2_bfly = our
// w2 (l, s, r), k = nblocks1, l = nblocks2.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "reference/reference.hpp"
#include "test_util.hpp"

namespace {

using fktest::DT;
using fktest::HostTensor;
using fkgpu::DeviceTensor;
using fkgpu::padding_written;
using fkgpu::rng_for;

const fk_context_t* sm80_ctx() { return fkgpu::context_for(FK_KERNEL_FAMILY_SM80); }
const fk_context_t* sm90_ctx() { return fkgpu::context_for(FK_KERNEL_FAMILY_SM90); }

// True when the Hopper Monarch kernel must serve here: a compute capability 9.0 device and a
// library built with the sm90 kernels (CMake sets FLASHKIT_TEST_EXPECT_SM90_GEMM exactly then).
bool have_sm90() {
#if defined(FLASHKIT_TEST_EXPECT_SM90_GEMM)
  static const bool v = [] {
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    return major == 9 && minor == 0 && sm90_ctx() != nullptr;
  }();
  if (!v) WARN("no compute capability 9.0 device: sm90 monarch cases skipped");
  return v;
#else
  WARN("library built without the sm90 kernels: sm90 monarch cases skipped");
  return false;
#endif
}

bool have_sm80() {
  if (sm80_ctx() == nullptr) {
    WARN("no CUDA device of compute capability >= 8.0: sm80 monarch cases skipped");
    return false;
  }
  return true;
}

// m2's blockdiag_butterfly_multiply, step by step as documented there (einsum/rearrange):
//   x (b, n) -> (b, k, p); out1[b, k, q] = sum_p w1_bfly[k, q, p] x[b, k, p];
//   out1 (b, k*q) read as (b, r, l) and rearranged to (b, l, r);
//   out2[b, l, s] = sum_r w2_bfly[l, s, r] out1[b, l, r]; out (b, l, s) -> (b, s, l) -> (b, s*l).
std::vector<double> m2_butterfly(const std::vector<double>& x, const std::vector<double>& w1b,
                                 const std::vector<double>& w2b, int64_t B, int64_t k, int64_t q,
                                 int64_t p, int64_t l, int64_t s, int64_t r) {
  std::vector<double> out1(size_t(B * k * q)), perm(size_t(B * l * r)), out2(size_t(B * l * s)),
      out(size_t(B * s * l));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t qq = 0; qq < q; ++qq) {
        double acc = 0;
        for (int64_t pp = 0; pp < p; ++pp)
          acc += w1b[size_t((kk * q + qq) * p + pp)] * x[size_t(b * k * p + kk * p + pp)];
        out1[size_t(b * k * q + kk * q + qq)] = acc;  // (b, k, q) then flattened (b, k*q)
      }
  // 'b (r l) -> b l r'
  for (int64_t b = 0; b < B; ++b)
    for (int64_t rr = 0; rr < r; ++rr)
      for (int64_t ll = 0; ll < l; ++ll)
        perm[size_t(b * l * r + ll * r + rr)] = out1[size_t(b * k * q + rr * l + ll)];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t ll = 0; ll < l; ++ll)
      for (int64_t ss = 0; ss < s; ++ss) {
        double acc = 0;
        for (int64_t rr = 0; rr < r; ++rr)
          acc += w2b[size_t((ll * s + ss) * r + rr)] * perm[size_t(b * l * r + ll * r + rr)];
        out2[size_t(b * l * s + ll * s + ss)] = acc;
      }
  // 'b l s -> b (s l)'
  for (int64_t b = 0; b < B; ++b)
    for (int64_t ll = 0; ll < l; ++ll)
      for (int64_t ss = 0; ss < s; ++ss)
        out[size_t(b * s * l + ss * l + ll)] = out2[size_t(b * l * s + ll * s + ss)];
  return out;
}

void check_close(const HostTensor& got, const std::vector<double>& ref, DT dt) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == ref.size());
  const double eps =
      dt == DT::BF16 ? std::ldexp(1.0, -7) : dt == DT::F16 ? std::ldexp(1.0, -10) : 1e-5;
  double ss = 0;
  for (double v : ref) ss += v * v;
  const double rms = ref.empty() ? 0.0 : std::sqrt(ss / double(ref.size()));
  int64_t unwritten = 0, bad = 0, worst = -1;
  double num = 0, max_ratio = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i]) || std::isinf(g[i])) {
      ++unwritten;
      continue;
    }
    const double e = std::fabs(g[i] - ref[i]);
    num += e * e;
    const double ratio = e / (std::fabs(ref[i]) + rms + 1e-300);
    if (ratio > max_ratio) {
      max_ratio = ratio;
      worst = int64_t(i);
    }
    if (ratio > 4 * eps) ++bad;
  }
  const double rel = ss > 0 ? std::sqrt(num / ss) : std::sqrt(num);
  INFO("unwritten/non-finite " << unwritten << ", bad " << bad << ", rel_l2 " << rel
                               << " (tol " << eps << "), max err/(|ref|+rms) " << max_ratio
                               << " (tol " << 4 * eps << ") at " << worst);
  CHECK(unwritten == 0);
  CHECK(bad == 0);
  CHECK(rel <= eps);
  CHECK(padding_written(got) == 0);
}

struct MCase {
  int64_t tokens = 1, nb1 = 1, q = 16, p = 16, nb2 = 1, s = 16, r = 16;
  DT dt = DT::BF16;
  bool bias = false;
  DT bias_dt = DT::F32;
  int64_t pad = 0;          // extra elements per row of x and out
  uint64_t x_offset = 0;    // byte offset of x (misalignment)
  bool run = true;
  const char* expect = "cuda.sm80.monarch";  // nullptr: whatever AUTO picks
  bool check_m2 = false;
  bool auto_family = false;  // run on the AUTO context instead of the SM80-forced one
  bool sm90 = false;         // run on the SM90-forced context (auto_family false)
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  uint64_t workspace_bytes = 0;
  const char* chunk_mb = nullptr;  // FLASHKIT_MONARCH_UNFUSED_CHUNK_MB for the call (unfused)
  bool allow_unfused = false;      // SM80-forced: leave cuda.sm80.monarch_unfused switched on
};

constexpr const char* kUnfused = "cuda.sm80.monarch_unfused";

const fk_context_t* ctx_of(bool auto_family, bool sm90 = false) {
  return auto_family ? fkgpu::auto_context() : sm90 ? sm90_ctx() : sm80_ctx();
}

std::string describe(const MCase& c) {
  std::ostringstream o;
  o << "monarch tokens " << c.tokens << " w1 (" << c.nb1 << "," << c.q << "," << c.p << ") w2 ("
    << c.nb2 << "," << c.s << "," << c.r << ") " << fktest::dt_name(c.dt)
    << (c.bias ? " +bias " : " ") << (c.bias ? fktest::dt_name(c.bias_dt) : "") << " pad "
    << c.pad << " x_offset " << c.x_offset << " workspace " << c.workspace_bytes
    << (c.auto_family ? " (AUTO)" : c.sm90 ? " (SM90)" : " (SM80)")
    << (c.chunk_mb ? " chunk MiB " : "") << (c.chunk_mb ? c.chunk_mb : "") << ", seed "
    << fktest::test_seed();
  return o.str();
}

void run_monarch(const MCase& c, uint64_t tag) {
  INFO(describe(c));
  auto rng = rng_for(tag);
  const int64_t n = c.nb1 * c.p, n_out = c.nb2 * c.s;
  HostTensor x(c.dt, {c.tokens, n}, {n + c.pad, 1});
  HostTensor w1(c.dt, {c.nb1, c.q, c.p}), w2(c.dt, {c.nb2, c.s, c.r});
  HostTensor bias(c.bias_dt, {n_out}), out(c.dt, {c.tokens, n_out}, {n_out + c.pad, 1});
  x.fill_normal(rng);
  w1.fill_normal(rng, 1.0 / std::sqrt(double(c.p)));
  w2.fill_normal(rng, 1.0 / std::sqrt(double(c.r)));
  bias.fill_normal(rng);
  // x_offset: x's view starts that many bytes into its allocation (DLTensor::byte_offset).
  DeviceTensor dx(x, c.x_offset), dw1(w1), dw2(w2), dbias(bias), dout(out);
  dout.poison();
  fk_monarch_params_t mp;
  fk_monarch_params_init(&mp);
  const DLTensor* b = c.bias ? &dbias : nullptr;
  const char* variant = "?";
  const fk_context_t* ctx = ctx_of(c.auto_family, c.sm90);
  // SM80-forced cases test the fused kernel unless they expect the unfused variant.
  const bool fused_only = !c.auto_family && !c.sm90 && !c.allow_unfused;
  fktest::ScopedEnv unfused_env("FLASHKIT_MONARCH_UNFUSED", fused_only ? "0" : nullptr);
  fktest::ScopedEnv chunk_env("FLASHKIT_MONARCH_UNFUSED_CHUNK_MB", c.chunk_mb);
  REQUIRE_FK(fk_monarch_select_kernel(ctx, &mp, &dx, &dw1, &dw2, b, &dout, &variant));
  INFO("variant " << variant);
  if (c.expect) CHECK(std::string(variant) == c.expect);
  if (!c.run) return;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = c.stream;
  launch.workspace = c.workspace;
  launch.workspace_bytes = c.workspace_bytes;
  REQUIRE_FK(fk_monarch(ctx, &launch, &mp, &dx, &dw1, &dw2, b, &dout));
  REQUIRE_CUDA(cudaGetLastError());
  if (c.stream) REQUIRE_CUDA(cudaStreamSynchronize(c.stream));
  dout.download();
  const std::vector<double> bv = bias.to_vector();
  const std::vector<double> xv = x.to_vector(), w1v = w1.to_vector(), w2v = w2.to_vector();
  std::vector<double> ref = fkref::monarch(xv, w1v, w2v, c.bias ? &bv : nullptr, c.tokens, c.nb1,
                                           c.q, c.p, c.nb2, c.s, c.r);
  if (c.check_m2) {
    // The m2 formulation (no bias) must give the same numbers as our index map.
    std::vector<double> m2 = m2_butterfly(xv, w1v, w2v, c.tokens, c.nb1, c.q, c.p, c.nb2, c.s, c.r);
    double worst = 0;
    for (size_t i = 0; i < m2.size(); ++i) {
      const double want = ref[i] - (c.bias ? bv[i % size_t(n_out)] : 0.0);
      worst = std::max(worst, std::fabs(m2[i] - want));
    }
    INFO("m2 butterfly vs fkref::monarch, max abs diff " << worst);
    CHECK(worst <= 1e-9);
    if (!c.bias) ref = m2;
  }
  check_close(out, ref, c.dt);
}

// expect nullptr: on the AUTO context, whatever it picks.
void run_blockdiag(int64_t tokens, int64_t nb, int64_t q, int64_t p, DT dt, bool with_bias,
                   DT bias_dt, int64_t pad, uint64_t tag,
                   const char* expect = "cuda.sm80.blockdiag_linear") {
  const fk_context_t* ctx = ctx_of(expect == nullptr);
  std::ostringstream desc;
  desc << "blockdiag tokens " << tokens << " w (" << nb << "," << q << "," << p << ") "
       << fktest::dt_name(dt) << (with_bias ? " +bias" : "") << " pad " << pad << ", seed "
       << fktest::test_seed();
  INFO(desc.str());
  auto rng = rng_for(tag);
  HostTensor x(dt, {tokens, nb * p}, {nb * p + pad, 1}), w(dt, {nb, q, p});
  HostTensor bias(bias_dt, {nb * q}), out(dt, {tokens, nb * q}, {nb * q + pad, 1});
  x.fill_normal(rng);
  w.fill_normal(rng, 1.0 / std::sqrt(double(p)));
  bias.fill_normal(rng);
  DeviceTensor dx(x), dw(w), dbias(bias), dout(out);
  dout.poison();
  fk_monarch_params_t mp;
  fk_monarch_params_init(&mp);
  const DLTensor* b = with_bias ? &dbias : nullptr;
  const char* variant = "?";
  REQUIRE_FK(fk_blockdiag_linear_select_kernel(ctx, &mp, &dx, &dw, b, &dout, &variant));
  INFO("variant " << variant);
  if (expect) CHECK(std::string(variant) == expect);
  REQUIRE_FK(fk_blockdiag_linear(ctx, nullptr, &mp, &dx, &dw, b, &dout));
  dout.download();
  const std::vector<double> bv = bias.to_vector();
  const std::vector<double> ref =
      fkref::blockdiag(x.to_vector(), w.to_vector(), with_bias ? &bv : nullptr, tokens, nb, q, p);
  check_close(out, ref, dt);
}

MCase square(int64_t tokens, int64_t nb, int64_t bs, DT dt, bool bias) {
  MCase c;
  c.tokens = tokens;
  c.nb1 = c.nb2 = nb;
  c.p = c.q = c.r = c.s = bs;
  c.dt = dt;
  c.bias = bias;
  return c;
}

}  // namespace

TEST_CASE("sm80 monarch: small cases", "[gpu][monarch][sm80][sanitize]") {
  if (!have_sm80()) return;
  run_monarch(square(7, 16, 16, DT::BF16, true), 1);
  run_monarch(square(1, 32, 32, DT::F16, false), 2);
  MCase c = square(19, 4, 64, DT::BF16, true);  // nblocks 4, block 64 (jb = 4 path)
  c.bias_dt = DT::BF16;
  run_monarch(c, 3);
}

TEST_CASE("sm80 monarch: square blocks, nblocks 16..128, odd tokens, bias, fp16/bf16",
          "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  // (nblocks, block size): Dao et al.'s sqrt(n) x sqrt(n) for 16, 32, 64, 128; nblocks 4 with
  // 64-wide blocks.
  const int64_t shapes[][2] = {{4, 64}, {16, 16}, {32, 32}, {64, 64}, {128, 128}, {16, 64}};
  const int64_t tokens[] = {1, 7, 333, 1000};
  int i = 0;
  for (const auto& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16}) {
      const int64_t t = sh[1] == 128 ? (i % 2 ? 65 : 7) : tokens[i % 4];
      MCase c = square(t, sh[0], sh[1], dt, i % 2 == 0);
      c.bias_dt = (i % 3 == 0) ? DT::F32 : (i % 3 == 1) ? DT::BF16 : DT::F16;
      c.pad = (i % 4 == 3) ? 8 : 0;
      run_monarch(c, 100 + uint64_t(i++));
    }
}

TEST_CASE("sm80 monarch: rectangular blocks", "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  struct R {
    int64_t nb1, q, p, nb2, s, r;
  };
  const R shapes[] = {
      {16, 64, 32, 32, 16, 32},    // mid 1024: expand then contract
      {8, 32, 64, 16, 64, 16},     // mid 256, out 1024
      {4, 128, 128, 4, 128, 128},  // MonarchLinear-like, nblocks 4
      {4, 192, 192, 4, 96, 192},   // n 768 -> 384 (block 192, s 96)
      {2, 128, 64, 8, 64, 32},     // nblocks2 8
      {8, 16, 32, 2, 32, 64},      // nblocks2 2
      {64, 32, 64, 32, 128, 64},   // n 4096 -> 4096 with s = 128
  };
  int i = 0;
  for (const R& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16}) {
      MCase c;
      c.tokens = (i % 3 == 0) ? 1000 : (i % 3 == 1) ? 77 : 1;
      c.nb1 = sh.nb1;
      c.q = sh.q;
      c.p = sh.p;
      c.nb2 = sh.nb2;
      c.s = sh.s;
      c.r = sh.r;
      c.dt = dt;
      c.bias = i % 2 == 1;
      c.bias_dt = DT::F16;
      c.pad = (i % 4 == 2) ? 16 : 0;
      run_monarch(c, 200 + uint64_t(i++));
    }
}

TEST_CASE("sm80 monarch: m2 blockdiag_butterfly_multiply mapping", "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  MCase a = square(33, 16, 16, DT::BF16, false);
  a.check_m2 = true;
  run_monarch(a, 300);
  MCase b;  // rectangular: k=8, q=32, p=64; l=16, s=64, r=16
  b.tokens = 21;
  b.nb1 = 8;
  b.q = 32;
  b.p = 64;
  b.nb2 = 16;
  b.s = 64;
  b.r = 16;
  b.dt = DT::F16;
  b.check_m2 = true;
  run_monarch(b, 301);
}

TEST_CASE("sm80 monarch: declined problems go to the generic kernel", "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  MCase c = square(9, 8, 8, DT::BF16, false);  // block 8: not a multiple of 16
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 400);
  c = square(9, 16, 16, DT::F32, true);  // fp32
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 401);
  c = square(9, 16, 16, DT::BF16, true);  // row stride 261: not a multiple of 8
  c.pad = 5;
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 402);
  c = square(9, 16, 16, DT::F16, true);  // x misaligned by one element
  c.x_offset = 2;
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 403);
  c = square(5, 24, 16, DT::BF16, false);  // nblocks2 24: not 2, 4, 8 or a multiple of 16
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 404);
  MCase d;  // s = 256 > 128
  d.tokens = 3;
  d.nb1 = d.nb2 = 16;
  d.p = d.q = d.r = 16;
  d.s = 256;
  d.expect = "cuda.generic.monarch";
  run_monarch(d, 405);
}

// ---- The Hopper cluster kernel (cuda.sm90.monarch) -------------------------------------------

namespace {

MCase sm90_case(MCase c) {
  c.sm90 = true;
  c.expect = "cuda.sm90.monarch";
  return c;
}

MCase rect(int64_t tokens, int64_t nb1, int64_t q, int64_t p, int64_t nb2, int64_t s, int64_t r,
           DT dt) {
  MCase c;
  c.tokens = tokens;
  c.nb1 = nb1;
  c.q = q;
  c.p = p;
  c.nb2 = nb2;
  c.s = s;
  c.r = r;
  c.dt = dt;
  return c;
}

// Rectangular shapes {nblocks1, q, p, nblocks2, s, r}, each in bf16 and fp16 with token counts
// 1000 / 77 / 1, bias (fp16) on every other case and 16 elements of row padding on every
// fourth; `variant` sets the family and expectation of each case; tags from tag0 on. Then the
// m2 mapping, rectangular (tag m2_tag) and square 64 x 64 (m2_tag + 1).
struct RectShape {
  int64_t nb1, q, p, nb2, s, r;
};
template <size_t N>
void run_rect_shapes(const RectShape (&shapes)[N], uint64_t tag0, uint64_t m2_tag,
                     MCase (*variant)(MCase)) {
  uint64_t i = 0;
  for (const RectShape& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16}) {
      MCase c = variant(rect((i % 3 == 0) ? 1000 : (i % 3 == 1) ? 77 : 1, sh.nb1, sh.q, sh.p,
                             sh.nb2, sh.s, sh.r, dt));
      c.bias = i % 2 == 1;
      c.bias_dt = DT::F16;
      c.pad = (i % 4 == 2) ? 16 : 0;
      run_monarch(c, tag0 + i++);
    }
  MCase m = variant(rect(45, 8, 32, 64, 16, 64, 16, DT::F16));
  m.check_m2 = true;
  run_monarch(m, m2_tag);
  MCase sq = variant(square(40, 64, 64, DT::BF16, false));
  sq.check_m2 = true;
  run_monarch(sq, m2_tag + 1);
}

}  // namespace

TEST_CASE("sm90 monarch: small cases", "[gpu][monarch][sm90][sanitize]") {
  if (!have_sm90()) return;
  // cluster of 8 (n = 4096, 64 blocks of 64), 2 (16 blocks of 64) and 1 (rectangular, nblocks2 8)
  MCase a = sm90_case(square(37, 64, 64, DT::BF16, true));
  run_monarch(a, 600);
  MCase b = sm90_case(square(5, 16, 64, DT::F16, false));
  run_monarch(b, 601);
  MCase c = sm90_case(rect(33, 2, 128, 64, 8, 64, 32, DT::BF16));
  c.bias = true;
  c.bias_dt = DT::F16;
  run_monarch(c, 602);
  // 8 blocks of 64: the 64 x 64 kernel in a cluster of 1
  MCase d = sm90_case(square(70, 8, 64, DT::BF16, true));
  run_monarch(d, 603);
}

TEST_CASE("sm90 monarch: square blocks, odd tokens, bias, padding, fp16/bf16",
          "[gpu][monarch][sm90]") {
  if (!have_sm90()) return;
  // (nblocks, block): 32 x 32 (n 1024, cluster 4), 64 x 64 (n 4096, cluster 8), 16 x 64
  // (n 1024, cluster 2). Token counts: one tile, tails, more tiles than clusters.
  const int64_t shapes[][2] = {{32, 32}, {64, 64}, {16, 64}};
  const int64_t tokens[] = {1, 31, 333, 1000, 4097};
  int i = 0;
  for (const auto& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16})
      for (int v = 0; v < 2; ++v) {
        MCase c = sm90_case(square(tokens[i % 5], sh[0], sh[1], dt, i % 2 == 0));
        c.bias_dt = (i % 3 == 0) ? DT::F32 : (i % 3 == 1) ? DT::BF16 : DT::F16;
        c.pad = (i % 4 == 3) ? 8 : 0;
        run_monarch(c, 610 + uint64_t(i++));
      }
}

TEST_CASE("sm90 monarch: rectangular blocks and the m2 mapping", "[gpu][monarch][sm90]") {
  if (!have_sm90()) return;
  const RectShape shapes[] = {
      {8, 32, 64, 16, 64, 16},     // mid 256, out 1024 (cluster 2)
      {2, 128, 64, 8, 64, 32},     // nblocks2 8: cluster of 1
      {8, 64, 32, 16, 32, 32},     // p 32, q 64, s 32 (cluster 2)
      {16, 32, 32, 16, 128, 32},   // s 128 (cluster 2)
      {32, 64, 64, 64, 64, 32},    // nblocks1 32, nblocks2 64 (cluster 8, 4 w1 blocks per CTA)
      {8, 128, 32, 16, 128, 64},   // 208 KB: two x buffers and one z buffer (cluster 2)
  };
  run_rect_shapes(shapes, 640, 660, sm90_case);
}

TEST_CASE("sm90 monarch: AUTO picks it on Hopper; declined shapes go to the sm80 rows",
          "[gpu][monarch][sm90]") {
  if (!have_sm90()) return;
  MCase c = square(2049, 64, 64, DT::BF16, true);  // n = 4096: the benchmark's shape
  c.auto_family = true;
  c.expect = "cuda.sm90.monarch";
  run_monarch(c, 670);
  c = square(65, 128, 128, DT::BF16, false);  // n = 16384: the weights do not fit
  c.auto_family = true;
  c.expect = kUnfused;
  run_monarch(c, 671);
  c = square(9, 4, 64, DT::F16, true);  // nblocks2 4: not 8 * cluster size
  c.auto_family = true;
  c.expect = kUnfused;
  run_monarch(c, 672);
  c = square(9, 16, 16, DT::BF16, true);  // s 16
  c.auto_family = true;
  c.expect = kUnfused;
  run_monarch(c, 673);
  c = square(9, 24, 16, DT::BF16, true);  // nblocks2 24: the fused sm80 kernel declines too
  c.auto_family = true;
  c.expect = kUnfused;
  run_monarch(c, 675);
  c = square(9, 64, 64, DT::BF16, false);  // row stride 4100 not a multiple of 8
  c.pad = 4;
  c.auto_family = true;
  c.expect = "cuda.generic.monarch";
  run_monarch(c, 674);
}

// ---- cuda.sm80.monarch_unfused ---------------------------------------------------------------

namespace {

MCase unfused(MCase c) {
  c.expect = kUnfused;
  c.allow_unfused = true;
  return c;
}

}  // namespace

TEST_CASE("sm80 monarch_unfused: small cases, chunks", "[gpu][monarch][sm80][sanitize]") {
  if (!have_sm80()) return;
  MCase a = unfused(square(7, 16, 16, DT::BF16, true));
  run_monarch(a, 700);
  run_monarch(unfused(square(1, 32, 32, DT::F16, false)), 701);
  MCase b = unfused(rect(33, 2, 128, 64, 8, 64, 32, DT::BF16));  // rectangular, nblocks2 8
  b.bias = true;
  b.bias_dt = DT::F16;
  run_monarch(b, 702);
  // 1 MiB of scratch over 1024 columns: 256-token chunks, so 600 tokens run as 256 + 256 + 88.
  MCase c = unfused(square(600, 16, 64, DT::F16, true));
  c.bias_dt = DT::BF16;
  c.chunk_mb = "1";
  c.pad = 8;
  run_monarch(c, 703);
}

TEST_CASE("sm80 monarch_unfused: square blocks, nblocks 4..128, odd tokens, bias, chunks",
          "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  const int64_t shapes[][2] = {{4, 64}, {16, 16}, {32, 32}, {64, 64}, {128, 128}, {24, 16}};
  const int64_t tokens[] = {1, 7, 333, 1000};
  int i = 0;
  for (const auto& sh : shapes)
    for (DT dt : {DT::BF16, DT::F16}) {
      const int64_t t = sh[1] == 128 ? (i % 2 ? 129 : 7) : tokens[i % 4];
      MCase c = unfused(square(t, sh[0], sh[1], dt, i % 2 == 0));
      c.bias_dt = (i % 3 == 0) ? DT::F32 : (i % 3 == 1) ? DT::BF16 : DT::F16;
      c.pad = (i % 4 == 3) ? 8 : 0;
      // A 1 MiB budget (chunks of max(128, 2^18 / n) tokens): several chunks for 32 x 32 at 333
      // tokens, 64 x 64 at 1000 and 128 x 128 at 129; one chunk for the narrower shapes.
      if (t > 128 && i % 2 == 1) c.chunk_mb = "1";
      run_monarch(c, 710 + uint64_t(i++));
    }
}

TEST_CASE("sm80 monarch_unfused: rectangular blocks and the m2 mapping", "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  const RectShape shapes[] = {
      {16, 64, 32, 32, 16, 32},    // mid 1024: expand then contract
      {8, 32, 64, 16, 64, 16},     // mid 256, out 1024
      {4, 128, 192, 4, 96, 128},   // n 768 -> 384 (p 192, s 96; q <= 128 for blockdiag)
      {8, 16, 32, 2, 32, 64},      // nblocks2 2
      {64, 32, 64, 32, 128, 64},   // n 4096 -> 4096 with s = 128
      {3, 64, 48, 6, 80, 32},      // nblocks1 3, nblocks2 6, s 80: transposes with partial tiles
  };
  run_rect_shapes(shapes, 740, 760, unfused);
}

TEST_CASE("sm80 monarch_unfused: declined shapes, caller workspace", "[gpu][monarch][sm80]") {
  if (!have_sm80()) return;
  // nblocks2 3 (odd): the transposes move pairs; the fused kernel declines it too.
  MCase c = square(9, 3, 16, DT::BF16, true);
  c.expect = "cuda.generic.monarch";
  c.allow_unfused = true;
  run_monarch(c, 770);
  // q = 192: the first block-diagonal call declines it (q <= 128); the fused kernel takes it.
  MCase e = rect(9, 4, 192, 192, 4, 96, 192, DT::BF16);
  e.expect = "cuda.sm80.monarch";
  e.allow_unfused = true;
  run_monarch(e, 772);
  // x one element off 16-byte alignment: the block-diagonal kernel's cp.async needs 16.
  MCase x = square(9, 16, 16, DT::F16, true);
  x.x_offset = 2;
  x.expect = "cuda.generic.monarch";
  x.allow_unfused = true;
  run_monarch(x, 773);
  // Row strides 4097 (x and out): not the block-diagonal kernel's multiple of 8, nor even.
  MCase d = square(9, 64, 64, DT::F16, false);
  d.expect = "cuda.generic.monarch";
  d.allow_unfused = true;
  d.pad = 1;
  run_monarch(d, 771);
  // A caller workspace of exactly fk_monarch_workspace_size's bytes, then one too small (the
  // library allocates), on a non-default stream.
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  MCase w = unfused(square(513, 32, 32, DT::BF16, true));
  w.chunk_mb = "1";
  w.stream = s;
  uint64_t need = 0;
  {
    fktest::ScopedEnv chunk_env("FLASHKIT_MONARCH_UNFUSED_CHUNK_MB", "1");
    auto rng = rng_for(780);
    HostTensor x(w.dt, {w.tokens, 1024}), w1(w.dt, {32, 32, 32}), w2(w.dt, {32, 32, 32});
    HostTensor bias(DT::F32, {1024}), out(w.dt, {w.tokens, 1024});
    DeviceTensor dx(x), dw1(w1), dw2(w2), dbias(bias), dout(out);
    fk_monarch_params_t mp;
    fk_monarch_params_init(&mp);
    REQUIRE_FK(fk_monarch_workspace_size(sm80_ctx(), &mp, &dx, &dw1, &dw2, &dbias, &dout, &need));
  }
  INFO("workspace " << need);
  // Two bf16 buffers of a 256-token chunk (1 MiB over 1024 columns) and the fp32 bias.
  CHECK(need >= 2 * 256 * 1024 * 2 + 1024 * 4);
  void* ws = nullptr;
  REQUIRE_CUDA(cudaMalloc(&ws, need));
  w.workspace = ws;
  w.workspace_bytes = need;
  run_monarch(w, 781);
  w.workspace_bytes = 4096;
  run_monarch(w, 782);
  REQUIRE_CUDA(cudaFree(ws));
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

TEST_CASE("sm80 blockdiag linear", "[gpu][monarch][blockdiag][sm80]") {
  if (!have_sm80()) return;
  run_blockdiag(7, 4, 64, 64, DT::BF16, true, DT::F32, 0, 500);
  run_blockdiag(1000, 16, 16, 16, DT::F16, false, DT::F32, 8, 501);
  run_blockdiag(333, 64, 64, 64, DT::BF16, true, DT::BF16, 0, 502);
  run_blockdiag(129, 4, 128, 64, DT::F16, true, DT::F16, 0, 503);   // rectangular, q > p
  run_blockdiag(1, 2, 32, 256, DT::BF16, false, DT::F32, 0, 504);   // p = 256
  run_blockdiag(257, 32, 128, 128, DT::BF16, true, DT::F32, 8, 505);
  run_blockdiag(5, 4, 8, 16, DT::BF16, false, DT::F32, 0, 506, "cuda.generic.blockdiag_linear");
  run_blockdiag(5, 4, 16, 16, DT::F32, false, DT::F32, 0, 507, "cuda.generic.blockdiag_linear");
}

TEST_CASE("sm80 blockdiag linear: stationary w over several token tiles, and the item ring",
          "[gpu][monarch][blockdiag][sm80]") {
  if (!have_sm80()) return;
  // Stationary w (branch bdws2: wherever it fits, two CTAs per multiprocessor where they fit):
  // several token tiles per CTA and ragged last tiles, at 128 x 128, 128 x 192 (one CTA per
  // multiprocessor) and 32 x 32 blocks (two).
  run_blockdiag(600, 64, 128, 128, DT::BF16, false, DT::F32, 0, 522);
  run_blockdiag(1000, 16, 128, 128, DT::F16, true, DT::BF16, 8, 521);
  run_blockdiag(2000, 20, 128, 192, DT::BF16, true, DT::F16, 0, 523);
  run_blockdiag(3000, 32, 32, 32, DT::BF16, true, DT::F32, 0, 520);
  // The item ring (FLASHKIT_BLOCKDIAG_STATIONARY=0) on the same kind of shapes.
  fktest::ScopedEnv ring("FLASHKIT_BLOCKDIAG_STATIONARY", "0");
  run_blockdiag(3000, 32, 32, 32, DT::F16, false, DT::F32, 0, 524);
  run_blockdiag(600, 64, 128, 128, DT::BF16, true, DT::F32, 8, 525);
  run_blockdiag(333, 64, 64, 64, DT::BF16, true, DT::BF16, 0, 526);
}

// ---- Every dtype on the AUTO context (fp32 runs the generic kernels, fp16/bf16 the fused ones
// where their predicates take the shape), with caller workspaces and streams -----------------

TEST_CASE("gpu monarch: square blocks, nblocks 4 and 16", "[gpu][monarch]") {
  int i = 0;
  for (int64_t nb : {int64_t(4), int64_t(16)})
    for (DT dt : {DT::F32, DT::F16, DT::BF16}) {
      MCase c = square(133, nb, nb, dt, (i % 2) == 0);  // Dao et al.'s sqrt(n) x sqrt(n) blocks
      c.auto_family = true;
      c.expect = nullptr;
      c.pad = (i % 3) == 1 ? 5 : 0;
      run_monarch(c, 20000 + uint64_t(i++));
    }
  MCase big = square(257, 16, 64, DT::F32, true);  // n = 1024 with 16 blocks of 64
  big.auto_family = true;
  big.expect = nullptr;
  run_monarch(big, 20100);
}

TEST_CASE("gpu monarch: rectangular blocks", "[gpu][monarch]") {
  MCase c;
  c.auto_family = true;
  c.expect = nullptr;
  c.dt = DT::F32;
  c.tokens = 77;
  c.nb1 = 4;
  c.p = 24;
  c.q = 12;  // mid = 48
  c.nb2 = 16;
  c.r = 3;
  c.s = 5;
  c.bias = true;
  c.bias_dt = DT::BF16;
  c.pad = 3;
  run_monarch(c, 21000);
  c.nb1 = 16;
  c.p = 8;
  c.q = 32;  // mid = 512
  c.nb2 = 4;
  c.r = 128;
  c.s = 64;
  c.dt = DT::BF16;
  run_monarch(c, 21001);
  c.dt = DT::F16;
  c.tokens = 1;
  run_monarch(c, 21002);
}

TEST_CASE("gpu monarch: caller workspace, tiny workspace, stream",
          "[gpu][monarch][stream][sanitize]") {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* ws = nullptr;
  REQUIRE_CUDA(cudaMalloc(&ws, 1 << 20));
  MCase c = square(50, 4, 8, DT::F32, true);
  c.auto_family = true;
  c.expect = nullptr;
  c.stream = s;
  c.workspace = ws;
  c.workspace_bytes = 1 << 20;  // large enough for the fp32 intermediate
  run_monarch(c, 22000);
  c.workspace_bytes = 64;  // too small: the library allocates instead
  run_monarch(c, 22001);
  c.dt = DT::BF16;  // the fused kernel on a non-default stream
  c.p = c.q = c.r = c.s = 16;
  run_monarch(c, 22002);
  REQUIRE_CUDA(cudaFree(ws));
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

TEST_CASE("gpu blockdiag linear", "[gpu][monarch][blockdiag]") {
  run_blockdiag(100, 4, 32, 32, DT::F32, true, DT::F32, 0, 23000, nullptr);
  run_blockdiag(100, 16, 16, 16, DT::BF16, false, DT::F32, 3, 23001, nullptr);
  run_blockdiag(31, 16, 7, 20, DT::F16, true, DT::F32, 1, 23002, nullptr);
  run_blockdiag(5, 4, 130, 3, DT::F32, true, DT::F32, 2, 23003, nullptr);
}

TEST_CASE("gpu blockdiag linear: small", "[gpu][monarch][blockdiag][sanitize]") {
  run_blockdiag(9, 4, 5, 6, DT::BF16, true, DT::F32, 2, 23100, nullptr);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
