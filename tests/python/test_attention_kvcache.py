"""flashkit.attention_kvcache (fk_attention_kvcache_forward, 0.5.0) and
flash_attn_interface.flash_attn_with_kvcache on the CPU backend, against the float64
reference (fk_reference.attention_kvcache, which gathers every key of a paged cache one by one),
plus a gpu-marked copy of the paged case on torch CUDA tensors.

The paged layout is vLLM's PagedAttention (Kwon et al. 2023, Section 4.1): key n of sequence b
is row n % page_block_size of page block_table[b, n // page_block_size].
"""

import numpy as np
import pytest

import flashkit
import fk_reference as ref
from flashkit import capi
from flashkit.flash_attn_interface import flash_attn_with_kvcache

GARBAGE = 1 << 20  # block_table entries past a sequence's last page are never read


def paged_case(rng, dtype, seqlens, *, seqlen_q=3, h=6, hk=2, d=32, page=8, max_blocks=5,
               extra_pages=3):
    """q, a page pool, cache_seqlens and a shuffled block_table in which sequences 0 and the
    last one share their first page (a common prefix); entries past each sequence's last page
    hold GARBAGE."""
    b = len(seqlens)
    need = [-(-n // page) for n in seqlens]
    num_blocks = sum(need) + extra_pages
    perm = rng.permutation(num_blocks)
    table = np.full((b, max_blocks), GARBAGE, dtype=np.int32)
    used = 0
    for i, n in enumerate(need):
        table[i, :n] = perm[used:used + n]
        used += n
    if need[0] and need[-1] and b > 1:
        table[-1, 0] = table[0, 0]  # shared prefix page
    q = ref.randn(rng, (b, seqlen_q, h, d), dtype)
    k_cache = ref.randn(rng, (num_blocks, page, hk, d), dtype)
    v_cache = ref.randn(rng, (num_blocks, page, hk, d), dtype)
    return q, k_cache, v_cache, np.asarray(seqlens, dtype=np.int32), table


# Lengths include 0 (no key: out 0, lse -inf), 2 < seqlen_q (causal rows before key 0), the
# full capacity (5 pages of 8), and lengths that end inside a page.
SEQLENS = [13, 0, 40, 2, 21]
OPTIONS = [
    {},
    {"causal": True},
    {"causal": True, "softmax_scale": 0.2},
    {"window_size": (4, 1), "softcap": 3.0},
    {"causal": True, "window_size": (6, -1)},
]


@pytest.mark.parametrize("dtype", ref.DTYPES)
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(sorted(o)) or "plain")
def test_paged_matches_reference(rng, dtype, opts):
    q, kc, vc, seqlens, table = paged_case(rng, dtype, SEQLENS)
    assert table[-1, 0] == table[0, 0]
    out, lse = flashkit.attention_kvcache(q, kc, vc, seqlens, table, return_lse=True, **opts)
    assert isinstance(out, np.ndarray) and out.dtype == q.dtype and out.shape == q.shape
    assert lse.dtype == np.float32 and lse.shape == (q.shape[0], q.shape[2], q.shape[1])
    r_out, r_lse = ref.attention_kvcache(q, kc, vc, seqlens, table, **opts)
    ref.assert_close(out, r_out, dtype, what="out")
    ref.assert_close(lse, r_lse, "float32", factor=10, what="lse")
    # cache_seqlens 0: no key at all
    assert np.all(out[1] == 0) and np.all(np.isneginf(lse[1]))
    if opts.get("causal"):
        # length 2 with 3 new queries: the first sits before key 0
        assert np.all(out[3, 0] == 0) and np.all(np.isneginf(lse[3, :, 0]))


@pytest.mark.parametrize("seqlen_q", [1, 7])
@pytest.mark.parametrize("heads", [(4, 4), (4, 1)], ids=["mha", "mqa"])
def test_paged_decode_and_chunked_prefill(rng, seqlen_q, heads):
    h, hk = heads
    q, kc, vc, seqlens, table = paged_case(rng, "float32", [7, 16, 33], seqlen_q=seqlen_q,
                                           h=h, hk=hk, d=16, page=4, max_blocks=9)
    out = flashkit.attention_kvcache(q, kc, vc, seqlens, table, causal=True)
    r_out, _ = ref.attention_kvcache(q, kc, vc, seqlens, table, causal=True)
    ref.assert_close(out, r_out, "float32", what="out")


def test_paged_equals_contiguous_cache(rng):
    """The same keys laid out contiguously (batch, seqlen_cache, ...) and paged give the same
    result; cache_seqlens None means the whole capacity."""
    q, kc, vc, seqlens, table = paged_case(rng, "float32", [16, 24, 40], page=8, max_blocks=5)
    kcont = np.stack([kc[table[b].clip(0, kc.shape[0] - 1)].reshape(40, 2, 32)
                      for b in range(3)])
    vcont = np.stack([vc[table[b].clip(0, vc.shape[0] - 1)].reshape(40, 2, 32)
                      for b in range(3)])
    for opts in ({}, {"causal": True}):
        paged = flashkit.attention_kvcache(q, kc, vc, seqlens, table, **opts)
        cont = flashkit.attention_kvcache(q, kcont, vcont, seqlens, **opts)
        r_out, _ = ref.attention_kvcache(q, kcont, vcont, seqlens, **opts)
        ref.assert_close(cont, r_out, "float32", what="contiguous")
        np.testing.assert_allclose(paged, cont, rtol=0, atol=1e-6)
    # No cache_seqlens: every sequence holds the capacity (all 40 keys).
    full = flashkit.attention_kvcache(q, kcont, vcont, causal=True)
    r_full, _ = ref.attention_kvcache(q, kcont, vcont, None, causal=True)
    ref.assert_close(full, r_full, "float32", what="no cache_seqlens")


def test_strided_pool_out_and_context_method(rng):
    """k_cache / v_cache as views of one packed pool (num_blocks, page, 2, hk, d), a given out,
    and Context.attention_kvcache / select_kernel / workspace_size."""
    q, _, _, seqlens, table = paged_case(rng, "float16", SEQLENS)
    num_blocks = int(table[table != GARBAGE].max()) + 4
    kv = ref.randn(rng, (num_blocks, 8, 2, 2, 32), "float16")
    kc, vc = kv[:, :, 0], kv[:, :, 1]
    out = np.full(q.shape, np.nan, dtype=q.dtype)
    ctx = flashkit.Context("cpu")
    res = ctx.attention_kvcache(q, kc, vc, seqlens, table, causal=True, out=out)
    assert res is out
    r_out, _ = ref.attention_kvcache(q, kc, vc, seqlens, table, causal=True)
    ref.assert_close(out, r_out, "float16", what="strided pool")
    assert ctx.select_kernel("attention_kvcache", q, kc, vc, seqlens, table) == "cpu.attention"
    assert ctx.workspace_size("attention_kvcache", q, kc, vc, seqlens, table,
                              return_lse=True) == 0


def test_int_cache_seqlens_broadcasts(rng):
    q = ref.randn(rng, (3, 2, 4, 16))
    kc = ref.randn(rng, (3, 12, 2, 16))
    vc = ref.randn(rng, (3, 12, 2, 16))
    a = flashkit.attention_kvcache(q, kc, vc, 9, causal=True)
    b = flashkit.attention_kvcache(q, kc, vc, np.full(3, 9, np.int32), causal=True)
    np.testing.assert_array_equal(a, b)
    c = flash_attn_with_kvcache(q, kc, vc, cache_seqlens=np.int64(9), causal=True)
    np.testing.assert_array_equal(a, c)
    with pytest.raises(flashkit.InvalidArgumentError, match="cache_seqlens: -1 is negative"):
        flashkit.attention_kvcache(q, kc, vc, -1)
    with pytest.raises(flashkit.InvalidArgumentError, match="cache_seqlens: True is a bool"):
        flashkit.attention_kvcache(q, kc, vc, True)
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=r"^cache_seqlens: 13 \(an int, for every sequence\) .* \(12 keys\)") as e:
        flashkit.attention_kvcache(q, kc, vc, 13)  # capacity 12
    assert e.value.status == capi.FK_ERROR_INVALID_ARGUMENT
    flashkit.attention_kvcache(q, kc, vc, 12)  # the whole capacity is valid
    # Paged: capacity = table columns x page rows (5 x 8).
    pq, pk, pv, _, _ = paged_case(rng, "float32", [13, 0, 40, 2, 21])
    table = rng.integers(0, pk.shape[0], (5, 5)).astype(np.int32)  # every entry a valid page
    flashkit.attention_kvcache(pq, pk, pv, 40, table)
    with pytest.raises(flashkit.InvalidArgumentError, match=r"^cache_seqlens: 41 .* \(40 keys\)"):
        flashkit.attention_kvcache(pq, pk, pv, 41, table)


# ------------------------------------------------------------------------------------------
# flash_attn_with_kvcache
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_flash_attn_with_kvcache_matches_reference(rng, dtype):
    q, kc, vc, seqlens, table = paged_case(rng, dtype, SEQLENS)
    out = flash_attn_with_kvcache(q, kc, vc, cache_seqlens=seqlens, block_table=table,
                                  causal=True, softcap=4.0, window_size=(9, -1))
    r_out, r_lse = ref.attention_kvcache(q, kc, vc, seqlens, table, causal=True, softcap=4.0,
                                         window_size=(9, -1))
    ref.assert_close(out, r_out, dtype, what="out")
    out2, lse = flash_attn_with_kvcache(q, kc, vc, None, None, None, None, seqlens, None,
                                       None, table, None, True, (9, -1), 4.0,
                                       return_softmax_lse=True, num_splits=3)
    np.testing.assert_array_equal(out, out2)
    ref.assert_close(lse, r_lse, "float32", factor=10, what="lse")


@pytest.mark.parametrize("name", ["k", "v", "rotary_cos", "rotary_sin", "cache_batch_idx",
                                  "cache_leftpad", "alibi_slopes"])
def test_flash_attn_with_kvcache_unsupported_arguments(rng, name):
    q = ref.randn(rng, (1, 1, 2, 8))
    kc = ref.randn(rng, (1, 4, 2, 8))
    with pytest.raises(NotImplementedError, match=f"^{name}: ") as e:
        flash_attn_with_kvcache(q, kc, kc, **{name: q})
    assert isinstance(e.value, flashkit.NotSupportedError)
    assert e.value.status == capi.FK_ERROR_NOT_SUPPORTED
    with pytest.raises(TypeError):
        flash_attn_with_kvcache(q, kc, kc, dropout_p=0.0)  # not an argument of the function
    with pytest.raises(flashkit.InvalidArgumentError, match="num_splits"):
        flash_attn_with_kvcache(q, kc, kc, num_splits=-1)


# ------------------------------------------------------------------------------------------
# Bad inputs: the error names the argument
# ------------------------------------------------------------------------------------------

def _bad(rng):
    return paged_case(rng, "float32", [13, 0, 40], max_blocks=5)


def test_block_table_wrong_dtype(rng):
    q, kc, vc, seqlens, table = _bad(rng)
    with pytest.raises(flashkit.InvalidArgumentError, match="^block_table: dtype int64") as e:
        flashkit.attention_kvcache(q, kc, vc, seqlens, table.astype(np.int64))
    assert e.value.status == capi.FK_ERROR_DTYPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="^cache_seqlens: dtype") as e:
        flashkit.attention_kvcache(q, kc, vc, seqlens.astype(np.uint32), table)
    assert e.value.status == capi.FK_ERROR_DTYPE_MISMATCH


def test_cache_seqlens_wrong_batch(rng):
    q, kc, vc, seqlens, table = _bad(rng)
    with pytest.raises(flashkit.InvalidArgumentError, match="^cache_seqlens: ") as e:
        flashkit.attention_kvcache(q, kc, vc, np.append(seqlens, 1).astype(np.int32), table)
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="^cache_seqlens: ") as e:
        flashkit.attention_kvcache(q, kc, vc, seqlens.reshape(3, 1), table)
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="^block_table: ") as e:
        flashkit.attention_kvcache(q, kc, vc, seqlens, table[:2])
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH


def test_out_of_range_entries_on_cpu(rng):
    q, kc, vc, seqlens, table = _bad(rng)
    num_blocks = kc.shape[0]
    bad = table.copy()
    bad[2, 3] = num_blocks  # one past the pool, inside sequence 2's 5 used pages
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=rf"^block_table: entry \[2\]\[3\] is {num_blocks}, outside "
                             rf"\[0, {num_blocks - 1}\]") as e:
        flashkit.attention_kvcache(q, kc, vc, seqlens, bad)
    assert e.value.status == capi.FK_ERROR_INVALID_ARGUMENT
    bad[2, 3] = -1
    with pytest.raises(flashkit.InvalidArgumentError, match=r"^block_table: entry \[2\]\[3\]"):
        flashkit.attention_kvcache(q, kc, vc, seqlens, bad)
    too_long = seqlens.copy()
    too_long[0] = 41  # capacity 5 x 8
    with pytest.raises(flashkit.InvalidArgumentError,
                       match=r"^cache_seqlens: entry 0 is 41, outside \[0, 40\]") as e:
        flashkit.attention_kvcache(q, kc, vc, too_long, table)
    assert e.value.status == capi.FK_ERROR_INVALID_ARGUMENT
    with pytest.raises(flashkit.InvalidArgumentError, match="^cache_seqlens: entry 1 is -3"):
        flashkit.attention_kvcache(q, kc, vc, np.array([1, -3, 2], np.int32), table)


def test_cache_shape_and_dtype_errors(rng):
    q, kc, vc, seqlens, table = _bad(rng)
    with pytest.raises(flashkit.InvalidArgumentError, match="^k_cache: rank 3") as e:
        flashkit.attention_kvcache(q, kc[0], vc, seqlens, table)
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="v_cache") as e:
        flashkit.attention_kvcache(q, kc, vc.astype(np.float16), seqlens, table)
    assert e.value.status == capi.FK_ERROR_DTYPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="^k_cache: ") as e:
        flashkit.attention_kvcache(q, kc[:, :, :, :16], vc[:, :, :, :16], seqlens, table)
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH
    # A contiguous cache must have q's batch.
    with pytest.raises(flashkit.InvalidArgumentError, match="^k_cache: ") as e:
        flashkit.attention_kvcache(q, kc[:2], vc[:2], seqlens)
    assert e.value.status == capi.FK_ERROR_SHAPE_MISMATCH
    with pytest.raises(flashkit.InvalidArgumentError, match="^v_cache: None"):
        flashkit.attention_kvcache(q, kc, None, seqlens, table)
    with pytest.raises(flashkit.InvalidArgumentError, match="^softmax_scale: NaN"):
        flashkit.attention_kvcache(q, kc, vc, seqlens, table, softmax_scale=float("nan"))


def test_capi_rejects_max_seqlen(rng):
    """max_seqlen_q/k are not used by the KV-cache form and must stay 0 (C ABI)."""
    q, kc, vc, seqlens, table = _bad(rng)
    from flashkit import _dlpack
    params = capi.fk_attention_params_t()
    capi.fk_attention_params_init(params)
    params.max_seqlen_k = 40
    refs = [_dlpack.as_tensor(a, n) for a, n in ((q, "q"), (kc, "k_cache"), (vc, "v_cache"),
                                                 (seqlens, "cache_seqlens"),
                                                 (table, "block_table"),
                                                 (np.empty_like(q), "out"))]
    keep = []
    addrs = _dlpack.pack_descriptors(refs, keep)
    ctx = flashkit.Context("cpu")
    with pytest.raises(flashkit.InvalidArgumentError, match="^max_seqlen_k: 40 given"):
        capi.fk_attention_kvcache_forward(ctx.handle, None, params, *addrs, None)
    params.max_seqlen_k = 0
    assert capi.fk_attention_kvcache_select_kernel(ctx.handle, params, *addrs,
                                                   None) == "cpu.attention"
    assert capi.fk_attention_kvcache_workspace_size(ctx.handle, params, *addrs, None) == 0


# ------------------------------------------------------------------------------------------
# GPU: the same paged case with torch CUDA tensors (skips without a GPU)
# ------------------------------------------------------------------------------------------

def _cuda_or_skip():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch")
    try:
        flashkit.Context("cuda:0")
    except flashkit.NotSupportedError as e:
        pytest.skip(f"flashkit has no CUDA backend here: {e}")
    return torch


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("page", [8, 12], ids=["page8", "page12"])
def test_paged_cuda_torch(rng, dtype, page):
    """The paged case on CUDA: torch tensors, out poisoned with NaN, the float64 reference, and
    the kernel variant the header promises (sm80-class for fp16/bf16 with a power-of-two page
    and head_dim % 8 == 0, generic otherwise)."""
    torch = _cuda_or_skip()
    td = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    seqlens = [13, 0, 5 * page, 2, 21]
    q, kc, vc, sl, table = paged_case(rng, "float32", seqlens, page=page, d=64)
    # GARBAGE entries stay: the kernels must not read past a sequence's last page.
    tq, tk, tv = (torch.from_numpy(a).to("cuda:0", td) for a in (q, kc, vc))
    tsl, ttab = torch.from_numpy(sl).cuda(), torch.from_numpy(table).cuda()
    r_out, r_lse = ref.attention_kvcache(tq.float().cpu().numpy(), tk.float().cpu().numpy(),
                                         tv.float().cpu().numpy(), sl, table, causal=True)
    ctx = flashkit.Context("cuda:0")
    name = ctx.select_kernel("attention_kvcache", tq, tk, tv, tsl, ttab, causal=True)
    fast = dtype != "float32" and page & (page - 1) == 0
    assert name == ("cuda.sm80.attention" if fast else "cuda.generic.attention"), name
    out = torch.full_like(tq, float("nan"))
    with torch.inference_mode():
        res, lse = flashkit.attention_kvcache(tq, tk, tv, tsl, ttab, causal=True, out=out,
                                              return_lse=True)
    torch.cuda.synchronize()
    assert res is out and lse.device.type == "cuda" and lse.dtype == torch.float32
    ref.assert_close(out.float().cpu().numpy(), r_out, dtype, factor=2, what="out")
    ref.assert_close(lse.cpu().numpy(), r_lse, "float32", factor=10, what="lse")
    # FlashAttention's entry point on the same tensors, int cache_seqlens broadcast.
    from_fa = flash_attn_with_kvcache(tq, tk, tv, cache_seqlens=13,
                                      block_table=ttab[:1].expand(5, -1).contiguous(),
                                      causal=True)
    r13, _ = ref.attention_kvcache(tq.float().cpu().numpy(), tk.float().cpu().numpy(),
                                   tv.float().cpu().numpy(), np.full(5, 13, np.int32),
                                   np.repeat(table[:1], 5, axis=0), causal=True)
    torch.cuda.synchronize()
    ref.assert_close(from_fa.float().cpu().numpy(), r13, dtype, factor=2, what="int seqlens")


@pytest.mark.gpu
def test_paged_cuda_graph_replay_with_new_tables(rng):
    """A decode step (seqlen_q 1, bf16, page 16) captured with torch.cuda.graph: the call reads
    cache_seqlens and block_table only on the device, so it is capturable, and a replay after
    the tables were rewritten in place (new lengths, other pages) gives the new answer; out is
    poisoned before each replay."""
    torch = _cuda_or_skip()
    td = torch.bfloat16
    q, kc, vc, sl, table = paged_case(rng, "float32", [40, 3, 77, 16], seqlen_q=1, h=8, hk=2,
                                      d=128, page=16, max_blocks=6, extra_pages=8)
    tq, tk, tv = (torch.from_numpy(a).to("cuda:0", td) for a in (q, kc, vc))
    tsl, ttab = torch.from_numpy(sl).cuda(), torch.from_numpy(table).cuda()
    out = torch.empty_like(tq)
    ctx = flashkit.Context("cuda:0")
    with torch.inference_mode():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            ctx.attention_kvcache(tq, tk, tv, tsl, ttab, causal=True, out=out)  # warm-up
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            ctx.attention_kvcache(tq, tk, tv, tsl, ttab, causal=True, out=out)
    kf, vf = tk.float().cpu().numpy(), tv.float().cpu().numpy()
    num_blocks = kc.shape[0]
    for step in range(3):
        new_sl = rng.integers(0, 6 * 16 + 1, size=4).astype(np.int32)
        new_sl[step % 4] = 0
        new_tab = np.stack([rng.permutation(num_blocks)[:6] for _ in range(4)]).astype(np.int32)
        new_tab[1, 0] = new_tab[0, 0]
        tsl.copy_(torch.from_numpy(new_sl))
        ttab.copy_(torch.from_numpy(new_tab))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        r_out, _ = ref.attention_kvcache(tq.float().cpu().numpy(), kf, vf, new_sl, new_tab,
                                         causal=True)
        ref.assert_close(out.float().cpu().numpy(), r_out, "bfloat16", factor=2,
                         what=f"replay {step}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_paged_cuda_wrong_entries_are_clamped_not_fatal(rng, dtype):
    """On the GPU the entries are not checked (the call never waits): a page index or a length
    out of range gives some result, but no error and no access outside the cache (the stream
    stays healthy and out is finite)."""
    torch = _cuda_or_skip()
    td = {"float32": torch.float32, "float16": torch.float16}[dtype]
    q, kc, vc, sl, table = paged_case(rng, "float32", [13, 21], d=64, page=8)
    table[0, 1] = 1 << 30
    table[1, 0] = -5
    sl[1] = 10 ** 6
    tq, tk, tv = (torch.from_numpy(a).to("cuda:0", td) for a in (q, kc, vc))
    out = torch.full_like(tq, float("nan"))
    with torch.inference_mode():
        flashkit.attention_kvcache(tq, tk, tv, torch.from_numpy(sl).cuda(),
                                   torch.from_numpy(table).cuda(), causal=True, out=out)
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()


def test_kvcache_into_a_given_lse(rng):
    q, kc, vc, seqlens, table = paged_case(rng, "float32", SEQLENS)
    lse = np.full((q.shape[0], q.shape[2], q.shape[1]), np.nan, np.float32)
    out, got = flashkit.attention_kvcache(q, kc, vc, seqlens, table, causal=True, lse=lse)
    assert got is lse
    r_out, r_lse = ref.attention_kvcache(q, kc, vc, seqlens, table, causal=True)
    ref.assert_close(out, r_out, "float32", what="out")
    ref.assert_close(lse, r_lse, "float32", factor=10, what="lse")
