/*
 * flashkit - header-only C++17 RAII wrapper over the C ABI in flashkit.h.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef FLASHKIT_HPP
#define FLASHKIT_HPP

/**
 * @file flashkit.hpp
 * @brief Optional C++17 convenience layer over flashkit.h: owning handles, exceptions, and a
 *        small host tensor view. Everything here is inline and calls only the public C ABI, so
 *        it adds no link dependency and no ABI of its own.
 *
 * - fk::Error: a `std::runtime_error` carrying the fk_status_t and the message of
 *   fk_get_last_error_message() at the time of failure. fk::check() throws it.
 * - fk::Context, fk::FFTConvPlan: move-only owners of `fk_context_t*` / `fk_fftconv_plan_t*`.
 *   Their destructors release the handle and never throw. A plan made from a Context keeps
 *   that context alive (shared ownership of the `fk_context_t`), so it is destroyed first
 *   whatever the order of the C++ objects: a plan may outlive, be returned from a function
 *   past, or be made from a temporary of the Context it was made from.
 * - fk::Tensor: a non-owning DLTensor view of caller memory that owns its shape and strides,
 *   so it can be built inline: `fk::Tensor::cpu(data, {2, 64, 4, 32})` (fp32; `data` may be
 *   `const`), `fk::Tensor::cpu(bits, fk::dtype::bf16, {...})` (f16/bf16/fp8 bit patterns).
 *
 * **Threads** (the C ABI's rules, unchanged): a Context is immutable, so one Context may be
 * shared by any number of threads calling its (const) methods at once; one Context per thread
 * works as well. On the CPU backend each call starts its own workers (up to the context's
 * num_threads; there is no pool shared between calls), so with several threads calling at
 * once, size num_threads for the number of concurrent callers. An FFTConvPlan may run on
 * several threads at once as long as each call writes its own output. fk::Error copies the failing thread's message when it is thrown, so another
 * thread's failure never changes it. Moving or destroying a Context or plan while another
 * thread uses it is a data race, as for any C++ object.
 *
 * @code
 *   fk::Context ctx = fk::Context::cpu();
 *   fk_attention_params_t p = fk::attention_params();
 *   p.causal = 1;
 *   std::string variant = ctx.attention_select_kernel(&p, q, k, v, nullptr, nullptr, out);
 *   ctx.attention_forward(&p, q, k, v, nullptr, nullptr, out);  // throws fk::Error on failure
 * @endcode
 *
 * A plan keeps a reference to its context (C ABI rule): destroy plans before their context.
 */

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if defined(__GLIBCXX__)
#include <cxxabi.h>  // abi::__forced_unwind
#endif

#include "flashkit/flashkit.h"

namespace fk {

/** @brief DLPack element types flashkit takes, for fk::Tensor and the C API. */
namespace dtype {
inline constexpr DLDataType f32{kDLFloat, 32, 1};  /**< float32. */
inline constexpr DLDataType f16{kDLFloat, 16, 1};  /**< IEEE float16 (bit patterns in uint16_t). */
inline constexpr DLDataType bf16{kDLBfloat, 16, 1}; /**< bfloat16 (bit patterns in uint16_t). */
inline constexpr DLDataType i32{kDLInt, 32, 1};    /**< int32 (cu_seqlens). */
/** @brief float8 e4m3fn (bit patterns in uint8_t); fk_gemm_scaled()'s a and b,
 *         fk_attention_fp8_forward()'s q, k and v. */
inline constexpr DLDataType float8_e4m3fn{FK_DLPACK_FLOAT8_E4M3FN, 8, 1};
/** @brief float8 e5m2 (bit patterns in uint8_t); fk_gemm_scaled() inputs only. */
inline constexpr DLDataType float8_e5m2{FK_DLPACK_FLOAT8_E5M2, 8, 1};
}  // namespace dtype

/** @brief A failed flashkit call: its status and the library's message. */
class Error : public std::runtime_error {
 public:
  /** @brief An error for `status` with the library's `message`. */
  Error(fk_status_t status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  /** @brief The exact status code, e.g. FK_ERROR_SHAPE_MISMATCH. */
  fk_status_t status() const noexcept { return status_; }
  /** @brief The status category (FK_ERROR_INVALID_ARGUMENT, FK_ERROR_NOT_SUPPORTED, ...). */
  fk_status_t category() const noexcept { return fk_status_category(status_); }
  /** @brief Static text for the status, e.g. "invalid argument: shape mismatch". */
  const char* status_string() const noexcept { return fk_status_string(status_); }

 private:
  fk_status_t status_;
};

/** @brief Throws fk::Error with the thread's last error message unless `status` is success. */
inline void check(fk_status_t status) {
  if (status != FK_SUCCESS) throw Error(status, fk_get_last_error_message());
}

/** @brief The loaded library's version string, e.g. "0.7.0" (fk_get_version()). */
inline std::string version() { return fk_get_version(); }
/** @brief The loaded library's version as major * 10000 + minor * 100 + patch
 *         (fk_get_version_number()); compare with FK_VERSION_NUMBER of the header compiled. */
inline unsigned version_number() { return fk_get_version_number(); }
/** @brief Static name of a backend, e.g. "cuda" (fk_backend_name()). */
inline const char* backend_name(fk_backend_t backend) { return fk_backend_name(backend); }
/** @brief Static name of a kernel family, e.g. "sm90" (fk_kernel_family_name()). */
inline const char* kernel_family_name(fk_kernel_family_t family) {
  return fk_kernel_family_name(family);
}
#if defined(__GNUC__) || defined(__clang__)
/** @brief Exports the wrapper's log state from every shared library that includes this header,
 *         so that the dynamic linker can merge the copies (see detail::log_state()). */
#define FK_HPP_PROCESS_WIDE __attribute__((visibility("default")))
#else
#define FK_HPP_PROCESS_WIDE
#endif

namespace detail {
/** @brief The callable overload's function type. */
using LogFunction = std::function<void(fk_log_level_t, const char*)>;
/** @brief The installed callable. The mutex guards only the pointer (held to copy or swap it,
 *         never across a library call or user code), and a running delivery holds its own
 *         reference. */
struct LogState {
  std::mutex mutex;                            /**< Guards `fn`. */
  std::shared_ptr<const LogFunction> fn;       /**< The installed callable, or empty. */
};
/** @brief The log state: made on first use and never destroyed, so that a message logged
 *         during static destruction (by another library, a thread still running) does not
 *         reach a destroyed object. One per process where the dynamic linker merges it (an
 *         executable and the libraries it links, libraries loaded with RTLD_GLOBAL, and g++'s
 *         unique symbols); a library with its own copy (clang, RTLD_LOCAL, -Bsymbolic,
 *         --exclude-libs) keeps its own callable, released only when it installs again. */
FK_HPP_PROCESS_WIDE inline LogState& log_state() {
  static LogState* const state = new LogState;
  return *state;
}
/** @brief A reference to the installed callable (kept by a running delivery). */
inline std::shared_ptr<const LogFunction> current_log_function() {
  LogState& st = log_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  return st.fn;
}
/** @brief Installs `f` as the callable and returns the previous one (released by the caller,
 *         outside the lock). */
inline std::shared_ptr<const LogFunction> exchange_log_function(std::shared_ptr<const LogFunction> f) {
  LogState& st = log_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  st.fn.swap(f);
  return f;
}
/** @brief Puts `previous` back if `mine` is still the installed callable (an install the
 *         library refused). */
inline void restore_log_function(const std::shared_ptr<const LogFunction>& mine,
                                 std::shared_ptr<const LogFunction> previous) {
  LogState& st = log_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  if (st.fn == mine) st.fn.swap(previous);
}
/** @brief Whether `T` is a std::function (which may be empty). */
template <class T>
struct is_std_function : std::false_type {};
/** @brief A std::function. */
template <class R, class... A>
struct is_std_function<std::function<R(A...)>> : std::true_type {};
/** @brief True on a thread while the trampoline runs a callable (a delivery: the library's
 *         log lock is held, and the library refuses fk_set_log_callback() there). */
inline thread_local bool in_log_delivery = false;
/** @brief The C callback the callable overload installs: calls the current callable and
 *         drops its exceptions (thread cancellation's forced unwinding goes on). */
inline void log_trampoline(fk_log_level_t level, const char* message, void*) {
  const std::shared_ptr<const LogFunction> fn = current_log_function();
  if (!fn) return;
  struct Flag {
    Flag() { in_log_delivery = true; }
    ~Flag() { in_log_delivery = false; }
  } flag;
  try {
    (*fn)(level, message);
#if defined(__GLIBCXX__)
  } catch (abi::__forced_unwind&) {
    throw;
#endif
  } catch (...) {
  }
}
}  // namespace detail

/**
 * @brief fk_set_log_callback(): installs `callback(level, message, user_data)` for messages at
 *        or below `max_level`, or removes it with `nullptr`. Process-wide; once this returns
 *        the previous callback and its `user_data` are no longer in use. Throws fk::Error for
 *        an invalid level, or when called from inside a callback (which must not call
 *        flashkit). The callback should not throw; an exception it throws is caught and
 *        dropped by the library (the call that logged goes on; thread cancellation's forced
 *        unwinding is let through).
 */
inline void set_log_callback(fk_log_callback_t callback, fk_log_level_t max_level = FK_LOG_WARN,
                             void* user_data = nullptr) {
  check(fk_set_log_callback(callback, max_level, user_data));
  // A callable installed before is no longer called (the library call above waited for any
  // delivery still using it); released here, on this thread.
  detail::exchange_log_function(nullptr);
}

/**
 * @brief Installs any callable `fn(fk_log_level_t level, const char* message)`, e.g. a lambda
 *        with captures, as the process-wide log callback (messages at or below `max_level`).
 *        It replaces the callback installed by either overload and is replaced by the next
 *        call of either (`fk::set_log_callback(nullptr)` removes it). An exception thrown by
 *        `fn` is caught and dropped, so the call that logged is not affected. `message` is
 *        valid only during the call. A callable replaced by a later install is released on
 *        the thread that installs, once the deliveries using it have finished. The callable
 *        (move-only ones too) is kept in a state that is never destroyed, so one still
 *        installed at exit is not destroyed either. An empty `std::function` or a null
 *        function pointer removes the callback. Throws fk::Error as the other overload (an
 *        invalid level; a call from inside a delivery) and then changes nothing. Installs
 *        racing on several threads leave one callback in place, possibly with the other
 *        install's `max_level`, or (a callable against a function pointer) none. A shared
 *        library that installs a callable (or a function of its own) must remove it before it
 *        is unloaded: the library keeps the address of the installing copy's trampoline.
 */
template <class F,
          class = std::enable_if_t<!std::is_convertible<F, fk_log_callback_t>::value &&
                                   std::is_invocable<F&, fk_log_level_t, const char*>::value>>
inline void set_log_callback(F fn, fk_log_level_t max_level = FK_LOG_WARN) {
  if constexpr (std::is_pointer<F>::value || detail::is_std_function<F>::value) {
    // An empty std::function or a null function pointer removes the callback.
    if (!fn) {
      set_log_callback(static_cast<fk_log_callback_t>(nullptr), max_level);
      return;
    }
  }
  if (detail::in_log_delivery || max_level < FK_LOG_ERROR || max_level > FK_LOG_DEBUG) {
    // Refused by the library (from inside a delivery; an invalid level) before anything here
    // changes: the library's own error, and no callable swapped in meanwhile.
    check(fk_set_log_callback(&detail::log_trampoline, max_level, nullptr));
    return;  // not reached
  }
  // Held through a shared_ptr, so move-only callables work (std::function copies its target).
  auto target = std::make_shared<F>(std::move(fn));
  auto next = std::make_shared<const detail::LogFunction>(
      [target](fk_log_level_t level, const char* message) { (*target)(level, message); });
  // Swapped in before the library call, which waits for the deliveries in progress: the
  // previous callable is then released on this thread, never inside another thread's delivery.
  // The library can still refuse only when this thread is inside a function pointer's
  // delivery: it then holds the log lock, no other delivery runs, and the previous callable
  // goes back.
  std::shared_ptr<const detail::LogFunction> previous = detail::exchange_log_function(next);
  const fk_status_t status = fk_set_log_callback(&detail::log_trampoline, max_level, nullptr);
  if (status != FK_SUCCESS) {
    detail::restore_log_function(next, std::move(previous));
    check(status);
  }
}

/** @brief fk_attention_params_t with its defaults (fk_attention_params_init()). */
inline fk_attention_params_t attention_params() {
  fk_attention_params_t p;
  check(fk_attention_params_init(&p));
  return p;
}
/** @brief fk_gemm_params_t with its defaults (fk_gemm_params_init()). */
inline fk_gemm_params_t gemm_params() {
  fk_gemm_params_t p;
  check(fk_gemm_params_init(&p));
  return p;
}
/** @brief fk_monarch_params_t with its defaults (fk_monarch_params_init()). */
inline fk_monarch_params_t monarch_params() {
  fk_monarch_params_t p;
  check(fk_monarch_params_init(&p));
  return p;
}
/** @brief fk_fftconv_plan_options_t with its defaults (fk_fftconv_plan_options_init()). */
inline fk_fftconv_plan_options_t fftconv_plan_options() {
  fk_fftconv_plan_options_t o;
  check(fk_fftconv_plan_options_init(&o));
  return o;
}
/** @brief fk_context_options_t with its defaults (fk_context_options_init()). */
inline fk_context_options_t context_options() {
  fk_context_options_t o;
  check(fk_context_options_init(&o));
  return o;
}
/** @brief fk_launch_t with its defaults (fk_launch_init()): default stream, no workspace. */
inline fk_launch_t launch() {
  fk_launch_t l;
  check(fk_launch_init(&l));
  return l;
}

/**
 * @brief A DLTensor view of memory the caller owns; the view owns its shape and strides.
 *
 * Copies re-point the DLTensor at their own shape/strides storage, so a copy stays valid after
 * the original is gone. Converts implicitly to `const DLTensor*` for the C calls; that pointer
 * is valid while this view lives (do not keep the pointer of a temporary view beyond the full
 * expression). An optional argument is absent when passed `nullptr`; an empty `Tensor()` is a
 * tensor without data (refused where data is needed). A view of `const` memory is for inputs
 * only: the C API's outputs are `const DLTensor*` too, so passing it as an output compiles, and
 * the call then writes that memory.
 */
class Tensor {
 public:
  /** @brief An empty view (no data, rank 0). */
  Tensor() { bind(); }
  /**
   * @brief A view of `data`.
   * @param data    First element (not owned). `const` memory is fine for inputs: flashkit
   *                writes only to the tensors it documents as outputs (nothing stops such a
   *                view from being passed as an output, which then writes that memory).
   * @param device  Where the memory lives, e.g. `{kDLCPU, 0}`.
   * @param dtype   Element type, e.g. `fk::dtype::f32` (`{kDLFloat, 32, 1}`).
   * @param shape   Extents.
   * @param strides In elements; empty means compact row-major.
   */
  Tensor(const void* data, DLDevice device, DLDataType dtype, std::vector<int64_t> shape,
         std::vector<int64_t> strides = {})
      : shape_(std::move(shape)), strides_(std::move(strides)) {
    // The C library reads ndim strides: a shorter list would be read past its end.
    if (!strides_.empty() && strides_.size() != shape_.size()) {
      throw Error(FK_ERROR_BAD_STRIDES,
                  "fk::Tensor: " + std::to_string(strides_.size()) + " strides for rank " +
                      std::to_string(shape_.size()) + " (give one per dimension, or none)");
    }
    dl_.data = const_cast<void*>(data);  // DLTensor has no const view; flashkit reads inputs only
    dl_.device = device;
    dl_.dtype = dtype;
    dl_.byte_offset = 0;
    bind();
  }
  /** @brief fp32 host tensor (kDLCPU), compact unless strides are given. */
  static Tensor cpu(const float* data, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}) {
    return Tensor(data, DLDevice{kDLCPU, 0}, dtype::f32, std::move(shape), std::move(strides));
  }
  /** @brief int32 host tensor (kDLCPU), e.g. `cu_seqlens`, or a `block_table` whose rows are
   *         padded (strides in elements). */
  static Tensor cpu(const int32_t* data, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}) {
    return Tensor(data, DLDevice{kDLCPU, 0}, dtype::i32, std::move(shape), std::move(strides));
  }
  /**
   * @brief Host tensor (kDLCPU) of any element type, e.g. f16/bf16 values as `uint16_t` bit
   *        patterns: `fk::Tensor::cpu(bits, fk::dtype::bf16, {tokens, features})`.
   */
  static Tensor cpu(const void* data, DLDataType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}) {
    return Tensor(data, DLDevice{kDLCPU, 0}, dtype, std::move(shape), std::move(strides));
  }
  /**
   * @brief Refused at compile time: a pointer to another element type with a braced shape
   *        would bind to the overload above and read the shape as the dtype
   *        (`cpu(double_ptr, {4, 4}, {4, 1})`). Give the dtype as a named value,
   *        `cpu(data, fk::dtype::bf16, shape)` or `cpu(data, DLDataType{kDLBfloat, 16, 1},
   *        shape)`. A braced dtype (`{kDLBfloat, 16, 1}`) with a `float*` or `int32_t*` is read
   *        as a shape by those pointers' own overloads and accepted as one (a rank-3 view of
   *        extents 2, 16, 1 here), so never brace a dtype; with other pointers it is refused.
   */
  template <class T>
  static Tensor cpu(const T* data, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}) = delete;

  /** @brief Copies the view; the copy owns its own shape and strides. */
  Tensor(const Tensor& o) : dl_(o.dl_), shape_(o.shape_), strides_(o.strides_) { bind(); }
  /** @brief Moves the view; `o` becomes an empty view (`Tensor()`: no data, rank 0). */
  Tensor(Tensor&& o) noexcept
      : dl_(o.dl_), shape_(std::move(o.shape_)), strides_(std::move(o.strides_)) {
    bind();
    o.clear();
  }
  /** @brief Copy- or move-assigns the view (a moved-from source becomes empty). */
  Tensor& operator=(Tensor o) noexcept {
    dl_ = o.dl_;
    shape_.swap(o.shape_);
    strides_.swap(o.strides_);
    bind();
    return *this;
  }

  /** @brief The DLTensor, valid while this view lives. */
  const DLTensor* get() const noexcept { return &dl_; }
  /** @brief The DLTensor, so a view can be passed where the C API takes `const DLTensor*`. */
  operator const DLTensor*() const noexcept { return &dl_; }
  /** @brief The extents. */
  const std::vector<int64_t>& shape() const noexcept { return shape_; }

 private:
  void bind() noexcept {
    dl_.ndim = static_cast<int32_t>(shape_.size());
    dl_.shape = shape_.empty() ? nullptr : shape_.data();
    dl_.strides = strides_.empty() ? nullptr : strides_.data();
  }
  // What Tensor() holds: a moved-from view must not still point at the data (it stayed a
  // valid 0-d view of the first element, which a call then read).
  void clear() noexcept {
    shape_.clear();
    strides_.clear();
    dl_ = DLTensor{};
    bind();
  }
  DLTensor dl_{};
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

/**
 * @brief Move-only ownership of a C handle `T*`, released with `Destroy` (never throws): the
 *        base of fk::FFTConvPlan.
 */
template <class T, fk_status_t (*Destroy)(T*)>
class UniqueHandle {
 public:
  /** @brief Destroys the handle, if any (never throws). */
  ~UniqueHandle() { reset(); }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  /** @brief Takes over `o`'s handle; `o` becomes empty. */
  UniqueHandle(UniqueHandle&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  /** @brief Destroys the current handle and takes over `o`'s. */
  UniqueHandle& operator=(UniqueHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  /** @brief The handle, for calls into the C API. */
  T* get() const noexcept { return handle_; }
  /** @brief Whether a handle is held (false after a move or release). */
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 protected:
  /** @brief Gives up ownership of the handle (the derived class says what else goes with it). */
  T* release_handle() noexcept { return std::exchange(handle_, nullptr); }
  /** @brief Empty, or owning `h`. */
  explicit UniqueHandle(T* h = nullptr) noexcept : handle_(h) {}
  /** @brief Destroys the handle, if any. */
  void reset() noexcept {
    if (handle_) (void)Destroy(std::exchange(handle_, nullptr));
  }
  T* handle_ = nullptr; /**< The owned handle, or NULL. */
};

namespace detail {
/** @brief The fk_context_t shared by an fk::Context and the plans made from it: destroyed with
 *         the last of them (after every plan, as the C ABI requires). */
struct ContextOwner {
  fk_context_t* handle = nullptr; /**< NULL after Context::release(). */
  ContextOwner() = default;
  ContextOwner(const ContextOwner&) = delete;
  ContextOwner& operator=(const ContextOwner&) = delete;
  ~ContextOwner() {
    if (handle) (void)fk_context_destroy(handle);
  }
};
}  // namespace detail

/** @brief Owns an fk_context_t (move-only). The plans made from it share it, so the
 *         fk_context_t is destroyed when the last of the Context and its plans is. All op calls
 *         throw fk::Error on failure. */
class Context {
 public:
  /** @brief A context with the default options (FK_BACKEND_AUTO). */
  Context() : owner_(std::make_shared<detail::ContextOwner>()) {
    check(fk_context_create(nullptr, &owner_->handle));
    handle_ = owner_->handle;
  }
  /** @brief A context with `options` (see fk_context_create()). */
  explicit Context(const fk_context_options_t& options)
      : owner_(std::make_shared<detail::ContextOwner>()) {
    check(fk_context_create(&options, &owner_->handle));
    handle_ = owner_->handle;
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  /** @brief Takes over `o`'s context; `o` becomes empty (its calls throw fk::Error). */
  Context(Context&& o) noexcept
      : owner_(std::move(o.owner_)), handle_(std::exchange(o.handle_, nullptr)) {}
  /** @brief Drops the current context (destroyed here unless plans made from it still live)
   *         and takes over `o`'s. */
  Context& operator=(Context&& o) noexcept {
    if (this != &o) {
      owner_ = std::move(o.owner_);
      handle_ = std::exchange(o.handle_, nullptr);
    }
    return *this;
  }
  /** @brief Releases this object's share (never throws). */
  ~Context() = default;
  /** @brief The handle, for calls into the C API. */
  fk_context_t* get() const noexcept { return handle_; }
  /** @brief Gives up ownership: the caller must destroy the result with fk_context_destroy(),
   *         after every plan made from this context (those no longer keep it alive). */
  fk_context_t* release() noexcept {
    if (owner_) owner_->handle = nullptr;
    owner_.reset();
    return std::exchange(handle_, nullptr);
  }
  /** @brief Whether a handle is held (false after a move or release()). */
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /** @brief A CPU-backend context; `num_threads` 0 uses `FLASHKIT_NUM_THREADS` if set, else
   *         the hardware concurrency (fk_context_options_t::num_threads). */
  static Context cpu(int32_t num_threads = 0) {
    fk_context_options_t o = context_options();
    o.backend = FK_BACKEND_CPU;
    o.num_threads = num_threads;
    return Context(o);
  }
  /** @brief Takes ownership of a handle created with fk_context_create() (NULL: an empty
   *         Context). Should allocating the shared owner fail (std::bad_alloc), the handle
   *         is destroyed before the exception leaves. */
  static Context adopt(fk_context_t* handle) {
    Context c{Empty{}};
    if (handle == nullptr) return c;
    try {
      c.owner_ = std::make_shared<detail::ContextOwner>();
    } catch (...) {
      (void)fk_context_destroy(handle);
      throw;
    }
    c.owner_->handle = handle;
    c.handle_ = handle;
    return c;
  }


  /** @brief Backend, device and kernel family (fk_context_get_info()). */
  fk_context_info_t info() const {
    fk_context_info_t i;
    check(fk_context_info_init(&i));
    check(fk_context_get_info(handle_, &i));
    return i;
  }

  /** @brief fk_attention_forward() on this context; throws fk::Error on failure. */
  void attention_forward(const fk_attention_params_t* params, const DLTensor* q,
                         const DLTensor* k, const DLTensor* v, const DLTensor* cu_seqlens_q,
                         const DLTensor* cu_seqlens_k, const DLTensor* out,
                         const DLTensor* lse = nullptr, const fk_launch_t* launch = nullptr) const {
    check(fk_attention_forward(handle_, launch, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out,
                               lse));
  }
  /** @brief fk_attention_select_kernel(): the variant name, e.g. "cpu.attention". */
  std::string attention_select_kernel(const fk_attention_params_t* params, const DLTensor* q,
                                      const DLTensor* k, const DLTensor* v,
                                      const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                                      const DLTensor* out, const DLTensor* lse = nullptr) const {
    const char* name = nullptr;
    check(fk_attention_select_kernel(handle_, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out,
                                     lse, &name));
    return name;
  }
  /** @brief fk_attention_workspace_size(): launch workspace bytes with which the call allocates
   *         nothing (0: it takes no scratch). */
  uint64_t attention_workspace_size(const fk_attention_params_t* params, const DLTensor* q,
                                    const DLTensor* k, const DLTensor* v,
                                    const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                                    const DLTensor* out, const DLTensor* lse = nullptr) const {
    uint64_t bytes = 0;
    check(fk_attention_workspace_size(handle_, params, q, k, v, cu_seqlens_q, cu_seqlens_k, out,
                                      lse, &bytes));
    return bytes;
  }

  /** @brief fk_attention_fp8_forward() (0.6.0): e4m3fn q, k, v with (batch, nheads_k)
   *         descale factors (NULL: 1), bf16 out; throws fk::Error on failure. */
  void attention_fp8_forward(const fk_attention_params_t* params, const DLTensor* q,
                             const DLTensor* k, const DLTensor* v, const DLTensor* descale_q,
                             const DLTensor* descale_k, const DLTensor* descale_v,
                             const DLTensor* cu_seqlens_q, const DLTensor* cu_seqlens_k,
                             const DLTensor* out, const DLTensor* lse = nullptr,
                             const fk_launch_t* launch = nullptr) const {
    check(fk_attention_fp8_forward(handle_, launch, params, q, k, v, descale_q, descale_k,
                                   descale_v, cu_seqlens_q, cu_seqlens_k, out, lse));
  }
  /** @brief fk_attention_fp8_select_kernel(): e.g. "cuda.sm90.attention_fp8" or
   *  "cuda.sm80.attention+fp8_dequant". */
  std::string attention_fp8_select_kernel(const fk_attention_params_t* params, const DLTensor* q,
                                          const DLTensor* k, const DLTensor* v,
                                          const DLTensor* descale_q, const DLTensor* descale_k,
                                          const DLTensor* descale_v,
                                          const DLTensor* cu_seqlens_q,
                                          const DLTensor* cu_seqlens_k, const DLTensor* out,
                                          const DLTensor* lse = nullptr) const {
    const char* name = nullptr;
    check(fk_attention_fp8_select_kernel(handle_, params, q, k, v, descale_q, descale_k,
                                         descale_v, cu_seqlens_q, cu_seqlens_k, out, lse, &name));
    return name;
  }
  /** @brief fk_attention_fp8_workspace_size(): launch workspace bytes with which the call
   *         allocates nothing (0 on the CPU backend). */
  uint64_t attention_fp8_workspace_size(const fk_attention_params_t* params, const DLTensor* q,
                                        const DLTensor* k, const DLTensor* v,
                                        const DLTensor* descale_q, const DLTensor* descale_k,
                                        const DLTensor* descale_v, const DLTensor* cu_seqlens_q,
                                        const DLTensor* cu_seqlens_k, const DLTensor* out,
                                        const DLTensor* lse = nullptr) const {
    uint64_t bytes = 0;
    check(fk_attention_fp8_workspace_size(handle_, params, q, k, v, descale_q, descale_k,
                                          descale_v, cu_seqlens_q, cu_seqlens_k, out, lse,
                                          &bytes));
    return bytes;
  }

  /** @brief fk_attention_kvcache_forward() (0.5.0): queries over a contiguous or paged KV
   *         cache; throws fk::Error on failure. */
  void attention_kvcache_forward(const fk_attention_params_t* params, const DLTensor* q,
                                 const DLTensor* k_cache, const DLTensor* v_cache,
                                 const DLTensor* cache_seqlens, const DLTensor* block_table,
                                 const DLTensor* out, const DLTensor* lse = nullptr,
                                 const fk_launch_t* launch = nullptr) const {
    check(fk_attention_kvcache_forward(handle_, launch, params, q, k_cache, v_cache,
                                       cache_seqlens, block_table, out, lse));
  }
  /** @brief fk_attention_kvcache_select_kernel(): the variant name. */
  std::string attention_kvcache_select_kernel(const fk_attention_params_t* params,
                                              const DLTensor* q, const DLTensor* k_cache,
                                              const DLTensor* v_cache,
                                              const DLTensor* cache_seqlens,
                                              const DLTensor* block_table, const DLTensor* out,
                                              const DLTensor* lse = nullptr) const {
    const char* name = nullptr;
    check(fk_attention_kvcache_select_kernel(handle_, params, q, k_cache, v_cache, cache_seqlens,
                                             block_table, out, lse, &name));
    return name;
  }
  /** @brief fk_attention_kvcache_workspace_size(): launch workspace bytes with which the call
   *         allocates nothing. */
  uint64_t attention_kvcache_workspace_size(const fk_attention_params_t* params,
                                            const DLTensor* q, const DLTensor* k_cache,
                                            const DLTensor* v_cache,
                                            const DLTensor* cache_seqlens,
                                            const DLTensor* block_table, const DLTensor* out,
                                            const DLTensor* lse = nullptr) const {
    uint64_t bytes = 0;
    check(fk_attention_kvcache_workspace_size(handle_, params, q, k_cache, v_cache,
                                              cache_seqlens, block_table, out, lse, &bytes));
    return bytes;
  }

  /** @brief fk_gemm() on this context; throws fk::Error on failure. */
  void gemm(const fk_gemm_params_t* params, const DLTensor* a, const DLTensor* b,
            const DLTensor* c, const DLTensor* bias, const DLTensor* d,
            const fk_launch_t* launch = nullptr) const {
    check(fk_gemm(handle_, launch, params, a, b, c, bias, d));
  }
  /** @brief fk_gemm_select_kernel(): the variant name. */
  std::string gemm_select_kernel(const fk_gemm_params_t* params, const DLTensor* a,
                                 const DLTensor* b, const DLTensor* c, const DLTensor* bias,
                                 const DLTensor* d) const {
    const char* name = nullptr;
    check(fk_gemm_select_kernel(handle_, params, a, b, c, bias, d, &name));
    return name;
  }
  /** @brief fk_gemm_workspace_size(): launch workspace bytes with which the call allocates
   *         nothing (nonzero for split-K schedules). */
  uint64_t gemm_workspace_size(const fk_gemm_params_t* params, const DLTensor* a,
                               const DLTensor* b, const DLTensor* c, const DLTensor* bias,
                               const DLTensor* d) const {
    uint64_t bytes = 0;
    check(fk_gemm_workspace_size(handle_, params, a, b, c, bias, d, &bytes));
    return bytes;
  }

  /** @brief fk_gemm_scaled() (FP8 inputs with dequantisation scales) on this context; throws
   *         fk::Error on failure. */
  void gemm_scaled(const fk_gemm_params_t* params, const DLTensor* a, const DLTensor* b,
                   const DLTensor* scale_a, const DLTensor* scale_b, const DLTensor* c,
                   const DLTensor* bias, const DLTensor* d,
                   const fk_launch_t* launch = nullptr) const {
    check(fk_gemm_scaled(handle_, launch, params, a, b, scale_a, scale_b, c, bias, d));
  }
  /** @brief fk_gemm_scaled_select_kernel(): the variant name. */
  std::string gemm_scaled_select_kernel(const fk_gemm_params_t* params, const DLTensor* a,
                                        const DLTensor* b, const DLTensor* scale_a,
                                        const DLTensor* scale_b, const DLTensor* c,
                                        const DLTensor* bias, const DLTensor* d) const {
    const char* name = nullptr;
    check(fk_gemm_scaled_select_kernel(handle_, params, a, b, scale_a, scale_b, c, bias, d, &name));
    return name;
  }
  /** @brief fk_gemm_scaled_workspace_size(): as gemm_workspace_size(). */
  uint64_t gemm_scaled_workspace_size(const fk_gemm_params_t* params, const DLTensor* a,
                                      const DLTensor* b, const DLTensor* scale_a,
                                      const DLTensor* scale_b, const DLTensor* c,
                                      const DLTensor* bias, const DLTensor* d) const {
    uint64_t bytes = 0;
    check(fk_gemm_scaled_workspace_size(handle_, params, a, b, scale_a, scale_b, c, bias, d,
                                        &bytes));
    return bytes;
  }

  /** @brief fk_monarch() on this context; throws fk::Error on failure. */
  void monarch(const fk_monarch_params_t* params, const DLTensor* x, const DLTensor* w1,
               const DLTensor* w2, const DLTensor* bias, const DLTensor* out,
               const fk_launch_t* launch = nullptr) const {
    check(fk_monarch(handle_, launch, params, x, w1, w2, bias, out));
  }
  /** @brief fk_monarch_select_kernel(): the variant name. */
  std::string monarch_select_kernel(const fk_monarch_params_t* params, const DLTensor* x,
                                    const DLTensor* w1, const DLTensor* w2,
                                    const DLTensor* bias, const DLTensor* out) const {
    const char* name = nullptr;
    check(fk_monarch_select_kernel(handle_, params, x, w1, w2, bias, out, &name));
    return name;
  }
  /** @brief fk_monarch_workspace_size(): launch workspace bytes with which the call allocates
   *         nothing. */
  uint64_t monarch_workspace_size(const fk_monarch_params_t* params, const DLTensor* x,
                                  const DLTensor* w1, const DLTensor* w2, const DLTensor* bias,
                                  const DLTensor* out) const {
    uint64_t bytes = 0;
    check(fk_monarch_workspace_size(handle_, params, x, w1, w2, bias, out, &bytes));
    return bytes;
  }

  /** @brief fk_blockdiag_linear() on this context; throws fk::Error on failure. */
  void blockdiag_linear(const fk_monarch_params_t* params, const DLTensor* x, const DLTensor* w,
                        const DLTensor* bias, const DLTensor* out,
                        const fk_launch_t* launch = nullptr) const {
    check(fk_blockdiag_linear(handle_, launch, params, x, w, bias, out));
  }
  /** @brief fk_blockdiag_linear_select_kernel(): the variant name. */
  std::string blockdiag_linear_select_kernel(const fk_monarch_params_t* params,
                                             const DLTensor* x, const DLTensor* w,
                                             const DLTensor* bias, const DLTensor* out) const {
    const char* name = nullptr;
    check(fk_blockdiag_linear_select_kernel(handle_, params, x, w, bias, out, &name));
    return name;
  }
  /** @brief fk_blockdiag_linear_workspace_size(): launch workspace bytes with which the call
   *         allocates nothing. */
  uint64_t blockdiag_linear_workspace_size(const fk_monarch_params_t* params, const DLTensor* x,
                                           const DLTensor* w, const DLTensor* bias,
                                           const DLTensor* out) const {
    uint64_t bytes = 0;
    check(fk_blockdiag_linear_workspace_size(handle_, params, x, w, bias, out, &bytes));
    return bytes;
  }

 private:
  friend class FFTConvPlan;
  struct Empty {};
  explicit Context(Empty) noexcept {}
  std::shared_ptr<detail::ContextOwner> owner_; /**< Shared with the plans made from it. */
  fk_context_t* handle_ = nullptr;              /**< owner_->handle, for the calls. */
};

/** @brief Owns an fk_fftconv_plan_t (move-only). It keeps the Context it was made from alive
 *         (that context is destroyed after the plan), so it may outlive that Context object or
 *         be made from a temporary one. */
class FFTConvPlan : public UniqueHandle<fk_fftconv_plan_t, fk_fftconv_plan_destroy> {
 public:
  /** @brief fk_fftconv_plan_create() on `context`; throws fk::Error for invalid options (and
   *         for an empty, moved-from or released `context`). */
  FFTConvPlan(const Context& context, const fk_fftconv_plan_options_t& options)
      : context_(context.owner_) {
    check(fk_fftconv_plan_create(context.get(), &options, &handle_));
  }
  /** @brief Takes over `o`'s plan and its share of the context; `o` becomes empty. */
  FFTConvPlan(FFTConvPlan&& o) noexcept = default;
  /** @brief Destroys the current plan (before dropping its context) and takes over `o`'s. */
  FFTConvPlan& operator=(FFTConvPlan&& o) noexcept {
    if (this != &o) {
      UniqueHandle::operator=(std::move(o));
      context_ = std::move(o.context_);
    }
    return *this;
  }
  /** @brief Destroys the plan, then releases its share of the context (never throws). */
  ~FFTConvPlan() { reset(); }
  /**
   * @brief Gives up ownership of the plan, which the caller destroys with
   *        fk_fftconv_plan_destroy(). `context` receives this plan's share of its context
   *        (empty for a plan adopted without one): keep it until the plan is destroyed, since
   *        it may be what keeps the context alive.
   */
  fk_fftconv_plan_t* release(std::shared_ptr<void>& context) noexcept {
    context = std::move(context_);
    return release_handle();
  }
  /** @brief Takes ownership of a handle created with fk_fftconv_plan_create(); the context it
   *         was made on must outlive it (nothing here keeps that context alive). */
  static FFTConvPlan adopt(fk_fftconv_plan_t* handle) noexcept { return FFTConvPlan(handle); }
  /** @brief Takes ownership of a handle that fk_fftconv_plan_create() made on `context`'s
   *         fk_context_t, and keeps that context alive as a plan made here would (nothing,
   *         for an empty, moved-from or released `context`). */
  static FFTConvPlan adopt(fk_fftconv_plan_t* handle, const Context& context) noexcept {
    FFTConvPlan p(handle);
    p.context_ = context.owner_;
    return p;
  }

  /** @brief The resolved options (fft_size after defaulting, filter_len, ...). */
  fk_fftconv_plan_options_t options() const {
    fk_fftconv_plan_options_t o = fftconv_plan_options();
    check(fk_fftconv_plan_get_options(handle_, &o));
    return o;
  }

  /** @brief fk_fftconv_forward(); D, pregate and postgate may be null. Throws fk::Error. */
  void forward(const DLTensor* u, const DLTensor* k, const DLTensor* D, const DLTensor* pregate,
               const DLTensor* postgate, const DLTensor* y,
               const fk_launch_t* launch = nullptr) const {
    check(fk_fftconv_forward(handle_, launch, u, k, D, pregate, postgate, y));
  }
  /** @brief fk_fftconv_select_kernel(): the variant name, e.g. "cpu.fftconv". */
  std::string select_kernel(const DLTensor* u, const DLTensor* k, const DLTensor* D,
                            const DLTensor* pregate, const DLTensor* postgate,
                            const DLTensor* y) const {
    const char* name = nullptr;
    check(fk_fftconv_select_kernel(handle_, u, k, D, pregate, postgate, y, &name));
    return name;
  }
  /** @brief fk_fftconv_workspace_size(): launch workspace bytes with which the call allocates
   *         nothing. */
  uint64_t workspace_size(const DLTensor* u, const DLTensor* k, const DLTensor* D,
                          const DLTensor* pregate, const DLTensor* postgate,
                          const DLTensor* y) const {
    uint64_t bytes = 0;
    check(fk_fftconv_workspace_size(handle_, u, k, D, pregate, postgate, y, &bytes));
    return bytes;
  }

 private:
  explicit FFTConvPlan(fk_fftconv_plan_t* h) noexcept : UniqueHandle(h) {}
  std::shared_ptr<detail::ContextOwner> context_; /**< Keeps the plan's context alive. */
};

}  // namespace fk

#endif /* FLASHKIT_HPP */
