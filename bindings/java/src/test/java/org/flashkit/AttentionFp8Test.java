// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** fk_attention_fp8_forward from Java: e4m3fn q, k, v as raw codes, against a float64 loop. */
class AttentionFp8Test {
  static final int B = 2, SQ = 3, SK = 5, H = 4, HK = 2, D = 8;

  static float bf16(short bits) {
    return Float.intBitsToFloat((bits & 0xFFFF) << 16);
  }

  @Test
  void gqaCausalWithDescalesMatchesFloat64() {
    Random rng = new Random(20261204L);
    try (Context ctx = Context.cpu();
        Tensor q = Tensor.allocate(DType.FLOAT8_E4M3FN, B, SQ, H, D);
        Tensor k = Tensor.allocate(DType.FLOAT8_E4M3FN, B, SK, HK, D);
        Tensor v = Tensor.allocate(DType.FLOAT8_E4M3FN, B, SK, HK, D);
        Tensor dq = Tensor.allocate(DType.FLOAT32, B, HK);
        Tensor dk = Tensor.allocate(DType.FLOAT32, B, HK);
        Tensor dv = Tensor.allocate(DType.FLOAT32, B, HK);
        Tensor out = Tensor.allocate(DType.BFLOAT16, B, SQ, H, D);
        Tensor lse = Tensor.allocate(DType.FLOAT32, B, H, SQ)) {
      int[][] codes = new int[3][];
      Tensor[] qkv = {q, k, v};
      for (int t = 0; t < 3; ++t) {
        ByteBuffer bb = qkv[t].bytes();
        codes[t] = new int[bb.capacity()];
        for (int i = 0; i < codes[t].length; ++i) {
          bb.put(i, (byte) (codes[t][i] = GemmScaledTest.code(rng, true)));
        }
      }
      for (Tensor d : new Tensor[] {dq, dk, dv}) {
        for (int i = 0; i < B * HK; ++i) d.floats().put(i, 0.05f + 0.5f * rng.nextFloat());
      }
      AttentionParams p = new AttentionParams().causal(true);
      ctx.attentionFp8(p, q, k, v, dq, dk, dv, null, null, out, lse, null);
      assertEquals("cpu.attention+fp8_dequant",
          ctx.attentionFp8SelectKernel(p, q, k, v, dq, dk, dv, null, null, out, lse));
      assertEquals(0L, ctx.attentionFp8WorkspaceSize(p, q, k, v, dq, dk, dv, null, null, out, lse));

      ByteBuffer ob = out.bytes().order(ByteOrder.nativeOrder());
      double scale = 1.0 / Math.sqrt(D);
      for (int b = 0; b < B; ++b) {
        for (int h = 0; h < H; ++h) {
          int g = h / (H / HK);
          double sq = dq.floats().get(b * HK + g), sk = dk.floats().get(b * HK + g),
              sv = dv.floats().get(b * HK + g);
          for (int i = 0; i < SQ; ++i) {
            int last = i + SK - SQ;  // causal, bottom-right aligned
            double[] s = new double[SK];
            double mx = Double.NEGATIVE_INFINITY;
            for (int j = 0; j <= last; ++j) {
              double dot = 0;
              for (int e = 0; e < D; ++e) {
                dot += GemmScaledTest.e4m3(codes[0][((b * SQ + i) * H + h) * D + e]) * sq
                    * GemmScaledTest.e4m3(codes[1][((b * SK + j) * HK + g) * D + e]) * sk;
              }
              s[j] = dot * scale;
              mx = Math.max(mx, s[j]);
            }
            double den = 0;
            for (int j = 0; j <= last; ++j) den += Math.exp(s[j] - mx);
            for (int e = 0; e < D; ++e) {
              double acc = 0;
              for (int j = 0; j <= last; ++j) {
                acc += Math.exp(s[j] - mx) / den
                    * GemmScaledTest.e4m3(codes[2][((b * SK + j) * HK + g) * D + e]) * sv;
              }
              double got = bf16(ob.getShort(2 * (((b * SQ + i) * H + h) * D + e)));
              assertEquals(acc, got, 2e-2 * Math.max(1.0, Math.abs(acc)),
                  "out[" + b + "," + i + "," + h + "," + e + "]");
            }
            double gotLse = lse.floats().get((b * H + h) * SQ + i);
            assertEquals(mx + Math.log(den), gotLse, 2e-2 * Math.max(1.0, Math.abs(mx)), "lse");
          }
        }
      }
    }
  }

  @Test
  void wrongDtypesAreRefusedByNameAndOutputsStayUntouched() {
    try (Context ctx = Context.cpu();
        Tensor q = Tensor.allocate(DType.FLOAT8_E4M3FN, 1, 2, 2, 8);
        Tensor bad = Tensor.allocate(DType.BFLOAT16, 1, 2, 2, 8);
        Tensor outF32 = Tensor.allocate(DType.FLOAT32, 1, 2, 2, 8);
        Tensor dq16 = Tensor.allocate(DType.FLOAT16, 1, 2)) {
      var f = outF32.floats();
      while (f.hasRemaining()) f.put(Float.NaN);
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attentionFp8(null, q, q, q, null, null, null, outF32));
      assertTrue(e.getMessage().startsWith("out:"), e.getMessage());
      for (float x : outF32.toFloatArray()) assertTrue(Float.isNaN(x), "out written on failure");
      e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attentionFp8(null, bad, bad, bad, null, null, null, bad));
      assertTrue(e.getMessage().contains("float8_e4m3fn"), e.getMessage());
      try (Tensor out = Tensor.allocate(DType.BFLOAT16, 1, 2, 2, 8)) {
        e = assertThrows(InvalidArgumentException.class,
            () -> ctx.attentionFp8(null, q, q, q, dq16, null, null, out));
        assertTrue(e.getMessage().startsWith("descale_q:"), e.getMessage());
      }
    }
  }
}
