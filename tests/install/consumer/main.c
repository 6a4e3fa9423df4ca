/* A consumer of an installed flashkit: a 2x2 GEMM on the CPU backend, checked exactly. */
#include <stdio.h>
#include <string.h>

#include <flashkit/flashkit.h>

int main(void) {
  fk_context_options_t o;
  fk_context_t* ctx = NULL;
  float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, d[4] = {0};
  int64_t shape[2] = {2, 2};
  DLTensor A, B, D;
  const char* variant = NULL;
  fk_context_options_init(&o);
  o.backend = FK_BACKEND_CPU;
  if (fk_context_create(&o, &ctx) != FK_SUCCESS) return 1;
  memset(&A, 0, sizeof A);
  A.data = a; A.device.device_type = kDLCPU; A.ndim = 2; A.shape = shape;
  A.dtype.code = kDLFloat; A.dtype.bits = 32; A.dtype.lanes = 1;
  B = A; B.data = b;
  D = A; D.data = d;
  if (fk_gemm(ctx, NULL, NULL, &A, &B, NULL, NULL, &D) != FK_SUCCESS) return 2;
  if (fk_gemm_select_kernel(ctx, NULL, &A, &B, NULL, NULL, &D, &variant) != FK_SUCCESS) return 3;
  fk_context_destroy(ctx);
  /* [1 2; 3 4] @ [5 6; 7 8] = [19 22; 43 50] */
  if (d[0] != 19 || d[1] != 22 || d[2] != 43 || d[3] != 50) return 4;
  printf("flashkit %s consumer ok (%s)\n", fk_get_version(), variant);
  return 0;
}
