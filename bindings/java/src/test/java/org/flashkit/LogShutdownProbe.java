// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/**
 * Run in a child JVM by LogTest (shutdown behaviour cannot be tested inside the test JVM).
 * {@code exit}: a log listener calls {@code System.exit(3)} while the library delivers an
 * ERROR message (the shutdown hook must not wait for that delivery, or the JVM hangs).
 * {@code hook}: a shutdown hook of the program tries {@code setLogCallback} and prints whether
 * it was refused.
 */
public final class LogShutdownProbe {
  private LogShutdownProbe() {}

  private static void failingGemm() {
    try (Context ctx = Context.cpu(1);
         Tensor a = Tensor.allocate(DType.FLOAT32, 2, 2);
         Tensor b = Tensor.allocate(DType.FLOAT32, 3, 2);
         Tensor d = Tensor.allocate(DType.FLOAT32, 2, 2)) {
      ctx.gemm(null, a, b, null, null, d);
    } catch (InvalidArgumentException expected) {
      System.out.println("gemm refused");
    }
  }

  public static void main(String[] args) {
    if (args.length == 1 && args[0].equals("exit")) {
      Flashkit.setLogCallback((level, msg) -> System.exit(3), LogLevel.ERROR);
      failingGemm();
      System.exit(1); // not reached: the listener exits first
    } else if (args.length == 1 && args[0].equals("hook")) {
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          Flashkit.setLogCallback((level, msg) -> System.out.println("delivered " + msg),
              LogLevel.ERROR);
          System.out.println("installed");
        } catch (IllegalStateException e) {
          System.out.println("refused");
        }
        failingGemm();
      }));
      System.exit(0);
    }
    System.exit(2);
  }
}
