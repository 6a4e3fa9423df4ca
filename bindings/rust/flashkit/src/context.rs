//! Contexts (one backend and device) and per-call launch settings.

use std::ffi::CStr;
use std::os::raw::c_void;
use std::ptr::NonNull;

use flashkit_sys as sys;

use crate::error::{check, static_str, Error, Result, Status};

/// Which backend a context runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Backend {
    /// CUDA if compiled in and a device is present, else CPU (also for a GPU older than the
    /// build's kernels, compute capability below 7.5, with a warning in the log). The
    /// environment variable `FLASHKIT_BACKEND` (`auto`, `cpu` or `cuda`) overrides `Auto`, never
    /// an explicit choice; any other value of it makes context creation fail with
    /// `InvalidArgument`.
    #[default]
    Auto,
    /// The CPU backend: every operation, multithreaded, synchronous.
    Cpu,
    /// The CUDA backend: `Status::BackendUnavailable` when CUDA is not compiled in, the device
    /// is missing, or its compute capability is below 7.5.
    Cuda,
}

impl Backend {
    fn code(self) -> i32 {
        (match self {
            Backend::Auto => sys::FK_BACKEND_AUTO,
            Backend::Cpu => sys::FK_BACKEND_CPU,
            Backend::Cuda => sys::FK_BACKEND_CUDA,
        }) as i32
    }

    fn from_code(code: i32) -> Option<Backend> {
        match u32::try_from(code).ok()? {
            sys::FK_BACKEND_AUTO => Some(Backend::Auto),
            sys::FK_BACKEND_CPU => Some(Backend::Cpu),
            sys::FK_BACKEND_CUDA => Some(Backend::Cuda),
            _ => None,
        }
    }

    /// The library's name for it: `"auto"`, `"cpu"` or `"cuda"`.
    pub fn name(self) -> &'static str {
        // SAFETY: static text for any value.
        static_str(unsafe { sys::fk_backend_name(self.code() as sys::fk_backend_t) })
    }
}

/// Kernel family: which generation of kernels the dispatcher may pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum KernelFamily {
    /// Best available, per call.
    #[default]
    Auto,
    /// The CPU backend's kernels (reported, not forced).
    Cpu,
    /// Plain CUDA kernels, correct for every valid input.
    Generic,
    /// mma.sync + cp.async kernels for compute capability >= 8.0.
    Sm80,
    /// TMA + wgmma kernels for compute capability 9.0 (sm_90a).
    Sm90,
}

impl KernelFamily {
    fn code(self) -> i32 {
        (match self {
            KernelFamily::Auto => sys::FK_KERNEL_FAMILY_AUTO,
            KernelFamily::Cpu => sys::FK_KERNEL_FAMILY_CPU,
            KernelFamily::Generic => sys::FK_KERNEL_FAMILY_GENERIC,
            KernelFamily::Sm80 => sys::FK_KERNEL_FAMILY_SM80,
            KernelFamily::Sm90 => sys::FK_KERNEL_FAMILY_SM90,
        }) as i32
    }

    fn from_code(code: i32) -> Option<KernelFamily> {
        match u32::try_from(code).ok()? {
            sys::FK_KERNEL_FAMILY_AUTO => Some(KernelFamily::Auto),
            sys::FK_KERNEL_FAMILY_CPU => Some(KernelFamily::Cpu),
            sys::FK_KERNEL_FAMILY_GENERIC => Some(KernelFamily::Generic),
            sys::FK_KERNEL_FAMILY_SM80 => Some(KernelFamily::Sm80),
            sys::FK_KERNEL_FAMILY_SM90 => Some(KernelFamily::Sm90),
            _ => None,
        }
    }

    /// The library's name for it: `"auto"`, `"cpu"`, `"generic"`, `"sm80"` or `"sm90"`.
    pub fn name(self) -> &'static str {
        // SAFETY: static text for any value.
        static_str(unsafe { sys::fk_kernel_family_name(self.code() as sys::fk_kernel_family_t) })
    }
}

/// Options of [`Context::new`]. `Default` gives the library's defaults
/// (`fk_context_options_init()`): automatic backend, device 0, automatic family, default
/// thread count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextOptions {
    /// Backend.
    pub backend: Backend,
    /// CUDA device ordinal (as in `cudaSetDevice`); must be >= 0.
    pub device_ordinal: i32,
    /// Kernel family to force (CUDA); `Auto` lets the dispatcher choose.
    pub kernel_family: KernelFamily,
    /// CPU backend threads; 0 uses the hardware concurrency, or `FLASHKIT_NUM_THREADS` if set.
    /// Must lie in `[0, 4096]` (else `InvalidArgument` naming `options.num_threads`).
    pub num_threads: i32,
}

impl Default for ContextOptions {
    fn default() -> Self {
        let raw = raw_context_options();
        ContextOptions {
            backend: Backend::from_code(raw.backend).unwrap_or_default(),
            device_ordinal: raw.device_ordinal,
            kernel_family: KernelFamily::from_code(raw.kernel_family).unwrap_or_default(),
            num_threads: raw.num_threads,
        }
    }
}

fn raw_context_options() -> sys::fk_context_options_t {
    // SAFETY: plain-old-data struct; the init function fills every field.
    let mut raw: sys::fk_context_options_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer; cannot fail for non-NULL.
    unsafe { sys::fk_context_options_init(&mut raw) };
    raw
}

/// What a context runs on ([`Context::info`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContextInfo {
    /// `Cpu` or `Cuda` (never `Auto`).
    pub backend: Backend,
    /// The family forced at creation, else the best one this context dispatches to (`Cpu`
    /// for the CPU backend).
    pub kernel_family: KernelFamily,
    /// CUDA ordinal, or -1 on the CPU backend.
    pub device_ordinal: i32,
    /// Compute capability `(major, minor)`, `(0, 0)` on the CPU.
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors, 0 on the CPU.
    pub sm_count: i32,
    /// CPU backend worker threads (1 on CUDA).
    pub num_threads: i32,
    /// L2 cache bytes, 0 on the CPU.
    pub l2_bytes: i64,
    /// Opt-in shared memory per block in bytes, 0 on the CPU.
    pub smem_per_block_optin: i64,
    /// E.g. `"NVIDIA H200"` or `"cpu"`.
    pub device_name: String,
}

/// A flashkit context: one backend and device. Create one per device and share it (it is
/// `Send + Sync`); dropping it destroys the C context.
///
/// ```
/// let ctx = flashkit::Context::cpu()?;
/// println!("{:?}", ctx.info()?);
/// # Ok::<(), flashkit::Error>(())
/// ```
#[derive(Debug)]
pub struct Context {
    raw: NonNull<sys::fk_context_t>,
}

// SAFETY: flashkit.h, "Conventions that hold everywhere": "A context is immutable after
// creation and may be shared between threads", and fk_context_t is documented as "Immutable
// after creation; safe to share between threads". Every operation takes `const fk_context_t*`,
// the last-error message is thread-local (so an Error is always built from the calling
// thread's own failure), and nothing ties a context to the thread that created it, so it may
// be used from (Sync) and destroyed on (Send) any thread. Destruction needs `&mut`/ownership,
// which Rust only grants once no borrow (no in-flight call, no FFTConvPlan<'ctx>) is left, as
// fk_context_destroy() requires.
unsafe impl Send for Context {}
// SAFETY: see above.
unsafe impl Sync for Context {}

impl Context {
    /// Creates a context.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] (negative ordinal or threads, unparsable environment
    /// variable); [`Status::BackendUnavailable`] (CUDA requested but not compiled in, no
    /// device, ordinal out of range); [`Status::NotSupported`] (forced family the device cannot
    /// run); [`Status::OutOfMemory`].
    pub fn new(options: &ContextOptions) -> Result<Context> {
        let mut raw_options = raw_context_options();
        raw_options.backend = options.backend.code();
        raw_options.device_ordinal = options.device_ordinal;
        raw_options.kernel_family = options.kernel_family.code();
        raw_options.num_threads = options.num_threads;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid options and out-pointer.
        check(unsafe { sys::fk_context_create(&raw_options, &mut raw) })?;
        NonNull::new(raw)
            .map(|raw| Context { raw })
            .ok_or_else(|| Error::local(Status::Internal, "fk_context_create gave NULL".into()))
    }

    /// A context on the CPU backend with the default thread count.
    pub fn cpu() -> Result<Context> {
        Context::new(&ContextOptions { backend: Backend::Cpu, ..Default::default() })
    }

    /// Reports the backend, device and kernel family.
    pub fn info(&self) -> Result<ContextInfo> {
        // SAFETY: plain-old-data; fk_context_info_init sets struct_size.
        let mut raw: sys::fk_context_info_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers; the context is alive.
        check(unsafe { sys::fk_context_info_init(&mut raw) })?;
        check(unsafe { sys::fk_context_get_info(self.raw.as_ptr(), &mut raw) })?;
        let unknown = |what: &str, code: i32| {
            Error::local(Status::Internal, format!("the library reported an unknown {what} {code}"))
        };
        // The library NUL-terminates device_name; guard against a missing NUL anyway.
        let bytes: Vec<u8> = raw.device_name.iter().map(|&c| c as u8).collect();
        let device_name = CStr::from_bytes_until_nul(&bytes)
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned());
        Ok(ContextInfo {
            backend: Backend::from_code(raw.backend)
                .ok_or_else(|| unknown("backend", raw.backend))?,
            kernel_family: KernelFamily::from_code(raw.kernel_family)
                .ok_or_else(|| unknown("kernel family", raw.kernel_family))?,
            device_ordinal: raw.device_ordinal,
            compute_capability: (raw.cc_major, raw.cc_minor),
            sm_count: raw.sm_count,
            num_threads: raw.num_threads,
            l2_bytes: raw.l2_bytes,
            smem_per_block_optin: raw.smem_per_block_optin,
            device_name,
        })
    }

    /// The C handle, for calls through [`crate::sys`]. Valid while `self` is alive.
    pub fn as_raw(&self) -> *const sys::fk_context_t {
        self.raw.as_ptr()
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the handle came from fk_context_create and is destroyed once; plans borrow
        // the context, so none is alive, and calls borrow it too, so none is running (on the
        // CUDA backend, work already enqueued must be finished or stream-ordered: synchronise
        // your streams before dropping a CUDA context).
        unsafe { sys::fk_context_destroy(self.raw.as_ptr()) };
    }
}

/// Per-call launch settings: CUDA stream and caller-provided workspace. Operations take
/// `Option<&Launch>`; `None` means the default stream and library-managed scratch, which is
/// all the CPU backend uses (it ignores the stream).
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    raw: sys::fk_launch_t,
}

impl Default for Launch {
    fn default() -> Self {
        Launch::new()
    }
}

impl Launch {
    /// Defaults: NULL (legacy default) stream, no workspace.
    pub fn new() -> Launch {
        // SAFETY: plain-old-data; the init function fills every field.
        let mut raw: sys::fk_launch_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid out-pointer.
        unsafe { sys::fk_launch_init(&mut raw) };
        Launch { raw }
    }

    /// Runs on `stream`, a `cudaStream_t`.
    ///
    /// # Safety
    /// `stream` must be NULL or a live stream of the context's device for every call made with
    /// this launch, and stay alive until the work enqueued on it has finished.
    pub unsafe fn with_stream(mut self, stream: *mut c_void) -> Launch {
        self.raw.stream = stream;
        self
    }

    /// Uses `bytes` bytes at `workspace` (on the context's device) as scratch.
    ///
    /// # Safety
    /// The memory must be valid, unused by anyone else, for every call made with this launch
    /// until its work has finished.
    pub unsafe fn with_workspace(mut self, workspace: *mut c_void, bytes: u64) -> Launch {
        self.raw.workspace = workspace;
        self.raw.workspace_bytes = bytes;
        self
    }

    pub(crate) fn ptr(launch: Option<&Launch>) -> *const sys::fk_launch_t {
        launch.map_or(std::ptr::null(), |l| &l.raw as *const sys::fk_launch_t)
    }
}
