/*
 * flashkit - GPU kernels for attention, GEMM, Monarch matrices and FFT convolution
 * behind one stable C ABI.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef FLASHKIT_H
#define FLASHKIT_H

/**
 * @file flashkit.h
 * @brief The flashkit C ABI: the only interface every consumer (C, C++, Python, Java, Rust,
 *        embedding runtimes) uses.
 *
 * @mainpage flashkit
 *
 * ## Introduction
 *
 * flashkit computes four families of operations used by transformer and long-convolution
 * models:
 *
 * - **attention** (FlashAttention class; Dao et al. 2022, 2023; Shah et al. 2024),
 * - **GEMM** with fused epilogues (bias, ReLU, GELU),
 * - **Monarch** matrix multiply and the block-diagonal linear layer (Dao et al. 2022,
 *   "Monarch: Expressive Structured Matrices for Efficient and Accurate Training"; Fu et al.
 *   2023, "Monarch Mixer"),
 * - **FFT convolution** of long sequences (Fu et al. 2023, "FlashFFTConv").
 *
 * Every operation runs on a CPU backend (always present) and, where the library was built with
 * CUDA and a GPU is present, on CUDA kernels chosen at run time from the GPU's compute
 * capability: Hopper (sm_90a) fast paths, an sm80-class path for every other NVIDIA GPU, and a
 * `generic` CUDA path that is correct for every valid input.
 *
 * ## How to read this header
 *
 * Sections, top to bottom: version; status codes and errors; logging; data types and tensors;
 * contexts and launches; then one section per operation family. Each function says what it
 * returns, who owns what, and which status a wrong argument gets.
 *
 * ## Conventions that hold everywhere
 *
 * - **Handles** (`fk_context_t`, `fk_fftconv_plan_t`) are opaque and created through an
 *   out-parameter. A context is immutable after creation and may be shared between threads;
 *   a plan may be used from several threads at once as long as each call has its own output.
 *   A handle carries no type tag the library could check: a destroyed handle, or a handle of
 *   the other kind passed through a cast, is undefined behaviour (typically a crash), as with
 *   any C handle; NULL is checked (FK_ERROR_NULL_POINTER).
 * - **Parameter structs** start with `uint32_t struct_size`. Always fill them with the matching
 *   `fk_*_init()` first: it sets `struct_size` and every default. The library accepts exactly
 *   the `struct_size` of its own header (FK_ERROR_BAD_STRUCT_SIZE naming the struct
 *   otherwise). Fields are only ever appended, and a struct that grows bumps `FK_ABI_VERSION`
 *   (the SONAME), so a binary built against an older header never loads a library whose
 *   structs it would misread: it needs a rebuild, not a code change.
 * - **Tensors** are borrowed DLPack views (`const DLTensor*`, see dlpack.h). flashkit never
 *   takes ownership, and no DLTensor struct is read after the call returns (plans copy what
 *   they keep). The memory the views point to is another matter: on the CUDA backend the
 *   enqueued work (and every replay of a CUDA graph that captured the call) reads and writes it
 *   later, so it must stay allocated until that work has finished on the stream.
 *   Strides are in elements; `strides == NULL` means compact row-major. Unless an operation
 *   says otherwise the last dimension must be contiguous (stride 1) and every other stride may
 *   be anything, including larger than compact (padded rows). Data pointers (`data` plus
 *   `byte_offset`) must be aligned to the element size (FK_ERROR_MISALIGNED), and neither
 *   that sum nor the end of the bytes the view addresses may wrap around the address space or,
 *   for a non-empty tensor, be NULL (FK_ERROR_NULL_POINTER); `byte_offset` itself may be at most
 *   2^62 (FK_ERROR_INVALID_ARGUMENT). Size limits: the product of a tensor's
 *   non-zero extents must fit in `int64_t` (so an empty tensor cannot declare, say,
 *   `(2^32, 0, 2^32)`), and its extents and strides may address at most 2^62 bytes;
 *   FK_ERROR_SHAPE_MISMATCH otherwise. Outputs must not write two elements to one address
 *   (FK_ERROR_BAD_STRIDES). The test is the usual sufficient one: taking the dimensions of
 *   extent > 1 by increasing stride, each stride must exceed the largest offset the smaller
 *   ones reach. So a few interleaved layouts whose elements are in fact distinct, such as shape
 *   (2, 3) with strides (3, 2), are refused too.
 * - **Fast paths**: beyond these rules no layout is refused for speed. The tensor-core kernels
 *   have their own conditions (typically data pointers aligned to 16 bytes and leading strides
 *   that are multiples of 8 elements, block sizes that are multiples of 16 for Monarch); a
 *   call outside them runs on a slower kernel of the same result contract. Each
 *   fk_*_select_kernel() names the kernel a call would run, and docs/design.md ("Kernel
 *   families: order and what each declines") lists what each declines.
 * - **Devices**: a CPU context accepts tensors on `kDLCPU` or `kDLCUDAHost` (pinned host
 *   memory); a CUDA context accepts `kDLCUDA` or `kDLCUDAManaged` tensors whose `device_id` is
 *   the context's device. Anything else is `FK_ERROR_WRONG_DEVICE`. A CPU context does not
 *   read the `device_id` of host tensors.
 * - **Errors**: every function returns an `fk_status_t`. On failure nothing was written to any
 *   output, and fk_get_last_error_message() returns a sentence naming the argument and the rule
 *   it broke, e.g. `"q: head_dim 300 > 256"`. The library never prints, never aborts and never
 *   calls exit().
 * - **Zero-sized** problems (any dimension 0) succeed without launching any work, except where an
 *   operation defines a value for them (GEMM with K = 0 writes the epilogue of `beta * C`:
 *   bias and activation applied, see the GEMM section) and where a size is a parameter rather
 *   than an extent of the data (attention's `head_dim` and a paged cache's `page_block_size`
 *   must be at least 1: FK_ERROR_SHAPE_MISMATCH, as their functions say).
 * - **Asynchrony**: on the CUDA backend a call is enqueued on the launch's stream, which must
 *   belong to the context's device, and returns before the work finishes; the calling thread's
 *   current CUDA device is restored on return. Exceptions, where the call waits for the
 *   stream: varlen attention without `max_seqlen_q` / `max_seqlen_k` copies the corresponding
 *   `cu_seqlens` to the host; an FFT-convolution plan builds its tables on its first call with
 *   given arguments; and on a GPU without stream-ordered memory pools, scratch memory that the
 *   caller's workspace does not cover is allocated with cudaMalloc and freed after
 *   synchronising the stream. On the CPU backend calls are synchronous.
 * - **CUDA graphs**: CUDA calls can be captured (cudaStreamBeginCapture on the launch stream) and
 *   replayed; a call enqueues kernels, memsets and stream-ordered allocations only. Two calls
 *   would have to wait for the GPU and are refused under capture, enqueueing nothing and leaving
 *   the capture usable: varlen attention without both `max_seqlen_q` and `max_seqlen_k`
 *   (FK_ERROR_INVALID_ARGUMENT naming the missing one), and an FFT-convolution plan's first call
 *   with given arguments, which builds its tables (FK_ERROR_NOT_SUPPORTED: make that call, and
 *   let it finish, before the capture). On a GPU without stream-ordered memory pools, calls that
 *   need scratch memory capture only with a caller workspace (fk_launch_t::workspace).
 *   docs/design.md, "CUDA graph capture".
 */

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/** @defgroup export Symbol export
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Marks a public symbol. Everything else in libflashkit.so is hidden. */
#if defined(FLASHKIT_STATIC)
#define FK_API
#elif defined(_WIN32)
#if defined(FLASHKIT_BUILDING)
#define FK_API __declspec(dllexport)
#else
#define FK_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define FK_API __attribute__((visibility("default")))
#else
#define FK_API
#endif

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup version Version
 *  The project version follows semantic versioning; its single source is the `VERSION` file at
 *  the top of the source tree (the build refuses to configure if these macros disagree with it).
 *  The ABI number is separate: it is the SONAME suffix (`libflashkit.so.<FK_ABI_VERSION>`) and
 *  changes only when a binary built against an older header could break.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

#define FK_VERSION_MAJOR 0 /**< Major version: incompatible API changes. */
#define FK_VERSION_MINOR 7 /**< Minor version: added functionality. */
#define FK_VERSION_PATCH 0 /**< Patch version: fixes. */
/** @brief The version as one number: major * 10000 + minor * 100 + patch. */
#define FK_VERSION_NUMBER (FK_VERSION_MAJOR * 10000 + FK_VERSION_MINOR * 100 + FK_VERSION_PATCH)
/** ABI number, the SONAME suffix. 1 since 0.2.0: fk_attention_params_t grew (max_seqlen_q/k), and
 *  fk_attention_params_init() writes the whole struct, so a binary built against the 0.1 header
 *  (a 24-byte struct) must not load this library. */
#define FK_ABI_VERSION 1

/**
 * @brief Runtime version of the loaded library.
 * @return `FK_VERSION_NUMBER` of the library actually loaded (compare with the macro to detect
 *         a header/library mismatch).
 */
FK_API unsigned fk_get_version_number(void);

/**
 * @brief Runtime version string of the loaded library, e.g. `"0.7.0"`.
 * @return Static text; never NULL; do not free.
 */
FK_API const char* fk_get_version(void);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup status Status codes and errors
 *  Status codes are grouped by category: the category of a code is `code / 100 * 100`, see
 *  fk_status_category(). Codes are only ever appended.
 *
 *  **Statuses every operation shares.** The operations (fk_attention_forward(),
 *  fk_attention_fp8_forward(), fk_attention_kvcache_forward(), fk_gemm(), fk_gemm_scaled(),
 *  fk_monarch(), fk_blockdiag_linear(), fk_fftconv_forward()) and their `_select_kernel` /
 *  `_workspace_size` queries check every tensor and the launch by the same rules, so each
 *  operation's `@return` refers to this list and adds its own rules. The message names the
 *  argument; nothing is written to an output.
 *  - FK_ERROR_NULL_POINTER: the context (fk_fftconv_forward(): the plan) or a required tensor
 *    is NULL; a tensor's `shape` is NULL while its `ndim` is above 0; a non-empty tensor's
 *    `data` is NULL, or `data + byte_offset`, or the end of the bytes the view addresses,
 *    wraps around the address space; `launch.workspace` is NULL with a nonzero
 *    `workspace_bytes`; a query's out-parameter (`variant_name`, `workspace_bytes`) is NULL.
 *  - FK_ERROR_BAD_STRUCT_SIZE: `params` or `launch` not prepared by its `fk_*_init()`.
 *  - FK_ERROR_INVALID_ARGUMENT: nonzero `launch.flags`; `launch.workspace + workspace_bytes`
 *    wraps around the address space; the launch workspace overlaps a tensor of the call, input
 *    or output (`"launch.workspace: overlaps <tensor>"`); an output overlaps an input or another
 *    output of the call (`"<output>: overlaps <tensor> in memory"`; the only exception is
 *    fk_gemm()'s and fk_gemm_scaled()'s `d` being the exact same view as `c`); a `byte_offset`
 *    above 2^62 (where `data + byte_offset` wraps around the address space, the
 *    FK_ERROR_NULL_POINTER rule above is checked first and wins).
 *  - FK_ERROR_BAD_STRIDES: a negative stride on a dimension of extent > 1 of a non-empty
 *    tensor (the stride of an extent-1 dimension, and every stride of an empty tensor, address
 *    nothing and are not read, as in PyTorch); an output (`out`, `lse`, `d`, `y`) that would
 *    write two of its elements to one address.
 *  - FK_ERROR_SHAPE_MISMATCH: `ndim` negative or above 4; a negative extent; extents whose
 *    product (of the non-zero ones) overflows `int64_t`; a view that addresses more than 2^62
 *    bytes.
 *  - FK_ERROR_DTYPE_MISMATCH: `lanes` other than 1; a dtype the argument does not take.
 *  - FK_ERROR_NOT_SUPPORTED: an fp8 dtype where the argument takes none ("Data types and
 *    tensors" says where an fp8 dtype gets FK_ERROR_DTYPE_MISMATCH instead).
 *  - FK_ERROR_MISALIGNED: `data + byte_offset` not a multiple of the element size (no other
 *    alignment is required anywhere; the kernels' own conditions only choose the kernel).
 *  - FK_ERROR_WRONG_DEVICE: a tensor on a device the context cannot use (see "Devices" on
 *    the main page).
 *  - FK_ERROR_OUT_OF_MEMORY (host or device scratch could not be allocated), FK_ERROR_DEVICE,
 *    FK_ERROR_KERNEL_LAUNCH.
 *
 *  The queries take no `fk_launch_t`, so the launch's statuses are not theirs.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Result of every flashkit call. */
typedef enum fk_status_t {
  FK_SUCCESS = 0, /**< The call succeeded. */

  /* --- 100: invalid argument: the caller passed something the documentation forbids --- */
  FK_ERROR_INVALID_ARGUMENT = 100, /**< A value is out of its documented range, or an output
                                        (or the launch workspace) overlaps a tensor it must
                                        not (see "Data types and tensors"). */
  FK_ERROR_NULL_POINTER = 101,     /**< A required pointer (handle, tensor, data,
                                        out-parameter) is NULL, a tensor's `shape` is NULL
                                        while its `ndim` is above 0, a launch workspace is
                                        NULL with a nonzero size, or a view's bytes wrap
                                        around the address space. */
  FK_ERROR_BAD_STRUCT_SIZE = 102,  /**< A struct's `struct_size` is not one this library knows;
                                        call its `fk_*_init()` first. */
  FK_ERROR_DTYPE_MISMATCH = 103,   /**< A tensor's dtype is unsupported or differs from another's. */
  FK_ERROR_SHAPE_MISMATCH = 104,   /**< A tensor's rank or extents are wrong. */
  FK_ERROR_BAD_STRIDES = 105,      /**< A required dimension is not contiguous, a stride is
                                        negative, a weight that must be compact is not, or two
                                        elements of an output share an address. */
  FK_ERROR_WRONG_DEVICE = 106,     /**< A tensor lives on a device the context cannot use. */
  FK_ERROR_MISALIGNED = 107,       /**< A data pointer is not aligned as required. */

  /* --- 200: not supported: valid request that this build or device cannot serve --- */
  FK_ERROR_NOT_SUPPORTED = 200,       /**< A feature or combination is not implemented. */
  FK_ERROR_BACKEND_UNAVAILABLE = 201, /**< The requested backend is not compiled in or no
                                           device is present. */

  /* --- 300: out of memory --- */
  FK_ERROR_OUT_OF_MEMORY = 300,         /**< Host or device allocation failed. */
  FK_ERROR_WORKSPACE_TOO_SMALL = 301,   /**< Reserved: a workspace that is too small is
                                             supplemented by stream-ordered allocation
                                             (fk_launch_t::workspace), not refused. */

  /* --- 400: device error --- */
  FK_ERROR_DEVICE = 400,        /**< The CUDA runtime or driver reported an error. It may be a
                                     fault left by earlier asynchronous work on the device
                                     (CUDA reports those at a later call); after a sticky
                                     fault (an illegal address, say) the CUDA context, and so
                                     every flashkit context on that device, is unusable. */
  FK_ERROR_KERNEL_LAUNCH = 401, /**< A kernel failed to launch. */

  /* --- 500: internal error: a flashkit bug; please report it --- */
  FK_ERROR_INTERNAL = 500 /**< An invariant of the library was broken. */
} fk_status_t;

/**
 * @brief The category of a status: one of FK_SUCCESS, FK_ERROR_INVALID_ARGUMENT,
 *        FK_ERROR_NOT_SUPPORTED, FK_ERROR_OUT_OF_MEMORY, FK_ERROR_DEVICE, FK_ERROR_INTERNAL.
 *
 * 0 gives FK_SUCCESS. Every value from 100 to 499 gives `status / 100 * 100`, whether or not
 * it is a code of this header: 150 gives FK_ERROR_INVALID_ARGUMENT and 499 FK_ERROR_DEVICE, so
 * a code that a later version appends to a category is categorised by this one. Every other
 * value (1 to 99, negative values, 500 and above) gives FK_ERROR_INTERNAL.
 * @param status Any value.
 * @return The category's code (never an error of its own).
 */
FK_API fk_status_t fk_status_category(fk_status_t status);

/**
 * @brief Short static description of a status code, e.g. `"invalid argument: shape mismatch"`.
 * @param status Any value.
 * @return Static text; never NULL (unknown codes give `"unknown status"`).
 */
FK_API const char* fk_status_string(fk_status_t status);

/**
 * @brief The message of the last failed call on this thread.
 *
 * The message names the argument and the rule it broke, e.g. `"q: head_dim 300 > 256"`.
 * It is thread-local: another thread's failure does not change it. A successful call does not
 * clear it; check the returned status first.
 * @return Pointer to thread-local storage, valid until the next flashkit call on this thread;
 *         an empty string if no call has failed on this thread.
 */
FK_API const char* fk_get_last_error_message(void);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup logging Logging
 *  flashkit never prints. A caller who wants diagnostics (which kernel variant ran, why a fast
 *  path was not taken) installs a callback.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Severity of a log message. */
typedef enum fk_log_level_t {
  FK_LOG_ERROR = 0, /**< A call failed; the message repeats fk_get_last_error_message(). */
  FK_LOG_WARN = 1,  /**< Something the caller may want to fix (a slow path taken). */
  FK_LOG_INFO = 2,  /**< Context creation, device facts. */
  FK_LOG_DEBUG = 3  /**< Kernel variant chosen for each call. */
} fk_log_level_t;

/**
 * @brief Log callback type.
 * @param level     Severity.
 * @param message   NUL-terminated text, valid only during the call.
 * @param user_data The pointer given to fk_set_log_callback().
 */
typedef void (*fk_log_callback_t)(fk_log_level_t level, const char* message, void* user_data);

/**
 * @brief Installs (or, with `callback == NULL`, removes) the process-wide log callback.
 *
 * Messages at or below `max_level` are delivered. The callback may be called from any thread
 * that calls flashkit. Deliveries are serialised under a library lock (one callback at a time),
 * and fk_set_log_callback() takes that lock: once it returns, the previous callback and
 * `user_data` are no longer in use, so a binding may free them. The callback should not call
 * flashkit. A call it makes anyway does not wait on the log lock: the messages raised on that
 * thread while the callback runs are not delivered, the thread's last-error message is
 * restored when the callback returns (the caller of the logged call reads that call's
 * message), and fk_set_log_callback() returns FK_ERROR_INVALID_ARGUMENT and changes nothing
 * (it cannot wait for the delivery it is part of). Other effects stay undefined: destroying
 * the context or FFT plan of the call being logged, or calling that FFT plan (its lock may be
 * held while its error is logged).
 * @param callback  The function to call, or NULL to remove the current one.
 * @param max_level The least severe level delivered (FK_LOG_ERROR .. FK_LOG_DEBUG); checked
 *                  even when `callback` is NULL.
 * @param user_data Passed back to every call of `callback`; flashkit never dereferences it.
 * @return FK_SUCCESS, or FK_ERROR_INVALID_ARGUMENT if `max_level` is not a fk_log_level_t or
 *         the call comes from inside the log callback.
 */
FK_API fk_status_t fk_set_log_callback(fk_log_callback_t callback, fk_log_level_t max_level,
                                       void* user_data);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup tensors Data types and tensors
 *  Tensors are DLPack `DLTensor` views. Supported element types, as `DLDataType`
 *  `{code, bits, lanes}`: fp32 `{kDLFloat, 32, 1}`, fp16 `{kDLFloat, 16, 1}`, bf16
 *  `{kDLBfloat, 16, 1}`. Integer index tensors (`cu_seqlens_*`, `cache_seqlens`, `block_table`)
 *  are int32 `{kDLInt, 32, 1}`.
 *  FP8 uses the DLPack 1.1 type codes below (the installed dlpack.h may be older): float8
 *  e4m3fn `{FK_DLPACK_FLOAT8_E4M3FN, 8, 1}` and e5m2 `{FK_DLPACK_FLOAT8_E5M2, 8, 1}`, as
 *  PyTorch's `torch.float8_e4m3fn` / `torch.float8_e5m2` export them. Only fk_gemm_scaled()'s
 *  `a` and `b` and fk_attention_fp8_forward()'s `q`, `k` and `v` (e4m3fn) accept them.
 *  Elsewhere an fp8 dtype gets FK_ERROR_NOT_SUPPORTED (this overrides the DTYPE_MISMATCH that a
 *  function's list gives for other wrong dtypes: index tensors, an FFT-convolution plan's
 *  `dtype`, every 16/32-bit float argument), except where an argument must be fp32 (`lse`,
 *  fk_gemm_scaled()'s `scale_a` / `scale_b`, fk_attention_fp8_forward()'s `descale_q/k/v`) or
 *  bf16 (fk_attention_fp8_forward()'s `out`), which gets FK_ERROR_DTYPE_MISMATCH for any other
 *  dtype; an fp8 type code with `bits` other than 8 is
 *  FK_ERROR_DTYPE_MISMATCH everywhere.
 *
 *  Overlap rules ("must not overlap", "must not share memory"; FK_ERROR_INVALID_ARGUMENT, the
 *  message naming both tensors) are judged on address ranges: a view covers the bytes from
 *  its lowest to its highest element address, and two views whose ranges intersect overlap,
 *  even when their elements interleave without sharing one (an output that is a column slice of
 *  a buffer whose other columns are an input is refused: pass separate buffers). "The exact
 *  same view", where a rule allows it (fk_gemm()'s `d` over `c`), means equal data address,
 *  dtype, shape and strides (strides compared where the extent exceeds 1).
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief DLPack 1.1 type code of float8 e4m3fn (OCP FP8 E4M3, finite, NaN = 0x7F/0xFF). */
#define FK_DLPACK_FLOAT8_E4M3FN 10
/** @brief DLPack 1.1 type code of float8 e5m2 (OCP FP8 E5M2, IEEE-like). */
#define FK_DLPACK_FLOAT8_E5M2 12

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup context Contexts and launches
 *  A context binds flashkit to one backend and device. Create one per device and share it.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Opaque context handle. Immutable after creation; safe to share between threads. */
typedef struct fk_context fk_context_t;

/** @brief Which backend a context runs on. */
typedef enum fk_backend_t {
  FK_BACKEND_AUTO = 0, /**< CUDA if compiled in and device `device_ordinal` is present, else
                            CPU, without an error (an ordinal past the visible devices gives a
                            CPU context: fk_context_get_info() tells which; so does a device
                            older than this build's kernels, compute capability below 7.5 in
                            the default fat-binary build, with a FK_LOG_WARN message). The
                            environment variable `FLASHKIT_BACKEND` (`auto`, `cpu` or `cuda`)
                            overrides AUTO, never an explicit choice; any other value fails
                            the creation of an AUTO context with FK_ERROR_INVALID_ARGUMENT
                            naming the variable. */
  FK_BACKEND_CPU = 1,  /**< The CPU backend: every operation, multithreaded, synchronous. */
  FK_BACKEND_CUDA = 2  /**< The CUDA backend. FK_ERROR_BACKEND_UNAVAILABLE if not compiled in,
                            no device, or a device older than this build's kernels (compute
                            capability below 7.5 in the default fat-binary build, whose oldest
                            target is sm_75; Turing runs the generic kernels only). */
} fk_backend_t;

/**
 * @brief Kernel family: which generation of kernels the dispatcher may pick.
 *
 * AUTO picks the best family the device supports, per call (a call that the fast family does
 * not cover falls back to `GENERIC`). Forcing a family (context option or the environment
 * variable `FLASHKIT_KERNEL_FAMILY` = `auto`, `generic`, `sm80` or `sm90`, which overrides AUTO
 * only) restricts the dispatcher to that family plus the generic fallback; forcing a family the
 * device cannot run (sm90 on an sm80 GPU), or any family on the CPU backend, fails at context
 * creation with FK_ERROR_NOT_SUPPORTED. FK_KERNEL_FAMILY_CPU is reported, never forced: as
 * `options.kernel_family` it is FK_ERROR_INVALID_ARGUMENT. A valid value of the environment
 * variable applies to CUDA contexts only (a CPU context ignores it); a value that is not one of
 * these four fails
 * the creation of every context that leaves the family AUTO, CPU contexts included, with
 * FK_ERROR_INVALID_ARGUMENT naming the variable.
 */
typedef enum fk_kernel_family_t {
  FK_KERNEL_FAMILY_AUTO = 0,    /**< Best available, per call. */
  FK_KERNEL_FAMILY_CPU = 1,     /**< The CPU backend's kernels (reported, not forced). */
  FK_KERNEL_FAMILY_GENERIC = 2, /**< Plain CUDA kernels, correct for every valid input; the
                                     only family on Turing (compute capability 7.5). */
  FK_KERNEL_FAMILY_SM80 = 3,    /**< mma.sync + cp.async kernels for compute capability >= 8.0. */
  FK_KERNEL_FAMILY_SM90 = 4     /**< TMA + wgmma kernels for compute capability 9.0 (sm_90a). */
} fk_kernel_family_t;

/** @brief Options for fk_context_create(). Fill with fk_context_options_init(). */
typedef struct fk_context_options_t {
  uint32_t struct_size;  /**< sizeof(fk_context_options_t); set by the init function. */
  int32_t backend;       /**< An fk_backend_t. Default FK_BACKEND_AUTO. Another value:
                              FK_ERROR_INVALID_ARGUMENT naming `options.backend`.
                              FK_BACKEND_CUDA in a build without CUDA, without the device
                              `device_ordinal`, or with a device of compute capability below
                              7.5: FK_ERROR_BACKEND_UNAVAILABLE. */
  int32_t device_ordinal;/**< CUDA device ordinal (as in cudaSetDevice). Default 0. Negative:
                              FK_ERROR_INVALID_ARGUMENT naming `options.device_ordinal`,
                              whatever the backend. At or beyond the number of visible CUDA
                              devices: FK_ERROR_BACKEND_UNAVAILABLE naming it with
                              FK_BACKEND_CUDA, also when `FLASHKIT_BACKEND` chose it (a
                              build without CUDA says that instead), and a CPU context, no
                              error, with FK_BACKEND_AUTO. The CPU backend
                              ignores any other value (fk_context_info_t reports -1). */
  int32_t kernel_family; /**< An fk_kernel_family_t to force. Default FK_KERNEL_FAMILY_AUTO.
                              A value outside AUTO..SM90, or FK_KERNEL_FAMILY_CPU:
                              FK_ERROR_INVALID_ARGUMENT naming `options.kernel_family`. Any
                              value but AUTO on a CPU context, or a family the device cannot
                              run: FK_ERROR_NOT_SUPPORTED (see fk_kernel_family_t). */
  int32_t num_threads;   /**< CPU backend threads, 0..4096; 0 (default) uses the environment
                              variable `FLASHKIT_NUM_THREADS` (decimal digits, 1..4096) if set
                              and not empty, else the hardware concurrency. The variable is
                              read for every backend when this is 0: another value fails the
                              creation, a CUDA context's included, with
                              FK_ERROR_INVALID_ARGUMENT naming it. */
  uint32_t flags;        /**< Reserved; must be 0 (FK_ERROR_INVALID_ARGUMENT naming
                              `options.flags`). */
} fk_context_options_t;

/**
 * @brief Fills `options` with defaults and sets its `struct_size`.
 * @param[out] options The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER if `options` is NULL.
 */
FK_API fk_status_t fk_context_options_init(fk_context_options_t* options);

/**
 * @brief Creates a context.
 *
 * For CUDA this reads the device's compute capability, SM count, shared memory per block and L2
 * size once; it does not change the calling thread's current device. The fields of
 * fk_context_options_t name the status each wrong value gets.
 * @param options NULL for all defaults, else an initialised fk_context_options_t.
 * @param[out] context Receives the new handle on success; untouched on failure. Release with
 *             fk_context_destroy().
 * @return FK_SUCCESS; FK_ERROR_NULL_POINTER (`context` NULL); FK_ERROR_BAD_STRUCT_SIZE;
 *         FK_ERROR_INVALID_ARGUMENT (unknown backend or family, negative ordinal, threads
 *         outside 0..4096,
 *         nonzero flags, unparsable environment variable); FK_ERROR_BACKEND_UNAVAILABLE (CUDA
 *         requested but not compiled in, no device, ordinal out of range, or a device below
 *         compute capability 7.5);
 *         FK_ERROR_NOT_SUPPORTED (forced family the device cannot run, or any forced family on
 *         the CPU backend); FK_ERROR_OUT_OF_MEMORY; FK_ERROR_DEVICE (CUDA backend: the CUDA
 *         runtime reported an error while the device's attributes and properties were read;
 *         an allocation failure there is FK_ERROR_OUT_OF_MEMORY).
 */
FK_API fk_status_t fk_context_create(const fk_context_options_t* options,
                                     fk_context_t** context);

/**
 * @brief Destroys a context. The caller must ensure no call using it is still running and no
 *        plan created from it is still alive. NULL is accepted and does nothing.
 * @param context The handle from fk_context_create(), or NULL.
 * @return FK_SUCCESS.
 */
FK_API fk_status_t fk_context_destroy(fk_context_t* context);

/** @brief What a context runs on. Filled by fk_context_get_info(). */
typedef struct fk_context_info_t {
  uint32_t struct_size;   /**< sizeof(fk_context_info_t); set by fk_context_info_init(). */
  int32_t backend;        /**< FK_BACKEND_CPU or FK_BACKEND_CUDA (never AUTO). */
  int32_t kernel_family;  /**< The forced family, else the best one this context dispatches
                               to (CPU for the CPU backend). */
  int32_t device_ordinal; /**< CUDA ordinal, or -1 on the CPU backend. */
  int32_t cc_major;       /**< Compute capability major (9 on H100/H200), 0 on CPU. */
  int32_t cc_minor;       /**< Compute capability minor, 0 on CPU. */
  int32_t sm_count;       /**< Streaming multiprocessors, 0 on CPU. */
  int32_t num_threads;    /**< CPU backend worker threads (1 on CUDA). */
  int64_t l2_bytes;       /**< L2 cache size in bytes, 0 on CPU. */
  int64_t smem_per_block_optin; /**< Opt-in shared memory per block in bytes, 0 on CPU. */
  char device_name[128];  /**< NUL-terminated, e.g. "NVIDIA H200" or "cpu". */
} fk_context_info_t;

/**
 * @brief Zeroes `info` and sets its `struct_size`.
 * @param[out] info The struct to prepare for fk_context_get_info().
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER if `info` is NULL.
 */
FK_API fk_status_t fk_context_info_init(fk_context_info_t* info);

/**
 * @brief Reports the backend, device and kernel family of a context.
 * @param context The context.
 * @param[out] info Prepared with fk_context_info_init(); filled on success.
 * @return FK_SUCCESS; FK_ERROR_NULL_POINTER; FK_ERROR_BAD_STRUCT_SIZE (`info` not prepared).
 */
FK_API fk_status_t fk_context_get_info(const fk_context_t* context, fk_context_info_t* info);

/**
 * @brief Static name of a backend.
 * @param backend Any value.
 * @return "auto", "cpu", "cuda", or "unknown".
 */
FK_API const char* fk_backend_name(fk_backend_t backend);

/**
 * @brief Static name of a kernel family.
 * @param family Any value.
 * @return "auto", "cpu", "generic", "sm80", "sm90", or "unknown".
 */
FK_API const char* fk_kernel_family_name(fk_kernel_family_t family);

/**
 * @brief Per-call launch settings. NULL wherever a `const fk_launch_t*` is taken means "the
 *        context's defaults": the default (legacy) CUDA stream and library-managed scratch.
 */
typedef struct fk_launch_t {
  uint32_t struct_size;    /**< sizeof(fk_launch_t); set by fk_launch_init(). */
  uint32_t flags;          /**< Reserved; must be 0 (FK_ERROR_INVALID_ARGUMENT). */
  void* stream;            /**< A `cudaStream_t` (CUDA backend); NULL is the default stream.
                                Ignored on the CPU backend. Not validated on either: flashkit
                                cannot tell a stream from another pointer. That it is a live
                                stream of the context's device is the caller's
                                responsibility; flashkit does not detect a stream of another
                                device or a destroyed one, and what follows is up to the CUDA
                                runtime. */
  void* workspace;         /**< Optional caller scratch memory on the context's device. A
                                call takes its temporary buffers from it first (256-byte
                                aligned pieces); what does not fit, or everything when it is
                                NULL, is allocated stream-ordered (cudaMallocAsync, freed on
                                the same stream when the call returns), so a small or absent
                                workspace is never an error. It must not overlap any tensor
                                of the call (FK_ERROR_INVALID_ARGUMENT, "launch.workspace:
                                overlaps <tensor>", outputs untouched) nor be used by other
                                work until the call's kernels have finished on the stream.
                                Any start address works (pieces are aligned inside it). Its
                                device is not validated (flashkit cannot tell device memory
                                of one GPU from another's or from host memory without a
                                runtime query per call): memory the context's kernels cannot
                                write is the caller's error, and what follows is up to the
                                CUDA runtime, as for `stream`. Most calls need none: on the
                                GPU today the split-K
                                GEMMs (fp32 partial tiles and arrival counters), attention
                                run with its keys split (decode-like calls with too few
                                query tiles to fill the GPU: each key chunk's queries,
                                output and LSE, and their cu_seqlens), the FFT
                                convolutions (a plan without FK_FFTCONV_FILTER_CONSTANT: each
                                call's filter spectrum; cuda.sm80.fftconv_reg at fft_size
                                65536: up to 256 KB per multiprocessor between its two
                                passes; the generic kernel above fft_size 8192: its
                                four-step intermediates), every fp8 attention call
                                (fk_attention_fp8_forward: the bf16 copies of q, k and v of
                                the dequantising path; on cuda.sm90.attention_fp8 a copy of
                                v, transposed or plain, where it needs one) and the Monarch
                                variants
                                that run in passes (cuda.sm80.monarch_unfused: two 16-bit
                                buffers for a chunk of tokens, 128 MiB together when the call
                                has that many tokens, more only when 128 tokens already
                                exceed it, and the permuted bias; the generic kernel: its
                                fp32 intermediate) take scratch; the CPU backend never
                                does. Plan tables (twiddles, cached spectra) are the plan's
                                own memory, allocated by the call that first needs them.

                                fk_*_workspace_size() (0.3.0) reports the bytes with which a
                                call on the same arguments allocates no scratch: the sum of
                                its buffers, each rounded up to 256 bytes, plus 255 so that
                                any start address works; 0 when it takes none. The answer is
                                for the variant fk_*_select_kernel() names, so it depends on
                                the shapes, dtypes and strides, the data pointers' alignment
                                (which can change the variant; the data are never read), the
                                device, the context's kernel family, the plan's flags and the
                                FLASHKIT_* tuning variables. Query once per shape and
                                alignment, with the real tensors or with stand-ins of the same
                                alignment (a TensorRT plugin's getWorkspaceSize has no data
                                pointers: 256-byte aligned dummies give the size for aligned
                                tensors). The size is not monotone in the shapes (attention
                                splits the keys of small decode batches only): query each
                                shape, not only the largest. Varlen attention without max_seqlen_q/k reads
                                cu_seqlens back in the query as in the call (a synchronising
                                copy on the default stream). One workspace shared by several
                                calls must hold the largest of their sizes. */
  uint64_t workspace_bytes;/**< Size of `workspace` in bytes; 0 when `workspace` is NULL
                                (FK_ERROR_NULL_POINTER otherwise); `workspace +
                                workspace_bytes` must not wrap around the address space
                                (FK_ERROR_INVALID_ARGUMENT). */
} fk_launch_t;

/**
 * @brief Fills `launch` with defaults (NULL stream, no workspace) and sets its `struct_size`.
 * @param[out] launch The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER.
 */
FK_API fk_status_t fk_launch_init(fk_launch_t* launch);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup attention Attention
 *
 *  `out = softmax(mask(softcap(softmax_scale * Q K^T))) V`, computed without materialising the
 *  score matrix (FlashAttention: Dao et al. 2022, "FlashAttention: Fast and Memory-Efficient
 *  Exact Attention with IO-Awareness", Algorithm 1; FlashAttention-2, Dao 2023, Section 3;
 *  FlashAttention-3, Shah et al. 2024, Section 3).
 *
 *  **Batched form** (`cu_seqlens_q == cu_seqlens_k == NULL`):
 *  - `q`   `(batch, seqlen_q, nheads,   head_dim)`
 *  - `k`,`v` `(batch, seqlen_k, nheads_k, head_dim)`
 *  - `out` `(batch, seqlen_q, nheads,   head_dim)`
 *  - `lse` `(batch, nheads, seqlen_q)`, fp32, optional.
 *
 *  **Variable-length form** (both `cu_seqlens_q` and `cu_seqlens_k` given): sequences are
 *  packed without padding.
 *  - `q`,`out` `(total_q, nheads, head_dim)`; `k`,`v` `(total_k, nheads_k, head_dim)`
 *  - `cu_seqlens_q` `(batch + 1,)` int32, `cu_seqlens_q[0] == 0`, non-decreasing, last entry
 *    `== total_q`; sequence `b` is rows `[cu_seqlens_q[b], cu_seqlens_q[b+1])`. Likewise
 *    `cu_seqlens_k` for keys. Empty sequences are allowed.
 *  - `lse` `(nheads, total_q)`, fp32, optional.
 *
 *  **Common rules**
 *  - dtype: q, k, v and out share one dtype: fp32, fp16 or bf16. Accumulation is fp32.
 *  - head_dim from 1 to 256; q and k have the same head_dim, v's head_dim must equal it too.
 *  - GQA/MQA: `nheads % nheads_k == 0`; query head `h` uses key/value head
 *    `h / (nheads / nheads_k)` (grouped-query attention, Ainslie et al. 2023, section 2.2;
 *    multi-query attention, Shazeer 2019, "Fast Transformer Decoding: One Write-Head is All
 *    You Need", section 3).
 *  - Layout: last dimension (head_dim) contiguous; other strides arbitrary (non-negative).
 *  - Masking (FlashAttention convention): with `seqlen_q != seqlen_k` the masks are aligned to
 *    the **bottom-right** corner: query row `i` is at position `i + seqlen_k - seqlen_q`.
 *    `causal` keeps keys `j <= i + seqlen_k - seqlen_q`. A sliding window `(left, right)` keeps
 *    keys with `i + seqlen_k - seqlen_q - left <= j <= i + seqlen_k - seqlen_q + right`, where
 *    -1 means unbounded on that side; causal is the window `(left, 0)` (sliding-window
 *    attention: Beltagy et al. 2020, Longformer, section 3.1). In the varlen form `i`, `j`,
 *    `seqlen_q` and `seqlen_k` are those of each sequence (`cu_seqlens_q[b+1] -
 *    cu_seqlens_q[b]`, likewise for k): every sequence is aligned bottom-right on its own.
 *  - A query row that sees no key (fully masked, or `seqlen_k == 0`, where k and v may have
 *    NULL data) gives `out = 0` and `lse = -inf`, never NaN. Keys whose score is -inf (an
 *    infinite input) get weight 0, also when they fill whole key tiles, but they still enter
 *    the `P V` product: a NaN or infinite value in such a key's `v` makes the row NaN (0 x NaN),
 *    as in FlashAttention. The same holds for some keys the mask excludes (`causal`, window):
 *    the CUDA kernels work on tiles of 16 to 192 query rows and 32 to 192 keys and multiply
 *    every key tile that any row of a query tile sees, giving the excluded keys in it a weight
 *    of 0. Other key tiles, keys past a sequence's end (varlen, `cache_seqlens`) and, on the
 *    CPU backend, every excluded key never enter `P V`, with one exception:
 *    `cuda.sm80.attention_packed`, which AUTO picks for varlen batches of many short
 *    sequences, puts several sequences in one tile, so there a NaN or Inf in one sequence's `v`
 *    can make other sequences' rows NaN (fk_context_options_t's `kernel_family` set to SM90
 *    keeps varlen calls off it on Hopper). A NaN score, or a +inf one, makes that row's `out`
 *    and `lse` NaN (not -inf, which means "no key"; torch's SDPA gives NaN for a +inf score
 *    too).
 *  - Range: `out` is a convex combination of `v` rows, accumulated unnormalised in fp32 (the
 *    GPU kernels over a whole row, the CPU backend per 64-key tile), so `sum_j p_j |v_j|` must
 *    stay below fp32's 3.4e38. Here `p_j = exp(s_j - m)` with `m` the running row maximum; the
 *    CPU backend, the generic CUDA kernel and the Hopper kernels at head_dim <= 128 keep
 *    `p_j <= 1`, while the sm80-class kernel and the Hopper kernels (16-bit and fp8) at
 *    head_dim > 128 let `m` lag the true maximum by up to 8 in base 2 to skip rescaling (so
 *    `p_j <= 256`). `|v| <= 1.3e36 / seqlen_k`
 *    (3.4e38 / (256 seqlen_k)) is therefore always safe; beyond that `out` can be inf where the
 *    exact result is finite.
 *  - `out` and `lse` must not share memory with any input (not even exactly in-place), and
 *    no two of their elements may share an address: FK_ERROR_INVALID_ARGUMENT /
 *    FK_ERROR_BAD_STRIDES.
 *  - softcap (logit soft-capping, Gemma Team 2024, "Gemma 2", section 2): when `softcap > 0`
 *    the scores become `softcap * tanh(s / softcap)` with
 *    `s = softmax_scale * q.k`, before masking. The Hopper and sm80-class CUDA kernels take
 *    tanh from `tanh.approx.f32` (relative error up to about 2^-11, so a score moves by up to
 *    `softcap * 5e-4`; FlashAttention-2 does the same); the CPU backend and the generic CUDA
 *    path compute it in full precision.
 *  - `lse` is the natural logarithm of the softmax denominator of each row, in FlashAttention's
 *    layout, computed on the (scaled, capped) scores.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Largest head_dim any attention call accepts. */
#define FK_ATTENTION_MAX_HEAD_DIM 256

/** @brief Attention options. Fill with fk_attention_params_init(). */
typedef struct fk_attention_params_t {
  uint32_t struct_size;      /**< sizeof(fk_attention_params_t); set by the init function. */
  float softmax_scale;       /**< Multiplier of Q K^T. NaN (the default) means
                                  `1 / sqrt(head_dim)`. Any finite value is accepted, but the
                                  score `softmax_scale * q.k` is formed in fp32 and a score
                                  that overflows it (|score| > 3.4e38) is not guarded against:
                                  its row can come out NaN. The CUDA kernels form `q.k` before
                                  scaling it and then work in base 2 (score x log2(e)), so
                                  there |q.k| must stay below 3.4e38 and |score| below 2.3e38
                                  (past that a row can also come out as "no key": out 0, lse
                                  -inf); the CPU backend folds a |scale| <= 1 into q first.
                                  An infinite value: FK_ERROR_INVALID_ARGUMENT naming
                                  `params.softmax_scale`. */
  int32_t causal;            /**< Nonzero for a causal mask (bottom-right aligned). Default 0. */
  int32_t window_size_left;  /**< Keys allowed to the left of the diagonal; -1 (default) is
                                  unbounded. Must be >= -1 (FK_ERROR_INVALID_ARGUMENT naming
                                  `params.window_size_left`). */
  int32_t window_size_right; /**< Keys allowed to the right; -1 (default) is unbounded, forced
                                  to 0 by `causal`. Must be >= -1 (FK_ERROR_INVALID_ARGUMENT
                                  naming `params.window_size_right`; checked before `causal`
                                  forces it). */
  float softcap;             /**< Score cap; 0 (default) disables it; must be >= 0 and finite
                                  (FK_ERROR_INVALID_ARGUMENT naming `params.softcap` for a
                                  negative, infinite or NaN value). */
  /**
   * Varlen form: the longest sequence in `cu_seqlens_q`, FlashAttention's `max_seqlen_q`
   * (rows, int64); not used in the batched form. 0 (the default) means "not given": the
   * library then reads `cu_seqlens_q` itself to find it and to check every entry, which on the
   * CUDA backend copies it to the host and waits for the launch stream (a host-device
   * synchronisation per call). Given (> 0) on the CUDA backend, `cu_seqlens_q` is read only by
   * the kernel: entries are then trusted, except that the kernel clamps each one to
   * `[0, total_q]` (and each end to at least its start), so wrong entries never make it touch
   * memory outside q, k, v, out and lse, but the result is unspecified; rows of a sequence
   * longer than `max_seqlen_q` are not written. The call waits for nothing only when both
   * `max_seqlen_q` and `max_seqlen_k` are given. On the CPU backend (host cu_seqlens) the
   * entries are always checked and a value below the longest sequence is
   * FK_ERROR_INVALID_ARGUMENT. Negative (either form): FK_ERROR_INVALID_ARGUMENT. Required (> 0)
   * while the launch stream is being captured into a CUDA graph, where reading cu_seqlens back
   * is impossible: FK_ERROR_INVALID_ARGUMENT naming it otherwise (a batch whose sequences are
   * all empty passes 1). Added in 0.2.0 (ABI 1).
   */
  int64_t max_seqlen_q;
  int64_t max_seqlen_k; /**< The same for `cu_seqlens_k` (`max_seqlen_k`, keys). */
} fk_attention_params_t;

/**
 * @brief Fills `params` with defaults: non-causal, window (-1, -1), softcap 0, softmax_scale
 *        NaN (meaning `1 / sqrt(head_dim)`), max_seqlen_q/k 0 (read from cu_seqlens).
 * @param[out] params The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER.
 */
FK_API fk_status_t fk_attention_params_init(fk_attention_params_t* params);

/**
 * @brief Attention forward.
 *
 * Every tensor's data pointer (`data + byte_offset`) must be aligned to its element size
 * (FK_ERROR_MISALIGNED) and live where the context runs (FK_ERROR_WRONG_DEVICE); strides are
 * in elements and must be non-negative (FK_ERROR_BAD_STRIDES).
 *
 * @param context      The context (device and backend). NULL: FK_ERROR_NULL_POINTER.
 * @param launch       Stream and workspace, or NULL for defaults.
 * @param params       Options, or NULL for defaults (fk_attention_params_init()).
 * @param q            Queries: `(batch, seqlen_q, nheads, head_dim)`, or
 *                     `(total_q, nheads, head_dim)` in the varlen form; fp32, fp16 or bf16;
 *                     head_dim (1..256, FK_ERROR_SHAPE_MISMATCH otherwise) contiguous, other
 *                     strides arbitrary.
 * @param k            Keys: `(batch, seqlen_k, nheads_k, head_dim)`, or
 *                     `(total_k, nheads_k, head_dim)`; q's dtype (FK_ERROR_DTYPE_MISMATCH) and
 *                     head_dim; `nheads % nheads_k == 0` (GQA/MQA); head_dim contiguous.
 * @param v            Values: k's shape, dtype and layout rules.
 * @param cu_seqlens_q NULL (batched form) or int32 `(batch + 1,)`, contiguous (varlen form):
 *                     row offsets of each sequence in q, 0 first, non-decreasing, `total_q`
 *                     last (FK_ERROR_INVALID_ARGUMENT otherwise); `total_q` and `total_k` at
 *                     most 2^31 - 1 (int32 offsets; FK_ERROR_SHAPE_MISMATCH).
 * @param cu_seqlens_k NULL or int32 `(batch + 1,)`, the same for k and v (`total_k` last); must
 *                     be given together with `cu_seqlens_q`. On the CUDA backend both live on
 *                     the device and are read there.
 * @param out          Output: q's shape and dtype, head_dim contiguous; must not overlap an
 *                     input (FK_ERROR_INVALID_ARGUMENT).
 * @param lse          NULL, or fp32 log-sum-exp output (natural log) `(batch, nheads,
 *                     seqlen_q)`, or `(nheads, total_q)` in the varlen form
 *                     (FK_ERROR_DTYPE_MISMATCH for any other dtype, fp8 included;
 *                     FK_ERROR_SHAPE_MISMATCH); last dimension contiguous
 *                     (FK_ERROR_BAD_STRIDES), other strides arbitrary but no two elements at
 *                     one address (FK_ERROR_BAD_STRIDES); must not overlap an input or `out`
 *                     (FK_ERROR_INVALID_ARGUMENT).
 * @return FK_SUCCESS; the statuses every operation shares (@ref status "Status codes and
 *   errors": NULL pointers, struct sizes, launch flags and workspace, negative strides,
 *   outputs overlapping an input or writing one address twice, dtypes, alignment, devices,
 *   memory and CUDA errors); and, for this call:
 *   FK_ERROR_SHAPE_MISMATCH (ranks, batch/seqlen/head counts disagree, head_dim > 256 or 0,
 *   nheads % nheads_k != 0, lse's shape, cu_seqlens lengths, total_q or total_k above
 *   2^31 - 1);
 *   FK_ERROR_DTYPE_MISMATCH (q, k, v, out differ or are not fp32/fp16/bf16; lse not fp32;
 *   cu_seqlens not int32);
 *   FK_ERROR_NOT_SUPPORTED (an fp8 q, k, v or out: fp8 inputs go to
 *   fk_attention_fp8_forward());
 *   FK_ERROR_BAD_STRIDES (the last dimension of q, k, v, out or lse not contiguous, cu_seqlens
 *   not contiguous, out or lse writing two elements to one address);
 *   FK_ERROR_INVALID_ARGUMENT (window sizes < -1, softcap < 0 or not finite, softmax_scale
 *   infinite; max_seqlen_q or max_seqlen_k negative (either form), below the longest sequence
 *   (CPU backend, where cu_seqlens are always read), or 0 while the launch stream is being
 *   captured into a CUDA graph (naming the missing one); cu_seqlens not starting at 0,
 *   decreasing, or not ending at total; only one of the two cu_seqlens given; out or lse
 *   overlapping an input, lse overlapping out);
 *   FK_ERROR_OUT_OF_MEMORY (library-managed scratch, e.g. split-key partials);
 *   FK_ERROR_DEVICE; FK_ERROR_KERNEL_LAUNCH.
 *   On the CUDA backend the entries of a device-resident cu_seqlens (monotonicity, start, end)
 *   are checked only when they are read back, which is decided per tensor: `cu_seqlens_q` is
 *   read back when `params.max_seqlen_q` is 0, `cu_seqlens_k` when `max_seqlen_k` is 0, and a
 *   read-back synchronises the stream. With both given nothing is read back, and wrong
 *   entries give an unspecified result but no out-of-bounds access (see `max_seqlen_q`).
 */
FK_API fk_status_t fk_attention_forward(const fk_context_t* context, const fk_launch_t* launch,
                                        const fk_attention_params_t* params, const DLTensor* q,
                                        const DLTensor* k, const DLTensor* v,
                                        const DLTensor* cu_seqlens_q,
                                        const DLTensor* cu_seqlens_k, const DLTensor* out,
                                        const DLTensor* lse);

/**
 * @brief Names the kernel variant fk_attention_forward() would run for these arguments,
 *        e.g. `"cuda.generic.attention"` or `"cpu.attention"`.
 *
 * Validates exactly as fk_attention_forward() does (same statuses) and runs nothing.
 * @param context, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse As for
 *        fk_attention_forward().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_attention_forward(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_attention_select_kernel(const fk_context_t* context,
                                              const fk_attention_params_t* params,
                                              const DLTensor* q, const DLTensor* k,
                                              const DLTensor* v, const DLTensor* cu_seqlens_q,
                                              const DLTensor* cu_seqlens_k, const DLTensor* out,
                                              const DLTensor* lse, const char** variant_name);

/**
 * @brief Workspace bytes that fk_attention_forward() on these arguments needs so that it
 *        allocates nothing: nonzero exactly when the CUDA backend splits the keys of the call
 *        into chunks (batched fp16/bf16, few query tiles, a mask that hides no key; 0.4.0).
 *        So the size is not monotone in the shapes: a small batch can need scratch where a
 *        large one needs none (query every shape, not only the largest).
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_attention_forward() (same statuses) and runs nothing.
 * @param context, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse As for
 *        fk_attention_forward().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_attention_forward(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_attention_workspace_size(const fk_context_t* context,
                                               const fk_attention_params_t* params,
                                               const DLTensor* q, const DLTensor* k,
                                               const DLTensor* v, const DLTensor* cu_seqlens_q,
                                               const DLTensor* cu_seqlens_k, const DLTensor* out,
                                               const DLTensor* lse, uint64_t* workspace_bytes);

/**
 * @brief Attention forward on fp8 (e4m3fn) queries, keys and values with per-(batch, kv-head)
 *        descale factors, output bf16: FlashAttention-3's FP8 forward contract (Shah et al.
 *        2024, "FlashAttention-3: Fast and Accurate Attention with Asynchrony and
 *        Low-precision", Section 3.3; its `q_descale` / `k_descale` / `v_descale`). Added in
 *        0.6.0.
 *
 * Computes fk_attention_forward() on the dequantised inputs
 * `q_real[b, s, h, :] = descale_q[b, h / (nheads / nheads_k)] * float(q[b, s, h, :])`,
 * `k_real[b, s, g, :] = descale_k[b, g] * float(k[b, s, g, :])` and likewise v (varlen form:
 * row r of q belongs to sequence b when `cu_seqlens_q[b] <= r < cu_seqlens_q[b + 1]`, a row of
 * k or v likewise by `cu_seqlens_k`), with every
 * option of `params` (causal, window, softcap, GQA/MQA, varlen, lse). Two implementations,
 * named by fk_attention_fp8_select_kernel():
 *
 * - `"cuda.sm90.attention_fp8"` (0.7.0): fp8 tensor-core arithmetic, FlashAttention-3's
 *   (Section 3.3), on compute capability 9.0 with the AUTO or SM90 kernel family. S = q k^T on
 *   the e4m3 codes (fp32 accumulation), scaled by softmax_scale * descale_q * descale_k; the
 *   probabilities P = exp(S - m), m the running row max (at head_dim 256 it may lag the true
 *   max by up to 2^8 in base 2, so P <= 256), are rounded to e4m3 for the P V product on the
 *   codes of v (the row sums keep fp32 P); O is scaled by descale_v and rounded to bf16.
 *   Rounding P to e4m3 (3 mantissa bits) is the one approximation beyond fp32 arithmetic: the
 *   GPU tests hold every output element within the bound of that rounding, (2^-4 sum_j P_j
 *   |v_j| + 2^-10 sum_j |v_j|) / sum_j P_j plus bf16's rounding, and the relative L2 error to
 *   at most twice that of the same math done naively in float64 (FlashAttention's rule); lse
 *   comes from the fp32 scores and the unrounded P. Descale factors of any sign are taken (a
 *   product descale_q * descale_k that is not positive turns the scores into logits before
 *   the softmax). It takes batched calls (no
 *   cu_seqlens) with head_dim 128 or 256, softcap 0 and softmax_scale > 0 (the default
 *   included), q and k 16-byte aligned with row, head and batch strides that are multiples of
 *   16 elements, and out as fk_attention_forward()'s Hopper kernel takes it (16-byte aligned,
 *   strides multiples of 8); any causal or window mask, GQA/MQA, lse. wgmma reads 8-bit
 *   operands K-major only, so P V needs v transposed. At head_dim 128, and at head_dim 256
 *   where few query rows read each key, the kernel transposes v's tiles in shared memory and
 *   needs no scratch when v is 16-byte aligned with strides that are multiples of 16 elements
 *   (else it first copies v into a contiguous scratch of batch * seqlen_k * nheads_k * head_dim
 *   bytes). "Few" means R <= 640, where R = (nheads / nheads_k) * 128 * (the keys each
 *   128-row query tile attends, from its first row's lowest to its last row's highest visible
 *   key under the mask, summed over the tiles; estimated from at most 64 tiles) / seqlen_k:
 *   the transposition's cost grows with the key tiles the work visits, a pass's with the keys
 *   (H200: 14-20% faster at 512 keys, 5-24% slower from 2k keys on; benchmarks/RESULTS.md).
 *   Otherwise one pass before the kernel writes a transposed copy of v to scratch, batch *
 *   nheads_k * head_dim * (seqlen_k rounded up to 16) bytes. The environment variable
 *   FLASHKIT_SM90_FP8_VT set to "0" / "2" (read once per process) gives every head_dim 256 call
 *   the pass / the transposition in shared memory. Scratch comes from the launch workspace or is allocated per call
 *   (fk_attention_fp8_workspace_size()). Calls past its size limits
 *   (batch or nheads_k above 65535, seqlen or nheads above 2^30, strides of 2^39 elements or
 *   more) take the path below, as does every call when the environment variable
 *   FLASHKIT_ATTENTION_FP8_DEQUANT is "1" (read once per process).
 * - `"<bf16 variant>+fp8_dequant"`, every other call and backend: the dequantised values are
 *   rounded to bf16 once and the attention runs on the bf16 kernels of the context's backend:
 *   the result equals, bit for bit on the same device, fk_attention_forward() on contiguous
 *   bf16 tensors holding those values with the same `out` and `lse` (the variant the
 *   dispatcher picks depends on the layouts). On the CUDA backend this costs one extra pass
 *   over q, k and v (read fp8, write bf16 scratch) on top of the bf16 attention, and the
 *   scratch (2 bytes per element of q, k and v) comes from the launch workspace or is
 *   allocated per call (fk_attention_fp8_workspace_size()).
 *
 * Either can be captured into a CUDA graph under the same conditions as
 * fk_attention_forward(). The CPU backend dequantises into
 * host memory it allocates: 2 bytes per logical element of q, k and v, a broadcast (stride 0)
 * view counted at its logical size; a copy that cannot be allocated is FK_ERROR_OUT_OF_MEMORY
 * naming the tensor (on every backend when it would exceed 2^62 bytes).
 *
 * Arguments as fk_attention_forward(), except:
 * @param context, launch, params, cu_seqlens_q, cu_seqlens_k As for fk_attention_forward().
 * @param q, k, v      float8 e4m3fn `{FK_DLPACK_FLOAT8_E4M3FN, 8, 1}` (all three;
 *                     FK_ERROR_DTYPE_MISMATCH otherwise, e5m2 included: FlashAttention-3
 *                     quantises attention inputs to e4m3), shapes, strides and layouts as
 *                     fk_attention_forward()'s. A NaN code (S.1111.111) propagates to the rows
 *                     it reaches, as a NaN input would.
 * @param descale_q    NULL (all factors 1), or fp32 `(batch, nheads_k)` (FK_ERROR_DTYPE_MISMATCH
 *                     for any other dtype, fp8 included; FK_ERROR_SHAPE_MISMATCH for another
 *                     rank or shape), any non-negative strides (a negative one:
 *                     FK_ERROR_BAD_STRIDES), on the context's device: the factor that
 *                     multiplies query head h of sequence b is
 *                     `descale_q[b, h / (nheads / nheads_k)]` (one factor per GQA group, as
 *                     in FlashAttention-3). `batch` is the number of sequences (cu_seqlens
 *                     length - 1 in the varlen form). A per-tensor factor (one value for the
 *                     whole tensor) is passed as a `(batch, nheads_k)` view of that one fp32
 *                     value with both strides 0. Factors are applied as given, never
 *                     validated: a NaN or infinite factor makes its rows NaN or infinite, not
 *                     an error.
 * @param descale_k    NULL or fp32 `(batch, nheads_k)`, with descale_q's rules: the factor of
 *                     key head g of sequence b.
 * @param descale_v    NULL or fp32 `(batch, nheads_k)`, with descale_q's rules: the factor of
 *                     value head g of sequence b.
 * @param out          bf16 (FK_ERROR_DTYPE_MISMATCH otherwise, fp8 included), q's shape,
 *                     head_dim contiguous; must not overlap an input, the descale factors
 *                     included (FK_ERROR_INVALID_ARGUMENT).
 * @param lse          As fk_attention_forward() (fp32, natural log, of the scores of the
 *                     dequantised inputs; see above for how each implementation computes it).
 *
 * Source of the fp8 kernel's scheme: Shah et al. 2024, Section 3.3 (P in fp8 for the second
 * GEMM; V transposed for the K-major fp8 wgmma, in shared memory as there, except at head_dim
 * 256 with many query rows per key). Its speed on the H200: benchmarks/RESULTS.md, "FP8
 * attention on the fp8 tensor cores", "V transposed in shared memory at head_dim 128" and
 * "head_dim 256: V transposed in shared memory where few query rows read each key".
 * @return As fk_attention_forward(), with the dtype rules above in place of its own (a q, k,
 *   v or out of the wrong dtype, fp8 or not, is FK_ERROR_DTYPE_MISMATCH here, never
 *   FK_ERROR_NOT_SUPPORTED); FK_ERROR_INVALID_ARGUMENT also when out or lse overlaps a descale
 *   tensor; FK_ERROR_OUT_OF_MEMORY also when a bf16 copy would exceed 2^62 bytes.
 */
FK_API fk_status_t fk_attention_fp8_forward(
    const fk_context_t* context, const fk_launch_t* launch, const fk_attention_params_t* params,
    const DLTensor* q, const DLTensor* k, const DLTensor* v, const DLTensor* descale_q,
    const DLTensor* descale_k, const DLTensor* descale_v, const DLTensor* cu_seqlens_q,
    const DLTensor* cu_seqlens_k, const DLTensor* out, const DLTensor* lse);

/**
 * @brief Names the kernel variant fk_attention_fp8_forward() would run:
 *        `"cuda.sm90.attention_fp8"` (the fp8 tensor-core kernel, 0.7.0), or the bf16
 *        attention kernel's name with `"+fp8_dequant"` appended, e.g.
 *        `"cuda.sm80.attention+fp8_dequant"`. Added in 0.6.0.
 *
 * Validates exactly as fk_attention_fp8_forward() does and runs nothing.
 * @param context, params, q, k, v, descale_q, descale_k, descale_v, cu_seqlens_q, cu_seqlens_k,
 *        out, lse As for fk_attention_fp8_forward().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_attention_fp8_forward(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_attention_fp8_select_kernel(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k, const DLTensor* v, const DLTensor* descale_q, const DLTensor* descale_k,
    const DLTensor* descale_v, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
    const DLTensor* out, const DLTensor* lse, const char** variant_name);

/**
 * @brief Workspace bytes with which fk_attention_fp8_forward() allocates nothing: for
 *        `"cuda.sm90.attention_fp8"` where it transposes v in shared memory (head_dim 128,
 *        and head_dim 256 with few query rows per key: fk_attention_fp8_forward()) nothing (0),
 *        or a contiguous copy of a v off the copy engine's 16-byte rule (batch * seqlen_k *
 *        nheads_k * head_dim bytes); otherwise (head_dim 256) the transposed copy of v (batch *
 *        nheads_k * head_dim * (seqlen_k rounded up to 16) bytes); each rounded up to 256,
 *        plus 255 for the alignment of the workspace's start; for the dequantising path on the CUDA backend the bf16
 *        copies of q, k and v (2 bytes per element each) plus what the bf16 attention call
 *        needs (fk_attention_workspace_size()); 0 on the CPU backend, which dequantises into
 *        host memory it allocates. Added in 0.6.0.
 *
 * Validates like fk_attention_fp8_forward() and runs nothing.
 * @param context, params, q, k, v, descale_q, descale_k, descale_v, cu_seqlens_q, cu_seqlens_k,
 *        out, lse As for fk_attention_fp8_forward().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_attention_fp8_forward(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_attention_fp8_workspace_size(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k, const DLTensor* v, const DLTensor* descale_q, const DLTensor* descale_k,
    const DLTensor* descale_v, const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
    const DLTensor* out, const DLTensor* lse, uint64_t* workspace_bytes);

/**
 * @brief Attention of new queries over a KV cache, contiguous or paged: FlashAttention's
 *        `flash_attn_with_kvcache` contract (decode and chunked prefill in an inference
 *        server). Added in 0.5.0.
 *
 * The paged layout is vLLM's PagedAttention (Kwon et al. 2023, "Efficient Memory Management
 * for Large Language Model Serving with PagedAttention", Section 4.1): the keys and values of
 * all sequences live in one pool of fixed-size pages (FlashAttention calls them blocks), and
 * row `b` of `block_table` lists the pages of sequence `b` in key order. Key `n` of sequence
 * `b` is row `n % page_block_size` of page `block_table[b][n / page_block_size]`.
 *
 * The cache is read, never written (appending the new tokens' keys and values is the
 * caller's, e.g. a scatter into the pages before this call). Everything else, masks, softcap,
 * GQA/MQA, `lse`, dtypes, strides and alignment, follows fk_attention_forward()'s batched form
 * with `seqlen_k = cache_seqlens[b]` per sequence: the masks are bottom-right aligned to each
 * sequence's own length, so query row `i` of sequence `b` sits at key position
 * `cache_seqlens[b] - seqlen_q + i` (the new tokens are the last `seqlen_q` keys of the cache).
 * A row that sees no key (`cache_seqlens[b] == 0`, or masked) gives `out = 0`, `lse = -inf`.
 *
 * Entries of `cache_seqlens` and `block_table`. On the CPU backend (host memory) every entry
 * is checked: FK_ERROR_INVALID_ARGUMENT naming the tensor and the entry. On the CUDA backend
 * they stay in device memory and are read only by the kernels, so the call never waits for
 * the stream and can be captured into a CUDA graph; entries are then trusted, except that a
 * sequence length is clamped to `[0, capacity]` and a page index to `[0, num_blocks - 1]`, so
 * a wrong entry gives a wrong result but never an access outside `k_cache` and `v_cache`.
 *
 * Kernels, on the CUDA backend. On Hopper (compute capability 9.0) the Hopper kernel
 * (`cuda.sm90.attention`) serves fp16/bf16 contiguous caches, and paged caches whose
 * page_block_size is a multiple of 16 (FlashAttention-2 asks for multiples of 256), with
 * 16-byte aligned rows and strides that are multiples of 8 elements; decode calls (at most 16
 * query rows per KV head) over pages that are not a multiple of its key tile (128 keys at
 * head_dim <= 128, 112 at <= 192, 80 above) run on the sm80-class kernel wherever it takes
 * them. That kernel (every GPU of compute capability >= 8.0, Hopper included;
 * `cuda.sm80.attention`) serves fp16/bf16 caches with the same alignment and a
 * page_block_size that is a power of two and, unless the call is a decode (at most 16 query
 * rows per KV head after grouping the GQA heads, head_dim <= 64 or 97-128), at least one key
 * tile (64 keys, 128 at head_dim <= 64). Everything else runs on `cuda.generic.attention`,
 * which is correct for any valid input but slower.
 * Small decode batches, and calls of up to 128 causal query rows per sequence without a left
 * window (speculative decoding, short prefill chunks) whose tiles do not fill the GPU, have
 * their keys split into chunks of whole pages (causal rows: chunks cut from each sequence's
 * end, masked so that every row sees each of its keys once), which takes scratch
 * (fk_attention_kvcache_workspace_size()). When: fp16/bf16 only (fp32 runs the generic kernel
 * and is never split), at least 1024 keys (chunks of at least 512), at most 128 query rows per
 * sequence, and work tiles (for a decode: sequences x KV heads, the GQA group packed into one
 * tile) under 80% of the GPU's multiprocessors (FlashAttention-2's wave rule picks the chunk
 * count, up to 32; on the Hopper row no more chunks than fit one wave, so that row splits only
 * calls with at most half as many tiles as multiprocessors); causal rows only within a quarter
 * of the wave.
 * fk_attention_kvcache_select_kernel() names the kernel row; a split call
 * keeps the row's name, and a nonzero fk_attention_kvcache_workspace_size() is what says that
 * the call splits (docs/design.md, "split-KV"). The split is planned per call; no argument
 * pins it (FLASHKIT_ATTENTION_SPLIT_KV, a process-wide diagnostic, turns it off or forces a
 * count).
 *
 * @param context       As fk_attention_forward().
 * @param launch        Stream and workspace, or NULL for defaults.
 * @param params        Options as for fk_attention_forward(); `max_seqlen_q` and
 *                      `max_seqlen_k` are not used here and must be 0
 *                      (FK_ERROR_INVALID_ARGUMENT otherwise).
 * @param q             New queries `(batch, seqlen_q, nheads, head_dim)`; fp32, fp16 or bf16;
 *                      head_dim (1..256) contiguous, other strides arbitrary.
 * @param k_cache       Keys. Without `block_table`: `(batch, seqlen_cache, nheads_k,
 *                      head_dim)`, capacity `seqlen_cache` keys per sequence. With
 *                      `block_table`: the page pool `(num_blocks, page_block_size, nheads_k,
 *                      head_dim)`, capacity `max_blocks_per_seq * page_block_size`. The
 *                      capacity is at most 2^31 - 1 keys, the int32 range of cache_seqlens,
 *                      even when cache_seqlens is NULL (FK_ERROR_SHAPE_MISMATCH). q's dtype
 *                      (FK_ERROR_DTYPE_MISMATCH) and head_dim; `nheads % nheads_k == 0`;
 *                      head_dim contiguous, other strides arbitrary (FK_ERROR_BAD_STRIDES if
 *                      negative); page_block_size >= 1 (FK_ERROR_SHAPE_MISMATCH); with
 *                      `block_table` of at least one column and batch >= 1, num_blocks >= 1
 *                      (FK_ERROR_SHAPE_MISMATCH, a shape rule checked before any value is
 *                      read: even when every sequence is empty).
 * @param v_cache       Values: k_cache's shape and dtype; its own strides.
 * @param cache_seqlens NULL (every sequence holds `capacity` keys) or int32 `(batch,)`,
 *                      contiguous, in q's memory space: the number of valid keys of each
 *                      sequence (FlashAttention's `cache_seqlens`, vLLM's `seq_lens`), in
 *                      `[0, capacity]` (FK_ERROR_INVALID_ARGUMENT on the CPU backend; clamped on
 *                      CUDA).
 * @param block_table   NULL (contiguous cache) or int32 `(batch, max_blocks_per_seq)`, last
 *                      dimension contiguous, row stride arbitrary (>= 0): the page indices of
 *                      each sequence, each in `[0, num_blocks)` (FK_ERROR_INVALID_ARGUMENT on
 *                      the CPU backend; clamped on CUDA). Only the first
 *                      `ceil(cache_seqlens[b] / page_block_size)` entries of row `b` are read;
 *                      the rest may hold anything. Pages may be shared between sequences
 *                      (prefix caching).
 * @param out           Output `(batch, seqlen_q, nheads, head_dim)`, q's dtype, head_dim
 *                      contiguous; must not overlap an input (FK_ERROR_INVALID_ARGUMENT).
 * @param lse           NULL, or fp32 `(batch, nheads, seqlen_q)` (FK_ERROR_DTYPE_MISMATCH /
 *                      FK_ERROR_SHAPE_MISMATCH otherwise), last dimension contiguous and no
 *                      two elements at one address (FK_ERROR_BAD_STRIDES); must not overlap
 *                      an input or `out` (FK_ERROR_INVALID_ARGUMENT).
 * @return As fk_attention_forward(), plus: FK_ERROR_SHAPE_MISMATCH (k_cache/v_cache ranks or
 *   extents, cache_seqlens not `(batch,)`, block_table not `(batch, max_blocks_per_seq)`, a
 *   paged cache without `batch` rows of block_table); FK_ERROR_DTYPE_MISMATCH (cache_seqlens or
 *   block_table not int32); FK_ERROR_BAD_STRIDES (cache_seqlens or block_table's last dimension
 *   not contiguous); FK_ERROR_INVALID_ARGUMENT (entries on the CPU backend, max_seqlen_q/k not 0).
 */
FK_API fk_status_t fk_attention_kvcache_forward(const fk_context_t* context,
                                                const fk_launch_t* launch,
                                                const fk_attention_params_t* params,
                                                const DLTensor* q, const DLTensor* k_cache,
                                                const DLTensor* v_cache,
                                                const DLTensor* cache_seqlens,
                                                const DLTensor* block_table, const DLTensor* out,
                                                const DLTensor* lse);

/**
 * @brief Names the kernel variant fk_attention_kvcache_forward() would run for these
 *        arguments. Validates exactly as it does (same statuses) and runs nothing. Added in
 *        0.5.0.
 * @param context, params, q, k_cache, v_cache, cache_seqlens, block_table, out, lse As for
 *        fk_attention_kvcache_forward().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_attention_kvcache_forward(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_attention_kvcache_select_kernel(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* cache_seqlens,
    const DLTensor* block_table, const DLTensor* out, const DLTensor* lse,
    const char** variant_name);

/**
 * @brief Workspace bytes that fk_attention_kvcache_forward() on these arguments needs so that
 *        it allocates nothing (fk_launch_t::workspace says what the size covers). Validates
 *        like it (same statuses) and runs nothing. Added in 0.5.0.
 * @param context, params, q, k_cache, v_cache, cache_seqlens, block_table, out, lse As for
 *        fk_attention_kvcache_forward().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_attention_kvcache_forward(); FK_ERROR_NULL_POINTER if `workspace_bytes` is
 *         NULL.
 */
FK_API fk_status_t fk_attention_kvcache_workspace_size(
    const fk_context_t* context, const fk_attention_params_t* params, const DLTensor* q,
    const DLTensor* k_cache, const DLTensor* v_cache, const DLTensor* cache_seqlens,
    const DLTensor* block_table, const DLTensor* out, const DLTensor* lse,
    uint64_t* workspace_bytes);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup gemm GEMM
 *
 *  `D = activation(alpha * op(A) @ op(B) + beta * C + bias)` with `op(X) = X` or `X^T`,
 *  accumulated in fp32: the BLAS GEMM contract (xGEMM of the Level 3 BLAS: Dongarra, Du Croz,
 *  Hammarling and Duff, "A set of level 3 basic linear algebra subprograms", ACM TOMS 16(1),
 *  1990), with cuBLASLt-style fused epilogues (bias and activation optional).
 *
 *  - `a`: `(M, K)`, or `(K, M)` when `trans_a`; optionally with a leading batch dimension.
 *  - `b`: `(K, N)`, or `(N, K)` when `trans_b`; optionally batched.
 *  - `c`: optional `(M, N)` or `(batch, M, N)`; validated whenever given, read only when
 *    `beta != 0`. `d` may be exactly the same view as `c` (in-place `D = A B + C`).
 *  - `bias`: optional vector `(N,)`, one value per output column (output feature), added to
 *    every row.
 *  - `d`: output `(M, N)` or `(batch, M, N)`.
 *  - Epilogue order: `t = alpha * acc + beta * c + bias`, then the activation.
 *  - Batched: any operand of rank 3 has a batch dimension; `d`'s batch is the batch count and an
 *    operand of rank 2, of batch 1, or of batch stride 0 is broadcast to every batch. A rank-3
 *    operand's batch must equal `d`'s or be 1, and with a rank-2 `d` it must be 1
 *    (FK_ERROR_SHAPE_MISMATCH).
 *  - Strides: the two matrix dimensions may have any non-negative strides (row-major,
 *    column-major via strides, or padded); `trans_a/trans_b` are the BLAS alternative.
 *  - dtypes: a and b share one of fp32/fp16/bf16; c and d share one of fp32/fp16/bf16; bias is
 *    any of the three. An fp16 or bf16 `d` receives the fp32 result rounded to nearest (ties
 *    to even); beyond its range that is +-inf (fp16: |x| >= 65520), as a cast does.
 *  - K = 0 gives `epilogue(beta * C + bias)` (zeros before the epilogue without C), never
 *    untouched memory.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Elementwise activation applied last in a GEMM epilogue. */
typedef enum fk_activation_t {
  FK_ACTIVATION_NONE = 0,      /**< Identity. */
  FK_ACTIVATION_RELU = 1,      /**< max(x, 0); NaN stays NaN (as torch.relu). */
  FK_ACTIVATION_GELU_TANH = 2, /**< 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
                                    (Hendrycks & Gimpel 2016, "Gaussian Error Linear Units
                                    (GELUs)", Section 2: the tanh approximation). Both
                                    GELUs give 0 at -inf (the limit), +inf at +inf, NaN at
                                    NaN. */
  FK_ACTIVATION_GELU_ERF = 3   /**< 0.5 x (1 + erf(x / sqrt(2))), exact GELU (Hendrycks &
                                    Gimpel 2016, Section 2; BERT's). Deep in the negative tail (x < -6,
                                    where it is below 1e-9 in magnitude) the CUDA kernels'
                                    `1 + erf` keeps an absolute error below 1e-7, not a
                                    relative one; the CPU backend uses erfc there. */
} fk_activation_t;

/** @brief GEMM options. Fill with fk_gemm_params_init(). */
typedef struct fk_gemm_params_t {
  uint32_t struct_size; /**< sizeof(fk_gemm_params_t); set by the init function. */
  int32_t trans_a;      /**< Nonzero: `a` is stored `(K, M)` and used transposed. Default 0. */
  int32_t trans_b;      /**< Nonzero: `b` is stored `(N, K)` and used transposed. Default 0. */
  float alpha;          /**< Scale of the product. Default 1. 0: `a`, `b` (and fk_gemm_scaled()'s
                             scales) are not read, as in BLAS: `d = act(beta * c + bias)`. Must
                             be finite (FK_ERROR_INVALID_ARGUMENT naming `params.alpha`). */
  float beta;           /**< Scale of `c`. Default 0. Must be finite (FK_ERROR_INVALID_ARGUMENT
                             naming `params.beta`). `beta != 0` requires `c`
                             (FK_ERROR_INVALID_ARGUMENT naming `c`). */
  int32_t activation;   /**< An fk_activation_t. Default FK_ACTIVATION_NONE. Another value:
                             FK_ERROR_INVALID_ARGUMENT naming `params.activation`. */
} fk_gemm_params_t;

/**
 * @brief Fills `params` with defaults: no transposes, alpha 1, beta 0, no activation.
 * @param[out] params The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER.
 */
FK_API fk_status_t fk_gemm_params_init(fk_gemm_params_t* params);

/**
 * @brief GEMM with fused epilogue.
 *
 * Every tensor's data pointer (`data + byte_offset`) must be aligned to its element size
 * (FK_ERROR_MISALIGNED) and live where the context runs (FK_ERROR_WRONG_DEVICE); strides are
 * in elements. Semantics and the definition of op(): the Level 3 BLAS xGEMM (group
 * description).
 * @param context The context.
 * @param launch  Stream and workspace, or NULL for defaults.
 * @param params  Options, or NULL for defaults.
 * @param a    `(M, K)` (`(K, M)` with trans_a), optionally `(batch, ., .)`; fp32/fp16/bf16; any
 *             non-negative strides (row- or column-major, padded); element-aligned.
 * @param b    `(K, N)` (`(N, K)` with trans_b), optionally batched; a's dtype
 *             (FK_ERROR_DTYPE_MISMATCH); any non-negative strides; its K must equal a's
 *             (FK_ERROR_SHAPE_MISMATCH).
 * @param c    NULL or the addend `(M, N)` / `(batch, M, N)`, d's dtype, any non-negative
 *             strides; required when `beta != 0`; validated whenever given, read only when
 *             `beta != 0`.
 * @param bias NULL or `(N,)` (FK_ERROR_SHAPE_MISMATCH), contiguous (FK_ERROR_BAD_STRIDES),
 *             fp32, fp16 or bf16 (fp8: FK_ERROR_NOT_SUPPORTED): one value per output column
 *             (output feature), added before the activation.
 * @param d    Output `(M, N)` or `(batch, M, N)`, fp32/fp16/bf16; must not share memory with
 *             a, b or bias, and may share it with c only as the exact same view
 *             (FK_ERROR_INVALID_ARGUMENT); no two elements at one address
 *             (FK_ERROR_BAD_STRIDES).
 * @return FK_SUCCESS; the statuses every operation shares (@ref status "Status codes and
 *   errors": NULL pointers, struct sizes, launch flags and workspace, negative strides,
 *   outputs overlapping an input or writing one address twice, dtypes, alignment, devices,
 *   memory and CUDA errors); and, for this call:
 *   FK_ERROR_SHAPE_MISMATCH (rank not 2 or 3, inner dimensions or batch counts disagree, d or
 *   c not `(M, N)`, bias not `(N,)`);
 *   FK_ERROR_DTYPE_MISMATCH (a and b differ, c and d differ, a dtype other than fp32, fp16 or
 *   bf16);
 *   FK_ERROR_NOT_SUPPORTED (an fp8 a or b: fp8 inputs go to fk_gemm_scaled(); an fp8 c, bias
 *   or d);
 *   FK_ERROR_BAD_STRIDES (bias not contiguous, d writing two elements to one address);
 *   FK_ERROR_INVALID_ARGUMENT (unknown activation, beta != 0 without c, alpha or beta not
 *   finite, d overlapping a, b or bias, or overlapping c other than as the exact same view);
 *   FK_ERROR_OUT_OF_MEMORY (host or device scratch could not be allocated); FK_ERROR_DEVICE;
 *   FK_ERROR_KERNEL_LAUNCH.
 */
FK_API fk_status_t fk_gemm(const fk_context_t* context, const fk_launch_t* launch,
                           const fk_gemm_params_t* params, const DLTensor* a, const DLTensor* b,
                           const DLTensor* c, const DLTensor* bias, const DLTensor* d);

/**
 * @brief Names the variant fk_gemm() would run, e.g. `"cpu.gemm"`; validates like fk_gemm()
 *        and runs nothing.
 * @param context, params, a, b, c, bias, d As for fk_gemm().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_gemm(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_gemm_select_kernel(const fk_context_t* context,
                                         const fk_gemm_params_t* params, const DLTensor* a,
                                         const DLTensor* b, const DLTensor* c,
                                         const DLTensor* bias, const DLTensor* d,
                                         const char** variant_name);

/**
 * @brief Workspace bytes that fk_gemm() on these arguments needs so that it allocates
 *        nothing: nonzero for split-K schedules (decode-sized M with a long K: fp32 partial
 *        tiles, whole tiles per split, and on the sm90 kernel one arrival counter per tile).
 *        On the sm90 kernel, the decode kernel (M <= 16, or 17-32 on N of about 6300 and
 *        more on an H200, against a weight of at least 8 Mi elements whose grid fills 3/4 of
 *        the SMs) streams the weight without split-K and needs none (0); ask this function
 *        rather than predicting it.
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_gemm() (same statuses) and runs nothing.
 * @param context, params, a, b, c, bias, d As for fk_gemm().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_gemm(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_gemm_workspace_size(const fk_context_t* context,
                                          const fk_gemm_params_t* params, const DLTensor* a,
                                          const DLTensor* b, const DLTensor* c,
                                          const DLTensor* bias, const DLTensor* d,
                                          uint64_t* workspace_bytes);

/**
 * @brief Scaled GEMM for quantised inputs (FP8), with the fused epilogue of fk_gemm():
 *        `d = act(alpha * scale_a[m] * scale_b[n] * sum_k a[m, k] b[k, n] + beta * c + bias)`.
 *
 * The FP8 GEMM of Hopper's tensor cores (NVIDIA H100 whitepaper, "FP8"; the OCP 8-bit float
 * formats, proposed in Micikevicius et al., "FP8 Formats for Deep Learning", arXiv:2209.05433,
 * 2022: section 3 for the E4M3 and E5M2 encodings, section 2 for scaling before the cast to
 * FP8 and unscaling after the product) with dequantisation scales applied in the epilogue in fp32, as
 * `torch._scaled_mm` and cuBLASLt's `CUBLASLT_MATMUL_DESC_A_SCALE_POINTER` define them:
 * `a` and `b` hold the quantised values `x / scale`, the scales bring them back. Products are
 * accumulated in fp32. The factor `alpha * scale_a[m] * scale_b[n]` is formed in fp32 before it
 * multiplies the sum (as cuBLASLt does), so it must itself be a normal fp32 number: scales whose
 * product overflows or underflows fp32 give inf or lose precision even when the exact result
 * would fit.
 *
 * Every tensor's data pointer (`data + byte_offset`) must be aligned to its element size
 * (FK_ERROR_MISALIGNED) and live where the context runs (FK_ERROR_WRONG_DEVICE), the scales
 * included; strides are in elements, and a negative one is FK_ERROR_BAD_STRIDES.
 * @param context, launch, params As for fk_gemm() (transposes, alpha, beta, activation).
 * @param a    `(M, K)` (`(K, M)` with trans_a), optionally `(batch, ., .)`: float8 e4m3fn or
 *             e5m2, or fp32/fp16/bf16 (then b has the same dtype). Any non-negative strides.
 *             The Hopper kernel needs K contiguous ("K-major", stride 1 along K) and 16-byte
 *             aligned rows; other layouts run on the generic kernel.
 * @param b    `(K, N)` (`(N, K)` with trans_b), optionally batched: float8 e4m3fn or e5m2 when
 *             `a` is fp8 (the two fp8 formats may be mixed), else a's dtype. K-major for the
 *             Hopper kernel means `(N, K)` row-major with trans_b = 1 (torch: `w.t()` of a
 *             row-major `(N, K)` weight).
 * @param scale_a NULL (1), or fp32 on d's device, contiguous: 0-d or `(1,)`, one scale for all
 *             of A (per-tensor), or `(M,)`, one per row of A (per-token).
 * @param scale_b NULL (1), or fp32 on d's device, contiguous: 0-d or `(1,)` per-tensor, or
 *             `(N,)` one per column of B (per-output-channel). Both scales apply to every
 *             batch (there are no per-batch scales).
 * @param c, bias As for fk_gemm() (c and bias are not scaled).
 * @param d    Output `(M, N)` / `(batch, M, N)`, fp32/fp16/bf16 (fp8 output:
 *             FK_ERROR_NOT_SUPPORTED); any non-negative strides; as fk_gemm()'s d, it must not
 *             share memory with a, b, bias or a scale, and may share it with c only as the
 *             exact same view (FK_ERROR_INVALID_ARGUMENT); no two elements at one address
 *             (FK_ERROR_BAD_STRIDES).
 * @return As fk_gemm(), except that fp8 a and b are taken, and: FK_ERROR_DTYPE_MISMATCH (a
 *   fp8 but b not, or the reverse; a scale not fp32, fp8 included); FK_ERROR_SHAPE_MISMATCH (a
 *   scale of rank above 1, or of length other than 1 or M (scale_a) / N (scale_b));
 *   FK_ERROR_BAD_STRIDES (a scale not contiguous); FK_ERROR_NOT_SUPPORTED (an fp8 c, bias or
 *   d); FK_ERROR_INVALID_ARGUMENT (d overlapping a scale).
 */
FK_API fk_status_t fk_gemm_scaled(const fk_context_t* context, const fk_launch_t* launch,
                                  const fk_gemm_params_t* params, const DLTensor* a,
                                  const DLTensor* b, const DLTensor* scale_a,
                                  const DLTensor* scale_b, const DLTensor* c, const DLTensor* bias,
                                  const DLTensor* d);

/**
 * @brief Names the variant fk_gemm_scaled() would run; validates like it and runs nothing.
 * @param context, params, a, b, scale_a, scale_b, c, bias, d As for fk_gemm_scaled().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_gemm_scaled(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_gemm_scaled_select_kernel(const fk_context_t* context,
                                                const fk_gemm_params_t* params, const DLTensor* a,
                                                const DLTensor* b, const DLTensor* scale_a,
                                                const DLTensor* scale_b, const DLTensor* c,
                                                const DLTensor* bias, const DLTensor* d,
                                                const char** variant_name);

/**
 * @brief Workspace bytes that fk_gemm_scaled() on these arguments needs so that it allocates
 *        nothing (as fk_gemm_workspace_size()).
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_gemm_scaled() (same statuses) and runs nothing.
 * @param context, params, a, b, scale_a, scale_b, c, bias, d As for fk_gemm_scaled().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_gemm_scaled(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_gemm_scaled_workspace_size(const fk_context_t* context,
                                                 const fk_gemm_params_t* params,
                                                 const DLTensor* a, const DLTensor* b,
                                                 const DLTensor* scale_a,
                                                 const DLTensor* scale_b, const DLTensor* c,
                                                 const DLTensor* bias, const DLTensor* d,
                                                 uint64_t* workspace_bytes);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup monarch Monarch matrices
 *
 *  **Two-factor Monarch multiply** (Dao et al. 2022, "Monarch", Section 3, Definition 3.1:
 *  `M = P L P^T R` with block-diagonal `L`, `R` and the "reshape-transpose" permutation `P`;
 *  the block-diagonal factor `R` is applied first). flashkit takes the factors in the shapes
 *  and argument order of the m2 repository's `blockdiag_butterfly_multiply(x, w1_bfly,
 *  w2_bfly)` (HazyResearch/m2, `bert/src/mm/blockdiag_butterfly_multiply.py`), which also
 *  allows rectangular blocks:
 *  - `x`   `(tokens, n)` with `n = nblocks1 * p`
 *  - `w1`  `(nblocks1, q, p)`: R, `nblocks1` blocks each `(q, p)` (out x in)
 *  - `w2`  `(nblocks2, s, r)`: L, with `nblocks1 * q == nblocks2 * r`
 *  - `out` `(tokens, nblocks2 * s)`
 *
 *  Computed as: `y1[t, i*q + a] = sum_c w1[i, a, c] * x[t, i*p + c]` (first factor); the
 *  permutation reads `y1` as a `(r, nblocks2)` grid and transposes it,
 *  `z[t, j, b] = y1[t, b*nblocks2 + j]`; then `out[t, m*nblocks2 + j] = sum_b w2[j, m, b] *
 *  z[t, j, b]` (second factor, output in `(s, nblocks2)` order). This is m2's function
 *  element for element; with square blocks (`p == q == r == s == sqrt(n)`) it is Dao et al.'s
 *  `M = P L P^T R` with `R = blockdiag(w1)` and `L = blockdiag(w2)`.
 *
 *  **Block-diagonal linear** (M2-BERT's `BlockdiagLinear`, Fu et al. 2023, Section 3):
 *  - `x` `(tokens, nblocks * p)`, `w` `(nblocks, q, p)`, `out` `(tokens, nblocks * q)`,
 *    `out[t, i*q + a] = sum_c w[i, a, c] * x[t, i*p + c]` (+ `bias[i*q + a]`).
 *
 *  Both: x, weights and out share one dtype (fp32, fp16, bf16), fp32 accumulation (for the
 *  Monarch multiply, the sm80 / sm90 CUDA kernels, fused and unfused, round the intermediate
 *  `y1` to that dtype between the two factors, as m2's two `bmm` calls do, so fp16's range
 *  bounds `y1` too; the CPU backend and the generic CUDA kernel keep it in fp32); optional
 *  `bias` `(n_out,)` of fp32, fp16 or bf16, contiguous, added in output order (`bias[o]` to
 *  `out[t, o]`); x and out need a contiguous last dimension (any row stride); weights must be
 *  compact (contiguous). An empty inner size (`p == 0`, or `nblocks1 == 0` with a non-empty
 *  output) gives `out = bias` (or zeros), as GEMM does for K = 0.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Monarch options (reserved for growth). Fill with fk_monarch_params_init(). */
typedef struct fk_monarch_params_t {
  uint32_t struct_size; /**< sizeof(fk_monarch_params_t); set by the init function. */
  uint32_t flags;       /**< Reserved; must be 0 (FK_ERROR_INVALID_ARGUMENT naming
                             `params.flags`). */
} fk_monarch_params_t;

/**
 * @brief Fills `params` with defaults.
 * @param[out] params The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER.
 */
FK_API fk_status_t fk_monarch_params_init(fk_monarch_params_t* params);

/**
 * @brief Two-factor Monarch multiply `out = M x` (+ bias), see the group description.
 *
 * Every tensor's data pointer (`data + byte_offset`) must be aligned to its element size
 * (FK_ERROR_MISALIGNED), and to nothing more (the tensor-core kernels' alignment only chooses
 * the kernel), and live where the context runs (FK_ERROR_WRONG_DEVICE); strides are in
 * elements and must be non-negative (FK_ERROR_BAD_STRIDES).
 * @param context The context.
 * @param launch  Stream and workspace, or NULL for defaults.
 * @param params  Options, or NULL for defaults.
 * @param x    `(tokens, nblocks1 * p)`, fp32/fp16/bf16, last dimension contiguous
 *             (FK_ERROR_BAD_STRIDES), row stride arbitrary.
 * @param w1   `(nblocks1, q, p)`, x's dtype, compact (FK_ERROR_BAD_STRIDES): the first factor
 *             R (applied first).
 * @param w2   `(nblocks2, s, r)`, w1's dtype, compact (FK_ERROR_BAD_STRIDES),
 *             `nblocks2 * r == nblocks1 * q`: L.
 * @param bias NULL or `(nblocks2 * s,)`, fp32, fp16 or bf16, contiguous
 *             (FK_ERROR_BAD_STRIDES).
 * @param out  `(tokens, nblocks2 * s)`, x's dtype, last dimension contiguous
 *             (FK_ERROR_BAD_STRIDES); must not share memory with x, w1, w2 or bias, not even
 *             in place with square blocks (FK_ERROR_INVALID_ARGUMENT), and no two of its
 *             elements may share an address (FK_ERROR_BAD_STRIDES).
 * @return FK_SUCCESS; the statuses every operation shares (@ref status "Status codes and
 *   errors": NULL pointers, struct sizes, launch flags and workspace, negative strides,
 *   outputs overlapping an input or writing one address twice, dtypes, alignment, devices,
 *   memory and CUDA errors); and, for this call:
 *   FK_ERROR_SHAPE_MISMATCH (ranks; `n != nblocks1 * p`; `nblocks1 * q != nblocks2 * r`; out or
 *   bias length);
 *   FK_ERROR_DTYPE_MISMATCH (x, the weights and out not of one dtype, or not fp32, fp16 or
 *   bf16; bias not fp32, fp16 or bf16);
 *   FK_ERROR_NOT_SUPPORTED (an fp8 x, weight, bias or out);
 *   FK_ERROR_BAD_STRIDES (weights not compact; the last dimension of x or out not contiguous;
 *   bias not contiguous; out writing two elements to one address);
 *   FK_ERROR_INVALID_ARGUMENT (nonzero flags, out overlapping an input);
 *   FK_ERROR_OUT_OF_MEMORY (library-managed scratch); FK_ERROR_DEVICE;
 *   FK_ERROR_KERNEL_LAUNCH.
 */
FK_API fk_status_t fk_monarch(const fk_context_t* context, const fk_launch_t* launch,
                              const fk_monarch_params_t* params, const DLTensor* x,
                              const DLTensor* w1, const DLTensor* w2, const DLTensor* bias,
                              const DLTensor* out);

/**
 * @brief Names the variant fk_monarch() would run; validates like fk_monarch().
 * @param context, params, x, w1, w2, bias, out As for fk_monarch().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_monarch(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_monarch_select_kernel(const fk_context_t* context,
                                            const fk_monarch_params_t* params,
                                            const DLTensor* x, const DLTensor* w1,
                                            const DLTensor* w2, const DLTensor* bias,
                                            const DLTensor* out, const char** variant_name);

/**
 * @brief Workspace bytes that fk_monarch() on these arguments needs so that it allocates
 *        nothing: nonzero on the variants that run in passes, the unfused sm80-class path
 *        (cuda.sm80.monarch_unfused: two 16-bit buffers for a chunk of tokens, plus the
 *        permuted bias) and the generic CUDA kernel (its fp32 intermediate,
 *        `tokens x nblocks1 * q x 4` bytes); zero on the fused kernels and the CPU backend.
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_monarch() (same statuses) and runs nothing.
 * @param context, params, x, w1, w2, bias, out As for fk_monarch().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_monarch(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_monarch_workspace_size(const fk_context_t* context,
                                             const fk_monarch_params_t* params,
                                             const DLTensor* x, const DLTensor* w1,
                                             const DLTensor* w2, const DLTensor* bias,
                                             const DLTensor* out, uint64_t* workspace_bytes);

/**
 * @brief Block-diagonal linear `out = blockdiag(w) x` (+ bias), see the group description.
 *
 * Alignment, devices and strides as fk_monarch(): element-aligned data pointers
 * (FK_ERROR_MISALIGNED) and nothing more, on the context's device (FK_ERROR_WRONG_DEVICE),
 * non-negative strides (FK_ERROR_BAD_STRIDES).
 * @param context The context.
 * @param launch  Stream and workspace, or NULL for defaults.
 * @param params  Options, or NULL for defaults.
 * @param x    `(tokens, nblocks * p)`, fp32/fp16/bf16, last dimension contiguous
 *             (FK_ERROR_BAD_STRIDES), row stride arbitrary.
 * @param w    `(nblocks, q, p)`, x's dtype, compact (FK_ERROR_BAD_STRIDES).
 * @param bias NULL or `(nblocks * q,)`, fp32, fp16 or bf16, contiguous (FK_ERROR_BAD_STRIDES).
 * @param out  `(tokens, nblocks * q)`, x's dtype, last dimension contiguous
 *             (FK_ERROR_BAD_STRIDES); must not share memory with x, w or bias
 *             (FK_ERROR_INVALID_ARGUMENT), and no two of its elements may share an address
 *             (FK_ERROR_BAD_STRIDES).
 * @return As fk_monarch(), with w in place of w1 and w2.
 */
FK_API fk_status_t fk_blockdiag_linear(const fk_context_t* context, const fk_launch_t* launch,
                                       const fk_monarch_params_t* params, const DLTensor* x,
                                       const DLTensor* w, const DLTensor* bias,
                                       const DLTensor* out);

/**
 * @brief Names the variant fk_blockdiag_linear() would run; validates like it.
 * @param context, params, x, w, bias, out As for fk_blockdiag_linear().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_blockdiag_linear(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_blockdiag_linear_select_kernel(const fk_context_t* context,
                                                     const fk_monarch_params_t* params,
                                                     const DLTensor* x, const DLTensor* w,
                                                     const DLTensor* bias, const DLTensor* out,
                                                     const char** variant_name);

/**
 * @brief Workspace bytes that fk_blockdiag_linear() on these arguments needs so that it
 *        allocates nothing; today every variant reports 0.
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_blockdiag_linear() (same statuses) and runs nothing.
 * @param context, params, x, w, bias, out As for fk_blockdiag_linear().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_blockdiag_linear(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_blockdiag_linear_workspace_size(const fk_context_t* context,
                                                      const fk_monarch_params_t* params,
                                                      const DLTensor* x, const DLTensor* w,
                                                      const DLTensor* bias, const DLTensor* out,
                                                      uint64_t* workspace_bytes);

/** @} */

/* ------------------------------------------------------------------------------------------ */
/** @defgroup fftconv FFT convolution
 *
 *  Long convolution of each channel of `u` with its own filter, by FFT: `O(N log N)` per row
 *  (as in Hyena, Poli et al. 2023, and FlashFFTConv, Fu et al. 2023, Section 3). On the CUDA
 *  backend, some short-row fp16/bf16 problems with a large batch run instead as a Toeplitz
 *  matrix product on the tensor cores (`cuda.sm80.fftconv_direct`, on Hopper also
 *  `cuda.sm90.fftconv_direct`; docs/design.md gives the rule, fk_fftconv_select_kernel() names
 *  the choice): `O(seqlen^2)` multiply-adds per row, faster there because the batch shares each
 *  channel's filter; same result contract, bf16 plans with bf16 operands.
 *
 *  A plan fixes `(channels, seqlen, filter_len, fft_size, dtype, mode)`; it owns its twiddle
 *  tables and may be used for any batch size.
 *
 *  - `u`, `y`, `pregate`, `postgate`: `(batch, channels, seqlen)`, the plan's dtype (fp32, fp16
 *    or bf16), last dimension contiguous, other strides arbitrary.
 *  - `k`: `(channels, filter_len)`, fp32, fp16 or bf16, last dimension contiguous.
 *  - `D`: optional `(channels,)`, fp32, fp16 or bf16, contiguous: skip term.
 *  - Result, per batch `b` and channel `c`, with `v = pregate * u` (or `u`) and
 *    `t = 0 .. seqlen-1`:
 *    `y = postgate * (conv(v, k) + D[c] * v)` (each factor only if given), where
 *    - **causal** (linear): `conv[t] = sum_{s=0}^{t} k[s] v[t-s]`. Needs
 *      `fft_size >= seqlen + min(filter_len, seqlen) - 1`; smaller is FK_ERROR_INVALID_ARGUMENT,
 *      never a silently circular result.
 *    - **circular**: `conv[t] = sum_{s=0}^{fft_size-1} k[s] v[(t - s) mod fft_size]` with `v`
 *      and `k` zero-padded to `fft_size`. Needs `seqlen <= fft_size`, `filter_len <= fft_size`.
 *    - **bidirectional** (non-causal, centred; the sequence mixer of M2-BERT, Fu et al. 2023,
 *      "Monarch Mixer"): `filter_len` must be odd, `filter_len = 2 R + 1`, and
 *      `conv[t] = sum_{j=-R}^{R} k[R + j] v[t - j]` with `v` zero outside `[0, seqlen)`. Needs `fft_size >= seqlen + min(R, seqlen - 1)`. M2's
 *      `(k_fwd, k_bwd)` pair maps to `k[R + j] = k_fwd[j]` for `j >= 0` and
 *      `k[R - d] = k_bwd[d - 1]` for `d >= 1`.
 *  - `fft_size` must be a power of two (as in FlashFFTConv); 0 picks the smallest power of two
 *    the mode needs.
 *  - Non-finite inputs: on every CUDA kernel (and on the CPU backend where fft_size >= 16 and
 *    more than 16 log2(fft_size) taps reach the outputs: causal `min(filter_len, seqlen)`,
 *    circular `filter_len`, bidirectional `2 min(R, seqlen - 1) + 1`), a NaN or Inf anywhere
 *    in a row of `v` or in its channel's taps that reach the outputs (the counts just named)
 *    makes every output of that row NaN, earlier positions included, as with any FFT
 *    convolution (torch.fft's too).
 *    `cuda.sm80.fftconv_reg` transforms rows `b` and `b + 1` of a channel (`b` even) as one
 *    complex row, so there the other row of the pair turns NaN too. The CPU backend's direct
 *    path for short filters spreads it only to the positions the sum reaches.
 *  - Range: the transforms sum up to `fft_size` products in fp32 (the GPU kernels' tensor-core
 *    products take fp16 or bf16 operands), so intermediate values reach about `fft_size x
 *    max|v| x max|k|`: inputs whose transform overflows fp32 (or fp16 on those kernels) give
 *    inf or NaN outputs even where the exact convolution would fit. Activations and filters of
 *    models (|v|, |k| well below 1e30 / fft_size) are far from it. `cuda.sm80.fftconv_reg`
 *    scales each pair of rows by a power of two from max|u| x max|pregate| before its fp16
 *    products: a gated row where that bound exceeds the largest |u pregate| by more than about
 *    2^20 (u large only where the pregate is 0) loses precision; where the scaled values fall
 *    below fp16's smallest (2^-24), only the D term remains. The two rows of a pair (`b`, `b +
 *    1`, even `b`) share that scale, so there a row's error is relative to the larger row of
 *    its pair (about 2^-11 to 2^-8 of its rms): a row 2^10 times smaller than its partner
 *    keeps few correct digits, one 2^20 times smaller none.
 *  @{ */
/* ------------------------------------------------------------------------------------------ */

/** @brief Opaque FFT-convolution plan. */
typedef struct fk_fftconv_plan fk_fftconv_plan_t;

/** @brief Boundary handling of an FFT convolution. */
typedef enum fk_fftconv_mode_t {
  FK_FFTCONV_CAUSAL = 0,       /**< Linear causal convolution (Hyena, FlashFFTConv). */
  FK_FFTCONV_CIRCULAR = 1,     /**< Circular convolution of length fft_size. */
  FK_FFTCONV_BIDIRECTIONAL = 2 /**< Centred two-sided filter (M2-BERT). */
} fk_fftconv_mode_t;

/** @brief The filter's values do not change between calls: the plan may cache its spectrum,
 *         keyed on the filter's data pointer, shape and strides.
 *
 *  The address stands for the values: a filter whose memory is reused for other values (a
 *  temporary freed and reallocated, a buffer refilled in place, an implicit filter generated
 *  per forward pass) gets the spectrum of the earlier values, silently. A plan caches one
 *  filter's spectrum at a time per kernel variant (on a GPU, calls with and without gates may
 *  run different variants, each keeping its own): a plan fed several filters in turn
 *  recomputes on each change (and, under CUDA graph capture, refuses), so use one plan per
 *  persistent filter (per layer). */
#define FK_FFTCONV_FILTER_CONSTANT 1u

/** @brief Plan options. Fill with fk_fftconv_plan_options_init(). */
typedef struct fk_fftconv_plan_options_t {
  uint32_t struct_size; /**< sizeof(fk_fftconv_plan_options_t); set by the init function. */
  int32_t mode;         /**< An fk_fftconv_mode_t. Default FK_FFTCONV_CAUSAL. Another value:
                             FK_ERROR_INVALID_ARGUMENT naming `options.mode`. */
  int64_t channels;     /**< Channels (H), >= 0 (FK_ERROR_INVALID_ARGUMENT). `channels x
                             filter_len` (filter_len after defaulting) at most 2^61, a sizing
                             limit (FK_ERROR_INVALID_ARGUMENT naming both). */
  int64_t seqlen;       /**< Sequence length (L), 0 to 2^22: every mode needs `fft_size >=
                             seqlen` and fft_size is at most 2^22, so a negative or larger
                             seqlen is FK_ERROR_INVALID_ARGUMENT naming `options.seqlen`. So
                             is, with filter_len 0, a seqlen whose mode needs an fft_size
                             above 2^22 (causal: any seqlen above 2^21). */
  int64_t filter_len;   /**< Filter taps per channel, >= 0 (FK_ERROR_INVALID_ARGUMENT); 0
                             (default) means `seqlen` (bidirectional mode: which must then be
                             odd, except that seqlen 0 gives 1). Bidirectional mode: even is
                             FK_ERROR_INVALID_ARGUMENT. A filter_len given with a seqlen whose
                             mode needs an fft_size above 2^22 is FK_ERROR_INVALID_ARGUMENT
                             naming `options.filter_len`. */
  int64_t fft_size;     /**< Power of two, or 0 (default) for the smallest valid one. At least
                             what the mode needs (group description: causal `seqlen +
                             min(filter_len, seqlen) - 1`, circular `max(seqlen, filter_len)`,
                             bidirectional `seqlen + min(R, seqlen - 1)`) and at most 2^22.
                             Negative, not a power of two, smaller than the mode needs, or
                             above 2^22: FK_ERROR_INVALID_ARGUMENT naming `options.fft_size`. */
  DLDataType dtype;     /**< dtype of u, y and the gates: fp32, fp16 or bf16. Default fp32. An
                             fp8 type code (with 8 bits): FK_ERROR_NOT_SUPPORTED; any other
                             dtype, `lanes` other than 1 included: FK_ERROR_DTYPE_MISMATCH;
                             both naming `options.dtype`. */
  uint32_t flags;       /**< 0 or FK_FFTCONV_FILTER_CONSTANT; other bits:
                             FK_ERROR_INVALID_ARGUMENT naming `options.flags`. */
} fk_fftconv_plan_options_t;

/**
 * @brief Fills `options` with defaults: causal, fp32, all sizes 0, no flags.
 * @param[out] options The struct to fill.
 * @return FK_SUCCESS, or FK_ERROR_NULL_POINTER.
 */
FK_API fk_status_t fk_fftconv_plan_options_init(fk_fftconv_plan_options_t* options);

/**
 * @brief Creates an FFT-convolution plan on a context. The plan keeps a reference to the
 *        context, which must outlive it.
 * @param context The context whose backend and device the plan runs on.
 * @param options Initialised with fk_fftconv_plan_options_init() and filled in.
 * @param[out] plan Receives the plan; untouched on failure.
 * @return FK_SUCCESS; FK_ERROR_NULL_POINTER (context, options or plan NULL);
 *   FK_ERROR_BAD_STRUCT_SIZE;
 *   FK_ERROR_INVALID_ARGUMENT (negative sizes, unknown mode or flags, fft_size not a power of
 *   two, too small for the mode, or above 2^22; seqlen above 2^22, or a seqlen and filter_len
 *   whose mode needs an fft_size above 2^22, naming `options.seqlen` when filter_len is 0 and
 *   `options.filter_len` otherwise; bidirectional filter_len even; channels x filter_len above
 *   2^61, a sizing limit);
 *   FK_ERROR_DTYPE_MISMATCH (dtype not fp32/fp16/bf16); FK_ERROR_NOT_SUPPORTED (an fp8 dtype);
 *   FK_ERROR_OUT_OF_MEMORY. The fields of fk_fftconv_plan_options_t name each rule.
 */
FK_API fk_status_t fk_fftconv_plan_create(const fk_context_t* context,
                                          const fk_fftconv_plan_options_t* options,
                                          fk_fftconv_plan_t** plan);

/**
 * @brief Destroys a plan; NULL does nothing. No call using it may be in flight, and no CUDA
 *        graph that captured a call on it may be launched afterwards (the graph reads the
 *        plan's tables by address).
 * @param plan The plan, or NULL.
 * @return FK_SUCCESS.
 */
FK_API fk_status_t fk_fftconv_plan_destroy(fk_fftconv_plan_t* plan);

/**
 * @brief The plan's resolved settings (fft_size and filter_len after defaulting).
 * @param plan The plan.
 * @param[out] options Receives a copy; prepare it with fk_fftconv_plan_options_init().
 * @return FK_SUCCESS; FK_ERROR_NULL_POINTER (plan or options NULL); FK_ERROR_BAD_STRUCT_SIZE
 *         (`options->struct_size` not set by fk_fftconv_plan_options_init(); options
 *         untouched).
 */
FK_API fk_status_t fk_fftconv_plan_get_options(const fk_fftconv_plan_t* plan,
                                               fk_fftconv_plan_options_t* options);

/**
 * @brief Runs the convolution; see the group description.
 *
 * Every tensor's data pointer (`data + byte_offset`) must be aligned to its element size
 * (FK_ERROR_MISALIGNED), and to nothing more (the kernels' own alignment conditions only
 * choose the kernel), and live where the plan's context runs (FK_ERROR_WRONG_DEVICE); strides
 * are in elements and must be non-negative (FK_ERROR_BAD_STRIDES).
 * @param plan     The plan (fixes channels, seqlen, filter_len, fft_size, dtype, mode).
 * @param launch   Stream and workspace, or NULL for defaults.
 * @param u        Input `(batch, channels, seqlen)`, the plan's dtype (FK_ERROR_DTYPE_MISMATCH),
 *                 seqlen contiguous (FK_ERROR_BAD_STRIDES), other strides arbitrary.
 * @param k        Filter `(channels, filter_len)`, fp32, fp16 or bf16, filter_len contiguous
 *                 (FK_ERROR_BAD_STRIDES), channel stride arbitrary.
 * @param D        NULL or skip weights `(channels,)`, fp32, fp16 or bf16, contiguous
 *                 (FK_ERROR_BAD_STRIDES).
 * @param pregate  NULL or `(batch, channels, seqlen)`, the plan's dtype, seqlen contiguous
 *                 (FK_ERROR_BAD_STRIDES).
 * @param postgate NULL or `(batch, channels, seqlen)`, the plan's dtype, seqlen contiguous
 *                 (FK_ERROR_BAD_STRIDES).
 * @param y        Output `(batch, channels, seqlen)`, the plan's dtype, seqlen contiguous
 *                 (FK_ERROR_BAD_STRIDES); must not share memory with any input
 *                 (FK_ERROR_INVALID_ARGUMENT), and no two of its elements may share an address
 *                 (FK_ERROR_BAD_STRIDES).
 * @return FK_SUCCESS; the statuses every operation shares (@ref status "Status codes and
 *   errors": NULL pointers, struct sizes, launch flags and workspace, negative strides,
 *   outputs overlapping an input or writing one address twice, dtypes, alignment, devices,
 *   memory and CUDA errors; the plan stands for the context); and, for this call:
 *   FK_ERROR_SHAPE_MISMATCH (u/y/gates not `(batch, channels, seqlen)` of the plan, k not
 *   `(channels, filter_len)`, D not `(channels,)`);
 *   FK_ERROR_DTYPE_MISMATCH (u, y or a gate not of the plan's dtype; k or D not fp32, fp16 or
 *   bf16);
 *   FK_ERROR_BAD_STRIDES (the last dimension of u, y, a gate, k or D not contiguous; y writing
 *   two elements to one address);
 *   FK_ERROR_INVALID_ARGUMENT (`y` overlapping an input);
 *   FK_ERROR_OUT_OF_MEMORY; FK_ERROR_DEVICE; FK_ERROR_KERNEL_LAUNCH;
 *   FK_ERROR_NOT_SUPPORTED for an fp8 tensor, and when the launch stream is being captured
 *   into a CUDA graph and the plan must first build its tables for these arguments (its first
 *   call, a new filter of a FK_FFTCONV_FILTER_CONSTANT plan, another device), or they are
 *   still being built on another stream: make that call outside the capture, and let it
 *   finish, first.
 */
FK_API fk_status_t fk_fftconv_forward(const fk_fftconv_plan_t* plan, const fk_launch_t* launch,
                                      const DLTensor* u, const DLTensor* k, const DLTensor* D,
                                      const DLTensor* pregate, const DLTensor* postgate,
                                      const DLTensor* y);

/**
 * @brief Names the variant fk_fftconv_forward() would run; validates like it.
 * @param plan, u, k, D, pregate, postgate, y As for fk_fftconv_forward().
 * @param[out] variant_name Receives static text on success.
 * @return As fk_fftconv_forward(); FK_ERROR_NULL_POINTER if `variant_name` is NULL.
 */
FK_API fk_status_t fk_fftconv_select_kernel(const fk_fftconv_plan_t* plan, const DLTensor* u,
                                            const DLTensor* k, const DLTensor* D,
                                            const DLTensor* pregate, const DLTensor* postgate,
                                            const DLTensor* y, const char** variant_name);

/**
 * @brief Workspace bytes that fk_fftconv_forward() on these arguments needs so that it
 *        allocates nothing: on the CUDA backend, a plan without FK_FFTCONV_FILTER_CONSTANT
 *        computes the filter spectrum into scratch on every call (about `channels x fft_size
 *        x 8` bytes), fft_size 65536 on cuda.sm80.fftconv_reg adds up to 256 KB per multiprocessor
 *        (its first pass's result), and fft_size above 8192 on the generic kernel adds its
 *        four-step intermediates (up to 256 MiB); a constant filter's spectrum (up to 1 GiB of spectra;
 *        beyond that the generic kernel computes them per call in chunks, in scratch) and
 *        the twiddles are the plan's own memory, allocated by the call that first needs
 *        them, not workspace. The context is the plan's.
 *
 * fk_launch_t::workspace says what the size covers and what it depends on. Added in 0.3.0.
 * Validates like fk_fftconv_forward() (same statuses) and runs nothing.
 * @param plan, u, k, D, pregate, postgate, y As for fk_fftconv_forward().
 * @param[out] workspace_bytes Receives the size on success.
 * @return As fk_fftconv_forward(); FK_ERROR_NULL_POINTER if `workspace_bytes` is NULL.
 */
FK_API fk_status_t fk_fftconv_workspace_size(const fk_fftconv_plan_t* plan, const DLTensor* u,
                                             const DLTensor* k, const DLTensor* D,
                                             const DLTensor* pregate, const DLTensor* postgate,
                                             const DLTensor* y, uint64_t* workspace_bytes);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FLASHKIT_H */
