/*
 * flashkit from C: causal attention and a causal FFT convolution on the CPU backend, printing
 * the kernel variant each call runs and part of each result.
 *
 * Build against flashkit installed in PREFIX (it uses libm):
 *   cc attention_fftconv.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs flashkit) \
 *      -lm -Wl,-rpath,PREFIX/lib
 * (without the rpath, run it with LD_LIBRARY_PATH=PREFIX/lib).
 */
#include <math.h>
#include <stdio.h>

#include <flashkit/flashkit.h>

/* Prints the failed call and the library's message, then leaves main with status 1. */
#define CHECK(call)                                                                   \
  do {                                                                                \
    fk_status_t st_ = (call);                                                         \
    if (st_ != FK_SUCCESS) {                                                          \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, fk_status_string(st_),           \
              fk_get_last_error_message());                                           \
      goto fail;                                                                      \
    }                                                                                 \
  } while (0)

/* A compact fp32 host tensor view over `data`. */
static DLTensor f32_tensor(float* data, int ndim, int64_t* shape) {
  DLTensor t;
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL; /* compact row-major */
  t.byte_offset = 0;
  return t;
}

enum { B = 1, L = 4, H = 2, D = 8 };       /* attention: batch, seqlen, heads, head_dim */
enum { CB = 1, CH = 2, CL = 8, CK = 8 };   /* fftconv: batch, channels, seqlen, filter taps */

int main(void) {
  static float q[B * L * H * D], k[B * L * H * D], v[B * L * H * D], out[B * L * H * D];
  static float u[CB * CH * CL], filt[CH * CK], y[CB * CH * CL];
  int64_t qkv_shape[4] = {B, L, H, D};
  int64_t u_shape[3] = {CB, CH, CL}, k_shape[2] = {CH, CK};
  DLTensor tq, tk, tv, tout, tu, tfilt, ty;
  fk_context_t* ctx = NULL;
  fk_fftconv_plan_t* plan = NULL;
  fk_context_options_t copts;
  fk_attention_params_t ap;
  fk_fftconv_plan_options_t popts;
  const char* variant = NULL;
  int i, h, t;

  for (i = 0; i < B * L * H * D; ++i) {
    q[i] = (float)sin(0.1 * i);
    k[i] = (float)cos(0.2 * i);
    v[i] = (float)(i % 7) - 3.0f;
  }
  for (i = 0; i < CB * CH * CL; ++i) u[i] = (float)(i % CL);  /* 0 1 2 ... 7 per channel */
  for (i = 0; i < CH * CK; ++i) filt[i] = (i % CK == 0) ? 1.0f : (i % CK == 1 ? 0.5f : 0.0f);

  tq = f32_tensor(q, 4, qkv_shape);
  tk = f32_tensor(k, 4, qkv_shape);
  tv = f32_tensor(v, 4, qkv_shape);
  tout = f32_tensor(out, 4, qkv_shape);
  tu = f32_tensor(u, 3, u_shape);
  tfilt = f32_tensor(filt, 2, k_shape);
  ty = f32_tensor(y, 3, u_shape);

  printf("flashkit %s\n", fk_get_version());
  CHECK(fk_context_options_init(&copts));
  copts.backend = FK_BACKEND_CPU;
  CHECK(fk_context_create(&copts, &ctx));

  /* Attention: causal, default softmax_scale (1/sqrt(head_dim)). */
  CHECK(fk_attention_params_init(&ap));
  ap.causal = 1;
  CHECK(fk_attention_select_kernel(ctx, &ap, &tq, &tk, &tv, NULL, NULL, &tout, NULL, &variant));
  CHECK(fk_attention_forward(ctx, NULL, &ap, &tq, &tk, &tv, NULL, NULL, &tout, NULL));
  printf("attention variant: %s\n", variant);
  for (t = 0; t < L; ++t) {
    printf("  out[0,%d,0,:4] =", t);
    for (i = 0; i < 4; ++i) printf(" %8.4f", out[((0 * L + t) * H + 0) * D + i]);
    printf("\n");
  }

  /* FFT convolution: causal, filter y[t] = u[t] + 0.5 u[t-1]. */
  CHECK(fk_fftconv_plan_options_init(&popts));
  popts.mode = FK_FFTCONV_CAUSAL;
  popts.channels = CH;
  popts.seqlen = CL;
  popts.filter_len = CK;
  CHECK(fk_fftconv_plan_create(ctx, &popts, &plan));
  CHECK(fk_fftconv_select_kernel(plan, &tu, &tfilt, NULL, NULL, NULL, &ty, &variant));
  CHECK(fk_fftconv_forward(plan, NULL, &tu, &tfilt, NULL, NULL, NULL, &ty));
  printf("fftconv variant: %s\n", variant);
  for (h = 0; h < CH; ++h) {
    printf("  y[0,%d,:] =", h);
    for (t = 0; t < CL; ++t) printf(" %6.2f", y[h * CL + t]);
    printf("\n");
  }
  /* Self-check: the filter gives u[t] + 0.5 u[t-1] exactly (up to fp32 FFT rounding). */
  for (t = 0; t < CL; ++t) {
    double want = t + 0.5 * (t > 0 ? t - 1 : 0);
    if (fabs(y[t] - want) > 1e-3) {
      fprintf(stderr, "fftconv mismatch at t=%d: %f vs %f\n", t, y[t], want);
      goto fail;
    }
  }

  fk_fftconv_plan_destroy(plan);
  fk_context_destroy(ctx);
  return 0;

fail:
  fk_fftconv_plan_destroy(plan);
  fk_context_destroy(ctx);
  return 1;
}
