// CPU-only build: the CUDA runtime services report that CUDA is absent.
#include "core/cuda_runtime.h"
#include "core/error.h"

namespace flashkit {
namespace cuda {

bool compiled() { return false; }
int device_count() { return 0; }

fk_status_t query_device(int, DeviceCaps*) {
  return set_error(FK_ERROR_BACKEND_UNAVAILABLE, "backend: flashkit was built without CUDA");
}

fk_status_t copy_to_host_sync(void*, const void*, size_t, int, void*) {
  return set_error(FK_ERROR_BACKEND_UNAVAILABLE, "backend: flashkit was built without CUDA");
}

fk_status_t stream_is_capturing(void*, int, bool* capturing) {
  *capturing = false;  // no CUDA streams without CUDA
  return FK_SUCCESS;
}

fk_status_t attention_fp8_dequant_run(const ExecContext&, const AttentionProblem&,
                                      const AttentionFp8Descales&, AttentionInnerRun, void*) {
  return set_error(FK_ERROR_BACKEND_UNAVAILABLE, "backend: flashkit was built without CUDA");
}

}  // namespace cuda
}  // namespace flashkit
