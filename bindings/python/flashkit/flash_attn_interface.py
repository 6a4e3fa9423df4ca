"""FlashAttention 2's public functions (Dao 2023, "FlashAttention-2", section 3), computed by
flashkit.

Code written for FlashAttention runs by changing the import::

    # from flash_attn.flash_attn_interface import flash_attn_func
    from flashkit.flash_attn_interface import flash_attn_func

The functions keep FlashAttention 2's names, argument names, defaults and layouts:
``(batch, seqlen, nheads, headdim)`` for the batched form, ``(total, nheads, headdim)`` plus
``cu_seqlens`` for the variable-length form, packed ``qkv``/``kv`` with the pack dimension
before the heads. With ``return_attn_probs=True`` they return ``(out, softmax_lse, None)``;
``softmax_lse`` is fp32, natural log, ``(batch, nheads, seqlen_q)`` or ``(nheads, total_q)``.
The attention probabilities are never formed, hence ``None``.

:func:`flash_attn_func` and :func:`flash_attn_varlen_func` also take FlashAttention-3's FP8
keywords ``q_descale``, ``k_descale``, ``v_descale`` (keyword only): float8_e4m3fn q, k, v, or
any descale given, run :func:`flashkit.attention_fp8` (bf16 out).

They accept any array flashkit accepts (torch tensors, but also NumPy, CuPy, JAX), so fp32
works too. What flashkit does not compute yet raises :class:`flashkit.NotSupportedError`
instead of giving a different answer: ``dropout_p > 0``, ``alibi_slopes``, a paged
``block_table`` in the varlen functions, the cache-appending and rotary arguments of
:func:`flash_attn_with_kvcache` (the exception raised for those is also a
``NotImplementedError``), and gradients (a torch input with ``requires_grad=True`` while autograd is
enabled; run under ``torch.no_grad()`` / ``torch.inference_mode()``). ``deterministic`` only
concerns the backward pass and is accepted. ``max_seqlen*`` are used as FlashAttention uses
them: the varlen call then does not wait for the GPU to read ``cu_seqlens`` (see
:func:`flashkit.attention`).

Arguments of every function here (the rules are :func:`flashkit.attention`'s, which each
function calls; :func:`flash_attn_with_kvcache` follows :func:`flashkit.attention_kvcache`):

* ``q``, ``k``, ``v`` (and the packs ``qkv`` ``(..., 3, nheads, headdim)``, ``kv``
  ``(..., 2, nheads_k, headdim)``, split by views, no copy; ``k_cache``, ``v_cache``): one
  dtype, float32, float16 or bfloat16 (float8_e4m3fn with the FP8 keywords above); headdim 1
  to 256, contiguous (stride 1), every other stride any non-negative number of elements; data
  aligned to the element size (no other alignment is required); all on one device.
  ``nheads % nheads_k == 0`` (GQA/MQA: query head h reads key/value head
  ``h // (nheads // nheads_k)``).
* ``cu_seqlens_q``, ``cu_seqlens_k``: int32 ``(batch + 1,)``, contiguous, on q's device,
  starting at 0, non-decreasing, ending at total_q / total_k.
* Errors: :class:`flashkit.InvalidArgumentError` (a ``ValueError``) for a shape, dtype,
  stride, device (status 106), alignment (status 107) or value out of range, its message
  naming the argument; :class:`flashkit.NotSupportedError` for the features listed above;
  :class:`flashkit.OutOfMemoryError` and :class:`flashkit.DeviceError` for scratch that could
  not be allocated and CUDA errors.
"""

from . import _dlpack, _errors, _ops

__all__ = [
    "flash_attn_func",
    "flash_attn_kvpacked_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_with_kvcache",
]


class _NotImplementedHere(_errors.NotSupportedError, NotImplementedError):
    """What flash_attn_with_kvcache raises for FlashAttention arguments flashkit does not
    implement: a flashkit.NotSupportedError that is also a NotImplementedError."""



def _unsupported(func, dropout_p, alibi_slopes, block_table=None):
    if dropout_p is not None:
        p = _ops.float32_arg(dropout_p, "dropout_p")
        if not 0.0 <= p <= 1.0:  # NaN included
            raise _errors.InvalidArgumentError(
                f"dropout_p: {dropout_p} is not a probability in [0, 1]", 100)
        if p != 0.0:
            raise _errors.NotSupportedError(
                f"dropout_p: {dropout_p} > 0 is not supported by flashkit's {func} (no "
                "attention dropout yet); pass dropout_p=0.0, as FlashAttention expects at "
                "evaluation")
    if alibi_slopes is not None:
        raise _errors.NotSupportedError(
            f"alibi_slopes: ALiBi biases are not supported by flashkit's {func} yet")
    if block_table is not None:
        raise _errors.NotSupportedError(
            f"block_table: a paged KV cache is not supported by flashkit's {func} yet")


def _unpack(packed, name, dim, names, layout):
    """Strided views of a packed tensor (no copy): qkv[..., i, :, :] for i in 0..len(names).
    ``layout``: the packed tensor's dimensions, named for the messages (its rank is dim + 3)."""
    if packed is None:
        raise _ops._none_error(name)
    ref = _dlpack.as_tensor(packed, name, _stream_hint(packed, name))
    if ref.ndim != dim + 3:
        raise _errors.InvalidArgumentError(
            f"{name}: rank {ref.ndim} {ref.shape}; expected rank {dim + 3}, {layout}", 104)
    if ref.shape[dim] != len(names):
        raise _errors.InvalidArgumentError(
            f"{name}: shape {ref.shape} has no dimension {dim} of size {len(names)} "
            f"(expected the packed layout)", 104)
    return [ref.select(dim, i, name=f"{name}[{n}]") for i, n in enumerate(names)]


def _stream_hint(obj, name):
    """The DLPack stream argument matching the stream the call will run on (``name``: the
    argument, for the messages)."""
    dev = _dlpack.device_of(obj)
    if dev is None:
        return None
    if dev[2] == "torch":
        obj = _dlpack._torch_prepare(obj, name)
    return _dlpack.dlpack_stream(_dlpack.launch_stream(obj, dev[2], dev[0], dev[1]))


def _is_fp8(x):
    """True for a float8_e4m3fn array of any library (torch, NumPy with ml_dtypes, JAX)."""
    return str(getattr(x, "dtype", "")).endswith("float8_e4m3fn")


def _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs,
         descales=(None, None, None), **varlen):
    return_attn_probs = _ops.bool_arg(return_attn_probs, "return_attn_probs")
    if _is_fp8(q) or any(d is not None for d in descales):
        # FlashAttention-3's FP8 arguments: flashkit.attention_fp8 (bf16 out).
        dq, dk, dv = descales
        result = _ops.attention_fp8(None, q, k, v, descale_q=dq, descale_k=dk, descale_v=dv,
                                    softmax_scale=softmax_scale, causal=causal,
                                    window_size=window_size, softcap=softcap,
                                    return_lse=bool(return_attn_probs), **varlen)
    else:
        result = _ops.attention(None, q, k, v, softmax_scale=softmax_scale, causal=causal,
                                window_size=window_size, softcap=softcap,
                                return_lse=bool(return_attn_probs), **varlen)
    if return_attn_probs:
        out, lse = result
        return out, lse, None
    return result


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False, *, q_descale=None, k_descale=None,
                    v_descale=None):
    """FlashAttention 2's ``flash_attn_func``, with FlashAttention-3's FP8 keywords.

    Args:
        q: ``(batch_size, seqlen_q, nheads, headdim)``.
        k, v: ``(batch_size, seqlen_k, nheads_k, headdim)``; ``nheads % nheads_k == 0``
            (MQA/GQA: query heads ``h*g .. h*g+g-1`` share key head h).
        dropout_p: must be 0.0 (else NotSupportedError; InvalidArgumentError outside [0, 1]
            or NaN).
        softmax_scale: default ``1 / sqrt(headdim)``.
        causal: causal mask aligned to the bottom-right corner.
        window_size: ``(left, right)``; query i attends keys in
            ``[i + seqlen_k - seqlen_q - left, i + seqlen_k - seqlen_q + right]``; -1 unbounded.
        softcap: > 0 enables ``softcap * tanh(scores / softcap)``.
        alibi_slopes: must be None (else NotSupportedError).
        deterministic: accepted (only the backward pass would differ).
        return_attn_probs: return ``(out, softmax_lse, None)``.
        q_descale, k_descale, v_descale: keyword only, FlashAttention-3's FP8 form: with
            float8_e4m3fn q, k, v (or any descale given) the call is
            :func:`flashkit.attention_fp8` (fp32 ``(batch_size, nheads_k)`` factors, None = 1;
            bf16 out).

    Returns:
        out ``(batch_size, seqlen_q, nheads, headdim)``; with ``return_attn_probs`` also
        softmax_lse ``(batch_size, nheads, seqlen_q)`` fp32 (natural log) and None.
    """
    _unsupported("flash_attn_func", dropout_p, alibi_slopes)
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs,
                descales=(q_descale, k_descale, v_descale))


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False,
                             window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                             deterministic=False, return_attn_probs=False):
    """FlashAttention 2's ``flash_attn_kvpacked_func``: as :func:`flash_attn_func` with
    ``kv`` ``(batch_size, seqlen_k, 2, nheads_k, headdim)`` (k = ``kv[:, :, 0]``, v =
    ``kv[:, :, 1]``, read in place)."""
    _unsupported("flash_attn_kvpacked_func", dropout_p, alibi_slopes)
    k, v = _unpack(kv, "kv", 2, ("k", "v"), "(batch_size, seqlen_k, 2, nheads_k, headdim)")
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False,
                              window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                              deterministic=False, return_attn_probs=False):
    """FlashAttention 2's ``flash_attn_qkvpacked_func``: as :func:`flash_attn_func` with
    ``qkv`` ``(batch_size, seqlen, 3, nheads, headdim)``, read in place.

    Returns:
        out ``(batch_size, seqlen, nheads, headdim)``; with ``return_attn_probs``
        ``(out, softmax_lse (batch_size, nheads, seqlen), None)``.
    """
    _unsupported("flash_attn_qkvpacked_func", dropout_p, alibi_slopes)
    q, k, v = _unpack(qkv, "qkv", 2, ("q", "k", "v"), "(batch_size, seqlen, 3, nheads, headdim)")
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False,
                           window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, *,
                           q_descale=None, k_descale=None, v_descale=None):
    """FlashAttention 2's ``flash_attn_varlen_func`` (sequences packed without padding), with
    FlashAttention-3's FP8 keywords (as :func:`flash_attn_func`; factors ``(batch_size,
    nheads_k)``).

    Args:
        q: ``(total_q, nheads, headdim)``; k, v: ``(total_k, nheads_k, headdim)``.
        cu_seqlens_q, cu_seqlens_k: int32 ``(batch_size + 1,)`` cumulative lengths, on q's
            device; sequence b is rows ``[cu_seqlens[b], cu_seqlens[b+1])``.
        max_seqlen_q, max_seqlen_k: the longest sequences, as in FlashAttention (trusted on
            the GPU: see :func:`flashkit.attention`).
        block_table: must be None (else NotSupportedError).
        Other arguments: as :func:`flash_attn_func` (masks are aligned per sequence).

    Returns:
        out ``(total_q, nheads, headdim)``; with ``return_attn_probs`` also softmax_lse
        ``(nheads, total_q)`` fp32 and None.
    """
    _unsupported("flash_attn_varlen_func", dropout_p, alibi_slopes, block_table)
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs,
                descales=(q_descale, k_descale, v_descale), cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                    max_seqlen_k, dropout_p=0.0, softmax_scale=None,
                                    causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False,
                                    return_attn_probs=False):
    """FlashAttention 2's ``flash_attn_varlen_kvpacked_func``: as
    :func:`flash_attn_varlen_func` with ``kv`` ``(total_k, 2, nheads_k, headdim)``."""
    _unsupported("flash_attn_varlen_kvpacked_func", dropout_p, alibi_slopes)
    k, v = _unpack(kv, "kv", 1, ("k", "v"), "(total_k, 2, nheads_k, headdim)")
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs,
                cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0,
                                     softmax_scale=None, causal=False, window_size=(-1, -1),
                                     softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    """FlashAttention 2's ``flash_attn_varlen_qkvpacked_func``: ``qkv``
    ``(total, 3, nheads, headdim)`` with one ``cu_seqlens`` (int32 ``(batch_size + 1,)``) for
    queries and keys.

    Returns:
        out ``(total, nheads, headdim)``; with ``return_attn_probs`` also softmax_lse
        ``(nheads, total)`` fp32 and None.
    """
    _unsupported("flash_attn_varlen_qkvpacked_func", dropout_p, alibi_slopes)
    q, k, v = _unpack(qkv, "qkv", 1, ("q", "k", "v"), "(total, 3, nheads, headdim)")
    return _run(q, k, v, softmax_scale, causal, window_size, softcap, return_attn_probs,
                cu_seqlens_q=cu_seqlens, cu_seqlens_k=cu_seqlens, max_seqlen_q=max_seqlen,
                max_seqlen_k=max_seqlen)


def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None,
                            rotary_sin=None, cache_seqlens=None, cache_batch_idx=None,
                            cache_leftpad=None, block_table=None, softmax_scale=None,
                            causal=False, window_size=(-1, -1), softcap=0.0,
                            rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                            return_softmax_lse=False):
    """FlashAttention 2's ``flash_attn_with_kvcache`` (inference: new queries over a KV cache,
    contiguous or paged), computed by :func:`flashkit.attention_kvcache` (C ABI
    ``fk_attention_kvcache_forward``). The paged layout is vLLM's PagedAttention (Kwon et al.
    2023, Section 4.1).

    Args:
        q: ``(batch_size, seqlen_q, nheads, headdim)``.
        k_cache, v_cache: ``(batch_size_cache, seqlen_cache, nheads_k, headdim)`` without
            ``block_table``, where ``batch_size_cache`` must equal ``batch_size`` (no
            ``cache_batch_idx``); with it, the page pool ``(num_blocks, page_block_size,
            nheads_k, headdim)``. ``nheads % nheads_k == 0``. Read, never written.
        k, v: the new tokens' keys and values to append to the cache: must be None (else a
            NotImplementedError that is also :class:`flashkit.NotSupportedError`): write them
            into the cache yourself (at positions ``cache_seqlens[b]`` onwards, then pass the
            lengths after the append).
        rotary_cos, rotary_sin, cache_batch_idx, cache_leftpad, alibi_slopes: must be None (the
            same exception).
        cache_seqlens: None (every sequence holds ``seqlen_cache`` keys, or
            ``max_blocks_per_seq * page_block_size`` when paged), an int (broadcast to every
            sequence), or int32 ``(batch_size,)``: the number of keys of each sequence.
        block_table: None or int32 ``(batch_size, max_num_blocks_per_seq)``: the pages of each
            sequence in key order.
        softmax_scale: default ``1 / sqrt(headdim)``.
        causal: causal mask aligned to the bottom-right corner: query i of sequence b sits at
            key position ``cache_seqlens[b] - seqlen_q + i``.
        window_size: ``(left, right)`` around that position; -1 unbounded.
        softcap: > 0 enables ``softcap * tanh(scores / softcap)``.
        rotary_interleaved: accepted and unused (it only shapes the rotary embedding).
        num_splits: accepted (a performance hint in FlashAttention) and not used: flashkit
            plans the split of each call itself (any value, 1 included, leaves it to the
            library; a nonzero ``Context.workspace_size`` of the call on a CUDA context says it
            splits); must be an int >= 0.
        return_softmax_lse: also return softmax_lse.

    Returns:
        out ``(batch_size, seqlen_q, nheads, headdim)``; with ``return_softmax_lse``
        ``(out, softmax_lse)``, softmax_lse ``(batch_size, nheads, seqlen_q)`` fp32 (natural
        log). A row that sees no key gives 0 and ``-inf``.

    Raises:
        NotImplementedError (a :class:`flashkit.NotSupportedError`): k, v, rotary_cos,
            rotary_sin, cache_batch_idx, cache_leftpad or alibi_slopes given.
        flashkit.InvalidArgumentError: as :func:`flashkit.attention_kvcache`.
    """
    for name, value, why in (
            ("k", k, "appending new keys to the cache is not implemented: write them into "
             "k_cache yourself and pass the updated cache_seqlens"),
            ("v", v, "appending new values to the cache is not implemented: write them into "
             "v_cache yourself and pass the updated cache_seqlens"),
            ("rotary_cos", rotary_cos, "rotary embedding of the new tokens is not "
             "implemented: apply it to q (and to the keys before they enter the cache)"),
            ("rotary_sin", rotary_sin, "rotary embedding of the new tokens is not "
             "implemented: apply it to q (and to the keys before they enter the cache)"),
            ("cache_batch_idx", cache_batch_idx, "indexing the cache's batch is not "
             "implemented: pass a cache whose batch b is sequence b, or a block_table"),
            ("cache_leftpad", cache_leftpad, "left-padded caches are not implemented"),
            ("alibi_slopes", alibi_slopes, "ALiBi biases are not implemented")):
        if value is not None:
            raise _NotImplementedHere(
                f"{name}: {why} (flashkit's flash_attn_with_kvcache supports q, k_cache, "
                f"v_cache, cache_seqlens, block_table, softmax_scale, causal, window_size, "
                f"softcap and return_softmax_lse)", 200)
    if _ops.int_arg(num_splits, "num_splits") < 0:
        raise _errors.InvalidArgumentError(f"num_splits: {num_splits} is negative", 100)
    _ops.bool_arg(rotary_interleaved, "rotary_interleaved")
    return_softmax_lse = _ops.bool_arg(return_softmax_lse, "return_softmax_lse")
    return _ops.attention_kvcache(None, q, k_cache, v_cache, cache_seqlens, block_table,
                                  softmax_scale=softmax_scale, causal=causal,
                                  window_size=window_size, softcap=softcap,
                                  return_lse=return_softmax_lse)
