"""One decode step over a paged KV cache (vLLM's layout), GQA 32 query heads on 8 KV heads,
checked against a float64 NumPy softmax over each sequence's valid keys.

    python examples/python/kvcache_decode.py          # NumPy on the CPU backend
    python examples/python/kvcache_decode.py --torch  # torch bf16 tensors (CUDA if available)

The cache is a pool of pages (num_blocks, page_block_size, nheads_k, head_dim); block_table
(batch, max_blocks_per_seq) int32 lists each sequence's pages in order, cache_seqlens (batch,)
int32 its valid keys. On a GPU, a decode over few sequences has its keys split into chunks
(split-KV) so that it fills the GPU; that takes scratch, which the workspace query reports.
"""

import sys

import numpy as np

import flashkit

batch, nheads, nheads_k, head_dim, page = 3, 32, 8, 128, 16
seqlens = np.array([37, 300, 1], dtype=np.int32)  # valid keys per sequence
max_blocks = int(-(-seqlens.max() // page))         # table columns: pages of the longest
rng = np.random.default_rng(0)

# A pool with spare pages, handed out in shuffled order (as an allocator would).
need = [int(-(-n // page)) for n in seqlens]
num_blocks = sum(need) + 4
order = rng.permutation(num_blocks)
block_table = np.zeros((batch, max_blocks), dtype=np.int32)  # unused entries: any valid page
used = 0
for b, n in enumerate(need):
    block_table[b, :n] = order[used:used + n]
    used += n
k_cache = rng.standard_normal((num_blocks, page, nheads_k, head_dim), dtype=np.float32)
v_cache = rng.standard_normal((num_blocks, page, nheads_k, head_dim), dtype=np.float32)
q = rng.standard_normal((batch, 1, nheads, head_dim), dtype=np.float32)  # one new token each

use_torch = "--torch" in sys.argv
if use_torch:
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dt = torch.bfloat16 if device == "cuda" else torch.float32
    q_, k_, v_ = (torch.from_numpy(t).to(device, dt) for t in (q, k_cache, v_cache))
    sl_, bt_ = (torch.from_numpy(t).to(device) for t in (seqlens, block_table))
else:
    q_, k_, v_, sl_, bt_ = q, k_cache, v_cache, seqlens, block_table

# out: (batch, 1, nheads, head_dim); lse: (batch, nheads, 1) fp32, natural log
out, lse = flashkit.attention_kvcache(q_, k_, v_, sl_, bt_, return_lse=True)
ctx = flashkit.default_context(str(q_.device) if use_torch else "cpu")
print("kernel:", ctx.select_kernel("attention_kvcache", q_, k_, v_, sl_, bt_))
print("workspace bytes (nonzero: the keys are split):",
      ctx.workspace_size("attention_kvcache", q_, k_, v_, sl_, bt_, return_lse=True))
if use_torch:
    out, lse = out.float().cpu().numpy(), lse.cpu().numpy()
    # the reference takes the inputs as the call saw them (rounded to bf16 on a GPU)
    q, k_cache, v_cache = (t.float().cpu().numpy() for t in (q_, k_, v_))

# Reference: gather each sequence's keys from its pages, softmax(q k^T / sqrt(d)) v in float64.
group = nheads // nheads_k
worst = 0.0
for b in range(batch):
    n = int(seqlens[b])
    rows = np.concatenate([np.arange(page) + page * p for p in range(need[b])])[:n]
    pages = block_table[b, rows // page]
    kb = k_cache[pages, rows % page].astype(np.float64)  # (n, nheads_k, head_dim)
    vb = v_cache[pages, rows % page].astype(np.float64)
    for h in range(nheads):
        s = kb[:, h // group] @ q[b, 0, h].astype(np.float64) / np.sqrt(head_dim)
        m = s.max()
        p = np.exp(s - m)
        ref = p @ vb[:, h // group] / p.sum()
        worst = max(worst, float(np.abs(out[b, 0, h] - ref).max()),
                    abs(float(lse[b, h, 0]) - (m + np.log(p.sum()))))
tol = 2e-2 if use_torch and q_.dtype != torch.float32 else 1e-4  # bf16: out's rounding
print(f"max |flashkit - float64 reference| over out and lse: {worst:.2e} (tolerance {tol})")
assert worst <= tol, worst
