// The GEMM case runner shared by the GPU suites of the Hopper (test_gemm_sm90.cpp) and sm80-class
// (test_gemm_sm80.cpp) kernels: operands with 16-byte aligned leading dimensions (so odd
// extents exercise a kernel's tails rather than its fallback), outputs poisoned, the variant
// the dispatcher names, and the float64 reference (tests/reference/reference.hpp) with a
// tolerance scaled by the same GEMM on magnitudes.
#pragma once

#include <catch2/catch.hpp>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_test_util.hpp"
#include "reference/reference.hpp"
#include "test_util.hpp"

namespace fkgemm {

using fkgpu::DeviceTensor;
using fkgpu::rng_for;
using fktest::DT;
using fktest::HostTensor;

// Where a case runs and what it must run on: eligible cases must report `kernel` when `enforce`
// (the build and the device have it), ineligible ones must not.
struct Target {
  const fk_context_t* ctx = nullptr;
  const char* kernel = "";
  bool enforce = false;
};

inline int64_t round8(int64_t x) { return (std::max<int64_t>(x, 1) + 7) / 8 * 8; }

// Row-major strides for `shape` (rank 2 or 3) whose last-dimension rows are `ld_pad` elements
// longer than the extent rounded up to 16 bytes (8 elements; 16 for fp8), so every row and
// batch starts 16-byte aligned.
inline std::vector<int64_t> aligned_strides(const std::vector<int64_t>& shape, int64_t ld_pad,
                                     int64_t align = 8) {
  const size_t r = shape.size();
  std::vector<int64_t> st(r, 1);
  st[r - 2] = (std::max<int64_t>(shape[r - 1], 1) + align - 1) / align * align + ld_pad;
  if (r == 3) st[0] = st[1] * std::max<int64_t>(shape[1], 1);
  return st;
}

// Relative tolerance per output dtype, against |scale_i| + rms(scale) where scale is the same
// GEMM on magnitudes: one rounding of the output plus fp32 accumulation. fp8 inputs: Hopper's
// fp8 tensor-core accumulation keeps about 14 mantissa bits per addition (DeepSeek-AI,
// "DeepSeek-V3 Technical Report", 2024, Section 3.3.2), so the sum over K carries up to
// ~sqrt(K) * 2^-14 relative to |A||B| (4e-3 at K = 4097): 1e-2 unless the output is coarser.
inline double tol(DT t, bool fp8_inputs = false) {
  double v = 0;
  switch (t) {
    case DT::F32: v = 5e-5; break;
    case DT::F16: v = 2e-3; break;
    case DT::BF16: v = 1.6e-2; break;
    default: break;
  }
  return fp8_inputs ? std::max(v, 1e-2) : v;
}

inline void check_output(const HostTensor& got, const std::vector<double>& ref,
                  const std::vector<double>& scale, DT dt, bool fp8_inputs = false) {
  const std::vector<double> g = got.to_vector();
  REQUIRE(g.size() == ref.size());
  double sum_sc = 0, num = 0, den = 0, max_err = 0;
  int64_t unwritten = 0, bad = 0, worst = -1;
  for (size_t i = 0; i < ref.size(); ++i) sum_sc += scale[i] * scale[i];
  const double rms = ref.empty() ? 0.0 : std::sqrt(sum_sc / double(ref.size()));
  const double t = tol(dt, fp8_inputs);
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(g[i])) {
      ++unwritten;
      continue;
    }
    const double e = std::fabs(g[i] - ref[i]);
    num += e * e;
    den += ref[i] * ref[i];
    if (e > max_err) {
      max_err = e;
      worst = int64_t(i);
    }
    if (e > t * (std::fabs(scale[i]) + rms) + 1e-30) ++bad;
  }
  // Relative L2 against the larger of |ref| and the rounding scale: a result that cancels to
  // nearly zero (one element, GELU of a large negative value) has no meaningful relative error
  // of its own, while its error is still bounded by the scale of the terms summed.
  const double den_floor = sum_sc * t * t;  // ||scale||^2 * tol^2: relative error tol there
  const double rel = std::sqrt(num / std::max(den, std::max(den_floor, 1e-300)));
  // Bytes between logical elements must still hold the poison.
  std::vector<char> logical(got.bytes.size(), 0);
  const int eb = fktest::dt_bytes(got.dtype);
  got.for_each([&](const std::vector<int64_t>& idx) {
    const int64_t off = got.offset(idx) * eb;
    for (int b = 0; b < eb; ++b) logical[size_t(off + b)] = 1;
  });
  int64_t touched = 0;
  for (size_t b = 0; b < got.bytes.size(); ++b)
    if (!logical[b] && got.bytes[b] != 0xFF) ++touched;
  INFO("d [" << fktest::dt_name(dt) << "]: " << unwritten << " non-finite (unwritten), " << touched
             << " padding bytes written, rel_l2 " << rel << ", max_abs " << max_err << " at "
             << worst << " (got " << (worst >= 0 ? g[size_t(worst)] : 0.0) << ", ref "
             << (worst >= 0 ? ref[size_t(worst)] : 0.0) << "), " << bad
             << " over the elementwise bound (tol " << t << ", rms " << rms << "), seed "
             << fktest::test_seed());
  CHECK(unwritten == 0);
  CHECK(touched == 0);
  CHECK(bad == 0);
  CHECK(rel <= t);
}

struct Case {
  int64_t batch = 0;  // 0: rank-2 operands
  int64_t M = 1, N = 1, K = 1;
  DT ab = DT::BF16, cd = DT::BF16, bias_dt = DT::F32;
  bool trans_a = false, trans_b = false;
  bool col_major_a = false;  // a (M, K) with column-major strides (unit stride along M)
  bool col_major_d = false;  // d and c (M, N) column-major
  bool broadcast_b = false;  // b rank 2 while a and d are batched
  bool with_c = false, with_bias = false;
  float alpha = 1, beta = 0;
  int act = 0;
  int64_t ld_pad = 0;     // extra elements per row (keep a multiple of 8 to stay eligible)
  int64_t ld_pad_d = -1;  // the same for d and c only (-1: ld_pad)
  bool eligible = true;   // the target kernel must take it (when the target is enforced)
  // Operands placed this many elements past a 16-byte aligned allocation (DLTensor::
  // byte_offset): an element-aligned base that is not 16-byte aligned when nonzero. off_ab
  // moves a and b, off_cd moves c and d (the bias stays aligned).
  int64_t off_ab = 0, off_cd = 0;
  cudaStream_t stream = nullptr;
  // fk_gemm_scaled: B's dtype when it differs from A's (fp8 formats); scales 0 none,
  // 1 per-tensor, 2 per-row of A / per-column of B.
  bool scaled = false;
  bool b_dt_set = false;
  DT b_dt = DT::E4M3;
  int scale_a = 0, scale_b = 0;
};

inline std::string describe(const Case& c, const char* label) {
  std::ostringstream o;
  o << label << " batch " << c.batch << " M" << c.M << " N" << c.N << " K" << c.K << " ab "
    << fktest::dt_name(c.ab) << " cd " << fktest::dt_name(c.cd) << " bias "
    << fktest::dt_name(c.bias_dt) << " trans " << c.trans_a << c.trans_b
    << (c.col_major_a ? " col-major a" : "") << (c.col_major_d ? " col-major c/d" : "")
    << (c.broadcast_b ? " broadcast b" : "") << (c.with_c ? " +C" : "")
    << (c.with_bias ? " +bias" : "") << " alpha " << c.alpha << " beta " << c.beta << " act "
    << c.act << " ld_pad " << c.ld_pad;
  if (c.off_ab != 0 || c.off_cd != 0) o << " base offsets a/b " << c.off_ab << " c/d " << c.off_cd;
  if (c.ld_pad_d >= 0) o << " ld_pad_d " << c.ld_pad_d;
  if (c.scaled) {
    o << " scaled b " << fktest::dt_name(c.b_dt_set ? c.b_dt : c.ab) << " scale_a " << c.scale_a
      << " scale_b " << c.scale_b;
  }
  return o.str();
}

inline std::vector<int64_t> with_batch(int64_t batch, std::vector<int64_t> s) {
  if (batch > 0) s.insert(s.begin(), batch);
  return s;
}

// Column-major strides for a logical (rows, cols) matrix, optionally batched.
inline std::vector<int64_t> col_major(int64_t batch, int64_t rows, int64_t cols, int64_t ld_pad) {
  const int64_t ld = round8(rows) + ld_pad;
  std::vector<int64_t> st{1, ld};
  if (batch > 0) st.insert(st.begin(), ld * std::max<int64_t>(cols, 1));
  return st;
}

// Runs case `c` on `target`: the variant check (eligible cases must run on target.kernel when
// target.enforce, the others must not), the call, and the float64 comparison.
inline void run(const Case& c, uint64_t tag, const Target& target) {
  INFO(describe(c, target.kernel));
  const fk_context_t* ctx = target.ctx;
  REQUIRE(ctx != nullptr);
  auto rng = rng_for(tag);
  const int64_t nb = std::max<int64_t>(c.batch, 1);
  const std::vector<int64_t> as = with_batch(c.batch, c.trans_a ? std::vector<int64_t>{c.K, c.M}
                                                                 : std::vector<int64_t>{c.M, c.K});
  const std::vector<int64_t> bs =
      with_batch(c.broadcast_b ? 0 : c.batch,
                 c.trans_b ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N});
  const std::vector<int64_t> ds = with_batch(c.batch, {c.M, c.N});
  const DT bdt = c.b_dt_set ? c.b_dt : c.ab;
  const int64_t align = fktest::dt_bytes(c.ab) == 1 ? 16 : 8;
  const std::vector<int64_t> a_st = (c.col_major_a && !c.trans_a)
                                        ? col_major(c.batch, c.M, c.K, c.ld_pad)
                                        : aligned_strides(as, c.ld_pad, align);
  const int64_t pad_d = c.ld_pad_d >= 0 ? c.ld_pad_d : c.ld_pad;
  const std::vector<int64_t> d_st =
      c.col_major_d ? col_major(c.batch, c.M, c.N, pad_d) : aligned_strides(ds, pad_d);
  HostTensor a(c.ab, as, a_st), b(bdt, bs, aligned_strides(bs, c.ld_pad, align)),
      d(c.cd, ds, d_st), cm(c.cd, ds, d_st), bias(c.bias_dt, {c.N});
  HostTensor sa(DT::F32, {c.scale_a == 2 ? c.M : 1}), sb(DT::F32, {c.scale_b == 2 ? c.N : 1});
  a.fill_normal(rng);
  b.fill_normal(rng);
  cm.fill_normal(rng);
  bias.fill_normal(rng);
  sa.fill_uniform(rng, 0.25, 4.0);
  sb.fill_uniform(rng, 0.25, 4.0);

  const auto off = [](int64_t n, DT dt) { return uint64_t(n) * uint64_t(fktest::dt_bytes(dt)); };
  DeviceTensor da(a, off(c.off_ab, c.ab)), db(b, off(c.off_ab, bdt)), dd(d, off(c.off_cd, c.cd)),
      dc(cm, off(c.off_cd, c.cd)), dbias(bias), dsa(sa), dsb(sb);
  dd.poison();
  fk_gemm_params_t p;
  fk_gemm_params_init(&p);
  p.trans_a = c.trans_a;
  p.trans_b = c.trans_b;
  p.alpha = c.alpha;
  p.beta = c.beta;
  p.activation = c.act;
  const char* variant = "?";
  const DLTensor* psa = c.scale_a ? &dsa : nullptr;
  const DLTensor* psb = c.scale_b ? &dsb : nullptr;
  if (c.scaled) {
    REQUIRE_FK(fk_gemm_scaled_select_kernel(ctx, &p, &da, &db, psa, psb,
                                            c.with_c ? &dc : nullptr,
                                            c.with_bias ? &dbias : nullptr, &dd, &variant));
  } else {
    REQUIRE_FK(fk_gemm_select_kernel(ctx, &p, &da, &db, c.with_c ? &dc : nullptr,
                                     c.with_bias ? &dbias : nullptr, &dd, &variant));
  }
  INFO("variant " << variant);
  if (target.enforce) {
    if (c.eligible) {
      REQUIRE(std::string(variant) == target.kernel);
    } else {
      REQUIRE(std::string(variant) != target.kernel);
    }
  }
  fk_launch_t launch;
  fk_launch_init(&launch);
  launch.stream = c.stream;
  if (c.scaled) {
    REQUIRE_FK(fk_gemm_scaled(ctx, &launch, &p, &da, &db, psa, psb, c.with_c ? &dc : nullptr,
                              c.with_bias ? &dbias : nullptr, &dd));
  } else {
    REQUIRE_FK(fk_gemm(ctx, &launch, &p, &da, &db, c.with_c ? &dc : nullptr,
                       c.with_bias ? &dbias : nullptr, &dd));
  }
  if (c.stream) REQUIRE_CUDA(cudaStreamSynchronize(c.stream));
  dd.download();
  CHECK(dd.guard_intact());  // nothing written below D's base

  fkref::GemmParams rp;
  rp.trans_a = c.trans_a;
  rp.trans_b = c.trans_b;
  rp.alpha = c.alpha;
  rp.beta = c.beta;
  rp.activation = c.act;
  std::vector<double> av = a.to_vector(), bv = b.to_vector();
  const std::vector<double> cv = cm.to_vector(), biasv = bias.to_vector();
  // Scales folded into the operands in float64 (a, b as stored, row-major (rows, cols)).
  if (c.scale_a) {
    const int64_t rows = c.trans_a ? c.K : c.M, cols = c.trans_a ? c.M : c.K;
    for (size_t i = 0; i < av.size(); ++i) {
      const int64_t r = int64_t(i) / cols % rows, col = int64_t(i) % cols;
      av[i] *= sa.get({c.scale_a == 2 ? (c.trans_a ? col : r) : 0});
    }
  }
  if (c.scale_b) {
    const int64_t rows = c.trans_b ? c.N : c.K, cols = c.trans_b ? c.K : c.N;
    for (size_t i = 0; i < bv.size(); ++i) {
      const int64_t r = int64_t(i) / cols % rows, col = int64_t(i) % cols;
      bv[i] *= sb.get({c.scale_b == 2 ? (c.trans_b ? r : col) : 0});
    }
  }
  const int64_t b_batch = c.broadcast_b ? 1 : nb;
  const std::vector<double> ref =
      fkref::gemm(av, nb, bv, b_batch, c.with_c ? &cv : nullptr, nb,
                  c.with_bias ? &biasv : nullptr, nb, c.M, c.N, c.K, rp);
  fkref::GemmParams sp = rp;
  sp.alpha = std::fabs(c.alpha);
  sp.beta = std::fabs(c.beta);
  sp.activation = 0;
  const std::vector<double> cva = fktest::absolute(cv), biasa = fktest::absolute(biasv);
  const std::vector<double> scale =
      fkref::gemm(fktest::absolute(av), nb, fktest::absolute(bv), b_batch,
                  c.with_c ? &cva : nullptr, nb,
                  c.with_bias ? &biasa : nullptr, nb, c.M, c.N, c.K, sp);
  check_output(d, ref, scale, c.cd, fktest::dt_bytes(c.ab) == 1);
}

inline DT ab_by_index(int i) { return (i & 1) ? DT::F16 : DT::BF16; }
inline DT cd_by_index(int i) {
  static const DT kTypes[] = {DT::BF16, DT::F16, DT::F32};
  return kTypes[((i % 3) + 3) % 3];
}


// ---- Case sets both kernel suites run (tag0 offsets the random streams per suite) ----

// M, N, K in {1, 7, 127, 129} with every transpose, dtype and epilogue.
inline void cases_small_extents(const Target& t, uint64_t tag0) {
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
        run(c, tag0 + 20000 + uint64_t(i++), t);
      }
}

// More output tiles than SMs (2100 x 3000): the persistent/grouped raster walks, a bf16 bias +
// GELU case and a transposed fp16 -> fp32 case with C and beta = -1; seeds tag, tag + 1.
inline void cases_many_tiles(const Target& t, int64_t K, uint64_t tag) {
  Case c;
  c.M = 2100;
  c.N = 3000;
  c.K = K;
  c.ab = DT::BF16;
  c.cd = DT::BF16;
  c.with_bias = true;
  c.act = 3;
  run(c, tag, t);
  c.trans_a = true;
  c.trans_b = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.with_c = true;
  c.beta = -1.0f;
  c.act = 0;
  run(c, tag + 1, t);
}

// Extents of 4097: many tiles and tails in both raster orders.
inline void cases_4097_extents(const Target& t, uint64_t tag0) {
  const int64_t shapes[][3] = {{4097, 129, 65}, {129, 4097, 33}, {127, 130, 4097}, {300, 520, 4097}};
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
    run(c, tag0 + 21000 + uint64_t(i++), t);
  }
}

// K = 0 writes act(beta C + bias).
inline void cases_k0(const Target& t, uint64_t tag0) {
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
    run(c, tag0 + 23000 + uint64_t(act), t);
  }
}

// Every epilogue on every output dtype.
inline void cases_epilogues(const Target& t, uint64_t tag0) {
  int i = 0;
  for (int act = 0; act < 4; ++act)
    for (int with_c = 0; with_c < 2; ++with_c)
      for (int with_bias = 0; with_bias < 2; ++with_bias)
        for (int cd = 0; cd < 3; ++cd) {
          Case c;
          c.M = 150;
          c.N = 264;
          c.K = 200;
          c.ab = ab_by_index(i);
          c.cd = cd_by_index(cd);
          c.bias_dt = cd_by_index(cd + 1);
          c.act = act;
          c.with_c = with_c != 0;
          c.beta = c.with_c ? 1.0f : 0.0f;
          c.with_bias = with_bias != 0;
          c.alpha = 0.1f;
          run(c, tag0 + 24000 + uint64_t(i++), t);
        }
}

// Transposes and layouts through strides.
inline void cases_layouts(const Target& t, uint64_t tag0) {
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
        run(c, tag0 + 25000 + uint64_t(i++), t);
      }
  Case c;  // a (M, K) column-major through its strides rather than trans_a
  c.M = 130;
  c.N = 250;
  c.K = 90;
  c.col_major_a = true;
  c.trans_b = true;
  c.with_bias = true;
  run(c, tag0 + 25100, t);
}

// Strided batch and broadcast.
inline void cases_batch(const Target& t, uint64_t tag0) {
  Case c;
  c.batch = 3;
  c.M = 100;
  c.N = 65;
  c.K = 70;
  c.with_c = true;
  c.beta = 0.5f;
  c.with_bias = true;
  c.ld_pad = 8;
  run(c, tag0 + 26000, t);
  c.broadcast_b = true;
  c.trans_b = true;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.bias_dt = DT::BF16;
  run(c, tag0 + 26001, t);
  c.broadcast_b = false;
  c.trans_b = false;
  c.trans_a = true;
  c.col_major_d = true;
  c.ab = DT::BF16;
  c.cd = DT::F16;
  c.act = 3;
  run(c, tag0 + 26002, t);
}

// Batch 65536 x (8, 64, 8): above the 65535 grid limit.
inline void cases_batch_65536(const Target& t, uint64_t tag0) {
  Case c;
  c.batch = 65536;
  c.M = 8;
  c.N = 64;
  c.K = 8;
  c.with_bias = true;
  c.act = 1;
  run(c, tag0 + 27000, t);
}

// Unaligned operands fall back to another kernel and stay correct.
inline void cases_unaligned(const Target& t, uint64_t tag0) {
  // Leading dimensions of 9 and 41 elements (18 and 82 bytes): neither the copy engine (sm90)
  // nor cp.async (sm80) can read them.
  Case c;
  c.M = 70;
  c.N = 40;
  c.K = 7;
  c.eligible = false;
  c.ld_pad = 1;
  c.with_bias = true;
  run(c, tag0 + 28000, t);
  // fp32 inputs are not the tensor-core kernels' either.
  Case f;
  f.M = 65;
  f.N = 70;
  f.K = 33;
  f.ab = DT::F32;
  f.cd = DT::F32;
  f.eligible = false;
  run(f, tag0 + 28001, t);
  // Leading dimensions aligned, but the bases of a and b 2 bytes (one element) past a 16-byte
  // boundary: the copy engine and cp.async need 16-byte aligned bases too.
  Case o;
  o.M = 130;
  o.N = 72;
  o.K = 40;
  o.eligible = false;
  o.off_ab = 1;
  o.with_bias = true;
  o.with_c = true;
  o.beta = 0.5f;
  run(o, tag0 + 28002, t);
  // a and b aligned, c and d one element past a 16-byte boundary: the kernel still takes it (its
  // register-store epilogue needs only element alignment; no copy-engine store, no 16-byte
  // vectors) and writes nothing below d's base.
  o.off_ab = 0;
  o.off_cd = 1;
  o.eligible = true;
  run(o, tag0 + 28003, t);
  o.with_c = false;  // without C: still no copy-engine store (the base is not 16-byte aligned)
  o.beta = 0.0f;
  o.cd = DT::F32;
  o.off_cd = 3;
  run(o, tag0 + 28004, t);
}

// Split-K on grids smaller than the GPU.
inline void cases_split_k(const Target& t, uint64_t tag0) {
  // Few output tiles and a long K: the heuristics split K across CTAs and the last unit of each
  // tile reduces the partials and runs the epilogue.
  Case c;
  c.M = 16;
  c.N = 512;
  c.K = 8192;
  c.with_bias = true;
  c.act = 2;
  run(c, tag0 + 22100, t);
  c.M = 128;
  c.N = 1024;
  c.K = 3000;
  c.ab = DT::F16;
  c.cd = DT::F32;
  c.with_c = true;
  c.beta = 0.5f;
  c.act = 0;
  c.trans_a = true;
  run(c, tag0 + 22101, t);
  c.M = 1;
  c.N = 300;
  c.K = 4097;
  c.ab = DT::BF16;
  c.cd = DT::F16;
  c.trans_a = false;
  c.trans_b = true;
  c.col_major_d = true;
  c.act = 3;
  run(c, tag0 + 22102, t);
  c.batch = 2;
  c.M = 64;
  c.N = 64;
  c.K = 2048;
  c.col_major_d = false;
  c.with_c = false;
  c.beta = 0;
  run(c, tag0 + 22103, t);
}

// A non-default stream.
inline void cases_stream(const Target& t, uint64_t tag0) {
  cudaStream_t s = nullptr;
  REQUIRE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Case c;
  c.M = 300;
  c.N = 600;
  c.K = 520;
  c.with_bias = true;
  c.act = 2;
  c.stream = s;
  run(c, tag0 + 29000, t);
  REQUIRE_CUDA(cudaStreamDestroy(s));
}

}  // namespace fkgemm
