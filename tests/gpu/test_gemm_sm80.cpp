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
fkgemm::Target target() {
  return {fkgpu::context_for(FK_KERNEL_FAMILY_SM80), "cuda.sm80.gemm", expect_sm80()};
}
void run(const Case& c, uint64_t tag) { fkgemm::run(c, tag, target()); }

}  // namespace

TEST_CASE("sm80 gemm: M N K in {1 7 127 129} with every transpose dtype and epilogue",
          "[gpu][gemm][sm80]") {
  fkgemm::cases_small_extents(target(), 1000000);
}

TEST_CASE("sm80 gemm: extents of 4097 (many tiles and tails in both raster orders)", "[gpu][gemm][sm80]") {
  fkgemm::cases_4097_extents(target(), 1000000);
}

TEST_CASE("sm80 gemm: more tiles than SMs (big tiles, grouped raster)", "[gpu][gemm][sm80]") {
  fkgemm::cases_many_tiles(target(), 40, 122000);
}

TEST_CASE("sm80 gemm: big tiles over several k-tiles (whole-tile copies, then the K tail)",
          "[gpu][gemm][sm80]") {
  // 9 x 17 big tiles (>= one per SM), K = 4 x 64 + 8: interior tiles copy their first whole
  // k-tiles without bounds work, then the bounds-checked path covers the tail; the last tile
  // row and column take the bounds-checked path throughout. K-major B keeps the float64
  // reference fast.
  Case c;
  c.M = 1100;
  c.N = 4097;
  c.K = 264;
  c.trans_b = true;
  c.ab = DT::BF16;
  c.cd = DT::BF16;
  c.with_bias = true;
  c.with_c = true;
  c.beta = 0.25f;
  run(c, 122600);
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
  fkgemm::cases_split_k(target(), 1000000);
}

TEST_CASE("sm80 gemm: K = 0 writes act(beta C + bias)", "[gpu][gemm][sm80]") {
  fkgemm::cases_k0(target(), 1000000);
}

TEST_CASE("sm80 gemm: every epilogue on every output dtype", "[gpu][gemm][sm80]") {
  fkgemm::cases_epilogues(target(), 1000000);
}

TEST_CASE("sm80 gemm: transposes and layouts through strides", "[gpu][gemm][sm80]") {
  fkgemm::cases_layouts(target(), 1000000);
}

TEST_CASE("sm80 gemm: strided batch and broadcast", "[gpu][gemm][sm80]") {
  fkgemm::cases_batch(target(), 1000000);
}

TEST_CASE("sm80 gemm: batch 65536 x (8 64 8) above the 65535 grid limit", "[gpu][gemm][sm80]") {
  fkgemm::cases_batch_65536(target(), 1000000);
}

TEST_CASE("sm80 gemm: unaligned operands fall back and stay correct", "[gpu][gemm][sm80]") {
  fkgemm::cases_unaligned(target(), 1000000);
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
  fkgemm::cases_stream(target(), 1000000);
}

#endif  // FLASHKIT_TEST_WITH_CUDA
