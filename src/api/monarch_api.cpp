// fk_monarch and fk_blockdiag_linear: argument checking and dispatch.
#include <cinttypes>

#include "api/run_op.h"
#include "api/validate.h"
#include "dispatch/dispatch.h"

using namespace flashkit;

namespace {

fk_status_t load_params(const fk_monarch_params_t* user) {
  fk_monarch_params_t prm;
  fk_monarch_params_init(&prm);
  FK_RETURN_IF_ERROR(load_struct("params", user, &prm));
  if (prm.flags != 0) {
    return set_error(FK_ERROR_INVALID_ARGUMENT, "params.flags: must be 0, got %u",
                     static_cast<unsigned>(prm.flags));
  }
  return FK_SUCCESS;
}

// Shared checks of x, out and bias; `n_in`/`n_out` are what the weights imply.
fk_status_t check_io(const TensorView& x, const TensorView& out, const OptTensor& bias,
                     const TensorView& w, int64_t n_in, int64_t n_out, const char* w_name,
                     const char* in_from, const char* out_from) {
  FK_RETURN_IF_ERROR(expect_rank("x", x, 2, "(tokens, n)"));
  FK_RETURN_IF_ERROR(expect_rank("out", out, 2, "(tokens, n_out)"));
  FK_RETURN_IF_ERROR(expect_float("x", x));
  FK_RETURN_IF_ERROR(expect_same_dtype(w_name, w, "x", x));
  FK_RETURN_IF_ERROR(expect_same_dtype("out", out, "x", x));
  FK_RETURN_IF_ERROR(expect_dim("x", x, 1, "n", n_in, in_from));
  FK_RETURN_IF_ERROR(expect_dim("out", out, 0, "tokens", x.shape[0], "x"));
  FK_RETURN_IF_ERROR(expect_dim("out", out, 1, "n_out", n_out, out_from));
  FK_RETURN_IF_ERROR(expect_last_contiguous("x", x, "n"));
  FK_RETURN_IF_ERROR(expect_last_contiguous("out", out, "n_out"));
  if (bias.valid) {
    FK_RETURN_IF_ERROR(expect_rank("bias", bias.t, 1, "(n_out,)"));
    FK_RETURN_IF_ERROR(expect_float("bias", bias.t));
    FK_RETURN_IF_ERROR(expect_dim("bias", bias.t, 0, "length", n_out, out_from));
    FK_RETURN_IF_ERROR(expect_last_contiguous("bias", bias.t, "n_out"));
  }
  return FK_SUCCESS;
}

fk_status_t build_monarch(const fk_context_t* ctx, const fk_launch_t& launch,
                          const fk_monarch_params_t* params,
                          const DLTensor* x_, const DLTensor* w1_, const DLTensor* w2_,
                          const DLTensor* bias_, const DLTensor* out_, MonarchProblem* p,
                          bool* empty) {
  FK_RETURN_IF_ERROR(check_context(ctx));
  FK_RETURN_IF_ERROR(load_params(params));
  TensorView x, w1, w2, out;
  OptTensor bias;
  FK_RETURN_IF_ERROR(to_view(ctx, "x", x_, &x));
  FK_RETURN_IF_ERROR(to_view(ctx, "w1", w1_, &w1));
  FK_RETURN_IF_ERROR(to_view(ctx, "w2", w2_, &w2));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "bias", bias_, &bias));
  FK_RETURN_IF_ERROR(to_view(ctx, "out", out_, &out));
  FK_RETURN_IF_ERROR(expect_rank("w1", w1, 3, "(nblocks1, q, p)"));
  FK_RETURN_IF_ERROR(expect_rank("w2", w2, 3, "(nblocks2, s, r)"));
  FK_RETURN_IF_ERROR(expect_compact("w1", w1));
  FK_RETURN_IF_ERROR(expect_compact("w2", w2));
  FK_RETURN_IF_ERROR(expect_same_dtype("w2", w2, "w1", w1));
  const int64_t nb1 = w1.shape[0], q = w1.shape[1], pp = w1.shape[2];
  const int64_t nb2 = w2.shape[0], s = w2.shape[1], r = w2.shape[2];
  if (nb1 * q != nb2 * r) {
    return set_error(FK_ERROR_SHAPE_MISMATCH,
                     "w2: nblocks2 * r = %" PRId64 " * %" PRId64 " must equal nblocks1 * q = %" PRId64
                     " * %" PRId64 " (the permutation between the factors)",
                     nb2, r, nb1, q);
  }
  FK_RETURN_IF_ERROR(check_io(x, out, bias, w1, nb1 * pp, nb2 * s, "w1", "w1 (nblocks1 * p)",
                              "w2 (nblocks2 * s)"));
  FK_RETURN_IF_ERROR(expect_no_self_overlap("out", out));
  FK_RETURN_IF_ERROR(expect_disjoint("out", out, {{"x", &x, false}, {"w1", &w1, false},
                                                  {"w2", &w2, false},
                                                  {"bias", bias.valid ? &bias.t : nullptr, false}}));
  FK_RETURN_IF_ERROR(expect_workspace_disjoint(
      launch, {{"x", &x, false}, {"w1", &w1, false}, {"w2", &w2, false},
               {"bias", bias.valid ? &bias.t : nullptr, false}, {"out", &out, false}}));
  p->device = x.device;
  p->dtype = x.dtype;
  p->bias_dtype = bias.valid ? bias.t.dtype : DType::F32;
  p->x = x.data;
  p->w1 = w1.data;
  p->w2 = w2.data;
  p->bias = bias.valid ? bias.t.data : nullptr;
  p->out = out.data;
  p->tokens = x.shape[0];
  p->nblocks1 = nb1;
  p->q = q;
  p->p = pp;
  p->nblocks2 = nb2;
  p->s = s;
  p->r = r;
  p->x_row_stride = x.stride[0];
  p->out_row_stride = out.stride[0];
  *empty = out.shape[0] == 0 || out.shape[1] == 0;
  return FK_SUCCESS;
}

fk_status_t build_blockdiag(const fk_context_t* ctx, const fk_launch_t& launch,
                            const fk_monarch_params_t* params,
                            const DLTensor* x_, const DLTensor* w_, const DLTensor* bias_,
                            const DLTensor* out_, BlockdiagProblem* p, bool* empty) {
  FK_RETURN_IF_ERROR(check_context(ctx));
  FK_RETURN_IF_ERROR(load_params(params));
  TensorView x, w, out;
  OptTensor bias;
  FK_RETURN_IF_ERROR(to_view(ctx, "x", x_, &x));
  FK_RETURN_IF_ERROR(to_view(ctx, "w", w_, &w));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "bias", bias_, &bias));
  FK_RETURN_IF_ERROR(to_view(ctx, "out", out_, &out));
  FK_RETURN_IF_ERROR(expect_rank("w", w, 3, "(nblocks, q, p)"));
  FK_RETURN_IF_ERROR(expect_compact("w", w));
  const int64_t nb = w.shape[0], q = w.shape[1], pp = w.shape[2];
  FK_RETURN_IF_ERROR(
      check_io(x, out, bias, w, nb * pp, nb * q, "w", "w (nblocks * p)", "w (nblocks * q)"));
  FK_RETURN_IF_ERROR(expect_no_self_overlap("out", out));
  FK_RETURN_IF_ERROR(expect_disjoint("out", out, {{"x", &x, false}, {"w", &w, false},
                                                  {"bias", bias.valid ? &bias.t : nullptr, false}}));
  FK_RETURN_IF_ERROR(expect_workspace_disjoint(
      launch, {{"x", &x, false}, {"w", &w, false},
               {"bias", bias.valid ? &bias.t : nullptr, false}, {"out", &out, false}}));
  p->device = x.device;
  p->dtype = x.dtype;
  p->bias_dtype = bias.valid ? bias.t.dtype : DType::F32;
  p->x = x.data;
  p->w = w.data;
  p->bias = bias.valid ? bias.t.data : nullptr;
  p->out = out.data;
  p->tokens = x.shape[0];
  p->nblocks = nb;
  p->q = q;
  p->p = pp;
  p->x_row_stride = x.stride[0];
  p->out_row_stride = out.stride[0];
  *empty = out.shape[0] == 0 || out.shape[1] == 0;
  return FK_SUCCESS;
}

}  // namespace

extern "C" {

fk_status_t fk_monarch_params_init(fk_monarch_params_t* params) {
  if (!params) return set_error(FK_ERROR_NULL_POINTER, "params: NULL");
  params->struct_size = sizeof *params;
  params->flags = 0;
  return FK_SUCCESS;
}

fk_status_t fk_monarch(const fk_context_t* context, const fk_launch_t* launch,
                       const fk_monarch_params_t* params, const DLTensor* x, const DLTensor* w1,
                       const DLTensor* w2, const DLTensor* bias, const DLTensor* out) {
  return run_op<MonarchProblem>(
      "monarch", context, launch,
      [&](const fk_launch_t& l, MonarchProblem* p, bool* empty) {
        return build_monarch(context, l, params, x, w1, w2, bias, out, p, empty);
      },
      select_monarch);
}

fk_status_t fk_monarch_select_kernel(const fk_context_t* context,
                                     const fk_monarch_params_t* params, const DLTensor* x,
                                     const DLTensor* w1, const DLTensor* w2,
                                     const DLTensor* bias, const DLTensor* out,
                                     const char** variant_name) {
  return name_op<MonarchProblem>(
      "monarch", context, variant_name,
      [&](const fk_launch_t& l, MonarchProblem* p, bool* empty) {
        return build_monarch(context, l, params, x, w1, w2, bias, out, p, empty);
      },
      select_monarch);
}

fk_status_t fk_blockdiag_linear(const fk_context_t* context, const fk_launch_t* launch,
                                const fk_monarch_params_t* params, const DLTensor* x,
                                const DLTensor* w, const DLTensor* bias, const DLTensor* out) {
  return run_op<BlockdiagProblem>(
      "blockdiag_linear", context, launch,
      [&](const fk_launch_t& l, BlockdiagProblem* p, bool* empty) {
        return build_blockdiag(context, l, params, x, w, bias, out, p, empty);
      },
      select_blockdiag);
}

fk_status_t fk_blockdiag_linear_select_kernel(const fk_context_t* context,
                                              const fk_monarch_params_t* params,
                                              const DLTensor* x, const DLTensor* w,
                                              const DLTensor* bias, const DLTensor* out,
                                              const char** variant_name) {
  return name_op<BlockdiagProblem>(
      "blockdiag_linear", context, variant_name,
      [&](const fk_launch_t& l, BlockdiagProblem* p, bool* empty) {
        return build_blockdiag(context, l, params, x, w, bias, out, p, empty);
      },
      select_blockdiag);
}

fk_status_t fk_monarch_workspace_size(const fk_context_t* context,
                                      const fk_monarch_params_t* params, const DLTensor* x,
                                      const DLTensor* w1, const DLTensor* w2,
                                      const DLTensor* bias, const DLTensor* out,
                                      uint64_t* workspace_bytes) {
  return size_op<MonarchProblem>(
      "monarch", context, workspace_bytes,
      [&](const fk_launch_t& l, MonarchProblem* p, bool* empty) {
        return build_monarch(context, l, params, x, w1, w2, bias, out, p, empty);
      },
      select_monarch);
}

fk_status_t fk_blockdiag_linear_workspace_size(const fk_context_t* context,
                                               const fk_monarch_params_t* params,
                                               const DLTensor* x, const DLTensor* w,
                                               const DLTensor* bias, const DLTensor* out,
                                               uint64_t* workspace_bytes) {
  return size_op<BlockdiagProblem>(
      "blockdiag_linear", context, workspace_bytes,
      [&](const fk_launch_t& l, BlockdiagProblem* p, bool* empty) {
        return build_blockdiag(context, l, params, x, w, bias, out, p, empty);
      },
      select_blockdiag);
}

}  // extern "C"
