//! The safe API against the raw C ABI: errors carry exactly the status and message C reports,
//! contexts and plans work across threads, dtype tags and context info.
use std::ffi::CStr;
use std::ptr;

use flashkit::sys;
use flashkit::{
    attention, gemm, gemm_scaled, gemm_scaled_select_kernel, Backend, Context, ContextOptions,
    DType, ErrorCategory, FFTConvOptions, FFTConvPlan, GemmParams, KernelFamily, Status, Tensor,
    TensorMut,
};

/// The calling thread's C last-error message.
fn c_last_error() -> String {
    unsafe { CStr::from_ptr(sys::fk_get_last_error_message()) }.to_str().unwrap().to_string()
}

/// A compact f32 CPU DLTensor built by hand (independently of the crate's views).
fn raw_f32(data: &mut [f32], shape: &mut [i64]) -> sys::DLTensor {
    sys::DLTensor {
        data: data.as_mut_ptr().cast(),
        device: sys::DLDevice { device_type: sys::kDLCPU, device_id: 0 },
        ndim: shape.len() as i32,
        dtype: sys::DLDataType { code: sys::kDLFloat as u8, bits: 32, lanes: 1 },
        shape: shape.as_mut_ptr(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    }
}

fn raw_cpu_context() -> *mut sys::fk_context_t {
    let mut opts: sys::fk_context_options_t = unsafe { std::mem::zeroed() };
    let mut ctx = ptr::null_mut();
    unsafe {
        assert_eq!(sys::fk_context_options_init(&mut opts), sys::FK_SUCCESS);
        opts.backend = sys::FK_BACKEND_CPU as i32;
        assert_eq!(sys::fk_context_create(&opts, &mut ctx), sys::FK_SUCCESS);
    }
    ctx
}

#[test]
fn bad_head_dim_gives_the_c_status_and_message() {
    // head_dim 300 > 256: q, k, v, out all (1, 2, 1, 300).
    let n = 2 * 300;
    let (mut q, mut k, mut v, mut out) =
        (vec![0.5f32; n], vec![0.5f32; n], vec![0.5f32; n], vec![0f32; n]);

    // The raw C call.
    let (c_status, c_message) = {
        let ctx = raw_cpu_context();
        let mut shapes = [[1i64, 2, 1, 300]; 4];
        let [s0, s1, s2, s3] = &mut shapes;
        let (tq, tk, tv, to) =
            (raw_f32(&mut q, s0), raw_f32(&mut k, s1), raw_f32(&mut v, s2), raw_f32(&mut out, s3));
        let status = unsafe {
            sys::fk_attention_forward(
                ctx,
                ptr::null(),
                ptr::null(),
                &tq,
                &tk,
                &tv,
                ptr::null(),
                ptr::null(),
                &to,
                ptr::null(),
            )
        };
        let message = c_last_error();
        unsafe { sys::fk_context_destroy(ctx) };
        (status, message)
    };
    assert_eq!(c_status, sys::FK_ERROR_SHAPE_MISMATCH);
    assert_eq!(c_message, "q: head_dim 300 > 256", "the header's documented example");

    // Clobber the thread's last message so the safe call must produce its own.
    unsafe { sys::fk_context_options_init(ptr::null_mut()) };
    assert_ne!(c_last_error(), c_message);

    // The same call through the safe API.
    let ctx = Context::cpu().unwrap();
    let shape = [1, 2, 1, 300];
    let (qt, kt, vt) = (
        Tensor::new(&q, &shape).unwrap(),
        Tensor::new(&k, &shape).unwrap(),
        Tensor::new(&v, &shape).unwrap(),
    );
    let mut ot = TensorMut::new(&mut out, &shape).unwrap();
    let err =
        attention(&ctx, None, &Default::default(), &qt, &kt, &vt, None, &mut ot, None).unwrap_err();
    assert_eq!(err.message(), c_message);
    assert_eq!(err.code(), c_status);
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert_eq!(err.category(), ErrorCategory::InvalidArgument);
    assert!(err.to_string().contains("q: head_dim 300 > 256"), "{err}");

    // select_kernel validates the same way.
    let err2 = flashkit::attention_select_kernel(
        &ctx,
        &Default::default(),
        &qt,
        &kt,
        &vt,
        None,
        &ot,
        None,
    )
    .unwrap_err();
    assert_eq!(err2, err);
}

#[test]
fn gemm_shape_error_matches_c() {
    // a (2, 3) @ b (4, 2): inner dimensions disagree.
    let (mut a, mut b, mut d) = (vec![1f32; 6], vec![1f32; 8], vec![0f32; 4]);
    let (c_status, c_message) = {
        let ctx = raw_cpu_context();
        let (mut sa, mut sb, mut sd) = ([2i64, 3], [4i64, 2], [2i64, 2]);
        let (ta, tb, td) =
            (raw_f32(&mut a, &mut sa), raw_f32(&mut b, &mut sb), raw_f32(&mut d, &mut sd));
        let status = unsafe {
            sys::fk_gemm(ctx, ptr::null(), ptr::null(), &ta, &tb, ptr::null(), ptr::null(), &td)
        };
        let message = c_last_error();
        unsafe { sys::fk_context_destroy(ctx) };
        (status, message)
    };
    assert_ne!(c_status, sys::FK_SUCCESS);
    assert!(!c_message.is_empty());

    let ctx = Context::cpu().unwrap();
    let at = Tensor::new(&a, &[2, 3]).unwrap();
    let bt = Tensor::new(&b, &[4, 2]).unwrap();
    let mut dt = TensorMut::new(&mut d, &[2, 2]).unwrap();
    let err = gemm(&ctx, None, &GemmParams::default(), &at, &bt, None, None, &mut dt).unwrap_err();
    assert_eq!((err.code(), err.message()), (c_status, c_message.as_str()));
}

#[test]
fn gemm_in_place_through_from_raw_as_documented() {
    // `gemm`'s doc: an in-place call (d the exact same view as c) builds c with the unsafe
    // Tensor::from_raw over d's memory. d = 0.5 a b + 0.75 d against a float64 reference.
    let (m, n, k) = (3usize, 5usize, 4usize);
    let mut seed = 0x2545f491u32;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed as f64 / u32::MAX as f64 - 0.5) as f32
    };
    let a: Vec<f32> = (0..m * k).map(|_| next()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| next()).collect();
    let mut d: Vec<f32> = (0..m * n).map(|_| next()).collect();
    let mut want = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64).sum();
            want[i * n + j] = 0.5 * dot + 0.75 * d[i * n + j] as f64;
        }
    }
    let ctx = Context::cpu().unwrap();
    let at = Tensor::new(&a, &[m as i64, k as i64]).unwrap();
    let bt = Tensor::new(&b, &[k as i64, n as i64]).unwrap();
    let mut dt = TensorMut::new(&mut d, &[m as i64, n as i64]).unwrap();
    let data = dt.as_dlpack().data as *const std::ffi::c_void;
    let ct = unsafe {
        Tensor::from_raw(data, flashkit::Device::Cpu, DType::F32, &[m as i64, n as i64], None)
    };
    let params = GemmParams { alpha: 0.5, beta: 0.75, ..GemmParams::default() };
    gemm(&ctx, None, &params, &at, &bt, Some(&ct), None, &mut dt).unwrap();
    drop(dt);
    for (got, w) in d.iter().zip(&want) {
        assert!((*got as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()), "{got} vs {w}");
    }
}

#[test]
fn plan_and_context_errors_match_c() {
    // fft_size 12 is not a power of two.
    let ctx = Context::cpu().unwrap();
    let opts = FFTConvOptions { channels: 1, seqlen: 8, fft_size: 12, ..Default::default() };
    let (c_status, c_message) = unsafe {
        let mut raw: sys::fk_fftconv_plan_options_t = std::mem::zeroed();
        sys::fk_fftconv_plan_options_init(&mut raw);
        raw.channels = 1;
        raw.seqlen = 8;
        raw.fft_size = 12;
        let mut plan = ptr::null_mut();
        let status = sys::fk_fftconv_plan_create(ctx.as_raw(), &raw, &mut plan);
        assert!(plan.is_null());
        (status, c_last_error())
    };
    assert_eq!(c_status, sys::FK_ERROR_INVALID_ARGUMENT);
    let err = FFTConvPlan::new(&ctx, &opts).unwrap_err();
    assert_eq!((err.code(), err.message()), (c_status, c_message.as_str()));
    assert_eq!(err.status(), Status::InvalidArgument);

    // Negative thread count.
    let (c_status, c_message) = unsafe {
        let mut raw: sys::fk_context_options_t = std::mem::zeroed();
        sys::fk_context_options_init(&mut raw);
        raw.backend = sys::FK_BACKEND_CPU as i32;
        raw.num_threads = -3;
        let mut c = ptr::null_mut();
        let status = sys::fk_context_create(&raw, &mut c);
        assert!(c.is_null());
        (status, c_last_error())
    };
    let err = Context::new(&ContextOptions {
        backend: Backend::Cpu,
        num_threads: -3,
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!((err.code(), err.message()), (c_status, c_message.as_str()));
}

#[test]
fn errors_are_per_thread() {
    // Two threads fail differently at the same time; each Error holds its own thread's message.
    let ctx = Context::cpu().unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = [12i64, 24]
            .into_iter()
            .map(|fft_size| {
                let ctx = &ctx;
                s.spawn(move || {
                    let mut messages = Vec::new();
                    for _ in 0..200 {
                        let opts = FFTConvOptions {
                            channels: 1,
                            seqlen: 4,
                            fft_size,
                            ..Default::default()
                        };
                        messages
                            .push(FFTConvPlan::new(ctx, &opts).unwrap_err().message().to_string());
                    }
                    (fft_size, messages)
                })
            })
            .collect();
        for h in handles {
            let (fft_size, messages) = h.join().unwrap();
            for m in messages {
                assert!(
                    m.contains(&fft_size.to_string()),
                    "thread with fft_size {fft_size} got '{m}'"
                );
            }
        }
    });
}

#[test]
fn shared_plan_lives_in_a_struct_with_its_context_and_matches_the_borrowing_plan() {
    use flashkit::SharedFFTConvPlan;
    use std::sync::Arc;
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SharedFFTConvPlan>();

    struct Layer {
        plan: SharedFFTConvPlan,
    }
    let (channels, seqlen, taps) = (3i64, 50i64, 20i64);
    let opts = FFTConvOptions { channels, seqlen, filter_len: taps, ..Default::default() };
    let ctx = Arc::new(Context::cpu().unwrap());
    let layer = Layer { plan: SharedFFTConvPlan::new(ctx.clone(), &opts).unwrap() };
    assert_eq!(Arc::strong_count(&ctx), 2);
    assert!(Arc::ptr_eq(layer.plan.context(), &ctx));
    drop(ctx); // the layer keeps its context

    let n = (channels * seqlen) as usize;
    let u: Vec<f32> = (0..n).map(|i| ((i * 29 % 97) as f32) / 40.0 - 1.2).collect();
    let k: Vec<f32> =
        (0..(channels * taps) as usize).map(|i| ((i * 13 % 31) as f32) / 31.0 - 0.5).collect();
    let ut = Tensor::new(&u, &[1, channels, seqlen]).unwrap();
    let kt = Tensor::new(&k, &[channels, taps]).unwrap();
    let mut y = vec![f32::NAN; n];
    layer
        .plan
        .forward(
            None,
            &ut,
            &kt,
            None,
            None,
            None,
            &mut TensorMut::new(&mut y, &[1, channels, seqlen]).unwrap(),
        )
        .unwrap();
    // Causal convolution in float64, per channel.
    for c in 0..channels as usize {
        for t in 0..seqlen as usize {
            let mut acc = 0f64;
            for s in 0..=t.min(taps as usize - 1) {
                acc += k[c * taps as usize + s] as f64 * u[c * seqlen as usize + t - s] as f64;
            }
            let got = y[c * seqlen as usize + t] as f64;
            assert!((got - acc).abs() <= 1e-4 * (1.0 + acc.abs()), "c {c} t {t}: {got} vs {acc}");
        }
    }
    assert_eq!(layer.plan.options().unwrap().seqlen, seqlen);
    drop(layer); // plan first, then the last share of the context
}

#[test]
fn context_and_plan_are_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Context>();
    assert_send_sync::<FFTConvPlan<'static>>();
    assert_send_sync::<Tensor<'static>>();

    let ctx = Context::cpu().unwrap();
    let (channels, seqlen) = (3i64, 64i64);
    let plan = FFTConvPlan::new(
        &ctx,
        &FFTConvOptions { channels, seqlen, filter_len: 16, ..Default::default() },
    )
    .unwrap();
    let n = (channels * seqlen) as usize;
    let u: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32) / 50.0 - 1.0).collect();
    let k: Vec<f32> = (0..(channels * 16) as usize).map(|i| 1.0 / (1.0 + i as f32)).collect();
    let ut = Tensor::new(&u, &[1, channels, seqlen]).unwrap();
    let kt = Tensor::new(&k, &[channels, 16]).unwrap();

    let mut reference = vec![0f32; n];
    plan.forward(
        None,
        &ut,
        &kt,
        None,
        None,
        None,
        &mut TensorMut::new(&mut reference, &[1, channels, seqlen]).unwrap(),
    )
    .unwrap();

    // One plan, one context, eight threads at once, each with its own output.
    let mut outputs = vec![vec![f32::NAN; n]; 8];
    std::thread::scope(|s| {
        for out in outputs.iter_mut() {
            let (plan, ut, kt) = (&plan, &ut, &kt);
            s.spawn(move || {
                for _ in 0..20 {
                    let mut yt =
                        TensorMut::new(out.as_mut_slice(), &[1, channels, seqlen]).unwrap();
                    plan.forward(None, ut, kt, None, None, None, &mut yt).unwrap();
                }
            });
        }
    });
    for out in &outputs {
        assert_eq!(out, &reference);
    }

    // A context can move to another thread and be dropped there.
    let moved = Context::cpu().unwrap();
    std::thread::spawn(move || drop(moved.info().unwrap())).join().unwrap();
}

#[test]
fn cpu_context_info() {
    let ctx = Context::cpu().unwrap();
    let info = ctx.info().unwrap();
    assert_eq!(info.backend, Backend::Cpu);
    assert_eq!(info.kernel_family, KernelFamily::Cpu);
    assert_eq!(info.device_ordinal, -1);
    assert_eq!(info.compute_capability, (0, 0));
    assert!(info.num_threads >= 1);
    assert_eq!(info.device_name, "cpu");
    assert_eq!(Backend::Cpu.name(), "cpu");
    assert_eq!(KernelFamily::Sm90.name(), "sm90");

    let two = Context::new(&ContextOptions {
        backend: Backend::Cpu,
        num_threads: 2,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(two.info().unwrap().num_threads, 2);
    assert_eq!(flashkit::version_number(), sys::FK_VERSION_NUMBER);
    assert!(!flashkit::version().is_empty());
}

#[test]
fn cuda_request_without_cuda_is_backend_unavailable_or_works() {
    match Context::new(&ContextOptions { backend: Backend::Cuda, ..Default::default() }) {
        Ok(ctx) => assert_eq!(ctx.info().unwrap().backend, Backend::Cuda),
        Err(e) => {
            assert_eq!(e.status(), Status::BackendUnavailable);
            assert_eq!(e.category(), ErrorCategory::NotSupported);
            assert!(!e.message().is_empty());
        }
    }
}

/// f32 -> IEEE half bits, for values exactly representable in half (small integers here).
fn f16_bits(x: f32) -> u16 {
    if x == 0.0 {
        return 0;
    }
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32 - 127 + 15;
    assert!((1..31).contains(&exp), "{x} is not a normal half");
    let mant = b & 0x7f_ffff;
    assert_eq!(mant & 0x1fff, 0, "{x} is not exact in half");
    sign | ((exp as u16) << 10) | (mant >> 13) as u16
}

/// f32 -> bfloat16 bits, for values exact in bf16.
fn bf16_bits(x: f32) -> u16 {
    assert_eq!(x.to_bits() & 0xffff, 0, "{x} is not exact in bf16");
    (x.to_bits() >> 16) as u16
}

#[test]
fn half_precision_views_through_bit_patterns() {
    // d (2x2, f32) = a (2x3) @ b (3x2) with a, b in f16 and then bf16: small integers, exact.
    let a = [1.0f32, 2.0, 3.0, -1.0, 0.5, 4.0];
    let b = [2.0f32, 1.0, 0.0, -2.0, 1.5, 1.0];
    let expected = [6.5f32, 0.0, 4.0, 2.0];
    let ctx = Context::cpu().unwrap();
    for (dtype, conv) in [(DType::F16, f16_bits as fn(f32) -> u16), (DType::BF16, bf16_bits)] {
        let ab: Vec<u16> = a.iter().map(|&x| conv(x)).collect();
        let bb: Vec<u16> = b.iter().map(|&x| conv(x)).collect();
        let at = Tensor::from_bits(&ab, dtype, &[2, 3]).unwrap();
        let bt = Tensor::from_bits(&bb, dtype, &[3, 2]).unwrap();
        assert_eq!(at.dtype(), dtype);
        let mut d = [f32::NAN; 4];
        gemm(
            &ctx,
            None,
            &GemmParams::default(),
            &at,
            &bt,
            None,
            None,
            &mut TensorMut::new(&mut d, &[2, 2]).unwrap(),
        )
        .unwrap();
        assert_eq!(d, expected, "{dtype:?}");

        // Half output too: d16 = a @ b in the same dtype.
        let mut d16 = [0u16; 4];
        gemm(
            &ctx,
            None,
            &GemmParams::default(),
            &at,
            &bt,
            None,
            None,
            &mut TensorMut::from_bits(&mut d16, dtype, &[2, 2]).unwrap(),
        )
        .unwrap();
        let want: Vec<u16> = expected.iter().map(|&x| conv(x)).collect();
        assert_eq!(d16.to_vec(), want, "{dtype:?}");
    }
}

#[test]
fn strided_and_chained_views() {
    // GEMM reading a padded (row stride 4) a, then feeding its output into a second GEMM.
    let ctx = Context::cpu().unwrap();
    let a_padded = [1.0f32, 2.0, 99.0, 99.0, 3.0, 4.0, 99.0, 99.0]; // (2, 2), row stride 4
    let eye = [1.0f32, 0.0, 0.0, 1.0];
    let at = Tensor::with_strides(&a_padded, &[2, 2], &[4, 1]).unwrap();
    let it = Tensor::new(&eye, &[2, 2]).unwrap();
    let mut d1 = [0f32; 4];
    let mut d2 = [0f32; 4];
    let mut d1t = TensorMut::new(&mut d1, &[2, 2]).unwrap();
    gemm(&ctx, None, &GemmParams::default(), &at, &it, None, None, &mut d1t).unwrap();
    let params = GemmParams { alpha: 2.0, ..Default::default() };
    gemm(
        &ctx,
        None,
        &params,
        &d1t.as_tensor(),
        &it,
        None,
        None,
        &mut TensorMut::new(&mut d2, &[2, 2]).unwrap(),
    )
    .unwrap();
    assert_eq!(d1, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(d2, [2.0, 4.0, 6.0, 8.0]);

    // A view that would read past its slice never reaches C.
    let err = Tensor::with_strides(&a_padded, &[2, 2], &[8, 1]).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert!(err.message().starts_with("flashkit-rs: "), "{}", err.message());
}

#[test]
fn plan_reports_resolved_options() {
    let ctx = Context::cpu().unwrap();
    let plan = ctx
        .fftconv_plan(&FFTConvOptions { channels: 2, seqlen: 100, ..Default::default() })
        .unwrap();
    let opts = plan.options().unwrap();
    assert_eq!(opts.filter_len, 100, "filter_len 0 means seqlen");
    assert!(opts.fft_size >= 199 && opts.fft_size.count_ones() == 1, "fft_size {}", opts.fft_size);
    assert_eq!(opts.dtype, DType::F32);
}

/// OCP e4m3fn from its definition (bias 7, 3 mantissa bits); finite codes only.
fn e4m3(code: u8) -> f64 {
    let (s, e, m) = (code >> 7, i32::from((code >> 3) & 0xF), f64::from(code & 7));
    let v = if e == 0 { m / 8.0 * 2f64.powi(-6) } else { (1.0 + m / 8.0) * 2f64.powi(e - 7) };
    if s == 1 {
        -v
    } else {
        v
    }
}

#[test]
fn gemm_scaled_fp8_matches_f64() {
    let (m, n, k) = (3usize, 4usize, 20usize);
    // Deterministic finite e4m3 codes of moderate magnitude (exponent field 5..9).
    let code = |i: usize| -> u8 {
        (((i * 37) % 2) << 7) as u8 | (((5 + i % 5) << 3) as u8) | (i % 8) as u8
    };
    let a: Vec<u8> = (0..m * k).map(code).collect();
    let b: Vec<u8> = (0..n * k).map(|i| code(i + 11)).collect();
    let sa = [0.5f32, 1.0, 2.0];
    let sb = [0.25f32];
    let mut d = vec![f32::NAN; m * n];
    let ctx = Context::cpu().unwrap();
    let at = Tensor::from_fp8_bits(&a, DType::F8E4M3FN, &[m as i64, k as i64]).unwrap();
    let bt = Tensor::from_fp8_bits(&b, DType::F8E4M3FN, &[n as i64, k as i64]).unwrap();
    let (sat, sbt) = (Tensor::new(&sa, &[3]).unwrap(), Tensor::new(&sb, &[1]).unwrap());
    let params = GemmParams { trans_b: true, ..Default::default() };
    {
        let mut dt = TensorMut::new(&mut d, &[m as i64, n as i64]).unwrap();
        let name = gemm_scaled_select_kernel(
            &ctx,
            &params,
            &at,
            &bt,
            Some(&sat),
            Some(&sbt),
            None,
            None,
            &dt,
        )
        .unwrap();
        assert_eq!(name, "cpu.gemm");
        // The CPU backend takes no scratch (the query validates like gemm).
        let plain = GemmParams { trans_b: true, ..Default::default() };
        let bf = vec![0.5f32; n * k];
        let bft = Tensor::new(&bf, &[n as i64, k as i64]).unwrap();
        let af = vec![0.25f32; m * k];
        let aft = Tensor::new(&af, &[m as i64, k as i64]).unwrap();
        assert_eq!(flashkit::gemm_workspace_size(&ctx, &plain, &aft, &bft, None, None, &dt), Ok(0));
        let sized = flashkit::gemm_scaled_workspace_size(
            &ctx,
            &params,
            &at,
            &bt,
            Some(&sat),
            Some(&sbt),
            None,
            None,
            &dt,
        );
        assert_eq!(sized, Ok(0));
        gemm_scaled(&ctx, None, &params, &at, &bt, Some(&sat), Some(&sbt), None, None, &mut dt)
            .unwrap();
    }
    for i in 0..m {
        for j in 0..n {
            let acc: f64 = (0..k).map(|kk| e4m3(a[i * k + kk]) * e4m3(b[j * k + kk])).sum();
            let want = acc * f64::from(sa[i]) * f64::from(sb[0]);
            let got = f64::from(d[i * n + j]);
            assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "d[{i},{j}] {got} vs {want}");
        }
    }
    // A u16 view cannot claim to be fp8, nor a u8 view f16.
    assert_eq!(
        Tensor::from_fp8_bits(&a, DType::F16, &[2]).unwrap_err().status(),
        Status::DtypeMismatch
    );
    assert_eq!(
        Tensor::from_fp8_bits_with_strides(&a, DType::BF16, &[2], &[1]).unwrap_err().status(),
        Status::DtypeMismatch
    );
}

/// A strided fp8 view (the first k columns of a wider matrix, and B transposed through its
/// strides) gives the compact views' product; a view past its slice is refused.
#[test]
fn gemm_scaled_strided_fp8_views() {
    let (m, n, k, lda) = (3usize, 4usize, 10usize, 16usize);
    let code = |i: usize| -> u8 {
        (((i * 7) % 2) << 7) as u8 | (((6 + i % 3) << 3) as u8) | (i % 8) as u8
    };
    let a_wide: Vec<u8> = (0..m * lda).map(code).collect(); // (m, lda), the first k columns used
    let b_kn: Vec<u8> = (0..k * n).map(|i| code(i + 5)).collect(); // (k, n) row-major
    let ctx = Context::cpu().unwrap();
    let at = Tensor::from_fp8_bits_with_strides(
        &a_wide,
        DType::F8E4M3FN,
        &[m as i64, k as i64],
        &[lda as i64, 1],
    )
    .unwrap();
    // B as (n, k) with trans_b: element (j, kk) at kk * n + j.
    let bt = Tensor::from_fp8_bits_with_strides(
        &b_kn,
        DType::F8E4M3FN,
        &[n as i64, k as i64],
        &[1, n as i64],
    )
    .unwrap();
    let mut d = vec![f32::NAN; m * n];
    let params = GemmParams { trans_b: true, ..Default::default() };
    {
        let mut dt = TensorMut::new(&mut d, &[m as i64, n as i64]).unwrap();
        gemm_scaled(&ctx, None, &params, &at, &bt, None, None, None, None, &mut dt).unwrap();
    }
    for i in 0..m {
        for j in 0..n {
            let want: f64 =
                (0..k).map(|kk| e4m3(a_wide[i * lda + kk]) * e4m3(b_kn[kk * n + j])).sum();
            let got = f64::from(d[i * n + j]);
            assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "d[{i},{j}] {got} vs {want}");
        }
    }
    let past = Tensor::from_fp8_bits_with_strides(
        &b_kn,
        DType::F8E4M3FN,
        &[n as i64, k as i64],
        &[1, n as i64 + 1],
    );
    assert_eq!(past.unwrap_err().status(), Status::ShapeMismatch);
}

/// Hostile view extents: the bounds check must return an error, never panic on (or wrap
/// around) overflowing arithmetic, which would let a 1-element slice pass as a huge tensor.
#[test]
fn huge_strided_views_are_errors_not_panics() {
    let data = [0f32; 1];
    let big = [i64::MAX; 5];
    let r = std::panic::catch_unwind(|| Tensor::with_strides(&data, &big, &big).map(|_| ()));
    let r = r.expect("Tensor::with_strides panicked on overflowing extents");
    assert_eq!(r.unwrap_err().status(), Status::ShapeMismatch);
    // Zero strides address one element however large the shape; numel() must not panic.
    let t = Tensor::with_strides(&data, &[i64::MAX, 4], &[0, 0]).unwrap();
    let n = std::panic::catch_unwind(|| t.numel());
    assert!(n.is_ok(), "numel() panicked on an overflowing element count");
    assert_eq!(n.unwrap(), i64::MAX);
}

/// An empty view has no elements whatever its other extents: numel() is 0 even where the
/// extents before the 0 overflow i64.
#[test]
fn numel_of_an_empty_view_is_zero_in_any_order() {
    let empty: [f32; 0] = [];
    for shape in [[i64::MAX, 2, 0], [0, i64::MAX, 2], [3, 0, 5]] {
        let t = Tensor::new(&empty, &shape).unwrap();
        assert_eq!(t.numel(), 0, "shape {shape:?}");
    }
    let data = [1f32; 6];
    assert_eq!(Tensor::new(&data, &[2, 3]).unwrap().numel(), 6);
}

/// Runs attention with `softmax_scale: Some(scale)` on a small CPU problem, checks that it is
/// refused with InvalidArgument naming softmax_scale and that the output is untouched, and
/// returns the error; `select_kernel` is checked to refuse it the same way.
fn refused_softmax_scale(scale: f32) -> flashkit::Error {
    use flashkit::{attention_select_kernel, AttentionParams};
    let ctx = Context::cpu().unwrap();
    let shape = [1i64, 4, 1, 8];
    let data = vec![0.5f32; 32];
    let mut out_data = vec![7f32; 32];
    let q = Tensor::new(&data, &shape).unwrap();
    let params = AttentionParams { softmax_scale: Some(scale), ..Default::default() };
    {
        let out = TensorMut::new(&mut out_data, &shape).unwrap();
        let e = attention_select_kernel(&ctx, &params, &q, &q, &q, None, &out, None).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("softmax_scale"), "{}", e.message());
    }
    let mut out = TensorMut::new(&mut out_data, &shape).unwrap();
    let e = attention(&ctx, None, &params, &q, &q, &q, None, &mut out, None).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("softmax_scale"), "{}", e.message());
    assert!(out_data.iter().all(|&x| x == 7.0), "output written on error");
    e
}

/// `softmax_scale: Some(NaN)` must be an error, not silently read as the C library's "default"
/// spelling (NaN), which would give a result with 1/sqrt(head_dim) instead.
#[test]
fn nan_softmax_scale_is_an_error() {
    refused_softmax_scale(f32::NAN);
}

/// An infinite `softmax_scale` is refused with advice this crate can follow (`None`), not the C
/// library's, which points at NaN (refused above).
#[test]
fn infinite_softmax_scale_points_at_none() {
    for scale in [f32::INFINITY, f32::NEG_INFINITY] {
        let e = refused_softmax_scale(scale);
        assert!(e.message().contains("None"), "{}", e.message());
        assert!(!e.message().contains("NaN"), "{}", e.message());
    }
}

/// A strides list shorter than the shape must be refused even for an empty view: the C library
/// reads `ndim` strides, past the end of a shorter list (a heap over-read from safe code).
#[test]
fn empty_views_check_their_strides_too() {
    let data = [0f32; 4];
    let e = Tensor::with_strides(&data, &[0, 4, 4], &[1]).unwrap_err();
    assert_eq!(e.status(), Status::ShapeMismatch);
    let mut out = [0f32; 4];
    assert!(TensorMut::with_strides(&mut out, &[4, 0], &[1]).is_err());
    // The stride of an empty view's dimension addresses nothing: any value passes, as in C.
    assert!(Tensor::with_strides(&data, &[0, 4], &[-1, 1]).is_ok());
}

/// A negative stride on a dimension of extent 1 is never used (the C library ignores it, as
/// numpy's and torch's views may carry one); on a dimension that steps it is refused.
#[test]
fn negative_stride_of_a_unit_dimension_is_unused() {
    let ctx = Context::cpu().unwrap();
    let a = [1f32, 2.0, 3.0, 4.0];
    let b = [1f32, 1.0, 1.0, 1.0];
    let at = Tensor::with_strides(&a, &[1, 4], &[-1, 1]).unwrap();
    let bt = Tensor::new(&b, &[4, 1]).unwrap();
    let mut d = [0f32; 1];
    gemm(
        &ctx,
        None,
        &GemmParams::default(),
        &at,
        &bt,
        None,
        None,
        &mut TensorMut::with_strides(&mut d, &[1, 1], &[-5, -3]).unwrap(),
    )
    .unwrap();
    assert_eq!(d, [10.0]);
    let e = Tensor::with_strides(&a, &[2, 2], &[-2, 1]).unwrap_err();
    assert_eq!(e.status(), Status::BadStrides);
}

/// `from_raw` cannot return an error; a strides list that does not match the shape's rank must
/// panic there rather than reach C (which would read past the end of the list).
#[test]
fn raw_views_refuse_strides_of_the_wrong_rank() {
    use flashkit::Device;
    let data = [0f32; 4];
    let r = std::panic::catch_unwind(|| unsafe {
        Tensor::from_raw(data.as_ptr().cast(), Device::Cpu, DType::F32, &[2, 2], Some(&[1]))
    });
    assert!(r.is_err(), "from_raw accepted 1 stride for a rank-2 shape");
    let mut out = [0f32; 4];
    let p = out.as_mut_ptr().cast();
    let r = std::panic::catch_unwind(move || unsafe {
        TensorMut::from_raw(p, Device::Cpu, DType::F32, &[4], Some(&[1, 1]))
    });
    assert!(r.is_err(), "TensorMut::from_raw accepted 2 strides for a rank-1 shape");
}

/// Varlen with max_seqlen_q below the longest sequence: CPU cu_seqlens are always read, so the
/// call is refused naming the argument, and out is left as it was; the exact maxima pass.
#[test]
fn varlen_max_seqlen_below_longest_sequence_is_an_error() {
    use flashkit::{AttentionParams, VarLen};
    let ctx = Context::cpu().unwrap();
    let q_data: Vec<f32> = (0..9 * 2 * 8).map(|i| ((i * 7 % 13) as f32 - 6.0) / 10.0).collect();
    let k_data: Vec<f32> = (0..11 * 2 * 8).map(|i| ((i * 5 % 11) as f32 - 5.0) / 10.0).collect();
    let (cq_data, ck_data) = ([0i32, 4, 4, 9], [0i32, 5, 6, 11]);
    let q = Tensor::new(&q_data, &[9, 2, 8]).unwrap();
    let k = Tensor::new(&k_data, &[11, 2, 8]).unwrap();
    let (cq, ck) = (Tensor::new(&cq_data, &[4]).unwrap(), Tensor::new(&ck_data, &[4]).unwrap());
    let varlen = VarLen { cu_seqlens_q: &cq, cu_seqlens_k: &ck };
    let mut out_data = vec![7f32; 9 * 2 * 8];
    let params = AttentionParams { max_seqlen_q: 4, ..Default::default() };
    {
        let mut out = TensorMut::new(&mut out_data, &[9, 2, 8]).unwrap();
        let e =
            attention(&ctx, None, &params, &q, &k, &k, Some(varlen), &mut out, None).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument);
        assert!(e.message().contains("max_seqlen_q: 4"), "{}", e.message());
    }
    assert!(out_data.iter().all(|&x| x == 7.0), "output written on error");
    let exact = AttentionParams { max_seqlen_q: 5, max_seqlen_k: 5, ..Default::default() };
    let mut out = TensorMut::new(&mut out_data, &[9, 2, 8]).unwrap();
    attention(&ctx, None, &exact, &q, &k, &k, Some(varlen), &mut out, None).unwrap();
}
