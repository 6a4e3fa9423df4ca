// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Library-wide facts: versions, status texts and the thread's last error message. */
public final class Flashkit {
  private Flashkit() {}

  /**
   * The loaded native library's version ({@code fk_get_version()}).
   *
   * @return the semantic version, e.g. {@code "0.7.0"}
   */
  public static String version() {
    return FlashkitNative.fk_get_version();
  }

  /**
   * The loaded native library's version as one number ({@code fk_get_version_number()}).
   *
   * @return major * 10000 + minor * 100 + patch, e.g. 700 for 0.7.0
   */
  public static int versionNumber() {
    return (int) FlashkitNative.fk_get_version_number();
  }

  /**
   * The version these bindings were generated against: the header's
   * {@code FK_VERSION_NUMBER}. Compare with {@link #versionNumber()} to detect a mismatch.
   *
   * @return major * 10000 + minor * 100 + patch of the header the bindings were built from
   */
  public static int bindingsVersionNumber() {
    return FlashkitNativeConstants.FK_VERSION_NUMBER;
  }

  /**
   * The message of the last failed flashkit call on this thread, exactly as C's
   * {@code fk_get_last_error_message()} returns it; empty if none failed. Every
   * {@link FlashkitException} already carries it. Thread-local: another thread's failure does
   * not change it, and a successful call does not clear it.
   *
   * @return a sentence naming the argument and the rule it broke, e.g.
   *     {@code "q: head_dim 300 > 256"}; the empty string if no call has failed on this thread
   */
  public static String lastErrorMessage() {
    return FlashkitNative.fk_get_last_error_message();
  }

  /**
   * Static description of a status code ({@code fk_status_string()}).
   *
   * @param statusCode any value; see {@link Status#code()}
   * @return e.g. {@code "invalid argument: shape mismatch"}; {@code "unknown status"} for an
   *     unknown code
   */
  public static String statusString(int statusCode) {
    return FlashkitNative.fk_status_string(statusCode);
  }

  private static final Object LOG_LOCK = new Object();
  private static boolean logHookRegistered;

  /**
   * Installs {@code listener(level, message)} for the library's diagnostics at or below
   * {@code maxLevel} ({@code fk_set_log_callback}: which kernel variant ran at DEBUG, a slow
   * path taken at WARN, a failed call at ERROR), replacing any listener installed before.
   * Process-wide. The library never prints; this is how to see its messages.
   *
   * <p>Messages are delivered one at a time on the thread of the flashkit call that logs them.
   * The listener must not call flashkit and should return quickly; what it throws is dropped.
   * From inside a listener, {@code setLogCallback} throws IllegalStateException and
   * {@code clearLogCallback} does nothing, both at once; a call on another thread waits for
   * the delivery in progress to return. Once the JVM starts shutting down, a
   * shutdown hook stops all deliveries (without waiting for one in progress, so a listener
   * may call {@code System.exit}). The thread that exits that way stays inside its flashkit
   * call, holding its context and the library's log lock, so shutdown hooks must then not call
   * flashkit or close that context: they would wait for ever.
   *
   * @param listener receives each message's level and text
   * @param maxLevel the least severe level delivered ({@link LogLevel#ERROR} ..
   *     {@link LogLevel#DEBUG})
   * @throws NullPointerException if {@code listener} or {@code maxLevel} is null
   * @throws IllegalStateException if the JVM is already shutting down, or when called from
   *     inside a listener (nothing is installed)
   */
  public static void setLogCallback(java.util.function.BiConsumer<LogLevel, String> listener,
      LogLevel maxLevel) {
    java.util.Objects.requireNonNull(listener, "listener");
    java.util.Objects.requireNonNull(maxLevel, "maxLevel");
    if (LogSink.IN_DELIVERY.get()) {
      throw new IllegalStateException(
          "setLogCallback: called from inside the log listener; replace it after the listener returns");
    }
    synchronized (LOG_LOCK) {
      if (!logHookRegistered) {
        // First, so that a JVM already shutting down refuses (IllegalStateException) before
        // anything is installed. The hook takes no lock: it must not wait for a delivery.
        Runtime.getRuntime().addShutdownHook(
            new Thread(FlashkitNative::fkj_log_shutdown, "flashkit-log-off"));
        logHookRegistered = true;
      }
      FlashkitNative.fkj_set_log_callback(new LogSink(listener), maxLevel.value());
    }
  }

  /**
   * Removes the log listener; no message is delivered after this returns. From inside a
   * listener it does nothing (the library refuses while its delivery is in progress).
   */
  public static void clearLogCallback() {
    if (LogSink.IN_DELIVERY.get()) return;
    synchronized (LOG_LOCK) {
      FlashkitNative.fkj_set_log_callback(null, LogLevel.ERROR.value());
    }
  }

  /** Largest attention head_dim the library accepts. */
  public static final int ATTENTION_MAX_HEAD_DIM = FlashkitNativeConstants.FK_ATTENTION_MAX_HEAD_DIM;
}
