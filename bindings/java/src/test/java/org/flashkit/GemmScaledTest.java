// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** fk_gemm_scaled from Java: fp8 operands as raw bytes, against a float64 loop. */
class GemmScaledTest {
  /** OCP e4m3fn decoding, from the format definition: bias 7, 3 mantissa bits, no infinities. */
  static double e4m3(int code) {
    int s = (code >> 7) & 1, e = (code >> 3) & 0xF, m = code & 7;
    double v = e == 0 ? Math.scalb(m / 8.0, -6) : Math.scalb(1 + m / 8.0, e - 7);
    return s == 1 ? -v : v;
  }

  /** OCP e5m2 decoding: bias 15, 2 mantissa bits (finite codes only are generated). */
  static double e5m2(int code) {
    int s = (code >> 7) & 1, e = (code >> 2) & 0x1F, m = code & 3;
    double v = e == 0 ? Math.scalb(m / 4.0, -14) : Math.scalb(1 + m / 4.0, e - 15);
    return s == 1 ? -v : v;
  }

  /** A random finite code of moderate magnitude (exponent field kept near the bias). */
  static int code(Random rng, boolean isE4m3) {
    int s = rng.nextInt(2);
    return isE4m3 ? (s << 7) | ((4 + rng.nextInt(6)) << 3) | rng.nextInt(8)
                  : (s << 7) | ((12 + rng.nextInt(6)) << 2) | rng.nextInt(4);
  }

  @Test
  void fp8WithPerRowAndPerColumnScalesMatchesFloat64() {
    final int m = 5, n = 7, k = 33;
    Random rng = new Random(1234);
    try (Context ctx = Context.cpu();
        Tensor a = Tensor.allocate(DType.FLOAT8_E4M3FN, m, k);
        Tensor b = Tensor.allocate(DType.FLOAT8_E5M2, n, k);
        Tensor sa = Tensor.allocate(DType.FLOAT32, m);
        Tensor sb = Tensor.allocate(DType.FLOAT32, n);
        Tensor d = Tensor.allocate(DType.FLOAT32, m, n)) {
      ByteBuffer ab = a.bytes(), bb = b.bytes();
      int[] ac = new int[m * k], bc = new int[n * k];
      for (int i = 0; i < m * k; ++i) ab.put(i, (byte) (ac[i] = code(rng, true)));
      for (int i = 0; i < n * k; ++i) bb.put(i, (byte) (bc[i] = code(rng, false)));
      for (int i = 0; i < m; ++i) sa.floats().put(i, 0.5f + i);
      for (int j = 0; j < n; ++j) sb.floats().put(j, 2.0f - 0.25f * j);
      GemmParams p = new GemmParams().transB(true);
      ctx.gemmScaled(p, a, b, sa, sb, null, null, d);
      assertEquals("cpu.gemm", ctx.gemmScaledSelectKernel(p, a, b, sa, sb, null, null, d));
      assertEquals(0L, ctx.gemmScaledWorkspaceSize(p, a, b, sa, sb, null, null, d));
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double acc = 0;
          for (int kk = 0; kk < k; ++kk) acc += e4m3(ac[i * k + kk]) * e5m2(bc[j * k + kk]);
          double want = acc * sa.floats().get(i) * sb.floats().get(j);
          double got = d.floats().get(i * n + j);
          assertEquals(want, got, 1e-5 * Math.max(1.0, Math.abs(want)), "d[" + i + "," + j + "]");
        }
      }
    }
  }

  @Test
  void aScaleOfTheWrongLengthNamesIt() {
    try (Context ctx = Context.cpu();
        Tensor a = Tensor.allocate(DType.FLOAT8_E4M3FN, 2, 16);
        Tensor b = Tensor.allocate(DType.FLOAT8_E4M3FN, 3, 16);
        Tensor sa = Tensor.allocate(DType.FLOAT32, 3);
        Tensor d = Tensor.allocate(DType.BFLOAT16, 2, 3)) {
      FlashkitException e = assertThrows(FlashkitException.class,
          () -> ctx.gemmScaled(new GemmParams().transB(true), a, b, sa, null, null, null, d));
      assertTrue(e.getMessage().startsWith("scale_a: "), e.getMessage());
    }
  }
}
