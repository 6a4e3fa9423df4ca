// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Which generation of kernels the dispatcher may pick ({@code fk_kernel_family_t}). */
public enum KernelFamily {
  /** Best available, per call. */
  AUTO(fk_kernel_family_t.FK_KERNEL_FAMILY_AUTO),
  /** The CPU backend's kernels (reported, not forced). */
  CPU(fk_kernel_family_t.FK_KERNEL_FAMILY_CPU),
  /** Plain CUDA kernels, correct for every valid input. */
  GENERIC(fk_kernel_family_t.FK_KERNEL_FAMILY_GENERIC),
  /** mma.sync + cp.async kernels for compute capability 8.0 and later. */
  SM80(fk_kernel_family_t.FK_KERNEL_FAMILY_SM80),
  /** TMA + wgmma kernels for compute capability 9.0 (sm_90a). */
  SM90(fk_kernel_family_t.FK_KERNEL_FAMILY_SM90);

  private final int value;

  KernelFamily(int value) {
    this.value = value;
  }

  /**
   * The C enum value.
   *
   * @return the {@code fk_kernel_family_t} value (0 AUTO, 1 CPU, 2 GENERIC, 3 SM80, 4 SM90)
   */
  public int value() {
    return value;
  }

  /**
   * The library's name for it ({@code fk_kernel_family_name()}).
   *
   * @return "auto", "cpu", "generic", "sm80" or "sm90" (static text of the native library)
   */
  public String nativeName() {
    return FlashkitNative.fk_kernel_family_name(value);
  }

  static KernelFamily fromValue(int value) {
    for (KernelFamily f : values()) {
      if (f.value == value) return f;
    }
    throw new IllegalArgumentException("unknown kernel family " + value);
  }
}
