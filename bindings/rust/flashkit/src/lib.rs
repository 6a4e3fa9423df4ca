//! Safe Rust API of flashkit: attention, GEMM with fused epilogues, Monarch / block-diagonal
//! matrices and FFT convolution, on the CPU or CUDA backend, through the library's stable C ABI
//! (`flashkit.h`; the raw declarations are in [`sys`]).
//!
//! - A [`Context`] binds the library to one backend and device; it is `Send + Sync`: create
//!   one per device and share it.
//! - Tensors are borrowed views: [`Tensor`] (inputs) and [`TensorMut`] (outputs) over Rust
//!   slices (`f32`, `i32`, or `u16` bit patterns of f16/bf16), or over raw device pointers
//!   (`unsafe`).
//! - Every call returns [`Result<T>`]; an [`Error`] carries the C status ([`Status`], with its
//!   [`ErrorCategory`]) and exactly the message `fk_get_last_error_message()` gave.
//! - Operations: [`attention`] (and [`attention_kvcache`] over a paged KV cache,
//!   [`attention_fp8`] on float8 e4m3fn inputs), [`gemm`],
//!   [`monarch`], [`blockdiag_linear`] and
//!   [`FFTConvPlan::forward`]; each has a `*_select_kernel` twin naming the kernel variant that
//!   would run, and a `*_workspace_size` twin ([`FFTConvPlan::workspace_size`]) giving the
//!   [`Launch`] workspace with which the call allocates nothing.
//! - Diagnostics (which kernel variant ran, why a fast path was not taken): the library never
//!   prints; [`set_log_callback`] delivers its messages to a closure.
//!
//! ```
//! use flashkit::{attention, AttentionParams, Context, Tensor, TensorMut};
//!
//! let ctx = Context::cpu()?;
//! // batch 1, seqlen 4, 2 heads, head_dim 8
//! let shape = [1, 4, 2, 8];
//! let q = vec![0.1f32; 64];
//! let (k, v) = (q.clone(), q.clone());
//! let mut out = vec![0.0f32; 64];
//! let params = AttentionParams { causal: true, ..Default::default() };
//! let (qt, kt, vt) = (Tensor::new(&q, &shape)?, Tensor::new(&k, &shape)?, Tensor::new(&v, &shape)?);
//! let mut ot = TensorMut::new(&mut out, &shape)?;
//! attention(&ctx, None, &params, &qt, &kt, &vt, None, &mut ot, None)?;
//! # Ok::<(), flashkit::Error>(())
//! ```
//!
//! Linking: `flashkit-sys` finds `libflashkit` through `FLASHKIT_LIB_DIR`, then
//! `pkg-config flashkit`.
#![warn(missing_docs)]

mod context;
mod error;
mod fftconv;
mod log;
mod ops;
mod tensor;

/// The raw C declarations (the `flashkit-sys` crate).
pub use flashkit_sys as sys;

pub use context::{Backend, Context, ContextInfo, ContextOptions, KernelFamily, Launch};
pub use error::{Error, ErrorCategory, Result, Status};
pub use fftconv::{FFTConvMode, FFTConvOptions, FFTConvPlan, SharedFFTConvPlan};
pub use log::{clear_log_callback, set_log_callback, LogLevel};
pub use ops::{
    attention, attention_fp8, attention_fp8_select_kernel, attention_fp8_workspace_size,
    attention_kvcache, attention_kvcache_select_kernel, attention_kvcache_workspace_size,
    attention_select_kernel, attention_workspace_size, blockdiag_linear,
    blockdiag_linear_select_kernel, blockdiag_linear_workspace_size, gemm, gemm_scaled,
    gemm_scaled_select_kernel, gemm_scaled_workspace_size, gemm_select_kernel, gemm_workspace_size,
    monarch, monarch_select_kernel, monarch_workspace_size, Activation, AttentionParams,
    Fp8Descales, GemmParams, KvCache, VarLen,
};
pub use tensor::{DType, Device, Element, Tensor, TensorMut};

/// Version of the loaded library, e.g. `"0.1.0"` (`fk_get_version()`).
pub fn version() -> &'static str {
    // SAFETY: static text, never NULL.
    error::static_str(unsafe { sys::fk_get_version() })
}

/// Version of the loaded library as `major * 10000 + minor * 100 + patch`. Differs from
/// [`sys::FK_VERSION_NUMBER`] when the header the bindings came from and the library disagree.
pub fn version_number() -> u32 {
    // SAFETY: no arguments.
    unsafe { sys::fk_get_version_number() }
}
