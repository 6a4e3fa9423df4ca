//! Errors: every fallible call returns [`Result<T>`](crate::Result), whose error carries the C
//! status code, its category and the message the C library wrote.

use std::ffi::CStr;
use std::fmt;

use flashkit_sys as sys;

/// `Result<T, flashkit::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// A failure status of the C ABI (`fk_status_t`, every value but `FK_SUCCESS`).
///
/// Codes are grouped by hundreds into an [`ErrorCategory`]; a code this crate does not know (a
/// newer library) is kept as [`Status::Unknown`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// `FK_ERROR_INVALID_ARGUMENT` (100): a value is out of its documented range.
    InvalidArgument,
    /// `FK_ERROR_NULL_POINTER` (101): a required pointer is NULL.
    NullPointer,
    /// `FK_ERROR_BAD_STRUCT_SIZE` (102): a parameter struct has an unknown `struct_size`.
    BadStructSize,
    /// `FK_ERROR_DTYPE_MISMATCH` (103): a dtype is unsupported or differs from another's.
    DtypeMismatch,
    /// `FK_ERROR_SHAPE_MISMATCH` (104): a tensor's rank or extents are wrong.
    ShapeMismatch,
    /// `FK_ERROR_BAD_STRIDES` (105): a required dimension is not contiguous, or a stride is
    /// negative.
    BadStrides,
    /// `FK_ERROR_WRONG_DEVICE` (106): a tensor lives on a device the context cannot use.
    WrongDevice,
    /// `FK_ERROR_MISALIGNED` (107): a data pointer is not aligned as required.
    Misaligned,
    /// `FK_ERROR_NOT_SUPPORTED` (200): valid, but not implemented by this build or device.
    NotSupported,
    /// `FK_ERROR_BACKEND_UNAVAILABLE` (201): the backend is not compiled in or has no device.
    BackendUnavailable,
    /// `FK_ERROR_OUT_OF_MEMORY` (300): host or device allocation failed.
    OutOfMemory,
    /// `FK_ERROR_WORKSPACE_TOO_SMALL` (301): the caller's workspace is too small.
    WorkspaceTooSmall,
    /// `FK_ERROR_DEVICE` (400): the CUDA runtime or driver reported an error.
    Device,
    /// `FK_ERROR_KERNEL_LAUNCH` (401): a kernel failed to launch.
    KernelLaunch,
    /// `FK_ERROR_INTERNAL` (500): a flashkit bug.
    Internal,
    /// A code this version of the crate does not know.
    Unknown(u32),
}

impl Status {
    /// The status for a C code; `None` for `FK_SUCCESS`.
    pub fn from_code(code: u32) -> Option<Status> {
        Some(match code {
            sys::FK_SUCCESS => return None,
            sys::FK_ERROR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::FK_ERROR_NULL_POINTER => Status::NullPointer,
            sys::FK_ERROR_BAD_STRUCT_SIZE => Status::BadStructSize,
            sys::FK_ERROR_DTYPE_MISMATCH => Status::DtypeMismatch,
            sys::FK_ERROR_SHAPE_MISMATCH => Status::ShapeMismatch,
            sys::FK_ERROR_BAD_STRIDES => Status::BadStrides,
            sys::FK_ERROR_WRONG_DEVICE => Status::WrongDevice,
            sys::FK_ERROR_MISALIGNED => Status::Misaligned,
            sys::FK_ERROR_NOT_SUPPORTED => Status::NotSupported,
            sys::FK_ERROR_BACKEND_UNAVAILABLE => Status::BackendUnavailable,
            sys::FK_ERROR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::FK_ERROR_WORKSPACE_TOO_SMALL => Status::WorkspaceTooSmall,
            sys::FK_ERROR_DEVICE => Status::Device,
            sys::FK_ERROR_KERNEL_LAUNCH => Status::KernelLaunch,
            sys::FK_ERROR_INTERNAL => Status::Internal,
            other => Status::Unknown(other),
        })
    }

    /// The C code (`fk_status_t` value).
    pub fn code(self) -> u32 {
        match self {
            Status::InvalidArgument => sys::FK_ERROR_INVALID_ARGUMENT,
            Status::NullPointer => sys::FK_ERROR_NULL_POINTER,
            Status::BadStructSize => sys::FK_ERROR_BAD_STRUCT_SIZE,
            Status::DtypeMismatch => sys::FK_ERROR_DTYPE_MISMATCH,
            Status::ShapeMismatch => sys::FK_ERROR_SHAPE_MISMATCH,
            Status::BadStrides => sys::FK_ERROR_BAD_STRIDES,
            Status::WrongDevice => sys::FK_ERROR_WRONG_DEVICE,
            Status::Misaligned => sys::FK_ERROR_MISALIGNED,
            Status::NotSupported => sys::FK_ERROR_NOT_SUPPORTED,
            Status::BackendUnavailable => sys::FK_ERROR_BACKEND_UNAVAILABLE,
            Status::OutOfMemory => sys::FK_ERROR_OUT_OF_MEMORY,
            Status::WorkspaceTooSmall => sys::FK_ERROR_WORKSPACE_TOO_SMALL,
            Status::Device => sys::FK_ERROR_DEVICE,
            Status::KernelLaunch => sys::FK_ERROR_KERNEL_LAUNCH,
            Status::Internal => sys::FK_ERROR_INTERNAL,
            Status::Unknown(code) => code,
        }
    }

    /// The category, as the C library's `fk_status_category()` computes it.
    pub fn category(self) -> ErrorCategory {
        // SAFETY: a pure function of an integer.
        let category = unsafe { sys::fk_status_category(self.code()) };
        ErrorCategory::from_code(category)
    }

    /// The library's short static description, e.g. `"invalid argument: shape mismatch"`
    /// (`fk_status_string()`).
    pub fn description(self) -> &'static str {
        // SAFETY: fk_status_string returns static NUL-terminated text, never NULL.
        static_str(unsafe { sys::fk_status_string(self.code()) })
    }
}

/// The category of a [`Status`]: its code rounded down to a multiple of 100.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCategory {
    /// 1xx: the caller passed something the documentation forbids.
    InvalidArgument,
    /// 2xx: a valid request this build or device cannot serve.
    NotSupported,
    /// 3xx: out of memory.
    OutOfMemory,
    /// 4xx: the CUDA runtime, driver or a kernel launch failed.
    Device,
    /// 5xx: a flashkit bug.
    Internal,
    /// A category this version of the crate does not know (its base code).
    Unknown(u32),
}

impl ErrorCategory {
    fn from_code(code: u32) -> ErrorCategory {
        match code {
            sys::FK_ERROR_INVALID_ARGUMENT => ErrorCategory::InvalidArgument,
            sys::FK_ERROR_NOT_SUPPORTED => ErrorCategory::NotSupported,
            sys::FK_ERROR_OUT_OF_MEMORY => ErrorCategory::OutOfMemory,
            sys::FK_ERROR_DEVICE => ErrorCategory::Device,
            sys::FK_ERROR_INTERNAL => ErrorCategory::Internal,
            other => ErrorCategory::Unknown(other),
        }
    }
}

/// A failed flashkit call: the status code, its category and the message.
///
/// For errors the C library reports, [`Error::message`] is exactly the text
/// `fk_get_last_error_message()` returned right after the failing call on the same thread,
/// e.g. `"q: head_dim 300 > 256"`. The few checks this crate makes itself before calling C
/// (a tensor view that would reach past the end of its slice, a shape with more than
/// `i32::MAX` dimensions) produce messages starting with `"flashkit-rs: "`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// Builds the error for a failed C call from the calling thread's last-error message.
    /// Must be called right after the failing call, on the same thread, before any other
    /// flashkit call (the message is thread-local and replaced by the next failure).
    pub(crate) fn from_last(code: u32) -> Error {
        // SAFETY: returns a pointer to thread-local NUL-terminated text, valid until the next
        // flashkit call on this thread; it is copied at once.
        let ptr = unsafe { sys::fk_get_last_error_message() };
        let message = if ptr.is_null() {
            String::new()
        } else {
            // SAFETY: non-NULL, NUL-terminated, valid until the next flashkit call.
            unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
        };
        Error { status: Status::from_code(code).unwrap_or(Status::Internal), message }
    }

    /// An error raised by this crate before reaching C.
    pub(crate) fn local(status: Status, message: String) -> Error {
        Error { status, message: format!("flashkit-rs: {message}") }
    }

    /// The status.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The C status code (`fk_status_t`), e.g. 104 for a shape mismatch.
    pub fn code(&self) -> u32 {
        self.status.code()
    }

    /// The category of the status.
    pub fn category(&self) -> ErrorCategory {
        self.status.category()
    }

    /// The message naming the argument and the rule it broke (see the type's documentation).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, status {})", self.message, self.status.description(), self.code())
    }
}

impl std::error::Error for Error {}

/// Turns a C status into a `Result`, reading the last-error message on failure.
pub(crate) fn check(code: sys::fk_status_t) -> Result<()> {
    if code == sys::FK_SUCCESS {
        Ok(())
    } else {
        Err(Error::from_last(code))
    }
}

/// Borrows static C text as `&'static str` (the library's names are ASCII).
pub(crate) fn static_str(ptr: *const std::os::raw::c_char) -> &'static str {
    if ptr.is_null() {
        return "";
    }
    // SAFETY: callers pass pointers the header documents as static, NUL-terminated text.
    unsafe { CStr::from_ptr(ptr) }.to_str().unwrap_or("<non-UTF-8 name>")
}
