// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Which backend a context runs on ({@code fk_backend_t}). */
public enum Backend {
  /**
   * CUDA if compiled in and a device is present, else CPU (also for a GPU older than the build's
   * kernels, compute capability below 7.5, with a warning in the log; {@code FLASHKIT_BACKEND}
   * overrides).
   */
  AUTO(fk_backend_t.FK_BACKEND_AUTO),
  /** The CPU backend: every operation, multithreaded, synchronous. */
  CPU(fk_backend_t.FK_BACKEND_CPU),
  /**
   * The CUDA backend. Creating a context on it throws {@link NotSupportedException} (status
   * BACKEND_UNAVAILABLE) if CUDA is not compiled in, no device is present, or the device's
   * compute capability is below 7.5.
   */
  CUDA(fk_backend_t.FK_BACKEND_CUDA);

  private final int value;

  Backend(int value) {
    this.value = value;
  }

  /**
   * The C enum value.
   *
   * @return the {@code fk_backend_t} value (0 AUTO, 1 CPU, 2 CUDA), as stored in
   *     {@code fk_context_options_t.backend}
   */
  public int value() {
    return value;
  }

  /**
   * The library's name for it ({@code fk_backend_name()}).
   *
   * @return "auto", "cpu" or "cuda" (static text of the native library)
   */
  public String nativeName() {
    return FlashkitNative.fk_backend_name(value);
  }

  static Backend fromValue(int value) {
    for (Backend b : values()) {
      if (b.value == value) return b;
    }
    throw new IllegalArgumentException("unknown backend " + value);
  }
}
