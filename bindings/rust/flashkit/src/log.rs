//! The library's diagnostics (`fk_set_log_callback`) delivered to a Rust closure.
use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use crate::error::{check, Result};
use crate::sys;

/// Severity of a log message (`fk_log_level_t`); a lower level is more severe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// A call failed; the message repeats the call's error message.
    Error = 0,
    /// Something the caller may want to fix (a slow path taken).
    Warn = 1,
    /// Context creation, device facts.
    Info = 2,
    /// The kernel variant chosen for each call.
    Debug = 3,
}

impl LogLevel {
    fn from_raw(level: sys::fk_log_level_t) -> LogLevel {
        match level {
            sys::FK_LOG_ERROR => LogLevel::Error,
            sys::FK_LOG_WARN => LogLevel::Warn,
            sys::FK_LOG_INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

type Callback = Box<dyn Fn(LogLevel, &str) + Send + Sync + 'static>;

/// The installed closure (a leaked `Box<Callback>` as an address; 0: none). Held while the
/// C callback is replaced, so that two setters cannot free each other's closure.
static INSTALLED: Mutex<usize> = Mutex::new(0);

thread_local! {
    /// Set on the thread that runs the callback, while it runs. A setter there must not wait
    /// for `INSTALLED`: another thread may hold it while fk_set_log_callback waits for the
    /// library's log lock, which this delivery holds (a deadlock, found in session 45).
    static IN_DELIVERY: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" fn trampoline(
    level: sys::fk_log_level_t,
    message: *const c_char,
    user_data: *mut c_void,
) {
    // SAFETY: user_data is the Box<Callback> installed with this trampoline; the library
    // delivers under its log lock and fk_set_log_callback waits for that lock, so the box is
    // freed (after a replacement) only once no delivery can still use it.
    let callback = unsafe { &*(user_data as *const Callback) };
    let text = if message.is_null() {
        String::new()
    } else {
        // SAFETY: the library passes a NUL-terminated string valid during the call.
        String::from_utf8_lossy(unsafe { CStr::from_ptr(message) }.to_bytes()).into_owned()
    };
    // A panic must not unwind into C: it is caught here. Dropping its payload runs the
    // payload's Drop, which may panic in turn; that second panic is caught too and its payload
    // is leaked rather than dropped, so nothing can unwind out of this function.
    IN_DELIVERY.with(|d| d.set(true));
    if let Err(payload) =
        catch_unwind(AssertUnwindSafe(|| callback(LogLevel::from_raw(level), &text)))
    {
        if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            std::mem::forget(again);
        }
    }
    IN_DELIVERY.with(|d| d.set(false));
}

fn in_delivery() -> bool {
    IN_DELIVERY.with(Cell::get)
}

/// Installs `callback(level, message)` for the library's messages at or below `max_level`
/// (`fk_set_log_callback`), replacing any callback installed before (by this crate or through
/// the C ABI). Process-wide.
///
/// The library delivers one message at a time, from the thread of the flashkit call that logs
/// it. The callback must not call flashkit (`set_log_callback` from inside it returns the
/// library's refusal and changes nothing; `clear_log_callback` from inside it does nothing). A
/// panic in the callback is caught and ignored (never unwinds into the library, even when
/// dropping the panic's payload panics again: that payload is leaked); std's panic hook still
/// reports such a panic on stderr unless the program installs its own (`std::panic::set_hook`).
/// The previous closure is dropped once no delivery can still be using it. A `set_log_callback`
/// on another thread waits for a delivery in progress to return.
///
/// # Errors
/// None for a valid level; the C status otherwise.
pub fn set_log_callback<F>(callback: F, max_level: LogLevel) -> Result<()>
where
    F: Fn(LogLevel, &str) + Send + Sync + 'static,
{
    if in_delivery() {
        // From inside the callback: the library refuses (without waiting); INSTALLED is not
        // taken (see IN_DELIVERY).
        // SAFETY: a NULL callback with a valid level; nothing is handed over.
        let status = unsafe {
            sys::fk_set_log_callback(None, max_level as sys::fk_log_level_t, std::ptr::null_mut())
        };
        // The library refuses every call from inside a delivery (before it looks at the
        // arguments' effect), so this returns its error.
        return check(status);
    }
    let boxed: Box<Callback> = Box::new(Box::new(callback));
    let raw = Box::into_raw(boxed);
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: trampoline matches fk_log_callback_t; raw stays alive until replaced below.
    let status = unsafe {
        sys::fk_set_log_callback(Some(trampoline), max_level as sys::fk_log_level_t, raw.cast())
    };
    if let Err(e) = check(status) {
        drop(installed);
        // SAFETY: the library did not take raw (the call failed), so it is still ours. Dropped
        // after the lock is released: a closure whose captures' Drop calls set_log_callback or
        // clear_log_callback would otherwise wait on INSTALLED forever.
        drop(unsafe { Box::from_raw(raw) });
        return Err(e);
    }
    let old = std::mem::replace(&mut *installed, raw as usize);
    drop(installed);
    drop_callback(old);
    Ok(())
}

/// Drops a closure that set_log_callback boxed (0: none), with INSTALLED not held: its
/// captures' Drop may call set_log_callback or clear_log_callback.
fn drop_callback(old: usize) {
    if old != 0 {
        // SAFETY: old came from Box::into_raw in set_log_callback and was just taken out of
        // INSTALLED, so nothing else frees it; the library stopped using it when
        // fk_set_log_callback returned (see trampoline).
        drop(unsafe { Box::from_raw(old as *mut Callback) });
    }
}

/// Removes the log callback (`fk_set_log_callback(NULL, ...)`) and drops the closure. From
/// inside the callback (which must not call flashkit) the library refuses and this does
/// nothing.
pub fn clear_log_callback() {
    if in_delivery() {
        return; // the library would refuse; INSTALLED is not taken (see IN_DELIVERY)
    }
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: removing the callback is always valid.
    let status = unsafe { sys::fk_set_log_callback(None, sys::FK_LOG_ERROR, std::ptr::null_mut()) };
    if status != sys::FK_SUCCESS {
        // Refused (from inside a delivery): the closure is still installed and may be running.
        return;
    }
    let old = std::mem::replace(&mut *installed, 0);
    drop(installed);
    drop_callback(old);
}
