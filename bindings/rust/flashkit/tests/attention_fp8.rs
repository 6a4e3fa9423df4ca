//! `attention_fp8`: e4m3fn q, k, v with descale factors against an f64 loop, and its refusals.
use flashkit::{
    attention_fp8, attention_fp8_select_kernel, attention_fp8_workspace_size, AttentionParams,
    Context, DType, Fp8Descales, Status, Tensor, TensorMut,
};

fn e4m3(code: u8) -> f64 {
    let (s, e, m) = (code >> 7, i32::from((code >> 3) & 0xF), f64::from(code & 7));
    let v = if e == 0 { m / 8.0 * 2f64.powi(-6) } else { (1.0 + m / 8.0) * 2f64.powi(e - 7) };
    if s == 1 {
        -v
    } else {
        v
    }
}

fn bf16(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

/// Finite e4m3 codes of moderate magnitude from a small linear congruential generator.
fn codes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = (x >> 33) as u32;
            (((r & 1) << 7) | ((4 + (r >> 1) % 6) << 3) | ((r >> 4) & 7)) as u8
        })
        .collect()
}

#[test]
fn attention_fp8_gqa_causal_matches_f64() {
    let (b, sq, sk, h, hk, d) = (2usize, 3usize, 6usize, 4usize, 2usize, 8usize);
    let (q, k, v) =
        (codes(b * sq * h * d, 1), codes(b * sk * hk * d, 2), codes(b * sk * hk * d, 3));
    let dq = [0.25f32, 0.5, 0.125, 0.75];
    let dk = [0.5f32, 0.3, 0.2, 0.6];
    let dv = [0.1f32, 0.9, 0.4, 0.35];
    let mut out = vec![0xFFFFu16; b * sq * h * d];
    let mut lse = vec![f32::NAN; b * h * sq];
    let ctx = Context::cpu().unwrap();
    let qs = [b as i64, sq as i64, h as i64, d as i64];
    let ks = [b as i64, sk as i64, hk as i64, d as i64];
    let qt = Tensor::from_fp8_bits(&q, DType::F8E4M3FN, &qs).unwrap();
    let kt = Tensor::from_fp8_bits(&k, DType::F8E4M3FN, &ks).unwrap();
    let vt = Tensor::from_fp8_bits(&v, DType::F8E4M3FN, &ks).unwrap();
    let (dqt, dkt, dvt) = (
        Tensor::new(&dq, &[2, 2]).unwrap(),
        Tensor::new(&dk, &[2, 2]).unwrap(),
        Tensor::new(&dv, &[2, 2]).unwrap(),
    );
    let descales =
        Fp8Descales { descale_q: Some(&dqt), descale_k: Some(&dkt), descale_v: Some(&dvt) };
    let params = AttentionParams { causal: true, ..Default::default() };
    {
        let mut ot = TensorMut::from_bits(&mut out, DType::BF16, &qs).unwrap();
        let mut lt = TensorMut::new(&mut lse, &[b as i64, h as i64, sq as i64]).unwrap();
        let name = attention_fp8_select_kernel(
            &ctx,
            &params,
            &qt,
            &kt,
            &vt,
            descales,
            None,
            &ot,
            Some(&lt),
        )
        .unwrap();
        assert_eq!(name, "cpu.attention+fp8_dequant");
        let ws =
            attention_fp8_workspace_size(&ctx, &params, &qt, &kt, &vt, descales, None, &ot, None);
        assert_eq!(ws, Ok(0));
        attention_fp8(&ctx, None, &params, &qt, &kt, &vt, descales, None, &mut ot, Some(&mut lt))
            .unwrap();
    }
    let scale = 1.0 / (d as f64).sqrt();
    for bi in 0..b {
        for hi in 0..h {
            let g = hi / (h / hk);
            let (fq, fk, fv) = (
                f64::from(dq[bi * hk + g]),
                f64::from(dk[bi * hk + g]),
                f64::from(dv[bi * hk + g]),
            );
            for i in 0..sq {
                let last = i + sk - sq; // causal, bottom-right aligned
                let s: Vec<f64> = (0..=last)
                    .map(|j| {
                        (0..d)
                            .map(|e| {
                                e4m3(q[((bi * sq + i) * h + hi) * d + e])
                                    * fq
                                    * e4m3(k[((bi * sk + j) * hk + g) * d + e])
                                    * fk
                            })
                            .sum::<f64>()
                            * scale
                    })
                    .collect();
                let mx = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let den: f64 = s.iter().map(|x| (x - mx).exp()).sum();
                for e in 0..d {
                    let want: f64 = (0..=last)
                        .map(|j| {
                            (s[j] - mx).exp() / den * e4m3(v[((bi * sk + j) * hk + g) * d + e]) * fv
                        })
                        .sum();
                    let got = bf16(out[((bi * sq + i) * h + hi) * d + e]);
                    assert!(
                        (got - want).abs() <= 2e-2 * want.abs().max(1.0),
                        "out[{bi},{i},{hi},{e}] {got} vs {want}"
                    );
                }
                let got_lse = f64::from(lse[(bi * h + hi) * sq + i]);
                let want_lse = mx + den.ln();
                assert!((got_lse - want_lse).abs() <= 2e-2 * want_lse.abs().max(1.0));
            }
        }
    }
}

#[test]
fn attention_fp8_refuses_wrong_dtypes_by_name() {
    let q = codes(2 * 2 * 8, 9);
    let ctx = Context::cpu().unwrap();
    let qt = Tensor::from_fp8_bits(&q, DType::F8E4M3FN, &[1, 2, 2, 8]).unwrap();
    let mut out = vec![f32::NAN; 32];
    let mut ot = TensorMut::new(&mut out, &[1, 2, 2, 8]).unwrap();
    let err = attention_fp8(
        &ctx,
        None,
        &AttentionParams::default(),
        &qt,
        &qt,
        &qt,
        Fp8Descales::default(),
        None,
        &mut ot,
        None,
    )
    .unwrap_err();
    assert_eq!(err.status(), Status::DtypeMismatch);
    assert!(err.message().starts_with("out:"), "{}", err.message());
    assert!(out.iter().all(|x| x.is_nan()), "out written on failure");
    let e5 = Tensor::from_fp8_bits(&q, DType::F8E5M2, &[1, 2, 2, 8]).unwrap();
    let mut ob = vec![0u16; 32];
    let mut obt = TensorMut::from_bits(&mut ob, DType::BF16, &[1, 2, 2, 8]).unwrap();
    let err = attention_fp8(
        &ctx,
        None,
        &AttentionParams::default(),
        &e5,
        &e5,
        &e5,
        Fp8Descales::default(),
        None,
        &mut obt,
        None,
    )
    .unwrap_err();
    assert_eq!(err.status(), Status::DtypeMismatch);
    assert!(err.message().contains("float8_e4m3fn"), "{}", err.message());
}
