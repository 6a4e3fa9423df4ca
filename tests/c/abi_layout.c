/* The public header compiles as C99 with -Wall -Wextra -pedantic -Werror (this file is built
 * that way), and the layout of every public struct is pinned: a change here is an ABI break
 * and needs FK_ABI_VERSION bumped. Also a smoke run of the C API from C. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "flashkit/flashkit.h"

#define FK_STATIC_ASSERT(cond, msg) typedef char fk_static_assert_##msg[(cond) ? 1 : -1]

FK_STATIC_ASSERT(sizeof(fk_context_options_t) == 24, context_options_size);
FK_STATIC_ASSERT(offsetof(fk_context_options_t, backend) == 4, context_options_backend);
FK_STATIC_ASSERT(offsetof(fk_context_options_t, flags) == 20, context_options_flags);
FK_STATIC_ASSERT(sizeof(fk_context_info_t) == 176, context_info_size);
FK_STATIC_ASSERT(offsetof(fk_context_info_t, l2_bytes) == 32, context_info_l2);
FK_STATIC_ASSERT(offsetof(fk_context_info_t, device_name) == 48, context_info_name);
FK_STATIC_ASSERT(sizeof(fk_launch_t) == 32, launch_size);
FK_STATIC_ASSERT(offsetof(fk_launch_t, stream) == 8, launch_stream);
FK_STATIC_ASSERT(offsetof(fk_launch_t, workspace_bytes) == 24, launch_workspace_bytes);
/* 40 bytes since 0.2.0 (max_seqlen_q/k appended): FK_ABI_VERSION 1. */
FK_STATIC_ASSERT(sizeof(fk_attention_params_t) == 40, attention_params_size);
FK_STATIC_ASSERT(offsetof(fk_attention_params_t, max_seqlen_q) == 24, attention_max_seqlen_q);
FK_STATIC_ASSERT(offsetof(fk_attention_params_t, max_seqlen_k) == 32, attention_max_seqlen_k);
FK_STATIC_ASSERT(offsetof(fk_attention_params_t, softmax_scale) == 4, attention_scale);
FK_STATIC_ASSERT(offsetof(fk_attention_params_t, softcap) == 20, attention_softcap);
FK_STATIC_ASSERT(sizeof(fk_gemm_params_t) == 24, gemm_params_size);
FK_STATIC_ASSERT(offsetof(fk_gemm_params_t, activation) == 20, gemm_activation);
FK_STATIC_ASSERT(sizeof(fk_monarch_params_t) == 8, monarch_params_size);
FK_STATIC_ASSERT(sizeof(fk_fftconv_plan_options_t) == 48, fftconv_options_size);
FK_STATIC_ASSERT(offsetof(fk_fftconv_plan_options_t, channels) == 8, fftconv_channels);
FK_STATIC_ASSERT(offsetof(fk_fftconv_plan_options_t, dtype) == 40, fftconv_dtype);
FK_STATIC_ASSERT(offsetof(fk_fftconv_plan_options_t, flags) == 44, fftconv_flags);
FK_STATIC_ASSERT(FK_VERSION_NUMBER == FK_VERSION_MAJOR * 10000 + FK_VERSION_MINOR * 100 + FK_VERSION_PATCH, version_number);

static int failures = 0;
#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

int main(void) {
  fk_context_options_t opts;
  fk_context_t* ctx = NULL;
  fk_context_info_t info;
  fk_gemm_params_t gp;
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, d[4] = {0, 0, 0, 0};
  int64_t as[2] = {2, 3}, bs[2] = {3, 2}, ds[2] = {2, 2};
  DLTensor A, B, D;

  CHECK(fk_get_version_number() == FK_VERSION_NUMBER);
  CHECK(strlen(fk_get_version()) >= 5);
  CHECK(fk_context_options_init(&opts) == FK_SUCCESS);
  opts.backend = FK_BACKEND_CPU;
  CHECK(fk_context_create(&opts, &ctx) == FK_SUCCESS);
  CHECK(fk_context_info_init(&info) == FK_SUCCESS);
  CHECK(fk_context_get_info(ctx, &info) == FK_SUCCESS);
  CHECK(info.backend == FK_BACKEND_CPU);
  CHECK(strcmp(fk_kernel_family_name((fk_kernel_family_t)info.kernel_family), "cpu") == 0);

  memset(&A, 0, sizeof A);
  A.data = a; A.device.device_type = kDLCPU; A.ndim = 2; A.shape = as;
  A.dtype.code = kDLFloat; A.dtype.bits = 32; A.dtype.lanes = 1;
  B = A; B.data = b; B.shape = bs;
  D = A; D.data = d; D.shape = ds;
  CHECK(fk_gemm_params_init(&gp) == FK_SUCCESS);
  CHECK(fk_gemm(ctx, NULL, &gp, &A, &B, NULL, NULL, &D) == FK_SUCCESS);
  /* [1 2 3; 4 5 6] @ [7 8; 9 10; 11 12] = [58 64; 139 154] */
  CHECK(d[0] == 58.0f && d[1] == 64.0f && d[2] == 139.0f && d[3] == 154.0f);

  /* A wrong struct_size is refused with a message naming the argument. */
  gp.struct_size = 3;
  CHECK(fk_gemm(ctx, NULL, &gp, &A, &B, NULL, NULL, &D) == FK_ERROR_BAD_STRUCT_SIZE);
  CHECK(strstr(fk_get_last_error_message(), "params") != NULL);
  CHECK(fk_status_category(FK_ERROR_BAD_STRUCT_SIZE) == FK_ERROR_INVALID_ARGUMENT);

  CHECK(fk_context_destroy(ctx) == FK_SUCCESS);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_abi: all checks passed\n");
  return 0;
}
