// FFT-convolution plans and fk_fftconv_forward: argument checking and dispatch.
#include <cinttypes>
#include <cstring>

#include "api/run_op.h"
#include "api/validate.h"
#include "dispatch/dispatch.h"

using namespace flashkit;

struct fk_fftconv_plan {
  const fk_context_t* context = nullptr;
  fk_fftconv_plan_options_t options{};  // resolved (fft_size, filter_len filled in)
  DType dtype = DType::F32;
  mutable FFTConvPlanState state;  // backend caches; internally synchronised
};

namespace {

constexpr int64_t kMaxFFTSize = int64_t(1) << 22;

bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

int64_t next_pow2(int64_t v) {
  int64_t n = 1;
  while (n < v) n <<= 1;
  return n;
}

// Smallest fft_size the mode needs (see the header's fftconv group).
int64_t required_size(FFTConvMode mode, int64_t seqlen, int64_t filter_len) {
  switch (mode) {
    case FFTConvMode::Causal:
      return seqlen + std::min(filter_len, seqlen) - 1;
    case FFTConvMode::Circular:
      return std::max(seqlen, filter_len);
    case FFTConvMode::Bidirectional: {
      const int64_t radius = (filter_len - 1) / 2;
      return seqlen + std::min(radius, seqlen > 0 ? seqlen - 1 : 0);
    }
  }
  return seqlen;
}

fk_status_t check_act(const char* name, const TensorView& t, const fk_fftconv_plan_t* plan,
                      int64_t batch) {
  FK_RETURN_IF_ERROR(expect_rank(name, t, 3, "(batch, channels, seqlen)"));
  if (t.dtype != plan->dtype) {
    return set_error(FK_ERROR_DTYPE_MISMATCH, "%s: dtype %s differs from the plan's dtype %s",
                     name, dtype_name(t.dtype), dtype_name(plan->dtype));
  }
  if (batch >= 0) FK_RETURN_IF_ERROR(expect_dim(name, t, 0, "batch", batch, "u"));
  FK_RETURN_IF_ERROR(expect_dim(name, t, 1, "channels", plan->options.channels, "the plan"));
  FK_RETURN_IF_ERROR(expect_dim(name, t, 2, "seqlen", plan->options.seqlen, "the plan"));
  FK_RETURN_IF_ERROR(expect_last_contiguous(name, t, "seqlen"));
  return FK_SUCCESS;
}

fk_status_t build_problem(const fk_fftconv_plan_t* plan, const fk_launch_t& launch,
                          const DLTensor* u_, const DLTensor* k_,
                          const DLTensor* D_, const DLTensor* pre_, const DLTensor* post_,
                          const DLTensor* y_, FFTConvProblem* p, bool* empty) {
  if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL handle");
  const fk_context_t* ctx = plan->context;
  TensorView u, k, y;
  OptTensor D, pre, post;
  FK_RETURN_IF_ERROR(to_view(ctx, "u", u_, &u));
  FK_RETURN_IF_ERROR(to_view(ctx, "k", k_, &k));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "D", D_, &D));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "pregate", pre_, &pre));
  FK_RETURN_IF_ERROR(to_opt_view(ctx, "postgate", post_, &post));
  FK_RETURN_IF_ERROR(to_view(ctx, "y", y_, &y));
  FK_RETURN_IF_ERROR(check_act("u", u, plan, -1));
  const int64_t batch = u.shape[0];
  FK_RETURN_IF_ERROR(check_act("y", y, plan, batch));
  if (pre.valid) FK_RETURN_IF_ERROR(check_act("pregate", pre.t, plan, batch));
  if (post.valid) FK_RETURN_IF_ERROR(check_act("postgate", post.t, plan, batch));
  FK_RETURN_IF_ERROR(expect_rank("k", k, 2, "(channels, filter_len)"));
  FK_RETURN_IF_ERROR(expect_float("k", k));
  FK_RETURN_IF_ERROR(expect_dim("k", k, 0, "channels", plan->options.channels, "the plan"));
  FK_RETURN_IF_ERROR(expect_dim("k", k, 1, "filter_len", plan->options.filter_len, "the plan"));
  FK_RETURN_IF_ERROR(expect_last_contiguous("k", k, "filter_len"));
  if (D.valid) {
    FK_RETURN_IF_ERROR(expect_rank("D", D.t, 1, "(channels,)"));
    FK_RETURN_IF_ERROR(expect_float("D", D.t));
    FK_RETURN_IF_ERROR(expect_dim("D", D.t, 0, "channels", plan->options.channels, "the plan"));
    FK_RETURN_IF_ERROR(expect_last_contiguous("D", D.t, "channels"));
  }
  FK_RETURN_IF_ERROR(expect_no_self_overlap("y", y));
  FK_RETURN_IF_ERROR(expect_disjoint("y", y, {{"u", &u, false}, {"k", &k, false},
                                              {"D", D.valid ? &D.t : nullptr, false},
                                              {"pregate", pre.valid ? &pre.t : nullptr, false},
                                              {"postgate", post.valid ? &post.t : nullptr, false}}));
  FK_RETURN_IF_ERROR(expect_workspace_disjoint(
      launch, {{"u", &u, false}, {"k", &k, false}, {"D", D.valid ? &D.t : nullptr, false},
               {"pregate", pre.valid ? &pre.t : nullptr, false},
               {"postgate", post.valid ? &post.t : nullptr, false}, {"y", &y, false}}));
  p->device = u.device;
  p->dtype = plan->dtype;
  p->k_dtype = k.dtype;
  p->d_dtype = D.valid ? D.t.dtype : DType::F32;
  p->mode = static_cast<FFTConvMode>(plan->options.mode);
  p->batch = batch;
  p->channels = plan->options.channels;
  p->seqlen = plan->options.seqlen;
  p->filter_len = plan->options.filter_len;
  p->fft_size = plan->options.fft_size;
  p->filter_constant = (plan->options.flags & FK_FFTCONV_FILTER_CONSTANT) != 0;
  p->u = u.data;
  p->k = k.data;
  p->D = D.valid ? D.t.data : nullptr;
  p->pregate = pre.valid ? pre.t.data : nullptr;
  p->postgate = post.valid ? post.t.data : nullptr;
  p->y = y.data;
  p->u_batch_stride = u.stride[0];
  p->u_channel_stride = u.stride[1];
  p->y_batch_stride = y.stride[0];
  p->y_channel_stride = y.stride[1];
  p->pre_batch_stride = pre.valid ? pre.t.stride[0] : 0;
  p->pre_channel_stride = pre.valid ? pre.t.stride[1] : 0;
  p->post_batch_stride = post.valid ? post.t.stride[0] : 0;
  p->post_channel_stride = post.valid ? post.t.stride[1] : 0;
  p->k_channel_stride = k.stride[0];
  p->state = &plan->state;
  *empty = batch == 0 || p->channels == 0 || p->seqlen == 0;
  return FK_SUCCESS;
}

}  // namespace

extern "C" {

fk_status_t fk_fftconv_plan_options_init(fk_fftconv_plan_options_t* options) {
  if (!options) return set_error(FK_ERROR_NULL_POINTER, "options: NULL");
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->mode = FK_FFTCONV_CAUSAL;
  options->dtype = DLDataType{kDLFloat, 32, 1};
  return FK_SUCCESS;
}

fk_status_t fk_fftconv_plan_create(const fk_context_t* context,
                                   const fk_fftconv_plan_options_t* options,
                                   fk_fftconv_plan_t** plan) {
  return guarded([&]() -> fk_status_t {
    FK_RETURN_IF_ERROR(check_context(context));
    if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL out-parameter");
    if (!options) return set_error(FK_ERROR_NULL_POINTER, "options: NULL");
    fk_fftconv_plan_options_t o;
    fk_fftconv_plan_options_init(&o);
    FK_RETURN_IF_ERROR(load_struct("options", options, &o));
    if (o.mode < FK_FFTCONV_CAUSAL || o.mode > FK_FFTCONV_BIDIRECTIONAL) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.mode: %d is not an fk_fftconv_mode_t",
                       o.mode);
    }
    if (o.channels < 0) return set_error(FK_ERROR_INVALID_ARGUMENT, "options.channels: %" PRId64 " < 0", o.channels);
    if (o.seqlen < 0) return set_error(FK_ERROR_INVALID_ARGUMENT, "options.seqlen: %" PRId64 " < 0", o.seqlen);
    if (o.filter_len < 0) return set_error(FK_ERROR_INVALID_ARGUMENT, "options.filter_len: %" PRId64 " < 0", o.filter_len);
    if (o.fft_size < 0) return set_error(FK_ERROR_INVALID_ARGUMENT, "options.fft_size: %" PRId64 " < 0", o.fft_size);
    if (o.flags & ~FK_FFTCONV_FILTER_CONSTANT) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.flags: unknown bits 0x%x",
                       static_cast<unsigned>(o.flags & ~FK_FFTCONV_FILTER_CONSTANT));
    }
    DType dtype;
    {
      int64_t zero = 0;
      DLTensor probe{};
      probe.ndim = 1;
      probe.shape = &zero;
      probe.dtype = o.dtype;
      probe.device = DLDevice{context->backend == FK_BACKEND_CPU ? kDLCPU : kDLCUDA,
                              context->device_ordinal < 0 ? 0 : context->device_ordinal};
      TensorView tv;
      fk_status_t st = to_view(context, "options.dtype", &probe, &tv);
      if (st != FK_SUCCESS) return st;
      dtype = tv.dtype;
    }
    const FFTConvMode mode = static_cast<FFTConvMode>(o.mode);
    // Every mode needs fft_size >= seqlen, and fft_size is at most 2^22: refuse larger
    // sequences before any size arithmetic (which could then overflow).
    if (o.seqlen > kMaxFFTSize) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.seqlen: %" PRId64 " > 2^22 (4M), the largest fft_size", o.seqlen);
    }
    const bool defaulted = o.filter_len == 0;
    if (defaulted) {
      // seqlen; in bidirectional mode an empty sequence gets the one-tap filter (the odd
      // length closest to it), so that empty problems plan in every mode.
      o.filter_len = (mode == FFTConvMode::Bidirectional && o.seqlen == 0) ? 1 : o.seqlen;
    }
    if (mode == FFTConvMode::Bidirectional && o.filter_len % 2 == 0) {
      if (defaulted) {
        return set_error(FK_ERROR_INVALID_ARGUMENT,
                         "options.filter_len: 0 means seqlen (%" PRId64 "), which is even; "
                         "bidirectional mode needs an odd filter_len (2R + 1 centred taps): "
                         "give it",
                         o.filter_len);
      }
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.filter_len: %" PRId64 " must be odd (2R + 1 centred taps) in "
                       "bidirectional mode",
                       o.filter_len);
    }
    // A sizing limit: channels x filter_len at most 2^61 (a dense 16-bit k of that size is
    // 2^62 bytes, every tensor's limit), refused here rather than at every call.
    if (o.channels > 0 && o.filter_len > (int64_t(1) << 61) / o.channels) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.channels x options.filter_len: %" PRId64 " x %" PRId64
                       " is above 2^61 (the plan's sizing limit)",
                       o.channels, o.filter_len);
    }
    const int64_t need = required_size(mode, o.seqlen, o.filter_len);
    if (need > kMaxFFTSize) {
      if (defaulted) {  // the caller gave only seqlen: name it
        return set_error(FK_ERROR_INVALID_ARGUMENT,
                         "options.seqlen: %" PRId64 " (with filter_len 0, i.e. seqlen) needs "
                         "fft_size %" PRId64 " > 2^22 (4M) in this mode",
                         o.seqlen, need);
      }
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.filter_len: %" PRId64 " with seqlen %" PRId64
                       " needs fft_size %" PRId64 " > 2^22 (4M) in this mode",
                       o.filter_len, o.seqlen, need);
    }
    if (o.fft_size == 0) {
      o.fft_size = next_pow2(std::max<int64_t>(need, 1));
    } else if (!is_pow2(o.fft_size)) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.fft_size: %" PRId64 " is not a power of two",
                       o.fft_size);
    } else if (o.fft_size < need) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.fft_size: %" PRId64 " is too small for %s mode with seqlen %" PRId64
                       " and filter_len %" PRId64 " (needs >= %" PRId64 "; a smaller size would wrap "
                       "around)",
                       o.fft_size,
                       mode == FFTConvMode::Causal ? "causal"
                       : mode == FFTConvMode::Circular ? "circular" : "bidirectional",
                       o.seqlen, o.filter_len, need);
    }
    if (o.fft_size > kMaxFFTSize) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.fft_size: %" PRId64 " > 2^22 (4M)",
                       o.fft_size);
    }
    fk_fftconv_plan_t* pl = new fk_fftconv_plan_t();
    pl->context = context;
    pl->options = o;
    pl->dtype = dtype;
    *plan = pl;
    return FK_SUCCESS;
  });
}

fk_status_t fk_fftconv_plan_destroy(fk_fftconv_plan_t* plan) {
  delete plan;
  return FK_SUCCESS;
}

fk_status_t fk_fftconv_plan_get_options(const fk_fftconv_plan_t* plan,
                                        fk_fftconv_plan_options_t* options) {
  if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL handle");
  if (!options) return set_error(FK_ERROR_NULL_POINTER, "options: NULL");
  if (options->struct_size != sizeof *options) {
    return set_error(FK_ERROR_BAD_STRUCT_SIZE,
                     "options: struct_size %u is not %u; call fk_fftconv_plan_options_init() first",
                     static_cast<unsigned>(options->struct_size),
                     static_cast<unsigned>(sizeof *options));
  }
  *options = plan->options;
  return FK_SUCCESS;
}

fk_status_t fk_fftconv_forward(const fk_fftconv_plan_t* plan, const fk_launch_t* launch,
                               const DLTensor* u, const DLTensor* k, const DLTensor* D,
                               const DLTensor* pregate, const DLTensor* postgate,
                               const DLTensor* y) {
  if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL handle");
  return run_op<FFTConvProblem>(
      "fftconv", plan->context, launch,
      [&](const fk_launch_t& l, FFTConvProblem* p, bool* empty) {
        return build_problem(plan, l, u, k, D, pregate, postgate, y, p, empty);
      },
      select_fftconv);
}

fk_status_t fk_fftconv_select_kernel(const fk_fftconv_plan_t* plan, const DLTensor* u,
                                     const DLTensor* k, const DLTensor* D,
                                     const DLTensor* pregate, const DLTensor* postgate,
                                     const DLTensor* y, const char** variant_name) {
  if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL handle");
  return name_op<FFTConvProblem>(
      "fftconv", plan->context, variant_name,
      [&](const fk_launch_t& l, FFTConvProblem* p, bool* empty) {
        return build_problem(plan, l, u, k, D, pregate, postgate, y, p, empty);
      },
      select_fftconv);
}

fk_status_t fk_fftconv_workspace_size(const fk_fftconv_plan_t* plan, const DLTensor* u,
                                      const DLTensor* k, const DLTensor* D,
                                      const DLTensor* pregate, const DLTensor* postgate,
                                      const DLTensor* y, uint64_t* workspace_bytes) {
  if (!plan) return set_error(FK_ERROR_NULL_POINTER, "plan: NULL handle");
  return size_op<FFTConvProblem>(
      "fftconv", plan->context, workspace_bytes,
      [&](const fk_launch_t& l, FFTConvProblem* p, bool* empty) {
        return build_problem(plan, l, u, k, D, pregate, postgate, y, p, empty);
      },
      select_fftconv);
}

}  // extern "C"
