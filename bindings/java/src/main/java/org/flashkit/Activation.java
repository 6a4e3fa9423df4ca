// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Elementwise activation applied last in a GEMM epilogue ({@code fk_activation_t}). */
public enum Activation {
  /** Identity. */
  NONE(fk_activation_t.FK_ACTIVATION_NONE),
  /** max(x, 0); NaN stays NaN (as torch.relu). */
  RELU(fk_activation_t.FK_ACTIVATION_RELU),
  /**
   * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GELU's tanh approximation (Hendrycks &amp;
   * Gimpel 2016).
   */
  GELU_TANH(fk_activation_t.FK_ACTIVATION_GELU_TANH),
  /** 0.5 x (1 + erf(x / sqrt(2))): exact GELU (Hendrycks &amp; Gimpel 2016; BERT's). */
  GELU_ERF(fk_activation_t.FK_ACTIVATION_GELU_ERF);

  private final int value;

  Activation(int value) {
    this.value = value;
  }

  /**
   * The C enum value.
   *
   * @return the {@code fk_activation_t} value of this activation (0 NONE, 1 RELU, 2 GELU_TANH,
   *     3 GELU_ERF), as stored in {@code fk_gemm_params_t.activation}
   */
  public int value() {
    return value;
  }

  /**
   * The activation of a C enum value.
   *
   * @param value an {@code fk_activation_t} value (0..3)
   * @return the matching constant
   * @throws IllegalArgumentException if {@code value} is not an {@code fk_activation_t}
   */
  public static Activation fromValue(int value) {
    for (Activation a : values()) {
      if (a.value == value) return a;
    }
    throw new IllegalArgumentException("unknown activation " + value);
  }
}
