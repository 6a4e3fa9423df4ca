// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A bad argument surfaces as the FlashkitException subclass of its status category, whose
 * message is exactly what C's fk_get_last_error_message() returns for the failed call.
 */
class ErrorsTest {
  private static Context ctx;

  @BeforeAll
  static void open() {
    ctx = Context.cpu(1);
  }

  @AfterAll
  static void close() {
    ctx.close();
  }

  /** The message C holds for this thread right now, read through the raw C function. */
  private static String cMessage() {
    return FlashkitNative.fk_get_last_error_message();
  }

  private static Tensor nanFilled(long... shape) {
    Tensor t = Tensor.allocate(DType.FLOAT32, shape);
    var f = t.floats();
    while (f.hasRemaining()) f.put(Float.NaN);
    return t;
  }

  private static void assertUntouched(Tensor t) {
    for (float x : t.toFloatArray()) assertTrue(Float.isNaN(x), "output was written on failure");
  }

  @Test
  void nanSoftmaxScaleIsRefusedAndTheDefaultIsExplicit() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new AttentionParams().softmaxScale(Float.NaN));
    assertTrue(e.getMessage().startsWith("params.softmax_scale:"), e.getMessage());
    for (float inf : new float[] {Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
      IllegalArgumentException ei = assertThrows(IllegalArgumentException.class,
          () -> new AttentionParams().softmaxScale(inf));
      assertTrue(ei.getMessage().startsWith("params.softmax_scale:"), ei.getMessage());
    }
    AttentionParams p = new AttentionParams().softmaxScale(0.5f);
    assertEquals(0.5f, p.softmaxScale());
    assertTrue(Float.isNaN(p.defaultSoftmaxScale().softmaxScale()));
    // The default is 1/sqrt(head_dim): the same output as that scale given explicitly, and not
    // the output of scale 0.5 (random inputs, head_dim 8).
    java.util.Random rng = new java.util.Random(20261204L);
    try (Tensor q = Tensor.allocate(DType.FLOAT32, 1, 5, 2, 8);
         Tensor k = Tensor.allocate(DType.FLOAT32, 1, 7, 2, 8);
         Tensor v = Tensor.allocate(DType.FLOAT32, 1, 7, 2, 8);
         Tensor o1 = nanFilled(1, 5, 2, 8);
         Tensor o2 = nanFilled(1, 5, 2, 8);
         Tensor o3 = nanFilled(1, 5, 2, 8)) {
      for (Tensor t : new Tensor[] {q, k, v}) {
        var f = t.floats();
        while (f.hasRemaining()) f.put((float) rng.nextGaussian());
      }
      ctx.attention(p, q, k, v, o1);
      ctx.attention(new AttentionParams().softmaxScale((float) (1.0 / Math.sqrt(8.0))), q, k, v, o2);
      ctx.attention(new AttentionParams().softmaxScale(0.5f), q, k, v, o3);
      float[] a = o1.toFloatArray(), b = o2.toFloatArray(), c = o3.toFloatArray();
      double diffDefault = 0.0, diffHalf = 0.0;
      for (int i = 0; i < a.length; ++i) {
        diffDefault = Math.max(diffDefault, Math.abs(a[i] - b[i]));
        diffHalf = Math.max(diffHalf, Math.abs(a[i] - c[i]));
      }
      assertTrue(diffDefault <= 1e-6, "default scale differs from 1/sqrt(8) by " + diffDefault);
      assertTrue(diffHalf > 1e-3, "scale 0.5 gave the default's output");
    }
  }

  @Test
  void callerWorkspaceIsUsedAndCheckedAgainstTheCallTensors() {
    // a (6, 5) @ b (5, 4) with a workspace: the same as without, equal to a float64 product; a
    // workspace over a is refused by name with d untouched. The size queries run too.
    java.util.Random rng = new java.util.Random(4242L);
    try (Tensor a = Tensor.allocate(DType.FLOAT32, 6, 5);
         Tensor b = Tensor.allocate(DType.FLOAT32, 5, 4);
         Tensor d = nanFilled(6, 4);
         Tensor d2 = nanFilled(6, 4)) {
      float[] av = new float[30], bv = new float[20];
      for (int i = 0; i < av.length; ++i) av[i] = (float) rng.nextGaussian();
      for (int i = 0; i < bv.length; ++i) bv[i] = (float) rng.nextGaussian();
      a.floats().put(av);
      b.floats().put(bv);
      long bytes = ctx.gemmWorkspaceSize(null, a, b, null, null, d);
      assertTrue(bytes >= 0);
      try (Tensor ws = Tensor.allocate(DType.FLOAT32, (bytes + 4096) / 4)) {
        ctx.gemm(null, a, b, null, null, d, Launch.onStream(0).withWorkspace(ws.address(), bytes + 4096));
      }
      float[] got = d.toFloatArray();
      for (int m = 0; m < 6; ++m) {
        for (int n = 0; n < 4; ++n) {
          double want = 0.0;
          for (int k = 0; k < 5; ++k) want += (double) av[m * 5 + k] * bv[k * 4 + n];
          assertEquals(want, got[m * 4 + n], 1e-5 * (1.0 + Math.abs(want)), "d[" + m + "," + n + "]");
        }
      }
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.gemm(null, a, b, null, null, d2, Launch.onStream(0).withWorkspace(a.address(), 64)));
      assertTrue(e.getMessage().contains("workspace") && e.getMessage().contains("overlaps a"),
          e.getMessage());
      assertEquals(cMessage(), e.getMessage());
      assertUntouched(d2);
    }
    try (Tensor x = Tensor.allocate(DType.FLOAT32, 3, 4);
         Tensor w1 = Tensor.allocate(DType.FLOAT32, 2, 2, 2);
         Tensor w2 = Tensor.allocate(DType.FLOAT32, 2, 2, 2);
         Tensor w = Tensor.allocate(DType.FLOAT32, 2, 3, 2);
         Tensor out = Tensor.allocate(DType.FLOAT32, 3, 4);
         Tensor outB = Tensor.allocate(DType.FLOAT32, 3, 6)) {
      assertTrue(ctx.monarchWorkspaceSize(x, w1, w2, null, out) >= 0);
      assertTrue(ctx.blockdiagLinearWorkspaceSize(x, w, null, outB) >= 0);
      // The queries validate like the call: a wrong output shape is refused by name.
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.blockdiagLinearWorkspaceSize(x, w, null, out));
      assertTrue(e.getMessage().startsWith("out"), e.getMessage());
    }
  }

  @Test
  void varlenMaxSeqlenBelowLongestSequenceNamesTheArgument() {
    // CPU cu_seqlens are always checked: max_seqlen_q below the longest sequence (5) is refused.
    try (Tensor q = Tensor.allocate(DType.FLOAT32, 9, 2, 8);
         Tensor k = Tensor.allocate(DType.FLOAT32, 11, 2, 8);
         Tensor v = Tensor.allocate(DType.FLOAT32, 11, 2, 8);
         Tensor cq = Tensor.allocate(DType.INT32, 4);
         Tensor ck = Tensor.allocate(DType.INT32, 4);
         Tensor out = nanFilled(9, 2, 8)) {
      cq.ints().put(new int[] {0, 4, 4, 9});
      ck.ints().put(new int[] {0, 5, 6, 11});
      AttentionParams p = new AttentionParams().maxSeqlen(4, 0);
      assertEquals(4, p.maxSeqlenQ());
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attention(p, q, k, v, cq, ck, out, null));
      assertEquals("max_seqlen_q: 4 is below the longest sequence in cu_seqlens_q (5)",
          e.getMessage());
      assertUntouched(out);
      // The exact maxima are accepted.
      ctx.attention(new AttentionParams().maxSeqlen(5, 5), q, k, v, cq, ck, out, null);
    }
  }

  @Test
  void headDimTooLargeIsInvalidArgumentWithCsMessage() {
    try (Tensor q = Tensor.allocate(DType.FLOAT32, 1, 2, 1, 300);
         Tensor k = Tensor.allocate(DType.FLOAT32, 1, 2, 1, 300);
         Tensor v = Tensor.allocate(DType.FLOAT32, 1, 2, 1, 300);
         Tensor out = nanFilled(1, 2, 1, 300)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attention(new AttentionParams(), q, k, v, out));
      assertEquals(Status.SHAPE_MISMATCH, e.getStatus());
      assertEquals(104, e.getStatusCode());
      assertEquals("q: head_dim 300 > 256", e.getMessage()); // the header's own example
      assertEquals(cMessage(), e.getMessage());
      assertEquals(Flashkit.lastErrorMessage(), e.getMessage());
      assertEquals("invalid argument: shape mismatch", e.getStatusString());
      assertUntouched(out);

      // select_kernel validates the same way and reports the same message.
      InvalidArgumentException e2 = assertThrows(InvalidArgumentException.class,
          () -> ctx.attentionSelectKernel(new AttentionParams(), q, k, v, null, null, out, null));
      assertEquals(e.getMessage(), e2.getMessage());
      // ... and so does the workspace size query.
      InvalidArgumentException e3 = assertThrows(InvalidArgumentException.class,
          () -> ctx.attentionWorkspaceSize(new AttentionParams(), q, k, v, null, null, out, null));
      assertEquals(e.getMessage(), e3.getMessage());
    }
  }

  @Test
  void everyFailureIsAFlashkitException() {
    try (Tensor a = Tensor.allocate(DType.FLOAT32, 2, 3);
         Tensor b = Tensor.allocate(DType.FLOAT32, 3, 4);
         Tensor d = nanFilled(2, 4)) {
      // beta != 0 without c.
      FlashkitException e = assertThrows(FlashkitException.class,
          () -> ctx.gemm(new GemmParams().beta(0.5f), a, b, null, null, d));
      assertInstanceOf(InvalidArgumentException.class, e);
      assertEquals(Status.INVALID_ARGUMENT, e.getStatus().category());
      assertEquals(cMessage(), e.getMessage());
      assertFalse(e.getMessage().isEmpty());
      assertUntouched(d);
    }
  }

  @Test
  void dtypeMismatchNamesTheTensor() {
    try (Tensor q = Tensor.allocate(DType.FLOAT32, 1, 4, 2, 8);
         Tensor k = Tensor.allocate(DType.INT32, 1, 4, 2, 8);
         Tensor v = Tensor.allocate(DType.FLOAT32, 1, 4, 2, 8);
         Tensor out = nanFilled(1, 4, 2, 8)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.attention(new AttentionParams(), q, k, v, out));
      assertEquals(Status.DTYPE_MISMATCH, e.getStatus());
      assertEquals(cMessage(), e.getMessage());
      assertTrue(e.getMessage().startsWith("k"), e.getMessage());
      assertUntouched(out);
    }
  }

  @Test
  void badPlanOptionsAreInvalidArgument() {
    FFTConvPlan.Options o = new FFTConvPlan.Options().channels(2).seqlen(16).fftSize(24);
    InvalidArgumentException e =
        assertThrows(InvalidArgumentException.class, () -> ctx.createFFTConvPlan(o));
    assertEquals(Status.INVALID_ARGUMENT, e.getStatus());
    assertEquals(cMessage(), e.getMessage());
    assertTrue(ctx.openPlans().isEmpty());
  }

  @Test
  void hostContextRejectsDeviceTensors() {
    // A CUDA tensor on a CPU context: flashkit checks the device before touching the data.
    try (Tensor x = Tensor.ofAddress(4096, DeviceType.CUDA, 0, DType.FLOAT32, new long[] {2, 4}, null);
         Tensor w = Tensor.allocate(DType.FLOAT32, 2, 2, 2);
         Tensor out = nanFilled(2, 4)) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> ctx.blockdiagLinear(x, w, null, out));
      assertEquals(Status.WRONG_DEVICE, e.getStatus());
      assertEquals(cMessage(), e.getMessage());
      assertTrue(e.getMessage().startsWith("x: tensor is on kDLCUDA (2)"), e.getMessage());
      assertUntouched(out);
    }
  }

  @Test
  void unavailableBackendIsNotSupported() {
    Context cuda = null;
    try {
      cuda = Context.create(new Context.Options().backend(Backend.CUDA));
    } catch (NotSupportedException e) {
      assertEquals(Status.BACKEND_UNAVAILABLE, e.getStatus());
      assertEquals(cMessage(), e.getMessage());
      return;
    } finally {
      if (cuda != null) cuda.close();
    }
    Assumptions.assumeTrue(false, "a CUDA device is present: nothing to check here");
  }

  @Test
  void statusCategoriesMapToExceptionClasses() {
    assertDoesNotThrow(() -> FlashkitNative.fkj_check_status(0));
    Object[][] table = {
        {100, InvalidArgumentException.class}, {101, InvalidArgumentException.class},
        {107, InvalidArgumentException.class}, {200, NotSupportedException.class},
        {201, NotSupportedException.class}, {300, OutOfMemoryException.class},
        {301, OutOfMemoryException.class}, {400, DeviceException.class},
        {401, DeviceException.class}, {500, InternalException.class},
        {999, InternalException.class},
    };
    for (Object[] row : table) {
      int code = (Integer) row[0];
      @SuppressWarnings("unchecked")
      Class<? extends FlashkitException> cls = (Class<? extends FlashkitException>) row[1];
      FlashkitException e = assertThrows(cls, () -> FlashkitNative.fkj_check_status(code));
      assertEquals(code, e.getStatusCode());
      assertEquals(cMessage(), e.getMessage());
    }
  }

  @Test
  void statusEnumMatchesTheLibrary() {
    for (Status s : Status.values()) {
      assertEquals(s.category().code(), FlashkitNative.fk_status_category(s.code()), s.name());
      assertFalse(Flashkit.statusString(s.code()).equals("unknown status"), s.name());
    }
  }
}
