// CUDA graph capture. Inference servers capture a model's forward once
// (cudaStreamBeginCapture, or torch.cuda.graph around the same calls) and replay it with new
// inputs copied into the same buffers, so that the host launches one graph instead of dozens of
// kernels. Each case here makes one call outside the capture (as such servers do: a warm-up
// builds lazily made state such as fftconv plan tables), captures the same call on a non-blocking
// stream, then twice fills the inputs with fresh random values, poisons the output, launches the
// graph and checks the output against the float64 reference of those inputs. The second launch
// checks that a replay re-initialises what the kernels keep between CTAs (split-K counters,
// stream-ordered scratch).
// And the calls that cannot be captured (varlen attention that would read cu_seqlens back, an
// fftconv plan whose tables are not built yet) return a status that names the argument, enqueue
// nothing, and leave the capture usable.
#include <catch2/catch.hpp>

// The CPU-only build compiles the GPU suite without the CUDA runtime: nothing to test there.
#if defined(FLASHKIT_TEST_WITH_CUDA)

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention_check.hpp"
#include "attention_fp8_case.hpp"
#include "gemm_check.hpp"
#include "gpu_test_util.hpp"
#include "reference/reference.hpp"
#include "test_util.hpp"

namespace {

using fkgpu::DeviceTensor;
using fkgpu::rng_for;
using fktest::DT;
using fktest::HostTensor;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s); }
};

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~Graph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

// Captures call() (an fk_* call on `s`) into *g and instantiates it. `want` is the status the
// call must return; on anything but FK_SUCCESS the capture must still end cleanly (the call
// enqueued nothing that broke it), and `message_has` must appear in the error message.
template <class Call>
void capture(cudaStream_t s, Graph* g, Call&& call, fk_status_t want = FK_SUCCESS,
             const char* message_has = nullptr) {
  REQUIRE_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  const fk_status_t st = call();
  const std::string msg = fk_get_last_error_message();
  const cudaError_t end = cudaStreamEndCapture(s, &g->graph);
  INFO("call under capture -> " << fk_status_string(st) << ": " << msg);
  CHECK(st == want);
  REQUIRE_CUDA(end);
  if (message_has) CHECK(msg.find(message_has) != std::string::npos);
  REQUIRE_CUDA(cudaGraphInstantiate(&g->exec, g->graph, 0));
}

void upload(DeviceTensor& d) {
  REQUIRE_CUDA(cudaMemcpy(d.base, d.host->bytes.data(), d.host->bytes.size(),
                          cudaMemcpyHostToDevice));
}

void replay(const Graph& g, cudaStream_t s) {
  REQUIRE_CUDA(cudaGraphLaunch(g.exec, s));
  REQUIRE_CUDA(cudaStreamSynchronize(s));
}

// ---------------------------------------------------------------------------------------------
// GEMM: D = act(alpha A B^T + beta C + bias), B as (N, K) (a Linear layer's weight).
// ---------------------------------------------------------------------------------------------
struct GemmGraphCase {
  const char* what;
  fk_kernel_family_t family;
  int64_t M, N, K;
  DT ab, cd;
  bool with_c;
  int act;
  bool workspace;  // a caller workspace instead of stream-ordered scratch
};

void gemm_graph(const GemmGraphCase& c, uint64_t tag) {
  INFO(c.what << ": M " << c.M << " N " << c.N << " K " << c.K << " " << fktest::dt_name(c.ab)
               << " -> " << fktest::dt_name(c.cd) << (c.with_c ? " + C" : "") << " act "
               << c.act << (c.workspace ? ", caller workspace" : "") << ", seed "
               << fktest::test_seed());
  const fk_context_t* ctx = fkgpu::context_for(c.family);
  if (ctx == nullptr) {
    WARN("kernel family " << int(c.family) << " unavailable on this device: skipped");
    return;
  }
  auto rng = rng_for(tag);
  HostTensor a(c.ab, {c.M, c.K}), b(c.ab, {c.N, c.K}), cm(c.cd, {c.M, c.N}),
      bias(DT::F32, {c.N}), d(c.cd, {c.M, c.N});
  a.fill_normal(rng);
  b.fill_normal(rng);
  cm.fill_normal(rng);
  bias.fill_normal(rng);
  DeviceTensor da(a), db(b), dc(cm), dbias(bias), dd(d);
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.trans_b = 1;
  p.beta = c.with_c ? 1.0f : 0.0f;
  p.activation = c.act;
  Stream s;
  void* ws = nullptr;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  if (c.workspace) {
    REQUIRE_CUDA(cudaMalloc(&ws, 64 << 20));
    launch.workspace = ws;
    launch.workspace_bytes = 64 << 20;
  }
  std::unique_ptr<void, cudaError_t (*)(void*)> ws_guard(ws, cudaFree);
  const char* variant = "?";
  REQUIRE_FK(fk_gemm_select_kernel(ctx, &p, &da, &db, c.with_c ? &dc : nullptr, &dbias, &dd,
                                   &variant));
  INFO("variant " << variant);
  auto call = [&] {
    return fk_gemm(ctx, &launch, &p, &da, &db, c.with_c ? &dc : nullptr, &dbias, &dd);
  };
  REQUIRE_FK(call());  // warm-up, outside the capture
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  Graph g;
  capture(s.s, &g, call);
  for (int rep = 0; rep < 2; ++rep) {
    INFO("graph launch " << rep + 1);
    a.fill_normal(rng);
    b.fill_normal(rng);
    cm.fill_normal(rng);
    bias.fill_normal(rng);
    upload(da);
    upload(db);
    upload(dc);
    upload(dbias);
    dd.poison();
    replay(g, s.s);
    dd.download();
    fkref::GemmParams rp;
    rp.trans_b = true;
    rp.beta = p.beta;
    rp.activation = c.act;
    const std::vector<double> av = a.to_vector(), bv = b.to_vector(), cv = cm.to_vector(),
                              biasv = bias.to_vector();
    const std::vector<double> ref = fkref::gemm(av, 1, bv, 1, c.with_c ? &cv : nullptr, 1,
                                                &biasv, 1, c.M, c.N, c.K, rp);
    fkref::GemmParams sp = rp;
    sp.activation = 0;
    const std::vector<double> cva = fktest::absolute(cv), biasa = fktest::absolute(biasv);
    const std::vector<double> scale =
        fkref::gemm(fktest::absolute(av), 1, fktest::absolute(bv), 1, c.with_c ? &cva : nullptr,
                    1, &biasa, 1, c.M, c.N, c.K, sp);
    fkgemm::check_output(d, ref, scale, c.cd);
  }
}

}  // namespace

TEST_CASE("gpu graph capture: gemm (sm90 skinny, split-K, decode, 128 x 256, sm80, generic)",
          "[gpu][graph][gemm]") {
  const GemmGraphCase cases[] = {
      // The demo's QKV projection: a sub-wave grid (the sm90 skinny kernel on an H200).
      {"sub-wave", FK_KERNEL_FAMILY_AUTO, 1128, 1152, 384, DT::BF16, DT::BF16, false, 0, false},
      // Decode-sized M: split-K, its counters reset by a memset node on every launch.
      // (128 k-tiles: the H200's table splits K in two, each slice keeping 64 k-tiles. M = 33:
      // above the decode kernel's 32 rows, so the skinny kernel's split-K runs whatever N is;
      // at N = 2048 the decode kernel only takes M <= 16.)
      {"split-K", FK_KERNEL_FAMILY_AUTO, 33, 2048, 8192, DT::BF16, DT::BF16, false, 2, false},
      {"split-K, caller workspace", FK_KERNEL_FAMILY_AUTO, 33, 2048, 8192, DT::F16, DT::F16,
       false, 1, true},
      // M = 16: the decode kernel (no workspace) on an H200.
      {"decode", FK_KERNEL_FAMILY_AUTO, 16, 2048, 8192, DT::BF16, DT::BF16, false, 1, false},
      // Residual in C, fp32 D (the demo's output projection), and a multi-wave grid.
      {"residual", FK_KERNEL_FAMILY_AUTO, 1128, 384, 1536, DT::BF16, DT::F32, true, 0, false},
      {"many tiles", FK_KERNEL_FAMILY_AUTO, 1280, 4096, 256, DT::F16, DT::F16, false, 3, false},
      {"sm80 family", FK_KERNEL_FAMILY_SM80, 300, 600, 520, DT::BF16, DT::BF16, true, 2, false},
      {"generic family", FK_KERNEL_FAMILY_GENERIC, 70, 96, 130, DT::F32, DT::F32, true, 1,
       false},
  };
  uint64_t tag = 61000;
  for (const GemmGraphCase& c : cases) gemm_graph(c, tag++);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Attention: varlen with max_seqlen_q/k given (the demo's call), and batched GQA causal.
// ---------------------------------------------------------------------------------------------
void attention_graph(const fkattn::Case& c, uint64_t tag, bool give_max) {
  INFO(fkattn::describe(c) << ", seed " << fktest::test_seed());
  const fk_context_t* ctx = fkgpu::auto_context();
  const fkattn::Problem& pr = c.pr;
  auto rng = rng_for(tag);
  int64_t mq = 0, mk = 0;
  for (size_t b = 0; b < pr.lq.size(); ++b) {
    mq = std::max(mq, pr.lq[b]);
    mk = std::max(mk, pr.lk[b]);
  }
  const fkattn::Shapes sh = fkattn::shapes_of(c);
  HostTensor q(pr.dt, sh.q), k(pr.dt, sh.k), v(pr.dt, sh.k), out(pr.dt, sh.q), lse(DT::F32, sh.lse);
  HostTensor cq, ck;
  fkattn::fill_cu_seqlens(pr.lq, cq);
  fkattn::fill_cu_seqlens(pr.lk, ck);
  q.fill_normal(rng);
  k.fill_normal(rng);
  v.fill_normal(rng);
  DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse), dcq(cq), dck(ck);
  fk_attention_params_t params = fkattn::params_of(pr);
  if (c.varlen && give_max) {
    params.max_seqlen_q = mq;
    params.max_seqlen_k = mk;
  }
  const DLTensor* cu_q = c.varlen ? &dcq : nullptr;
  const DLTensor* cu_k = c.varlen ? &dck : nullptr;
  Stream s;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  auto call = [&] {
    return fk_attention_forward(ctx, &launch, &params, &dq, &dk, &dv, cu_q, cu_k, &dout, &dlse);
  };
  REQUIRE_FK(call());  // warm-up, outside the capture
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  Graph g;
  if (c.varlen && !give_max) {
    // Without max_seqlen_q/k the library would read cu_seqlens back: refused under capture.
    dout.poison();
    dlse.poison();
    capture(s.s, &g, call, FK_ERROR_INVALID_ARGUMENT, "max_seqlen_q");
    params.max_seqlen_q = mq;  // q's given, k's not: the message names max_seqlen_k
    Graph g2;
    capture(s.s, &g2, call, FK_ERROR_INVALID_ARGUMENT, "max_seqlen_k");
    replay(g, s.s);  // empty graphs
    replay(g2, s.s);
    dout.download();
    dlse.download();
    CHECK(out.all_poison());
    CHECK(lse.all_poison());
    return;
  }
  capture(s.s, &g, call);
  for (int rep = 0; rep < 2; ++rep) {
    INFO("graph launch " << rep + 1);
    q.fill_normal(rng);
    k.fill_normal(rng);
    v.fill_normal(rng);
    upload(dq);
    upload(dk);
    upload(dv);
    dout.poison();
    dlse.poison();
    replay(g, s.s);
    dout.download();
    dlse.download();
    fkattn::check_result(c, q, k, v, out, lse);
  }
}

fkattn::Case varlen_case(DT dt) {
  fkattn::Case c;
  c.varlen = true;
  c.pr.lq = {8, 29, 67, 1, 40, 17};
  c.pr.lk = c.pr.lq;
  c.pr.nheads = 12;
  c.pr.nheads_k = 12;
  c.pr.d = 32;
  c.pr.dt = dt;
  c.pr.scale = 1.0 / std::sqrt(32.0);
  return c;
}

}  // namespace

TEST_CASE("gpu graph capture: attention (varlen with max_seqlen, batched GQA causal)",
          "[gpu][graph][attention]") {
  attention_graph(varlen_case(DT::BF16), 62000, true);
  fkattn::Case c = fkattn::batched(2, 300, 300, 8, 2, 128, DT::F16);
  c.pr.causal = true;
  c.pr.scale = 1.0 / std::sqrt(128.0);
  attention_graph(c, 62001, true);
  fkattn::Case w = fkattn::batched(3, 130, 257, 4, 4, 64, DT::BF16);
  w.pr.wl = 40;
  w.pr.wr = 7;
  w.pr.softcap = 20;
  attention_graph(w, 62002, true);
}

TEST_CASE("gpu graph capture: varlen attention without max_seqlen is refused under capture",
          "[gpu][graph][attention][validation]") {
  attention_graph(varlen_case(DT::F16), 62100, false);
}

namespace {

// Relative size of a result: the root mean square of its reference.
double rms_of(const std::vector<double>& r) {
  double s = 0;
  for (double x : r) s += x * x;
  return r.empty() ? 0.0 : std::sqrt(s / double(r.size()));
}

}  // namespace

TEST_CASE("gpu graph capture: monarch", "[gpu][graph][monarch]") {
  // AUTO (the Hopper kernel on an H200), then the SM80 family: cuda.sm80.monarch_unfused, whose
  // chunk buffers come from stream-ordered allocations inside the graph.
  const fk_kernel_family_t fam = GENERATE(FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80);
  const fk_context_t* ctx = fkgpu::context_for(fam);
  if (ctx == nullptr) return;
  // 1 MiB of scratch over 1024 columns: four chunks of up to 256 tokens on the unfused variant.
  fktest::ScopedEnv chunk("FLASHKIT_MONARCH_UNFUSED_CHUNK_MB", "1");
  auto rng = rng_for(63000);
  const int64_t tokens = 1000, nb = 16, blk = 64, n = nb * blk;
  HostTensor x(DT::BF16, {tokens, n}), w1(DT::BF16, {nb, blk, blk}), w2(DT::BF16, {nb, blk, blk});
  HostTensor bias(DT::F32, {n}), out(DT::BF16, {tokens, n});
  x.fill_normal(rng);
  w1.fill_normal(rng, 1.0 / std::sqrt(double(blk)));
  w2.fill_normal(rng, 1.0 / std::sqrt(double(blk)));
  bias.fill_normal(rng);
  DeviceTensor dx(x), dw1(w1), dw2(w2), dbias(bias), dout(out);
  fk_monarch_params_t mp;
  fk_monarch_params_init(&mp);
  const char* variant = "?";
  REQUIRE_FK(fk_monarch_select_kernel(ctx, &mp, &dx, &dw1, &dw2, &dbias, &dout, &variant));
  INFO("variant " << variant << ", seed " << fktest::test_seed());
  if (fam == FK_KERNEL_FAMILY_SM80) CHECK(std::string(variant) == "cuda.sm80.monarch_unfused");
  Stream s;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  auto call = [&] { return fk_monarch(ctx, &launch, &mp, &dx, &dw1, &dw2, &dbias, &dout); };
  REQUIRE_FK(call());
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  Graph g;
  capture(s.s, &g, call);
  for (int rep = 0; rep < 2; ++rep) {
    INFO("graph launch " << rep + 1);
    x.fill_normal(rng);
    upload(dx);
    dout.poison();
    replay(g, s.s);
    dout.download();
    const std::vector<double> bv = bias.to_vector(), ba = fktest::absolute(bv);
    const std::vector<double> w1v = w1.to_vector(), w2v = w2.to_vector(), xv = x.to_vector();
    const std::vector<double> ref =
        fkref::monarch(xv, w1v, w2v, &bv, tokens, nb, blk, blk, nb, blk, blk);
    const std::vector<double> scale =
        fkref::monarch(fktest::absolute(xv), fktest::absolute(w1v), fktest::absolute(w2v), &ba,
                       tokens, nb, blk, blk, nb, blk, blk);
    fkgemm::check_output(out, ref, scale, DT::BF16);
  }
}

TEST_CASE("gpu graph capture: fftconv with a constant filter; a plan's first call is refused",
          "[gpu][graph][fftconv]") {
  const fk_context_t* ctx = fkgpu::auto_context();
  auto rng = rng_for(64000);
  const int64_t B = 2, H = 111, L = 1000;
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.mode = FK_FFTCONV_CAUSAL;
  o.channels = H;
  o.seqlen = L;
  o.filter_len = L;
  o.dtype = fktest::dl_dtype(DT::BF16);
  o.flags = FK_FFTCONV_FILTER_CONSTANT;
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE_FK(fk_fftconv_plan_create(ctx, &o, &plan));
  std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
      plan, fk_fftconv_plan_destroy);
  fk_fftconv_plan_options_t resolved;
  fk_fftconv_plan_options_init(&resolved);
  REQUIRE_FK(fk_fftconv_plan_get_options(plan, &resolved));
  HostTensor u(DT::BF16, {B, H, L}), y(DT::BF16, {B, H, L}), k(DT::F32, {H, L}), D(DT::F32, {H});
  u.fill_normal(rng);
  fkgpu::fill_decaying_filter(k, L, rng);
  D.fill_normal(rng);
  DeviceTensor du(u), dy(y), dk(k), dD(D);
  const char* variant = "?";
  REQUIRE_FK(fk_fftconv_select_kernel(plan, &du, &dk, &dD, nullptr, nullptr, &dy, &variant));
  INFO("variant " << variant << ", fft_size " << resolved.fft_size << ", seed "
                  << fktest::test_seed());
  Stream s;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  auto call = [&] {
    return fk_fftconv_forward(plan, &launch, &du, &dk, &dD, nullptr, nullptr, &dy);
  };
  {
    // The plan's first call builds its tables: refused under capture, nothing enqueued.
    dy.poison();
    Graph g0;
    capture(s.s, &g0, call, FK_ERROR_NOT_SUPPORTED, "before the capture");
    replay(g0, s.s);
    dy.download();
    CHECK(y.all_poison());
  }
  REQUIRE_FK(call());  // the warm-up call builds them
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  Graph g;
  capture(s.s, &g, call);
  // y against the float64 FFT reference of the current u and D with the captured filter k.
  // FFT round trips carry log2(fft_size) rounding steps per element: 4x the dtype's bound,
  // relative to the output's size (as the fftconv suite does).
  const std::vector<double> kv = k.to_vector();
  auto check_y = [&] {
    const std::vector<double> Dv = D.to_vector();
    const std::vector<double> ref =
        fkref::fftconv(u.to_vector(), kv, &Dv, nullptr, nullptr, B, H, L, L,
                       fkref::ConvMode::Causal, resolved.fft_size);
    std::vector<double> scale(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) scale[i] = 4.0 * std::fabs(ref[i]);
    INFO("output rms " << rms_of(ref));
    fkgemm::check_output(y, ref, scale, DT::BF16);
  };
  for (int rep = 0; rep < 2; ++rep) {
    INFO("graph launch " << rep + 1);
    u.fill_normal(rng, 0.5);
    D.fill_normal(rng);
    upload(du);
    upload(dD);
    dy.poison();
    replay(g, s.s);
    dy.download();
    check_y();
  }
  // A call with another filter replaces the plan's cached spectrum; the graph still holds the
  // old one's address, which the plan keeps (freed with the plan): the replay must still give
  // the captured filter's result (and memcheck, which runs this case, sees no freed memory).
  HostTensor k2(DT::F32, {H, L});
  k2.fill_normal(rng, 0.01);
  DeviceTensor dk2(k2);
  REQUIRE_FK(fk_fftconv_forward(plan, &launch, &du, &dk2, &dD, nullptr, nullptr, &dy));
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  dy.poison();
  replay(g, s.s);
  dy.download();
  INFO("replay after the plan's spectrum was replaced");
  check_y();
}

// ---------------------------------------------------------------------------------------------
// fk_*_workspace_size: with a workspace of the reported size the call allocates nothing, and the
// size is tight. Capture makes allocations visible: every stream-ordered scratch allocation of a
// captured call becomes a memory-allocation node of the graph.
// ---------------------------------------------------------------------------------------------
namespace {

int alloc_nodes(cudaGraph_t graph) {
  size_t n = 0;
  REQUIRE_CUDA(cudaGraphGetNodes(graph, nullptr, &n));
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) REQUIRE_CUDA(cudaGraphGetNodes(graph, nodes.data(), &n));
  int allocs = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    REQUIRE_CUDA(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemAlloc) ++allocs;
  }
  return allocs;
}

// `call(launch)` runs the op with that launch. With `bytes` (the query's answer) at a start
// address one byte past a 256-byte boundary (the worst case the count allows for), and with the
// buffers' exact sum (bytes - 255) at an aligned start, the captured call has no allocation node;
// one byte less at the aligned start and it has one. A replay of the first graph must work.
template <class Call>
void check_workspace_size(uint64_t bytes, bool expect_scratch, Call&& call) {
  INFO("workspace_size " << bytes);
  Stream s;
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = s.s;
  if (bytes == 0) {
    CHECK_FALSE(expect_scratch);
    REQUIRE_FK(call(&launch));  // warm-up (plan tables), then: no scratch, no allocation
    REQUIRE_CUDA(cudaStreamSynchronize(s.s));
    Graph g;
    capture(s.s, &g, [&] { return call(&launch); });
    CHECK(alloc_nodes(g.graph) == 0);
    return;
  }
  CHECK(expect_scratch);
  REQUIRE(bytes > 255);
  void* base = nullptr;
  REQUIRE_CUDA(cudaMalloc(&base, bytes + 256));
  std::unique_ptr<void, cudaError_t (*)(void*)> guard(base, cudaFree);
  char* aligned = static_cast<char*>(base);  // cudaMalloc: 256-byte aligned
  REQUIRE_FK(call(&launch));
  REQUIRE_CUDA(cudaStreamSynchronize(s.s));
  struct Try {
    char* start;
    uint64_t size;
    bool allocates;
  } tries[] = {{aligned + 1, bytes, false},
               {aligned, bytes - 255, false},
               {aligned, bytes - 256, true}};
  for (const Try& t : tries) {
    INFO("workspace at +" << (t.start - aligned) << ", " << t.size << " bytes");
    launch.workspace = t.start;
    launch.workspace_bytes = t.size;
    Graph g;
    capture(s.s, &g, [&] { return call(&launch); });
    if (t.allocates) {
      CHECK(alloc_nodes(g.graph) > 0);
    } else {
      CHECK(alloc_nodes(g.graph) == 0);
      replay(g, s.s);
    }
  }
}

fk_fftconv_plan_t* make_plan(const fk_context_t* ctx, int64_t H, int64_t L, DT dt) {
  fk_fftconv_plan_options_t o;
  fk_fftconv_plan_options_init(&o);
  o.channels = H;
  o.seqlen = L;
  o.dtype = fktest::dl_dtype(dt);  // flags 0: the spectrum is recomputed per call (scratch)
  fk_fftconv_plan_t* plan = nullptr;
  REQUIRE_FK(fk_fftconv_plan_create(ctx, &o, &plan));
  return plan;
}

}  // namespace

TEST_CASE("gpu workspace size queries: the reported size covers the call, and is tight",
          "[gpu][graph][workspace]") {
  SECTION("gemm: split-K on the auto family (sm90 on an H200) and on sm80") {
    for (fk_kernel_family_t fam : {FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80}) {
      const fk_context_t* ctx = fkgpu::context_for(fam);
      if (ctx == nullptr) continue;
      auto rng = rng_for(65000);
      // M = 33: above the sm90 decode kernel's 32 rows (which needs no workspace), so split-K.
      HostTensor a(DT::BF16, {33, 8192}), b(DT::BF16, {2048, 8192}), d(DT::BF16, {33, 2048});
      a.fill_normal(rng);
      b.fill_normal(rng);
      DeviceTensor da(a), db(b), dd(d);
      fk_gemm_params_t p;
      fk_gemm_params_init(&p);
      p.trans_b = 1;
      const char* variant = "?";
      REQUIRE_FK(fk_gemm_select_kernel(ctx, &p, &da, &db, nullptr, nullptr, &dd, &variant));
      uint64_t bytes = 0;
      REQUIRE_FK(fk_gemm_workspace_size(ctx, &p, &da, &db, nullptr, nullptr, &dd, &bytes));
      INFO("family " << int(fam) << ", variant " << variant);
      // Decode-sized M with K = 8192: split-K on the sm90 kernel (the graph case above);
      // whether sm80's table splits it is its own choice, checked for consistency either way.
      const bool sm90 = std::string(variant) == "cuda.sm90.gemm";
      check_workspace_size(bytes, sm90 || bytes > 0, [&](const fk_launch_t* l) {
        return fk_gemm(ctx, l, &p, &da, &db, nullptr, nullptr, &dd);
      });
    }
  }
  SECTION("attention fp8: the Hopper kernel's V^T pass (head_dim 256, long keys) and copy of a "
          "strided v; none for a v on the 16-byte rule; the dequantising path's copies") {
    const fk_context_t* ctx = fkgpu::auto_context();
    // (head_dim, v padded, query heads per kv head): 128 compact, 128 with v off the 16-byte
    // rule, 256 compact and strided with 2 query heads per kv head (transposed in the kernel),
    // 256 compact with 16 (the pass: ~1500 query rows read each key).
    struct Shape {
      int64_t hd;
      bool vpad;
      int64_t group;
    };
    const Shape shapes[] = {{128, false, 2}, {128, true, 2}, {256, false, 2}, {256, true, 2},
                            {256, false, 16}};
    uint64_t tag = 65050;
    for (const auto& [hd, vpad, group] : shapes) {
      fktest::Fp8AttnCase c;
      c.batch = 2;
      c.seqlen_q = 100;
      c.seqlen_k = 200;
      c.nheads_k = 1;
      c.nheads = group;
      c.head_dim = hd;
      c.v_padded = vpad;
      auto rng = rng_for(++tag);
      c.build(rng);
      c.prm.causal = 1;
      DeviceTensor q(c.q), k(c.k), v(c.v), dq(c.dq), dk(c.dk), dv(c.dv), out(c.out), lse(c.lse);
      const char* variant = "?";
      REQUIRE_FK(fk_attention_fp8_select_kernel(ctx, &c.prm, &q, &k, &v, &dq, &dk, &dv, nullptr,
                                                nullptr, &out, &lse, &variant));
      uint64_t bytes = 0;
      REQUIRE_FK(fk_attention_fp8_workspace_size(ctx, &c.prm, &q, &k, &v, &dq, &dk, &dv, nullptr,
                                                 nullptr, &out, &lse, &bytes));
      INFO("head_dim " << hd << ", v padded " << vpad << ", group " << group << ", variant " << variant);
      const bool native = std::string(variant) == "cuda.sm90.attention_fp8";
      // Native: scratch only for the head_dim 256 pass and the strided v's copy; the
      // dequantising path always copies q, k and v.
      const bool expect = !native || !fktest::fp8_vt_in_kernel(c) || vpad;
      check_workspace_size(bytes, expect, [&](const fk_launch_t* l) {
        return fk_attention_fp8_forward(ctx, l, &c.prm, &q, &k, &v, &dq, &dk, &dv, nullptr,
                                        nullptr, &out, &lse);
      });
    }
  }
  SECTION("monarch: the generic kernel's fp32 intermediate, the unfused variant's chunk buffers; "
          "the fused kernels take none") {
    for (fk_kernel_family_t fam :
         {FK_KERNEL_FAMILY_GENERIC, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_AUTO}) {
      const fk_context_t* ctx = fkgpu::context_for(fam);
      if (ctx == nullptr) continue;
      auto rng = rng_for(65100);
      HostTensor x(DT::BF16, {37, 1024}), w1(DT::BF16, {16, 64, 64}), w2(DT::BF16, {16, 64, 64});
      HostTensor out(DT::BF16, {37, 1024}), bias(DT::F32, {1024});
      x.fill_normal(rng);
      w1.fill_normal(rng, 0.125);
      w2.fill_normal(rng, 0.125);
      bias.fill_normal(rng);
      DeviceTensor dx(x), dw1(w1), dw2(w2), dout(out), dbias(bias);
      fk_monarch_params_t mp;
      fk_monarch_params_init(&mp);
      const char* variant = "?";
      REQUIRE_FK(fk_monarch_select_kernel(ctx, &mp, &dx, &dw1, &dw2, &dbias, &dout, &variant));
      uint64_t bytes = 0;
      REQUIRE_FK(fk_monarch_workspace_size(ctx, &mp, &dx, &dw1, &dw2, &dbias, &dout, &bytes));
      INFO("variant " << variant);
      const bool generic = std::string(variant) == "cuda.generic.monarch";
      const bool unfused = std::string(variant) == "cuda.sm80.monarch_unfused";
      if (fam == FK_KERNEL_FAMILY_SM80) CHECK(unfused);
      if (generic) CHECK(bytes >= uint64_t(37) * 1024 * 4);
      // Two bf16 chunk buffers and the permuted fp32 bias.
      if (unfused) CHECK(bytes >= 2 * uint64_t(37) * 1024 * 2 + 1024 * 4);
      check_workspace_size(bytes, generic || unfused, [&](const fk_launch_t* l) {
        return fk_monarch(ctx, l, &mp, &dx, &dw1, &dw2, &dbias, &dout);
      });
    }
  }
  SECTION("attention: split-KV decode (chunk queries, outputs, lse, cu_seqlens)") {
    // Batch 2 x 8 KV heads (32 query heads) x 8192 keys: 16 tiles, split on every CUDA row.
    for (fk_kernel_family_t fam :
         {FK_KERNEL_FAMILY_AUTO, FK_KERNEL_FAMILY_SM80, FK_KERNEL_FAMILY_GENERIC}) {
      const fk_context_t* ctx = fkgpu::context_for(fam);
      if (ctx == nullptr) continue;
      auto rng = rng_for(65300);
      HostTensor q(DT::BF16, {2, 1, 32, 128}), k(DT::BF16, {2, 8192, 8, 128}),
          v(DT::BF16, {2, 8192, 8, 128}), out(DT::BF16, {2, 1, 32, 128}),
          lse(DT::F32, {2, 32, 1});
      q.fill_normal(rng);
      k.fill_normal(rng);
      v.fill_normal(rng);
      DeviceTensor dq(q), dk(k), dv(v), dout(out), dlse(lse);
      fk_attention_params_t ap;
      fk_attention_params_init(&ap);
      const char* variant = "?";
      REQUIRE_FK(fk_attention_select_kernel(ctx, &ap, &dq, &dk, &dv, nullptr, nullptr, &dout,
                                            &dlse, &variant));
      uint64_t bytes = 0;
      REQUIRE_FK(fk_attention_workspace_size(ctx, &ap, &dq, &dk, &dv, nullptr, nullptr, &dout,
                                             &dlse, &bytes));
      INFO("family " << int(fam) << ", variant " << variant);
      CHECK(bytes >= uint64_t(2) * 2 * 32 * 128 * 2);  // at least two chunks' queries
      check_workspace_size(bytes, true, [&](const fk_launch_t* l) {
        return fk_attention_forward(ctx, l, &ap, &dq, &dk, &dv, nullptr, nullptr, &dout, &dlse);
      });
    }
  }
  SECTION("fftconv plans that recompute the spectrum: every kernel's size range") {
    const fk_context_t* ctx = fkgpu::auto_context();
    struct Conv {
      int64_t B, H, L;
      DT dt;
    } convs[] = {{3, 8, 1000, DT::F16},    // fft_size 2048
                 {2, 4, 16000, DT::BF16},  // fft_size 32768
                 {3, 2, 32768, DT::BF16},  // fft_size 65536: the two-pass kernel's first-pass store
                 {2, 2, 32768, DT::F32}};  // fft_size 65536: the generic four-step path
    for (const Conv& c : convs) {
      auto rng = rng_for(65200 + uint64_t(c.L));
      fk_fftconv_plan_t* plan = make_plan(ctx, c.H, c.L, c.dt);
      std::unique_ptr<fk_fftconv_plan_t, fk_status_t (*)(fk_fftconv_plan_t*)> guard(
          plan, fk_fftconv_plan_destroy);
      HostTensor u(c.dt, {c.B, c.H, c.L}), y(c.dt, {c.B, c.H, c.L}), k(DT::F32, {c.H, c.L});
      u.fill_normal(rng);
      fkgpu::fill_decaying_filter(k, c.L, rng);
      DeviceTensor du(u), dy(y), dk(k);
      const char* variant = "?";
      REQUIRE_FK(fk_fftconv_select_kernel(plan, &du, &dk, nullptr, nullptr, nullptr, &dy,
                                          &variant));
      uint64_t bytes = 0;
      REQUIRE_FK(fk_fftconv_workspace_size(plan, &du, &dk, nullptr, nullptr, nullptr, &dy,
                                           &bytes));
      INFO("L " << c.L << ", variant " << variant);
      check_workspace_size(bytes, true, [&](const fk_launch_t* l) {
        return fk_fftconv_forward(plan, l, &du, &dk, nullptr, nullptr, nullptr, &dy);
      });
    }
  }
}

#endif  // FLASHKIT_TEST_WITH_CUDA
