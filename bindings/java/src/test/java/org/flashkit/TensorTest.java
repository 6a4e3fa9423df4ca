// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Tensor views over NIO buffers: what is accepted, what is refused, and strides/offsets. */
class TensorTest {
  private static FloatBuffer directFloats(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
  }

  private static void makeViewsAndDropThem(int n) {
    FloatBuffer data = directFloats(4);
    for (int i = 0; i < n; ++i) {
      Tensor t = Tensor.of(data, 2, 2);
      assertTrue(t.numel() == 4);  // used, then unreachable: never closed
    }
  }

  @Test
  void closeFreesTheDescriptorOnceAndUnclosedViewsAreFreedByTheCleaner() throws Exception {
    long before = Tensor.LIVE.get();
    Tensor t = Tensor.of(directFloats(4), 2, 2);
    assertEquals(before + 1, Tensor.LIVE.get());
    t.close();
    t.close();  // idempotent
    assertEquals(before, Tensor.LIVE.get());
    assertTrue(t.isClosed());
    // Views that are never closed: the Cleaner frees them once the collector has seen them.
    makeViewsAndDropThem(5000);
    for (int i = 0; i < 200 && Tensor.LIVE.get() > before + 100; ++i) {
      System.gc();
      Thread.sleep(50);
    }
    assertTrue(Tensor.LIVE.get() <= before + 100,
        "unclosed views still alive after GC: " + (Tensor.LIVE.get() - before));
  }

  @Test
  void aClosedViewIsRefusedWithItsShapeAndTheArgumentsName() {
    try (Context ctx = Context.cpu();
        Tensor a = Tensor.of(directFloats(6), 2, 3);
        Tensor b = Tensor.of(directFloats(12), 3, 4);
        Tensor d = Tensor.of(directFloats(8), 2, 4)) {
      b.close();
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> ctx.gemm(new GemmParams(), a, b, null, null, d));
      assertTrue(e.getMessage().startsWith("b: Tensor is closed")
          && e.getMessage().contains("[3, 4]"), e.getMessage());
      Tensor b2 = Tensor.of(directFloats(12), 3, 4);
      d.close();
      IllegalStateException e2 = assertThrows(IllegalStateException.class,
          () -> ctx.gemm(new GemmParams(), a, b2, null, null, d));
      assertTrue(e2.getMessage().startsWith("d: Tensor is closed"), e2.getMessage());
      b2.close();
    }
  }

  @Test
  void heapBuffersAreRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(FloatBuffer.allocate(8), 2, 4));
    assertTrue(e.getMessage().contains("direct"), e.getMessage());
  }

  @Test
  void foreignByteOrderIsRefused() {
    ByteOrder other = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN
        ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
    FloatBuffer f = ByteBuffer.allocateDirect(32).order(other).asFloatBuffer();
    assertThrows(IllegalArgumentException.class, () -> Tensor.of(f, 2, 4));
  }

  @Test
  void readOnlyBuffersAreRefusedAsOutputs() {
    try (Context ctx = Context.cpu();
        Tensor a = Tensor.of(directFloats(4), 2, 2);
        Tensor b = Tensor.of(directFloats(4), 2, 2);
        Tensor ro = Tensor.of(directFloats(4).asReadOnlyBuffer(), 2, 2)) {
      a.floats().put(0, 1f);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ctx.gemm(null, a, b, null, null, ro));
      assertTrue(e.getMessage().startsWith("d: ") && e.getMessage().contains("read-only"),
          e.getMessage());
      // As an input it is fine.
      try (Tensor d = Tensor.of(directFloats(4), 2, 2)) {
        ctx.gemm(null, ro, b, null, null, d);
      }
    }
  }

  @Test
  void overflowingShapesAndStridesAreRefusedWithAName() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(directFloats(64), new long[] {3, 4}, new long[] {1L << 62, 1}));
    assertTrue(e.getMessage().startsWith("shape: "), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> Tensor.of(directFloats(10), 1L << 32, 1L << 32));
    assertTrue(e.getMessage().startsWith("shape: "), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Tensor.allocate(DType.FLOAT32, 1L << 62, 4));
  }

  @Test
  void negativeStridesAreRefusedNotTrusted() {
    // A negative stride once made the bound check fall back to the compact count, so a view of
    // 2 floats could reach element 512 of the buffer behind it.
    FloatBuffer parent = directFloats(1024);
    parent.limit(2);
    FloatBuffer view = parent.slice();
    // The stride of the extent-1 dimension is ignored, and the other needs 513 elements.
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(view, new long[] {1, 2}, new long[] {-1, 512}));
    assertTrue(e.getMessage().startsWith("data: 8 bytes remain"), e.getMessage());
    // A negative stride on a longer dimension is refused by name.
    e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(view, new long[] {2, 1}, new long[] {-1, 1}));
    assertTrue(e.getMessage().startsWith("strides: dimension 0 has negative stride -1"),
        e.getMessage());
    // On a dimension of extent 1 the stride addresses nothing: ignored, as by the library.
    try (Tensor t = Tensor.of(view, new long[] {1, 2}, new long[] {-1, 1})) {
      assertEquals(2, t.numel());
    }
    // Extents whose product overflows a long are refused here, so numel() never throws.
    e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(directFloats(4), new long[] {1L << 40, 1L << 40}, new long[] {0, 0}));
    assertTrue(e.getMessage().startsWith("shape: "), e.getMessage());
  }

  @Test
  void concurrentClosesFreeOnce() throws Exception {
    for (int round = 0; round < 20000; ++round) {
      Tensor t = Tensor.allocate(DType.FLOAT32, 4);
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
      Thread other = new Thread(() -> {
        try {
          start.await();
        } catch (Exception ignored) {
          // the test below still closes once
        }
        t.close();
      });
      other.start();
      start.await();
      t.close();
      other.join();
      assertTrue(t.isClosed());
    }
  }

  @Test
  void tooSmallBuffersAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> Tensor.of(directFloats(7), 2, 4));
    // Padded rows need (rows - 1) * stride + cols elements.
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(directFloats(12), new long[] {2, 4}, new long[] {9, 1}));
    assertThrows(IllegalArgumentException.class,
        () -> Tensor.of(directFloats(8), new long[] {2, 4}, new long[] {4}));
  }

  @Test
  void describesItself() {
    try (Tensor t = Tensor.allocate(DType.FLOAT32, 2, 3, 4)) {
      assertArrayEquals(new long[] {2, 3, 4}, t.shape());
      assertNull(t.strides());
      assertEquals(24, t.numel());
      assertEquals(DType.FLOAT32, t.dtype());
      assertEquals(DeviceType.CPU, t.deviceType());
      assertEquals(24, t.floats().remaining());
    }
  }

  @Test
  void closedTensorsCannotBeUsed() {
    Tensor x = Tensor.allocate(DType.FLOAT32, 2, 4);
    Tensor w = Tensor.allocate(DType.FLOAT32, 2, 2, 2);
    Tensor out = Tensor.allocate(DType.FLOAT32, 2, 4);
    assertTrue(x.address() != 0);
    x.close();
    x.close();
    assertTrue(x.isClosed());
    assertThrows(IllegalStateException.class, x::address);
    try (Context ctx = Context.cpu(1)) {
      assertThrows(IllegalStateException.class, () -> ctx.blockdiagLinear(x, w, null, out));
    } finally {
      w.close();
      out.close();
    }
  }

  @Test
  void stridedAndOffsetViewsReachTheLibrary() {
    // x: 2 tokens x 4 features, rows padded to 6 floats, starting 3 floats into the buffer.
    FloatBuffer xs = directFloats(3 + 6 + 4);
    float[] xv = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int r = 0; r < 2; ++r) for (int c = 0; c < 4; ++c) xs.put(3 + r * 6 + c, xv[r * 4 + c]);
    xs.position(3);
    try (Context ctx = Context.cpu(1);
         Tensor x = Tensor.of(xs, new long[] {2, 4}, new long[] {6, 1});
         Tensor w = Tensor.allocate(DType.FLOAT32, 2, 2, 2); // 2 blocks of 2x2
         Tensor out = Tensor.allocate(DType.FLOAT32, 2, 4)) {
      assertArrayEquals(xv, x.toFloatArray());
      // Block 0 swaps its two inputs, block 1 doubles them.
      w.floats().put(new float[] {0, 1, 1, 0, 2, 0, 0, 2});
      ctx.blockdiagLinear(x, w, null, out);
      assertArrayEquals(new float[] {2, 1, 6, 8, 6, 5, 14, 16}, out.toFloatArray());
    }
  }

  /**
   * A tensor closed on one thread while another thread's call uses it: the close waits for the
   * call, later calls see it closed (IllegalStateException). Without the wait the library read
   * the freed descriptor (errors such as "a: tensor is on device type -1469830477", or a JVM
   * crash when the memory was reused).
   */
  @Test
  void closeOnAnotherThreadWaitsForTheCallsUsingTheTensor() throws Exception {
    try (Context ctx = Context.cpu(1);
        Tensor b = Tensor.allocate(DType.FLOAT32, 8, 8);
        Tensor d = Tensor.allocate(DType.FLOAT32, 8, 8)) {
      java.util.concurrent.atomic.AtomicReference<Tensor> shared =
          new java.util.concurrent.atomic.AtomicReference<>(Tensor.allocate(DType.FLOAT32, 8, 8));
      java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
      Thread closer = new Thread(() -> {
        while (!stop.get()) {
          Tensor old = shared.getAndSet(Tensor.allocate(DType.FLOAT32, 8, 8));
          old.close();
        }
      });
      closer.start();
      long calls = 0, closed = 0;
      long end = System.nanoTime() + 2_000_000_000L;
      try {
        while (System.nanoTime() < end) {
          try {
            ctx.gemm(null, shared.get(), b, null, null, d);
          } catch (IllegalStateException e) {
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            ++closed;
          }
          ++calls;
        }
      } finally {
        stop.set(true);
        closer.join();
        shared.get().close();
      }
      assertTrue(calls > 1000, "only " + calls + " calls");
      assertTrue(closed < calls, closed + " of " + calls + " calls saw a closed tensor");
    }
  }

  @Test
  void nullArgumentsAreNamed() {
    // Before, these threw the JVM's own message ("Cannot read the array length because
    // "<local3>" is null"), which names no parameter.
    FloatBuffer f = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder()).asFloatBuffer();
    assertEquals("shape", assertThrows(NullPointerException.class,
        () -> Tensor.allocate(DType.FLOAT32, (long[]) null)).getMessage());
    assertEquals("dtype", assertThrows(NullPointerException.class,
        () -> Tensor.allocate(null, 3)).getMessage());
    assertEquals("data", assertThrows(NullPointerException.class,
        () -> Tensor.of((FloatBuffer) null, 2, 2)).getMessage());
    assertEquals("data", assertThrows(NullPointerException.class,
        () -> Tensor.of((ByteBuffer) null, DType.FLOAT32, new long[] {1}, null)).getMessage());
    assertEquals("dtype", assertThrows(NullPointerException.class,
        () -> Tensor.of(ByteBuffer.allocateDirect(4), null, new long[] {1}, null)).getMessage());
    assertEquals("shape", assertThrows(NullPointerException.class,
        () -> Tensor.of(f, (long[]) null)).getMessage());
    assertEquals("deviceType", assertThrows(NullPointerException.class,
        () -> Tensor.ofAddress(16, null, 0, DType.FLOAT32, new long[] {4, 5}, null)).getMessage());
    assertEquals("dtype", assertThrows(NullPointerException.class,
        () -> Tensor.ofAddress(16, DeviceType.CPU, 0, null, new long[] {4, 5}, null)).getMessage());
  }
}
