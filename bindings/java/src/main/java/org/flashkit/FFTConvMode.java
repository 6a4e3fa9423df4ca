// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Boundary handling of an FFT convolution ({@code fk_fftconv_mode_t}). */
public enum FFTConvMode {
  /** Linear causal convolution (Hyena, FlashFFTConv). */
  CAUSAL(fk_fftconv_mode_t.FK_FFTCONV_CAUSAL),
  /** Circular convolution of length fft_size. */
  CIRCULAR(fk_fftconv_mode_t.FK_FFTCONV_CIRCULAR),
  /** Centred two-sided filter of odd length (M2-BERT). */
  BIDIRECTIONAL(fk_fftconv_mode_t.FK_FFTCONV_BIDIRECTIONAL);

  private final int value;

  FFTConvMode(int value) {
    this.value = value;
  }

  /**
   * The C enum value.
   *
   * @return the {@code fk_fftconv_mode_t} value (0 CAUSAL, 1 CIRCULAR, 2 BIDIRECTIONAL), as
   *     stored in {@code fk_fftconv_plan_options_t.mode}
   */
  public int value() {
    return value;
  }

  /**
   * The mode of a C enum value.
   *
   * @param value an {@code fk_fftconv_mode_t} value (0..2)
   * @return the matching constant
   * @throws IllegalArgumentException if {@code value} is not an {@code fk_fftconv_mode_t}
   */
  public static FFTConvMode fromValue(int value) {
    for (FFTConvMode m : values()) {
      if (m.value == value) return m;
    }
    throw new IllegalArgumentException("unknown FFT convolution mode " + value);
  }
}
