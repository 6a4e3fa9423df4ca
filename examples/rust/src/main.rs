//! Runs causal attention and a causal FFT convolution on flashkit's CPU backend and prints the
//! results and the kernel variants used.
use flashkit::{
    attention, attention_select_kernel, AttentionParams, Context, FFTConvMode, FFTConvOptions,
    FFTConvPlan, Tensor, TensorMut,
};

fn main() -> Result<(), flashkit::Error> {
    let ctx = Context::cpu()?;
    let info = ctx.info()?;
    println!(
        "flashkit {} on {} ({} threads)",
        flashkit::version(),
        info.device_name,
        info.num_threads
    );

    // Attention: batch 1, 4 tokens, 2 heads, head_dim 4, causal.
    let shape = [1, 4, 2, 4];
    let n = 32;
    let q: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 10.0).collect();
    let k: Vec<f32> = (0..n).map(|i| ((i * 5 % 13) as f32 - 6.0) / 10.0).collect();
    let v: Vec<f32> = (0..n).map(|i| i as f32 / n as f32).collect();
    let mut out = vec![0.0f32; n];
    let params = AttentionParams {
        causal: true,
        ..Default::default()
    };
    let (qt, kt, vt) = (
        Tensor::new(&q, &shape)?,
        Tensor::new(&k, &shape)?,
        Tensor::new(&v, &shape)?,
    );
    let mut ot = TensorMut::new(&mut out, &shape)?;
    let variant = attention_select_kernel(&ctx, &params, &qt, &kt, &vt, None, &ot, None)?;
    attention(&ctx, None, &params, &qt, &kt, &vt, None, &mut ot, None)?;
    println!("attention [{variant}] out[token][head][:]:");
    for t in 0..4 {
        let row = &out[t * 8..t * 8 + 8];
        println!("  token {t}: {:?} | {:?}", &row[..4], &row[4..]);
    }

    // FFT convolution: 1 batch, 2 channels, 8 steps, 3-tap causal filter.
    let (channels, seqlen, taps) = (2usize, 8usize, 3usize);
    let plan = FFTConvPlan::new(
        &ctx,
        &FFTConvOptions {
            mode: FFTConvMode::Causal,
            channels: channels as i64,
            seqlen: seqlen as i64,
            filter_len: taps as i64,
            ..Default::default()
        },
    )?;
    let u: Vec<f32> = (0..channels * seqlen)
        .map(|i| (i % seqlen) as f32 + 1.0)
        .collect();
    let filt = vec![1.0f32, 0.5, 0.25, /* channel 1 */ 0.0, 1.0, -1.0];
    let mut y = vec![0.0f32; channels * seqlen];
    let ut = Tensor::new(&u, &[1, channels as i64, seqlen as i64])?;
    let kt = Tensor::new(&filt, &[channels as i64, taps as i64])?;
    let mut yt = TensorMut::new(&mut y, &[1, channels as i64, seqlen as i64])?;
    let variant = plan.select_kernel(&ut, &kt, None, None, None, &yt)?;
    plan.forward(None, &ut, &kt, None, None, None, &mut yt)?;
    println!(
        "fftconv [{variant}] (fft_size {}):",
        plan.options()?.fft_size
    );
    for c in 0..channels {
        println!("  channel {c}: {:?}", &y[c * seqlen..(c + 1) * seqlen]);
    }
    Ok(())
}
