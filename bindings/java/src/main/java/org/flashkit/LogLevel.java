// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Severity of a log message ({@code fk_log_level_t}); a lower value is more severe. */
public enum LogLevel {
  /** A call failed; the message repeats the call's error message. */
  ERROR(0),
  /** Something the caller may want to fix (a slow path taken). */
  WARN(1),
  /** Context creation, device facts. */
  INFO(2),
  /** The kernel variant chosen for each call. */
  DEBUG(3);

  private final int value;

  LogLevel(int value) {
    this.value = value;
  }

  /**
   * The numeric {@code fk_log_level_t}.
   *
   * @return 0 (ERROR) to 3 (DEBUG); a lower value is more severe
   */
  public int value() {
    return value;
  }

  static LogLevel fromValue(int value) {
    for (LogLevel l : values()) {
      if (l.value == value) return l;
    }
    return DEBUG;
  }
}
