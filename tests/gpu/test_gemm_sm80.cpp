// GPU suite, sm80-class GEMM (src/cuda/gemm/sm80) with the SM80 kernel family forced through the
// context options (kernel_family = FK_KERNEL_FAMILY_SM80), so that it runs on Hopper too: shapes,
// transposes, dtypes and epilogues checked against the float64 reference
// (tests/reference/reference.hpp) on fresh random inputs with poisoned outputs, and the problems
// it declines (unaligned operands, fp32 inputs), which must fall back to the generic kernel and
// stay right. On a device of compute capability >= 8.0 every eligible case must report the
// variant "cuda.sm80.gemm".
//
// Operands are stored with leading dimensions rounded up to 8 elements (16 bytes, the cp.async
// alignment) plus `pad` more, so that odd extents (1, 7, 127, 129, 4097) exercise the kernel's
// zero-filled tails rather than the fallback.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gemm_check.hpp"

namespace {

using fkgemm::Case;
using fkgemm::ab_by_index;
using fkgemm::cd_by_index;
using fktest::DT;

// True when eligible problems must run on the sm80 kernel here (compute capability >= 8.0).
bool expect_sm80() {
  static const bool v = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return false;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    return major >= 8;
  }();
  return v;
}

// Every case on a context with the SM80 family forced.
void run(const Case& c, uint64_t tag) {
  fkgemm::run(c, tag,
              {fkgpu::context_for(FK_KERNEL_FAMILY_SM80), "cuda.sm80.gemm", expect_sm80()});
}

}  // namespace

TEST_CASE("sm80 gemm: M N K in {1 7 127 129} with every transpose dtype and epilogue",
          "[gpu][gemm][sm80]") {
  const int64_t sizes[] = {1, 7, 127, 129};
  int i = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : sizes) {
        Case c;
        c.M = M;
        c.N = N;
        c.K = K;
        c.trans_a = (i & 1) != 0;
        c.trans_b = (i & 2) != 0;
        c.ab = ab_by_index(i / 4);
        c.cd = cd_by_index(i / 8);
        c.bias_dt = cd_by_index(i / 5);
        c.act = i % 4;
        c.with_bias = (i % 3) == 0;
        c.with_c = (i % 5) < 2;
        c.beta = c.with_c ? ((i % 5) == 0 ? 1.0f : -0.5f) : 0.0f;
        c.alpha = (i % 7) == 0 ? 0.25f : 1.0f;
        c.ld_pad = (i % 6) == 0 ? 8 : 0;
        c.col_major_d = (i % 11) == 3;
        run(c, 1200000 + uint64_t(i++));
      }
}

TEST_CASE("sm80 gemm: extents of 4097 (many tiles and tails in both raster orders)", "[gpu][gemm][sm80]") {
  const int64_t shapes[][3] = {{4097, 129, 65}, {129, 4097, 33}, {127, 130, 4097}, {300, 136, 4097}};
  int i = 0;
  for (const auto& s : shapes) {
    Case c;
    c.M = s[0];
    c.N = s[1];
    c.K = s[2];
    c.trans_a = (i & 1) != 0;
    c.trans_b = (i & 2) != 0;
    c.ab = ab_by_index(i);
    c.cd = cd_by_index(i);
    c.with_bias = true;
    c.with_c = (i % 2) == 0;
    c.beta = c.with_c ? 0.5f : 0.0f;
    c.act = i % 4;
    run(c, 1210000 + uint64_t(i++));
  }
}

TEST_CASE("sm80 gemm: more tiles than SMs (big tiles, grouped raster)", "[gpu][gemm][sm80]") {
  Case c;
  c.M = 2100;
  c.N = 3000;
  c.K = 40;
  c.ab = DT::BF16;
  c.cd = DT::BF16;
  c.with_bias = true;
  c.act = 3;
  run(c, 122000);
  c.trans_a = true;
  c.trans_b = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.with_c = true;
  c.beta = -1.0f;
  c.act = 0;
  run(c, 122001);
}

TEST_CASE("sm80 gemm: big tiles with tails in every layout (4097 columns)", "[gpu][gemm][sm80]") {
  for (int i = 0; i < 4; ++i) {
    Case c;
    c.M = 1100;
    c.N = 4097;
    c.K = 24;
    c.trans_a = (i & 1) != 0;
    c.trans_b = (i & 2) != 0;
    c.ab = ab_by_index(i);
    c.cd = cd_by_index(i);
    c.with_bias = true;
    c.with_c = (i % 2) == 1;
    c.beta = c.with_c ? -0.5f : 0.0f;
    c.act = (i + 1) % 4;
    c.col_major_d = i == 2;
    run(c, 122500 + uint64_t(i));
  }
}

TEST_CASE("sm80 gemm: split-K on grids smaller than the GPU", "[gpu][gemm][sm80]") {
  // Few output tiles and a long K: the heuristics split K across CTAs and the last unit of each
  // tile reduces the partials and runs the epilogue.
  Case c;
  c.M = 16;
  c.N = 512;
  c.K = 8192;
  c.with_bias = true;
  c.act = 2;
  run(c, 122100);
  c.M = 128;
  c.N = 512;
  c.K = 3000;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.with_c = true;
  c.beta = 0.5f;
  c.act = 0;
  c.trans_a = true;
  run(c, 122101);
  c.M = 1;
  c.N = 300;
  c.K = 4097;
  c.ab = DT::BF16;
  c.cd = DT::F16;
  c.trans_a = false;
  c.trans_b = true;
  c.col_major_d = true;
  c.act = 3;
  run(c, 122102);
  c.batch = 2;
  c.M = 64;
  c.N = 64;
  c.K = 2048;
  c.col_major_d = false;
  c.with_c = false;
  c.beta = 0;
  run(c, 122103);
}

TEST_CASE("sm80 gemm: K = 0 writes act(beta C + bias)", "[gpu][gemm][sm80]") {
  for (int act = 0; act < 4; ++act) {
    Case c;
    c.M = 33;
    c.N = 300;
    c.K = 0;
    c.act = act;
    c.with_c = act != 1;
    c.beta = c.with_c ? 0.75f : 0.0f;
    c.with_bias = act != 2;
    c.ab = ab_by_index(act);
    c.cd = cd_by_index(act);
    run(c, 1230000 + uint64_t(act));
  }
}

TEST_CASE("sm80 gemm: every epilogue on every output dtype", "[gpu][gemm][sm80]") {
  int i = 0;
  for (int act = 0; act < 4; ++act)
    for (int with_c = 0; with_c < 2; ++with_c)
      for (int with_bias = 0; with_bias < 2; ++with_bias)
        for (int cd = 0; cd < 3; ++cd) {
          Case c;
          c.M = 150;
          c.N = 264;
          c.K = 72;
          c.ab = ab_by_index(i);
          c.cd = cd_by_index(cd);
          c.bias_dt = cd_by_index(cd + 1);
          c.act = act;
          c.with_c = with_c != 0;
          c.beta = c.with_c ? 1.0f : 0.0f;
          c.with_bias = with_bias != 0;
          c.alpha = 0.1f;
          run(c, 1240000 + uint64_t(i++));
        }
}

TEST_CASE("sm80 gemm: transposes and layouts through strides", "[gpu][gemm][sm80]") {
  int i = 0;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int dt = 0; dt < 2; ++dt) {
        Case c;
        c.M = 200;
        c.N = 300;
        c.K = 264;
        c.trans_a = ta != 0;
        c.trans_b = tb != 0;
        c.ab = ab_by_index(dt);
        c.cd = cd_by_index(i);
        c.with_c = true;
        c.beta = 0.5f;
        c.with_bias = true;
        c.act = 2;
        c.col_major_d = (i % 3) == 1;
        c.ld_pad = 16;
        run(c, 1250000 + uint64_t(i++));
      }
  Case c;  // a (M, K) column-major through its strides rather than trans_a
  c.M = 130;
  c.N = 250;
  c.K = 90;
  c.col_major_a = true;
  c.trans_b = true;
  c.with_bias = true;
  run(c, 125100);
}

TEST_CASE("sm80 gemm: strided batch and broadcast", "[gpu][gemm][sm80]") {
  Case c;
  c.batch = 3;
  c.M = 100;
  c.N = 65;
  c.K = 70;
  c.with_c = true;
  c.beta = 0.5f;
  c.with_bias = true;
  c.ld_pad = 8;
  run(c, 126000);
  c.broadcast_b = true;
  c.trans_b = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.bias_dt = DT::BF16;
  run(c, 126001);
  c.broadcast_b = false;
  c.trans_b = false;
  c.trans_a = true;
  c.col_major_d = true;
  c.ab = DT::BF16;
  c.cd = DT::F16;
  c.act = 3;
  run(c, 126002);
}

TEST_CASE("sm80 gemm: batch 65536 x (8 64 8) above the 65535 grid limit", "[gpu][gemm][sm80]") {
  Case c;
  c.batch = 65536;
  c.M = 8;
  c.N = 64;
  c.K = 8;
  c.with_bias = true;
  c.act = 1;
  run(c, 127000);
}

TEST_CASE("sm80 gemm: unaligned operands fall back and stay correct", "[gpu][gemm][sm80]") {
  // Leading dimensions of 9 and 41 elements (18 and 82 bytes): the cp.async path cannot take them.
  Case c;
  c.M = 70;
  c.N = 40;
  c.K = 7;
  c.eligible = false;
  c.ld_pad = 1;
  c.with_bias = true;
  run(c, 128000);
  // fp32 inputs are not the sm80 kernel's either.
  Case f;
  f.M = 65;
  f.N = 70;
  f.K = 33;
  f.ab = DT::F32;
  f.cd = DT::F32;
  f.eligible = false;
  run(f, 128001);
}

TEST_CASE("sm80 gemm: fp8 inputs and fk_gemm_scaled scales are declined", "[gpu][gemm][sm80]") {
  Case t;
  t.scaled = true;
  t.ab = DT::E4M3;
  t.M = 70;
  t.N = 90;
  t.K = 48;
  t.trans_b = true;
  t.scale_a = 2;
  t.scale_b = 1;
  t.eligible = false;
  run(t, 140900);
  Case h;
  h.scaled = true;
  h.ab = DT::BF16;
  h.M = 65;
  h.N = 130;
  h.K = 70;
  h.scale_a = 1;
  h.scale_b = 2;
  h.eligible = false;
  run(h, 140901);
}

TEST_CASE("sm80 gemm: non-default stream", "[gpu][gemm][sm80]") {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Case c;
  c.M = 300;
  c.N = 600;
  c.K = 520;
  c.with_bias = true;
  c.act = 2;
  c.stream = s;
  run(c, 129000);
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

#endif  // FLASHKIT_TEST_WITH_CUDA
