// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Library-wide facts: versions, status texts and the thread's last error message. */
public final class Flashkit {
  private Flashkit() {}

  /** The loaded native library's version, e.g. {@code "0.1.0"}. */
  public static String version() {
    return FlashkitNative.fk_get_version();
  }

  /** The loaded native library's version as major * 10000 + minor * 100 + patch. */
  public static int versionNumber() {
    return (int) FlashkitNative.fk_get_version_number();
  }

  /** The version these bindings were generated against (compare with {@link #versionNumber()}). */
  public static int bindingsVersionNumber() {
    return FlashkitNativeConstants.FK_VERSION_NUMBER;
  }

  /**
   * The message of the last failed flashkit call on this thread, exactly as C's
   * {@code fk_get_last_error_message()} returns it; empty if none failed. Every
   * {@link FlashkitException} already carries it.
   */
  public static String lastErrorMessage() {
    return FlashkitNative.fk_get_last_error_message();
  }

  /** Static description of a status code, e.g. {@code "invalid argument: shape mismatch"}. */
  public static String statusString(int statusCode) {
    return FlashkitNative.fk_status_string(statusCode);
  }

  /** Largest attention head_dim the library accepts. */
  public static final int ATTENTION_MAX_HEAD_DIM = FlashkitNativeConstants.FK_ATTENTION_MAX_HEAD_DIM;
}
