//! `attention_kvcache` (`fk_attention_kvcache_forward`, 0.5.0) on the CPU backend: a paged case
//! (vLLM's PagedAttention layout, Kwon et al. 2023, Section 4.1) against an f64 loop reference,
//! and the error an out-of-range page gives.
use flashkit::{
    attention_kvcache, attention_kvcache_select_kernel, attention_kvcache_workspace_size,
    AttentionParams, Context, KvCache, Status, Tensor, TensorMut,
};

// batch 3, 2 new queries, 4 query heads over 2 key heads (GQA), head_dim 8, pages of 4 keys,
// at most 3 pages per sequence, a pool of 7 pages.
const B: usize = 3;
const LQ: usize = 2;
const H: usize = 4;
const HK: usize = 2;
const D: usize = 8;
const PAGE: usize = 4;
const MB: usize = 3;
const NB: usize = 7;
const SEQLENS: [i32; B] = [6, 0, 12];
// Shuffled pages; sequences 0 and 2 share page 5 (a common prefix); entries past a sequence's
// last page are never read (99).
const TABLE: [i32; B * MB] = [5, 2, 99, 99, 99, 99, 5, 0, 3];

/// Deterministic values in [-1, 1) (a small LCG; no external crates).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Causal attention of q over each sequence's keys, gathered one by one from the pages.
fn reference(q: &[f32], kc: &[f32], vc: &[f32], table: &[i32]) -> (Vec<f64>, Vec<f64>) {
    let mut out = vec![0f64; B * LQ * H * D];
    let mut lse = vec![f64::NEG_INFINITY; B * H * LQ];
    let scale = 1.0 / (D as f64).sqrt();
    let row = |b: usize, j: usize, kh: usize| {
        ((table[b * MB + j / PAGE] as usize * PAGE + j % PAGE) * HK + kh) * D
    };
    for b in 0..B {
        let n = SEQLENS[b] as i64;
        for i in 0..LQ {
            let pos = n - LQ as i64 + i as i64; // bottom-right aligned
            if pos < 0 {
                continue;
            }
            let seen = pos.min(n - 1) as usize + 1;
            for h in 0..H {
                let kh = h / (H / HK);
                let qo = ((b * LQ + i) * H + h) * D;
                let s: Vec<f64> = (0..seen)
                    .map(|j| {
                        let r = row(b, j, kh);
                        scale * (0..D).map(|d| q[qo + d] as f64 * kc[r + d] as f64).sum::<f64>()
                    })
                    .collect();
                let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let denom: f64 = s.iter().map(|x| (x - m).exp()).sum();
                for (j, x) in s.iter().enumerate() {
                    let p = (x - m).exp() / denom;
                    let r = row(b, j, kh);
                    for d in 0..D {
                        out[qo + d] += p * vc[r + d] as f64;
                    }
                }
                lse[(b * H + h) * LQ + i] = denom.ln() + m;
            }
        }
    }
    (out, lse)
}

#[test]
fn paged_cache_matches_reference() -> flashkit::Result<()> {
    let ctx = Context::cpu()?;
    let q = values(1, B * LQ * H * D);
    let kc = values(2, NB * PAGE * HK * D);
    let vc = values(3, NB * PAGE * HK * D);
    let mut out = vec![f32::NAN; q.len()];
    let mut lse = vec![f32::NAN; B * H * LQ];
    let qs = [B as i64, LQ as i64, H as i64, D as i64];
    let cs = [NB as i64, PAGE as i64, HK as i64, D as i64];
    let (qt, kt, vt) = (Tensor::new(&q, &qs)?, Tensor::new(&kc, &cs)?, Tensor::new(&vc, &cs)?);
    let seqlens = Tensor::new(&SEQLENS, &[B as i64])?;
    let table = Tensor::new(&TABLE, &[B as i64, MB as i64])?;
    let cache = KvCache { cache_seqlens: Some(&seqlens), block_table: Some(&table) };
    let params = AttentionParams { causal: true, ..Default::default() };
    {
        let mut ot = TensorMut::new(&mut out, &qs)?;
        let mut lt = TensorMut::new(&mut lse, &[B as i64, H as i64, LQ as i64])?;
        let name =
            attention_kvcache_select_kernel(&ctx, &params, &qt, &kt, &vt, cache, &ot, Some(&lt))?;
        assert_eq!(name, "cpu.attention");
        let ws =
            attention_kvcache_workspace_size(&ctx, &params, &qt, &kt, &vt, cache, &ot, Some(&lt))?;
        assert_eq!(ws, 0);
        attention_kvcache(&ctx, None, &params, &qt, &kt, &vt, cache, &mut ot, Some(&mut lt))?;
    }
    let (r_out, r_lse) = reference(&q, &kc, &vc, &TABLE);
    for (i, (&a, &e)) in out.iter().zip(&r_out).enumerate() {
        assert!((a as f64 - e).abs() <= 1e-5 * e.abs().max(1.0), "out[{i}] = {a}, expected {e}");
    }
    for (i, (&a, &e)) in lse.iter().zip(&r_lse).enumerate() {
        if e.is_infinite() {
            assert_eq!(a as f64, e, "lse[{i}]");
        } else {
            assert!((a as f64 - e).abs() <= 1e-4 * e.abs().max(1.0), "lse[{i}] = {a}, want {e}");
        }
    }
    // Sequence 1 holds no key: its rows are 0 and lse -inf.
    assert!(out[LQ * H * D..2 * LQ * H * D].iter().all(|&x| x == 0.0));
    Ok(())
}

#[test]
fn out_of_range_page_names_the_entry() -> flashkit::Result<()> {
    let ctx = Context::cpu()?;
    let q = values(4, B * LQ * H * D);
    let kc = values(5, NB * PAGE * HK * D);
    let mut table = TABLE;
    table[2 * MB + 1] = NB as i32; // sequence 2's second page, one past the pool
    let mut out = vec![f32::NAN; q.len()];
    let qs = [B as i64, LQ as i64, H as i64, D as i64];
    let cs = [NB as i64, PAGE as i64, HK as i64, D as i64];
    let (qt, kt) = (Tensor::new(&q, &qs)?, Tensor::new(&kc, &cs)?);
    let seqlens = Tensor::new(&SEQLENS, &[B as i64])?;
    let tt = Tensor::new(&table, &[B as i64, MB as i64])?;
    let cache = KvCache { cache_seqlens: Some(&seqlens), block_table: Some(&tt) };
    let mut ot = TensorMut::new(&mut out, &qs)?;
    let err = attention_kvcache(
        &ctx,
        None,
        &AttentionParams::default(),
        &qt,
        &kt,
        &kt,
        cache,
        &mut ot,
        None,
    )
    .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(err.message(), "block_table: entry [2][1] is 7, outside [0, 6] (a page of k_cache)");
    // max_seqlen_q/k are not used by the KV-cache form and must stay 0.
    let params = AttentionParams { max_seqlen_k: 12, ..Default::default() };
    let err =
        attention_kvcache(&ctx, None, &params, &qt, &kt, &kt, KvCache::default(), &mut ot, None)
            .unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("max_seqlen_k: 12 given"), "{}", err.message());
    drop(ot);
    assert!(out.iter().all(|x| x.is_nan()), "out written on failure");
    Ok(())
}
