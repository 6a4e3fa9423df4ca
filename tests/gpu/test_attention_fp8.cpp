// fk_attention_fp8_forward on the CUDA backend, on every kernel family this device runs: against
// the float64 reference on the dequantised inputs, with a caller workspace of exactly the
// queried size, and the variant name. The dequantise-then-bf16 variants ("+fp8_dequant") also
// bit for bit against fk_attention_forward on the bf16-rounded dequantised tensors (same
// context); Hopper's fp8 tensor-core kernel ("cuda.sm90.attention_fp8", P rounded to e4m3)
// against the bound of that rounding instead, element by element: e4m3 rounds P within 2^-4
// of itself (normal values) or 2^-10 (below 2^-6), so |out - ref| <= (2^-4 sum_j P_j |v_j| +
// 2^-10 sum_j |v_j|) / l over the keys a row sees, plus bf16's output rounding; and its
// relative L2 error at most twice that of the same math done naively (the float64 reference
// with P rounded to e4m3, FlashAttention's rule). A max-error form of FlashAttention's rule
// was tried first and failed about one seed in 150 at head_dim 256 in a simulation of the
// kernel's arithmetic: there the running max may lag (softmax.cuh, kLazy), so P of a row's
// largest score is not always 1 and is rounded too, where the naive math keeps it exact.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention_fp8_case.hpp"
#include "flashkit/flashkit.h"
#include "gpu_test_util.hpp"

namespace {

using fktest::DT;
using fktest::Fp8AttnCase;
using fktest::HostTensor;
using fkgpu::DeviceTensor;

void check_close(const HostTensor& got, const std::vector<double>& ref, const char* what) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == ref.size());
  size_t unwritten = 0, inf_mismatch = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(g[i])) ++unwritten;
    if ((std::isinf(ref[i]) || std::isinf(g[i])) && g[i] != ref[i]) ++inf_mismatch;
  }
  const fktest::ErrorStats s = fktest::compare(g, ref);
  INFO(what << ": rel_l2 " << s.rel_l2 << " (tol " << fktest::rel_tol(DT::BF16) << "), max_abs "
            << s.max_abs << " (magnitude " << s.max_ref << "), unwritten " << unwritten
            << ", inf mismatches " << inf_mismatch << ", seed " << fktest::test_seed());
  CHECK(unwritten == 0);
  CHECK(inf_mismatch == 0);
  CHECK(s.rel_l2 <= fktest::rel_tol(DT::BF16));
  CHECK(s.max_abs <= 4 * fktest::rel_tol(DT::BF16) * std::max(1.0, s.max_ref));
}

constexpr const char* kNative = "cuda.sm90.attention_fp8";

// The fp8 kernel's out against the e4m3 rounding bound and FlashAttention's L2 rule (see the
// top of the file).
void check_fp8_rule(const Fp8AttnCase& c, const std::vector<double>& ref) {
  std::vector<double> naive, weighted, seen, unused;
  c.reference(naive, unused, Fp8AttnCase::e4m3_round);
  c.reference(weighted, unused, nullptr, true);  // sum_j P_j |v_j| / l
  c.reference(seen, unused, [](double p) { return p > 0 ? 1.0 : 0.0; }, true);  // sum_j |v_j| / l
  const std::vector<double> g = c.out.to_vector();
  REQUIRE(g.size() == ref.size());
  double mag = 0;
  for (double r : ref) mag = std::max(mag, std::fabs(r));
  size_t unwritten = 0, over = 0, first_over = 0;
  double worst = 0, sq = 0, sq_naive = 0, sq_ref = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!std::isfinite(g[i])) {
      ++unwritten;
      continue;
    }
    const double bound = std::ldexp(weighted[i], -4) + std::ldexp(seen[i], -10) +
                         std::ldexp(std::fabs(ref[i]), -8) + 1e-5 * std::max(1.0, mag);
    const double e = std::fabs(g[i] - ref[i]);
    if (e > bound && over++ == 0) first_over = i;
    worst = std::max(worst, e / bound);
    sq += (g[i] - ref[i]) * (g[i] - ref[i]);
    sq_naive += (naive[i] - ref[i]) * (naive[i] - ref[i]);
    sq_ref += ref[i] * ref[i];
  }
  const double rel = std::sqrt(sq / std::max(sq_ref, 1e-300));
  const double rel_naive = std::sqrt(sq_naive / std::max(sq_ref, 1e-300));
  INFO("fp8 kernel: " << over << " elements past the e4m3 bound (first: flat index " << first_over
                      << ", got " << g[first_over] << ", ref " << ref[first_over]
                      << "), worst error / bound " << worst << ", rel_l2 " << rel
                      << " vs naive e4m3 P " << rel_naive << ", non-finite " << unwritten
                      << ", seed " << fktest::test_seed());
  CHECK(unwritten == 0);
  CHECK(over == 0);
  CHECK(rel <= 2 * rel_naive + std::ldexp(1.0, -8));
}

// Runs `c` on `ctx` (through a caller workspace of exactly the queried size when `workspace`),
// then checks the reference and (dequantising variants) the bf16 equality. Returns the variant.
std::string run_case(Fp8AttnCase& c, const fk_context_t* ctx, bool workspace) {
  DeviceTensor q(c.q), k(c.k), v(c.v), dq(c.dq), dk(c.dk), dv(c.dv), out(c.out), lse(c.lse);
  std::unique_ptr<DeviceTensor> cq, ck;
  if (c.varlen()) {
    cq = std::make_unique<DeviceTensor>(c.cq);
    ck = std::make_unique<DeviceTensor>(c.ck);
  }
  const DLTensor* dcq = c.varlen() ? &*cq : nullptr;
  const DLTensor* dck = c.varlen() ? &*ck : nullptr;
  const DLTensor* ds[3] = {c.descales ? &dq : nullptr, c.descales ? &dk : nullptr,
                           c.descales ? &dv : nullptr};
  out.poison();
  lse.poison();

  const char* name = nullptr;
  REQUIRE_FK(fk_attention_fp8_select_kernel(ctx, &c.prm, &q, &k, &v, ds[0], ds[1], ds[2], dcq,
                                            dck, &out, &lse, &name));
  const char* inner = nullptr;
  uint64_t ws_bytes = 0;
  REQUIRE_FK(fk_attention_fp8_workspace_size(ctx, &c.prm, &q, &k, &v, ds[0], ds[1], ds[2], dcq,
                                             dck, &out, &lse, &ws_bytes));
  const bool native = std::string(name) == kNative;
  const uint64_t copies = uint64_t(c.q.numel() + 2 * c.k.numel()) * 2;
  // native: V transposed in the kernel (head_dim 128; 256 over short keys) nothing, or a
  // contiguous copy of a v off the copy engine's 16-byte rule; otherwise the V^T copy.
  if (native && fktest::fp8_vt_in_kernel(c) && (!c.v_padded || c.v_pad % 16 == 0)) {
    CHECK(ws_bytes == 0);
  } else {
    CHECK(ws_bytes >= (native ? uint64_t(c.v.numel()) : copies));
  }
  void* ws = nullptr;
  fk_launch_t launch;
  fk_launch_init(&launch);
  if (workspace) {
    REQUIRE_CUDA(cudaMalloc(&ws, ws_bytes + 1));
    launch.workspace = static_cast<char*>(ws) + 1;  // misaligned start: the arena aligns it
    launch.workspace_bytes = ws_bytes;
  }
  REQUIRE_FK(fk_attention_fp8_forward(ctx, &launch, &c.prm, &q, &k, &v, ds[0], ds[1], ds[2], dcq,
                                      dck, &out, &lse));
  out.download();
  lse.download();
  if (ws) REQUIRE_CUDA(cudaFree(ws));

  std::vector<double> ref_out, ref_lse;
  c.reference(ref_out, ref_lse);
  if (native) {
    check_fp8_rule(c, ref_out);
  } else {
    check_close(c.out, ref_out, "out");
  }
  check_close(c.lse, ref_lse, "lse");
  if (native) return name;

  // The same problem through fk_attention_forward on the bf16-rounded dequantised tensors.
  HostTensor qb = c.bf16_copy(c.q, c.dq, true), kb = c.bf16_copy(c.k, c.dk, false),
             vb = c.bf16_copy(c.v, c.dv, false);
  // out and lse in the fp8 call's layouts: the variant the dispatcher picks depends on them.
  HostTensor out2(DT::BF16, c.out.shape, c.out.strides), lse2(DT::F32, c.lse.shape, c.lse.strides);
  DeviceTensor qb_d(qb), kb_d(kb), vb_d(vb), out2_d(out2), lse2_d(lse2);
  out2_d.poison();
  lse2_d.poison();
  REQUIRE_FK(fk_attention_select_kernel(ctx, &c.prm, &qb_d, &kb_d, &vb_d, dcq, dck, &out2_d,
                                        &lse2_d, &inner));
  CHECK(std::string(name) == std::string(inner) + "+fp8_dequant");
  REQUIRE_FK(fk_attention_forward(ctx, nullptr, &c.prm, &qb_d, &kb_d, &vb_d, dcq, dck, &out2_d,
                                  &lse2_d));
  out2_d.download();
  lse2_d.download();
  const std::vector<double> a = c.out.to_vector(), b = out2.to_vector();
  const std::vector<double> la = c.lse.to_vector(), lb = lse2.to_vector();
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += !(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])));
  for (size_t i = 0; i < la.size(); ++i) differ += !(la[i] == lb[i]);
  INFO("variant " << name << ", workspace " << workspace << ", " << differ << " of "
                    << a.size() + la.size() << " values differ");
  CHECK(differ == 0);
  return name;
}

}  // namespace

TEST_CASE("gpu attention fp8: each kernel family, against the reference and the bf16 call",
          "[gpu][attention][fp8]") {
  for (auto [fam, ctx] : fkgpu::available_families()) {
    uint64_t tag = 8100;
    for (int mode = 0; mode < 8; ++mode) {
      Fp8AttnCase c;
      switch (mode) {
        case 0: c.head_dim = 128; c.seqlen_q = 200; c.seqlen_k = 333; break;
        case 1: c.head_dim = 64; c.seqlen_q = 129; c.seqlen_k = 129; c.prm.causal = 1; break;
        case 2: c.head_dim = 72; c.padded = true; break;  // strided: one code per thread
        case 3: c.head_dim = 256; c.seqlen_q = 65; c.seqlen_k = 300; c.nheads_k = 1; break;
        case 4: c.cu_q = {0, 70, 70, 250, 251}; c.cu_k = {0, 90, 130, 300, 301}; c.head_dim = 128; break;
        case 5: c.seqlen_q = 1; c.seqlen_k = 500; c.nheads = 8; c.nheads_k = 2; c.head_dim = 128; break;  // GQA decode (packed)
        case 6: c.descales = false; c.head_dim = 40; break;  // 8 codes per thread
        case 7: c.seqlen_k = 0; c.head_dim = 64; break;  // no keys: no k/v copies, out 0
      }
      auto rng = fkgpu::rng_for(++tag);
      c.build(rng);
      if (mode == 1) c.prm.causal = 1;
      if (mode == 2) {
        c.prm.window_size_left = 17;
        c.prm.window_size_right = 5;
        c.prm.softcap = 12.0f;
      }
      if (mode == 4) c.prm.causal = 1;
      DYNAMIC_SECTION(fam << " mode " << mode) {
        INFO(fam << " mode " << mode);
        run_case(c, ctx, mode % 2 == 0 || mode == 7);
      }
    }
  }
}

TEST_CASE("gpu attention fp8: captured into a CUDA graph and replayed", "[gpu][attention][fp8][graph]") {
  for (auto [fam, ctx] : fkgpu::available_families()) {
    for (bool workspace : {false, true}) {
      Fp8AttnCase c;
      c.head_dim = 128;
      c.seqlen_q = 150;
      c.seqlen_k = 260;
      auto rng = fkgpu::rng_for(8300);
      c.build(rng);
      c.prm.causal = 1;
      DYNAMIC_SECTION(fam << (workspace ? ", caller workspace" : ", stream-ordered scratch")) {
        cudaStream_t s = nullptr;
        REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        DeviceTensor q(c.q), k(c.k), v(c.v), dq(c.dq), dk(c.dk), dv(c.dv), out(c.out), lse(c.lse);
        uint64_t ws_bytes = 0;
        REQUIRE_FK(fk_attention_fp8_workspace_size(ctx, &c.prm, &q, &k, &v, &dq, &dk, &dv,
                                                   nullptr, nullptr, &out, &lse, &ws_bytes));
        void* ws = nullptr;
        if (workspace) REQUIRE_CUDA(cudaMalloc(&ws, ws_bytes));
        fk_launch_t launch;
        fk_launch_init(&launch);
        launch.stream = s;
        launch.workspace = ws;
        launch.workspace_bytes = workspace ? ws_bytes : 0;
        auto call = [&] {
          return fk_attention_fp8_forward(ctx, &launch, &c.prm, &q, &k, &v, &dq, &dk, &dv,
                                          nullptr, nullptr, &out, &lse);
        };
        out.poison();
        REQUIRE_FK(call());  // outside the capture first, as a server's warm-up
        out.download();
        const std::vector<double> direct = c.out.to_vector();
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        REQUIRE_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        const fk_status_t st = call();
        const std::string msg = fk_get_last_error_message();
        REQUIRE_CUDA(cudaStreamEndCapture(s, &graph));
        INFO("under capture: " << fk_status_string(st) << ": " << msg);
        REQUIRE(st == FK_SUCCESS);
        REQUIRE_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        for (int replay = 0; replay < 2; ++replay) {
          out.poison();
          REQUIRE_CUDA(cudaGraphLaunch(exec, s));
          REQUIRE_CUDA(cudaStreamSynchronize(s));
          out.download();
          const std::vector<double> got = c.out.to_vector();
          size_t differ = 0;
          for (size_t i = 0; i < got.size(); ++i) differ += !(got[i] == direct[i]);
          INFO("replay " << replay);
          CHECK(differ == 0);
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        if (ws) REQUIRE_CUDA(cudaFree(ws));
        cudaStreamDestroy(s);
      }
    }
  }
}

// The Hopper fp8 kernel where the dispatcher gives it the call (AUTO), and the calls it leaves
// to the dequantising path there: head_dim 128 multi-tile causal, bottom-right causal with
// seqlen_q < seqlen_k, GQA and MQA, sliding windows, decode, key counts off the 16-key groups,
// NULL descales; head_dim 256 with V transposed in the kernel and with the V^T pass (many query
// rows per key: GQA, a left window); v off the copy engine's 16-byte rule at both head dims (the
// in-kernel transposition then reads a contiguous copy of it, from a caller workspace), and a v
// with its own 16-byte strides (read directly). Strided q/k off that rule,
// softcap, a negative scale, head_dim 96 and head_dim 64 (faster dequantised) go to
// "+fp8_dequant".
TEST_CASE("gpu attention fp8: Hopper fp8 tensor-core kernel", "[gpu][attention][fp8][fp8native]") {
  const fk_context_t* ctx = fkgpu::auto_context();
  int dev = 0, major = 0, minor = 0;
  REQUIRE_CUDA(cudaGetDevice(&dev));
  REQUIRE_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  REQUIRE_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  const bool hopper = major == 9 && minor == 0;
  const char* env = std::getenv("FLASHKIT_ATTENTION_FP8_DEQUANT");
  const bool forced_off = env != nullptr && std::string(env) == "1";
  uint64_t tag = 8400;
  for (int mode = 0; mode < 23; ++mode) {
    Fp8AttnCase c;
    c.head_dim = 128;
    bool expect_native = true;
    switch (mode) {
      case 0: c.batch = 2; c.seqlen_q = 1000; c.seqlen_k = 1000; c.nheads = 4; c.nheads_k = 4; break;
      case 1: c.batch = 2; c.seqlen_q = 300; c.seqlen_k = 1111; c.nheads = 8; c.nheads_k = 2; break;
      case 2: c.batch = 1; c.seqlen_q = 700; c.seqlen_k = 700; c.nheads = 6; c.nheads_k = 1; break;
      case 3: c.batch = 3; c.seqlen_q = 1; c.seqlen_k = 4097; c.nheads = 8; c.nheads_k = 1; break;
      case 4: c.batch = 2; c.seqlen_q = 129; c.seqlen_k = 17; c.descales = false; break;
      case 5: c.batch = 1; c.seqlen_q = 2048; c.seqlen_k = 2048; c.nheads = 2; c.nheads_k = 1; break;
      case 6: c.padded = true; expect_native = false; break;  // strides off the 16-byte rule
      case 7: expect_native = false; break;                   // softcap
      case 8: expect_native = false; break;                   // negative softmax_scale
      case 9: c.head_dim = 96; expect_native = false; break;  // head dims other than 64/128/256
      case 10: c.batch = 2; c.seqlen_q = 500; c.seqlen_k = 700; c.head_dim = 64; expect_native = false; break;
      case 12: c.batch = 2; c.seqlen_q = 300; c.seqlen_k = 200; c.head_dim = 64; expect_native = false; break;
      case 13: c.batch = 3; c.seqlen_q = 200; c.seqlen_k = 300; break;  // negative and zero descales
      // 14 and 15 kept small: the float64 reference and the e4m3 bound run on one host core,
      // and with them at (2, 333, 777, 4 heads) / (2, 257, 600) the suite's shard holding this
      // case passed its 400 s limit on the H200 (session 42).
      case 14: c.batch = 1; c.seqlen_q = 200; c.seqlen_k = 450; c.nheads = 4; c.nheads_k = 2; c.head_dim = 256; break;
      case 15: c.batch = 1; c.seqlen_q = 257; c.seqlen_k = 600; c.nheads = 4; c.nheads_k = 2; break;  // e4m3's range
      case 11: c.batch = 1; c.seqlen_q = 300; c.seqlen_k = 519; c.nheads = 4; c.nheads_k = 1; c.head_dim = 256; break;
      case 16: c.batch = 2; c.seqlen_q = 300; c.seqlen_k = 333; c.v_padded = true; break;  // v copied first
      case 17: c.batch = 1; c.seqlen_q = 100; c.seqlen_k = 150; c.head_dim = 256; c.v_padded = true; break;
      case 18:  // v's own strides (padded by 16: still the copy engine's rule), read directly
        c.batch = 2; c.seqlen_q = 150; c.seqlen_k = 290; c.v_padded = true; c.v_pad = 16; break;
      // head_dim 256 where each key is read by many query rows (1024 here): the V^T pass (the
      // head_dim 256 cases above transpose in the kernel), its 16-byte form and its byte-wise
      // form with a strided v.
      case 19: c.batch = 1; c.seqlen_q = 200; c.seqlen_k = 300; c.nheads = 4; c.nheads_k = 1; c.head_dim = 256; break;
      case 20: c.batch = 1; c.seqlen_q = 100; c.seqlen_k = 200; c.nheads = 8; c.nheads_k = 1; c.head_dim = 256; c.v_padded = true; break;
      // descale_q x descale_k = 2^129 overflows fp32 while softmax_scale x descale_q x
      // descale_k = 2^3 does not: the kernel forms (scale * descale_q) * descale_k. Native
      // kernel only: the dequantise path forms q.k of the dequantised values first, which
      // overflows here (flashkit.h's softmax_scale note).
      case 21: c.batch = 1; c.seqlen_q = 200; c.seqlen_k = 300; c.nheads = 4; c.nheads_k = 2; break;
      // Causal with a wave of pairs (132 heads x one pair of query tiles): the Hopper kernels
      // number such tiles in pairs of equal work (attention_sm90.cpp, AttnArgs::pairs).
      case 22: c.batch = 1; c.seqlen_q = 256; c.seqlen_k = 256; c.nheads = 132; c.nheads_k = 33; break;
    }
    if (mode == 21 && (!hopper || forced_off)) continue;
    auto rng = fkgpu::rng_for(++tag);
    c.build(rng);
    if (mode == 0 || mode == 1 || mode == 5 || mode == 10 || mode == 14 || mode == 22)
      c.prm.causal = 1;
    if (mode == 15) {
      // Values across e4m3's whole range (tails saturate at 448), small factors: the raw
      // scores reach ~1e5-1e6 before the scale, the probabilities stay well spread.
      c.q.fill_normal(rng, 150.0);
      c.k.fill_normal(rng, 150.0);
      c.v.fill_normal(rng, 150.0);
      for (HostTensor* d : {std::addressof(c.dq), std::addressof(c.dk), std::addressof(c.dv)})
        d->fill_uniform(rng, 1.0 / 512, 1.0 / 128);
    }
    if (mode == 21) {
      c.q.fill_normal(rng, 0.25);
      c.k.fill_normal(rng, 0.25);
      c.dq.for_each([&](const std::vector<int64_t>& i) { c.dq.set(i, std::ldexp(1.0, 70)); });
      c.dk.for_each([&](const std::vector<int64_t>& i) { c.dk.set(i, std::ldexp(1.0, 59)); });
      c.prm.softmax_scale = std::ldexp(1.0f, -126);
    }
    if (mode == 11) c.prm.window_size_left = 100;
    if (mode == 2) {
      c.prm.window_size_left = 64;
      c.prm.window_size_right = 16;
    }
    if (mode == 7) c.prm.softcap = 20.0f;
    if (mode == 8) c.prm.softmax_scale = -0.05f;
    if (mode == 13) {  // sequence 0: descale_q < 0; sequence 1: descale_k = 0; sequence 2: both < 0
      for (int64_t g = 0; g < c.nheads_k; ++g) {
        c.dq.set({0, g}, -c.dq.get({0, g}));
        c.dk.set({1, g}, 0.0);
        c.dq.set({2, g}, -c.dq.get({2, g}));
        c.dk.set({2, g}, -c.dk.get({2, g}));
      }
    }
    if (c.head_dim == 256) {  // the V^T source each head_dim 256 mode covers by default:
      // 14 and 17 transposed in the kernel (~470 and 256 query rows read each key), 11 (a left
      // window, ~800), 19 and 20 (1024) the pass.
      const char* e = std::getenv("FLASHKIT_SM90_FP8_VT");
      if (e == nullptr || (e[0] != '0' && e[0] != '2')) CHECK(fktest::fp8_vt_in_kernel(c) == (mode == 14 || mode == 17));
    }
    DYNAMIC_SECTION("mode " << mode) {
      INFO("mode " << mode);
      const std::string name = run_case(c, ctx, mode % 2 == 1 || mode == 16);
      if (hopper && !forced_off) {
        CHECK((name == kNative) == expect_native);
      } else {
        CHECK(name != kNative);
      }
    }
  }
}

TEST_CASE("gpu attention fp8: small case", "[gpu][attention][fp8][sanitize]") {
  for (auto [fam, ctx] : fkgpu::available_families()) {
    Fp8AttnCase c;
    c.batch = 2;
    c.seqlen_q = 5;
    c.seqlen_k = 9;
    c.head_dim = 36;  // not a multiple of 8: the one-code-per-thread dequantisation
    auto rng = fkgpu::rng_for(8200);
    c.build(rng);
    DYNAMIC_SECTION(fam) { run_case(c, ctx, true); }
    // head_dim 128, causal: the fp8 tensor-core kernel on Hopper (SM90 and AUTO); 300 keys:
    // three key tiles, so the raw V and V^T rings wrap and flip phase.
    Fp8AttnCase n;
    n.batch = 2;
    n.seqlen_q = 70;
    n.seqlen_k = 300;
    n.head_dim = 128;
    auto rng2 = fkgpu::rng_for(8201);
    n.build(rng2);
    n.prm.causal = 1;
    DYNAMIC_SECTION(fam << ", head_dim 128") { run_case(n, ctx, false); }
    // head_dim 256, v off the 16-byte rule: 2 query heads over 70 keys, transposed in the
    // kernel from a contiguous copy of v; 8 query heads to one kv head (1024 query rows read
    // each key), the V^T pass's byte-wise form.
    struct Strided {
      int64_t seqlen_k, nheads, nheads_k;
      uint64_t seed;
      const char* label;
    };
    for (const Strided& sv : {Strided{70, 4, 2, 8202, ""}, Strided{64, 8, 1, 8203, ", GQA 8:1"}}) {
      Fp8AttnCase v;
      v.batch = 1;
      v.seqlen_q = 30;
      v.seqlen_k = sv.seqlen_k;
      v.nheads = sv.nheads;
      v.nheads_k = sv.nheads_k;
      v.head_dim = 256;
      v.v_padded = true;
      auto rng3 = fkgpu::rng_for(sv.seed);
      v.build(rng3);
      DYNAMIC_SECTION(fam << ", head_dim 256, strided v" << sv.label) { run_case(v, ctx, true); }
    }
  }
}

#endif  // FLASHKIT_TEST_WITH_CUDA
