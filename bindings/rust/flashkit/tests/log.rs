//! The log callback (its own test binary: the callback is process-wide).
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use flashkit::{
    clear_log_callback, gemm, set_log_callback, Context, GemmParams, LogLevel, Tensor, TensorMut,
};

fn run_gemms(ctx: &Context) -> flashkit::Error {
    let a = [0.5f32, -1.0, 2.0, 0.25];
    let mut d = [0f32; 4];
    let at = Tensor::new(&a, &[2, 2]).unwrap();
    gemm(
        ctx,
        None,
        &GemmParams::default(),
        &at,
        &at,
        None,
        None,
        &mut TensorMut::new(&mut d, &[2, 2]).unwrap(),
    )
    .unwrap();
    assert_eq!(d, [0.5 * 0.5 - 2.0, 0.5 * -1.0 - 0.25, 2.0 * 0.5 + 0.5, -2.0 + 0.0625]);
    let b = [1f32; 6];
    let bt = Tensor::new(&b, &[3, 2]).unwrap();
    gemm(
        ctx,
        None,
        &GemmParams::default(),
        &at,
        &bt,
        None,
        None,
        &mut TensorMut::new(&mut d, &[2, 2]).unwrap(),
    )
    .unwrap_err()
}

#[test]
fn log_callback_levels_replacement_and_removal() {
    let ctx = Context::cpu().unwrap();
    let seen: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let sink = seen.clone();
    set_log_callback(
        move |level, msg| sink.lock().unwrap().push((level, msg.to_string())),
        LogLevel::Debug,
    )
    .unwrap();
    let err = run_gemms(&ctx);
    {
        let seen = seen.lock().unwrap();
        assert!(
            seen.iter().any(|(l, m)| *l == LogLevel::Debug && m.contains("cpu.gemm")),
            "{seen:?}"
        );
        assert!(
            seen.iter().any(|(l, m)| *l == LogLevel::Error && m.contains(err.message())),
            "no error message {:?} in {seen:?}",
            err.message()
        );
    }

    // Errors only: the successful call logs nothing; the replaced closure's Arc is dropped.
    let errors: Arc<Mutex<Vec<(LogLevel, String)>>> = Arc::default();
    let sink2 = errors.clone();
    set_log_callback(
        move |level, msg| sink2.lock().unwrap().push((level, msg.to_string())),
        LogLevel::Error,
    )
    .unwrap();
    assert_eq!(Arc::strong_count(&seen), 1, "the replaced closure was not dropped");
    let n_before = seen.lock().unwrap().len();
    run_gemms(&ctx);
    assert_eq!(seen.lock().unwrap().len(), n_before, "the replaced callback still ran");
    {
        let errors = errors.lock().unwrap();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].0, LogLevel::Error);
    }

    // A panicking callback does not unwind into C.
    set_log_callback(|_, _| panic!("callback panic"), LogLevel::Error).unwrap();
    assert_eq!(Arc::strong_count(&errors), 1);
    run_gemms(&ctx);

    // A panic whose payload panics again when dropped: still nothing unwinds into C (the
    // process would abort), and the call's own error still reaches the caller.
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("payload drop panic");
        }
    }
    set_log_callback(|_, _| std::panic::panic_any(PanicsOnDrop), LogLevel::Error).unwrap();
    let err = run_gemms(&ctx);
    assert!(!err.message().is_empty());

    clear_log_callback();
    let counter = Arc::new(Mutex::new(0usize));
    let c2 = counter.clone();
    set_log_callback(move |_, _| *c2.lock().unwrap() += 1, LogLevel::Debug).unwrap();
    clear_log_callback();
    assert_eq!(Arc::strong_count(&counter), 1, "clear did not drop the closure");
    run_gemms(&ctx);
    assert_eq!(*counter.lock().unwrap(), 0);

    setter_from_inside_while_another_thread_sets();
    replaced_closure_whose_drop_touches_logging();
}

// A closure whose captures' Drop calls clear_log_callback / set_log_callback (a scoped logging
// guard): replacing or removing it drops it, and that Drop must not wait on the crate's own lock
// (it did: the old closure was dropped with the lock held, so the setter hung forever).
fn replaced_closure_whose_drop_touches_logging() {
    struct ClearOnDrop;
    impl Drop for ClearOnDrop {
        fn drop(&mut self) {
            clear_log_callback();
        }
    }
    struct SetOnDrop(Arc<Mutex<bool>>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            let ok = set_log_callback(|_, _| {}, LogLevel::Error).is_ok();
            *self.0.lock().unwrap() = ok;
        }
    }
    let set_ok: Arc<Mutex<bool>> = Arc::default();
    let flag = set_ok.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let guard = ClearOnDrop;
        set_log_callback(
            move |_, _| {
                let _ = &guard;
            },
            LogLevel::Debug,
        )
        .unwrap();
        set_log_callback(|_, _| {}, LogLevel::Debug).unwrap(); // drops ClearOnDrop
        let guard = SetOnDrop(flag);
        set_log_callback(
            move |_, _| {
                let _ = &guard;
            },
            LogLevel::Debug,
        )
        .unwrap();
        clear_log_callback(); // drops SetOnDrop, which installs another closure
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("set_log_callback / clear_log_callback hung dropping a closure that logs");
    assert!(*set_ok.lock().unwrap(), "set_log_callback from a dropped closure's Drop failed");
    clear_log_callback();
}

// A callback that calls set_log_callback / clear_log_callback while another thread's
// set_log_callback waits for the delivery to end: both inner calls must return at once (refused
// / no-op) instead of waiting for the other setter (they once deadlocked on the crate's lock).
fn setter_from_inside_while_another_thread_sets() {
    let inner: Arc<Mutex<Vec<bool>>> = Arc::default();
    let sink = inner.clone();
    set_log_callback(
        move |level, _| {
            if level == LogLevel::Error {
                std::thread::sleep(Duration::from_millis(300));
                clear_log_callback();
                let refused = set_log_callback(|_, _| {}, LogLevel::Debug).is_err();
                sink.lock().unwrap().push(refused);
            }
        },
        LogLevel::Error,
    )
    .unwrap();
    let (done_tx, done_rx) = mpsc::channel();
    let logger_done = done_tx.clone();
    std::thread::spawn(move || {
        let ctx = Context::cpu().unwrap();
        run_gemms(&ctx);
        logger_done.send("logger").unwrap();
    });
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100)); // inside the delivery's sleep
        set_log_callback(|_, _| {}, LogLevel::Error).unwrap();
        done_tx.send("setter").unwrap();
    });
    for _ in 0..2 {
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("a setter inside the callback and one outside deadlocked");
    }
    assert_eq!(*inner.lock().unwrap(), vec![true], "the inner set_log_callback was not refused");
    assert_eq!(Arc::strong_count(&inner), 1, "the replaced closure was not dropped");
    clear_log_callback();
}
