"""flashkit: attention, GEMM, Monarch and FFT convolution kernels behind one C ABI.

The functions take arrays from any library that speaks DLPack (NumPy, PyTorch, CuPy, JAX) or
the CUDA array interface, without copying them, and return results made by the same library on
the same device (or write into ``out=``). NumPy bfloat16 works through ``ml_dtypes``.

* CPU arrays run on flashkit's CPU backend; CUDA arrays on its CUDA kernels (when the library
  was built with CUDA), on the device that holds them.
* Work on the GPU is queued on the caller's stream: PyTorch's current stream for torch tensors,
  CuPy's current stream for CuPy arrays; calls return before the GPU finishes, as in those
  libraries.
* Arrays are read in place: their dtype must be float32, float16 or bfloat16 (float8_e4m3fn /
  float8_e5m2 for ``gemm_scaled``'s a and b, float8_e4m3fn for ``attention_fp8``'s q, k, v;
  int32 for ``cu_seqlens``, ``cache_seqlens`` and ``block_table``) in native byte order;
  nothing is converted. (torch negative or conjugate views are the exception: they are resolved into a
  copy first, since DLPack cannot describe them.)
* ``out=`` is written in place, through its memory: a torch tensor's version counter is
  bumped as by torch's own ``out=``; a JAX array, immutable by JAX's contract, is changed
  for every reference to it (pass ``out=`` only with a buffer nothing else reads).
* Failures raise :class:`FlashkitError` subclasses whose message names the argument and the
  rule it broke: :class:`InvalidArgumentError` (also a ``ValueError``),
  :class:`NotSupportedError`, :class:`OutOfMemoryError`, :class:`DeviceError`,
  :class:`InternalError`.
* ``workspace=``: every operation (and an FFTConv call) takes an optional scratch array,
  fk_launch_t::workspace: any writable, contiguous array on the call's device, any dtype (its
  bytes are used; ``torch.empty(n, dtype=torch.uint8, device="cuda")`` is typical). The call
  takes its temporary buffers from it first (256-byte aligned pieces) and allocates
  stream-ordered memory only for what does not fit, so any size is valid, 0 included. Calls
  that take scratch on the GPU: split-K GEMMs (fp32 partials), attention whose keys are split
  into chunks (fp16/bf16 decode-like calls with too few query tiles to fill the GPU: each
  chunk's queries, output and lse), FFT convolutions (a plan whose filter is not constant: its
  spectrum per call; fft_size above shared memory: the intermediates; fft_size 65536 on the
  register kernel: up to 256 KB per multiprocessor), every ``attention_fp8`` call (its bf16
  copies of q, k, v, or on Hopper's fp8 kernel possibly a copy of v) and the Monarch kernels
  that run in passes (fp16/bf16 shapes the fused kernels do not serve best: about 128 MiB for a
  chunk of tokens, more only when 128 tokens exceed it, plus the permuted bias; the generic
  kernel: its fp32 intermediate); ``Context.workspace_size(op, *args)`` (and ``FFTConv.workspace_size``) gives the
  size with which a call allocates nothing, 0 when it takes no scratch. The size is not
  monotone in the shapes (a small decode batch can need scratch where a large one needs
  none): query each shape. Use it to keep allocation out of a hot loop,
  or to capture a CUDA graph on a GPU without stream-ordered memory pools. The workspace must
  stay alive, and not be used for anything else, until the stream's work that the call queued
  has finished (the rule for any array the call reads or writes). InvalidArgumentError: a
  read-only or non-contiguous array, one on another device than the call's arrays, or one
  that overlaps any of the call's arrays.
* ``flashkit.flash_attn_interface`` offers FlashAttention 2's function signatures.
* ``flashkit.capi`` is the raw SWIG binding of ``flashkit.h``.

Example::

    import numpy as np, flashkit
    q = k = v = np.random.randn(2, 128, 8, 64).astype(np.float32)
    out = flashkit.attention(q, k, v, causal=True)          # (2, 128, 8, 64) numpy array
    print(flashkit.__version__, flashkit.Context().info())
"""

import enum as _enum

from . import capi
from ._context import Context, default_context
from ._dlpack import bfloat16, float16, float32
from ._errors import (
    DeviceError,
    FlashkitError,
    InternalError,
    InvalidArgumentError,
    NotSupportedError,
    OutOfMemoryError,
)
from ._ops import FFTConv
from . import _ops, flash_attn_interface
from ._version import __version__

__all__ = [
    "__version__", "Context", "default_context", "attention", "attention_fp8", "attention_kvcache",
    "gemm", "gemm_scaled", "monarch",
    "blockdiag_linear", "FFTConv", "set_log_callback", "LogLevel", "library_version",
    "FlashkitError", "InvalidArgumentError", "NotSupportedError", "OutOfMemoryError",
    "DeviceError", "InternalError", "float32", "float16", "bfloat16",
]


def attention(q, k, v, *, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
              cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
              return_lse=False, out=None, lse=None, workspace=None):
    """Attention forward, ``softmax(mask(softcap(softmax_scale * q k^T))) v``, without forming
    the score matrix (Dao et al. 2022, "FlashAttention", section 3.1, Algorithm 1; Dao 2023,
    "FlashAttention-2", section 3; the Hopper kernel: Shah et al. 2024, "FlashAttention-3",
    section 3).

    Batched form (no ``cu_seqlens``):
        q: ``(batch, seqlen_q, nheads, head_dim)``.
        k, v: ``(batch, seqlen_k, nheads_k, head_dim)``.
        returns out ``(batch, seqlen_q, nheads, head_dim)``; lse ``(batch, nheads, seqlen_q)``.

    Variable-length form (``cu_seqlens_q`` and ``cu_seqlens_k`` both given):
        q: ``(total_q, nheads, head_dim)``; k, v: ``(total_k, nheads_k, head_dim)``.
        cu_seqlens_q, cu_seqlens_k: int32 ``(batch + 1,)``, starting at 0, non-decreasing,
            ending at total_q / total_k; on the same device as q.
        returns out ``(total_q, nheads, head_dim)``; lse ``(nheads, total_q)``.

    Args:
        q, k, v: one dtype: float32, float16 or bfloat16 (fp32 accumulation). head_dim 1..256,
            contiguous; other strides arbitrary. GQA/MQA: ``nheads % nheads_k == 0``, query
            head h reads key/value head ``h // (nheads // nheads_k)``.
        softmax_scale: float, default (None) ``1 / sqrt(head_dim)``; NaN is refused.
        causal: causal mask, aligned bottom-right when seqlen_q != seqlen_k (FlashAttention's
            convention: query i sits at position ``i + seqlen_k - seqlen_q``). In the
            variable-length form each sequence is aligned on its own lengths
            (``cu_seqlens_q[b+1] - cu_seqlens_q[b]`` and likewise for k).
        window_size: ``(left, right)`` sliding window around that position, in keys; -1 is
            unbounded, below -1 is refused (InvalidArgumentError, also with ``causal``). With
            ``causal=True`` a right side of -1 or more counts as 0 (FlashAttention's rule:
            ``causal`` is the window ``(left, 0)``).
        softcap: if > 0, scores become ``softcap * tanh(s / softcap)`` (logit soft-capping,
            Gemma Team 2024, "Gemma 2", section 2). The CUDA attention kernels (Hopper and
            sm80-class) use ``tanh.approx.f32`` (relative error up to about 2**-11, as
            FlashAttention-2); the CPU backend and the generic CUDA path compute tanh exactly.
        max_seqlen_q, max_seqlen_k: varlen form: the longest sequence in cu_seqlens_q /
            cu_seqlens_k (int >= 0; None or 0: not given), as in FlashAttention. Given, on the
            CUDA backend the call does not copy cu_seqlens to the host (which waits for the
            GPU; both must be given for the call to wait for nothing); the entries are
            trusted: a sequence longer than ``max_seqlen_q`` has its later rows left
            unwritten, and wrong entries give an unspecified result (never an access outside
            the arrays). On the CPU (host cu_seqlens are always checked) a value
            below the longest sequence raises InvalidArgumentError. Not used in the batched form
            (a negative value is refused in both forms). Under CUDA graph capture
            (``torch.cuda.graph``) both are required (pass 1 for a batch of empty sequences):
            InvalidArgumentError names the missing one.
        return_lse: also return the fp32 natural-log log-sum-exp of each row's scores.
        out: optional output array (same dtype and shape as the result, head_dim
            contiguous; it must not overlap q, k or v).
        lse: optional float32 output array for the log-sum-exp, ``(batch, nheads, seqlen_q)``
            (``(nheads, total_q)`` in the varlen form), last dimension contiguous, in q's
            library and device; it must not overlap q, k, v or out. Given, the call returns
            ``(out, lse)`` as with ``return_lse=True`` (static buffers, split-KV merges).
        workspace: optional scratch array on the call's device (module notes).

    Returns:
        ``out``, or ``(out, lse)`` with ``return_lse`` or ``lse``. A query row that sees no
        key gives 0 and lse ``-inf``.

    Raises:
        InvalidArgumentError: shapes, dtypes, strides, devices, window or softcap out of range
            (the message names the argument, e.g. ``"q: head_dim 300 > 256"``); q, k or v
            None; window_size not two ints within int32 or a side below -1; softmax_scale NaN
            or beyond float32; softcap beyond float32; an array whose data is not aligned to
            its element size (status 107; no other alignment is required); out or lse
            overlapping an input (or lse overlapping out), or writing two elements to one
            address; max_seqlen_q / max_seqlen_k negative or, on the CPU, below the longest
            sequence.
        NotSupportedError: torch tensors that require grad while autograd is on; float8 q, k,
            v or out (float8 inputs go to :func:`attention_fp8`).
        OutOfMemoryError, DeviceError: scratch that could not be allocated; a CUDA error.
    """
    return _ops.attention(None, q, k, v, softmax_scale=softmax_scale, causal=causal,
                          window_size=window_size, softcap=softcap, cu_seqlens_q=cu_seqlens_q,
                          cu_seqlens_k=cu_seqlens_k, max_seqlen_q=max_seqlen_q,
                          max_seqlen_k=max_seqlen_k, return_lse=return_lse, out=out, lse=lse,
                          workspace=workspace)


def attention_fp8(q, k, v, *, descale_q=None, descale_k=None, descale_v=None,
                  softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                  cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None, max_seqlen_k=None,
                  return_lse=False, out=None, lse=None, workspace=None):
    """Attention forward on float8 e4m3fn q, k, v with per-(sequence, kv-head) descale
    factors, bfloat16 output: FlashAttention-3's FP8 forward contract (Shah et al. 2024,
    "FlashAttention-3", section 3.3; its ``q_descale`` / ``k_descale`` / ``v_descale``).

    Computes :func:`attention` on ``descale_q[b, h // (nheads // nheads_k)] * q[b, :, h]``,
    ``descale_k[b, g] * k[b, :, g]`` and ``descale_v[b, g] * v[b, :, g]``, by one of two
    implementations (``Context.select_kernel("attention_fp8", ...)`` names it):

    - ``"cuda.sm90.attention_fp8"`` (0.7.0, Hopper GPUs): fp8 tensor-core arithmetic as in
      FlashAttention-3: S = q k^T on the e4m3 codes, scaled by the softmax scale and
      descale_q * descale_k; P rounded to e4m3 for the P V product; O times descale_v. The
      rounding of P (3 mantissa bits) is its one approximation beyond fp32 arithmetic (tested:
      at most twice the error of that math done naively, plus bf16 rounding). Batched calls
      with head_dim 128 or 256, no softcap, a positive softmax scale, q, k and out 16-byte
      aligned and q, k strides that are multiples of 16 elements, on a context of the AUTO or
      SM90 kernel family; scratch: none at head_dim 128, and at head_dim 256 where few query
      rows read each key (the kernel transposes v's tiles in shared memory; a v that is not
      16-byte aligned, or whose strides are not multiples of 16 elements, is first copied, 1
      byte per element), else one transposed copy of v written by a pass first. "Few":
      (nheads / nheads_k) * 128 * (keys each 128-row query tile attends, summed over the tiles)
      / seqlen_k <= 640 (H200: the transposition 14-20% faster at 512 keys, slower from 2k keys
      on); ``FLASHKIT_SM90_FP8_VT=0`` / ``2`` forces the pass / the transposition.
      ``FLASHKIT_ATTENTION_FP8_DEQUANT=1`` in the environment gives every call the path below.
    - ``"<bf16 variant>+fp8_dequant"``, every other call: the values are rounded once to
      bfloat16 and run on the bf16 attention kernels (bit for bit what :func:`attention` gives
      on contiguous bfloat16 arrays of them with the same ``out`` and ``lse`` layouts); on a
      GPU one extra pass over q, k and v and scratch of 2 bytes per element of each
      (``workspace``).

    Args:
        q, k, v: float8_e4m3fn (``torch.float8_e4m3fn``, ``ml_dtypes.float8_e4m3fn``), shapes,
            layouts and forms (batched or varlen) as :func:`attention`. Other dtypes (e5m2
            included) raise InvalidArgumentError.
        descale_q, descale_k, descale_v: None (factor 1) or float32 ``(batch, nheads_k)`` on
            q's device, any non-negative strides; ``batch`` is the number of sequences
            (``len(cu_seqlens_q) - 1`` in the varlen form). Query head h uses column
            ``h // (nheads // nheads_k)`` (one factor per GQA group). A per-tensor factor
            ``s`` (FA3's scalar use) is a broadcast view, e.g.
            ``np.broadcast_to(np.float32(s), (batch, nheads_k))`` or
            ``torch.tensor(s).expand(batch, nheads_k)``; a Python float is refused. NaN or
            infinite factors are applied as given (their rows come out NaN or infinite).
        softmax_scale, causal, window_size, softcap, cu_seqlens_q, cu_seqlens_k,
        max_seqlen_q, max_seqlen_k, return_lse, lse, workspace: as :func:`attention` (lse:
            float32 ``(batch, nheads, seqlen_q)``, or ``(nheads, total_q)`` in the varlen form).
        out: optional bfloat16 output, q's shape, head_dim contiguous; must not overlap an
            input (the descale factors included).

    Returns:
        ``out`` (bfloat16), or ``(out, lse)`` with ``return_lse`` or ``lse``.

    Raises:
        InvalidArgumentError: as :func:`attention` (its ``status`` attribute holds the C
            status, e.g. 103 for a dtype, 104 for a shape); a dtype other than float8_e4m3fn
            for q, k, v, other than float32 for a descale tensor or other than bfloat16 for
            ``out``; a descale tensor not shaped ``(batch, nheads_k)`` or with a negative
            stride; a Python number as a descale factor (status 101).
        NotSupportedError: torch tensors that require grad while autograd is on.
        OutOfMemoryError, DeviceError: the bf16 copies of the dequantising path or other
            scratch that could not be allocated; a CUDA error.
    """
    return _ops.attention_fp8(None, q, k, v, descale_q=descale_q, descale_k=descale_k,
                              descale_v=descale_v, softmax_scale=softmax_scale, causal=causal,
                              window_size=window_size, softcap=softcap,
                              cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k,
                              max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
                              return_lse=return_lse, out=out, lse=lse, workspace=workspace)


def attention_kvcache(q, k_cache, v_cache, cache_seqlens=None, block_table=None, *,
                      softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                      return_lse=False, out=None, lse=None, workspace=None):
    """Attention of new queries over a KV cache, contiguous or paged (decode and chunked
    prefill): the ``flash_attn_with_kvcache`` contract of the flash-attn package (whose
    algorithm is FlashAttention-2's, Dao 2023, section 3), C ABI
    ``fk_attention_kvcache_forward`` (0.5.0). The paged layout is vLLM's
    PagedAttention (Kwon et al. 2023, "Efficient Memory Management for Large Language Model
    Serving with PagedAttention", Section 4.1): all sequences' keys and values live in one pool
    of fixed-size pages, and key ``n`` of sequence ``b`` is row ``n % page_block_size`` of page
    ``block_table[b, n // page_block_size]``.

    The cache is only read: appending the new tokens' keys and values is the caller's (e.g. a
    scatter into the pages before the call). Masks, softcap, GQA/MQA and dtypes follow
    :func:`attention`'s batched form with ``seqlen_k = cache_seqlens[b]`` per sequence: the new
    queries are the last ``seqlen_q`` keys of their sequence, so query row ``i`` of sequence
    ``b`` sits at key position ``cache_seqlens[b] - seqlen_q + i`` (bottom-right aligned).

    Args:
        q: new queries ``(batch, seqlen_q, nheads, head_dim)``; float32, float16 or bfloat16;
            head_dim 1..256, contiguous; other strides arbitrary.
        k_cache: keys, q's dtype and head_dim, head_dim contiguous, other strides arbitrary.
            Without ``block_table``: ``(batch, seqlen_cache, nheads_k, head_dim)``, capacity
            ``seqlen_cache`` keys per sequence. With ``block_table``: the page pool
            ``(num_blocks, page_block_size, nheads_k, head_dim)``, capacity
            ``max_blocks_per_seq * page_block_size``. GQA/MQA: ``nheads % nheads_k == 0``,
            query head h reads key/value head ``h // (nheads // nheads_k)``.
        v_cache: values, k_cache's shape and dtype (its own strides).
        cache_seqlens: None (every sequence holds ``capacity`` keys), an int (the same length
            for every sequence, broadcast as FlashAttention does), or int32 ``(batch,)``,
            contiguous, on q's device: the valid keys of each sequence, in ``[0, capacity]``.
        block_table: None (contiguous cache) or int32 ``(batch, max_blocks_per_seq)``, last
            dimension contiguous, on q's device: the pages of each sequence in key order, each
            in ``[0, num_blocks)``. Only the first ``ceil(cache_seqlens[b] / page_block_size)``
            entries of row ``b`` are read (the rest may hold anything); pages may be shared
            between sequences (prefix caching).
        softmax_scale, causal, window_size, softcap: as for :func:`attention`.
        return_lse: also return the fp32 natural-log log-sum-exp ``(batch, nheads, seqlen_q)``.
        out: optional output array ``(batch, seqlen_q, nheads, head_dim)``, q's dtype, head_dim
            contiguous; must not overlap an input.
        lse: optional float32 output array ``(batch, nheads, seqlen_q)``, last dimension
            contiguous; must not overlap an input or out. Given, the call returns
            ``(out, lse)`` as with ``return_lse=True``.
        workspace: optional scratch array on the call's device (module notes).

    Returns:
        ``out`` ``(batch, seqlen_q, nheads, head_dim)``, or ``(out, lse)`` with ``return_lse``
        or ``lse``.
        A query row that sees no key (``cache_seqlens[b] == 0``, or masked) gives 0 and lse
        ``-inf``.

    Raises:
        InvalidArgumentError: as :func:`attention`, plus: k_cache/v_cache ranks or extents,
            cache_seqlens not ``(batch,)``, block_table not ``(batch, max_blocks_per_seq)``,
            either not int32 or its last dimension not contiguous; a negative int
            cache_seqlens. On the CPU every entry of cache_seqlens and block_table is checked
            and one out of range is named with its index (e.g. ``"block_table: entry [1][2] is
            9, outside [0, 7] (a page of k_cache)"``); on the GPU the entries are not read
            back (the call never waits and can be captured in a CUDA graph) but clamped inside
            the cache: a wrong entry gives a wrong result, never an access outside k_cache and
            v_cache.
        NotSupportedError: torch tensors that require grad while autograd is on; an int
            cache_seqlens for a CUDA array of a library other than torch or CuPy.
    """
    return _ops.attention_kvcache(None, q, k_cache, v_cache, cache_seqlens, block_table,
                                  softmax_scale=softmax_scale, causal=causal,
                                  window_size=window_size, softcap=softcap,
                                  return_lse=return_lse, out=out, lse=lse, workspace=workspace)


def gemm(a, b, c=None, *, alpha=1.0, beta=0.0, trans_a=False, trans_b=False, bias=None,
         activation=None, out=None, workspace=None):
    """GEMM with a fused epilogue: ``out = act(alpha * op(a) @ op(b) + beta * c + bias)``,
    accumulated in fp32: the BLAS xGEMM contract (Dongarra, Du Croz, Hammarling and Duff 1990,
    "A set of level 3 basic linear algebra subprograms", ACM TOMS 16(1), its xGEMM) with
    cuBLASLt-style fused epilogues (GELU: Hendrycks and Gimpel 2016, "Gaussian Error Linear
    Units", section 2).

    Every array lives on the call's device (the context's; another device: InvalidArgumentError,
    status 106) and has its data aligned to its element size (status 107; no other alignment is
    required: the fast kernels' own conditions only choose the kernel).

    Args:
        a: ``(M, K)`` (``(K, M)`` with ``trans_a``), optionally with a leading batch dimension.
        b: ``(K, N)`` (``(N, K)`` with ``trans_b``), optionally batched.
        c: optional addend ``(M, N)`` or ``(batch, M, N)``, scaled by ``beta``. BLAS
            semantics: with the default ``beta=0.0`` c is not read at all (NaN/inf in it do not
            propagate), so ``gemm(a, b, c)`` is ``a @ b``: pass ``beta=1.0`` to add c.
            ``beta != 0`` requires c.
        alpha, beta: floats within float32's range; finite. ``alpha == 0`` reads neither a nor b
            (BLAS convention: NaN there cannot reach the output).
        trans_a, trans_b: use the operand transposed (any strides also work: a transposed
            NumPy/torch view is fine without these flags).
        bias: optional ``(N,)``, contiguous, fp32/fp16/bf16 (need not match a): one value per
            output column.
        activation: None, ``"relu"``, ``"gelu"`` (= ``"gelu_erf"``, exact, torch's default) or
            ``"gelu_tanh"`` (case-insensitive), or a ``flashkit.capi.FK_ACTIVATION_*`` value.
        out: optional output ``(M, N)`` / ``(batch, M, N)`` (the C ABI's ``d``; error messages
            raised here say ``out``), any non-negative strides with no two elements at one
            address. It must not overlap a, b or bias; it may be c itself (the same view: an
            in-place residual add, ``gemm(a, b, c, beta=1.0, out=c)``), but not another view
            overlapping c. Overlap is judged on address ranges, as everywhere in flashkit:
            interleaved column slices of one buffer count as overlapping.
        workspace: optional scratch array on the call's device (module notes).

    dtypes: a and b share float32/float16/bfloat16; c, out and the result share one, which
    may differ from a's. A given c counts even when beta == 0 (its values are then unused, but
    it is still checked and it shapes the result):

    * the result's dtype is out's dtype when out is given; otherwise c's dtype, even when
      beta == 0 (``gemm(a32, b32, c16)`` returns float16); otherwise a's dtype;
    * c must match the result: dtype equal to out's, shape ``(M, N)`` or ``(1 | batch, M, N)``;
    * without out, the result is ``(batch, M, N)`` if any of a, b, c has rank 3, batch being
      the first of their batches other than 1 (or 1 if all are 1), else ``(M, N)``.

    Batched: a rank-2 operand (or one of batch 1) is broadcast over the batch.

    Returns:
        ``out`` (new array in a's library and device unless given).

    Raises:
        InvalidArgumentError: ranks, inner dimensions or batch counts disagree, bias length is
            not N, unknown activation, ``beta != 0`` without c, non-finite alpha/beta or beyond
            float32's range, a or b None, a dtype other than fp32/fp16/bf16, non-native
            byte order, out overlapping a, b or bias (or c other than as the same view), out
            addressing an element twice, a negative stride, bias not contiguous; an array on
            another device (status 106) or not aligned to its element size (status 107).
        NotSupportedError: a float8 a or b (float8 inputs go to :func:`gemm_scaled`), or a
            float8 c, bias or out.
        OutOfMemoryError, DeviceError: scratch that could not be allocated; a CUDA error.
    """
    return _ops.gemm(None, a, b, c, alpha=alpha, beta=beta, trans_a=trans_a, trans_b=trans_b,
                     bias=bias, activation=activation, out=out, workspace=workspace)


def gemm_scaled(a, b, c=None, *, scale_a=None, scale_b=None, alpha=1.0, beta=0.0,
                trans_a=False, trans_b=False, bias=None, activation=None, out=None,
                out_dtype=None, workspace=None):
    """Scaled GEMM for quantised (FP8) inputs, with gemm's fused epilogue:
    ``out = act(alpha * scale_a[m] * scale_b[n] * op(a) @ op(b) + beta * c + bias)``,
    accumulated in fp32 (``torch._scaled_mm``'s and cuBLASLt's scale convention: a and b hold
    ``x / scale``; the scales bring them back; the formats: Micikevicius et al. 2022, "FP8
    Formats for Deep Learning", sections 2 and 3). C ABI: ``fk_gemm_scaled``. Devices and
    alignment: as :func:`gemm` (the scale arrays too).

    Args:
        a: ``(M, K)`` (``(K, M)`` with ``trans_a``), optionally batched: float8_e4m3fn or
            float8_e5m2 (torch float8 tensors; NumPy arrays of ml_dtypes' float8 types), or
            fp32/fp16/bf16 (then b has the same dtype).
        b: ``(K, N)`` (``(N, K)`` with ``trans_b``): fp8 when a is fp8 (the formats may
            differ). The Hopper kernel needs both K-major: a row-major ``(M, K)`` and b a
            row-major ``(N, K)`` passed with ``trans_b=True`` (in torch, ``w.t()`` of an
            ``(N, K)`` weight without the flag is the same memory); other layouts run on the
            generic kernel.
        scale_a: None (1), a finite Python or NumPy real number (per-tensor, folded into
            alpha in float32), or float32 0-d or ``(1,)`` (per-tensor; torch's scalar scale
            tensors are 0-d) or ``(M,)`` (per row of a; ``torch._scaled_mm``'s ``(M, 1)`` too),
            contiguous, on a's device.
        scale_b: None (1), a real number as for scale_a, or float32 0-d, ``(1,)`` or ``(N,)``
            (per column of b; ``torch._scaled_mm``'s ``(1, N)`` too), contiguous, on a's device.
        c, alpha, beta, bias, activation, trans_a, trans_b: as for :func:`gemm` (c and bias
            are not scaled).
        out: optional output ``(M, N)`` / ``(batch, M, N)``, fp32/fp16/bf16 (the C ABI's
            ``d``; error messages raised here say ``out``).
        workspace: optional scratch array on the call's device (module notes).
        out_dtype: the result's dtype when out is not given (float32, float16 or bfloat16);
            default c's dtype, else a's when a is 16/32-bit, else bfloat16. Given together
            with c or out, it must be their dtype (InvalidArgumentError naming out_dtype).

    The factor ``alpha * scale_a[m] * scale_b[n]`` is formed in float32 before it multiplies
    the sum (as cuBLASLt does): scales whose product overflows or underflows float32 give inf or
    lose precision (down to zeros) even when the exact result would fit. Scales live on the
    device and are not inspected, so this is not reported as an error.

    Returns:
        ``out`` (new array in a's library and device unless given).

    Raises:
        InvalidArgumentError: as :func:`gemm`; a fp8 with b not (or the reverse); a scale not
            float32, of rank above 1, or of length other than 1 or M (N); a scale not
            contiguous; an fp8 ``out_dtype``.
        NotSupportedError: an fp8 ``out`` array.
        OutOfMemoryError, DeviceError: scratch that could not be allocated; a CUDA error.
    """
    return _ops.gemm_scaled(None, a, b, c, scale_a=scale_a, scale_b=scale_b, alpha=alpha,
                            beta=beta, trans_a=trans_a, trans_b=trans_b, bias=bias,
                            activation=activation, out=out, out_dtype=out_dtype,
                            workspace=workspace)


def monarch(x, w1, w2, *, bias=None, out=None, workspace=None):
    """Two-factor Monarch multiply ``out = P L P^T R x`` (Dao et al. 2022, Definition 3.1), in
    the argument order and shapes of the m2 repository's ``blockdiag_butterfly_multiply``.

    Args:
        x: ``(..., n)`` with ``n = nblocks1 * p``; leading dimensions are flattened into
            tokens (they must be mergeable without a copy). Last dimension contiguous.
        w1: ``(nblocks1, q, p)``, R: block ``i`` maps ``x[..., i*p:(i+1)*p]`` to ``q`` values.
        w2: ``(nblocks2, s, r)``, L, with ``nblocks1 * q == nblocks2 * r``.
        out: optional, of exactly the result's shape ``x.shape[:-1] + (nblocks2 * s,)``, last
            dimension contiguous; it must not overlap x, w1, w2 or bias.
        bias: optional ``(nblocks2 * s,)``, fp32/fp16/bf16 (need not match x), contiguous.
        workspace: optional scratch array on the call's device (module notes).

    ``bias``, ``out`` and ``workspace`` are keyword-only: the C ABI's order is (x, w1, w2, bias,
    out), and a positional fourth argument raises TypeError instead of being taken for either.
    x, w1, w2 and out share float32/float16/bfloat16; weights must be compact; fp32
    accumulation. Element for element: ``y1[t, i*q + a] = sum_c w1[i, a, c] x[t, i*p + c]``,
    ``z[t, j, b] = y1[t, b*nblocks2 + j]``, ``out[t, m*nblocks2 + j] = sum_b w2[j, m, b]
    z[t, j, b]``.

    Returns:
        ``out`` of shape ``x.shape[:-1] + (nblocks2 * s,)``.

    Raises:
        InvalidArgumentError: ranks, ``n != nblocks1 * p``, ``nblocks1 * q != nblocks2 * r``,
            dtypes, non-compact weights, an out of another shape (even of the same size); the
            last dimension of x or out, or bias, not contiguous (status 105); out overlapping
            x, w1, w2 or bias, even in place (status 100), or writing two elements to one
            address; data not aligned to its element size (no other alignment is required);
            leading dimensions of x or out that cannot be merged into one token dimension
            without a copy (status 105); an array on another device than the call's (106).
        NotSupportedError: a float8 x, weight, bias or out.
        OutOfMemoryError, DeviceError: scratch that could not be allocated; a CUDA error.
    """
    return _ops.monarch(None, x, w1, w2, bias=bias, out=out, workspace=workspace)


def blockdiag_linear(x, w, *, bias=None, out=None, workspace=None):
    """Block-diagonal linear layer (M2-BERT's ``BlockdiagLinear``, Fu et al. 2023, "Monarch
    Mixer", section 3):
    ``out[t, i*q + a] = sum_c w[i, a, c] x[t, i*p + c] (+ bias[i*q + a])``.

    Args:
        x: ``(..., nblocks * p)``; leading dimensions are flattened into tokens (they must be
            mergeable without a copy). Last dimension contiguous.
        w: ``(nblocks, q, p)``, compact.
        out: optional, of exactly the result's shape ``x.shape[:-1] + (nblocks * q,)``, last
            dimension contiguous; it must not overlap x, w or bias.
        bias: optional ``(nblocks * q,)``, fp32/fp16/bf16 (need not match x), contiguous.
        workspace: optional scratch array on the call's device (module notes).

    ``bias``, ``out`` and ``workspace`` are keyword-only (as in :func:`monarch`).
    x, w and out share float32/float16/bfloat16 (fp32 accumulation).

    Returns:
        ``out`` of shape ``x.shape[:-1] + (nblocks * q,)``.

    Raises:
        InvalidArgumentError: ranks, ``x.shape[-1] != nblocks * p``, dtypes, strides (a
            non-compact w; the last dimension of x or out, or bias, not contiguous: status
            105), an out of another shape (even of the same size); out overlapping x, w or
            bias (status 100), or writing two elements to one address; data not aligned to
            its element size (no other alignment is required); leading dimensions of x or out
            that cannot be merged without a copy (status 105); an array on another device
            than the call's (106).
        NotSupportedError: a float8 x, w, bias or out.
        OutOfMemoryError, DeviceError: scratch that could not be allocated; a CUDA error.
    """
    return _ops.blockdiag_linear(None, x, w, bias=bias, out=out, workspace=workspace)


class LogLevel(_enum.IntEnum):
    """Levels of :func:`set_log_callback` (the C ABI's ``fk_log_level_t``; Java's and Rust's
    ``LogLevel``)."""
    ERROR = capi.FK_LOG_ERROR
    WARN = capi.FK_LOG_WARN
    INFO = capi.FK_LOG_INFO
    DEBUG = capi.FK_LOG_DEBUG


def set_log_callback(callback, max_level=LogLevel.WARN):
    """Installs ``callback(level: int, message: str)`` for flashkit's diagnostics at or below
    ``max_level``: ``LogLevel.ERROR`` (0), ``WARN`` (1), ``INFO`` (2) or ``DEBUG`` (3: which
    kernel variant ran), or the int; e.g. ``flashkit.set_log_callback(print,
    flashkit.LogLevel.DEBUG)``. None removes it. The callback may be called
    from any thread, one delivery at a time, and must not call flashkit (``set_log_callback``
    from inside it raises ``InvalidArgumentError`` and changes nothing). A callback still
    installed when the
    interpreter exits is removed then (the library would otherwise call into a finalised
    interpreter from a thread that logs later).

    Raises:
        InvalidArgumentError: ``max_level`` not an int (a bool, float or string) or outside
            0..3 (status 100, ``"max_level: ..."``); a call from inside a callback.
        TypeError: ``callback`` neither callable nor None.
    """
    global _remove_at_exit
    level = _ops.int_arg(max_level, "max_level")  # no bools, floats or strings
    capi.fk_py_set_log_callback(callback, level)
    if callback is not None and not _remove_at_exit:
        import atexit
        atexit.register(capi.fk_py_set_log_callback, None, 0)
        _remove_at_exit = True


_remove_at_exit = False


def library_version():
    """Version string of the loaded libflashkit.so (equals ``__version__`` for a consistent
    install)."""
    return capi.fk_get_version()
