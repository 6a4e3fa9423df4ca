"""GPU suite: torch CUDA tensors through flashkit's CUDA backend, against torch's own ops.

Tolerance rule (FlashAttention's): flashkit's max error against the float64 reference is at most
twice the error of torch's kernel on the same inputs, plus a small absolute term.
Skips without torch, without a CUDA device or without a CUDA-enabled flashkit.
"""

import math

import numpy as np
import pytest

import flashkit
import fk_reference as ref

pytestmark = pytest.mark.gpu

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to torch", allow_module_level=True)
try:
    flashkit.Context("cuda:0")
except flashkit.NotSupportedError as e:
    pytest.skip(f"flashkit has no CUDA backend here: {e}", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

DEV = "cuda:0"
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
ATOL = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 4e-3}


@pytest.fixture
def gen(request):
    import zlib
    g = torch.Generator(device=DEV)
    g.manual_seed(zlib.crc32(request.node.nodeid.encode()))
    return g


def randn(gen, shape, dtype, scale=1.0):
    return (torch.randn(shape, generator=gen, device=DEV, dtype=torch.float32) * scale).to(dtype)


def np64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def check_rule(fk, anchor, expected, dtype, what):
    """flashkit's error <= 2 x the anchor's error + atol."""
    torch.cuda.synchronize()
    err_fk = np.abs(np64(fk) - expected).max()
    err_anchor = np.abs(np64(anchor) - expected).max()
    bound = 2 * err_anchor + ATOL[dtype] * max(1.0, np.abs(expected).max())
    assert err_fk <= bound, f"{what}: flashkit error {err_fk:.3g} > {bound:.3g} " \
                            f"(torch error {err_anchor:.3g})"


def test_cuda_context_info():
    info = flashkit.Context("cuda:0").info()
    assert info["backend"] == "cuda" and info["device"] == "cuda:0"
    assert info["compute_capability"] == torch.cuda.get_device_capability(0)
    assert info["kernel_family"] in ("generic", "sm80", "sm90")


# ------------------------------------------------------------------------------------------
# Attention vs scaled_dot_product_attention
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [(8, 8), (8, 2)], ids=["mha", "gqa"])
def test_attention_vs_sdpa(gen, dtype, causal, heads):
    td = TORCH_DTYPES[dtype]
    b, s, d = 2, 192, 64
    h, hk = heads
    q = randn(gen, (b, s, h, d), td)
    k = randn(gen, (b, s, hk, d), td)
    v = randn(gen, (b, s, hk, d), td)
    out, lse = flashkit.attention(q, k, v, causal=causal, return_lse=True)
    assert out.device == q.device and out.dtype == td and lse.dtype == torch.float32
    kr = k.repeat_interleave(h // hk, dim=2)
    vr = v.repeat_interleave(h // hk, dim=2)
    anchor = F.scaled_dot_product_attention(q.transpose(1, 2), kr.transpose(1, 2),
                                            vr.transpose(1, 2), is_causal=causal).transpose(1, 2)
    expected, expected_lse = ref.attention(np64(q), np64(k), np64(v), causal=causal)
    check_rule(out, anchor, expected, dtype, "attention")
    torch.cuda.synchronize()
    assert np.abs(lse.cpu().numpy() - expected_lse).max() < 1e-3 * max(1, s)


def test_attention_window_softcap_varlen(gen):
    td = torch.bfloat16
    lens = [37, 0, 64, 5]
    cu = torch.tensor([0] + list(np.cumsum(lens)), dtype=torch.int32, device=DEV)
    total = int(cu[-1])
    q = randn(gen, (total, 4, 128), td)
    k = randn(gen, (total, 2, 128), td)
    v = randn(gen, (total, 2, 128), td)
    opts = dict(causal=True, window_size=(16, 0), softcap=8.0)
    out, lse = flashkit.attention(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, return_lse=True,
                                  **opts)
    torch.cuda.synchronize()
    cu_np = cu.cpu().numpy()
    r_out, r_lse = ref.attention(np64(q), np64(k), np64(v), cu_seqlens_q=cu_np,
                                 cu_seqlens_k=cu_np, **opts)
    ref.assert_close(out.float().cpu().numpy(), r_out, "bfloat16")
    ref.assert_close(lse.cpu().numpy(), r_lse, "float32", factor=50)
    # max_seqlen given (FlashAttention's way): cu_seqlens are not read on the host, same result.
    out2 = flashkit.attention(q, k, v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(lens),
                              max_seqlen_k=max(lens), **opts)
    torch.cuda.synchronize()
    ref.assert_close(out2.float().cpu().numpy(), r_out, "bfloat16")


def test_torch_views_read_like_dlpack(gen):
    """flashkit reads torch tensors directly (data_ptr, sizes, strides) instead of exporting a
    DLPack capsule: every view must give what the capsule describes."""
    from flashkit import _dlpack
    base = randn(gen, (6, 10, 8), torch.bfloat16)
    views = [base, base[2:], base[:, 3:7], base.transpose(0, 1), base[..., 1::2], base[1, 2],
             base.unsqueeze(0).expand(2, 6, 10, 8),
             base[0, 0, 0], base[:0], base.float().cpu(), base.cpu()[1:, ::3],
             torch.zeros(3, 4, dtype=torch.int32, device=DEV),
             torch.zeros(5, dtype=torch.float16, device=DEV)[1:]]
    if hasattr(torch, "float8_e4m3fn"):
        views.append(torch.zeros(4, 6, device=DEV).to(torch.float8_e4m3fn)[:, 2:])
    for i, t in enumerate(views):
        fast = _dlpack._from_torch(t, "x")
        slow = _dlpack._from_dlpack(t, "x", "torch", None)
        assert fast is not None, i
        for attr in ("data", "byte_offset", "device_type", "device_id", "dtype", "shape",
                     "strides"):
            got, want = getattr(fast, attr), getattr(slow, attr)
            if attr == "data":  # DLPack may split the address into data + byte_offset
                got, want = got + fast.byte_offset, want + slow.byte_offset
            if attr == "byte_offset":
                continue
            assert got == want, f"view {i}: {attr} {got} != {want}"
    # What the direct read does not cover goes through DLPack (and its messages).
    assert _dlpack._from_torch(torch.zeros(2, dtype=torch.float64, device=DEV), "x") is None
    assert _dlpack._from_torch(torch.zeros(2, 2).to_sparse(), "x") is None


def test_flash_attn_interface_cuda(gen):
    from flashkit.flash_attn_interface import flash_attn_func, flash_attn_qkvpacked_func
    qkv = randn(gen, (2, 96, 3, 4, 64), torch.float16)
    out, lse, probs = flash_attn_qkvpacked_func(qkv, causal=True, return_attn_probs=True)
    q, k, v = qkv.unbind(2)
    anchor = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                            v.transpose(1, 2), is_causal=True).transpose(1, 2)
    expected, expected_lse = ref.attention(np64(q), np64(k), np64(v), causal=True)
    check_rule(out, anchor, expected, "float16", "qkvpacked")
    assert probs is None and tuple(lse.shape) == (2, 4, 96)
    out2 = flash_attn_func(q, k, v, causal=True)
    check_rule(out2, anchor, expected, "float16", "flash_attn_func")
    with pytest.raises(flashkit.NotSupportedError, match="requires_grad"):
        flash_attn_func(q.clone().requires_grad_(True), k, v)


# ------------------------------------------------------------------------------------------
# GEMM vs torch.matmul
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_gemm_vs_matmul(gen, dtype):
    td = TORCH_DTYPES[dtype]
    a = randn(gen, (3, 200, 320), td)
    b = randn(gen, (320, 176), td)
    bias = randn(gen, (176,), td)
    d = flashkit.gemm(a, b, bias=bias, activation="gelu")
    anchor = F.gelu(torch.matmul(a, b) + bias)
    expected = ref.gemm(np64(a), np64(b), bias=np64(bias), act="gelu")
    check_rule(d, anchor, expected, dtype, "gemm+bias+gelu")
    bt = randn(gen, (176, 320), td)
    d2 = flashkit.gemm(a[0], bt, trans_b=True, alpha=0.5)
    check_rule(d2, 0.5 * torch.matmul(a[0], bt.T), 0.5 * np64(a[0]) @ np64(bt).T, dtype,
               "gemm trans_b")


def test_gemm_scaled_fp8_vs_scaled_mm(gen):
    """torch float8 tensors (DLPack codes 10/12) through fk_gemm_scaled on the Hopper kernel,
    against torch._scaled_mm on the same quantised inputs and scales."""
    m, n, k = 256, 512, 1024
    a = randn(gen, (m, k), torch.float32).to(torch.float8_e4m3fn)
    w = randn(gen, (n, k), torch.float32).to(torch.float8_e4m3fn)
    sa = torch.rand((m, 1), generator=gen, device=DEV) + 0.5
    sb = torch.rand((1, n), generator=gen, device=DEV) + 0.5
    d = flashkit.gemm_scaled(a, w, trans_b=True, scale_a=sa.reshape(m), scale_b=sb.reshape(n))
    assert d.dtype == torch.bfloat16 and d.shape == (m, n)
    anchor = torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    expected = (np64(a) * np64(sa)) @ (np64(w) * np64(sb).T).T
    check_rule(d, anchor, expected, "bfloat16", "gemm_scaled fp8 per-row/per-column")
    ctx = flashkit.Context(DEV)
    name = ctx.select_kernel("gemm_scaled", a, w, trans_b=True)
    if torch.cuda.get_device_capability() == (9, 0):
        assert name == "cuda.sm90.gemm", name


def test_attention_fp8_torch_float8(gen):
    """torch float8_e4m3fn CUDA tensors through fk_attention_fp8_forward (GQA, causal, descale
    tensors from torch): against the float64 reference on the dequantised values. On Hopper the
    fp8 tensor-core kernel (P rounded to e4m3): every element within the bound of that rounding
    ((2^-4 sum P|v| + 2^-10 sum |v|) / l, plus bf16 output rounding; tests/gpu/
    test_attention_fp8.cpp says why) and the relative L2 error at most twice that of the float64
    math with P rounded to e4m3 (FlashAttention's rule). Elsewhere the dequantising path: bit for
    bit flashkit.attention on the bf16-rounded dequantised tensors."""
    b, s, h, hk, d = 2, 300, 8, 2, 128
    q8, k8, v8 = (randn(gen, shape, torch.float32).mul(2).to(torch.float8_e4m3fn)
                  for shape in ((b, s, h, d), (b, s, hk, d), (b, s, hk, d)))
    dq, dk, dv = (torch.rand((b, hk), generator=gen, device=DEV) * 0.5 + 0.05 for _ in range(3))
    out, lse = flashkit.attention_fp8(q8, k8, v8, descale_q=dq, descale_k=dk, descale_v=dv,
                                      causal=True, return_lse=True)
    assert out.dtype == torch.bfloat16 and out.shape == q8.shape and lse.dtype == torch.float32
    group = h // hk
    qf = q8.float() * dq.repeat_interleave(group, dim=1)[:, None, :, None]
    kf = k8.float() * dk[:, None, :, None]
    vf = v8.float() * dv[:, None, :, None]
    r_out, r_lse = ref.attention(np64(qf), np64(kf), np64(vf), causal=True)
    ref.assert_close(lse.cpu().numpy(), r_lse, "bfloat16", what="fp8 lse")
    name = flashkit.Context(DEV).select_kernel("attention_fp8", q8, k8, v8, causal=True)
    if torch.cuda.get_device_capability() == (9, 0):
        assert name == "cuda.sm90.attention_fp8", name
    if name == "cuda.sm90.attention_fp8":
        def e4m3(p):
            return torch.from_numpy(p).to(torch.float8_e4m3fn).double().numpy()
        naive, _ = ref.attention(np64(qf), np64(kf), np64(vf), causal=True, round_p=e4m3)
        av = np.abs(np64(vf))
        weighted, _ = ref.attention(np64(qf), np64(kf), av, causal=True)
        seen, _ = ref.attention(np64(qf), np64(kf), av, causal=True,
                                round_p=lambda p: (p > 0).astype(np.float64))
        got = out.cpu().double().numpy()
        assert np.isfinite(got).all()
        mag = np.abs(r_out).max()
        bound = (2.0 ** -4 * weighted + 2.0 ** -10 * seen + 2.0 ** -8 * np.abs(r_out)
                 + 1e-5 * max(1.0, mag))
        err = np.abs(got - r_out)
        assert (err <= bound).all(), (int((err > bound).sum()), float((err / bound).max()))
        rel = np.linalg.norm(got - r_out) / np.linalg.norm(r_out)
        rel_naive = np.linalg.norm(naive - r_out) / np.linalg.norm(r_out)
        assert rel <= 2 * rel_naive + 2.0 ** -8, (rel, rel_naive)
        return
    ref.assert_close(out.cpu().float().numpy(), r_out, "bfloat16", what="fp8 out")
    want, want_lse = flashkit.attention(qf.bfloat16(), kf.bfloat16(), vf.bfloat16(), causal=True,
                                        return_lse=True)
    assert torch.equal(out, want) and torch.equal(lse, want_lse)


def test_non_default_stream(gen):
    """Work queued on a side stream: flashkit must run on torch's current stream, after the
    producer's kernels and before the consumer's, with no synchronisation in between."""
    s = torch.cuda.Stream()
    w = randn(gen, (2048, 2048), torch.float32, scale=1 / math.sqrt(2048))
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        x = torch.ones(2048, 2048, device=DEV)
        for _ in range(30):          # slow producer on s
            x = torch.tanh(x @ w)
        a = x[:256].to(torch.bfloat16)
        b = x[256:512].T.contiguous().to(torch.bfloat16)
        d = flashkit.gemm(a, b)      # queued on s
        d_attn = flashkit.attention(a.view(1, 256, 16, 128), a.view(1, 256, 16, 128),
                                    a.view(1, 256, 16, 128), causal=True)
        consumed = d.float() * 2     # consumer on s
    s.synchronize()
    expected = ref.gemm(np64(a), np64(b))
    check_rule(d, torch.matmul(a, b), expected, "bfloat16", "gemm on side stream")
    np.testing.assert_allclose(np64(consumed), 2 * np64(d), rtol=0, atol=0)
    q = a.view(1, 256, 16, 128)
    anchor = F.scaled_dot_product_attention(q.transpose(1, 2), q.transpose(1, 2),
                                            q.transpose(1, 2), is_causal=True).transpose(1, 2)
    check_rule(d_attn, anchor, ref.attention(np64(q), np64(q), np64(q), causal=True)[0],
               "bfloat16", "attention on side stream")


def test_cuda_graph_capture_and_replay(gen):
    """A GEMM (bias, GELU) feeding varlen attention, captured with torch.cuda.graph and replayed
    on fresh inputs copied into the captured tensors; the outputs are poisoned before each
    replay and checked against the float64 reference of those inputs."""
    lens = [8, 29, 67, 1, 40]
    cu = torch.tensor([0] + list(np.cumsum(lens)), dtype=torch.int32, device=DEV)
    total, h, d = int(sum(lens)), 4, 64
    x = randn(gen, (total, 256), torch.bfloat16)
    w = randn(gen, (3 * h * d, 256), torch.bfloat16, scale=1 / 16)
    bias = randn(gen, (3 * h * d,), torch.float32)
    ctx = flashkit.Context(DEV)

    def forward():
        qkv = ctx.gemm(x, w, trans_b=True, bias=bias, activation="gelu").view(total, 3, h, d)
        out = ctx.attention(qkv[:, 0], qkv[:, 1], qkv[:, 2], cu_seqlens_q=cu, cu_seqlens_k=cu,
                            max_seqlen_q=max(lens), max_seqlen_k=max(lens))
        return qkv, out

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        forward()                     # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        qkv, out = forward()
    cu_np = cu.cpu().numpy()
    for _ in range(2):
        x.copy_(randn(gen, x.shape, torch.bfloat16))
        w.copy_(randn(gen, w.shape, torch.bfloat16, scale=1 / 16))
        bias.copy_(randn(gen, bias.shape, torch.float32))
        qkv.fill_(float("nan"))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        expected = ref.gemm(np64(x), np64(w), trans_b=True, bias=np64(bias), act="gelu")
        anchor = F.gelu(F.linear(x, w, bias.to(torch.bfloat16)))
        check_rule(qkv.view(total, -1), anchor, expected, "bfloat16", "gemm replayed")
        q, k, v = (qkv[:, i] for i in range(3))
        r_out, _ = ref.attention(np64(q), np64(k), np64(v), cu_seqlens_q=cu_np,
                                 cu_seqlens_k=cu_np)
        ref.assert_close(out.float().cpu().numpy(), r_out, "bfloat16")


def test_cuda_graph_varlen_needs_max_seqlen(gen):
    """Under capture the library cannot read cu_seqlens back: the call raises an error naming
    max_seqlen_q, and the capture itself stays valid (torch ends it without error)."""
    lens = [5, 17]
    cu = torch.tensor([0, 5, 22], dtype=torch.int32, device=DEV)
    q = randn(gen, (22, 2, 64), torch.float16)
    out = torch.full_like(q, float("nan"))
    ctx = flashkit.Context(DEV)
    ctx.attention(q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, out=out)  # fine outside capture
    out.fill_(float("nan"))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with pytest.raises(flashkit.InvalidArgumentError, match="max_seqlen_q"):
            ctx.attention(q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, out=out)
        with pytest.raises(flashkit.InvalidArgumentError, match="max_seqlen_k"):
            ctx.attention(q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, out=out,
                          max_seqlen_q=max(lens))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.isnan(out).all()


def test_workspace_is_used_and_captured(gen):
    """A caller workspace (workspace=) holds the scratch of a split-K GEMM and of an FFT conv
    plan that recomputes its spectrum: the workspace's bytes change (the kernels wrote there),
    results match the float64 reference, a 16-byte workspace still works (the rest is
    allocated), and both calls replay from a CUDA graph."""
    # decode-sized M: split-K on the H200 (fp32 partials); M = 33 is above the decode kernel's
    # 32 rows (it needs no workspace), whatever N is
    m, n, kk = 33, 2048, 8192
    a = randn(gen, (m, kk), torch.bfloat16)
    b = randn(gen, (n, kk), torch.bfloat16, scale=1 / 64)
    u = randn(gen, (2, 8, 1024), torch.bfloat16)
    filt = randn(gen, (8, 1024), torch.float32, scale=0.05)
    ctx = flashkit.Context(DEV)
    conv = flashkit.FFTConv(1024)
    ws = torch.full((64 << 20,), 0x5A, dtype=torch.uint8, device=DEV)

    def forward(workspace):
        return (ctx.gemm(a, b, trans_b=True, workspace=workspace),
                conv.run(ctx, u, filt, workspace=workspace))

    def check(d, y):
        torch.cuda.synchronize()
        exp_d = ref.gemm(np64(a), np64(b), trans_b=True)
        check_rule(d, a.float() @ b.float().t(), exp_d, "bfloat16", "gemm with workspace")
        exp_y = ref.fftconv(np64(u), np64(filt))
        err = np.abs(np64(y) - exp_y).max() / np.abs(exp_y).max()
        assert err < 2e-2, f"fftconv with workspace: relative error {err:.3g}"

    check(*forward(ws))
    assert (ws != 0x5A).any(), "the kernels wrote nothing into the workspace"
    check(*forward(torch.empty(16, dtype=torch.uint8, device=DEV)))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        forward(ws)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        d, y = forward(ws)
    for _ in range(2):
        a.copy_(randn(gen, a.shape, torch.bfloat16))
        u.copy_(randn(gen, u.shape, torch.bfloat16))
        filt.copy_(randn(gen, filt.shape, torch.float32, scale=0.05))
        d.fill_(float("nan"))
        y.fill_(float("nan"))
        graph.replay()
        check(d, y)
    cpu_ws = torch.empty(64, dtype=torch.uint8)
    with pytest.raises(flashkit.InvalidArgumentError, match="workspace: on cpu"):
        ctx.gemm(a, b, trans_b=True, workspace=cpu_ws)


# ------------------------------------------------------------------------------------------
# FFT convolution vs torch.fft; Monarch vs a torch composition
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fftconv_vs_torch_fft(gen, dtype):
    td = TORCH_DTYPES[dtype]
    bsz, ch, length = 4, 16, 1024
    u = randn(gen, (bsz, ch, length), td)
    k = randn(gen, (ch, length), torch.float32, scale=0.05)
    D = randn(gen, (ch,), torch.float32)
    y = flashkit.FFTConv(length)(u, k, D=D)
    n = 2 * length
    anchor = torch.fft.irfft(torch.fft.rfft(u.float(), n=n) * torch.fft.rfft(k, n=n),
                             n=n)[..., :length] + D[:, None] * u.float()
    expected = ref.fftconv(np64(u), np64(k), np64(D))
    check_rule(y, anchor.to(td), expected, dtype, "fftconv")


def test_monarch_vs_torch(gen):
    td = torch.float16
    w1 = randn(gen, (16, 16, 16), td, scale=0.25)
    w2 = randn(gen, (16, 16, 16), td, scale=0.25)
    x = randn(gen, (2, 64, 256), td)
    out = flashkit.monarch(x, w1, w2)
    # torch composition of the header's definition
    y1 = torch.einsum("tic,iac->tia", x.reshape(128, 16, 16), w1).reshape(128, 16, 16)
    z = y1.transpose(1, 2)                                       # (t, j, b)
    anchor = torch.einsum("tjb,jmb->tmj", z, w2).reshape(2, 64, 256)
    expected = ref.monarch(np64(x), np64(w1), np64(w2))
    check_rule(out, anchor, expected, "float16", "monarch")
    y = flashkit.blockdiag_linear(x, w1)
    check_rule(y, y1.reshape(2, 64, 256), ref.blockdiag(np64(x), np64(w1)), "float16",
               "blockdiag")


# ------------------------------------------------------------------------------------------
# Devices, selection, other libraries
# ------------------------------------------------------------------------------------------

def test_select_kernel_and_forced_family(gen):
    q = randn(gen, (1, 64, 4, 64), torch.bfloat16)
    name = flashkit.Context("cuda:0").select_kernel("attention", q, q, q)
    assert name.startswith("cuda"), name
    generic = flashkit.Context("cuda:0", kernel_family="generic")
    assert generic.info()["kernel_family"] == "generic"
    assert "generic" in generic.select_kernel("attention", q, q, q)
    out = generic.attention(q, q, q)
    expected = ref.attention(np64(q), np64(q), np64(q))[0]
    torch.cuda.synchronize()
    ref.assert_close(out.float().cpu().numpy(), expected, "bfloat16")


def test_wrong_device_names_argument(gen):
    q = randn(gen, (8, 2, 32), torch.float16)
    cu_host = torch.tensor([0, 8], dtype=torch.int32)   # on the CPU
    with pytest.raises(flashkit.InvalidArgumentError, match="cu_seqlens_q"):
        flashkit.attention(q, q, q, cu_seqlens_q=cu_host, cu_seqlens_k=cu_host)
    a = randn(gen, (4, 4), torch.float32)
    with pytest.raises(flashkit.InvalidArgumentError, match="b"):
        flashkit.gemm(a, torch.ones(4, 4))


def test_cupy_roundtrip_on_its_stream():
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(7)
    a_np = ref.randn(rng, (128, 96))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        a = cupy.asarray(a_np)
        d = flashkit.gemm(a, a.T)
        d2 = d * 1.0
    s.synchronize()
    assert isinstance(d, cupy.ndarray)
    ref.assert_close(cupy.asnumpy(d2), ref.gemm(a_np, a_np.T), "float32")


def test_jax_gpu_roundtrip():
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX sees no GPU")
    import jax.numpy as jnp
    rng = np.random.default_rng(8)
    a_np = ref.randn(rng, (64, 48))
    a = jax.device_put(jnp.asarray(a_np), gpu)
    d = flashkit.gemm(a, a.T)
    assert isinstance(d, jax.Array) and next(iter(d.devices())) == gpu
    ref.assert_close(np.asarray(d + 0), ref.gemm(a_np, a_np.T), "float32")
