// GPU suite: attention, GEMM and FFT convolution through the public C ABI on a CUDA context
// (Monarch: test_monarch.cpp), against the float64 reference (tests/reference/reference.hpp),
// on fresh random inputs plus the edge cases each op documents. Each output buffer is poisoned (0xFF bytes: NaN in every float dtype) on the device
// before the call, so an element the kernel forgot reads back as NaN, and padding between
// logical elements must come back still poisoned.
//
// The kernel family is the context's default (AUTO); run with FLASHKIT_KERNEL_FAMILY=generic,
// sm80 or sm90 to pin one. Small cases carry the tag [sanitize] so that
//   compute-sanitizer --tool memcheck flashkit_tests_gpu "[sanitize]"
// stays quick. Failures print the op, shapes, dtype, the variant that ran, the errors and the
// seed (FLASHKIT_TEST_SEED reproduces a run).
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "reference/reference.hpp"
#include "gpu_test_util.hpp"
#include "test_util.hpp"

namespace {

using fktest::DT;
using fktest::HostTensor;
using fkgpu::DeviceTensor;
using fkgpu::padded;
using fkgpu::rng_for;
using fkgpu::shape_str;

// The CUDA context every case uses (device 0), created once.
const fk_context_t* gpu() { return fkgpu::auto_context(); }

// Tolerances: outputs are rounded once to their dtype (half an ulp: 2^-24, 2^-11, 2^-8
// relative) on top of fp32 arithmetic; the bounds leave room for the fp32 accumulation.
double tol(DT t) {
  switch (t) {
    case DT::F32: return 2e-5;
    case DT::F16: return 2e-3;
    case DT::BF16: return 1.6e-2;
    default: return 0;
  }
}

// Checks `got` against `ref`: every element written (no NaN from the poison), padding bytes
// untouched, |got - ref| <= tol * slack * (|scale_i| + rms(scale)) elementwise, and relative L2
// error <= tol * slack. `scale` is the magnitude rounding errors are proportional to (for a
// GEMM sum |a||b|, since a cancelling dot product keeps its terms' error); defaults to |ref|.
void check_output(const HostTensor& got, const std::vector<double>& ref, DT dt,
                  const std::string& what, double slack = 1.0,
                  const std::vector<double>* scale = nullptr) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == ref.size());
  const std::vector<double>& sc = scale ? *scale : ref;
  double sum_sc = 0, num = 0, den = 0, max_err = 0;
  int64_t n_finite = 0, unwritten = 0, inf_mismatch = 0, worst = -1;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(g[i])) {
      ++unwritten;
      continue;
    }
    if (std::isinf(ref[i]) || std::isinf(g[i])) {
      if (g[i] != ref[i]) ++inf_mismatch;
      continue;
    }
    sum_sc += sc[i] * sc[i];
    ++n_finite;
  }
  const double rms = n_finite ? std::sqrt(sum_sc / double(n_finite)) : 0.0;
  int64_t bad = 0;
  const double t = tol(dt) * slack;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(g[i]) || std::isinf(ref[i]) || std::isinf(g[i])) continue;
    const double e = std::fabs(g[i] - ref[i]);
    num += e * e;
    den += ref[i] * ref[i];
    if (e > max_err) {
      max_err = e;
      worst = int64_t(i);
    }
    if (e > t * (std::fabs(sc[i]) + rms) + 1e-30) ++bad;
  }
  // Relative L2 against the larger of |ref| and sqrt(tol) times the rounding scale: an output
  // that cancels to a small fraction of its terms (one element, GELU of a large negative value)
  // has no meaningful relative error of its own, while its error is still bounded by the scale
  // of the terms summed. (Seen on the H200: fp32 GEMM M = N = 1, K = 129, sum |a||b| = 72.8,
  // ref 0.094, error 1.9e-6 = 2.7e-8 of the scale, which is fp32's own accumulation rounding,
  // yet 2.07e-5 of |ref|, over tol 2e-5.) Without an explicit scale, sc is ref and this floor
  // is tol * |ref|^2 < |ref|^2: no effect.
  const double den_floor = sum_sc * t;
  const double rel = std::sqrt(num / std::max(den, std::max(den_floor, 1e-300)));

  // Padding: bytes outside the logical elements must still hold the poison.
  std::vector<char> logical(got.bytes.size(), 0);
  const int eb = fktest::dt_bytes(got.dtype);
  got.for_each([&](const std::vector<int64_t>& idx) {
    const int64_t off = got.offset(idx) * eb;
    for (int b = 0; b < eb; ++b) logical[size_t(off + b)] = 1;
  });
  int64_t touched = 0;
  for (size_t b = 0; b < got.bytes.size(); ++b)
    if (!logical[b] && got.bytes[b] != 0xFF) ++touched;

  INFO(what << " [" << fktest::dt_name(dt) << ", shape " << shape_str(got.shape) << "]: "
            << unwritten << " unwritten (NaN), " << inf_mismatch << " inf mismatches, "
            << touched << " padding bytes written, rel_l2 " << rel << " (tol " << t
            << "), max_abs " << max_err << " at flat index " << worst << " (got "
            << (worst >= 0 ? g[size_t(worst)] : 0.0) << ", ref "
            << (worst >= 0 ? ref[size_t(worst)] : 0.0) << "), " << bad
            << " elements over the elementwise bound, rms magnitude " << rms << ", seed "
            << fktest::test_seed());
  CHECK(unwritten == 0);
  CHECK(inf_mismatch == 0);
  CHECK(touched == 0);
  CHECK(rel <= t);
  CHECK(bad == 0);
}

DT dtype_by_index(int i) {
  static const DT kTypes[] = {DT::F32, DT::F16, DT::BF16};
  return kTypes[((i % 3) + 3) % 3];
}

// =============================================================================================
// Attention
// =============================================================================================

struct AttnCase {
  int64_t batch = 1, seqlen_q = 1, seqlen_k = 1, nheads = 1, nheads_k = 1, head_dim = 64;
  DT dtype = DT::F32;
  bool causal = false;
  int64_t window_left = -1, window_right = -1;
  float softcap = 0;
  float softmax_scale = NAN;
  int64_t pad = 0;  // padding of every non-last dimension of q, k, v, out
  bool with_lse = true;
  bool zero_first_q_row = false;  // q[b, 0, h, :] = 0: every score of that row is exactly 0
  const fk_context_t* ctx = nullptr;  // nullptr: the AUTO-family context
  cudaStream_t stream = nullptr;
};

std::string describe(const AttnCase& c) {
  std::ostringstream o;
  o << "attention b" << c.batch << " sq" << c.seqlen_q << " sk" << c.seqlen_k << " h"
    << c.nheads << "/" << c.nheads_k << " d" << c.head_dim << " " << fktest::dt_name(c.dtype)
    << (c.causal ? " causal" : "") << " window(" << c.window_left << "," << c.window_right
    << ") softcap " << c.softcap << " scale " << c.softmax_scale << " pad " << c.pad;
  return o.str();
}

fkref::AttentionParams ref_params(const AttnCase& c) {
  fkref::AttentionParams p;
  p.softmax_scale = c.softmax_scale;
  p.causal = c.causal;
  p.window_left = c.window_left;
  p.window_right = c.window_right;
  p.softcap = c.softcap;
  return p;
}

fk_attention_params_t fk_params(const AttnCase& c) {
  fk_attention_params_t p;
  fk_attention_params_init(&p);
  p.softmax_scale = c.softmax_scale;
  p.causal = c.causal ? 1 : 0;
  p.window_size_left = int32_t(c.window_left);
  p.window_size_right = int32_t(c.window_right);
  p.softcap = c.softcap;
  return p;
}

void run_attention(const AttnCase& c, uint64_t tag) {
  INFO(describe(c));
  const fk_context_t* ctx = c.ctx != nullptr ? c.ctx : gpu();
  auto rng = rng_for(tag);
  const std::vector<int64_t> qs{c.batch, c.seqlen_q, c.nheads, c.head_dim};
  const std::vector<int64_t> ks{c.batch, c.seqlen_k, c.nheads_k, c.head_dim};
  HostTensor q(c.dtype, qs, padded(qs, c.pad)), k(c.dtype, ks, padded(ks, c.pad)),
      v(c.dtype, ks, padded(ks, c.pad)), out(c.dtype, qs, padded(qs, c.pad));
  const std::vector<int64_t> ls{c.batch, c.nheads, c.seqlen_q};
  HostTensor lse(DT::F32, ls, padded(ls, c.pad));
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  if (c.zero_first_q_row)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.nheads; ++h)
        for (int64_t d = 0; d < c.head_dim; ++d) q.set({b, 0, h, d}, 0.0);

  DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse);
  dout.poison();
  dlse.poison();
  const fk_attention_params_t params = fk_params(c);
  const char* variant = "?";
  REQUIRE_FK(fk_attention_select_kernel(ctx, &params, &dq, &dk, &dv, nullptr, nullptr, &dout,
                                        c.with_lse ? &dlse : nullptr, &variant));
  INFO("variant " << variant);
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = c.stream;
  REQUIRE_FK(fk_attention_forward(ctx, &launch, &params, &dq, &dk, &dv, nullptr, nullptr,
                                  &dout, c.with_lse ? &dlse : nullptr));
  if (c.stream) REQUIRE_CUDA(cudaStreamSynchronize(c.stream));
  dout.download();
  dlse.download();

  std::vector<double> ref_out, ref_lse;
  fkref::attention(q.to_vector(), k.to_vector(), v.to_vector(), c.batch, c.seqlen_q, c.seqlen_k,
                   c.nheads, c.nheads_k, c.head_dim, ref_params(c), ref_out, ref_lse);
  // Tensor-core variants round the probabilities P to the input dtype before P V, as
  // FlashAttention-2 does (Dao 2023, Section 3.1), which adds one rounding of relative size
  // eps(dtype) per output on top of the rounding of the result itself: allow twice the bound
  // the generic kernel (P kept in fp32) is held to. The FlashAttention tolerance rule for these
  // variants is checked in test_attention_sm80.cpp.
  const bool p_rounded = c.dtype != DT::F32 && std::string(variant).find("generic") == std::string::npos;
  check_output(out, ref_out, c.dtype, "attention out", p_rounded ? 2.0 : 1.0);
  if (c.with_lse) {
    check_output(lse, ref_lse, DT::F32, "attention lse", 5.0);
  } else {
    CHECK(lse.all_poison());
  }
}

TEST_CASE("gpu attention: head dims x sequence lengths x masks", "[gpu][attention]") {
  const int64_t head_dims[] = {32, 64, 72, 96, 128, 160, 256};
  const int64_t seqlens[][2] = {{1, 1}, {113, 203}, {128, 217}, {239, 1}, {1023, 1024}};
  int i = 0;
  for (int64_t d : head_dims) {
    for (const auto& sl : seqlens) {
      AttnCase c;
      c.seqlen_q = sl[0];
      c.seqlen_k = sl[1];
      c.head_dim = d;
      c.dtype = dtype_by_index(i);
      // Rotate the masking features so that every head dim meets each of them.
      switch (i % 5) {
        case 0: break;
        case 1: c.causal = true; break;
        case 2: c.window_left = 37; c.window_right = 5; break;
        case 3: c.causal = true; c.softcap = 5.0f; c.softmax_scale = 0.5f; break;
        case 4: c.window_left = 0; c.window_right = -1; c.nheads = 4; c.nheads_k = 2; break;
      }
      const bool big = sl[0] * sl[1] > 1000000;
      c.nheads = big ? 1 : std::max<int64_t>(c.nheads, 2);
      if (c.nheads % c.nheads_k) c.nheads_k = 1;
      c.batch = big ? 1 : 2;
      c.pad = (i % 2) ? 3 : 0;
      run_attention(c, 1000 + uint64_t(i));
      ++i;
    }
  }
}

// Two host threads share one context and run one kernel with different dynamic shared-memory
// sizes: generic attention's head_dim-256 build serves head_dim 160 (51,840 bytes) and 256
// (82,944). Each call used to set the kernel's shared-memory limit to its own size, so one
// thread could lower it between the other's set and launch, and that launch failed; the limit
// is now only ever raised (raise_dynamic_smem_limit). Every call must succeed, and the last
// output of each thread must match the float64 reference.
TEST_CASE("gpu attention: concurrent calls with different shared-memory sizes",
          "[gpu][attention][threads]") {
  const fk_context_t* ctx = fkgpu::context_for(FK_KERNEL_FAMILY_GENERIC);
  REQUIRE(ctx != nullptr);
  fk_context_info_t info;
  fk_context_info_init(&info);
  REQUIRE_FK(fk_context_get_info(ctx, &info));
  if (info.smem_per_block_optin < 82944) {
    WARN("generic attention at head_dim 256 does not fit this GPU's shared memory: skipped");
    return;
  }
  struct Job {
    int64_t head_dim;
    HostTensor q, k, v, out;
    std::unique_ptr<DeviceTensor> dq, dk, dv, dout;
    cudaStream_t stream = nullptr;
    int failures = 0;
    std::string first_error;
  };
  const int64_t B = 2, S = 96, H = 2;
  std::vector<std::unique_ptr<Job>> jobs;
  auto rng = rng_for(38000);
  for (int64_t d : {160, 256}) {
    const std::vector<int64_t> shape{B, S, H, d};
    auto j = std::unique_ptr<Job>(new Job{d, HostTensor(DT::BF16, shape), HostTensor(DT::BF16, shape),
                                          HostTensor(DT::BF16, shape), HostTensor(DT::BF16, shape)});
    j->q.fill_normal(rng);
    j->k.fill_normal(rng);
    j->v.fill_normal(rng);
    j->dq.reset(new DeviceTensor(j->q));
    j->dk.reset(new DeviceTensor(j->k));
    j->dv.reset(new DeviceTensor(j->v));
    j->dout.reset(new DeviceTensor(j->out));
    j->dout->poison();
    REQUIRE_CUDA(cudaStreamCreateWithFlags(&j->stream, cudaStreamNonBlocking));
    jobs.push_back(std::move(j));
  }
  fk_attention_params_t params;
  fk_attention_params_init(&params);
  params.causal = 1;
  const int kCalls = 400;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (auto& jp : jobs) {
    Job* j = jp.get();
    threads.emplace_back([&params, &ready, ctx, j] {
      fk_launch_t launch;
      fk_launch_init(&launch);
      launch.stream = j->stream;
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();  // start together
      for (int i = 0; i < kCalls; ++i) {
        const fk_status_t st = fk_attention_forward(ctx, &launch, &params, &*j->dq, &*j->dk,
                                                    &*j->dv, nullptr, nullptr, &*j->dout, nullptr);
        if (st != FK_SUCCESS && j->failures++ == 0) j->first_error = fk_get_last_error_message();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& jp : jobs) {
    Job& j = *jp;
    INFO("head_dim " << j.head_dim << ": " << j.failures << " of " << kCalls
                     << " calls failed; first: " << j.first_error);
    CHECK(j.failures == 0);
    REQUIRE_CUDA(cudaStreamSynchronize(j.stream));
    REQUIRE_CUDA(cudaStreamDestroy(j.stream));
    j.dout->download();
    std::vector<double> ref_out, ref_lse;
    fkref::AttentionParams rp;
    rp.causal = true;
    fkref::attention(j.q.to_vector(), j.k.to_vector(), j.v.to_vector(), B, S, S, H, H,
                     j.head_dim, rp, ref_out, ref_lse);
    check_output(j.out, ref_out, DT::BF16, "attention out (last of the concurrent calls)", 1.0);
  }
}

TEST_CASE("gpu attention: every dtype with causal masks", "[gpu][attention]") {
  int i = 0;
  for (DT dt : {DT::F32, DT::F16, DT::BF16}) {
    for (int64_t d : {int64_t(1), int64_t(8), int64_t(33), int64_t(128), int64_t(200)}) {
      AttnCase c;
      c.batch = 2;
      c.seqlen_q = 77;
      c.seqlen_k = 150;
      c.nheads = 3;
      c.nheads_k = 3;
      c.head_dim = d;
      c.dtype = dt;
      c.causal = (i % 2) == 0;
      run_attention(c, 2000 + uint64_t(i++));
    }
  }
}

TEST_CASE("gpu attention: fully masked rows give zeros and lse -inf", "[gpu][attention][sanitize]") {
  // seqlen_q > seqlen_k with a causal mask: bottom-right alignment leaves the first
  // seqlen_q - seqlen_k rows without any key.
  AttnCase c;
  c.batch = 2;
  c.seqlen_q = 40;
  c.seqlen_k = 9;
  c.nheads = 2;
  c.head_dim = 16;
  c.causal = true;
  run_attention(c, 3000);
  // A sliding window (2, 0) with seqlen_q > seqlen_k: rows whose window lies left of key 0
  // see nothing.
  c.causal = false;
  c.window_left = 2;
  c.window_right = 0;
  c.dtype = DT::BF16;
  run_attention(c, 3001);
  // seqlen_k = 0: k and v are empty, every row sees no key.
  c.window_left = c.window_right = -1;
  c.seqlen_k = 0;
  c.dtype = DT::F16;
  run_attention(c, 3002);
}

TEST_CASE("gpu attention: windows, softcap, scale", "[gpu][attention]") {
  const int64_t windows[][2] = {{0, 0}, {16, 16}, {-1, 3}, {100, -1}, {1, 1000}};
  int i = 0;
  for (const auto& w : windows) {
    AttnCase c;
    c.batch = 1;
    c.seqlen_q = 300;
    c.seqlen_k = 257;
    c.nheads = 2;
    c.head_dim = 64;
    c.window_left = w[0];
    c.window_right = w[1];
    c.dtype = dtype_by_index(i);
    c.softcap = (i % 2) ? 20.0f : 0.0f;
    c.softmax_scale = (i % 3 == 2) ? 0.3f : NAN;
    run_attention(c, 4000 + uint64_t(i++));
  }
}

TEST_CASE("gpu attention: extreme softcap / scale ratios stay finite", "[gpu][attention][sanitize]") {
  // A subnormal softcap (finite and > 0, so accepted) or softmax_scale / softcap above FLT_MAX:
  // the folded multiplier scale / softcap must not become inf, or a zero score (the zeroed
  // first query row) gives 0 * inf = NaN instead of tanh(0) = 0 (attention/common/logits.h).
  // Every score is then about +-softcap, i.e. ~0: the reference's rows are near-uniform.
  const float caps[][2] = {{1e-45f, NAN}, {1e-30f, 1e10f}, {2e-38f, 0.125f}};
  int i = 0;
  for (const auto& cs : caps)
    for (DT dt : {DT::F32, DT::F16, DT::BF16}) {
      AttnCase c;
      c.batch = 2;
      c.seqlen_q = 70;
      c.seqlen_k = 90;
      c.nheads = 2;
      c.head_dim = 64;
      c.dtype = dt;
      c.causal = (i % 2) == 1;
      c.softcap = cs[0];
      c.softmax_scale = cs[1];
      c.zero_first_q_row = true;
      run_attention(c, 5500 + uint64_t(i));
      // The same on the sm80-class kernel (fp16/bf16), which AUTO does not pick on Hopper.
      c.ctx = dt != DT::F32 ? fkgpu::context_for(FK_KERNEL_FAMILY_SM80) : nullptr;
      if (c.ctx != nullptr) run_attention(c, 5500 + uint64_t(i));
      ++i;
    }
}

TEST_CASE("gpu attention: GQA and MQA", "[gpu][attention]") {
  const int64_t groups[][2] = {{8, 2}, {8, 1}, {6, 3}};
  int i = 0;
  for (const auto& g : groups) {
    AttnCase c;
    c.batch = 2;
    c.seqlen_q = 65;
    c.seqlen_k = 130;
    c.nheads = g[0];
    c.nheads_k = g[1];
    c.head_dim = 96;
    c.dtype = dtype_by_index(i);
    c.causal = i == 1;
    c.pad = 2;
    run_attention(c, 5000 + uint64_t(i++));
  }
}

TEST_CASE("gpu attention: small cases", "[gpu][attention][sanitize]") {
  AttnCase c;
  c.batch = 2;
  c.seqlen_q = 19;
  c.seqlen_k = 45;
  c.nheads = 4;
  c.nheads_k = 2;
  c.head_dim = 40;
  c.causal = true;
  c.softcap = 10.0f;
  c.pad = 1;
  run_attention(c, 6000);
  c.dtype = DT::BF16;
  c.head_dim = 256;
  c.causal = false;
  c.window_left = 4;
  c.window_right = 7;
  run_attention(c, 6001);
  c.dtype = DT::F16;
  c.head_dim = 3;
  c.with_lse = false;
  run_attention(c, 6002);
}

// Varlen: sequence lengths include empty queries, empty keys (rows with no key: zeros, -inf).
// `ctx` (nullptr: the AUTO context) and max_seqlen_q/k (0: not given, the library reads
// cu_seqlens; > 0: passed in fk_attention_params_t, so device cu_seqlens are not read on the host).
struct VarlenOpts {
  const fk_context_t* ctx = nullptr;
  int64_t max_q = 0, max_k = 0;
};

void run_attention_varlen(const std::vector<int32_t>& lq, const std::vector<int32_t>& lk,
                          int64_t nheads, int64_t nheads_k, int64_t d, DT dt, bool causal,
                          int64_t wl, int64_t wr, uint64_t tag, VarlenOpts opts = {}) {
  std::vector<int32_t> cu_q{0}, cu_k{0};
  for (size_t b = 0; b < lq.size(); ++b) {
    cu_q.push_back(cu_q.back() + lq[b]);
    cu_k.push_back(cu_k.back() + lk[b]);
  }
  const int64_t tq = cu_q.back(), tk = cu_k.back();
  std::ostringstream desc;
  desc << "varlen attention h" << nheads << "/" << nheads_k << " d" << d << " "
       << fktest::dt_name(dt) << (causal ? " causal" : "") << " window(" << wl << "," << wr
       << ") cu_q";
  for (auto x : cu_q) desc << " " << x;
  desc << " cu_k";
  for (auto x : cu_k) desc << " " << x;
  INFO(desc.str());
  auto rng = rng_for(tag);
  const std::vector<int64_t> qs{tq, nheads, d}, ks{tk, nheads_k, d};
  HostTensor q(dt, qs, padded(qs, 1)), k(dt, ks), v(dt, ks, padded(ks, 2)), out(dt, qs, padded(qs, 1));
  HostTensor lse(DT::F32, {nheads, tq});
  HostTensor hcq = fktest::int32_tensor(cu_q), hck = fktest::int32_tensor(cu_k);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(hcq), dck(hck);
  dout.poison();
  dlse.poison();
  AttnCase c;
  c.causal = causal;
  c.window_left = wl;
  c.window_right = wr;
  fk_attention_params_t params = fk_params(c);
  params.max_seqlen_q = opts.max_q;
  params.max_seqlen_k = opts.max_k;
  const fk_context_t* ctx = opts.ctx != nullptr ? opts.ctx : gpu();
  INFO("max_seqlen_q " << opts.max_q << ", max_seqlen_k " << opts.max_k);
  REQUIRE_FK(fk_attention_forward(ctx, nullptr, &params, &dq, &dk, &dv, &dcq, &dck, &dout, &dlse));
  dout.download();
  dlse.download();
  std::vector<double> ref_out, ref_lse;
  fkref::attention_varlen(q.to_vector(), k.to_vector(), v.to_vector(), cu_q, cu_k, nheads,
                          nheads_k, d, ref_params(c), ref_out, ref_lse);
  check_output(out, ref_out, dt, "varlen attention out");
  check_output(lse, ref_lse, DT::F32, "varlen attention lse", 5.0);
}

TEST_CASE("gpu attention: varlen with empty sequences", "[gpu][attention][varlen]") {
  run_attention_varlen({5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 64, DT::F32, false,
                       -1, -1, 7000);
  run_attention_varlen({5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 64, DT::BF16, true,
                       -1, -1, 7001);
  run_attention_varlen({200, 17, 33}, {150, 300, 33}, 3, 1, 128, DT::F16, false, 20, 4, 7002);
  run_attention_varlen({0, 0}, {5, 0}, 2, 2, 32, DT::F32, true, -1, -1, 7003);
}

// The generic kernel with one shared-memory buffer for the K^T and V tiles (V loaded over K^T
// once the scores are in registers): what Turing (64 KB per block) runs above head_dim 200,
// forced here by FLASHKIT_GENERIC_ATTENTION_SHARED_KV=1 on every head-dim bucket, with masks,
// softcap, GQA, every dtype, and varlen with empty sequences.
TEST_CASE("gpu attention: generic kernel, K^T and V in one buffer (Turing's 64 KB)",
          "[gpu][attention][sanitize]") {
  const fk_context_t* gen = fkgpu::context_for(FK_KERNEL_FAMILY_GENERIC);
  REQUIRE(gen != nullptr);
  fktest::ScopedEnv shared("FLASHKIT_GENERIC_ATTENTION_SHARED_KV", "1");
  // Small enough for the racecheck pass ([sanitize]), which sees a missing barrier every time;
  // up to 5 key tiles of 32, the dtypes rotated independently of the shapes.
  const int64_t head_dims[] = {24, 64, 120, 200, 256};
  const int64_t seqlens[][2] = {{1, 1}, {39, 70}, {70, 133}};
  int i = 0;
  for (int64_t d : head_dims)
    for (const auto& sl : seqlens) {
      AttnCase c;
      c.ctx = gen;
      c.batch = 1;
      c.seqlen_q = sl[0];
      c.seqlen_k = sl[1];
      c.head_dim = d;
      c.nheads = 2;
      c.nheads_k = i % 2 ? 1 : 2;
      c.dtype = dtype_by_index(i / 3 + i);
      switch (i % 4) {
        case 0: break;
        case 1: c.causal = true; break;
        case 2: c.window_left = 17; c.window_right = 3; break;
        case 3: c.causal = true; c.softcap = 8.0f; break;
      }
      c.pad = (i % 3 == 2) ? 3 : 0;
      run_attention(c, 7400 + uint64_t(i++));
    }
  VarlenOpts gen_opts;
  gen_opts.ctx = gen;
  run_attention_varlen({5, 0, 70, 1}, {7, 3, 100, 0}, 2, 1, 256, DT::F32, true, -1, -1, 7450,
                       gen_opts);
}

TEST_CASE("gpu attention: varlen small", "[gpu][attention][varlen][sanitize]") {
  run_attention_varlen({3, 0, 17}, {0, 4, 20}, 2, 1, 24, DT::F16, true, -1, -1, 7100);
}

TEST_CASE("gpu attention: varlen with max_seqlen_q/k given, each kernel family",
          "[gpu][attention][varlen]") {
  // Given maxima mean the host never reads cu_seqlens: the result must be the same as when it
  // does, exact maxima or larger ones.
  uint64_t tag = 7200;
  for (auto& [name, ctx] : fkgpu::available_families()) {
    INFO("family " << name);
    VarlenOpts o;
    o.ctx = ctx;
    o.max_q = 130;
    o.max_k = 100;
    run_attention_varlen({5, 0, 130, 1, 64, 0}, {7, 3, 100, 0, 64, 0}, 4, 2, 64, DT::BF16, true,
                         -1, -1, ++tag, o);
    o.max_q = 4000;  // larger than total_q: clamped by the library
    o.max_k = 333;
    run_attention_varlen({200, 17, 33}, {150, 300, 33}, 3, 1, 128, DT::F16, false, 20, 4, ++tag, o);
  }
}

TEST_CASE("gpu attention: wrong device cu_seqlens with max_seqlen given stay inside the tensors",
          "[gpu][attention][varlen][sanitize]") {
  // With max_seqlen_q/k given, cu_seqlens entries are trusted, but the kernels clamp them to
  // [0, total]: entries that are negative, past the end or decreasing give an unspecified result
  // and a successful call, never an access outside q, k, v, out, lse (compute-sanitizer memcheck
  // runs this case) and no write to the padding of out.
  const int64_t tq = 40, tk = 50, h = 2, hk = 1, d = 64;
  const std::vector<std::vector<int32_t>> bad_q{{0, -7, 1000000, 3, 40}, {5, 2, 90, 40, 41}},
      bad_k{{0, 60, -2, 49, 50}, {-100, 10, 5, 2000000000, 50}};
  for (auto& [name, ctx] : fkgpu::available_families()) {
    for (size_t i = 0; i < bad_q.size(); ++i) {
      INFO("family " << name << ", bad cu_seqlens set " << i);
      auto rng = rng_for(7300 + i);
      const std::vector<int64_t> qs{tq, h, d}, ks{tk, hk, d};
      HostTensor q(DT::BF16, qs), k(DT::BF16, ks), v(DT::BF16, ks), out(DT::BF16, qs, padded(qs, 3));
      HostTensor lse(DT::F32, {h, tq}, {tq + 5, 1});
      HostTensor hcq = fktest::int32_tensor(bad_q[i]), hck = fktest::int32_tensor(bad_k[i]);
      q.fill_normal(rng);
      k.fill_normal(rng);
      v.fill_normal(rng);
      DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(hcq), dck(hck);
      dout.poison();
      dlse.poison();
      fk_attention_params_t params;
      fk_attention_params_init(&params);
      params.causal = int(i);
      params.max_seqlen_q = 64;
      params.max_seqlen_k = 64;
      REQUIRE_FK(fk_attention_forward(ctx, nullptr, &params, &dq, &dk, &dv, &dcq, &dck, &dout, &dlse));
      dout.download();
      dlse.download();
      CHECK(fkgpu::padding_written(out) == 0);
      CHECK(fkgpu::padding_written(lse) == 0);
    }
  }
}

TEST_CASE("gpu attention: varlen with max_seqlen given does not wait for the stream",
          "[gpu][attention][varlen][stream]") {
  // A host function queued on the stream blocks it until the test releases it (or 2 s pass).
  // With max_seqlen_q/k given the attention call must return while the stream is blocked, i.e.
  // without waiting for it; the result is then checked against the float64 reference.
  struct Gate {
    std::atomic<int> go{0}, timed_out{0};
  };
  auto block = [](void* p) {
    auto* g = static_cast<Gate*>(p);
    const auto t0 = std::chrono::steady_clock::now();
    while (!g->go.load()) {
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(2)) {
        g->timed_out = 1;
        return;
      }
      std::this_thread::yield();
    }
  };
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::vector<int32_t> cu_q{0, 5, 5, 135, 136}, cu_k{0, 7, 10, 110, 110};
  const int64_t tq = 136, tk = 110, h = 4, hk = 2, d = 64;
  for (auto& [name, ctx] : fkgpu::available_families()) {
    INFO("family " << name);
    auto rng = rng_for(7400);
    const std::vector<int64_t> qs{tq, h, d}, ks{tk, hk, d};
    HostTensor q(DT::BF16, qs), k(DT::BF16, ks), v(DT::BF16, ks), out(DT::BF16, qs);
    HostTensor hcq = fktest::int32_tensor(cu_q), hck = fktest::int32_tensor(cu_k);
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    DeviceTensor dq(q), dk(k), dv(v), dout(out), dcq(hcq), dck(hck);
    fk_attention_params_t params;
    fk_attention_params_init(&params);
    params.causal = 1;
    params.max_seqlen_q = 130;
    params.max_seqlen_k = 100;
    fk_launch_t launch;
    fk_launch_init(&launch);
    launch.stream = s;
    // Once unblocked, so that module loading and first-launch set-up are out of the way.
    REQUIRE_FK(fk_attention_forward(ctx, &launch, &params, &dq, &dk, &dv, &dcq, &dck, &dout, nullptr));
    REQUIRE_CUDA(cudaStreamSynchronize(s));
    dout.poison();
    Gate gate;
    REQUIRE_CUDA(cudaLaunchHostFunc(s, block, &gate));
    const fk_status_t st =
        fk_attention_forward(ctx, &launch, &params, &dq, &dk, &dv, &dcq, &dck, &dout, nullptr);
    const bool returned_while_blocked = gate.timed_out.load() == 0;
    gate.go = 1;
    REQUIRE_CUDA(cudaStreamSynchronize(s));
    INFO(fk_get_last_error_message());
    REQUIRE(st == FK_SUCCESS);
    CHECK(returned_while_blocked);
    dout.download();
    std::vector<double> ref_out, ref_lse;
    fkref::AttentionParams rp;
    rp.causal = true;
    fkref::attention_varlen(q.to_vector(), k.to_vector(), v.to_vector(), cu_q, cu_k, h, hk, d, rp,
                            ref_out, ref_lse);
    check_output(out, ref_out, DT::BF16, "varlen attention (not waiting) out");
  }
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

TEST_CASE("gpu attention: non-default stream through fk_launch_t", "[gpu][attention][stream][sanitize]") {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  AttnCase c;
  c.batch = 2;
  c.seqlen_q = 70;
  c.seqlen_k = 70;
  c.nheads = 2;
  c.head_dim = 64;
  c.causal = true;
  c.dtype = DT::BF16;
  c.stream = s;
  run_attention(c, 8000);
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

// =============================================================================================
// GEMM
// =============================================================================================

struct GemmCase {
  int64_t batch = 0;  // 0: rank-2 operands
  int64_t M = 1, N = 1, K = 1;
  DT ab = DT::F32, cd = DT::F32, bias_dt = DT::F32;
  bool trans_a = false, trans_b = false;
  bool col_major_a = false;  // a (M, K) described with column-major strides instead
  bool with_c = false, with_bias = false;
  bool broadcast_b = false;  // b rank 2 while a is batched
  float alpha = 1, beta = 0;
  int act = 0;
  int64_t pad = 0;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  uint64_t workspace_bytes = 0;
};

std::string describe(const GemmCase& c) {
  std::ostringstream o;
  o << "gemm batch " << c.batch << " M" << c.M << " N" << c.N << " K" << c.K << " ab "
    << fktest::dt_name(c.ab) << " cd " << fktest::dt_name(c.cd) << " trans " << c.trans_a
    << c.trans_b << (c.col_major_a ? " col-major a" : "") << (c.with_c ? " +C" : "")
    << (c.with_bias ? " +bias" : "") << (c.broadcast_b ? " broadcast b" : "") << " alpha "
    << c.alpha << " beta " << c.beta << " act " << c.act << " pad " << c.pad;
  return o.str();
}

std::vector<int64_t> with_batch(int64_t batch, std::vector<int64_t> s) {
  if (batch > 0) s.insert(s.begin(), batch);
  return s;
}

void run_gemm(const GemmCase& c, uint64_t tag) {
  INFO(describe(c));
  auto rng = rng_for(tag);
  const int64_t nb = std::max<int64_t>(c.batch, 1);
  const std::vector<int64_t> as = with_batch(c.batch, c.trans_a ? std::vector<int64_t>{c.K, c.M}
                                                                 : std::vector<int64_t>{c.M, c.K});
  std::vector<int64_t> a_strides = padded(as, c.pad);
  if (c.col_major_a && !c.trans_a) {
    // Logical (M, K) stored column-major: element (m, k) at m + k * (M + pad).
    const int64_t ld = c.M + c.pad;
    a_strides = with_batch(c.batch, {1, ld});
    if (c.batch > 0) a_strides[0] = ld * std::max<int64_t>(c.K, 1);
  }
  const std::vector<int64_t> bs =
      with_batch(c.broadcast_b ? 0 : c.batch,
                 c.trans_b ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N});
  const std::vector<int64_t> ds = with_batch(c.batch, {c.M, c.N});
  HostTensor a(c.ab, as, a_strides), b(c.ab, bs, padded(bs, c.pad)), d(c.cd, ds, padded(ds, c.pad));
  HostTensor cm(c.cd, ds, padded(ds, c.pad + 1)), bias(c.bias_dt, {c.N});
  a.fill_normal(rng);
  b.fill_normal(rng);
  cm.fill_normal(rng);
  bias.fill_normal(rng);

  DeviceTensor da(a), db(b), dd(d), dc(cm), dbias(bias);
  dd.poison();
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.trans_a = c.trans_a;
  p.trans_b = c.trans_b;
  p.alpha = c.alpha;
  p.beta = c.beta;
  p.activation = c.act;
  const char* variant = "?";
  REQUIRE_FK(fk_gemm_select_kernel(gpu(), &p, &da, &db, c.with_c ? &dc : nullptr,
                                   c.with_bias ? &dbias : nullptr, &dd, &variant));
  INFO("variant " << variant);
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = c.stream;
  launch.workspace = c.workspace;
  launch.workspace_bytes = c.workspace_bytes;
  REQUIRE_FK(fk_gemm(gpu(), &launch, &p, &da, &db, c.with_c ? &dc : nullptr,
                     c.with_bias ? &dbias : nullptr, &dd));
  if (c.stream) REQUIRE_CUDA(cudaStreamSynchronize(c.stream));
  dd.download();

  fkref::GemmParams rp;
  rp.trans_a = c.trans_a;
  rp.trans_b = c.trans_b;
  rp.alpha = c.alpha;
  rp.beta = c.beta;
  rp.activation = c.act;
  const std::vector<double> av = a.to_vector(), bv = b.to_vector(), cv = cm.to_vector(),
                            biasv = bias.to_vector();
  const int64_t b_batch = c.broadcast_b ? 1 : nb;
  const std::vector<double> ref =
      fkref::gemm(av, nb, bv, b_batch, c.with_c ? &cv : nullptr, nb,
                  c.with_bias ? &biasv : nullptr, nb, c.M, c.N, c.K, rp);
  // Error scale: the same GEMM on magnitudes, no activation (GELU/ReLU have slope <= 1.13).
  auto absv = [](std::vector<double> x) {
    for (auto& e : x) e = std::fabs(e);
    return x;
  };
  fkref::GemmParams sp = rp;
  sp.alpha = std::fabs(c.alpha);
  sp.beta = std::fabs(c.beta);
  sp.activation = 0;
  const std::vector<double> cva = absv(cv), biasa = absv(biasv);
  const std::vector<double> scale =
      fkref::gemm(absv(av), nb, absv(bv), b_batch, c.with_c ? &cva : nullptr, nb,
                  c.with_bias ? &biasa : nullptr, nb, c.M, c.N, c.K, sp);
  check_output(d, ref, c.cd, "gemm d", 1.0, &scale);
}

TEST_CASE("gpu gemm: sizes 1/7/127/129 cubed, transposes, dtypes, epilogues", "[gpu][gemm]") {
  const int64_t sizes[] = {1, 7, 127, 129};
  int i = 0;
  for (int64_t M : sizes)
    for (int64_t N : sizes)
      for (int64_t K : sizes) {
        GemmCase c;
        c.M = M;
        c.N = N;
        c.K = K;
        c.trans_a = (i & 1) != 0;
        c.trans_b = (i & 2) != 0;
        c.ab = dtype_by_index(i / 4);
        c.cd = dtype_by_index(i / 12);
        c.bias_dt = dtype_by_index(i / 5);
        c.act = i % 4;
        c.with_bias = (i % 3) == 0;
        c.with_c = (i % 5) < 2;
        c.beta = c.with_c ? ((i % 5) == 0 ? 1.0f : -0.5f) : 0.0f;
        c.alpha = (i % 7) == 0 ? 0.25f : 1.0f;
        c.pad = (i % 6) == 0 ? 3 : 0;
        run_gemm(c, 10000 + uint64_t(i++));
      }
}

TEST_CASE("gpu gemm: K = 0 writes act(beta C + bias)", "[gpu][gemm][sanitize]") {
  for (int act = 0; act < 4; ++act) {
    GemmCase c;
    c.M = 33;
    c.N = 70;
    c.K = 0;
    c.act = act;
    c.with_c = act != 1;
    c.beta = c.with_c ? 0.75f : 0.0f;
    c.with_bias = act != 2;
    c.cd = dtype_by_index(act);
    run_gemm(c, 11000 + uint64_t(act));
  }
}

TEST_CASE("gpu gemm: each activation", "[gpu][gemm]") {
  for (int act = 0; act < 4; ++act)
    for (DT dt : {DT::F32, DT::BF16}) {
      GemmCase c;
      c.M = 150;
      c.N = 96;
      c.K = 200;
      c.ab = dt;
      c.cd = dt;
      c.act = act;
      c.with_bias = true;
      c.with_c = true;
      c.beta = 1.0f;
      c.alpha = 0.1f;
      run_gemm(c, 12000 + uint64_t(act) * 2 + (dt == DT::F32 ? 0 : 1));
    }
}

TEST_CASE("gpu gemm: GELU at +-inf and NaN accumulators, each kernel family", "[gpu][gemm]") {
  // d[m, n] = act(a[m, 0] b[0, n]) with b[0, n] = 1 (the rest of K zero): GELU(-inf) is its
  // limit 0 (the formulas give -inf x 0 or -inf / inf = NaN), +inf stays +inf, NaN stays NaN,
  // finite values as the float64 reference (absolute 1e-7 for the erf form's tail, 1 + erff).
  // A 128 x 128 x 16 bf16 problem, so that the Hopper kernel takes it under AUTO.
  const float xs[] = {-INFINITY, INFINITY, NAN, -5.0f, -8.0f, -0.5f, 3.0f, 1e30f, -1e30f, 0.0f};
  const int64_t M = 128, N = 128, K = 16, nx = int64_t(sizeof(xs) / sizeof(xs[0]));
  for (const auto& fam : fkgpu::available_families()) {
    for (int act : {FK_ACTIVATION_GELU_TANH, FK_ACTIVATION_GELU_ERF}) {
      HostTensor a(DT::BF16, {M, K}), b(DT::BF16, {K, N}), d(DT::F32, {M, N});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) a.set({m, k}, k == 0 ? double(xs[m % nx]) : 0.0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) b.set({k, n}, k == 0 ? 1.0 : 0.0);
      DeviceTensor da(a), db(b), dd(d);
      dd.poison();
      fk_gemm_params_t p;
      fk_gemm_params_init(&p);
      p.activation = act;
      REQUIRE_FK(fk_gemm(fam.second, nullptr, &p, &da, &db, nullptr, nullptr, &dd));
      dd.download();
      for (int64_t m = 0; m < nx; ++m) {
        const double x = a.get({m, 0});
        for (int64_t n : {int64_t(0), N - 1}) {
          const double got = d.get({m, n});
          INFO(fam.first << ", activation " << act << ", x = " << x << ", got " << got);
          if (std::isnan(x)) {
            CHECK(std::isnan(got));
          } else if (std::isinf(x)) {
            CHECK(got == (x > 0 ? x : 0.0));
          } else {
            const double want = fkref::activation(act, x);
            CHECK(std::fabs(got - want) <= 1e-5 * std::fabs(want) + 1e-7);
          }
        }
      }
    }
  }
}

TEST_CASE("gpu gemm: epilogue order at the edge of fp32's range, each kernel family",
          "[gpu][gemm][epi_order]") {
  // flashkit.h's order: alpha * acc + beta * c first, then the bias; and fk_gemm_scaled's factor
  // alpha * scale_a[m] * scale_b[n] formed before it multiplies the sum. Values are chosen so
  // that any other order overflows fp32: acc = 3e38, c = -acc, bias = 3e38 (bias first:
  // inf); fp8 sums of 16 x 448^2 with scales of 1e18 or 1e20 and a tiny alpha, or scale_a 1e33
  // with scale_b 1e-25 (either scale alone on the sum first: inf). Both results are exact or
  // nearly so in fp32. 128 x 128 x 16 problems, so that the Hopper kernel takes them under
  // AUTO: its register-store epilogue when C is given; with a bias and column scales or the
  // erf GELU its general path; otherwise (per-tensor or column scales alone) the lean path.
  const int64_t M = 128, N = 128, K = 16;
  for (const auto& fam : fkgpu::available_families()) {
    {
      HostTensor a(DT::BF16, {M, K}), b(DT::BF16, {K, N}), c(DT::F32, {M, N}),
          bias(DT::F32, {N}), d(DT::F32, {M, N});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) a.set({m, k}, k == 0 ? 1.5e19 : 0.0);
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) b.set({k, n}, k == 0 ? 2e19 : 0.0);
      const double acc = a.get({0, 0}) * b.get({0, 0});  // exact in fp32 (two bf16 significands)
      REQUIRE(acc > 2.9e38);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) c.set({m, n}, -acc);
      for (int64_t n = 0; n < N; ++n) bias.set({n}, 3e38);
      DeviceTensor da(a), db(b), dc(c), dbias(bias), dd(d);
      dd.poison();
      fk_gemm_params_t p;
      fk_gemm_params_init(&p);
      p.beta = 1.0f;
      REQUIRE_FK(fk_gemm(fam.second, nullptr, &p, &da, &db, &dc, &dbias, &dd));
      dd.download();
      int bad = 0;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) bad += d.get({m, n}) != bias.get({n});
      INFO(fam.first << ": alpha acc + beta c + bias, d[0, 0] = " << d.get({0, 0}));
      CHECK(bad == 0);
    }
    // fp8: A (M, K) e4m3 of 448, B stored (N, K) (trans_b) of 448: acc = 16 x 448^2.
    struct Fp8Case {
      int scales;  // 1 per tensor, 2 per row / per column
      double sa, sb, alpha;
      bool bias, c, gelu_erf;
    };
    const Fp8Case cases[] = {
        {1, 1e20, 1e20, 1e-35, false, false, false},  // lean path, per-tensor factor
        {2, 1e33, 1e-25, 1.0, false, false, false},   // lean path, column scales
        {2, 1e18, 1e18, 1e-31, true, false, false},   // column scales with a bias: general path
        {2, 1e18, 1e18, 1e-31, false, true, false},   // C term: register-store epilogue
        {2, 1e18, 1e18, 1e-31, false, false, true},   // erf GELU: general path
        {1, 1e20, 1e20, 1e-35, false, true, false},
    };
    for (const Fp8Case& fc : cases) {
      HostTensor a(DT::E4M3, {M, K}), b(DT::E4M3, {N, K}), c(DT::F32, {M, N}),
          bias(DT::F32, {N}), d(DT::F32, {M, N});
      HostTensor sa(DT::F32, {fc.scales == 2 ? M : 1}), sb(DT::F32, {fc.scales == 2 ? N : 1});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) a.set({m, k}, 448.0);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) b.set({n, k}, 448.0);
      for (int64_t i = 0; i < sa.shape[0]; ++i) sa.set({i}, fc.sa);
      for (int64_t i = 0; i < sb.shape[0]; ++i) sb.set({i}, fc.sb);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) c.set({m, n}, 1.0);
      for (int64_t n = 0; n < N; ++n) bias.set({n}, 2.0);
      const float factor = (float(fc.alpha) * float(fc.sa)) * float(fc.sb);
      REQUIRE(std::isnormal(factor));
      const double want = double(factor) * 16.0 * 448.0 * 448.0 + (fc.c ? 1.0 : 0.0) +
                          (fc.bias ? 2.0 : 0.0);  // GELU(x) = x at x ~ 3e11
      DeviceTensor da(a), db(b), dc(c), dbias(bias), dd(d), dsa(sa), dsb(sb);
      dd.poison();
      fk_gemm_params_t p;
      fk_gemm_params_init(&p);
      p.trans_b = 1;
      p.alpha = float(fc.alpha);
      p.beta = fc.c ? 1.0f : 0.0f;
      p.activation = fc.gelu_erf ? FK_ACTIVATION_GELU_ERF : FK_ACTIVATION_NONE;
      REQUIRE_FK(fk_gemm_scaled(fam.second, nullptr, &p, &da, &db, &dsa, &dsb,
                                fc.c ? &dc : nullptr, fc.bias ? &dbias : nullptr, &dd));
      dd.download();
      int bad = 0;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) bad += !(std::fabs(d.get({m, n}) - want) <= 1e-5 * want);
      INFO(fam.first << ": fp8 scales " << fc.scales << " of " << fc.sa << " and " << fc.sb
                     << ", alpha " << fc.alpha
                     << (fc.bias ? ", bias" : "") << (fc.c ? ", C" : "")
                     << (fc.gelu_erf ? ", erf GELU" : "") << ": want " << want << ", d[0, 0] = "
                     << d.get({0, 0}));
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("gpu gemm: batched, broadcast, strides, mixed dtypes", "[gpu][gemm]") {
  GemmCase c;
  c.batch = 3;
  c.M = 100;
  c.N = 65;
  c.K = 70;
  c.with_c = true;
  c.beta = 0.5f;
  c.with_bias = true;
  c.pad = 2;
  run_gemm(c, 13000);
  c.broadcast_b = true;
  c.trans_b = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.bias_dt = DT::BF16;
  run_gemm(c, 13001);
  c.broadcast_b = false;
  c.trans_b = false;
  c.col_major_a = true;
  c.ab = DT::BF16;
  c.cd = DT::F16;
  c.act = 3;
  run_gemm(c, 13002);
  GemmCase r;
  r.M = 257;
  r.N = 129;
  r.K = 1000;
  r.col_major_a = true;
  r.trans_b = true;
  r.pad = 5;
  run_gemm(r, 13003);
}

TEST_CASE("gpu gemm: batch above the 65535 grid limit", "[gpu][gemm]") {
  GemmCase c;
  c.batch = 70001;
  c.M = 3;
  c.N = 2;
  c.K = 5;
  c.with_bias = true;
  run_gemm(c, 14000);
}

TEST_CASE("gpu gemm: small", "[gpu][gemm][sanitize]") {
  GemmCase c;
  c.batch = 2;
  c.M = 70;
  c.N = 66;
  c.K = 17;
  c.trans_a = true;
  c.with_c = true;
  c.beta = -1.0f;
  c.with_bias = true;
  c.act = 2;
  c.pad = 1;
  c.ab = DT::BF16;
  run_gemm(c, 15000);
}

TEST_CASE("gpu gemm: non-default stream and caller workspace", "[gpu][gemm][stream][sanitize]") {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* ws = nullptr;
  REQUIRE_CUDA(cudaMalloc(&ws, 1 << 20));
  GemmCase c;
  c.M = 90;
  c.N = 40;
  c.K = 33;
  c.with_bias = true;
  c.stream = s;
  c.workspace = ws;
  c.workspace_bytes = 1 << 20;
  run_gemm(c, 16000);
  REQUIRE_CUDA(cudaFree(ws));
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

// =============================================================================================
// FFT convolution
// =============================================================================================

struct ConvCase {
  fk_fftconv_mode_t mode = FK_FFTCONV_CAUSAL;
  int64_t batch = 1, channels = 1, seqlen = 1, filter_len = 0, fft_size = 0;
  DT dtype = DT::F32, k_dt = DT::F32, d_dt = DT::F32;
  bool with_D = false, pre = false, post = false, constant = false;
  int64_t pad = 0;
  int repeats = 1;  // calls on one plan (exercises the cached spectrum with constant filters)
  cudaStream_t stream = nullptr;
  // 0: every row against the reference. > 0: the first row, the last and this many random
  // (batch, channel) rows (the direct-sum reference costs O(filter_len) per output), every row
  // still checked for the poison.
  int64_t sample_rows = 0;
  double u_scale = 1.0;  // standard deviation of u (0.02: FlashFFTConv's tests)
};

std::string describe(const ConvCase& c) {
  static const char* modes[] = {"causal", "circular", "bidirectional"};
  std::ostringstream o;
  o << "fftconv " << modes[c.mode] << " batch " << c.batch << " channels " << c.channels
    << " seqlen " << c.seqlen << " filter_len " << c.filter_len << " fft_size " << c.fft_size
    << " " << fktest::dt_name(c.dtype) << " k " << fktest::dt_name(c.k_dt)
    << (c.with_D ? " +D" : "") << (c.pre ? " +pregate" : "") << (c.post ? " +postgate" : "")
    << (c.constant ? " constant filter" : "") << " pad " << c.pad << " u_scale " << c.u_scale
    << (c.sample_rows ? " sampled rows" : "");
  return o.str();
}

// Rows (b, c) a sampled case compares: the first, the last and c.sample_rows random ones.
std::vector<std::pair<int64_t, int64_t>> sampled_rows(const ConvCase& c, std::mt19937_64& rng) {
  std::vector<std::pair<int64_t, int64_t>> rows{{0, 0}, {c.batch - 1, c.channels - 1}};
  std::uniform_int_distribution<int64_t> db(0, c.batch - 1), dc(0, c.channels - 1);
  for (int64_t i = 0; i < c.sample_rows; ++i) rows.emplace_back(db(rng), dc(rng));
  return rows;
}

void run_fftconv(const ConvCase& c, uint64_t tag) {
  INFO(describe(c));
  auto rng = rng_for(tag);
  const int64_t fl = c.filter_len ? c.filter_len : c.seqlen;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = c.mode;
  o.channels = c.channels;
  o.seqlen = c.seqlen;
  o.filter_len = fl;
  o.fft_size = c.fft_size;
  o.dtype = fktest::dl_dtype(c.dtype);
  o.flags = c.constant ? FK_FFTCONV_FILTER_CONSTANT : 0u;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE_FK(fk_fftconv_plan_create(gpu(), &o, &plan));
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
      plan, fk_fftconv_plan_destroy);
  fk_fftconv_plan_options_t resolved;
  fk_fftconv_plan_options_init(&resolved);
  REQUIRE_FK(fk_fftconv_plan_get_options(plan, &resolved));
  INFO("resolved fft_size " << resolved.fft_size);

  const std::vector<int64_t> as{c.batch, c.channels, c.seqlen};
  HostTensor u(c.dtype, as, padded(as, c.pad)), y(c.dtype, as, padded(as, c.pad + 1));
  HostTensor pre(c.dtype, as), post(c.dtype, as, padded(as, 2));
  HostTensor k(c.k_dt, {c.channels, fl}, {fl + c.pad, 1}), D(c.d_dt, {c.channels});
  u.fill_normal(rng, c.u_scale);
  fkgpu::fill_decaying_filter(k, fl, rng);
  pre.fill_uniform(rng, -1.0, 1.0);
  post.fill_uniform(rng, -1.0, 1.0);
  D.fill_normal(rng);

  DeviceTensor du(u), dy(y), dpre(pre), dpost(post), dk(k), dD(D);
  const char* variant = "?";
  REQUIRE_FK(fk_fftconv_select_kernel(plan, &du, &dk, c.with_D ? &dD : nullptr,
                                      c.pre ? &dpre : nullptr, c.post ? &dpost : nullptr, &dy,
                                      &variant));
  INFO("variant " << variant);
  std::vector<double> ref;
  std::vector<std::pair<int64_t, int64_t>> rows;  // sampled cases: the rows ref holds, in order
  if (c.sample_rows == 0) {
    const std::vector<double> Dv = D.to_vector(), prev = pre.to_vector(),
                              postv = post.to_vector();
    ref = fkref::fftconv(u.to_vector(), k.to_vector(), c.with_D ? &Dv : nullptr,
                         c.pre ? &prev : nullptr, c.post ? &postv : nullptr, c.batch, c.channels,
                         c.seqlen, fl, static_cast<fkref::ConvMode>(c.mode), resolved.fft_size);
  } else {
    rows = sampled_rows(c, rng);
    const size_t L = size_t(c.seqlen);
    std::vector<double> ur(L), prer(L), postr(L), kr(static_cast<size_t>(fl));
    for (const auto& r : rows) {
      const int64_t b = r.first, h = r.second;
      for (int64_t t = 0; t < c.seqlen; ++t) {
        ur[size_t(t)] = u.get({b, h, t});
        prer[size_t(t)] = pre.get({b, h, t});
        postr[size_t(t)] = post.get({b, h, t});
      }
      for (int64_t t = 0; t < fl; ++t) kr[size_t(t)] = k.get({h, t});
      const std::vector<double> Dr{D.get({h})};
      const std::vector<double> yr = fkref::fftconv(
          ur, kr, c.with_D ? &Dr : nullptr, c.pre ? &prer : nullptr, c.post ? &postr : nullptr,
          1, 1, c.seqlen, fl, static_cast<fkref::ConvMode>(c.mode), resolved.fft_size);
      ref.insert(ref.end(), yr.begin(), yr.end());
    }
  }
  for (int rep = 0; rep < c.repeats; ++rep) {
    INFO("call " << rep + 1 << " of " << c.repeats << " on the plan");
    dy.poison();
    fk_launch_t launch;
    fk_launch_init(&launch);
    launch.stream = c.stream;
    REQUIRE_FK(fk_fftconv_forward(plan, &launch, &du, &dk, c.with_D ? &dD : nullptr,
                                  c.pre ? &dpre : nullptr, c.post ? &dpost : nullptr, &dy));
    if (c.stream) REQUIRE_CUDA(cudaStreamSynchronize(c.stream));
    dy.download();
    // FFT round trips carry log2(fft_size) rounding steps per element.
    if (c.sample_rows == 0) {
      check_output(y, ref, c.dtype, "fftconv y", 4.0);
      continue;
    }
    // Sampled: every element written and the padding untouched over the whole output; the
    // sampled rows, gathered as (rows, 1, seqlen), against the reference by the same rule.
    int64_t unwritten = 0;
    y.for_each([&](const std::vector<int64_t>& i) {
      if (std::isnan(y.get(i))) ++unwritten;
    });
    INFO(unwritten << " unwritten (NaN) outputs, " << fkgpu::padding_written(y)
                   << " padding bytes written, seed " << fktest::test_seed());
    CHECK(unwritten == 0);
    CHECK(fkgpu::padding_written(y) == 0);
    HostTensor ys(c.dtype, {int64_t(rows.size()), 1, c.seqlen});
    ys.poison();  // its slack bytes must read as untouched padding in check_output
    for (size_t r = 0; r < rows.size(); ++r)
      for (int64_t t = 0; t < c.seqlen; ++t)
        ys.set({int64_t(r), 0, t}, y.get({rows[r].first, rows[r].second, t}));
    check_output(ys, ref, c.dtype, "fftconv y, sampled rows", 4.0);
  }
}

TEST_CASE("gpu fftconv: fft sizes 256..65536, every mode", "[gpu][fftconv]") {
  const int64_t sizes[] = {256, 1024, 4096, 8192, 16384, 65536};
  const fk_fftconv_mode_t modes[] = {FK_FFTCONV_CAUSAL, FK_FFTCONV_CIRCULAR,
                                     FK_FFTCONV_BIDIRECTIONAL};
  int i = 0;
  for (int64_t n : sizes)
    for (fk_fftconv_mode_t m : modes) {
      ConvCase c;
      c.mode = m;
      c.fft_size = n;
      // Filter lengths that make the direct-sum reference affordable at the large sizes.
      const int64_t short_filter = n <= 4096 ? 0 : 301;
      switch (m) {
        case FK_FFTCONV_CAUSAL:
          c.seqlen = n / 2 + 3;  // needs n >= seqlen + min(filter_len, seqlen) - 1
          c.filter_len = short_filter ? short_filter : n / 2 - 5;
          break;
        case FK_FFTCONV_CIRCULAR:
          c.seqlen = n - 7;
          c.filter_len = short_filter ? short_filter : n;
          break;
        case FK_FFTCONV_BIDIRECTIONAL:
          c.seqlen = n / 2 + 1;
          c.filter_len = short_filter ? short_filter : n - 1;  // R = n/2 - 1 <= n - seqlen
          break;
      }
      c.batch = 1 + (i % 3);
      c.channels = n >= 16384 ? 2 : 5;
      c.dtype = dtype_by_index(i);
      c.with_D = (i % 2) == 0;
      c.pre = (i % 3) == 0;
      c.post = (i % 4) < 2;
      c.pad = (i % 5) == 0 ? 4 : 0;
      run_fftconv(c, 30000 + uint64_t(i++));
    }
}

TEST_CASE("gpu fftconv: fft_size 2^20 and 2^22 (the largest plans)", "[gpu][fftconv]") {
  // Issue 8's range goes to fft_size 4M: the four-step path with N1 = 512 columns. Short
  // filters keep the direct-sum reference at ~6e8 multiply-adds.
  ConvCase c;
  c.mode = FK_FFTCONV_CAUSAL;
  c.fft_size = int64_t(1) << 22;
  c.seqlen = (int64_t(1) << 21) + 3;
  c.filter_len = 301;
  c.dtype = DT::F32;
  c.with_D = true;
  run_fftconv(c, 30500);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.fft_size = int64_t(1) << 20;
  c.seqlen = (int64_t(1) << 19) + 1;
  c.dtype = DT::BF16;
  c.channels = 2;
  c.post = true;
  run_fftconv(c, 30501);
}

// Issue 8's remaining shapes, with u at FlashFFTConv's 0.02 scale. Reference cost (direct sum,
// about 1 ns per multiply-add causal/bidirectional, 5 ns circular, on one core): ~1.3 s for each
// fft_size 2^22 run, ~1.2 s and ~0.4 s for the circular ones, at most ~1 s for each B 64 / H 768
// run (sampled rows; the circular one at 32K is the ~1 s).
TEST_CASE("gpu fftconv: fft_size 2^22 in fp16 and bf16, gated, D", "[gpu][fftconv]") {
  ConvCase c;
  c.mode = FK_FFTCONV_CAUSAL;
  c.fft_size = int64_t(1) << 22;
  c.seqlen = (int64_t(1) << 21) + 3;
  c.filter_len = 301;
  c.batch = 2;  // one full row pair
  c.dtype = DT::F16;
  c.k_dt = DT::F16;
  c.with_D = true;
  c.pre = true;
  c.u_scale = 0.02;
  run_fftconv(c, 37000);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.seqlen = (int64_t(1) << 21) + 1;
  c.batch = 1;  // a lone row in its pair
  c.channels = 2;
  c.dtype = DT::BF16;
  c.k_dt = DT::F32;
  c.pre = false;
  c.post = true;
  c.pad = 3;
  run_fftconv(c, 37001);
}

TEST_CASE("gpu fftconv: circular at fft_size 2^17 and 2^20", "[gpu][fftconv]") {
  // seqlen just under fft_size: the first filter_len - 1 outputs take wrapped taps from the end.
  ConvCase c;
  c.mode = FK_FFTCONV_CIRCULAR;
  c.fft_size = int64_t(1) << 17;
  c.seqlen = c.fft_size - 5;
  c.filter_len = 301;
  c.batch = 2;
  c.channels = 3;
  c.dtype = DT::F16;
  c.with_D = true;
  c.pre = c.post = true;
  c.u_scale = 0.02;
  run_fftconv(c, 37100);
  c.fft_size = int64_t(1) << 20;
  c.seqlen = c.fft_size - 3;
  c.filter_len = 33;
  c.channels = 1;
  c.dtype = DT::BF16;
  c.k_dt = DT::BF16;
  c.pre = false;
  run_fftconv(c, 37101);
}

TEST_CASE("gpu fftconv: B 64 at fft_size 16K and 32K, gated, D", "[gpu][fftconv]") {
  ConvCase c;
  c.batch = 64;
  c.channels = 3;
  c.mode = FK_FFTCONV_CAUSAL;
  c.seqlen = 8192;  // default fft_size 16384; aligned rows
  c.filter_len = 301;
  c.dtype = DT::F16;
  c.with_D = true;
  c.pre = c.post = true;
  c.u_scale = 0.02;
  c.sample_rows = 10;
  run_fftconv(c, 37200);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.channels = 2;
  c.seqlen = 16001;  // R = 1000: fft_size 32768
  c.filter_len = 2001;
  c.dtype = DT::BF16;
  c.k_dt = DT::BF16;
  c.pre = false;
  c.pad = 3;  // padded rows
  run_fftconv(c, 37201);
  c.mode = FK_FFTCONV_CIRCULAR;
  c.fft_size = 32768;
  c.seqlen = 32765;
  c.filter_len = 513;
  c.dtype = DT::F16;
  c.k_dt = DT::F32;
  c.pre = true;
  c.pad = 0;
  c.constant = true;
  c.repeats = 2;
  run_fftconv(c, 37202);
}

TEST_CASE("gpu fftconv: H 768 at L 4K and 8K, gated, D", "[gpu][fftconv]") {
  ConvCase c;
  c.batch = 2;
  c.channels = 768;
  c.mode = FK_FFTCONV_CAUSAL;
  c.seqlen = 4096;  // full-length filter, default fft_size 8192
  c.dtype = DT::BF16;
  c.with_D = true;
  c.pre = c.post = true;
  c.u_scale = 0.02;
  c.sample_rows = 12;
  run_fftconv(c, 37300);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.batch = 1;
  c.seqlen = 8192;
  c.filter_len = 2 * 2048 + 1;  // fft_size 16384
  c.dtype = DT::F16;
  c.k_dt = DT::F16;
  c.pre = false;
  run_fftconv(c, 37301);
}

// The four-step path's other splits (fft_size 2^18, 2^19, 2^21: the cases above cover 2^17,
// 2^20 and 2^22) and circular at 2^22. Reference: ~1e8-6e8 multiply-adds each (short filters).
TEST_CASE("gpu fftconv: fft_size 2^18, 2^19, 2^21, and circular at 2^22", "[gpu][fftconv]") {
  ConvCase c;
  c.mode = FK_FFTCONV_CAUSAL;
  c.fft_size = int64_t(1) << 18;
  c.seqlen = (int64_t(1) << 17) + 5;
  c.filter_len = 301;
  c.batch = 3;  // an odd batch: one row without a partner
  c.channels = 2;
  c.dtype = DT::BF16;
  c.with_D = true;
  c.pre = true;
  c.u_scale = 0.02;
  run_fftconv(c, 37400);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.fft_size = int64_t(1) << 19;
  c.seqlen = (int64_t(1) << 18) + 1;
  c.filter_len = 2 * 150 + 1;  // R = 150 <= fft_size - seqlen
  c.batch = 2;
  c.channels = 1;
  c.dtype = DT::F16;
  c.k_dt = DT::F16;
  c.pre = false;
  c.post = true;
  c.pad = 2;
  run_fftconv(c, 37401);
  c.mode = FK_FFTCONV_CAUSAL;
  c.fft_size = int64_t(1) << 21;  // explicit: the default for this seqlen is 2^22
  c.seqlen = (int64_t(1) << 20) + 7;
  c.filter_len = 301;
  c.batch = 1;
  c.dtype = DT::F32;
  c.k_dt = DT::F16;
  c.post = false;
  c.pad = 0;
  run_fftconv(c, 37402);
  c.mode = FK_FFTCONV_CIRCULAR;
  c.fft_size = int64_t(1) << 22;
  c.seqlen = c.fft_size - 9;
  c.filter_len = 33;
  c.k_dt = DT::F32;
  c.pre = c.post = true;
  run_fftconv(c, 37403);
}

// The benchmark's own shapes (benchmarks/fftconv.py: H 768, B * L = 64K) at L 4K and 16K,
// sampled rows (full-length causal filters: ~8e6 and ~1.3e8 multiply-adds per sampled row).
TEST_CASE("gpu fftconv: the benchmark's H 768 shapes at L 4K and 16K", "[gpu][fftconv]") {
  ConvCase c;
  c.batch = 16;
  c.channels = 768;
  c.mode = FK_FFTCONV_CAUSAL;
  c.seqlen = 4096;
  c.dtype = DT::BF16;
  c.with_D = true;
  c.pre = c.post = true;
  c.constant = true;
  c.repeats = 2;
  c.u_scale = 0.02;
  c.sample_rows = 12;
  run_fftconv(c, 37500);
  c.batch = 4;
  c.seqlen = 16384;
  c.dtype = DT::F16;
  c.k_dt = DT::F16;
  c.pre = c.post = false;
  c.constant = false;
  c.repeats = 1;
  c.sample_rows = 8;
  run_fftconv(c, 37501);
}

TEST_CASE("gpu fftconv: 111 channels, gates, D, each mode", "[gpu][fftconv]") {
  int i = 0;
  for (fk_fftconv_mode_t m : {FK_FFTCONV_CAUSAL, FK_FFTCONV_CIRCULAR, FK_FFTCONV_BIDIRECTIONAL}) {
    ConvCase c;
    c.mode = m;
    c.batch = 3;
    c.channels = 111;
    c.seqlen = 500;
    c.filter_len = m == FK_FFTCONV_BIDIRECTIONAL ? 201 : 0;
    c.with_D = true;
    c.pre = true;
    c.post = true;
    c.dtype = dtype_by_index(i);
    c.k_dt = dtype_by_index(i + 1);
    c.d_dt = dtype_by_index(i + 2);
    c.pad = 3;
    run_fftconv(c, 31000 + uint64_t(i++));
  }
}

TEST_CASE("gpu fftconv: constant filter cached across calls and batch sizes", "[gpu][fftconv]") {
  ConvCase c;
  c.batch = 4;
  c.channels = 7;
  c.seqlen = 3000;
  c.constant = true;
  c.repeats = 3;
  c.with_D = true;
  run_fftconv(c, 32000);
  c.fft_size = 32768;  // four-step path with a cached spectrum
  c.seqlen = 9000;
  c.filter_len = 120;
  c.batch = 1;
  run_fftconv(c, 32001);
}

TEST_CASE("gpu fftconv: constant filter, a new filter pointer is a new spectrum",
          "[gpu][fftconv][sanitize]") {
  // One plan, two filters at different addresses: the cached spectrum is keyed on the pointer,
  // so the second call must not reuse the first filter's spectrum.
  const int64_t batch = 2, channels = 3, seqlen = 200;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.channels = channels;
  o.seqlen = seqlen;
  o.flags = FK_FFTCONV_FILTER_CONSTANT;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE_FK(fk_fftconv_plan_create(gpu(), &o, &plan));
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
      plan, fk_fftconv_plan_destroy);
  fk_fftconv_plan_options_t resolved;
  fk_fftconv_plan_options_init(&resolved);
  REQUIRE_FK(fk_fftconv_plan_get_options(plan, &resolved));
  auto rng = rng_for(36000);
  HostTensor u(DT::F32, {batch, channels, seqlen}), y(DT::F32, {batch, channels, seqlen});
  HostTensor k1(DT::F32, {channels, seqlen}), k2(DT::F32, {channels, seqlen});
  u.fill_normal(rng);
  k1.fill_normal(rng, 0.05);
  k2.fill_normal(rng, 0.05);
  DeviceTensor du(u), dy(y), dk1(k1), dk2(k2);
  for (int call = 0; call < 4; ++call) {
    HostTensor& k = (call % 2) ? k2 : k1;
    DeviceTensor& dk = (call % 2) ? dk2 : dk1;
    INFO("call " << call << " with filter " << (call % 2 ? "k2" : "k1"));
    dy.poison();
    REQUIRE_FK(fk_fftconv_forward(plan, nullptr, &du, &dk, nullptr, nullptr, nullptr, &dy));
    dy.download();
    const std::vector<double> ref =
        fkref::fftconv(u.to_vector(), k.to_vector(), nullptr, nullptr, nullptr, batch, channels,
                       seqlen, seqlen, fkref::ConvMode::Causal, resolved.fft_size);
    check_output(y, ref, DT::F32, "fftconv y", 4.0);
  }
}

TEST_CASE("gpu fftconv: odd shapes", "[gpu][fftconv][sanitize]") {
  ConvCase c;
  c.seqlen = 1;  // fft_size 1
  c.batch = 3;
  c.channels = 2;
  c.with_D = true;
  run_fftconv(c, 33000);
  c.seqlen = 2;
  run_fftconv(c, 33001);
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.seqlen = 5;
  c.filter_len = 21;  // R = 10 > seqlen - 1: wrapped taps never reach an output
  run_fftconv(c, 33002);
  c.mode = FK_FFTCONV_CAUSAL;
  c.seqlen = 100;
  c.filter_len = 1000;  // longer than the sequence
  c.fft_size = 4096;    // larger than needed
  c.dtype = DT::BF16;
  c.pre = c.post = true;
  run_fftconv(c, 33003);
  c.mode = FK_FFTCONV_CIRCULAR;
  c.seqlen = 37;
  c.filter_len = 64;
  c.fft_size = 64;
  c.dtype = DT::F16;
  c.k_dt = DT::BF16;
  run_fftconv(c, 33004);
}

TEST_CASE("gpu fftconv: four-step path, small", "[gpu][fftconv][sanitize]") {
  ConvCase c;
  c.mode = FK_FFTCONV_BIDIRECTIONAL;
  c.fft_size = 16384;
  c.seqlen = 10000;
  c.filter_len = 65;
  c.batch = 3;
  c.channels = 2;
  c.with_D = true;
  c.post = true;
  run_fftconv(c, 34000);
}

TEST_CASE("gpu fftconv: non-default stream", "[gpu][fftconv][stream]") {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ConvCase c;
  c.batch = 2;
  c.channels = 3;
  c.seqlen = 1000;
  c.stream = s;
  c.constant = true;
  c.repeats = 2;
  run_fftconv(c, 35000);
  c.fft_size = 65536;
  c.seqlen = 20000;
  c.filter_len = 50;
  run_fftconv(c, 35001);
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

}  // namespace

#endif  // FLASHKIT_TEST_WITH_CUDA
