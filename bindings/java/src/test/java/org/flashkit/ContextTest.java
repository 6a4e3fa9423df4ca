// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Context and FFTConvPlan lifetimes, enums and library facts. */
class ContextTest {
  @Test
  void versionMatchesTheBindings() {
    assertEquals(Flashkit.bindingsVersionNumber(), Flashkit.versionNumber());
    assertTrue(Flashkit.version().matches("\\d+\\.\\d+\\.\\d+"), Flashkit.version());
  }

  @Test
  void nullArgumentsAreNamed() {
    NullPointerException e =
        assertThrows(NullPointerException.class, () -> Context.create((Context.Options) null));
    assertEquals("options", e.getMessage());
    e = assertThrows(NullPointerException.class,
        () -> new FFTConvPlan(null, new FFTConvPlan.Options().channels(1).seqlen(8)));
    assertEquals("context", e.getMessage());
  }

  @Test
  void cpuContextReportsItself() {
    try (Context ctx = Context.cpu(2)) {
      ContextInfo info = ctx.info();
      assertEquals(Backend.CPU, info.backend());
      assertEquals(KernelFamily.CPU, info.kernelFamily());
      assertEquals(2, info.numThreads());
      assertEquals(-1, info.deviceOrdinal());
      assertEquals("cpu", info.deviceName());
    }
  }

  private static void createPlansAndDropThem(Context ctx, int n) {
    for (int i = 0; i < n; ++i) {
      ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(64).seqlen(4096));
    }
  }

  private static void gcUntil(java.util.function.BooleanSupplier done) throws InterruptedException {
    for (int i = 0; i < 200 && !done.getAsBoolean(); ++i) {
      System.gc();
      Thread.sleep(50);
    }
  }

  @Test
  void abandonedPlansAreDestroyedWhileTheirContextLives() throws Exception {
    // A context once held its plans strongly, so a plan dropped unclosed kept its tables
    // until the context closed (200 plans: 38 -> 772 MB). Now the Cleaner destroys it.
    try (Context ctx = Context.cpu(1);
        FFTConvPlan kept = ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(2).seqlen(16))) {
      long cleaned = NativeHandle.CLEANED.get();
      createPlansAndDropThem(ctx, 50);
      assertEquals(51, ctx.openPlans().size());
      gcUntil(() -> ctx.openPlans().size() == 1);
      assertEquals(1, ctx.openPlans().size(), "unclosed plans still open after GC");
      assertTrue(NativeHandle.CLEANED.get() - cleaned >= 50);
      assertFalse(kept.isClosed());
      assertFalse(ctx.isClosed());
      // The context and the kept plan still work.
      try (Tensor u = Tensor.allocate(DType.FLOAT32, 1, 2, 16);
           Tensor k = Tensor.allocate(DType.FLOAT32, 2, 16);
           Tensor y = Tensor.allocate(DType.FLOAT32, 1, 2, 16)) {
        java.util.Random rng = new java.util.Random(7);
        for (int i = 0; i < 32; ++i) u.floats().put(i, (float) rng.nextGaussian());
        k.floats().put(0, 1.0f).put(16, 1.0f); // identity filters
        kept.forward(u, k, null, null, null, y);
        assertArrayEquals(u.toFloatArray(), y.toFloatArray(), 1e-5f);
      }
    }
  }

  @Test
  void abandonedContextIsDestroyedAfterItsPlans() throws Exception {
    java.util.List<NativeHandle> guards = new java.util.ArrayList<>();
    java.lang.ref.WeakReference<Context> weak = createContextAndDropIt(guards);
    gcUntil(() -> weak.get() == null && guards.stream().allMatch(NativeHandle::isClosed));
    assertTrue(weak.get() == null, "context still reachable");
    for (NativeHandle g : guards) assertTrue(g.isClosed(), g + " not destroyed");
  }

  private static java.lang.ref.WeakReference<Context> createContextAndDropIt(
      java.util.List<NativeHandle> guards) {
    Context ctx = Context.cpu(1);
    createPlansAndDropThem(ctx, 3);
    FFTConvPlan held = ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(2).seqlen(16));
    guards.addAll(ctx.openPlans());
    guards.add(ctx.guard());
    assertEquals(5, guards.size());
    assertFalse(held.isClosed());
    return new java.lang.ref.WeakReference<>(ctx);
  }

  private static java.lang.ref.WeakReference<Tensor> forwardWithAFilterAndDropIt(FFTConvPlan plan) {
    try (Tensor u = Tensor.allocate(DType.FLOAT32, 1, 2, 16);
         Tensor k = Tensor.allocate(DType.FLOAT32, 2, 16);
         Tensor y = Tensor.allocate(DType.FLOAT32, 1, 2, 16)) {
      k.floats().put(3, 0.5f);
      plan.forward(u, k, null, null, null, y);
      return new java.lang.ref.WeakReference<>(k);
    }
  }

  @Test
  void aContextsCloseReleasesItsPlansConstantFilter() throws Exception {
    // The plan keeps its constant filter reachable until its close, including the close its
    // context does (review of the Cleaner change: that close once left it reachable).
    Context ctx = Context.cpu(1);
    FFTConvPlan plan = ctx.createFFTConvPlan(
        new FFTConvPlan.Options().channels(2).seqlen(16).filterConstant(true));
    java.lang.ref.WeakReference<Tensor> k = forwardWithAFilterAndDropIt(plan);
    for (int i = 0; i < 5; ++i) System.gc();
    assertTrue(k.get() != null, "the plan must keep its constant filter while open");
    ctx.close();
    gcUntil(() -> k.get() == null);
    assertTrue(k.get() == null, "filter still reachable after the context closed the plan");
    assertTrue(plan.isClosed());
  }

  @Test
  void closeIsIdempotentAndUseAfterCloseFails() {
    Context ctx = Context.cpu(1);
    ctx.close();
    ctx.close();
    assertTrue(ctx.isClosed());
    assertThrows(IllegalStateException.class, ctx::info);
  }

  @Test
  void enumsUseTheLibraryNames() {
    assertEquals("cpu", Backend.CPU.nativeName());
    assertEquals("cuda", Backend.CUDA.nativeName());
    assertEquals("sm90", KernelFamily.SM90.nativeName());
    assertEquals("generic", KernelFamily.GENERIC.nativeName());
    assertEquals(Activation.GELU_TANH, Activation.fromValue(2));
    assertEquals(FFTConvMode.BIDIRECTIONAL, FFTConvMode.fromValue(2));
    assertEquals(Status.SHAPE_MISMATCH, Status.fromCode(104));
    assertEquals(Status.INVALID_ARGUMENT, Status.SHAPE_MISMATCH.category());
  }

  @Test
  void planResolvesOptionsAndClosesWithItsContext() {
    Context ctx = Context.cpu(1);
    FFTConvPlan plan = ctx.createFFTConvPlan(new FFTConvPlan.Options()
        .mode(FFTConvMode.CAUSAL).channels(3).seqlen(20).filterLen(12).filterConstant(true));
    FFTConvPlan.Options o = plan.options();
    assertEquals(FFTConvMode.CAUSAL, o.mode());
    assertEquals(3, o.channels());
    assertEquals(20, o.seqlen());
    assertEquals(12, o.filterLen());
    assertEquals(32, o.fftSize()); // smallest power of two >= 20 + 12 - 1
    assertEquals(DType.FLOAT32, o.dtype());
    assertTrue(o.filterConstant());
    assertEquals(1, ctx.openPlans().size());
    ctx.close();
    assertTrue(plan.isClosed());
    assertThrows(IllegalStateException.class, plan::options);
    plan.close(); // still fine
  }

  @Test
  void filterConstantPlanKeepsItsFilterSoANewFilterGetsItsOwnSpectrum() throws Exception {
    // Each filter is a fresh, never-modified Tensor.allocate. The JVM hands a freed direct
    // buffer's address to the next one at once; before the plan kept its last filter reachable,
    // the filter-constant plan then reused the old filter's cached spectrum (52 of 60 calls in
    // a review's run).
    java.util.Random rng = new java.util.Random(45);
    try (Context ctx = Context.cpu(1);
         FFTConvPlan cached = ctx.createFFTConvPlan(
             new FFTConvPlan.Options().channels(4).seqlen(2048).filterConstant(true));
         FFTConvPlan plain = ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(4).seqlen(2048))) {
      Tensor u = AttentionKvCacheTest.random(rng, 1, 4, 2048);
      int differing = 0;
      for (int it = 0; it < 30; it++) {
        Tensor k = AttentionKvCacheTest.random(rng, 4, 2048);
        Tensor y1 = Tensor.allocate(DType.FLOAT32, 1, 4, 2048);
        Tensor y2 = Tensor.allocate(DType.FLOAT32, 1, 4, 2048);
        cached.forward(u, k, null, null, null, y1);
        plain.forward(u, k, null, null, null, y2);
        if (!java.util.Arrays.equals(y1.toFloatArray(), y2.toFloatArray())) differing++;
        k = null;
        System.gc();
        Thread.sleep(20);
      }
      assertEquals(0, differing, "calls whose cached spectrum was another filter's");
    }
  }

  @Test
  void filterConstantPlanFromSeveralThreadsWithTwoFilters() throws Exception {
    // Calls with the kept filter run under a shared lock, a change of filter alone: four
    // threads, two on each of two filters, must each get their own filter's convolution
    // (bit for bit the plain plan's on the same backend) on every call.
    java.util.Random rng = new java.util.Random(46);
    try (Context ctx = Context.cpu(1);
         FFTConvPlan cached = ctx.createFFTConvPlan(
             new FFTConvPlan.Options().channels(8).seqlen(512).filterConstant(true));
         FFTConvPlan plain = ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(8).seqlen(512))) {
      Tensor u = AttentionKvCacheTest.random(rng, 2, 8, 512);
      Tensor[] ks = new Tensor[2];
      float[][] want = new float[2][];
      for (int f = 0; f < 2; f++) {
        ks[f] = AttentionKvCacheTest.random(rng, 8, 512);
        Tensor y = Tensor.allocate(DType.FLOAT32, 2, 8, 512);
        plain.forward(u, ks[f], null, null, null, y);
        want[f] = y.toFloatArray();
      }
      java.util.concurrent.atomic.AtomicInteger wrong = new java.util.concurrent.atomic.AtomicInteger();
      java.util.concurrent.atomic.AtomicReference<Throwable> bad =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread[] threads = new Thread[4];
      for (int t = 0; t < threads.length; t++) {
        final int f = t % 2;
        threads[t] = new Thread(() -> {
          try {
            Tensor y = Tensor.allocate(DType.FLOAT32, 2, 8, 512);
            for (int it = 0; it < 25; it++) {
              cached.forward(u, ks[f], null, null, null, y);
              if (!java.util.Arrays.equals(y.toFloatArray(), want[f])) wrong.incrementAndGet();
            }
          } catch (Throwable e) {
            bad.compareAndSet(null, e);
          }
        });
        threads[t].start();
      }
      for (Thread t : threads) t.join();
      if (bad.get() != null) throw new AssertionError(bad.get());
      assertEquals(0, wrong.get(), "calls that got the other filter's spectrum");
    }
  }

  @Test
  void aListenerCallingAFilterConstantPlanWithAnotherFilterGetsAnErrorNotAHang() throws Exception {
    // A log listener (which must not call flashkit) once called forward() with another filter
    // on the plan whose call it was logging: the read lock of the outer call cannot become the
    // write lock, and the thread waited on itself. Now the nested call throws. (No
    // try-with-resources: were the call hung, closing the plan or clearing the listener would
    // wait for it, and the test would hang instead of failing.)
    java.util.Random rng = new java.util.Random(47);
    Context ctx = Context.cpu(1);
    FFTConvPlan plan = ctx.createFFTConvPlan(
        new FFTConvPlan.Options().channels(2).seqlen(64).filterConstant(true));
    Tensor u = AttentionKvCacheTest.random(rng, 1, 2, 64);
    Tensor k1 = AttentionKvCacheTest.random(rng, 2, 64);
    Tensor k2 = AttentionKvCacheTest.random(rng, 2, 64);
    Tensor y = Tensor.allocate(DType.FLOAT32, 1, 2, 64);
    Tensor y2 = Tensor.allocate(DType.FLOAT32, 1, 2, 64);
    plan.forward(u, k1, null, null, null, y); // k1 is now the kept filter
    java.util.concurrent.atomic.AtomicReference<Throwable> nested =
        new java.util.concurrent.atomic.AtomicReference<>();
    java.util.concurrent.atomic.AtomicBoolean inside = new java.util.concurrent.atomic.AtomicBoolean();
    Flashkit.setLogCallback((level, msg) -> {
      if (inside.getAndSet(true)) return;
      try {
        plan.forward(u, k2, null, null, null, y2);
      } catch (Throwable e) {
        nested.compareAndSet(null, e);
      }
    }, LogLevel.DEBUG);
    Thread caller = new Thread(() -> plan.forward(u, k1, null, null, null, y));
    caller.setDaemon(true); // a hang must not keep the JVM alive after the failure
    caller.start();
    caller.join(20000);
    assertFalse(caller.isAlive(), "the outer call hung (its thread waits on its own read lock)");
    Flashkit.clearLogCallback();
    plan.close();
    ctx.close();
    assertTrue(nested.get() instanceof IllegalStateException, String.valueOf(nested.get()));
    assertTrue(nested.get().getMessage().startsWith("k: "), nested.get().getMessage());
  }

  @Test
  void closeWaitsForRunningCallsAndLaterCallsFail() throws Exception {
    // close() on another thread once destroyed the plan under a running forward (the JVM
    // aborted); now it waits, and calls after it throw IllegalStateException.
    for (int round = 0; round < 20; ++round) {
      Context ctx = Context.cpu(2);
      FFTConvPlan plan = ctx.createFFTConvPlan(
          new FFTConvPlan.Options().channels(64).seqlen(8192).filterLen(8192));
      Tensor u = Tensor.allocate(DType.FLOAT32, 8, 64, 8192);
      Tensor k = Tensor.allocate(DType.FLOAT32, 64, 8192);
      Tensor y = Tensor.allocate(DType.FLOAT32, 8, 64, 8192);
      java.util.concurrent.atomic.AtomicReference<Throwable> bad =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.CountDownLatch running = new java.util.concurrent.CountDownLatch(1);
      Thread caller = new Thread(() -> {
        try {
          running.countDown();
          for (int i = 0; i < 1000; ++i) plan.forward(u, k, null, null, null, y);
        } catch (IllegalStateException expected) {
          // the plan was closed between two calls
        } catch (Throwable t) {
          bad.set(t);
        }
      });
      caller.start();
      running.await();
      if ((round & 1) == 0) {
        ctx.close();  // closes the plan first
      } else {
        plan.close();
        ctx.close();
      }
      caller.join();
      assertTrue(bad.get() == null, String.valueOf(bad.get()));
      assertTrue(plan.isClosed());
      assertThrows(IllegalStateException.class, () -> plan.forward(u, k, null, null, null, y));
      u.close();
      k.close();
      y.close();
    }
  }

  @Test
  void planCreatedWhileItsContextClosesIsClosedWithIt() throws Exception {
    // A plan made during close() was once left open on a destroyed context.
    for (int round = 0; round < 500; ++round) {
      Context ctx = Context.cpu(1);
      java.util.concurrent.atomic.AtomicReference<FFTConvPlan> made =
          new java.util.concurrent.atomic.AtomicReference<>();
      java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
      Thread creator = new Thread(() -> {
        try {
          start.await();
          made.set(ctx.createFFTConvPlan(new FFTConvPlan.Options().channels(1).seqlen(8)));
        } catch (IllegalStateException lost) {
          // the context closed first: no plan
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      });
      creator.start();
      start.await();
      ctx.close();
      creator.join();
      FFTConvPlan p = made.get();
      if (p != null) assertTrue(p.isClosed(), "a plan outlived its context");
    }
  }

  @Test
  void planAndLaunchRunAConvolution() {
    try (Context ctx = Context.cpu(1);
         FFTConvPlan plan = new FFTConvPlan(ctx,
             new FFTConvPlan.Options().channels(1).seqlen(6).filterLen(2));
         Tensor u = Tensor.allocate(DType.FLOAT32, 1, 1, 6);
         Tensor k = Tensor.allocate(DType.FLOAT32, 1, 2);
         Tensor y = Tensor.allocate(DType.FLOAT32, 1, 1, 6)) {
      u.floats().put(new float[] {1, 2, 3, 4, 5, 6});
      k.floats().put(new float[] {1, -1}); // y[t] = u[t] - u[t-1]
      assertFalse(plan.selectKernel(u, k, null, null, null, y).isEmpty());
      assertEquals(0L, plan.workspaceSize(u, k, null, null, null, y)); // the CPU takes no scratch
      plan.forward(u, k, null, null, null, y, Launch.onStream(0)); // stream ignored on CPU
      float[] got = y.toFloatArray();
      float[] want = {1, 1, 1, 1, 1, 1};
      for (int i = 0; i < want.length; ++i) assertEquals(want[i], got[i], 1e-5f);
      assertEquals(plan.context(), ctx);
    }
  }

  @Test
  void attentionThroughTheShortForm() {
    try (Context ctx = Context.cpu(1);
         Tensor q = Tensor.allocate(DType.FLOAT32, 1, 1, 1, 4);
         Tensor k = Tensor.allocate(DType.FLOAT32, 1, 1, 1, 4);
         Tensor v = Tensor.allocate(DType.FLOAT32, 1, 1, 1, 4);
         Tensor out = Tensor.allocate(DType.FLOAT32, 1, 1, 1, 4)) {
      v.floats().put(new float[] {1, 2, 3, 4});
      ctx.attention(new AttentionParams().causal(true), q, k, v, out);
      assertArrayEquals(new float[] {1, 2, 3, 4}, out.toFloatArray()); // one key: out = v
      FloatBuffer f = out.floats();
      assertEquals(4, f.remaining());
    }
  }
}
