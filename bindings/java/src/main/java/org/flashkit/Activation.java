// SPDX-License-Identifier: Apache-2.0
package org.flashkit;

/** Elementwise activation applied last in a GEMM epilogue ({@code fk_activation_t}). */
public enum Activation {
  /** Identity. */
  NONE(fk_activation_t.FK_ACTIVATION_NONE),
  /** max(x, 0). */
  RELU(fk_activation_t.FK_ACTIVATION_RELU),
  /** 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
  GELU_TANH(fk_activation_t.FK_ACTIVATION_GELU_TANH),
  /** 0.5 x (1 + erf(x / sqrt(2))). */
  GELU_ERF(fk_activation_t.FK_ACTIVATION_GELU_ERF);

  private final int value;

  Activation(int value) {
    this.value = value;
  }

  /** The C enum value. */
  public int value() {
    return value;
  }

  /** The activation of a C enum value. */
  public static Activation fromValue(int value) {
    for (Activation a : values()) {
      if (a.value == value) return a;
    }
    throw new IllegalArgumentException("unknown activation " + value);
  }
}
