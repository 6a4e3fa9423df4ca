// fk_attention_fp8_forward on the CPU backend: e4m3fn q, k, v with per-(sequence, kv-head)
// descale factors against the float64 reference on the dequantised values; bit-for-bit equal to
// fk_attention_forward on the bf16-rounded dequantised tensors; every validation rule of the
// fp8 form (outputs untouched on failure).
#include <cstring>
#include <memory>
#include <string>

#include "attention_fp8_case.hpp"
#include "cpu_test_helpers.hpp"
#include "flashkit/flashkit.hpp"

namespace {

using fkcpu::check_output;
using fktest::DT;
using fktest::HostTensor;

std::string last() { return fk_get_last_error_message(); }

void expect_error(fk_status_t got, fk_status_t want, std::vector<std::string> fragments) {
  INFO("message: " << last());
  CHECK(got == want);
  for (auto& f : fragments) CHECK(last().find(f) != std::string::npos);
}

struct Fp8Case : fktest::Fp8AttnCase {
  void build(uint64_t tag) {
    auto rng = fkcpu::rng_for(tag);
    Fp8AttnCase::build(rng);
  }

  fk_status_t run(const fk_context_t* ctx, bool with_lse = true) {
    return fk_attention_fp8_forward(ctx, nullptr, &prm, &q, &k, &v, descales ? &dq : nullptr,
                                    descales ? &dk : nullptr, descales ? &dv : nullptr,
                                    varlen() ? &cq : nullptr, varlen() ? &ck : nullptr, &out,
                                    with_lse ? &lse : nullptr);
  }

  void check_against_reference() {
    std::vector<double> ref_out, ref_lse;
    reference(ref_out, ref_lse);
    check_output(out, ref_out, DT::BF16, "out");
    // The inputs were rounded to bf16 once: lse carries bf16-sized relative errors too.
    check_output(lse, ref_lse, DT::BF16, "lse");
  }
};

const fk_context_t* ctx() { return fkcpu::cpu_context(2); }

}  // namespace

TEST_CASE("cpu attention fp8: against the float64 reference on the dequantised inputs",
          "[cpu][attention][fp8]") {
  uint64_t tag = 7100;
  for (int mode = 0; mode < 6; ++mode) {
    Fp8Case c;
    c.build(++tag);
    switch (mode) {
      case 0: break;
      case 1: c.prm.causal = 1; break;
      case 2:
        c.prm.window_size_left = 5;
        c.prm.window_size_right = 3;
        c.prm.softcap = 8.0f;
        break;
      case 3: c.nheads_k = 1; c.build(++tag); break;  // MQA
      case 4: c.padded = true; c.build(++tag); c.prm.softmax_scale = 0.3f; break;
      case 5: c.descales = false; break;
    }
    DYNAMIC_SECTION("mode " << mode) {
      const fk_status_t st = c.run(ctx());
      INFO(last());
      REQUIRE(st == FK_SUCCESS);
      c.check_against_reference();
    }
  }
  SECTION("varlen with an empty sequence, GQA, causal") {
    Fp8Case c;
    c.cu_q = {0, 9, 9, 30, 31};
    c.cu_k = {0, 12, 20, 45, 46};
    c.build(7200);
    c.prm.causal = 1;
    const fk_status_t st = c.run(ctx());
    INFO(last());
    REQUIRE(st == FK_SUCCESS);
    c.check_against_reference();
  }
  SECTION("head_dim 256 and 1") {
    for (int64_t d : {int64_t(256), int64_t(1)}) {
      Fp8Case c;
      c.head_dim = d;
      c.seqlen_q = 9;
      c.seqlen_k = 70;
      c.build(7300 + uint64_t(d));
      REQUIRE(c.run(ctx()) == FK_SUCCESS);
      c.check_against_reference();
    }
  }
}

TEST_CASE("cpu attention fp8: bit for bit fk_attention_forward on the bf16-rounded inputs",
          "[cpu][attention][fp8]") {
  for (bool varlen : {false, true}) {
    Fp8Case c;
    if (varlen) {
      c.cu_q = {0, 4, 17};
      c.cu_k = {0, 30, 31};
    }
    c.padded = true;
    c.build(varlen ? 7401 : 7400);
    c.prm.causal = 1;
    REQUIRE(c.run(ctx()) == FK_SUCCESS);
    HostTensor qb = c.bf16_copy(c.q, c.dq, true), kb = c.bf16_copy(c.k, c.dk, false),
               vb = c.bf16_copy(c.v, c.dv, false);
    HostTensor out2(DT::BF16, c.out.shape, c.out.strides),
        lse2(DT::F32, c.lse.shape, c.lse.strides);
    out2.poison();
    lse2.poison();
    REQUIRE(fk_attention_forward(ctx(), nullptr, &c.prm, &qb, &kb, &vb, varlen ? &c.cq : nullptr,
                                 varlen ? &c.ck : nullptr, &out2, &lse2) == FK_SUCCESS);
    const std::vector<double> a = c.out.to_vector(), b = out2.to_vector();
    const std::vector<double> la = c.lse.to_vector(), lb = lse2.to_vector();
    REQUIRE(a.size() == b.size());
    size_t differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += !(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])));
    for (size_t i = 0; i < la.size(); ++i) differ += !(la[i] == lb[i]);
    INFO("varlen " << varlen);
    CHECK(differ == 0);
  }
}

TEST_CASE("cpu attention fp8: names, workspace, empty problems", "[cpu][attention][fp8]") {
  Fp8Case c;
  c.build(7500);
  const char* name = nullptr;
  REQUIRE(fk_attention_fp8_select_kernel(ctx(), &c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk, &c.dv,
                                         nullptr, nullptr, &c.out, &c.lse, &name) == FK_SUCCESS);
  CHECK(std::string(name) == "cpu.attention+fp8_dequant");
  uint64_t ws = 123;
  REQUIRE(fk_attention_fp8_workspace_size(ctx(), &c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk, &c.dv,
                                          nullptr, nullptr, &c.out, &c.lse, &ws) == FK_SUCCESS);
  CHECK(ws == 0);
  expect_error(fk_attention_fp8_select_kernel(ctx(), &c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk,
                                              &c.dv, nullptr, nullptr, &c.out, &c.lse, nullptr),
               FK_ERROR_NULL_POINTER, {"variant_name"});
  expect_error(fk_attention_fp8_workspace_size(ctx(), &c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk,
                                               &c.dv, nullptr, nullptr, &c.out, &c.lse, nullptr),
               FK_ERROR_NULL_POINTER, {"workspace_bytes"});

  Fp8Case e;
  e.seqlen_q = 0;
  e.build(7501);
  CHECK(e.run(ctx()) == FK_SUCCESS);
  Fp8Case z;  // no keys: rows of zeros, lse -inf (as fk_attention_forward)
  z.seqlen_k = 0;
  z.build(7502);
  REQUIRE(z.run(ctx()) == FK_SUCCESS);
  for (double x : z.out.to_vector()) CHECK(x == 0.0);
  for (double x : z.lse.to_vector()) CHECK((std::isinf(x) && x < 0));
}

TEST_CASE("cpu attention fp8: validation rules, outputs untouched", "[cpu][attention][fp8][validation]") {
  auto check_untouched = [](const Fp8Case& c) {
    CHECK(c.out.all_poison());
    CHECK(c.lse.all_poison());
  };
  SECTION("q, k, v must be e4m3fn") {
    for (DT bad : {DT::BF16, DT::E5M2}) {
      Fp8Case c;
      c.build(7600);
      std::mt19937_64 rng(7600);
      c.q = HostTensor(bad, c.q.shape);
      c.q.fill_normal(rng);
      expect_error(c.run(ctx()), FK_ERROR_DTYPE_MISMATCH, {"q:", "float8_e4m3fn"});
      check_untouched(c);
    }
    Fp8Case c;
    c.build(7601);
    c.v = HostTensor(DT::E5M2, c.v.shape);
    expect_error(c.run(ctx()), FK_ERROR_DTYPE_MISMATCH, {"v:", "q's dtype"});
    check_untouched(c);
  }
  SECTION("out must be bf16") {
    for (DT bad : {DT::F32, DT::F16}) {
      Fp8Case c;
      c.build(7602);
      c.out = HostTensor(bad, c.out.shape);
      c.out.poison();
      expect_error(c.run(ctx()), FK_ERROR_DTYPE_MISMATCH, {"out:", "bf16"});
      CHECK(c.out.all_poison());
    }
  }
  SECTION("an fp8 out is a dtype mismatch, not NOT_SUPPORTED") {
    Fp8Case c;
    c.build(7603);
    c.out = HostTensor(DT::E4M3, c.out.shape);
    c.out.poison();
    expect_error(c.run(ctx()), FK_ERROR_DTYPE_MISMATCH, {"out:", "bf16"});
    CHECK(c.out.all_poison());
  }
  SECTION("a broadcast k too large to copy is refused by name, before anything is allocated") {
    Fp8Case c;  // the reproducer of a review: q (1, 2, 1, 1), k and v (1, 2^62, 1, 1), stride 0
    c.batch = c.nheads = c.nheads_k = c.head_dim = 1;
    c.seqlen_q = 2;
    c.build(7604);
    const int64_t huge = int64_t(1) << 62;
    c.k = HostTensor(DT::E4M3, {c.batch, huge, c.nheads_k, c.head_dim}, {0, 0, 0, 0});
    c.v = HostTensor(DT::E4M3, {c.batch, huge, c.nheads_k, c.head_dim}, {0, 0, 0, 0});
    expect_error(c.run(ctx()), FK_ERROR_OUT_OF_MEMORY, {"k:", "bf16 copy"});
    check_untouched(c);
  }
  SECTION("descale dtype, rank and shape") {
    const char* names[3] = {"descale_q", "descale_k", "descale_v"};
    for (int i = 0; i < 3; ++i) {
      Fp8Case c;
      c.build(7610 + uint64_t(i));
      HostTensor* d[3] = {std::addressof(c.dq), std::addressof(c.dk), std::addressof(c.dv)};
      HostTensor keep = *d[i];
      keep.refresh();  // a copy's DLTensor still points at the original's bytes
      *d[i] = HostTensor(DT::F16, {c.batch, c.nheads_k});
      expect_error(c.run(ctx()), FK_ERROR_DTYPE_MISMATCH, {names[i], "fp32"});
      *d[i] = HostTensor(DT::F32, {c.batch * c.nheads_k});
      expect_error(c.run(ctx()), FK_ERROR_SHAPE_MISMATCH, {names[i], "(batch, nheads_k)"});
      *d[i] = HostTensor(DT::F32, {c.batch + 1, c.nheads_k});
      expect_error(c.run(ctx()), FK_ERROR_SHAPE_MISMATCH, {names[i], "batch"});
      *d[i] = HostTensor(DT::F32, {c.batch, c.nheads});  // a factor per query head: refused
      expect_error(c.run(ctx()), FK_ERROR_SHAPE_MISMATCH, {names[i], "nheads_k"});
      check_untouched(c);
      *d[i] = keep;
      d[i]->refresh();
      CHECK(c.run(ctx()) == FK_SUCCESS);
    }
  }
  SECTION("varlen: descale batch is the sequence count") {
    Fp8Case c;
    c.cu_q = {0, 3, 8};
    c.cu_k = {0, 5, 9};
    c.build(7620);
    c.dq = HostTensor(DT::F32, {3, c.nheads_k});
    expect_error(c.run(ctx()), FK_ERROR_SHAPE_MISMATCH, {"descale_q", "cu_seqlens_q"});
    check_untouched(c);
  }
  SECTION("out and lse must not overlap a descale tensor") {
    Fp8Case c;
    c.build(7630);
    // descale_k viewed inside out's buffer (same bytes).
    DLTensor dk_alias = *(&c.dk);
    dk_alias.data = (&c.out)->data;
    c.out.poison();
    const fk_status_t st = fk_attention_fp8_forward(ctx(), nullptr, &c.prm, &c.q, &c.k, &c.v,
                                                    &c.dq, &dk_alias, &c.dv, nullptr, nullptr,
                                                    &c.out, &c.lse);
    expect_error(st, FK_ERROR_INVALID_ARGUMENT, {"out", "descale_k"});
    CHECK(c.out.all_poison());
    DLTensor dv_alias = *(&c.dv);
    dv_alias.data = (&c.lse)->data;
    expect_error(fk_attention_fp8_forward(ctx(), nullptr, &c.prm, &c.q, &c.k, &c.v, &c.dq,
                                          &c.dk, &dv_alias, nullptr, nullptr, &c.out, &c.lse),
                 FK_ERROR_INVALID_ARGUMENT, {"descale_v"});
    check_untouched(c);
  }
  SECTION("fk_attention_forward refuses fp8 and names the fp8 entry point") {
    Fp8Case c;
    c.build(7640);
    HostTensor out(DT::E4M3, c.q.shape);
    expect_error(fk_attention_forward(ctx(), nullptr, &c.prm, &c.q, &c.k, &c.v, nullptr, nullptr,
                                      &out, nullptr),
                 FK_ERROR_NOT_SUPPORTED, {"q:", "fk_attention_fp8_forward"});
  }
  SECTION("the shared attention rules apply (one example each: shape, option)") {
    Fp8Case c;
    c.build(7650);
    c.prm.softcap = -1.0f;
    expect_error(c.run(ctx()), FK_ERROR_INVALID_ARGUMENT, {"softcap"});
    c.prm.softcap = 0.0f;
    c.k = HostTensor(DT::E4M3, {c.batch, c.seqlen_k, 3, c.head_dim});
    c.v = HostTensor(DT::E4M3, {c.batch, c.seqlen_k, 3, c.head_dim});
    expect_error(c.run(ctx()), FK_ERROR_SHAPE_MISMATCH, {"nheads_k"});
    check_untouched(c);
  }
}

TEST_CASE("cpu attention fp8: the C++ wrapper", "[cpu][attention][fp8]") {
  Fp8Case c;
  c.build(7700);
  const fk::Context ctx = fk::Context::cpu(1);
  CHECK(ctx.attention_fp8_select_kernel(&c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk, &c.dv, nullptr,
                                        nullptr, &c.out, &c.lse) == "cpu.attention+fp8_dequant");
  CHECK(ctx.attention_fp8_workspace_size(&c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk, &c.dv, nullptr,
                                         nullptr, &c.out, &c.lse) == 0);
  ctx.attention_fp8_forward(&c.prm, &c.q, &c.k, &c.v, &c.dq, &c.dk, &c.dv, nullptr, nullptr,
                            &c.out, &c.lse);
  c.check_against_reference();
  HostTensor f32(DT::F32, c.out.shape);
  CHECK_THROWS_AS(ctx.attention_fp8_forward(&c.prm, &c.q, &c.k, &c.v, nullptr, nullptr, nullptr,
                                            nullptr, nullptr, &f32),
                  fk::Error);
}
