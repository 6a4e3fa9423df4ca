// fk_gemm: argument checking and dispatch. Transposes and column-major layouts are folded into
// the strides of logical A(M, K), B(K, N) so kernels see one convention.
#include <cinttypes>
#include <cmath>

#include "api/run_op.h"
#include "api/validate.h"
#include "dispatch/dispatch.h"

using namespace flashkit;

namespace {

// Batch extent and batch stride of an operand of rank 2 or 3 (rank 2: broadcast).
fk_status_t batch_of(const char* name, const TensorView& t, int64_t batch, int64_t* stride) {
  if (t.rank == 2) {
    *stride = 0;
    return FK_SUCCESS;
  }
  if (t.shape[0] == batch) {
    *stride = t.stride[0];
  } else if (t.shape[0] == 1) {
    *stride = 0;  // broadcast
  } else {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "%s: batch %" PRId64 " must equal d's batch %" PRId64 " or be 1", name,
                     t.shape[0], batch);
  }
  return FK_SUCCESS;
}

fk_status_t expect_matrix(const char* name, const TensorView& t, const char* dims) {
  if (t.rank != 2 && t.rank != 3) {
    return set_error(FK_ERROR_SHAPE_MISMATCH, "%s: expected rank 2 %s or 3 (batch, ...), got %d",
                     name, dims, t.rank);
  }
  return FK_SUCCESS;
}

// A dequantisation scale of fk_gemm_scaled: fp32, 0-d or `(1,)` (per tensor: torch's scalar
// scale tensors are 0-d) or `(full,)` (M or N), contiguous. Sets *ptr (nullptr when absent) and
// *per_element.
fk_status_t load_scale(const fk_context_t* ctx, const char* name, const DLTensor* s_,
                       int64_t full, const char* full_name, const float** ptr,
                       bool* per_element, OptTensor* view) {
  *ptr = nullptr;
  *per_element = false;
  FK_RETURN_IF_ERROR(to_opt_view(ctx, name, s_, view, Accept::Float32));
  if (!view->valid) return FK_SUCCESS;
  const TensorView& t = view->t;
  if (t.rank == 0) {  // a 0-d tensor: one scale for the whole operand
    *ptr = static_cast<const float*>(t.data);
    return FK_SUCCESS;
  }
  if (t.rank != 1) {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "%s: expected a 0-d or (1,) per-tensor scale or (%" PRId64 ",) = (%s), got "
                     "rank %d",
                     name, full, full_name, t.rank);
  }
  if (t.shape[0] != 1 && t.shape[0] != full) {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "%s: length %" PRId64 " must be 1 (per-tensor) or %" PRId64 " (%s)", name,
                     t.shape[0], full, full_name);
  }
  if (t.shape[0] > 1 && t.stride[0] != 1) {
    return set_error(FK_ERROR_BAD_STRIDES, "%s: must be contiguous (stride 1), got stride %" PRId64,
                     name, t.stride[0]);
  }
  *ptr = static_cast<const float*>(t.data);
  *per_element = t.shape[0] != 1 || full == 1;
  return FK_SUCCESS;
}

// `scaled`: the fk_gemm_scaled form (fp8 a/b allowed, scales); otherwise scale_a_/scale_b_ are
// ignored (NULL).
fk_status_t build_problem(const fk_context_t* ctx, const fk_launch_t& launch,
                          const fk_gemm_params_t* user, const DLTensor* a_, const DLTensor* b_,
                          const DLTensor* scale_a_, const DLTensor* scale_b_,
                          const DLTensor* c_, const DLTensor* bias_, const DLTensor* d_,
                          bool scaled, GemmProblem* p, bool* empty) {
  FK_RETURN_IF_ERROR(check_context(ctx));
  fk_gemm_params_t prm;
  fk_gemm_params_init(&prm);
  FK_RETURN_IF_ERROR(load_struct("params", user, &prm));
  TensorView a, b, d;
  OptTensor c, bias;
  const Accept ab_accept = scaled ? Accept::FloatOrFp8 : Accept::Float;
  FK_RETURN_IF_ERROR(to_view(ctx, "a", a_, &a, ab_accept));
  FK_RETURN_IF_ERROR(to_view(ctx, "b", b_, &b, ab_accept));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "c", c_, &c));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "bias", bias_, &bias));
  FK_RETURN_IF_ERROR(to_view(ctx, "d", d_, &d));

  if (prm.activation < FK_ACTIVATION_NONE || prm.activation > FK_ACTIVATION_GELU_ERF) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.activation: %d is not an fk_activation_t",
                     prm.activation);
  }
  if (!std::isfinite(prm.alpha)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.alpha: must be finite");
  }
  if (!std::isfinite(prm.beta)) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.beta: must be finite");
  }
  if (prm.beta != 0.0f && !c.valid) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "c: NULL but params.beta is %g (beta != 0 needs c)",
                     static_cast<double>(prm.beta));
  }
  FK_RETURN_IF_ERROR(expect_matrix("a", a, prm.trans_a ? "(K, M)" : "(M, K)"));
  FK_RETURN_IF_ERROR(expect_matrix("b", b, prm.trans_b ? "(N, K)" : "(K, N)"));
  FK_RETURN_IF_ERROR(expect_matrix("d", d, "(M, N)"));
  FK_RETURN_IF_ERROR(expect_float("a", a));
  if (is_fp8(a.dtype) || is_fp8(b.dtype)) {
    if (!is_fp8(a.dtype) || !is_fp8(b.dtype)) {
      return set_error(FK_ERROR_DTYPE_MISMATCH,
                       "b: dtype %s with a's dtype %s (fp8 needs both a and b fp8)",
                       dtype_name(b.dtype), dtype_name(a.dtype));
    }
  } else {
    FK_RETURN_IF_ERROR(expect_same_dtype("b", b, "a", a));
  }
  FK_RETURN_IF_ERROR(expect_float("d", d));

  const int ao = a.rank - 2, bo = b.rank - 2, dof = d.rank - 2;
  // Logical A(m, k) and B(k, n) with strides.
  const int64_t M = prm.trans_a ? a.shape[ao + 1] : a.shape[ao];
  const int64_t K = prm.trans_a ? a.shape[ao] : a.shape[ao + 1];
  const int64_t a_sm = prm.trans_a ? a.stride[ao + 1] : a.stride[ao];
  const int64_t a_sk = prm.trans_a ? a.stride[ao] : a.stride[ao + 1];
  const int64_t Kb = prm.trans_b ? b.shape[bo + 1] : b.shape[bo];
  const int64_t N = prm.trans_b ? b.shape[bo] : b.shape[bo + 1];
  const int64_t b_sk = prm.trans_b ? b.stride[bo + 1] : b.stride[bo];
  const int64_t b_sn = prm.trans_b ? b.stride[bo] : b.stride[bo + 1];
  if (Kb != K) {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "b: K is %" PRId64 " but a gives K = %" PRId64 " (trans_a=%d, trans_b=%d)",
                     Kb, K, prm.trans_a ? 1 : 0, prm.trans_b ? 1 : 0);
  }
  FK_RETURN_IF_ERROR(expect_dim("d", d, dof, "M", M, "a"));
  FK_RETURN_IF_ERROR(expect_dim("d", d, dof + 1, "N", N, "b"));
  int64_t batch = d.rank == 3 ? d.shape[0] : 1;
  if (d.rank == 2) {
    // Without a batch dimension in d, no operand may carry more than one batch.
    if (a.rank == 3 && a.shape[0] != 1)
      return set_error(FK_ERROR_SHAPE_MISMATCH, "a: batch %" PRId64 " but d has no batch dimension", a.shape[0]);
    if (b.rank == 3 && b.shape[0] != 1)
      return set_error(FK_ERROR_SHAPE_MISMATCH, "b: batch %" PRId64 " but d has no batch dimension", b.shape[0]);
  }
  p->batch = batch;
  p->M = M;
  p->N = N;
  p->K = K;
  FK_RETURN_IF_ERROR(batch_of("a", a, batch, &p->a_batch_stride));
  FK_RETURN_IF_ERROR(batch_of("b", b, batch, &p->b_batch_stride));
  p->a_stride_m = a_sm;
  p->a_stride_k = a_sk;
  p->b_stride_k = b_sk;
  p->b_stride_n = b_sn;
  p->d_batch_stride = d.rank == 3 ? d.stride[0] : 0;
  p->d_stride_m = d.stride[dof];
  p->d_stride_n = d.stride[dof + 1];
  p->c = nullptr;
  p->c_batch_stride = p->c_stride_m = p->c_stride_n = 0;
  if (c.valid) {
    const TensorView& ct = c.t;
    FK_RETURN_IF_ERROR(expect_matrix("c", ct, "(M, N)"));
    FK_RETURN_IF_ERROR(expect_same_dtype("c", ct, "d", d));
    if (d.rank == 2 && ct.rank == 3 && ct.shape[0] != 1)
      return set_error(FK_ERROR_SHAPE_MISMATCH, "c: batch %" PRId64 " but d has no batch dimension", ct.shape[0]);
    const int co = ct.rank - 2;
    FK_RETURN_IF_ERROR(expect_dim("c", ct, co, "M", M, "a"));
    FK_RETURN_IF_ERROR(expect_dim("c", ct, co + 1, "N", N, "b"));
    FK_RETURN_IF_ERROR(batch_of("c", ct, batch, &p->c_batch_stride));
    p->c_stride_m = ct.stride[co];
    p->c_stride_n = ct.stride[co + 1];
    if (prm.beta != 0.0f) p->c = ct.data;
  }
  p->bias = nullptr;
  p->bias_dtype = DType::F32;
  if (bias.valid) {
    const TensorView& bt = bias.t;
    FK_RETURN_IF_ERROR(expect_rank("bias", bt, 1, "(N,)"));
    FK_RETURN_IF_ERROR(expect_float("bias", bt));
    FK_RETURN_IF_ERROR(expect_dim("bias", bt, 0, "length", N, "b's N"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("bias", bt, "N"));
    p->bias = bt.data;
    p->bias_dtype = bt.dtype;
  }
  OptTensor sa, sb;
  p->scale_a = p->scale_b = nullptr;
  p->scale_a_per_row = p->scale_b_per_col = false;
  if (scaled) {
    FK_RETURN_IF_ERROR(load_scale(ctx, "scale_a", scale_a_, M, "M, one per row of a",
                                  &p->scale_a, &p->scale_a_per_row, &sa));
    FK_RETURN_IF_ERROR(load_scale(ctx, "scale_b", scale_b_, N, "N, one per column of b",
                                  &p->scale_b, &p->scale_b_per_col, &sb));
  }
  // d: no element written twice; no memory shared with an input, except the in-place form
  // d == c (the same view), which BLAS and cuBLASLt allow.
  FK_RETURN_IF_ERROR(expect_no_self_overlap("d", d));
  FK_RETURN_IF_ERROR(expect_disjoint("d", d, {{"a", &a, false}, {"b", &b, false},
                                              {"c", c.valid ? &c.t : nullptr, true},
                                              {"bias", bias.valid ? &bias.t : nullptr, false},
                                              {"scale_a", sa.valid ? &sa.t : nullptr, false},
                                              {"scale_b", sb.valid ? &sb.t : nullptr, false}}));
  FK_RETURN_IF_ERROR(expect_workspace_disjoint(
      launch, {{"a", &a, false}, {"b", &b, false}, {"c", c.valid ? &c.t : nullptr, false},
               {"bias", bias.valid ? &bias.t : nullptr, false},
               {"scale_a", sa.valid ? &sa.t : nullptr, false},
               {"scale_b", sb.valid ? &sb.t : nullptr, false}, {"d", &d, false}}));
  p->device = d.device;
  p->ab_dtype = a.dtype;
  p->b_dtype = b.dtype;
  p->cd_dtype = d.dtype;
  p->a = a.data;
  p->b = b.data;
  p->d = d.data;
  p->trans_a = prm.trans_a != 0;
  p->trans_b = prm.trans_b != 0;
  p->alpha = prm.alpha;
  p->beta = prm.beta;
  if (prm.alpha == 0.0f) {
    // BLAS convention: with alpha = 0 the product term is dropped without reading a, b or the
    // scales (NaN or Inf there cannot reach d), exactly as for K = 0: d = act(beta c + bias).
    p->K = 0;
    p->scale_a = p->scale_b = nullptr;
    p->scale_a_per_row = p->scale_b_per_col = false;
  }
  p->activation = static_cast<Activation>(prm.activation);
  *empty = (batch == 0 || M == 0 || N == 0);
  return FK_SUCCESS;
}

}  // namespace

extern "C" {

fk_status_t fk_gemm_params_init(fk_gemm_params_t* params) {
  if (!params) return set_error(FK_ERROR_NULL_POINTER, "params: NULL");
  params->struct_size = sizeof *params;
  params->trans_a = 0;
  params->trans_b = 0;
  params->alpha = 1.0f;
  params->beta = 0.0f;
  params->activation = FK_ACTIVATION_NONE;
  return FK_SUCCESS;
}

fk_status_t fk_gemm(const fk_context_t* context, const fk_launch_t* launch,
                    const fk_gemm_params_t* params, const DLTensor* a, const DLTensor* b,
                    const DLTensor* c, const DLTensor* bias, const DLTensor* d) {
  return run_op<GemmProblem>(
      "gemm", context, launch,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, nullptr, nullptr, c, bias, d, false, p,
                             empty);
      },
      select_gemm);
}

fk_status_t fk_gemm_select_kernel(const fk_context_t* context, const fk_gemm_params_t* params,
                                  const DLTensor* a, const DLTensor* b, const DLTensor* c,
                                  const DLTensor* bias, const DLTensor* d,
                                  const char** variant_name) {
  return name_op<GemmProblem>(
      "gemm", context, variant_name,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, nullptr, nullptr, c, bias, d, false, p,
                             empty);
      },
      select_gemm);
}

fk_status_t fk_gemm_scaled(const fk_context_t* context, const fk_launch_t* launch,
                           const fk_gemm_params_t* params, const DLTensor* a, const DLTensor* b,
                           const DLTensor* scale_a, const DLTensor* scale_b, const DLTensor* c,
                           const DLTensor* bias, const DLTensor* d) {
  return run_op<GemmProblem>(
      "gemm_scaled", context, launch,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, scale_a, scale_b, c, bias, d, true, p,
                             empty);
      },
      select_gemm);
}

fk_status_t fk_gemm_scaled_select_kernel(const fk_context_t* context,
                                         const fk_gemm_params_t* params, const DLTensor* a,
                                         const DLTensor* b, const DLTensor* scale_a,
                                         const DLTensor* scale_b, const DLTensor* c,
                                         const DLTensor* bias, const DLTensor* d,
                                         const char** variant_name) {
  return name_op<GemmProblem>(
      "gemm_scaled", context, variant_name,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, scale_a, scale_b, c, bias, d, true, p,
                             empty);
      },
      select_gemm);
}

fk_status_t fk_gemm_workspace_size(const fk_context_t* context, const fk_gemm_params_t* params,
                                   const DLTensor* a, const DLTensor* b, const DLTensor* c,
                                   const DLTensor* bias, const DLTensor* d,
                                   uint64_t* workspace_bytes) {
  return size_op<GemmProblem>(
      "gemm", context, workspace_bytes,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, nullptr, nullptr, c, bias, d, false, p,
                             empty);
      },
      select_gemm);
}

fk_status_t fk_gemm_scaled_workspace_size(const fk_context_t* context,
                                          const fk_gemm_params_t* params, const DLTensor* a,
                                          const DLTensor* b, const DLTensor* scale_a,
                                          const DLTensor* scale_b, const DLTensor* c,
                                          const DLTensor* bias, const DLTensor* d,
                                          uint64_t* workspace_bytes) {
  return size_op<GemmProblem>(
      "gemm_scaled", context, workspace_bytes,
      [&](const fk_launch_t& l, GemmProblem* p, bool* empty) {
        return build_problem(context, l, params, a, b, scale_a, scale_b, c, bias, d, true, p,
                             empty);
      },
      select_gemm);
}

}  // extern "C"
