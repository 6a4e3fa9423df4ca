//! The shared test vectors (`tests/vectors/`, format in its README.md): every case listed in
//! MANIFEST runs through the safe API on the CPU backend and must match the float64 reference
//! within `|got - expected| <= 1e-4 + 1e-4 * |expected|` (an expected -inf exactly).
//!
//! `FLASHKIT_VECTORS_DIR` overrides the directory.
use std::collections::HashMap;
use std::path::PathBuf;

use flashkit::{
    attention, attention_select_kernel, blockdiag_linear, blockdiag_linear_select_kernel, gemm,
    gemm_select_kernel, monarch, monarch_select_kernel, Activation, AttentionParams, Context,
    FFTConvMode, FFTConvOptions, FFTConvPlan, GemmParams, Tensor, TensorMut, VarLen,
};

const ABS_TOL: f64 = 1e-4;
const REL_TOL: f64 = 1e-4;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("FLASHKIT_VECTORS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/vectors"),
    }
}

// ------------------------------------------------------------------------------------------
// FKV1 reader
// ------------------------------------------------------------------------------------------

#[derive(Debug)]
enum Data {
    F64(Vec<f64>),
    I32(Vec<i32>),
}

#[derive(Debug)]
struct Array {
    shape: Vec<i64>,
    data: Data,
}

impl Array {
    fn f32(&self) -> Vec<f32> {
        match &self.data {
            // Inputs are exact in fp32 by construction (README), so `as` loses nothing.
            Data::F64(v) => v.iter().map(|&x| x as f32).collect(),
            Data::I32(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }

    fn f64(&self) -> &[f64] {
        match &self.data {
            Data::F64(v) => v,
            Data::I32(_) => panic!("expected a float64 array"),
        }
    }

    fn i32s(&self) -> &[i32] {
        match &self.data {
            Data::I32(v) => v,
            Data::F64(_) => panic!("expected an int32 array"),
        }
    }

    fn numel(&self) -> usize {
        self.shape.iter().product::<i64>() as usize
    }
}

struct Reader<'b> {
    bytes: &'b [u8],
    pos: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}

fn read_fkv(bytes: &[u8]) -> Result<HashMap<String, Array>, String> {
    let mut r = Reader { bytes, pos: 0 };
    if r.take(4)? != b"FKV1" {
        return Err("bad magic (not an FKV1 file)".into());
    }
    let count = r.u32()?;
    let mut arrays = HashMap::new();
    for _ in 0..count {
        let name_len = r.u16()? as usize;
        let name = String::from_utf8(r.take(name_len)?.to_vec()).map_err(|e| e.to_string())?;
        let dtype = r.u8()?;
        let rank = r.u8()? as usize;
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            let d = r.i64()?;
            if d < 0 {
                return Err(format!("{name}: negative extent {d}"));
            }
            shape.push(d);
        }
        let n = shape.iter().product::<i64>() as usize; // 1 for a scalar
        let data = match dtype {
            0 => Data::F64(
                r.take(n * 8)?
                    .chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            1 => Data::I32(
                r.take(n * 4)?
                    .chunks_exact(4)
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            other => return Err(format!("{name}: unknown dtype {other}")),
        };
        if arrays.insert(name.clone(), Array { shape, data }).is_some() {
            return Err(format!("duplicate array {name}"));
        }
    }
    if r.pos != bytes.len() {
        return Err(format!("{} trailing bytes", bytes.len() - r.pos));
    }
    Ok(arrays)
}

// ------------------------------------------------------------------------------------------
// Cases
// ------------------------------------------------------------------------------------------

struct Case {
    arrays: HashMap<String, Array>,
}

impl Case {
    fn get(&self, name: &str) -> &Array {
        self.arrays.get(name).unwrap_or_else(|| panic!("missing array '{name}'"))
    }
    fn opt(&self, name: &str) -> Option<&Array> {
        self.arrays.get(name)
    }
    fn int(&self, name: &str) -> i32 {
        let a = self.get(name);
        assert!(a.shape.is_empty(), "{name} should be a scalar");
        a.i32s()[0]
    }
    fn float(&self, name: &str) -> f32 {
        let a = self.get(name);
        assert!(a.shape.is_empty(), "{name} should be a scalar");
        a.f64()[0] as f32
    }
    /// An fp32 input and its shape.
    fn input(&self, name: &str) -> (Vec<f32>, Vec<i64>) {
        let a = self.get(name);
        (a.f32(), a.shape.clone())
    }
    fn opt_input(&self, name: &str) -> Option<(Vec<f32>, Vec<i64>)> {
        self.opt(name).map(|a| (a.f32(), a.shape.clone()))
    }
    /// An output buffer shaped like the expected array, filled with NaN so that anything the
    /// library leaves unwritten fails the comparison.
    fn output(&self, name: &str) -> (Vec<f32>, Vec<i64>) {
        let a = self.get(name);
        (vec![f32::NAN; a.numel()], a.shape.clone())
    }
}

/// Compares `got` with the expected array; returns a description of the first mismatches.
fn compare(name: &str, got: &[f32], expected: &Array) -> Result<(), String> {
    let want = expected.f64();
    if got.len() != want.len() {
        return Err(format!("{name}: {} values, expected {}", got.len(), want.len()));
    }
    let mut bad = Vec::new();
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let g = f64::from(g);
        let ok = if w.is_infinite() {
            g == w
        } else {
            let err = (g - w).abs();
            worst = worst.max(err / (ABS_TOL + REL_TOL * w.abs()));
            err <= ABS_TOL + REL_TOL * w.abs()
        };
        if !ok {
            bad.push(format!("[{i}] got {g} expected {w}"));
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        let n = bad.len();
        bad.truncate(5);
        Err(format!(
            "{name}: {n} of {} values off (shape {:?}): {}",
            got.len(),
            expected.shape,
            bad.join(", ")
        ))
    }
}

fn run_attention(ctx: &Context, c: &Case) -> Result<String, String> {
    let params = AttentionParams {
        softmax_scale: Some(c.float("softmax_scale")),
        causal: c.int("causal") != 0,
        window_size_left: c.int("window_left"),
        window_size_right: c.int("window_right"),
        softcap: c.float("softcap"),
        ..Default::default()
    };
    let (q, qs) = c.input("q");
    let (k, ks) = c.input("k");
    let (v, vs) = c.input("v");
    let (mut out, os) = c.output("out");
    let (mut lse, ls) = c.output("lse");
    let cu = match (c.opt("cu_seqlens_q"), c.opt("cu_seqlens_k")) {
        (Some(a), Some(b)) => Some((a, b)),
        (None, None) => None,
        _ => return Err("only one of cu_seqlens_q/k present".into()),
    };
    let e = |e: flashkit::Error| e.to_string();
    let (qt, kt, vt) = (
        Tensor::new(&q, &qs).map_err(e)?,
        Tensor::new(&k, &ks).map_err(e)?,
        Tensor::new(&v, &vs).map_err(e)?,
    );
    let cu_views = match cu {
        Some((a, b)) => Some((
            Tensor::new(a.i32s(), &a.shape).map_err(e)?,
            Tensor::new(b.i32s(), &b.shape).map_err(e)?,
        )),
        None => None,
    };
    let varlen = cu_views.as_ref().map(|(a, b)| VarLen { cu_seqlens_q: a, cu_seqlens_k: b });
    let variant;
    {
        let mut ot = TensorMut::new(&mut out, &os).map_err(e)?;
        let mut lt = TensorMut::new(&mut lse, &ls).map_err(e)?;
        variant = attention_select_kernel(ctx, &params, &qt, &kt, &vt, varlen, &ot, Some(&lt))
            .map_err(e)?;
        attention(ctx, None, &params, &qt, &kt, &vt, varlen, &mut ot, Some(&mut lt)).map_err(e)?;
    }
    compare("out", &out, c.get("out"))?;
    compare("lse", &lse, c.get("lse"))?;
    Ok(variant.to_string())
}

fn run_gemm(ctx: &Context, c: &Case) -> Result<String, String> {
    let activation = c.int("activation");
    let params = GemmParams {
        trans_a: c.int("trans_a") != 0,
        trans_b: c.int("trans_b") != 0,
        alpha: c.float("alpha"),
        beta: c.float("beta"),
        activation: Activation::from_code(activation)
            .ok_or_else(|| format!("unknown activation {activation}"))?,
    };
    let e = |e: flashkit::Error| e.to_string();
    let (a, as_) = c.input("a");
    let (b, bs) = c.input("b");
    let cc = c.opt_input("c");
    let bias = c.opt_input("bias");
    let (mut d, ds) = c.output("d");
    let at = Tensor::new(&a, &as_).map_err(e)?;
    let bt = Tensor::new(&b, &bs).map_err(e)?;
    let ct = cc.as_ref().map(|(v, s)| Tensor::new(v, s)).transpose().map_err(e)?;
    let biast = bias.as_ref().map(|(v, s)| Tensor::new(v, s)).transpose().map_err(e)?;
    let variant;
    {
        let mut dt = TensorMut::new(&mut d, &ds).map_err(e)?;
        variant = gemm_select_kernel(ctx, &params, &at, &bt, ct.as_ref(), biast.as_ref(), &dt)
            .map_err(e)?;
        gemm(ctx, None, &params, &at, &bt, ct.as_ref(), biast.as_ref(), &mut dt).map_err(e)?;
    }
    compare("d", &d, c.get("d"))?;
    Ok(variant.to_string())
}

fn run_monarch(ctx: &Context, c: &Case) -> Result<String, String> {
    let e = |e: flashkit::Error| e.to_string();
    let (x, xs) = c.input("x");
    let (w1, w1s) = c.input("w1");
    let (w2, w2s) = c.input("w2");
    let bias = c.opt_input("bias");
    let (mut out, os) = c.output("out");
    let (xt, w1t, w2t) = (
        Tensor::new(&x, &xs).map_err(e)?,
        Tensor::new(&w1, &w1s).map_err(e)?,
        Tensor::new(&w2, &w2s).map_err(e)?,
    );
    let biast = bias.as_ref().map(|(v, s)| Tensor::new(v, s)).transpose().map_err(e)?;
    let variant;
    {
        let mut ot = TensorMut::new(&mut out, &os).map_err(e)?;
        variant = monarch_select_kernel(ctx, &xt, &w1t, &w2t, biast.as_ref(), &ot).map_err(e)?;
        monarch(ctx, None, &xt, &w1t, &w2t, biast.as_ref(), &mut ot).map_err(e)?;
    }
    compare("out", &out, c.get("out"))?;
    Ok(variant.to_string())
}

fn run_blockdiag(ctx: &Context, c: &Case) -> Result<String, String> {
    let e = |e: flashkit::Error| e.to_string();
    let (x, xs) = c.input("x");
    let (w, ws) = c.input("w");
    let bias = c.opt_input("bias");
    let (mut out, os) = c.output("out");
    let (xt, wt) = (Tensor::new(&x, &xs).map_err(e)?, Tensor::new(&w, &ws).map_err(e)?);
    let biast = bias.as_ref().map(|(v, s)| Tensor::new(v, s)).transpose().map_err(e)?;
    let variant;
    {
        let mut ot = TensorMut::new(&mut out, &os).map_err(e)?;
        variant = blockdiag_linear_select_kernel(ctx, &xt, &wt, biast.as_ref(), &ot).map_err(e)?;
        blockdiag_linear(ctx, None, &xt, &wt, biast.as_ref(), &mut ot).map_err(e)?;
    }
    compare("out", &out, c.get("out"))?;
    Ok(variant.to_string())
}

/// A view of an optional input.
fn view(o: &Option<(Vec<f32>, Vec<i64>)>) -> flashkit::Result<Option<Tensor<'_>>> {
    o.as_ref().map(|(v, s)| Tensor::new(v, s)).transpose()
}

fn run_fftconv(ctx: &Context, c: &Case) -> Result<String, String> {
    let e = |e: flashkit::Error| e.to_string();
    let mode = c.int("mode");
    let (u, us) = c.input("u");
    let (k, ks) = c.input("k");
    if us.len() != 3 || ks.len() != 2 {
        return Err(format!("u shape {us:?} / k shape {ks:?}: expected rank 3 / 2"));
    }
    let options = FFTConvOptions {
        mode: FFTConvMode::from_code(mode).ok_or_else(|| format!("unknown mode {mode}"))?,
        channels: us[1],
        seqlen: us[2],
        filter_len: ks[1],
        fft_size: i64::from(c.int("fft_size")),
        ..Default::default()
    };
    let plan = FFTConvPlan::new(ctx, &options).map_err(e)?;
    let d = c.opt_input("D");
    let pre = c.opt_input("pregate");
    let post = c.opt_input("postgate");
    let (mut y, ys) = c.output("y");
    let (ut, kt) = (Tensor::new(&u, &us).map_err(e)?, Tensor::new(&k, &ks).map_err(e)?);
    let (dt, pret, postt) = (view(&d).map_err(e)?, view(&pre).map_err(e)?, view(&post).map_err(e)?);
    let variant;
    {
        let mut yt = TensorMut::new(&mut y, &ys).map_err(e)?;
        variant = plan
            .select_kernel(&ut, &kt, dt.as_ref(), pret.as_ref(), postt.as_ref(), &yt)
            .map_err(e)?;
        plan.forward(None, &ut, &kt, dt.as_ref(), pret.as_ref(), postt.as_ref(), &mut yt)
            .map_err(e)?;
    }
    compare("y", &y, c.get("y"))?;
    Ok(variant.to_string())
}

#[test]
fn every_shared_vector_matches_on_cpu() {
    let dir = vectors_dir();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST")).unwrap_or_else(|err| {
        panic!(
            "{}: {err} (the shared vectors live in tests/vectors/)",
            dir.join("MANIFEST").display()
        )
    });
    let ctx = Context::cpu().expect("CPU context");
    let mut ran = 0;
    let mut failures = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(name), Some(op), None) = (fields.next(), fields.next(), fields.next()) else {
            failures.push(format!("MANIFEST line '{line}': expected '<case> <op>'"));
            continue;
        };
        let path = dir.join(format!("{name}.fkv"));
        let result = std::fs::read(&path)
            .map_err(|err| format!("{}: {err}", path.display()))
            .and_then(|bytes| read_fkv(&bytes))
            .and_then(|arrays| {
                let case = Case { arrays };
                match op {
                    "attention" => run_attention(&ctx, &case),
                    "gemm" => run_gemm(&ctx, &case),
                    "monarch" => run_monarch(&ctx, &case),
                    "blockdiag" => run_blockdiag(&ctx, &case),
                    "fftconv" => run_fftconv(&ctx, &case),
                    other => Err(format!("unknown op '{other}': teach this suite about it")),
                }
            });
        ran += 1;
        match result {
            Ok(variant) => eprintln!("vector {name} ({op}): ok [{variant}]"),
            Err(msg) => {
                eprintln!("vector {name} ({op}): FAILED: {msg}");
                failures.push(format!("{name}: {msg}"));
            }
        }
    }
    assert!(ran > 0, "MANIFEST lists no cases");
    assert!(
        failures.is_empty(),
        "{} of {ran} vector cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{ran} vector cases passed");
}

#[test]
fn fkv_reader_rejects_bad_input() {
    assert!(read_fkv(b"FKV2\0\0\0\0").is_err());
    assert!(read_fkv(b"FKV1\x01\0\0\0").is_err()); // truncated
                                                   // One int32 scalar named "a" = 7.
    let mut ok = b"FKV1\x01\0\0\0\x01\0a\x01\x00".to_vec();
    ok.extend_from_slice(&7i32.to_le_bytes());
    let arrays = read_fkv(&ok).unwrap();
    assert_eq!(arrays["a"].i32s(), &[7]);
    ok.push(0);
    assert!(read_fkv(&ok).is_err()); // trailing byte
}
