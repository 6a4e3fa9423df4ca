//! Attention, GEMM, Monarch and block-diagonal linear.

use std::os::raw::c_char;

use flashkit_sys as sys;

use crate::context::{Context, Launch};
use crate::error::{check, static_str, Error, Result, Status};
use crate::tensor::{opt_ptr, Tensor, TensorMut};

/// Attention options (`fk_attention_params_t`). `Default` gives the library's defaults
/// (`fk_attention_params_init()`): scale `1/sqrt(head_dim)`, not causal, no window, no softcap.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionParams {
    /// Multiplier of `Q K^T`; `None` means `1 / sqrt(head_dim)`. Must be finite.
    pub softmax_scale: Option<f32>,
    /// Causal mask, aligned to the bottom-right corner when `seqlen_q != seqlen_k`.
    pub causal: bool,
    /// Keys allowed left of the diagonal; -1 is unbounded. Must be >= -1.
    pub window_size_left: i32,
    /// Keys allowed right of the diagonal; -1 is unbounded (0 when `causal`). Must be >= -1.
    pub window_size_right: i32,
    /// Score cap `softcap * tanh(s / softcap)` (Gemma 2); 0 disables it. Must be >= 0, finite.
    pub softcap: f32,
    /// Varlen form: the longest query sequence, FlashAttention's `max_seqlen_q`; 0 (default):
    /// not given, the library reads `cu_seqlens_q`, which on the CUDA backend waits for the
    /// stream. Given, device `cu_seqlens` are trusted (entries clamped inside the tensors; rows
    /// past `max_seqlen_q` of a longer sequence are not written); on the CPU they are still
    /// checked and a value below the longest sequence is `InvalidArgument`. Must be >= 0.
    pub max_seqlen_q: i64,
    /// The same for the keys (`max_seqlen_k`).
    pub max_seqlen_k: i64,
}

impl Default for AttentionParams {
    fn default() -> Self {
        let raw = raw_attention_params();
        AttentionParams {
            softmax_scale: if raw.softmax_scale.is_nan() { None } else { Some(raw.softmax_scale) },
            causal: raw.causal != 0,
            window_size_left: raw.window_size_left,
            window_size_right: raw.window_size_right,
            softcap: raw.softcap,
            max_seqlen_q: raw.max_seqlen_q,
            max_seqlen_k: raw.max_seqlen_k,
        }
    }
}

fn raw_attention_params() -> sys::fk_attention_params_t {
    // SAFETY: plain-old-data; the init function fills every field.
    let mut raw: sys::fk_attention_params_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { sys::fk_attention_params_init(&mut raw) };
    raw
}

impl AttentionParams {
    fn to_raw(self) -> Result<sys::fk_attention_params_t> {
        // The C library spells "default" as NaN: an explicit NaN must not silently become it.
        if let Some(scale) = self.softmax_scale.filter(|s| s.is_nan()) {
            return Err(Error::local(
                Status::InvalidArgument,
                format!("params.softmax_scale: Some({scale}) (use None for 1/sqrt(head_dim))"),
            ));
        }
        // C's own message for an infinite scale points at NaN, which this crate refuses above.
        if let Some(scale) = self.softmax_scale.filter(|s| s.is_infinite()) {
            return Err(Error::local(
                Status::InvalidArgument,
                format!(
                    "params.softmax_scale: Some({scale}) must be finite (None selects \
                     1/sqrt(head_dim))"
                ),
            ));
        }
        let mut raw = raw_attention_params();
        raw.softmax_scale = self.softmax_scale.unwrap_or(f32::NAN);
        raw.causal = i32::from(self.causal);
        raw.window_size_left = self.window_size_left;
        raw.window_size_right = self.window_size_right;
        raw.softcap = self.softcap;
        raw.max_seqlen_q = self.max_seqlen_q;
        raw.max_seqlen_k = self.max_seqlen_k;
        Ok(raw)
    }
}

/// Packed variable-length sequences for [`attention`]: `cu_seqlens_q` and `cu_seqlens_k`, int32
/// `(batch + 1,)`, contiguous, starting at 0, non-decreasing, ending at `total_q` / `total_k`.
#[derive(Clone, Copy, Debug)]
pub struct VarLen<'t, 'a> {
    /// Cumulative query sequence lengths.
    pub cu_seqlens_q: &'t Tensor<'a>,
    /// Cumulative key sequence lengths.
    pub cu_seqlens_k: &'t Tensor<'a>,
}

type Variant = *const c_char;

/// Attention forward: `out = softmax(mask(softcap(scale Q K^T))) V`, without materialising the
/// score matrix (FlashAttention).
///
/// Shapes (batched form, `varlen = None`):
/// - `q`, `out`: `(batch, seqlen_q, nheads, head_dim)`
/// - `k`, `v`: `(batch, seqlen_k, nheads_k, head_dim)`
/// - `lse`: `(batch, nheads, seqlen_q)`, f32, optional: each row's log-sum-exp, natural log,
///   of its masked (softcapped) scaled scores, `ln(sum_j exp(s_j))`
///
/// Variable-length form (`varlen = Some(..)`): `q`, `out` `(total_q, nheads, head_dim)`, `k`,
/// `v` `(total_k, nheads_k, head_dim)`, `lse` `(nheads, total_q)`.
///
/// dtypes: `q`, `k`, `v`, `out` share one of f32, f16, bf16; `lse` is f32. `head_dim` is 1 to
/// 256; `nheads % nheads_k == 0` (GQA/MQA: query head `h` reads key / value head
/// `h / (nheads / nheads_k)`); the last dimension must be contiguous. `out` must
/// not overlap an input, nor `lse` an input or `out`. A query row that sees no key gives
/// `out = 0` and `lse = -inf`.
///
/// # Errors
/// As `fk_attention_forward()`: [`Status::ShapeMismatch`](crate::Status::ShapeMismatch) (ranks,
/// extents that disagree, `head_dim` 0 or above 256, `nheads % nheads_k != 0`),
/// `DtypeMismatch`, `BadStrides`, `InvalidArgument` (window < -1, bad softcap or scale,
/// malformed `cu_seqlens`, an output overlapping an input), `WrongDevice`, `Misaligned`,
/// `OutOfMemory`, `Device`. The message names the argument, e.g. `"q: head_dim 300 > 256"`;
/// the outputs are then untouched.
#[allow(clippy::too_many_arguments)]
pub fn attention(
    context: &Context,
    launch: Option<&Launch>,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &mut TensorMut<'_>,
    lse: Option<&mut TensorMut<'_>>,
) -> Result<()> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k.as_dlpack(), v.as_dlpack(), out.as_dlpack());
    let cu_q = varlen.map(|s| s.cu_seqlens_q.as_dlpack());
    let cu_k = varlen.map(|s| s.cu_seqlens_k.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    // SAFETY: every DLTensor describes memory its view borrows for the whole call (checked
    // against its slice, or vouched for by an unsafe constructor); outputs are exclusive
    // borrows; the context is alive.
    check(unsafe {
        sys::fk_attention_forward(
            context.as_raw(),
            Launch::ptr(launch),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&cu_q),
            opt_ptr(&cu_k),
            &o,
            opt_ptr(&lse),
        )
    })
}

/// Names the kernel variant [`attention`] would run for these arguments (e.g.
/// `"cpu.attention"`); validates exactly as it does and runs nothing.
#[allow(clippy::too_many_arguments)]
pub fn attention_select_kernel(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<&'static str> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k.as_dlpack(), v.as_dlpack(), out.as_dlpack());
    let cu_q = varlen.map(|s| s.cu_seqlens_q.as_dlpack());
    let cu_k = varlen.map(|s| s.cu_seqlens_k.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    let mut name: Variant = std::ptr::null();
    // SAFETY: as in `attention`; nothing is written but `name`.
    check(unsafe {
        sys::fk_attention_select_kernel(
            context.as_raw(),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&cu_q),
            opt_ptr(&cu_k),
            &o,
            opt_ptr(&lse),
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`attention`] on these arguments allocates nothing
/// (`fk_attention_workspace_size`; nonzero when the CUDA backend splits the keys of a decode-like
/// call into chunks); validates like it.
#[allow(clippy::too_many_arguments)]
pub fn attention_workspace_size(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<u64> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k.as_dlpack(), v.as_dlpack(), out.as_dlpack());
    let cu_q = varlen.map(|s| s.cu_seqlens_q.as_dlpack());
    let cu_k = varlen.map(|s| s.cu_seqlens_k.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    let mut bytes: u64 = 0;
    // SAFETY: as in `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_attention_workspace_size(
            context.as_raw(),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&cu_q),
            opt_ptr(&cu_k),
            &o,
            opt_ptr(&lse),
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

/// The descale factors of [`attention_fp8`]: f32 `(batch, nheads_k)` each, `None` for factor 1.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fp8Descales<'t, 'a> {
    /// Factor of query head `h` of sequence `b`: `descale_q[b, h / (nheads / nheads_k)]` (one
    /// per GQA group, as FlashAttention-3).
    pub descale_q: Option<&'t Tensor<'a>>,
    /// Factor of key head `g` of sequence `b`.
    pub descale_k: Option<&'t Tensor<'a>>,
    /// Factor of value head `g` of sequence `b`.
    pub descale_v: Option<&'t Tensor<'a>>,
}

/// The raw C arguments of the three `attention_fp8*` calls, built once per call.
struct Fp8Raw {
    params: sys::fk_attention_params_t,
    q: sys::DLTensor,
    k: sys::DLTensor,
    v: sys::DLTensor,
    descale: [Option<sys::DLTensor>; 3],
    cu_q: Option<sys::DLTensor>,
    cu_k: Option<sys::DLTensor>,
    out: sys::DLTensor,
    lse: Option<sys::DLTensor>,
}

impl Fp8Raw {
    #[allow(clippy::too_many_arguments)]
    fn new(
        params: &AttentionParams,
        q: &Tensor<'_>,
        k: &Tensor<'_>,
        v: &Tensor<'_>,
        descales: Fp8Descales<'_, '_>,
        varlen: Option<VarLen<'_, '_>>,
        out: sys::DLTensor,
        lse: Option<sys::DLTensor>,
    ) -> Result<Fp8Raw> {
        let d = |t: Option<&Tensor<'_>>| t.map(|t| t.as_dlpack());
        Ok(Fp8Raw {
            params: params.to_raw()?,
            q: q.as_dlpack(),
            k: k.as_dlpack(),
            v: v.as_dlpack(),
            descale: [d(descales.descale_q), d(descales.descale_k), d(descales.descale_v)],
            cu_q: varlen.map(|s| s.cu_seqlens_q.as_dlpack()),
            cu_k: varlen.map(|s| s.cu_seqlens_k.as_dlpack()),
            out,
            lse,
        })
    }
}

/// Attention forward on float8 e4m3fn `q`, `k`, `v` ([`DType::F8E4M3FN`](crate::DType), built
/// with [`Tensor::from_fp8_bits`]) with per-(sequence, kv-head) descale factors, bf16 output:
/// FlashAttention-3's FP8 forward contract (Shah et al. 2024, Section 3.3);
/// `fk_attention_fp8_forward` (added in 0.6.0).
///
/// Computes [`attention`] on `descale_q[b, h / (nheads / nheads_k)] * q[b, :, h]`,
/// `descale_k[b, g] * k[b, :, g]` and `descale_v[b, g] * v[b, :, g]`. On Hopper GPUs (variant
/// `"cuda.sm90.attention_fp8"`, 0.7.0, with the AUTO or SM90 kernel family; batched calls,
/// head_dim 128 or 256, no softcap, a positive softmax scale, `q`, `k` and `out` 16-byte aligned,
/// `q` and `k` strides multiples of 16 elements;
/// `FLASHKIT_ATTENTION_FP8_DEQUANT=1` in the environment turns it off) with fp8 tensor-core
/// arithmetic as in FlashAttention-3: P is rounded to e4m3 for the P V product, its one
/// approximation beyond fp32 arithmetic; scratch: none at head_dim 128, and at head_dim 256
/// with few query rows per key (the kernel transposes `v`'s tiles in shared memory; a `v` off
/// the 16-byte rule is copied first), else one transposed copy of `v` (the rule:
/// `fk_attention_fp8_forward` in flashkit.h). Every other
/// call (`"...+fp8_dequant"`): rounded once to bf16 and run on the bf16 kernels (bit for bit
/// what [`attention`] gives on contiguous bf16 tensors of those values with the same `out` and
/// `lse` layouts; on a GPU one extra pass over `q`, `k`, `v` and scratch of 2 bytes per element
/// of each, see [`attention_fp8_workspace_size`]). Shapes, forms (batched or [`VarLen`]) and
/// options as [`attention`]; each descale tensor is f32 `(batch, nheads_k)` with any
/// non-negative strides (`batch` = the number of sequences in the varlen form); `out` is bf16
/// and must not overlap an input, the descale tensors included.
///
/// # Errors
/// As [`attention`]; `DtypeMismatch` for `q`, `k`, `v` not e4m3fn (e5m2 included), a descale
/// tensor not f32, `out` not bf16; `ShapeMismatch` for a descale tensor not `(batch,
/// nheads_k)`. The outputs are then untouched.
#[allow(clippy::too_many_arguments)]
pub fn attention_fp8(
    context: &Context,
    launch: Option<&Launch>,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    descales: Fp8Descales<'_, '_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &mut TensorMut<'_>,
    lse: Option<&mut TensorMut<'_>>,
) -> Result<()> {
    let r = Fp8Raw::new(
        params,
        q,
        k,
        v,
        descales,
        varlen,
        out.as_dlpack(),
        lse.map(|t| t.as_dlpack()),
    )?;
    // SAFETY: as in `attention`.
    check(unsafe {
        sys::fk_attention_fp8_forward(
            context.as_raw(),
            Launch::ptr(launch),
            &r.params,
            &r.q,
            &r.k,
            &r.v,
            opt_ptr(&r.descale[0]),
            opt_ptr(&r.descale[1]),
            opt_ptr(&r.descale[2]),
            opt_ptr(&r.cu_q),
            opt_ptr(&r.cu_k),
            &r.out,
            opt_ptr(&r.lse),
        )
    })
}

/// Names the kernel variant [`attention_fp8`] would run: `"cuda.sm90.attention_fp8"`, or the
/// bf16 kernel's name with `"+fp8_dequant"` (e.g. `"cpu.attention+fp8_dequant"`); validates
/// exactly as it does.
#[allow(clippy::too_many_arguments)]
pub fn attention_fp8_select_kernel(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    descales: Fp8Descales<'_, '_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<&'static str> {
    let r = Fp8Raw::new(
        params,
        q,
        k,
        v,
        descales,
        varlen,
        out.as_dlpack(),
        lse.map(|t| t.as_dlpack()),
    )?;
    let mut name: Variant = std::ptr::null();
    // SAFETY: as in `attention`; nothing is written but `name`.
    check(unsafe {
        sys::fk_attention_fp8_select_kernel(
            context.as_raw(),
            &r.params,
            &r.q,
            &r.k,
            &r.v,
            opt_ptr(&r.descale[0]),
            opt_ptr(&r.descale[1]),
            opt_ptr(&r.descale[2]),
            opt_ptr(&r.cu_q),
            opt_ptr(&r.cu_k),
            &r.out,
            opt_ptr(&r.lse),
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`attention_fp8`] allocates nothing
/// (`fk_attention_fp8_workspace_size`: for `"cuda.sm90.attention_fp8"` nothing where the kernel
/// transposes `v` in shared memory (head_dim 128; head_dim 256 with few query rows per key, as
/// `fk_attention_fp8_forward` documents) unless `v` is off the 16-byte rule (then a contiguous
/// copy of it), the transposed copy of `v` otherwise; else on a GPU the bf16 copies of `q`, `k`, `v` plus what the bf16 call needs; 0 on the
/// CPU backend); validates like it.
#[allow(clippy::too_many_arguments)]
pub fn attention_fp8_workspace_size(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k: &Tensor<'_>,
    v: &Tensor<'_>,
    descales: Fp8Descales<'_, '_>,
    varlen: Option<VarLen<'_, '_>>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<u64> {
    let r = Fp8Raw::new(
        params,
        q,
        k,
        v,
        descales,
        varlen,
        out.as_dlpack(),
        lse.map(|t| t.as_dlpack()),
    )?;
    let mut bytes: u64 = 0;
    // SAFETY: as in `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_attention_fp8_workspace_size(
            context.as_raw(),
            &r.params,
            &r.q,
            &r.k,
            &r.v,
            opt_ptr(&r.descale[0]),
            opt_ptr(&r.descale[1]),
            opt_ptr(&r.descale[2]),
            opt_ptr(&r.cu_q),
            opt_ptr(&r.cu_k),
            &r.out,
            opt_ptr(&r.lse),
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

/// The KV cache of [`attention_kvcache`]: `cache_seqlens` and `block_table`, each optional.
#[derive(Clone, Copy, Debug, Default)]
pub struct KvCache<'t, 'a> {
    /// `None` (every sequence holds `capacity` keys) or int32 `(batch,)`, contiguous, in `q`'s
    /// memory: the number of valid keys of each sequence (FlashAttention's `cache_seqlens`,
    /// vLLM's `seq_lens`), each in `[0, capacity]`.
    pub cache_seqlens: Option<&'t Tensor<'a>>,
    /// `None` (contiguous cache) or int32 `(batch, max_blocks_per_seq)`, last dimension
    /// contiguous: the page indices of each sequence, each in `[0, num_blocks)`. Only the first
    /// `ceil(cache_seqlens[b] / page_block_size)` entries of row `b` are read; pages may be
    /// shared between sequences (prefix caching).
    pub block_table: Option<&'t Tensor<'a>>,
}

/// Attention of new queries over a KV cache, contiguous or paged (`fk_attention_kvcache_forward`,
/// FlashAttention's `flash_attn_with_kvcache` contract; added in 0.5.0). The paged layout is
/// vLLM's PagedAttention (Kwon et al. 2023, Section 4.1): key `n` of sequence `b` is row
/// `n % page_block_size` of page `block_table[b][n / page_block_size]`.
///
/// Shapes:
/// - `q`, `out`: `(batch, seqlen_q, nheads, head_dim)`
/// - `k_cache`, `v_cache` without `block_table`: `(batch, seqlen_cache, nheads_k, head_dim)`
///   (capacity `seqlen_cache`); with it, the page pool `(num_blocks, page_block_size, nheads_k,
///   head_dim)` (capacity `max_blocks_per_seq * page_block_size`)
/// - `cache.cache_seqlens`: int32 `(batch,)`; `cache.block_table`: int32
///   `(batch, max_blocks_per_seq)`
/// - `lse`: `(batch, nheads, seqlen_q)`, f32, optional
///
/// The cache is only read (appending the new tokens' keys and values is the caller's). Masks,
/// softcap, GQA/MQA, dtypes and strides follow [`attention`]'s batched form with
/// `seqlen_k = cache_seqlens[b]`: query row `i` of sequence `b` sits at key position
/// `cache_seqlens[b] - seqlen_q + i`. A row that sees no key gives `out = 0`, `lse = -inf`.
/// `params.max_seqlen_q` / `max_seqlen_k` must stay 0.
///
/// # Errors
/// As [`attention`], plus: `ShapeMismatch` (cache ranks or extents, `cache_seqlens` not
/// `(batch,)`, `block_table` not `(batch, max_blocks_per_seq)`), `DtypeMismatch`
/// (`cache_seqlens` or `block_table` not int32), `BadStrides` (their last dimension not
/// contiguous), `InvalidArgument` (on the CPU backend an entry out of range, named with its
/// index, e.g. `"block_table: entry [0][0] is 4, outside [0, 3] (a page of k_cache)"`;
/// `max_seqlen_q/k` not 0). On the CUDA backend the entries are not checked but clamped inside
/// the cache.
#[allow(clippy::too_many_arguments)]
pub fn attention_kvcache(
    context: &Context,
    launch: Option<&Launch>,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k_cache: &Tensor<'_>,
    v_cache: &Tensor<'_>,
    cache: KvCache<'_, '_>,
    out: &mut TensorMut<'_>,
    lse: Option<&mut TensorMut<'_>>,
) -> Result<()> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k_cache.as_dlpack(), v_cache.as_dlpack(), out.as_dlpack());
    let seqlens = cache.cache_seqlens.map(|t| t.as_dlpack());
    let table = cache.block_table.map(|t| t.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    // SAFETY: as in `attention`.
    check(unsafe {
        sys::fk_attention_kvcache_forward(
            context.as_raw(),
            Launch::ptr(launch),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&seqlens),
            opt_ptr(&table),
            &o,
            opt_ptr(&lse),
        )
    })
}

/// Names the kernel variant [`attention_kvcache`] would run for these arguments (e.g.
/// `"cpu.attention"`); validates exactly as it does and runs nothing.
#[allow(clippy::too_many_arguments)]
pub fn attention_kvcache_select_kernel(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k_cache: &Tensor<'_>,
    v_cache: &Tensor<'_>,
    cache: KvCache<'_, '_>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<&'static str> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k_cache.as_dlpack(), v_cache.as_dlpack(), out.as_dlpack());
    let seqlens = cache.cache_seqlens.map(|t| t.as_dlpack());
    let table = cache.block_table.map(|t| t.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    let mut name: Variant = std::ptr::null();
    // SAFETY: as in `attention`; nothing is written but `name`.
    check(unsafe {
        sys::fk_attention_kvcache_select_kernel(
            context.as_raw(),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&seqlens),
            opt_ptr(&table),
            &o,
            opt_ptr(&lse),
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`attention_kvcache`] on these arguments allocates nothing
/// (`fk_attention_kvcache_workspace_size`); validates like it.
#[allow(clippy::too_many_arguments)]
pub fn attention_kvcache_workspace_size(
    context: &Context,
    params: &AttentionParams,
    q: &Tensor<'_>,
    k_cache: &Tensor<'_>,
    v_cache: &Tensor<'_>,
    cache: KvCache<'_, '_>,
    out: &TensorMut<'_>,
    lse: Option<&TensorMut<'_>>,
) -> Result<u64> {
    let p = params.to_raw()?;
    let (q, k, v, o) = (q.as_dlpack(), k_cache.as_dlpack(), v_cache.as_dlpack(), out.as_dlpack());
    let seqlens = cache.cache_seqlens.map(|t| t.as_dlpack());
    let table = cache.block_table.map(|t| t.as_dlpack());
    let lse = lse.map(|t| t.as_dlpack());
    let mut bytes: u64 = 0;
    // SAFETY: as in `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_attention_kvcache_workspace_size(
            context.as_raw(),
            &p,
            &q,
            &k,
            &v,
            opt_ptr(&seqlens),
            opt_ptr(&table),
            &o,
            opt_ptr(&lse),
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

/// Elementwise activation applied last in a GEMM epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
    GeluTanh,
    /// Exact GELU: `0.5 x (1 + erf(x / sqrt(2)))`.
    GeluErf,
}

impl Activation {
    fn code(self) -> i32 {
        (match self {
            Activation::None => sys::FK_ACTIVATION_NONE,
            Activation::Relu => sys::FK_ACTIVATION_RELU,
            Activation::GeluTanh => sys::FK_ACTIVATION_GELU_TANH,
            Activation::GeluErf => sys::FK_ACTIVATION_GELU_ERF,
        }) as i32
    }

    /// The activation for a C `fk_activation_t` value.
    pub fn from_code(code: i32) -> Option<Activation> {
        match u32::try_from(code).ok()? {
            sys::FK_ACTIVATION_NONE => Some(Activation::None),
            sys::FK_ACTIVATION_RELU => Some(Activation::Relu),
            sys::FK_ACTIVATION_GELU_TANH => Some(Activation::GeluTanh),
            sys::FK_ACTIVATION_GELU_ERF => Some(Activation::GeluErf),
            _ => None,
        }
    }
}

/// GEMM options (`fk_gemm_params_t`). `Default` gives the library's defaults
/// (`fk_gemm_params_init()`): no transposes, alpha 1, beta 0, no activation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmParams {
    /// `a` is stored `(K, M)` and used transposed.
    pub trans_a: bool,
    /// `b` is stored `(N, K)` and used transposed.
    pub trans_b: bool,
    /// Scale of the product; finite. `0.0` reads neither `a` nor `b` (BLAS convention).
    pub alpha: f32,
    /// Scale of `c`; finite. Nonzero requires `c`.
    pub beta: f32,
    /// Epilogue activation.
    pub activation: Activation,
}

fn raw_gemm_params() -> sys::fk_gemm_params_t {
    // SAFETY: plain-old-data; the init function fills every field.
    let mut raw: sys::fk_gemm_params_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { sys::fk_gemm_params_init(&mut raw) };
    raw
}

impl Default for GemmParams {
    fn default() -> Self {
        let raw = raw_gemm_params();
        GemmParams {
            trans_a: raw.trans_a != 0,
            trans_b: raw.trans_b != 0,
            alpha: raw.alpha,
            beta: raw.beta,
            activation: Activation::from_code(raw.activation).unwrap_or_default(),
        }
    }
}

impl GemmParams {
    fn to_raw(self) -> sys::fk_gemm_params_t {
        let mut raw = raw_gemm_params();
        raw.trans_a = i32::from(self.trans_a);
        raw.trans_b = i32::from(self.trans_b);
        raw.alpha = self.alpha;
        raw.beta = self.beta;
        raw.activation = self.activation.code();
        raw
    }
}

/// GEMM with fused epilogue: `d = activation(alpha * op(a) @ op(b) + beta * c + bias)`,
/// accumulated in f32.
///
/// - `a`: `(M, K)`, or `(K, M)` with `trans_a`; optionally `(batch, ., .)`.
/// - `b`: `(K, N)`, or `(N, K)` with `trans_b`; optionally batched.
/// - `c`: optional `(M, N)` or `(batch, M, N)`, read only when `beta != 0` (then required).
/// - `bias`: optional `(N,)`, contiguous, f32, f16 or bf16 (fp8 is `NotSupported`).
/// - `d`: `(M, N)` or `(batch, M, N)`. A rank-2 operand is broadcast over the batch.
/// - Strides: any non-negative, in elements (row- or column-major, padded). `d` must not
///   overlap `a`, `b` or `bias`, and may overlap `c` only as the exact same view (in place);
///   no two of its elements may share an address. Safe Rust cannot hold a [`Tensor`] and a
///   [`TensorMut`] over one slice at once, so an in-place call builds `c` with the unsafe
///   [`Tensor::from_raw`] over `d`'s memory (same shape and strides). Overlap is judged on address ranges
///   (`flashkit.h`, "Data types and tensors").
///
/// dtypes: `a`, `b` share one of f32/f16/bf16; `c`, `d` share one. `K = 0` writes
/// `activation(beta * c + bias)`.
///
/// # Errors
/// As `fk_gemm()`: `ShapeMismatch`, `DtypeMismatch`, `BadStrides`, `InvalidArgument` (beta
/// without `c`, non-finite alpha/beta, `d` overlapping an input), `WrongDevice`, `Misaligned`,
/// `OutOfMemory`, `Device`. On an error `d` is untouched.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    context: &Context,
    launch: Option<&Launch>,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &mut TensorMut<'_>,
) -> Result<()> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_gemm(
            context.as_raw(),
            Launch::ptr(launch),
            &p,
            &a,
            &b,
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
        )
    })
}

/// Names the variant [`gemm`] would run (e.g. `"cpu.gemm"`); validates like it.
pub fn gemm_select_kernel(
    context: &Context,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &TensorMut<'_>,
) -> Result<&'static str> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    let mut name: Variant = std::ptr::null();
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_gemm_select_kernel(
            context.as_raw(),
            &p,
            &a,
            &b,
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`gemm`] on these arguments allocates nothing
/// (`fk_gemm_workspace_size`: a [`crate::Launch`] workspace at least this large, at any address;
/// nonzero for split-K schedules, 0 when the call takes no scratch); validates like it.
pub fn gemm_workspace_size(
    context: &Context,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &TensorMut<'_>,
) -> Result<u64> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    let mut bytes: u64 = 0;
    // SAFETY: see `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_gemm_workspace_size(
            context.as_raw(),
            &p,
            &a,
            &b,
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

/// Scaled GEMM for quantised (FP8) inputs, with [`gemm`]'s epilogue:
/// `d = activation(alpha * scale_a[m] * scale_b[n] * op(a) @ op(b) + beta * c + bias)`
/// (`torch._scaled_mm`'s scale convention; C ABI `fk_gemm_scaled`).
///
/// - `a`, `b`: as for [`gemm`], dtype [`crate::DType::F8E4M3FN`] or [`crate::DType::F8E5M2`]
///   (the two may differ; see [`Tensor::from_fp8_bits`]), or both one f32/f16/bf16 dtype. The
///   Hopper kernel wants `a` `(M, K)` and `b` `(N, K)` row-major with `trans_b`.
/// - `scale_a`: optional f32 `(1,)` or `(M,)` (per row of `a`); `scale_b`: optional f32
///   `(1,)` or `(N,)` (per column of `b`); contiguous.
/// - `c`, `bias`, `d`: as for [`gemm`]; `d` is f32/f16/bf16.
///
/// # Errors
/// As [`gemm`], plus `DtypeMismatch` (fp8 `a` with a non-fp8 `b`, a scale not f32),
/// `ShapeMismatch` (a scale's length), `BadStrides` (a scale not contiguous).
#[allow(clippy::too_many_arguments)]
pub fn gemm_scaled(
    context: &Context,
    launch: Option<&Launch>,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    scale_a: Option<&Tensor<'_>>,
    scale_b: Option<&Tensor<'_>>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &mut TensorMut<'_>,
) -> Result<()> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (sa, sb) = (scale_a.map(|t| t.as_dlpack()), scale_b.map(|t| t.as_dlpack()));
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_gemm_scaled(
            context.as_raw(),
            Launch::ptr(launch),
            &p,
            &a,
            &b,
            opt_ptr(&sa),
            opt_ptr(&sb),
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
        )
    })
}

/// Names the variant [`gemm_scaled`] would run; validates like it.
#[allow(clippy::too_many_arguments)]
pub fn gemm_scaled_select_kernel(
    context: &Context,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    scale_a: Option<&Tensor<'_>>,
    scale_b: Option<&Tensor<'_>>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &TensorMut<'_>,
) -> Result<&'static str> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (sa, sb) = (scale_a.map(|t| t.as_dlpack()), scale_b.map(|t| t.as_dlpack()));
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    let mut name: Variant = std::ptr::null();
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_gemm_scaled_select_kernel(
            context.as_raw(),
            &p,
            &a,
            &b,
            opt_ptr(&sa),
            opt_ptr(&sb),
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`gemm_scaled`] on these arguments allocates nothing
/// (`fk_gemm_scaled_workspace_size`, as [`gemm_workspace_size`]); validates like it.
#[allow(clippy::too_many_arguments)]
pub fn gemm_scaled_workspace_size(
    context: &Context,
    params: &GemmParams,
    a: &Tensor<'_>,
    b: &Tensor<'_>,
    scale_a: Option<&Tensor<'_>>,
    scale_b: Option<&Tensor<'_>>,
    c: Option<&Tensor<'_>>,
    bias: Option<&Tensor<'_>>,
    d: &TensorMut<'_>,
) -> Result<u64> {
    let p = params.to_raw();
    let (a, b, dd) = (a.as_dlpack(), b.as_dlpack(), d.as_dlpack());
    let (sa, sb) = (scale_a.map(|t| t.as_dlpack()), scale_b.map(|t| t.as_dlpack()));
    let (c, bias) = (c.map(|t| t.as_dlpack()), bias.map(|t| t.as_dlpack()));
    let mut bytes: u64 = 0;
    // SAFETY: see `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_gemm_scaled_workspace_size(
            context.as_raw(),
            &p,
            &a,
            &b,
            opt_ptr(&sa),
            opt_ptr(&sb),
            opt_ptr(&c),
            opt_ptr(&bias),
            &dd,
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

fn raw_monarch_params() -> sys::fk_monarch_params_t {
    // SAFETY: plain-old-data; the init function fills every field.
    let mut raw: sys::fk_monarch_params_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { sys::fk_monarch_params_init(&mut raw) };
    raw
}

/// Two-factor Monarch multiply `out = M x (+ bias)` with `M = P L P^T R` (Dao et al. 2022),
/// factors in the layout of m2's `blockdiag_butterfly_multiply(x, w1, w2)`:
///
/// - `x` `(tokens, nblocks1 * p)`, last dimension contiguous
/// - `w1` `(nblocks1, q, p)`: R, applied first; compact
/// - `w2` `(nblocks2, s, r)`: L, with `nblocks1 * q == nblocks2 * r`; compact
/// - `bias` optional `(nblocks2 * s,)`, f32, f16 or bf16 (fp8 is `NotSupported`), contiguous
/// - `out` `(tokens, nblocks2 * s)`, last dimension contiguous; must not overlap `x`, the
///   weights or `bias` (not even in place with square blocks)
///
/// `x`, weights and `out` share one of f32/f16/bf16; f32 accumulation.
///
/// # Errors
/// As `fk_monarch()`: `ShapeMismatch`, `DtypeMismatch`, `BadStrides` (weights not compact, a
/// last dimension not contiguous), `InvalidArgument` (`out` overlapping an input),
/// `WrongDevice`, `Misaligned`, `Device`. On an error `out` is untouched.
#[allow(clippy::too_many_arguments)]
pub fn monarch(
    context: &Context,
    launch: Option<&Launch>,
    x: &Tensor<'_>,
    w1: &Tensor<'_>,
    w2: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &mut TensorMut<'_>,
) -> Result<()> {
    let p = raw_monarch_params();
    let (x, w1, w2, o) = (x.as_dlpack(), w1.as_dlpack(), w2.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_monarch(context.as_raw(), Launch::ptr(launch), &p, &x, &w1, &w2, opt_ptr(&bias), &o)
    })
}

/// Names the variant [`monarch`] would run; validates like it.
pub fn monarch_select_kernel(
    context: &Context,
    x: &Tensor<'_>,
    w1: &Tensor<'_>,
    w2: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &TensorMut<'_>,
) -> Result<&'static str> {
    let p = raw_monarch_params();
    let (x, w1, w2, o) = (x.as_dlpack(), w1.as_dlpack(), w2.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    let mut name: Variant = std::ptr::null();
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_monarch_select_kernel(
            context.as_raw(),
            &p,
            &x,
            &w1,
            &w2,
            opt_ptr(&bias),
            &o,
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`monarch`] on these arguments allocates nothing
/// (`fk_monarch_workspace_size`: nonzero on the variants that run in passes, the unfused
/// sm80-class path and the generic CUDA kernel; zero on the fused kernels and the CPU
/// backend); validates like it.
pub fn monarch_workspace_size(
    context: &Context,
    x: &Tensor<'_>,
    w1: &Tensor<'_>,
    w2: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &TensorMut<'_>,
) -> Result<u64> {
    let p = raw_monarch_params();
    let (x, w1, w2, o) = (x.as_dlpack(), w1.as_dlpack(), w2.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    let mut bytes: u64 = 0;
    // SAFETY: see `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_monarch_workspace_size(
            context.as_raw(),
            &p,
            &x,
            &w1,
            &w2,
            opt_ptr(&bias),
            &o,
            &mut bytes,
        )
    })?;
    Ok(bytes)
}

/// Block-diagonal linear (M2-BERT's `BlockdiagLinear`):
/// `out[t, i*q + a] = sum_c w[i, a, c] * x[t, i*p + c] (+ bias[i*q + a])`.
///
/// - `x` `(tokens, nblocks * p)`, last dimension contiguous
/// - `w` `(nblocks, q, p)`, compact
/// - `bias` optional `(nblocks * q,)`, f32, f16 or bf16 (fp8 is `NotSupported`), contiguous
/// - `out` `(tokens, nblocks * q)`, last dimension contiguous; must not overlap `x`, `w` or
///   `bias`
///
/// `x`, `w` and `out` share one of f32/f16/bf16; f32 accumulation.
///
/// # Errors
/// As [`monarch`].
pub fn blockdiag_linear(
    context: &Context,
    launch: Option<&Launch>,
    x: &Tensor<'_>,
    w: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &mut TensorMut<'_>,
) -> Result<()> {
    let p = raw_monarch_params();
    let (x, w, o) = (x.as_dlpack(), w.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_blockdiag_linear(
            context.as_raw(),
            Launch::ptr(launch),
            &p,
            &x,
            &w,
            opt_ptr(&bias),
            &o,
        )
    })
}

/// Names the variant [`blockdiag_linear`] would run; validates like it.
pub fn blockdiag_linear_select_kernel(
    context: &Context,
    x: &Tensor<'_>,
    w: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &TensorMut<'_>,
) -> Result<&'static str> {
    let p = raw_monarch_params();
    let (x, w, o) = (x.as_dlpack(), w.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    let mut name: Variant = std::ptr::null();
    // SAFETY: see `attention`.
    check(unsafe {
        sys::fk_blockdiag_linear_select_kernel(
            context.as_raw(),
            &p,
            &x,
            &w,
            opt_ptr(&bias),
            &o,
            &mut name,
        )
    })?;
    Ok(static_str(name))
}

/// Workspace bytes with which [`blockdiag_linear`] on these arguments allocates nothing
/// (`fk_blockdiag_linear_workspace_size`; every variant takes none today); validates like it.
pub fn blockdiag_linear_workspace_size(
    context: &Context,
    x: &Tensor<'_>,
    w: &Tensor<'_>,
    bias: Option<&Tensor<'_>>,
    out: &TensorMut<'_>,
) -> Result<u64> {
    let p = raw_monarch_params();
    let (x, w, o) = (x.as_dlpack(), w.as_dlpack(), out.as_dlpack());
    let bias = bias.map(|t| t.as_dlpack());
    let mut bytes: u64 = 0;
    // SAFETY: see `attention`; nothing is written but `bytes`.
    check(unsafe {
        sys::fk_blockdiag_linear_workspace_size(
            context.as_raw(),
            &p,
            &x,
            &w,
            opt_ptr(&bias),
            &o,
            &mut bytes,
        )
    })?;
    Ok(bytes)
}
