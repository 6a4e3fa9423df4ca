// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Context.attentionKvCache (fk_attention_kvcache_forward, 0.5.0) on the CPU backend: one paged
 * case (vLLM's PagedAttention layout, Kwon et al. 2023, Section 4.1) against a double-precision
 * loop reference, and the error an out-of-range page gives.
 */
class AttentionKvCacheTest {
  // batch 3, 2 new queries, 4 query heads over 2 key heads (GQA), head_dim 8, pages of 4 keys,
  // at most 3 pages per sequence, a pool of 7 pages.
  private static final int B = 3, LQ = 2, H = 4, HK = 2, D = 8, PAGE = 4, MB = 3, NB = 7;
  private static final int[] SEQLENS = {6, 0, 12};
  // Shuffled pages; sequences 0 and 2 share page 5 (a common prefix); entries past a
  // sequence's last page are never read (99).
  private static final int[] TABLE = {5, 2, 99, 99, 99, 99, 5, 0, 3};

  private static Context ctx;

  @BeforeAll
  static void open() {
    ctx = Context.cpu(1);
  }

  @AfterAll
  static void close() {
    ctx.close();
  }

  /** A FLOAT32 tensor of standard normal values (also the other test classes' random data). */
  static Tensor random(Random rng, long... shape) {
    Tensor t = Tensor.allocate(DType.FLOAT32, shape);
    var f = t.floats();
    while (f.hasRemaining()) f.put((float) rng.nextGaussian());
    return t;
  }

  private static Tensor ints(int[] values, long... shape) {
    Tensor t = Tensor.allocate(DType.INT32, shape);
    t.ints().put(values);
    return t;
  }

  private static Tensor nanFilled(long... shape) {
    Tensor t = Tensor.allocate(DType.FLOAT32, shape);
    var f = t.floats();
    while (f.hasRemaining()) f.put(Float.NaN);
    return t;
  }

  /** Causal attention of q over each sequence's keys, gathered page by page; out (B,LQ,H,D). */
  private static double[] reference(float[] q, float[] kc, float[] vc) {
    double[] out = new double[B * LQ * H * D];
    double scale = 1.0 / Math.sqrt(D);
    for (int b = 0; b < B; b++) {
      int n = SEQLENS[b];
      for (int i = 0; i < LQ; i++) {
        int pos = n - LQ + i;  // bottom-right aligned
        for (int h = 0; h < H; h++) {
          int kh = h / (H / HK);
          double[] s = new double[n];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j <= Math.min(pos, n - 1); j++) {
            int row = (TABLE[b * MB + j / PAGE] * PAGE + j % PAGE) * HK + kh;
            double dot = 0;
            for (int d = 0; d < D; d++) dot += q[((b * LQ + i) * H + h) * D + d] * kc[row * D + d];
            s[j] = scale * dot;
            max = Math.max(max, s[j]);
          }
          if (pos < 0 || n == 0) continue;  // sees no key: 0
          double denom = 0;
          double[] acc = new double[D];
          for (int j = 0; j <= pos; j++) {
            double p = Math.exp(s[j] - max);
            denom += p;
            int row = (TABLE[b * MB + j / PAGE] * PAGE + j % PAGE) * HK + kh;
            for (int d = 0; d < D; d++) acc[d] += p * vc[row * D + d];
          }
          for (int d = 0; d < D; d++) out[((b * LQ + i) * H + h) * D + d] = acc[d] / denom;
        }
      }
    }
    return out;
  }

  @Test
  void pagedCacheMatchesReference() {
    Random rng = new Random(20261130L);
    try (Tensor q = random(rng, B, LQ, H, D);
         Tensor kc = random(rng, NB, PAGE, HK, D);
         Tensor vc = random(rng, NB, PAGE, HK, D);
         Tensor seqlens = ints(SEQLENS, B);
         Tensor table = ints(TABLE, B, MB);
         Tensor out = nanFilled(B, LQ, H, D);
         Tensor lse = nanFilled(B, H, LQ)) {
      AttentionParams p = new AttentionParams().causal(true);
      assertEquals("cpu.attention",
          ctx.attentionKvCacheSelectKernel(p, q, kc, vc, seqlens, table, out, lse));
      assertEquals(0L, ctx.attentionKvCacheWorkspaceSize(p, q, kc, vc, seqlens, table, out, lse));
      ctx.attentionKvCache(p, q, kc, vc, seqlens, table, out, lse);
      double[] expected = reference(q.toFloatArray(), kc.toFloatArray(), vc.toFloatArray());
      float[] got = out.toFloatArray();
      for (int i = 0; i < got.length; i++) {
        assertTrue(Math.abs(got[i] - expected[i]) <= 1e-5 * Math.max(1.0, Math.abs(expected[i])),
            "out[" + i + "] = " + got[i] + ", expected " + expected[i]);
      }
      float[] l = lse.toFloatArray();
      // Sequence 1 holds no key: lse -inf for all its rows; the others are finite.
      for (int h = 0; h < H; h++) {
        for (int i = 0; i < LQ; i++) {
          float x = l[(1 * H + h) * LQ + i];
          assertEquals(Float.NEGATIVE_INFINITY, x);
          assertTrue(Float.isFinite(l[(0 * H + h) * LQ + i]));
        }
      }
    }
  }

  @Test
  void outOfRangePageNamesTheEntry() {
    Random rng = new Random(7L);
    int[] bad = TABLE.clone();
    bad[2 * MB + 1] = NB;  // sequence 2's second page, one past the pool
    try (Tensor q = random(rng, B, LQ, H, D);
         Tensor kc = random(rng, NB, PAGE, HK, D);
         Tensor vc = random(rng, NB, PAGE, HK, D);
         Tensor seqlens = ints(SEQLENS, B);
         Tensor table = ints(bad, B, MB);
         Tensor out = nanFilled(B, LQ, H, D)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attentionKvCache(null, q, kc, vc, seqlens, table, out, null));
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
      assertEquals("block_table: entry [2][1] is 7, outside [0, 6] (a page of k_cache)",
          e.getMessage());
      for (float x : out.toFloatArray()) assertTrue(Float.isNaN(x), "out written on failure");
      // A block table of the wrong dtype is refused before anything runs.
      try (Tensor f = Tensor.allocate(DType.FLOAT32, B, MB)) {
        InvalidArgumentException d = assertThrows(InvalidArgumentException.class,
            () -> ctx.attentionKvCache(null, q, kc, vc, seqlens, f, out, null));
        assertEquals(Status.DTYPE_MISMATCH, d.getStatus());
        assertTrue(d.getMessage().startsWith("block_table: "), d.getMessage());
      }
    }
  }
}
