// Context creation: resolve the backend (AUTO -> CUDA when present), read the device's facts
// once, and resolve the kernel family the dispatcher may use.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>

#include "api/validate.h"
#include "core/context.h"
#include "core/cuda_runtime.h"

using namespace flashkit;

namespace {

// Parses FLASHKIT_* environment variables; an unparsable value is an error, not ignored.
fk_status_t env_backend(fk_backend_t* backend) {
  const char* s = std::getenv("FLASHKIT_BACKEND");
  if (!s || !*s) return FK_SUCCESS;
  std::string v(s);
  if (v == "cpu") *backend = FK_BACKEND_CPU;
  else if (v == "cuda") *backend = FK_BACKEND_CUDA;
  else if (v == "auto") *backend = FK_BACKEND_AUTO;
  else
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "FLASHKIT_BACKEND: '%s' is not one of auto, cpu, cuda", s);
  return FK_SUCCESS;
}

fk_status_t env_family(fk_kernel_family_t* family) {
  const char* s = std::getenv("FLASHKIT_KERNEL_FAMILY");
  if (!s || !*s) return FK_SUCCESS;
  std::string v(s);
  if (v == "auto") *family = FK_KERNEL_FAMILY_AUTO;
  else if (v == "generic") *family = FK_KERNEL_FAMILY_GENERIC;
  else if (v == "sm80") *family = FK_KERNEL_FAMILY_SM80;
  else if (v == "sm90") *family = FK_KERNEL_FAMILY_SM90;
  else
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "FLASHKIT_KERNEL_FAMILY: '%s' is not one of auto, generic, sm80, sm90", s);
  return FK_SUCCESS;
}

fk_status_t env_threads(int32_t* threads) {
  const char* s = std::getenv("FLASHKIT_NUM_THREADS");
  if (!s || !*s) return FK_SUCCESS;
  // Decimal digits only: strtol would also take leading blanks and a sign (" 4", "+2").
  long n = 0;
  const char* p = s;
  for (; *p >= '0' && *p <= '9' && n <= 4096; ++p) n = n * 10 + (*p - '0');
  if (*p != '\0' || n < 1 || n > 4096) {
    return set_error(FK_ERROR_INVALID_ARGUMENT,
                     "FLASHKIT_NUM_THREADS: '%s' is not an integer in [1, 4096]", s);
  }
  *threads = static_cast<int32_t>(n);
  return FK_SUCCESS;
}

// The oldest compute capability (major * 10 + minor) this build has machine code for: the
// fat binary's generic kernels carry sm_75 SASS (its oldest target; CUDA 13 cannot compile for
// Volta or older), so Turing runs the generic path and Volta and older none. 0 (no check) when
// the gencode was overridden (FLASHKIT_CUDA_GENCODE: a developer's build for one GPU).
#if defined(FLASHKIT_CUDA_MIN_CC)
constexpr int kMinComputeCapability = FLASHKIT_CUDA_MIN_CC;
#else
constexpr int kMinComputeCapability = 0;
#endif

bool build_runs_on(const DeviceCaps& caps) {
  return caps.cc_major * 10 + caps.cc_minor >= kMinComputeCapability;
}

// The fastest family a device of this compute capability can run.
fk_kernel_family_t best_family_for(const DeviceCaps& caps) {
  if (caps.cc_major == 9 && caps.cc_minor == 0) return FK_KERNEL_FAMILY_SM90;  // sm_90a SASS
  if (caps.cc_major >= 8) return FK_KERNEL_FAMILY_SM80;
  return FK_KERNEL_FAMILY_GENERIC;
}

}  // namespace

extern "C" {

fk_status_t fk_context_options_init(fk_context_options_t* options) {
  if (!options) return set_error(FK_ERROR_NULL_POINTER, "options: NULL");
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->backend = FK_BACKEND_AUTO;
  options->device_ordinal = 0;
  options->kernel_family = FK_KERNEL_FAMILY_AUTO;
  options->num_threads = 0;
  options->flags = 0;
  return FK_SUCCESS;
}

fk_status_t fk_context_create(const fk_context_options_t* options, fk_context_t** context) {
  return guarded([&]() -> fk_status_t {
    if (!context) return set_error(FK_ERROR_NULL_POINTER, "context: NULL out-parameter");
    fk_context_options_t o;
    fk_context_options_init(&o);
    FK_RETURN_IF_ERROR(load_struct("options", options, &o));
    if (o.backend < FK_BACKEND_AUTO || o.backend > FK_BACKEND_CUDA) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.backend: %d is not an fk_backend_t",
                       o.backend);
    }
    if (o.kernel_family < FK_KERNEL_FAMILY_AUTO || o.kernel_family > FK_KERNEL_FAMILY_SM90 ||
        o.kernel_family == FK_KERNEL_FAMILY_CPU) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.kernel_family: %d is not AUTO, GENERIC, SM80 or SM90",
                       o.kernel_family);
    }
    if (o.device_ordinal < 0) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.device_ordinal: %d is negative",
                       o.device_ordinal);
    }
    if (o.num_threads < 0 || o.num_threads > 4096) {
      return set_error(FK_ERROR_INVALID_ARGUMENT,
                       "options.num_threads: %d is outside [0, 4096] (0 = hardware concurrency)",
                       o.num_threads);
    }
    if (o.flags != 0) {
      return set_error(FK_ERROR_INVALID_ARGUMENT, "options.flags: must be 0, got %u",
                       static_cast<unsigned>(o.flags));
    }
    fk_backend_t backend = static_cast<fk_backend_t>(o.backend);
    if (backend == FK_BACKEND_AUTO) FK_RETURN_IF_ERROR(env_backend(&backend));
    // Errors about a backend that came from the environment say so.
    const char* from_env = (o.backend == FK_BACKEND_AUTO && backend != FK_BACKEND_AUTO)
                               ? " (by FLASHKIT_BACKEND)"
                               : "";
    fk_kernel_family_t family = static_cast<fk_kernel_family_t>(o.kernel_family);
    if (family == FK_KERNEL_FAMILY_AUTO) FK_RETURN_IF_ERROR(env_family(&family));
    int32_t threads = o.num_threads;
    if (threads == 0) FK_RETURN_IF_ERROR(env_threads(&threads));
    if (threads == 0) {
      unsigned hw = std::thread::hardware_concurrency();
      threads = hw ? static_cast<int32_t>(hw) : 1;
    }

    DeviceCaps auto_caps;    // AUTO with a device: its facts, read once (have_caps)
    bool have_caps = false;
    bool fell_back = false;  // AUTO on a GPU this build has no code for: the CPU backend
    if (backend == FK_BACKEND_AUTO) {
      backend = (cuda::compiled() && cuda::device_count() > o.device_ordinal) ? FK_BACKEND_CUDA
                                                                             : FK_BACKEND_CPU;
      // A GPU older than every kernel of this build (Volta and older): the CPU backend, said
      // in the log rather than failing every call with "no kernel image" later.
      have_caps = backend == FK_BACKEND_CUDA && kMinComputeCapability > 0 &&
                  cuda::query_device(o.device_ordinal, &auto_caps) == FK_SUCCESS;
      if (have_caps && !build_runs_on(auto_caps)) {
        log_message(FK_LOG_WARN,
                    "context: CUDA device %d '%s' is compute capability %d.%d, older than this "
                    "build's kernels (%d.%d or newer): using the CPU backend",
                    o.device_ordinal, auto_caps.name, auto_caps.cc_major, auto_caps.cc_minor,
                    kMinComputeCapability / 10, kMinComputeCapability % 10);
        backend = FK_BACKEND_CPU;
        fell_back = true;
      }
    }

    std::unique_ptr<fk_context_t> ctx(new fk_context_t());
    ctx->backend = backend;
    if (backend == FK_BACKEND_CPU) {
      // Kernel families are CUDA notions: an explicit one on the CPU backend cannot be honoured
      // (the environment variable is a CUDA-wide default and does not apply here).
      if (o.kernel_family != FK_KERNEL_FAMILY_AUTO) {
        const char* family =
            fk_kernel_family_name(static_cast<fk_kernel_family_t>(o.kernel_family));
        if (fell_back) {
          return set_error(FK_ERROR_NOT_SUPPORTED,
                           "options.kernel_family: %s kernels need the CUDA backend, and CUDA "
                           "device %d '%s' (compute capability %d.%d) is older than this build's "
                           "kernels (%d.%d or newer), so the context would run on the CPU backend",
                           family, o.device_ordinal, auto_caps.name, auto_caps.cc_major,
                           auto_caps.cc_minor, kMinComputeCapability / 10,
                           kMinComputeCapability % 10);
        }
        return set_error(FK_ERROR_NOT_SUPPORTED,
                         "options.kernel_family: %s kernels need the CUDA backend, the context "
                         "is on the CPU backend",
                         family);
      }
      ctx->best_family = FK_KERNEL_FAMILY_CPU;
      ctx->forced_family = FK_KERNEL_FAMILY_AUTO;  // families are CUDA notions
      ctx->device_ordinal = -1;
      ctx->num_threads = threads;
      std::strncpy(ctx->caps.name, "cpu", sizeof ctx->caps.name - 1);
    } else {
      if (!cuda::compiled()) {
        return set_error(FK_ERROR_BACKEND_UNAVAILABLE,
                         "options.backend: CUDA requested%s but flashkit was built without CUDA",
                         from_env);
      }
      const int n = cuda::device_count();
      if (o.device_ordinal >= n) {
        return set_error(FK_ERROR_BACKEND_UNAVAILABLE,
                         "options.device_ordinal: CUDA device %d requested%s but %d device(s) "
                         "are visible",
                         o.device_ordinal, from_env, n);
      }
      if (have_caps) {
        ctx->caps = auto_caps;
      } else {
        fk_status_t st = cuda::query_device(o.device_ordinal, &ctx->caps);
        if (st != FK_SUCCESS) return st;
      }
      if (!build_runs_on(ctx->caps)) {
        return set_error(FK_ERROR_BACKEND_UNAVAILABLE,
                         "options.backend: CUDA requested%s, but device %d '%s' is compute "
                         "capability %d.%d and this build has kernels for %d.%d and newer only "
                         "(CUDA 13 cannot compile for older GPUs); the CPU backend runs every op",
                         from_env, o.device_ordinal, ctx->caps.name, ctx->caps.cc_major,
                         ctx->caps.cc_minor, kMinComputeCapability / 10,
                         kMinComputeCapability % 10);
      }
      ctx->device_ordinal = o.device_ordinal;
      ctx->num_threads = 1;
      ctx->best_family = best_family_for(ctx->caps);
      if (family == FK_KERNEL_FAMILY_SM90 && ctx->best_family != FK_KERNEL_FAMILY_SM90) {
        return set_error(FK_ERROR_NOT_SUPPORTED,
                         "kernel_family: sm90 kernels need compute capability 9.0, device %d "
                         "is %d.%d",
                         o.device_ordinal, ctx->caps.cc_major, ctx->caps.cc_minor);
      }
      if (family == FK_KERNEL_FAMILY_SM80 && ctx->caps.cc_major < 8) {
        return set_error(FK_ERROR_NOT_SUPPORTED,
                         "kernel_family: sm80 kernels need compute capability >= 8.0, device "
                         "%d is %d.%d",
                         o.device_ordinal, ctx->caps.cc_major, ctx->caps.cc_minor);
      }
      ctx->forced_family = family;
    }
    log_message(FK_LOG_INFO, "context: backend %s, device '%s' (cc %d.%d, %d SMs), family %s",
                fk_backend_name(ctx->backend), ctx->caps.name, ctx->caps.cc_major,
                ctx->caps.cc_minor, ctx->caps.sm_count,
                fk_kernel_family_name(ctx->forced_family != FK_KERNEL_FAMILY_AUTO
                                          ? ctx->forced_family
                                          : ctx->best_family));
    *context = ctx.release();
    return FK_SUCCESS;
  });
}

fk_status_t fk_context_destroy(fk_context_t* context) {
  delete context;
  return FK_SUCCESS;
}

fk_status_t fk_context_info_init(fk_context_info_t* info) {
  if (!info) return set_error(FK_ERROR_NULL_POINTER, "info: NULL");
  std::memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  return FK_SUCCESS;
}

fk_status_t fk_context_get_info(const fk_context_t* context, fk_context_info_t* info) {
  FK_RETURN_IF_ERROR(check_context(context));
  if (!info) return set_error(FK_ERROR_NULL_POINTER, "info: NULL");
  if (info->struct_size != sizeof *info) {
    return set_error(FK_ERROR_BAD_STRUCT_SIZE,
                     "info: struct_size %u is not %u; call fk_context_info_init() first",
                     static_cast<unsigned>(info->struct_size),
                     static_cast<unsigned>(sizeof *info));
  }
  fk_context_info_t r;
  fk_context_info_init(&r);
  r.backend = context->backend;
  r.kernel_family = context->forced_family != FK_KERNEL_FAMILY_AUTO ? context->forced_family
                                                                     : context->best_family;
  r.device_ordinal = context->device_ordinal;
  r.cc_major = context->caps.cc_major;
  r.cc_minor = context->caps.cc_minor;
  r.sm_count = context->caps.sm_count;
  r.num_threads = context->num_threads;
  r.l2_bytes = context->caps.l2_bytes;
  r.smem_per_block_optin = context->caps.smem_per_block_optin;
  std::memcpy(r.device_name, context->caps.name, sizeof r.device_name);
  r.device_name[sizeof r.device_name - 1] = '\0';
  *info = r;
  return FK_SUCCESS;
}

}  // extern "C"
