// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

import java.util.function.BiConsumer;

/** What the native log callback calls (fkj_native.c): the listener, its exceptions dropped. */
final class LogSink {
  private final BiConsumer<LogLevel, String> listener;

  LogSink(BiConsumer<LogLevel, String> listener) {
    this.listener = listener;
  }

  /** Called from native code on the thread that logs; must not throw. */
  void deliver(int level, String message) {
    try {
      listener.accept(LogLevel.fromValue(level), message);
    } catch (Throwable t) {
      // A listener's failure must not reach the library (which called from inside a flashkit
      // call): dropped.
    }
  }
}
