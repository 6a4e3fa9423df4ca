//! Workspace queries and a caller workspace through `Launch::with_workspace`: each size query
//! returns what the C ABI returns for the same arguments, a forward with a caller workspace
//! matches the float64 reference, and a workspace over a call tensor is refused by name with
//! the output untouched (which shows the workspace reaches C through `Launch`).
use std::ptr;

use flashkit::sys;
use flashkit::{
    attention_workspace_size, blockdiag_linear, blockdiag_linear_workspace_size, monarch,
    monarch_workspace_size, AttentionParams, Context, FFTConvOptions, Launch, Status, Tensor,
    TensorMut,
};

/// Fresh pseudo-random values in [-1, 1) (a 64-bit LCG; no crates here).
fn randn(seed: &mut u64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// float64 block-diagonal linear: out[t, i q + a] = sum_c w[i, a, c] x[t, i p + c] + bias.
fn blockdiag_ref(
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    tokens: usize,
    nb: usize,
    q: usize,
    p: usize,
) -> Vec<f64> {
    let mut out = vec![0f64; tokens * nb * q];
    for t in 0..tokens {
        for i in 0..nb {
            for a in 0..q {
                let mut s = bias[i * q + a] as f64;
                for c in 0..p {
                    s += w[(i * q + a) * p + c] as f64 * x[t * nb * p + i * p + c] as f64;
                }
                out[t * nb * q + i * q + a] = s;
            }
        }
    }
    out
}

#[test]
fn caller_workspace_matches_the_reference_and_is_checked_against_the_call_tensors() {
    let ctx = Context::cpu().unwrap();
    let (tokens, nb, q, p) = (5usize, 3usize, 4usize, 6usize);
    let mut seed = 20261204u64;
    let x = randn(&mut seed, tokens * nb * p);
    let w = randn(&mut seed, nb * q * p);
    let bias = randn(&mut seed, nb * q);
    let xt = Tensor::new(&x, &[tokens as i64, (nb * p) as i64]).unwrap();
    let wt = Tensor::new(&w, &[nb as i64, q as i64, p as i64]).unwrap();
    let bt = Tensor::new(&bias, &[(nb * q) as i64]).unwrap();
    let expected = blockdiag_ref(&x, &w, &bias, tokens, nb, q, p);

    let mut out = vec![f32::NAN; tokens * nb * q];
    let bytes = {
        let ot = TensorMut::new(&mut out, &[tokens as i64, (nb * q) as i64]).unwrap();
        blockdiag_linear_workspace_size(&ctx, &xt, &wt, Some(&bt), &ot).unwrap()
    };
    // A workspace of at least that size (and at least 4 KiB, so that a size of 0 still passes a
    // real buffer through), 256-byte aligned inside the allocation.
    let mut ws = vec![0u8; bytes as usize + 4096 + 256];
    let off = ws.as_ptr().align_offset(256);
    let launch =
        unsafe { Launch::new().with_workspace(ws.as_mut_ptr().add(off).cast(), bytes + 4096) };
    {
        let mut ot = TensorMut::new(&mut out, &[tokens as i64, (nb * q) as i64]).unwrap();
        blockdiag_linear(&ctx, Some(&launch), &xt, &wt, Some(&bt), &mut ot).unwrap();
    }
    for (i, (&got, &want)) in out.iter().zip(&expected).enumerate() {
        assert!(
            (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "element {i}: {got} vs {want}"
        );
    }

    // A workspace over x: refused by name, before anything runs.
    let mut out2 = vec![f32::NAN; tokens * nb * q];
    let over_x = unsafe { Launch::new().with_workspace(x.as_ptr() as *mut _, 64) };
    let err = {
        let mut ot = TensorMut::new(&mut out2, &[tokens as i64, (nb * q) as i64]).unwrap();
        blockdiag_linear(&ctx, Some(&over_x), &xt, &wt, Some(&bt), &mut ot).unwrap_err()
    };
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(
        err.message().contains("workspace") && err.message().contains("overlaps x"),
        "{}",
        err.message()
    );
    assert!(out2.iter().all(|v| v.is_nan()), "output written on failure");

    // The same through the Monarch entry point: a workspace over its output.
    let w2 = randn(&mut seed, nb * q * q);
    let w2t = Tensor::new(&w2, &[nb as i64, q as i64, q as i64]).unwrap();
    let mut out3 = vec![f32::NAN; tokens * nb * q];
    let out3_ptr = out3.as_mut_ptr();
    let over_out = unsafe { Launch::new().with_workspace(out3_ptr.add(3).cast(), 16) };
    let err = {
        let mut ot = TensorMut::new(&mut out3, &[tokens as i64, (nb * q) as i64]).unwrap();
        monarch(&ctx, Some(&over_out), &xt, &wt, &w2t, None, &mut ot).unwrap_err()
    };
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("overlaps out"), "{}", err.message());
    assert!(out3.iter().all(|v| v.is_nan()), "output written on failure");
}

/// A compact f32 CPU DLTensor over `data`.
fn raw_f32(data: &[f32], shape: &mut [i64]) -> sys::DLTensor {
    sys::DLTensor {
        data: data.as_ptr() as *mut _,
        device: sys::DLDevice { device_type: sys::kDLCPU, device_id: 0 },
        ndim: shape.len() as i32,
        dtype: sys::DLDataType { code: sys::kDLFloat as u8, bits: 32, lanes: 1 },
        shape: shape.as_mut_ptr(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    }
}

#[test]
fn size_queries_return_what_c_returns() {
    let ctx = Context::cpu().unwrap();
    let mut seed = 7u64;

    // Attention (batch 2, seqlen_q 3, seqlen_k 5, 2 heads, head_dim 8).
    let (qd, kd) = (randn(&mut seed, 2 * 3 * 2 * 8), randn(&mut seed, 2 * 5 * 2 * 8));
    let mut od = vec![0f32; 2 * 3 * 2 * 8];
    let qt = Tensor::new(&qd, &[2, 3, 2, 8]).unwrap();
    let kt = Tensor::new(&kd, &[2, 5, 2, 8]).unwrap();
    let params = AttentionParams { causal: true, ..Default::default() };
    let rust = {
        let ot = TensorMut::new(&mut od, &[2, 3, 2, 8]).unwrap();
        attention_workspace_size(&ctx, &params, &qt, &kt, &kt, None, &ot, None).unwrap()
    };
    let c = unsafe {
        let mut p: sys::fk_attention_params_t = std::mem::zeroed();
        assert_eq!(sys::fk_attention_params_init(&mut p), sys::FK_SUCCESS);
        p.causal = 1;
        let (mut sq, mut sk, mut so) = ([2i64, 3, 2, 8], [2i64, 5, 2, 8], [2i64, 3, 2, 8]);
        let (q, k, o) = (raw_f32(&qd, &mut sq), raw_f32(&kd, &mut sk), raw_f32(&od, &mut so));
        let mut bytes = u64::MAX;
        let st = sys::fk_attention_workspace_size(
            ctx.as_raw(),
            &p,
            &q,
            &k,
            &k,
            ptr::null(),
            ptr::null(),
            &o,
            ptr::null(),
            &mut bytes,
        );
        assert_eq!(st, sys::FK_SUCCESS);
        bytes
    };
    assert_eq!(rust, c, "attention");

    // Monarch (4 tokens, 2 blocks of 3 x 3, square).
    let (xd, w1d, w2d) =
        (randn(&mut seed, 4 * 6), randn(&mut seed, 2 * 3 * 3), randn(&mut seed, 2 * 3 * 3));
    let mut md = vec![0f32; 4 * 6];
    let (xt, w1t, w2t) = (
        Tensor::new(&xd, &[4, 6]).unwrap(),
        Tensor::new(&w1d, &[2, 3, 3]).unwrap(),
        Tensor::new(&w2d, &[2, 3, 3]).unwrap(),
    );
    let rust = {
        let ot = TensorMut::new(&mut md, &[4, 6]).unwrap();
        monarch_workspace_size(&ctx, &xt, &w1t, &w2t, None, &ot).unwrap()
    };
    let c = unsafe {
        let mut p: sys::fk_monarch_params_t = std::mem::zeroed();
        assert_eq!(sys::fk_monarch_params_init(&mut p), sys::FK_SUCCESS);
        let (mut sx, mut s1, mut s2, mut so) = ([4i64, 6], [2i64, 3, 3], [2i64, 3, 3], [4i64, 6]);
        let (x, a, b, o) = (
            raw_f32(&xd, &mut sx),
            raw_f32(&w1d, &mut s1),
            raw_f32(&w2d, &mut s2),
            raw_f32(&md, &mut so),
        );
        let mut bytes = u64::MAX;
        assert_eq!(
            sys::fk_monarch_workspace_size(
                ctx.as_raw(),
                &p,
                &x,
                &a,
                &b,
                ptr::null(),
                &o,
                &mut bytes
            ),
            sys::FK_SUCCESS
        );
        bytes
    };
    assert_eq!(rust, c, "monarch");

    // FFT convolution (batch 2, 3 channels, seqlen 10, causal).
    let plan = ctx
        .fftconv_plan(&FFTConvOptions { channels: 3, seqlen: 10, ..Default::default() })
        .unwrap();
    let (ud, kd2) = (randn(&mut seed, 2 * 3 * 10), randn(&mut seed, 3 * 10));
    let mut yd = vec![0f32; 2 * 3 * 10];
    let (ut, kt2) = (Tensor::new(&ud, &[2, 3, 10]).unwrap(), Tensor::new(&kd2, &[3, 10]).unwrap());
    let rust = {
        let yt = TensorMut::new(&mut yd, &[2, 3, 10]).unwrap();
        plan.workspace_size(&ut, &kt2, None, None, None, &yt).unwrap()
    };
    let c = unsafe {
        let (mut su, mut sk, mut sy) = ([2i64, 3, 10], [3i64, 10], [2i64, 3, 10]);
        let (u, k, y) = (raw_f32(&ud, &mut su), raw_f32(&kd2, &mut sk), raw_f32(&yd, &mut sy));
        let mut bytes = u64::MAX;
        let st = sys::fk_fftconv_workspace_size(
            plan.as_raw(),
            &u,
            &k,
            ptr::null(),
            ptr::null(),
            ptr::null(),
            &y,
            &mut bytes,
        );
        assert_eq!(st, sys::FK_SUCCESS);
        bytes
    };
    assert_eq!(rust, c, "fftconv");
}
