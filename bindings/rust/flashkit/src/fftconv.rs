//! FFT convolution plans.

use std::marker::PhantomData;
use std::os::raw::c_char;
use std::ptr::NonNull;
use std::sync::Arc;

use flashkit_sys as sys;

use crate::context::{Context, Launch};
use crate::error::{check, static_str, Error, Result, Status};
use crate::tensor::{opt_ptr, DType, Tensor, TensorMut};

/// Boundary handling of an FFT convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FFTConvMode {
    /// Linear causal: `conv[t] = sum_{s=0}^{t} k[s] v[t-s]` (Hyena, FlashFFTConv). Needs
    /// `fft_size >= seqlen + min(filter_len, seqlen) - 1`.
    #[default]
    Causal,
    /// Circular of length `fft_size`: `conv[t] = sum_s k[s] v[(t - s) mod fft_size]`.
    Circular,
    /// Centred two-sided filter of odd length `2R + 1` (M2-BERT):
    /// `conv[t] = sum_{j=-R}^{R} k[R + j] v[t - j]`.
    Bidirectional,
}

impl FFTConvMode {
    fn code(self) -> i32 {
        (match self {
            FFTConvMode::Causal => sys::FK_FFTCONV_CAUSAL,
            FFTConvMode::Circular => sys::FK_FFTCONV_CIRCULAR,
            FFTConvMode::Bidirectional => sys::FK_FFTCONV_BIDIRECTIONAL,
        }) as i32
    }

    /// The mode for a C `fk_fftconv_mode_t` value.
    pub fn from_code(code: i32) -> Option<FFTConvMode> {
        match u32::try_from(code).ok()? {
            sys::FK_FFTCONV_CAUSAL => Some(FFTConvMode::Causal),
            sys::FK_FFTCONV_CIRCULAR => Some(FFTConvMode::Circular),
            sys::FK_FFTCONV_BIDIRECTIONAL => Some(FFTConvMode::Bidirectional),
            _ => None,
        }
    }
}

/// Plan options (`fk_fftconv_plan_options_t`). `Default` gives the library's defaults
/// (causal, f32, all sizes 0, no flags); set at least `channels` and `seqlen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FFTConvOptions {
    /// Boundary handling.
    pub mode: FFTConvMode,
    /// Channels (H), >= 0.
    pub channels: i64,
    /// Sequence length (L), >= 0.
    pub seqlen: i64,
    /// Filter taps per channel; 0 means `seqlen`.
    pub filter_len: i64,
    /// A power of two up to 2^22, or 0 for the smallest one the mode needs.
    pub fft_size: i64,
    /// dtype of `u`, `y` and the gates: F32, F16 or BF16.
    pub dtype: DType,
    /// The filter's values never change between calls: the plan may cache its spectrum, keyed
    /// on the filter's data pointer, shape and strides. The address stands for the values:
    /// with this set, a buffer refilled in place, or a filter `Vec` dropped and another one
    /// that the allocator places at the same address, silently gets the old filter's spectrum
    /// (the borrow checker cannot see it: each call's borrow ends with the call). Keep the
    /// filter alive and unchanged for the plan's life, one plan per filter (per layer).
    pub filter_constant: bool,
}

fn raw_plan_options() -> sys::fk_fftconv_plan_options_t {
    // SAFETY: plain-old-data; the init function fills every field.
    let mut raw: sys::fk_fftconv_plan_options_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { sys::fk_fftconv_plan_options_init(&mut raw) };
    raw
}

impl Default for FFTConvOptions {
    fn default() -> Self {
        FFTConvOptions::from_raw(&raw_plan_options()).unwrap_or(FFTConvOptions {
            mode: FFTConvMode::Causal,
            channels: 0,
            seqlen: 0,
            filter_len: 0,
            fft_size: 0,
            dtype: DType::F32,
            filter_constant: false,
        })
    }
}

impl FFTConvOptions {
    fn from_raw(raw: &sys::fk_fftconv_plan_options_t) -> Option<FFTConvOptions> {
        Some(FFTConvOptions {
            mode: FFTConvMode::from_code(raw.mode)?,
            channels: raw.channels,
            seqlen: raw.seqlen,
            filter_len: raw.filter_len,
            fft_size: raw.fft_size,
            dtype: DType::from_dlpack(raw.dtype)?,
            filter_constant: raw.flags & sys::FK_FFTCONV_FILTER_CONSTANT != 0,
        })
    }

    fn to_raw(self) -> sys::fk_fftconv_plan_options_t {
        let mut raw = raw_plan_options();
        raw.mode = self.mode.code();
        raw.channels = self.channels;
        raw.seqlen = self.seqlen;
        raw.filter_len = self.filter_len;
        raw.fft_size = self.fft_size;
        raw.dtype = self.dtype.to_dlpack();
        raw.flags = if self.filter_constant { sys::FK_FFTCONV_FILTER_CONSTANT } else { 0 };
        raw
    }
}

/// An FFT-convolution plan: fixes `(channels, seqlen, filter_len, fft_size, dtype, mode)` and
/// owns its twiddle tables; usable for any batch size. It borrows its [`Context`] (the C plan
/// keeps a pointer to it), so the context outlives it. Dropping it destroys the C plan.
///
/// Per batch `b` and channel `c`, with `v = pregate * u` (or `u`):
/// `y = postgate * (conv(v, k) + D[c] * v)`, each factor only if given.
///
/// ```
/// use flashkit::{Context, FFTConvOptions, FFTConvPlan, Tensor, TensorMut};
/// let ctx = Context::cpu()?;
/// let plan = FFTConvPlan::new(&ctx, &FFTConvOptions { channels: 2, seqlen: 8, ..Default::default() })?;
/// let (u, k) = (vec![1.0f32; 16], vec![0.5f32; 16]);
/// let mut y = vec![0.0f32; 16];
/// plan.forward(None, &Tensor::new(&u, &[1, 2, 8])?, &Tensor::new(&k, &[2, 8])?, None, None, None,
///              &mut TensorMut::new(&mut y, &[1, 2, 8])?)?;
/// # Ok::<(), flashkit::Error>(())
/// ```
///
/// The borrow checker keeps the context alive as long as the plan:
///
/// ```compile_fail,E0597
/// # use flashkit::{Context, FFTConvOptions, FFTConvPlan};
/// let plan = {
///     let ctx = Context::cpu().unwrap();
///     FFTConvPlan::new(&ctx, &FFTConvOptions::default()).unwrap()
/// }; // error: `ctx` does not live long enough
/// ```
#[derive(Debug)]
pub struct FFTConvPlan<'ctx> {
    raw: NonNull<sys::fk_fftconv_plan_t>,
    _context: PhantomData<&'ctx Context>,
}

// SAFETY: flashkit.h: "a plan may be used from several threads at once as long as each call has
// its own output". Every call takes `const fk_fftconv_plan_t*`; outputs are `&mut TensorMut`,
// which Rust guarantees are distinct for concurrent calls. The plan's one mutable part, the
// optional filter-spectrum cache (FK_FFTCONV_FILTER_CONSTANT), is the library's to synchronise
// under that same contract. Nothing ties a plan to a thread, so it may be dropped on any thread
// (Send); the context it borrows is itself Sync.
unsafe impl Send for FFTConvPlan<'_> {}
// SAFETY: see above.
unsafe impl Sync for FFTConvPlan<'_> {}

impl<'ctx> FFTConvPlan<'ctx> {
    /// Creates a plan on `context`.
    ///
    /// # Errors
    /// [`Status::InvalidArgument`] (negative sizes, `fft_size` not a power of two, too small for
    /// the mode or above 2^22, even bidirectional `filter_len`); [`Status::DtypeMismatch`]
    /// (dtype I32); [`Status::NotSupported`] (an fp8 dtype: fp8 goes to `gemm_scaled` and
    /// `attention_fp8` only); [`Status::OutOfMemory`].
    pub fn new(context: &'ctx Context, options: &FFTConvOptions) -> Result<FFTConvPlan<'ctx>> {
        let raw_options = options.to_raw();
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid context, options and out-pointer.
        check(unsafe { sys::fk_fftconv_plan_create(context.as_raw(), &raw_options, &mut raw) })?;
        NonNull::new(raw).map(|raw| FFTConvPlan { raw, _context: PhantomData }).ok_or_else(|| {
            Error::local(Status::Internal, "fk_fftconv_plan_create gave NULL".into())
        })
    }

    /// The resolved settings (`fft_size` and `filter_len` after defaulting).
    pub fn options(&self) -> Result<FFTConvOptions> {
        let mut raw = raw_plan_options();
        // SAFETY: live plan, valid out-pointer with struct_size set.
        check(unsafe { sys::fk_fftconv_plan_get_options(self.raw.as_ptr(), &mut raw) })?;
        FFTConvOptions::from_raw(&raw).ok_or_else(|| {
            Error::local(Status::Internal, "the plan reported an unknown mode or dtype".into())
        })
    }

    /// Runs the convolution `y = postgate * (conv(pregate * u, k) + D * pregate * u)`, each
    /// factor only if given (FlashFFTConv, Fu et al. 2023, section 3; the gates and `D` as in
    /// Hyena's long convolution).
    ///
    /// - `u`, `y`, `pregate`, `postgate`: `(batch, channels, seqlen)`, the plan's dtype, last
    ///   dimension contiguous, other strides arbitrary.
    /// - `k`: `(channels, filter_len)`, f32, f16 or bf16 (fp8 is `NotSupported`), last
    ///   dimension contiguous.
    /// - `d`: optional skip weights `D` `(channels,)`, f32, f16 or bf16, contiguous.
    /// - `y` must not share memory with any input, and no two of its elements an address.
    ///
    /// # Errors
    /// As `fk_fftconv_forward()`: `ShapeMismatch` (not the plan's `channels`/`seqlen`/
    /// `filter_len`), `DtypeMismatch`, `BadStrides` (a last dimension not contiguous, `y`
    /// addressing an element twice), `InvalidArgument` (`y` overlapping an input),
    /// `WrongDevice`, `Misaligned`, `OutOfMemory`, `Device`; `NotSupported` when the launch
    /// stream is being captured into a CUDA graph and the plan must first build its tables
    /// for these arguments (its first call, a new filter of a `filter_constant` plan). On an
    /// error `y` is untouched.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &self,
        launch: Option<&Launch>,
        u: &Tensor<'_>,
        k: &Tensor<'_>,
        d: Option<&Tensor<'_>>,
        pregate: Option<&Tensor<'_>>,
        postgate: Option<&Tensor<'_>>,
        y: &mut TensorMut<'_>,
    ) -> Result<()> {
        let (u, k, yy) = (u.as_dlpack(), k.as_dlpack(), y.as_dlpack());
        let d = d.map(|t| t.as_dlpack());
        let pre = pregate.map(|t| t.as_dlpack());
        let post = postgate.map(|t| t.as_dlpack());
        // SAFETY: live plan; every DLTensor describes memory its view borrows for the call; `y`
        // is an exclusive borrow.
        check(unsafe {
            sys::fk_fftconv_forward(
                self.raw.as_ptr(),
                Launch::ptr(launch),
                &u,
                &k,
                opt_ptr(&d),
                opt_ptr(&pre),
                opt_ptr(&post),
                &yy,
            )
        })
    }

    /// Names the variant [`FFTConvPlan::forward`] would run (e.g. `"cpu.fftconv"`); validates
    /// like it and runs nothing.
    pub fn select_kernel(
        &self,
        u: &Tensor<'_>,
        k: &Tensor<'_>,
        d: Option<&Tensor<'_>>,
        pregate: Option<&Tensor<'_>>,
        postgate: Option<&Tensor<'_>>,
        y: &TensorMut<'_>,
    ) -> Result<&'static str> {
        let (u, k, yy) = (u.as_dlpack(), k.as_dlpack(), y.as_dlpack());
        let d = d.map(|t| t.as_dlpack());
        let pre = pregate.map(|t| t.as_dlpack());
        let post = postgate.map(|t| t.as_dlpack());
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: as in `forward`; nothing is written but `name`.
        check(unsafe {
            sys::fk_fftconv_select_kernel(
                self.raw.as_ptr(),
                &u,
                &k,
                opt_ptr(&d),
                opt_ptr(&pre),
                opt_ptr(&post),
                &yy,
                &mut name,
            )
        })?;
        Ok(static_str(name))
    }

    /// Workspace bytes with which [`FFTConvPlan::forward`] on these arguments allocates
    /// nothing (`fk_fftconv_workspace_size`: on the GPU, the per-call filter spectrum of a plan
    /// without a constant filter, and the four-step intermediates above fft_size 8192 on the
    /// generic kernel); validates like it and runs nothing.
    pub fn workspace_size(
        &self,
        u: &Tensor<'_>,
        k: &Tensor<'_>,
        d: Option<&Tensor<'_>>,
        pregate: Option<&Tensor<'_>>,
        postgate: Option<&Tensor<'_>>,
        y: &TensorMut<'_>,
    ) -> Result<u64> {
        let (u, k, yy) = (u.as_dlpack(), k.as_dlpack(), y.as_dlpack());
        let d = d.map(|t| t.as_dlpack());
        let pre = pregate.map(|t| t.as_dlpack());
        let post = postgate.map(|t| t.as_dlpack());
        let mut bytes: u64 = 0;
        // SAFETY: as in `forward`; nothing is written but `bytes`.
        check(unsafe {
            sys::fk_fftconv_workspace_size(
                self.raw.as_ptr(),
                &u,
                &k,
                opt_ptr(&d),
                opt_ptr(&pre),
                opt_ptr(&post),
                &yy,
                &mut bytes,
            )
        })?;
        Ok(bytes)
    }

    /// The C handle, for calls through [`crate::sys`]. Valid while `self` is alive.
    pub fn as_raw(&self) -> *const sys::fk_fftconv_plan_t {
        self.raw.as_ptr()
    }
}

impl Drop for FFTConvPlan<'_> {
    fn drop(&mut self) {
        // SAFETY: created by fk_fftconv_plan_create, destroyed once; calls borrow the plan, so
        // none is running.
        unsafe { sys::fk_fftconv_plan_destroy(self.raw.as_ptr()) };
    }
}

impl Context {
    /// Creates an FFT-convolution plan on this context; see [`FFTConvPlan::new`].
    pub fn fftconv_plan(&self, options: &FFTConvOptions) -> Result<FFTConvPlan<'_>> {
        FFTConvPlan::new(self, options)
    }
}

/// An [`FFTConvPlan`] that holds a share of its context (an [`Arc<Context>`]) instead of a
/// borrow, so that a long-lived owner (a server's model, a layer struct) can keep the plan and
/// its context together: `struct Layer { plan: SharedFFTConvPlan }` compiles where a field of
/// type `FFTConvPlan<'ctx>` next to the context it borrows would not. Derefs to the plan
/// (`forward`, `select_kernel`, `options`, ...). The plan is destroyed before this share of the
/// context is released.
///
/// ```
/// use std::sync::Arc;
/// use flashkit::{Context, FFTConvOptions, SharedFFTConvPlan, Tensor, TensorMut};
///
/// struct Mixer {
///     plan: SharedFFTConvPlan,
/// }
/// let ctx = Arc::new(Context::cpu()?);
/// let mixer = Mixer {
///     plan: SharedFFTConvPlan::new(ctx.clone(), &FFTConvOptions { channels: 2, seqlen: 8, ..Default::default() })?,
/// };
/// drop(ctx); // the plan keeps the context alive
/// let (u, k) = (vec![1.0f32; 16], vec![0.5f32; 16]);
/// let mut y = vec![0.0f32; 16];
/// mixer.plan.forward(None, &Tensor::new(&u, &[1, 2, 8])?, &Tensor::new(&k, &[2, 8])?, None, None,
///                    None, &mut TensorMut::new(&mut y, &[1, 2, 8])?)?;
/// # Ok::<(), flashkit::Error>(())
/// ```
#[derive(Debug)]
pub struct SharedFFTConvPlan {
    // Declared before `context`, so dropped (destroyed) first.
    plan: FFTConvPlan<'static>,
    context: Arc<Context>,
}

impl SharedFFTConvPlan {
    /// Creates a plan on `context`, which it keeps alive. Errors as [`FFTConvPlan::new`].
    pub fn new(context: Arc<Context>, options: &FFTConvOptions) -> Result<SharedFFTConvPlan> {
        // SAFETY: `'static` only names the borrow in the plan's type. The context lives in the
        // Arc's heap allocation, which does not move, and this struct holds a share of it that is
        // released only after `plan` (field order), so the context outlives the plan. No method
        // of FFTConvPlan hands the borrowed `&Context` out, so nothing can keep it longer.
        let borrowed: &'static Context = unsafe { &*Arc::as_ptr(&context) };
        let plan = FFTConvPlan::new(borrowed, options)?;
        Ok(SharedFFTConvPlan { plan, context })
    }

    /// The context this plan runs on.
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }
}

impl std::ops::Deref for SharedFFTConvPlan {
    type Target = FFTConvPlan<'static>;

    fn deref(&self) -> &FFTConvPlan<'static> {
        &self.plan
    }
}
