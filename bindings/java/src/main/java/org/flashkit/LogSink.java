// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.util.function.BiConsumer;

/** What the native log callback calls (fkj_native.c): the listener, its exceptions dropped. */
final class LogSink {
  /**
   * True on the thread running a listener, while it runs: Flashkit.setLogCallback /
   * clearLogCallback there must not wait for the binding's lock, which another thread may hold
   * while the library waits for this delivery to end (a deadlock, found in session 45).
   */
  static final ThreadLocal<Boolean> IN_DELIVERY = ThreadLocal.withInitial(() -> Boolean.FALSE);

  private final BiConsumer<LogLevel, String> listener;

  LogSink(BiConsumer<LogLevel, String> listener) {
    this.listener = listener;
  }

  /** Called from native code on the thread that logs; must not throw. */
  void deliver(int level, String message) {
    IN_DELIVERY.set(Boolean.TRUE);
    try {
      listener.accept(LogLevel.fromValue(level), message);
    } catch (Throwable t) {
      // A listener's failure must not reach the library (which called from inside a flashkit
      // call): dropped.
    } finally {
      IN_DELIVERY.set(Boolean.FALSE);
    }
  }
}
