// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * Every case of the shared test vectors (tests/vectors/MANIFEST) through the idiomatic Java API
 * on the CPU backend: fp32 inputs, |got - expected| <= 1e-4 + 1e-4 |expected|, -inf exact.
 * The C++, Python and Rust suites check the same files.
 */
class VectorsTest {
  private static Context ctx;

  @BeforeAll
  static void open() {
    ctx = Context.cpu(2);
  }

  @AfterAll
  static void close() {
    ctx.close();
  }

  @TestFactory
  List<DynamicTest> sharedVectors() throws IOException {
    List<VectorFile.Case> cases = VectorFile.manifest();
    assertTrue(cases.size() >= 9, "MANIFEST lists " + cases.size() + " cases");
    List<DynamicTest> tests = new ArrayList<>();
    for (VectorFile.Case c : cases) {
      tests.add(DynamicTest.dynamicTest(c.name + " (" + c.op + ")", () -> run(c)));
    }
    return tests;
  }

  private static void run(VectorFile.Case c) throws IOException {
    Map<String, VectorFile.Array> v = VectorFile.load(c.name);
    // Every tensor opened for the case, closed at the end.
    List<Tensor> open = new ArrayList<>();
    try {
      switch (c.op) {
        case "attention": attention(v, open, c.name); break;
        case "gemm": gemm(v, open, c.name); break;
        case "monarch": monarch(v, open, c.name); break;
        case "blockdiag": blockdiag(v, open, c.name); break;
        case "fftconv": fftconv(v, open, c.name); break;
        default: fail("unknown op " + c.op);
      }
    } finally {
      for (Tensor t : open) t.close();
    }
  }

  // -------------------------------------------------------------------------------------------

  private static Tensor input(Map<String, VectorFile.Array> v, String name, List<Tensor> open) {
    VectorFile.Array a = v.get(name);
    if (a == null) return null; // optional operand absent: NULL
    Tensor t = Tensor.allocate(a.isInt() ? DType.INT32 : DType.FLOAT32, a.shape);
    if (a.isInt()) {
      t.ints().put(a.i32);
    } else {
      FloatBuffer f = t.floats();
      for (double d : a.f64) f.put((float) d); // exact: the inputs are fp32 values
    }
    open.add(t);
    return t;
  }

  private static Tensor output(Map<String, VectorFile.Array> v, String name, List<Tensor> open) {
    VectorFile.Array a = required(v, name);
    Tensor t = Tensor.allocate(DType.FLOAT32, a.shape);
    FloatBuffer f = t.floats();
    for (int i = 0; i < a.size(); ++i) f.put(Float.NaN); // unwritten elements show up
    open.add(t);
    return t;
  }

  private static VectorFile.Array required(Map<String, VectorFile.Array> v, String name) {
    VectorFile.Array a = v.get(name);
    if (a == null) fail("vector file lacks array " + name);
    return a;
  }

  private static int i(Map<String, VectorFile.Array> v, String name) {
    return (int) required(v, name).scalar();
  }

  private static float f(Map<String, VectorFile.Array> v, String name) {
    return (float) required(v, name).scalar();
  }

  static void assertClose(Tensor got, VectorFile.Array expected, String what) {
    float[] g = got.toFloatArray();
    assertEquals(expected.size(), g.length, what + ": element count");
    int bad = 0;
    int first = -1;
    for (int i = 0; i < g.length; ++i) {
      double e = expected.f64[i];
      boolean ok = Double.isInfinite(e) ? g[i] == e
          : Float.isFinite(g[i]) && Math.abs(g[i] - e) <= 1e-4 + 1e-4 * Math.abs(e);
      if (!ok) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad != 0) {
      fail(what + ": " + bad + " of " + g.length + " elements out of tolerance; first at flat index "
          + first + ": got " + g[first] + ", expected " + expected.f64[first]);
    }
  }

  // -------------------------------------------------------------------------------------------

  private static void attention(Map<String, VectorFile.Array> v, List<Tensor> open, String name) {
    AttentionParams p = new AttentionParams()
        .causal(i(v, "causal") != 0)
        .softmaxScale(f(v, "softmax_scale"))
        .window(i(v, "window_left"), i(v, "window_right"))
        .softcap(f(v, "softcap"));
    Tensor q = input(v, "q", open), k = input(v, "k", open), vv = input(v, "v", open);
    Tensor cq = input(v, "cu_seqlens_q", open), ck = input(v, "cu_seqlens_k", open);
    Tensor out = output(v, "out", open), lse = output(v, "lse", open);
    String variant = ctx.attentionSelectKernel(p, q, k, vv, cq, ck, out, lse);
    assertFalse(variant.isEmpty());
    ctx.attention(p, q, k, vv, cq, ck, out, lse);
    assertClose(out, v.get("out"), name + ".out");
    assertClose(lse, v.get("lse"), name + ".lse");
  }

  private static void gemm(Map<String, VectorFile.Array> v, List<Tensor> open, String name) {
    GemmParams p = new GemmParams()
        .transA(i(v, "trans_a") != 0)
        .transB(i(v, "trans_b") != 0)
        .alpha(f(v, "alpha"))
        .beta(f(v, "beta"))
        .activation(Activation.fromValue(i(v, "activation")));
    Tensor a = input(v, "a", open), b = input(v, "b", open);
    Tensor c = input(v, "c", open), bias = input(v, "bias", open);
    Tensor d = output(v, "d", open);
    assertFalse(ctx.gemmSelectKernel(p, a, b, c, bias, d).isEmpty());
    ctx.gemm(p, a, b, c, bias, d);
    assertClose(d, v.get("d"), name + ".d");
  }

  private static void monarch(Map<String, VectorFile.Array> v, List<Tensor> open, String name) {
    Tensor x = input(v, "x", open), w1 = input(v, "w1", open), w2 = input(v, "w2", open);
    Tensor bias = input(v, "bias", open);
    Tensor out = output(v, "out", open);
    assertFalse(ctx.monarchSelectKernel(x, w1, w2, bias, out).isEmpty());
    ctx.monarch(x, w1, w2, bias, out);
    assertClose(out, v.get("out"), name + ".out");
  }

  private static void blockdiag(Map<String, VectorFile.Array> v, List<Tensor> open, String name) {
    Tensor x = input(v, "x", open), w = input(v, "w", open), bias = input(v, "bias", open);
    Tensor out = output(v, "out", open);
    assertFalse(ctx.blockdiagLinearSelectKernel(x, w, bias, out).isEmpty());
    ctx.blockdiagLinear(x, w, bias, out);
    assertClose(out, v.get("out"), name + ".out");
  }

  private static void fftconv(Map<String, VectorFile.Array> v, List<Tensor> open, String name) {
    long[] us = required(v, "u").shape;
    long[] ks = required(v, "k").shape;
    FFTConvPlan.Options o = new FFTConvPlan.Options()
        .mode(FFTConvMode.fromValue(i(v, "mode")))
        .channels(us[1])
        .seqlen(us[2])
        .filterLen(ks[1])
        .fftSize(i(v, "fft_size"));
    try (FFTConvPlan plan = ctx.createFFTConvPlan(o)) {
      Tensor u = input(v, "u", open), k = input(v, "k", open), D = input(v, "D", open);
      Tensor pre = input(v, "pregate", open), post = input(v, "postgate", open);
      Tensor y = output(v, "y", open);
      assertFalse(plan.selectKernel(u, k, D, pre, post, y).isEmpty());
      plan.forward(u, k, D, pre, post, y);
      assertClose(y, v.get("y"), name + ".y");
    }
  }
}
