// Host entry points of the sm80-class attention kernel, one per head-dim bucket (each defined in
// its own launch_hdim*.cu so the two cores of a CI machine compile them in parallel). Each
// instantiates the kernel for fp16 and bf16: eight instantiations in all.
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/attention/sm80/params.h"
#include "flashkit/flashkit.h"

namespace flashkit {
namespace cuda {
namespace sm80 {

fk_status_t launch_hdim64(const Params& p, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim96(const Params& p, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim128(const Params& p, bool bf16, cudaStream_t stream);
fk_status_t launch_hdim256(const Params& p, bool bf16, cudaStream_t stream);

}  // namespace sm80
}  // namespace cuda
}  // namespace flashkit
