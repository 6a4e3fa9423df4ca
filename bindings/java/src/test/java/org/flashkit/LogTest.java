// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Flashkit.setLogCallback: levels, replacement, a throwing listener, removal, shutdown (in a
 * child JVM), and the decoding of non-ASCII messages.
 */
class LogTest {
  @AfterEach
  void off() {
    Flashkit.clearLogCallback();
  }

  /** A successful 2 x 2 GEMM, then one with a shape mismatch; returns the failure's message. */
  private static String runGemms(Context ctx) {
    try (Tensor a = Tensor.allocate(DType.FLOAT32, 2, 2);
         Tensor b = Tensor.allocate(DType.FLOAT32, 3, 2);
         Tensor d = Tensor.allocate(DType.FLOAT32, 2, 2)) {
      a.floats().put(new float[] {0.5f, -1f, 2f, 0.25f});
      ctx.gemm(null, a, a, null, null, d);
      float[] got = d.toFloatArray();
      assertEquals(0.5f * 0.5f - 2f, got[0], 1e-6f);
      assertEquals(2f * -1f + 0.0625f, got[3], 1e-6f);
      return assertThrows(InvalidArgumentException.class,
          () -> ctx.gemm(null, a, b, null, null, d)).getMessage();
    }
  }

  @Test
  void settersInsideAListenerReturnAtOnceWhileAnotherThreadSets() throws Exception {
    // The listener calls clearLogCallback and setLogCallback while another thread's
    // setLogCallback waits for the delivery to end: both inner calls must return at once
    // (no-op / IllegalStateException) instead of waiting for that setter (they once deadlocked).
    List<String> inner = Collections.synchronizedList(new ArrayList<>());
    Flashkit.setLogCallback((level, msg) -> {
      if (level != LogLevel.ERROR) return;
      try {
        Thread.sleep(300);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Flashkit.clearLogCallback();
      try {
        Flashkit.setLogCallback((l, m) -> { }, LogLevel.DEBUG);
        inner.add("installed");
      } catch (IllegalStateException e) {
        inner.add("refused");
      }
    }, LogLevel.ERROR);
    Thread logger = new Thread(() -> {
      try (Context ctx = Context.cpu(1)) {
        runGemms(ctx);
      }
    }, "fk-log-logger");
    Thread setter = new Thread(() -> {
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      }
      Flashkit.setLogCallback((l, m) -> { }, LogLevel.ERROR);
    }, "fk-log-setter");
    setter.setDaemon(true);
    logger.setDaemon(true);
    logger.start();
    setter.start();
    logger.join(20_000);
    setter.join(20_000);
    assertTrue(!logger.isAlive() && !setter.isAlive(),
        "a setter inside the listener and one outside deadlocked");
    assertEquals(List.of("refused"), inner);
  }

  @Test
  void levelsReplacementThrowingListenerAndRemoval() {
    try (Context ctx = Context.cpu(1)) {
      List<String> seen = Collections.synchronizedList(new ArrayList<>());
      Flashkit.setLogCallback((level, msg) -> seen.add(level + " " + msg), LogLevel.DEBUG);
      String error = runGemms(ctx);
      assertTrue(seen.stream().anyMatch(s -> s.startsWith("DEBUG ") && s.contains("cpu.gemm")),
          seen.toString());
      assertTrue(seen.stream().anyMatch(s -> s.startsWith("ERROR ") && s.contains(error)),
          "no ERROR line with '" + error + "' in " + seen);

      // Errors only, in a second listener: the first no longer hears anything.
      List<String> errors = Collections.synchronizedList(new ArrayList<>());
      Flashkit.setLogCallback((level, msg) -> errors.add(level + " " + msg), LogLevel.ERROR);
      int before = seen.size();
      runGemms(ctx);
      assertEquals(before, seen.size(), "the replaced listener still ran");
      assertEquals(1, errors.size(), errors.toString());
      assertTrue(errors.get(0).startsWith("ERROR "), errors.get(0));

      // A listener that throws: the calls still behave (the exception is dropped).
      Flashkit.setLogCallback((level, msg) -> { throw new IllegalStateException("listener"); },
          LogLevel.DEBUG);
      runGemms(ctx);

      // From another Java thread too; then removed: nothing more is delivered.
      List<String> other = Collections.synchronizedList(new ArrayList<>());
      Flashkit.setLogCallback((level, msg) -> other.add(Thread.currentThread().getName()), LogLevel.DEBUG);
      Thread t = new Thread(() -> runGemms(ctx), "fk-log-test");
      t.start();
      t.join();
      assertTrue(other.contains("fk-log-test"), other.toString());
      Flashkit.clearLogCallback();
      int n = other.size();
      runGemms(ctx);
      assertEquals(n, other.size());
    } catch (InterruptedException e) {
      throw new AssertionError(e);
    }
    assertThrows(NullPointerException.class, () -> Flashkit.setLogCallback(null, LogLevel.WARN));
  }

  /** Runs LogShutdownProbe in a child JVM (same jars, same native library); its output. */
  private static String probe(String mode, int expectedExit) throws Exception {
    String java = ProcessHandle.current().info().command()
        .orElse(System.getProperty("java.home") + "/bin/java");
    String cp = new File(Flashkit.class.getProtectionDomain().getCodeSource().getLocation().toURI())
        + File.pathSeparator
        + new File(LogShutdownProbe.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    List<String> cmd = new ArrayList<>(List.of(java, "-Xcheck:jni", "-cp", cp));
    for (String prop : new String[] {"java.library.path", "org.flashkit.jni.library"}) {
      String v = System.getProperty(prop);
      if (v != null) cmd.add("-D" + prop + "=" + v);
    }
    cmd.addAll(List.of(LogShutdownProbe.class.getName(), mode));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("child JVM (" + mode + ") did not exit within 60 s: hung at shutdown");
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(expectedExit, p.exitValue(), out);
    return out;
  }

  @Test
  void aListenerMayExitTheJvm() throws Exception {
    probe("exit", 3);
  }

  @Test
  void installingDuringShutdownIsRefusedAndDeliversNothing() throws Exception {
    String out = probe("hook", 0);
    assertTrue(out.contains("refused") && !out.contains("installed"), out);
    assertTrue(out.contains("gemm refused") && !out.contains("delivered"), out);
  }

  @Test
  void messagesAreDecodedAsStandardUtf8() {
    // U+00E9 (2 bytes), U+20AC (3 bytes), U+1F600 (4 bytes: a surrogate pair in Java).
    String text = "caf\u00e9 \u20ac \ud83d\ude00";
    assertEquals(text, FlashkitNative.fkj_string_from_utf8(text.getBytes(StandardCharsets.UTF_8)));
    assertEquals("ascii only", FlashkitNative.fkj_string_from_utf8(
        "ascii only".getBytes(StandardCharsets.US_ASCII)));
    // Malformed UTF-8 becomes U+FFFD, never an exception or a JNI warning.
    assertEquals("a\ufffdb", FlashkitNative.fkj_string_from_utf8(new byte[] {'a', (byte) 0xff, 'b'}));
    assertEquals("", FlashkitNative.fkj_string_from_utf8(new byte[0]));
  }

  /** A listener that closes the context of the call being logged gets IllegalStateException
   * (it waited for ever: the call holds the context); so does one closing a tensor (it could
   * wait for a call on another thread that waits for the library's log lock). The call itself
   * still completes. */
  @Test
  void listenerClosingTheContextOfItsCallIsRefused() {
    Context ctx = Context.cpu(1);
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    Tensor other = Tensor.allocate(DType.FLOAT32, 2, 2);
    Flashkit.setLogCallback((level, msg) -> {
      try {
        ctx.close();
        seen.add("closed");
      } catch (IllegalStateException e) {
        seen.add(e.getMessage());
      }
      try {
        other.close();
        seen.add("tensor closed");
      } catch (IllegalStateException e) {
        seen.add(e.getMessage());
      }
    }, LogLevel.ERROR);
    try (Tensor a = Tensor.allocate(DType.FLOAT32, 2, 2);
         Tensor b = Tensor.allocate(DType.FLOAT32, 3, 2);
         Tensor d = Tensor.allocate(DType.FLOAT32, 2, 2)) {
      assertThrows(InvalidArgumentException.class, () -> ctx.gemm(null, a, b, null, null, d));
    }
    Flashkit.clearLogCallback();
    assertEquals(2, seen.size(), seen.toString());
    assertTrue(seen.get(0).contains("from a log listener"), seen.get(0));
    assertTrue(seen.get(1).contains("from a log listener"), seen.get(1));
    assertTrue(!other.isClosed());
    other.close();
    assertTrue(!ctx.isClosed());
    ctx.close();
    assertTrue(ctx.isClosed());
  }
}
